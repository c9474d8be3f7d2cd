//! The REST API v2 (`/api/assisted-install/v2`, assisted-service
//! `swagger.yaml`): clusters, infra-envs, hosts, the next-step protocol
//! and events, over [`crate::db::Db`].
//!
//! Errors use the swagger's `error` body; a body that does not parse is
//! a 400 naming serde's reason (the unknown field, the wrong type and
//! where); an unreachable database is a 503 naming it.

use std::collections::HashMap;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use okd_assisted_api::Inventory;
use okd_assisted_api::rest::{
    self, ApiError, Cidr, ClusterCreateParams, ClusterUpdateParams, HostCreateParams,
    HostRegistrationResponse, HostUpdateParams, InfraEnvCreateParams, NextStepRunnerCommand, Step,
    StepReply, Steps,
};
use serde::de::DeserializeOwned;

use crate::db::{ClusterRow, DbError, EventFilter, HostRow, InfraEnvRow, ReplyColumn, now_ms};
use crate::model::{self, ClusterParams, InfraEnvParams, Outstanding};
use crate::{Shared, events, install, validate};

/// The largest request body accepted, bytes (an inventory of a host with
/// hundreds of disks fits).
pub const MAX_BODY: usize = 2 * 1024 * 1024;

/// Steps younger than this stay answerable, ms (10 min).
pub const STEP_TTL_MS: i64 = 10 * 60 * 1000;

/// At most this many unanswered steps are kept per host (the oldest go).
pub const MAX_OUTSTANDING: usize = 32;

/// A failed request: the status and the reason in words.
#[derive(Debug)]
pub struct Failure {
    status: StatusCode,
    reason: String,
}

impl Failure {
    fn new(status: StatusCode, reason: impl Into<String>) -> Failure {
        Failure {
            status,
            reason: reason.into(),
        }
    }
    fn bad(reason: impl Into<String>) -> Failure {
        Failure::new(StatusCode::BAD_REQUEST, reason)
    }
    fn not_found(reason: impl Into<String>) -> Failure {
        Failure::new(StatusCode::NOT_FOUND, reason)
    }
    fn conflict(reason: impl Into<String>) -> Failure {
        Failure::new(StatusCode::CONFLICT, reason)
    }
}

impl From<DbError> for Failure {
    fn from(e: DbError) -> Failure {
        if e.unavailable() {
            tracing::warn!(error = %e, "database unavailable");
            Failure::new(
                StatusCode::SERVICE_UNAVAILABLE,
                format!("the service's database is unavailable, try again later ({e})"),
            )
        } else {
            tracing::error!(error = %e, "database error");
            Failure::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string())
        }
    }
}

impl IntoResponse for Failure {
    fn into_response(self) -> Response {
        let body = ApiError {
            kind: "Error".into(),
            id: self.status.as_u16(),
            code: self.status.as_u16().to_string(),
            href: String::new(),
            reason: self.reason,
        };
        (self.status, axum::Json(body)).into_response()
    }
}

type Res<T> = Result<T, Failure>;

/// Parses a JSON body, naming serde's reason in the 400.
fn body<T: DeserializeOwned>(what: &str, bytes: &Bytes) -> Res<T> {
    serde_json::from_slice(bytes).map_err(|e| Failure::bad(format!("{what}: {e}")))
}

fn json<T: serde::Serialize>(status: StatusCode, v: &T) -> Response {
    (status, axum::Json(v)).into_response()
}

/// The routes under [`rest::BASE_PATH`].
pub fn routes(state: Shared) -> Router {
    let user = Router::new()
        .route("/clusters", get(list_clusters).post(register_cluster))
        .route(
            "/clusters/{cluster_id}",
            get(get_cluster)
                .patch(update_cluster)
                .delete(delete_cluster),
        )
        .route(
            "/clusters/{cluster_id}/actions/install",
            post(install_cluster),
        )
        .route(
            "/clusters/{cluster_id}/actions/cancel",
            post(cancel_cluster),
        )
        .route("/clusters/{cluster_id}/actions/reset", post(reset_cluster))
        .route("/clusters/{cluster_id}/downloads/files", get(download_file))
        .route(
            "/clusters/{cluster_id}/downloads/credentials",
            get(download_credentials),
        )
        .route("/infra-envs", get(list_infra_envs).post(register_infra_env))
        .route(
            "/infra-envs/{infra_env_id}",
            get(get_infra_env).delete(delete_infra_env),
        )
        .route(
            "/infra-envs/{infra_env_id}/downloads/files",
            get(infra_env_file),
        )
        .route(
            "/infra-envs/{infra_env_id}/regenerate-signing-key",
            post(regenerate_signing_key),
        )
        .route("/infra-envs/{infra_env_id}/hosts", get(list_hosts))
        .route(
            "/infra-envs/{infra_env_id}/hosts/{host_id}",
            get(get_host).patch(update_host).delete(delete_host),
        )
        .route("/events", get(list_events))
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            crate::auth::user,
        ));
    let agent = Router::new()
        .route("/infra-envs/{infra_env_id}/hosts", post(register_host))
        .route(
            "/infra-envs/{infra_env_id}/hosts/{host_id}/instructions",
            get(next_steps).post(step_reply),
        )
        .route(
            "/infra-envs/{infra_env_id}/hosts/{host_id}/progress",
            axum::routing::put(host_progress),
        )
        .route(
            "/infra-env/{infra_env_id}/hosts/{host_id}/downloads/ignition",
            get(host_ignition),
        )
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            crate::auth::agent,
        ));
    let public = Router::new().route(
        "/openapi.json",
        get(|| async { axum::Json(crate::openapi::document()) }),
    );
    let v2 = user
        .merge(agent)
        .merge(public)
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .with_state(state);
    Router::new().nest(rest::BASE_PATH, v2)
}

// ---- checks of user input

fn check_name(field: &str, name: &str) -> Res<()> {
    if name.is_empty() || name.len() > 54 || !validate::hostname_ok(name) || name.contains('.') {
        return Err(Failure::bad(format!(
            "{field} {name:?}: must be a DNS label of lower-case letters, digits and '-', at most 54 characters"
        )));
    }
    Ok(())
}

fn check_pull_secret(field: &str, ps: &str) -> Res<()> {
    let ok = serde_json::from_str::<serde_json::Value>(ps)
        .ok()
        .is_some_and(|v| v.get("auths").is_some_and(|a| a.is_object()));
    if !ok {
        return Err(Failure::bad(format!(
            "{field}: must be a JSON document with an \"auths\" object (the pull secret from console.redhat.com, or {{\"auths\":{{\"fake\":{{\"auth\":\"aWQ6cGFzcwo=\"}}}}}} for OKD)"
        )));
    }
    Ok(())
}

fn check_params(p: &ClusterParams) -> Res<()> {
    if ![1, 3, 4, 5].contains(&p.control_plane_count) {
        return Err(Failure::bad(format!(
            "control_plane_count {}: must be 1 (single node), 3, 4 or 5",
            p.control_plane_count
        )));
    }
    for (field, list) in [
        (
            "cluster_networks",
            p.cluster_networks
                .iter()
                .map(|n| n.cidr.clone())
                .collect::<Vec<_>>(),
        ),
        (
            "service_networks",
            p.service_networks.iter().map(|n| n.cidr.clone()).collect(),
        ),
        (
            "machine_networks",
            p.machine_networks.iter().map(|n| n.cidr.clone()).collect(),
        ),
    ] {
        for (i, c) in list.iter().enumerate() {
            if c.parse::<ipnet::IpNet>().is_err() {
                return Err(Failure::bad(format!(
                    "{field}[{i}].cidr {c:?}: not a CIDR (address/prefix)"
                )));
            }
        }
    }
    for (i, n) in p.cluster_networks.iter().enumerate() {
        let prefix = n
            .cidr
            .parse::<ipnet::IpNet>()
            .map(|n| n.prefix_len())
            .unwrap_or(0);
        if n.host_prefix <= prefix || n.host_prefix > 30 {
            return Err(Failure::bad(format!(
                "cluster_networks[{i}].host_prefix {}: must be longer than the network's /{prefix} and at most 30",
                n.host_prefix
            )));
        }
    }
    for (field, vips) in [("api_vips", &p.api_vips), ("ingress_vips", &p.ingress_vips)] {
        for (i, v) in vips.iter().enumerate() {
            if v.ip.parse::<std::net::IpAddr>().is_err() {
                return Err(Failure::bad(format!(
                    "{field}[{i}].ip {:?}: not an IP address",
                    v.ip
                )));
            }
        }
        if vips.len() > 2 {
            return Err(Failure::bad(format!(
                "{field}: at most one address per IP family"
            )));
        }
    }
    if let (Some(a), Some(i)) = (p.api_vips.first(), p.ingress_vips.first())
        && a.ip == i.ip
    {
        return Err(Failure::bad(format!(
            "api_vips and ingress_vips: the same address {} (they must differ)",
            a.ip
        )));
    }
    if !matches!(p.network_type.as_str(), "OVNKubernetes" | "OpenShiftSDN") {
        return Err(Failure::bad(format!(
            "network_type {:?}: must be OVNKubernetes or OpenShiftSDN",
            p.network_type
        )));
    }
    if p.cpu_architecture != "x86_64" {
        return Err(Failure::bad(format!(
            "cpu_architecture {:?}: only x86_64 is supported",
            p.cpu_architecture
        )));
    }
    if !p.base_dns_domain.is_empty()
        && !p
            .base_dns_domain
            .split('.')
            .all(|l| !l.is_empty() && validate::hostname_ok(l))
    {
        return Err(Failure::bad(format!(
            "base_dns_domain {:?}: not a DNS domain",
            p.base_dns_domain
        )));
    }
    Ok(())
}

// ---- clusters

async fn cluster_or_404(s: &Shared, id: &str) -> Res<ClusterRow> {
    s.db.cluster(id)
        .await?
        .ok_or_else(|| Failure::not_found(format!("cluster {id} not found")))
}

/// The cluster document as served: hosts and machine networks included.
pub async fn cluster_document(s: &Shared, c: &ClusterRow) -> Res<rest::Cluster> {
    let hosts = s.db.hosts_of_cluster(&c.id).await?;
    let invs: Vec<Inventory> = hosts
        .iter()
        .filter_map(|h| serde_json::from_str(&h.inventory).ok())
        .collect();
    let refs: Vec<&Inventory> = invs.iter().collect();
    let nets = validate::machine_networks(&model::cluster_params(c), &refs);
    Ok(model::cluster_doc(c, &hosts, nets))
}

async fn register_cluster(State(s): State<Shared>, b: Bytes) -> Res<Response> {
    let p: ClusterCreateParams = body("cluster-create-params", &b)?;
    check_name("name", &p.name)?;
    if p.openshift_version.is_empty() {
        return Err(Failure::bad("openshift_version: required (e.g. \"4.19\")"));
    }
    check_pull_secret("pull_secret", &p.pull_secret)?;
    let mut params = model::defaults(&p.openshift_version, None);
    params.base_dns_domain = p.base_dns_domain.unwrap_or_default();
    if let Some(n) = p.control_plane_count {
        params.control_plane_count = n;
    }
    if let Some(v) = p.cluster_networks {
        params.cluster_networks = v;
    }
    if let Some(v) = p.service_networks {
        params.service_networks = v;
    }
    params.machine_networks = p.machine_networks.unwrap_or_default();
    params.api_vips = p.api_vips.unwrap_or_default();
    params.ingress_vips = p.ingress_vips.unwrap_or_default();
    if let Some(v) = p.network_type {
        params.network_type = v;
    }
    params.ssh_public_key = p.ssh_public_key.unwrap_or_default();
    params.additional_ntp_source = p.additional_ntp_source.unwrap_or_default();
    if let Some(v) = p.cpu_architecture {
        params.cpu_architecture = v;
    }
    check_params(&params)?;
    let now = now_ms();
    let row = ClusterRow {
        id: uuid::Uuid::new_v4().to_string(),
        name: p.name.clone(),
        status: "insufficient".into(),
        status_info: "Cluster is not ready for install".into(),
        status_updated_at: now,
        params: serde_json::to_string(&params).unwrap_or_default(),
        pull_secret: p.pull_secret,
        validations_info: String::new(),
        install_started_at: 0,
        created_at: now,
        updated_at: now,
    };
    s.db.insert_cluster(&row).await?;
    events::cluster(
        &s.db,
        &row.id,
        "info",
        "cluster_registration_succeeded",
        format!("Successfully registered cluster {}", row.name),
    )
    .await;
    s.monitor.notify_one();
    Ok(json(
        StatusCode::CREATED,
        &cluster_document(&s, &row).await?,
    ))
}

async fn list_clusters(State(s): State<Shared>) -> Res<Response> {
    let mut out = Vec::new();
    for c in s.db.clusters().await? {
        out.push(cluster_document(&s, &c).await?);
    }
    Ok(json(StatusCode::OK, &out))
}

async fn get_cluster(State(s): State<Shared>, Path(id): Path<String>) -> Res<Response> {
    let c = cluster_or_404(&s, &id).await?;
    Ok(json(StatusCode::OK, &cluster_document(&s, &c).await?))
}

/// Statuses in which a cluster's settings may change
/// (`VerifyClusterUpdatability`).
pub const UPDATABLE: &[&str] = &["insufficient", "ready", "pending-for-input", "adding-hosts"];

async fn update_cluster(
    State(s): State<Shared>,
    Path(id): Path<String>,
    b: Bytes,
) -> Res<Response> {
    let u: ClusterUpdateParams = body("v2-cluster-update-params", &b)?;
    let c = cluster_or_404(&s, &id).await?;
    let mut p = model::cluster_params(&c);
    let mut name = c.name.clone();
    let mut ps = c.pull_secret.clone();
    if let Some(v) = u.name {
        check_name("name", &v)?;
        name = v;
    }
    if let Some(v) = u.pull_secret {
        check_pull_secret("pull_secret", &v)?;
        ps = v;
    }
    macro_rules! set {
        ($f:ident) => {
            if let Some(v) = u.$f {
                p.$f = v;
            }
        };
    }
    set!(base_dns_domain);
    set!(cluster_networks);
    set!(service_networks);
    set!(machine_networks);
    set!(api_vips);
    set!(ingress_vips);
    set!(network_type);
    set!(ssh_public_key);
    set!(additional_ntp_source);
    check_params(&p)?;
    let params = serde_json::to_string(&p).unwrap_or_default();
    if !s
        .db
        .update_cluster_params(&id, &name, &params, &ps, UPDATABLE)
        .await?
    {
        return Err(Failure::conflict(format!(
            "cluster {id} cannot be updated in status {} (only in {})",
            c.status,
            UPDATABLE.join(", ")
        )));
    }
    events::cluster(
        &s.db,
        &id,
        "info",
        "cluster_updated",
        "Cluster was updated".to_string(),
    )
    .await;
    s.monitor.notify_one();
    let c = cluster_or_404(&s, &id).await?;
    Ok(json(StatusCode::CREATED, &cluster_document(&s, &c).await?))
}

async fn delete_cluster(State(s): State<Shared>, Path(id): Path<String>) -> Res<Response> {
    if !s.db.delete_cluster(&id).await? {
        return Err(Failure::not_found(format!("cluster {id} not found")));
    }
    Ok(StatusCode::NO_CONTENT.into_response())
}

// ---- infra-envs

async fn infra_env_or_404(s: &Shared, id: &str) -> Res<InfraEnvRow> {
    s.db.infra_env(id)
        .await?
        .ok_or_else(|| Failure::not_found(format!("infra-env {id} not found")))
}

async fn register_infra_env(State(s): State<Shared>, b: Bytes) -> Res<Response> {
    let p: InfraEnvCreateParams = body("infra-env-create-params", &b)?;
    if p.name.is_empty() {
        return Err(Failure::bad("name: required"));
    }
    check_pull_secret("pull_secret", &p.pull_secret)?;
    let cluster_id = p.cluster_id.unwrap_or_default();
    if !cluster_id.is_empty() {
        cluster_or_404(&s, &cluster_id)
            .await
            .map_err(|_| Failure::bad(format!("cluster_id {cluster_id}: no such cluster")))?;
    }
    let image_type = p.image_type.unwrap_or_else(|| "full-iso".into());
    if !matches!(image_type.as_str(), "full-iso" | "minimal-iso") {
        return Err(Failure::bad(format!(
            "image_type {image_type:?}: must be full-iso or minimal-iso"
        )));
    }
    let arch = p.cpu_architecture.unwrap_or_else(|| "x86_64".into());
    if arch != "x86_64" {
        return Err(Failure::bad(format!(
            "cpu_architecture {arch:?}: only x86_64 is supported"
        )));
    }
    let params = InfraEnvParams {
        openshift_version: p.openshift_version.unwrap_or_default(),
        cpu_architecture: arch,
        image_type,
        ssh_authorized_key: p.ssh_authorized_key.unwrap_or_default(),
        additional_ntp_sources: p.additional_ntp_sources.unwrap_or_default(),
    };
    let now = now_ms();
    let row = InfraEnvRow {
        id: uuid::Uuid::new_v4().to_string(),
        name: p.name,
        cluster_id,
        params: serde_json::to_string(&params).unwrap_or_default(),
        pull_secret: p.pull_secret,
        created_at: now,
        updated_at: now,
        signing_generation: 0,
    };
    s.db.insert_infra_env(&row).await?;
    events::emit(
        &s.db,
        events::Scope {
            cluster_id: &row.cluster_id,
            infra_env_id: &row.id,
            host_id: "",
        },
        "info",
        "infra_env_registration_succeeded",
        format!("Registered infra env {}", row.name),
    )
    .await;
    Ok(json(StatusCode::CREATED, &model::infra_env_doc(&row)))
}

async fn list_infra_envs(State(s): State<Shared>) -> Res<Response> {
    let v: Vec<_> =
        s.db.infra_envs()
            .await?
            .iter()
            .map(model::infra_env_doc)
            .collect();
    Ok(json(StatusCode::OK, &v))
}

async fn get_infra_env(State(s): State<Shared>, Path(id): Path<String>) -> Res<Response> {
    Ok(json(
        StatusCode::OK,
        &model::infra_env_doc(&infra_env_or_404(&s, &id).await?),
    ))
}

async fn delete_infra_env(State(s): State<Shared>, Path(id): Path<String>) -> Res<Response> {
    if !s.db.delete_infra_env(&id).await? {
        return Err(Failure::not_found(format!("infra-env {id} not found")));
    }
    Ok(StatusCode::NO_CONTENT.into_response())
}

// ---- hosts

async fn host_or_404(s: &Shared, ie: &str, id: &str) -> Res<HostRow> {
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

async fn register_host(State(s): State<Shared>, Path(ie): Path<String>, b: Bytes) -> Res<Response> {
    let p: HostCreateParams = body("host-create-params", &b)?;
    if uuid::Uuid::parse_str(&p.host_id).is_err() {
        return Err(Failure::bad(format!("host_id {:?}: not a UUID", p.host_id)));
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
    if s.db.insert_host(&row).await? {
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
    let resp = HostRegistrationResponse {
        host: model::host_doc(&h),
        next_step_runner_command: NextStepRunnerCommand {
            command: String::new(),
            args: vec![args],
            retry_seconds: None,
        },
    };
    Ok(json(StatusCode::CREATED, &resp))
}

async fn list_hosts(State(s): State<Shared>, Path(ie): Path<String>) -> Res<Response> {
    infra_env_or_404(&s, &ie).await?;
    let v: Vec<_> =
        s.db.hosts_of_infra_env(&ie)
            .await?
            .iter()
            .map(model::host_doc)
            .collect();
    Ok(json(StatusCode::OK, &v))
}

async fn get_host(
    State(s): State<Shared>,
    Path((ie, id)): Path<(String, String)>,
) -> Res<Response> {
    Ok(json(
        StatusCode::OK,
        &model::host_doc(&host_or_404(&s, &ie, &id).await?),
    ))
}

async fn update_host(
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
    let mut disk = h.installation_disk_id.clone();
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
        for d in sel {
            if !matches!(d.role.as_str(), "install" | "none") {
                return Err(Failure::bad(format!(
                    "disks_selected_config role {:?}: must be install or none",
                    d.role
                )));
            }
            let known = inv
                .as_ref()
                .and_then(|i| i.disks.iter().find(|x| x.id == d.id));
            let Some(disk_info) = known else {
                return Err(Failure::bad(format!(
                    "disks_selected_config id {:?}: not a disk of this host's inventory",
                    d.id
                )));
            };
            if d.role == "install" {
                if !disk_info.installation_eligibility.eligible {
                    return Err(Failure::bad(format!(
                        "disks_selected_config id {:?}: not eligible for installation ({})",
                        d.id,
                        disk_info
                            .installation_eligibility
                            .not_eligible_reasons
                            .join("; ")
                    )));
                }
                disk = d.id;
            } else if disk == d.id {
                disk.clear();
            }
        }
    }
    s.db.update_host_settings(&ie, &id, &name, &role, &disk)
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

async fn delete_host(
    State(s): State<Shared>,
    Path((ie, id)): Path<(String, String)>,
) -> Res<Response> {
    if !s.db.delete_host(&ie, &id).await? {
        return Err(Failure::not_found(format!(
            "host {id} not found in infra-env {ie}"
        )));
    }
    s.monitor.notify_one();
    Ok(StatusCode::NO_CONTENT.into_response())
}

// ---- the next-step protocol

/// The steps a host in `status` gets, and the poll interval, s (the
/// reference's §6.3 for the step types this agent runs).
pub fn steps_for(status: &str, interval: u64) -> (Vec<&'static str>, u64) {
    match status {
        "discovering" | "discovering-unbound" => (vec!["inventory"], interval),
        "insufficient"
        | "pending-for-input"
        | "known"
        | "insufficient-unbound"
        | "known-unbound" => (vec!["inventory", "ntp-synchronizer"], interval),
        "disconnected" | "disconnected-unbound" => (vec!["inventory"], interval * 2),
        "installing" => (vec!["install"], interval),
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
        "install" => vec![extra.to_string()],
        _ => vec![],
    }
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

async fn next_steps(
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
        let mut h = host_or_404(&s, &ie, &id).await?;
        let old = h.steps.clone();
        let now = now_ms();
        let (types, interval) = steps_for(&h.status, s.opts.next_instruction_seconds);
        let mut outstanding: Vec<Outstanding> = serde_json::from_str(&old).unwrap_or_default();
        outstanding.retain(|o| now - o.issued_at < STEP_TTL_MS);
        let mut instructions: Vec<Step> = Vec::new();
        for t in types {
            let extra = match t {
                "ntp-synchronizer" if !h.cluster_id.is_empty() => {
                    s.db.cluster(&h.cluster_id)
                        .await?
                        .map(|c| model::cluster_params(&c).additional_ntp_source)
                        .unwrap_or_default()
                }
                // One install step: not again while one is out, nor once
                // the agent accepted it (its words are the progress info).
                "install"
                    if outstanding.iter().any(|o| o.step_type == "install")
                        || !h.progress_info.is_empty() =>
                {
                    continue;
                }
                "install" => install_arg(&s, &h).await?,
                _ => String::new(),
            };
            instructions.push(Step {
                step_type: t.to_string(),
                step_id: step_id(t),
                args: step_args(t, &h, &extra),
            });
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

async fn step_reply(
    State(s): State<Shared>,
    Path((ie, id)): Path<(String, String)>,
    b: Bytes,
) -> Res<Response> {
    let r: StepReply = body("step-reply", &b)?;
    let mut parsed_inventory: Option<String> = None;
    if r.exit_code == 0 && r.step_type == "inventory" {
        let inv: Inventory = serde_json::from_str(&r.output).map_err(|e| {
            Failure::bad(format!(
                "step-reply {}: output: not an inventory: {e}",
                r.step_id
            ))
        })?;
        parsed_inventory = Some(serde_json::to_string(&inv).unwrap_or_default());
    }
    let column = match r.step_type.as_str() {
        "inventory" => Some(ReplyColumn::Inventory),
        "ntp-synchronizer" => Some(ReplyColumn::NtpSources),
        "connectivity-check" => Some(ReplyColumn::Connectivity),
        "domain-resolution" => Some(ReplyColumn::DomainResolutions),
        "free-network-addresses" => Some(ReplyColumn::FreeAddresses),
        _ => None,
    };
    if column.is_some_and(|c| c != ReplyColumn::Inventory)
        && r.exit_code == 0
        && !r.output.is_empty()
    {
        serde_json::from_str::<serde_json::Value>(&r.output).map_err(|e| {
            Failure::bad(format!("step-reply {}: output: not JSON: {e}", r.step_id))
        })?;
    }
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
        let output = parsed_inventory.as_deref().unwrap_or(&r.output);
        let current = match column {
            Some(ReplyColumn::Inventory) => &h.inventory,
            Some(ReplyColumn::NtpSources) => &h.ntp_sources,
            Some(ReplyColumn::Connectivity) => &h.connectivity,
            Some(ReplyColumn::DomainResolutions) => &h.domain_name_resolutions,
            Some(ReplyColumn::FreeAddresses) => &h.free_addresses,
            None => &h.steps,
        };
        let set = match column {
            Some(c) if r.exit_code == 0 && current != output => Some((c, output)),
            _ => None,
        };
        if s.db.host_replied(&ie, &id, &h.steps, &new, set).await? {
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
            if set.is_some() && column == Some(ReplyColumn::Inventory) {
                s.monitor.notify_one();
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

// ---- events

async fn list_events(
    State(s): State<Shared>,
    Query(q): Query<HashMap<String, String>>,
) -> Res<Response> {
    let num = |k: &str| -> Res<Option<i64>> {
        q.get(k)
            .map(|v| {
                v.parse::<i64>()
                    .map_err(|_| Failure::bad(format!("{k} {v:?}: not a number")))
            })
            .transpose()
    };
    let f = EventFilter {
        cluster_id: q.get("cluster_id").cloned(),
        host_id: q.get("host_id").cloned(),
        infra_env_id: q.get("infra_env_id").cloned(),
        limit: num("limit")?,
        offset: num("offset")?,
    };
    let v: Vec<_> =
        s.db.events(&f)
            .await?
            .iter()
            .map(model::event_doc)
            .collect();
    Ok(json(StatusCode::OK, &v))
}

/// The machine networks of a cluster in force (for the monitor and the
/// documents).
pub fn networks_of(c: &ClusterRow, invs: &[&Inventory]) -> Vec<Cidr> {
    validate::machine_networks(&model::cluster_params(c), invs)
}

// ---- install

async fn install_cluster(State(s): State<Shared>, Path(id): Path<String>) -> Res<Response> {
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
    if !s
        .db
        .set_cluster_status(
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
    events::cluster(
        &s.db,
        &id,
        "info",
        "cluster_status_updated",
        "Updated status of the cluster to preparing-for-installation (Preparing cluster for installation)".into(),
    )
    .await;
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
            let c = cluster_or_404(s, id).await?;
            if s.db
                .set_cluster_status(
                    id,
                    "preparing-for-installation",
                    "installing",
                    "Installation in progress",
                    &c.validations_info,
                )
                .await?
            {
                events::cluster(
                    &s.db,
                    id,
                    "info",
                    "cluster_status_updated",
                    "Updated status of the cluster to installing (Installation in progress)".into(),
                )
                .await;
            }
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
        }
        Err(reason) => {
            let info = format!("Failed to prepare the installation: {reason}");
            let c = cluster_or_404(s, id).await?;
            s.db.set_cluster_status(
                id,
                "preparing-for-installation",
                "ready",
                &info,
                &c.validations_info,
            )
            .await?;
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
            return Err(Failure::conflict(info));
        }
    }
    Ok(())
}

/// The install step's reply. Success: the host stays `installing`, its
/// progress info records what the agent did with the step (the per-host
/// installer reports the stages from "Starting installation" on); the
/// step is not handed out again. A failure moves the host to error
/// (HostInstallationFailed).
async fn install_replied(s: &Shared, h: &HostRow, r: &StepReply) -> Res<()> {
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

async fn host_progress(
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
    if !matches!(h.status.as_str(), "installing" | "installing-in-progress") {
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

// ---- downloads

/// The files `downloads/files` hands out.
pub const CLUSTER_FILES: &[&str] = &[
    "bootstrap.ign",
    "master.ign",
    "worker.ign",
    "metadata.json",
    "install-config.yaml",
];

async fn cluster_file(s: &Shared, id: &str, name: &str) -> Res<Response> {
    cluster_or_404(s, id).await?;
    let Some(text) = s.db.file(id, name).await? else {
        return Err(Failure::conflict(format!(
            "{name} of cluster {id} is not available: it is generated when the installation starts"
        )));
    };
    Ok((
        StatusCode::OK,
        [
            (
                axum::http::header::CONTENT_TYPE,
                "application/octet-stream".to_string(),
            ),
            (
                axum::http::header::CONTENT_DISPOSITION,
                format!("attachment; filename={name}"),
            ),
        ],
        text,
    )
        .into_response())
}

async fn download_file(
    State(s): State<Shared>,
    Path(id): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> Res<Response> {
    let name = q.get("file_name").cloned().unwrap_or_default();
    if !CLUSTER_FILES.contains(&name.as_str()) {
        return Err(Failure::bad(format!(
            "file_name {name:?}: one of {}",
            CLUSTER_FILES.join(", ")
        )));
    }
    cluster_file(&s, &id, &name).await
}

async fn download_credentials(
    State(s): State<Shared>,
    Path(id): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> Res<Response> {
    let name = q.get("file_name").cloned().unwrap_or_default();
    let stored = match name.as_str() {
        "kubeadmin-password" | "kubeconfig-noingress" => name.as_str(),
        // Until the ingress CA is merged (finalizing), kubeconfig is the
        // one without it, as assisted-service falls back.
        "kubeconfig" => "kubeconfig-noingress",
        _ => {
            return Err(Failure::bad(format!(
                "file_name {name:?}: one of kubeadmin-password, kubeconfig, kubeconfig-noingress"
            )));
        }
    };
    cluster_file(&s, &id, stored).await
}

async fn host_ignition(
    State(s): State<Shared>,
    Path((ie, id)): Path<(String, String)>,
) -> Res<Response> {
    let h = host_or_404(&s, &ie, &id).await?;
    if h.cluster_id.is_empty() {
        return Err(Failure::conflict(format!(
            "host {id} is not bound to a cluster"
        )));
    }
    let role = install::effective_role(&h).to_string();
    cluster_file(&s, &h.cluster_id, &format!("{role}-{id}.ign")).await
}

// ---- the discovery Ignition and agent tokens

async fn regenerate_signing_key(State(s): State<Shared>, Path(ie): Path<String>) -> Res<Response> {
    let Some(generation) = s.db.regenerate_signing_key(&ie).await? else {
        return Err(Failure::not_found(format!("infra-env {ie} not found")));
    };
    events::emit(
        &s.db,
        events::Scope { cluster_id: "", infra_env_id: &ie, host_id: "" },
        "info",
        "infra_env_signing_key_regenerated",
        format!("The signing key of infra-env {ie} was regenerated (generation {generation}); agent tokens issued before are revoked"),
    )
    .await;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// `GET /v2/infra-envs/{id}/downloads/files?file_name=discovery.ign`: the
/// discovery Ignition (spec 3.1.0, as assisted-service renders it, §9.1):
/// the `core` user's SSH key and `agent.service`, which runs `okd-install
/// agent` against this service with the infra-env's agent token in
/// `PULL_SECRET_TOKEN` (empty without authentication). The service URL is
/// the one the request came to (its `Host` header).
async fn infra_env_file(
    State(s): State<Shared>,
    Path(ie): Path<String>,
    Query(q): Query<HashMap<String, String>>,
    headers: axum::http::HeaderMap,
) -> Res<Response> {
    let name = q.get("file_name").cloned().unwrap_or_default();
    if name != "discovery.ign" {
        return Err(Failure::bad(format!(
            "file_name {name:?}: only discovery.ign"
        )));
    }
    let e = infra_env_or_404(&s, &ie).await?;
    let p: InfraEnvParams = serde_json::from_str(&e.params).unwrap_or_default();
    let host = headers
        .get(axum::http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .filter(|h| {
            !h.is_empty()
                && h.chars()
                    .all(|c| c.is_ascii_alphanumeric() || ".:-[]".contains(c))
        })
        .unwrap_or("127.0.0.1:8090");
    let token = s
        .opts
        .auth_token
        .as_deref()
        .map(|t| crate::auth::agent_token(t, &ie, e.signing_generation))
        .unwrap_or_default();
    let unit = format!(
        "[Unit]\nDescription=Assisted Installer discovery agent\nWants=network-online.target\nAfter=network-online.target\n\n[Service]\nEnvironment=PULL_SECRET_TOKEN={token}\nExecStart=/usr/local/bin/okd-install agent --url http://{host} --infra-env-id {ie}\nRestart=always\nRestartSec=3s\n\n[Install]\nWantedBy=multi-user.target\n"
    );
    let mut cfg = serde_json::json!({
        "ignition": { "version": "3.1.0" },
        "systemd": { "units": [ { "name": "agent.service", "enabled": true, "contents": unit } ] },
    });
    if !p.ssh_authorized_key.is_empty() {
        cfg["passwd"] = serde_json::json!({ "users": [ { "name": "core", "sshAuthorizedKeys": [p.ssh_authorized_key] } ] });
    }
    Ok((
        StatusCode::OK,
        [(axum::http::header::CONTENT_TYPE, "application/octet-stream")],
        cfg.to_string(),
    )
        .into_response())
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

async fn cancel_cluster(State(s): State<Shared>, Path(id): Path<String>) -> Res<Response> {
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
    if !s
        .db
        .set_cluster_status(&id, &c.status, to, info, &c.validations_info)
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
        format!("Updated status of the cluster to {to} ({info})"),
    )
    .await;
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

async fn reset_cluster(State(s): State<Shared>, Path(id): Path<String>) -> Res<Response> {
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
