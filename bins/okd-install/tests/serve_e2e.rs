//! `okd-install serve` end to end: hosts are network namespaces on a bridge;
//! in each node namespace the real Ignition (Debian `ignition`) starts from the
//! node's pointer config, resolves api-int through our DNS, connects through
//! our load balancer to our machine-config server, verifies TLS with the root
//! CA from the pointer config and writes the rendered config into a per-node
//! root. A second run with a wrong CA must fail inside Ignition.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::netns::Lab;
use common::serve::*;
use common::*;

const USER_KEY: &str = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAACAQD1zXmIde90FOxXQ";

/// In each node namespace (master, then worker) the real Ignition fetches the
/// node's pointer config through DNS, the balancer and the machine-config
/// server at the bastion, and writes it into a fresh root; asserts the SSH
/// key of install-config and the pool's MachineConfig files landed.
fn ignite_nodes(lab: &Lab, dir: &Path, scratch: &Path, serve_log: &Path) {
    for (i, role) in ["master", "worker"].iter().enumerate() {
        let ns = lab.nodes[i].ns.clone();
        let node_scratch = scratch.join(role);
        let (ok, log, root) = ignite(
            lab,
            &ns,
            &dir.join(format!("{role}.ign")),
            &node_scratch,
            90,
        );
        assert!(
            ok,
            "{role}: Ignition failed:\n{log}\nserve log:\n{}",
            std::fs::read_to_string(serve_log).unwrap_or_default()
        );
        assert!(
            log.contains(&format!(
                "GET https://api-int.okd.example:22623/config/{role}"
            )),
            "{log}"
        );
        let keys = std::fs::read_to_string(root.join("home/core/.ssh/authorized_keys.d/ignition"))
            .unwrap();
        assert!(
            keys.contains(USER_KEY),
            "{role}: the install-config SSH key landed: {keys}"
        );
        let content =
            std::fs::read_to_string(root.join("etc/mcs-machine-config-content.json")).unwrap();
        assert!(
            content.contains(&format!("\"rendered-{role}-")) && content.contains(USER_KEY),
            "{content}"
        );
        assert!(
            root.join("etc/kubernetes/kubeconfig").is_file(),
            "{role}: bootstrap kubeconfig landed"
        );
        assert!(
            root.join("etc/machine-config-daemon/node-annotations.json")
                .is_file()
        );
    }
}

#[test]
fn nodes_ignite_through_our_dns_lb_and_mcs() {
    if !common::netns::available() || tool("ignition", &[IGNITION]).is_none() {
        return;
    }
    let d = served_dir();
    let prefix = format!("ok{}", std::process::id() % 100000);
    let mut lab = Lab::new(
        &prefix,
        "192.168.120.101",
        &[("master", "192.168.120.103"), ("worker", "192.168.120.104")],
        "okd.example",
    );
    let serve_log = d.path().join("serve.log");
    let bastion = lab.bastion.ns.clone();
    let dir = d.path().to_string_lossy().into_owned();
    lab.spawn(
        &bastion,
        env!("CARGO_BIN_EXE_okd-install"),
        &["serve", "--dir", &dir],
        &serve_log,
    );
    wait_ready(&serve_log);

    let scratch = tempfile::tempdir().unwrap();
    ignite_nodes(&lab, d.path(), scratch.path(), &serve_log);
    // The status names each node and what it fetched.
    let status: okd_serve_api::StatusDocument =
        serde_json::from_str(&control(d.path(), "status")).unwrap();
    for (host, pool) in [("master", "master"), ("worker1", "worker")] {
        let h = status
            .hosts
            .iter()
            .find(|h| h.hostname == host)
            .unwrap_or_else(|| panic!("{host} in {status:#?}"));
        assert!(
            h.ignition
                .iter()
                .any(|e| e.pool == pool && e.status == 200 && e.spec == "3.3.0"),
            "{status:#?}"
        );
        assert!(
            h.dns.iter().any(|q| q.name == "api-int.okd.example."),
            "{status:#?}"
        );
    }

    // A pointer config with a CA that did not sign the machine-config server: Ignition refuses.
    let mut wrong = read_ign(&d.path().join("master.ign"));
    let key = okd_pki::RsaKey::generate().unwrap();
    let cfg = ca_config("root-ca", Duration::from_secs(86400));
    let other_ca = okd_pki::self_signed(&cfg, key, time::OffsetDateTime::now_utc()).unwrap();
    wrong["ignition"]["security"]["tls"]["certificateAuthorities"][0]["source"] =
        okd_types::dataurl::encode(other_ca.cert.pem.as_bytes()).into();
    let wrong_path = scratch.path().join("wrong-ca.ign");
    std::fs::write(&wrong_path, serde_json::to_vec(&wrong).unwrap()).unwrap();
    let ns = lab.nodes[0].ns.clone();
    let (ok, log, _) = ignite(&lab, &ns, &wrong_path, &scratch.path().join("wrong"), 15);
    assert!(
        !ok,
        "Ignition accepted a machine-config server its CA did not sign:\n{log}"
    );
    assert!(
        log.contains("x509: certificate signed by unknown authority"),
        "{log}"
    );
    // serve names the refusal once, with the host and what it means (#27).
    let serve_text = std::fs::read_to_string(&serve_log).unwrap();
    let line = "TLS handshake of master (192.168.120.103) with the machine-config server failed: received fatal alert: BadCertificate: the node does not trust this machine-config server's certificate";
    assert_eq!(serve_text.matches(line).count(), 1, "{serve_text}");

    // Removing the bootstrap takes it out of every pool and says so.
    let out = control(d.path(), "remove-bootstrap --force");
    assert!(
        out.contains("bootstrap") && out.contains("api") && out.contains("machine-config"),
        "{out}"
    );
    let status: okd_serve_api::StatusDocument =
        serde_json::from_str(&control(d.path(), "status")).unwrap();
    let lb = status.load_balancer.expect("load balancer");
    assert!(
        lb.frontends
            .iter()
            .flat_map(|fe| &fe.backends)
            .all(|b| b.name != "bootstrap"),
        "bootstrap still a backend: {lb:?}"
    );
}

/// Polls HAProxy's stats CSV (from the bastion namespace) until the
/// machine-config backend has our server UP and the bootstrap and master
/// DOWN (nothing listens there in this lab), bounded to 60 s.
fn wait_haproxy_checks(lab: &Lab, stats: &str) {
    let start = Instant::now();
    loop {
        let out = lab
            .cmd(&lab.bastion.ns, "curl")
            .args(["-s", "--max-time", "2", stats])
            .output()
            .unwrap();
        let csv = String::from_utf8_lossy(&out.stdout).into_owned();
        let state = |server: &str| {
            csv.lines()
                .find(|l| l.starts_with(&format!("machine-config,{server},")))
                .and_then(|l| l.split(',').nth(17).map(String::from))
        };
        let (ours, boot, master) = (
            state("machine-config-server"),
            state("bootstrap"),
            state("master"),
        );
        if ours.as_deref() == Some("UP")
            && boot.as_deref().is_some_and(|s| s.starts_with("DOWN"))
            && master.as_deref().is_some_and(|s| s.starts_with("DOWN"))
        {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "haproxy checks did not settle: ours={ours:?} bootstrap={boot:?} master={master:?}\n{csv}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// The same run with the files of `create bastion-configs` in the real
/// daemons: HAProxy balances 22623 and dnsmasq answers api-int; okd-install
/// serves the machine-config server, HTTP and its status page (`--services
/// mcs,http,status`), on the same address as HAProxy's stats page: issue
/// #27 item 4, no port of the generated HAProxy clashes with serve's.
#[test]
fn nodes_ignite_through_generated_haproxy_and_dnsmasq() {
    if !common::netns::available() || tool("ignition", &[IGNITION]).is_none() {
        return;
    }
    let (Some(haproxy), Some(dnsmasq)) = (
        tool("haproxy", &["/usr/sbin/haproxy"]),
        tool("dnsmasq", &["/usr/sbin/dnsmasq"]),
    ) else {
        return;
    };
    if tool("curl", &["/usr/bin/curl"]).is_none() {
        return;
    }
    let d = served_dir();
    okd_ok(d.path(), &["create", "bastion-configs"]);
    let scratch = tempfile::tempdir().unwrap();
    let sock = scratch.path().join("haproxy-admin.sock");
    let cfg = std::fs::read_to_string(d.path().join("bastion/haproxy/haproxy.cfg"))
        .unwrap()
        .replace("/run/haproxy/admin.sock", &sock.to_string_lossy())
        .replace("log /dev/log local0", "log stdout format raw local0")
        // maxconn 20000 needs ~40k descriptors (systemd's LimitNOFILE gives
        // them to the packaged haproxy); this sandbox's hard limit is 20000.
        .replace("maxconn 20000", "maxconn 4000");
    let cfg_path = scratch.path().join("haproxy.cfg");
    std::fs::write(&cfg_path, cfg).unwrap();
    let conf_path = d.path().join("bastion/dnsmasq/dnsmasq.conf");
    for (prog, args) in [
        (
            &haproxy,
            vec![
                "-c".to_string(),
                "-f".into(),
                cfg_path.to_string_lossy().into(),
            ],
        ),
        (
            &dnsmasq,
            vec![
                "--test".to_string(),
                "-C".into(),
                conf_path.to_string_lossy().into(),
            ],
        ),
    ] {
        let out = std::process::Command::new(prog)
            .args(&args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{} {args:?}: {}",
            prog.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    let prefix = format!("oh{}", std::process::id() % 100000);
    let mut lab = Lab::new(
        &prefix,
        "192.168.120.101",
        &[("master", "192.168.120.103"), ("worker", "192.168.120.104")],
        "okd.example",
    );
    let bastion = lab.bastion.ns.clone();
    let serve_log = d.path().join("serve.log");
    let dir = d.path().to_string_lossy().into_owned();
    lab.spawn(
        &bastion,
        env!("CARGO_BIN_EXE_okd-install"),
        &["serve", "--services", "mcs,http,status", "--dir", &dir],
        &serve_log,
    );
    wait_ready(&serve_log);
    lab.spawn(
        &bastion,
        &haproxy.to_string_lossy(),
        &["-db", "-f", &cfg_path.to_string_lossy()],
        &scratch.path().join("haproxy.log"),
    );
    let pid_file = scratch.path().join("dnsmasq.pid");
    lab.spawn(
        &bastion,
        &dnsmasq.to_string_lossy(),
        &[
            "-k",
            "-C",
            &conf_path.to_string_lossy(),
            &format!("--pid-file={}", pid_file.display()),
            "--log-facility=-",
            "--log-queries",
        ],
        &scratch.path().join("dnsmasq.log"),
    );
    wait_haproxy_checks(&lab, "http://192.168.120.101:9001/;csv");
    // serve's dashboard keeps 9000 while HAProxy runs beside it.
    let page = lab
        .cmd(&lab.bastion.ns, "curl")
        .args([
            "-sf",
            "--max-time",
            "5",
            "http://192.168.120.101:9000/status",
        ])
        .output()
        .unwrap();
    assert!(
        page.status.success(),
        "serve's /status on :9000 did not answer"
    );
    let _: okd_serve_api::StatusDocument = serde_json::from_slice(&page.stdout)
        .unwrap_or_else(|e| panic!("/status on :9000 is not serve's: {e}"));
    ignite_nodes(&lab, d.path(), scratch.path(), &serve_log);

    // The names came from dnsmasq and the configs through HAProxy.
    let dns_log = std::fs::read_to_string(scratch.path().join("dnsmasq.log")).unwrap();
    assert!(
        dns_log.contains("api-int.okd.example is 192.168.120.101"),
        "{dns_log}"
    );
    let status: okd_serve_api::StatusDocument =
        serde_json::from_str(&control(d.path(), "status")).unwrap();
    let served: usize = status.hosts.iter().map(|h| h.ignition.len()).sum::<usize>()
        + status
            .unknown_clients
            .iter()
            .map(|c| c.ignition.len())
            .sum::<usize>();
    assert!(
        served >= 2,
        "our machine-config server served both nodes: {status:#?}"
    );
}

/// Issue #26 item 2: with serve running, the user adds a worker
/// MachineConfig and re-runs `create ignition-configs`. serve must not hand
/// out the new Ignition configs beside the machine-config pools it rendered
/// at start: it logs what changed and refuses Ignition, machine-config and
/// PXE requests with 503 until restarted; the restarted serve gives the real
/// Ignition the new worker config.
#[test]
fn regenerated_assets_are_never_served_mixed_with_the_old() {
    if !common::netns::available() || tool("ignition", &[IGNITION]).is_none() {
        return;
    }
    let d = served_dir();
    let (mut lab, pid, serve_log) =
        lab_spawning_serve(d.path(), "rg", &[("worker", "192.168.120.104")], &[]);
    wait_ready(&serve_log);
    let worker = lab.nodes[0].ns.clone();
    let scratch = tempfile::tempdir().unwrap();
    let (ok, log, root) = ignite(
        &lab,
        &worker,
        &d.path().join("worker.ign"),
        &scratch.path().join("before"),
        90,
    );
    assert!(ok, "{log}");
    assert!(!root.join("etc/okd-extra").exists());

    // The user's new MachineConfig, then the re-run.
    std::fs::create_dir_all(d.path().join("openshift")).unwrap();
    std::fs::write(
        d.path().join("openshift/99-worker-extra.yaml"),
        "apiVersion: machineconfiguration.openshift.io/v1\n\
         kind: MachineConfig\n\
         metadata:\n  labels:\n    machineconfiguration.openshift.io/role: worker\n  name: 99-worker-extra\n\
         spec:\n  config:\n    ignition:\n      version: 3.2.0\n    storage:\n      files:\n      \
         - path: /etc/okd-extra\n        mode: 420\n        contents:\n          source: data:,extra\n",
    )
    .unwrap();
    okd_ok(d.path(), &["create", "ignition-configs"]);

    // Within a few checks serve says what changed and refuses to mix.
    let curl = |path: &str| {
        let out = lab
            .cmd(&worker, "curl")
            .args(["-sk", "--max-time", "5", "-w", "\n%{http_code}"])
            .arg(format!("https://192.168.120.101:22623{path}"))
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let start = Instant::now();
    loop {
        let log = std::fs::read_to_string(&serve_log).unwrap_or_default();
        if log.contains("changed under serve") {
            assert!(
                log.contains(".openshift_install_state.json (rewritten with other content)"),
                "{log}"
            );
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "serve did not notice the regenerated assets:\n{log}"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    let answer = curl("/config/worker");
    assert!(answer.ends_with("\n503"), "{answer}");
    assert!(answer.contains("restart okd-install serve"), "{answer}");
    let http = lab
        .cmd(&worker, "curl")
        .args([
            "-s",
            "--max-time",
            "5",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
        ])
        .arg("http://192.168.120.101:8080/ignition/worker.ign")
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&http.stdout), "503");

    // Restarted, serve renders the new pools: the real Ignition gets the file.
    restart_serve(&mut lab, d.path(), pid, &[], "serve2.log");
    let (ok, log, root) = ignite(
        &lab,
        &worker,
        &d.path().join("worker.ign"),
        &scratch.path().join("after"),
        90,
    );
    assert!(ok, "{log}");
    assert_eq!(
        std::fs::read_to_string(root.join("etc/okd-extra")).unwrap(),
        "extra"
    );
}
