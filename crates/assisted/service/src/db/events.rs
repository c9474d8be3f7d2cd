//! The events table.

use super::*;

impl Db {
    /// Stores an event.
    pub async fn insert_event(&self, e: &EventRow) -> Result<(), DbError> {
        sqlx::query(
            "INSERT INTO events (cluster_id, host_id, infra_env_id, severity, category, name, \
             message, event_time) VALUES ($1,$2,$3,$4,$5,$6,$7,$8)",
        )
        .bind(&e.cluster_id)
        .bind(&e.host_id)
        .bind(&e.infra_env_id)
        .bind(&e.severity)
        .bind(&e.category)
        .bind(&e.name)
        .bind(&e.message)
        .bind(e.event_time)
        .execute(&self.pool)
        .await
        .map_err(sql("store an event"))?;
        Ok(())
    }

    /// When the latest event `name` of infra-env `infra_env_id` whose
    /// message contains `needle` was stored, Unix ms (`None`: never).
    /// Rate limits use it: one event for a run of equal refusals.
    pub async fn last_event_at(
        &self,
        infra_env_id: &str,
        name: &str,
        needle: &str,
    ) -> Result<Option<i64>, DbError> {
        let what = "read an infra-env's events";
        let r = sqlx::query(
            "SELECT MAX(event_time) AS t FROM events \
             WHERE infra_env_id = $1 AND name = $2 AND message LIKE $3 ESCAPE '\\'",
        )
        .bind(infra_env_id)
        .bind(name)
        .bind(format!("%{}%", like_literal(needle)))
        .fetch_one(&self.pool)
        .await
        .map_err(sql(what))?;
        r.try_get::<Option<i64>, _>("t").map_err(sql(what))
    }

    /// Events matching `f`, oldest first.
    pub async fn events(&self, f: &EventFilter) -> Result<Vec<EventRow>, DbError> {
        let mut conds = Vec::new();
        let mut binds: Vec<&str> = Vec::new();
        for (col, v) in [
            ("cluster_id", &f.cluster_id),
            ("host_id", &f.host_id),
            ("infra_env_id", &f.infra_env_id),
        ] {
            if let Some(v) = v {
                binds.push(v);
                conds.push(format!("{col} = ${}", binds.len()));
            }
        }
        let mut q = "SELECT seq, cluster_id, host_id, infra_env_id, severity, category, name, \
                     message, event_time FROM events"
            .to_string();
        if !conds.is_empty() {
            q += &format!(" WHERE {}", conds.join(" AND "));
        }
        q += " ORDER BY seq";
        let limit = f.limit.unwrap_or(-1);
        let offset = f.offset.unwrap_or(0).max(0);
        if limit >= 0 {
            q += &format!(" LIMIT {limit}");
        } else if offset > 0 {
            q += match self.backend {
                Backend::Sqlite => " LIMIT -1",
                Backend::Postgres => " LIMIT ALL",
            };
        }
        if offset > 0 {
            q += &format!(" OFFSET {offset}");
        }
        let mut query = sqlx::query(safe(q));
        for b in binds {
            query = query.bind(b);
        }
        let rows = query
            .fetch_all(&self.pool)
            .await
            .map_err(sql("list events"))?;
        rows.iter()
            .map(event_row)
            .collect::<Result<_, _>>()
            .map_err(sql("list events"))
    }
}

/// `s` as a literal inside a `LIKE … ESCAPE '\'` pattern.
fn like_literal(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('%', "\\%")
        .replace('_', "\\_")
}
