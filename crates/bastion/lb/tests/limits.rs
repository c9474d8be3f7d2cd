//! Connection limits: silent clients are closed after the idle time, one
//! address gets no more than its per-client cap.

mod common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use okd_lb::{Backend, Frontend, HealthCheck, LoadBalancer};
use tokio::io::AsyncReadExt;
use tokio::net::{TcpSocket, TcpStream};

use common::{ask, echo, lo};

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
