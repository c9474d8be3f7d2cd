//! What checking an agent token needs from storage, in one statement.

use super::*;

impl Db {
    /// The signing generation of infra-env `infra_env_id` and, when
    /// `host_id` is given, that host's `registered_at` (Unix ms; `None`
    /// when the infra-env has no such host): one indexed read per agent
    /// call. `None` when the infra-env does not exist.
    ///
    /// # Errors
    /// [`DbError::Sql`] when the database cannot answer.
    pub async fn token_state(
        &self,
        infra_env_id: &str,
        host_id: Option<&str>,
    ) -> Result<Option<(i64, Option<i64>)>, DbError> {
        let r = sqlx::query(
            "SELECT e.signing_generation, h.registered_at FROM infra_envs e \
             LEFT JOIN hosts h ON h.infra_env_id = e.id AND h.id = $1 WHERE e.id = $2",
        )
        .bind(host_id.unwrap_or(""))
        .bind(infra_env_id)
        .fetch_optional(&self.pool)
        .await
        .map_err(sql("check an agent token"))?;
        let Some(r) = r else { return Ok(None) };
        let generation: i64 = r.try_get(0).map_err(sql("check an agent token"))?;
        let registered: Option<i64> = r.try_get(1).map_err(sql("check an agent token"))?;
        Ok(Some((generation, registered)))
    }
}
