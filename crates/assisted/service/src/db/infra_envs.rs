//! The infra-envs table.

use super::*;

impl Db {
    /// Stores a new infra-env.
    pub async fn insert_infra_env(&self, e: &InfraEnvRow) -> Result<(), DbError> {
        sqlx::query(safe(format!(
            "INSERT INTO infra_envs ({INFRA_ENV_COLS}) VALUES ($1,$2,$3,$4,$5,$6,$7,$8)"
        )))
        .bind(&e.id)
        .bind(&e.name)
        .bind(&e.cluster_id)
        .bind(&e.params)
        .bind(&e.pull_secret)
        .bind(e.created_at)
        .bind(e.updated_at)
        .bind(e.signing_generation)
        .execute(&self.pool)
        .await
        .map_err(sql("insert an infra-env"))?;
        Ok(())
    }

    /// One infra-env.
    pub async fn infra_env(&self, id: &str) -> Result<Option<InfraEnvRow>, DbError> {
        let r = sqlx::query(safe(format!(
            "SELECT {INFRA_ENV_COLS} FROM infra_envs WHERE id = $1"
        )))
        .bind(id)
        .fetch_optional(&self.pool)
        .await
        .map_err(sql("read an infra-env"))?;
        r.as_ref()
            .map(infra_env_row)
            .transpose()
            .map_err(sql("read an infra-env"))
    }

    /// Every infra-env, oldest first.
    pub async fn infra_envs(&self) -> Result<Vec<InfraEnvRow>, DbError> {
        let rows = sqlx::query(safe(format!(
            "SELECT {INFRA_ENV_COLS} FROM infra_envs ORDER BY created_at, id"
        )))
        .fetch_all(&self.pool)
        .await
        .map_err(sql("list infra-envs"))?;
        rows.iter()
            .map(infra_env_row)
            .collect::<Result<_, _>>()
            .map_err(sql("list infra-envs"))
    }

    /// Moves an infra-env's agent-token key on; returns the new
    /// generation (`None`: no such infra-env).
    pub async fn regenerate_signing_key(&self, id: &str) -> Result<Option<i64>, DbError> {
        let r = sqlx::query(
            "UPDATE infra_envs SET signing_generation = signing_generation + 1, updated_at = $1 \
             WHERE id = $2",
        )
        .bind(now_ms())
        .bind(id)
        .execute(&self.pool)
        .await
        .map_err(sql("regenerate an infra-env's signing key"))?;
        if r.rows_affected() == 0 {
            return Ok(None);
        }
        Ok(self.infra_env(id).await?.map(|e| e.signing_generation))
    }

    /// Deletes an infra-env and its hosts.
    pub async fn delete_infra_env(&self, id: &str) -> Result<bool, DbError> {
        let mut tx = self
            .pool
            .begin()
            .await
            .map_err(sql("delete an infra-env"))?;
        sqlx::query("DELETE FROM hosts WHERE infra_env_id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await
            .map_err(sql("delete an infra-env"))?;
        let r = sqlx::query("DELETE FROM infra_envs WHERE id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await
            .map_err(sql("delete an infra-env"))?;
        tx.commit().await.map_err(sql("delete an infra-env"))?;
        Ok(r.rows_affected() == 1)
    }
}
