//! `okd-install serve` on a hostile install network (issues #10, #18, #26):
//! hosts are network namespaces on a bridge. bootstrap.ign reaches only the
//! bootstrap host and never after `serve remove-bootstrap`, also not after
//! a restart; the one-time token reaches only the bootstrap's address, is
//! not spent by complete bodies, ranges or dropped transfers (its end, the
//! bootstrap seen running, is `serve_bootstrap_token.rs`), and no MAC or
//! token is on the unauthenticated pages; a DNS flood from 20 000
//! source addresses leaves the status store bounded; the control socket is
//! 0600 and refuses an oversized request.

mod common;

use std::io::{Read as _, Write as _};
use std::path::Path;
use std::time::{Duration, Instant};

use common::netns::Lab;
use common::serve::*;
use common::*;
use okd_serve_api::StatusDocument;
use okd_serve_api::status::{HostStatus, HttpEvent};

/// `curl` inside `ns` with extra `args`: (HTTP status, body).
fn curl_args_in(lab: &Lab, ns: &str, url: &str, args: &[&str]) -> (u16, String) {
    let out = lab
        .cmd(ns, "curl")
        .args(["-s", "--max-time", "30", "-w", "\n%{http_code}"])
        .args(args)
        .arg(url)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", "0"));
    (code.trim().parse().unwrap_or(0), body.to_string())
}

#[test]
fn bootstrap_ign_reaches_only_the_bootstrap_host() {
    if !common::netns::available() || tool("curl", &["/usr/bin/curl"]).is_none() {
        return;
    }
    let d = served_dir();
    let (lab, _pid, serve_log) = lab_with_serve(d.path(), "oa", &[]);
    let (boot, master) = (lab.nodes[0].ns.clone(), lab.nodes[1].ns.clone());
    let url = format!("http://{BASTION}:8080/ignition/bootstrap.ign");
    let want = std::fs::read_to_string(d.path().join("bootstrap.ign")).unwrap();

    let (code, body) = curl_in(&lab, &master, &url);
    assert_eq!(code, 403, "the master got bootstrap.ign: {body:.200}");
    assert!(!body.contains("BEGIN"), "key material in the refusal");
    let (code, body) = curl_in(&lab, &boot, &url);
    assert_eq!(code, 200);
    assert_eq!(body, want, "the bootstrap host gets the whole file");
    let (code, _) = curl_in(
        &lab,
        &master,
        &format!("http://{BASTION}:8080/ignition/master.ign"),
    );
    assert_eq!(code, 200, "master.ign is for every host");

    let out = control(d.path(), "remove-bootstrap --force");
    assert!(out.contains("bootstrap.ign is no longer served"), "{out}");
    let (code, _) = curl_in(&lab, &boot, &url);
    assert_eq!(code, 403, "bootstrap.ign served after remove-bootstrap");

    let log = std::fs::read_to_string(&serve_log).unwrap();
    assert!(
        log.contains("bootstrap.ign only to 192.168.120.102 (bootstrap)"),
        "start-up line saying what is served to whom:\n{log}"
    );
    assert!(
        log.contains("bootstrap.ign was requested by 192.168.120.103, refused"),
        "{log}"
    );
}

#[test]
fn one_time_token_through_the_pxe_script() {
    if !common::netns::available() || tool("curl", &["/usr/bin/curl"]).is_none() {
        return;
    }
    let d = served_dir();
    let (lab, _pid, serve_log) = lab_with_serve(d.path(), "ot", &["--bootstrap-token"]);
    let boot = lab.nodes[0].ns.clone();
    let url_file = d.path().join("auth/bootstrap-ignition-url");
    assert_eq!(mode(&url_file) & 0o777, 0o600);
    let url = std::fs::read_to_string(&url_file)
        .unwrap()
        .trim()
        .to_string();
    let token = url.split("token=").nth(1).unwrap().to_string();
    assert_eq!(token.len(), 32);
    let log = std::fs::read_to_string(&serve_log).unwrap();
    assert!(!log.contains(&token), "the token is in the log:\n{log}");

    // The bootstrap's PXE script (by its MAC) carries the URL with the token
    // when the bootstrap asks; naming its MAC from another host gets the
    // script without it.
    let pxe = format!("http://{BASTION}:8080/pxe/ipxe?mac=52:54:00:12:01:02");
    let (code, script) = curl_in(&lab, &boot, &pxe);
    assert_eq!(code, 200);
    assert!(script.contains(&url), "{script}");
    let master = lab.nodes[1].ns.clone();
    let (code, script) = curl_in(&lab, &master, &pxe);
    assert_eq!(code, 200);
    assert!(
        script.contains("/ignition/bootstrap.ign") && !script.contains(&token),
        "the bootstrap's PXE script gave the token to the master:\n{script}"
    );
    // The unauthenticated pages name no MAC and no token.
    for page in ["/status", "/", "/metrics"] {
        let (code, body) = curl_in(&lab, &master, &format!("http://{BASTION}:9000{page}"));
        assert_eq!(code, 200, "{page}");
        assert!(
            !body.to_lowercase().contains("52:54:00") && !body.contains(&token),
            "{page} publishes a MAC or the token:\n{body:.3000}"
        );
    }
    let plain = format!("http://{BASTION}:8080/ignition/bootstrap.ign");
    assert_eq!(curl_in(&lab, &boot, &plain).0, 403, "no token");
    assert_eq!(curl_in(&lab, &boot, &url).0, 200);
    assert_eq!(
        curl_in(&lab, &boot, &url).0,
        200,
        "a retry before the bootstrap is seen running"
    );
}

/// The token of the serve just started in `d` (from auth/bootstrap-ignition-url).
fn token_url(d: &Path) -> String {
    std::fs::read_to_string(d.join("auth/bootstrap-ignition-url"))
        .unwrap()
        .trim()
        .to_string()
}

/// The bootstrap host of a status document.
fn bootstrap_host(doc: &StatusDocument) -> Option<&HostStatus> {
    doc.hosts
        .iter()
        .find(|h| h.role == okd_hosts::Role::Bootstrap)
}

/// Waits (bounded) until `/status` (asked from `ns`) has a bootstrap.ign
/// event of the bootstrap host matching `pred`; returns the document.
fn wait_fetch(lab: &Lab, ns: &str, pred: impl Fn(&HttpEvent) -> bool) -> StatusDocument {
    let start = Instant::now();
    loop {
        let (_, body) = curl_in(lab, ns, &format!("http://{BASTION}:9000/status"));
        let doc: Option<StatusDocument> = serde_json::from_str(&body).ok();
        if let Some(doc) = doc
            && bootstrap_host(&doc).is_some_and(|h| {
                h.http
                    .iter()
                    .any(|e| e.path == "/ignition/bootstrap.ign" && pred(e))
            })
        {
            return doc;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "no such bootstrap.ign fetch in /status: {body}"
        );
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// Issue #18 findings 3 and 4, with issue #42's rule (no transfer spends
/// the token; the bootstrap seen running or the time limit does): ranges,
/// whole files and a client that reads 180 bytes and drops the connection
/// all leave the token valid for the bootstrap's retry, and the dashboard
/// shows the broken fetch with the bytes sent of the size.
#[test]
fn token_survives_ranges_and_dropped_transfers() {
    if !common::netns::available()
        || tool("curl", &["/usr/bin/curl"]).is_none()
        || tool("python3", &["/usr/bin/python3"]).is_none()
    {
        return;
    }
    let d = served_dir();
    // Larger than the socket buffers, so a client that stops reading cannot
    // have had it all (JSON allows the trailing whitespace).
    let ign = d.path().join("bootstrap.ign");
    let mut big = std::fs::read(&ign).unwrap();
    big.resize(32 << 20, b' ');
    std::fs::write(&ign, &big).unwrap();
    let size = big.len();

    // Only HTTP and the status page: the restarts below rebind their ports
    // (tokio's listeners reuse addresses in TIME_WAIT).
    let args = ["--bootstrap-token", "--services", "http,status"];
    let (mut lab, pid, _log) = lab_with_serve(d.path(), "or", &args);
    let boot = lab.nodes[0].ns.clone();
    let url = token_url(d.path());
    let (code, body) = curl_args_in(&lab, &boot, &url, &["--range", "0-99"]);
    assert_eq!((code, body.len()), (206, 100));
    let (code, body) = curl_args_in(&lab, &boot, &url, &["--range", "100-"]);
    assert_eq!((code, body.len()), (206, size - 100));
    let (code, body) = curl_in(&lab, &boot, &url);
    assert_eq!(
        (code, body.len()),
        (200, size),
        "a full GET after ranges that covered the file"
    );

    let (_pid, _log) = restart_serve(&mut lab, d.path(), pid, &args, "serve3.log");
    let url = token_url(d.path());
    let path = url.split_once(":8080").unwrap().1.to_string();
    let drop_early = r#"
import socket, sys
s = socket.create_connection((sys.argv[1], 8080), timeout=10)
s.sendall(b"GET " + sys.argv[2].encode() + b" HTTP/1.1\r\nHost: x\r\n\r\n")
got = b""
while len(got) < 180:
    c = s.recv(180 - len(got))
    if not c:
        break
    got += c
print(got.split(b"\r\n")[0].decode())
s.close()
"#;
    let out = lab
        .cmd(&boot, "timeout")
        .args(["30", "python3", "-c", drop_early, BASTION, &path])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "HTTP/1.1 200 OK",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bastion = lab.bastion.ns.clone();
    wait_fetch(&lab, &bastion, |e| e.status == 200 && !e.complete);
    let (code, body) = curl_in(&lab, &boot, &url);
    assert_eq!(
        (code, body.len()),
        (200, size),
        "the bootstrap's retry after a dropped transfer"
    );
    assert_eq!(
        curl_in(&lab, &boot, &url).0,
        200,
        "after the complete body: still valid for the bootstrap"
    );
    let doc = wait_fetch(&lab, &bastion, |e| e.status == 200 && e.complete);
    let broken = bootstrap_host(&doc)
        .unwrap()
        .http
        .iter()
        .find(|e| !e.complete && e.status == 200)
        .unwrap();
    assert_eq!(broken.size, Some(size as u64));
    assert!(broken.bytes < size as u64, "{broken:?}");
    let (_, page) = curl_in(&lab, &bastion, &format!("http://{BASTION}:9000/"));
    assert!(
        page.contains("bootstrap.ign fetches")
            && page.contains("broke off")
            && page.contains("complete"),
        "{page}"
    );
}

/// Issue #26 finding 1: `serve remove-bootstrap`, then a new serve: the
/// bootstrap still gets 403 for bootstrap.ign (before: 200) and is no
/// backend of the balancer, until `serve restore-bootstrap` (refused while
/// a serve runs).
#[test]
fn remove_bootstrap_survives_a_restart() {
    if !common::netns::available() || tool("curl", &["/usr/bin/curl"]).is_none() {
        return;
    }
    let d = served_dir();
    // The balancer, HTTP and the status page: the restarts rebind their
    // ports (tokio's listeners reuse addresses in TIME_WAIT).
    let args = ["--services", "lb,http,status"];
    let (mut lab, pid, _log) = lab_with_serve(d.path(), "ob", &args);
    let boot = lab.nodes[0].ns.clone();
    let url = format!("http://{BASTION}:8080/ignition/bootstrap.ign");
    assert_eq!(curl_in(&lab, &boot, &url).0, 200);
    let out = control(d.path(), "remove-bootstrap --force");
    assert!(out.contains("bootstrap.ign is no longer served"), "{out}");
    assert!(d.path().join(".okd-serve-bootstrap-removed").is_file());

    let (pid, log) = restart_serve(&mut lab, d.path(), pid, &args, "serve2.log");
    let (code, body) = curl_in(&lab, &boot, &url);
    assert_eq!(
        code, 403,
        "bootstrap.ign served after remove-bootstrap and a restart"
    );
    assert!(body.contains("removed"), "{body}");
    let status = control(d.path(), "status");
    let doc: StatusDocument = serde_json::from_str(&status).unwrap();
    for fe in &doc.load_balancer.as_ref().unwrap().frontends {
        for b in &fe.backends {
            assert_ne!(
                b.name, "bootstrap",
                "the bootstrap is a backend again: {fe:?}"
            );
        }
    }
    let removed = bootstrap_host(&doc)
        .unwrap()
        .stage("Removed from load balancer")
        .unwrap();
    assert!(removed.done, "{removed:?}");
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("restore-bootstrap"), "{text}");

    let out = okd(d.path(), &["serve", "restore-bootstrap"]);
    assert!(!out.status.success(), "restore-bootstrap while serve runs");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("stop it first"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    lab.kill(pid);
    let out = control(d.path(), "restore-bootstrap");
    assert!(out.contains("undone"), "{out}");
    let (pid, _log) = restart_serve(&mut lab, d.path(), 0, &args, "serve3.log");
    assert_eq!(curl_in(&lab, &boot, &url).0, 200, "after restore-bootstrap");

    // With no serve running, remove-bootstrap records it for the next one.
    lab.kill(pid);
    let out = control(d.path(), "remove-bootstrap --force");
    assert!(out.contains("no serve is running: recorded"), "{out}");
    let (_pid, _log) = restart_serve(&mut lab, d.path(), 0, &args, "serve4.log");
    assert_eq!(
        curl_in(&lab, &boot, &url).0,
        403,
        "after an offline remove-bootstrap"
    );
}

#[test]
fn status_stays_bounded_under_a_spoofed_source_dns_flood() {
    if !common::netns::available()
        || tool("curl", &["/usr/bin/curl"]).is_none()
        || tool("python3", &["/usr/bin/python3"]).is_none()
    {
        return;
    }
    let d = served_dir();
    let (lab, pid, _log) = lab_with_serve(d.path(), "of", &[]);
    let bastion = lab.bastion.ns.clone();
    let idle = okd_test_utils::proc_status_kib(pid, "VmRSS");
    // 20 000 queries, each from its own loopback source address inside the
    // bastion namespace (addresses the test owns), to serve's DNS.
    let flood = r#"
import socket, struct, sys
name = b"".join(bytes([len(p)]) + p for p in b"api.okd.example".split(b".")) + b"\0"
for i in range(20000):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.%d.%d.%d" % (1 + i // 65025, (i // 255) % 255, 1 + i % 254), 0))
    s.sendto(struct.pack(">HHHHHH", i & 0xffff, 0x0100, 1, 0, 0, 0) + name + struct.pack(">HH", 1, 1), (sys.argv[1], 53))
    s.close()
"#;
    let out = lab
        .cmd(&bastion, "timeout")
        .args(["120", "python3", "-c", flood, BASTION])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Let serve work through its socket buffer, reading the status meanwhile.
    let start = Instant::now();
    let mut unknown = 0;
    while start.elapsed() < Duration::from_secs(15) {
        let (code, body) = curl_in(&lab, &bastion, &format!("http://{BASTION}:9000/status"));
        assert_eq!(code, 200);
        let doc: StatusDocument = serde_json::from_str(&body).unwrap();
        unknown = doc.unknown_clients.len();
        if unknown >= 1000 {
            break;
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    assert!(
        (1000..=1024).contains(&unknown),
        "unknown clients remembered after 20 000 sources: {unknown} (want the 1024 most recent)"
    );
    let (_, metrics) = curl_in(&lab, &bastion, &format!("http://{BASTION}:9000/metrics"));
    assert!(
        metrics.contains("okd_serve_unknown_clients 10"),
        "{metrics}"
    );
    let flooded = okd_test_utils::proc_status_kib(pid, "VmRSS");
    eprintln!("serve RSS idle {idle} KiB, after the flood {flooded} KiB");
    // The memory goal itself is measured by bench/serve-status.sh on a
    // release build; a debug build's idle size varies with the machine, so
    // this test asserts only that the flood did not grow serve much (the
    // client table above is the bound under test).
    assert!(idle > 0, "idle RSS {idle} KiB");
    assert!(
        flooded.saturating_sub(idle) < 32 * 1024,
        "RSS grew from {idle} KiB to {flooded} KiB under the flood"
    );
}

#[test]
fn control_socket_is_private_and_bounded() {
    if !common::netns::available() {
        return;
    }
    let d = served_dir();
    let (_lab, _pid, _log) = lab_with_serve(d.path(), "oc", &["--services", "status"]);
    let sock = d.path().join(".okd-serve.sock");
    assert_eq!(mode(&sock) & 0o777, 0o600, "control socket mode");
    let leftovers: Vec<_> = std::fs::read_dir(d.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".okd-serve-sock-"))
        .collect();
    assert!(leftovers.is_empty(), "private dirs left: {leftovers:?}");
    let mut s = std::os::unix::net::UnixStream::connect(&sock).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    // The server stops reading after 1025 bytes and answers, so the rest of
    // this write may meet a closed socket.
    let mut line = vec![b's'; 5000];
    line.push(b'\n');
    let _ = s.write_all(&line);
    let mut reply = String::new();
    s.read_to_string(&mut reply).unwrap();
    assert!(reply.contains("request longer than 1024 bytes"), "{reply}");
    // The server still answers.
    let status = control(d.path(), "status");
    let doc: StatusDocument = serde_json::from_str(&status).unwrap();
    assert_eq!(doc.cluster, "okd.example", "{status}");
}

/// A query for `name` (dotted, no trailing dot) type A with ID `id`.
fn dns_query(id: u16, name: &str) -> Vec<u8> {
    let mut q = id.to_be_bytes().to_vec();
    q.extend_from_slice(&[1, 0, 0, 1, 0, 0, 0, 0, 0, 0]);
    for l in name.split('.') {
        q.push(l.len() as u8);
        q.extend_from_slice(l.as_bytes());
    }
    q.extend_from_slice(&[0, 0, 1, 0, 1]);
    q
}

/// What [`dns_burst_driver`] measured.
#[derive(Debug, Default)]
struct Burst {
    sent: usize,
    sent_bytes: usize,
    /// Seconds from the first send to the last.
    secs: f64,
    /// Distinct IDs answered with records (no TC).
    answered: usize,
    /// Replies with TC set and no records.
    truncated: usize,
    /// Replies with TC set and records (never expected).
    truncated_with_records: usize,
    back_bytes: usize,
}

/// Runs [`dns_burst_driver`] (this test binary) inside `ns`: `count`
/// queries for api-int at `rate` per second to serve's DNS.
fn dns_burst(lab: &Lab, ns: &str, count: usize, rate: usize) -> Burst {
    let exe = std::env::current_exe().unwrap();
    let out = lab
        .cmd(ns, &exe.to_string_lossy())
        .args([
            "dns_burst_driver",
            "--ignored",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("OKD_DNS_BURST", format!("{BASTION}:53,{count},{rate}"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "driver: {text}\n{err}");
    eprintln!("{}", err.trim());
    let line = text
        .lines()
        .find_map(|l| l.split_once("BURST ").map(|(_, r)| r))
        .unwrap_or_else(|| panic!("no result from the driver:\n{text}"));
    let v: Vec<f64> = line
        .split(' ')
        .map(|x| x.split_once('=').unwrap().1.parse().unwrap())
        .collect();
    Burst {
        sent: v[0] as usize,
        sent_bytes: v[1] as usize,
        secs: v[2],
        answered: v[3] as usize,
        truncated: v[4] as usize,
        truncated_with_records: v[5] as usize,
        back_bytes: v[6] as usize,
    }
}

/// The `Udp:` lines of this network namespace's `/proc/net/snmp` (receive
/// buffer errors and the like), for failure messages.
fn udp_counters() -> String {
    std::fs::read_to_string("/proc/net/snmp")
        .unwrap_or_default()
        .lines()
        .filter(|l| l.starts_with("Udp:"))
        .collect::<Vec<_>>()
        .join(" / ")
}

/// The load generator of [`dns_nodes_are_never_limited_outsiders_are`],
/// run inside a namespace by [`dns_burst`] (does nothing without
/// `OKD_DNS_BURST=server:port,count,rate`): sends the queries paced at the
/// rate from one socket, reading replies in between, then waits 1 s for
/// the last replies; prints `BURST sent=… …`.
#[test]
#[ignore]
fn dns_burst_driver() {
    let Ok(spec) = std::env::var("OKD_DNS_BURST") else {
        return;
    };
    let parts: Vec<&str> = spec.split(',').collect();
    let server: std::net::SocketAddr = parts[0].parse().unwrap();
    let count: usize = parts[1].parse().unwrap();
    let rate: f64 = parts[2].parse().unwrap();
    let sock = std::net::UdpSocket::bind("0.0.0.0:0").unwrap();
    // Room for every reply, should this process be descheduled a while.
    rustix::net::sockopt::set_socket_recv_buffer_size_force(&sock, 8 << 20).unwrap();
    sock.connect(server).unwrap();
    sock.set_nonblocking(true).unwrap();
    let mut b = Burst::default();
    let mut seen = vec![false; count];
    let mut buf = [0u8; 1500];
    let mut take = |b: &mut Burst, r: &[u8]| {
        let id = usize::from(u16::from_be_bytes([r[0], r[1]]));
        let records = r[6..12] != [0; 6];
        b.back_bytes += r.len();
        if r[2] & 0x02 != 0 {
            if records {
                b.truncated_with_records += 1;
            } else {
                b.truncated += 1;
            }
        } else if id < count && !seen[id] && r[7] > 0 {
            seen[id] = true;
            b.answered += 1;
        }
    };
    let start = Instant::now();
    for i in 0..count {
        let due = start + Duration::from_secs_f64(i as f64 / rate);
        loop {
            match sock.recv(&mut buf) {
                Ok(n) => take(&mut b, &buf[..n]),
                Err(_) if Instant::now() >= due => break,
                Err(_) => std::thread::sleep(Duration::from_micros(100)),
            }
        }
        let q = dns_query(i as u16, "api-int.okd.example");
        if sock.send(&q).is_ok() {
            b.sent += 1;
            b.sent_bytes += q.len();
        }
    }
    b.secs = start.elapsed().as_secs_f64();
    sock.set_nonblocking(false).unwrap();
    sock.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let end = Instant::now() + Duration::from_secs(1);
    while Instant::now() < end {
        if let Ok(n) = sock.recv(&mut buf) {
            take(&mut b, &buf[..n]);
        }
    }
    eprintln!("this namespace's UDP counters: {}", udp_counters());
    println!(
        "BURST sent={} sent_bytes={} secs={:.3} answered={} truncated={} truncated_with_records={} back_bytes={}",
        b.sent,
        b.sent_bytes,
        b.secs,
        b.answered,
        b.truncated,
        b.truncated_with_records,
        b.back_bytes
    );
}

/// Issue #18 finding 8: a node of the cluster asking 3 000 queries at
/// 2 500/s gets every answer (the nodes' networks are never rate limited),
/// while a host outside the allowed networks (10.77.0.5, routed through the
/// bastion) is response-rate limited as BIND's `rate-limit`: 20 responses
/// per second to its /24, of the rest every second one truncated (TC, no
/// records), so it gets fewer bytes back than it sent.
#[test]
fn dns_nodes_are_never_limited_outsiders_are() {
    if !common::netns::available() {
        return;
    }
    let d = served_dir();
    let (mut lab, _pid, serve_log) = lab_with_serve(d.path(), "od", &[]);
    let master = lab.nodes[1].ns.clone();
    // An outsider on the same bridge, in a network of its own.
    let bastion = lab.bastion.ns.clone();
    common::netns::ip(&["-n", &bastion, "addr", "add", "10.77.0.1/24", "dev", "br0"]);
    let outsider = format!("{bastion}-out");
    let tail = &bastion[bastion.len().saturating_sub(6)..];
    lab.nodes.push(common::netns::Host {
        ns: outsider.clone(),
        addr: "10.77.0.5".into(),
    });
    common::netns::attach(
        &bastion,
        &outsider,
        &format!("v{tail}o"),
        "10.77.0.5",
        "10.77.0.1",
    );

    // Up to three bursts, so a loaded CI machine dropping datagrams in the
    // kernel once does not fail the test; the old per-client limiter (1000
    // at once, then 500/s) answered about 1600 of every such burst.
    let mut node = dns_burst(&lab, &master, 3000, 2500);
    eprintln!("node: {node:?}");
    for _ in 0..2 {
        if node.answered == 3000 {
            break;
        }
        std::thread::sleep(Duration::from_secs(1));
        node = dns_burst(&lab, &master, 3000, 2500);
        eprintln!("node, again: {node:?}");
    }
    let log = || std::fs::read_to_string(&serve_log).unwrap_or_default();
    assert_eq!(node.sent, 3000);
    assert!(
        node.sent as f64 / node.secs >= 2000.0,
        "the driver sent only {:.0} q/s",
        node.sent as f64 / node.secs
    );
    let bastion_udp = lab
        .cmd(&bastion, "cat")
        .arg("/proc/net/snmp")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    assert_eq!(
        node.answered,
        3000,
        "a node got {} answers of 3000: {node:?}\nthe bastion's /proc/net/snmp:\n{bastion_udp}\n{}",
        node.answered,
        log()
    );
    assert_eq!(node.truncated + node.truncated_with_records, 0, "{node:?}");

    let out = dns_burst(&lab, &outsider, 400, 1000);
    eprintln!("outsider: {out:?}");
    assert_eq!(out.sent, 400);
    // One second of credit (20) plus 20/s while the burst lasts.
    let allowed = 20.0 + 20.0 * (out.secs + 0.1);
    assert!(
        out.answered >= 20 && out.answered as f64 <= allowed,
        "outsider answered {} (at most {allowed:.0}): {out:?}",
        out.answered
    );
    let limited = out.sent - out.answered;
    assert!(
        out.truncated.abs_diff(limited / 2) <= 2,
        "{} truncated of {limited} limited (slip 2): {out:?}",
        out.truncated
    );
    assert_eq!(out.truncated_with_records, 0, "{out:?}");
    assert!(
        out.back_bytes < out.sent_bytes,
        "{} octets back for {} sent: {out:?}",
        out.back_bytes,
        out.sent_bytes
    );
    assert!(
        log().contains("over the rate limit"),
        "no log line about the limit:\n{}",
        log()
    );
}
