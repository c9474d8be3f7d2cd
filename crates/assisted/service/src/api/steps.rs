//! The next-step protocol: the steps a host gets by status, their
//! arguments (the install step's included) and the replies to them.

use std::collections::HashMap;

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use okd_assisted_api::Inventory;
use okd_assisted_api::rest::{Step, StepReply, Steps};
use okd_assisted_api::steps::{
    DiskSpeedCheckRequest, DiskSpeedCheckResponse, LogsGatherCmdRequest,
};

use super::clusters::cluster_or_404;
use super::hosts::host_or_404;
use super::installation::install_replied;
use super::{Failure, Res, body, json};
use crate::db::{HostRow, ReplyColumn, now_ms};
use crate::model::{self, Outstanding};
use crate::{Shared, events, install, network, validate};

/// Steps younger than this stay answerable, ms (10 min).
pub const STEP_TTL_MS: i64 = 10 * 60 * 1000;

/// At most this many unanswered steps are kept per host (the oldest go).
pub const MAX_OUTSTANDING: usize = 32;

/// The steps a host in `status` gets, and the poll interval, s (the
/// reference's §6.3 for the step types this agent runs).
pub fn steps_for(status: &str, interval: u64) -> (Vec<&'static str>, u64) {
    match status {
        "discovering" | "discovering-unbound" => (vec!["inventory"], interval),
        "insufficient"
        | "pending-for-input"
        | "known"
        | "insufficient-unbound"
        | "known-unbound" => (
            vec![
                "inventory",
                "connectivity-check",
                "free-network-addresses",
                "ntp-synchronizer",
                "domain-resolution",
                "verify-vips",
            ],
            interval,
        ),
        "preparing-for-installation" => (vec!["installation-disk-speed-check"], interval),
        "disconnected" | "disconnected-unbound" => (vec!["inventory"], interval * 2),
        "installing" => (vec!["install"], interval),
        "error" | "cancelled" => (vec!["logs-gather"], interval * 2),
        // The agent never left the live system: it registers again at once
        // instead of the host being rebooted into the discovery image.
        "resetting-pending-user-action" => (vec![], 0),
        _ => (vec![], interval * 2),
    }
}

fn step_id(step_type: &str) -> String {
    format!("{step_type}-{:08x}", rand::random::<u32>())
}

fn step_args(step_type: &str, h: &HostRow, extra: &str) -> Vec<String> {
    match step_type {
        "inventory" => vec![h.id.clone()],
        "ntp-synchronizer" => vec![serde_json::json!({ "ntp_source": extra }).to_string()],
        _ => vec![extra.to_string()],
    }
}

/// Step types handed out once at a time, and for how long an unanswered
/// one holds the next back, ms: the agent may still be running it (the
/// disk check's time limit is 8 min; an install step is never repeated
/// while out).
fn held_back_ms(step_type: &str, interval_s: u64) -> Option<i64> {
    let polls = i64::try_from(interval_s.saturating_mul(2000)).unwrap_or(i64::MAX);
    match step_type {
        "connectivity-check" => Some(polls),
        "installation-disk-speed-check" => Some(8 * 60 * 1000),
        "install" => Some(STEP_TTL_MS),
        // LOG_PENDING_TIMEOUT: an upload may take minutes.
        "logs-gather" => Some(STEP_TTL_MS),
        _ => None,
    }
}

/// The installation-disk-speed-check argument for a preparing host, or
/// `None` when its installation disk was measured already, or is not a
/// disk its inventory reports as eligible (the cluster's preparation is
/// then stopped with that reason: [`super::installation`]'s
/// `disk_check_failed`).
async fn disk_speed_arg(s: &Shared, h: &HostRow) -> Res<Option<String>> {
    let c = cluster_or_404(s, &h.cluster_id).await?;
    let p = model::cluster_params(&c);
    let hosts = s.db.hosts_of_cluster(&c.id).await?;
    let nets = validate::machine_networks(&p, &[]);
    let Ok(plan) = install::plan(&c, &p, &hosts, &nets) else {
        return Ok(None);
    };
    let Some(me) = plan
        .hosts
        .iter()
        .find(|x| x.id == h.id && x.infra_env_id == h.infra_env_id)
    else {
        return Ok(None);
    };
    let measured = serde_json::from_str::<DiskSpeedCheckResponse>(&h.disk_speed)
        .is_ok_and(|r| r.path == me.disk);
    if measured {
        return Ok(None);
    }
    // Only a disk of the host's own inventory, eligible and following
    // the disk path rule, is named to the agent (which checks again);
    // else the preparation stops with the reason.
    // (`h` is the poll's partial row: the inventory is the full row's.)
    let full = hosts
        .iter()
        .find(|x| x.id == h.id && x.infra_env_id == h.infra_env_id);
    let inv: Option<Inventory> = full.and_then(|f| serde_json::from_str(&f.inventory).ok());
    let own = inv.as_ref().and_then(|i| {
        i.disks.iter().find(|d| {
            d.is_named(&me.disk)
                && d.installation_eligibility.eligible
                && okd_assisted_api::disk_path_problem(&me.disk).is_none()
        })
    });
    if own.is_none() {
        let requested = full.map_or("", |f| f.requested_hostname.as_str());
        let name = validate::hostname(requested, inv.as_ref());
        let why = format!(
            "installation disk {:?} is not one of the host's reported, eligible disks (the rule: the installation disk is a disk of the host's inventory, eligible for installation, and {})",
            me.disk,
            okd_assisted_api::DISK_PATH_RULE
        );
        tracing::warn!(host_id = %h.id, "{why}");
        super::installation::disk_check_failed(s, &h.cluster_id, &name, &why).await?;
        return Ok(None);
    }
    Ok(serde_json::to_string(&DiskSpeedCheckRequest {
        path: me.disk.clone(),
    })
    .ok())
}

/// The cluster-wide step arguments of cluster `id` (`None` for an unbound
/// host or a cluster gone): the monitor's, else computed from the
/// cluster's row and published.
async fn cluster_step_args(
    s: &Shared,
    id: &str,
) -> Res<Option<std::sync::Arc<network::ClusterStepArgs>>> {
    if id.is_empty() {
        return Ok(None);
    }
    if let Some(a) = s.cluster_args.get(id) {
        return Ok(Some(a));
    }
    let Some(c) = s.db.cluster(id).await? else {
        return Ok(None);
    };
    s.cluster_args.publish(id, network::ClusterStepArgs::of(&c));
    Ok(s.cluster_args.get(id))
}

/// The install step's argument for a host (its `install_cmd_request`).
async fn install_arg(s: &Shared, h: &HostRow) -> Res<String> {
    let c = cluster_or_404(s, &h.cluster_id).await?;
    let p = model::cluster_params(&c);
    let hosts = s.db.hosts_of_cluster(&c.id).await?;
    let nets = validate::machine_networks(&p, &[]);
    let plan = install::plan(&c, &p, &hosts, &nets).map_err(Failure::conflict)?;
    let me = plan
        .hosts
        .iter()
        .find(|x| x.id == h.id && x.infra_env_id == h.infra_env_id)
        .ok_or_else(|| Failure::not_found(format!("host {} is not in its cluster's plan", h.id)))?;
    Ok(install::install_request(&c.id, &p, me).to_string())
}

pub(super) async fn next_steps(
    State(s): State<Shared>,
    Path((ie, id)): Path<(String, String)>,
    Query(q): Query<HashMap<String, String>>,
) -> Res<Response> {
    let timestamp = match q.get("timestamp") {
        Some(t) => t
            .parse::<i64>()
            .map_err(|_| Failure::bad(format!("timestamp {t:?}: must be Unix seconds")))?,
        None => 0,
    };
    for _ in 0..5 {
        let mut h =
            s.db.host_for_poll(&ie, &id).await?.ok_or_else(|| {
                Failure::not_found(format!("host {id} not found in infra-env {ie}"))
            })?;
        let old = h.steps.clone();
        let now = now_ms();
        let (types, interval) = steps_for(&h.status, s.opts.next_instruction_seconds);
        let mut outstanding: Vec<Outstanding> = serde_json::from_str(&old).unwrap_or_default();
        outstanding.retain(|o| now - o.issued_at < STEP_TTL_MS);
        let mut instructions: Vec<Step> = Vec::new();
        let mut cluster: Option<Option<std::sync::Arc<network::ClusterStepArgs>>> = None;
        let check_ms =
            i64::try_from(s.opts.check_interval_seconds.saturating_mul(1000)).unwrap_or(i64::MAX);
        let slack_ms = i64::try_from(interval.saturating_mul(500)).unwrap_or(0);
        // The step types handed out, with the argument each was paced by.
        let mut handed: Vec<(&'static str, String)> = Vec::new();
        for t in types {
            if let Some(hold) = held_back_ms(t, interval)
                && outstanding
                    .iter()
                    .any(|o| o.step_type == t && now - o.issued_at < hold)
            {
                continue;
            }
            if matches!(t, "ntp-synchronizer" | "domain-resolution" | "verify-vips")
                && cluster.is_none()
            {
                cluster = Some(cluster_step_args(&s, &h.cluster_id).await?);
            }
            let c = cluster.as_ref().and_then(|c| c.as_deref());
            let extra = match t {
                "ntp-synchronizer" => c.map(|c| c.ntp_source.clone()).unwrap_or_default(),
                "connectivity-check" => {
                    let reported = !h.connectivity.is_empty();
                    match s
                        .peers
                        .due(&h.cluster_id, (&h.infra_env_id, &h.id), reported, now)
                    {
                        Some(a) => a,
                        None => continue,
                    }
                }
                "free-network-addresses" => match s.scans.due((&h.infra_env_id, &h.id), now) {
                    Some(a) => a,
                    None => continue,
                },
                "domain-resolution" => match c.and_then(|c| c.domain_resolution.clone()) {
                    Some(a) => a,
                    None => continue,
                },
                "verify-vips" => match c.and_then(|c| c.verify_vips.clone()) {
                    Some(a) => a,
                    None => continue,
                },
                "installation-disk-speed-check" => match disk_speed_arg(&s, &h).await? {
                    Some(a) => a,
                    None => continue,
                },
                // Once per entry into error or cancelled: not again once
                // the logs came after the status did.
                "logs-gather" if h.logs_collected_at >= h.status_updated_at => continue,
                "logs-gather" => serde_json::to_string(&LogsGatherCmdRequest {
                    cluster_id: h.cluster_id.clone(),
                    infra_env_id: h.infra_env_id.clone(),
                    host_id: h.id.clone(),
                    bootstrap: h.bootstrap,
                    installer_gather: false,
                    master_ips: vec![],
                })
                .unwrap_or_default(),
                // Once the agent accepted the install step, its words are
                // the progress info: not again.
                "install" if !h.progress_info.is_empty() => continue,
                "install" => install_arg(&s, &h).await?,
                _ => String::new(),
            };
            // The periodic checks at most once per check interval (an
            // inventory always while the host is discovering).
            let paced = !(t == "inventory" && h.status.starts_with("discovering"));
            if paced
                && !s
                    .cadence
                    .due((&h.infra_env_id, &h.id), t, &extra, now, check_ms, slack_ms)
            {
                continue;
            }
            instructions.push(Step {
                step_type: t.to_string(),
                step_id: step_id(t),
                args: step_args(t, &h, &extra),
            });
            handed.push((t, extra));
        }
        outstanding.extend(instructions.iter().map(|st| Outstanding {
            step_id: st.step_id.clone(),
            step_type: st.step_type.clone(),
            issued_at: now,
        }));
        let excess = outstanding.len().saturating_sub(MAX_OUTSTANDING);
        outstanding.drain(..excess);
        let new = serde_json::to_string(&outstanding).unwrap_or_else(|_| "[]".into());
        h.checked_in_at = now;
        h.host_timestamp = timestamp;
        if s.db.host_polled(&h, &old, &new).await? {
            let handed: Vec<(&str, &str)> = handed.iter().map(|(t, a)| (*t, a.as_str())).collect();
            s.cadence.handed((&h.infra_env_id, &h.id), &handed, now);
            let exit = h.status == "resetting-pending-user-action";
            let steps = Steps {
                next_instruction_seconds: interval,
                post_step_action: if exit { "exit" } else { "continue" }.into(),
                instructions,
            };
            return Ok(json(StatusCode::OK, &steps));
        }
    }
    Err(Failure::conflict(format!(
        "host {id}: its steps changed under five polls in a row; poll again"
    )))
}

pub(super) async fn step_reply(
    State(s): State<Shared>,
    Path((ie, id)): Path<(String, String)>,
    b: Bytes,
) -> Res<Response> {
    let r: StepReply = body("step-reply", &b)?;
    // The outputs the service reads are parsed into their models and
    // stored as the models print them (unknown fields dropped, as
    // assisted-service does); a malformed one is refused.
    let normalized: Option<String> = if r.exit_code == 0 {
        normalize(&r.step_type, &r.output).map_err(|e| {
            Failure::bad(format!(
                "step-reply {}: output of a {} step: {e}",
                r.step_id, r.step_type
            ))
        })?
    } else {
        None
    };
    if r.step_type == "inventory"
        && let Some(out) = &normalized
    {
        let inv: Inventory = serde_json::from_str(out)
            .map_err(|e| Failure::bad(format!("step-reply {}: {e}", r.step_id)))?;
        inventory_disk_paths(&id, &inv)
            .map_err(|e| Failure::bad(format!("step-reply {}: {e}", r.step_id)))?;
    }
    let column = match r.step_type.as_str() {
        "inventory" => Some(ReplyColumn::Inventory),
        "ntp-synchronizer" => Some(ReplyColumn::NtpSources),
        "connectivity-check" => Some(ReplyColumn::Connectivity),
        "domain-resolution" => Some(ReplyColumn::DomainResolutions),
        "free-network-addresses" => Some(ReplyColumn::FreeAddresses),
        "verify-vips" => Some(ReplyColumn::VerifiedVips),
        "installation-disk-speed-check" => Some(ReplyColumn::DiskSpeed),
        _ => None,
    };
    // An inventory chooses the installation disk at once (the disk
    // requirement is read once: the host's cluster and role).
    let mut disk_req = None;
    for _ in 0..5 {
        let h = host_or_404(&s, &ie, &id).await?;
        let mut outstanding: Vec<Outstanding> = serde_json::from_str(&h.steps).unwrap_or_default();
        let Some(pos) = outstanding.iter().position(|o| o.step_id == r.step_id) else {
            return Err(Failure::conflict(format!(
                "step {} was not handed to host {id}, was answered already, or is older than the host's last registration or reset",
                r.step_id
            )));
        };
        if outstanding[pos].step_type != r.step_type {
            return Err(Failure::bad(format!(
                "step {} is a {} step, not {}",
                r.step_id, outstanding[pos].step_type, r.step_type
            )));
        }
        outstanding.remove(pos);
        let new = serde_json::to_string(&outstanding).unwrap_or_else(|_| "[]".into());
        let output = normalized.as_deref().unwrap_or(&r.output);
        let current = match column {
            Some(ReplyColumn::Inventory) => &h.inventory,
            Some(ReplyColumn::NtpSources) => &h.ntp_sources,
            Some(ReplyColumn::Connectivity) => &h.connectivity,
            Some(ReplyColumn::DomainResolutions) => &h.domain_name_resolutions,
            Some(ReplyColumn::FreeAddresses) => &h.free_addresses,
            Some(ReplyColumn::VerifiedVips) => &h.verified_vips,
            Some(ReplyColumn::DiskSpeed) => &h.disk_speed,
            None => &h.steps,
        };
        // The installation disk by assisted-service's rule
        // ([`validate::installation_disk`]): the current one while it is
        // still eligible in this inventory, else the first eligible one.
        let disk = match column {
            Some(ReplyColumn::Inventory) if r.exit_code == 0 => {
                let req = match disk_req {
                    Some(req) => req,
                    None => *disk_req.insert(super::hosts::disk_requirement(&s, &h).await?),
                };
                let inv: Option<Inventory> = serde_json::from_str(output).ok();
                let picked = inv
                    .as_ref()
                    .and_then(|inv| validate::installation_disk(inv, req, &h.installation_disk_id));
                Some(model::installation_disk_columns(picked))
            }
            _ => None,
        };
        let disk_changed = disk.as_ref().is_some_and(|(id, path)| {
            *id != h.installation_disk_id || *path != h.installation_disk_path
        });
        let set = match column {
            Some(c) if r.exit_code == 0 && (current != output || disk_changed) => Some((c, output)),
            _ => None,
        };
        let disk = disk
            .as_ref()
            .filter(|_| set.is_some())
            .map(|(id, path)| (id.as_str(), path.as_str()));
        if s.db
            .host_replied((&ie, &id), &h.steps, &new, set, disk)
            .await?
        {
            if r.exit_code != 0 {
                events::emit(
                    &s.db,
                    events::Scope {
                        cluster_id: &h.cluster_id,
                        infra_env_id: &ie,
                        host_id: &id,
                    },
                    "warning",
                    "host_step_failed",
                    format!(
                        "Host {id}: step {} ({}) failed with exit code {}: {}",
                        r.step_id, r.step_type, r.exit_code, r.error
                    ),
                )
                .await;
            }
            if set.is_some() {
                s.monitor.notify_one();
            }
            if r.step_type == "installation-disk-speed-check" && !h.cluster_id.is_empty() {
                if r.exit_code == 0 {
                    super::installation::advance_preparation(&s, &h.cluster_id).await?;
                } else {
                    let name = validate::hostname(
                        &h.requested_hostname,
                        serde_json::from_str::<Inventory>(&h.inventory)
                            .ok()
                            .as_ref(),
                    );
                    super::installation::disk_check_failed(&s, &h.cluster_id, &name, &r.error)
                        .await?;
                }
            }
            if r.step_type == "install" {
                install_replied(&s, &h, &r).await?;
            }
            return Ok(StatusCode::NO_CONTENT.into_response());
        }
    }
    Err(Failure::conflict(format!(
        "host {id}: its steps changed under five tries in a row; send the reply again"
    )))
}

/// Checks every disk of host `host`'s posted inventory against
/// [`okd_assisted_api::DISK_PATH_RULE`]: its `id` and `path`, and its
/// `by_id` and `by_path` when not empty, are under `/dev/` without `.`,
/// `..` or empty components, NUL or control characters, at most
/// [`okd_assisted_api::MAX_DISK_PATH_BYTES`] bytes. These are the paths
/// the service hands back to the agent (the installation disk speed
/// check, the install step's `boot_device`), so an inventory posted for a
/// host id cannot aim them elsewhere. assisted-service stores the disks
/// as sent; this is this service's rule.
///
/// # Errors
///
/// The first disk path breaking the rule: `inventory of host <id>:
/// disks[<i>].<field> <path>: <what is wrong> (the rule: …)`.
fn inventory_disk_paths(host: &str, inv: &Inventory) -> Result<(), String> {
    for (i, d) in inv.disks.iter().enumerate() {
        for (field, path) in d.paths() {
            if let Some(problem) = okd_assisted_api::disk_path_problem(path) {
                return Err(format!(
                    "inventory of host {host}: disks[{i}].{field} {path:?}: {problem} (the rule: {})",
                    okd_assisted_api::DISK_PATH_RULE
                ));
            }
        }
    }
    Ok(())
}

/// A reply's output parsed into its step's model and printed again;
/// `None` for step types whose output is kept as sent (JSON checked).
fn normalize(step_type: &str, output: &str) -> Result<Option<String>, String> {
    use okd_assisted_api::steps::{
        ConnectivityReport, DomainResolutionResponse, FreeNetworksAddresses, VerifyVipsResponse,
    };
    fn again<T: serde::de::DeserializeOwned + serde::Serialize>(
        output: &str,
        what: &str,
    ) -> Result<Option<String>, String> {
        let v: T = serde_json::from_str(output).map_err(|e| format!("not {what}: {e}"))?;
        Ok(serde_json::to_string(&v).ok())
    }
    match step_type {
        "inventory" => again::<Inventory>(output, "an inventory"),
        "connectivity-check" => again::<ConnectivityReport>(output, "a connectivity report"),
        "domain-resolution" => {
            again::<DomainResolutionResponse>(output, "a domain resolution response")
        }
        "verify-vips" => again::<VerifyVipsResponse>(output, "a verify-vips response"),
        "installation-disk-speed-check" => {
            again::<DiskSpeedCheckResponse>(output, "a disk speed response")
        }
        "free-network-addresses" => {
            again::<FreeNetworksAddresses>(output, "a list of networks' free addresses")
        }
        "ntp-synchronizer" if !output.is_empty() => {
            serde_json::from_str::<serde_json::Value>(output)
                .map(|_| None)
                .map_err(|e| format!("not JSON: {e}"))
        }
        _ => Ok(None),
    }
}
