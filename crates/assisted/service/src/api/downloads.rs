//! Downloads: the generated files and credentials of a cluster, and a
//! host's Ignition.

use std::collections::HashMap;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::clusters::cluster_or_404;
use super::hosts::host_or_404;
use super::{Failure, Res};
use crate::{Shared, install};

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

pub(super) async fn download_file(
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

pub(super) async fn download_credentials(
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

pub(super) async fn host_ignition(
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
