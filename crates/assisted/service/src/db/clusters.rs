//! The clusters table.

use super::*;

impl Db {
    /// Stores a new cluster.
    pub async fn insert_cluster(&self, c: &ClusterRow) -> Result<(), DbError> {
        sqlx::query(safe(format!(
            "INSERT INTO clusters ({CLUSTER_COLS}) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11)"
        )))
        .bind(&c.id)
        .bind(&c.name)
        .bind(&c.status)
        .bind(&c.status_info)
        .bind(c.status_updated_at)
        .bind(&c.params)
        .bind(&c.pull_secret)
        .bind(&c.validations_info)
        .bind(c.install_started_at)
        .bind(c.created_at)
        .bind(c.updated_at)
        .execute(&self.pool)
        .await
        .map_err(sql("insert a cluster"))?;
        Ok(())
    }

    /// One cluster.
    pub async fn cluster(&self, id: &str) -> Result<Option<ClusterRow>, DbError> {
        let r = sqlx::query(safe(format!(
            "SELECT {CLUSTER_COLS} FROM clusters WHERE id = $1"
        )))
        .bind(id)
        .fetch_optional(&self.pool)
        .await
        .map_err(sql("read a cluster"))?;
        r.as_ref()
            .map(cluster_row)
            .transpose()
            .map_err(sql("read a cluster"))
    }

    /// Every cluster, oldest first.
    pub async fn clusters(&self) -> Result<Vec<ClusterRow>, DbError> {
        let rows = sqlx::query(safe(format!(
            "SELECT {CLUSTER_COLS} FROM clusters ORDER BY created_at, id"
        )))
        .fetch_all(&self.pool)
        .await
        .map_err(sql("list clusters"))?;
        rows.iter()
            .map(cluster_row)
            .collect::<Result<_, _>>()
            .map_err(sql("list clusters"))
    }

    /// Replaces a cluster's settings and pull secret while its status is
    /// one of `allowed`. Returns whether it was.
    pub async fn update_cluster_params(
        &self,
        id: &str,
        name: &str,
        params: &str,
        pull_secret: &str,
        allowed: &[&str],
    ) -> Result<bool, DbError> {
        let list = allowed
            .iter()
            .map(|s| format!("'{s}'"))
            .collect::<Vec<_>>()
            .join(",");
        let r = sqlx::query(safe(format!(
            "UPDATE clusters SET name = $1, params = $2, pull_secret = $3, updated_at = $4 \
             WHERE id = $5 AND status IN ({list})"
        )))
        .bind(name)
        .bind(params)
        .bind(pull_secret)
        .bind(now_ms())
        .bind(id)
        .execute(&self.pool)
        .await
        .map_err(sql("update a cluster"))?;
        Ok(r.rows_affected() == 1)
    }

    /// Moves a cluster from status `from` to `to` (and stores its
    /// validations); `false` when its status is no longer `from`.
    pub async fn set_cluster_status(
        &self,
        id: &str,
        from: &str,
        to: &str,
        info: &str,
        validations: &str,
    ) -> Result<bool, DbError> {
        let now = now_ms();
        let r = if from == to {
            sqlx::query(
                "UPDATE clusters SET status_info = $1, validations_info = $2, updated_at = $3 \
                 WHERE id = $4 AND status = $5",
            )
            .bind(info)
            .bind(validations)
            .bind(now)
            .bind(id)
            .bind(from)
            .execute(&self.pool)
            .await
        } else {
            sqlx::query(
                "UPDATE clusters SET status = $1, status_info = $2, validations_info = $3, \
                 status_updated_at = $4, updated_at = $5 WHERE id = $6 AND status = $7",
            )
            .bind(to)
            .bind(info)
            .bind(validations)
            .bind(now)
            .bind(now)
            .bind(id)
            .bind(from)
            .execute(&self.pool)
            .await
        }
        .map_err(sql("change a cluster's status"))?;
        Ok(r.rows_affected() == 1)
    }

    /// Marks the start of installation.
    pub async fn set_install_started(&self, id: &str) -> Result<(), DbError> {
        sqlx::query("UPDATE clusters SET install_started_at = $1 WHERE id = $2")
            .bind(now_ms())
            .bind(id)
            .execute(&self.pool)
            .await
            .map_err(sql("mark a cluster's installation"))?;
        Ok(())
    }

    /// Deletes a cluster; its hosts stay in their infra-env, unbound.
    pub async fn delete_cluster(&self, id: &str) -> Result<bool, DbError> {
        let mut tx = self.pool.begin().await.map_err(sql("delete a cluster"))?;
        sqlx::query("UPDATE hosts SET cluster_id = '' WHERE cluster_id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await
            .map_err(sql("delete a cluster"))?;
        sqlx::query("UPDATE infra_envs SET cluster_id = '' WHERE cluster_id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await
            .map_err(sql("delete a cluster"))?;
        // Its generated files (the credentials among them) and its hosts'
        // logs go with it.
        for table in ["cluster_files", "host_logs"] {
            sqlx::query(safe(format!("DELETE FROM {table} WHERE cluster_id = $1")))
                .bind(id)
                .execute(&mut *tx)
                .await
                .map_err(sql("delete a cluster"))?;
        }
        let r = sqlx::query("DELETE FROM clusters WHERE id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await
            .map_err(sql("delete a cluster"))?;
        tx.commit().await.map_err(sql("delete a cluster"))?;
        Ok(r.rows_affected() == 1)
    }
}
