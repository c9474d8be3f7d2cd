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
