//! Events (swagger `event`): one for every registration, update and
//! status change, stored with the cluster, infra-env and host they
//! concern. A failure to store one is logged, never the request's
//! failure.

use crate::db::{Db, DbError, EventRow, now_ms};

/// What an event concerns (`''` for none).
#[derive(Debug, Clone, Copy)]
pub struct Scope<'a> {
    /// The cluster.
    pub cluster_id: &'a str,
    /// The infra-env.
    pub infra_env_id: &'a str,
    /// The host.
    pub host_id: &'a str,
}

/// Stores an event of category `user`; logs it at the matching level.
pub async fn emit(db: &Db, scope: Scope<'_>, severity: &str, name: &str, message: String) {
    match severity {
        "info" => tracing::info!(
            event = name,
            cluster = scope.cluster_id,
            host = scope.host_id,
            "{message}"
        ),
        _ => tracing::warn!(
            event = name,
            cluster = scope.cluster_id,
            host = scope.host_id,
            "{message}"
        ),
    }
    let row = EventRow {
        seq: 0,
        cluster_id: scope.cluster_id.to_string(),
        host_id: scope.host_id.to_string(),
        infra_env_id: scope.infra_env_id.to_string(),
        severity: severity.to_string(),
        category: "user".to_string(),
        name: name.to_string(),
        message,
        event_time: now_ms(),
    };
    if let Err(e) = db.insert_event(&row).await {
        tracing::warn!(error = %e, event = name, "could not store an event");
    }
}

/// An event of a cluster alone.
pub async fn cluster(db: &Db, cluster_id: &str, severity: &str, name: &str, message: String) {
    emit(
        db,
        Scope {
            cluster_id,
            infra_env_id: "",
            host_id: "",
        },
        severity,
        name,
        message,
    )
    .await;
}

/// A cluster's status change from `from` to `to` with `info` and the
/// validations JSON `validations`, as a conditional update (it takes only
/// while the cluster is still `from`), and when it took and the status
/// changed, the event `cluster_status_updated` ("Updated status of the
/// cluster to {to} ({info})"; severity `error` for `error`, else `info`).
/// Returns whether the update took.
///
/// Errors: the database's (no event then).
pub async fn cluster_status(
    db: &Db,
    cluster_id: &str,
    from: &str,
    to: &str,
    info: &str,
    validations: &str,
) -> Result<bool, DbError> {
    let took = db
        .set_cluster_status(cluster_id, from, to, info, validations)
        .await?;
    if took && to != from {
        cluster(
            db,
            cluster_id,
            if to == "error" { "error" } else { "info" },
            "cluster_status_updated",
            format!("Updated status of the cluster to {to} ({info})"),
        )
        .await;
    }
    Ok(took)
}
