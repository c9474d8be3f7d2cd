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

/// The pool settings of `backend`: at most `max_connections` (and at
/// most [`SQLITE_MAX_CONNECTIONS`] on SQLite), 5 s to get one; SQLite
/// connections wait 5 s for the writer's lock and use the write-ahead log.
fn pool_options(backend: Backend, max_connections: u32) -> AnyPoolOptions {
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
    opts
}

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
    /// The installation disk's id (the disk's inventory `id`: its by-id
    /// path when it has one), chosen when the inventory arrives or by
    /// the user (`''`: no inventory yet, or no eligible disk).
    pub installation_disk_id: String,
    /// The installation disk's device path (`/dev/sda`), with
    /// `installation_disk_id`.
    pub installation_disk_path: String,
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
     suggested_role, bootstrap, requested_hostname, installation_disk_id, installation_disk_path, inventory, \
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
        installation_disk_path: r.try_get("installation_disk_path")?,
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
        installation_disk_path: get(r, "installation_disk_path")?,
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
        let opts = pool_options(backend, max_connections);
        let pool = opts.connect(url).await.map_err(sql("connect"))?;
        let db = Db { pool, backend };
        match backend {
            Backend::Sqlite => sqlx::migrate!("migrations/sqlite").run(&db.pool).await?,
            Backend::Postgres => sqlx::migrate!("migrations/postgres").run(&db.pool).await?,
        }
        Ok(db)
    }

    /// A second pool of at most `max_connections` to the same database
    /// (no migrations: [`Db::open`] ran them), whose connections belong to
    /// the caller's runtime and thread. The monitor opens one on its own
    /// thread ([`crate::serve`]), so its queries never wait for a request's
    /// connection and, on SQLite, the connection threads sqlx starts share
    /// the monitor thread's lower priority.
    ///
    /// Errors: the database cannot be reached.
    pub async fn open_more(&self, max_connections: u32) -> Result<Db, DbError> {
        let opts = pool_options(self.backend, max_connections);
        let connect = (*self.pool.connect_options()).clone();
        let pool = opts.connect_with(connect).await.map_err(sql("connect"))?;
        Ok(Db {
            pool,
            backend: self.backend,
        })
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
}

mod clusters;
mod events;
mod files;
mod hosts;
mod infra_envs;
mod tokens;
