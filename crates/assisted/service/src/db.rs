//! Storage: SQLite (one file, the default) or PostgreSQL, through sqlx's
//! Any driver so one set of statements serves both. Statements number
//! their parameters `$1, $2, …` in order (both SQLite and PostgreSQL
//! read that form). Migrations are embedded per backend
//! (`migrations/sqlite`, `migrations/postgres`) and run at start.
//!
//! State changes are conditional updates (`… WHERE status = $expected`,
//! as assisted-service's `internal/host` and `internal/cluster` do), and a
//! host's outstanding steps are replaced only when they still read as the
//! caller saw them, so two service replicas on one PostgreSQL never
//! overwrite each other's transitions.

use std::time::Duration;

use sqlx::any::{AnyPoolOptions, AnyRow};
use sqlx::{AnyPool, Row};

/// A storage failure, with what was being done.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    /// The database could not be reached or refused the statement.
    #[error("the database: {what}: {source}")]
    Sql {
        /// What was being done.
        what: String,
        /// sqlx's error.
        source: sqlx::Error,
    },
    /// The schema could not be brought up to date.
    #[error("the database's schema: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// A URL this service cannot use.
    #[error("--db-url {0}: only sqlite:// and postgres:// URLs are supported")]
    Url(String),
}

impl DbError {
    /// Whether the database itself is unreachable (connection refused,
    /// pool timed out, I/O), as opposed to a statement it refused.
    pub fn unavailable(&self) -> bool {
        matches!(
            self,
            DbError::Sql {
                source: sqlx::Error::Io(_)
                    | sqlx::Error::PoolTimedOut
                    | sqlx::Error::PoolClosed
                    | sqlx::Error::Tls(_)
                    | sqlx::Error::WorkerCrashed,
                ..
            }
        )
    }
}

/// Statements built from this module's constants (column lists, column
/// names of [`ReplyColumn`], the statuses of `UPDATABLE`): values always
/// travel as bound parameters.
fn safe(q: String) -> sqlx::AssertSqlSafe<String> {
    sqlx::AssertSqlSafe(q)
}

fn sql(what: &str) -> impl FnOnce(sqlx::Error) -> DbError + '_ {
    move |source| DbError::Sql {
        what: what.to_string(),
        source,
    }
}

/// Creates the SQLite file of `url` as 0600 when missing and takes group
/// and other bits off one that exists: it holds pull secrets. SQLite gives
/// its `-wal` and `-shm` files the database file's mode.
fn secure_sqlite_file(url: &str) -> std::io::Result<()> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let path = url
        .trim_start_matches("sqlite://")
        .trim_start_matches("sqlite:");
    let path = path.split('?').next().unwrap_or(path);
    if path.is_empty() || path == ":memory:" {
        return Ok(());
    }
    let f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)?;
    let mode = f.metadata()?.permissions().mode();
    if mode & 0o077 != 0 {
        f.set_permissions(std::fs::Permissions::from_mode(mode & 0o700))?;
    }
    Ok(())
}

/// Which database is behind the pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// One file (`sqlite://<path>`).
    Sqlite,
    /// A PostgreSQL server (`postgres://…`).
    Postgres,
}

/// The service's storage.
#[derive(Debug, Clone)]
pub struct Db {
    pool: AnyPool,
    backend: Backend,
}

/// Unix milliseconds now.
pub fn now_ms() -> i64 {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// A cluster row. `params` is the JSON of [`crate::model::ClusterParams`].
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterRow {
    /// UUID.
    pub id: String,
    /// The cluster's name.
    pub name: String,
    /// The state machine's status.
    pub status: String,
    /// The status in words.
    pub status_info: String,
    /// Unix ms.
    pub status_updated_at: i64,
    /// JSON of the cluster's settings.
    pub params: String,
    /// The pull secret (JSON text).
    pub pull_secret: String,
    /// JSON text of the last validations.
    pub validations_info: String,
    /// Unix ms, 0 before install.
    pub install_started_at: i64,
    /// Unix ms.
    pub created_at: i64,
    /// Unix ms.
    pub updated_at: i64,
}

/// An infra-env row. `params` is the JSON of
/// [`crate::model::InfraEnvParams`].
#[derive(Debug, Clone, PartialEq)]
pub struct InfraEnvRow {
    /// UUID.
    pub id: String,
    /// Its name.
    pub name: String,
    /// The bound cluster, `''` for none.
    pub cluster_id: String,
    /// JSON of the infra-env's settings.
    pub params: String,
    /// The pull secret (JSON text).
    pub pull_secret: String,
    /// Unix ms.
    pub created_at: i64,
    /// Unix ms.
    pub updated_at: i64,
    /// The agent-token key's generation (moved on by
    /// regenerate-signing-key, which revokes older tokens).
    pub signing_generation: i64,
}

/// Connections to a SQLite database at most.
pub const SQLITE_MAX_CONNECTIONS: u32 = 4;

/// A host row (the columns of migrations' `hosts`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HostRow {
    /// UUID chosen by the agent.
    pub id: String,
    /// The infra-env it registered with.
    pub infra_env_id: String,
    /// The bound cluster, `''` for none.
    pub cluster_id: String,
    /// The state machine's status.
    pub status: String,
    /// The status in words.
    pub status_info: String,
    /// Unix ms.
    pub status_updated_at: i64,
    /// `auto-assign`, `master`, `worker`.
    pub role: String,
    /// The monitor's suggestion for an auto-assign host.
    pub suggested_role: String,
    /// Whether it is the bootstrap host.
    pub bootstrap: bool,
    /// The host name the user set.
    pub requested_hostname: String,
    /// The installation disk the user chose (`''`: the default one).
    pub installation_disk_id: String,
    /// JSON text of the inventory, `''` before the first.
    pub inventory: String,
    /// JSON text of the last validations.
    pub validations_info: String,
    /// Step outputs, JSON text each.
    pub ntp_sources: String,
    /// See `ntp_sources`.
    pub connectivity: String,
    /// See `ntp_sources`.
    pub domain_name_resolutions: String,
    /// See `ntp_sources`.
    pub free_addresses: String,
    /// See `ntp_sources` (`verify-vips`).
    pub verified_vips: String,
    /// See `ntp_sources` (`installation-disk-speed-check`).
    pub disk_speed: String,
    /// The installation stage reached.
    pub progress_stage: String,
    /// The installer's words on it.
    pub progress_info: String,
    /// Unix ms when `progress_stage` began, 0 for no stage yet.
    pub progress_stage_started_at: i64,
    /// JSON text of the steps handed out and not answered yet.
    pub steps: String,
    /// Unix ms of the last poll, 0 for none.
    pub checked_in_at: i64,
    /// The host's clock at its last poll, Unix seconds.
    pub host_timestamp: i64,
    /// The agent's version.
    pub agent_version: String,
    /// Unix ms of the host's last logs upload, 0 for none.
    pub logs_collected_at: i64,
    /// Unix ms.
    pub registered_at: i64,
    /// Unix ms.
    pub created_at: i64,
    /// Unix ms.
    pub updated_at: i64,
}

/// An event row.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EventRow {
    /// Order of insertion.
    pub seq: i64,
    /// `''` for none.
    pub cluster_id: String,
    /// `''` for none.
    pub host_id: String,
    /// `''` for none.
    pub infra_env_id: String,
    /// `info`, `warning`, `error`, `critical`.
    pub severity: String,
    /// `user`.
    pub category: String,
    /// Stable name.
    pub name: String,
    /// In words.
    pub message: String,
    /// Unix ms.
    pub event_time: i64,
}

/// Which events to list (`GET /v2/events`' filters).
#[derive(Debug, Clone, Default)]
pub struct EventFilter {
    /// Only this cluster's (and its hosts').
    pub cluster_id: Option<String>,
    /// Only this host's.
    pub host_id: Option<String>,
    /// Only this infra-env's.
    pub infra_env_id: Option<String>,
    /// At most this many (newest last).
    pub limit: Option<i64>,
    /// Skip this many first.
    pub offset: Option<i64>,
}

const CLUSTER_COLS: &str = "id, name, status, status_info, status_updated_at, params, pull_secret, \
     validations_info, install_started_at, created_at, updated_at";
const INFRA_ENV_COLS: &str =
    "id, name, cluster_id, params, pull_secret, created_at, updated_at, signing_generation";
const HOST_COLS: &str = "id, infra_env_id, cluster_id, status, status_info, status_updated_at, role, \
     suggested_role, bootstrap, requested_hostname, installation_disk_id, inventory, \
     validations_info, ntp_sources, connectivity, domain_name_resolutions, free_addresses, \
     verified_vips, disk_speed, progress_stage, progress_info, progress_stage_started_at, steps, \
     checked_in_at, host_timestamp, agent_version, logs_collected_at, registered_at, created_at, \
     updated_at";

/// The columns a next-steps poll reads ([`Db::host_for_poll`]): not the
/// inventory, validations or step outputs, which are most of a row.
pub const POLL_COLS: &str = "id, infra_env_id, cluster_id, status, status_updated_at, bootstrap, \
     requested_hostname, progress_info, disk_speed, steps, checked_in_at, host_timestamp, \
     agent_version, logs_collected_at, \
     CASE WHEN connectivity = '' THEN '' ELSE '-' END AS connectivity";

fn cluster_row(r: &AnyRow) -> Result<ClusterRow, sqlx::Error> {
    Ok(ClusterRow {
        id: r.try_get("id")?,
        name: r.try_get("name")?,
        status: r.try_get("status")?,
        status_info: r.try_get("status_info")?,
        status_updated_at: r.try_get("status_updated_at")?,
        params: r.try_get("params")?,
        pull_secret: r.try_get("pull_secret")?,
        validations_info: r.try_get("validations_info")?,
        install_started_at: r.try_get("install_started_at")?,
        created_at: r.try_get("created_at")?,
        updated_at: r.try_get("updated_at")?,
    })
}

fn infra_env_row(r: &AnyRow) -> Result<InfraEnvRow, sqlx::Error> {
    Ok(InfraEnvRow {
        id: r.try_get("id")?,
        name: r.try_get("name")?,
        cluster_id: r.try_get("cluster_id")?,
        params: r.try_get("params")?,
        pull_secret: r.try_get("pull_secret")?,
        created_at: r.try_get("created_at")?,
        updated_at: r.try_get("updated_at")?,
        signing_generation: r.try_get("signing_generation")?,
    })
}

fn host_row(r: &AnyRow) -> Result<HostRow, sqlx::Error> {
    Ok(HostRow {
        id: r.try_get("id")?,
        infra_env_id: r.try_get("infra_env_id")?,
        cluster_id: r.try_get("cluster_id")?,
        status: r.try_get("status")?,
        status_info: r.try_get("status_info")?,
        status_updated_at: r.try_get("status_updated_at")?,
        role: r.try_get("role")?,
        suggested_role: r.try_get("suggested_role")?,
        bootstrap: r.try_get::<i64, _>("bootstrap")? != 0,
        requested_hostname: r.try_get("requested_hostname")?,
        installation_disk_id: r.try_get("installation_disk_id")?,
        inventory: r.try_get("inventory")?,
        validations_info: r.try_get("validations_info")?,
        ntp_sources: r.try_get("ntp_sources")?,
        connectivity: r.try_get("connectivity")?,
        domain_name_resolutions: r.try_get("domain_name_resolutions")?,
        free_addresses: r.try_get("free_addresses")?,
        verified_vips: r.try_get("verified_vips")?,
        disk_speed: r.try_get("disk_speed")?,
        progress_stage: r.try_get("progress_stage")?,
        progress_info: r.try_get("progress_info")?,
        progress_stage_started_at: r.try_get("progress_stage_started_at")?,
        steps: r.try_get("steps")?,
        checked_in_at: r.try_get("checked_in_at")?,
        host_timestamp: r.try_get("host_timestamp")?,
        agent_version: r.try_get("agent_version")?,
        logs_collected_at: r.try_get("logs_collected_at")?,
        registered_at: r.try_get("registered_at")?,
        created_at: r.try_get("created_at")?,
        updated_at: r.try_get("updated_at")?,
    })
}

/// A host row of some of [`HOST_COLS`]: the columns the query did not
/// select are left empty (0, `''`, false).
fn partial_host_row(r: &AnyRow) -> Result<HostRow, sqlx::Error> {
    fn get<T>(r: &AnyRow, col: &str) -> Result<T, sqlx::Error>
    where
        T: Default + for<'a> sqlx::Decode<'a, sqlx::Any> + sqlx::Type<sqlx::Any>,
    {
        match r.try_get(col) {
            Err(sqlx::Error::ColumnNotFound(_)) => Ok(T::default()),
            other => other,
        }
    }
    Ok(HostRow {
        id: get(r, "id")?,
        infra_env_id: get(r, "infra_env_id")?,
        cluster_id: get(r, "cluster_id")?,
        status: get(r, "status")?,
        status_info: get(r, "status_info")?,
        status_updated_at: get(r, "status_updated_at")?,
        role: get(r, "role")?,
        suggested_role: get(r, "suggested_role")?,
        bootstrap: get::<i64>(r, "bootstrap")? != 0,
        requested_hostname: get(r, "requested_hostname")?,
        installation_disk_id: get(r, "installation_disk_id")?,
        inventory: get(r, "inventory")?,
        validations_info: get(r, "validations_info")?,
        ntp_sources: get(r, "ntp_sources")?,
        connectivity: get(r, "connectivity")?,
        domain_name_resolutions: get(r, "domain_name_resolutions")?,
        free_addresses: get(r, "free_addresses")?,
        verified_vips: get(r, "verified_vips")?,
        disk_speed: get(r, "disk_speed")?,
        progress_stage: get(r, "progress_stage")?,
        progress_info: get(r, "progress_info")?,
        progress_stage_started_at: get(r, "progress_stage_started_at")?,
        steps: get(r, "steps")?,
        checked_in_at: get(r, "checked_in_at")?,
        host_timestamp: get(r, "host_timestamp")?,
        agent_version: get(r, "agent_version")?,
        logs_collected_at: get(r, "logs_collected_at")?,
        registered_at: get(r, "registered_at")?,
        created_at: get(r, "created_at")?,
        updated_at: get(r, "updated_at")?,
    })
}

fn event_row(r: &AnyRow) -> Result<EventRow, sqlx::Error> {
    Ok(EventRow {
        seq: r.try_get("seq")?,
        cluster_id: r.try_get("cluster_id")?,
        host_id: r.try_get("host_id")?,
        infra_env_id: r.try_get("infra_env_id")?,
        severity: r.try_get("severity")?,
        category: r.try_get("category")?,
        name: r.try_get("name")?,
        message: r.try_get("message")?,
        event_time: r.try_get("event_time")?,
    })
}

/// A host column a step reply fills (the reply's output, as JSON text).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplyColumn {
    /// `inventory`.
    Inventory,
    /// `ntp-synchronizer`.
    NtpSources,
    /// `connectivity-check`.
    Connectivity,
    /// `domain-resolution`.
    DomainResolutions,
    /// `free-network-addresses`.
    FreeAddresses,
    /// `verify-vips`.
    VerifiedVips,
    /// `installation-disk-speed-check`.
    DiskSpeed,
}

impl ReplyColumn {
    fn column(self) -> &'static str {
        match self {
            ReplyColumn::Inventory => "inventory",
            ReplyColumn::NtpSources => "ntp_sources",
            ReplyColumn::Connectivity => "connectivity",
            ReplyColumn::DomainResolutions => "domain_name_resolutions",
            ReplyColumn::FreeAddresses => "free_addresses",
            ReplyColumn::VerifiedVips => "verified_vips",
            ReplyColumn::DiskSpeed => "disk_speed",
        }
    }
}

impl Db {
    /// Opens `url` (`sqlite://<path>` — the file is made when missing —
    /// or `postgres://user:password@host:port/db`) and brings the schema
    /// up to date. SQLite runs in WAL mode with a 5 s busy timeout, so
    /// readers never wait for the writer.
    ///
    /// Errors: [`DbError::Url`] for other schemes; [`DbError::Sql`] when
    /// the database cannot be reached; [`DbError::Migrate`].
    pub async fn open(url: &str, max_connections: u32) -> Result<Db, DbError> {
        sqlx::any::install_default_drivers();
        let backend = if url.starts_with("sqlite:") {
            Backend::Sqlite
        } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Backend::Postgres
        } else {
            return Err(DbError::Url(url.to_string()));
        };
        if backend == Backend::Sqlite {
            secure_sqlite_file(url).map_err(|source| DbError::Sql {
                what: format!("make the database file of {url} private (0600)"),
                source: sqlx::Error::Io(source),
            })?;
        }
        // SQLite has one writer and each connection its own page cache
        // (2 MiB): four connections serve two cores.
        let max_connections = if backend == Backend::Sqlite {
            max_connections.min(SQLITE_MAX_CONNECTIONS)
        } else {
            max_connections
        };
        let mut opts = AnyPoolOptions::new()
            .max_connections(max_connections)
            .acquire_timeout(Duration::from_secs(5));
        if backend == Backend::Sqlite {
            opts = opts.after_connect(|conn, _| {
                Box::pin(async move {
                    sqlx::query("PRAGMA busy_timeout = 5000")
                        .execute(&mut *conn)
                        .await?;
                    sqlx::query("PRAGMA journal_mode = WAL")
                        .execute(&mut *conn)
                        .await?;
                    sqlx::query("PRAGMA synchronous = NORMAL")
                        .execute(&mut *conn)
                        .await?;
                    Ok(())
                })
            });
        }
        let pool = opts.connect(url).await.map_err(sql("connect"))?;
        let db = Db { pool, backend };
        match backend {
            Backend::Sqlite => sqlx::migrate!("migrations/sqlite").run(&db.pool).await?,
            Backend::Postgres => sqlx::migrate!("migrations/postgres").run(&db.pool).await?,
        }
        Ok(db)
    }

    /// Which database this is.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// Closes every connection.
    pub async fn close(&self) {
        self.pool.close().await;
    }

    /// Whether the database answers now.
    pub async fn ping(&self) -> Result<(), DbError> {
        sqlx::query("SELECT 1")
            .execute(&self.pool)
            .await
            .map(|_| ())
            .map_err(sql("ping"))
    }

    // ---- clusters

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

    // ---- infra-envs

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

    // ---- hosts

    /// Stores a new host unless one with its id exists in its infra-env;
    /// returns whether it was new.
    pub async fn insert_host(&self, h: &HostRow) -> Result<bool, DbError> {
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
        .execute(&self.pool)
        .await
        .map_err(sql("register a host"))?;
        Ok(r.rows_affected() == 1)
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
        while let Some(r) = rows.try_next().await.map_err(sql("list hosts"))? {
            f(partial_host_row(&r).map_err(sql("list hosts"))?);
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
    /// outstanding steps replaced, if they still read `old_steps`.
    pub async fn host_replied(
        &self,
        infra_env_id: &str,
        id: &str,
        old_steps: &str,
        new_steps: &str,
        column: Option<(ReplyColumn, &str)>,
    ) -> Result<bool, DbError> {
        let now = now_ms();
        let r = match column {
            Some((col, output)) => {
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
            None => {
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

    /// The user's changes to a host (host name, role, installation disk).
    pub async fn update_host_settings(
        &self,
        infra_env_id: &str,
        id: &str,
        requested_hostname: &str,
        role: &str,
        installation_disk_id: &str,
    ) -> Result<bool, DbError> {
        let r = sqlx::query(
            "UPDATE hosts SET requested_hostname = $1, role = $2, installation_disk_id = $3, \
             updated_at = $4 WHERE id = $5 AND infra_env_id = $6",
        )
        .bind(requested_hostname)
        .bind(role)
        .bind(installation_disk_id)
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

    // ---- hosts' logs

    /// Stores a host's uploaded logs archive (replacing an older one of
    /// the same type) and sets its `logs_collected_at`, in one
    /// transaction; `false` when the host is not (any more) in
    /// `cluster_id`.
    pub async fn put_host_logs(
        &self,
        cluster_id: &str,
        (infra_env_id, host_id): (&str, &str),
        logs_type: &str,
        content: &[u8],
    ) -> Result<bool, DbError> {
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
            return Ok(false);
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
        Ok(true)
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

    // ---- events

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
