//! What a `create` run leaves on disk and in its log, against the real binary:
//! modes exact under a permissive umask, no credential in stderr or the log,
//! one run per directory at a time, leftovers of an interrupted run swept,
//! control characters from user files escaped in log lines.

mod common;

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use common::*;

/// Runs okd-install under `umask 000` (through the real shell) with `--dir dir`.
fn okd_umask_000(dir: &Path, args: &[&str]) -> Output {
    Command::new("sh")
        .arg("-c")
        .arg("umask 000 && exec \"$0\" \"$@\"")
        .arg(env!("CARGO_BIN_EXE_okd-install"))
        .args(args)
        .arg("--dir")
        .arg(dir)
        .env_remove("OPENSHIFT_INSTALL_RELEASE_IMAGE_OVERRIDE")
        .output()
        .expect("run okd-install")
}

/// The single-master example's install-config with its `pullSecret` line replaced.
fn install_config_with_pull_secret(pull_secret: &str) -> String {
    let text = std::fs::read_to_string(
        repo().join("examples/baremetal-single-master/install-config.yaml"),
    )
    .unwrap();
    text.lines()
        .map(|l| {
            if l.starts_with("pullSecret:") {
                format!("pullSecret: '{pull_secret}'")
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

#[test]
fn new_dir_is_0750_and_log_0640_under_umask_000() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("new/assets");
    // No install-config: the run fails, but only after its first write (the log).
    let out = okd_umask_000(&dir, &["create", "manifests"]);
    assert!(!out.status.success());
    assert_eq!(mode(&t.path().join("new")), 0o750);
    assert_eq!(mode(&dir), 0o750);
    assert_eq!(mode(&dir.join(".openshift_install.log")), 0o640);
}

#[test]
fn invalid_pull_secret_is_not_echoed_to_stderr_or_log() {
    let secret = "Hunter2-S3cret";
    let auth = "YWRtaW46SHVudGVyMi1TM2NyZXQ="; // base64 of admin:Hunter2-S3cret
    for (i, ps) in [
        // Malformed JSON (a missing closing brace).
        format!(r#"{{"auths":{{"registry.okd.example:5000":{{"auth":"{auth}","password":"{secret}"}}}}"#),
        // Well-formed, but the entry has a password and no auth.
        format!(r#"{{"auths":{{"registry.okd.example:5000":{{"username":"admin","password":"{secret}"}}}}}}"#),
        // No auths at all, the credential elsewhere.
        format!(r#"{{"credHelpers":{{"x":"{secret}"}},"token":"{auth}"}}"#),
    ]
    .iter()
    .enumerate()
    {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("a");
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(
            dir.join("install-config.yaml"),
            install_config_with_pull_secret(ps),
        )
        .unwrap();
        let out = okd_umask_000(&dir, &["create", "manifests", "--log-level", "debug"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "case {i}: {err}");
        assert!(err.contains("pullSecret: Invalid value: "), "case {i}: {err}");
        let log = std::fs::read_to_string(dir.join(".openshift_install.log")).unwrap();
        assert!(log.contains("pullSecret: Invalid value: "), "case {i}: {log}");
        for s in [secret, auth] {
            assert!(!err.contains(s), "case {i}: stderr shows {s}: {err}");
            assert!(!log.contains(s), "case {i}: log shows {s}: {log}");
        }
        assert_eq!(mode(&dir.join(".openshift_install.log")), 0o640);
    }
}

#[test]
fn second_create_fails_at_once_naming_the_holder_and_sweeps_nothing() {
    let d = example_dir("baremetal-single-master");
    let leftover = d.path().join(".okd-install-AbC123");
    std::fs::write(&leftover, b"half").unwrap();
    let original = std::fs::read(d.path().join("install-config.yaml")).unwrap();
    // This test process holds the directory as a running okd-install would.
    let held = okd_fs::DirLock::acquire(d.path()).unwrap();
    let t0 = Instant::now();
    let out = okd(d.path(), &["create", "manifests"]);
    let took = t0.elapsed();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("process {}", std::process::id()))
            && err.contains(".openshift_install.lock"),
        "{err}"
    );
    assert!(
        took < Duration::from_secs(10),
        "waited {took:?} for the lock"
    );
    assert_eq!(
        std::fs::read(d.path().join("install-config.yaml")).unwrap(),
        original,
        "the locked-out run changed install-config.yaml"
    );
    assert!(
        !d.path().join(".openshift_install_state.json").exists(),
        "the locked-out run wrote state"
    );
    assert!(leftover.exists(), "swept while another run holds the lock");
    drop(held);
    // Released: the next run proceeds and sweeps the leftover.
    okd_ok(d.path(), &["create", "manifests"]);
    assert!(!leftover.exists(), "leftover of an interrupted run kept");
}

#[test]
fn leftovers_of_an_interrupted_run_are_swept() {
    let d = example_dir("baremetal-single-master");
    std::fs::create_dir(d.path().join("auth")).unwrap();
    let leftovers = [
        d.path().join(".okd-install-x1Y2z3"),
        d.path().join("auth/.okd-install-kubeconfigQQ"),
    ];
    for p in &leftovers {
        std::fs::write(p, b"partial").unwrap();
    }
    std::fs::write(d.path().join("notes.txt"), b"mine").unwrap();
    okd_ok(d.path(), &["create", "install-config"]);
    for p in &leftovers {
        assert!(!p.exists(), "{} not swept", p.display());
    }
    assert!(d.path().join("notes.txt").exists(), "a user's file removed");
}

/// A fresh directory with the single-master example's install-config,
/// agent-config and bastion-config.
fn single_master_with_hosts() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    for f in [
        "install-config.yaml",
        "agent-config.yaml",
        "bastion-config.yaml",
    ] {
        std::fs::copy(
            repo().join("examples/baremetal-single-master").join(f),
            d.path().join(f),
        )
        .unwrap();
    }
    d
}

#[test]
fn control_characters_from_user_files_are_escaped_in_stderr_and_log() {
    let d = single_master_with_hosts();
    // A key the schema rejects; serde's message repeats it verbatim.
    let mut b = std::fs::read_to_string(d.path().join("bastion-config.yaml")).unwrap();
    b.push_str("\"bogus\\e[2J\\nFORGED-LINE\\r\\u009b\": 1\n");
    std::fs::write(d.path().join("bastion-config.yaml"), b).unwrap();
    let out = okd(d.path(), &["create", "bastion-configs"]);
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    let log = std::fs::read_to_string(d.path().join(".openshift_install.log")).unwrap();
    assert!(
        err.contains("bogus\\u{1b}[2J\\nFORGED-LINE\\r\\u{9b}"),
        "{err}"
    );
    assert!(
        log.contains("bogus\\\\u{1b}[2J\\\\nFORGED-LINE\\\\r\\\\u{9b}"),
        "{log}"
    );
    for (what, text, start) in [("stderr", &err, "level="), ("log", &log, "time=\"")] {
        assert!(
            !text.chars().any(|c| c.is_control() && c != '\n'),
            "{what} holds a raw control character: {text:?}"
        );
        for l in text.lines() {
            assert!(l.starts_with(start), "{what}: forged line {l:?}");
        }
    }
}

/// Issue #26 item 3: `create bastion-configs` owns the per-host files it
/// writes. A MAC replaced in agent-config.yaml (as the example tells users to
/// do with its placeholders) leaves no PXE entry of the old MAC behind, each
/// of which would still install to `/dev/sda`; a file the user put beside
/// them (the kernel of the TFTP root) stays.
#[test]
fn bastion_configs_remove_the_pxe_files_of_a_replaced_mac() {
    let d = common::serve::served_dir();
    okd_ok(d.path(), &["create", "bastion-configs"]);
    let pxe = d.path().join("bastion/pxe");
    let old = [
        "pxelinux.cfg/01-52-54-00-12-01-03",
        "grub.cfg-01-52-54-00-12-01-03",
        "ipxe/52:54:00:12:01:03.ipxe",
    ];
    for f in old {
        let text = std::fs::read_to_string(pxe.join(f)).unwrap_or_else(|e| panic!("{f}: {e}"));
        assert!(
            text.contains("coreos.inst.install_dev=/dev/sda"),
            "{f}: {text}"
        );
    }
    std::fs::write(pxe.join("fedora-coreos-kernel-x86_64"), b"kernel").unwrap();

    let agent = d.path().join("agent-config.yaml");
    let text = std::fs::read_to_string(&agent).unwrap();
    std::fs::write(
        &agent,
        text.replace("52:54:00:12:01:03", "52:54:00:aa:bb:cc"),
    )
    .unwrap();
    let err = okd_ok(d.path(), &["create", "bastion-configs"]);

    for f in old {
        assert!(!pxe.join(f).exists(), "stale {f} left behind");
        assert!(err.contains(f), "removal of {f} not logged: {err}");
    }
    for f in [
        "pxelinux.cfg/01-52-54-00-aa-bb-cc",
        "grub.cfg-01-52-54-00-aa-bb-cc",
        "ipxe/52:54:00:aa:bb:cc.ipxe",
        "ipxe/boot.ipxe",
        // The bootstrap's files are untouched.
        "ipxe/52:54:00:12:01:02.ipxe",
    ] {
        assert!(pxe.join(f).is_file(), "{f} missing");
    }
    assert_eq!(
        std::fs::read(pxe.join("fedora-coreos-kernel-x86_64")).unwrap(),
        b"kernel",
        "a file that is not ours was touched"
    );
}

/// A release given by digest with `--release-version 4.5`: serve's and
/// `create bastion-configs`' idea of the release is the recorded one, so
/// the DNS files carry the etcd records a 4.5 install needs (the pull spec
/// alone names no release).
#[test]
fn bastion_configs_follow_the_recorded_release_of_a_digest() {
    let d = single_master_with_hosts();
    let digest = format!("quay.io/openshift/okd@sha256:{}", "ab".repeat(32));
    okd_ok(
        d.path(),
        &[
            "create",
            "ignition-configs",
            "--release-image",
            &digest,
            "--release-version",
            "4.5",
        ],
    );
    okd_ok(d.path(), &["create", "bastion-configs"]);
    let dnsmasq = std::fs::read_to_string(d.path().join("bastion/dnsmasq/dnsmasq.conf")).unwrap();
    assert!(
        dnsmasq.contains("_etcd-server-ssl._tcp"),
        "no etcd SRV record for a 4.5 release given by digest:\n{dnsmasq}"
    );
}
