//! The assisted service's API models (issue #24), shaped as
//! assisted-service's `swagger.yaml` definitions so that a client of the
//! real service reads them unchanged: field names in snake_case, absent
//! optional fields left out.
//!
//! So far: the host [`Inventory`] the discovery agent reports (swagger
//! definitions `inventory`, `cpu`, `memory`, `boot`, `system_vendor`,
//! `disk`, `interface` and `route`; stored verbatim by the service as
//! `host.inventory`, a JSON string).

pub mod identity;
pub mod rest;

/// Where `okd-install assisted serve` keeps its secrets (and TLS files),
/// under its `--dir`: made 0700.
pub const SERVICE_SECRETS_DIR: &str = "assisted-service";

/// The admin token's file in [`SERVICE_SECRETS_DIR`] (0600, one line),
/// generated on the service's first start; the client commands run with
/// the same `--dir` read it from there.
pub const ADMIN_TOKEN_FILE: &str = "admin-token";

/// The service's CA certificate in [`SERVICE_SECRETS_DIR`] (PEM, 0644),
/// generated on its first start: what the client commands run with the
/// same `--dir` trust, and what the discovery Ignition carries.
pub const CA_CERT_FILE: &str = "ca.crt";

pub mod steps;

/// Host names assisted-service refuses (`hostutil.ForbiddenHostnames`,
/// validation `hostname-valid`); the agent reports a MAC-derived name
/// instead of one of these.
pub const FORBIDDEN_HOSTNAMES: &[&str] = &[
    "localhost",
    "localhost.localdomain",
    "localhost4",
    "localhost4.localdomain4",
    "localhost6",
    "localhost6.localdomain6",
];

use serde::{Deserialize, Serialize};

/// A host's inventory (swagger `inventory`). There is no timestamp in it:
/// the host's time travels with each next-steps poll.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Inventory {
    /// The kernel host name (or the MAC-derived replacement of a forbidden
    /// one, see the agent).
    pub hostname: String,
    /// CPU.
    pub cpu: Cpu,
    /// Memory.
    pub memory: Memory,
    /// Boot mode and command line.
    pub boot: Boot,
    /// Manufacturer, product, serial, whether virtual.
    pub system_vendor: SystemVendor,
    /// `none`, `1.2` or `2.0`.
    pub tpm_version: String,
    /// Block devices the agent reports (swagger `disk`).
    #[serde(default)]
    pub disks: Vec<Disk>,
    /// Network interfaces the agent reports (swagger `interface`).
    #[serde(default)]
    pub interfaces: Vec<Interface>,
    /// The routes of the kernel's main table, IPv4 then IPv6 (swagger
    /// `route`).
    #[serde(default)]
    pub routes: Vec<Route>,
}

/// Swagger `interface`, as assisted-installer-agent's
/// `src/inventory/interfaces.go` fills it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Interface {
    /// The kernel name (`ens3`, `bond0`, `ens3.100`).
    pub name: String,
    /// The hardware address, lower case, colon-separated
    /// (`52:54:00:aa:00:02`); left out when the link has none.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub mac_address: String,
    /// IPv4 addresses in CIDR form (`192.168.126.10/24`), link-local
    /// (169.254.0.0/16) left out.
    #[serde(default)]
    pub ipv4_addresses: Vec<String>,
    /// IPv6 addresses in CIDR form (`2001:db8::10/64`), link-local
    /// (fe80::/10) left out.
    #[serde(default)]
    pub ipv6_addresses: Vec<String>,
    /// MTU, bytes.
    #[serde(default)]
    pub mtu: u32,
    /// Link speed, Mbit/s; -1 when unknown (as sysfs says for a link
    /// that is down or has no speed).
    #[serde(default)]
    pub speed_mbps: i64,
    /// The link has a carrier (cable in, peer up).
    #[serde(default)]
    pub has_carrier: bool,
    /// The kind of link: `physical`, `bond`, `vlan`, `veth`, … (the
    /// agent's rule is in its `inventory::interfaces`).
    #[serde(rename = "type", default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// The PCI (or virtio) vendor id of the device behind it (`0x1af4`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub vendor: String,
    /// The PCI (or virtio) device id of the device behind it (`0x1000`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub product: String,
    /// Go's `net.Flags` names, in their order: `up`, `broadcast`,
    /// `loopback`, `pointtopoint`, `multicast`, `running`.
    #[serde(default)]
    pub flags: Vec<String>,
    /// The `biosdevname` name (not looked up: empty, left out).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub biosdevname: String,
}

/// Swagger `route`, as assisted-installer-agent's
/// `src/inventory/routes.go` fills it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Route {
    /// The interface the route sends packets to.
    pub interface: String,
    /// The next hop's address (`192.168.126.1`, `fe80::1`); left out for a
    /// route to a directly connected network.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub gateway: String,
    /// The destination network's address without its prefix length
    /// (`0.0.0.0` and `::` for the default routes), as the reference agent
    /// reports it.
    pub destination: String,
    /// 4 or 6.
    pub family: i32,
    /// The route's metric (priority); lower wins.
    #[serde(default)]
    pub metric: i64,
}

/// Swagger `disk`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Disk {
    /// `by_id` if there is one, else `by_path`, else `path`.
    pub id: String,
    /// The kernel name (`sda`, `vda`, `nvme0n1`).
    pub name: String,
    /// `/dev/<name>`.
    pub path: String,
    /// A `/dev/disk/by-id/` link to it (a WWN one first).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub by_id: String,
    /// A `/dev/disk/by-path/` link to it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub by_path: String,
    /// SCSI host:channel:target:lun.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub hctl: String,
    /// `HDD`, `SSD`, `ODD`, `FDD`, `Unknown`, … (swagger's enum).
    pub drive_type: String,
    /// Size, bytes.
    pub size_bytes: u64,
    /// The first sector carries a boot signature.
    pub bootable: bool,
    /// Removable media.
    pub removable: bool,
    /// Model.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub model: String,
    /// Vendor.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub vendor: String,
    /// Serial.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub serial: String,
    /// World-wide name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub wwn: String,
    /// Devices built on it (`dm-0`, `md127`), comma-separated.
    #[serde(default)]
    pub holders: String,
    /// Whether the agent may install to it, and why not.
    pub installation_eligibility: Eligibility,
}

impl Disk {
    /// The names a step or a selection may give this disk, with their
    /// fields: `id`, `path`, and `by_id` and `by_path` when not empty.
    pub fn paths(&self) -> Vec<(&'static str, &str)> {
        [
            ("id", self.id.as_str()),
            ("path", self.path.as_str()),
            ("by_id", self.by_id.as_str()),
            ("by_path", self.by_path.as_str()),
        ]
        .into_iter()
        .filter(|(field, p)| !p.is_empty() || matches!(*field, "id" | "path"))
        .collect()
    }

    /// Whether `name` is one of this disk's [`Disk::paths`] (exactly, as
    /// text; an empty `name` never is).
    pub fn is_named(&self, name: &str) -> bool {
        !name.is_empty() && self.paths().iter().any(|(_, p)| *p == name)
    }
}

/// The longest disk path [`disk_path_problem`] accepts, bytes. Linux
/// names are much shorter (at most 255 bytes a component); 1024 leaves
/// room for deep `/dev/disk/by-path/…` names.
pub const MAX_DISK_PATH_BYTES: usize = 1024;

/// The rule of [`disk_path_problem`], in words, for error messages.
pub const DISK_PATH_RULE: &str = "a disk path starts with /dev/, has no empty, \".\" or \"..\" \
     component, no NUL or other control character, and is at most 1024 bytes";

/// What is wrong with a disk path (a [`Disk`]'s `id`, `path`, `by_id`
/// or `by_path`, an installation disk, a step's disk argument), `None`
/// when it follows [`DISK_PATH_RULE`]: the text starts with `/dev/`; the
/// components after it are neither empty (`//`, a trailing `/`), `.` nor
/// `..`, so the path names a file under `/dev` before any symlink is
/// followed; no character is NUL or another control character
/// (`char::is_control`: C0, DEL, C1); at most [`MAX_DISK_PATH_BYTES`]
/// bytes.
///
/// assisted-service stores the inventory's disks as the agent sends
/// them and hands the installation disk's id back to the agent in the
/// `installation-disk-speed-check` and install steps; this service and
/// this agent both hold every such path to this rule (the service when
/// an inventory is posted and a disk selected, the agent before a step
/// uses a disk), so that a posted inventory cannot make an agent write
/// outside `/dev`.
pub fn disk_path_problem(path: &str) -> Option<&'static str> {
    if path.len() > MAX_DISK_PATH_BYTES {
        return Some("is longer than 1024 bytes");
    }
    if path.chars().any(char::is_control) {
        return Some("has a NUL or other control character");
    }
    let Some(rest) = path.strip_prefix("/dev/") else {
        return Some("does not start with /dev/");
    };
    for c in rest.split('/') {
        match c {
            "" => return Some("has an empty component (// or a trailing /)"),
            "." => return Some("has a \".\" component"),
            ".." => return Some("has a \"..\" component"),
            _ => {}
        }
    }
    None
}

/// Swagger `disk.installation_eligibility`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Eligibility {
    /// No reason against it.
    pub eligible: bool,
    /// The reasons against it, in words.
    #[serde(default)]
    pub not_eligible_reasons: Vec<String>,
}

/// Swagger `cpu`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Cpu {
    /// Logical CPUs (`lscpu`'s `CPU(s)`).
    pub count: u32,
    /// The highest clock of any CPU, MHz.
    pub frequency: f64,
    /// The model name.
    pub model_name: String,
    /// `x86_64`, `aarch64`, `s390x`, `ppc64le`.
    pub architecture: String,
    /// The CPU flags (`vmx`, `svm`, …).
    pub flags: Vec<String>,
}

/// Swagger `memory`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Memory {
    /// Installed memory, bytes.
    pub physical_bytes: u64,
    /// What the kernel can use (`/proc/meminfo` MemTotal), bytes.
    pub usable_bytes: u64,
    /// How `physical_bytes` was found: `dmidecode`, `ghw` (the memory
    /// blocks in sysfs) or `meminfo` (an estimate from MemTotal).
    pub physical_bytes_method: String,
}

/// Swagger `boot`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Boot {
    /// `uefi` or `bios`.
    pub current_boot_mode: String,
    /// The kernel command line.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub command_line: String,
    /// The interface PXE booted from (`BOOTIF=` on the command line), if any.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub pxe_interface: String,
}

/// Swagger `system_vendor`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SystemVendor {
    /// DMI `sys_vendor`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub manufacturer: String,
    /// DMI `product_name`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub product_name: String,
    /// DMI `product_serial`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub serial_number: String,
    /// A virtual machine.
    pub r#virtual: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_names_are_the_swaggers() {
        let inv = Inventory {
            hostname: "master-0".into(),
            cpu: Cpu {
                count: 8,
                frequency: 2400.0,
                model_name: "m".into(),
                architecture: "x86_64".into(),
                flags: vec!["vmx".into()],
            },
            memory: Memory {
                physical_bytes: 1,
                usable_bytes: 1,
                physical_bytes_method: "meminfo".into(),
            },
            boot: Boot {
                current_boot_mode: "uefi".into(),
                ..Default::default()
            },
            system_vendor: SystemVendor {
                r#virtual: true,
                ..Default::default()
            },
            tpm_version: "none".into(),
            disks: vec![],
            interfaces: vec![Interface {
                name: "ens3".into(),
                mac_address: "52:54:00:aa:00:02".into(),
                ipv4_addresses: vec!["192.168.126.10/24".into()],
                ipv6_addresses: vec![],
                mtu: 1500,
                speed_mbps: -1,
                has_carrier: true,
                kind: "physical".into(),
                vendor: "0x1af4".into(),
                product: "0x1000".into(),
                flags: vec!["up".into(), "broadcast".into()],
                biosdevname: String::new(),
            }],
            routes: vec![
                Route {
                    interface: "ens3".into(),
                    gateway: "192.168.126.1".into(),
                    destination: "0.0.0.0".into(),
                    family: 4,
                    metric: 100,
                },
                Route {
                    interface: "ens3".into(),
                    destination: "192.168.126.0".into(),
                    family: 4,
                    ..Default::default()
                },
            ],
        };
        let v = serde_json::to_value(&inv).unwrap();
        assert_eq!(v["cpu"]["model_name"], "m");
        assert_eq!(v["memory"]["physical_bytes_method"], "meminfo");
        assert_eq!(v["boot"]["current_boot_mode"], "uefi");
        assert_eq!(v["system_vendor"]["virtual"], true);
        assert!(v["boot"].get("command_line").is_none());
        let nic = &v["interfaces"][0];
        assert_eq!(nic["mac_address"], "52:54:00:aa:00:02");
        assert_eq!(nic["ipv4_addresses"][0], "192.168.126.10/24");
        assert_eq!(nic["ipv6_addresses"], serde_json::json!([]));
        assert_eq!(nic["type"], "physical");
        assert_eq!(nic["speed_mbps"], -1);
        assert_eq!(nic["has_carrier"], true);
        assert_eq!(nic["vendor"], "0x1af4");
        assert_eq!(nic["product"], "0x1000");
        assert!(nic.get("biosdevname").is_none());
        assert_eq!(v["routes"][0]["gateway"], "192.168.126.1");
        assert_eq!(v["routes"][0]["family"], 4);
        assert_eq!(v["routes"][0]["metric"], 100);
        assert!(v["routes"][1].get("gateway").is_none(), "a link route");
        assert_eq!(serde_json::from_value::<Inventory>(v.clone()).unwrap(), inv);
        // An inventory without interfaces and routes (an older agent's).
        let mut old = v;
        let o = old.as_object_mut().unwrap();
        o.remove("interfaces");
        o.remove("routes");
        let back: Inventory = serde_json::from_value(old).unwrap();
        assert!(back.interfaces.is_empty() && back.routes.is_empty());
    }

    #[test]
    fn disk_paths_stay_under_dev() {
        for ok in [
            "/dev/vda",
            "/dev/disk/by-id/wwn-0x5000c500a1b2c3d4",
            "/dev/disk/by-path/pci-0000:00:04.0",
            "/dev/disk/by-path/pci-0000:00:1f.2-ata-1.0",
        ] {
            assert_eq!(disk_path_problem(ok), None, "{ok}");
        }
        for (bad, why) in [
            ("/dev/../etc/shadow", "has a \"..\" component"),
            ("/dev/disk/..", "has a \"..\" component"),
            ("/dev/./vda", "has a \".\" component"),
            ("/dev/", "has an empty component (// or a trailing /)"),
            ("/dev//vda", "has an empty component (// or a trailing /)"),
            ("/etc/shadow", "does not start with /dev/"),
            ("dev/vda", "does not start with /dev/"),
            ("", "does not start with /dev/"),
            ("/dev/vda\0", "has a NUL or other control character"),
            ("/dev/vda\n/x", "has a NUL or other control character"),
        ] {
            assert_eq!(disk_path_problem(bad), Some(why), "{bad:?}");
        }
        let long = format!("/dev/{}", "a".repeat(MAX_DISK_PATH_BYTES));
        assert_eq!(disk_path_problem(&long), Some("is longer than 1024 bytes"));
        let d = Disk {
            id: "/dev/disk/by-path/pci-0000:00:04.0".into(),
            path: "/dev/vda".into(),
            by_path: "/dev/disk/by-path/pci-0000:00:04.0".into(),
            ..Default::default()
        };
        assert!(d.is_named("/dev/vda") && d.is_named("/dev/disk/by-path/pci-0000:00:04.0"));
        assert!(!d.is_named("") && !d.is_named("/dev/vdb"));
        assert_eq!(
            d.paths().iter().map(|(f, _)| *f).collect::<Vec<_>>(),
            ["id", "path", "by_path"]
        );
    }
}
