//! One exit-code table (README "Exit codes"): the table and okd-types'
//! `Exit` are the same rows, and a command of each family ends with its
//! class's code. The classes of each error type are chosen by an
//! exhaustive `match` in its crate (`ExitClass`), so a new error variant
//! cannot be added without one; the commands' own tests check the codes
//! of their cases (new_user.rs, aws_upi.rs, aws_deploy.rs, prompts.rs,
//! wait_for.rs, vm_cluster.rs, mirror.rs).

mod common;

use common::{example_dir, okd, okd_ok, repo};
use okd_types::exit::Exit;

/// The README's table, as (code, class) pairs, in order.
fn readme_table() -> Vec<(u8, String)> {
    let text = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let section = text
        .split("### Exit codes")
        .nth(1)
        .expect("README has an \"Exit codes\" section");
    section
        .lines()
        .skip_while(|l| !l.starts_with("| code |"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            (cells[1].parse().unwrap(), cells[2].to_string())
        })
        .collect()
}

#[test]
fn the_readme_table_is_the_code() {
    let table = readme_table();
    let mut want = vec![(0u8, "success".to_string())];
    want.extend(Exit::ALL.iter().map(|e| (e.code(), e.name().to_string())));
    assert_eq!(table, want);
}

#[test]
fn each_family_ends_with_its_class() {
    // An install-config error by flag (3), with the install-config chain.
    let d = tempfile::tempdir().unwrap();
    let ps = d.path().join("ps.json");
    std::fs::write(&ps, r#"{"auths":{"r.example:5000":{"auth":"YTpi"}}}"#).unwrap();
    let ps = ps.to_str().unwrap();
    let out = okd(
        d.path(),
        &[
            "create",
            "install-config",
            "--platform",
            "vsphere",
            "--base-domain",
            "example.com",
            "--cluster-name",
            "c",
            "--pull-secret-file",
            ps,
            "--ssh-key-file",
            "none",
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(i32::from(Exit::InstallConfig.code())),
        "{err}"
    );
    assert!(!d.path().join("install-config.yaml").exists());

    // A value of the wrong form that clap cannot see (2), as clap's own.
    let d = example_dir("baremetal-single-master");
    okd_ok(d.path(), &["create", "ignition-configs"]);
    let out = okd(
        d.path(),
        &["wait-for", "bootstrap-complete", "--timeouts", "bogus"],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(i32::from(Exit::Usage.code())),
        "{err}"
    );
    let out = okd(
        d.path(),
        &["wait-for", "bootstrap-complete", "--no-such-flag"],
    );
    assert_eq!(out.status.code(), Some(i32::from(Exit::Usage.code())));

    // A file of an earlier step missing (1), the step named with the
    // directory quoted for the shell.
    let d = tempfile::tempdir().unwrap();
    let spaced = d.path().join("my install");
    std::fs::create_dir(&spaced).unwrap();
    let out = okd(&spaced, &["aws", "deploy"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(i32::from(Exit::Failed.code())),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "`okd-install create install-config --dir '{}'`",
            spaced.display()
        )),
        "{err}"
    );
    // The same for `create ignition-configs` without an install-config:
    // the step named once, with the directory as typed.
    let out = okd(&spaced, &["create", "ignition-configs"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(i32::from(Exit::Failed.code())),
        "{err}"
    );
    assert_eq!(err.matches("okd-install create").count(), 1, "{err}");
    assert!(
        err.contains(&format!(
            "`okd-install create install-config --dir '{}'`",
            spaced.display()
        )),
        "{err}"
    );
}
