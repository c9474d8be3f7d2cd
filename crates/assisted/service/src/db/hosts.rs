//! The hosts table: registration, polls and replies, the monitor's reads and status changes, progress.

use super::*;
use crate::limits::HostAdmission;

impl Db {
    /// Stores a new host unless one with its id exists in its infra-env
    /// or the infra-env holds `max_hosts` hosts already
    /// ([`crate::limits`]). The count and the insert are one transaction
    /// that first locks the infra-env's row (on SQLite: the one writer's
    /// lock), so concurrent registrations, of two replicas too, never take
    /// more places than there are.
    pub async fn insert_host(&self, h: &HostRow, max_hosts: u64) -> Result<HostAdmission, DbError> {
        let what = "register a host";
        let mut tx = self.pool.begin().await.map_err(sql(what))?;
        sqlx::query("UPDATE infra_envs SET updated_at = updated_at WHERE id = $1")
            .bind(&h.infra_env_id)
            .execute(&mut *tx)
            .await
            .map_err(sql(what))?;
        let r = sqlx::query(
            "SELECT COUNT(*) AS n, COALESCE(SUM(CASE WHEN id = $1 THEN 1 ELSE 0 END), 0) AS here \
             FROM hosts WHERE infra_env_id = $2",
        )
        .bind(&h.id)
        .bind(&h.infra_env_id)
        .fetch_one(&mut *tx)
        .await
        .map_err(sql(what))?;
        let (n, here): (i64, i64) = (
            r.try_get("n").map_err(sql(what))?,
            r.try_get("here").map_err(sql(what))?,
        );
        if here > 0 {
            return Ok(HostAdmission::Exists);
        }
        let hosts = u64::try_from(n).unwrap_or(0);
        if hosts >= max_hosts {
            return Ok(HostAdmission::Full { hosts });
        }
        let r = sqlx::query(
            "INSERT INTO hosts (id, infra_env_id, cluster_id, status, status_info, \
             status_updated_at, role, bootstrap, agent_version, registered_at, created_at, \
             updated_at) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12) \
             ON CONFLICT (id, infra_env_id) DO NOTHING",
        )
        .bind(&h.id)
        .bind(&h.infra_env_id)
        .bind(&h.cluster_id)
        .bind(&h.status)
        .bind(&h.status_info)
        .bind(h.status_updated_at)
        .bind(&h.role)
        .bind(i64::from(h.bootstrap))
        .bind(&h.agent_version)
        .bind(h.registered_at)
        .bind(h.created_at)
        .bind(h.updated_at)
        .execute(&mut *tx)
        .await
        .map_err(sql(what))?;
        tx.commit().await.map_err(sql(what))?;
        Ok(if r.rows_affected() == 1 {
            HostAdmission::New
        } else {
            HostAdmission::Exists
        })
    }

    /// A registration of a host that exists: from status `from` to `to`,
    /// its inventory and outstanding steps cleared when `reset_inventory`.
    pub async fn reregister_host(
        &self,
        (infra_env_id, id): (&str, &str),
        from: &str,
        to: &str,
        info: &str,
        reset_inventory: bool,
        agent_version: &str,
    ) -> Result<bool, DbError> {
        let now = now_ms();
        let clear = if reset_inventory {
            ", inventory = '', ntp_sources = '', connectivity = '', \
             domain_name_resolutions = '', free_addresses = '', verified_vips = '', \
             disk_speed = '', suggested_role = ''"
        } else {
            ""
        };
        let r = sqlx::query(safe(format!(
            "UPDATE hosts SET status = $1, status_info = $2, status_updated_at = $3, \
             registered_at = $4, updated_at = $5, agent_version = $6, steps = '[]'{clear} \
             WHERE id = $7 AND infra_env_id = $8 AND status = $9"
        )))
        .bind(to)
        .bind(info)
        .bind(now)
        .bind(now)
        .bind(now)
        .bind(agent_version)
        .bind(id)
        .bind(infra_env_id)
        .bind(from)
        .execute(&self.pool)
        .await
        .map_err(sql("register a host again"))?;
        Ok(r.rows_affected() == 1)
    }

    /// One host.
    pub async fn host(&self, infra_env_id: &str, id: &str) -> Result<Option<HostRow>, DbError> {
        self.one_host(HOST_COLS, host_row, infra_env_id, id).await
    }

    /// One host's columns `cols`, converted by `row`.
    async fn one_host(
        &self,
        cols: &str,
        row: fn(&AnyRow) -> Result<HostRow, sqlx::Error>,
        infra_env_id: &str,
        id: &str,
    ) -> Result<Option<HostRow>, DbError> {
        let r = sqlx::query(safe(format!(
            "SELECT {cols} FROM hosts WHERE id = $1 AND infra_env_id = $2"
        )))
        .bind(id)
        .bind(infra_env_id)
        .fetch_optional(&self.pool)
        .await
        .map_err(sql("read a host"))?;
        r.as_ref().map(row).transpose().map_err(sql("read a host"))
    }

    /// One host as a next-steps poll reads it: only the columns the poll
    /// uses ([`POLL_COLS`]); `connectivity` is `"-"` when a report is
    /// stored, `''` otherwise (the report itself is not read). `None`
    /// when there is no such host.
    pub async fn host_for_poll(
        &self,
        infra_env_id: &str,
        id: &str,
    ) -> Result<Option<HostRow>, DbError> {
        self.one_host(POLL_COLS, partial_host_row, infra_env_id, id)
            .await
    }

    /// The hosts of an infra-env, oldest first.
    pub async fn hosts_of_infra_env(&self, infra_env_id: &str) -> Result<Vec<HostRow>, DbError> {
        self.hosts_where("infra_env_id", infra_env_id).await
    }

    /// The hosts bound to a cluster, oldest first.
    pub async fn hosts_of_cluster(&self, cluster_id: &str) -> Result<Vec<HostRow>, DbError> {
        self.hosts_where("cluster_id", cluster_id).await
    }

    async fn hosts_where(&self, col: &str, value: &str) -> Result<Vec<HostRow>, DbError> {
        let q = format!("SELECT {HOST_COLS} FROM hosts WHERE {col} = $1 ORDER BY created_at, id");
        let query = sqlx::query(safe(q)).bind(value);
        self.host_rows(query).await
    }

    /// The rows of `query` as hosts, each row converted as it arrives
    /// (the raw rows are never all held beside the hosts: a monitor pass
    /// over thousands of hosts would hold both).
    async fn host_rows(
        &self,
        query: sqlx::query::Query<'_, sqlx::Any, sqlx::any::AnyArguments>,
    ) -> Result<Vec<HostRow>, DbError> {
        use futures_util::TryStreamExt;
        let mut rows = query.fetch(&self.pool);
        let mut out = Vec::new();
        while let Some(r) = rows.try_next().await.map_err(sql("list hosts"))? {
            out.push(host_row(&r).map_err(sql("list hosts"))?);
        }
        Ok(out)
    }

    /// Calls `f` with each host of a cluster, oldest first, as its row
    /// arrives, reading only the columns `cols` (a comma-separated list of
    /// [`HostRow`] fields; the others are left empty). The monitor's first
    /// pass: thousands of hosts are never held at once.
    pub async fn each_host_of_cluster(
        &self,
        cluster_id: &str,
        cols: &'static str,
        mut f: impl FnMut(HostRow),
    ) -> Result<(), DbError> {
        use futures_util::TryStreamExt;
        let q = format!("SELECT {cols} FROM hosts WHERE cluster_id = $1 ORDER BY created_at, id");
        let mut rows = sqlx::query(safe(q)).bind(cluster_id).fetch(&self.pool);
        let mut n = 0u32;
        while let Some(r) = rows.try_next().await.map_err(sql("list hosts"))? {
            f(partial_host_row(&r).map_err(sql("list hosts"))?);
            // Rows already fetched arrive without a pause: let the other
            // tasks of this runtime in between (`f` parses an inventory
            // each).
            n += 1;
            if n.is_multiple_of(20) {
                tokio::task::yield_now().await;
            }
        }
        Ok(())
    }

    /// At most `limit` hosts of a cluster in the order of
    /// [`Db::hosts_of_cluster`], starting after the host with `after`'s
    /// `(created_at, id)` (`None`: from the first).
    pub async fn hosts_of_cluster_page(
        &self,
        cluster_id: &str,
        after: Option<(i64, &str)>,
        limit: i64,
    ) -> Result<Vec<HostRow>, DbError> {
        let (at, id) = after.unwrap_or((i64::MIN, ""));
        let q = format!(
            "SELECT {HOST_COLS} FROM hosts WHERE cluster_id = $1 \
             AND (created_at > $2 OR (created_at = $2 AND id > $3)) \
             ORDER BY created_at, id LIMIT $4"
        );
        let query = sqlx::query(safe(q))
            .bind(cluster_id)
            .bind(at)
            .bind(id)
            .bind(limit);
        self.host_rows(query).await
    }

    /// The hosts bound to no cluster, for the monitor.
    pub async fn unbound_hosts(&self) -> Result<Vec<HostRow>, DbError> {
        self.hosts_where("cluster_id", "").await
    }

    /// The stored `free-network-addresses` reports of a cluster's hosts
    /// (only that column; empty reports left out).
    pub async fn free_addresses_of_cluster(
        &self,
        cluster_id: &str,
    ) -> Result<Vec<String>, DbError> {
        let rows = sqlx::query(
            "SELECT free_addresses FROM hosts WHERE cluster_id = $1 AND free_addresses <> ''",
        )
        .bind(cluster_id)
        .fetch_all(&self.pool)
        .await
        .map_err(sql("read the free addresses"))?;
        rows.iter()
            .map(|r| r.try_get::<String, _>("free_addresses"))
            .collect::<Result<_, _>>()
            .map_err(sql("read the free addresses"))
    }

    /// A next-steps poll: the check-in time, the host's clock, the agent's
    /// version and the outstanding steps, if those still read `old_steps`.
    pub async fn host_polled(
        &self,
        h: &HostRow,
        old_steps: &str,
        new_steps: &str,
    ) -> Result<bool, DbError> {
        let r = sqlx::query(
            "UPDATE hosts SET checked_in_at = $1, host_timestamp = $2, agent_version = $3, \
             steps = $4 WHERE id = $5 AND infra_env_id = $6 AND steps = $7",
        )
        .bind(h.checked_in_at)
        .bind(h.host_timestamp)
        .bind(&h.agent_version)
        .bind(new_steps)
        .bind(&h.id)
        .bind(&h.infra_env_id)
        .bind(old_steps)
        .execute(&self.pool)
        .await
        .map_err(sql("record a host's poll"))?;
        Ok(r.rows_affected() == 1)
    }

    /// A step reply: `column` set to `output` (when given) and the
    /// outstanding steps replaced, if they still read `old_steps`; with
    /// `disk`, the installation disk's id and path too (in the same
    /// statement, so the disk always matches the stored inventory).
    pub async fn host_replied(
        &self,
        (infra_env_id, id): (&str, &str),
        old_steps: &str,
        new_steps: &str,
        column: Option<(ReplyColumn, &str)>,
        disk: Option<(&str, &str)>,
    ) -> Result<bool, DbError> {
        let now = now_ms();
        let r = match (column, disk) {
            (Some((col, output)), Some((disk_id, disk_path))) => {
                sqlx::query(safe(format!(
                    "UPDATE hosts SET {} = $1, steps = $2, updated_at = $3, \
                     installation_disk_id = $4, installation_disk_path = $5 \
                     WHERE id = $6 AND infra_env_id = $7 AND steps = $8",
                    col.column()
                )))
                .bind(output)
                .bind(new_steps)
                .bind(now)
                .bind(disk_id)
                .bind(disk_path)
                .bind(id)
                .bind(infra_env_id)
                .bind(old_steps)
                .execute(&self.pool)
                .await
            }
            (Some((col, output)), None) => {
                sqlx::query(safe(format!(
                    "UPDATE hosts SET {} = $1, steps = $2, updated_at = $3 \
                     WHERE id = $4 AND infra_env_id = $5 AND steps = $6",
                    col.column()
                )))
                .bind(output)
                .bind(new_steps)
                .bind(now)
                .bind(id)
                .bind(infra_env_id)
                .bind(old_steps)
                .execute(&self.pool)
                .await
            }
            (None, _) => {
                sqlx::query(
                    "UPDATE hosts SET steps = $1, updated_at = $2 \
                     WHERE id = $3 AND infra_env_id = $4 AND steps = $5",
                )
                .bind(new_steps)
                .bind(now)
                .bind(id)
                .bind(infra_env_id)
                .bind(old_steps)
                .execute(&self.pool)
                .await
            }
        }
        .map_err(sql("store a step reply"))?;
        Ok(r.rows_affected() == 1)
    }

    /// Moves a host from `from` to `to` with its validations and
    /// suggested role; `false` when its status is no longer `from`.
    pub async fn set_host_status(
        &self,
        h: &HostRow,
        from: &str,
        to: &str,
        info: &str,
        validations: &str,
        suggested_role: &str,
    ) -> Result<bool, DbError> {
        let now = now_ms();
        let r = if from == to {
            sqlx::query(
                "UPDATE hosts SET status_info = $1, validations_info = $2, suggested_role = $3 \
                 WHERE id = $4 AND infra_env_id = $5 AND status = $6",
            )
            .bind(info)
            .bind(validations)
            .bind(suggested_role)
            .bind(&h.id)
            .bind(&h.infra_env_id)
            .bind(from)
            .execute(&self.pool)
            .await
        } else {
            sqlx::query(
                "UPDATE hosts SET status = $1, status_info = $2, validations_info = $3, \
                 suggested_role = $4, status_updated_at = $5, updated_at = $6 \
                 WHERE id = $7 AND infra_env_id = $8 AND status = $9",
            )
            .bind(to)
            .bind(info)
            .bind(validations)
            .bind(suggested_role)
            .bind(now)
            .bind(now)
            .bind(&h.id)
            .bind(&h.infra_env_id)
            .bind(from)
            .execute(&self.pool)
            .await
        }
        .map_err(sql("change a host's status"))?;
        Ok(r.rows_affected() == 1)
    }

    /// The user's changes to a host (host name, role, installation disk
    /// as its id and device path).
    pub async fn update_host_settings(
        &self,
        infra_env_id: &str,
        id: &str,
        requested_hostname: &str,
        role: &str,
        (installation_disk_id, installation_disk_path): (&str, &str),
    ) -> Result<bool, DbError> {
        let r = sqlx::query(
            "UPDATE hosts SET requested_hostname = $1, role = $2, installation_disk_id = $3, \
             installation_disk_path = $4, updated_at = $5 WHERE id = $6 AND infra_env_id = $7",
        )
        .bind(requested_hostname)
        .bind(role)
        .bind(installation_disk_id)
        .bind(installation_disk_path)
        .bind(now_ms())
        .bind(id)
        .bind(infra_env_id)
        .execute(&self.pool)
        .await
        .map_err(sql("update a host"))?;
        Ok(r.rows_affected() == 1)
    }

    /// A cluster reset: the host to `resetting-pending-user-action` with its
    /// handed-out steps, progress and step outputs cleared (so replies to
    /// steps from before the reset are refused).
    pub async fn reset_host(&self, h: &HostRow, info: &str) -> Result<bool, DbError> {
        let now = now_ms();
        let r = sqlx::query(
            "UPDATE hosts SET status = 'resetting-pending-user-action', status_info = $1, \
             steps = '[]', progress_stage = '', progress_info = '', progress_stage_started_at = 0, status_updated_at = $2, \
             updated_at = $3 WHERE id = $4 AND infra_env_id = $5 AND status = $6",
        )
        .bind(info)
        .bind(now)
        .bind(now)
        .bind(&h.id)
        .bind(&h.infra_env_id)
        .bind(&h.status)
        .execute(&self.pool)
        .await
        .map_err(sql("reset a host"))?;
        Ok(r.rows_affected() == 1)
    }

    /// Sets a host's role and bootstrap flag (at install).
    pub async fn set_host_role(
        &self,
        infra_env_id: &str,
        id: &str,
        role: &str,
        bootstrap: bool,
    ) -> Result<(), DbError> {
        sqlx::query(
            "UPDATE hosts SET role = $1, bootstrap = $2, updated_at = $3 \
             WHERE id = $4 AND infra_env_id = $5",
        )
        .bind(role)
        .bind(i64::from(bootstrap))
        .bind(now_ms())
        .bind(id)
        .bind(infra_env_id)
        .execute(&self.pool)
        .await
        .map_err(sql("set a host's role"))?;
        Ok(())
    }

    /// Deletes a host.
    pub async fn delete_host(&self, infra_env_id: &str, id: &str) -> Result<bool, DbError> {
        let r = sqlx::query("DELETE FROM hosts WHERE id = $1 AND infra_env_id = $2")
            .bind(id)
            .bind(infra_env_id)
            .execute(&self.pool)
            .await
            .map_err(sql("delete a host"))?;
        Ok(r.rows_affected() == 1)
    }
}
