//! Files too large for fw_cfg, carried on a read-only side disk.
//!
//! Ignition reads `opt/com.coreos/config` through the kernel's fw_cfg sysfs
//! file, in time that grows with the square of its size (coreos/ignition
//! `internal/providers/qemu/qemu_fwcfg.go` warns about large configs):
//! under TCG a 270 KB config takes about a second, the bootstrap's 18 MB
//! config with the okd-install program in it about 40 minutes. So before a
//! VM's config is written, every file whose inline contents exceed
//! [`SIDE_THRESHOLD`] moves to a raw image attached to the VM as a
//! read-only virtio disk (serial [`okd_libvirt::SIDE_DISK_SERIAL`]); the
//! config carries instead a script and a unit that copy each file from
//! that disk at boot, before `sysinit.target`, checked against its SHA-512.

use std::fmt::Write as _;
use std::io::Read as _;

use okd_types::ignition::{Config, File, Unit};
use sha2::{Digest as _, Sha512};

/// Inline contents (the data URL's length) above which a file moves to
/// the side disk: 512 KiB.
pub const SIDE_THRESHOLD: usize = 512 * 1024;

/// Where the copying script lands on the node.
pub const SIDE_SCRIPT: &str = "/usr/local/libexec/okd-side-files.sh";

/// The unit that runs it.
pub const SIDE_UNIT: &str = "okd-side-files.service";

/// The block size of the image's layout: each file starts on a multiple.
const BLOCK: usize = 4096;

/// One file on the side disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SideFile {
    /// Its path on the node.
    pub path: String,
    /// Its mode (permission bits).
    pub mode: u32,
    /// Where it starts in the image, in 4096-byte blocks.
    pub block: u64,
    /// Its length, bytes.
    pub len: u64,
    /// SHA-512 of its contents, hex.
    pub sha512: String,
}

/// The side image's bytes and what is in it.
pub type SideImage = (Vec<u8>, Vec<SideFile>);

/// Moves the large files of `config` out: returns the side image (the
/// files' contents, each from a 4096-byte boundary) and what is in it, and
/// leaves in `config` the script ([`script`]) and the enabled unit
/// ([`unit`]) instead. `Ok(None)` when no file is that large.
///
/// # Errors
/// A file whose data URL or gzip contents cannot be decoded, naming its path.
pub fn split(config: &mut Config) -> Result<Option<SideImage>, String> {
    let mut image = Vec::new();
    let mut moved = Vec::new();
    let mut keep = Vec::new();
    for f in std::mem::take(&mut config.storage.files) {
        let source = f.contents.source.clone().unwrap_or_default();
        if source.len() <= SIDE_THRESHOLD || !source.starts_with("data:") {
            keep.push(f);
            continue;
        }
        let mut data = okd_types::dataurl::decode(&source)
            .map_err(|e| format!("{}: its data URL: {e}", f.path))?;
        match f.contents.compression.as_deref() {
            None | Some("") => {}
            Some("gzip") => {
                let mut out = Vec::new();
                flate2::read::GzDecoder::new(&data[..])
                    .read_to_end(&mut out)
                    .map_err(|e| format!("{}: its gzip contents: {e}", f.path))?;
                data = out;
            }
            Some(other) => return Err(format!("{}: unknown compression {other:?}", f.path)),
        }
        let block = (image.len() / BLOCK) as u64;
        moved.push(SideFile {
            path: f.path.clone(),
            mode: f.mode.unwrap_or(0o644),
            block,
            len: data.len() as u64,
            sha512: hex(&Sha512::digest(&data)),
        });
        image.extend_from_slice(&data);
        image.resize(image.len().div_ceil(BLOCK) * BLOCK, 0);
    }
    config.storage.files = keep;
    if moved.is_empty() {
        return Ok(None);
    }
    config
        .storage
        .files
        .push(File::data(SIDE_SCRIPT, 0o755, script(&moved).as_bytes()));
    config
        .systemd
        .units
        .push(Unit::new(SIDE_UNIT, Some(unit()), Some(true)));
    Ok(Some((image, moved)))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// The script that copies `files` from the side disk (POSIX sh with `dd`,
/// `head`, `sha512sum`, `cut`, `chmod`, `mv`; coreutils or busybox): `okd-side-files.sh [DEVICE
/// [ROOT]]`, DEVICE defaulting to `/dev/disk/by-id/virtio-okd-files`,
/// ROOT to `/`. Each file is written next to its place, checked, given
/// its mode and renamed into place; a mismatch stops it naming the file
/// and leaves nothing behind.
pub fn script(files: &[SideFile]) -> String {
    let mut s = format!(
        "#!/bin/sh\n\
         # okd-install: files too large for fw_cfg, from the VM's read-only side disk.\n\
         # usage: okd-side-files.sh [DEVICE [ROOT]]\n\
         set -eu\n\
         dev=${{1:-/dev/disk/by-id/virtio-{serial}}}\n\
         root=${{2:-}}\n\
         take() {{ # path mode block length sha512\n\
         \x20 dest=\"$root$1\"\n\
         \x20 mkdir -p \"$(dirname \"$dest\")\"\n\
         \x20 tmp=\"$dest.okd-side\"\n\
         \x20 dd if=\"$dev\" bs={BLOCK} skip=\"$3\" count=$(( ($4 + {BLOCK} - 1) / {BLOCK} )) 2>/dev/null | head -c \"$4\" > \"$tmp\"\n\
         \x20 got=$(sha512sum < \"$tmp\" | cut -d' ' -f1)\n\
         \x20 if [ \"$got\" != \"$5\" ]; then\n\
         \x20   rm -f \"$tmp\"\n\
         \x20   echo \"okd-side-files: $1: the side disk's copy does not match its SHA-512\" >&2\n\
         \x20   exit 1\n\
         \x20 fi\n\
         \x20 chmod \"$2\" \"$tmp\"\n\
         \x20 mv \"$tmp\" \"$dest\"\n\
         \x20 echo \"okd-side-files: $1 ($4 bytes)\"\n\
         }}\n",
        serial = okd_libvirt::SIDE_DISK_SERIAL,
    );
    for f in files {
        let _ = writeln!(
            s,
            "take '{}' {:o} {} {} {}",
            f.path.replace('\'', "'\\''"),
            f.mode,
            f.block,
            f.len,
            f.sha512
        );
    }
    s
}

/// The unit: once, early (before `sysinit.target`, after the side disk
/// appeared and the local file systems are mounted).
pub fn unit() -> String {
    let dev = format!(
        "dev-disk-by\\x2did-virtio\\x2d{}.device",
        okd_libvirt::SIDE_DISK_SERIAL.replace('-', "\\x2d")
    );
    format!(
        "[Unit]\n\
         Description=okd-install: files too large for fw_cfg, from the VM's side disk\n\
         DefaultDependencies=no\n\
         Requires={dev}\n\
         After={dev} local-fs.target\n\
         Before=sysinit.target\n\
         \n\
         [Service]\n\
         Type=oneshot\n\
         RemainAfterExit=yes\n\
         ExecStart={SIDE_SCRIPT}\n\
         \n\
         [Install]\n\
         WantedBy=sysinit.target\n"
    )
}
