//! Hosts' logs (swagger `V2UploadLogs`, `V2DownloadClusterLogs`): the
//! agent's `logs-gather` upload and the user's download.

use std::collections::HashMap;

use axum::extract::{Multipart, Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::clusters::cluster_or_404;
use super::{Failure, Res};
use crate::limits::LogsAdmission;
use crate::{Shared, events};

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
/// with a multipart form whose field `upfile` is the archive. 204 once
/// stored; 400 without the field or with another logs type, 404 when the
/// host is not in the cluster, 413 naming the limit when the body is over
/// the per-host logs limit (and the form's framing) or storing the
/// archive would pass the per-host or the total logs limit
/// ([`crate::limits`]; nothing is stored then and the older archive
/// stays).
pub(super) async fn upload_logs(
    State(s): State<Shared>,
    Path(cluster_id): Path<String>,
    Query(q): Query<HashMap<String, String>>,
    mut form: Multipart,
) -> Res<Response> {
    let t = logs_type(&q)?;
    let (ie, host_id) = (query(&q, "infra_env_id")?, query(&q, "host_id")?);
    let limits = &s.opts.limits;
    // A body that runs over its limit (a chunked one; a declared length
    // over it was refused before) is refused naming the limit.
    let form_failure = |e: axum::extract::multipart::MultipartError| {
        if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
            return limits.logs_upload_body().refusal(None);
        }
        Failure::new(e.status(), format!("the logs upload: {}", e.body_text()))
    };
    let mut archive = None;
    while let Some(field) = form.next_field().await.map_err(form_failure)? {
        if field.name() == Some("upfile") {
            archive = Some(field.bytes().await.map_err(form_failure)?);
        }
    }
    let archive = archive.ok_or_else(|| {
        Failure::bad("the logs upload: no multipart field named upfile (the archive)")
    })?;
    let refused = |bytes: u64, limit: crate::limits::Limit, whose: &str, advice: &str| {
        Failure::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "the logs of host {host_id} ({} bytes): {whose} stored logs would be {bytes} bytes, over {limit}; nothing was stored{advice}",
                archive.len()
            ),
        )
    };
    match s
        .db
        .put_host_logs(&cluster_id, (ie, host_id), t, &archive, limits)
        .await?
    {
        LogsAdmission::Stored => {}
        LogsAdmission::NotInCluster => {
            return Err(Failure::not_found(format!(
                "host {host_id} of infra-env {ie} is not in cluster {cluster_id}"
            )));
        }
        LogsAdmission::OverHost { bytes } => {
            return Err(refused(bytes, limits.host_logs(), "the host's", ""));
        }
        LogsAdmission::OverAll { bytes } => {
            return Err(refused(
                bytes,
                limits.all_logs(),
                "all hosts'",
                " (deleting a cluster deletes its hosts' logs)",
            ));
        }
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
