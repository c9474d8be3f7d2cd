//! The REST API v2 (`/api/assisted-install/v2`, assisted-service
//! `swagger.yaml`): clusters, infra-envs, hosts, the next-step protocol
//! and events, over [`crate::db::Db`].
//!
//! Errors use the swagger's `error` body; a body that does not parse is
//! a 400 naming serde's reason (the unknown field, the wrong type and
//! where); an unreachable database is a 503 naming it.
//!
//! This module holds the routes, [`Failure`] and the helpers the handlers
//! share; the handlers are in `clusters`, `infra_envs` (with the discovery
//! Ignition), `hosts`, `steps` (the next-step protocol), `installation`
//! (install, progress, cancel, reset), `downloads` and `event_list`.

mod clusters;
mod downloads;
mod event_list;
mod hosts;
mod infra_envs;
pub(crate) mod installation;
mod logs;
mod steps;

use axum::Router;
use axum::body::Bytes;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use okd_assisted_api::rest::{self, ApiError};
use serde::de::DeserializeOwned;

use crate::db::DbError;
use crate::limits::with_body_limit;
use crate::{Shared, validate};

pub use clusters::{UPDATABLE, cluster_document, networks_of};
pub use downloads::CLUSTER_FILES;
pub use hosts::ACCEPTS_HOSTS;
pub use infra_envs::DISCOVERY_CA_PATH;
pub use installation::stages;
pub use steps::{MAX_OUTSTANDING, STEP_TTL_MS, steps_for};

use clusters::{delete_cluster, get_cluster, list_clusters, register_cluster, update_cluster};
use downloads::{download_credentials, download_file, host_ignition};
use event_list::list_events;
use hosts::{delete_host, get_host, list_hosts, register_host, update_host};
use infra_envs::{
    delete_infra_env, get_infra_env, infra_env_file, list_infra_envs, regenerate_signing_key,
    register_infra_env,
};
use installation::{cancel_cluster, host_progress, install_cluster, reset_cluster};
use steps::{next_steps, step_reply};

/// A failed request: the status and the reason in words.
#[derive(Debug)]
pub struct Failure {
    status: StatusCode,
    reason: String,
}

impl Failure {
    /// A failure with `status`, answered with the swagger `error` body
    /// whose `reason` is `reason`.
    pub(crate) fn new(status: StatusCode, reason: impl Into<String>) -> Failure {
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

/// A JSON body as `T`; a 400 naming the document (`what`), the field's
/// path when the fault is inside one, and serde's rule otherwise.
fn body<T: DeserializeOwned>(what: &str, bytes: &Bytes) -> Res<T> {
    let de = &mut serde_json::Deserializer::from_slice(bytes);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        if path.is_empty() || path == "." {
            Failure::bad(format!("{what}: {}", e.inner()))
        } else {
            Failure::bad(format!("{what}: field {path}: {}", e.inner()))
        }
    })
}

fn json<T: serde::Serialize>(status: StatusCode, v: &T) -> Response {
    (status, axum::Json(v)).into_response()
}

/// The routes under [`rest::BASE_PATH`], each with its request body
/// limit ([`crate::limits`]): JSON calls `max_body_bytes`, step replies
/// `max_step_reply_bytes`, logs uploads the per-host logs limit (and
/// their form's framing).
pub fn routes(state: Shared) -> Router {
    let limits = &state.opts.limits;
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
        .route(
            "/clusters/{cluster_id}/actions/complete-installation",
            post(installation::complete_installation),
        )
        .route("/clusters/{cluster_id}/logs", get(logs::download_logs))
        .route(
            "/clusters/{cluster_id}/free_addresses",
            get(clusters::free_addresses),
        )
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
        .route("/events", get(list_events));
    let user = with_body_limit(user, limits.json_body()).route_layer(
        axum::middleware::from_fn_with_state(state.clone(), crate::auth::user),
    );
    let agent_json = Router::new()
        .route("/infra-envs/{infra_env_id}/hosts", post(register_host))
        .route(
            "/infra-envs/{infra_env_id}/hosts/{host_id}/progress",
            axum::routing::put(host_progress),
        )
        .route(
            "/infra-env/{infra_env_id}/hosts/{host_id}/downloads/ignition",
            get(host_ignition),
        );
    let agent_steps = Router::new().route(
        "/infra-envs/{infra_env_id}/hosts/{host_id}/instructions",
        get(next_steps).post(step_reply),
    );
    // The agent names its infra-env in the query here.
    let agent_logs = Router::new().route("/clusters/{cluster_id}/logs", post(logs::upload_logs));
    let agent = with_body_limit(agent_json, limits.json_body())
        .merge(with_body_limit(agent_steps, limits.step_reply_body()))
        .merge(with_body_limit(agent_logs, limits.logs_upload_body()))
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            crate::auth::agent,
        ));
    let public = Router::new().route(
        "/openapi.json",
        get(|| async { axum::Json(crate::openapi::document()) }),
    );
    let public = with_body_limit(public, limits.json_body());
    let v2 = user.merge(agent).merge(public).with_state(state);
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
