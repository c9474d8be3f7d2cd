//! Helpers shared by the load balancer's integration tests: echo backends,
//! a client that reports which backend answered, fast health checks.

#![allow(dead_code)]

use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use okd_lb::{HealthCheck, LoadBalancer};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpSocket};
use tokio::task::JoinHandle;

pub fn lo(ip: &str) -> SocketAddr {
    SocketAddr::new(ip.parse().unwrap(), 0)
}

/// An echo server that first sends `<tag>\n`; aborting the handle closes the
/// listener (new connections are refused).
pub struct Echo {
    pub addr: SocketAddr,
    pub task: JoinHandle<()>,
}

impl Drop for Echo {
    fn drop(&mut self) {
        self.task.abort();
    }
}

pub async fn echo(tag: &str) -> Echo {
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
pub async fn ask(lb: SocketAddr, src: IpAddr) -> Result<String, String> {
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

pub fn fast(check: HealthCheck) -> HealthCheck {
    check
        .every(Duration::from_millis(200), Duration::from_millis(200))
        .rise_fall(2, 2)
}

pub fn localhost() -> IpAddr {
    "127.0.0.1".parse().unwrap()
}

pub async fn wait_up(lb: &LoadBalancer, fe: &str, be: &str, want: bool) {
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
