//! Requests per second of okd-mcs vs nginx serving the same config over
//! TLS on loopback, loaded by the same `wrk` (not a test).
//!
//! `mcs_bench [seconds, default 10] [connections, default 32] [threads, default: cores]`
//!
//! Two workloads: the real rendered master config of
//! `examples/baremetal-single-master` (okd-assets, as `create
//! ignition-configs` makes it) and a fixture of a few hundred KB (the size
//! of an MCO-rendered master config). For each, this binary starts itself
//! as the machine-config server (`--serve DIR THREADS`: its own runtime
//! with THREADS workers, `serve_tls`) and `/usr/sbin/nginx` (foreground,
//! `worker_processes` THREADS, keep-alive, TLS with the same certificate,
//! the same body bytes as a static file), checks that both send identical
//! bytes, then runs `wrk -tTHREADS -cCONNS -dSECONDSs` with Ignition
//! 2.14's Accept header against each, alternating, best of two rounds.
//! Both servers are stopped by PID when the bench exits, also on panic.
//!
//! With `MCS_BENCH_PER_CORE=1` the server child runs one current-thread
//! runtime per thread, all serving the same listener (nginx's layout),
//! instead of one multi-thread runtime.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use okd_mcs::{McsState, SpecVersion};
use okd_pki::{CertConfig, ExtKeyUsage, KeyUsage, NameAttr, RsaKey};
use serde_json::{Value, json};

const ACCEPT: &str = "application/vnd.coreos.ignition+json;version=3.3.0, */*;q=0.1";

/// A child process stopped by PID on drop: SIGTERM (nginx's fast
/// shutdown), then SIGKILL for it and its own children after 5 s.
struct Guard {
    child: Child,
    what: &'static str,
}

fn signal(sig: &str, pid: u32) {
    let _ = Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(pid.to_string())
        .stderr(Stdio::null())
        .status();
}

fn children_of(pid: u32) -> Vec<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

impl Drop for Guard {
    fn drop(&mut self) {
        let pid = self.child.id();
        // Already exited and reaped: its PID may belong to another process
        // by now, so no signal.
        if let Ok(Some(_)) = self.child.try_wait() {
            return;
        }
        let kids = children_of(pid);
        signal("TERM", pid);
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                eprintln!("stopped {} (pid {pid})", self.what);
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        for k in kids {
            signal("KILL", k);
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        eprintln!("killed {} (pid {pid})", self.what);
    }
}

/// The server side: `--serve DIR THREADS`. Serves DIR's asset directory
/// with DIR/tls.crt and DIR/tls.key until standard input closes.
fn serve(dir: &Path, threads: usize) {
    if std::env::var("MCS_BENCH_PER_CORE").is_ok() {
        return serve_per_core(dir, threads);
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let mut state = McsState::from_asset_dir(dir).expect("asset dir");
        state.set_tls_pair(
            std::fs::read(dir.join("tls.crt")).expect("tls.crt"),
            std::fs::read(dir.join("tls.key")).expect("tls.key"),
        );
        let listener = okd_mcs::bind("127.0.0.1:0".parse().expect("addr")).expect("bind");
        listener.set_nonblocking(true).expect("nonblocking");
        println!("listening on {}", listener.local_addr().expect("addr"));
        std::io::stdout().flush().expect("flush");
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        std::thread::spawn(move || {
            let _ = std::io::stdin().read_to_end(&mut Vec::new());
            let _ = tx.send(());
        });
        okd_mcs::serve_tls(listener, Arc::new(state), None, async {
            let _ = rx.await;
        })
        .await
        .expect("serve");
    });
}

fn serve_per_core(dir: &Path, threads: usize) {
    let mut state = McsState::from_asset_dir(dir).expect("asset dir");
    state.set_tls_pair(
        std::fs::read(dir.join("tls.crt")).expect("tls.crt"),
        std::fs::read(dir.join("tls.key")).expect("tls.key"),
    );
    let state = Arc::new(state);
    let listener = okd_mcs::bind("127.0.0.1:0".parse().expect("addr")).expect("bind");
    listener.set_nonblocking(true).expect("nonblocking");
    println!("listening on {}", listener.local_addr().expect("addr"));
    std::io::stdout().flush().expect("flush");
    let (tx, rx) = tokio::sync::watch::channel(false);
    let mut joins = Vec::new();
    for _ in 0..threads {
        let l = listener.try_clone().expect("clone listener");
        let st = state.clone();
        let mut rx = rx.clone();
        joins.push(std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("rt");
            rt.block_on(async move {
                okd_mcs::serve_tls(l, st, None, async move {
                    let _ = rx.wait_for(|v| *v).await;
                })
                .await
                .expect("serve");
            });
        }));
    }
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
    let _ = tx.send(true);
    for j in joins {
        let _ = j.join();
    }
}

struct Pki {
    ca_pem: String,
    chain_pem: String,
    key_pem: String,
}

fn pki() -> Pki {
    let now = time::OffsetDateTime::now_utc();
    let ca = okd_pki::self_signed(
        &CertConfig::signer("openshift", "root-ca", Duration::from_secs(86_400)),
        RsaKey::generate().expect("key"),
        now,
    )
    .expect("CA");
    let leaf = okd_pki::signed(
        &CertConfig {
            subject: vec![(NameAttr::CommonName, "system:machine-config-server".into())],
            dns_names: vec!["localhost".into()],
            ip_addresses: vec![IpAddr::V4(Ipv4Addr::LOCALHOST)],
            key_usage: KeyUsage {
                digital_signature: true,
                key_encipherment: true,
                ..KeyUsage::default()
            },
            ext_key_usage: vec![ExtKeyUsage::ServerAuth],
            validity: Duration::from_secs(86_400),
            is_ca: false,
        },
        RsaKey::generate().expect("key"),
        &ca,
        now,
    )
    .expect("server certificate");
    Pki {
        ca_pem: ca.cert.pem.clone(),
        chain_pem: okd_pki::pem_with_parent(&leaf.cert, &ca.cert),
        key_pem: leaf.key.private_pem(),
    }
}

/// `create ignition-configs` for the single-master example into `dir`.
fn real_assets(dir: &Path) {
    use okd_types::release::{DEFAULT_RELEASE_IMAGE, ReleaseTarget};
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../..");
    std::fs::copy(
        repo.join("examples/baremetal-single-master/install-config.yaml"),
        dir.join("install-config.yaml"),
    )
    .expect("copy install-config.yaml");
    let target = ReleaseTarget::from_release_image(DEFAULT_RELEASE_IMAGE).expect("target");
    let mut ctx = okd_assets::GenCtx::new(
        DEFAULT_RELEASE_IMAGE.to_string(),
        target,
        target.ignition_spec(),
    );
    okd_assets::create(
        &okd_assets::AssetDir::new(dir),
        &mut ctx,
        okd_assets::Target::IgnitionConfigs,
        2,
    )
    .expect("create ignition-configs");
}

/// The real asset directory plus one master MachineConfig with `n` files
/// of `size` bytes (text, base64 data URLs like the MCO's templates).
fn fixture_assets(real: &Path, dir: &Path, n: usize, size: usize) {
    let mut ign: Value =
        serde_json::from_slice(&std::fs::read(real.join("bootstrap.ign")).expect("bootstrap.ign"))
            .expect("bootstrap.ign JSON");
    let line = "Environment=\"KUBELET_NODE_IP=0.0.0.0\" # generated by the bench fixture\n";
    let files: Vec<Value> = (0..n)
        .map(|i| {
            let text: String = line.repeat(size / line.len() + 1)[..size].to_string();
            json!({
                "path": format!("/etc/bench/file-{i:03}.conf"),
                "mode": 420,
                "overwrite": true,
                "contents": {"source": okd_types::dataurl::encode(text.as_bytes())},
            })
        })
        .collect();
    let mc = json!({
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineConfig",
        "metadata": {"name": "50-master-bench",
                     "labels": {"machineconfiguration.openshift.io/role": "master"}},
        "spec": {"config": {"ignition": {"version": "3.2.0"}, "storage": {"files": files}}},
    });
    ign["storage"]["files"]
        .as_array_mut()
        .expect("files")
        .push(json!({
            "path": "/opt/openshift/openshift/99_openshift-machineconfig_50-master-bench.yaml",
            "mode": 420,
            "contents": {"source": okd_types::dataurl::encode(mc.to_string().as_bytes())},
        }));
    std::fs::write(dir.join("bootstrap.ign"), ign.to_string()).expect("write bootstrap.ign");
}

fn start_ours(dir: &Path, threads: usize) -> (Guard, SocketAddr) {
    let exe = std::env::current_exe().expect("current exe");
    let mut child = Command::new(exe)
        .arg("--serve")
        .arg(dir)
        .arg(threads.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start okd-mcs");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("okd-mcs output");
    let addr = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected okd-mcs output {line:?}"))
        .parse()
        .expect("addr");
    (
        Guard {
            child,
            what: "okd-mcs",
        },
        addr,
    )
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("free port")
        .local_addr()
        .expect("addr")
        .port()
}

/// nginx in the foreground on a loopback high port, serving
/// `prefix/html/config/master` as `/config/master`.
fn start_nginx(prefix: &Path, threads: usize) -> (Guard, SocketAddr) {
    let port = free_port();
    let conf = prefix.join("nginx.conf");
    std::fs::write(
        &conf,
        format!(
            "user root;\n\
             worker_processes {threads};\n\
             error_log {p}/error.log warn;\n\
             pid {p}/nginx.pid;\n\
             events {{ worker_connections 4096; }}\n\
             http {{\n\
               access_log off;\n\
               keepalive_timeout 75s;\n\
               keepalive_requests 100000000;\n\
               client_body_temp_path {p}/tmp;\n\
               proxy_temp_path {p}/tmp;\n\
               fastcgi_temp_path {p}/tmp;\n\
               uwsgi_temp_path {p}/tmp;\n\
               scgi_temp_path {p}/tmp;\n\
               server {{\n\
                 listen 127.0.0.1:{port} ssl;\n\
                 ssl_certificate {p}/tls.crt;\n\
                 ssl_certificate_key {p}/tls.key;\n\
                 ssl_protocols TLSv1.2 TLSv1.3;\n\
                 root {p}/html;\n\
                 location = /config/master {{ default_type application/json; }}\n\
               }}\n\
             }}\n",
            p = prefix.display()
        ),
    )
    .expect("write nginx.conf");
    std::fs::create_dir_all(prefix.join("tmp")).expect("mkdir tmp");
    let child = Command::new("/usr/sbin/nginx")
        .arg("-e")
        .arg(prefix.join("error.log"))
        .arg("-p")
        .arg(prefix)
        .arg("-c")
        .arg(&conf)
        .arg("-g")
        .arg("daemon off;")
        .stdin(Stdio::null())
        .spawn()
        .expect("start nginx (apt-get install -y --no-install-recommends nginx)");
    let g = Guard {
        child,
        what: "nginx",
    };
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    (g, addr)
}

fn wait_listening(addr: SocketAddr, g: &mut Guard) {
    for _ in 0..200 {
        if std::net::TcpStream::connect(addr).is_ok() {
            return;
        }
        if let Ok(Some(st)) = g.child.try_wait() {
            panic!("{} exited: {st}", g.what);
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    panic!("nothing listens on {addr}");
}

/// GET over TLS (trusting `ca_pem`), returning status line and body.
fn fetch(addr: SocketAddr, ca_pem: &str) -> (String, Vec<u8>) {
    use rustls_pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    for c in rustls_pki_types::CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots.add(c.expect("CA")).expect("add CA");
    }
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let cfg = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    let name = rustls_pki_types::ServerName::try_from("127.0.0.1").expect("name");
    let conn = rustls::ClientConnection::new(Arc::new(cfg), name).expect("client");
    let tcp = std::net::TcpStream::connect(addr).expect("connect");
    tcp.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let mut tls = rustls::StreamOwned::new(conn, tcp);
    write!(
        tls,
        "GET /config/master HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: {ACCEPT}\r\nConnection: close\r\n\r\n"
    )
    .expect("request");
    let mut raw = Vec::new();
    let _ = tls.read_to_end(&mut raw);
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("response headers");
    let status = String::from_utf8_lossy(&raw[..end])
        .lines()
        .next()
        .unwrap_or("")
        .to_string();
    (status, raw[end + 4..].to_vec())
}

struct WrkResult {
    rps: f64,
    mb_s: f64,
}

fn wrk(addr: SocketAddr, secs: u64, conns: usize, threads: usize) -> WrkResult {
    let out_path = std::env::temp_dir().join(format!("mcs-bench-wrk-{}.txt", std::process::id()));
    let out = std::fs::File::create(&out_path).expect("wrk output file");
    let child = Command::new("wrk")
        .arg(format!("-t{threads}"))
        .arg(format!("-c{conns}"))
        .arg(format!("-d{secs}s"))
        .arg("--timeout")
        .arg("10s")
        .arg("-H")
        .arg(format!("Accept: {ACCEPT}"))
        .arg(format!("https://{addr}/config/master"))
        .stdin(Stdio::null())
        .stdout(out)
        .spawn()
        .expect("start wrk (apt-get install -y --no-install-recommends wrk)");
    let mut g = Guard { child, what: "wrk" };
    let deadline = Instant::now() + Duration::from_secs(secs + 60);
    loop {
        match g.child.try_wait() {
            Ok(Some(_)) => break,
            _ if Instant::now() > deadline => panic!("wrk ran past {secs} + 60 s"),
            _ => std::thread::sleep(Duration::from_millis(50)),
        }
    }
    drop(g);
    let text = std::fs::read_to_string(&out_path).expect("wrk output");
    let _ = std::fs::remove_file(&out_path);
    assert!(
        !text.contains("Non-2xx") && !text.contains("Socket errors"),
        "errors against {addr}:\n{text}"
    );
    let value = |label: &str| -> String {
        text.lines()
            .find_map(|l| l.trim().strip_prefix(label).map(|v| v.trim().to_string()))
            .unwrap_or_else(|| panic!("no {label} in wrk output:\n{text}"))
    };
    let rps: f64 = value("Requests/sec:").parse().expect("Requests/sec");
    let t = value("Transfer/sec:");
    let (num, unit) = t.split_at(t.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(t.len()));
    let scale = match unit {
        "GB" => 1024.0,
        "MB" => 1.0,
        "KB" => 1.0 / 1024.0,
        _ => 1.0 / (1024.0 * 1024.0),
    };
    WrkResult {
        rps,
        mb_s: num.parse::<f64>().unwrap_or(0.0) * scale,
    }
}

fn bench(
    label: &str,
    assets: &Path,
    pki: &Pki,
    secs: u64,
    conns: usize,
    threads: usize,
) -> (usize, f64, f64) {
    std::fs::write(assets.join("tls.crt"), &pki.chain_pem).expect("tls.crt");
    std::fs::write(assets.join("tls.key"), &pki.key_pem).expect("tls.key");
    let state = McsState::from_asset_dir(assets).expect("asset dir");
    let body = state
        .body("master", SpecVersion::V3(3))
        .expect("master")
        .expect("3.3.0 body")
        .to_vec();
    let prefix = tempfile::tempdir().expect("nginx prefix");
    let p = prefix.path();
    std::fs::create_dir_all(p.join("html/config")).expect("mkdir");
    std::fs::write(p.join("html/config/master"), &body).expect("write body");
    std::fs::write(p.join("tls.crt"), &pki.chain_pem).expect("tls.crt");
    std::fs::write(p.join("tls.key"), &pki.key_pem).expect("tls.key");

    let (mut nginx, nginx_addr) = start_nginx(p, threads);
    let (mut ours, ours_addr) = start_ours(assets, threads);
    wait_listening(nginx_addr, &mut nginx);
    wait_listening(ours_addr, &mut ours);
    for (who, addr) in [("nginx", nginx_addr), ("okd-mcs", ours_addr)] {
        let (status, got) = fetch(addr, &pki.ca_pem);
        assert!(status.contains(" 200 "), "{who}: {status}");
        assert!(
            got == body,
            "{who} sent {} bytes, want {}",
            got.len(),
            body.len()
        );
    }
    println!(
        "{label}: {} bytes of spec 3.3.0 JSON; okd-mcs pid {}, nginx pid {}",
        body.len(),
        ours.child.id(),
        nginx.child.id()
    );
    // Warm both, then alternate and keep the best of two rounds.
    wrk(nginx_addr, 2, conns, threads);
    wrk(ours_addr, 2, conns, threads);
    let (mut n, mut o) = (0.0f64, 0.0f64);
    let (mut n_mb, mut o_mb) = (0.0f64, 0.0f64);
    for _ in 0..2 {
        let r = wrk(nginx_addr, secs, conns, threads);
        if r.rps > n {
            (n, n_mb) = (r.rps, r.mb_s);
        }
        let r = wrk(ours_addr, secs, conns, threads);
        if r.rps > o {
            (o, o_mb) = (r.rps, r.mb_s);
        }
    }
    println!(
        "{label:>9}  nginx {n:9.0} req/s ({n_mb:6.0} MB/s)   okd-mcs {o:9.0} req/s ({o_mb:6.0} MB/s)   ratio ours/nginx {:.2}",
        o / n
    );
    drop(ours);
    drop(nginx);
    (body.len(), n, o)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--serve") {
        let dir = PathBuf::from(args.get(2).expect("DIR"));
        let threads = args.get(3).and_then(|t| t.parse().ok()).unwrap_or(2);
        serve(&dir, threads);
        return;
    }
    let secs: u64 = args.get(1).map_or(10, |a| a.parse().expect("seconds"));
    let conns: usize = args.get(2).map_or(32, |a| a.parse().expect("connections"));
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let threads: usize = args.get(3).map_or(cores, |a| a.parse().expect("threads"));
    let version = Command::new("/usr/sbin/nginx")
        .arg("-v")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stderr).trim().to_string())
        .unwrap_or_default();
    println!(
        "{version}; wrk -t{threads} -c{conns} -d{secs}s; {threads} server threads/workers; {cores} cores"
    );
    let pki = pki();
    let real = tempfile::tempdir().expect("tempdir");
    real_assets(real.path());
    let fixture = tempfile::tempdir().expect("tempdir");
    fixture_assets(real.path(), fixture.path(), 40, 3000);
    bench("real", real.path(), &pki, secs, conns, threads);
    bench("fixture", fixture.path(), &pki, secs, conns, threads);
}
