//! `create cluster`, `destroy cluster` and their refusals from the command
//! line, on the repository's kcli-style example through libvirt's test
//! driver (the README's command).

use std::path::Path;
use std::process::{Command, Output};

fn okd(args: &[&str], home: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_okd-install"))
        .args(args)
        .env("HOME", home)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("okd-install runs")
}

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr)
}

fn example() -> String {
    format!(
        "{}/../../examples/kcli-libvirt/parameters.yml",
        env!("CARGO_MANIFEST_DIR")
    )
}

#[test]
fn the_readme_example_makes_and_removes_its_vms() {
    if okd_test_utils::tool("virsh", &[], Some("libvirt-clients")).is_none() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let key = tmp.path().join("id");
    let st = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", ""])
        .arg("-f")
        .arg(&key)
        .status();
    if !matches!(st, Ok(s) if s.success()) {
        std::fs::write(
            tmp.path().join("id.pub"),
            "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOkd test\n",
        )
        .unwrap();
    }
    let dir = tmp.path().join("c");
    let dir_s = dir.to_str().unwrap();
    let pub_key = format!("pub_key={}/id.pub", tmp.path().display());
    let common = [
        "--libvirt-uri",
        "test:///default",
        "--pool",
        "default-pool",
        "-P",
        "version=upstream",
        "-P",
        &pub_key,
        "-P",
        "image=",
    ];
    // A typo in an override: refused by key, exit 3, nothing made.
    let example = example();
    let mut args = vec!["create", "cluster", "--dir", dir_s, "--paramfile", &example];
    args.extend(common);
    let mut typo = args.clone();
    typo.extend(["-P", "disk_sise=10"]);
    let out = okd(&typo, tmp.path());
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert!(
        text(&out).contains("unknown key \"disk_sise\""),
        "{}",
        text(&out)
    );
    assert!(!dir.join("install-config.yaml").exists());
    // A pool that does not exist: named, exit 3, no install-config left.
    let mut nopool: Vec<&str> = args
        .iter()
        .map(|a| {
            if *a == "default-pool" {
                "nosuchpool"
            } else {
                a
            }
        })
        .collect();
    nopool.extend(["-P", "disk_size=10"]);
    let out = okd(&nopool, tmp.path());
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert!(text(&out).contains("nosuchpool"), "{}", text(&out));
    assert!(!dir.join("vm-cluster.json").exists());

    args.extend(["-P", "disk_size=10"]);
    let out = okd(&args, tmp.path());
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    for vm in [
        "testk-bootstrap",
        "testk-master-0",
        "testk-master-2",
        "testk-worker-1",
    ] {
        assert!(said.contains(vm), "{vm}: {said}");
        assert!(dir.join("vms").join(format!("{vm}.ign")).exists(), "{vm}");
    }
    assert!(said.contains("API VIP 192.168.122.253"), "{said}");
    let ic = std::fs::read_to_string(dir.join(".openshift_install_state.json")).unwrap();
    assert!(
        ic.contains("192.168.122.0/24"),
        "the network's subnet is the machine network"
    );
    // A second create into the same directory is refused.
    let out = okd(&args, tmp.path());
    assert!(!out.status.success());
    assert!(text(&out).contains("destroy cluster"), "{}", text(&out));

    let out = okd(&["destroy", "cluster", "--dir", dir_s], tmp.path());
    assert!(out.status.success(), "{}", text(&out));
    assert!(!dir.join("vm-cluster.json").exists());
    assert!(!dir.join("vms").exists());
    assert!(
        dir.join("bootstrap.ign").exists(),
        "the installer's files stay"
    );
    let out = okd(&["destroy", "cluster", "--dir", dir_s], tmp.path());
    assert!(!out.status.success());
    assert!(text(&out).contains("no record"), "{}", text(&out));
}
