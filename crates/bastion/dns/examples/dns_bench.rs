//! Queries per second of okd-dns vs dnsmasq on loopback, side by side.
//!
//! `dns_bench [seconds per round, default 5] [queries in flight, default 64] [rounds, default 2] [--no-observer]`
//!
//! Starts `dns_serve` (next to this binary; with a counting observer, as
//! `okd-install serve` runs it, unless `--no-observer`) and
//! `/usr/sbin/dnsmasq` with the `dnsmasq.conf` okd-bastion generates for the
//! same inventory (the single-master example, etcd records on), moved to
//! 127.0.0.1 and a free port, without upstreams. It checks that both give
//! the same answers to the query mix (api, api-int, `*.apps` names, nodes,
//! PTR, SRV, an NXDOMAIN), then, in alternating rounds, keeps a fixed
//! number of UDP queries in flight against each for a fixed time (one
//! client thread, one socket per query in flight). It prints queries/s, the
//! server's CPU use and queries per CPU-second of each, the ratio
//! ours/dnsmasq, and both servers' peak RSS (VmHWM). Both children are
//! killed when the bench exits. Our server runs with its rate limiter on
//! for loopback too (`--limit-loopback`), so its cost is measured.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hickory_proto::op::Message;
use tokio::net::UdpSocket;

/// Kills and reaps the child on drop (also on panic).
struct Guard(Child, &'static str);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
        eprintln!("stopped {} (pid {})", self.1, self.0.id());
    }
}

/// The question mix, as sent by a stub resolver (RD, no EDNS).
fn mix() -> Vec<(&'static str, u16)> {
    vec![
        ("api.okd.example.", 1),
        ("api-int.okd.example.", 1),
        ("console-openshift-console.apps.okd.example.", 1),
        ("oauth-openshift.apps.okd.example.", 1),
        ("canary-openshift-ingress-canary.apps.okd.example.", 1),
        ("master.okd.example.", 1),
        ("worker1.okd.example.", 1),
        ("bootstrap.okd.example.", 1),
        ("etcd-0.okd.example.", 1),
        ("_etcd-server-ssl._tcp.okd.example.", 33),
        ("103.120.168.192.in-addr.arpa.", 12),
        ("104.120.168.192.in-addr.arpa.", 12),
        ("nope.okd.example.", 1),
    ]
}

fn encode_query(id: u16, name: &str, qtype: u16) -> Vec<u8> {
    let mut b = id.to_be_bytes().to_vec();
    b.extend_from_slice(&[0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]);
    for label in name.trim_end_matches('.').split('.') {
        b.push(label.len() as u8);
        b.extend_from_slice(label.as_bytes());
    }
    b.push(0);
    b.extend_from_slice(&qtype.to_be_bytes());
    b.extend_from_slice(&1u16.to_be_bytes());
    b
}

/// One query and its reply as (rcode, sorted answer data).
async fn ask(target: SocketAddr, name: &str, qtype: u16) -> (String, Vec<String>) {
    let s = UdpSocket::bind("127.0.0.1:0").await.expect("bind client");
    s.connect(target).await.expect("connect");
    s.send(&encode_query(7, name, qtype)).await.expect("send");
    let mut buf = vec![0u8; 4096];
    let n = tokio::time::timeout(Duration::from_secs(2), s.recv(&mut buf))
        .await
        .unwrap_or_else(|_| panic!("{target} did not answer {name}"))
        .expect("recv");
    let m = Message::from_vec(&buf[..n]).expect("parse reply");
    let mut data: Vec<String> = m.answers.iter().map(|r| r.data.to_string()).collect();
    data.sort();
    (format!("{:?}", m.metadata.response_code), data)
}

/// Keeps `inflight` queries going to `target` for `secs`; returns
/// (answered, timed out, elapsed seconds).
async fn blast(target: SocketAddr, inflight: usize, secs: f64) -> (u64, u64, f64) {
    let queries: Rc<Vec<Vec<u8>>> =
        Rc::new(mix().iter().map(|(n, t)| encode_query(0, n, *t)).collect());
    let ok = Rc::new(AtomicU64::new(0));
    let lost = Rc::new(AtomicU64::new(0));
    let start = Instant::now();
    let deadline = start + Duration::from_secs_f64(secs);
    let local = tokio::task::LocalSet::new();
    for t in 0..inflight {
        let (queries, ok, lost) = (queries.clone(), ok.clone(), lost.clone());
        local.spawn_local(async move {
            let s = UdpSocket::bind("127.0.0.1:0").await.expect("bind client");
            s.connect(target).await.expect("connect");
            let mut buf = vec![0u8; 4096];
            let mut q = Vec::new();
            let mut k: usize = t;
            while Instant::now() < deadline {
                q.clear();
                q.extend_from_slice(&queries[k % queries.len()]);
                let id = (k as u16).wrapping_mul(31).wrapping_add(t as u16);
                q[0..2].copy_from_slice(&id.to_be_bytes());
                k += 1;
                if s.send(&q).await.is_err() {
                    lost.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                let wait = tokio::time::timeout(Duration::from_millis(500), async {
                    loop {
                        match s.recv(&mut buf).await {
                            Ok(n) if n >= 2 && buf[0..2] == id.to_be_bytes() => return true,
                            Ok(_) => continue,
                            Err(_) => return false,
                        }
                    }
                })
                .await;
                if wait == Ok(true) {
                    ok.fetch_add(1, Ordering::Relaxed);
                } else {
                    lost.fetch_add(1, Ordering::Relaxed);
                }
            }
        });
    }
    local.await;
    (
        ok.load(Ordering::Relaxed),
        lost.load(Ordering::Relaxed),
        start.elapsed().as_secs_f64(),
    )
}

/// User + system CPU seconds of a process (all threads).
fn cpu_secs(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after = stat.rsplit(')').next().unwrap_or("");
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks: f64 = f.get(11).and_then(|v| v.parse().ok()).unwrap_or(0.0)
        + f.get(12).and_then(|v| v.parse().ok()).unwrap_or(0.0);
    ticks / clock_ticks()
}

fn clock_ticks() -> f64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
        .unwrap_or(100.0)
}

/// `VmHWM` of a process, e.g. `5432 kB`.
fn peak_rss(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:").map(|v| v.trim().to_string()))
        .unwrap_or_else(|| "?".into())
}

fn free_port() -> u16 {
    for _ in 0..50 {
        let u = std::net::UdpSocket::bind("127.0.0.1:0").expect("bind");
        let port = u.local_addr().expect("addr").port();
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free port");
}

fn wait_answering(target: SocketAddr) {
    let s = std::net::UdpSocket::bind("127.0.0.1:0").expect("bind");
    s.set_read_timeout(Some(Duration::from_millis(100)))
        .expect("timeout");
    let q = encode_query(0x4242, "api.okd.example.", 1);
    let mut buf = [0u8; 512];
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        let _ = s.send_to(&q, target);
        if let Ok((n, _)) = s.recv_from(&mut buf)
            && n >= 2
            && buf[0..2] == [0x42, 0x42]
        {
            return;
        }
    }
    panic!("{target} does not answer");
}

#[derive(Default, Clone, Copy)]
struct Total {
    ok: u64,
    lost: u64,
    secs: f64,
    cpu: f64,
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let nums: Vec<&String> = args.iter().filter(|a| !a.starts_with("--")).collect();
    let secs: f64 = nums.first().and_then(|s| s.parse().ok()).unwrap_or(5.0);
    let inflight: usize = nums.get(1).and_then(|s| s.parse().ok()).unwrap_or(64);
    let rounds: usize = nums.get(2).and_then(|s| s.parse().ok()).unwrap_or(2);
    let observe = !args.iter().any(|a| a == "--no-observer");

    let dir =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../examples/baremetal-single-master");
    let inv = okd_hosts::Inventory::load(&dir, "okd", "example").expect("example inventory");
    let tmp = tempfile::tempdir().expect("tempdir");

    // Ours, as a separate process.
    let serve = std::env::current_exe()
        .expect("current exe")
        .with_file_name("dns_serve");
    let ours_addr: SocketAddr = ([127, 0, 0, 1], free_port()).into();
    let mut cmd = Command::new(&serve);
    cmd.arg(&dir)
        .args(["okd", "example", &ours_addr.to_string(), "--etcd"])
        .arg("--limit-loopback");
    if observe {
        cmd.arg("--observe");
    }
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{}: {e} (build it with --examples)", serve.display()));
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("read dns_serve");
    assert!(line.starts_with("listening "), "dns_serve said {line:?}");
    let ours = Guard(child, "dns_serve");

    // dnsmasq with the generated configuration, moved to loopback.
    let dnsmasq_addr: SocketAddr = ([127, 0, 0, 1], free_port()).into();
    let conf: String = okd_bastion::configs::dnsmasq_conf(&inv, true)
        .lines()
        .map(|l| {
            if l.starts_with("port=") {
                format!("port={}\n", dnsmasq_addr.port())
            } else if l.starts_with("listen-address=") {
                "listen-address=127.0.0.1\n".to_string()
            } else if l.starts_with("server=") {
                String::new()
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    let conf_path = tmp.path().join("dnsmasq.conf");
    std::fs::write(&conf_path, &conf).expect("write dnsmasq.conf");
    let dm = Guard(
        Command::new("/usr/sbin/dnsmasq")
            .arg("-k")
            .arg("-C")
            .arg(&conf_path)
            .arg(format!("--pid-file={}", tmp.path().join("pid").display()))
            .arg(format!(
                "--log-facility={}",
                tmp.path().join("log").display()
            ))
            .stdin(Stdio::null())
            .spawn()
            .expect("start /usr/sbin/dnsmasq (apt-get install dnsmasq-base)"),
        "dnsmasq",
    );
    wait_answering(ours_addr);
    wait_answering(dnsmasq_addr);

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        for (name, t) in mix() {
            let a = ask(ours_addr, name, t).await;
            let b = ask(dnsmasq_addr, name, t).await;
            assert_eq!(a, b, "{name} type {t}: ours vs dnsmasq");
        }
    });
    eprintln!(
        "both servers give the same answers to the {} questions of the mix",
        mix().len()
    );

    let servers = [
        ("okd-dns", ours_addr, ours.0.id()),
        ("dnsmasq", dnsmasq_addr, dm.0.id()),
    ];
    let mut totals = [Total::default(); 2];
    for round in 0..rounds {
        for (i, (label, addr, pid)) in servers.iter().enumerate() {
            // Warm up, then measure.
            rt.block_on(blast(*addr, inflight, 0.3));
            let cpu0 = cpu_secs(*pid);
            let (ok, lost, el) = rt.block_on(blast(*addr, inflight, secs));
            let cpu = cpu_secs(*pid) - cpu0;
            eprintln!(
                "round {}: {label:8} {:>9.0} q/s  ({ok} answered, {lost} timed out, server CPU {:.0}%)",
                round + 1,
                ok as f64 / el,
                100.0 * cpu / el
            );
            let t = &mut totals[i];
            t.ok += ok;
            t.lost += lost;
            t.secs += el;
            t.cpu += cpu;
        }
    }
    let qps = |t: &Total| t.ok as f64 / t.secs;
    let per_cpu = |t: &Total| {
        if t.cpu > 0.0 {
            t.ok as f64 / t.cpu
        } else {
            f64::NAN
        }
    };
    println!(
        "UDP, {inflight} queries in flight, {rounds} x {secs} s each, {} questions in the mix{}",
        mix().len(),
        if observe {
            ", okd-dns with an observer"
        } else {
            ""
        }
    );
    for ((label, _, pid), t) in servers.iter().zip(&totals) {
        println!(
            "{label:8} {:>9.0} queries/s  {:>9.0} queries per CPU-second  timeouts {}  peak RSS {}",
            qps(t),
            per_cpu(t),
            t.lost,
            peak_rss(*pid)
        );
    }
    println!(
        "ratio okd-dns/dnsmasq: {:.2} (queries/s), {:.2} (queries per CPU-second)",
        qps(&totals[0]) / qps(&totals[1]),
        per_cpu(&totals[0]) / per_cpu(&totals[1])
    );
    drop(dm);
    drop(ours);
}
