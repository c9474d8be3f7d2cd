//! `okd-install preflight` against real daemons in network namespaces
//! (issue #27): the user's HAProxy checking `GET /` and sending 22623 to the
//! API's 6443, dnsmasq without api-int, a node whose nameserver is not
//! serve's, a missing OS image, a partition as install disk; each named
//! with its cause and fix. Then the same install served by `okd-install
//! serve`, whose start runs the checks and shows them in `/status`.
//!
//! The bootstrap's API is a second HAProxy in the bootstrap's namespace:
//! TLS with a certificate of another CA (made by `openssl req`), `GET
//! /readyz` and `GET /healthz` answered 200 and everything else 403, as a
//! kube-apiserver answers anonymous clients.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::netns::Lab;
use common::preflight::{bootstrap_api, check, expect, lines, preflight, self_signed};
use common::serve::*;
use common::*;
use okd_serve_api::preflight::{Outcome, Report};

/// Small files under the example's image names (and a checksum file for
/// one), so the image checks pass.
fn images(dir: &Path) {
    let root = dir.join("images");
    std::fs::create_dir_all(&root).unwrap();
    for f in ["kernel", "initramfs.img", "rootfs.img", "coreos.raw.xz"] {
        std::fs::write(root.join(f), format!("not really {f}\n")).unwrap();
    }
}

#[test]
fn preflight_names_each_broken_piece_with_its_fix() {
    if !common::netns::available() {
        return;
    }
    let (Some(haproxy), Some(dnsmasq), Some(openssl)) = (
        tool("haproxy", &["/usr/sbin/haproxy"]),
        tool("dnsmasq", &["/usr/sbin/dnsmasq"]),
        tool("openssl", &["/usr/bin/openssl"]),
    ) else {
        return;
    };
    let d = served_dir();
    okd_ok(d.path(), &["create", "bastion-configs"]);
    images(d.path());
    std::fs::remove_file(d.path().join("images/coreos.raw.xz")).unwrap();
    // worker1 asks the master's address for names: nothing answers there.
    let agent = std::fs::read_to_string(d.path().join("agent-config.yaml")).unwrap();
    let (head, tail) = agent.split_at(agent.find("- hostname: worker1").unwrap());
    let tail = tail.replacen(
        "server:\n            - 192.168.120.101",
        "server:\n            - 192.168.120.103",
        1,
    );
    std::fs::write(d.path().join("agent-config.yaml"), format!("{head}{tail}")).unwrap();

    let scratch = tempfile::tempdir().unwrap();
    // The user's HAProxy: the generated file, with the API checked by
    // `GET /` and 22623 sent to the bootstrap's 6443.
    let cfg = std::fs::read_to_string(d.path().join("bastion/haproxy/haproxy.cfg"))
        .unwrap()
        .replace(
            "/run/haproxy/admin.sock",
            &scratch.path().join("admin.sock").to_string_lossy(),
        )
        .replace("log /dev/log local0", "log stdout format raw local0")
        .replace("maxconn 20000", "maxconn 4000")
        .replacen("option httpchk GET /readyz", "option httpchk GET /", 1)
        .replace(
            "server bootstrap 192.168.120.102:22623",
            "server bootstrap 192.168.120.102:6443",
        );
    let cfg_path = scratch.path().join("haproxy.cfg");
    std::fs::write(&cfg_path, &cfg).unwrap();
    // dnsmasq without api-int.
    let conf = std::fs::read_to_string(d.path().join("bastion/dnsmasq/dnsmasq.conf"))
        .unwrap()
        .replace("api-int.okd.example,", "")
        .lines()
        .filter(|l| !l.contains("api-int"))
        .collect::<Vec<_>>()
        .join("\n")
        + "\n";
    let conf_path = scratch.path().join("dnsmasq.conf");
    std::fs::write(&conf_path, conf).unwrap();
    let www = scratch.path().join("www");
    std::fs::create_dir_all(&www).unwrap();
    let prefix = format!("pf{}", std::process::id() % 100000);
    let mut lab = Lab::new(
        &prefix,
        BASTION,
        &[
            ("bootstrap", "192.168.120.102"),
            ("master", "192.168.120.103"),
            ("worker", "192.168.120.104"),
        ],
        "okd.example",
    );
    let boot_ns = lab.nodes[0].ns.clone();
    bootstrap_api(&mut lab, &boot_ns, &haproxy, &openssl, &www);
    let bastion = lab.bastion.ns.clone();
    lab.spawn(
        &bastion,
        &haproxy.to_string_lossy(),
        &["-db", "-f", &cfg_path.to_string_lossy()],
        &scratch.path().join("haproxy.log"),
    );
    // The mirror registry of install-config (registry.okd.example:5000),
    // with a certificate from a CA that is not in additionalTrustBundle.
    self_signed(
        &openssl,
        &www,
        "reg",
        "registry.okd.example",
        Some("DNS:registry.okd.example"),
    );
    let reg_cfg = www.join("registry.cfg");
    std::fs::write(
        &reg_cfg,
        format!(
            "global\n  log stdout format raw local0\n  maxconn 200\n\
             defaults\n  mode http\n  timeout connect 5s\n  timeout client 30s\n  timeout server 30s\n\
             frontend registry\n  bind 192.168.120.101:5000 ssl crt {}\n\
             \x20 http-request return status 200 content-type application/json string {{}}\n",
            www.join("reg.pem").display()
        ),
    )
    .unwrap();
    lab.spawn(
        &bastion,
        &haproxy.to_string_lossy(),
        &["-db", "-f", &reg_cfg.to_string_lossy()],
        &scratch.path().join("registry.log"),
    );
    lab.spawn(
        &bastion,
        &dnsmasq.to_string_lossy(),
        &[
            "-k",
            "-C",
            &conf_path.to_string_lossy(),
            &format!(
                "--pid-file={}",
                scratch.path().join("dnsmasq.pid").display()
            ),
            "--log-facility=-",
        ],
        &scratch.path().join("dnsmasq.log"),
    );
    // Until every daemon answers and HAProxy's checks have run (it starts
    // its servers UP; the API's go DOWN after failed `GET /` checks): bounded.
    let start = Instant::now();
    let (report, code) = loop {
        let (r, code) = preflight(
            &lab,
            d.path(),
            &["--haproxy-cfg", &cfg_path.to_string_lossy()],
        );
        let failed = |id: &str| check(&r, id).result == Outcome::Fail;
        let settled = failed("lb.machine-config.ca")
            && failed("lb.api.readyz")
            && failed("mirror.registry.okd.example:5000.tls");
        if settled || start.elapsed() > Duration::from_secs(30) {
            break (r, code);
        }
        std::thread::sleep(Duration::from_millis(500));
    };
    assert_eq!(
        code,
        Some(1),
        "a failed check fails the command:\n{}",
        lines(&report)
    );

    use Outcome::{Fail, Pass, Warn};
    // The load balancer: the health path, the port, the certificate, /readyz.
    expect(
        &report,
        "lb.config.api.health",
        Fail,
        &["checks GET /", "403"],
        &["option httpchk GET /readyz"],
    );
    let c = expect(
        &report,
        "lb.config.machine-config.servers",
        Fail,
        &[
            "server bootstrap 192.168.120.102:6443",
            "uses port 6443 (the API)",
        ],
        &[],
    );
    assert!(
        !c.cause.contains("machine-config-server"),
        "serve's own MCS is a good backend: {c:?}"
    );
    expect(
        &report,
        "lb.machine-config.ca",
        Fail,
        &["CN=kube-apiserver-of-another-ca", "which Ignition refuses"],
        &["not to the API's 6443"],
    );
    expect(
        &report,
        "lb.api.readyz",
        Fail,
        &["but is 200 on the bootstrap itself (192.168.120.102:6443)"],
        &["option httpchk GET /readyz"],
    );
    // DNS: api-int missing, worker1's nameserver not serve's and silent.
    expect(
        &report,
        "dns.192.168.120.101.api-int",
        Fail,
        &["api-int.okd.example A answers NXDOMAIN"],
        &[],
    );
    expect(&report, "dns.192.168.120.101.api", Pass, &[], &[]);
    expect(&report, "dns.192.168.120.101.master.ptr", Pass, &[], &[]);
    let c = expect(&report, "dns.192.168.120.103.serve", Warn, &[], &[]);
    assert!(
        c.cause
            .starts_with("worker1 use nameserver 192.168.120.103:53, not serve's DNS"),
        "{c:?}"
    );
    expect(&report, "dns.192.168.120.103.api", Fail, &[], &[]);
    // The mirror: the example mirrors quay.io/openshift/okd (a 4.5 guide),
    // not the default release's repository; a login; named by tag; a CA
    // the nodes lack.
    expect(
        &report,
        "mirror.release.covered",
        Fail,
        &["is no source of imageContentSources or imageDigestSources"],
        &[],
    );
    expect(
        &report,
        "mirror.registry.okd.example:5000.login",
        Pass,
        &[],
        &[],
    );
    expect(
        &report,
        "mirror.release.digest",
        Warn,
        &["is named by tag: mirrors apply to digests only"],
        &[],
    );
    expect(
        &report,
        "mirror.registry.okd.example:5000.tls",
        Fail,
        &[
            "registry.okd.example:5000 (192.168.120.101:5000) is not trusted with",
            "1 of additionalTrustBundle",
        ],
        &["additionalTrustBundle"],
    );
    // Files: the missing metal image, the certificates.
    expect(&report, "images.coreos.raw.xz", Fail, &[], &[]);
    expect(&report, "images.kernel", Pass, &[], &[]);
    expect(&report, "certificates", Pass, &[], &[]);
    // Certificates that expire before the last node boots.
    let (r, _) = preflight(&lab, d.path(), &["--offline", "--boot-within", "30h"]);
    let c = check(&r, "certificates");
    assert_eq!(c.result, Outcome::Warn, "{r:#?}");
    assert!(
        c.cause.contains("before the last node is expected to boot"),
        "{c:?}"
    );
    assert!(
        !r.checks
            .iter()
            .any(|c| c.id.starts_with("dns.") || c.id.starts_with("lb.")),
        "--offline asks nobody"
    );

    // A partition as install disk: the inventory is refused, by name.
    let agent = std::fs::read_to_string(d.path().join("agent-config.yaml")).unwrap();
    std::fs::write(
        d.path().join("agent-config.yaml"),
        agent.replacen("deviceName: /dev/sda", "deviceName: /dev/sda2", 1),
    )
    .unwrap();
    let (r, code) = preflight(&lab, d.path(), &["--offline"]);
    assert_eq!(code, Some(1));
    let c = check(&r, "inventory");
    assert_eq!(c.result, Outcome::Fail);
    assert!(
        c.cause.contains("hosts[0].rootDeviceHints.deviceName")
            && c.cause.contains("\"/dev/sda2\" is a partition"),
        "{c:?}"
    );
    std::fs::write(d.path().join("agent-config.yaml"), agent).unwrap();
}

/// The report in serve's `/status` once `ready` holds for it, within 30 s.
fn served_report(d: &Path, log: &Path, what: &str, ready: impl Fn(&Report) -> bool) -> Report {
    let start = Instant::now();
    loop {
        let doc: okd_serve_api::StatusDocument =
            serde_json::from_str(&control(d, "status")).unwrap();
        if let Some(r) = doc.preflight.filter(|r| ready(r)) {
            return r;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{what}: not in /status after 30 s:\n{}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The result of check `id` in `r`, if it ran.
fn result_of(r: &Report, id: &str) -> Option<Outcome> {
    r.checks.iter().find(|c| c.id == id).map(|c| c.result)
}

/// serve runs the checks at start: with its own DNS, balancer and
/// machine-config server they pass, and `/status` carries them. It runs
/// them again (`--preflight-every`): the bootstrap's API, started later,
/// turns `lb.api.readyz` from skipped to passed; an OS image that goes
/// missing is logged when seen and again when it is back, and leaves the
/// report.
#[test]
fn serve_runs_the_checks_at_start_and_again() {
    if !common::netns::available() {
        return;
    }
    let (Some(haproxy), Some(openssl)) = (
        tool("haproxy", &["/usr/sbin/haproxy"]),
        tool("openssl", &["/usr/bin/openssl"]),
    ) else {
        return;
    };
    let d = served_dir();
    images(d.path());
    let (mut lab, _pid, log) = lab_spawning_serve(
        d.path(),
        "ps",
        &BOOTSTRAP_AND_MASTER,
        &["--preflight-every", "2s"],
    );
    wait_ready(&log);
    let r = served_report(d.path(), &log, "the first report", |_| true);
    for id in [
        "inventory",
        "dns.192.168.120.101.api",
        "dns.192.168.120.101.api-int",
        "dns.192.168.120.101.apps",
        "dns.192.168.120.101.worker1.ptr",
        "lb.machine-config.ca",
        "images.kernel",
        "certificates",
    ] {
        expect(&r, id, Outcome::Pass, &[], &[]);
    }
    // Nothing answers on the bootstrap's 6443 yet: skipped, not failed.
    expect(&r, "lb.api.readyz", Outcome::Skip, &["not ready yet"], &[]);
    assert!(
        std::fs::read_to_string(&log)
            .unwrap()
            .contains("Preflight checks: "),
        "the summary is logged"
    );

    // The bootstrap's API comes up behind serve's balancer.
    let www = d.path().join("www");
    std::fs::create_dir_all(&www).unwrap();
    let boot_ns = lab.nodes[0].ns.clone();
    bootstrap_api(&mut lab, &boot_ns, &haproxy, &openssl, &www);
    let r = served_report(d.path(), &log, "lb.api.readyz passing", |r| {
        result_of(r, "lb.api.readyz") == Some(Outcome::Pass)
    });
    expect(
        &r,
        "lb.api.readyz",
        Outcome::Pass,
        &[
            "/readyz is 200 through 192.168.120.101:6443, as on the bootstrap (192.168.120.102:6443)",
        ],
        &[],
    );

    // An image goes missing, then comes back.
    let kernel = d.path().join("images/kernel");
    let saved = std::fs::read(&kernel).unwrap();
    std::fs::remove_file(&kernel).unwrap();
    served_report(d.path(), &log, "images.kernel failing", |r| {
        result_of(r, "images.kernel") == Some(Outcome::Fail)
    });
    std::fs::write(&kernel, saved).unwrap();
    served_report(d.path(), &log, "images.kernel passing again", |r| {
        result_of(r, "images.kernel") == Some(Outcome::Pass)
    });
    let text = std::fs::read_to_string(&log).unwrap();
    let kernel_lines: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("preflight: ") && l.contains("images.kernel"))
        .collect();
    assert_eq!(
        kernel_lines.len(),
        2,
        "once failing, once passing again:\n{text}"
    );
    assert!(kernel_lines[0].contains("FAIL"), "{}", kernel_lines[0]);
    assert!(kernel_lines[1].contains("PASS"), "{}", kernel_lines[1]);
    // Unchanged checks are not logged again on every run.
    let summaries = text.matches("Preflight checks: ").count();
    assert!(
        (3..=4).contains(&summaries),
        "a summary at start and on each change (readyz, the kernel twice), not every 2 s: {summaries}\n{text}"
    );
    drop(lab);
}

/// A file of bootstrap.ign (`/opt/openshift/tls/<name>`), decoded.
fn bootstrap_file(dir: &Path, path: &str) -> Vec<u8> {
    let cfg: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("bootstrap.ign")).unwrap()).unwrap();
    let f = cfg["storage"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == path)
        .unwrap_or_else(|| panic!("bootstrap.ign has no {path}"));
    okd_types::dataurl::decode(f["contents"]["source"].as_str().unwrap()).unwrap()
}

/// Issue #27 item 2, with the real Ignition: while only the bootstrap's
/// machine-config server is up, serve's balancer never sends a worker there
/// (it refuses the worker pool with HTTP 500) and says why, while a master
/// gets its config from it and counts as "Ignition fetched".
///
/// The bootstrap's machine-config server is HAProxy in the bootstrap's
/// namespace with the install's own machine-config-server certificate
/// (from bootstrap.ign), answering as the bootstrap MCS does: `/healthz`
/// 200, `/config/master` a config, `/config/worker` 500 with its message.
#[test]
fn workers_wait_for_a_masters_machine_config_server() {
    if !common::netns::available() || tool("ignition", &[IGNITION]).is_none() {
        return;
    }
    let Some(haproxy) = tool("haproxy", &["/usr/sbin/haproxy"]) else {
        return;
    };
    let d = served_dir();
    let scratch = tempfile::tempdir().unwrap();
    let mcs = scratch.path().join("mcs");
    std::fs::create_dir_all(&mcs).unwrap();
    let mut pem = bootstrap_file(d.path(), "/opt/openshift/tls/machine-config-server.crt");
    pem.extend(bootstrap_file(
        d.path(),
        "/opt/openshift/tls/machine-config-server.key",
    ));
    std::fs::write(mcs.join("mcs.pem"), pem).unwrap();
    // A master config of 48 KiB: one file with a data URL.
    let body = "x".repeat(48 * 1024);
    let master = serde_json::json!({
        "ignition": {"version": "3.2.0"},
        "storage": {"files": [{
            "path": "/etc/okd-test-from-the-bootstrap-mcs",
            "mode": 420,
            "contents": {"source": format!("data:,{body}")}
        }]}
    });
    std::fs::write(mcs.join("master.json"), master.to_string()).unwrap();
    let cfg = format!(
        "global\n  log stdout format raw local0\n  maxconn 200\n  tune.bufsize 131072\n\
         defaults\n  mode http\n  timeout connect 5s\n  timeout client 30s\n  timeout server 30s\n\
         frontend mcs\n  bind 192.168.120.102:22623 ssl crt {pem}\n\
         \x20 http-request return status 200 content-type text/plain string ok if {{ path /healthz }}\n\
         \x20 http-request return status 200 content-type application/json file {master} if {{ path /config/master }}\n\
         \x20 http-request return status 500 content-type text/plain string \"refusing to serve bootstrap configuration to pool \\\"worker\\\"\" if {{ path /config/worker }}\n\
         \x20 http-request return status 404 content-type text/plain string \"not found\"\n",
        pem = mcs.join("mcs.pem").display(),
        master = mcs.join("master.json").display(),
    );
    std::fs::write(mcs.join("mcs.cfg"), cfg).unwrap();
    let nodes = [
        ("bootstrap", "192.168.120.102"),
        ("master", "192.168.120.103"),
        ("worker", "192.168.120.104"),
    ];
    // serve without its own machine-config server: only the bootstrap's is up.
    let (mut lab, _pid, log) = lab_spawning_serve(
        d.path(),
        "pw",
        &nodes,
        &["--services", "dns,lb,http,status"],
    );
    wait_ready(&log);
    let boot_ns = lab.nodes[0].ns.clone();
    lab.spawn(
        &boot_ns,
        &haproxy.to_string_lossy(),
        &["-db", "-f", &mcs.join("mcs.cfg").to_string_lossy()],
        &scratch.path().join("mcs.log"),
    );
    // Until the balancer's check of the bootstrap's 22623 passed.
    let start = Instant::now();
    loop {
        let doc: okd_serve_api::StatusDocument =
            serde_json::from_str(&control(d.path(), "status")).unwrap();
        let up = doc.load_balancer.as_ref().is_some_and(|lb| {
            lb.frontends
                .iter()
                .filter(|f| f.name == "machine-config")
                .flat_map(|f| &f.backends)
                .any(|b| b.name == "bootstrap" && b.up)
        });
        if up {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the bootstrap MCS never came UP: {doc:#?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }

    // The worker: held, never answered 500; Ignition keeps trying.
    let (ok, wlog, _) = ignite(
        &lab,
        &lab.nodes[2].ns.clone(),
        &d.path().join("worker.ign"),
        &scratch.path().join("worker"),
        12,
    );
    assert!(
        !ok,
        "the worker got a config while only the bootstrap's MCS is up:\n{wlog}"
    );
    assert!(
        wlog.contains("GET https://api-int.okd.example:22623/config/worker"),
        "{wlog}"
    );
    // Ignition logs an HTTP 500 as `GET result: Internal Server Error`
    // (a bare "500" also occurs in the config's SHA512 or a port).
    assert!(
        !wlog.contains("Internal Server Error") && !wlog.contains("GET result"),
        "the worker reached the bootstrap's MCS:\n{wlog}"
    );
    // The master: its config from the bootstrap's MCS through the balancer.
    let (ok, mlog, root) = ignite(
        &lab,
        &lab.nodes[1].ns.clone(),
        &d.path().join("master.ign"),
        &scratch.path().join("master"),
        60,
    );
    assert!(ok, "the master's Ignition failed:\n{mlog}");
    assert_eq!(
        std::fs::read_to_string(root.join("etc/okd-test-from-the-bootstrap-mcs"))
            .unwrap()
            .len(),
        48 * 1024
    );
    let serve_log = std::fs::read_to_string(&log).unwrap();
    assert_eq!(
        serve_log.matches("holding 192.168.120.104").count(),
        1,
        "logged once per worker:\n{serve_log}"
    );
    let start = Instant::now();
    let doc = loop {
        let doc: okd_serve_api::StatusDocument =
            serde_json::from_str(&control(d.path(), "status")).unwrap();
        let master = doc.hosts.iter().find(|h| h.hostname == "master").unwrap();
        if master.stages.get(1).is_some_and(|s| s.done) {
            break doc;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{:#?}",
            master.stages
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    let master = doc.hosts.iter().find(|h| h.hostname == "master").unwrap();
    assert!(
        master.stages[1]
            .detail
            .starts_with("pool master from bootstrap's machine-config server ("),
        "{:?}",
        master.stages[1]
    );
    let worker = doc.hosts.iter().find(|h| h.hostname == "worker1").unwrap();
    assert!(!worker.stages[1].done, "{:?}", worker.stages);
    assert!(
        worker.ignition.iter().any(|e| e.held),
        "{:?}",
        worker.ignition
    );
    assert!(
        doc.warnings.iter().any(|w| w.starts_with("worker1 asks for the worker config, but the only machine-config server up is bootstrap's")),
        "{:#?}",
        doc.warnings
    );
    drop(lab);
}
