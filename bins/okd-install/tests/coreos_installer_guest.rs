//! The last step of a single-node install, with the real programs: the
//! bootstrap-in-place node runs `coreos-installer install -n -i
//! /opt/openshift/master.ign <installationDisk>` (openshift/installer
//! data/data/bootstrap/bootstrap-in-place/files/usr/local/bin/install-to-disk.sh).
//! Here crates.io's coreos-installer 0.27.0 runs in a qemu guest
//! (tests/guest/build.sh) onto a raw disk file, from a CoreOS-shaped source
//! image, and the test reads `ignition/config.ign` back from the disk's
//! `boot` partition. Each guest run takes about 10 s under TCG.

mod common;

use std::path::Path;
use std::process::Command;

use common::guest;

/// A small valid Ignition spec 3.2.0 config, as a master.ign would carry
/// files (hostname, a pull secret-like file with a secret-looking payload).
fn ignition_config() -> Vec<u8> {
    let cfg = serde_json::json!({
        "ignition": { "version": "3.2.0" },
        "passwd": { "users": [ {
            "name": "core",
            "sshAuthorizedKeys": ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOkdinstalltestkeyonlyXXXXXXXXXXXXXXXXXXXX okd@test"]
        } ] },
        "storage": { "files": [
            {
                "path": "/etc/hostname",
                "mode": 420,
                "overwrite": true,
                "contents": { "source": "data:,master0" }
            },
            {
                "path": "/opt/openshift/auth.json",
                "mode": 384,
                "contents": { "source": "data:;base64,eyJhdXRocyI6e319Cg==" }
            }
        ] }
    });
    let mut b = serde_json::to_vec_pretty(&cfg).unwrap();
    b.push(b'\n');
    b
}

fn sparse_file(path: &Path, mib: u64) {
    std::fs::File::create(path)
        .unwrap()
        .set_len(mib * 1024 * 1024)
        .unwrap();
}

/// The GPT partition names of `disk` according to util-linux's
/// `sfdisk --json`, to cross-check the test's own GPT reader.
fn sfdisk_names(disk: &Path) -> Vec<String> {
    let sfdisk = ["/usr/sbin/sfdisk", "/sbin/sfdisk"]
        .into_iter()
        .find(|p| Path::new(p).is_file())
        .unwrap_or("sfdisk");
    let out = Command::new(sfdisk)
        .arg("--json")
        .arg(disk)
        .output()
        .unwrap();
    assert!(out.status.success(), "sfdisk --json {}", disk.display());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v["partitiontable"]["partitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap_or("").to_string())
        .collect()
}

#[test]
fn coreos_installer_writes_the_ignition_config_onto_the_boot_partition() {
    let Some(g) = guest::kit() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let image = tmp.path().join("fcos-metal.x86_64.raw");
    guest::make_disk_image(&image, 24).unwrap();
    let parts = guest::gpt_partitions(&image).unwrap();
    let names: Vec<_> = parts.iter().map(|p| p.name.clone()).collect();
    assert_eq!(names, ["BIOS-BOOT", "boot", "root"]);
    assert_eq!(names, sfdisk_names(&image), "our GPT reader vs sfdisk");
    assert_eq!(
        (parts[1].start, parts[1].len),
        (2 << 20, 8 << 20),
        "the boot partition's place"
    );
    // The source image has no Ignition config of its own.
    let err = guest::read_boot_file(&image, "ignition/config.ign").unwrap_err();
    assert!(err.contains("not found"), "{err}");
    let bls = guest::read_boot_file(&image, "loader/entries/ostree-1.conf").unwrap();
    assert!(
        String::from_utf8_lossy(&bls).contains("ignition.platform.id=metal"),
        "{}",
        String::from_utf8_lossy(&bls)
    );

    let ign = ignition_config();
    let ign_path = tmp.path().join("master.ign");
    std::fs::write(&ign_path, &ign).unwrap();
    if let Some(v) = common::tool("ignition-validate", &[]) {
        let out = Command::new(v).arg(&ign_path).output().unwrap();
        assert!(
            out.status.success(),
            "ignition-validate: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let disk = tmp.path().join("installation-disk.raw");
    sparse_file(&disk, 64);

    let started = std::time::Instant::now();
    // install-to-disk.sh's arguments: -n (copy the live network config; the
    // guest has an empty /etc/NetworkManager/system-connections) and -i.
    let log = guest::coreos_install(&g, &disk, &image, &ign_path, &["-n"])
        .unwrap_or_else(|e| panic!("coreos-installer in the guest failed: {e}"));
    eprintln!(
        "guest install took {:.1} s; console:\n{log}",
        started.elapsed().as_secs_f64()
    );
    for line in [
        "Copying image from /dev/vdb",
        "Signature not found; skipping verification as requested",
        "Writing Ignition config",
        "No networking configuration files found in /etc/NetworkManager/system-connections/, skipping",
        "Install complete.",
        "OKD-GUEST: coreos-installer exit 0",
    ] {
        assert!(log.contains(line), "missing {line:?} in the console log");
    }

    // The disk now carries the image's partitions …
    assert_eq!(sfdisk_names(&disk), ["BIOS-BOOT", "boot", "root"]);
    assert_eq!(guest::gpt_partitions(&disk).unwrap(), parts);
    assert_eq!(
        guest::read_boot_file(&disk, "loader/entries/ostree-1.conf").unwrap(),
        bls,
        "the BLS entry is copied unchanged (no --platform/--append-karg)"
    );
    // … and the Ignition config, byte for byte, where Ignition's first boot
    // looks for it (coreos/coreos-installer src/install.rs write_ignition).
    let got = guest::read_boot_file(&disk, "ignition/config.ign").unwrap();
    assert_eq!(
        got,
        ign,
        "ignition/config.ign on the disk's boot partition:\n{}",
        String::from_utf8_lossy(&got)
    );
}

#[test]
fn coreos_installer_reports_a_disk_too_small_for_the_image() {
    let Some(g) = guest::kit() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let image = tmp.path().join("image.raw");
    guest::make_disk_image(&image, 24).unwrap();
    let ign_path = tmp.path().join("master.ign");
    std::fs::write(&ign_path, ignition_config()).unwrap();
    let disk = tmp.path().join("small.raw");
    sparse_file(&disk, 8);
    let err = guest::coreos_install(&g, &disk, &image, &ign_path, &["-n"])
        .expect_err("an 8 MiB disk cannot take a 24 MiB image");
    eprintln!("{err}");
    for msg in [
        "coreos-installer exited with status 1",
        "Error: decoding and writing image",
        "No space left on device",
        "Resetting partition table",
        "Error: install failed",
    ] {
        assert!(err.contains(msg), "missing {msg:?} in: {err}");
    }
    assert!(!err.contains("Writing Ignition config"), "{err}");
    // coreos-installer reset the partition table (an empty GPT), so nothing
    // boots from the half-written disk.
    assert_eq!(guest::gpt_partitions(&disk), Ok(vec![]));
    let e = guest::read_boot_file(&disk, "ignition/config.ign").unwrap_err();
    assert!(e.contains("0 partitions named boot"), "{e}");
}

#[test]
fn coreos_installer_rejects_an_unknown_argument() {
    let Some(g) = guest::kit() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let image = tmp.path().join("image.raw");
    guest::make_disk_image(&image, guest::MIN_IMAGE_MIB).unwrap();
    let ign_path = tmp.path().join("master.ign");
    std::fs::write(&ign_path, ignition_config()).unwrap();
    let disk = tmp.path().join("disk.raw");
    sparse_file(&disk, 32);
    let err = guest::coreos_install(&g, &disk, &image, &ign_path, &["-n", "--no-such-flag"])
        .expect_err("clap rejects --no-such-flag");
    eprintln!("{err}");
    for msg in [
        "coreos-installer exited with status 2",
        "error: unexpected argument '--no-such-flag' found",
        "Usage: coreos-installer install",
    ] {
        assert!(err.contains(msg), "missing {msg:?} in: {err}");
    }
    // Nothing was written.
    assert!(guest::gpt_partitions(&disk).is_err());
}
