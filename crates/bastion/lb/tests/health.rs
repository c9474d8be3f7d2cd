//! Health checks: failover when a backend dies, no backend UP, HTTPS `/readyz`
//! checks, backends not UP before their first check (what is logged: health_log.rs).

mod common;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use okd_lb::{Backend, Balance, Frontend, HealthCheck, LoadBalancer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use common::{Echo, ask, echo, fast, lo, localhost, wait_up};

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
