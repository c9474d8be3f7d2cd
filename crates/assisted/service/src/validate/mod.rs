//! Host and cluster validations, role suggestion and the pre-install
//! state rules, as pure functions of what is stored (assisted-service
//! `internal/host/validator.go`, `internal/hardware/validator.go`,
//! `data/default_hw_requirements.json`, `internal/cluster/validator.go`,
//! `internal/host/statemachine.go`, `internal/cluster/statemachine.go`;
//! ids, thresholds and messages as there). The host validations and
//! states are in `host`, role suggestion and machine networks in `roles`,
//! the cluster validations and states in `cluster`; all re-exported here.

use std::collections::HashMap;
use std::net::IpAddr;

use ipnet::IpNet;
use okd_assisted_api::Inventory;
use okd_assisted_api::rest::{Cidr, ValidationResult};
use serde::Serialize;

use crate::model::ClusterParams;

/// A role's hardware minimum (`HW_VALIDATOR_REQUIREMENTS`' defaults).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Requirement {
    /// Logical CPUs.
    pub cpu_cores: u32,
    /// Memory, MiB.
    pub ram_mib: u64,
    /// Installation disk, GB (10^9 bytes).
    pub disk_gb: u64,
}

/// master: 4 cores, 16 GiB, 100 GB.
pub const MASTER: Requirement = Requirement {
    cpu_cores: 4,
    ram_mib: 16384,
    disk_gb: 100,
};
/// worker: 2 cores, 8 GiB, 100 GB.
pub const WORKER: Requirement = Requirement {
    cpu_cores: 2,
    ram_mib: 8192,
    disk_gb: 100,
};
/// single node: 8 cores, 16 GiB, 100 GB.
pub const SNO: Requirement = Requirement {
    cpu_cores: 8,
    ram_mib: 16384,
    disk_gb: 100,
};

/// Memory below the requirement that still passes, MiB.
pub const RAM_TOLERANCE_MIB: u64 = 100;

/// A host checked in within this long counts as connected, ms (3 min).
pub const MAX_DISCONNECTION_MS: i64 = 3 * 60 * 1000;

/// Clock skew allowed with the service ahead of the host, s (20 min).
pub const SERVICE_AHEAD_S: i64 = 20 * 60;
/// Clock skew allowed with the host ahead of the service, s (60 min).
pub const HOST_AHEAD_S: i64 = 60 * 60;

/// Host names a host may not keep (`hostutil.ForbiddenHostnames`).
pub use okd_assisted_api::FORBIDDEN_HOSTNAMES;

/// Drive types an installation disk may have (HDD, SSD, Multipath; RAID
/// from 4.14 and iSCSI from 4.15 are left out here).
pub const INSTALLABLE_DRIVE_TYPES: &[&str] = &["HDD", "SSD", "Multipath"];

/// `validations_info`: results by category, in this order of ids.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Validations {
    /// Hardware checks.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hardware: Vec<ValidationResult>,
    /// Network checks.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub network: Vec<ValidationResult>,
    /// Cluster-level: hosts' data.
    #[serde(skip_serializing_if = "Vec::is_empty", rename = "hosts-data")]
    pub hosts_data: Vec<ValidationResult>,
    /// Cluster-level: configuration.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub configuration: Vec<ValidationResult>,
}

impl Validations {
    /// The status of validation `id` (`None` when not computed).
    pub fn status(&self, id: &str) -> Option<&str> {
        self.all().find(|v| v.id == id).map(|v| v.status.as_str())
    }

    /// Whether every id passed (`success`, or `disabled`: not checked
    /// here, with the reason in its message).
    pub fn passed(&self, ids: &[&str]) -> bool {
        ids.iter()
            .all(|id| matches!(self.status(id), Some("success" | "disabled")))
    }

    /// Every result, categories in order.
    pub fn all(&self) -> impl Iterator<Item = &ValidationResult> {
        self.hardware
            .iter()
            .chain(&self.network)
            .chain(&self.hosts_data)
            .chain(&self.configuration)
    }

    /// The messages of the failing ones among `ids`, in order.
    pub fn failing_messages(&self, ids: &[&str]) -> Vec<String> {
        self.all()
            .filter(|v| ids.contains(&v.id.as_str()) && v.status == "failure")
            .map(|v| v.message.clone())
            .collect()
    }

    /// As the JSON text of `validations_info`.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// One validation's result.
pub(crate) fn result(id: &str, status: &str, message: impl Into<String>) -> ValidationResult {
    ValidationResult {
        id: id.into(),
        status: status.into(),
        message: message.into(),
    }
}

fn pass(ok: bool) -> &'static str {
    if ok { "success" } else { "failure" }
}

/// Bytes as assisted-service's `conversions.BytesToString` prints them:
/// two decimals of the largest binary unit (`16.00 GiB`).
pub fn bytes_text(b: u64) -> String {
    const UNITS: [&str; 5] = ["bytes", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{b} bytes")
    } else {
        format!("{v:.2} {}", UNITS[u])
    }
}

/// What the host validations look at besides the host's own row.
#[derive(Debug, Clone)]
pub struct HostContext<'a> {
    /// The cluster's settings.
    pub cluster: &'a ClusterParams,
    /// The machine networks in force (given or derived).
    pub machine_networks: &'a [Cidr],
    /// How many of the cluster's hosts have each effective host name
    /// (this host included): a name counted more than once is not unique.
    pub hostname_counts: &'a HashMap<String, usize>,
    /// The cluster's name (the domain checks' names are under
    /// `<name>.<base domain>`).
    pub cluster_name: &'a str,
    /// The cluster's connectivity majority groups.
    pub majority: &'a crate::network::Majority,
    /// Every host's effective role by host id (`auto-assign` while
    /// undecided), for the link validations ([`crate::latency`]).
    pub roles: &'a HashMap<&'a str, &'a str>,
    /// Unix ms now.
    pub now_ms: i64,
}

/// One host, as the validations see it.
#[derive(Debug, Clone)]
pub struct HostFacts<'a> {
    /// The host's id.
    pub id: &'a str,
    /// The parsed inventory, `None` before the first.
    pub inventory: Option<&'a Inventory>,
    /// `master` or `worker`; `auto-assign` when nothing is suggested yet.
    pub role: &'a str,
    /// The host name the user set (wins over the inventory's).
    pub requested_hostname: &'a str,
    /// Unix ms of the last poll (0: never).
    pub checked_in_at: i64,
    /// The host's clock at its last poll, Unix s (0: never).
    pub host_timestamp: i64,
    /// JSON text of the NTP sources reply.
    pub ntp_sources: &'a str,
    /// JSON text of the `domain-resolution` reply.
    pub domain_resolutions: &'a str,
    /// JSON text of the `installation-disk-speed-check` reply.
    pub disk_speed: &'a str,
    /// JSON text of the host's `connectivity-check` reply.
    pub connectivity: &'a str,
}

/// The host's effective name: the requested one, else the inventory's.
pub fn hostname(requested: &str, inv: Option<&Inventory>) -> String {
    if !requested.is_empty() {
        requested.to_string()
    } else {
        inv.map(|i| i.hostname.clone()).unwrap_or_default()
    }
}

/// The role's requirement (single node when the cluster has one master).
pub fn requirement(cluster: &ClusterParams, role: &str) -> Requirement {
    if cluster.control_plane_count == 1 {
        SNO
    } else if role == "master" {
        MASTER
    } else {
        WORKER
    }
}

/// Whether `inv` meets `req`'s CPU and memory (with the 100 MiB
/// tolerance).
pub fn meets(inv: &Inventory, req: Requirement) -> (bool, bool) {
    let cpu = inv.cpu.count >= req.cpu_cores;
    let need = (req.ram_mib.saturating_sub(RAM_TOLERANCE_MIB)) * 1024 * 1024;
    (cpu, inv.memory.physical_bytes >= need)
}

/// The disks a host may install to for `req`: eligible by the agent,
/// of an installable drive type, at least `req.disk_gb` GB; ordered as
/// `ListEligibleDisks` orders them (bootable first, non-NVMe before NVMe,
/// drive type name, smallest, HCTL).
pub fn eligible_disks(inv: &Inventory, req: Requirement) -> Vec<&okd_assisted_api::Disk> {
    let mut d: Vec<_> = inv
        .disks
        .iter()
        .filter(|d| d.installation_eligibility.eligible)
        .filter(|d| INSTALLABLE_DRIVE_TYPES.contains(&d.drive_type.as_str()))
        .filter(|d| d.size_bytes >= req.disk_gb * 1_000_000_000)
        .collect();
    d.sort_by(|a, b| {
        (
            !a.bootable,
            a.name.starts_with("nvme"),
            &a.drive_type,
            a.size_bytes,
            &a.hctl,
        )
            .cmp(&(
                !b.bootable,
                b.name.starts_with("nvme"),
                &b.drive_type,
                b.size_bytes,
                &b.hctl,
            ))
    });
    d
}

/// Why the service holds `disk` ineligible for `req` though its agent
/// may not (`internal/hardware/validator.go` `DiskIsEligible`'s
/// too-small and drive-type reasons, in its words); empty when
/// [`eligible_disks`] would take it on those counts.
pub fn service_disk_reasons(disk: &okd_assisted_api::Disk, req: Requirement) -> Vec<String> {
    let gb = |b: u64| {
        let t = format!("{:.2}", b as f64 / 1e9);
        let t = t.trim_end_matches('0').trim_end_matches('.');
        format!("{t} GB")
    };
    let mut out = Vec::new();
    let need = req.disk_gb * 1_000_000_000;
    if disk.size_bytes < need {
        out.push(format!(
            "Disk is too small (disk only has {}, but {} are required)",
            gb(disk.size_bytes),
            gb(need)
        ));
    }
    if !INSTALLABLE_DRIVE_TYPES.contains(&disk.drive_type.as_str()) {
        out.push(format!(
            "Drive type is {}, it must be one of {}.",
            disk.drive_type,
            INSTALLABLE_DRIVE_TYPES.join(", ")
        ));
    }
    out
}

/// The requirement a host's installation disk is held to: its
/// cluster's for its `role` ([`requirement`]), or a worker's for a host
/// bound to no cluster (assisted-service holds such a host to its
/// infra-env's requirements; every role asks 100 GB of disk today).
pub fn disk_requirement(cluster: Option<&ClusterParams>, role: &str) -> Requirement {
    cluster.map_or(WORKER, |p| requirement(p, role))
}

/// The installation disk of a host whose inventory is `inv`, by
/// assisted-service's rule: when an inventory arrives
/// (`internal/host/host.go` `updateInventory`), the disk named `chosen`
/// (the host's current installation disk: the user's choice or an
/// earlier pick) is kept while it is among [`eligible_disks`], else the
/// first of them is taken (`internal/host/hostutil/host_utils.go`
/// `DetermineInstallationDisk` over `internal/hardware/validator.go`
/// `ListEligibleDisks`); `None` when no disk is eligible. `chosen`
/// matches any of the disk's [`okd_assisted_api::Disk::paths`]
/// (assisted-service matches its id, by-path or `/dev/<name>`).
pub fn installation_disk<'a>(
    inv: &'a Inventory,
    req: Requirement,
    chosen: &str,
) -> Option<&'a okd_assisted_api::Disk> {
    let eligible = eligible_disks(inv, req);
    eligible
        .iter()
        .find(|d| d.is_named(chosen))
        .or_else(|| eligible.first())
        .copied()
}

/// The host name rule (`hostutil.ValidateHostname`): at most 63
/// characters per label, `^[a-z0-9][a-z0-9-]{0,62}(?:[.][a-z0-9-]{1,63})*$`.
pub fn hostname_ok(name: &str) -> bool {
    let mut labels = name.split('.');
    let Some(first) = labels.next() else {
        return false;
    };
    let lab = |l: &str, first: bool| {
        !l.is_empty()
            && l.len() <= 63
            && l.bytes()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
            && (!first || l.as_bytes()[0] != b'-')
    };
    lab(first, true) && labels.all(|l| lab(l, false))
}

/// The host's IPv4/IPv6 addresses with their networks.
pub fn host_networks(inv: &Inventory) -> Vec<IpNet> {
    inv.interfaces
        .iter()
        .flat_map(|i| i.ipv4_addresses.iter().chain(&i.ipv6_addresses))
        .filter_map(|a| a.parse::<IpNet>().ok())
        .collect()
}

mod cluster;
mod host;
mod roles;

pub use cluster::*;
pub use host::*;
pub use roles::*;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_as_assisted_prints_them() {
        assert_eq!(bytes_text(16 * 1024 * 1024 * 1024), "16.00 GiB");
        assert_eq!(bytes_text(8_000_000_000), "7.45 GiB");
        assert_eq!(bytes_text(512), "512 bytes");
    }

    #[test]
    fn host_names() {
        assert!(hostname_ok("master-0"));
        assert!(hostname_ok("master-0.example.com"));
        assert!(!hostname_ok("Master"));
        assert!(!hostname_ok("-a"));
        assert!(!hostname_ok(""));
        assert!(!hostname_ok(&"a".repeat(64)));
    }
}
