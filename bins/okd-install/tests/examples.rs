//! The main job on every real example, checked with the real programs:
//! `ignition-validate`, Ignition itself applying bootstrap.ign into a root,
//! `openssl verify` on every certificate, `kubectl config view` on the kubeconfig.

mod common;

use std::path::Path;
use std::process::Command;

use common::*;

/// Everything `create ignition-configs` must leave in the directory.
fn assert_ignition_outputs(dir: &Path) {
    let t = tree(dir);
    for f in [
        "auth/",
        "auth/kubeadmin-password",
        "auth/kubeconfig",
        "bootstrap.ign",
        "master.ign",
        "worker.ign",
        "metadata.json",
        ".openshift_install_state.json",
    ] {
        assert!(t.contains(&f.to_string()), "{f} missing in {t:?}");
    }
    assert!(
        !t.iter().any(|f| f.starts_with("manifests")
            || f.starts_with("openshift")
            || f == "install-config.yaml"),
        "inputs not consumed: {t:?}"
    );
    for f in [
        "auth/kubeadmin-password",
        "auth/kubeconfig",
        "bootstrap.ign",
        "master.ign",
        "worker.ign",
        "metadata.json",
        ".openshift_install_state.json",
    ] {
        assert_eq!(mode(&dir.join(f)), 0o640, "{f}");
    }
    assert_eq!(mode(&dir.join("auth")), 0o750);
    let pw = std::fs::read_to_string(dir.join("auth/kubeadmin-password")).unwrap();
    assert_eq!(pw.len(), 23);
    assert_eq!([&pw[5..6], &pw[11..12], &pw[17..18]], ["-", "-", "-"]);
}

fn ignition_validate(dir: &Path) {
    let Some(v) = tool("ignition-validate", &[]) else {
        return;
    };
    for f in ["bootstrap.ign", "master.ign", "worker.ign"] {
        let out = Command::new(&v).arg(dir.join(f)).output().unwrap();
        assert!(
            out.status.success(),
            "ignition-validate {f}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            out.stderr.is_empty() && out.stdout.is_empty(),
            "ignition-validate warned on {f}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// Applies bootstrap.ign with the real Ignition (platform `file`, stages
/// fetch-offline then files) into a scratch root (coreos/ignition
/// `-platform=file`), then checks
/// that every storage file landed with its mode, every unit and dropin exists,
/// and the core user got both SSH keys.
fn ignition_apply(dir: &Path) {
    let Some(ign) = tool(
        "ignition",
        &["/usr/lib/dracut/modules.d/30ignition/ignition"],
    ) else {
        return;
    };
    let scratch = tempfile::tempdir().unwrap();
    let (root, run, stub) = ignition_root(scratch.path());
    let cache = run.join("ignition.json");
    let path = format!(
        "{}:{}",
        stub.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    for (stage, extra) in [
        (
            "fetch-offline",
            vec![format!("-neednet={}", run.join("neednet").display())],
        ),
        ("files", vec![format!("-root={}", root.display())]),
    ] {
        let out = Command::new("timeout")
            .arg("120")
            .arg(&ign)
            .args([
                "-platform=file",
                &format!("-stage={stage}"),
                "-log-to-stdout",
            ])
            .arg(format!("-config-cache={}", cache.display()))
            .arg(format!("-state-file={}", run.join("state").display()))
            .args(&extra)
            .env("IGNITION_CONFIG_FILE", dir.join("bootstrap.ign"))
            .env("PATH", &path)
            .output()
            .unwrap();
        let log = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && log.contains("Ignition finished successfully"),
            "ignition {stage} failed:\n{log}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let cfg = read_ign(&dir.join("bootstrap.ign"));
    let files = ign_files(&cfg);
    assert!(files.len() > 90, "only {} files", files.len());
    for (p, (m, data, append)) in &files {
        let landed = root.join(p.trim_start_matches('/'));
        assert!(landed.is_file(), "{p} did not land");
        assert_eq!(mode(&landed), *m, "mode of {p}");
        let on_disk = std::fs::read(&landed).unwrap();
        if *append {
            assert!(on_disk.ends_with(data), "{p} append");
        } else {
            assert_eq!(&on_disk, data, "contents of {p}");
        }
    }
    for u in cfg
        .pointer("/systemd/units")
        .and_then(|u| u.as_array())
        .unwrap()
    {
        let name = u["name"].as_str().unwrap();
        // Ignition writes a unit file only for non-empty contents ("" only sets the preset).
        if u.get("contents")
            .and_then(|c| c.as_str())
            .is_some_and(|c| !c.is_empty())
        {
            assert!(
                root.join("etc/systemd/system").join(name).exists(),
                "unit {name}"
            );
        }
        for d in u
            .get("dropins")
            .and_then(|d| d.as_array())
            .into_iter()
            .flatten()
        {
            assert!(
                root.join(format!(
                    "etc/systemd/system/{name}.d/{}",
                    d["name"].as_str().unwrap()
                ))
                .exists()
            );
        }
    }
    let keys =
        std::fs::read_to_string(root.join("home/core/.ssh/authorized_keys.d/ignition")).unwrap();
    assert!(
        keys.contains("ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAACAQD1zXmIde90FOxXQ"),
        "user key"
    );
    assert_eq!(
        keys.matches("ssh-rsa ").count(),
        2,
        "user key + bootstrap key: {keys}"
    );
}

/// Every certificate in bootstrap.ign's tls/ and in auth/kubeconfig verifies
/// against the signers (the self-signed CAs) with `openssl verify`.
fn openssl_verify(dir: &Path) {
    let Some(openssl) = tool("openssl", &[]) else {
        return;
    };
    let cfg = read_ign(&dir.join("bootstrap.ign"));
    let scratch = tempfile::tempdir().unwrap();
    let mut cas = String::new();
    let mut leaves = Vec::new();
    for (p, (_, data, _)) in ign_files(&cfg) {
        if !(p.starts_with("/opt/openshift/tls/") && p.ends_with(".crt")) {
            continue;
        }
        let text = String::from_utf8(data).unwrap();
        if p.contains("bundle") {
            // CA bundles hold signers whose own files are not in bootstrap.ign
            // (admin-kubeconfig-signer, kubelet-bootstrap-kubeconfig-signer).
            cas.push_str(&text);
            continue;
        }
        let first = text
            .split_inclusive("-----END CERTIFICATE-----\n")
            .next()
            .unwrap()
            .to_string();
        let f = scratch.path().join(p.rsplit('/').next().unwrap());
        std::fs::write(&f, &first).unwrap();
        let subj = Command::new(&openssl)
            .args([
                "x509", "-noout", "-subject", "-issuer", "-nameopt", "RFC2253", "-in",
            ])
            .arg(&f)
            .output()
            .unwrap();
        let s = String::from_utf8_lossy(&subj.stdout);
        let mut it = s.lines();
        let (subject, issuer) = (
            it.next().unwrap().trim_start_matches("subject="),
            it.next().unwrap().trim_start_matches("issuer="),
        );
        if subject == issuer {
            cas.push_str(&first);
        }
        leaves.push(f);
    }
    let kc: serde_json::Value =
        serde_yaml_ng::from_slice(&std::fs::read(dir.join("auth/kubeconfig")).unwrap()).unwrap();
    let client = decode_b64(
        kc["users"][0]["user"]["client-certificate-data"]
            .as_str()
            .unwrap(),
    );
    let kcf = scratch.path().join("kubeconfig-client.crt");
    std::fs::write(&kcf, client).unwrap();
    leaves.push(kcf);
    let ca_file = scratch.path().join("signers.pem");
    std::fs::write(&ca_file, cas).unwrap();
    let out = Command::new(&openssl)
        .arg("verify")
        .arg("-CAfile")
        .arg(&ca_file)
        .args(&leaves)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "openssl verify: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(text.matches(": OK").count(), leaves.len(), "{text}");
    assert!(
        leaves.len() >= 22,
        "{} certificates (21 leaf and signer files in tls/ plus the kubeconfig client)",
        leaves.len()
    );
}

fn decode_b64(s: &str) -> Vec<u8> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.decode(s).unwrap()
}

fn kubectl_view(dir: &Path, server: &str) {
    let Some(kubectl) = tool("kubectl", &[]) else {
        return;
    };
    let out = Command::new(kubectl)
        .args(["config", "view", "--kubeconfig"])
        .arg(dir.join("auth/kubeconfig"))
        .args(["-o", "json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "kubectl: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["current-context"], "admin");
    assert_eq!(v["clusters"][0]["cluster"]["server"], server);
    assert_eq!(v["users"][0]["name"], "admin");
}

fn check_all(dir: &Path, server: &str, spec: &str) {
    assert_ignition_outputs(dir);
    for f in ["bootstrap.ign", "master.ign", "worker.ign"] {
        assert_eq!(read_ign(&dir.join(f))["ignition"]["version"], spec, "{f}");
    }
    ignition_validate(dir);
    ignition_apply(dir);
    openssl_verify(dir);
    kubectl_view(dir, server);
}

fn both_paths(example: &str, release: Option<&str>, server: &str, spec: &str) {
    let mut extra: Vec<&str> = Vec::new();
    if let Some(r) = release {
        extra.extend(["--release-image", r]);
    }
    // create manifests, then create ignition-configs
    let d = example_dir(example);
    let err = okd_ok(
        d.path(),
        &[&["create", "manifests"], extra.as_slice()].concat(),
    );
    assert!(
        err.contains("Consuming Install Config from target directory"),
        "{err}"
    );
    assert!(err.contains("Manifests created in:"), "{err}");
    let err = okd_ok(
        d.path(),
        &[&["create", "ignition-configs"], extra.as_slice()].concat(),
    );
    assert!(
        err.contains("Consuming Common Manifests from target directory"),
        "{err}"
    );
    assert!(err.contains("Ignition-Configs created in:"), "{err}");
    check_all(d.path(), server, spec);
    // create ignition-configs straight from the install-config
    let d = example_dir(example);
    okd_ok(
        d.path(),
        &[&["create", "ignition-configs"], extra.as_slice()].concat(),
    );
    check_all(d.path(), server, spec);
}

#[test]
fn baremetal_single_master_default_release() {
    both_paths(
        "baremetal-single-master",
        None,
        "https://api.okd.example:6443",
        "3.2.0",
    );
}

#[test]
fn baremetal_single_master_okd_45_writes_spec_3_0() {
    both_paths(
        "baremetal-single-master",
        Some(OKD_45),
        "https://api.okd.example:6443",
        "3.0.0",
    );
}

#[test]
fn baremetal_ha_default_release() {
    both_paths(
        "baremetal-ha",
        None,
        "https://api.ocp.lab.example:6443",
        "3.2.0",
    );
}

#[test]
fn aws_upi_okd_45() {
    both_paths(
        "aws-upi",
        Some(OKD_45),
        "https://api.okd45.example.com:6443",
        "3.0.0",
    );
}

#[test]
fn aws_upi_on_413_has_machine_manifests_only_when_asked() {
    // By default none: the AWS UPI procedure removes them, and the
    // CloudFormation stacks make the machines.
    let d = example_dir("aws-upi");
    let out = okd_ok(
        d.path(),
        &["create", "manifests", "--release-image", OCP_413],
    );
    let t = tree(d.path());
    assert!(
        !t.iter().any(|f| f.contains("master-machines-")
            || f.contains("machineset-")
            || f.contains("control-plane-machine-set")),
        "{t:?}"
    );
    assert!(
        t.contains(&"openshift/99_openshift-cluster-api_master-user-data-secret.yaml".to_string()),
        "{t:?}"
    );
    assert!(
        out.contains("Machine"),
        "the left-out manifests are named: {out}"
    );
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
    let t = tree(d.path());
    for f in [
        "openshift/99_openshift-cluster-api_master-machines-0.yaml",
        "openshift/99_openshift-cluster-api_master-machines-2.yaml",
        "openshift/99_openshift-cluster-api_worker-machineset-0.yaml",
        "openshift/99_openshift-machine-api_master-control-plane-machine-set.yaml",
    ] {
        assert!(t.contains(&f.to_string()), "{f} missing: {t:?}");
    }
}

#[test]
fn single_master_install_config_warns_about_expired_trust_bundle() {
    let d = example_dir("baremetal-single-master");
    let err = okd_ok(d.path(), &["create", "install-config"]);
    assert!(
        err.contains("level=warning") && err.to_lowercase().contains("expired"),
        "{err}"
    );
    // create install-config rewrites the normalized config and keeps it.
    let text = std::fs::read_to_string(d.path().join("install-config.yaml")).unwrap();
    assert!(
        text.contains("additionalTrustBundlePolicy: Proxyonly")
            && text.contains("architecture: amd64"),
        "{text}"
    );
    // Re-running is idempotent.
    okd_ok(d.path(), &["create", "install-config"]);
    assert_eq!(
        std::fs::read_to_string(d.path().join("install-config.yaml")).unwrap(),
        text
    );
}

#[test]
fn non_interactive_create_install_config() {
    let d = tempfile::tempdir().unwrap();
    let ps = d.path().join("ps.json");
    std::fs::write(
        &ps,
        r#"{"auths":{"registry.okd.example:5000":{"auth":"YWRtaW46YWRtaW4="}}}"#,
    )
    .unwrap();
    let dir = d.path().join("w");
    let out = okd(
        &dir,
        &[
            "create",
            "install-config",
            "--platform",
            "none",
            "--base-domain",
            "example",
            "--cluster-name",
            "okd",
            "--pull-secret-file",
            ps.to_str().unwrap(),
            "--compute-replicas",
            "0",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(dir.join("install-config.yaml")).unwrap();
    assert!(
        text.contains("name: okd") && text.contains("none: {}"),
        "{text}"
    );
    assert_eq!(mode(&dir.join("install-config.yaml")), 0o640);
    okd_ok(&dir, &["create", "ignition-configs"]);
    assert_ignition_outputs(&dir);
}
