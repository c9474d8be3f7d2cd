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

use std::collections::HashMap;

use ipnet::IpNet;
use okd_assisted_api::Inventory;

use crate::db::{ClusterRow, Db, DbError, HostRow, now_ms};
use crate::events::{self, Scope};
use crate::free_addresses::{self, ScanCache};
use crate::model;
use crate::network::{self, ClusterArgsCache, ClusterStepArgs, PeerCache};
use crate::validate::{self, ClusterFacts, HostContext, HostFacts};

fn name_of(h: &HostRow, inv: Option<&Inventory>) -> String {
    let n = validate::hostname(&h.requested_hostname, inv);
    if n.is_empty() { h.id.clone() } else { n }
}

/// How long a cluster may stay `preparing-for-installation`, ms
/// (`PREPARE_FOR_INSTALLATION_TIMEOUT`, 10 min): the replica that was
/// generating its files may have stopped.
pub const PREPARE_TIMEOUT_MS: i64 = 10 * 60 * 1000;

/// What one [`pass`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PassStats {
    /// Clusters looked at.
    pub clusters: usize,
    /// Hosts validated (of clusters before installation, and unbound).
    pub hosts: usize,
    /// Hosts whose row was updated (status, validations or suggested
    /// role changed).
    pub updated: usize,
}

/// One pass over every cluster and unbound host.
///
/// Errors: the database's; a pass stops at the first.
pub async fn pass(
    db: &Db,
    peers: &PeerCache,
    scans: &ScanCache,
    cluster_args: &ClusterArgsCache,
) -> Result<PassStats, DbError> {
    let mut stats = PassStats::default();
    for c in db.clusters().await? {
        stats.clusters += 1;
        if c.status == "preparing-for-installation" {
            preparation_timeout(db, &c).await?;
            continue;
        }
        if matches!(
            c.status.as_str(),
            "installing" | "installing-pending-user-action" | "finalizing" | "error"
        ) {
            crate::install_monitor::pass(db, &c, now_ms()).await?;
            continue;
        }
        cluster_args.publish(&c.id, ClusterStepArgs::of(&c));
        cluster_pass(db, peers, scans, &c, &mut stats).await?;
    }
    for h in db.unbound_hosts().await? {
        stats.hosts += 1;
        if unbound_pass(db, &h).await? {
            stats.updated += 1;
        }
    }
    Ok(stats)
}

/// Hosts per page of a cluster pass's validations: the pass holds the
/// full rows and parsed inventories of one page at a time, and a compact
/// [`Summary`] of every host.
pub const PAGE_HOSTS: i64 = 500;

/// The columns the first, cluster-wide part of a pass reads.
const SUMMARY_COLS: &str = "id, infra_env_id, role, requested_hostname, inventory, \
     host_timestamp, verified_vips, connectivity, free_addresses";

/// What the cluster-wide parts of a pass keep of one host (role
/// suggestion, machine networks, host name counts, majority groups and
/// the cluster validations), a few hundred bytes each.
#[derive(Debug)]
struct Summary {
    id: String,
    infra_env_id: String,
    role: String,
    /// The effective host name.
    hostname: String,
    /// `None` before the first inventory.
    facts: Option<validate::RoleFacts>,
    /// The addresses with their networks; `None` before the first
    /// inventory.
    addrs: Option<Vec<IpNet>>,
    host_timestamp: i64,
    verified_vips: String,
    /// The `connectivity-check` output; only while the cluster has at
    /// most [`network::MAX_CONNECTIVITY_HOSTS`] hosts with an inventory.
    connectivity: String,
}

/// A cluster's hosts, in two parts: every host's [`Summary`] (and the
/// step arguments the monitor publishes), read as the rows stream in;
/// then the validations and status changes, [`PAGE_HOSTS`] full rows at
/// a time.
async fn cluster_pass(
    db: &Db,
    peers: &PeerCache,
    scans: &ScanCache,
    c: &ClusterRow,
    stats: &mut PassStats,
) -> Result<(), DbError> {
    let params = model::cluster_params(c);
    let now = now_ms();
    let mut sums: Vec<Summary> = Vec::new();
    let mut peer_list = Vec::new();
    let mut with_inventory = 0usize;
    db.each_host_of_cluster(&c.id, SUMMARY_COLS, |h| {
        let inv: Option<Inventory> = serde_json::from_str(&h.inventory).ok();
        let nets = inv
            .as_ref()
            .map(free_addresses::scan_networks)
            .unwrap_or_default();
        let reported = free_addresses::reported_networks(&h.free_addresses) == nets;
        scans.publish((&h.infra_env_id, &h.id), &nets, reported, now);
        if let Some(i) = &inv {
            with_inventory += 1;
            if with_inventory <= network::MAX_CONNECTIVITY_HOSTS {
                peer_list.extend(network::connectivity_peers([(h.id.as_str(), i)]));
            }
        }
        let small = with_inventory <= network::MAX_CONNECTIVITY_HOSTS;
        sums.push(Summary {
            hostname: validate::hostname(&h.requested_hostname, inv.as_ref()),
            facts: inv.as_ref().map(|i| validate::role_facts(&params, i)),
            addrs: inv.as_ref().map(validate::host_networks),
            connectivity: if small { h.connectivity } else { String::new() },
            id: h.id,
            infra_env_id: h.infra_env_id,
            role: h.role,
            host_timestamp: h.host_timestamp,
            verified_vips: h.verified_vips,
        });
    })
    .await?;
    if with_inventory > network::MAX_CONNECTIVITY_HOSTS {
        peer_list.clear();
        for s in &mut sums {
            s.connectivity = String::new();
        }
    }
    peers.publish(&c.id, peer_list);
    let all_addrs: Vec<IpNet> = sums
        .iter()
        .flat_map(|s| s.addrs.iter().flatten().copied())
        .collect();
    let nets = validate::machine_networks_of(&params, &all_addrs);
    drop(all_addrs);
    let pairs: Vec<(&str, Option<validate::RoleFacts>)> =
        sums.iter().map(|s| (s.role.as_str(), s.facts)).collect();
    let suggested = validate::suggest_roles(&params, &pairs);
    // Counted once per pass (a list of the others per host was quadratic:
    // about a second for 5,000 hosts, bench/assisted-agents.sh).
    let mut counts: HashMap<String, usize> = HashMap::new();
    for s in sums.iter().filter(|s| !s.hostname.is_empty()) {
        *counts.entry(s.hostname.clone()).or_default() += 1;
    }
    let ipnets: Vec<IpNet> = nets.iter().filter_map(|n| n.cidr.parse().ok()).collect();
    let reports: Vec<(&str, Option<&[IpNet]>, &str)> = sums
        .iter()
        .map(|s| (s.id.as_str(), s.addrs.as_deref(), s.connectivity.as_str()))
        .collect();
    let majority = network::majority(&ipnets, &reports);
    let index: HashMap<(&str, &str), usize> = sums
        .iter()
        .enumerate()
        .map(|(i, s)| ((s.infra_env_id.as_str(), s.id.as_str()), i))
        .collect();
    let roles: HashMap<&str, &str> = sums
        .iter()
        .zip(&suggested)
        .map(|(s, sg)| {
            let role = match (s.role.as_str(), sg) {
                ("auto-assign", Some(r)) => r,
                ("auto-assign", None) if params.control_plane_count == 1 => "master",
                (r, _) => r,
            };
            (s.id.as_str(), role)
        })
        .collect();
    let ctx = HostContext {
        cluster: &params,
        machine_networks: &nets,
        hostname_counts: &counts,
        cluster_name: &c.name,
        majority: &majority,
        roles: &roles,
        now_ms: now,
    };
    // Each host's status and effective role after this pass, by index
    // into `sums` (`None`: gone before its page was read).
    let mut after: Vec<Option<(String, String)>> = vec![None; sums.len()];
    let mut from: Option<(i64, String)> = None;
    loop {
        let page = db
            .hosts_of_cluster_page(
                &c.id,
                from.as_ref().map(|(at, id)| (*at, id.as_str())),
                PAGE_HOSTS,
            )
            .await?;
        let full = page.len() as i64 == PAGE_HOSTS;
        from = page.last().map(|h| (h.created_at, h.id.clone()));
        for (n, h) in page.iter().enumerate() {
            // A long pass must not hold its runtime: every 3 ms or so of
            // validation work at 5,000 hosts, let the pool's tasks (and the
            // requests, when the monitor runs on the request workers
            // because its own thread could not start) in.
            if n % 10 == 9 {
                tokio::task::yield_now().await;
            }
            // A host that came after the first part waits for the next pass.
            let Some(&i) = index.get(&(h.infra_env_id.as_str(), h.id.as_str())) else {
                continue;
            };
            let (status, role, updated) = host_pass(db, c, &ctx, h, suggested[i]).await?;
            stats.hosts += 1;
            stats.updated += usize::from(updated);
            after[i] = Some((status, role));
        }
        if !full {
            break;
        }
    }
    let facts = ClusterFacts {
        params: &params,
        pull_secret_set: !c.pull_secret.is_empty(),
        machine_networks: &nets,
        hosts: after
            .iter()
            .flatten()
            .map(|(s, r)| (s.as_str(), r.as_str()))
            .collect(),
        host_clocks: sums.iter().map(|s| s.host_timestamp).collect(),
        verified_vips: sums
            .iter()
            .map(|s| (s.id.as_str(), s.verified_vips.as_str()))
            .collect(),
    };
    let v = validate::cluster_validations(&facts);
    let vjson = v.to_json();
    if let Some((to, info)) = validate::cluster_status(&c.status, &v)
        && (to != c.status || info != c.status_info || vjson != c.validations_info)
    {
        events::cluster_status(db, &c.id, &c.status, to, &info, &vjson).await?;
    }
    Ok(())
}

/// One host of a cluster pass: its effective role (the suggestion
/// `suggested` for an auto-assign host), validations and status, updated
/// when any changed (with an event for a status change). Returns its
/// status and effective role afterwards, and whether its row was updated.
async fn host_pass(
    db: &Db,
    c: &ClusterRow,
    ctx: &HostContext<'_>,
    h: &HostRow,
    suggested: Option<&'static str>,
) -> Result<(String, String, bool), DbError> {
    let inv: Option<Inventory> = serde_json::from_str(&h.inventory).ok();
    let suggestion = suggested.unwrap_or(if h.role == "auto-assign" {
        ""
    } else {
        h.suggested_role.as_str()
    });
    let role = match h.role.as_str() {
        "auto-assign" if !suggestion.is_empty() => suggestion,
        "auto-assign" if ctx.cluster.control_plane_count == 1 => "master",
        r => r,
    };
    let facts = HostFacts {
        id: &h.id,
        inventory: inv.as_ref(),
        role,
        requested_hostname: &h.requested_hostname,
        checked_in_at: h.checked_in_at,
        host_timestamp: h.host_timestamp,
        ntp_sources: &h.ntp_sources,
        domain_resolutions: &h.domain_name_resolutions,
        disk_speed: &h.disk_speed,
        connectivity: &h.connectivity,
    };
    let v = validate::host_validations(&facts, ctx);
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
    if to == h.status
        && info == h.status_info
        && vjson == h.validations_info
        && suggestion == h.suggested_role
    {
        return Ok((to, role.to_string(), false));
    }
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
                "Host {}: updated status from {} to {to} ({info})",
                name_of(h, inv.as_ref()),
                h.status
            ),
        )
        .await;
    }
    Ok((
        if took { to } else { h.status.clone() },
        role.to_string(),
        took,
    ))
}

/// One unbound host: its validations and status. Returns whether its row
/// was updated.
async fn unbound_pass(db: &Db, h: &HostRow) -> Result<bool, DbError> {
    if !matches!(
        h.status.as_str(),
        "discovering-unbound" | "known-unbound" | "insufficient-unbound" | "disconnected-unbound"
    ) {
        return Ok(false);
    }
    let inv: Option<Inventory> = serde_json::from_str(&h.inventory).ok();
    let params = model::defaults("", None);
    let ctx = HostContext {
        cluster: &params,
        machine_networks: &[],
        hostname_counts: &HashMap::new(),
        cluster_name: "",
        majority: &network::Majority::Pending(String::new()),
        roles: &HashMap::new(),
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
        connectivity: "",
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
    let mut updated = false;
    if to != h.status || info != h.status_info || vjson != h.validations_info {
        let took = db
            .set_host_status(h, &h.status, to, &info, &vjson, "")
            .await?;
        updated = took;
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
    Ok(updated)
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
