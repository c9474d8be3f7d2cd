//! Hosts' logs (swagger `V2UploadLogs`, `V2DownloadClusterLogs`): the
//! agent's `logs-gather` upload and the user's download.

use std::collections::HashMap;

use axum::extract::{Multipart, Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::clusters::cluster_or_404;
use super::{Failure, Res};
use crate::{Shared, events};

/// The largest logs upload, bytes (64 MiB; the agent packs at most
/// 32 MiB of journal, compressed).
pub const MAX_LOGS_BYTES: usize = 64 << 20;

/// The logs types the service takes: `host` (the discovery agent's).
/// `controller` (the installer's controller) belongs to the per-host
/// installer, which is not part of okd-install yet.
const LOGS_TYPES: &[&str] = &["host"];

fn query<'a>(q: &'a HashMap<String, String>, name: &str) -> Res<&'a str> {
    q.get(name)
        .map(String::as_str)
        .filter(|v| !v.is_empty())
        .ok_or_else(|| Failure::bad(format!("{name}: required")))
}

fn logs_type(q: &HashMap<String, String>) -> Res<&str> {
    let t = query(q, "logs_type")?;
    if !LOGS_TYPES.contains(&t) {
        return Err(Failure::bad(format!(
            "logs_type {t:?}: this service takes host logs only (logs_type=host)"
        )));
    }
    Ok(t)
}

/// `POST /v2/clusters/{cluster_id}/logs?logs_type=host&infra_env_id=…&host_id=…`
/// with a multipart form whose field `upfile` is the archive (at most
/// [`MAX_LOGS_BYTES`]). 204 once stored; 400 without the field or with
/// another logs type, 404 when the host is not in the cluster, 413 when
/// too large.
pub(super) async fn upload_logs(
    State(s): State<Shared>,
    Path(cluster_id): Path<String>,
    Query(q): Query<HashMap<String, String>>,
    mut form: Multipart,
) -> Res<Response> {
    let t = logs_type(&q)?;
    let (ie, host_id) = (query(&q, "infra_env_id")?, query(&q, "host_id")?);
    let mut archive = None;
    while let Some(field) = form
        .next_field()
        .await
        .map_err(|e| Failure::new(e.status(), format!("the logs upload: {}", e.body_text())))?
    {
        if field.name() == Some("upfile") {
            let bytes = field.bytes().await.map_err(|e| {
                Failure::new(e.status(), format!("the logs upload: {}", e.body_text()))
            })?;
            archive = Some(bytes);
        }
    }
    let archive = archive.ok_or_else(|| {
        Failure::bad("the logs upload: no multipart field named upfile (the archive)")
    })?;
    if !s
        .db
        .put_host_logs(&cluster_id, (ie, host_id), t, &archive)
        .await?
    {
        return Err(Failure::not_found(format!(
            "host {host_id} of infra-env {ie} is not in cluster {cluster_id}"
        )));
    }
    events::emit(
        &s.db,
        events::Scope {
            cluster_id: &cluster_id,
            infra_env_id: ie,
            host_id,
        },
        "info",
        "host_logs_uploaded",
        format!(
            "Host {host_id}: uploaded its logs ({} bytes)",
            archive.len()
        ),
    )
    .await;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// `GET /v2/clusters/{cluster_id}/logs?logs_type=host[&host_id=…]`: one
/// host's archive (`application/gzip`), or without `host_id` a tar of
/// every host's archive named `<host id>.tar.gz`. 404 when there is
/// none.
pub(super) async fn download_logs(
    State(s): State<Shared>,
    Path(cluster_id): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> Res<Response> {
    let t = logs_type(&q)?;
    let c = cluster_or_404(&s, &cluster_id).await?;
    let host = q
        .get("host_id")
        .map(String::as_str)
        .filter(|h| !h.is_empty());
    let mut logs = s.db.host_logs(&c.id, t, host).await?;
    if logs.is_empty() {
        return Err(Failure::not_found(match host {
            Some(h) => format!("host {h} of cluster {} has not uploaded logs", c.name),
            None => format!(
                "no host of cluster {} has uploaded logs (a host's agent uploads them when the host enters error or cancelled)",
                c.name
            ),
        }));
    }
    if let Some(h) = host {
        let (_, _, archive) = logs.remove(0);
        return Ok((
            [
                (header::CONTENT_TYPE, "application/gzip".to_string()),
                (
                    header::CONTENT_DISPOSITION,
                    format!("attachment; filename=\"{}_{h}.tar.gz\"", c.name),
                ),
            ],
            archive,
        )
            .into_response());
    }
    let mut tar = tar::Builder::new(Vec::new());
    let now = crate::db::now_ms() / 1000;
    for (_, host_id, archive) in &logs {
        let mut h = tar::Header::new_ustar();
        h.set_size(archive.len() as u64);
        h.set_mode(0o644);
        h.set_mtime(u64::try_from(now).unwrap_or(0));
        h.set_entry_type(tar::EntryType::Regular);
        tar.append_data(&mut h, format!("{host_id}.tar.gz"), &archive[..])
            .map_err(|e| {
                Failure::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    format!("packing the logs: {e}"),
                )
            })?;
    }
    let all = tar.into_inner().map_err(|e| {
        Failure::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("packing the logs: {e}"),
        )
    })?;
    Ok((
        [
            (header::CONTENT_TYPE, "application/x-tar".to_string()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"{}_logs.tar\"", c.name),
            ),
        ],
        all,
    )
        .into_response())
}
