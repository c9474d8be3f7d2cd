//! The assisted service's API models (issue #24, begun), shaped as
//! assisted-service's `swagger.yaml` definitions so that a client of the
//! real service reads them unchanged: field names in snake_case, absent
//! optional fields left out.
//!
//! So far: the host [`Inventory`] the discovery agent reports (swagger
//! definitions `inventory`, `cpu`, `memory`, `boot`, `system_vendor`;
//! stored verbatim by the service as `host.inventory`, a JSON string).
//! Disks, interfaces and routes come with the agent's next part.

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
