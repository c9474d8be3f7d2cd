//! Hosts: register (and the re-registration rule), list, get, update and
//! delete.

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use okd_assisted_api::Inventory;
use okd_assisted_api::rest::{
    HostCreateParams, HostRegistrationResponse, HostUpdateParams, NextStepRunnerCommand,
};

use super::clusters::cluster_or_404;
use super::infra_envs::infra_env_or_404;
use super::{Failure, Res, body, json};
use crate::auth::Caller;
use crate::db::{HostRow, now_ms};
use crate::limits::{self, HostAdmission};
use crate::model;
use crate::{Shared, events, validate};

pub(super) async fn host_or_404(s: &Shared, ie: &str, id: &str) -> Res<HostRow> {
    s.db.host(ie, id)
        .await?
        .ok_or_else(|| Failure::not_found(format!("host {id} not found in infra-env {ie}")))
}

/// Statuses of a bound cluster that accept new hosts
/// (`AcceptRegistration`).
pub const ACCEPTS_HOSTS: &[&str] = &["insufficient", "ready", "pending-for-input", "adding-hosts"];

/// What a registration of an existing host does, by its status (the
/// RegisterHost rules): the next status and whether its inventory is
/// collected anew; `None`: refused.
fn reregistration(status: &str) -> Option<(&'static str, bool)> {
    match status {
        "discovering"
        | "known"
        | "disconnected"
        | "insufficient"
        | "pending-for-input"
        | "resetting-pending-user-action"
        | "binding"
        | "resetting" => Some(("discovering", true)),
        "preparing-for-installation" | "preparing-successful" => Some(("known", false)),
        "installing" | "installing-in-progress" => Some(("error", false)),
        "discovering-unbound"
        | "known-unbound"
        | "insufficient-unbound"
        | "disconnected-unbound" => Some(("discovering-unbound", true)),
        _ => None,
    }
}

pub(super) async fn register_host(
    State(s): State<Shared>,
    Path(ie): Path<String>,
    caller: Option<axum::Extension<Caller>>,
    b: Bytes,
) -> Res<Response> {
    let p: HostCreateParams = body("host-create-params", &b)?;
    if uuid::Uuid::parse_str(&p.host_id).is_err() {
        return Err(Failure::bad(format!("host_id {:?}: not a UUID", p.host_id)));
    }
    let caller = caller.map_or(Caller::Open, |c| c.0);
    if let Caller::Host(h) = &caller
        && *h != p.host_id
    {
        return Err(Failure::new(
            StatusCode::FORBIDDEN,
            format!(
                "this host token is for host {h}, not {}: register with the discovery token",
                p.host_id
            ),
        ));
    }
    let env = infra_env_or_404(&s, &ie).await?;
    if !env.cluster_id.is_empty() {
        let c = cluster_or_404(&s, &env.cluster_id).await?;
        if !ACCEPTS_HOSTS.contains(&c.status.as_str()) {
            return Err(Failure::conflict(format!(
                "Cannot add hosts to cluster {} in status {}",
                c.id, c.status
            )));
        }
    }
    let now = now_ms();
    let (status, info) = if env.cluster_id.is_empty() {
        (
            "discovering-unbound",
            "Waiting for host to send hardware details",
        )
    } else {
        ("discovering", "Waiting for host to send hardware details")
    };
    let row = HostRow {
        id: p.host_id.clone(),
        infra_env_id: ie.clone(),
        cluster_id: env.cluster_id.clone(),
        status: status.into(),
        status_info: info.into(),
        status_updated_at: now,
        role: "auto-assign".into(),
        agent_version: p.discovery_agent_version.clone(),
        registered_at: now,
        created_at: now,
        updated_at: now,
        steps: "[]".into(),
        ..HostRow::default()
    };
    let scope = events::Scope {
        cluster_id: &env.cluster_id,
        infra_env_id: &ie,
        host_id: &p.host_id,
    };
    let admission =
        s.db.insert_host(&row, s.opts.limits.max_hosts_per_infra_env)
            .await?;
    if let HostAdmission::Full { hosts } = admission {
        return Err(limits::infra_env_full(&s, scope, &env.name, hosts).await);
    }
    if admission == HostAdmission::New {
        events::emit(
            &s.db,
            scope,
            "info",
            "host_registration_succeeded",
            format!("Host {}: Successfully registered", p.host_id),
        )
        .await;
    } else {
        let old = host_or_404(&s, &ie, &p.host_id).await?;
        let Some((to, reset)) = reregistration(&old.status) else {
            return Err(Failure::conflict(format!(
                "Host {} is in status {} and cannot register again; reset the cluster's installation first",
                p.host_id, old.status
            )));
        };
        let active = old.checked_in_at > 0
            && now - old.checked_in_at
                < i64::try_from(s.opts.next_instruction_seconds * 2000).unwrap_or(i64::MAX);
        if active && caller == Caller::Discovery {
            // Whoever has the discovery Ignition has this token: taking
            // over a host that is alive needs its own host token.
            let msg = format!(
                "Host {} is registered and its agent polled within the last {} s: registering it again needs its host token. If two machines share this id (cloned VMs, identical board serials), give one of them another (okd-install agent --host-id)",
                p.host_id,
                s.opts.next_instruction_seconds * 2
            );
            if s.refusals
                .first_in_a_while(&format!("{ie}/{}/register", p.host_id))
            {
                events::emit(
                    &s.db,
                    scope,
                    "warning",
                    "host_registration_failed",
                    msg.clone(),
                )
                .await;
            }
            return Err(Failure::conflict(msg));
        }
        if !s
            .db
            .reregister_host(
                (&ie, &p.host_id),
                &old.status,
                to,
                info,
                reset,
                &p.discovery_agent_version,
            )
            .await?
        {
            return Err(Failure::conflict(format!(
                "Host {} changed status while registering again; retry",
                p.host_id
            )));
        }
        // Its outstanding steps were dropped: check its connectivity again.
        s.peers.forget(&ie, &p.host_id);
        s.scans.forget(&ie, &p.host_id);
        s.cadence.forget(&ie, &p.host_id);
        let name = validate::hostname(
            &old.requested_hostname,
            serde_json::from_str::<Inventory>(&old.inventory)
                .ok()
                .as_ref(),
        );
        let who = if name.is_empty() {
            p.host_id.clone()
        } else {
            name
        };
        let (sev, msg) = if active {
            (
                "warning",
                format!(
                    "Host {who}: registered again while its agent was polling; if two machines share the id {} (cloned VMs, identical board serials), give one of them another id (okd-install agent --host-id)",
                    p.host_id
                ),
            )
        } else {
            ("info", format!("Host {who}: registered again"))
        };
        events::emit(&s.db, scope, sev, "host_registration_succeeded", msg).await;
    }
    let h = host_or_404(&s, &ie, &p.host_id).await?;
    let args = serde_json::json!({
        "infra_env_id": ie,
        "host_id": p.host_id,
        "agent_version": p.discovery_agent_version,
    })
    .to_string();
    let host_token = s
        .opts
        .auth
        .as_deref()
        .map(|k| k.host_token(&ie, env.signing_generation, &p.host_id, h.registered_at));
    let resp = HostRegistrationResponse {
        host: model::host_doc(&h),
        next_step_runner_command: NextStepRunnerCommand {
            command: String::new(),
            args: vec![args],
            retry_seconds: None,
        },
        host_token,
    };
    Ok(json(StatusCode::CREATED, &resp))
}

pub(super) async fn list_hosts(State(s): State<Shared>, Path(ie): Path<String>) -> Res<Response> {
    infra_env_or_404(&s, &ie).await?;
    let v: Vec<_> =
        s.db.hosts_of_infra_env(&ie)
            .await?
            .iter()
            .map(model::host_doc)
            .collect();
    Ok(json(StatusCode::OK, &v))
}

/// The requirement host `h`'s installation disk is held to
/// ([`validate::disk_requirement`]): its cluster's for its role, a
/// worker's when it is bound to no cluster (or its cluster is gone).
pub(super) async fn disk_requirement(s: &Shared, h: &HostRow) -> Res<validate::Requirement> {
    let params = if h.cluster_id.is_empty() {
        None
    } else {
        s.db.cluster(&h.cluster_id)
            .await?
            .map(|c| model::cluster_params(&c))
    };
    Ok(validate::disk_requirement(
        params.as_ref(),
        crate::install::effective_role(h),
    ))
}

pub(super) async fn get_host(
    State(s): State<Shared>,
    Path((ie, id)): Path<(String, String)>,
) -> Res<Response> {
    Ok(json(
        StatusCode::OK,
        &model::host_doc(&host_or_404(&s, &ie, &id).await?),
    ))
}

pub(super) async fn update_host(
    State(s): State<Shared>,
    Path((ie, id)): Path<(String, String)>,
    b: Bytes,
) -> Res<Response> {
    let u: HostUpdateParams = body("host-update-params", &b)?;
    let h = host_or_404(&s, &ie, &id).await?;
    if !matches!(
        h.status.as_str(),
        "discovering"
            | "known"
            | "insufficient"
            | "pending-for-input"
            | "disconnected"
            | "discovering-unbound"
            | "known-unbound"
            | "insufficient-unbound"
    ) {
        return Err(Failure::conflict(format!(
            "host {id} cannot be updated in status {}",
            h.status
        )));
    }
    let mut name = h.requested_hostname.clone();
    let mut role = h.role.clone();
    let mut disk = (
        h.installation_disk_id.clone(),
        h.installation_disk_path.clone(),
    );
    if let Some(n) = u.host_name {
        if !validate::hostname_ok(&n) || validate::FORBIDDEN_HOSTNAMES.contains(&n.as_str()) {
            return Err(Failure::bad(format!(
                "host_name {n:?}: must match ^[a-z0-9][a-z0-9-]{{0,62}}(?:[.][a-z0-9-]{{1,63}})*$ and not be localhost"
            )));
        }
        name = n;
    }
    if let Some(r) = u.host_role {
        if !matches!(r.as_str(), "auto-assign" | "master" | "worker") {
            return Err(Failure::bad(format!(
                "host_role {r:?}: must be auto-assign, master or worker"
            )));
        }
        role = r;
    }
    if let Some(sel) = u.disks_selected_config {
        let inv: Option<Inventory> = serde_json::from_str(&h.inventory).ok();
        // The installation disk is one of the host's reported disks, by
        // its inventory id, eligible, and its id follows the disk path
        // rule (an inventory stored before the rule held is not trusted).
        const RULE: &str = "the installation disk is a disk of the host's inventory, by its id, eligible for installation";
        let req = disk_requirement(&s, &h).await?;
        // The disks given the role none in this request.
        let mut declined: Vec<String> = Vec::new();
        for (i, d) in sel.into_iter().enumerate() {
            if !matches!(d.role.as_str(), "install" | "none") {
                return Err(Failure::bad(format!(
                    "disks_selected_config[{i}].role {:?}: must be install or none",
                    d.role
                )));
            }
            if let Some(problem) = okd_assisted_api::disk_path_problem(&d.id) {
                return Err(Failure::bad(format!(
                    "disks_selected_config[{i}].id {:?} of host {id}: {problem} (the rule: {})",
                    d.id,
                    okd_assisted_api::DISK_PATH_RULE
                )));
            }
            let known = inv
                .as_ref()
                .and_then(|i| i.disks.iter().find(|x| x.id == d.id));
            let Some(disk_info) = known else {
                return Err(Failure::bad(format!(
                    "disks_selected_config[{i}].id {:?}: not a disk of host {id}'s inventory (the rule: {RULE})",
                    d.id
                )));
            };
            if d.role == "install" {
                let mut why = disk_info
                    .installation_eligibility
                    .not_eligible_reasons
                    .clone();
                if disk_info.installation_eligibility.eligible {
                    // The service's own reasons (too small, drive type),
                    // as assisted-service adds them to the agent's.
                    why = validate::service_disk_reasons(disk_info, req);
                }
                if !disk_info.installation_eligibility.eligible || !why.is_empty() {
                    return Err(Failure::bad(format!(
                        "disks_selected_config[{i}].id {:?}: not eligible for installation on host {id} ({}; the rule: {RULE})",
                        d.id,
                        why.join("; ")
                    )));
                }
                disk = model::installation_disk_columns(Some(disk_info));
                declined.retain(|x| *x != d.id);
            } else {
                declined.push(d.id);
            }
        }
        // A disk given the role none is not the installation disk: the
        // rule's next eligible disk is (assisted-service has no way to
        // decline a disk without naming another; it refuses that).
        if declined.contains(&disk.0)
            && let Some(inv) = &inv
        {
            let next = validate::eligible_disks(inv, req)
                .into_iter()
                .find(|x| !declined.iter().any(|n| x.is_named(n)));
            let Some(next) = next else {
                return Err(Failure::bad(format!(
                    "disks_selected_config: host {id} would have no installation disk ({:?} declined and no other disk eligible; the rule: {RULE})",
                    disk.0
                )));
            };
            disk = model::installation_disk_columns(Some(next));
        }
    }
    s.db.update_host_settings(&ie, &id, &name, &role, (&disk.0, &disk.1))
        .await?;
    events::emit(
        &s.db,
        events::Scope {
            cluster_id: &h.cluster_id,
            infra_env_id: &ie,
            host_id: &id,
        },
        "info",
        "host_updated",
        format!("Host {id}: updated (host name {name:?}, role {role})"),
    )
    .await;
    s.monitor.notify_one();
    Ok(json(
        StatusCode::CREATED,
        &model::host_doc(&host_or_404(&s, &ie, &id).await?),
    ))
}

pub(super) async fn delete_host(
    State(s): State<Shared>,
    Path((ie, id)): Path<(String, String)>,
) -> Res<Response> {
    if !s.db.delete_host(&ie, &id).await? {
        return Err(Failure::not_found(format!(
            "host {id} not found in infra-env {ie}"
        )));
    }
    s.peers.forget(&ie, &id);
    s.scans.forget(&ie, &id);
    s.cadence.forget(&ie, &id);
    s.monitor.notify_one();
    Ok(StatusCode::NO_CONTENT.into_response())
}
