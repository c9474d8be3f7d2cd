//! The asset-store behaviour users rely on: consumption, edits between steps,
//! idempotent re-runs, bad input that changes nothing, expired certificates.

mod common;

use std::path::Path;

use common::*;

fn bootstrap_file(dir: &Path, path: &str) -> Option<Vec<u8>> {
    ign_files(&read_ign(&dir.join("bootstrap.ign")))
        .remove(path)
        .map(|(_, d, _)| d)
}

#[test]
fn edited_scheduler_manifest_reaches_bootstrap_ign() {
    let d = example_dir("baremetal-single-master");
    okd_ok(d.path(), &["create", "manifests"]);
    let p = d.path().join("manifests/cluster-scheduler-02-config.yml");
    let text = std::fs::read_to_string(&p).unwrap();
    assert!(text.contains("mastersSchedulable: true"), "{text}");
    std::fs::write(
        &p,
        text.replace("mastersSchedulable: true", "mastersSchedulable: false"),
    )
    .unwrap();
    let err = okd_ok(d.path(), &["create", "ignition-configs"]);
    assert!(
        err.contains("Consuming Common Manifests from target directory"),
        "{err}"
    );
    let got = String::from_utf8(
        bootstrap_file(
            d.path(),
            "/opt/openshift/manifests/cluster-scheduler-02-config.yml",
        )
        .unwrap(),
    )
    .unwrap();
    assert!(got.contains("mastersSchedulable: false"), "{got}");
}

#[test]
fn extra_user_manifest_is_embedded() {
    let d = example_dir("baremetal-ha");
    okd_ok(d.path(), &["create", "manifests"]);
    let extra = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: my-extra\n  namespace: openshift-config\ndata:\n  a: b\n";
    std::fs::write(d.path().join("openshift/99-my-extra.yaml"), extra).unwrap();
    okd_ok(d.path(), &["create", "ignition-configs"]);
    assert_eq!(
        bootstrap_file(d.path(), "/opt/openshift/openshift/99-my-extra.yaml").unwrap(),
        extra.as_bytes()
    );
    let cvo = String::from_utf8(
        bootstrap_file(d.path(), "/opt/openshift/manifests/cvo-overrides.yaml").unwrap(),
    )
    .unwrap();
    assert!(
        cvo.contains("name: my-extra"),
        "CVO override for the user manifest: {cvo}"
    );
}

#[test]
fn deleted_machine_manifests_leave_bootstrap_ign() {
    let d = example_dir("aws-upi");
    okd_ok(
        d.path(),
        &[
            "create",
            "manifests",
            "--release-image",
            OCP_413,
            "--with-machine-api",
        ],
    );
    let mut removed = Vec::new();
    for e in std::fs::read_dir(d.path().join("openshift")).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        if name.starts_with("99_openshift-cluster-api_master-machines-")
            || name.starts_with("99_openshift-cluster-api_worker-machineset-")
        {
            std::fs::remove_file(d.path().join("openshift").join(&name)).unwrap();
            removed.push(name);
        }
    }
    assert!(removed.len() >= 4, "{removed:?}");
    okd_ok(
        d.path(),
        &["create", "ignition-configs", "--release-image", OCP_413],
    );
    let files = ign_files(&read_ign(&d.path().join("bootstrap.ign")));
    for r in &removed {
        assert!(
            !files.contains_key(&format!("/opt/openshift/openshift/{r}")),
            "{r} still in bootstrap.ign"
        );
    }
    assert!(files.contains_key(
        "/opt/openshift/openshift/99_openshift-cluster-api_master-user-data-secret.yaml"
    ));
    let cvo = String::from_utf8(
        files["/opt/openshift/manifests/cvo-overrides.yaml"]
            .1
            .clone(),
    )
    .unwrap();
    assert!(
        !cvo.contains("-master-0\n"),
        "no override for a deleted Machine: {cvo}"
    );
}

#[test]
fn rerun_is_idempotent_and_state_is_reused() {
    let d = example_dir("baremetal-single-master");
    okd_ok(d.path(), &["create", "ignition-configs"]);
    let before: Vec<Vec<u8>> = [
        "bootstrap.ign",
        "master.ign",
        "auth/kubeconfig",
        "metadata.json",
        "auth/kubeadmin-password",
    ]
    .iter()
    .map(|f| std::fs::read(d.path().join(f)).unwrap())
    .collect();
    let err = okd_ok(
        d.path(),
        &["create", "ignition-configs", "--log-level", "debug"],
    );
    assert!(
        err.contains("On-disk Bootstrap Ignition Config matches asset in state file")
            || err.contains("Reusing previously-fetched"),
        "{err}"
    );
    let after: Vec<Vec<u8>> = [
        "bootstrap.ign",
        "master.ign",
        "auth/kubeconfig",
        "metadata.json",
        "auth/kubeadmin-password",
    ]
    .iter()
    .map(|f| std::fs::read(d.path().join(f)).unwrap())
    .collect();
    assert_eq!(before, after);
    let log = std::fs::read_to_string(d.path().join(".openshift_install.log")).unwrap();
    // The graph is logged at debug level, indented by depth as openshift-install does.
    assert!(
        log.lines().any(|l| l.contains("level=debug msg=\"")
            && l.trim_end().ends_with("Generating Root CA...\"")),
        "log file at debug level"
    );
    assert_eq!(mode(&d.path().join(".openshift_install.log")), 0o640);
}

#[test]
fn manifests_step_consumes_install_config_only() {
    let d = example_dir("baremetal-ha");
    std::fs::write(d.path().join("notes.txt"), "mine").unwrap();
    okd_ok(d.path(), &["create", "manifests"]);
    let t = tree(d.path());
    assert!(!t.contains(&"install-config.yaml".to_string()));
    assert!(
        t.contains(&"notes.txt".to_string()),
        "a user's file is never deleted"
    );
    assert_eq!(mode(&d.path().join("manifests")), 0o750);
    assert_eq!(mode(&d.path().join("manifests/cluster-config.yaml")), 0o640);
    let cc = std::fs::read_to_string(d.path().join("manifests/cluster-config.yaml")).unwrap();
    assert!(
        cc.contains("pullSecret: \"\""),
        "pull secret redacted: {cc}"
    );
}

#[test]
fn bad_install_configs_change_nothing() {
    let bad = repo().join("crates/common/installconfig/tests/bad");
    let mut names: Vec<_> = std::fs::read_dir(&bad)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    names.sort();
    assert!(names.len() >= 45, "only {} bad inputs", names.len());
    for p in names {
        let expect = std::fs::read_to_string(p.with_extension("expect")).unwrap();
        let expect = expect.trim_end_matches('\n');
        let stem = p.file_stem().unwrap().to_string_lossy().into_owned();
        let d = tempfile::tempdir().unwrap();
        let original = std::fs::read(&p).unwrap();
        std::fs::write(d.path().join("install-config.yaml"), &original).unwrap();
        let mut args = vec!["create", "manifests"];
        if stem.contains("-t413") {
            args.extend(["--release-image", OCP_413]);
        } else if stem.contains("-t414") {
            args.extend(["--release-image", OCP_414]);
        }
        let out = okd(d.path(), &args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{stem}: accepted\n{err}");
        assert!(
            err.contains(expect),
            "{stem}: error does not say {expect:?}:\n{err}"
        );
        assert!(
            err.contains("install-config.yaml"),
            "{stem}: error does not name the file:\n{err}"
        );
        assert_eq!(
            std::fs::read(d.path().join("install-config.yaml")).unwrap(),
            original,
            "{stem}: install-config.yaml changed"
        );
        let t = tree(d.path());
        assert_eq!(
            t,
            vec![
                ".openshift_install.lock".to_string(),
                ".openshift_install.log".to_string(),
                "install-config.yaml".to_string()
            ],
            "{stem}: wrote output"
        );
    }
}

#[test]
fn expired_bootstrap_certificates_are_an_error() {
    use base64::Engine as _;
    let d = example_dir("baremetal-single-master");
    okd_ok(d.path(), &["create", "ignition-configs"]);
    // Replace one TLS file with a certificate that expired a day ago.
    let key = okd_pki::RsaKey::generate().unwrap();
    let cfg = ca_config("kubelet-signer", std::time::Duration::from_secs(24 * 3600));
    let old = okd_pki::self_signed(
        &cfg,
        key,
        time::OffsetDateTime::now_utc() - time::Duration::days(2),
    )
    .unwrap();
    let mut ign = read_ign(&d.path().join("bootstrap.ign"));
    for f in ign["storage"]["files"].as_array_mut().unwrap() {
        if f["path"] == "/opt/openshift/tls/kubelet-signer.crt" {
            f["contents"]["source"] = format!(
                "data:text/plain;charset=utf-8;base64,{}",
                base64::engine::general_purpose::STANDARD.encode(&old.cert.pem)
            )
            .into();
        }
    }
    std::fs::write(
        d.path().join("bootstrap.ign"),
        serde_json::to_vec(&ign).unwrap(),
    )
    .unwrap();
    let out = okd(d.path(), &["create", "ignition-configs"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("Bootstrap Ignition-Config Certificate kubelet-signer.crt expired at"),
        "{err}"
    );
    assert!(
        err.contains("Please regenerate ignition configuration files in a new directory."),
        "{err}"
    );
}

/// bootstrap.ign carries the inventory's masters and workers for the
/// bootstrap's approve-csr (`/opt/openshift/okd-node-identities.json`, not
/// the bootstrap host); a host renamed in agent-config.yaml makes it again,
/// with openshift-install's warning, and a rerun without a change keeps it.
#[test]
fn node_identities_follow_the_inventory() {
    let d = common::example_dir("baremetal-single-master");
    let ex = common::repo().join("examples/baremetal-single-master");
    for f in ["agent-config.yaml", "bastion-config.yaml"] {
        std::fs::copy(ex.join(f), d.path().join(f)).unwrap();
    }
    let ids = |dir: &Path| -> serde_json::Value {
        let bytes = bootstrap_file(dir, "/opt/openshift/okd-node-identities.json")
            .expect("bootstrap.ign carries the node identities");
        serde_json::from_slice(&bytes).unwrap()
    };
    common::okd_ok(d.path(), &["create", "ignition-configs"]);
    let first = ids(d.path());
    let names: Vec<&str> = first["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["names"][0].as_str().unwrap())
        .collect();
    assert_eq!(names, ["master", "worker1"]);
    assert_eq!(first["nodes"][0]["addresses"][0], "192.168.120.103");
    let agent = d.path().join("agent-config.yaml");
    let text = std::fs::read_to_string(&agent).unwrap();
    std::fs::write(
        &agent,
        text.replace("hostname: worker1", "hostname: worker9"),
    )
    .unwrap();
    let out = common::okd(d.path(), &["create", "ignition-configs"]);
    assert!(out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("Discarding the Bootstrap Ignition Config"),
        "{said}"
    );
    assert_eq!(ids(d.path())["nodes"][1]["names"][0], "worker9");
    let before = std::fs::read(d.path().join("bootstrap.ign")).unwrap();
    common::okd_ok(d.path(), &["create", "ignition-configs"]);
    assert_eq!(
        std::fs::read(d.path().join("bootstrap.ign")).unwrap(),
        before
    );
}
