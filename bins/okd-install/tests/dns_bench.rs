//! serve's DNS beside dnsmasq with the configuration of `create
//! bastion-configs`, both loaded by `dnsperf` from hosts in network
//! namespaces (issue #18 finding 8), in alternating turns: see
//! [`bench_dns_against_dnsmasq`].
//! Run by `bash bench/dns.sh` (release build); ignored by `cargo test`.

mod common;

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use common::netns::{Lab, attach, ip};
use common::serve::{served_dir, wait_ready};
use common::{okd_ok, tool};

const BASTION: &str = "192.168.120.101";
const NODE: &str = "192.168.120.103";
/// The 64 addresses of the many-clients case: 192.168.120.150 and on.
const MANY: usize = 64;
/// dnsperf processes running at once in the many-clients case, each
/// sending from [`MANY`] / [`AT_ONCE`] addresses in turn.
const AT_ONCE: usize = 8;
/// Queries outstanding per dnsperf process of the many-clients case.
const MANY_OUTSTANDING: &str = "16";
const OUTSIDER: &str = "10.77.0.5";

/// Names both servers answer from the cluster zone, as dnsperf's input.
const QUERIES: &str = "api.okd.example A\napi-int.okd.example A\nmaster.okd.example A\nbootstrap.okd.example A\noauth-openshift.apps.okd.example A\nconsole-openshift-console.apps.okd.example A\n";

/// What one dnsperf run said.
#[derive(Debug, Default, Clone, Copy)]
struct Perf {
    sent: u64,
    completed: u64,
    qps: f64,
}

impl std::ops::AddAssign for Perf {
    fn add_assign(&mut self, o: Perf) {
        self.sent += o.sent;
        self.completed += o.completed;
        self.qps += o.qps;
    }
}

fn field(text: &str, label: &str) -> f64 {
    text.lines()
        .find_map(|l| l.trim().strip_prefix(label))
        .and_then(|r| r.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {label:?} in dnsperf's output:\n{text}"))
}

fn parse(out: &Output) -> Perf {
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "dnsperf: {text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Perf {
        sent: field(&text, "Queries sent:") as u64,
        completed: field(&text, "Queries completed:") as u64,
        qps: field(&text, "Queries per second:"),
    }
}

/// dnsperf in `ns` from `src` against the bastion for `secs` with `extra`
/// options.
fn dnsperf(lab: &Lab, ns: &str, src: &str, queries: &Path, secs: u32, extra: &[&str]) -> Command {
    let mut c = lab.cmd(ns, "dnsperf");
    c.args(["-s", BASTION, "-a", src, "-d"])
        .arg(queries)
        .args(["-l", &secs.to_string(), "-t", "2"])
        .args(extra);
    c
}

/// Octets received and sent by `eth0` of `ns`.
fn eth0_bytes(ns: &str) -> (u64, u64) {
    let read = |what: &str| -> u64 {
        let out = Command::new("ip")
            .args(["netns", "exec", ns, "cat"])
            .arg(format!("/sys/class/net/eth0/statistics/{what}"))
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
    };
    (read("rx_bytes"), read("tx_bytes"))
}

/// One server's figures.
#[derive(Debug, Default)]
struct Figures {
    paced: Perf,
    flat: Perf,
    many: Perf,
    flood: Perf,
    /// Octets the outsider sent and got back.
    flood_out: u64,
    flood_back: u64,
}

/// Every case against whatever DNS server listens on the bastion now.
fn measure(lab: &Lab, queries: &Path, secs: u32) -> Figures {
    let node = lab.nodes[0].ns.clone();
    let outsider = lab.nodes[1].ns.clone();
    let mut f = Figures {
        paced: parse(
            &dnsperf(lab, &node, NODE, queries, secs, &["-Q", "2000"])
                .output()
                .unwrap(),
        ),
        flat: parse(
            &dnsperf(lab, &node, NODE, queries, secs, &[])
                .output()
                .unwrap(),
        ),
        ..Figures::default()
    };
    // The many-clients case: AT_ONCE dnsperf processes at once, each
    // sending from its MANY / AT_ONCE addresses one after the other for
    // an equal share of the time; q/s is all completed queries over the
    // wall time of the case.
    let per_address = (secs / (MANY / AT_ONCE) as u32).max(1);
    let started = Instant::now();
    let runs: Vec<Perf> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..AT_ONCE)
            .map(|w| {
                let node = &node;
                scope.spawn(move || {
                    let mut sum = Perf::default();
                    for i in (w..MANY).step_by(AT_ONCE) {
                        let src = format!("192.168.120.{}", 150 + i);
                        let out = dnsperf(
                            lab,
                            node,
                            &src,
                            queries,
                            per_address,
                            &["-q", MANY_OUTSTANDING],
                        )
                        .output()
                        .unwrap();
                        sum += parse(&out);
                    }
                    sum
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    let wall = started.elapsed().as_secs_f64();
    for r in runs {
        f.many += r;
    }
    f.many.qps = f.many.completed as f64 / wall;
    let (rx0, tx0) = eth0_bytes(&outsider);
    f.flood = parse(
        &dnsperf(lab, &outsider, OUTSIDER, queries, secs, &[])
            .output()
            .unwrap(),
    );
    let (rx1, tx1) = eth0_bytes(&outsider);
    (f.flood_out, f.flood_back) = (tx1 - tx0, rx1 - rx0);
    f
}

fn report(name: &str, f: &Figures) {
    eprintln!(
        "{name:8} 2000 q/s: sent {} lost {} | flat out one node: {:.0} q/s (lost {}) | {MANY} addresses: {:.0} q/s (lost {}) | outsider flood: {:.0} q/s answered, {} octets out, {} back ({:.2}x)",
        f.paced.sent,
        f.paced.sent - f.paced.completed,
        f.flat.qps,
        f.flat.sent - f.flat.completed,
        f.many.qps,
        f.many.sent - f.many.completed,
        f.flood.qps,
        f.flood_out,
        f.flood_back,
        f.flood_back as f64 / f.flood_out.max(1) as f64,
    );
}

/// The served directory (single-master example, `create bastion-configs`
/// run), the lab (bastion, the master with the 64 more addresses, the
/// outsider), dnsperf's input and dnsmasq; `None` without root, dnsperf or
/// dnsmasq. `tag` starts the namespaces' names.
fn bench_lab(
    tag: &str,
) -> Option<(
    tempfile::TempDir,
    Lab,
    std::path::PathBuf,
    std::path::PathBuf,
)> {
    if !common::netns::available() {
        return None;
    }
    let (Some(_), Some(dnsmasq)) = (
        tool("dnsperf", &["/usr/bin/dnsperf"]),
        tool("dnsmasq", &["/usr/sbin/dnsmasq"]),
    ) else {
        return None;
    };
    let d = served_dir();
    okd_ok(d.path(), &["create", "bastion-configs"]);
    let queries = d.path().join("dnsperf-queries.txt");
    std::fs::write(&queries, QUERIES).unwrap();

    let prefix = format!("{tag}{}", std::process::id() % 100000);
    let mut lab = Lab::new(&prefix, BASTION, &[("master", NODE)], "okd.example");
    let node = lab.nodes[0].ns.clone();
    for i in 0..MANY {
        ip(&[
            "-n",
            &node,
            "addr",
            "add",
            &format!("192.168.120.{}/24", 150 + i),
            "dev",
            "eth0",
        ]);
    }
    let bastion = lab.bastion.ns.clone();
    ip(&["-n", &bastion, "addr", "add", "10.77.0.1/24", "dev", "br0"]);
    let outsider = format!("{bastion}-out");
    lab.nodes.push(common::netns::Host {
        ns: outsider.clone(),
        addr: OUTSIDER.into(),
    });
    attach(
        &bastion,
        &outsider,
        &format!("v{prefix}o"),
        OUTSIDER,
        "10.77.0.1",
    );

    Some((d, lab, queries, dnsmasq))
}

/// serve (all services, the single-master example's configs) and dnsmasq
/// (the `dnsmasq.conf` of `create bastion-configs`) on the bastion
/// 192.168.120.101, in turns within the same run: `OKD_BENCH_ROUNDS`
/// rounds (default 3), each of serve then dnsmasq (serve, dnsmasq, serve,
/// dnsmasq, ...; each server started afresh for its turn), so a change in
/// the machine's load (other jobs on a shared machine) falls on both
/// alike. In each turn the server is loaded the same way with dnsperf (6
/// names of the cluster zone, `OKD_BENCH_SECS` seconds per case, default
/// 8):
///
/// - paced: 2 000 q/s from the master's address (192.168.120.103);
/// - flat out from that address (dnsperf's defaults: one socket, 100
///   queries outstanding);
/// - flat out from 64 addresses of the node network (192.168.120.150 and
///   on): 8 dnsperf processes at once, each sending from its 8 addresses
///   one after the other (1/8 of the case's time each, 16 queries
///   outstanding), so 64 client addresses are served in the case while
///   the load generator, on the same 2 cores, is 8 processes and not 64
///   (which took much of the CPU the servers were to be measured with);
///   q/s is all completed queries over the case's wall time;
/// - a flood from an address outside the allowed networks (10.77.0.5,
///   routed through the bastion), with the octets it sent and got back
///   counted on its interface.
///
/// Prints each turn's figures, then per case the mean q/s of each server
/// over the rounds, the ratio of the means and the ratio in each round;
/// asserts serve lost nothing at 2 000 q/s and sent the outsider fewer
/// octets than it got, in every round.
#[test]
#[ignore]
fn bench_dns_against_dnsmasq() {
    let env = |name: &str, default: u32| -> u32 {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let secs = env("OKD_BENCH_SECS", 8);
    let rounds = env("OKD_BENCH_ROUNDS", 3).max(1);
    let Some((d, mut lab, queries, dnsmasq)) = bench_lab("db") else {
        return;
    };
    let bastion = lab.bastion.ns.clone();
    let dir = d.path().to_string_lossy().into_owned();
    let conf = d.path().join("bastion/dnsmasq/dnsmasq.conf");
    let pid_file = d.path().join("dnsmasq.pid");
    let mut ours = Vec::new();
    let mut theirs = Vec::new();
    for round in 1..=rounds {
        // serve: every service, as on a bastion.
        let serve_log = d.path().join(format!("serve-{round}.log"));
        let serve = lab.spawn(
            &bastion,
            env!("CARGO_BIN_EXE_okd-install"),
            &["serve", "--dir", &dir],
            &serve_log,
        );
        wait_ready(&serve_log);
        let f = measure(&lab, &queries, secs);
        lab.kill(serve);
        report(&format!("{round} serve"), &f);
        ours.push(f);

        // dnsmasq with the generated configuration, in the foreground.
        let dm = lab.spawn(
            &bastion,
            &dnsmasq.to_string_lossy(),
            &[
                "-k",
                "-C",
                &conf.to_string_lossy(),
                &format!("--pid-file={}", pid_file.display()),
                "--log-facility=-",
            ],
            &d.path().join(format!("dnsmasq-{round}.log")),
        );
        std::thread::sleep(Duration::from_secs(1));
        let f = measure(&lab, &queries, secs);
        lab.kill(dm);
        report(&format!("{round} dnsmasq"), &f);
        theirs.push(f);
    }

    let ratio = |a: f64, b: f64| a / b.max(1.0);
    let summary = |case: &str, get: fn(&Figures) -> Perf| {
        let mean = |fs: &[Figures]| fs.iter().map(|f| get(f).qps).sum::<f64>() / fs.len() as f64;
        let lost =
            |fs: &[Figures]| -> u64 { fs.iter().map(|f| get(f).sent - get(f).completed).sum() };
        let per_round: Vec<String> = ours
            .iter()
            .zip(&theirs)
            .map(|(o, t)| format!("{:.2}x", ratio(get(o).qps, get(t).qps)))
            .collect();
        eprintln!(
            "{case}: serve {:.0} q/s (lost {}), dnsmasq {:.0} q/s (lost {}): {:.2}x; rounds {}",
            mean(&ours),
            lost(&ours),
            mean(&theirs),
            lost(&theirs),
            ratio(mean(&ours), mean(&theirs)),
            per_round.join(" "),
        );
    };
    eprintln!("serve/dnsmasq over {rounds} rounds of {secs} s per case (mean q/s):");
    summary("flat out one node", |f| f.flat);
    summary(&format!("{MANY} addresses"), |f| f.many);
    let back = |fs: &[Figures]| {
        let (b, o) = fs
            .iter()
            .fold((0, 0), |(b, o), f| (b + f.flood_back, o + f.flood_out));
        b as f64 / o.max(1) as f64
    };
    eprintln!(
        "outsider octets back/sent: serve {:.2}, dnsmasq {:.2}",
        back(&ours),
        back(&theirs)
    );
    for (round, f) in ours.iter().enumerate() {
        let round = round + 1;
        assert_eq!(
            f.paced.sent, f.paced.completed,
            "round {round}: serve lost queries at 2 000 q/s"
        );
        assert!(
            f.flood_back < f.flood_out,
            "round {round}: the outsider got {} octets back for {} sent",
            f.flood_back,
            f.flood_out
        );
    }
}

/// Instructions serve under callgrind executes (user space only) while
/// it answers `runs` × 6 queries at 2 000 q/s from the master: counters
/// zeroed before dnsperf starts and dumped after it ends
/// (`callgrind_control`; serve's UDP threads wake every second, so it
/// takes the request). Returns (instructions, queries completed).
///
/// While `callgrind_control` waits, a query is sent now and then too; the
/// ones sent while dumping are counted with the run's (a few dozen against
/// 12 000).
fn instructions(lab: &Lab, pid: u32, out: &Path, queries: &Path, runs: u32) -> (u64, u64) {
    let node = lab.nodes[0].ns.clone();
    let control = |what: &str| -> u64 {
        let mut child = Command::new("callgrind_control")
            .args([what, &pid.to_string()])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let mut woke = 0;
        loop {
            if let Some(st) = child.try_wait().unwrap() {
                assert!(st.success(), "callgrind_control {what}: {st:?}");
                return woke;
            }
            let wake = dnsperf(lab, &node, NODE, queries, 1, &["-n", "1"])
                .output()
                .unwrap();
            woke += parse(&wake).completed;
            std::thread::sleep(Duration::from_millis(200));
        }
    };
    control("-z");
    let perf = parse(
        &dnsperf(
            lab,
            &node,
            NODE,
            queries,
            60,
            &["-n", &runs.to_string(), "-Q", "2000"],
        )
        .output()
        .unwrap(),
    );
    let woke = control("-d");
    // One dump file per thread (`--separate-threads`): the UDP threads'
    // are those where okd_dns::udp's functions ran.
    let dir = out.parent().unwrap();
    let base = format!("{}.", out.file_name().unwrap().to_string_lossy());
    let mut ir = 0;
    let mut threads = 0;
    for e in std::fs::read_dir(dir).unwrap().filter_map(|e| e.ok()) {
        if !e.file_name().to_string_lossy().starts_with(&base) {
            continue;
        }
        let text = std::fs::read_to_string(e.path()).unwrap();
        if !text.contains("okd_dns::udp::") {
            continue;
        }
        threads += 1;
        ir += text
            .lines()
            .find_map(|l| l.strip_prefix("summary:").or(l.strip_prefix("totals:")))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or_else(|| panic!("no totals in {}", e.path().display()));
    }
    assert!(threads > 0, "no dump of serve's UDP threads");
    (ir, perf.completed + woke)
}

/// Instructions per answered query, serve against dnsmasq, each run under
/// callgrind on the bastion (`bash bench/dns.sh` runs it after the
/// throughput bench when valgrind is installed): a figure the machine's
/// load does not change. For serve, the instructions of its UDP threads
/// (callgrind's `--separate-threads`, the threads running `okd_dns::udp`:
/// receiving, reading, answering, rate limiting, logging and queueing
/// reports, sending; serve's other services and threads are not counted);
/// for dnsmasq, all of it (it does nothing else here). User space only: the system calls' cost in the kernel is
/// not counted (serve takes what is queued after a query and replies with
/// one `sendmmsg`; dnsmasq polls, receives and sends per query).
#[test]
#[ignore]
fn instructions_per_query_against_dnsmasq() {
    let Some(valgrind) = tool("valgrind", &["/usr/bin/valgrind"]) else {
        return;
    };
    let Some((d, mut lab, queries, dnsmasq)) = bench_lab("dc") else {
        return;
    };
    let bastion = lab.bastion.ns.clone();
    let valgrind = valgrind.to_string_lossy().into_owned();
    let runs = 2000;
    let dir = d.path().to_string_lossy().into_owned();
    let out = d.path().join("callgrind.serve");
    let log = d.path().join("serve-callgrind.log");
    let serve = lab.spawn(
        &bastion,
        &valgrind,
        &[
            "--tool=callgrind",
            "--separate-threads=yes",
            &format!("--callgrind-out-file={}", out.display()),
            env!("CARGO_BIN_EXE_okd-install"),
            "serve",
            "--dir",
            &dir,
        ],
        &log,
    );
    wait_ready(&log);
    let (ours, ours_n) = instructions(&lab, serve, &out, &queries, runs);
    lab.kill(serve);

    // dnsmasq blocks in poll without a timeout and does not take
    // callgrind_control's requests: it is run twice, answering the
    // queries or none, and stopped with SIGTERM (callgrind writes its
    // counts at exit); the difference is the queries' cost.
    let conf = d.path().join("bastion/dnsmasq/dnsmasq.conf");
    let mut dnsmasq_run = |runs: u32| -> (u64, u64) {
        let out = d.path().join(format!("callgrind.dnsmasq.{runs}"));
        let dm = lab.spawn(
            &bastion,
            &valgrind,
            &[
                "--tool=callgrind",
                &format!("--callgrind-out-file={}", out.display()),
                &dnsmasq.to_string_lossy(),
                "-k",
                // As root: callgrind writes its counts at exit, which it
                // cannot after dnsmasq became `nobody`.
                "--user=root",
                "-C",
                &conf.to_string_lossy(),
                &format!("--pid-file={}", d.path().join("dnsmasq.pid").display()),
                "--log-facility=-",
            ],
            &d.path().join(format!("dnsmasq-callgrind-{runs}.log")),
        );
        std::thread::sleep(Duration::from_secs(5));
        let completed = if runs > 0 {
            let node = lab.nodes[0].ns.clone();
            let out = dnsperf(
                &lab,
                &node,
                NODE,
                &queries,
                60,
                &["-n", &runs.to_string(), "-Q", "2000"],
            )
            .output()
            .unwrap();
            parse(&out).completed
        } else {
            0
        };
        let _ = Command::new("kill")
            .args(["-TERM", &dm.to_string()])
            .status();
        let start = Instant::now();
        let ir = loop {
            let text = std::fs::read_to_string(&out).unwrap_or_default();
            if let Some(ir) = text
                .lines()
                .find_map(|l| l.strip_prefix("summary:").or(l.strip_prefix("totals:")))
                .and_then(|v| v.split_whitespace().next())
                .and_then(|v| v.parse::<u64>().ok())
            {
                break ir;
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "dnsmasq under callgrind wrote no counts"
            );
            std::thread::sleep(Duration::from_millis(200));
        };
        lab.kill(dm);
        (ir, completed)
    };
    let (idle, _) = dnsmasq_run(0);
    let (busy, theirs_n) = dnsmasq_run(runs);
    let theirs = busy.saturating_sub(idle);

    let per = |ir: u64, n: u64| ir as f64 / n.max(1) as f64;
    eprintln!(
        "instructions per query (callgrind, user space): serve {:.0} ({ours} for {ours_n} queries), dnsmasq {:.0} ({theirs} for {theirs_n}): {:.2}x",
        per(ours, ours_n),
        per(theirs, theirs_n),
        per(ours, ours_n) / per(theirs, theirs_n),
    );
}
