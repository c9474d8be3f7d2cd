//! Throughput of okd-lb vs HAProxy (`mode tcp`) on loopback, side by side.
//!
//! `lb_bench [GiB per direction, default 2] [parallel connections, default 4]`
//!
//! Starts an in-process backend that sinks (upload) or streams (download)
//! data, `lb_serve` (next to this binary) and `/usr/sbin/haproxy` in front of
//! it, pushes the bytes through each, and prints MB/s (10^6 bytes/s) and the
//! ratio ours/haproxy. Both children are killed when the bench exits.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const CHUNK: usize = 256 * 1024;

/// Kills and reaps the child on drop (also on panic).
struct Guard(Child, &'static str);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
        eprintln!("stopped {} (pid {})", self.1, self.0.id());
    }
}

async fn backend() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind backend");
    let addr = l.local_addr().expect("backend addr");
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            tokio::spawn(async move {
                let _ = s.set_nodelay(true);
                let mut mode = [0u8; 1];
                if s.read_exact(&mut mode).await.is_err() {
                    return;
                }
                let mut buf = vec![0u8; CHUNK];
                if mode[0] == b'U' {
                    let mut n = 0u64;
                    loop {
                        match s.read(&mut buf).await {
                            Ok(0) => break,
                            Ok(k) => n += k as u64,
                            Err(_) => return,
                        }
                    }
                    let _ = s.write_all(&n.to_be_bytes()).await;
                } else {
                    let mut len = [0u8; 8];
                    if s.read_exact(&mut len).await.is_err() {
                        return;
                    }
                    let mut left = u64::from_be_bytes(len);
                    while left > 0 {
                        let k = left.min(CHUNK as u64) as usize;
                        if s.write_all(&buf[..k]).await.is_err() {
                            return;
                        }
                        left -= k as u64;
                    }
                    let _ = s.shutdown().await;
                }
            });
        }
    });
    addr
}

async fn upload(target: SocketAddr, bytes: u64) -> u64 {
    let mut s = TcpStream::connect(target).await.expect("connect");
    let _ = s.set_nodelay(true);
    s.write_all(b"U").await.expect("write");
    let buf = vec![0x5au8; CHUNK];
    let mut left = bytes;
    while left > 0 {
        let k = left.min(CHUNK as u64) as usize;
        s.write_all(&buf[..k]).await.expect("upload");
        left -= k as u64;
    }
    s.shutdown().await.expect("shutdown");
    let mut n = [0u8; 8];
    s.read_exact(&mut n).await.expect("count");
    u64::from_be_bytes(n)
}

async fn download(target: SocketAddr, bytes: u64) -> u64 {
    let mut s = TcpStream::connect(target).await.expect("connect");
    let _ = s.set_nodelay(true);
    let mut req = vec![b'D'];
    req.extend_from_slice(&bytes.to_be_bytes());
    s.write_all(&req).await.expect("request");
    let mut buf = vec![0u8; CHUNK];
    let mut n = 0u64;
    loop {
        match s.read(&mut buf).await.expect("download") {
            0 => break,
            k => n += k as u64,
        }
    }
    n
}

/// MB/s moving `total` bytes over `conns` parallel connections.
async fn run(target: SocketAddr, total: u64, conns: u64, up: bool) -> f64 {
    let per = total / conns;
    let start = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..conns {
        tasks.push(tokio::spawn(async move {
            if up {
                upload(target, per).await
            } else {
                download(target, per).await
            }
        }));
    }
    let mut moved = 0;
    for t in tasks {
        moved += t.await.expect("client task");
    }
    assert_eq!(moved, per * conns, "bytes lost through {target}");
    moved as f64 / start.elapsed().as_secs_f64() / 1e6
}

fn free_port() -> SocketAddr {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("free port");
    l.local_addr().expect("addr")
}

async fn wait_listening(addr: SocketAddr) {
    for _ in 0..100 {
        if TcpStream::connect(addr).await.is_ok() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("nothing listens on {addr}");
}

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let gib: f64 = args.next().map_or(2.0, |a| a.parse().expect("GiB"));
    let conns: u64 = args.next().map_or(4, |a| a.parse().expect("connections"));
    let total = (gib * (1u64 << 30) as f64) as u64;
    let be = backend().await;

    let dir = tempfile::tempdir().expect("tempdir");
    let ha_addr = free_port();
    let cfg = dir.path().join("haproxy.cfg");
    std::fs::write(
        &cfg,
        format!(
            "global\n  maxconn 2000\ndefaults\n  mode tcp\n  timeout connect 5s\n  timeout client 30s\n  timeout server 30s\n\
             frontend bench\n  bind {ha_addr}\n  default_backend be\n\
             backend be\n  balance source\n  server b0 {be} check inter 2s rise 2 fall 3\n"
        ),
    )
    .expect("write haproxy.cfg");
    let haproxy = Guard(
        Command::new("/usr/sbin/haproxy")
            .arg("-db")
            .arg("-f")
            .arg(&cfg)
            .stdout(Stdio::null())
            .spawn()
            .expect("start haproxy"),
        "haproxy",
    );
    let version = Command::new("/usr/sbin/haproxy")
        .arg("-v")
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .next()
                .unwrap_or("")
                .to_string()
        })
        .unwrap_or_default();

    let exe = std::env::current_exe().expect("current exe");
    let serve = exe.with_file_name("lb_serve");
    let mut ours = Guard(
        Command::new(&serve)
            .arg("127.0.0.1:0")
            .arg(be.to_string())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("start {}: {e}", serve.display())),
        "lb_serve",
    );
    let mut line = String::new();
    BufReader::new(ours.0.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("lb_serve output");
    let ours_addr: SocketAddr = line
        .trim()
        .strip_prefix("listening on ")
        .expect("listening line")
        .parse()
        .expect("addr");
    wait_listening(ha_addr).await;
    wait_listening(ours_addr).await;

    println!(
        "{version}; okd-lb pid {}; haproxy pid {}",
        ours.0.id(),
        haproxy.0.id()
    );
    println!(
        "{:.2} GiB per direction, {conns} connections, backend {be}",
        total as f64 / (1u64 << 30) as f64
    );
    let direct = run(be, total / 4, conns, true).await;
    println!("direct (no proxy, 1/4 of the bytes) upload: {direct:.0} MB/s");
    for (label, up) in [("upload", true), ("download", false)] {
        // Alternate and keep the best of two rounds to damp noise on a shared host.
        let mut h: f64 = 0.0;
        let mut o: f64 = 0.0;
        for _ in 0..2 {
            h = h.max(run(ha_addr, total, conns, up).await);
            o = o.max(run(ours_addr, total, conns, up).await);
        }
        println!(
            "{label:8}  haproxy {h:7.0} MB/s   okd-lb {o:7.0} MB/s   ratio ours/haproxy {:.2}",
            o / h
        );
    }
    drop(ours);
    drop(haproxy);
}
