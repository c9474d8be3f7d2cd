//! The assisted service (issue #24): `okd-install assisted serve`.
//!
//! A REST API shaped as openshift/assisted-service's v2
//! (`/api/assisted-install/v2`, its `swagger.yaml`): clusters,
//! infra-envs, hosts, the next-step protocol and events ([`api`]); storage
//! in SQLite by default or PostgreSQL ([`db`]); validations, role
//! suggestion and the pre-install host and cluster states ([`validate`]),
//! driven by a monitor ([`monitor`]). The discovery agent
//! (okd-assisted-agent) registers hosts here and answers their steps.
//!
//! Where state lives: the database only (one SQLite file `assisted.db` in
//! the service's directory, 0600, or the PostgreSQL database given); the
//! process keeps nothing that a restart would lose.

pub mod api;
pub mod auth;
pub mod cadence;
pub mod db;
pub mod events;
pub mod free_addresses;
pub mod guard;
pub mod install;
pub mod install_monitor;
pub mod latency;
pub mod limits;
pub mod model;
pub mod monitor;
pub mod network;
pub mod openapi;
pub mod tls;
pub mod ui;
pub mod validate;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;

/// How the service runs.
#[derive(Debug, Clone)]
pub struct Options {
    /// `sqlite://<path>` or `postgres://…`.
    pub db_url: String,
    /// The HTTP listen address.
    pub listen: SocketAddr,
    /// Seconds an agent waits between polls (`next_instruction_seconds`;
    /// assisted-service: 60).
    pub next_instruction_seconds: u64,
    /// Seconds between the periodic checks of a host (inventory, NTP,
    /// domain resolution, VIPs), however often it polls ([`cadence`];
    /// assisted-service runs them at every poll of 60 s).
    pub check_interval_seconds: u64,
    /// Between monitor passes (assisted-service's host monitor: 8 s).
    pub monitor_interval: Duration,
    /// Database connections at most.
    pub max_connections: u32,
    /// The release image installs are generated for.
    pub release_image: String,
    /// DNS names the service is reached by besides its IP addresses and
    /// `localhost` (`--service-name`): `Host` headers of other names are
    /// refused ([`guard`]).
    pub service_names: Vec<String>,
    /// The service's TLS ([`tls`]); `None`: plain HTTP
    /// (`--insecure-http`, which [`run`] refuses off loopback).
    pub tls: Option<Arc<tls::Tls>>,
    /// The admin token and the agent-signing key ([`auth::keys`]);
    /// `None`: no authentication (`--insecure-no-auth`, which [`run`]
    /// refuses off loopback).
    pub auth: Option<Arc<auth::Keys>>,
    /// Hosts per infra-env, stored logs and request body sizes
    /// ([`limits`]; [`limits::Limits::default`] from [`Options::new`]).
    pub limits: limits::Limits,
}

impl Options {
    /// Whether the service speaks TLS.
    pub fn tls_enabled(&self) -> bool {
        self.tls.is_some()
    }

    /// The defaults with `db_url` and `listen`.
    pub fn new(db_url: String, listen: SocketAddr) -> Options {
        Options {
            db_url,
            listen,
            next_instruction_seconds: 60,
            check_interval_seconds: 60,
            monitor_interval: Duration::from_secs(8),
            max_connections: 16,
            release_image: okd_types::release::DEFAULT_RELEASE_IMAGE.to_string(),
            auth: None,
            service_names: Vec::new(),
            tls: None,
            limits: limits::Limits::default(),
        }
    }
}

/// What every request handler and the monitor share.
#[derive(Debug)]
pub struct Inner {
    /// The storage.
    pub db: db::Db,
    /// The options.
    pub opts: Options,
    /// Wakes the monitor early.
    pub monitor: Notify,
    /// The `connectivity-check` arguments the monitor publishes.
    pub peers: network::PeerCache,
    /// The `free-network-addresses` arguments the monitor publishes.
    pub scans: free_addresses::ScanCache,
    /// The clusters' ntp-synchronizer, domain-resolution and verify-vips
    /// arguments the monitor publishes.
    pub cluster_args: network::ClusterArgsCache,
    /// When each host's periodic checks were last handed out.
    pub cadence: cadence::Cadence,
    /// Refused agent calls recently made an event of.
    pub refusals: auth::Refusals,
    /// Wrong sign-ins per client address.
    pub sign_ins: auth::SignIns,
}

/// The shared state (cheap to clone).
pub type Shared = Arc<Inner>;

/// A failure to start.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// The database.
    #[error(transparent)]
    Db(#[from] db::DbError),
    /// No authentication asked for on an address others reach.
    #[error(
        "--insecure-no-auth on {addr}: a service without authentication listens on loopback only (e.g. --listen 127.0.0.1:8090); anyone who reaches {addr} could download every cluster's credentials and pull secret"
    )]
    Insecure {
        /// The address.
        addr: SocketAddr,
    },
    /// Plain HTTP asked for on an address others reach.
    #[error(
        "--insecure-http on {addr}: a service without TLS listens on loopback only (e.g. --listen 127.0.0.1:8090); on {addr} tokens, credentials and the hosts' steps would cross the network in clear"
    )]
    InsecureHttp {
        /// The address.
        addr: SocketAddr,
    },
    /// The listen address.
    #[error("listen on {addr}: {source}")]
    Listen {
        /// The address.
        addr: SocketAddr,
        /// The reason.
        source: std::io::Error,
    },
}

/// The `sqlite://` URL of `<dir>/assisted.db` (made when missing).
pub fn sqlite_url(dir: &std::path::Path) -> String {
    format!("sqlite://{}?mode=rwc", dir.join("assisted.db").display())
}

/// Opens the database and builds the shared state.
pub async fn open(opts: Options) -> Result<Shared, ServiceError> {
    let db = db::Db::open(&opts.db_url, opts.max_connections).await?;
    Ok(Arc::new(Inner {
        db,
        opts,
        monitor: Notify::new(),
        peers: network::PeerCache::default(),
        scans: free_addresses::ScanCache::default(),
        cluster_args: network::ClusterArgsCache::default(),
        cadence: cadence::Cadence::default(),
        refusals: auth::Refusals::default(),
        sign_ins: auth::SignIns::default(),
    }))
}

/// The monitor thread's nice value: its passes (seconds of CPU over
/// thousands of hosts) yield the cores to the request workers, which keep
/// nice 0, so polls are answered on time while a pass runs (issue #24's
/// p99 goal; bench/assisted-agents.sh).
pub const MONITOR_NICE: i32 = 10;

/// Database connections of the monitor's own pool ([`db::Db::open_more`]).
pub const MONITOR_CONNECTIONS: u32 = 2;

/// Runs the monitor on `db` until `shutdown`: a pass every interval and
/// whenever [`Inner::monitor`] is notified; a failed pass (the database
/// away) is logged and retried at the next.
pub async fn run_monitor(
    state: Shared,
    db: db::Db,
    shutdown: impl std::future::Future<Output = ()>,
) {
    tokio::pin!(shutdown);
    let mut unavailable = false;
    loop {
        let started = std::time::Instant::now();
        match monitor::pass(&db, &state.peers, &state.scans, &state.cluster_args).await {
            Ok(stats) => {
                tracing::debug!(
                    clusters = stats.clusters,
                    hosts = stats.hosts,
                    updated = stats.updated,
                    ms = started.elapsed().as_millis() as u64,
                    "monitor pass"
                );
                if unavailable {
                    tracing::info!("the database answers again; monitoring resumed");
                    unavailable = false;
                }
            }
            Err(e) => {
                if !unavailable {
                    tracing::warn!(error = %e, "monitor pass failed; retrying every interval");
                }
                unavailable = true;
            }
        }
        tokio::select! {
            () = tokio::time::sleep(state.opts.monitor_interval) => {}
            () = state.monitor.notified() => {}
            () = &mut shutdown => return,
        }
    }
}

/// Starts the monitor on a thread of its own ("assisted-monitor", nice
/// [`MONITOR_NICE`], a single-threaded runtime) with its own pool of
/// [`MONITOR_CONNECTIONS`]; it runs until `stop` reads `true`. When that
/// pool cannot be opened (the database away at start) the monitor uses
/// the request workers' pool.
///
/// Errors: the thread or its runtime cannot be made.
fn start_monitor(
    state: Shared,
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    std::thread::Builder::new()
        .name("assisted-monitor".into())
        .spawn(move || {
            let me = rustix::thread::gettid();
            if let Err(e) = rustix::process::setpriority_process(Some(me), MONITOR_NICE) {
                tracing::warn!(error = %e, "the monitor runs at the request workers' priority");
            }
            rt.block_on(async move {
                let db = match state.db.open_more(MONITOR_CONNECTIONS).await {
                    Ok(db) => db,
                    Err(e) => {
                        tracing::warn!(error = %e, "the monitor shares the request workers' database pool");
                        state.db.clone()
                    }
                };
                run_monitor(state, db.clone(), async move {
                    let _ = stop.wait_for(|v| *v).await;
                })
                .await;
                db.close().await;
            });
        })
}

/// `url` with its password (if any) replaced by `***`, for logs.
pub fn redact_url(url: &str) -> String {
    if let Some((scheme, rest)) = url.split_once("://")
        && let Some((cred, host)) = rest.split_once('@')
        && let Some((user, _)) = cred.split_once(':')
    {
        return format!("{scheme}://{user}:***@{host}");
    }
    url.to_string()
}

/// `okd-install assisted serve`: opens the database (migrations run),
/// binds `opts.listen`, logs where the API is, and serves with the
/// monitor until SIGINT or SIGTERM.
///
/// Errors: the database cannot be opened or migrated; the address cannot
/// be bound.
pub async fn run(opts: Options) -> Result<(), ServiceError> {
    let listen = opts.listen;
    if opts.auth.is_none() && !listen.ip().is_loopback() {
        return Err(ServiceError::Insecure { addr: listen });
    }
    if opts.tls.is_none() && !listen.ip().is_loopback() {
        return Err(ServiceError::InsecureHttp { addr: listen });
    }
    let db_url = redact_url(&opts.db_url);
    let state = open(opts).await?;
    let listener = okd_listen::Listener::bind(listen, okd_listen::Limits::default())
        .await
        .map_err(|source| ServiceError::Listen {
            addr: listen,
            source,
        })?;
    let addr = listener.local_addr().unwrap_or(listen);
    match &state.opts.auth {
        None => tracing::warn!(
            "--insecure-no-auth: every call on {addr} passes without a token (loopback only)"
        ),
        Some(keys) => match keys.token_file() {
            Some(path) => tracing::info!(
                "users authenticate with the admin token in {} (0600): okd-install assisted … reads it from there; elsewhere pass it as OKD_ASSISTED_TOKEN; the web page asks for it once",
                path.display()
            ),
            None => tracing::info!(
                "users authenticate with the --auth-token given (OKD_ASSISTED_AUTH_TOKEN)"
            ),
        },
    }
    let scheme = match &state.opts.tls {
        Some(tls) => {
            match &tls.ca_file {
                Some(ca) => tracing::info!(
                    names = %tls.subject_alt_names.join(","),
                    pin = %tls.spki_pin.as_deref().unwrap_or(""),
                    "TLS with the certificate of the service's CA {} (clients: --cacert, or okd-install assisted … with this --dir; browsers: trust or accept it)",
                    ca.display()
                ),
                None => tracing::info!("TLS with the certificate given"),
            }
            "https"
        }
        None => {
            tracing::warn!("--insecure-http: plain HTTP on {addr} (loopback only)");
            "http"
        }
    };
    tracing::info!(
        "assisted service: {scheme}://{addr}{} (database {db_url}), its page {scheme}://{addr}/; Ctrl-C stops it",
        okd_assisted_api::rest::BASE_PATH
    );
    serve(state, listener, async {
        let sig = okd_listen::shutdown_signal().await;
        tracing::info!("{sig}: stopping the assisted service");
    })
    .await;
    Ok(())
}

/// Serves the API on `listener` and runs the monitor until `shutdown`
/// completes; then lets open requests finish (5 s at most), stops the
/// monitor and closes the database.
pub async fn serve(
    state: Shared,
    listener: okd_listen::Listener,
    shutdown: impl std::future::Future<Output = ()> + Send,
) {
    let (tx, rx) = tokio::sync::watch::channel(false);
    let mon = match start_monitor(state.clone(), rx.clone()) {
        Ok(t) => Ok(t),
        Err(e) => {
            tracing::warn!(error = %e, "no thread for the monitor: it runs on the request workers");
            let mut rx = rx.clone();
            Err(tokio::spawn(run_monitor(
                state.clone(),
                state.db.clone(),
                async move {
                    let _ = rx.wait_for(|v| *v).await;
                },
            )))
        }
    };
    let router = api::routes(state.clone())
        .merge(ui::routes(state.clone()))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            guard::request,
        ));
    let tls = state.opts.tls.as_ref().map(|t| t.server.clone());
    okd_listen::serve_router(listener, router, tls, shutdown).await;
    let _ = tx.send(true);
    match mon {
        Ok(thread) => {
            let _ = tokio::task::spawn_blocking(move || thread.join()).await;
        }
        Err(task) => {
            let _ = task.await;
        }
    }
    state.db.close().await;
}

#[cfg(test)]
mod tests {
    #[test]
    fn passwords_stay_out_of_logs() {
        assert_eq!(
            super::redact_url("postgres://admin:s3cret@db:5432/assisted"),
            "postgres://admin:***@db:5432/assisted"
        );
        assert_eq!(
            super::redact_url("sqlite:///var/lib/a.db?mode=rwc"),
            "sqlite:///var/lib/a.db?mode=rwc"
        );
    }
}
