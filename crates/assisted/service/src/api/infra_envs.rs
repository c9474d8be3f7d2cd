//! Infra-envs: register, list, get and delete, the discovery Ignition and
//! the regeneration of the signing key of agent tokens.

use std::collections::HashMap;

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use okd_assisted_api::rest::InfraEnvCreateParams;

use super::clusters::cluster_or_404;
use super::{Failure, Res, body, check_pull_secret, json};
use crate::db::{InfraEnvRow, now_ms};
use crate::model::{self, InfraEnvParams};
use crate::{Shared, events};

pub(super) async fn infra_env_or_404(s: &Shared, id: &str) -> Res<InfraEnvRow> {
    s.db.infra_env(id)
        .await?
        .ok_or_else(|| Failure::not_found(format!("infra-env {id} not found")))
}

pub(super) async fn register_infra_env(State(s): State<Shared>, b: Bytes) -> Res<Response> {
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

pub(super) async fn list_infra_envs(State(s): State<Shared>) -> Res<Response> {
    let v: Vec<_> =
        s.db.infra_envs()
            .await?
            .iter()
            .map(model::infra_env_doc)
            .collect();
    Ok(json(StatusCode::OK, &v))
}

pub(super) async fn get_infra_env(
    State(s): State<Shared>,
    Path(id): Path<String>,
) -> Res<Response> {
    Ok(json(
        StatusCode::OK,
        &model::infra_env_doc(&infra_env_or_404(&s, &id).await?),
    ))
}

pub(super) async fn delete_infra_env(
    State(s): State<Shared>,
    Path(id): Path<String>,
) -> Res<Response> {
    if !s.db.delete_infra_env(&id).await? {
        return Err(Failure::not_found(format!("infra-env {id} not found")));
    }
    Ok(StatusCode::NO_CONTENT.into_response())
}

// ---- the discovery Ignition and agent tokens

pub(super) async fn regenerate_signing_key(
    State(s): State<Shared>,
    Path(ie): Path<String>,
) -> Res<Response> {
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

/// Where the discovery Ignition puts the service's CA for the agent's
/// `--cacert`.
pub const DISCOVERY_CA_PATH: &str = "/etc/okd-assisted/service-ca.crt";

/// `GET /v2/infra-envs/{id}/downloads/files?file_name=discovery.ign`: the
/// discovery Ignition (spec 3.1.0, as assisted-service renders it, §9.1):
/// the `core` user's SSH key and `agent.service`, which runs `okd-install
/// agent` against this service with the infra-env's agent token in
/// `PULL_SECRET_TOKEN` (empty without authentication). The service URL is
/// the one the request came to (its `Host` header, which [`crate::guard`]
/// checked): `https://` with the service's CA written to
/// [`DISCOVERY_CA_PATH`] and given as `--cacert` (issue #41), or
/// `http://` with `--insecure-http` when the service runs without TLS.
pub(super) async fn infra_env_file(
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
        .auth
        .as_deref()
        .map(|k| k.agent_token(&ie, e.signing_generation))
        .unwrap_or_default();
    let (scheme, tls_args, ca_file) = match &s.opts.tls {
        Some(t) => match &t.ca_pem {
            Some(pem) => (
                "https",
                format!(" --cacert {DISCOVERY_CA_PATH}"),
                Some(serde_json::json!({
                    "path": DISCOVERY_CA_PATH,
                    "mode": 0o644,
                    "overwrite": true,
                    "contents": { "source": okd_types::dataurl::encode(pem.as_bytes()) },
                })),
            ),
            None => ("https", String::new(), None),
        },
        None => ("http", " --insecure-http".to_string(), None),
    };
    let unit = format!(
        "[Unit]\nDescription=Assisted Installer discovery agent\nWants=network-online.target\nAfter=network-online.target\n\n[Service]\nEnvironment=PULL_SECRET_TOKEN={token}\nExecStart=/usr/local/bin/okd-install agent --url {scheme}://{host} --infra-env-id {ie}{tls_args}\nRestart=always\nRestartSec=3s\n\n[Install]\nWantedBy=multi-user.target\n"
    );
    let mut cfg = serde_json::json!({
        "ignition": { "version": "3.1.0" },
        "systemd": { "units": [ { "name": "agent.service", "enabled": true, "contents": unit } ] },
    });
    if let Some(f) = ca_file {
        cfg["storage"] = serde_json::json!({ "files": [f] });
    }
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
