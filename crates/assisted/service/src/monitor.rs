//! The monitor: re-evaluates every host's and cluster's validations and
//! moves them through the pre-install states (assisted-service
//! `internal/host/monitor.go`, `internal/cluster/monitor`; one loop here,
//! every `--monitor-interval`, default 8 s, and at once after a change
//! that matters: a new inventory, a user's update, a new cluster).
//!
//! Every change is a conditional update on the status it was computed
//! from, so a second service replica running the same pass on the same
//! PostgreSQL changes each host once; the event is written by the one
//! whose update took.

use okd_assisted_api::Inventory;

use crate::db::{ClusterRow, Db, DbError, HostRow, now_ms};
use crate::events::{self, Scope};
use crate::model;
use crate::network::{self, PeerCache};
use crate::validate::{self, ClusterFacts, HostContext, HostFacts};

fn name_of(h: &HostRow, inv: Option<&Inventory>) -> String {
    let n = validate::hostname(&h.requested_hostname, inv);
    if n.is_empty() { h.id.clone() } else { n }
}

/// How long a cluster may stay `preparing-for-installation`, ms
/// (`PREPARE_FOR_INSTALLATION_TIMEOUT`, 10 min): the replica that was
/// generating its files may have stopped.
pub const PREPARE_TIMEOUT_MS: i64 = 10 * 60 * 1000;

/// One pass over every cluster and unbound host.
///
/// Errors: the database's; a pass stops at the first.
pub async fn pass(db: &Db, peers: &PeerCache) -> Result<(), DbError> {
    for c in db.clusters().await? {
        if c.status == "preparing-for-installation" {
            preparation_timeout(db, &c).await?;
            continue;
        }
        cluster_pass(db, peers, &c).await?;
    }
    for h in db.unbound_hosts().await? {
        unbound_pass(db, &h).await?;
    }
    Ok(())
}

async fn cluster_pass(db: &Db, peers: &PeerCache, c: &ClusterRow) -> Result<(), DbError> {
    let params = model::cluster_params(c);
    let mut hosts = db.hosts_of_cluster(&c.id).await?;
    // Each inventory's text goes as soon as it is parsed, with the other
    // columns the pass does not read: with thousands of hosts they are
    // most of its memory.
    let invs: Vec<Option<Inventory>> = hosts
        .iter_mut()
        .map(|h| {
            let inv = serde_json::from_str(&h.inventory).ok();
            h.inventory = String::new();
            h.steps = String::new();
            h.free_addresses = String::new();
            inv
        })
        .collect();
    let present: Vec<&Inventory> = invs.iter().flatten().collect();
    let nets = validate::machine_networks(&params, &present);
    let pairs: Vec<(&str, Option<&Inventory>)> = hosts
        .iter()
        .zip(&invs)
        .map(|(h, i)| (h.role.as_str(), i.as_ref()))
        .collect();
    let suggested = validate::suggest_roles(&params, &pairs);
    let names: Vec<String> = hosts
        .iter()
        .zip(&invs)
        .map(|(h, i)| validate::hostname(&h.requested_hostname, i.as_ref()))
        .collect();
    // Counted once per pass (a list of the others per host was quadratic:
    // about a second for 5,000 hosts, bench/assisted-agents.sh).
    let mut counts: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for n in names.iter().filter(|n| !n.is_empty()) {
        *counts.entry(n.clone()).or_default() += 1;
    }
    let with_inv: Vec<(&str, &Inventory)> = hosts
        .iter()
        .zip(&invs)
        .filter_map(|(h, i)| i.as_ref().map(|i| (h.id.as_str(), i)))
        .collect();
    peers.publish(&c.id, network::connectivity_peers(with_inv));
    let ipnets: Vec<ipnet::IpNet> = nets.iter().filter_map(|n| n.cidr.parse().ok()).collect();
    let reports: Vec<(&str, Option<&Inventory>, &str)> = hosts
        .iter()
        .zip(&invs)
        .map(|(h, i)| (h.id.as_str(), i.as_ref(), h.connectivity.as_str()))
        .collect();
    let majority = network::majority(&ipnets, &reports);
    let now = now_ms();
    let mut after: Vec<(String, String)> = Vec::new();
    for (i, h) in hosts.iter().enumerate() {
        let suggestion = suggested[i].unwrap_or(if h.role == "auto-assign" {
            ""
        } else {
            h.suggested_role.as_str()
        });
        let role = if h.role == "auto-assign" {
            if suggestion.is_empty() {
                "auto-assign"
            } else {
                suggestion
            }
        } else {
            h.role.as_str()
        };
        let role = if params.control_plane_count == 1 && role == "auto-assign" {
            "master"
        } else {
            role
        };
        // A long pass must not hold a runtime worker: let requests in.
        if i % 100 == 99 {
            tokio::task::yield_now().await;
        }
        let ctx = HostContext {
            cluster: &params,
            machine_networks: &nets,
            hostname_counts: &counts,
            cluster_name: &c.name,
            majority: &majority,
            now_ms: now,
        };
        let facts = HostFacts {
            id: &h.id,
            inventory: invs[i].as_ref(),
            role,
            requested_hostname: &h.requested_hostname,
            checked_in_at: h.checked_in_at,
            host_timestamp: h.host_timestamp,
            ntp_sources: &h.ntp_sources,
            domain_resolutions: &h.domain_name_resolutions,
            disk_speed: &h.disk_speed,
        };
        let v = validate::host_validations(&facts, &ctx);
        let vjson = v.to_json();
        let (to, info) = match validate::host_status(&h.status, &v) {
            Some((to, info)) => (to.to_string(), info),
            None => (h.status.clone(), h.status_info.clone()),
        };
        let suggestion = if h.role == "auto-assign" {
            suggestion
        } else {
            ""
        };
        if to != h.status
            || info != h.status_info
            || vjson != h.validations_info
            || suggestion != h.suggested_role
        {
            let took = db
                .set_host_status(h, &h.status, &to, &info, &vjson, suggestion)
                .await?;
            if took && to != h.status {
                events::emit(
                    db,
                    Scope {
                        cluster_id: &c.id,
                        infra_env_id: &h.infra_env_id,
                        host_id: &h.id,
                    },
                    if to == "insufficient" || to == "disconnected" {
                        "warning"
                    } else {
                        "info"
                    },
                    "host_status_updated",
                    format!(
                        "Host {}: updated status from {} to {} ({info})",
                        name_of(h, invs[i].as_ref()),
                        h.status,
                        to
                    ),
                )
                .await;
            }
            after.push((if took { to } else { h.status.clone() }, role.to_string()));
        } else {
            after.push((h.status.clone(), role.to_string()));
        }
    }
    let facts = ClusterFacts {
        params: &params,
        pull_secret_set: !c.pull_secret.is_empty(),
        machine_networks: &nets,
        hosts: after
            .iter()
            .map(|(s, r)| (s.as_str(), r.as_str()))
            .collect(),
        host_clocks: hosts.iter().map(|h| h.host_timestamp).collect(),
        verified_vips: hosts
            .iter()
            .map(|h| (h.id.as_str(), h.verified_vips.as_str()))
            .collect(),
    };
    let v = validate::cluster_validations(&facts);
    let vjson = v.to_json();
    if let Some((to, info)) = validate::cluster_status(&c.status, &v)
        && (to != c.status || info != c.status_info || vjson != c.validations_info)
    {
        let took = db
            .set_cluster_status(&c.id, &c.status, to, &info, &vjson)
            .await?;
        if took && to != c.status {
            events::cluster(
                db,
                &c.id,
                "info",
                "cluster_status_updated",
                format!("Updated status of the cluster to {to} ({info})"),
            )
            .await;
        }
    }
    Ok(())
}

async fn unbound_pass(db: &Db, h: &HostRow) -> Result<(), DbError> {
    if !matches!(
        h.status.as_str(),
        "discovering-unbound" | "known-unbound" | "insufficient-unbound" | "disconnected-unbound"
    ) {
        return Ok(());
    }
    let inv: Option<Inventory> = serde_json::from_str(&h.inventory).ok();
    let params = model::defaults("", None);
    let ctx = HostContext {
        cluster: &params,
        machine_networks: &[],
        hostname_counts: &std::collections::HashMap::new(),
        cluster_name: "",
        majority: &network::Majority::Pending(String::new()),
        now_ms: now_ms(),
    };
    let facts = HostFacts {
        id: &h.id,
        inventory: inv.as_ref(),
        role: "auto-assign",
        requested_hostname: &h.requested_hostname,
        checked_in_at: h.checked_in_at,
        host_timestamp: h.host_timestamp,
        ntp_sources: &h.ntp_sources,
        domain_resolutions: "",
        disk_speed: "",
    };
    let v = validate::host_validations(&facts, &ctx);
    let (to, info) = if v.status("connected") != Some("success") {
        (
            "disconnected-unbound",
            "Host has stopped communicating with the installation service".to_string(),
        )
    } else if inv.is_none() {
        (
            "discovering-unbound",
            "Waiting for host to send hardware details".to_string(),
        )
    } else if !v.passed(validate::MIN_HARDWARE) {
        (
            "insufficient-unbound",
            format!(
                "Host does not meet the minimum hardware requirements: {}",
                v.failing_messages(validate::MIN_HARDWARE).join(" ; ")
            ),
        )
    } else {
        (
            "known-unbound",
            "Host is ready to be bound to a cluster".to_string(),
        )
    };
    let vjson = v.to_json();
    if to != h.status || info != h.status_info || vjson != h.validations_info {
        let took = db
            .set_host_status(h, &h.status, to, &info, &vjson, "")
            .await?;
        if took && to != h.status {
            events::emit(
                db,
                Scope {
                    cluster_id: "",
                    infra_env_id: &h.infra_env_id,
                    host_id: &h.id,
                },
                "info",
                "host_status_updated",
                format!(
                    "Host {}: updated status from {} to {to} ({info})",
                    name_of(h, inv.as_ref()),
                    h.status
                ),
            )
            .await;
        }
    }
    Ok(())
}

/// A preparation older than [`PREPARE_TIMEOUT_MS`]: the cluster back to
/// `ready` with the reason, its preparing hosts back to `known` (the
/// reference's §3.2: "timeout → ready").
async fn preparation_timeout(db: &Db, c: &ClusterRow) -> Result<(), DbError> {
    if now_ms() - c.status_updated_at < PREPARE_TIMEOUT_MS {
        return Ok(());
    }
    let info = "Preparing the installation timed out after 10 minutes; install again";
    if !db
        .set_cluster_status(&c.id, &c.status, "ready", info, &c.validations_info)
        .await?
    {
        return Ok(());
    }
    events::cluster(
        db,
        &c.id,
        "error",
        "cluster_prepare_installation_failed",
        info.to_string(),
    )
    .await;
    for h in db.hosts_of_cluster(&c.id).await? {
        if matches!(
            h.status.as_str(),
            "preparing-for-installation" | "preparing-successful"
        ) && db
            .set_host_status(
                &h,
                &h.status,
                "known",
                "Host is ready to be installed",
                &h.validations_info,
                &h.suggested_role,
            )
            .await?
        {
            events::emit(
                db,
                Scope {
                    cluster_id: &c.id,
                    infra_env_id: &h.infra_env_id,
                    host_id: &h.id,
                },
                "info",
                "host_status_updated",
                format!(
                    "Host {}: updated status from {} to known (the preparation timed out)",
                    h.id, h.status
                ),
            )
            .await;
        }
    }
    Ok(())
}
