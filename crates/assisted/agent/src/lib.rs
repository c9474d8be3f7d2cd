//! The discovery agent (issue #24): what runs on each host booted
//! from the discovery image (`okd-install agent`), after
//! openshift/assisted-installer-agent; the host is read from the machine's
//! own files the way its inventory does (`src/inventory/*.go`,
//! `src/scanners/machine_uuid_scanner.go`):
//!
//! - [`host_id`]: the host's id before it registers;
//! - [`inventory::gather`]: CPU, memory, boot, system vendor, host name,
//!   TPM, disks, network interfaces and routes of the swagger `inventory`
//!   ([`okd_assisted_api::Inventory`]);
//! - [`runner::run`]: registration with the service and the next-step
//!   runner (poll, run, reply; back-off and replies kept until taken).
//! - [`net`]: the probes behind its steps: ARP ([`net::arp_probe`]), ICMP
//!   echo ([`net::ping`]) and the disk's fdatasync latency
//!   ([`net::disk_sync_speed`]).
//! - [`checks`]: the steps built on them: connectivity-check,
//!   domain-resolution, verify-vips, free-network-addresses,
//!   installation-disk-speed-check;
//! - [`disk_guard`]: the one gate before a step touches a disk the
//!   service named: a block device under the root's `/dev` that this
//!   host's own inventory reports as eligible for installation;
//! - [`ntp`]: the ntp-synchronizer step through `chronyc`;
//! - [`install`]: the install step (the host's Ignition kept with its
//!   request); [`logs`]: the logs-gather step.
//!
//! Every reader takes a [`Root`], so the tests run them on a made-up
//! machine as well as on the real one.

pub mod checks;
pub mod disk_guard;
pub mod install;
pub mod inventory;
pub mod logs;
pub mod net;
pub mod ntp;
pub mod runner;

use std::path::{Component, Path, PathBuf};

/// Where the machine's `/proc` and `/sys` are (`/` on the host; the real
/// agent runs in a container with the host's `/` at `/host`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root(pub PathBuf);

impl Default for Root {
    fn default() -> Self {
        Root(PathBuf::from("/"))
    }
}

impl Root {
    /// `<root>/<path>` (`path` absolute or not, the same): its `.` and
    /// empty components dropped, its `..` components resolved as text
    /// and never above the root (`/dev/../etc/shadow` is
    /// `<root>/etc/shadow`, `/../x` is `<root>/x`). Symbolic links are not
    /// looked at: a path that must stay in a directory of the root after
    /// they are followed is [`disk_guard`]'s to check.
    pub fn join(&self, path: &str) -> PathBuf {
        let mut out = self.0.clone();
        let mut depth = 0usize;
        for c in Path::new(path).components() {
            match c {
                Component::Normal(n) => {
                    out.push(n);
                    depth += 1;
                }
                Component::ParentDir if depth > 0 => {
                    out.pop();
                    depth -= 1;
                }
                Component::ParentDir
                | Component::RootDir
                | Component::CurDir
                | Component::Prefix(_) => {}
            }
        }
        out
    }

    /// The trimmed text of `<root>/<path>`, `None` when missing or empty.
    pub fn read(&self, path: &str) -> Option<String> {
        std::fs::read_to_string(self.join(path))
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
    }

    /// Whether `<root>/<path>` exists.
    pub fn exists(&self, path: &str) -> bool {
        self.join(path).exists()
    }
}

/// Serials that name no board (vendors' placeholders).
const NO_SERIAL: &[&str] = &[
    "none",
    "unknown",
    "not specified",
    "default string",
    "to be filled by o.e.m.",
    "0",
    "system serial number",
];

/// A system UUID some vendors put on every board (rejected as an identity).
const VENDOR_CONSTANT_UUID: &str = "03000200-0400-0500-0006-000700080009";

/// The failure id when nothing identifies the host.
pub const FAILURE_ID: &str = "deaddead-dead-dead-dead-deaddeaddead";

/// 16 bytes as a UUID's text (8-4-4-4-12 hex digits).
fn as_uuid(b: &[u8; 16]) -> String {
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

fn md5_uuid(text: &str) -> String {
    use md5::Digest;
    let d: [u8; 16] = md5::Md5::digest(text.as_bytes()).into();
    as_uuid(&d)
}

/// The host's id (assisted-installer-agent `machine_uuid_scanner.go`, the
/// reference's §5.1): the MD5 of the motherboard serial
/// (`/sys/class/dmi/id/board_serial`) formatted as a UUID, unless it is
/// missing or a placeholder; else the SMBIOS system UUID
/// (`/sys/class/dmi/id/product_uuid`, lower case), unless empty, all zero or
/// the known vendor constant; else the MD5 of the lowest MAC address of the
/// machine's interfaces (`/sys/class/net/*/address`, loopback and all-zero
/// left out); else [`FAILURE_ID`].
pub fn host_id(root: &Root) -> String {
    if let Some(serial) = root.read("/sys/class/dmi/id/board_serial")
        && !NO_SERIAL.contains(&serial.to_lowercase().as_str())
    {
        return md5_uuid(&serial);
    }
    if let Some(uuid) = root.read("/sys/class/dmi/id/product_uuid") {
        let u = uuid.to_lowercase();
        let zero = u.chars().all(|c| c == '0' || c == '-');
        if !zero && u != VENDOR_CONSTANT_UUID {
            return u;
        }
    }
    match lowest_mac(root) {
        Some(mac) => md5_uuid(&mac),
        None => FAILURE_ID.to_string(),
    }
}

/// The lowest MAC address of the machine's interfaces (lower case,
/// colon-separated), loopback and all-zero addresses left out.
pub fn lowest_mac(root: &Root) -> Option<String> {
    macs(root).into_iter().min()
}

/// Every interface's MAC address (`/sys/class/net/<if>/address`), sorted
/// by interface name; loopback and all-zero addresses left out.
pub fn macs(root: &Root) -> Vec<String> {
    let dir: &Path = &root.join("/sys/class/net");
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
        .iter()
        .filter(|n| *n != "lo")
        .filter_map(|n| root.read(&format!("/sys/class/net/{n}/address")))
        .map(|m| m.to_lowercase())
        .filter(|m| m.len() == 17 && m != "00:00:00:00:00:00")
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake(files: &[(&str, &str)]) -> (tempfile::TempDir, Root) {
        let d = tempfile::tempdir().unwrap();
        for (p, text) in files {
            let path = d.path().join(p.trim_start_matches('/'));
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        let root = Root(d.path().to_path_buf());
        (d, root)
    }

    #[test]
    fn the_board_serial_then_the_system_uuid_then_the_lowest_mac() {
        let nets = [
            ("/sys/class/net/lo/address", "00:00:00:00:00:00\n"),
            ("/sys/class/net/ens4/address", "52:54:00:AA:00:02\n"),
            ("/sys/class/net/ens3/address", "52:54:00:aa:00:09\n"),
        ];
        let (_d, r) = fake(
            &[
                &nets[..],
                &[
                    ("/sys/class/dmi/id/board_serial", "ABC123\n"),
                    (
                        "/sys/class/dmi/id/product_uuid",
                        "4C4C4544-0000-1111-2222-333344445555\n",
                    ),
                ],
            ]
            .concat(),
        );
        // The serial's digest (md5_uuid is checked against RFC 1321 below).
        let id = host_id(&r);
        assert_eq!(id, md5_uuid("ABC123"));
        assert_eq!(id.len(), 36);
        let (_d, r) = fake(
            &[
                &nets[..],
                &[
                    ("/sys/class/dmi/id/board_serial", "To be filled by O.E.M.\n"),
                    (
                        "/sys/class/dmi/id/product_uuid",
                        "4C4C4544-0000-1111-2222-333344445555\n",
                    ),
                ],
            ]
            .concat(),
        );
        assert_eq!(host_id(&r), "4c4c4544-0000-1111-2222-333344445555");
        let (_d, r) = fake(
            &[
                &nets[..],
                &[(
                    "/sys/class/dmi/id/product_uuid",
                    "00000000-0000-0000-0000-000000000000\n",
                )],
            ]
            .concat(),
        );
        assert_eq!(lowest_mac(&r).as_deref(), Some("52:54:00:aa:00:02"));
        assert_eq!(host_id(&r), md5_uuid("52:54:00:aa:00:02"));
        let (_d, r) = fake(&[("/sys/class/net/lo/address", "00:00:00:00:00:00\n")]);
        assert_eq!(host_id(&r), FAILURE_ID);
    }

    #[test]
    fn join_stays_under_the_root() {
        let r = Root(PathBuf::from("/host"));
        assert_eq!(r.join("/sys/class/net"), Path::new("/host/sys/class/net"));
        assert_eq!(r.join("proc/cpuinfo"), Path::new("/host/proc/cpuinfo"));
        assert_eq!(r.join("/dev/../etc/shadow"), Path::new("/host/etc/shadow"));
        assert_eq!(r.join("/../../etc/shadow"), Path::new("/host/etc/shadow"));
        assert_eq!(
            r.join("/dev/./disk//by-id/"),
            Path::new("/host/dev/disk/by-id")
        );
        assert_eq!(r.join("/"), Path::new("/host"));
        assert_eq!(Root::default().join("/dev/../../x"), Path::new("/x"));
    }

    #[test]
    fn md5_as_uuid_is_rfc_1321s_digest() {
        // RFC 1321 test suite: MD5("abc") = 900150983cd24fb0d6963f7d28e17f72.
        assert_eq!(md5_uuid("abc"), "90015098-3cd2-4fb0-d696-3f7d28e17f72");
    }
}
