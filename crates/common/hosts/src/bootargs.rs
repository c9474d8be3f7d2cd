//! Values of the host files that end up in kernel arguments.
//!
//! A node's host name, NIC and install disk, and the image file names, are
//! written into the install and PXE kernel command lines (`ip=` of
//! dracut.cmdline(7): `ip=<addr>::<gw>:<netmask>:<hostname>:<nic>:none`,
//! `coreos.inst.install_dev=`, `coreos.inst.image_url=`,
//! `coreos.live.rootfs_url=`) and into boot-loader scripts, one argument per
//! space-separated word. Whitespace or a control character in one of them
//! would split it into other arguments or lines, and a `:` in a host name or
//! NIC would shift the `ip=` fields; an interface name also follows the
//! kernel's rule (`dev_valid_name` in Linux `net/core/dev.c`: 1 to 15
//! octets, not `.` or `..`, no `/`, `:` or whitespace). The short host name
//! is also a DNS owner name, so it must be a host name label (RFC 1123).

use crate::{AGENT_CONFIG_FILE, BASTION_CONFIG_FILE, HostsError, Node, OsImages, Role, invalid};

/// A host name label (RFC 1123 §2.1, RFC 952): what the DNS zones, the
/// `ip=` argument and the node itself use as its short name.
fn host_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && !s.starts_with('-')
        && !s.ends_with('-')
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

fn breaks_args(s: &str) -> bool {
    s.chars().any(|c| c.is_whitespace() || c.is_control())
}

/// Why `disk` is not a whole disk's device path, if it is not: relative,
/// outside `/dev/`, with `.` or `..` components, or a partition (`sda1`,
/// `vdb2`, `nvme0n1p1`, `mmcblk0p1`, `…-part1` under `/dev/disk/`). A path
/// that only names a disk on the node cannot be checked from here; the
/// dashboard says when a host fetched its pointer config and never came
/// back (coreos-installer failed, often on the disk).
pub fn whole_disk(disk: &str) -> Result<(), &'static str> {
    let Some(rest) = disk.strip_prefix("/dev/") else {
        return Err(if disk.starts_with('/') {
            "is not under /dev/"
        } else {
            "is not an absolute device path"
        });
    };
    if rest.is_empty()
        || rest
            .split('/')
            .any(|c| c.is_empty() || c == "." || c == "..")
    {
        return Err("is not a device path");
    }
    let name = rest.rsplit('/').next().unwrap_or(rest);
    let partition = if rest.starts_with("disk/") {
        name.rsplit_once("-part")
            .is_some_and(|(_, n)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    } else if let Some(p) = ["nvme", "mmcblk", "loop", "nbd", "md"]
        .iter()
        .find(|p| name.starts_with(**p))
    {
        // nvme0n1p2, mmcblk0p1: a `p<digits>` after the device's number.
        let tail = &name[p.len()..];
        tail.rsplit_once('p').is_some_and(|(head, n)| {
            !head.is_empty()
                && head.bytes().last().is_some_and(|b| b.is_ascii_digit())
                && !n.is_empty()
                && n.bytes().all(|b| b.is_ascii_digit())
        })
    } else if ["sd", "vd", "hd", "xvd"]
        .iter()
        .any(|p| name.starts_with(*p))
    {
        // sda1, vdb2: digits after the letters.
        name.bytes().last().is_some_and(|b| b.is_ascii_digit())
    } else {
        false
    };
    if partition {
        return Err("is a partition");
    }
    Ok(())
}

/// Checks the kernel-argument values of `nodes` (bootstrap first, then the
/// agent hosts in file order, as [`crate::Inventory::resolve`] builds them)
/// and of `images`.
///
/// # Errors
/// [`HostsError::Invalid`] naming the file, the field and the rule.
pub(crate) fn check(nodes: &[Node], images: &OsImages) -> Result<(), HostsError> {
    let offset = usize::from(nodes.first().is_some_and(|n| n.role == Role::Bootstrap));
    for (k, n) in nodes.iter().enumerate() {
        let boot = n.role == Role::Bootstrap;
        let (file, at) = if boot {
            (BASTION_CONFIG_FILE, "bootstrap".to_string())
        } else {
            (AGENT_CONFIG_FILE, format!("hosts[{}]", k - offset))
        };
        if !host_label(&n.hostname) {
            return Err(invalid(
                file,
                format!("{at}.hostname"),
                format!(
                    "{:?} must start with a host name label of 1 to 63 ASCII letters, digits or '-', not starting or ending with '-' (RFC 1123 §2.1)",
                    n.hostname
                ),
            ));
        }
        if let Some(nic) = &n.interface
            && (nic.is_empty()
                || nic.len() > 15
                || nic == "."
                || nic == ".."
                || nic.contains(['/', ':'])
                || breaks_args(nic))
        {
            let field = if boot {
                "bootstrap.interface".to_string()
            } else {
                format!("{at}.interfaces")
            };
            return Err(invalid(
                file,
                field,
                format!(
                    "interface name {nic:?} must be 1 to 15 octets without '/', ':', whitespace or control characters"
                ),
            ));
        }
        if breaks_args(&n.install_disk) {
            let field = if boot {
                "bootstrap.installationDisk".to_string()
            } else {
                format!("{at}.rootDeviceHints.deviceName")
            };
            return Err(invalid(
                file,
                field,
                format!(
                    "{:?} must not contain whitespace or control characters",
                    n.install_disk
                ),
            ));
        }
        if let Err(why) = whole_disk(&n.install_disk) {
            let field = if boot {
                "bootstrap.installationDisk".to_string()
            } else {
                format!("{at}.rootDeviceHints.deviceName")
            };
            return Err(invalid(
                file,
                field,
                format!(
                    "{:?} {why}: coreos-installer writes the whole disk (coreos.inst.install_dev); give the disk, e.g. /dev/sda, /dev/nvme0n1, /dev/vda or /dev/disk/by-id/wwn-…",
                    n.install_disk
                ),
            ));
        }
    }
    for (field, name) in [
        ("osImages.kernel", &images.kernel),
        ("osImages.initramfs", &images.initramfs),
        ("osImages.rootfs", &images.rootfs),
        ("osImages.metal", &images.metal),
    ] {
        if breaks_args(name) {
            return Err(invalid(
                BASTION_CONFIG_FILE,
                field,
                format!("{name:?} must not contain whitespace or control characters"),
            ));
        }
    }
    Ok(())
}
