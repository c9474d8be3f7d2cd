//! The README followed as a new user would (issue #25): a failing command
//! consumes nothing, the release given on the command line is never
//! ignored, unsupported platforms and contradicting flags are refused,
//! release-independent commands ignore a release they cannot parse, the
//! disconnected flow warns about a release it did not mirror, and errors
//! say each cause once and which command makes a missing file.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::*;
use serde_json::Value;

fn spec(dir: &Path, file: &str) -> String {
    read_ign(&dir.join(file))["ignition"]["version"]
        .as_str()
        .unwrap()
        .to_string()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Finding 1: `create single-node-ignition-config` without
/// `bootstrapInPlace` fails and keeps install-config.yaml, writing no state.
#[test]
fn failed_command_keeps_its_input() {
    let d = example_dir("baremetal-single-master");
    let before = std::fs::read(d.path().join("install-config.yaml")).unwrap();
    let out = okd(d.path(), &["create", "single-node-ignition-config"]);
    let err = stderr(&out);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("bootstrapInPlace is required"), "{err}");
    assert!(!err.contains("Consuming"), "{err}");
    assert_eq!(
        std::fs::read(d.path().join("install-config.yaml")).unwrap(),
        before
    );
    assert_eq!(
        tree(d.path()),
        [
            ".openshift_install.lock",
            ".openshift_install.log",
            "install-config.yaml"
        ]
    );
}

/// Finding 2: the README's two-step flow with the release given at the
/// second step writes that release's Ignition spec; `--ignition-spec` the
/// same; a later run without options keeps what was given.
#[test]
fn release_given_after_manifests_is_used() {
    let d = example_dir("baremetal-single-master");
    okd_ok(d.path(), &["create", "manifests"]);
    let err = okd_ok(
        d.path(),
        &["create", "ignition-configs", "--release-image", OKD_45],
    );
    assert!(err.contains("the release changed from"), "{err}");
    for f in ["master.ign", "worker.ign", "bootstrap.ign"] {
        assert_eq!(spec(d.path(), f), "3.0.0", "{f}");
    }
    let boot = ign_files(&read_ign(&d.path().join("bootstrap.ign")));
    assert!(
        boot.values()
            .any(|(_, data, _)| String::from_utf8_lossy(data).contains(OKD_45)),
        "bootstrap.ign does not name {OKD_45}"
    );
    let state: Value = serde_json::from_slice(
        &std::fs::read(d.path().join(".openshift_install_state.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(state["*releaseimage.Image"]["PullSpec"], OKD_45);

    okd_ok(
        d.path(),
        &["create", "ignition-configs", "--ignition-spec", "3.1.0"],
    );
    assert_eq!(spec(d.path(), "master.ign"), "3.1.0");
    // No options: the recorded release and spec stay.
    okd_ok(d.path(), &["create", "ignition-configs"]);
    assert_eq!(spec(d.path(), "master.ign"), "3.1.0");
    assert_eq!(spec(d.path(), "bootstrap.ign"), "3.1.0");

    // The release given to `create install-config` is recorded as well.
    let d = tempfile::tempdir().unwrap();
    let ps = d.path().join("ps.json");
    std::fs::write(&ps, r#"{"auths":{"r.example:5000":{"auth":"YTpi"}}}"#).unwrap();
    let ps = ps.display().to_string();
    okd_ok(
        d.path(),
        &[
            "create",
            "install-config",
            "--platform",
            "none",
            "--base-domain",
            "example.com",
            "--cluster-name",
            "okd",
            "--pull-secret-file",
            &ps,
            "--ssh-key-file",
            "none",
            "--control-plane-replicas",
            "1",
            "--compute-replicas",
            "0",
            "--release-image",
            OKD_45,
        ],
    );
    okd_ok(d.path(), &["create", "ignition-configs"]);
    assert_eq!(spec(d.path(), "master.ign"), "3.0.0");
}

fn flags_config(d: &Path, platform: &str, domain: &str) -> Output {
    let ps = d.join("..").join(format!(
        "ps-{}.json",
        d.file_name().unwrap().to_string_lossy()
    ));
    std::fs::write(&ps, r#"{"auths":{"r.example:5000":{"auth":"YTpi"}}}"#).unwrap();
    let ps = ps.display().to_string();
    let out = okd(
        d,
        &[
            "create",
            "install-config",
            "--platform",
            platform,
            "--base-domain",
            domain,
            "--cluster-name",
            "okd",
            "--pull-secret-file",
            &ps,
            "--ssh-key-file",
            "none",
        ],
    );
    let _ = std::fs::remove_file(ps);
    out
}

/// Finding 4: platforms we do not generate for are refused with
/// openshift-install's wording and the list we support, by flag and by file.
#[test]
fn unsupported_platforms_are_refused() {
    for p in ["vsphere", "xyz"] {
        let d = tempfile::tempdir().unwrap();
        let out = flags_config(d.path(), p, "example.com");
        let err = stderr(&out);
        // An install-config error by flag is exit code 3, as by file.
        assert_eq!(out.status.code(), Some(3), "--platform {p}: {err}");
        assert!(err.contains("failed to create install config"), "{err}");
        // No advice to run the command that was just run.
        assert!(!err.contains("is made by"), "{err}");
        assert!(
            err.contains(&format!(
                "Unsupported value: \"{p}\": supported values: \"aws\", \"baremetal\", \"none\""
            )),
            "{err}"
        );
        assert!(!err.contains("azure"), "{err}");
        assert!(!d.path().join("install-config.yaml").exists());
    }
    for p in ["azure", "gcp", "openstack", "external", "vsphere"] {
        let d = example_dir("baremetal-single-master");
        let f = d.path().join("install-config.yaml");
        let text = std::fs::read_to_string(&f)
            .unwrap()
            .replace("  none: {}", &format!("  {p}: {{}}"));
        std::fs::write(&f, text).unwrap();
        let out = okd(
            d.path(),
            &["create", "manifests", "--release-image", OKD_45],
        );
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(3), "{p}: {err}");
        assert!(
            err.contains(&format!("platform: Unsupported value: \"{p}\"")),
            "{err}"
        );
        assert!(!d.path().join("manifests").exists());
    }
}

/// Finding 5: `create install-config` again with flags that contradict the
/// directory's install-config is refused; the same flags are fine.
#[test]
fn contradicting_flags_are_refused() {
    let d = tempfile::tempdir().unwrap();
    let out = flags_config(d.path(), "none", "example.com");
    assert!(out.status.success(), "{}", stderr(&out));
    let before = std::fs::read(d.path().join("install-config.yaml")).unwrap();
    let out = flags_config(d.path(), "none", "example.com");
    assert!(out.status.success(), "{}", stderr(&out));
    let out = flags_config(d.path(), "aws", "other.com");
    let err = stderr(&out);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("--platform aws"), "{err}");
    assert!(err.contains("--base-domain other.com"), "{err}");
    assert!(err.contains("contradict"), "{err}");
    assert!(!err.contains("YTpi"), "{err}");
    assert_eq!(
        std::fs::read(d.path().join("install-config.yaml")).unwrap(),
        before
    );
    // Consumed into the state file: still checked against it.
    okd_ok(d.path(), &["create", "manifests"]);
    let out = flags_config(d.path(), "none", "other.com");
    assert!(!out.status.success(), "{}", stderr(&out));
}

/// Finding 6: a digest in the release override does not break commands
/// that do not generate for a release; release options only where used.
#[test]
fn release_independent_commands_ignore_an_unparsable_release() {
    let d = tempfile::tempdir().unwrap();
    let digest = format!("quay.io/openshift/okd@sha256:{}", "0".repeat(64));
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_okd-install"))
            .args(args)
            .arg("--dir")
            .arg(d.path())
            .env("OPENSHIFT_INSTALL_RELEASE_IMAGE_OVERRIDE", &digest)
            .output()
            .unwrap()
    };
    let out = run(&["version"]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("cannot tell the release version"),
        "a warning: {err}"
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains(&digest));
    let out = run(&["mirror", "registry", "stop"]);
    assert!(
        !stderr(&out).contains("level=error msg=cannot tell the release version"),
        "{}",
        stderr(&out)
    );
    // Generating commands still need to know the release.
    let out = run(&["create", "manifests"]);
    assert!(
        stderr(&out).contains("--release-version"),
        "{}",
        stderr(&out)
    );
    for args in [
        &["serve", "status", "--release-image", OKD_45][..],
        &["mirror", "registry", "stop", "--ignition-spec", "3.0.0"],
        &["version", "--release-image", OKD_45],
        &["create", "bastion-configs", "--release-image", OKD_45],
        // The AWS-only machine API flag is offered only where manifests
        // are written for an install-config of any platform.
        &["create", "cluster", "--with-machine-api"],
        &["create", "install-config", "--with-machine-api"],
    ] {
        let out = run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?} took a release option");
        assert!(
            stderr(&out).contains("unexpected argument"),
            "{}",
            stderr(&out)
        );
    }
}

/// Finding 3: an install-config with mirrors that do not cover the release
/// gets a warning naming both.
#[test]
fn release_not_covered_by_mirrors_warns() {
    let d = example_dir("baremetal-single-master");
    let err = okd_ok(d.path(), &["create", "ignition-configs"]);
    let release = "quay.io/okd/scos-release:4.19.0-okd-scos.1";
    let line = err
        .lines()
        .find(|l| l.contains("is not covered by any imageContentSources"))
        .unwrap_or_else(|| panic!("no warning: {err}"));
    assert!(line.contains(release), "{line}");
    assert!(line.contains("quay.io/openshift/okd"), "{line}");
    let d = example_dir("baremetal-single-master");
    let err = okd_ok(
        d.path(),
        &["create", "ignition-configs", "--release-image", OKD_45],
    );
    assert!(!err.contains("is not covered"), "{err}");
}

/// Finding 8: the shipped aws-upi example says which release it needs, and
/// an error about a missing generated file names the command that makes it.
#[test]
fn messages_point_the_way() {
    let d = example_dir("aws-upi");
    let out = okd(d.path(), &["create", "manifests"]);
    let err = stderr(&out);
    assert!(!out.status.success());
    assert!(err.contains("--release-image"), "{err}");
    let text =
        std::fs::read_to_string(repo().join("examples/aws-upi/install-config.yaml")).unwrap();
    assert!(text.contains(OKD_45), "the example names its release");

    let d = tempfile::tempdir().unwrap();
    let out = okd(d.path(), &["destroy", "bootstrap"]);
    let err = stderr(&out);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("okd-install create ignition-configs --dir"),
        "{err}"
    );
}

/// Finding 2, the other way: a release given later that refuses the
/// recorded install-config (OpenShiftSDN after 4.14) is an error naming the
/// rule, and the directory stays as it was.
#[test]
fn release_given_later_rechecks_the_install_config() {
    let d = example_dir("aws-upi");
    okd_ok(
        d.path(),
        &["create", "manifests", "--release-image", OKD_45],
    );
    let state = d.path().join(".openshift_install_state.json");
    let before = std::fs::read(&state).unwrap();
    let out = okd(
        d.path(),
        &[
            "create",
            "ignition-configs",
            "--release-image",
            "quay.io/okd/scos-release:4.19.0-okd-scos.1",
        ],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains("networkType OpenShiftSDN is not supported"),
        "{err}"
    );
    assert_eq!(std::fs::read(&state).unwrap(), before);
    assert!(!d.path().join("bootstrap.ign").exists());
}
