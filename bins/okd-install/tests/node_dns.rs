//! A master whose nameserver has no `api-int` record (issue #27), for
//! real: the kit's kube-apiserver on the API address, the user's DNS being
//! Debian's dnsmasq with bastion-configs' dnsmasq.conf less its `api-int`
//! record, and a master host in namespaces of its own running containerd
//! and the kit's kubelet, which joins through the kubeconfig a master
//! gets (`https://api-int.<domain>:6443`) with that dnsmasq as its
//! nameserver. The kubelet fails on the lookup exactly as on a real
//! master; `okd-install preflight` names the missing record before a node
//! boots, and gather's analysis names it from the kubelet's journal in a
//! bundle laid out as installer-masters-gather.sh writes it
//! (`control-plane/<host>/journals/kubelet.log`).

mod common;

use std::time::{Duration, Instant};

use common::kube::{ControlPlane, With, in_ns, tail};
use common::node::{Kubelet, NodeHost};
use common::okd_ok;
use okd_serve_api::preflight::{Outcome, Report};

const BIN: &str = env!("CARGO_BIN_EXE_okd-install");

/// A service record that started and ended well (JSON array, as a bundle
/// holds it).
fn succeeded(at: &str) -> String {
    format!(
        r#"[{{"timestamp":"{at}","phase":"service start"}},{{"timestamp":"{at}","phase":"service end","result":"success"}}]"#
    )
}

#[test]
fn a_master_whose_nameserver_lacks_api_int_is_named_by_preflight_and_gather() {
    if !common::node::available() || !common::netns::available() {
        return;
    }
    let Some(dnsmasq) = common::tool("dnsmasq", &["/usr/sbin/dnsmasq"]) else {
        return;
    };
    let Some(kubelet) = okd_test_utils::kube_tool("kubelet") else {
        return;
    };
    let dir = common::kube::cluster_dir();
    okd_ok(dir.path(), &["create", "bastion-configs"]);
    let scratch = tempfile::tempdir().unwrap();
    let Some(mut cp) = ControlPlane::start(dir.path(), scratch.path(), With::ApiServer) else {
        return;
    };
    let domain = cp.domain.clone();

    // The user's DNS on the API address: everything but api-int.
    let conf = std::fs::read_to_string(dir.path().join("bastion/dnsmasq/dnsmasq.conf"))
        .unwrap()
        .replace(&format!("api-int.{domain},"), "")
        .lines()
        .filter(|l| !l.contains("api-int"))
        .collect::<Vec<_>>()
        .join("\n")
        + "\n";
    assert!(conf.contains(&format!("api.{domain}")), "{conf}");
    let conf_path = scratch.path().join("dnsmasq.conf");
    std::fs::write(&conf_path, conf).unwrap();
    let plane = cp.ns.clone();
    cp.spawn_in(
        &plane,
        "dnsmasq",
        &dnsmasq,
        &[
            "--keep-in-foreground".into(),
            "--log-facility=-".into(),
            format!("--conf-file={}", conf_path.display()),
            format!(
                "--pid-file={}",
                scratch.path().join("dnsmasq.pid").display()
            ),
        ],
    );

    // The master: its kubelet joins with the bootstrap kubeconfig the
    // machine-config server gives every node as /etc/kubernetes/kubeconfig
    // (bootstrap.ign's kubeconfig-kubelet, server api-int), asking the
    // user's DNS.
    let (master_ns, master_ip) = cp.add_node("master", 103);
    let root = scratch.path().join("master-root");
    std::fs::create_dir_all(root.join("etc/kubernetes")).unwrap();
    let kubeconfig =
        std::fs::read_to_string(cp.root.join("opt/openshift/auth/kubeconfig-kubelet")).unwrap();
    assert!(
        kubeconfig.contains(&format!("server: https://api-int.{domain}:6443")),
        "{kubeconfig}"
    );
    std::fs::write(root.join("etc/kubernetes/kubeconfig"), &kubeconfig).unwrap();
    let mut host = NodeHost::start_as(
        &master_ns,
        "master",
        &master_ip,
        "10.88.3.0/24",
        &root,
        &kubelet,
        &[],
        Kubelet::Join,
    );
    host.use_nameserver(&cp.addr);
    // The nameserver answers: api resolves from the host, api-int does not.
    let getent = |name: &str| {
        host.enter("getent")
            .args(["hosts", name])
            .output()
            .unwrap()
            .status
            .success()
    };
    let asked = Instant::now();
    while !getent(&format!("api.{domain}")) {
        assert!(
            asked.elapsed() < Duration::from_secs(20),
            "dnsmasq never answered api.{domain}:\n{}",
            cp.log("dnsmasq")
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    assert!(!getent(&format!("api-int.{domain}")));
    let lookup = format!("lookup api-int.{domain} on {}:53: no such host", cp.addr);
    let started = Instant::now();
    while !host.kubelet_log().contains(&lookup) {
        host.assert_running();
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the kubelet never failed on {lookup:?}:\n{}",
            tail(&host.kubelet_log(), 30)
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    // It never joined: no client certificate, no Node.
    assert!(
        !root
            .join("var/lib/kubelet/pki/kubelet-client-current.pem")
            .exists()
    );
    assert!(
        !cp.admin(&["get", "nodes", "-o", "name"])
            .contains("node/master"),
        "the master joined"
    );

    // preflight, run on the bastion (the API address), names the record
    // missing from the master's nameserver.
    let out = in_ns(&plane, BIN)
        .args(["preflight", "--output", "json", "--dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Report = serde_json::from_slice(&out.stdout).unwrap();
    let check = |id: &str| {
        report
            .checks
            .iter()
            .find(|c| c.id == id)
            .unwrap_or_else(|| panic!("no check {id}: {report:#?}"))
    };
    let api_int = check(&format!("dns.{}.api-int", cp.addr));
    assert_eq!(api_int.result, Outcome::Fail, "{api_int:?}");
    assert!(
        api_int.cause.contains(&format!("api-int.{domain}")),
        "{api_int:?}"
    );
    assert!(api_int.fix.is_some(), "{api_int:?}");
    assert_eq!(check(&format!("dns.{}.api", cp.addr)).result, Outcome::Pass);

    // gather's analysis of a bundle holding that journal: the bootstrap
    // did its part, the master's kubelet names the cause.
    let bundle = scratch.path().join("bundle");
    let top = bundle.join("log-bundle-1");
    std::fs::create_dir_all(top.join("bootstrap/services")).unwrap();
    for unit in ["release-image", "bootkube"] {
        std::fs::write(
            top.join(format!("bootstrap/services/{unit}.json")),
            succeeded("2026-11-27T10:00:00Z"),
        )
        .unwrap();
    }
    let journals = top.join(format!("control-plane/{master_ip}/journals"));
    std::fs::create_dir_all(&journals).unwrap();
    std::fs::write(journals.join("kubelet.log"), host.kubelet_log()).unwrap();
    let tarball = scratch.path().join("log-bundle-1.tar.gz");
    let st = std::process::Command::new("tar")
        .arg("czf")
        .arg(&tarball)
        .arg("-C")
        .arg(&bundle)
        .arg("log-bundle-1")
        .status()
        .unwrap();
    assert!(st.success());
    let (records, journals) = okd_gather::bundle::analysis_files(&tarball).unwrap();
    let findings = okd_gather::analyze::findings_with_journals(&records, &journals);
    let lines: Vec<&str> = findings.iter().map(|(_, l)| l.as_str()).collect();
    assert_eq!(lines.len(), 1, "{lines:#?}");
    assert_eq!(findings[0].0, okd_gather::analyze::Level::Error);
    let expected = format!(
        "The kubelet on {master_ip} cannot resolve api-int.{domain}: its nameserver {}:53 answers \"no such host\"",
        cp.addr
    );
    assert!(lines[0].starts_with(&expected), "{}", lines[0]);
    assert!(lines[0].contains("A record"), "{}", lines[0]);
}
