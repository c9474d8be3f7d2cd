//! `okd-install serve` under a flood of slow clients (issue #18): a host
//! on the install network holds hundreds of half-sent requests open on every
//! TCP service while the other hosts are served; and, as a benchmark
//! (bench/serve-flood.sh, release build), serve's peak memory while about
//! 3,000 are held and the bootstrap host downloads bootstrap.ign with the
//! node program it carries.

mod common;

use std::time::{Duration, Instant};

use common::netns::Lab;
use common::serve::*;
use common::*;

/// Opens `n` connections to each of `ports` on `host` from this namespace,
/// sends half a request head on each and holds them for `hold` seconds;
/// prints `ready` once all are open.
const SLOW_FLOOD: &str = r#"
import socket, sys, time
host, ports, n, hold = sys.argv[1], [int(p) for p in sys.argv[2].split(",")], int(sys.argv[3]), float(sys.argv[4])
held = []
for p in ports:
    for i in range(n):
        s = socket.socket()
        s.settimeout(2)
        try:
            s.connect((host, p))
            s.send(b"\x00\x1c" if p == 53 else b"GET /config/master HTTP/1.1\r\nHost: x\r\n")
            held.append(s)
        except OSError:
            s.close()
print("ready", len(held), flush=True)
time.sleep(hold)
"#;

/// A host on the install network opens 400 slow connections to every TCP
/// service of serve (HTTP, status, the three balancer frontends, the
/// machine-config server, DNS over TCP) and holds them, while serve runs
/// with the common soft limit of 1024 open files: 2 800 connections would
/// exhaust it without the caps. Meanwhile the real Ignition of the master
/// fetches its config through the balancer, and the other services answer
/// the worker.
#[test]
fn slow_client_flood_leaves_the_other_hosts_served() {
    if !common::netns::available()
        || tool("ignition", &[IGNITION]).is_none()
        || tool("python3", &["/usr/bin/python3"]).is_none()
        || tool("dig", &["/usr/bin/dig"]).is_none()
        || tool("prlimit", &["/usr/bin/prlimit"]).is_none()
    {
        return;
    }
    let d = served_dir();
    let (lab, serve_pid, serve_log, _) = flooded_serve(d.path(), "os", 400, 90);

    let scratch = tempfile::tempdir().unwrap();
    let master = lab.nodes[1].ns.clone();
    let (ok, log, _root) = ignite(
        &lab,
        &master,
        &d.path().join("master.ign"),
        &scratch.path().join("master"),
        60,
    );
    assert!(
        ok,
        "Ignition failed during the flood:\n{log}\nserve log:\n{}",
        std::fs::read_to_string(&serve_log).unwrap_or_default()
    );
    // prlimit execs serve, so its PID is serve's.
    let flooded = okd_test_utils::proc_status_kib(serve_pid, "VmRSS");
    eprintln!("serve RSS while 2 800 slow connections are held: {flooded} KiB");
    assert!(
        flooded > 0 && flooded < 100 * 1024,
        "RSS under the slow-client flood {flooded} KiB"
    );
    // Another host of the install network (the bootstrap's address).
    let worker = lab.nodes[0].ns.clone();
    let (code, _) = curl_in(
        &lab,
        &worker,
        &format!("http://{BASTION}:8080/ignition/worker.ign"),
    );
    assert_eq!(code, 200, "HTTP during the flood");
    let (code, _) = curl_in(&lab, &worker, &format!("http://{BASTION}:9000/status"));
    assert_eq!(code, 200, "status during the flood");
    let out = lab
        .cmd(&worker, "dig")
        .args(["+tcp", "+short", "+time=5", "+tries=1"])
        .arg(format!("@{BASTION}"))
        .arg("api-int.okd.example")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        BASTION,
        "DNS over TCP during the flood"
    );
}

/// The lab of the flood: serve with the common soft limit of 1024 open
/// files (so the caps, not the limit, bound it), the inventory's bootstrap
/// and master, and an attacker holding `per_port` slow connections on each
/// TCP service for `hold` seconds. Returns the lab, serve's PID and log,
/// once the flood is in place, and how many connections it holds.
fn flooded_serve(
    d: &std::path::Path,
    prefix: &str,
    per_port: usize,
    hold: u64,
) -> (Lab, u32, std::path::PathBuf, usize) {
    let prefix = format!("{prefix}{}", std::process::id() % 100000);
    let mut lab = Lab::new(
        &prefix,
        BASTION,
        &[
            BOOTSTRAP_AND_MASTER[0],
            BOOTSTRAP_AND_MASTER[1],
            ("attacker", "192.168.120.150"),
        ],
        "okd.example",
    );
    let serve_log = d.join("serve.log");
    let bastion = lab.bastion.ns.clone();
    let dir = d.to_string_lossy().into_owned();
    let serve_pid = lab.spawn(
        &bastion,
        "prlimit",
        &[
            "--nofile=1024:20000",
            env!("CARGO_BIN_EXE_okd-install"),
            "serve",
            "--dir",
            &dir,
        ],
        &serve_log,
    );
    wait_ready(&serve_log);
    println!(
        "serve ready: peak memory (VmHWM) {:.1} MiB",
        okd_test_utils::proc_status_kib(serve_pid, "VmHWM") as f64 / 1024.0
    );
    let attacker = lab.nodes[2].ns.clone();
    let flood_log = d.join("flood.log");
    lab.spawn(
        &attacker,
        "python3",
        &[
            "-c",
            SLOW_FLOOD,
            BASTION,
            "8080,9000,6443,22623,22625,443,53",
            &per_port.to_string(),
            &hold.to_string(),
        ],
        &flood_log,
    );
    let start = Instant::now();
    let held = loop {
        let text = std::fs::read_to_string(&flood_log).unwrap_or_default();
        if let Some(n) = text.split_whitespace().skip_while(|w| *w != "ready").nth(1) {
            break n.parse().unwrap_or(0);
        }
        assert!(
            start.elapsed() < Duration::from_secs(90),
            "flood did not start: {text}"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    (lab, serve_pid, serve_log, held)
}

/// Benchmark (not a test): serve's peak memory (VmHWM) while an attacker
/// holds about 3,000 slow connections and the bootstrap host downloads
/// bootstrap.ign, which on a release build carries the node program (tens
/// of MB): bootstrap.ign is streamed from disk and never parsed whole, so
/// the target is under 50 MiB. Run by bench/serve-flood.sh on the release
/// build.
#[test]
#[ignore = "benchmark: bench/serve-flood.sh (release build)"]
fn serve_flood_memory_bench() {
    if !common::netns::available()
        || tool("python3", &["/usr/bin/python3"]).is_none()
        || tool("curl", &["/usr/bin/curl"]).is_none()
        || tool("prlimit", &["/usr/bin/prlimit"]).is_none()
    {
        return;
    }
    let d = served_dir();
    let ign_len = std::fs::metadata(d.path().join("bootstrap.ign"))
        .unwrap()
        .len();
    let (lab, pid, _log, held) = flooded_serve(d.path(), "of", 430, 120);
    let before = okd_test_utils::proc_status_kib(pid, "VmHWM");
    let boot = lab.nodes[0].ns.clone();
    let out = lab
        .cmd(&boot, "curl")
        .args([
            "-s",
            "--max-time",
            "60",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code} %{size_download}",
        ])
        .arg(format!("http://{BASTION}:8080/ignition/bootstrap.ign"))
        .output()
        .unwrap();
    let got = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(
        got,
        format!("200 {ign_len}"),
        "the bootstrap host's download"
    );
    let after = okd_test_utils::proc_status_kib(pid, "VmHWM");
    let rss = okd_test_utils::proc_status_kib(pid, "VmRSS");
    println!(
        "serve ({} build), {held} slow connections held, bootstrap.ign {:.1} MB downloaded by the bootstrap host:",
        if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        },
        ign_len as f64 / 1e6
    );
    println!(
        "  peak memory (VmHWM) {:.1} MiB before the download, {:.1} MiB after it (target < 50 MiB); RSS now {:.1} MiB",
        before as f64 / 1024.0,
        after as f64 / 1024.0,
        rss as f64 / 1024.0
    );
}
