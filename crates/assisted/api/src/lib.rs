//! The assisted service's API models (issue #24, begun), shaped as
//! assisted-service's `swagger.yaml` definitions so that a client of the
//! real service reads them unchanged: field names in snake_case, absent
//! optional fields left out.
//!
//! So far: the host [`Inventory`] the discovery agent reports (swagger
//! definitions `inventory`, `cpu`, `memory`, `boot`, `system_vendor`
//! and `disk`; stored verbatim by the service as `host.inventory`, a JSON
//! string). Interfaces and routes come with the agent's next part.

use serde::{Deserialize, Serialize};

/// A host's inventory (swagger `inventory`). There is no timestamp in it:
/// the host's time travels with each next-steps poll.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
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
}

/// Swagger `disk`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
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

/// Swagger `disk.installation_eligibility`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Eligibility {
    /// No reason against it.
    pub eligible: bool,
    /// The reasons against it, in words.
    #[serde(default)]
    pub not_eligible_reasons: Vec<String>,
}

/// Swagger `cpu`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
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
        };
        let v = serde_json::to_value(&inv).unwrap();
        assert_eq!(v["cpu"]["model_name"], "m");
        assert_eq!(v["memory"]["physical_bytes_method"], "meminfo");
        assert_eq!(v["boot"]["current_boot_mode"], "uefi");
        assert_eq!(v["system_vendor"]["virtual"], true);
        assert!(v["boot"].get("command_line").is_none());
        assert_eq!(serde_json::from_value::<Inventory>(v).unwrap(), inv);
    }
}
