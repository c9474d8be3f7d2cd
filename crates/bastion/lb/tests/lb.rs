//! Load balancer behaviour on loopback: balancing, failover, removal, HTTPS
//! health checks, bind errors and metrics.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use okd_lb::{Backend, Balance, Frontend, HealthCheck, LbError, LoadBalancer, frontends_for};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::task::JoinHandle;

fn lo(ip: &str) -> SocketAddr {
    SocketAddr::new(ip.parse().unwrap(), 0)
}

/// An echo server that first sends `<tag>\n`; aborting the handle closes the
/// listener (new connections are refused).
struct Echo {
    addr: SocketAddr,
    task: JoinHandle<()>,
}

impl Drop for Echo {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn echo(tag: &str) -> Echo {
    let l = TcpListener::bind(lo("127.0.0.1")).await.unwrap();
    let addr = l.local_addr().unwrap();
    let tag = tag.to_string();
    let task = tokio::spawn(async move {
        loop {
            let Ok((mut s, _)) = l.accept().await else {
                continue;
            };
            let tag = tag.clone();
            tokio::spawn(async move {
                if s.write_all(format!("{tag}\n").as_bytes()).await.is_err() {
                    return;
                }
                let (mut r, mut w) = s.split();
                let _ = tokio::io::copy(&mut r, &mut w).await;
            });
        }
    });
    Echo { addr, task }
}

/// Connects from `src` (a 127.0.0.x address) through the LB, returns the
/// backend tag after a successful echo round trip.
async fn ask(lb: SocketAddr, src: IpAddr) -> Result<String, String> {
    let sock = TcpSocket::new_v4().map_err(|e| e.to_string())?;
    sock.bind(SocketAddr::new(src, 0))
        .map_err(|e| e.to_string())?;
    let s = tokio::time::timeout(Duration::from_secs(3), sock.connect(lb))
        .await
        .map_err(|_| "connect timeout".to_string())?
        .map_err(|e| e.to_string())?;
    let mut s = BufReader::new(s);
    let mut tag = String::new();
    tokio::time::timeout(Duration::from_secs(3), s.read_line(&mut tag))
        .await
        .map_err(|_| "tag timeout".to_string())?
        .map_err(|e| e.to_string())?;
    if tag.is_empty() {
        return Err("closed without data".into());
    }
    s.get_mut()
        .write_all(b"ping\n")
        .await
        .map_err(|e| e.to_string())?;
    let mut back = String::new();
    tokio::time::timeout(Duration::from_secs(3), s.read_line(&mut back))
        .await
        .map_err(|_| "echo timeout".to_string())?
        .map_err(|e| e.to_string())?;
    if back != "ping\n" {
        return Err(format!("bad echo {back:?}"));
    }
    Ok(tag.trim().to_string())
}

fn fast(check: HealthCheck) -> HealthCheck {
    check
        .every(Duration::from_millis(200), Duration::from_millis(200))
        .rise_fall(2, 2)
}

fn localhost() -> IpAddr {
    "127.0.0.1".parse().unwrap()
}

#[tokio::test]
async fn source_affinity_is_stable_and_spreads_clients() {
    let a = echo("a").await;
    let b = echo("b").await;
    let fe = Frontend {
        name: "api".into(),
        bind: lo("127.0.0.1"),
        backends: vec![Backend::new("a", a.addr), Backend::new("b", b.addr)],
        check: HealthCheck::none(),
        balance: Balance::Source,
        limits: okd_lb::Limits::default(),
    };
    let lb = LoadBalancer::start(vec![fe]).await.unwrap();
    let addr = lb.local_addr("api").unwrap();
    let mut seen = std::collections::BTreeSet::new();
    for last in 1..=12u8 {
        let src: IpAddr = format!("127.0.0.{last}").parse().unwrap();
        let first = ask(addr, src).await.unwrap();
        for _ in 0..4 {
            assert_eq!(ask(addr, src).await.unwrap(), first, "client {src} moved");
        }
        seen.insert(first);
    }
    assert_eq!(seen.len(), 2, "12 client addresses all went to {seen:?}");
    let st = lb.snapshot();
    let total: u64 = st.frontends[0]
        .backends
        .iter()
        .map(|b| b.connections_total)
        .sum();
    assert_eq!(total, 60);
    lb.shutdown().await;
}

#[tokio::test]
async fn round_robin_alternates() {
    let a = echo("a").await;
    let b = echo("b").await;
    let mut fe = Frontend::new(
        "rr",
        lo("127.0.0.1"),
        vec![Backend::new("a", a.addr), Backend::new("b", b.addr)],
    );
    fe.balance = Balance::RoundRobin;
    fe.check = HealthCheck::none();
    let lb = LoadBalancer::start(vec![fe]).await.unwrap();
    let addr = lb.local_addr("rr").unwrap();
    let mut tags = Vec::new();
    for _ in 0..4 {
        tags.push(ask(addr, localhost()).await.unwrap());
    }
    assert_eq!(tags, ["a", "b", "a", "b"]);
}

#[tokio::test]
async fn killed_backend_loses_no_connection() {
    let a = echo("a").await;
    let b = echo("b").await;
    let fe = Frontend {
        name: "machine-config".into(),
        bind: lo("127.0.0.1"),
        backends: vec![Backend::new("a", a.addr), Backend::new("b", b.addr)],
        check: fast(HealthCheck::tcp()),
        balance: Balance::Source,
        limits: okd_lb::Limits::default(),
    };
    let lb = LoadBalancer::start(vec![fe]).await.unwrap();
    // Both UP after their first checks (before, they are not checked yet).
    wait_up(&lb, "machine-config", "a", true).await;
    wait_up(&lb, "machine-config", "b", true).await;
    let addr = lb.local_addr("machine-config").unwrap();
    let victim = ask(addr, localhost()).await.unwrap();
    let (mut a, mut b) = (Some(a), Some(b));
    let mut killed_at = None;
    let mut failures = Vec::new();
    let mut after_two_intervals = Vec::new();
    let failures_of = |lb: &LoadBalancer| {
        lb.snapshot().frontends[0]
            .backends
            .iter()
            .find(|x| x.name == victim)
            .map(|x| x.connect_failures)
            .unwrap()
    };
    let mut failures_when_down = None;
    for i in 0..200 {
        if failures_when_down.is_none() && lb.is_up("machine-config", &victim) == Some(false) {
            failures_when_down = Some(failures_of(&lb));
        }
        if i == 40 {
            // Drop closes the victim's listener: new connections are refused.
            if victim == "a" {
                a.take();
            } else {
                b.take();
            }
            killed_at = Some(Instant::now());
        }
        match ask(addr, localhost()).await {
            Ok(tag) => {
                if let Some(t) = killed_at
                    && t.elapsed() > Duration::from_millis(400)
                {
                    after_two_intervals.push(tag);
                }
            }
            Err(e) => failures.push(format!("connection {i}: {e}")),
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(failures.is_empty(), "failed connections: {failures:?}");
    assert!(after_two_intervals.len() > 100);
    assert!(
        after_two_intervals.iter().all(|t| *t != victim),
        "connections reached the dead backend {victim}"
    );
    assert_eq!(lb.is_up("machine-config", &victim), Some(false));
    let st = lb.snapshot();
    let dead = st.frontends[0]
        .backends
        .iter()
        .find(|x| x.name == victim)
        .unwrap();
    let check = dead.last_check.clone().unwrap();
    assert!(!check.ok);
    assert!(check.detail.contains("refused"), "{}", check.detail);
    // It had passed checks before it died: it went down, it was not never up.
    assert!(
        dead.last_ok_unix_ms.is_some_and(|ok| ok < check.at_unix_ms),
        "{dead:?}"
    );
    // Redispatch covered the gap before DOWN; once DOWN no more attempts.
    let down = failures_when_down.expect("victim never went DOWN during the loop");
    assert!(down > 0, "no connection tried the dead backend before DOWN");
    assert_eq!(dead.connect_failures, down, "connects to the DOWN backend");
    lb.shutdown().await;
}

#[tokio::test]
async fn no_backend_up_closes_connection() {
    let dead = TcpListener::bind(lo("127.0.0.1")).await.unwrap();
    let dead_addr = dead.local_addr().unwrap();
    drop(dead);
    let mut fe = Frontend::new(
        "api",
        lo("127.0.0.1"),
        vec![Backend::new("gone", dead_addr)],
    );
    fe.check = fast(HealthCheck::tcp());
    let lb = LoadBalancer::start(vec![fe]).await.unwrap();
    let addr = lb.local_addr("api").unwrap();
    assert!(ask(addr, localhost()).await.is_err());
    let deadline = Instant::now() + Duration::from_secs(5);
    while lb.is_up("api", "gone") != Some(false) {
        assert!(Instant::now() < deadline, "never went DOWN");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(ask(addr, localhost()).await.is_err());
    let st = lb.snapshot();
    assert_eq!(st.frontends[0].rejected_total, 2);
    assert_eq!(
        st.frontends[0].backends[0].last_ok_unix_ms, None,
        "never passed a check"
    );
}

#[tokio::test]
async fn remove_backend_leaves_every_frontend() {
    let boot = echo("bootstrap").await;
    let master = echo("master").await;
    let fes: Vec<Frontend> = ["api", "machine-config"]
        .iter()
        .map(|name| Frontend {
            name: name.to_string(),
            bind: lo("127.0.0.1"),
            backends: vec![
                Backend::new("bootstrap", boot.addr),
                Backend::new("master", master.addr),
            ],
            check: HealthCheck::none(),
            balance: Balance::RoundRobin,
            limits: okd_lb::Limits::default(),
        })
        .collect();
    let lb = LoadBalancer::start(fes).await.unwrap();
    assert_eq!(lb.remove_backend("bootstrap"), ["api", "machine-config"]);
    assert!(lb.remove_backend("bootstrap").is_empty());
    for fe in ["api", "machine-config"] {
        let addr = lb.local_addr(fe).unwrap();
        for _ in 0..6 {
            assert_eq!(ask(addr, localhost()).await.unwrap(), "master");
        }
        assert_eq!(lb.is_up(fe, "bootstrap"), None);
    }
    let st = lb.snapshot();
    for fe in &st.frontends {
        let names: Vec<_> = fe.backends.iter().map(|b| b.name.as_str()).collect();
        assert_eq!(names, ["master"]);
    }
    let json = serde_json::to_value(&st).unwrap();
    assert_eq!(json["frontends"][0]["backends"][0]["connections_total"], 6);
}

/// A TLS server answering `GET /readyz` with 200 until `fail` is set, then 500.
struct TlsHealth {
    addr: SocketAddr,
    fail: Arc<AtomicBool>,
    task: JoinHandle<()>,
}

impl Drop for TlsHealth {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn tls_health() -> TlsHealth {
    use okd_pki::{CertConfig, ExtKeyUsage, KeyUsage, NameAttr, RsaKey, self_signed};
    let cfg = CertConfig {
        subject: vec![(NameAttr::CommonName, "kube-apiserver".into())],
        dns_names: vec!["localhost".into()],
        ip_addresses: vec![localhost()],
        key_usage: KeyUsage {
            digital_signature: true,
            key_encipherment: true,
            ..KeyUsage::default()
        },
        ext_key_usage: vec![ExtKeyUsage::ServerAuth],
        validity: std::time::Duration::from_secs(86_400),
        is_ca: false,
    };
    let ck = self_signed(
        &cfg,
        RsaKey::generate().unwrap(),
        time::OffsetDateTime::now_utc(),
    )
    .unwrap();
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let server = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![rustls_pki_types::CertificateDer::from(ck.cert.der.clone())],
            rustls_pki_types::PrivateKeyDer::Pkcs1(ck.key.private_der().to_vec().into()),
        )
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(server));
    let l = TcpListener::bind(lo("127.0.0.1")).await.unwrap();
    let addr = l.local_addr().unwrap();
    let fail = Arc::new(AtomicBool::new(false));
    let flag = fail.clone();
    let task = tokio::spawn(async move {
        loop {
            let Ok((s, _)) = l.accept().await else {
                continue;
            };
            let acceptor = acceptor.clone();
            let flag = flag.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(s).await else {
                    return;
                };
                let mut req = Vec::new();
                let mut buf = [0u8; 512];
                while !req.windows(4).any(|w| w == b"\r\n\r\n") && req.len() < 8192 {
                    match tls.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => req.extend_from_slice(&buf[..n]),
                    }
                }
                let ok = req.starts_with(b"GET /readyz ") && !flag.load(Ordering::SeqCst);
                let resp: &[u8] = if ok {
                    b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
                } else {
                    b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 6\r\nConnection: close\r\n\r\nfailed"
                };
                let _ = tls.write_all(resp).await;
                let _ = tls.shutdown().await;
            });
        }
    });
    TlsHealth { addr, fail, task }
}

async fn wait_up(lb: &LoadBalancer, fe: &str, be: &str, want: bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while lb.is_up(fe, be) != Some(want) {
        assert!(
            Instant::now() < deadline,
            "{be} of {fe} never became up={want}: {:?}",
            lb.snapshot()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn https_check_follows_readyz() {
    let srv = tls_health().await;
    let fe = Frontend {
        name: "api".into(),
        bind: lo("127.0.0.1"),
        backends: vec![Backend::new("master", srv.addr)],
        check: fast(HealthCheck::https_get("/readyz")),
        balance: Balance::Source,
        limits: okd_lb::Limits::default(),
    };
    let lb = LoadBalancer::start(vec![fe]).await.unwrap();
    // Wait for a first good check.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let st = lb.snapshot();
        if let Some(c) = &st.frontends[0].backends[0].last_check {
            assert!(c.ok, "first check failed: {c:?}");
            assert_eq!(c.detail, "HTTP 200");
            break;
        }
        assert!(Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(lb.is_up("api", "master"), Some(true));
    srv.fail.store(true, Ordering::SeqCst);
    wait_up(&lb, "api", "master", false).await;
    let c = lb.snapshot().frontends[0].backends[0]
        .last_check
        .clone()
        .unwrap();
    assert_eq!(c.detail, "HTTP 500");
    srv.fail.store(false, Ordering::SeqCst);
    wait_up(&lb, "api", "master", true).await;
    // A plain-HTTP check against the TLS port fails.
    let fe = Frontend {
        name: "plain".into(),
        bind: lo("127.0.0.1"),
        backends: vec![Backend::new("master", srv.addr)],
        check: fast(HealthCheck::http_get("/readyz")),
        balance: Balance::Source,
        limits: okd_lb::Limits::default(),
    };
    let lb2 = LoadBalancer::start(vec![fe]).await.unwrap();
    wait_up(&lb2, "plain", "master", false).await;
}

#[tokio::test]
async fn port_in_use_names_frontend_and_port() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap();
    let fes = vec![
        Frontend::new("api", lo("127.0.0.1"), vec![]),
        Frontend::new("machine-config", addr, vec![]),
    ];
    let err = LoadBalancer::start(fes).await.unwrap_err();
    assert!(matches!(err, LbError::Bind { .. }));
    assert_eq!(
        err.to_string(),
        format!("frontend machine-config: cannot listen on {addr}: address already in use")
    );
}

#[tokio::test]
async fn shutdown_releases_ports() {
    let lb = LoadBalancer::start(vec![Frontend::new("api", lo("127.0.0.1"), vec![])])
        .await
        .unwrap();
    let addr = lb.local_addr("api").unwrap();
    let closed = lb.closed();
    lb.shutdown().await;
    tokio::time::timeout(Duration::from_secs(1), closed)
        .await
        .unwrap();
    TcpListener::bind(addr).await.unwrap();
}

/// Parses one exposition line `name{k="v",...} value`.
/// One Prometheus sample: metric name, labels, value.
type Sample = (String, Vec<(String, String)>, f64);

fn parse_line(line: &str) -> Option<Sample> {
    let (head, value) = line.rsplit_once(' ')?;
    let value: f64 = value.parse().ok()?;
    let (name, labels) = match head.split_once('{') {
        Some((n, rest)) => (n, rest.strip_suffix('}')?),
        None => (head, ""),
    };
    let ok_name = !name.is_empty()
        && name.chars().enumerate().all(|(i, c)| {
            c == '_' || c == ':' || c.is_ascii_alphabetic() || (i > 0 && c.is_ascii_digit())
        });
    if !ok_name {
        return None;
    }
    let mut out = Vec::new();
    if !labels.is_empty() {
        for kv in labels.split(',') {
            let (k, v) = kv.split_once('=')?;
            let v = v.strip_prefix('"')?.strip_suffix('"')?;
            out.push((k.to_string(), v.to_string()));
        }
    }
    Some((name.to_string(), out, value))
}

#[tokio::test]
async fn prometheus_output_parses() {
    let a = echo("a").await;
    let mut fe = Frontend::new("api", lo("127.0.0.1"), vec![Backend::new("a", a.addr)]);
    fe.check = HealthCheck::none();
    let lb = LoadBalancer::start(vec![fe]).await.unwrap();
    let addr = lb.local_addr("api").unwrap();
    for _ in 0..3 {
        ask(addr, localhost()).await.unwrap();
    }
    // Let the proxy tasks see the client close.
    let deadline = Instant::now() + Duration::from_secs(3);
    while lb.snapshot().frontends[0].active_connections != 0 {
        assert!(Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let text = lb.prometheus();
    let mut samples = Vec::new();
    for line in text.lines() {
        if line.starts_with("# HELP ") || line.starts_with("# TYPE ") {
            continue;
        }
        samples.push(parse_line(line).unwrap_or_else(|| panic!("bad line {line:?}\n{text}")));
    }
    let get = |name: &str, extra: &[(&str, &str)]| -> f64 {
        samples
            .iter()
            .find(|(n, l, _)| {
                n == name
                    && extra
                        .iter()
                        .all(|(k, v)| l.iter().any(|(lk, lv)| lk == k && lv == v))
            })
            .map(|s| s.2)
            .unwrap_or_else(|| panic!("{name} {extra:?} missing in\n{text}"))
    };
    let fb = [("frontend", "api"), ("backend", "a")];
    assert_eq!(get("okd_lb_backend_up", &fb), 1.0);
    assert_eq!(get("okd_lb_connections_total", &fb), 3.0);
    assert_eq!(get("okd_lb_active_connections", &fb), 0.0);
    // Each connection: 5 bytes "ping\n" in, "a\n" + "ping\n" = 7 bytes out.
    let mut dir_in = fb.to_vec();
    dir_in.push(("direction", "in"));
    let mut dir_out = fb.to_vec();
    dir_out.push(("direction", "out"));
    assert_eq!(get("okd_lb_bytes_total", &dir_in), 15.0);
    assert_eq!(get("okd_lb_bytes_total", &dir_out), 21.0);
    assert_eq!(
        get("okd_lb_frontend_connections_total", &[("frontend", "api")]),
        3.0
    );
}

#[test]
fn frontends_follow_inventory() {
    use okd_hosts::{Inventory, Node, Ports, Role};
    let node = |name: &str, role: Role, last: u8| Node {
        hostname: name.into(),
        fqdn: format!("{name}.lab.example.com"),
        role,
        mac: None,
        interface: None,
        address: format!("192.168.120.{last}").parse().unwrap(),
        prefix: 24,
        gateway: None,
        nameservers: vec![],
        install_disk: "/dev/sda".into(),
        etcd_name: None,
    };
    let mut inv = Inventory {
        cluster_name: "lab".into(),
        base_domain: "example.com".into(),
        cluster_domain: "lab.example.com".into(),
        listen: "192.168.120.101".parse().unwrap(),
        api: "192.168.120.101".parse().unwrap(),
        ingress: "192.168.120.101".parse().unwrap(),
        upstreams: vec![],
        nodes: vec![
            node("bootstrap", Role::Bootstrap, 102),
            node("master", Role::Master, 103),
        ],
        ports: Ports::default(),
        os_images: Default::default(),
        extra_records: Default::default(),
        allow_recursion: vec![],
    };
    let mcs: SocketAddr = "192.168.120.101:22625".parse().unwrap();
    let fes = frontends_for(&inv, Some(mcs));
    let names: Vec<_> = fes.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(
        names,
        ["api", "machine-config", "ingress-http", "ingress-https"]
    );
    let show = |f: &Frontend| {
        f.backends
            .iter()
            .map(|b| format!("{}={}", b.name, b.addr))
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert_eq!(fes[0].bind.to_string(), "192.168.120.101:6443");
    assert_eq!(
        show(&fes[0]),
        "bootstrap=192.168.120.102:6443 master=192.168.120.103:6443"
    );
    assert_eq!(fes[0].check, HealthCheck::https_get("/readyz"));
    assert_eq!(fes[1].bind.to_string(), "192.168.120.101:22623");
    assert_eq!(
        show(&fes[1]),
        "bootstrap=192.168.120.102:22623 master=192.168.120.103:22623 machine-config-server=192.168.120.101:22625"
    );
    assert_eq!(fes[1].check, HealthCheck::https_get("/healthz"));
    // No workers: ingress goes to the masters.
    assert_eq!(show(&fes[2]), "master=192.168.120.103:80");
    assert_eq!(show(&fes[3]), "master=192.168.120.103:443");
    assert_eq!(fes[3].check, HealthCheck::tcp());
    assert!(fes.iter().all(|f| f.balance == Balance::Source));
    inv.nodes.push(node("worker", Role::Worker, 104));
    let fes = frontends_for(&inv, None);
    assert_eq!(show(&fes[2]), "worker=192.168.120.104:80");
    assert_eq!(
        show(&fes[1]),
        "bootstrap=192.168.120.102:22623 master=192.168.120.103:22623"
    );
    // Issue #27: the workers never go to the bootstrap's machine-config
    // server, which refuses their pool; nothing else is kept from anyone.
    let worker: IpAddr = "192.168.120.104".parse().unwrap();
    assert_eq!(fes[1].backends[0].not_for, vec![worker]);
    assert!(fes[1].backends[1].not_for.is_empty());
    assert!(
        fes.iter()
            .filter(|f| f.name != "machine-config")
            .flat_map(|f| &f.backends)
            .all(|b| b.not_for.is_empty())
    );
}

/// A client kept from the only UP backend is held (closed, the observer
/// told, no connection reaches that backend) while other clients go
/// there; once another backend is UP the held client goes to it.
#[tokio::test]
async fn a_kept_client_is_held_until_another_backend_is_up() {
    #[derive(Default)]
    struct Seen {
        held: std::sync::Mutex<Vec<(String, SocketAddr, Vec<String>)>>,
        closed: std::sync::Mutex<Vec<(String, u64)>>,
    }
    impl okd_lb::ConnObserver for Seen {
        fn proxied(&self, _: &str, _: &str, _: SocketAddr, _: SocketAddr) {}
        fn held(&self, frontend: &str, client: SocketAddr, kept: &[String]) {
            self.held
                .lock()
                .unwrap()
                .push((frontend.into(), client, kept.to_vec()));
        }
        fn closed(&self, _: &str, backend: &str, _: SocketAddr, to_client: u64) {
            self.closed
                .lock()
                .unwrap()
                .push((backend.into(), to_client));
        }
    }
    let boot = echo("bootstrap").await;
    // The master's address is known, but nothing listens there yet.
    let master_l = TcpListener::bind(lo("127.0.0.1")).await.unwrap();
    let master_addr = master_l.local_addr().unwrap();
    drop(master_l);
    let worker: IpAddr = "127.0.0.4".parse().unwrap();
    let fe = Frontend {
        name: "machine-config".into(),
        bind: lo("127.0.0.1"),
        backends: vec![
            Backend {
                not_for: vec![worker],
                ..Backend::new("bootstrap", boot.addr)
            },
            Backend::new("master", master_addr),
        ],
        check: fast(HealthCheck::tcp()),
        balance: Balance::Source,
        limits: okd_lb::Limits::default(),
    };
    let seen = Arc::new(Seen::default());
    let lb = LoadBalancer::start_observed(vec![fe], Some(seen.clone()))
        .await
        .unwrap();
    let addr = lb.local_addr("machine-config").unwrap();
    wait_up(&lb, "machine-config", "bootstrap", true).await;
    wait_up(&lb, "machine-config", "master", false).await;
    // A master (any other client) reaches the bootstrap.
    assert_eq!(
        ask(addr, "127.0.0.3".parse().unwrap()).await.unwrap(),
        "bootstrap"
    );
    // The worker is held, every time, and never reaches it.
    for _ in 0..3 {
        assert!(ask(addr, worker).await.is_err());
    }
    {
        let held = seen.held.lock().unwrap();
        assert_eq!(held.len(), 3, "{:?}", *held);
        assert!(held.iter().all(|(f, c, k)| f == "machine-config"
            && c.ip() == worker
            && k == &["bootstrap".to_string()]));
    }
    let st = lb.snapshot();
    let boot_total = st.frontends[0].backends[0].connections_total;
    assert_eq!(
        boot_total, 1,
        "only the master's connection reached the bootstrap"
    );
    assert_eq!(st.frontends[0].rejected_total, 3);
    // The master's machine-config server comes up: the worker goes there.
    let master = TcpListener::bind(master_addr).await.unwrap();
    let task = tokio::spawn(async move {
        loop {
            let Ok((mut s, _)) = master.accept().await else {
                continue;
            };
            tokio::spawn(async move {
                let _ = s.write_all(b"master\n").await;
                let (mut r, mut w) = s.split();
                let _ = tokio::io::copy(&mut r, &mut w).await;
            });
        }
    });
    wait_up(&lb, "machine-config", "master", true).await;
    assert_eq!(ask(addr, worker).await.unwrap(), "master");
    assert_eq!(seen.held.lock().unwrap().len(), 3);
    // Each connection that ended was reported with what went to the client.
    let deadline = Instant::now() + Duration::from_secs(5);
    while seen.closed.lock().unwrap().len() < 2 {
        assert!(Instant::now() < deadline, "closed connections not reported");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let closed = seen.closed.lock().unwrap().clone();
    assert!(
        closed.contains(&("bootstrap".to_string(), "bootstrap\nping\n".len() as u64)),
        "{closed:?}"
    );
    assert!(
        closed.contains(&("master".to_string(), "master\nping\n".len() as u64)),
        "{closed:?}"
    );
    task.abort();
    lb.shutdown().await;
}

#[tokio::test]
async fn large_stream_counts_bytes() {
    // A sink that replies with the byte count after EOF.
    let l = TcpListener::bind(lo("127.0.0.1")).await.unwrap();
    let be = l.local_addr().unwrap();
    let sink = tokio::spawn(async move {
        let (mut s, _) = l.accept().await.unwrap();
        let mut n = 0u64;
        let mut buf = vec![0u8; 65536];
        loop {
            let k = s.read(&mut buf).await.unwrap();
            if k == 0 {
                break;
            }
            n += k as u64;
        }
        s.write_all(&n.to_be_bytes()).await.unwrap();
    });
    let mut fe = Frontend::new("big", lo("127.0.0.1"), vec![Backend::new("sink", be)]);
    fe.check = HealthCheck::none();
    let lb = LoadBalancer::start(vec![fe]).await.unwrap();
    let mut c = TcpStream::connect(lb.local_addr("big").unwrap())
        .await
        .unwrap();
    let chunk = vec![7u8; 1 << 20];
    for _ in 0..32 {
        c.write_all(&chunk).await.unwrap();
    }
    c.shutdown().await.unwrap();
    let mut n = [0u8; 8];
    c.read_exact(&mut n).await.unwrap();
    assert_eq!(u64::from_be_bytes(n), 32 << 20);
    sink.await.unwrap();
    let b = &lb.snapshot().frontends[0].backends[0];
    assert_eq!(b.bytes_in, 32 << 20);
    assert_eq!(b.bytes_out, 8);
}

/// Records every proxied connection.
#[derive(Default)]
struct Seen(std::sync::Mutex<Vec<(String, String, SocketAddr, SocketAddr)>>);

impl okd_lb::ConnObserver for Seen {
    fn proxied(&self, frontend: &str, backend: &str, client: SocketAddr, local: SocketAddr) {
        self.0
            .lock()
            .unwrap()
            .push((frontend.into(), backend.into(), client, local));
    }
}

#[tokio::test]
async fn observer_maps_upstream_connection_to_client() {
    // The backend records the peer address it sees; the observer must have
    // reported that address as the upstream side of the client's connection.
    let l = TcpListener::bind(lo("127.0.0.1")).await.unwrap();
    let addr = l.local_addr().unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let srv = tokio::spawn(async move {
        while let Ok((mut s, peer)) = l.accept().await {
            let _ = tx.send(peer);
            let _ = s.write_all(b"seen\n").await;
            let (mut r, mut w) = s.split();
            let _ = tokio::io::copy(&mut r, &mut w).await;
        }
    });
    let seen = Arc::new(Seen::default());
    let fe = Frontend::new("mc", lo("127.0.0.1"), vec![Backend::new("mcs", addr)]);
    let lb = LoadBalancer::start_observed(vec![fe], Some(seen.clone()))
        .await
        .unwrap();
    let front = lb.local_addr("mc").unwrap();
    let client_ip: IpAddr = "127.0.0.7".parse().unwrap();
    assert_eq!(ask(front, client_ip).await.unwrap(), "seen");
    let backend_saw = rx.recv().await.unwrap();
    let got = seen.0.lock().unwrap().clone();
    assert_eq!(got.len(), 1, "{got:?}");
    let (f, b, client, local) = &got[0];
    assert_eq!((f.as_str(), b.as_str()), ("mc", "mcs"));
    assert_eq!(client.ip(), client_ip);
    assert_eq!(*local, backend_saw);
    srv.abort();
}

/// A frontend on loopback with test-sized limits in front of `be`.
async fn limited(be: SocketAddr, per_client: usize, idle: Duration) -> LoadBalancer {
    let mut fe = Frontend::new("mc", lo("127.0.0.1"), vec![Backend::new("be", be)]);
    fe.check = HealthCheck::none();
    fe.limits = okd_lb::Limits {
        max_per_client: per_client,
        idle,
        ..okd_lb::Limits::default()
    };
    LoadBalancer::start(vec![fe]).await.unwrap()
}

/// Whether the balancer closed `s` within `within` (after any data).
async fn closed_within(s: &mut TcpStream, within: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + within;
    let mut b = [0u8; 64];
    loop {
        match tokio::time::timeout_at(deadline, s.read(&mut b)).await {
            Err(_) => return false,
            Ok(Ok(0)) | Ok(Err(_)) => return true,
            Ok(Ok(_)) => {}
        }
    }
}

async fn connect_from(src: &str, to: SocketAddr) -> TcpStream {
    let sock = TcpSocket::new_v4().unwrap();
    sock.bind(lo(src)).unwrap();
    sock.connect(to).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_flood_is_closed_after_idle_and_real_clients_pass() {
    let be = echo("be").await;
    let lb = limited(be.addr, 64, Duration::from_millis(1500)).await;
    let addr = lb.local_addr("mc").unwrap();
    // 300 clients from ten addresses that never send a byte.
    let mut flood = Vec::new();
    for i in 0..300 {
        flood.push(connect_from(&format!("127.0.7.{}", 1 + i % 10), addr).await);
    }
    // A real client passes at once.
    let t = Instant::now();
    assert_eq!(
        ask(addr, "127.0.0.20".parse().unwrap()).await.unwrap(),
        "be"
    );
    assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
    // The silent ones (and their backend connections) are closed after
    // the idle time, not kept for ever.
    let deadline = Instant::now() + Duration::from_secs(4);
    for c in &mut flood {
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(closed_within(c, left).await, "silent connection kept");
    }
    let t = Instant::now();
    while lb.snapshot().frontends[0].backends[0].active_connections > 0
        && t.elapsed() < Duration::from_secs(2)
    {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(lb.snapshot().frontends[0].backends[0].active_connections, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_client_cap_closes_the_extra_connection_of_one_address() {
    let be = echo("be").await;
    let lb = limited(be.addr, 8, Duration::from_secs(30)).await;
    let addr = lb.local_addr("mc").unwrap();
    let mut held = Vec::new();
    for _ in 0..8 {
        held.push(connect_from("127.0.7.50", addr).await);
    }
    let t = Instant::now();
    while lb.snapshot().frontends[0].active_connections < 8 && t.elapsed() < Duration::from_secs(2)
    {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let mut ninth = connect_from("127.0.7.50", addr).await;
    let mut b = [0u8; 16];
    let got = tokio::time::timeout(Duration::from_millis(500), ninth.read(&mut b)).await;
    assert!(
        matches!(got, Ok(Ok(0)) | Ok(Err(_))),
        "ninth connection of one address was proxied: {got:?}"
    );
    // The admitted ones and other addresses are proxied.
    let mut tag = [0u8; 3];
    held[0].read_exact(&mut tag).await.unwrap();
    assert_eq!(&tag, b"be\n");
    assert_eq!(
        ask(addr, "127.0.7.51".parse().unwrap()).await.unwrap(),
        "be"
    );
}

/// A backend that answers a health check (`GET …`) with `HTTP/1.0 200` when
/// `answers`, or never; any other client gets `<tag>\n` and an echo (a
/// client that sends nothing within 300 ms is not a check).
async fn checked_echo(tag: &str, answers: bool) -> Echo {
    let l = TcpListener::bind(lo("127.0.0.1")).await.unwrap();
    let addr = l.local_addr().unwrap();
    let tag = tag.to_string();
    let task = tokio::spawn(async move {
        loop {
            let Ok((mut s, _)) = l.accept().await else {
                continue;
            };
            let tag = tag.clone();
            tokio::spawn(async move {
                let mut first = [0u8; 4];
                match tokio::time::timeout(Duration::from_millis(300), s.read(&mut first)).await {
                    Ok(Ok(n)) if first[..n].starts_with(b"GET") => {
                        if answers {
                            let _ = s.write_all(b"HTTP/1.0 200 OK\r\n\r\n").await;
                        } else {
                            // Hold the check until it times out.
                            tokio::time::sleep(Duration::from_secs(30)).await;
                        }
                    }
                    Ok(_) => {}
                    Err(_) => {
                        if s.write_all(format!("{tag}\n").as_bytes()).await.is_ok() {
                            let (mut r, mut w) = s.split();
                            let _ = tokio::io::copy(&mut r, &mut w).await;
                        }
                    }
                }
            });
        }
    });
    Echo { addr, task }
}

/// Issue #18 finding 9: a backend is "not checked yet" (not UP) until its
/// first check finishes; connections go to it only while no backend is UP;
/// the snapshot and the Prometheus text say so.
#[tokio::test]
async fn backends_are_not_up_before_a_check() {
    let slow = checked_echo("slow", false).await;
    let fast = checked_echo("fast", true).await;
    // The slow backend's first check takes 10 s (it never answers).
    let check =
        HealthCheck::http_get("/readyz").every(Duration::from_secs(10), Duration::from_secs(10));
    let fe = |name: &str, bes: Vec<Backend>| Frontend {
        name: name.into(),
        bind: lo("127.0.0.1"),
        backends: bes,
        check: check.clone(),
        balance: Balance::RoundRobin,
        limits: okd_lb::Limits::default(),
    };
    let lb = LoadBalancer::start(vec![
        fe("only-slow", vec![Backend::new("slow", slow.addr)]),
        fe(
            "both",
            vec![
                Backend::new("slow", slow.addr),
                Backend::new("fast", fast.addr),
            ],
        ),
    ])
    .await
    .unwrap();
    assert_eq!(
        lb.is_up("only-slow", "slow"),
        Some(false),
        "UP before any check"
    );
    let st = lb.snapshot();
    let b = &st.frontends[0].backends[0];
    assert_eq!(
        (b.up, b.checked, b.state.as_str()),
        (false, false, "not checked yet"),
        "{b:?}"
    );
    let prom = lb.prometheus();
    assert!(
        prom.contains("okd_lb_backend_up{frontend=\"only-slow\",backend=\"slow\"} 0")
            && prom.contains("okd_lb_backend_checked{frontend=\"only-slow\",backend=\"slow\"} 0"),
        "{prom}"
    );
    // No backend UP: the not-checked one gets the connection.
    let only = lb.local_addr("only-slow").unwrap();
    assert_eq!(ask(only, localhost()).await.unwrap(), "slow");
    // Once "fast" passed its check, every connection goes to it, none to
    // the backend still not checked (round robin would alternate).
    wait_up(&lb, "both", "fast", true).await;
    assert_eq!(lb.snapshot().frontends[1].backends[1].state, "UP");
    let both = lb.local_addr("both").unwrap();
    for _ in 0..6 {
        assert_eq!(ask(both, localhost()).await.unwrap(), "fast");
    }
    assert_eq!(lb.is_up("both", "slow"), Some(false));
    assert_eq!(
        lb.snapshot().frontends[1].backends[0].state,
        "not checked yet"
    );
    lb.shutdown().await;
}

/// A `tracing` writer into a shared buffer.
#[derive(Clone, Default)]
struct LogBuf(Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for LogBuf {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Issue #26 finding 7: connections closed for want of a backend are
/// logged once when that starts, not once per connection.
#[tokio::test]
async fn rejections_are_logged_once_per_state_change() {
    let buf = LogBuf::default();
    let w = buf.clone();
    let sub = tracing_subscriber::fmt()
        .with_writer(move || w.clone())
        .with_ansi(false)
        .with_max_level(tracing::Level::INFO)
        .finish();
    // current_thread runtime: every task of this test logs on this thread.
    let _guard = tracing::subscriber::set_default(sub);
    let dead = TcpListener::bind(lo("127.0.0.1")).await.unwrap();
    let dead_addr = dead.local_addr().unwrap();
    drop(dead);
    let mut fe = Frontend::new(
        "api",
        lo("127.0.0.1"),
        vec![Backend::new("gone", dead_addr)],
    );
    fe.check = fast(HealthCheck::tcp());
    let lb = LoadBalancer::start(vec![fe]).await.unwrap();
    let addr = lb.local_addr("api").unwrap();
    for _ in 0..20 {
        assert!(ask(addr, localhost()).await.is_err());
    }
    assert_eq!(lb.snapshot().frontends[0].rejected_total, 20);
    let log = String::from_utf8_lossy(&buf.0.lock().unwrap()).into_owned();
    let n = log.matches("no backend available").count();
    assert_eq!(n, 1, "logged {n} times for 20 closed connections:\n{log}");
    lb.shutdown().await;
}
