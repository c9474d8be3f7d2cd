//! What the balancer reports: the Prometheus text, the byte counts of a large
//! stream, the connection observer.

mod common;

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use okd_lb::{Backend, Frontend, HealthCheck, LoadBalancer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use common::{ask, echo, lo, localhost};

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
