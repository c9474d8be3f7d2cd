//! The inventory's parts read from `/proc` and `/sys` (the reference's
//! §5.3; assisted-installer-agent `src/inventory/`): CPU from
//! `/proc/cpuinfo`, memory from the memory blocks in sysfs and
//! `/proc/meminfo`, boot mode from `/sys/firmware/efi`, the command line
//! from `/proc/cmdline`, the system vendor from DMI (`/sys/class/dmi/id`)
//! and the `hypervisor` CPU flag, the TPM from `/sys/class/tpm`, the host
//! name from `/proc/sys/kernel/hostname`.

use okd_assisted_api::{Boot, Cpu, Inventory, Memory, SystemVendor};

use crate::{Root, macs};

/// Host names the service would refuse (assisted-service `hostname-valid`):
/// the agent reports the first interface's MAC with dashes instead.
pub const FORBIDDEN_HOSTNAMES: &[&str] = &[
    "localhost",
    "localhost.localdomain",
    "localhost4",
    "localhost4.localdomain4",
    "localhost6",
    "localhost6.localdomain6",
];

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
