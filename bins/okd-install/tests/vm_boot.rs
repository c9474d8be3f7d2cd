//! A real boot of a VM's Ignition config (issue #22, "a real boot"):
//! `okd-install create cluster` gives each libvirt VM its Ignition file
//! through qemu's fw_cfg (`<sysinfo type='fwcfg'><entry
//! name='opt/com.coreos/config' file=.../>` in the domain XML). Here the
//! bootstrap VM's file, exactly as the command wrote it, goes to a qemu guest
//! as `-fw_cfg name=opt/com.coreos/config,file=...` (what libvirt's qemu
//! driver makes of that element), where Debian's real Ignition 2.14
//! (`-platform=qemu`, stages fetch and files; tests/guest/build.sh) applies it
//! to an ext4 root on the guest's virtio disk. The test then reads that disk
//! back on the host with debugfs and compares it with the config.
//!
//! The guest runs under KVM when a stock kernel boots with it on this host,
//! else under TCG (`/dev/kvm` on the project's machines is PVM, which boots no
//! stock kernel); the output says which. About 10 s under TCG.
//! Needs root (CI is), qemu-system-x86_64, e2fsprogs, virsh and the guest
//! kit that `.ci/run` builds.

mod common;

use std::os::unix::fs::MetadataExt as _;
use std::path::Path;
use std::time::Instant;

use aws_lc_rs::digest;
use common::guest;
use serde_json::Value;

/// The decoded contents of the storage file `path` of an Ignition config
/// (its `contents.source` data URL).
fn ign_file(cfg: &Value, path: &str) -> Vec<u8> {
    let f = cfg["storage"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == path)
        .unwrap_or_else(|| panic!("the config has no file {path}"));
    let src = f["contents"]["source"].as_str().unwrap();
    okd_types::dataurl::decode(src).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn landed(root: &Path, path: &str) -> Vec<u8> {
    let p = root.join(path.trim_start_matches('/'));
    std::fs::read(&p).unwrap_or_else(|e| panic!("{path} is not on the guest's disk: {e}"))
}

#[test]
fn the_bootstrap_vms_ignition_is_applied_by_ignition_in_a_qemu_guest() {
    let Some(g) = guest::ignition_kit() else {
        return;
    };
    if okd_test_utils::tool("virsh", &[], Some("libvirt-clients")).is_none() {
        return;
    }
    let started = Instant::now();
    let tmp = tempfile::tempdir().unwrap();
    let cluster = guest::create_example_cluster(tmp.path()).unwrap();
    let ign = &cluster.bootstrap_ignition;
    assert_eq!(
        *ign,
        cluster.dir.join("vms/testk-bootstrap.ign"),
        "the record names the bootstrap VM's file"
    );
    let bytes = std::fs::read(ign).unwrap();
    let cfg: Value = serde_json::from_slice(&bytes).unwrap();
    // create cluster moves files above 512 KiB (the okd-install program a
    // release build carries) to the VM's side disk (okd_vm_cluster::side),
    // so what goes through fw_cfg stays small.
    assert!(
        bytes.len() as u64 <= guest::FW_CFG_CONFIG_LIMIT_BYTES,
        "{} is {} bytes: Ignition reads fw_cfg in time quadratic in the size \
         (coreos/ignition internal/providers/qemu/qemu_fwcfg.go), so a guest would not \
         finish reading it within {:?}; create cluster should have moved its large files \
         to the side disk",
        ign.display(),
        bytes.len(),
        guest::GUEST_TIMEOUT
    );

    let choice = guest::accel(&g);
    eprintln!(
        "accelerator: {} ({}); config {} ({} bytes)",
        choice.accel,
        choice.reason,
        ign.display(),
        bytes.len()
    );
    let disk = tmp.path().join("root.ext4");
    guest::make_ignition_root(&disk, guest::IGNITION_ROOT_MIB).unwrap();
    let run = guest::ignition_boot(&g, choice.accel, ign, &disk).unwrap();
    eprintln!(
        "{}: Ignition done {:.1} s after qemu started (guest uptime: /init {:.2} s, \
         fetch done {:.2} s, files done {:.2} s); powered off after {:.1} s",
        run.accel,
        run.done.as_secs_f64(),
        run.init_s,
        run.fetch_s,
        run.files_s,
        run.wall.as_secs_f64()
    );

    // Ignition read exactly the file create cluster wrote, through fw_cfg.
    let sha = digest::digest(&digest::SHA512, &bytes);
    let hex: String = sha.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    assert!(
        run.console
            .contains(&format!("parsing config with SHA512: {hex}")),
        "the guest's Ignition parsed another config than {}:\n{}",
        ign.display(),
        common::kube::tail(&run.console, 60)
    );
    assert!(
        run.console
            .contains("op(1): [finished] loading QEMU firmware config module"),
        "{}",
        run.console
    );

    // What landed on the guest's disk, read back on the host.
    let root = tmp.path().join("landed");
    std::fs::create_dir(&root).unwrap();
    guest::dump_ext4(&disk, &root).unwrap();

    assert_eq!(
        String::from_utf8(landed(&root, "/etc/hostname"))
            .unwrap()
            .trim(),
        "testk-bootstrap"
    );
    // The VIP/DNS/LB layer create cluster adds to the installer's config.
    for p in [
        "/etc/kubernetes/manifests/okd-keepalived.yaml",
        "/etc/okd-vip-layer/Corefile",
        "/etc/okd-vip-layer/keepalived.conf.tmpl",
        "/etc/okd-vip-layer/www/master.ign",
    ] {
        assert_eq!(landed(&root, p), ign_file(&cfg, p), "contents of {p}");
    }
    // A file of the installer's own bootstrap.ign, with its mode.
    let installer: Value =
        serde_json::from_slice(&std::fs::read(cluster.dir.join("bootstrap.ign")).unwrap()).unwrap();
    let bootkube = "/usr/local/bin/bootkube.sh";
    assert_eq!(landed(&root, bootkube), ign_file(&installer, bootkube));
    assert_eq!(
        common::mode(&root.join(bootkube.trim_start_matches('/'))),
        0o555,
        "mode of {bootkube}"
    );
    // Every storage file of the VM's config, bytes and mode.
    let files = common::ign_files(&cfg);
    assert!(
        files.len() > 100,
        "only {} files in {}",
        files.len(),
        ign.display()
    );
    for (p, (m, data, append)) in &files {
        let on_disk = landed(&root, p);
        assert_eq!(
            common::mode(&root.join(p.trim_start_matches('/'))),
            *m,
            "mode of {p}"
        );
        if *append {
            assert!(on_disk.ends_with(data), "{p} does not end with its append");
        } else {
            assert_eq!(&on_disk, data, "contents of {p}");
        }
    }
    // Every unit with contents, every drop-in, and `enabled` as a preset
    // (Ignition 2.14 writes presets, not wants/ links).
    let presets = String::from_utf8(landed(
        &root,
        "/etc/systemd/system-preset/20-ignition.preset",
    ))
    .unwrap();
    for u in cfg["systemd"]["units"].as_array().unwrap() {
        let name = u["name"].as_str().unwrap();
        if u["enabled"] == true {
            assert!(
                presets.lines().any(|l| l == format!("enable {name}")),
                "no preset enables {name}:\n{presets}"
            );
        }
        if let Some(c) = u["contents"].as_str().filter(|c| !c.is_empty()) {
            let p = format!("/etc/systemd/system/{name}");
            assert_eq!(landed(&root, &p), c.as_bytes(), "{p}");
        }
        for d in u["dropins"].as_array().into_iter().flatten() {
            let p = format!(
                "/etc/systemd/system/{name}.d/{}",
                d["name"].as_str().unwrap()
            );
            assert_eq!(
                landed(&root, &p),
                d["contents"].as_str().unwrap().as_bytes()
            );
        }
    }
    // The core user, made by useradd in the guest, with the SSH key.
    let passwd = String::from_utf8(landed(&root, "/etc/passwd")).unwrap();
    assert!(
        passwd.lines().any(|l| l.starts_with("core:x:1000:")),
        "/etc/passwd has no core user:\n{passwd}"
    );
    let keys = root.join("home/core/.ssh/authorized_keys.d/ignition");
    let text = std::fs::read_to_string(&keys).unwrap();
    assert!(text.contains(&cluster.pub_key), "{text}");
    assert_eq!(std::fs::metadata(&keys).unwrap().uid(), 1000);
    assert_eq!(common::mode(&keys), 0o600);
    let result: Value =
        serde_json::from_slice(&landed(&root, "/etc/.ignition-result.json")).unwrap();
    assert_eq!(result["userConfigProvided"], true, "{result}");
    eprintln!(
        "{} files, {} units checked on the guest's disk; the test took {:.1} s",
        files.len(),
        cfg["systemd"]["units"].as_array().unwrap().len(),
        started.elapsed().as_secs_f64()
    );
}
