//! The limits against real slow clients and a real client (curl).

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::ConnectInfo;
use axum::routing::get;
use okd_listen::{Limits, Listener, serve_router};

fn curl() -> std::path::PathBuf {
    okd_test_utils::tool("curl", &["/usr/bin/curl"], Some("curl")).expect("curl")
}

/// A connection from `src` (any 127.0.0.0/8 address) to `to`.
fn connect_from(src: IpAddr, to: SocketAddr) -> TcpStream {
    // std has no bind-before-connect: tokio's TcpSocket has, and hands
    // the connected socket back as a std stream.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let s = tokio::net::TcpSocket::new_v4().unwrap();
        s.bind(SocketAddr::new(src, 0)).unwrap();
        let s = s.connect(to).await.unwrap();
        let s = s.into_std().unwrap();
        s.set_nonblocking(false).unwrap();
        s
    })
}

/// Whether the server closed `s` (EOF or reset) within `within`.
fn closed_within(s: &mut TcpStream, within: Duration) -> bool {
    s.set_read_timeout(Some(within)).unwrap();
    let mut b = [0u8; 256];
    loop {
        match s.read(&mut b) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return false;
            }
            Err(_) => return true,
        }
    }
}

/// A server on its own runtime; dropping it stops the runtime, which
/// closes the listener and every connection.
struct Server {
    addr: SocketAddr,
    _rt: tokio::runtime::Runtime,
    gate: Arc<okd_listen::Gate>,
}

fn start(limits: Limits, tls: Option<Arc<rustls::ServerConfig>>) -> Server {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (addr, gate) = rt.block_on(async {
        let l = Listener::bind("127.0.0.1:0".parse().unwrap(), limits)
            .await
            .unwrap();
        let addr = l.local_addr().unwrap();
        let gate = l.gate().clone();
        let app = Router::new().route(
            "/who",
            get(|ConnectInfo(p): ConnectInfo<SocketAddr>| async move { p.ip().to_string() }),
        );
        tokio::spawn(serve_router(l, app, tls, std::future::pending()));
        (addr, gate)
    });
    Server {
        addr,
        _rt: rt,
        gate,
    }
}

/// Time until `deadline`, at least 10 ms.
fn left(deadline: Instant) -> Duration {
    deadline
        .saturating_duration_since(Instant::now())
        .max(Duration::from_millis(10))
}

fn curl_who(url: &str, from: &str, insecure: bool) -> (String, Duration) {
    let t = Instant::now();
    let mut c = Command::new(curl());
    c.args(["-sS", "--max-time", "5", "--interface", from]);
    if insecure {
        c.arg("-k");
    }
    let out = c.arg(url).output().unwrap();
    assert!(
        out.status.success(),
        "curl {url}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (String::from_utf8(out.stdout).unwrap(), t.elapsed())
}

fn short() -> Limits {
    Limits {
        max_connections: 1024,
        max_per_client: 40,
        header_read: Duration::from_millis(1500),
        idle: Duration::from_secs(3),
    }
}

#[test]
fn slow_header_flood_is_cut_off_and_real_clients_are_served() {
    let s = start(short(), None);
    // 300 slow clients from ten addresses: half a request head, or nothing.
    let mut flood = Vec::new();
    for i in 0..300u32 {
        let src: IpAddr = format!("127.0.1.{}", 1 + i % 10).parse().unwrap();
        let mut c = connect_from(src, s.addr);
        if i % 2 == 0 {
            c.write_all(b"GET /who HTTP/1.1\r\nHost: x\r\nX-Slow: ")
                .unwrap();
        }
        flood.push(c);
    }
    // Every slow connection was admitted (30 per address, cap 40).
    let t = Instant::now();
    while s.gate.open() < 300 && t.elapsed() < Duration::from_secs(3) {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(s.gate.open(), 300);
    // A real client is answered at once, with its own address.
    let (who, took) = curl_who(&format!("http://{}/who", s.addr), "127.0.0.5", false);
    assert_eq!(who, "127.0.0.5");
    assert!(took < Duration::from_secs(1), "took {took:?}");
    // After the head timeout every slow connection is closed by the server.
    std::thread::sleep(Duration::from_millis(1500));
    let deadline = Instant::now() + Duration::from_secs(2);
    for (i, c) in flood.iter_mut().enumerate() {
        assert!(
            closed_within(c, left(deadline)),
            "slow connection {i} still open"
        );
    }
    let t = Instant::now();
    while s.gate.open() > 0 && t.elapsed() < Duration::from_secs(3) {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(s.gate.open(), 0);
}

#[test]
fn connections_are_open_until_the_head_timeout() {
    let s = start(short(), None);
    let mut c = connect_from("127.0.0.1".parse().unwrap(), s.addr);
    c.write_all(b"GET /who HTTP/1.1\r\nHost: x\r\n").unwrap();
    // Not closed early...
    assert!(!closed_within(&mut c, Duration::from_millis(900)));
    // ...but closed after 1.5 s.
    assert!(closed_within(&mut c, Duration::from_secs(2)));
}

#[test]
fn per_client_cap_refuses_the_next_connection_of_that_address_only() {
    let s = start(
        Limits {
            max_per_client: 4,
            ..short()
        },
        None,
    );
    let src: IpAddr = "127.0.2.1".parse().unwrap();
    let mut held: Vec<TcpStream> = (0..4).map(|_| connect_from(src, s.addr)).collect();
    let t = Instant::now();
    while s.gate.open() < 4 && t.elapsed() < Duration::from_secs(3) {
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut fifth = connect_from(src, s.addr);
    assert!(
        closed_within(&mut fifth, Duration::from_millis(500)),
        "fifth connection of one address was kept"
    );
    assert!(!closed_within(&mut held[0], Duration::from_millis(100)));
    assert_eq!(s.gate.refused(), 1);
    // Another address is still served.
    let (who, _) = curl_who(&format!("http://{}/who", s.addr), "127.0.2.2", false);
    assert_eq!(who, "127.0.2.2");
    // Closing one frees a slot for the first address again.
    drop(held.pop());
    let t = Instant::now();
    while s.gate.open() > 3 && t.elapsed() < Duration::from_secs(3) {
        std::thread::sleep(Duration::from_millis(10));
    }
    let (who, _) = curl_who(&format!("http://{}/who", s.addr), "127.0.2.1", false);
    assert_eq!(who, "127.0.2.1");
}

fn tls_config() -> Arc<rustls::ServerConfig> {
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["localhost".into()])
        .unwrap()
        .self_signed(&key)
        .unwrap();
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut cfg = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![cert.der().clone()],
            rustls_pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
        )
        .unwrap();
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    Arc::new(cfg)
}

#[test]
fn tls_handshake_is_bounded_and_real_clients_are_served() {
    let s = start(short(), Some(tls_config()));
    // Silent clients and a half ClientHello (a TLS record header only).
    let mut slow: Vec<TcpStream> = (0..50)
        .map(|i| {
            let mut c = connect_from(format!("127.0.3.{}", 1 + i % 5).parse().unwrap(), s.addr);
            if i % 2 == 0 {
                c.write_all(&[0x16, 0x03, 0x01, 0x02, 0x00]).unwrap();
            }
            c
        })
        .collect();
    let (who, took) = curl_who(&format!("https://{}/who", s.addr), "127.0.0.6", true);
    assert_eq!(who, "127.0.0.6");
    assert!(took < Duration::from_secs(1), "took {took:?}");
    std::thread::sleep(Duration::from_millis(1500));
    let deadline = Instant::now() + Duration::from_secs(2);
    for (i, c) in slow.iter_mut().enumerate() {
        assert!(
            closed_within(c, left(deadline)),
            "slow TLS connection {i} still open"
        );
    }
}

#[test]
fn raw_conn_idle_timeout_closes_quiet_clients_only() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let limits = Limits {
            idle: Duration::from_millis(600),
            ..Limits::default()
        };
        let l = Listener::bind("127.0.0.1:0".parse().unwrap(), limits)
            .await
            .unwrap();
        let addr = l.local_addr().unwrap();
        let echo = tokio::spawn(async move {
            let (mut c, _) = l.accept().await;
            let mut b = [0u8; 64];
            let t = Instant::now();
            loop {
                match c.read(&mut b).await {
                    Ok(0) => return (t.elapsed(), "eof"),
                    Ok(n) => c.write_all(&b[..n]).await.unwrap(),
                    Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {
                        return (t.elapsed(), "timeout");
                    }
                    Err(_) => return (t.elapsed(), "error"),
                }
            }
        });
        let mut c = tokio::net::TcpStream::connect(addr).await.unwrap();
        // A client talking every 300 ms for 1.5 s is kept...
        for _ in 0..5 {
            c.write_all(b"x").await.unwrap();
            let mut b = [0u8; 1];
            c.read_exact(&mut b).await.unwrap();
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
        // ...then, quiet, is closed 0.6 s after its last byte.
        let (took, how) = tokio::time::timeout(Duration::from_secs(5), echo)
            .await
            .expect("quiet connection never closed")
            .unwrap();
        assert_eq!(how, "timeout");
        assert!(took >= Duration::from_millis(1500), "{took:?}");
        assert!(took < Duration::from_millis(2500), "{took:?}");
    });
}
