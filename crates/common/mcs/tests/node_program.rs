//! The bootstrap's okd-install program served at `/okd-install/node-program`
//! (the master config of a payload without operators fetches it there):
//! streamed whole with its length, HEAD without a body, 404 when no
//! program is set, 405 for other methods.

mod common;

use std::io::{Read as _, Write as _};
use std::sync::Arc;

use okd_mcs::{NODE_PROGRAM_ROUTE, Transport};

/// One HTTP/1.1 request on a new connection; the whole response.
fn request(addr: std::net::SocketAddr, method: &str, path: &str) -> Vec<u8> {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).unwrap();
    out
}

fn split(resp: &[u8]) -> (String, &[u8]) {
    let end = resp.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    (
        String::from_utf8_lossy(&resp[..end]).into_owned(),
        &resp[end + 4..],
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_program_is_streamed_whole_and_only_when_set() {
    let dir = tempfile::tempdir().unwrap();
    let program = dir.path().join("okd-install");
    // 1.5 MiB of varied bytes: several of the server's 256 KiB reads.
    let data: Vec<u8> = (0..1_572_871u32).map(|i| (i * 7 + i / 251) as u8).collect();
    std::fs::write(&program, &data).unwrap();
    let mut with = common::sample_state();
    with.set_node_program(program.clone());
    let without = common::sample_state();
    let mut addrs = Vec::new();
    let mut stops = Vec::new();
    for state in [with, without] {
        let l = okd_mcs::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        addrs.push(l.local_addr().unwrap());
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        stops.push(tx);
        tokio::spawn(okd_mcs::serve(
            l,
            Arc::new(state),
            None,
            Transport::Plain,
            okd_listen::Limits::default(),
            async move {
                let _ = rx.await;
            },
        ));
    }
    let (a, b) = (addrs[0], addrs[1]);
    let resp = tokio::task::spawn_blocking(move || request(a, "GET", NODE_PROGRAM_ROUTE))
        .await
        .unwrap();
    let (head, body) = split(&resp);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(
        head.to_ascii_lowercase()
            .contains(&format!("content-length: {}", data.len())),
        "{head}"
    );
    assert!(
        body == data.as_slice(),
        "{} bytes of {}",
        body.len(),
        data.len()
    );
    let resp = tokio::task::spawn_blocking(move || request(a, "HEAD", NODE_PROGRAM_ROUTE))
        .await
        .unwrap();
    let (head, body) = split(&resp);
    assert!(
        head.starts_with("HTTP/1.1 200") && body.is_empty(),
        "{head}"
    );
    let resp = tokio::task::spawn_blocking(move || request(a, "POST", NODE_PROGRAM_ROUTE))
        .await
        .unwrap();
    assert!(split(&resp).0.starts_with("HTTP/1.1 405"));
    let resp = tokio::task::spawn_blocking(move || request(b, "GET", NODE_PROGRAM_ROUTE))
        .await
        .unwrap();
    assert!(split(&resp).0.starts_with("HTTP/1.1 404"));
    // A program that went away is a 500 naming nothing of the path.
    std::fs::remove_file(&program).unwrap();
    let resp = tokio::task::spawn_blocking(move || request(a, "GET", NODE_PROGRAM_ROUTE))
        .await
        .unwrap();
    let (head, body) = split(&resp);
    assert!(head.starts_with("HTTP/1.1 500"), "{head}");
    assert!(!String::from_utf8_lossy(body).contains("/tmp"));
    drop(stops);
}
