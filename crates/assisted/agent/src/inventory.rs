//! The inventory's parts read from `/proc` and `/sys` (the reference's
//! §5.3; assisted-installer-agent `src/inventory/`): CPU from
//! `/proc/cpuinfo`, memory from the memory blocks in sysfs and
//! `/proc/meminfo`, boot mode from `/sys/firmware/efi`, the command line
//! from `/proc/cmdline`, the system vendor from DMI (`/sys/class/dmi/id`)
//! and the `hypervisor` CPU flag, the TPM from `/sys/class/tpm`, the host
//! name from `/proc/sys/kernel/hostname`, the disks from `/sys/block`,
//! `/dev/disk/by-{id,path}` and `/proc/mounts`, the network interfaces
//! from `/sys/class/net` (their IPv6 addresses from `/proc/net/if_inet6`,
//! their IPv4 addresses from the kernel with `getifaddrs`), the routes from
//! `/proc/net/route` and `/proc/net/ipv6_route`.

use std::net::{Ipv4Addr, Ipv6Addr};

use okd_assisted_api::{Boot, Cpu, Interface, Inventory, Memory, Route, SystemVendor};

use crate::{Root, macs};

/// Host names the service would refuse (assisted-service `hostname-valid`):
/// the agent reports the first interface's MAC with dashes instead.
pub use okd_assisted_api::FORBIDDEN_HOSTNAMES;

/// The inventory's parts this agent gathers so far (module docs), for the
/// machine at `root`; the architecture is the one this program was built
/// for (it runs on the host it describes).
pub fn gather(root: &Root) -> Inventory {
    Inventory {
        hostname: hostname(root),
        cpu: cpu(root),
        memory: memory(root),
        boot: boot(root),
        system_vendor: system_vendor(root),
        tpm_version: tpm(root),
        disks: disks(root),
        interfaces: interfaces(root),
        routes: routes(root),
    }
}

/// The kernel host name; a forbidden one (or none) replaced by the first
/// interface's MAC address with dashes (`52-54-00-aa-00-02`).
pub fn hostname(root: &Root) -> String {
    let name = root
        .read("/proc/sys/kernel/hostname")
        .unwrap_or_default()
        .to_lowercase();
    if !name.is_empty() && !FORBIDDEN_HOSTNAMES.contains(&name.as_str()) {
        return name;
    }
    macs(root)
        .first()
        .map(|m| m.replace(':', "-"))
        .unwrap_or(name)
}

/// `/proc/cpuinfo`: the processors counted, the first model name, the
/// highest `cpu MHz`, the first processor's flags.
pub fn cpu(root: &Root) -> Cpu {
    let text = root.read("/proc/cpuinfo").unwrap_or_default();
    let mut c = Cpu {
        architecture: std::env::consts::ARCH.to_string(),
        ..Default::default()
    };
    for line in text.lines() {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let (k, v) = (k.trim(), v.trim());
        match k {
            "processor" => c.count += 1,
            "model name" if c.model_name.is_empty() => c.model_name = v.to_string(),
            "cpu MHz" => {
                if let Ok(mhz) = v.parse::<f64>() {
                    c.frequency = c.frequency.max(mhz);
                }
            }
            "flags" if c.flags.is_empty() => {
                c.flags = v.split_whitespace().map(String::from).collect();
            }
            _ => {}
        }
    }
    c
}

fn meminfo_kib(root: &Root, key: &str) -> Option<u64> {
    root.read("/proc/meminfo")?
        .lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
}

/// Usable: `/proc/meminfo` MemTotal. Physical: the online memory blocks of
/// `/sys/devices/system/memory` times their size (`block_size_bytes`, hex),
/// method `ghw` (the library the real agent uses reads the same blocks);
/// without them, MemTotal, method `meminfo`.
pub fn memory(root: &Root) -> Memory {
    let usable = meminfo_kib(root, "MemTotal").unwrap_or(0) * 1024;
    let block = root
        .read("/sys/devices/system/memory/block_size_bytes")
        .and_then(|h| u64::from_str_radix(h.trim_start_matches("0x"), 16).ok());
    let online = std::fs::read_dir(root.join("/sys/devices/system/memory"))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_string_lossy().starts_with("memory"))
                .filter(|e| {
                    std::fs::read_to_string(e.path().join("online")).is_ok_and(|s| s.trim() == "1")
                })
                .count() as u64
        })
        .unwrap_or(0);
    match block {
        Some(b) if online > 0 && b * online >= usable => Memory {
            physical_bytes: b * online,
            usable_bytes: usable,
            physical_bytes_method: "ghw".into(),
        },
        _ => Memory {
            physical_bytes: usable,
            usable_bytes: usable,
            physical_bytes_method: "meminfo".into(),
        },
    }
}

/// `uefi` when `/sys/firmware/efi` exists, else `bios`; the command line,
/// and the PXE interface's MAC from its `BOOTIF=01-aa-bb-…` argument.
pub fn boot(root: &Root) -> Boot {
    let command_line = root.read("/proc/cmdline").unwrap_or_default();
    let pxe_interface = command_line
        .split_whitespace()
        .find_map(|a| a.strip_prefix("BOOTIF="))
        .map(|m| {
            let m = m.strip_prefix("01-").unwrap_or(m);
            m.replace('-', ":").to_lowercase()
        })
        .unwrap_or_default();
    Boot {
        current_boot_mode: if root.exists("/sys/firmware/efi") {
            "uefi".into()
        } else {
            "bios".into()
        },
        command_line,
        pxe_interface,
    }
}

/// DMI's vendor, product and serial; virtual when the CPU reports the
/// `hypervisor` flag (what `systemd-detect-virt --vm` finds first on x86).
pub fn system_vendor(root: &Root) -> SystemVendor {
    let dmi = |f: &str| {
        root.read(&format!("/sys/class/dmi/id/{f}"))
            .unwrap_or_default()
    };
    SystemVendor {
        manufacturer: dmi("sys_vendor"),
        product_name: dmi("product_name"),
        serial_number: dmi("product_serial"),
        r#virtual: cpu(root).flags.iter().any(|f| f == "hypervisor"),
    }
}

/// `2.0`, `1.2`, or `none` (`/sys/class/tpm/tpm0/tpm_version_major`; a
/// TPM without that file is 1.2).
pub fn tpm(root: &Root) -> String {
    if !root.exists("/sys/class/tpm/tpm0") {
        return "none".into();
    }
    match root
        .read("/sys/class/tpm/tpm0/tpm_version_major")
        .as_deref()
    {
        Some("2") => "2.0".into(),
        _ => "1.2".into(),
    }
}

/// Block devices the agent does not report (the reference's §4.3: loop,
/// RAM disks, zram; device-mapper devices, which the real agent reports
/// only for multipath and LVM, are left out here until those are told apart).
fn hidden(name: &str) -> bool {
    ["loop", "ram", "zram", "dm-", "nbd"]
        .iter()
        .any(|p| name.starts_with(p))
}

/// The `/dev/disk/<kind>/` link whose target is `/dev/<name>` (WWN links
/// first for by-id, then the shortest name), as `/dev/disk/<kind>/<link>`.
fn link_to(root: &Root, kind: &str, name: &str) -> String {
    let dir = root.join(&format!("/dev/disk/{kind}"));
    let mut links: Vec<String> = std::fs::read_dir(&dir)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter(|e| {
                    std::fs::read_link(e.path())
                        .ok()
                        .and_then(|t| t.file_name().map(|f| f == name))
                        .unwrap_or(false)
                })
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    links.sort_by_key(|l| (!l.starts_with("wwn-"), l.len(), l.clone()));
    links
        .first()
        .map(|l| format!("/dev/disk/{kind}/{l}"))
        .unwrap_or_default()
}

/// Whether the first sector of `/dev/<name>` ends with the boot signature
/// 0x55 0xAA (what `file -s` reports as a boot sector).
fn boot_signature(root: &Root, name: &str) -> bool {
    use std::io::Read;
    let mut sector = [0u8; 512];
    std::fs::File::open(root.join(&format!("/dev/{name}")))
        .and_then(|mut f| f.read_exact(&mut sector))
        .map(|()| sector[510] == 0x55 && sector[511] == 0xAA)
        .unwrap_or(false)
}

/// The block devices of `/sys/block` with what sysfs, `/dev/disk` and
/// `/proc/mounts` say of them; not eligible when the disk or one of its
/// partitions is mounted, or it is read-only.
pub fn disks(root: &Root) -> Vec<okd_assisted_api::Disk> {
    let mounts: Vec<(String, String)> = root
        .read("/proc/mounts")
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            Some((f.next()?.to_string(), f.next()?.to_string()))
        })
        .collect();
    let mut names: Vec<String> = std::fs::read_dir(root.join("/sys/block"))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| !hidden(n))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
        .into_iter()
        .map(|name| {
            let sys = |f: &str| {
                root.read(&format!("/sys/block/{name}/{f}"))
                    .unwrap_or_default()
            };
            let size_bytes = sys("size").parse::<u64>().unwrap_or(0) * 512;
            let drive_type = if name.starts_with("sr") {
                "ODD"
            } else if name.starts_with("fd") {
                "FDD"
            } else {
                match sys("queue/rotational").as_str() {
                    "1" => "HDD",
                    "0" => "SSD",
                    _ => "Unknown",
                }
            };
            let hctl =
                std::fs::read_dir(root.join(&format!("/sys/block/{name}/device/scsi_device")))
                    .ok()
                    .and_then(|mut d| d.next())
                    .and_then(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .unwrap_or_default();
            let holders: Vec<String> =
                std::fs::read_dir(root.join(&format!("/sys/block/{name}/holders")))
                    .map(|d| {
                        d.filter_map(|e| e.ok())
                            .map(|e| e.file_name().to_string_lossy().into_owned())
                            .collect()
                    })
                    .unwrap_or_default();
            // Its partitions: subdirectories with a `partition` file.
            let mut parts: Vec<String> =
                std::fs::read_dir(root.join(&format!("/sys/block/{name}")))
                    .map(|d| {
                        d.filter_map(|e| e.ok())
                            .filter(|e| e.path().join("partition").exists())
                            .map(|e| e.file_name().to_string_lossy().into_owned())
                            .collect()
                    })
                    .unwrap_or_default();
            parts.sort();
            let mut reasons = Vec::new();
            for dev in std::iter::once(&name).chain(parts.iter()) {
                if let Some((_, at)) = mounts.iter().find(|(d, _)| *d == format!("/dev/{dev}")) {
                    reasons.push(format!("Disk is mounted: {dev} at {at}"));
                }
            }
            if sys("ro") == "1" {
                reasons.push("Disk is read-only".to_string());
            }
            let path = format!("/dev/{name}");
            let by_id = link_to(root, "by-id", &name);
            let by_path = link_to(root, "by-path", &name);
            let id = [&by_id, &by_path, &path]
                .into_iter()
                .find(|s| !s.is_empty())
                .cloned()
                .unwrap_or_default();
            let serial = {
                let s = sys("serial");
                if s.is_empty() {
                    sys("device/serial")
                } else {
                    s
                }
            };
            okd_assisted_api::Disk {
                id,
                name: name.clone(),
                path,
                by_id,
                by_path,
                hctl,
                drive_type: drive_type.to_string(),
                size_bytes,
                bootable: boot_signature(root, &name),
                removable: sys("removable") == "1",
                model: sys("device/model"),
                vendor: sys("device/vendor"),
                serial,
                wwn: sys("device/wwid"),
                holders: holders.join(","),
                installation_eligibility: okd_assisted_api::Eligibility {
                    eligible: reasons.is_empty(),
                    not_eligible_reasons: reasons,
                },
            }
        })
        .collect()
}

/// The names of the entries of `<root>/<dir>`, sorted.
fn entries(root: &Root, dir: &str) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(root.join(dir))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// `IFF_UP` (`include/uapi/linux/if.h`): the link is up (administratively).
const IFF_UP: u32 = 0x1;
/// `IFF_LOOPBACK`.
const IFF_LOOPBACK: u32 = 0x8;

/// The bits of `/sys/class/net/<if>/flags` (the kernel's `IFF_*`) that
/// Go's `net.Flags` names, with those names, in Go's order.
const GO_FLAGS: &[(u32, &str)] = &[
    (IFF_UP, "up"),
    (0x2, "broadcast"),
    (IFF_LOOPBACK, "loopback"),
    (0x10, "pointtopoint"),
    (0x1000, "multicast"),
];

/// The kind of the link `<root>/sys/class/net/<name>`, decided by the first
/// rule that holds:
///
/// 1. it has a `device` link (a device on a bus, not under
///    `/sys/devices/virtual`): `physical` (the reference agent's
///    `IsPhysical`, which resolves the link and looks for `/virtual/`);
/// 2. a `bonding/` directory: `bond`;
/// 3. a `bridge/` directory: `bridge`;
/// 4. `/proc/net/vlan/<name>` exists or `uevent` says `DEVTYPE=vlan`: `vlan`;
/// 5. `uevent` names another `DEVTYPE` (`wlan`, `vxlan`, …): that;
/// 6. a `tun_flags` file: `tun`;
/// 7. its `iflink` differs from its `ifindex` (its kernel link is another
///    device) and it has no `lower_*` link (so it is stacked on nothing, as
///    a macvlan or ipvlan is): `veth` (the link is its peer);
/// 8. else `virtual` (a dummy, an ifb, …).
///
/// The kernel would name the driver through ethtool or netlink; these are
/// the files that tell the kinds the agent cares about apart.
pub fn link_kind(root: &Root, name: &str) -> String {
    let dir = format!("/sys/class/net/{name}");
    if root.exists(&format!("{dir}/device")) {
        return "physical".into();
    }
    if root.exists(&format!("{dir}/bonding")) {
        return "bond".into();
    }
    if root.exists(&format!("{dir}/bridge")) {
        return "bridge".into();
    }
    let devtype = root
        .read(&format!("{dir}/uevent"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("DEVTYPE=").map(str::to_string))
        .unwrap_or_default();
    if devtype == "vlan" || root.exists(&format!("/proc/net/vlan/{name}")) {
        return "vlan".into();
    }
    if !devtype.is_empty() {
        return devtype;
    }
    if root.exists(&format!("{dir}/tun_flags")) {
        return "tun".into();
    }
    let iflink = root.read(&format!("{dir}/iflink"));
    let stacked = entries(root, &dir).iter().any(|e| e.starts_with("lower_"));
    if iflink.is_some() && iflink != root.read(&format!("{dir}/ifindex")) && !stacked {
        return "veth".into();
    }
    "virtual".into()
}

/// The link kinds [`interfaces`] reports: the reference agent's physical
/// NICs, bonds and VLANs, and veths (a host that is a network namespace
/// reaches its network through one).
pub const REPORTED_KINDS: &[&str] = &["physical", "bond", "vlan", "veth"];

/// `a.b.c.d/len`-style CIDR text of an address and a netmask (the prefix
/// length is the netmask's count of one bits).
fn cidr4(addr: Ipv4Addr, mask: Ipv4Addr) -> String {
    format!("{addr}/{}", u32::from(mask).count_ones())
}

/// The IPv4 addresses of the interfaces of the network namespace this
/// program runs in (`getifaddrs`), by interface name, in the kernel's
/// order; link-local (169.254.0.0/16) ones left out.
fn ipv4_addresses() -> Vec<(String, String)> {
    let Ok(addrs) = nix::ifaddrs::getifaddrs() else {
        return Vec::new();
    };
    addrs
        .filter_map(|a| {
            let ip = a.address.as_ref()?.as_sockaddr_in()?.ip();
            let mask = a
                .netmask
                .as_ref()
                .and_then(|m| m.as_sockaddr_in())
                .map(|m| m.ip())
                .unwrap_or(Ipv4Addr::BROADCAST);
            (!ip.is_link_local()).then(|| (a.interface_name, cidr4(ip, mask)))
        })
        .collect()
}

/// 32 hex digits as an IPv6 address.
fn hex_ipv6(hex: &str) -> Option<Ipv6Addr> {
    (hex.len() == 32)
        .then(|| u128::from_str_radix(hex, 16).ok())
        .flatten()
        .map(Ipv6Addr::from)
}

/// Whether an IPv6 address is link-local (fe80::/10).
fn ipv6_link_local(a: &Ipv6Addr) -> bool {
    a.segments()[0] & 0xffc0 == 0xfe80
}

/// The IPv6 addresses of `<root>/proc/net/if_inet6` (lines of the
/// address as 32 hex digits, the interface index, the prefix length, the
/// scope and the flags in hex, and the interface name), by interface name,
/// in CIDR form; link-local (fe80::/10) ones left out.
fn ipv6_addresses(root: &Root) -> Vec<(String, String)> {
    root.read("/proc/net/if_inet6")
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let [addr, _index, plen, _scope, _flags, name] = f[..] else {
                return None;
            };
            let addr = hex_ipv6(addr)?;
            let plen = u8::from_str_radix(plen, 16).ok()?;
            (!ipv6_link_local(&addr)).then(|| (name.to_string(), format!("{addr}/{plen}")))
        })
        .collect()
}

/// The network interfaces of the machine at `root` as the reference agent
/// reports them (assisted-installer-agent `src/inventory/interfaces.go`,
/// swagger `interface`), sorted by name: every entry of
/// `<root>/sys/class/net` whose [`link_kind`] is one of
/// [`REPORTED_KINDS`] (so no loopback, bridge, tun, dummy, …), with
///
/// - `mac_address` from `address` (lower case), `mtu` from `mtu`;
/// - `has_carrier` when `carrier` reads `1` (reading it fails with
///   EINVAL while the link is down: false);
/// - `speed_mbps` from `speed` (Mbit/s), -1 when it cannot be read (a
///   link that is down) or says so;
/// - `vendor` and `product` from `device/vendor` and `device/device`
///   (`0x1af4`, `0x1000`), empty for a virtual link;
/// - `flags` the Go names of the `IFF_*` bits of `flags` (hex), and
///   `running` when the link is up and its `operstate` is `up` or
///   `unknown` (the kernel's `dev_get_flags`; Go ≥ 1.20 names it);
/// - `ipv6_addresses` from `<root>/proc/net/if_inet6` for any root;
///   `ipv4_addresses` from `getifaddrs` of the network namespace the
///   agent runs in, by interface name, for any root (sysfs and procfs have
///   no file of them): a root whose `sys/class/net` is this namespace's
///   (the real agent's `/host`, or a made-up machine that links it) gets
///   them; an interface this namespace lacks gets none.
pub fn interfaces(root: &Root) -> Vec<Interface> {
    let v4 = ipv4_addresses();
    let v6 = ipv6_addresses(root);
    entries(root, "/sys/class/net")
        .into_iter()
        .filter(|name| name != "lo")
        .filter_map(|name| {
            let sys = |f: &str| {
                root.read(&format!("/sys/class/net/{name}/{f}"))
                    .unwrap_or_default()
            };
            let bits = u32::from_str_radix(sys("flags").trim_start_matches("0x"), 16).unwrap_or(0);
            if bits & IFF_LOOPBACK != 0 {
                return None;
            }
            let kind = link_kind(root, &name);
            if !REPORTED_KINDS.contains(&kind.as_str()) {
                return None;
            }
            let mut flags: Vec<String> = GO_FLAGS
                .iter()
                .filter(|(bit, _)| bits & bit != 0)
                .map(|(_, n)| n.to_string())
                .collect();
            if bits & IFF_UP != 0 && matches!(sys("operstate").as_str(), "up" | "unknown") {
                flags.push("running".into());
            }
            let of = |list: &[(String, String)]| -> Vec<String> {
                list.iter()
                    .filter(|(n, _)| *n == name)
                    .map(|(_, a)| a.clone())
                    .collect()
            };
            Some(Interface {
                mac_address: sys("address").to_lowercase(),
                ipv4_addresses: of(&v4),
                ipv6_addresses: of(&v6),
                mtu: sys("mtu").parse().unwrap_or(0),
                speed_mbps: sys("speed").parse().unwrap_or(-1),
                has_carrier: sys("carrier") == "1",
                kind,
                vendor: sys("device/vendor"),
                product: sys("device/device"),
                flags,
                biosdevname: String::new(),
                name,
            })
        })
        .collect()
}

/// `RTF_UP` (`include/uapi/linux/route.h`, the same bit for IPv6).
const RTF_UP: u32 = 0x0001;
/// `RTF_REJECT`: an unreachable or prohibit route.
const RTF_REJECT: u32 = 0x0200;
/// IPv6 `RTF_CACHE` (`include/uapi/linux/ipv6_route.h`): a cloned entry.
const RTF_CACHE: u32 = 0x0100_0000;
/// IPv6 `RTF_ANYCAST`: a local-table route of a subnet-router anycast address.
const RTF_ANYCAST: u32 = 0x0010_0000;
/// IPv6 `RTF_LOCAL`: a route of the local table (the host's own addresses).
const RTF_LOCAL: u32 = 0x8000_0000;

/// 8 hex digits of `/proc/net/route` as an IPv4 address: the kernel
/// prints the address's network-order bytes as a native `u32`, so the
/// digits are read back in this host's byte order (little-endian on
/// x86_64, aarch64 and ppc64le).
fn hex_ipv4(hex: &str) -> Option<Ipv4Addr> {
    u32::from_str_radix(hex, 16)
        .ok()
        .map(|x| Ipv4Addr::from(x.to_ne_bytes()))
}

/// The routes of the machine at `root` as the reference agent reports
/// them (assisted-installer-agent `src/inventory/routes.go`, swagger
/// `route`, which lists the kernel's main table): IPv4 from
/// `<root>/proc/net/route` (columns Iface, Destination, Gateway, Flags,
/// RefCnt, Use, Metric, Mask, …; addresses as hex in the host's byte
/// order, the metric in decimal), then IPv6 from
/// `<root>/proc/net/ipv6_route` (destination as 32 hex digits, its prefix
/// length, source, its prefix length, next hop, metric, reference count,
/// use, flags, all hex, and the interface). Only routes that are up
/// (`RTF_UP`) and not reject routes; for IPv6 also not local-table
/// (local, anycast), cached or multicast (ff00::/8) ones; routes on `lo`
/// left out. The destination is its network's address without the prefix
/// length (`0.0.0.0` and `::` for the default routes, as the reference
/// agent reports it); the gateway is empty when the next hop is
/// unspecified (a directly connected network).
pub fn routes(root: &Root) -> Vec<Route> {
    let mut out: Vec<Route> = root
        .read("/proc/net/route")
        .unwrap_or_default()
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let (iface, dst, gw, flags, metric) =
                (f.first()?, f.get(1)?, f.get(2)?, f.get(3)?, f.get(6)?);
            let flags = u32::from_str_radix(flags, 16).ok()?;
            if flags & RTF_UP == 0 || flags & RTF_REJECT != 0 || *iface == "lo" || *iface == "*" {
                return None;
            }
            let gw = hex_ipv4(gw)?;
            Some(Route {
                interface: iface.to_string(),
                gateway: if gw.is_unspecified() {
                    String::new()
                } else {
                    gw.to_string()
                },
                destination: hex_ipv4(dst)?.to_string(),
                family: 4,
                metric: metric.parse().ok()?,
            })
        })
        .collect();
    out.extend(
        root.read("/proc/net/ipv6_route")
            .unwrap_or_default()
            .lines()
            .filter_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                let [
                    dst,
                    _plen,
                    _src,
                    _src_plen,
                    gw,
                    metric,
                    _refcnt,
                    _use,
                    flags,
                    iface,
                ] = f[..]
                else {
                    return None;
                };
                let flags = u32::from_str_radix(flags, 16).ok()?;
                let dst = hex_ipv6(dst)?;
                if flags & RTF_UP == 0
                    || flags & (RTF_REJECT | RTF_CACHE | RTF_ANYCAST | RTF_LOCAL) != 0
                    || iface == "lo"
                    || dst.is_multicast()
                {
                    return None;
                }
                let gw = hex_ipv6(gw)?;
                Some(Route {
                    interface: iface.to_string(),
                    gateway: if gw.is_unspecified() {
                        String::new()
                    } else {
                        gw.to_string()
                    },
                    destination: dst.to_string(),
                    family: 6,
                    metric: i64::from(u32::from_str_radix(metric, 16).ok()?),
                })
            }),
    );
    out
}
