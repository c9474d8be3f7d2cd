//! A host's validations and its pre-install status
//! (assisted-service `internal/host/validator.go`,
//! `internal/host/statemachine.go`).

use super::*;

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
