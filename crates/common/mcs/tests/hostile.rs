//! Slow clients against the machine-config server (issue #10 item 2): a
//! flood of connections sending nothing, half a request head or half a
//! TLS ClientHello does not keep curl's Ignition fetch waiting, is closed
//! after the (test-shortened) head timeout, and one address cannot take
//! more than its share of connections.

mod common;

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use common::{Server, pki, sample_state};
use okd_listen::Limits;
use okd_mcs::SpecVersion;

const IGN33: &str = "Accept: application/vnd.coreos.ignition+json;version=3.3.0";

fn limits() -> Limits {
    Limits {
        max_connections: 1024,
        max_per_client: 40,
        header_read: Duration::from_millis(1500),
        idle: Duration::from_secs(5),
    }
}

/// A blocking connection from `src` (a 127.0.0.0/8 address) to `to`.
async fn connect_from(src: IpAddr, to: SocketAddr) -> TcpStream {
    let s = tokio::net::TcpSocket::new_v4().unwrap();
    s.bind(SocketAddr::new(src, 0)).unwrap();
    let s = s.connect(to).await.unwrap().into_std().unwrap();
    s.set_nonblocking(false).unwrap();
    s
}

/// Whether the server closed `c` (EOF or reset) within `within`.
fn closed_within(c: &mut TcpStream, within: Duration) -> bool {
    c.set_read_timeout(Some(within)).unwrap();
    let mut b = [0u8; 256];
    loop {
        match c.read(&mut b) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) => {
                return !matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                );
            }
        }
    }
}

/// Time until `deadline`, at least 10 ms.
fn left(deadline: Instant) -> Duration {
    deadline
        .saturating_duration_since(Instant::now())
        .max(Duration::from_millis(10))
}

/// curl fetching the master config over TLS from `src`: (body, time).
async fn fetch(curl: PathBuf, ca: PathBuf, addr: SocketAddr, src: &str) -> (Vec<u8>, Duration) {
    let url = format!("https://127.0.0.1:{}/config/master", addr.port());
    let src = src.to_string();
    tokio::task::spawn_blocking(move || {
        let t = Instant::now();
        let out = Command::new(curl)
            .args([
                "-sS",
                "--fail",
                "--max-time",
                "5",
                "--interface",
                &src,
                "-H",
                IGN33,
            ])
            .arg("--cacert")
            .arg(&ca)
            .arg(&url)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "curl: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        (out.stdout, t.elapsed())
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_client_flood_leaves_ignition_fetches_fast_and_is_cut_off() {
    let Some(curl) = common::tool("curl", &["/usr/bin/curl"]) else {
        return;
    };
    let state = sample_state();
    let want = state
        .body("master", SpecVersion::V3(3))
        .unwrap()
        .unwrap()
        .to_vec();
    let srv = Server::start_with(state, None, true, limits());
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, pki().ca_pem.as_bytes()).unwrap();
    // 300 slow clients from ten addresses: nothing, half a ClientHello (a
    // record header announcing 512 octets), or a plain-text half head.
    let mut flood = Vec::new();
    for i in 0..300u32 {
        let src: IpAddr = format!("127.0.4.{}", 1 + i % 10).parse().unwrap();
        let mut c = connect_from(src, srv.addr).await;
        match i % 3 {
            0 => {}
            1 => c.write_all(&[0x16, 0x03, 0x01, 0x02, 0x00, 0x01]).unwrap(),
            _ => c
                .write_all(b"GET /config/master HTTP/1.1\r\nHost: x\r\n")
                .unwrap(),
        }
        flood.push(c);
    }
    let (body, took) = fetch(curl.clone(), ca.clone(), srv.addr, "127.0.0.9").await;
    assert_eq!(body, want);
    assert!(took < Duration::from_secs(1), "fetch took {took:?}");
    // After the head timeout every slow connection is gone.
    let flood = tokio::task::spawn_blocking(move || {
        std::thread::sleep(Duration::from_millis(1500));
        // One 2 s deadline for all, so a failure is quick too.
        let deadline = Instant::now() + Duration::from_secs(2);
        flood
            .iter_mut()
            .map(|c| closed_within(c, left(deadline)))
            .filter(|closed| !closed)
            .count()
    })
    .await
    .unwrap();
    assert_eq!(flood, 0, "slow connections still open");
    // And fetching still works.
    let (body, _) = fetch(curl, ca, srv.addr, "127.0.0.9").await;
    assert_eq!(body, want);
    srv.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_address_gets_its_share_of_connections_only() {
    let Some(curl) = common::tool("curl", &["/usr/bin/curl"]) else {
        return;
    };
    let state = sample_state();
    let srv = Server::start_with(
        state,
        None,
        true,
        Limits {
            max_per_client: 8,
            ..limits()
        },
    );
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, pki().ca_pem.as_bytes()).unwrap();
    let src: IpAddr = "127.0.4.50".parse().unwrap();
    let mut held = Vec::new();
    for _ in 0..8 {
        held.push(connect_from(src, srv.addr).await);
    }
    // Let the server admit the eight before the ninth arrives.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut ninth = connect_from(src, srv.addr).await;
    let (ninth_closed, first_closed) = tokio::task::spawn_blocking(move || {
        let n = closed_within(&mut ninth, Duration::from_millis(500));
        let f = closed_within(&mut held[0], Duration::from_millis(100));
        (n, f)
    })
    .await
    .unwrap();
    assert!(ninth_closed, "ninth connection of one address was kept");
    assert!(!first_closed, "an admitted connection was closed early");
    // Another address is served meanwhile.
    let (body, _) = fetch(curl, ca, srv.addr, "127.0.4.51").await;
    assert!(!body.is_empty());
    srv.stop().await.unwrap();
}
