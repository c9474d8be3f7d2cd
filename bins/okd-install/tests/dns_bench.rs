//! serve's DNS beside dnsmasq with the configuration of `create
//! bastion-configs`, both loaded by `dnsperf` from hosts in network
//! namespaces (issue #18 finding 8): see [`bench_dns_against_dnsmasq`].
//! Run by `bash bench/dns.sh` (release build); ignored by `cargo test`.

mod common;

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use common::netns::{Lab, attach, ip};
use common::serve::{served_dir, wait_ready};
use common::{okd_ok, tool};

const BASTION: &str = "192.168.120.101";
const NODE: &str = "192.168.120.103";
/// The 64 addresses of the many-clients case: 192.168.120.150 and on.
const MANY: usize = 64;
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
    let children: Vec<_> = (0..MANY)
        .map(|i| {
            let src = format!("192.168.120.{}", 150 + i);
            dnsperf(lab, &node, &src, queries, secs, &["-q", "8"])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in children {
        f.many += parse(&c.wait_with_output().unwrap());
    }
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

/// serve (all services, the single-master example's configs) and dnsmasq
/// (the `dnsmasq.conf` of `create bastion-configs`), one after the other
/// on the bastion 192.168.120.101, in the same run, each loaded the same
/// way with dnsperf (6 names of the cluster zone, `OKD_BENCH_SECS`
/// seconds per case, default 10):
///
/// - paced: 2 000 q/s from the master's address (192.168.120.103);
/// - flat out from that address (dnsperf's defaults: one socket, 100
///   queries outstanding);
/// - flat out from 64 addresses of the node network at once (one dnsperf
///   per address, 8 outstanding each);
/// - a flood from an address outside the allowed networks (10.77.0.5,
///   routed through the bastion), with the octets it sent and got back
///   counted on its interface.
///
/// Prints each server's figures and ours as ratios of dnsmasq's; asserts
/// nothing lost at 2 000 q/s and less back than sent for the outsider.
#[test]
#[ignore]
fn bench_dns_against_dnsmasq() {
    let secs: u32 = std::env::var("OKD_BENCH_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10);
    if !common::netns::available() {
        return;
    }
    let (Some(_), Some(dnsmasq)) = (
        tool("dnsperf", &["/usr/bin/dnsperf"]),
        tool("dnsmasq", &["/usr/sbin/dnsmasq"]),
    ) else {
        return;
    };
    let d = served_dir();
    okd_ok(d.path(), &["create", "bastion-configs"]);
    let queries = d.path().join("dnsperf-queries.txt");
    std::fs::write(&queries, QUERIES).unwrap();

    let prefix = format!("db{}", std::process::id() % 100000);
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

    // serve: every service, as on a bastion.
    let serve_log = d.path().join("serve.log");
    let dir = d.path().to_string_lossy().into_owned();
    let serve = lab.spawn(
        &bastion,
        env!("CARGO_BIN_EXE_okd-install"),
        &["serve", "--dir", &dir],
        &serve_log,
    );
    wait_ready(&serve_log);
    let ours = measure(&lab, &queries, secs);
    lab.kill(serve);

    // dnsmasq with the generated configuration, in the foreground.
    let conf = d.path().join("bastion/dnsmasq/dnsmasq.conf");
    let pid_file = d.path().join("dnsmasq.pid");
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
        &d.path().join("dnsmasq.log"),
    );
    std::thread::sleep(Duration::from_secs(1));
    let theirs = measure(&lab, &queries, secs);
    lab.kill(dm);

    report("serve", &ours);
    report("dnsmasq", &theirs);
    let ratio = |a: f64, b: f64| a / b.max(1.0);
    eprintln!(
        "serve/dnsmasq: flat out one node {:.2}x, {MANY} addresses {:.2}x; outsider octets back/sent: serve {:.2}, dnsmasq {:.2}",
        ratio(ours.flat.qps, theirs.flat.qps),
        ratio(ours.many.qps, theirs.many.qps),
        ours.flood_back as f64 / ours.flood_out.max(1) as f64,
        theirs.flood_back as f64 / theirs.flood_out.max(1) as f64,
    );
    assert_eq!(
        ours.paced.sent, ours.paced.completed,
        "serve lost queries at 2 000 q/s"
    );
    assert!(
        ours.flood_back < ours.flood_out,
        "the outsider got {} octets back for {} sent",
        ours.flood_back,
        ours.flood_out
    );
}
