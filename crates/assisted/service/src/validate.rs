//! Host and cluster validations, role suggestion and the pre-install
//! state rules, as pure functions of what is stored (assisted-service
//! `internal/host/validator.go`, `internal/hardware/validator.go`,
//! `data/default_hw_requirements.json`, `internal/cluster/validator.go`,
//! `internal/host/statemachine.go`, `internal/cluster/statemachine.go`;
//! ids, thresholds and messages as there).

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

/// Host validations (ids and messages of assisted-service's host
/// validator; `ntp-synced` is informational: it never blocks).
pub fn host_validations(h: &HostFacts<'_>, ctx: &HostContext<'_>) -> Validations {
    let mut v = Validations::default();
    let inv = h.inventory;
    let hw = &mut v.hardware;
    hw.push(match inv {
        Some(_) => result(
            "has-inventory",
            "success",
            "Valid inventory exists for the host",
        ),
        None => result(
            "has-inventory",
            "failure",
            "Inventory has not been received for the host",
        ),
    });
    let min_req = Requirement {
        cpu_cores: MASTER.cpu_cores.min(WORKER.cpu_cores),
        ram_mib: MASTER.ram_mib.min(WORKER.ram_mib),
        disk_gb: MASTER.disk_gb.min(WORKER.disk_gb),
    };
    let min_req = if ctx.cluster.control_plane_count == 1 {
        SNO
    } else {
        min_req
    };
    let role_known = h.role == "master" || h.role == "worker";
    let role_req = requirement(ctx.cluster, h.role);
    match inv {
        None => {
            for id in [
                "has-min-cpu-cores",
                "has-min-valid-disks",
                "has-min-memory",
                "has-cpu-cores-for-role",
                "has-memory-for-role",
                "hostname-unique",
            ] {
                let msg = if id.ends_with("for-role") {
                    "Missing inventory or role"
                } else {
                    "Missing inventory"
                };
                hw.push(result(id, "pending", msg));
            }
            hw.push(result("hostname-valid", "failure", "Missing inventory"));
        }
        Some(inv) => {
            let (cpu, mem) = meets(inv, min_req);
            hw.push(if cpu {
                result("has-min-cpu-cores", "success", "Sufficient CPU cores")
            } else {
                result(
                    "has-min-cpu-cores",
                    "failure",
                    format!(
                        "The host is not eligible to participate in Openshift Cluster because the minimum required CPU cores for any role is {}, found only {}",
                        min_req.cpu_cores, inv.cpu.count
                    ),
                )
            });
            hw.push(if inv.disks.is_empty() {
                result("has-min-valid-disks", "error", "Failed to detected disks")
            } else if eligible_disks(inv, min_req).is_empty() {
                result(
                    "has-min-valid-disks",
                    "failure",
                    "No eligible disks were found, please check specific disks to see why they are not eligible",
                )
            } else {
                result("has-min-valid-disks", "success", "Sufficient disk capacity")
            });
            hw.push(if mem {
                result("has-min-memory", "success", "Sufficient minimum RAM")
            } else {
                result(
                    "has-min-memory",
                    "failure",
                    format!(
                        "The host is not eligible to participate in Openshift Cluster because the minimum required RAM for any role is {}, found only {}",
                        bytes_text(min_req.ram_mib * 1024 * 1024),
                        bytes_text(inv.memory.physical_bytes)
                    ),
                )
            });
            if role_known {
                let (cpu, mem) = meets(inv, role_req);
                hw.push(if cpu {
                    result(
                        "has-cpu-cores-for-role",
                        "success",
                        format!("Sufficient CPU cores for role {}", h.role),
                    )
                } else {
                    result(
                        "has-cpu-cores-for-role",
                        "failure",
                        format!(
                            "Require at least {} CPU cores for {} role, found only {}",
                            role_req.cpu_cores, h.role, inv.cpu.count
                        ),
                    )
                });
                hw.push(if mem {
                    result(
                        "has-memory-for-role",
                        "success",
                        format!("Sufficient RAM for role {}", h.role),
                    )
                } else {
                    result(
                        "has-memory-for-role",
                        "failure",
                        format!(
                            "Require at least {} RAM for role {}, found only {}",
                            bytes_text(role_req.ram_mib * 1024 * 1024),
                            h.role,
                            bytes_text(inv.memory.physical_bytes)
                        ),
                    )
                });
            } else {
                hw.push(result(
                    "has-cpu-cores-for-role",
                    "pending",
                    "Missing inventory or role",
                ));
                hw.push(result(
                    "has-memory-for-role",
                    "pending",
                    "Missing inventory or role",
                ));
            }
            let name = hostname(h.requested_hostname, Some(inv));
            hw.push(
                if ctx.hostname_counts.get(&name).copied().unwrap_or(0) > 1 {
                    result(
                        "hostname-unique",
                        "failure",
                        format!("Hostname {name} is not unique in cluster"),
                    )
                } else {
                    result(
                        "hostname-unique",
                        "success",
                        format!("Hostname {name} is unique in cluster"),
                    )
                },
            );
            hw.push(if FORBIDDEN_HOSTNAMES.contains(&name.as_str()) {
                result(
                    "hostname-valid",
                    "failure",
                    format!("The host name {name} is forbidden"),
                )
            } else if !hostname_ok(&name) {
                result(
                    "hostname-valid",
                    "failure",
                    format!(
                        "Hostname {name} is forbidden, hostname should match pattern ^[a-z0-9][a-z0-9-]{{0,62}}(?:[.][a-z0-9-]{{1,63}})*$"
                    ),
                )
            } else {
                result("hostname-valid", "success", format!("Hostname {name} is allowed"))
            });
        }
    }

    let net = &mut v.network;
    let connected = h.checked_in_at == 0 || ctx.now_ms - h.checked_in_at <= MAX_DISCONNECTION_MS;
    net.push(result(
        "connected",
        pass(connected),
        if connected {
            "Host is connected"
        } else {
            "Host is disconnected"
        },
    ));
    let cidr_defined = !ctx.machine_networks.is_empty();
    net.push(if cidr_defined {
        result("machine-cidr-defined", "success", "Machine Network CIDR is defined")
    } else {
        result(
            "machine-cidr-defined",
            "failure",
            "Machine Network CIDR is undefined; the Machine Network CIDR can be defined by setting either the API or Ingress virtual IPs",
        )
    });
    net.push(match inv {
        Some(inv) if cidr_defined => {
            let mine = host_networks(inv);
            let all = ctx.machine_networks.iter().all(|m| {
                m.cidr
                    .parse::<IpNet>()
                    .map(|m| mine.iter().any(|a| m.contains(&a.addr())))
                    .unwrap_or(false)
            });
            if all {
                result(
                    "belongs-to-machine-cidr",
                    "success",
                    "Host belongs to all machine network CIDRs",
                )
            } else {
                result(
                    "belongs-to-machine-cidr",
                    "failure",
                    "Host does not belong to machine network CIDRs. Verify that the host belongs to every CIDR listed under machine networks",
                )
            }
        }
        _ => result(
            "belongs-to-machine-cidr",
            "pending",
            "Missing inventory or machine network CIDR",
        ),
    });
    net.push(if h.host_timestamp == 0 {
        result(
            "time-synced-between-host-and-service",
            "pending",
            "Missing host time, waiting for the next poll",
        )
    } else {
        let service = ctx.now_ms / 1000;
        let skew = service - h.host_timestamp;
        if skew > SERVICE_AHEAD_S || -skew > HOST_AHEAD_S {
            result(
                "time-synced-between-host-and-service",
                "failure",
                format!(
                    "Host clock is not synchronized, there should be less than {} minutes of difference between the host and the service ({} s)",
                    if skew > 0 { SERVICE_AHEAD_S / 60 } else { HOST_AHEAD_S / 60 },
                    skew.abs()
                ),
            )
        } else {
            result(
                "time-synced-between-host-and-service",
                "success",
                "Host clock is synchronized with service",
            )
        }
    });
    net.push(ntp_synced(h.ntp_sources));
    let sno = ctx.cluster.control_plane_count == 1;
    net.push(crate::network::majority_validation(h.id, sno, ctx.majority));
    net.extend(crate::latency::link_validations(
        h.id,
        h.role,
        sno,
        h.connectivity,
        ctx.roles,
        ctx.majority,
    ));
    net.extend(crate::network::domain_validations(
        ctx.cluster_name,
        ctx.cluster,
        h.domain_resolutions,
    ));
    v.hardware
        .push(crate::network::disk_speed_validation(h.disk_speed));
    v
}

fn ntp_synced(reply: &str) -> ValidationResult {
    if reply.is_empty() {
        return result("ntp-synced", "pending", "Missing NTP sources");
    }
    let synced = serde_json::from_str::<serde_json::Value>(reply)
        .ok()
        .and_then(|v| v.get("ntp_sources").cloned())
        .and_then(|s| s.as_array().cloned())
        .unwrap_or_default()
        .iter()
        .any(|s| s["source_state"] == "synced");
    if synced {
        result("ntp-synced", "success", "Host NTP is synced")
    } else {
        result(
            "ntp-synced",
            "failure",
            "Host couldn't synchronize with any NTP server",
        )
    }
}

/// The ids that must pass for a host to be `known` (the reference's
/// "min hardware" and "sufficient for install" groups, as far as this
/// service computes them).
pub const MIN_HARDWARE: &[&str] = &["has-min-valid-disks", "has-min-cpu-cores", "has-min-memory"];
/// See [`MIN_HARDWARE`].
pub const SUFFICIENT: &[&str] = &[
    "has-memory-for-role",
    "has-cpu-cores-for-role",
    "belongs-to-machine-cidr",
    "hostname-unique",
    "hostname-valid",
    "time-synced-between-host-and-service",
    "belongs-to-majority-group",
    crate::latency::LATENCY,
    crate::latency::PACKET_LOSS,
    crate::latency::MTU,
    "api-domain-name-resolved-correctly",
    "api-int-domain-name-resolved-correctly",
    "apps-domain-name-resolved-correctly",
    "dns-wildcard-not-configured",
    "sufficient-installation-disk-speed",
];

/// The host's next pre-install status and its words (the RefreshHost
/// rules for sources discovering, insufficient, known, pending-for-input,
/// disconnected; `None` for any other status: the monitor leaves it).
pub fn host_status(current: &str, v: &Validations) -> Option<(&'static str, String)> {
    if !matches!(
        current,
        "discovering" | "insufficient" | "known" | "pending-for-input" | "disconnected"
    ) {
        return None;
    }
    if v.status("connected") != Some("success") {
        return Some((
            "disconnected",
            "Host has stopped communicating with the installation service".into(),
        ));
    }
    if v.status("has-inventory") != Some("success") {
        return Some((
            "discovering",
            "Waiting for host to send hardware details".into(),
        ));
    }
    if !v.passed(MIN_HARDWARE) {
        let m = v.failing_messages(MIN_HARDWARE);
        return Some((
            "insufficient",
            format!(
                "Host does not meet the minimum hardware requirements: {}",
                m.join(" ; ")
            ),
        ));
    }
    if v.status("machine-cidr-defined") != Some("success") {
        return Some(("pending-for-input", "Waiting for user input".into()));
    }
    if !v.passed(SUFFICIENT) {
        let mut m = v.failing_messages(SUFFICIENT);
        if m.is_empty() {
            // Nothing failed: name what is still pending.
            m = v
                .all()
                .filter(|r| SUFFICIENT.contains(&r.id.as_str()) && r.status == "pending")
                .map(|r| r.message.clone())
                .collect();
        }
        if m.is_empty() {
            m.push("waiting for the role and the other hosts' data".into());
        }
        let mut seen = std::collections::HashSet::new();
        m.retain(|x| seen.insert(x.clone()));
        return Some((
            "insufficient",
            format!(
                "Host cannot be installed due to following failing validation(s): {}",
                m.join(" ; ")
            ),
        ));
    }
    Some(("known", "Host is ready to be installed".into()))
}

/// A host's weight for role suggestion: `(cores − 4) + 0.1·(RAM GiB −
/// 16) + 0.004·(eligible disk GiB − 100)`; lighter hosts are considered
/// first (`monitor.go` SortHosts).
pub fn weight(inv: &Inventory) -> f64 {
    let gib = |b: u64| b as f64 / (1024.0 * 1024.0 * 1024.0);
    let disk = eligible_disks(inv, WORKER)
        .first()
        .map(|d| gib(d.size_bytes))
        .unwrap_or(0.0);
    (f64::from(inv.cpu.count) - 4.0)
        + 0.1 * (gib(inv.memory.physical_bytes) - 16.0)
        + 0.004 * (disk - 100.0)
}

/// What role suggestion needs of one host's inventory, kept for every
/// host of a cluster while its validations run page by page.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RoleFacts {
    /// [`weight`].
    pub weight: f64,
    /// Whether it meets the cluster's master requirement in CPU and
    /// memory ([`meets`]).
    pub meets_master: bool,
}

/// The [`RoleFacts`] of `inv` in `cluster`.
pub fn role_facts(cluster: &ClusterParams, inv: &Inventory) -> RoleFacts {
    let (cpu, mem) = meets(inv, requirement(cluster, "master"));
    RoleFacts {
        weight: weight(inv),
        meets_master: cpu && mem,
    }
}

/// Suggested roles for the cluster's auto-assign hosts, by index into
/// `hosts` (`(role, role facts of the inventory)`), once every host has an
/// inventory: hosts sorted by [`weight`]; each one becomes master while
/// fewer than `control_plane_count` hosts are masters and it meets the
/// master requirement, else worker (`host.go` AutoAssignRole). All `None`
/// while some host has no inventory.
pub fn suggest_roles(
    cluster: &ClusterParams,
    hosts: &[(&str, Option<RoleFacts>)],
) -> Vec<Option<&'static str>> {
    let mut out = vec![None; hosts.len()];
    if hosts.iter().any(|(_, f)| f.is_none()) {
        return out;
    }
    let mut masters = hosts.iter().filter(|(r, _)| *r == "master").count();
    let mut order: Vec<usize> = (0..hosts.len())
        .filter(|&i| hosts[i].0 == "auto-assign")
        .collect();
    let w = |i: usize| hosts[i].1.map(|f| f.weight).unwrap_or(0.0);
    order.sort_by(|&a, &b| w(a).total_cmp(&w(b)).then(a.cmp(&b)));
    let want = usize::from(cluster.control_plane_count);
    for i in order {
        let meets_master = hosts[i].1.is_some_and(|f| f.meets_master);
        if masters < want && meets_master {
            masters += 1;
            out[i] = Some("master");
        } else {
            out[i] = Some("worker");
        }
    }
    out
}

/// The machine networks in force: the user's, else the network of a
/// host address that holds the API VIP (assisted-service computes it from
/// the VIPs the same way).
pub fn machine_networks(cluster: &ClusterParams, inventories: &[&Inventory]) -> Vec<Cidr> {
    let addrs: Vec<IpNet> = inventories.iter().flat_map(|i| host_networks(i)).collect();
    machine_networks_of(cluster, &addrs)
}

/// [`machine_networks`] from the hosts' addresses ([`host_networks`]).
pub fn machine_networks_of(cluster: &ClusterParams, host_addresses: &[IpNet]) -> Vec<Cidr> {
    if !cluster.machine_networks.is_empty() {
        return cluster.machine_networks.clone();
    }
    let Some(vip) = cluster
        .api_vips
        .first()
        .and_then(|v| v.ip.parse::<IpAddr>().ok())
    else {
        return vec![];
    };
    host_addresses
        .iter()
        .find(|n| n.contains(&vip))
        .map(|n| {
            vec![Cidr {
                cidr: n.trunc().to_string(),
            }]
        })
        .unwrap_or_default()
}

/// What the cluster validations look at.
#[derive(Debug, Clone)]
pub struct ClusterFacts<'a> {
    /// The settings.
    pub params: &'a ClusterParams,
    /// Whether a pull secret is stored.
    pub pull_secret_set: bool,
    /// The machine networks in force.
    pub machine_networks: &'a [Cidr],
    /// Each host's status and effective role.
    pub hosts: Vec<(&'a str, &'a str)>,
    /// Each host's clock at its last poll, Unix s.
    pub host_clocks: Vec<i64>,
    /// Each host's id and `verify-vips` output (JSON text, `''` for none).
    pub verified_vips: Vec<(&'a str, &'a str)>,
}

fn vip_valid(
    id: &str,
    kind: &str,
    vips: &[okd_assisted_api::rest::Vip],
    nets: &[Cidr],
    verified: &[(&str, &str)],
) -> ValidationResult {
    let Some(vip) = vips.first() else {
        return result(id, "pending", format!("{kind} virtual IPs are undefined"));
    };
    let Ok(ip) = vip.ip.parse::<IpAddr>() else {
        return result(
            id,
            "failure",
            format!("{kind} virtual IP {} is not a valid IP address", vip.ip),
        );
    };
    if nets.is_empty() {
        return result(
            id,
            "pending",
            format!("{kind} virtual IPs are undefined or machine network is not set"),
        );
    }
    let inside = nets.iter().any(|n| {
        n.cidr
            .parse::<IpNet>()
            .map(|n| n.contains(&ip) && ip != n.network() && ip != n.broadcast())
            .unwrap_or(false)
    });
    let cidrs = || {
        nets.iter()
            .map(|n| n.cidr.as_str())
            .collect::<Vec<_>>()
            .join(",")
    };
    if inside {
        match crate::network::vip_in_use(&vip.ip, verified) {
            None => result(
                id,
                "pending",
                format!(
                    "{kind} virtual IP {} belongs to the Machine CIDR; waiting for the hosts to verify that it is not in use",
                    vip.ip
                ),
            ),
            Some(answering) if !answering.is_empty() => result(
                id,
                "failure",
                format!(
                    "{kind} virtual IP {} is already in use in cidr {} (hosts {} saw it answer ARP)",
                    vip.ip,
                    cidrs(),
                    answering.join(", ")
                ),
            ),
            Some(_) => result(
                id,
                "success",
                format!(
                    "{kind} virtual IPs {} belongs to the Machine CIDR and is not in use.",
                    vip.ip
                ),
            ),
        }
    } else {
        result(
            id,
            "failure",
            format!(
                "{kind} virtual IP {} does not belong to machine-network-cidr {}",
                vip.ip,
                nets.iter()
                    .map(|n| n.cidr.as_str())
                    .collect::<Vec<_>>()
                    .join(",")
            ),
        )
    }
}

/// Cluster validations (ids and messages of assisted-service's cluster
/// validator, the ones this service computes).
pub fn cluster_validations(c: &ClusterFacts<'_>) -> Validations {
    let p = c.params;
    let mut v = Validations::default();
    let cfg = &mut v.configuration;
    cfg.push(if c.pull_secret_set {
        result("pull-secret-set", "success", "The pull secret is set.")
    } else {
        result("pull-secret-set", "failure", "The pull secret is not set.")
    });
    cfg.push(if p.base_dns_domain.is_empty() {
        result(
            "dns-domain-defined",
            "failure",
            "The base domain is undefined and must be provided.",
        )
    } else {
        result(
            "dns-domain-defined",
            "success",
            "The base domain is defined.",
        )
    });
    let net = &mut v.network;
    net.push(if c.machine_networks.is_empty() {
        result(
            "machine-cidr-defined",
            "pending",
            "The Machine Network CIDR is undefined; setting the API or Ingress virtual IPs defines it from the hosts' networks.",
        )
    } else {
        result("machine-cidr-defined", "success", "The Machine Network CIDR is defined.")
    });
    net.push(if p.cluster_networks.is_empty() {
        result(
            "cluster-cidr-defined",
            "failure",
            "The Cluster Network CIDR is undefined.",
        )
    } else {
        result(
            "cluster-cidr-defined",
            "success",
            "The Cluster Network CIDR is defined.",
        )
    });
    net.push(if p.service_networks.is_empty() {
        result(
            "service-cidr-defined",
            "failure",
            "The Service Network CIDR is undefined.",
        )
    } else {
        result(
            "service-cidr-defined",
            "success",
            "The Service Network CIDR is defined.",
        )
    });
    let sno = p.control_plane_count == 1;
    for (id, kind, vips) in [
        ("api-vips-defined", "API", &p.api_vips),
        ("ingress-vips-defined", "Ingress", &p.ingress_vips),
    ] {
        net.push(if sno || !vips.is_empty() {
            result(id, "success", format!("{kind} virtual IPs are defined."))
        } else {
            result(
                id,
                "failure",
                format!("{kind} virtual IPs are undefined and must be provided."),
            )
        });
    }
    if sno {
        net.push(result(
            "api-vips-valid",
            "success",
            "API virtual IPs are not required: SNO",
        ));
        net.push(result(
            "ingress-vips-valid",
            "success",
            "Ingress virtual IPs are not required: SNO",
        ));
    } else {
        net.push(vip_valid(
            "api-vips-valid",
            "API",
            &p.api_vips,
            c.machine_networks,
            &c.verified_vips,
        ));
        net.push(vip_valid(
            "ingress-vips-valid",
            "Ingress",
            &p.ingress_vips,
            c.machine_networks,
            &c.verified_vips,
        ));
    }
    let nets: Vec<IpNet> = p
        .cluster_networks
        .iter()
        .map(|n| n.cidr.as_str())
        .chain(p.service_networks.iter().map(|n| n.cidr.as_str()))
        .chain(c.machine_networks.iter().map(|n| n.cidr.as_str()))
        .filter_map(|s| s.parse().ok())
        .collect();
    let overlap = nets.iter().enumerate().find_map(|(i, a)| {
        nets[i + 1..]
            .iter()
            .find(|b| a.contains(&b.network()) || b.contains(&a.network()))
            .map(|b| (a, b))
    });
    net.push(match overlap {
        Some((a, b)) => result(
            "no-cidrs-overlapping",
            "failure",
            format!("CIDRS {a} and {b} overlap"),
        ),
        None => result(
            "no-cidrs-overlapping",
            "success",
            "No CIDRS are overlapping.",
        ),
    });
    net.push(
        if matches!(p.network_type.as_str(), "OVNKubernetes" | "OpenShiftSDN") {
            result(
                "network-type-valid",
                "success",
                "The cluster has a valid network type",
            )
        } else {
            result(
                "network-type-valid",
                "failure",
                format!("The network type {} is not supported", p.network_type),
            )
        },
    );
    let (lo, hi) = (
        c.host_clocks.iter().filter(|&&t| t > 0).min(),
        c.host_clocks.iter().filter(|&&t| t > 0).max(),
    );
    net.push(match (lo, hi) {
        (Some(lo), Some(hi)) if hi - lo > 4 * 60 => result(
            "ntp-server-configured",
            "failure",
            "Hosts' clocks are not synchronized (there is more than a 4 minutes gap between clocks), please configure an NTP server via DHCP or set clocks manually.",
        ),
        _ => result(
            "ntp-server-configured",
            "success",
            "No ntp problems found",
        ),
    });
    let hd = &mut v.hosts_data;
    let all_ready = !c.hosts.is_empty() && c.hosts.iter().all(|(s, _)| *s == "known");
    hd.push(if all_ready {
        result(
            "all-hosts-are-ready-to-install",
            "success",
            "All hosts in the cluster are ready to install.",
        )
    } else {
        result(
            "all-hosts-are-ready-to-install",
            "failure",
            "The cluster has hosts that are not ready to install.",
        )
    });
    let masters = c.hosts.iter().filter(|(_, r)| *r == "master").count();
    let workers = c.hosts.iter().filter(|(_, r)| *r == "worker").count();
    let want = usize::from(p.control_plane_count);
    hd.push(if masters == want && (!sno || workers == 0) {
        result(
            "sufficient-masters-count",
            "success",
            "The cluster has the exact amount of dedicated control plane nodes.",
        )
    } else if sno {
        result(
            "sufficient-masters-count",
            "failure",
            "Single-node clusters must have a single control plane node and no workers.",
        )
    } else {
        result(
            "sufficient-masters-count",
            "failure",
            format!(
                "The cluster must have exactly {want} dedicated control plane nodes. Add or remove hosts, or change their roles configurations to meet the requirement."
            ),
        )
    });
    v
}

/// Cluster validations that make the input complete ("pending
/// conditions" and "vips defined").
pub const CLUSTER_INPUT: &[&str] = &[
    "machine-cidr-defined",
    "cluster-cidr-defined",
    "service-cidr-defined",
    "dns-domain-defined",
    "pull-secret-set",
    "api-vips-defined",
    "ingress-vips-defined",
];
/// Cluster validations required for install.
pub const CLUSTER_REQUIRED: &[&str] = &[
    "api-vips-valid",
    "ingress-vips-valid",
    "all-hosts-are-ready-to-install",
    "sufficient-masters-count",
    "no-cidrs-overlapping",
    "ntp-server-configured",
    "network-type-valid",
];

/// The cluster's next pre-install status and its words (sources
/// pending-for-input, ready, insufficient; `None` otherwise).
pub fn cluster_status(current: &str, v: &Validations) -> Option<(&'static str, String)> {
    if !matches!(current, "pending-for-input" | "ready" | "insufficient") {
        return None;
    }
    if !v.passed(CLUSTER_INPUT) {
        return Some(("pending-for-input", "User input required".into()));
    }
    if !v.passed(CLUSTER_REQUIRED) {
        return Some(("insufficient", "Cluster is not ready for install".into()));
    }
    Some(("ready", "Cluster ready to be installed".into()))
}

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
