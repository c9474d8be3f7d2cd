//! The hosts' logs uploads and an install's generated files.

use super::*;
use crate::limits::{Limits, LogsAdmission};

/// The key of the PostgreSQL advisory lock taken while logs are counted
/// and stored (any constant: only this service takes it).
const LOGS_LOCK: i64 = 0x6f6b_645f_6c6f_6773; // "okd_logs"

impl Db {
    /// Stores a host's uploaded logs archive (replacing an older one of
    /// the same type) and sets its `logs_collected_at`, in one
    /// transaction, unless the host's stored logs would then exceed
    /// `limits.max_host_logs_bytes` or all stored logs
    /// `limits.max_logs_bytes` ([`crate::limits`]; the archive it replaces
    /// does not count). The sums are taken under the writer's lock
    /// (SQLite) or a transaction-scoped advisory lock (PostgreSQL), so
    /// concurrent uploads cannot pass a limit together.
    pub async fn put_host_logs(
        &self,
        cluster_id: &str,
        (infra_env_id, host_id): (&str, &str),
        logs_type: &str,
        content: &[u8],
        limits: &Limits,
    ) -> Result<LogsAdmission, DbError> {
        let what = "store a host's logs";
        let mut tx = self.pool.begin().await.map_err(sql(what))?;
        let now = now_ms();
        let r = sqlx::query(
            "UPDATE hosts SET logs_collected_at = $1 \
             WHERE id = $2 AND infra_env_id = $3 AND cluster_id = $4",
        )
        .bind(now)
        .bind(host_id)
        .bind(infra_env_id)
        .bind(cluster_id)
        .execute(&mut *tx)
        .await
        .map_err(sql(what))?;
        if r.rows_affected() != 1 {
            return Ok(LogsAdmission::NotInCluster);
        }
        if self.backend == Backend::Postgres {
            sqlx::query("SELECT CAST(pg_advisory_xact_lock($1) AS TEXT) AS locked")
                .bind(LOGS_LOCK)
                .fetch_one(&mut *tx)
                .await
                .map_err(sql(what))?;
        }
        // The stored logs but the archive this one replaces: the host's,
        // and everyone's.
        let r = sqlx::query(
            "SELECT \
             COALESCE(SUM(CASE WHEN infra_env_id = $1 AND host_id = $2 THEN LENGTH(content) ELSE 0 END), 0) AS host, \
             COALESCE(SUM(LENGTH(content)), 0) AS total \
             FROM host_logs WHERE NOT (cluster_id = $3 AND infra_env_id = $1 AND host_id = $2 \
             AND logs_type = $4)",
        )
        .bind(infra_env_id)
        .bind(host_id)
        .bind(cluster_id)
        .bind(logs_type)
        .fetch_one(&mut *tx)
        .await
        .map_err(sql(what))?;
        let (host, total): (i64, i64) = (
            r.try_get("host").map_err(sql(what))?,
            r.try_get("total").map_err(sql(what))?,
        );
        let len = u64::try_from(content.len()).unwrap_or(u64::MAX);
        let host = u64::try_from(host).unwrap_or(0).saturating_add(len);
        if host > limits.max_host_logs_bytes {
            return Ok(LogsAdmission::OverHost { bytes: host });
        }
        let total = u64::try_from(total).unwrap_or(0).saturating_add(len);
        if total > limits.max_logs_bytes {
            return Ok(LogsAdmission::OverAll { bytes: total });
        }
        sqlx::query(
            "DELETE FROM host_logs WHERE cluster_id = $1 AND infra_env_id = $2 \
             AND host_id = $3 AND logs_type = $4",
        )
        .bind(cluster_id)
        .bind(infra_env_id)
        .bind(host_id)
        .bind(logs_type)
        .execute(&mut *tx)
        .await
        .map_err(sql(what))?;
        sqlx::query(
            "INSERT INTO host_logs (cluster_id, infra_env_id, host_id, logs_type, content, uploaded_at) \
             VALUES ($1,$2,$3,$4,$5,$6)",
        )
        .bind(cluster_id)
        .bind(infra_env_id)
        .bind(host_id)
        .bind(logs_type)
        .bind(content.to_vec())
        .bind(now)
        .execute(&mut *tx)
        .await
        .map_err(sql(what))?;
        tx.commit().await.map_err(sql(what))?;
        Ok(LogsAdmission::Stored)
    }

    /// The logs archives of a cluster's hosts of `logs_type`: (infra-env
    /// id, host id, archive), only `host_id`'s when given.
    pub async fn host_logs(
        &self,
        cluster_id: &str,
        logs_type: &str,
        host_id: Option<&str>,
    ) -> Result<Vec<(String, String, Vec<u8>)>, DbError> {
        let what = "read hosts' logs";
        let rows = sqlx::query(
            "SELECT infra_env_id, host_id, content FROM host_logs \
             WHERE cluster_id = $1 AND logs_type = $2 AND ($3 = '' OR host_id = $3) \
             ORDER BY host_id, infra_env_id",
        )
        .bind(cluster_id)
        .bind(logs_type)
        .bind(host_id.unwrap_or(""))
        .fetch_all(&self.pool)
        .await
        .map_err(sql(what))?;
        rows.iter()
            .map(|r| {
                Ok((
                    r.try_get("infra_env_id")?,
                    r.try_get("host_id")?,
                    r.try_get("content")?,
                ))
            })
            .collect::<Result<_, sqlx::Error>>()
            .map_err(sql(what))
    }

    // ---- an install's files

    /// Replaces the generated files of a cluster with `files` (name,
    /// text), in one transaction.
    pub async fn put_files(
        &self,
        cluster_id: &str,
        files: &[(String, String)],
    ) -> Result<(), DbError> {
        let mut tx = self
            .pool
            .begin()
            .await
            .map_err(sql("store an install's files"))?;
        sqlx::query("DELETE FROM cluster_files WHERE cluster_id = $1")
            .bind(cluster_id)
            .execute(&mut *tx)
            .await
            .map_err(sql("store an install's files"))?;
        let now = now_ms();
        for (name, content) in files {
            sqlx::query(
                "INSERT INTO cluster_files (cluster_id, name, content, created_at) \
                 VALUES ($1,$2,$3,$4)",
            )
            .bind(cluster_id)
            .bind(name)
            .bind(content)
            .bind(now)
            .execute(&mut *tx)
            .await
            .map_err(sql("store an install's files"))?;
        }
        tx.commit().await.map_err(sql("store an install's files"))?;
        Ok(())
    }

    /// When the cluster's install files were last written, Unix ms
    /// (`None`: never).
    pub async fn files_written_at(&self, cluster_id: &str) -> Result<Option<i64>, DbError> {
        let r = sqlx::query("SELECT MAX(created_at) AS t FROM cluster_files WHERE cluster_id = $1")
            .bind(cluster_id)
            .fetch_one(&self.pool)
            .await
            .map_err(sql("read an install's files"))?;
        r.try_get::<Option<i64>, _>("t")
            .map_err(sql("read an install's files"))
    }

    /// One generated file of a cluster.
    pub async fn file(&self, cluster_id: &str, name: &str) -> Result<Option<String>, DbError> {
        let r =
            sqlx::query("SELECT content FROM cluster_files WHERE cluster_id = $1 AND name = $2")
                .bind(cluster_id)
                .bind(name)
                .fetch_optional(&self.pool)
                .await
                .map_err(sql("read an install's file"))?;
        r.map(|r| r.try_get::<String, _>("content"))
            .transpose()
            .map_err(sql("read an install's file"))
    }

    /// A host's installation progress (stage and words), and its status
    /// from `from` to `to`; `false` when its status is no longer `from`.
    pub async fn set_host_progress(
        &self,
        h: &HostRow,
        from: &str,
        to: &str,
        info: &str,
        stage: &str,
        stage_info: &str,
    ) -> Result<bool, DbError> {
        let now = now_ms();
        let r = sqlx::query(
            "UPDATE hosts SET status = $1, status_info = $2, progress_stage = $3, \
             progress_info = $4, status_updated_at = $5, updated_at = $6, \
             progress_stage_started_at = $7 \
             WHERE id = $8 AND infra_env_id = $9 AND status = $10",
        )
        .bind(to)
        .bind(info)
        .bind(stage)
        .bind(stage_info)
        .bind(if to == from { h.status_updated_at } else { now })
        .bind(now)
        .bind(if stage == h.progress_stage {
            h.progress_stage_started_at
        } else {
            now
        })
        .bind(&h.id)
        .bind(&h.infra_env_id)
        .bind(from)
        .execute(&self.pool)
        .await
        .map_err(sql("record a host's progress"))?;
        Ok(r.rows_affected() == 1)
    }
}
