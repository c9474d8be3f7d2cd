//! The inventory's parts read from `/proc` and `/sys` (the reference's
//! §5.3; assisted-installer-agent `src/inventory/`): CPU from
//! `/proc/cpuinfo`, memory from the memory blocks in sysfs and
//! `/proc/meminfo`, boot mode from `/sys/firmware/efi`, the command line
//! from `/proc/cmdline`, the system vendor from DMI (`/sys/class/dmi/id`)
//! and the `hypervisor` CPU flag, the TPM from `/sys/class/tpm`, the host
//! name from `/proc/sys/kernel/hostname`, the disks from `/sys/block`,
//! `/dev/disk/by-{id,path}` and `/proc/mounts`.

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
        disks: disks(root),
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
