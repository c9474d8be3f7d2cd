//! The installation: install (the plan, preparing, the hosts' moves), the
//! install step's reply, progress by stage, cancel and reset.

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use okd_assisted_api::Inventory;
use okd_assisted_api::rest::StepReply;
use okd_assisted_api::steps::DiskSpeedCheckResponse;

use super::clusters::{cluster_document, cluster_or_404};
use super::hosts::host_or_404;
use super::{Failure, Res, body, json};
use crate::db::HostRow;
use crate::model;
use crate::{Shared, events, install, network, validate};

pub(super) async fn install_cluster(
    State(s): State<Shared>,
    Path(id): Path<String>,
) -> Res<Response> {
    let c = cluster_or_404(&s, &id).await?;
    if c.status != "ready" {
        return Err(Failure::conflict(format!(
            "Cluster is not ready for installation: it is {} ({})",
            c.status, c.status_info
        )));
    }
    let p = model::cluster_params(&c);
    let hosts = s.db.hosts_of_cluster(&id).await?;
    if let Some(h) = hosts.iter().find(|h| h.status != "known") {
        return Err(Failure::conflict(format!(
            "Cluster is not ready for installation: host {} is {}",
            h.id, h.status
        )));
    }
    let invs: Vec<Inventory> = hosts
        .iter()
        .filter_map(|h| serde_json::from_str(&h.inventory).ok())
        .collect();
    let refs: Vec<&Inventory> = invs.iter().collect();
    let nets = validate::machine_networks(&p, &refs);
    let plan = install::plan(&c, &p, &hosts, &nets).map_err(Failure::conflict)?;
    if !events::cluster_status(
        &s.db,
        &id,
        "ready",
        "preparing-for-installation",
        "Preparing cluster for installation",
        &c.validations_info,
    )
    .await?
    {
        return Err(Failure::conflict(format!(
            "cluster {id} changed status while the installation was starting; try again"
        )));
    }
    s.db.set_install_started(&id).await?;
    for ph in &plan.hosts {
        s.db.set_host_role(&ph.infra_env_id, &ph.id, &ph.role, ph.bootstrap)
            .await?;
        host_move(
            &s,
            &id,
            ph,
            "known",
            "preparing-for-installation",
            "Host is preparing for installation",
        )
        .await?;
    }
    let (st, cid) = (s.clone(), id.clone());
    tokio::spawn(async move {
        if let Err(e) = prepare(&st, &cid, plan).await {
            tracing::warn!(cluster = %cid, error = %e.reason, "preparing the installation failed");
        }
    });
    let c = cluster_or_404(&s, &id).await?;
    Ok(json(StatusCode::ACCEPTED, &cluster_document(&s, &c).await?))
}

/// Moves a planned host from `from` to `to`, with an event when it took.
async fn host_move(
    s: &Shared,
    cluster_id: &str,
    ph: &install::PlannedHost,
    from: &str,
    to: &str,
    info: &str,
) -> Res<bool> {
    let Some(h) = s.db.host(&ph.infra_env_id, &ph.id).await? else {
        return Ok(false);
    };
    let took =
        s.db.set_host_status(&h, from, to, info, &h.validations_info, &h.suggested_role)
            .await?;
    if took {
        events::emit(
            &s.db,
            events::Scope {
                cluster_id,
                infra_env_id: &ph.infra_env_id,
                host_id: &ph.id,
            },
            "info",
            "host_status_updated",
            format!(
                "Host {}: updated status from {from} to {to} ({info})",
                ph.name
            ),
        )
        .await;
    }
    Ok(took)
}

/// Generates the install's files and moves the cluster and its hosts on
/// to installing (or back to ready / known with the reason).
async fn prepare(s: &Shared, id: &str, plan: install::Plan) -> Res<()> {
    let c = cluster_or_404(s, id).await?;
    let p = model::cluster_params(&c);
    let (image, version, domain, name) = (
        s.opts.release_image.clone(),
        p.openshift_version.clone(),
        p.base_dns_domain.clone(),
        c.name.clone(),
    );
    let plan2 = plan.clone();
    let generated = tokio::task::spawn_blocking(move || {
        install::generate(&plan2, &image, &version, &domain, &name)
    })
    .await
    .unwrap_or_else(|e| Err(format!("the generation task: {e}")));
    match generated {
        Ok(files) => {
            s.db.put_files(id, &files).await?;
            advance_preparation(s, id).await?;
        }
        Err(reason) => {
            fail_preparation(s, id, &plan, &reason).await?;
            return Err(Failure::conflict(format!(
                "Failed to prepare the installation: {reason}"
            )));
        }
    }
    Ok(())
}

/// Moves a preparing cluster on once its files are written and every
/// host's installation disk was measured (`installation-disk-speed-check`):
/// all fast enough → the hosts to preparing-successful, the cluster and
/// the hosts to installing; a disk slower than
/// [`network::DISK_SPEED_THRESHOLD_MS`] (or whose check failed: `failed`
/// names the host and the agent's error) → the cluster back to ready and
/// the hosts to known, with the reason; the monitor then marks the slow
/// host insufficient. Otherwise nothing yet.
pub(super) async fn advance_preparation(s: &Shared, id: &str) -> Res<()> {
    advance(s, id, None).await
}

/// [`advance_preparation`] after host `name`'s disk check failed with
/// `error`.
pub(super) async fn disk_check_failed(s: &Shared, id: &str, name: &str, error: &str) -> Res<()> {
    advance(
        s,
        id,
        Some(format!(
            "host {name}: the installation disk speed check failed: {error}"
        )),
    )
    .await
}

async fn advance(s: &Shared, id: &str, failed: Option<String>) -> Res<()> {
    let c = cluster_or_404(s, id).await?;
    if c.status != "preparing-for-installation" {
        return Ok(());
    }
    let p = model::cluster_params(&c);
    let hosts = s.db.hosts_of_cluster(id).await?;
    let nets = validate::machine_networks(&p, &[]);
    let plan = install::plan(&c, &p, &hosts, &nets).map_err(Failure::conflict)?;
    let mut problems: Vec<String> = failed.into_iter().collect();
    let mut waiting = false;
    for ph in &plan.hosts {
        let speed = hosts
            .iter()
            .find(|h| h.id == ph.id && h.infra_env_id == ph.infra_env_id)
            .and_then(|h| serde_json::from_str::<DiskSpeedCheckResponse>(&h.disk_speed).ok())
            .filter(|r| r.path == ph.disk);
        match speed {
            Some(r) if r.io_sync_duration > network::DISK_SPEED_THRESHOLD_MS => {
                problems.push(format!(
                    "host {}: installation disk {} fdatasync p99 {} ms (at most {} ms)",
                    ph.name,
                    r.path,
                    r.io_sync_duration,
                    network::DISK_SPEED_THRESHOLD_MS
                ));
            }
            Some(_) => {}
            None => waiting = true,
        }
    }
    if !problems.is_empty() {
        return fail_preparation(s, id, &plan, &problems.join("; ")).await;
    }
    let written = s.db.files_written_at(id).await?;
    if waiting || written.is_none_or(|t| t < c.install_started_at) {
        return Ok(());
    }
    for ph in &plan.hosts {
        host_move(
            s,
            id,
            ph,
            "preparing-for-installation",
            "preparing-successful",
            "Host finished successfully to prepare for installation",
        )
        .await?;
    }
    events::cluster_status(
        &s.db,
        id,
        "preparing-for-installation",
        "installing",
        "Installation in progress",
        &c.validations_info,
    )
    .await?;
    for ph in &plan.hosts {
        host_move(
            s,
            id,
            ph,
            "preparing-successful",
            "installing",
            "Installation is in progress",
        )
        .await?;
    }
    Ok(())
}

/// The preparation failed for `reason`: the cluster back to ready, its
/// preparing hosts back to known, an error event.
async fn fail_preparation(s: &Shared, id: &str, plan: &install::Plan, reason: &str) -> Res<()> {
    let info = format!("Failed to prepare the installation: {reason}");
    let c = cluster_or_404(s, id).await?;
    if !s
        .db
        .set_cluster_status(
            id,
            "preparing-for-installation",
            "ready",
            &info,
            &c.validations_info,
        )
        .await?
    {
        return Ok(());
    }
    events::cluster(
        &s.db,
        id,
        "error",
        "cluster_prepare_installation_failed",
        info.clone(),
    )
    .await;
    for ph in &plan.hosts {
        host_move(
            s,
            id,
            ph,
            "preparing-for-installation",
            "known",
            "Host is ready to be installed",
        )
        .await?;
    }
    s.monitor.notify_one();
    Ok(())
}

/// The install step's reply. Success: the host stays `installing`, its
/// progress info records what the agent did with the step (the per-host
/// installer reports the stages from "Starting installation" on); the
/// step is not handed out again. A failure moves the host to error
/// (HostInstallationFailed).
pub(super) async fn install_replied(s: &Shared, h: &HostRow, r: &StepReply) -> Res<()> {
    let scope = events::Scope {
        cluster_id: &h.cluster_id,
        infra_env_id: &h.infra_env_id,
        host_id: &h.id,
    };
    if r.exit_code == 0 {
        let info = format!("install step accepted by the agent: {}", r.output);
        if s.db
            .set_host_progress(
                h,
                "installing",
                "installing",
                &h.status_info,
                &h.progress_stage,
                &info,
            )
            .await?
        {
            events::emit(
                &s.db,
                scope,
                "info",
                "host_install_step_accepted",
                format!("Host {}: {info}", h.id),
            )
            .await;
        }
    } else {
        let info = format!("Failed to install host: {}", r.error);
        for from in ["installing", "installing-in-progress"] {
            if s.db
                .set_host_progress(h, from, "error", &info, "Failed", &r.error)
                .await?
            {
                events::emit(
                    &s.db,
                    scope,
                    "error",
                    "host_install_failed",
                    format!("Host {}: {info}", h.id),
                )
                .await;
                break;
            }
        }
    }
    Ok(())
}

/// Installation stages by role (the reference's §7.4, assisted-service
/// `internal/host/common.go`); a host may not go back to an earlier one.
pub fn stages(role: &str, bootstrap: bool, single: bool) -> &'static [&'static str] {
    if single {
        &[
            "Starting installation",
            "Installing",
            "Waiting for bootkube",
            "Writing image to disk",
            "Copying registry data to disk",
            "Rebooting",
            "Joined",
            "Done",
        ]
    } else if bootstrap {
        &[
            "Starting installation",
            "Installing",
            "Writing image to disk",
            "Copying registry data to disk",
            "Waiting for control plane",
            "Waiting for bootkube",
            "Waiting for controller",
            "Rebooting",
            "Configuring",
            "Joined",
            "Done",
        ]
    } else if role == "master" {
        &[
            "Starting installation",
            "Installing",
            "Writing image to disk",
            "Copying registry data to disk",
            "Rebooting",
            "Configuring",
            "Joined",
            "Done",
        ]
    } else {
        &[
            "Starting installation",
            "Installing",
            "Writing image to disk",
            "Waiting for control plane",
            "Rebooting",
            "Waiting for ignition",
            "Configuring",
            "Joined",
            "Done",
        ]
    }
}

pub(super) async fn host_progress(
    State(s): State<Shared>,
    Path((ie, id)): Path<(String, String)>,
    b: Bytes,
) -> Res<Response> {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Progress {
        current_stage: String,
        #[serde(default)]
        progress_info: String,
    }
    let pr: Progress = body("host-progress", &b)?;
    let h = host_or_404(&s, &ie, &id).await?;
    // A host pending user action that reports again has booted after all.
    if !matches!(
        h.status.as_str(),
        "installing" | "installing-in-progress" | "installing-pending-user-action"
    ) {
        return Err(Failure::conflict(format!(
            "host {id} is {}, not installing: no progress to report",
            h.status
        )));
    }
    let c = cluster_or_404(&s, &h.cluster_id).await?;
    let single = model::cluster_params(&c).control_plane_count == 1;
    let list = stages(&h.role, h.bootstrap, single);
    let scope = events::Scope {
        cluster_id: &h.cluster_id,
        infra_env_id: &ie,
        host_id: &id,
    };
    if pr.current_stage == "Failed" {
        let info = format!("Failed to install host: {}", pr.progress_info);
        s.db.set_host_progress(&h, &h.status, "error", &info, "Failed", &pr.progress_info)
            .await?;
        events::emit(
            &s.db,
            scope,
            "error",
            "host_install_failed",
            format!("Host {id}: {info}"),
        )
        .await;
        return Ok(StatusCode::OK.into_response());
    }
    let Some(new) = list.iter().position(|x| *x == pr.current_stage) else {
        return Err(Failure::bad(format!(
            "current_stage {:?}: not a stage of a {} host ({})",
            pr.current_stage,
            if h.bootstrap {
                "bootstrap"
            } else {
                h.role.as_str()
            },
            list.join(", ")
        )));
    };
    let old = list.iter().position(|x| *x == h.progress_stage);
    if old.is_some_and(|o| new < o) {
        return Err(Failure::conflict(format!(
            "host {id} is at stage {:?}; it cannot go back to {:?}",
            h.progress_stage, pr.current_stage
        )));
    }
    let (to, info) = if pr.current_stage == "Done" {
        ("installed", "Done".to_string())
    } else {
        ("installing-in-progress", pr.current_stage.clone())
    };
    if s.db
        .set_host_progress(
            &h,
            &h.status,
            to,
            &info,
            &pr.current_stage,
            &pr.progress_info,
        )
        .await?
    {
        events::emit(
            &s.db,
            scope,
            "info",
            "host_install_progress_updated",
            format!("Host {id}: reached installation stage {}", pr.current_stage),
        )
        .await;
    }
    Ok(StatusCode::OK.into_response())
}

// ---- cancel and reset (the reference's §2.6 and §3.2)

/// Cluster statuses `cancel` applies to, and where each goes.
fn cancel_to(status: &str) -> Option<&'static str> {
    match status {
        "installing" | "installing-pending-user-action" | "error" | "finalizing" => {
            Some("cancelled")
        }
        "preparing-for-installation" => Some("ready"),
        _ => None,
    }
}

/// Cluster statuses `reset` applies to.
const RESETTABLE: &[&str] = &[
    "preparing-for-installation",
    "installing",
    "installing-pending-user-action",
    "error",
    "cancelled",
    "finalizing",
];

pub(super) async fn cancel_cluster(
    State(s): State<Shared>,
    Path(id): Path<String>,
) -> Res<Response> {
    let c = cluster_or_404(&s, &id).await?;
    let Some(to) = cancel_to(&c.status) else {
        return Err(Failure::conflict(format!(
            "cluster {id} is {}: only an installing, preparing, pending or failed installation can be cancelled",
            c.status
        )));
    };
    let info = if to == "ready" {
        "Cluster ready to be installed"
    } else {
        "Canceled cluster installation"
    };
    if !events::cluster_status(&s.db, &id, &c.status, to, info, &c.validations_info).await? {
        return Err(Failure::conflict(format!(
            "cluster {id} changed status meanwhile; try again"
        )));
    }
    for h in s.db.hosts_of_cluster(&id).await? {
        let (hto, hinfo) = match h.status.as_str() {
            "installing"
            | "installing-in-progress"
            | "installing-pending-user-action"
            | "installed"
            | "error" => ("cancelled", "Installation was cancelled"),
            "preparing-for-installation" | "preparing-successful" => {
                ("known", "Host is ready to be installed")
            }
            _ => continue,
        };
        if s.db
            .set_host_status(
                &h,
                &h.status,
                hto,
                hinfo,
                &h.validations_info,
                &h.suggested_role,
            )
            .await?
        {
            events::emit(
                &s.db,
                events::Scope {
                    cluster_id: &id,
                    infra_env_id: &h.infra_env_id,
                    host_id: &h.id,
                },
                "info",
                "host_status_updated",
                format!(
                    "Host {}: updated status from {} to {hto} ({hinfo})",
                    h.id, h.status
                ),
            )
            .await;
        }
    }
    let c = cluster_or_404(&s, &id).await?;
    Ok(json(StatusCode::ACCEPTED, &cluster_document(&s, &c).await?))
}

pub(super) async fn reset_cluster(
    State(s): State<Shared>,
    Path(id): Path<String>,
) -> Res<Response> {
    let c = cluster_or_404(&s, &id).await?;
    if !RESETTABLE.contains(&c.status.as_str()) {
        return Err(Failure::conflict(format!(
            "cluster {id} is {}: only a cluster past the start of its installation can be reset",
            c.status
        )));
    }
    let info = "Cluster is not ready for install";
    if !s
        .db
        .set_cluster_status(&id, &c.status, "insufficient", info, &c.validations_info)
        .await?
    {
        return Err(Failure::conflict(format!(
            "cluster {id} changed status meanwhile; try again"
        )));
    }
    events::cluster(
        &s.db,
        &id,
        "info",
        "cluster_status_updated",
        "Updated status of the cluster to insufficient (the installation was reset)".into(),
    )
    .await;
    s.db.put_files(&id, &[]).await?;
    for h in s.db.hosts_of_cluster(&id).await? {
        s.db.set_host_role(&h.infra_env_id, &h.id, &h.role, false)
            .await?;
        let hinfo = "The installation was reset: the host's agent registers again (reboot it into the discovery image if it left it)";
        if s.db.reset_host(&h, hinfo).await? {
            events::emit(
                &s.db,
                events::Scope {
                    cluster_id: &id,
                    infra_env_id: &h.infra_env_id,
                    host_id: &h.id,
                },
                "info",
                "host_status_updated",
                format!(
                    "Host {}: updated status from {} to resetting-pending-user-action",
                    h.id, h.status
                ),
            )
            .await;
        }
    }
    s.monitor.notify_one();
    let c = cluster_or_404(&s, &id).await?;
    Ok(json(StatusCode::ACCEPTED, &cluster_document(&s, &c).await?))
}

/// `POST /v2/clusters/{id}/actions/complete-installation` (swagger
/// `V2CompleteInstallation`, body `completion_params`): the cluster's end,
/// reported once the cluster operators are available. A finalizing
/// cluster goes to `installed`, or to `error` with `error_info`; 409 in
/// any other status.
pub(super) async fn complete_installation(
    State(s): State<Shared>,
    Path(id): Path<String>,
    b: Bytes,
) -> Res<Response> {
    let done: okd_assisted_api::rest::CompletionParams = body("completion-params", &b)?;
    let c = cluster_or_404(&s, &id).await?;
    if c.status != "finalizing" {
        return Err(Failure::conflict(format!(
            "cluster {id} is {}: only a finalizing cluster can complete its installation",
            c.status
        )));
    }
    let (to, info) = if done.is_success {
        ("installed", "Cluster is installed".to_string())
    } else {
        (
            "error",
            format!("Cluster installation failed: {}", done.error_info),
        )
    };
    if !events::cluster_status(&s.db, &id, &c.status, to, &info, &c.validations_info).await? {
        return Err(Failure::conflict(format!(
            "cluster {id} changed status meanwhile; try again"
        )));
    }
    s.monitor.notify_one();
    let c = cluster_or_404(&s, &id).await?;
    Ok(json(StatusCode::ACCEPTED, &cluster_document(&s, &c).await?))
}
