//! The real coreos-installer in a qemu guest, as single-node installs run it:
//! bootstrap-in-place ends with `coreos-installer install -n -i
//! /opt/openshift/master.ign <installationDisk>` (openshift/installer
//! data/data/bootstrap/bootstrap-in-place/files/usr/local/bin/install-to-disk.sh).
//!
//! coreos-installer needs a block device whose partitions the kernel sees
//! (it rereads the partition table and mounts the `boot` filesystem;
//! coreos/coreos-installer src/install.rs `write_disk`, src/blockdev.rs), which
//! loop devices on the test hosts do not give. So it runs in a guest built by
//! `tests/guest/build.sh` (Debian's kernel and a busybox initramfs), under
//! qemu's TCG, with a raw disk image file as its `/dev/vda`; the helpers here
//! make a CoreOS-shaped source image and read the installed files back from
//! the disk file, without loop devices or mounts.
//!
//! The same kernel also boots a second initramfs of the build,
//! `ignition.cpio.gz`: Debian's real Ignition with `-platform=qemu`, which
//! reads a VM's config from qemu's fw_cfg (`opt/com.coreos/config`, where
//! `okd-install create cluster` puts it through libvirt) and applies it, stages
//! fetch and files, to an ext4 root on the guest's `/dev/vda`
//! ([`ignition_kit`], [`ignition_boot`]). That guest runs under KVM when a
//! stock kernel boots with it here and under TCG otherwise ([`accel`]).
#![allow(dead_code)]

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use okd_test_utils::ChildGuard;

/// How long one guest run may take (boot, install, power-off) before qemu is
/// killed: a run takes about 10 s under TCG on this project's 2-core hosts.
pub const GUEST_TIMEOUT: Duration = Duration::from_secs(90);

/// The line `/init` prints after coreos-installer exits, followed by its
/// exit status (tests/guest/build.sh).
pub const MARKER: &str = "OKD-GUEST: coreos-installer exit ";

/// Where the guest's `/init` puts the Ignition config [`coreos_install`]
/// hands it: the path install-to-disk.sh passes to `-i`.
pub const GUEST_IGNITION: &str = "/opt/openshift/master.ign";

/// GPT partition type GUIDs of a Fedora CoreOS metal image (coreos/coreos-assembler
/// src/create_disk.sh): BIOS boot, and Linux filesystem data for `boot` and `root`.
const BIOS_BOOT_TYPE: &str = "21686148-6449-6E6F-744E-656564454649";
const LINUX_FS_TYPE: &str = "0FC63DAF-8483-4772-8E79-3D69D8477DE4";

/// Layout of [`make_disk_image`], in MiB from the start of the disk.
const BIOS_BOOT_START_MIB: u64 = 1;
const BOOT_START_MIB: u64 = 2;
const BOOT_SIZE_MIB: u64 = 8;
const ROOT_START_MIB: u64 = BOOT_START_MIB + BOOT_SIZE_MIB;
/// The smallest image [`make_disk_image`] makes: the partitions above, a
/// 5 MiB `root`, and 1 MiB at the end for the backup GPT.
pub const MIN_IMAGE_MIB: u64 = ROOT_START_MIB + 6;

/// The guest: qemu and the kernel and initramfs `tests/guest/build.sh` made.
#[derive(Debug, Clone)]
pub struct Guest {
    /// `qemu-system-x86_64` (Debian package qemu-system-x86).
    pub qemu: PathBuf,
    /// Debian's kernel image (`vmlinuz` in the build directory).
    pub kernel: PathBuf,
    /// The initramfs: `installer.cpio.gz` (coreos-installer and the `/init`
    /// that runs it; [`kit`]) or `ignition.cpio.gz` (Ignition; [`ignition_kit`]).
    pub initrd: PathBuf,
}

fn missing(why: &str) -> Option<Guest> {
    if std::env::var("OKD_REQUIRE_TOOLS").as_deref() == Ok("1") {
        panic!("required for this test: {why}");
    }
    eprintln!("SKIPPING this test: {why}");
    None
}

/// Finds an e2fsprogs/util-linux program (they live in /usr/sbin, which may
/// not be on a user's PATH).
fn sbin(name: &str, package: &str) -> Option<PathBuf> {
    okd_test_utils::tool(
        name,
        &[&format!("/usr/sbin/{name}"), &format!("/sbin/{name}")],
        Some(package),
    )
}

/// The guest build directory: `$OKD_GUEST_KIT` (set by `.ci/run`), else
/// what `bash tests/guest/build.sh` prints (it builds on first use, about
/// 15 s plus the kernel download; run once per test process).
fn guest_dir() -> Result<PathBuf, String> {
    static DIR: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    DIR.get_or_init(|| {
        if let Some(d) = std::env::var_os("OKD_GUEST_KIT") {
            return Ok(PathBuf::from(d));
        }
        let script = super::repo().join("tests/guest/build.sh");
        let out = Command::new("bash")
            .arg(&script)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("running bash {}: {e}", script.display()))?;
        let err = String::from_utf8_lossy(&out.stderr);
        if !err.trim().is_empty() {
            eprintln!("{}", err.trim_end());
        }
        if !out.status.success() {
            return Err(format!(
                "bash {} failed ({}): {}",
                script.display(),
                out.status,
                super::kube::tail(&err, 15)
            ));
        }
        Ok(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
    })
    .clone()
}

/// Finds qemu-system-x86_64, sfdisk, mke2fs and debugfs, and the guest that
/// `tests/guest/build.sh` builds (running it if needed). `None`, after a loud
/// `SKIPPING` message, when any is missing; panics instead when
/// `OKD_REQUIRE_TOOLS=1` (CI), as [`okd_test_utils::tool`] does.
pub fn kit() -> Option<Guest> {
    let qemu = okd_test_utils::tool(
        "qemu-system-x86_64",
        &["/usr/bin/qemu-system-x86_64"],
        Some("qemu-system-x86"),
    )?;
    sbin("sfdisk", "fdisk")?;
    sbin("mke2fs", "e2fsprogs")?;
    sbin("debugfs", "e2fsprogs")?;
    let dir = match guest_dir() {
        Ok(d) => d,
        Err(e) => return missing(&format!("the coreos-installer guest: {e}")),
    };
    let (kernel, initrd) = (dir.join("vmlinuz"), dir.join("installer.cpio.gz"));
    if !kernel.is_file() || !initrd.is_file() {
        return missing(&format!(
            "the coreos-installer guest in {} is incomplete (run bash tests/guest/build.sh)",
            dir.display()
        ));
    }
    Some(Guest {
        qemu,
        kernel,
        initrd,
    })
}

fn run(cmd: &mut Command) -> Result<(), String> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{cmd:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{cmd:?} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(())
}

/// Makes `path` a raw GPT disk image of `size_mib` MiB (at least
/// [`MIN_IMAGE_MIB`]) shaped like a Fedora CoreOS metal image, as far as
/// coreos-installer 0.27 looks at one (coreos/coreos-installer src/install.rs):
///
/// | # | GPT name    | start   | size      | contents                          |
/// |---|-------------|---------|-----------|-----------------------------------|
/// | 1 | `BIOS-BOOT` | 1 MiB   | 1 MiB     | none                              |
/// | 2 | `boot`      | 2 MiB   | 8 MiB     | ext4 labelled `boot`              |
/// | 3 | `root`      | 10 MiB  | the rest  | ext4 labelled `root`              |
///
/// (the real image also has an `EFI-SYSTEM` vfat partition; nothing here
/// makes vfat, and coreos-installer only looks for ESPs under `rdcore`).
/// `boot` holds what an ostree deployment has there: `loader` →
/// `loader.1/entries/ostree-1.conf` (a BLS entry whose `options` carry
/// `ignition.platform.id=metal`, which `--platform` rewrites), the kernel and
/// initramfs it names (placeholder bytes, not bootable; `-n` with network
/// keyfiles appends to that initramfs), and the `ignition.firstboot` stamp
/// (`--firstboot-args` appends to it). coreos-installer itself, measured,
/// needs only a GPT with a filesystem labelled `boot` for `-i` (it finds it
/// with lsblk's LABEL and writes `ignition/config.ign` there).
/// Built without loop devices: sfdisk writes the table into the file, and
/// each filesystem is made by `mke2fs -d` in its own file and copied in.
pub fn make_disk_image(path: &Path, size_mib: u64) -> Result<(), String> {
    make_disk_image_with_boot(path, size_mib, BOOT_SIZE_MIB)
}

/// [`make_disk_image`] with a `boot` partition of `boot_mib` MiB (a real
/// metal image's is 384 MiB): room for a large Ignition config, such as a
/// single node's master.ign with the okd-install program in it.
pub fn make_disk_image_with_boot(path: &Path, size_mib: u64, boot_mib: u64) -> Result<(), String> {
    let root_start_mib = BOOT_START_MIB + boot_mib;
    let min = root_start_mib + 6;
    if size_mib < min || boot_mib < BOOT_SIZE_MIB {
        return Err(format!(
            "a disk image with a {boot_mib} MiB boot partition (at least {BOOT_SIZE_MIB}) needs at least {min} MiB, not {size_mib}"
        ));
    }
    let sfdisk = sbin("sfdisk", "fdisk").ok_or("sfdisk is not installed")?;
    let mke2fs = sbin("mke2fs", "e2fsprogs").ok_or("mke2fs is not installed")?;
    const MIB: u64 = 1024 * 1024;
    let f = File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
    f.set_len(size_mib * MIB)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    drop(f);
    let sectors = |mib: u64| mib * MIB / 512;
    let table = format!(
        "label: gpt\n\
         start={}, size={}, type={BIOS_BOOT_TYPE}, name=\"BIOS-BOOT\"\n\
         start={}, size={}, type={LINUX_FS_TYPE}, name=\"boot\"\n\
         start={}, type={LINUX_FS_TYPE}, name=\"root\"\n",
        sectors(BIOS_BOOT_START_MIB),
        sectors(1),
        sectors(BOOT_START_MIB),
        sectors(boot_mib),
        sectors(root_start_mib),
    );
    let mut child = Command::new(&sfdisk)
        .args(["--quiet", "--no-reread", "--no-tell-kernel"])
        .arg(path)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("{}: {e}", sfdisk.display()))?;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(table.as_bytes())
        .map_err(|e| format!("writing to sfdisk: {e}"))?;
    let out = child
        .wait_with_output()
        .map_err(|e| format!("sfdisk: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "sfdisk {} failed: {}",
            path.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }

    let work = tempfile::tempdir().map_err(|e| e.to_string())?;
    let boot = work.path().join("boot");
    let deploy = "ostree/fedora-coreos-0123456789abcdef";
    let files: [(&str, Vec<u8>); 5] = [
        (
            "loader.1/entries/ostree-1.conf",
            format!(
                "title Fedora CoreOS 40.20240101.3.0 (ostree:0)\n\
                 version 1\n\
                 linux /{deploy}/vmlinuz-6.8.5-301.fc40.x86_64\n\
                 initrd /{deploy}/initramfs-6.8.5-301.fc40.x86_64.img\n\
                 options mitigations=auto,nosmt ignition.platform.id=metal \
                 $ignition_firstboot ostree=/ostree/boot.1/fedora-coreos/0123/0 \
                 root=UUID=00000000-0000-4000-8000-000000000000 rw rootflags=prjquota \
                 boot=UUID=00000000-0000-4000-8000-000000000001\n"
            )
            .into_bytes(),
        ),
        (
            "ostree/fedora-coreos-0123456789abcdef/vmlinuz-6.8.5-301.fc40.x86_64",
            b"placeholder kernel (okd-install test image, not bootable)\n".to_vec(),
        ),
        (
            "ostree/fedora-coreos-0123456789abcdef/initramfs-6.8.5-301.fc40.x86_64.img",
            b"placeholder initramfs (okd-install test image, not bootable)\n".to_vec(),
        ),
        (
            "ignition.firstboot",
            b"# created by okd-install test image\n".to_vec(),
        ),
        ("coreos/platforms.json", b"{}\n".to_vec()),
    ];
    for (rel, data) in files {
        let p = boot.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).map_err(|e| e.to_string())?;
        std::fs::write(&p, data).map_err(|e| format!("{}: {e}", p.display()))?;
    }
    std::os::unix::fs::symlink("loader.1", boot.join("loader")).map_err(|e| e.to_string())?;
    let root = work.path().join("root");
    std::fs::create_dir_all(root.join("ostree/deploy/fedora-coreos/var"))
        .map_err(|e| e.to_string())?;
    std::fs::write(
        root.join(".coreos-aleph-version.json"),
        "{\"build\":\"40.20240101.3.0\",\"ref\":\"fedora/x86_64/coreos/stable\",\
         \"imgid\":\"okd-install-test-metal.x86_64.raw\"}\n",
    )
    .map_err(|e| e.to_string())?;

    let root_mib = size_mib - root_start_mib - 1;
    for (label, tree, start_mib, size) in [
        ("boot", &boot, BOOT_START_MIB, boot_mib),
        ("root", &root, root_start_mib, root_mib),
    ] {
        let fs = work.path().join(format!("{label}.ext4"));
        File::create(&fs)
            .and_then(|f| f.set_len(size * MIB))
            .map_err(|e| format!("{}: {e}", fs.display()))?;
        run(Command::new(&mke2fs)
            .args([
                "-q",
                "-F",
                "-t",
                "ext4",
                "-L",
                label,
                "-E",
                "root_owner=0:0",
                "-d",
            ])
            .arg(tree)
            .arg(&fs))?;
        let bytes = std::fs::read(&fs).map_err(|e| format!("{}: {e}", fs.display()))?;
        let mut img = OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        img.seek(SeekFrom::Start(start_mib * MIB))
            .and_then(|_| img.write_all(&bytes))
            .and_then(|_| img.sync_all())
            .map_err(|e| format!("writing {label} into {}: {e}", path.display()))?;
    }
    Ok(())
}

/// Escapes a path for a qemu `-drive`/`-fw_cfg` option value (`,` → `,,`).
fn qemu_path(p: &Path) -> String {
    p.display().to_string().replace(',', ",,")
}

/// Boots the guest (qemu TCG, 512 MiB, one CPU, no network) with `disk` as
/// its writable `/dev/vda` and `image` as a read-only `/dev/vdb`, and runs
///
/// `coreos-installer install --image-file /dev/vdb --insecure -i /opt/openshift/master.ign <args...> /dev/vda`
///
/// where the guest's `/opt/openshift/master.ign` is the `ignition` file (a
/// third read-only virtio disk, `/dev/vdc`, its length through fw_cfg
/// `opt/okd/ignition-size`: fw_cfg itself reads too slowly under TCG for a
/// config of megabytes; the arguments, one per line, through fw_cfg
/// `opt/okd/args`). `--insecure` because the test image has no
/// signature (coreos-installer looks for `<image>.sig`). `disk` must be a raw
/// image at least as large as `image`; `image` a raw image such as
/// [`make_disk_image`] makes (coreos-installer also takes xz/gzip/zstd ones).
///
/// Returns the guest's serial console log (coreos-installer's stdout and
/// stderr included, `\r` removed) when the marker line says exit status 0.
/// `Err` holds the last 40 lines of the log when coreos-installer exits
/// non-zero (its own error message is there), when the marker is missing
/// (qemu failed, the guest panicked), or when the guest does not power off
/// within [`GUEST_TIMEOUT`]; qemu is killed by PID then, and also when this
/// function unwinds.
pub fn coreos_install(
    guest: &Guest,
    disk: &Path,
    image: &Path,
    ignition: &Path,
    args: &[&str],
) -> Result<String, String> {
    let work = tempfile::tempdir().map_err(|e| e.to_string())?;
    let mut lines = vec![
        "--image-file",
        "/dev/vdb",
        "--insecure",
        "-i",
        GUEST_IGNITION,
    ];
    lines.extend_from_slice(args);
    if let Some(bad) = lines.iter().find(|a| a.contains('\n')) {
        return Err(format!("argument {bad:?} has a newline"));
    }
    let args_file = work.path().join("args");
    std::fs::write(&args_file, lines.join("\n") + "\n").map_err(|e| e.to_string())?;
    // The config as a disk of whole sectors (qemu drops a partial last
    // one), its length through fw_cfg.
    let ign = std::fs::read(ignition).map_err(|e| format!("{}: {e}", ignition.display()))?;
    let mut padded = ign.clone();
    padded.resize(ign.len().div_ceil(512).max(1) * 512, 0);
    let ign_file = work.path().join("config.ign.disk");
    std::fs::write(&ign_file, &padded).map_err(|e| e.to_string())?;
    let console = work.path().join("console.log");
    let qemu_log = work.path().join("qemu.log");

    let mut cmd = Command::new(&guest.qemu);
    cmd.args(["-accel", "tcg", "-m", "512", "-smp", "1"])
        .args([
            "-nodefaults",
            "-no-reboot",
            "-display",
            "none",
            "-nic",
            "none",
        ])
        .arg("-serial")
        .arg(format!("file:{}", qemu_path(&console)))
        .arg("-kernel")
        .arg(&guest.kernel)
        .arg("-initrd")
        .arg(&guest.initrd)
        .args(["-append", "console=ttyS0 quiet panic=-1"])
        .arg("-drive")
        .arg(format!("file={},format=raw,if=virtio", qemu_path(disk)))
        .arg("-drive")
        .arg(format!(
            "file={},format=raw,if=virtio,readonly=on",
            qemu_path(image)
        ))
        .arg("-fw_cfg")
        .arg(format!("name=opt/okd/args,file={}", qemu_path(&args_file)))
        .arg("-drive")
        .arg(format!(
            "file={},format=raw,if=virtio,readonly=on",
            qemu_path(&ign_file)
        ))
        .arg("-fw_cfg")
        .arg(format!("name=opt/okd/ignition-size,string={}", ign.len()))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(File::create(&qemu_log).map_err(|e| e.to_string())?);
    let mut child = ChildGuard(
        cmd.spawn()
            .map_err(|e| format!("{}: {e}", guest.qemu.display()))?,
    );
    let started = Instant::now();
    let status = loop {
        match child.0.try_wait() {
            Ok(Some(st)) => break Some(st),
            Ok(None) if started.elapsed() > GUEST_TIMEOUT => break None,
            Ok(None) => std::thread::sleep(Duration::from_millis(100)),
            Err(e) => return Err(format!("waiting for qemu: {e}")),
        }
    };
    drop(child); // kills (by PID) and reaps qemu if it is still running
    let log =
        String::from_utf8_lossy(&std::fs::read(&console).unwrap_or_default()).replace('\r', "");
    let qemu_err = std::fs::read_to_string(&qemu_log).unwrap_or_default();
    let tail = |s: &str| super::kube::tail(s, 40);
    let Some(status) = status else {
        return Err(format!(
            "the guest did not power off within {GUEST_TIMEOUT:?}; qemu killed. console:\n{}",
            tail(&log)
        ));
    };
    let code = log
        .lines()
        .rev()
        .find_map(|l| l.trim().strip_prefix(MARKER))
        .map(|c| c.trim().to_string());
    match code.as_deref() {
        Some("0") => Ok(log),
        Some(c) => Err(format!(
            "coreos-installer exited with status {c} in {:.1} s. console:\n{}",
            started.elapsed().as_secs_f64(),
            tail(&log)
        )),
        None => Err(format!(
            "no `{MARKER}` line (qemu {status}; qemu stderr: {}). console:\n{}",
            qemu_err.trim(),
            tail(&log)
        )),
    }
}

/// A partition from a GPT: its name and byte range in the disk image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GptPartition {
    /// The partition name (UTF-16LE in the entry, up to 36 code units).
    pub name: String,
    /// Byte offset of its first sector.
    pub start: u64,
    /// Length in bytes (last LBA inclusive).
    pub len: u64,
}

/// Reads the primary GPT of a disk image with 512-byte sectors (UEFI 2.10
/// §5.3: the header at LBA 1 with signature `EFI PART`, the entry array at
/// the header's `PartitionEntryLBA` (offset 72), `NumberOfPartitionEntries`
/// (80) entries of `SizeOfPartitionEntry` (84) bytes; in each entry the type
/// GUID (0..16, all zero = unused), `StartingLBA` (32), `EndingLBA` (40,
/// inclusive) and the name (56..128, UTF-16LE, NUL-padded)). `Err` when there
/// is no GPT header.
pub fn gpt_partitions(disk: &Path) -> Result<Vec<GptPartition>, String> {
    let mut f = File::open(disk).map_err(|e| format!("{}: {e}", disk.display()))?;
    let mut hdr = [0u8; 512];
    f.seek(SeekFrom::Start(512))
        .and_then(|_| f.read_exact(&mut hdr))
        .map_err(|e| format!("reading the GPT header of {}: {e}", disk.display()))?;
    if &hdr[0..8] != b"EFI PART" {
        return Err(format!("{} has no GPT header at LBA 1", disk.display()));
    }
    let u32_at = |b: &[u8], o: usize| u32::from_le_bytes(b[o..o + 4].try_into().unwrap());
    let u64_at = |b: &[u8], o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap());
    let entries_lba = u64_at(&hdr, 72);
    let count = u32_at(&hdr, 80) as usize;
    let size = u32_at(&hdr, 84) as usize;
    if !(128..=4096).contains(&size) || count > 1024 {
        return Err(format!(
            "{}: implausible GPT entry array ({count} × {size} bytes)",
            disk.display()
        ));
    }
    let mut arr = vec![0u8; count * size];
    f.seek(SeekFrom::Start(entries_lba * 512))
        .and_then(|_| f.read_exact(&mut arr))
        .map_err(|e| format!("reading the GPT entries of {}: {e}", disk.display()))?;
    Ok(arr
        .chunks(size)
        .filter(|e| e[0..16].iter().any(|&b| b != 0))
        .map(|e| {
            let units: Vec<u16> = e[56..128]
                .chunks(2)
                .map(|c| u16::from_le_bytes([c[0], c[1]]))
                .take_while(|&u| u != 0)
                .collect();
            let (first, last) = (u64_at(e, 32), u64_at(e, 40));
            GptPartition {
                name: String::from_utf16_lossy(&units),
                start: first * 512,
                len: (last + 1).saturating_sub(first) * 512,
            }
        })
        .collect())
}

/// Reads file `path_in_boot` (relative to the filesystem root, e.g.
/// `ignition/config.ign`) from the ext4 filesystem in the GPT partition named
/// `boot` of the raw disk image `disk`: the partition is copied to a temp
/// file and read with `debugfs -R 'cat /<path>'` (e2fsprogs; no mount). `Err`
/// when there is no single `boot` partition, or debugfs reports an error
/// (e.g. `File not found by ext2_lookup`).
pub fn read_boot_file(disk: &Path, path_in_boot: &str) -> Result<Vec<u8>, String> {
    let debugfs = sbin("debugfs", "e2fsprogs").ok_or("debugfs is not installed")?;
    if path_in_boot.contains(['"', '\n', ' ', '\\']) {
        return Err(format!("unsupported path {path_in_boot:?}"));
    }
    let parts = gpt_partitions(disk)?;
    let boot: Vec<_> = parts.iter().filter(|p| p.name == "boot").collect();
    let [boot] = boot[..] else {
        return Err(format!(
            "{} has {} partitions named boot (partitions: {parts:?})",
            disk.display(),
            boot.len()
        ));
    };
    let mut src = File::open(disk).map_err(|e| format!("{}: {e}", disk.display()))?;
    src.seek(SeekFrom::Start(boot.start))
        .map_err(|e| e.to_string())?;
    let mut tmp = tempfile::NamedTempFile::new().map_err(|e| e.to_string())?;
    let copied = std::io::copy(&mut src.take(boot.len), tmp.as_file_mut())
        .map_err(|e| format!("copying the boot partition of {}: {e}", disk.display()))?;
    if copied != boot.len {
        return Err(format!(
            "{}: the boot partition ends past the end of the file",
            disk.display()
        ));
    }
    let out = Command::new(&debugfs)
        .arg("-R")
        .arg(format!("cat /{}", path_in_boot.trim_start_matches('/')))
        .arg(tmp.path())
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{}: {e}", debugfs.display()))?;
    // debugfs prints its version banner on stderr and exits 0 even when the
    // request fails, so any other stderr line is the error.
    let err: Vec<_> = String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| !l.starts_with("debugfs ") && !l.trim().is_empty())
        .map(str::to_string)
        .collect();
    if !out.status.success() || !err.is_empty() {
        return Err(format!(
            "debugfs cat /{path_in_boot} on the boot partition of {}: {}",
            disk.display(),
            err.join("; ")
        ));
    }
    Ok(out.stdout)
}

// The Ignition guest: Debian's Ignition applies a VM's config from fw_cfg.

/// How long the KVM probe ([`probe_kvm`]) may take. Where KVM works the
/// guest reaches `/init` in a second or two; on this project's hosts
/// (`/dev/kvm` is PVM, which boots no stock kernel) qemu either exits at once
/// ("failed to set MSR 0x10a") or hangs without serial output.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(20);

/// The line the Ignition guest's `/init` prints, then powering off, when the
/// kernel command line has `okd.probe` (tests/guest/build.sh).
pub const PROBE_MARKER: &str = "OKD-GUEST: probe booted";

/// The start of the line the Ignition guest's `/init` prints after each
/// Ignition stage: `OKD-GUEST: ignition <stage> exit <status> at <uptime> s`.
pub const IGNITION_MARKER: &str = "OKD-GUEST: ignition ";

/// The fw_cfg name Ignition's QEMU provider reads its config from
/// (coreos/ignition internal/providers/qemu/qemu_fwcfg.go). libvirt's qemu
/// driver turns the domain element
/// `<sysinfo type='fwcfg'><entry name='opt/com.coreos/config' file='F'/></sysinfo>`
/// (https://libvirt.org/formatdomain.html#smbios-system-information) into
/// qemu's `-fw_cfg name=opt/com.coreos/config,file=F`, which is what
/// [`ignition_boot`] passes.
pub const IGNITION_FW_CFG: &str = "opt/com.coreos/config";

/// Size of the root filesystem [`make_ignition_root`] makes for a bootstrap
/// config: the files of bootstrap.ign take under 1 MiB.
pub const IGNITION_ROOT_MIB: u64 = 64;

/// The largest Ignition config [`ignition_boot`] is meant for. The guest
/// reads fw_cfg through the kernel's `qemu_fw_cfg` sysfs file, which costs
/// O(offset) per page read, so a whole config costs time quadratic in its
/// size (coreos/ignition internal/providers/qemu/qemu_fwcfg.go says so, and
/// warns after 10 s of reading). Measured under TCG here: 269 KB take about
/// 1 s, so 1 MiB about 15 s; of the 17.9 MB of a release build's bootstrap
/// config (which carries the okd-install program) 2.1 MB were read after
/// 35 s and 5.8 MB after 250 s, so all of it would take about 40 minutes.
pub const FW_CFG_CONFIG_LIMIT_BYTES: u64 = 1 << 20;

/// Finds qemu-system-x86_64, mke2fs and debugfs, and the Ignition guest
/// (`ignition.cpio.gz`) that `tests/guest/build.sh` builds, running it if
/// needed. `None` after a loud `SKIPPING` message when any is missing; panics
/// instead when `OKD_REQUIRE_TOOLS=1` (CI).
pub fn ignition_kit() -> Option<Guest> {
    let qemu = okd_test_utils::tool(
        "qemu-system-x86_64",
        &["/usr/bin/qemu-system-x86_64"],
        Some("qemu-system-x86"),
    )?;
    sbin("mke2fs", "e2fsprogs")?;
    sbin("debugfs", "e2fsprogs")?;
    let dir = match guest_dir() {
        Ok(d) => d,
        Err(e) => return missing(&format!("the Ignition guest: {e}")),
    };
    let (kernel, initrd) = (dir.join("vmlinuz"), dir.join("ignition.cpio.gz"));
    if !kernel.is_file() || !initrd.is_file() {
        return missing(&format!(
            "the Ignition guest in {} is incomplete (run bash tests/guest/build.sh)",
            dir.display()
        ));
    }
    Some(Guest {
        qemu,
        kernel,
        initrd,
    })
}

/// How qemu runs the guest's CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accel {
    /// Hardware virtualisation through `/dev/kvm` (`-accel kvm -cpu host`).
    Kvm,
    /// qemu's binary translator (`-accel tcg`): slower, works anywhere.
    Tcg,
}

impl Accel {
    fn qemu_args(self) -> &'static [&'static str] {
        match self {
            Accel::Kvm => &["-accel", "kvm", "-cpu", "host"],
            Accel::Tcg => &["-accel", "tcg"],
        }
    }
}

impl std::fmt::Display for Accel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Accel::Kvm => "KVM",
            Accel::Tcg => "TCG",
        })
    }
}

/// The accelerator [`accel`] chose, and why.
#[derive(Debug, Clone)]
pub struct AccelChoice {
    /// KVM when the probe booted, else TCG.
    pub accel: Accel,
    /// The probe's result, for the test output.
    pub reason: String,
}

/// The accelerator for the Ignition guest in this test process: KVM when
/// [`probe_kvm`] boots the guest, else TCG. Probed once per process (the
/// first call takes up to [`PROBE_TIMEOUT`]) and then cached.
pub fn accel(guest: &Guest) -> AccelChoice {
    static CHOICE: OnceLock<AccelChoice> = OnceLock::new();
    CHOICE
        .get_or_init(|| match probe_kvm(guest) {
            Ok(t) => AccelChoice {
                accel: Accel::Kvm,
                reason: format!("the KVM probe booted in {:.1} s", t.as_secs_f64()),
            },
            Err(e) => AccelChoice {
                accel: Accel::Tcg,
                reason: format!("KVM does not boot the guest here: {e}"),
            },
        })
        .clone()
}

/// Boots `guest` (the Ignition guest) under KVM with `okd.probe` on the
/// kernel command line, so that `/init` only prints [`PROBE_MARKER`] and
/// powers off. `Ok` with the wall time when the marker came and qemu exited
/// within [`PROBE_TIMEOUT`]; `Err` saying why not (no usable `/dev/kvm`,
/// qemu's error, or the timeout, after which qemu is killed).
pub fn probe_kvm(guest: &Guest) -> Result<Duration, String> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/kvm")
        .map_err(|e| format!("/dev/kvm: {e}"))?;
    let b = boot(guest, Accel::Kvm, "okd.probe", &[], PROBE_TIMEOUT, None)?;
    match b.status {
        Some(st) if b.console.contains(PROBE_MARKER) && st.success() => Ok(b.wall),
        Some(st) => Err(format!(
            "qemu -accel kvm {st} without `{PROBE_MARKER}`: {}",
            b.qemu_stderr.lines().next().unwrap_or("(no stderr)")
        )),
        None => Err(format!(
            "no `{PROBE_MARKER}` within {PROBE_TIMEOUT:?} under -accel kvm \
             ({} bytes on the serial console); qemu killed",
            b.console.len()
        )),
    }
}

/// One qemu run of a guest.
struct Boot {
    /// qemu's exit status; `None` when it was killed at the timeout.
    status: Option<std::process::ExitStatus>,
    /// The serial console, `\r` removed.
    console: String,
    qemu_stderr: String,
    /// From spawning qemu to its exit (or kill).
    wall: Duration,
    /// From spawning qemu to the first console line with the `done` text.
    done_at: Option<Duration>,
}

/// How often [`boot`] looks at the console and at qemu.
const BOOT_POLL: Duration = Duration::from_millis(20);

/// Runs qemu on `guest` (512 MiB, one CPU, no network, serial console to a
/// file) with `append` added to the kernel command line and `args` added to
/// qemu's, until qemu exits or `timeout` passes (then it is killed by PID,
/// as it is when this function unwinds).
fn boot(
    guest: &Guest,
    accel: Accel,
    append: &str,
    args: &[String],
    timeout: Duration,
    done: Option<&str>,
) -> Result<Boot, String> {
    let work = tempfile::tempdir().map_err(|e| e.to_string())?;
    let console = work.path().join("console.log");
    let qemu_log = work.path().join("qemu.log");
    let mut cmd = Command::new(&guest.qemu);
    cmd.args(accel.qemu_args())
        .args(["-m", "512", "-smp", "1", "-nodefaults", "-no-reboot"])
        .args(["-display", "none", "-nic", "none"])
        .arg("-serial")
        .arg(format!("file:{}", qemu_path(&console)))
        .arg("-kernel")
        .arg(&guest.kernel)
        .arg("-initrd")
        .arg(&guest.initrd)
        .arg("-append")
        .arg(format!("console=ttyS0 quiet panic=-1 {append}").trim_end())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(File::create(&qemu_log).map_err(|e| e.to_string())?);
    let read_console =
        || String::from_utf8_lossy(&std::fs::read(&console).unwrap_or_default()).replace('\r', "");
    let started = Instant::now();
    let mut child = ChildGuard(
        cmd.spawn()
            .map_err(|e| format!("{}: {e}", guest.qemu.display()))?,
    );
    let mut done_at = None;
    let status = loop {
        if let (Some(text), None) = (done, done_at)
            && read_console().contains(text)
        {
            done_at = Some(started.elapsed());
        }
        match child.0.try_wait() {
            Ok(Some(st)) => break Some(st),
            Ok(None) if started.elapsed() > timeout => break None,
            Ok(None) => std::thread::sleep(BOOT_POLL),
            Err(e) => return Err(format!("waiting for qemu: {e}")),
        }
    };
    let wall = started.elapsed();
    drop(child); // kills (by PID) and reaps qemu if it is still running
    let console = read_console();
    if let (Some(text), None) = (done, done_at) {
        done_at = console.contains(text).then_some(wall);
    }
    Ok(Boot {
        status,
        console,
        qemu_stderr: std::fs::read_to_string(&qemu_log).unwrap_or_default(),
        wall,
        done_at,
    })
}

/// What one [`ignition_boot`] printed and how long it took.
#[derive(Debug, Clone)]
pub struct IgnitionBoot {
    /// The accelerator it ran with.
    pub accel: Accel,
    /// The serial console (`/init`'s markers and Ignition's log), `\r` removed.
    pub console: String,
    /// From spawning qemu to its exit after the power-off.
    pub wall: Duration,
    /// From spawning qemu to the files stage's marker on the console (the
    /// host's clock, polled every 20 ms): boot to Ignition done.
    pub done: Duration,
    /// Guest uptime, seconds, when `/init` started.
    pub init_s: f64,
    /// Guest uptime, seconds, when the fetch stage exited.
    pub fetch_s: f64,
    /// Guest uptime, seconds, when the files stage exited.
    pub files_s: f64,
}

/// `(status, uptime)` from the guest's `OKD-GUEST: ignition <stage> exit
/// <status> at <uptime> s` line.
fn stage_line(console: &str, stage: &str) -> Option<(String, f64)> {
    let prefix = format!("{IGNITION_MARKER}{stage} exit ");
    let rest = console
        .lines()
        .find_map(|l| l.trim().strip_prefix(prefix.as_str()))?;
    let (code, at) = rest.split_once(" at ")?;
    Some((
        code.trim().to_string(),
        at.trim_end_matches(" s").parse().ok()?,
    ))
}

/// Boots the Ignition guest (`ignition_kit`) with `root_fs` (a raw ext4
/// image such as [`make_ignition_root`] makes) as its writable `/dev/vda` and
/// the Ignition config file `config` as fw_cfg [`IGNITION_FW_CFG`], where
/// the guest's `/init` runs Debian's Ignition as a CoreOS initramfs does:
///
/// `ignition -platform=qemu -stage=fetch`, then
/// `ignition -platform=qemu -stage=files -root=/sysroot` (`/dev/vda` mounted there).
///
/// `Ok` when both stages exited 0 and the guest powered off within
/// [`GUEST_TIMEOUT`]. `Err` holds the last 40 console lines (Ignition's own
/// error is there) when a stage failed, a marker is missing (qemu failed, the
/// guest panicked) or the guest did not power off in time (qemu is then
/// killed by PID, as it is when this function unwinds).
pub fn ignition_boot(
    guest: &Guest,
    accel: Accel,
    config: &Path,
    root_fs: &Path,
) -> Result<IgnitionBoot, String> {
    let files_done = format!("{IGNITION_MARKER}files exit ");
    let b = boot(
        guest,
        accel,
        "",
        &ignition_args(config, root_fs),
        GUEST_TIMEOUT,
        Some(&files_done),
    )?;
    let tail = |s: &str| super::kube::tail(s, 40);
    let Some(status) = b.status else {
        return Err(format!(
            "the guest ({accel}) did not power off within {GUEST_TIMEOUT:?}; qemu killed. console:\n{}",
            tail(&b.console)
        ));
    };
    let mut at = [0.0; 2];
    for (i, stage) in ["fetch", "files"].into_iter().enumerate() {
        match stage_line(&b.console, stage) {
            Some((code, t)) if code == "0" => at[i] = t,
            Some((code, _)) => {
                return Err(format!(
                    "Ignition's {stage} stage exited with status {code} in the guest ({accel}). console:\n{}",
                    tail(&b.console)
                ));
            }
            None => {
                return Err(format!(
                    "no `{IGNITION_MARKER}{stage} exit` line (qemu {status}; qemu stderr: {}). console:\n{}",
                    b.qemu_stderr.trim(),
                    tail(&b.console)
                ));
            }
        }
    }
    let init_s = b
        .console
        .lines()
        .find_map(|l| l.trim().strip_prefix("OKD-GUEST: init at "))
        .and_then(|t| t.trim_end_matches(" s").parse().ok())
        .unwrap_or(f64::NAN);
    Ok(IgnitionBoot {
        accel,
        done: b.done_at.unwrap_or(b.wall),
        console: b.console,
        wall: b.wall,
        init_s,
        fetch_s: at[0],
        files_s: at[1],
    })
}

/// qemu's arguments for the Ignition guest: `root_fs` as `/dev/vda`,
/// `config` as fw_cfg [`IGNITION_FW_CFG`].
fn ignition_args(config: &Path, root_fs: &Path) -> [String; 4] {
    [
        "-drive".to_string(),
        format!("file={},format=raw,if=virtio", qemu_path(root_fs)),
        "-fw_cfg".to_string(),
        format!("name={IGNITION_FW_CFG},file={}", qemu_path(config)),
    ]
}

/// How far the Ignition guest's fetch stage read a config through fw_cfg in
/// a bounded run ([`fw_cfg_read_progress`]).
#[derive(Debug, Clone, Copy)]
pub struct FwCfgProgress {
    /// KiB read when the run ended (Ignition's last `Reading config from
    /// QEMU fw_cfg: <read>/<total> KB` line; it prints one every 5 s once a
    /// read has taken 10 s, so 0 for reads shorter than that).
    pub read_kib: u64,
    /// The config's size, KiB.
    pub total_kib: u64,
    /// From the end of Ignition's `modprobe qemu_fw_cfg` step (the read
    /// starts right after) to the end of the run.
    pub reading: Duration,
    /// Whether the fetch stage finished within the run.
    pub finished: bool,
}

/// Boots the Ignition guest on `config` as [`ignition_boot`] does, but for
/// at most `budget` (then qemu is killed), and reports how much of the config
/// Ignition read through fw_cfg by then: for configs too large for fw_cfg
/// (see [`FW_CFG_CONFIG_LIMIT_BYTES`]). `Err` when the read never started
/// (qemu or the guest failed before it).
pub fn fw_cfg_read_progress(
    guest: &Guest,
    accel: Accel,
    config: &Path,
    root_fs: &Path,
    budget: Duration,
) -> Result<FwCfgProgress, String> {
    let started_read = "[finished] loading QEMU firmware config module";
    let b = boot(
        guest,
        accel,
        "",
        &ignition_args(config, root_fs),
        budget,
        Some(started_read),
    )?;
    let Some(read_from) = b.done_at else {
        return Err(format!(
            "Ignition never started reading fw_cfg (qemu stderr: {}). console:\n{}",
            b.qemu_stderr.trim(),
            super::kube::tail(&b.console, 40)
        ));
    };
    let total_kib = std::fs::metadata(config)
        .map_err(|e| format!("{}: {e}", config.display()))?
        .len()
        / 1024;
    let finished = stage_line(&b.console, "fetch").is_some();
    let read_kib = if finished {
        total_kib
    } else {
        b.console
            .lines()
            .filter_map(|l| l.split("Reading config from QEMU fw_cfg: ").nth(1))
            .filter_map(|r| r.split('/').next()?.trim().parse().ok())
            .next_back()
            .unwrap_or(0)
    };
    Ok(FwCfgProgress {
        read_kib,
        total_kib,
        reading: b.wall.saturating_sub(read_from),
        finished,
    })
}

/// Makes `path` a raw ext4 filesystem image of `size_mib` MiB, no partition
/// table (the Ignition guest mounts all of `/dev/vda`), holding the smallest
/// root Ignition's files stage accepts ([`super::ignition_root`]: passwd,
/// group, shadow, gshadow, SELinux disabled). Made by `mke2fs -d` (e2fsprogs),
/// without loop devices or mounts.
pub fn make_ignition_root(path: &Path, size_mib: u64) -> Result<(), String> {
    let mke2fs = sbin("mke2fs", "e2fsprogs").ok_or("mke2fs is not installed")?;
    let work = tempfile::tempdir().map_err(|e| e.to_string())?;
    let (root, _, _) = super::ignition_root(work.path());
    File::create(path)
        .and_then(|f| f.set_len(size_mib * 1024 * 1024))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    run(Command::new(&mke2fs)
        .args([
            "-q",
            "-F",
            "-t",
            "ext4",
            "-L",
            "root",
            "-E",
            "root_owner=0:0",
            "-d",
        ])
        .arg(&root)
        .arg(path))
}

/// Copies every file of the ext4 filesystem image `fs` into the existing
/// directory `dest` with `debugfs -R 'rdump / <dest>'` (e2fsprogs; no
/// mount), which keeps modes, owners and symlinks. `Err` when debugfs
/// reports an error.
pub fn dump_ext4(fs: &Path, dest: &Path) -> Result<(), String> {
    let debugfs = sbin("debugfs", "e2fsprogs").ok_or("debugfs is not installed")?;
    let d = dest.display().to_string();
    if d.contains(['"', '\n', ' ', '\\']) {
        return Err(format!("unsupported directory {d:?}"));
    }
    let out = Command::new(&debugfs)
        .arg("-R")
        .arg(format!("rdump / {d}"))
        .arg(fs)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{}: {e}", debugfs.display()))?;
    // As in read_boot_file: any stderr line but the banner is an error.
    let err: Vec<_> = String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| !l.starts_with("debugfs ") && !l.trim().is_empty())
        .map(str::to_string)
        .collect();
    if !out.status.success() || !err.is_empty() {
        return Err(format!(
            "debugfs rdump / of {}: {}",
            fs.display(),
            err.join("; ")
        ));
    }
    Ok(())
}

/// The VMs `okd-install create cluster` made for the README's example.
#[derive(Debug, Clone)]
pub struct ExampleCluster {
    /// The asset directory (`<base>/c`).
    pub dir: PathBuf,
    /// The SSH public key given as `pub_key` (one line).
    pub pub_key: String,
    /// The bootstrap VM's Ignition file as the record `vm-cluster.json`
    /// names it (the file its domain's fw_cfg entry points at).
    pub bootstrap_ignition: PathBuf,
    /// What the command printed (stdout, then stderr).
    pub output: String,
}

/// Runs the README's `okd-install create cluster` (as tests/vm_cluster.rs
/// does) on `examples/kcli-libvirt/parameters.yml` through libvirt's test
/// driver into `<base>/c`, with a new SSH key `<base>/id.pub` (a fixed one
/// when ssh-keygen is missing):
///
/// `okd-install create cluster --dir <base>/c --paramfile examples/kcli-libvirt/parameters.yml
///  --libvirt-uri test:///default --pool default-pool -P version=upstream
///  -P pub_key=<base>/id.pub -P image= -P disk_size=10`
///
/// Needs virsh (libvirt-clients). `Err` with the output when it fails or the
/// record names no bootstrap VM.
pub fn create_example_cluster(base: &Path) -> Result<ExampleCluster, String> {
    let key = base.join("id");
    let made = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", "okd-vm-boot-test"])
        .arg("-f")
        .arg(&key)
        .stdin(Stdio::null())
        .status();
    if !matches!(made, Ok(s) if s.success()) {
        std::fs::write(
            base.join("id.pub"),
            "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOkd test\n",
        )
        .map_err(|e| e.to_string())?;
    }
    let pub_key = std::fs::read_to_string(base.join("id.pub"))
        .map_err(|e| e.to_string())?
        .trim()
        .to_string();
    let dir = base.join("c");
    let out = Command::new(env!("CARGO_BIN_EXE_okd-install"))
        .args(["create", "cluster", "--dir"])
        .arg(&dir)
        .arg("--paramfile")
        .arg(super::repo().join("examples/kcli-libvirt/parameters.yml"))
        .args(["--libvirt-uri", "test:///default", "--pool", "default-pool"])
        .args(["-P", "version=upstream", "-P"])
        .arg(format!("pub_key={}", base.join("id.pub").display()))
        .args(["-P", "image=", "-P", "disk_size=10"])
        .env("HOME", base)
        .env_remove("OPENSHIFT_INSTALL_RELEASE_IMAGE_OVERRIDE")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("running okd-install: {e}"))?;
    let output =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        return Err(format!("okd-install create cluster failed: {output}"));
    }
    let record = dir.join("vm-cluster.json");
    let rec: serde_json::Value = serde_json::from_slice(
        &std::fs::read(&record).map_err(|e| format!("{}: {e}", record.display()))?,
    )
    .map_err(|e| format!("{}: {e}", record.display()))?;
    let bootstrap_ignition = rec["vms"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|vm| vm["role"] == "bootstrap")
        .and_then(|vm| vm["ignition"].as_str())
        .map(PathBuf::from)
        .ok_or_else(|| format!("{} names no bootstrap VM's Ignition", record.display()))?;
    Ok(ExampleCluster {
        dir,
        pub_key,
        bootstrap_ignition,
        output,
    })
}
