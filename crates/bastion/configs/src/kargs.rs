//! Kernel arguments for a node's install boot, the ones the bare-metal guide
//! typed at each node's boot prompt.
//!
//! Spec followed: coreos-installer's live-image service (coreos/coreos-installer
//! `docs/getting-started.md`, `scripts/coreos-installer-service`) and dracut's
//! `ip=` syntax (dracutdevs/dracut `man/dracut.cmdline.7.asc`,
//! `ip=<client-IP>:[<peer>]:<gateway-IP>:<netmask>:<client_hostname>:<interface>:none`).

use std::net::IpAddr;

use okd_hosts::{Inventory, Node};

/// An address as dracut's `ip=` wants it: IPv4 as is, IPv6 in brackets
/// (`[2001:db8::1]`, dracut.cmdline(7)).
pub fn dracut_addr(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => format!("[{v6}]"),
    }
}

/// `http://<listen>:<ports.http>`: the base URL of the bastion's HTTP server,
/// with an IPv6 listen address in brackets (RFC 3986 §3.2.2). No trailing slash.
pub fn http_base(inv: &Inventory) -> String {
    format!("http://{}:{}", dracut_addr(inv.listen), inv.ports.http)
}

/// The `ip=` argument of `node`:
/// `ip=<addr>::<gateway>:<netmask>:<fqdn>:<nic>:none`.
///
/// The peer field stays empty; the netmask is dotted for IPv4
/// (`255.255.255.0`) and the prefix length for IPv6; a missing gateway or NIC
/// leaves its field empty (dracut then uses no default route / any NIC).
pub fn ip_arg(node: &Node) -> String {
    format!(
        "ip={}::{}:{}:{}:{}:none",
        dracut_addr(node.address),
        node.gateway.map(dracut_addr).unwrap_or_default(),
        node.netmask(),
        node.fqdn,
        node.interface.as_deref().unwrap_or(""),
    )
}

/// The install kernel arguments of `node`, in the guide's order:
///
/// 1. `ip=<addr>::<gw>:<netmask>:<fqdn>:<nic>:none` ([`ip_arg`]);
/// 2. `nameserver=<ip>` per nameserver (unbracketed, also for IPv6: dracut
///    and nm-initrd-generator take the bare address here);
/// 3. `coreos.inst.install_dev=<disk>`: written as the full device path
///    (`/dev/sda`), the form current coreos-installer wants (E.2: a bare name
///    still works but gets `/dev/` prepended with a deprecation warning). The
///    4.5 guide typed `sda` for the legacy installer, which this form does not
///    serve; a node's `install_disk` without `/` is passed through unchanged;
/// 4. `coreos.inst.image_url=http://<listen>:<http>/install/<os_images.metal>`;
/// 5. `coreos.inst.ignition_url=http://<listen>:<http>/ignition/<role>.ign`.
///
/// For the single-master guide's bootstrap this is exactly the guide's line
/// with `/dev/sda` for `sda`.
pub fn kernel_args(inv: &Inventory, node: &Node) -> Vec<String> {
    let base = http_base(inv);
    let mut args = vec![ip_arg(node)];
    args.extend(node.nameservers.iter().map(|ns| format!("nameserver={ns}")));
    args.push(format!("coreos.inst.install_dev={}", node.install_disk));
    args.push(format!(
        "coreos.inst.image_url={base}/install/{}",
        inv.os_images.metal
    ));
    args.push(format!(
        "coreos.inst.ignition_url={base}/ignition/{}.ign",
        node.role.as_str()
    ));
    args
}

/// The kernel arguments of a live PXE boot of `node` (iPXE, GRUB, pxelinux):
/// `rd.neednet=1`, then [`kernel_args`], then
/// `coreos.live.rootfs_url=http://<listen>:<http>/images/<os_images.rootfs>`
/// (read by the live initramfs, not by coreos-installer, E.2).
///
/// Boot-loader specific `initrd=` arguments are added by the loaders' scripts.
pub fn pxe_kernel_args(inv: &Inventory, node: &Node) -> Vec<String> {
    let mut args = vec!["rd.neednet=1".to_string()];
    args.extend(kernel_args(inv, node));
    args.push(format!(
        "coreos.live.rootfs_url={}/images/{}",
        http_base(inv),
        inv.os_images.rootfs
    ));
    args
}
