//! `okd-install mirror registry init` on the single-master example: the
//! login lands in pullSecret, the CA in additionalTrustBundle, and
//! `create manifests` carries the CA into the user-ca-bundle ConfigMap.

mod common;
mod mirror_support;

use std::path::Path;

use base64::Engine as _;
use common::{example_dir, okd, okd_ok};
use mirror_support::{assert_fails_with, registry_init};
use serde_yaml_ng::Value as Yaml;

fn read_yaml(p: &Path) -> Yaml {
    serde_yaml_ng::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// The base64 body of a PEM certificate, without line breaks.
fn body(pem: &str) -> String {
    pem.lines()
        .map(str::trim)
        .filter(|l| !l.starts_with("-----"))
        .collect()
}

#[test]
fn init_updates_install_config_and_manifests_carry_the_ca() {
    let d = example_dir("baremetal-single-master");
    let dir = d.path();
    let original = read_yaml(&dir.join("install-config.yaml"));
    let old_bundle = original["additionalTrustBundle"]
        .as_str()
        .unwrap()
        .to_string();
    let pw = dir.join("password");
    std::fs::write(&pw, "s3cret\n").unwrap();
    let err = okd_ok(
        dir,
        &[
            &registry_init("registry.okd.example", "192.168.120.101")[..],
            &[
                "--port",
                "5000",
                "--username",
                "okd",
                "--password-file",
                pw.to_str().unwrap(),
            ],
        ]
        .concat(),
    );
    assert!(
        err.contains("level=info msg=Added registry.okd.example:5000 to pullSecret"),
        "{err}"
    );
    let reg = dir.join("mirror-registry");
    let ca = std::fs::read_to_string(reg.join("ca.crt")).unwrap();

    let text = std::fs::read_to_string(dir.join("install-config.yaml")).unwrap();
    assert!(
        text.contains("# cluster name"),
        "comments are kept:\n{text}"
    );
    let ic: Yaml = serde_yaml_ng::from_str(&text).unwrap();
    let bundle = ic["additionalTrustBundle"].as_str().unwrap();
    assert!(bundle.contains(old_bundle.trim_end()), "old CA kept");
    assert!(bundle.contains(ca.trim_end()), "new CA added");
    assert!(
        ic.get("additionalTrustBundlePolicy").is_none(),
        "policy left to its default"
    );
    let ps: serde_json::Value = serde_json::from_str(ic["pullSecret"].as_str().unwrap()).unwrap();
    assert_eq!(
        ps["auths"]["registry.okd.example:5000"]["auth"],
        base64::engine::general_purpose::STANDARD.encode("okd:s3cret")
    );
    let file_ps: serde_json::Value =
        serde_json::from_slice(&std::fs::read(reg.join("pull-secret.json")).unwrap()).unwrap();
    assert_eq!(file_ps, ps);
    for k in [
        "metadata",
        "networking",
        "imageContentSources",
        "sshKey",
        "platform",
    ] {
        assert_eq!(ic[k], original[k], "{k} unchanged");
    }

    // Running it again keeps the CA: the bundle does not grow.
    okd_ok(
        dir,
        &[
            &registry_init("registry.okd.example", "192.168.120.101")[..],
            &["--password-file", pw.to_str().unwrap()],
        ]
        .concat(),
    );
    let again = read_yaml(&dir.join("install-config.yaml"));
    assert_eq!(again["additionalTrustBundle"].as_str().unwrap(), bundle);

    okd_ok(dir, &["create", "manifests"]);
    let mut found = Vec::new();
    for sub in ["manifests", "openshift"] {
        for e in std::fs::read_dir(dir.join(sub)).unwrap() {
            let p = e.unwrap().path();
            let t = std::fs::read_to_string(&p).unwrap();
            if t.contains("name: user-ca-bundle") && t.contains("kind: ConfigMap") {
                found.push(p);
            }
        }
    }
    assert_eq!(found.len(), 1, "one user-ca-bundle ConfigMap: {found:?}");
    let cm = read_yaml(&found[0]);
    let data = cm["data"]["ca-bundle.crt"].as_str().unwrap();
    assert!(
        body(data).contains(&body(&ca)),
        "ConfigMap holds the mirror CA"
    );
    assert!(body(data).contains(&body(&old_bundle)), "and the old one");
}

#[test]
fn bad_options_fail_without_writing() {
    let d = example_dir("baremetal-single-master");
    let before = std::fs::read_to_string(d.path().join("install-config.yaml")).unwrap();
    let out = okd(
        d.path(),
        &[
            "mirror",
            "registry",
            "init",
            "--hostname",
            "bad_name",
            "--port",
            "5000",
        ],
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("level=error") && err.contains("bad_name"),
        "{err}"
    );
    let after = std::fs::read_to_string(d.path().join("install-config.yaml")).unwrap();
    assert_eq!(before, after);
    assert!(!d.path().join("mirror-registry").exists());
}

#[test]
fn install_config_that_would_not_validate_exits_3_untouched() {
    let d = example_dir("baremetal-single-master");
    let ic = d.path().join("install-config.yaml");
    let broken = std::fs::read_to_string(&ic)
        .unwrap()
        .replace("  name: okd ", "  name: NOT_A_DNS_NAME ");
    std::fs::write(&ic, &broken).unwrap();
    let out = okd(
        d.path(),
        &[
            "mirror",
            "registry",
            "init",
            "--hostname",
            "registry.okd.example",
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains("refusing to write install-config.yaml") && err.contains("metadata.name"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&ic).unwrap(), broken);
    assert!(!d.path().join("mirror-registry").exists());
}

/// `mirror registry stop` signals only the registry it started: a PID file
/// naming another process (a `sleep`, or an impostor whose command line
/// says `serve <config.yml>`) is refused with what that process is, and
/// the process lives on.
#[test]
fn registry_stop_refuses_a_pid_that_is_not_the_registry() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    okd_ok(dir, &registry_init("localhost", "127.0.0.1"));
    let reg = dir.join("mirror-registry");
    let config = reg.join("config.yml");
    let python = okd_test_utils::tool("python3", &[], Some("python3"));
    let mut impostors = vec![(
        "sleep 300".to_string(),
        std::process::Command::new("sleep")
            .arg("300")
            .spawn()
            .unwrap(),
    )];
    if let Some(py) = python {
        let child = std::process::Command::new(py)
            .args(["-c", "import time; time.sleep(300)", "serve"])
            .arg(&config)
            .spawn()
            .unwrap();
        impostors.push((format!("serve {}", config.display()), child));
    }
    for (cmdline, child) in impostors {
        let mut guard = okd_test_utils::ChildGuard(child);
        let pid = guard.0.id();
        std::fs::write(reg.join("registry.pid"), format!("{pid}\n")).unwrap();
        let out = okd(dir, &["mirror", "registry", "stop"]);
        let err = assert_fails_with(&out, &format!("refusing to stop PID {pid} of "));
        assert!(
            err.contains(&cmdline)
                && err.contains(&format!("not docker-registry serving {}", config.display())),
            "{err}"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
        assert!(
            guard.0.try_wait().unwrap().is_none(),
            "{cmdline} must survive: {err}"
        );
        assert!(reg.join("registry.pid").exists(), "the PID file is kept");
    }
}
