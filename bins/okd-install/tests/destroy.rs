//! `okd-install destroy bootstrap` (issue #11 item 5) against a real running
//! `okd-install serve` in a network-namespace lab: the bootstrap leaves the
//! load balancer's pools (as `serve status` shows) and the user is told what
//! to power off and which lines of their own daemons' configs to remove.

mod common;

use std::path::Path;

use common::netns::Lab;
use common::serve::*;
use common::*;

const BASTION: &str = "192.168.120.101";

/// `okd-install destroy bootstrap --dir dir`: (exit code, stdout, stderr).
fn destroy(dir: &Path) -> (Option<i32>, String, String) {
    let out = okd(dir, &["destroy", "bootstrap", "--force"]);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The backends of every load-balancer frontend in `serve status`.
fn lb_backends(dir: &Path) -> String {
    let status: okd_serve_api::StatusDocument =
        serde_json::from_str(&control(dir, "status")).unwrap();
    serde_json::to_string(&status.load_balancer).unwrap()
}

#[test]
fn destroy_bootstrap_takes_it_out_of_serve_and_lists_the_rest() {
    let d = served_dir();
    okd_ok(d.path(), &["create", "bastion-configs"]);

    // No cluster to ask whether the bootstrap's etcd member is still
    // needed: refused, naming why and the way out; nothing recorded.
    let out = okd(d.path(), &["destroy", "bootstrap"]);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("the bootstrap's etcd member may still be needed")
            && err.contains("cannot ask the cluster")
            && err.contains("--force"),
        "{err}"
    );
    assert!(
        !d.path()
            .join(okd_serve_api::BOOTSTRAP_REMOVED_FILE)
            .exists()
    );
    let out = okd(d.path(), &["serve", "remove-bootstrap"]);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("etcd member may still be needed"), "{err}");
    assert!(
        !d.path()
            .join(okd_serve_api::BOOTSTRAP_REMOVED_FILE)
            .exists()
    );

    // No serve running: said clearly, the list is still printed, exit 0.
    let (code, out, err) = destroy(d.path());
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.contains(&format!(
            "okd-install serve is not running for {}",
            d.path().display()
        )),
        "{out}"
    );
    assert!(err.contains("level=warning"), "{err}");
    for want in [
        "  host      bootstrap (bootstrap.okd.example)",
        "  MAC       52:54:00:12:01:02 (ens787f0)",
        "  address   192.168.120.102/24",
        "  disk      /dev/sda",
        "server bootstrap 192.168.120.102:6443",
        "server bootstrap 192.168.120.102:22623",
        "echo 'disable server api/bootstrap' | socat stdio /run/haproxy/admin.sock",
        "echo 'disable server machine-config/bootstrap' | socat stdio /run/haproxy/admin.sock",
        "pxe/pxelinux.cfg/01-52-54-00-12-01-02: the PXE boot file of MAC 52:54:00:12:01:02",
        "pxe/ipxe/52:54:00:12:01:02.ipxe",
    ] {
        assert!(out.contains(want), "missing {want:?} in:\n{out}");
    }
    // The DNS records of the bootstrap in each daemon's files, not the master's.
    for daemon in [
        "dnsmasq/dnsmasq.conf:",
        "bind/db.okd.example:",
        "coredns/db.okd.example:",
    ] {
        assert!(
            out.lines()
                .any(|l| l.contains(daemon) && l.contains("192.168.120.102")),
            "no {daemon} line in:\n{out}"
        );
    }
    assert!(
        out.lines()
            .any(|l| l.contains("in-addr.arpa") && l.contains("bootstrap.okd.example")),
        "no reverse record in:\n{out}"
    );
    assert!(
        !out.contains("192.168.120.103"),
        "the master listed:\n{out}"
    );
    assert!(
        !out.contains("52:54:00:12:01:03"),
        "the master listed:\n{out}"
    );

    // The removal is recorded for the next serve (issue #26), until undone.
    let record = d.path().join(".okd-serve-bootstrap-removed");
    assert!(record.is_file(), "destroy bootstrap recorded nothing");
    assert!(out.contains("serve restore-bootstrap"), "{out}");
    let restored = control(d.path(), "restore-bootstrap");
    assert!(restored.contains("undone"), "{restored}");
    assert!(!record.exists());

    // With serve running, the bootstrap is in its pools, then gone.
    if !common::netns::available() {
        return;
    }
    let prefix = format!("de{}", std::process::id() % 100000);
    let mut lab = Lab::new(
        &prefix,
        BASTION,
        &[
            ("bootstrap", "192.168.120.102"),
            ("master", "192.168.120.103"),
        ],
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
    let before = lb_backends(d.path());
    assert!(before.contains("\"bootstrap\""), "{before}");

    let (code, out, err) = destroy(d.path());
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.contains("removed backend bootstrap from frontends api, machine-config"),
        "{out}"
    );
    assert!(out.contains("bootstrap.ign is no longer served"), "{out}");
    assert!(!out.contains("is not running"), "{out}");
    let after = lb_backends(d.path());
    assert!(
        !after.contains("\"bootstrap\""),
        "bootstrap still a backend: {after}"
    );
    assert!(after.contains("\"master\""), "{after}");
    assert!(record.is_file(), "the running serve recorded no removal");

    // Again: nothing left to remove, still exit 0.
    let (code, out, _) = destroy(d.path());
    assert_eq!(code, Some(0));
    assert!(
        out.contains("backend bootstrap was already removed"),
        "{out}"
    );
    drop(lab);
}

#[test]
fn destroy_bootstrap_refuses_other_platforms_and_needs_metadata() {
    let d = tempfile::tempdir().unwrap();
    let (code, _, err) = destroy(d.path());
    assert_eq!(code, Some(1));
    assert!(
        err.contains(&format!(
            "metadata.json: run `okd-install create ignition-configs --dir {}` first",
            d.path().display()
        )),
        "{err}"
    );
    std::fs::write(
        d.path().join("metadata.json"),
        r#"{"clusterName":"okd","clusterID":"x","infraID":"okd-x","aws":{"region":"us-east-1"}}"#,
    )
    .unwrap();
    let (code, _, err) = destroy(d.path());
    assert_eq!(code, Some(1));
    assert!(
        err.contains("metadata.json names platform aws: okd-install destroy bootstrap handles platform none and baremetal only"),
        "{err}"
    );
    // Platform none without hosts files: generic advice, exit 0.
    std::fs::write(
        d.path().join("metadata.json"),
        r#"{"clusterName":"okd","clusterID":"x","infraID":"okd-x"}"#,
    )
    .unwrap();
    let (code, out, err) = destroy(d.path());
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.contains("okd-install does not know your hosts"),
        "{out}"
    );
}
