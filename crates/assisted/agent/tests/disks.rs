//! The agent touches only its own disks: the installation disk speed
//! check (which overwrites 22 MiB from offset 0) and the install step are
//! given paths that lead elsewhere — `..` out of `/dev`, a regular file
//! under `/dev`, a symlink under `/dev` pointing out of it, a block
//! device that is not in the host's inventory, an inventory disk that is
//! mounted — and refuse each with exit code -1 and an error naming the
//! field, the path and the rule, the target's bytes unchanged. An
//! eligible disk (a loop device whose node sits in the made-up machine's
//! `/dev`) is measured, by its name and by a by-id link; a node swapped
//! after the check is caught on the open descriptor.
//!
//! The block devices are loop devices (`losetup`, root) over files on
//! tmpfs; each is detached when its test ends, also on failure. Without
//! root or `losetup` those tests say so on stderr and do nothing.

use std::path::{Path, PathBuf};
use std::process::Command;

use okd_assisted_agent::runner::execute;
use okd_assisted_agent::{Root, disk_guard, install, inventory};
use okd_assisted_api::rest::{Step, StepReply};
use okd_assisted_api::steps::DiskSpeedCheckResponse;

/// What every file a test guards holds before and (unchanged) after.
const SECRET: &[u8] = b"root:$6$salt$hash:19000:0:99999:7:::\n";

/// A made-up machine under `dir`: an empty `/dev`, `/etc/shadow`, and one
/// disk `vda` in `/sys/block` (120 GB, writable, not mounted: eligible),
/// whose `/dev/vda` the test makes.
fn machine(dir: &Path) -> Root {
    let w = |p: &str, text: &[u8]| {
        let path = dir.join(p);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    std::fs::create_dir_all(dir.join("dev")).unwrap();
    w("etc/shadow", SECRET);
    w("proc/mounts", b"");
    w("sys/block/vda/size", b"234375000\n");
    w("sys/block/vda/ro", b"0\n");
    w("sys/block/vda/removable", b"0\n");
    w("sys/block/vda/queue/rotational", b"1\n");
    Root(dir.to_path_buf())
}

fn speed_step(path: &str) -> Step {
    Step {
        step_type: "installation-disk-speed-check".into(),
        step_id: "installation-disk-speed-check-0000abcd".into(),
        args: vec![serde_json::json!({ "path": path }).to_string()],
    }
}

async fn speed_check(root: &Root, path: &str) -> StepReply {
    execute(speed_step(path), root.clone()).await
}

/// Asserts `r` is a refusal of `path` whose error says `why`, and prints
/// it.
fn refused(r: &StepReply, path: &str, why: &str) {
    println!("{path}: exit {} error {}", r.exit_code, r.error);
    assert_eq!(r.exit_code, -1, "{r:?}");
    assert!(r.output.is_empty(), "{r:?}");
    let head = format!("installation-disk-speed-check path {path:?}: refused: {why}");
    assert!(r.error.starts_with(&head), "{}\nwanted {head}", r.error);
}

// ---- loop devices

/// A loop device over a file, detached on drop.
struct Loop {
    dev: PathBuf,
    rdev: u64,
    backing: PathBuf,
}

impl Loop {
    /// A loop device over a new file `<dir>/<name>` of 23 MiB of a
    /// pattern; `None` (said on stderr) without root or `losetup`.
    fn attach(dir: &Path, name: &str) -> Option<Loop> {
        if !nix::unistd::geteuid().is_root() {
            eprintln!("SKIPPED: the loop-device part needs root");
            return None;
        }
        let backing = dir.join(name);
        let data: Vec<u8> = (0..23 * 1024 * 1024u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&backing, data).unwrap();
        let out = match Command::new("losetup")
            .args(["--find", "--show"])
            .arg(&backing)
            .output()
        {
            Ok(o) => o,
            Err(e) => {
                eprintln!("SKIPPED: the loop-device part needs losetup: {e}");
                return None;
            }
        };
        if !out.status.success() {
            eprintln!(
                "SKIPPED: losetup --find --show {}: {}",
                backing.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            );
            return None;
        }
        let dev = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        // Detached on drop from here on, also when what follows fails.
        let mut lp = Loop {
            rdev: 0,
            dev,
            backing,
        };
        let meta = std::fs::metadata(&lp.dev).unwrap();
        lp.rdev = std::os::unix::fs::MetadataExt::rdev(&meta);
        Some(lp)
    }

    /// A device node of this loop device at `path`.
    fn node(&self, path: &Path) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        nix::sys::stat::mknod(
            path,
            nix::sys::stat::SFlag::S_IFBLK,
            nix::sys::stat::Mode::from_bits_truncate(0o600),
            self.rdev,
        )
        .unwrap();
    }

    /// The backing file's bytes.
    fn bytes(&self) -> Vec<u8> {
        std::fs::read(&self.backing).unwrap()
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        let st = Command::new("losetup").arg("-d").arg(&self.dev).status();
        if !matches!(st, Ok(s) if s.success()) {
            eprintln!("losetup -d {}: {st:?}", self.dev.display());
        }
    }
}

/// A directory on tmpfs when there is one (the disk check then measures
/// memory, fast), else a temporary directory.
fn fast_dir() -> tempfile::TempDir {
    tempfile::tempdir_in("/dev/shm").unwrap_or_else(|_| tempfile::tempdir().unwrap())
}

// ---- the tests

#[tokio::test]
async fn a_path_out_of_dev_by_dotdot_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let root = machine(d.path());
    let shadow = d.path().join("etc/shadow");
    let r = speed_check(&root, "/dev/../etc/shadow").await;
    refused(
        &r,
        "/dev/../etc/shadow",
        "not under /dev: it has a \"..\" component (the rule: a disk path starts with /dev/",
    );
    let r = speed_check(&root, "/etc/shadow").await;
    refused(
        &r,
        "/etc/shadow",
        "not under /dev: it does not start with /dev/",
    );
    assert_eq!(std::fs::read(&shadow).unwrap(), SECRET);
}

#[tokio::test]
async fn a_regular_file_under_dev_is_refused_even_when_the_inventory_names_it() {
    let d = tempfile::tempdir().unwrap();
    let root = machine(d.path());
    let vda = d.path().join("dev/vda");
    std::fs::write(&vda, SECRET).unwrap();
    // The inventory reports vda, eligible: only its kind refuses it.
    let disks = inventory::disks(&root);
    assert_eq!(disks.len(), 1);
    assert!(disks[0].installation_eligibility.eligible, "{disks:?}");
    let r = speed_check(&root, "/dev/vda").await;
    refused(
        &r,
        "/dev/vda",
        &format!("not a block device: {} is a regular file", vda.display()),
    );
    assert_eq!(std::fs::read(&vda).unwrap(), SECRET);
}

#[tokio::test]
async fn a_symlink_under_dev_leading_out_of_it_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let root = machine(d.path());
    let shadow = d.path().join("etc/shadow");
    let dev = d.path().join("dev");
    std::fs::create_dir_all(dev.join("disk/by-id")).unwrap();
    // Relative, as udev makes them, and absolute; and the inventory's own
    // /dev/vda as a link out.
    std::os::unix::fs::symlink("../../../etc/shadow", dev.join("disk/by-id/wwn-0x1")).unwrap();
    std::os::unix::fs::symlink(&shadow, dev.join("disk/by-id/wwn-0x2")).unwrap();
    std::os::unix::fs::symlink("../etc/shadow", dev.join("vda")).unwrap();
    let resolved = shadow.canonicalize().unwrap();
    let dev = dev.canonicalize().unwrap();
    for p in [
        "/dev/disk/by-id/wwn-0x1",
        "/dev/disk/by-id/wwn-0x2",
        "/dev/vda",
    ] {
        let r = speed_check(&root, p).await;
        refused(
            &r,
            p,
            &format!(
                "a symlink leading out of /dev: it resolves to {}, outside {}",
                resolved.display(),
                dev.display()
            ),
        );
    }
    assert_eq!(std::fs::read(&shadow).unwrap(), SECRET);
}

#[tokio::test]
async fn a_block_device_not_an_eligible_disk_of_the_inventory_is_refused() {
    let shm = fast_dir();
    let Some(lp) = Loop::attach(shm.path(), "sdz.img") else {
        return;
    };
    let before = lp.bytes();
    let (major, minor) = (
        nix::sys::stat::major(lp.rdev),
        nix::sys::stat::minor(lp.rdev),
    );

    // Not in the inventory at all (no /sys/block/sdz).
    let d = tempfile::tempdir().unwrap();
    let root = machine(d.path());
    let sdz = d.path().join("dev/sdz");
    lp.node(&sdz);
    let r = speed_check(&root, "/dev/sdz").await;
    refused(
        &r,
        "/dev/sdz",
        &format!(
            "not an eligible disk of this host's inventory: block device {major}:{minor} ({}) is none of its disks; its eligible disks: /dev/vda",
            sdz.display()
        ),
    );

    // In the inventory, but mounted: not eligible.
    let d2 = tempfile::tempdir().unwrap();
    let root2 = machine(d2.path());
    lp.node(&d2.path().join("dev/vda"));
    std::fs::write(d2.path().join("proc/mounts"), "/dev/vda /var ext4 rw 0 0\n").unwrap();
    let r = speed_check(&root2, "/dev/vda").await;
    refused(
        &r,
        "/dev/vda",
        "not an eligible disk of this host's inventory: /dev/vda is not eligible (Disk is mounted: vda at /var)",
    );
    assert!(lp.bytes() == before, "the loop device's bytes changed");
}

#[tokio::test]
async fn an_eligible_disk_is_measured_by_its_name_and_by_a_link() {
    let shm = fast_dir();
    let Some(lp) = Loop::attach(shm.path(), "vda.img") else {
        return;
    };
    let d = tempfile::tempdir().unwrap();
    let root = machine(d.path());
    lp.node(&d.path().join("dev/vda"));
    std::fs::create_dir_all(d.path().join("dev/disk/by-id")).unwrap();
    std::os::unix::fs::symlink(
        "../../vda",
        d.path().join("dev/disk/by-id/wwn-0x5000c500a1b2c3d4"),
    )
    .unwrap();
    for p in ["/dev/disk/by-id/wwn-0x5000c500a1b2c3d4", "/dev/vda"] {
        let r = speed_check(&root, p).await;
        println!("{p}: exit {} output {}", r.exit_code, r.output);
        assert_eq!((r.exit_code, r.error.as_str()), (0, ""), "{r:?}");
        let out: DiskSpeedCheckResponse = serde_json::from_str(&r.output).unwrap();
        assert_eq!(out.path, p);
        assert!(out.io_sync_duration >= 0, "{out:?}");
    }
    // It wrote the check's pattern from offset 0 (the same as
    // net::disk_sync_speed's), and nothing past 22 MiB.
    let after = lp.bytes();
    let pattern: Vec<u8> = (0..2300usize)
        .map(|i| (i as u8).wrapping_mul(31) ^ 0x5a)
        .collect();
    assert_eq!(&after[..2300], &pattern[..]);
    let end = 22 * 1024 * 1024;
    assert!(
        after[end..]
            .iter()
            .enumerate()
            .all(|(i, b)| *b == ((end + i) % 251) as u8),
        "bytes past 22 MiB changed"
    );
}

#[tokio::test]
async fn a_node_swapped_after_the_check_is_caught_on_the_descriptor() {
    let shm = fast_dir();
    let Some(a) = Loop::attach(shm.path(), "a.img") else {
        return;
    };
    let Some(b) = Loop::attach(shm.path(), "b.img") else {
        return;
    };
    let (a_before, b_before) = (a.bytes(), b.bytes());
    let d = tempfile::tempdir().unwrap();
    let root = machine(d.path());
    let vda = d.path().join("dev/vda");
    a.node(&vda);
    let what = "installation-disk-speed-check path";
    let checked = disk_guard::check(&root, what, "/dev/vda").unwrap();
    assert_eq!(checked.disk().name, "vda");

    // Another block device in its place.
    std::fs::remove_file(&vda).unwrap();
    b.node(&vda);
    let e = checked.open().unwrap_err().step_error();
    println!("{e}");
    assert!(
        e.contains(&format!(
            "refused: {} changed between its check and its opening",
            vda.canonicalize().unwrap().display()
        )),
        "{e}"
    );
    // A regular file in its place: refused on the descriptor.
    std::fs::remove_file(&vda).unwrap();
    std::fs::write(&vda, SECRET).unwrap();
    let e = checked.open().unwrap_err().step_error();
    println!("{e}");
    assert!(
        e.ends_with("is not a block device (it is a regular file)"),
        "{e}"
    );
    // A symbolic link in its place (to the other device): not followed.
    std::fs::remove_file(&vda).unwrap();
    std::os::unix::fs::symlink(&b.dev, &vda).unwrap();
    let e = checked.open().unwrap_err().step_error();
    println!("{e}");
    let eloop = std::io::Error::from_raw_os_error(nix::libc::ELOOP).to_string();
    assert!(e.ends_with(&eloop), "{e}");

    assert_eq!(std::fs::read(d.path().join("etc/shadow")).unwrap(), SECRET);
    assert!(a.bytes() == a_before && b.bytes() == b_before);
}

#[tokio::test]
async fn the_install_step_refuses_a_boot_device_not_its_own() {
    let d = tempfile::tempdir().unwrap();
    let root = machine(d.path());
    std::fs::write(d.path().join("dev/vda"), SECRET).unwrap();
    let state = tempfile::tempdir().unwrap();
    let client = reqwest::Client::new();
    // Refused before anything is fetched: this URL is never asked.
    let url = "http://127.0.0.1:9/never";
    for (disk, why) in [
        (
            "/dev/../etc/shadow",
            "not under /dev: it has a \"..\" component".to_string(),
        ),
        (
            "/dev/vda",
            format!(
                "not a block device: {} is a regular file",
                d.path().join("dev/vda").display()
            ),
        ),
    ] {
        let args = vec![serde_json::json!({"role": "master", "boot_device": disk}).to_string()];
        let (code, out, err) = install::run(&args, &client, url, state.path(), &root).await;
        println!("{disk}: exit {code} error {err}");
        assert_eq!(code, -1);
        assert!(out.is_empty());
        let head = format!("install_cmd_request boot_device {disk:?}: refused: {why}");
        assert!(err.starts_with(&head), "{err}\nwanted {head}");
    }
    assert!(!state.path().join("install").exists(), "nothing written");
    assert_eq!(std::fs::read(d.path().join("dev/vda")).unwrap(), SECRET);
    assert_eq!(std::fs::read(d.path().join("etc/shadow")).unwrap(), SECRET);
}

#[test]
fn a_missing_disk_and_a_directory_are_refused_by_name() {
    let d = tempfile::tempdir().unwrap();
    let root = machine(d.path());
    std::fs::create_dir_all(d.path().join("dev/disk")).unwrap();
    let what = "installation-disk-speed-check path";
    let e = disk_guard::check(&root, what, "/dev/vdz")
        .unwrap_err()
        .step_error();
    let nf = std::io::Error::from_raw_os_error(nix::libc::ENOENT).to_string();
    assert_eq!(
        e,
        format!(
            "{what} \"/dev/vdz\": refused: {} cannot be resolved: {nf}",
            d.path().join("dev/vdz").display()
        )
    );
    let e = disk_guard::check(&root, what, "/dev/disk")
        .unwrap_err()
        .step_error();
    assert!(e.ends_with("is a directory"), "{e}");
}
