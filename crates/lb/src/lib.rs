//! TCP load balancer for a user-provisioned install: what the install guides'
//! HAProxy does (`mode tcp`, `balance source`, `check inter 2s rise 2 fall 3`,
//! `option httpchk GET /readyz` with `check-ssl verify none`), in-process.
//!
//! * [`frontends_for`] turns an [`okd_hosts::Inventory`] into the four
//!   frontends of the guides: `api` (6443), `machine-config` (22623),
//!   `ingress-http` (80) and `ingress-https` (443).
//! * [`LoadBalancer::start`] binds every frontend, proxies TCP both ways,
//!   health-checks every backend and counts connections and bytes.
//! * [`LoadBalancer::remove_backend`] takes e.g. the bootstrap out of every
//!   frontend; [`LoadBalancer::snapshot`] and [`LoadBalancer::prometheus`]
//!   report state for the status page.
//!
//! Backends start UP (as in HAProxy) and go DOWN after `fall` consecutive
//! failed checks, UP again after `rise` consecutive good ones; each change is
//! logged with `tracing`.

use std::fmt::Write as _;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use okd_hosts::{Inventory, Role};
use serde::Serialize;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// How long a connection to a backend may take before the next backend is
/// tried (HAProxy `timeout connect 5s` of the guides).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Buffer size of each direction of a proxied connection, in bytes.
pub const COPY_BUFFER: usize = 64 * 1024;

/// Errors starting the load balancer.
#[derive(Debug, thiserror::Error)]
pub enum LbError {
    /// A frontend could not bind its address; e.g.
    /// `frontend machine-config: cannot listen on 127.0.0.1:22623: address already in use`.
    #[error("frontend {frontend}: cannot listen on {addr}: {}", io_reason(.source))]
    Bind {
        /// Frontend name.
        frontend: String,
        /// The address (with port) it tried to bind.
        addr: SocketAddr,
        /// The OS error.
        source: std::io::Error,
    },
    /// The configuration is unusable (duplicate frontend or backend names, a
    /// frontend without name); the message names the frontend.
    #[error("invalid load balancer configuration: {0}")]
    Config(String),
}

fn io_reason(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::AddrInUse => "address already in use".to_string(),
        std::io::ErrorKind::PermissionDenied => "permission denied".to_string(),
        std::io::ErrorKind::AddrNotAvailable => "address not available".to_string(),
        _ => e.to_string(),
    }
}

/// One server of a frontend (HAProxy `server <name> <addr>`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Backend {
    /// Name, unique within the frontend (the host name, e.g. `master`).
    pub name: String,
    /// Address and port connections and checks go to.
    pub addr: SocketAddr,
}

impl Backend {
    /// A backend named `name` at `addr`.
    pub fn new(name: impl Into<String>, addr: SocketAddr) -> Backend {
        Backend {
            name: name.into(),
            addr,
        }
    }
}

/// What a health check does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "type")]
pub enum CheckKind {
    /// No check: the backend is always UP.
    None,
    /// A TCP connect must succeed (HAProxy plain `check`).
    Tcp,
    /// `GET <path>` over TLS without certificate verification (HAProxy
    /// `option httpchk GET <path>` + `check-ssl verify none`); the status must
    /// be 2xx or 3xx.
    HttpsGet {
        /// Request path, e.g. `/readyz`.
        path: String,
    },
    /// `GET <path>` over plain HTTP; the status must be 2xx or 3xx.
    HttpGet {
        /// Request path, e.g. `/healthz`.
        path: String,
    },
}

/// A health check with HAProxy's timing (`inter 2s rise 2 fall 3`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HealthCheck {
    /// What is checked.
    pub kind: CheckKind,
    /// Time between the starts of two checks (HAProxy `inter`, default 2 s).
    pub interval: Duration,
    /// Limit for one check including connect and TLS (default 2 s).
    pub timeout: Duration,
    /// Consecutive good checks that bring a DOWN backend UP (default 2).
    pub rise: u32,
    /// Consecutive failed checks that take an UP backend DOWN (default 3).
    pub fall: u32,
}

impl HealthCheck {
    fn with_kind(kind: CheckKind) -> HealthCheck {
        HealthCheck {
            kind,
            interval: Duration::from_secs(2),
            timeout: Duration::from_secs(2),
            rise: 2,
            fall: 3,
        }
    }

    /// No check; backends are always UP.
    pub fn none() -> HealthCheck {
        HealthCheck::with_kind(CheckKind::None)
    }

    /// TCP connect check with default timing.
    pub fn tcp() -> HealthCheck {
        HealthCheck::with_kind(CheckKind::Tcp)
    }

    /// `GET path` over TLS (no verification) with default timing.
    pub fn https_get(path: impl Into<String>) -> HealthCheck {
        HealthCheck::with_kind(CheckKind::HttpsGet { path: path.into() })
    }

    /// `GET path` over plain HTTP with default timing.
    pub fn http_get(path: impl Into<String>) -> HealthCheck {
        HealthCheck::with_kind(CheckKind::HttpGet { path: path.into() })
    }

    /// The same check every `interval`, each limited to `timeout` (at most `interval`).
    pub fn every(mut self, interval: Duration, timeout: Duration) -> HealthCheck {
        self.interval = interval;
        self.timeout = timeout.min(interval);
        self
    }

    /// The same check with other `rise`/`fall` counts (each at least 1).
    pub fn rise_fall(mut self, rise: u32, fall: u32) -> HealthCheck {
        self.rise = rise.max(1);
        self.fall = fall.max(1);
        self
    }
}

impl Default for HealthCheck {
    fn default() -> Self {
        HealthCheck::tcp()
    }
}

/// How a frontend picks a backend among the healthy ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Balance {
    /// Hash of the client IP modulo the number of healthy backends (HAProxy
    /// `balance source`): a client sticks to one backend while the healthy set
    /// is unchanged.
    #[default]
    Source,
    /// Each new connection goes to the next healthy backend.
    RoundRobin,
}

/// A listening address and the backends behind it (HAProxy `frontend` +
/// `backend`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Frontend {
    /// Name, unique among frontends (`api`, `machine-config`, …).
    pub name: String,
    /// Listen address; port 0 binds an ephemeral port (see [`LoadBalancer::local_addr`]).
    pub bind: SocketAddr,
    /// Servers in order; the order breaks ties and is the fallback order.
    pub backends: Vec<Backend>,
    /// The health check run against every backend.
    pub check: HealthCheck,
    /// The balancing algorithm.
    pub balance: Balance,
}

impl Frontend {
    /// A frontend with a TCP check and source balancing.
    pub fn new(name: impl Into<String>, bind: SocketAddr, backends: Vec<Backend>) -> Frontend {
        Frontend {
            name: name.into(),
            bind,
            backends,
            check: HealthCheck::tcp(),
            balance: Balance::Source,
        }
    }
}

/// The frontends of the install guides for `inv`, bound on `inv.listen`:
///
/// * `api` on `ports.api` → bootstrap and masters on 6443, `GET /readyz` over TLS;
/// * `machine-config` on `ports.machine_config` → bootstrap and masters on
///   22623, plus `mcs_backend` (named `machine-config-server`, our in-process
///   machine-config server) when given, `GET /healthz` over TLS;
/// * `ingress-http` on `ports.ingress_http` → workers on 80 (masters when
///   there are no workers), TCP check;
/// * `ingress-https` on `ports.ingress_https` → the same hosts on 443, TCP check.
///
/// All use [`Balance::Source`] and HAProxy's default timing.
pub fn frontends_for(inv: &Inventory, mcs_backend: Option<SocketAddr>) -> Vec<Frontend> {
    let control: Vec<_> = inv
        .nodes
        .iter()
        .filter(|n| matches!(n.role, Role::Bootstrap | Role::Master))
        .collect();
    let mut ingress: Vec<_> = inv.role(Role::Worker).collect();
    if ingress.is_empty() {
        ingress = inv.role(Role::Master).collect();
    }
    let to = |nodes: &[&okd_hosts::Node], port: u16| -> Vec<Backend> {
        nodes
            .iter()
            .map(|n| Backend::new(n.hostname.clone(), SocketAddr::new(n.address, port)))
            .collect()
    };
    let bind = |port: u16| SocketAddr::new(inv.listen, port);
    let mut mcs = to(&control, 22623);
    if let Some(addr) = mcs_backend {
        mcs.push(Backend::new("machine-config-server", addr));
    }
    vec![
        Frontend {
            name: "api".into(),
            bind: bind(inv.ports.api),
            backends: to(&control, 6443),
            check: HealthCheck::https_get("/readyz"),
            balance: Balance::Source,
        },
        Frontend {
            name: "machine-config".into(),
            bind: bind(inv.ports.machine_config),
            backends: mcs,
            check: HealthCheck::https_get("/healthz"),
            balance: Balance::Source,
        },
        Frontend {
            name: "ingress-http".into(),
            bind: bind(inv.ports.ingress_http),
            backends: to(&ingress, 80),
            check: HealthCheck::tcp(),
            balance: Balance::Source,
        },
        Frontend {
            name: "ingress-https".into(),
            bind: bind(inv.ports.ingress_https),
            backends: to(&ingress, 443),
            check: HealthCheck::tcp(),
            balance: Balance::Source,
        },
    ]
}

/// The outcome of one health check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckResult {
    /// Whether the check passed.
    pub ok: bool,
    /// `HTTP 200`, `connected`, or the failure (`connection refused`, `HTTP 500`, `timeout after 2s`).
    pub detail: String,
    /// When the check finished, milliseconds since the Unix epoch.
    pub at_unix_ms: u64,
    /// How long it took, in milliseconds.
    pub duration_ms: u64,
}

/// Counters and state of one backend, as [`LoadBalancer::snapshot`] reports them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BackendStats {
    /// Backend name.
    pub name: String,
    /// Backend address.
    pub addr: SocketAddr,
    /// Whether it currently receives connections.
    pub up: bool,
    /// The last health check, `None` before the first one (or with [`CheckKind::None`]).
    pub last_check: Option<CheckResult>,
    /// Connections proxied right now.
    pub active_connections: u64,
    /// Connections proxied since start.
    pub connections_total: u64,
    /// Connection attempts to this backend that failed (another backend was then tried).
    pub connect_failures: u64,
    /// Bytes from clients to this backend.
    pub bytes_in: u64,
    /// Bytes from this backend to clients.
    pub bytes_out: u64,
}

/// Counters of one frontend.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FrontendStats {
    /// Frontend name.
    pub name: String,
    /// The bound address (the real port when 0 was configured).
    pub bind: SocketAddr,
    /// The balancing algorithm.
    pub balance: Balance,
    /// The health check.
    pub check: HealthCheck,
    /// Connections accepted since start.
    pub connections_total: u64,
    /// Connections open right now.
    pub active_connections: u64,
    /// Connections closed because no backend was UP or reachable.
    pub rejected_total: u64,
    /// The current backends (removed ones are gone).
    pub backends: Vec<BackendStats>,
}

/// A point-in-time view of every frontend (serialised as the status JSON).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Stats {
    /// Frontends in configuration order.
    pub frontends: Vec<FrontendStats>,
}

#[derive(Debug, Default)]
struct Counters {
    active: AtomicU64,
    total: AtomicU64,
    connect_failures: AtomicU64,
    bytes_in: AtomicU64,
    bytes_out: AtomicU64,
}

#[derive(Debug)]
struct BackendState {
    name: String,
    addr: SocketAddr,
    frontend: String,
    up: AtomicBool,
    removed: AtomicBool,
    last_check: Mutex<Option<CheckResult>>,
    counters: Counters,
}

/// Told about every proxied connection, e.g. by a status page that wants
/// to attribute requests arriving at a backend on this host to the
/// original client.
pub trait ConnObserver: Send + Sync {
    /// `client` connected to `frontend` and was proxied to `backend` over a
    /// connection whose local (balancer-side) address is `upstream_local`.
    /// Called before any byte of the client is forwarded.
    fn proxied(
        &self,
        frontend: &str,
        backend: &str,
        client: SocketAddr,
        upstream_local: SocketAddr,
    );
}

#[derive(Clone, Default)]
struct Observer(Option<Arc<dyn ConnObserver>>);

impl std::fmt::Debug for Observer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Observer(Some)"
        } else {
            "Observer(None)"
        })
    }
}

#[derive(Debug)]
struct FrontendState {
    observer: Observer,
    name: String,
    bind: SocketAddr,
    check: HealthCheck,
    balance: Balance,
    backends: RwLock<Vec<Arc<BackendState>>>,
    rr: AtomicUsize,
    total: AtomicU64,
    active: AtomicU64,
    rejected: AtomicU64,
}

#[derive(Debug)]
struct Inner {
    frontends: Vec<Arc<FrontendState>>,
    shutdown: watch::Sender<bool>,
    tasks: Mutex<Vec<JoinHandle<()>>>,
    tls: Arc<rustls::ClientConfig>,
}

/// A running load balancer. Dropping it stops every listener, health check
/// and proxied connection (as [`LoadBalancer::shutdown`] does, without waiting).
#[derive(Debug)]
pub struct LoadBalancer {
    inner: Arc<Inner>,
}

impl LoadBalancer {
    /// Binds every frontend, then starts accepting and health-checking.
    /// Must be called inside a tokio runtime.
    ///
    /// # Errors
    /// [`LbError::Bind`] naming the first frontend whose address cannot be
    /// bound (nothing is left listening then); [`LbError::Config`] for
    /// duplicate frontend names or duplicate backend names in one frontend.
    pub async fn start(frontends: Vec<Frontend>) -> Result<LoadBalancer, LbError> {
        LoadBalancer::start_observed(frontends, None).await
    }

    /// [`LoadBalancer::start`] with a [`ConnObserver`] told about every
    /// proxied connection.
    ///
    /// # Errors
    /// As [`LoadBalancer::start`].
    pub async fn start_observed(
        frontends: Vec<Frontend>,
        observer: Option<Arc<dyn ConnObserver>>,
    ) -> Result<LoadBalancer, LbError> {
        validate(&frontends)?;
        let mut listeners = Vec::with_capacity(frontends.len());
        for f in &frontends {
            let l = TcpListener::bind(f.bind)
                .await
                .map_err(|source| LbError::Bind {
                    frontend: f.name.clone(),
                    addr: f.bind,
                    source,
                })?;
            listeners.push(l);
        }
        let (shutdown, _) = watch::channel(false);
        let mut states = Vec::new();
        for (f, l) in frontends.into_iter().zip(&listeners) {
            let bind = l.local_addr().unwrap_or(f.bind);
            let backends = f.backends.iter().map(|b| new_backend(&f.name, b)).collect();
            states.push(Arc::new(FrontendState {
                observer: Observer(observer.clone()),
                name: f.name,
                bind,
                check: f.check,
                balance: f.balance,
                backends: RwLock::new(backends),
                rr: AtomicUsize::new(0),
                total: AtomicU64::new(0),
                active: AtomicU64::new(0),
                rejected: AtomicU64::new(0),
            }));
        }
        let inner = Arc::new(Inner {
            frontends: states,
            shutdown,
            tasks: Mutex::new(Vec::new()),
            tls: Arc::new(insecure_tls_config()),
        });
        let mut tasks = Vec::new();
        for (fe, l) in inner.frontends.iter().zip(listeners) {
            tracing::info!(frontend = %fe.name, bind = %fe.bind, "load balancer frontend listening");
            tasks.push(tokio::spawn(accept_loop(
                fe.clone(),
                l,
                inner.shutdown.subscribe(),
            )));
            for be in read(&fe.backends).iter() {
                if fe.check.kind != CheckKind::None {
                    tasks.push(tokio::spawn(check_loop(
                        fe.check.clone(),
                        be.clone(),
                        inner.tls.clone(),
                        inner.shutdown.subscribe(),
                    )));
                }
            }
        }
        *lock(&inner.tasks) = tasks;
        Ok(LoadBalancer { inner })
    }

    /// The bound address of frontend `name` (the real port when 0 was
    /// configured), `None` for an unknown name.
    pub fn local_addr(&self, frontend: &str) -> Option<SocketAddr> {
        self.inner
            .frontends
            .iter()
            .find(|f| f.name == frontend)
            .map(|f| f.bind)
    }

    /// Removes backend `name` from every frontend (its health checks stop;
    /// connections already open stay open) and returns the names of the
    /// frontends it left, in configuration order; empty when no frontend had it.
    pub fn remove_backend(&self, name: &str) -> Vec<String> {
        let mut left = Vec::new();
        for fe in &self.inner.frontends {
            let mut bes = write(&fe.backends);
            if let Some(i) = bes.iter().position(|b| b.name == name) {
                let be = bes.remove(i);
                be.removed.store(true, Ordering::SeqCst);
                left.push(fe.name.clone());
            }
        }
        if left.is_empty() {
            tracing::warn!("backend {name} is in no frontend; nothing removed");
        } else {
            tracing::warn!("backend {name} removed from frontends {}", left.join(", "));
        }
        left
    }

    /// Whether backend `backend` of frontend `frontend` is UP; `None` when
    /// there is no such backend.
    pub fn is_up(&self, frontend: &str, backend: &str) -> Option<bool> {
        let fe = self.inner.frontends.iter().find(|f| f.name == frontend)?;
        let bes = read(&fe.backends);
        let be = bes.iter().find(|b| b.name == backend)?;
        Some(be.up.load(Ordering::SeqCst))
    }

    /// Counters and health of every frontend and backend.
    pub fn snapshot(&self) -> Stats {
        let frontends = self
            .inner
            .frontends
            .iter()
            .map(|fe| FrontendStats {
                name: fe.name.clone(),
                bind: fe.bind,
                balance: fe.balance,
                check: fe.check.clone(),
                connections_total: fe.total.load(Ordering::Relaxed),
                active_connections: fe.active.load(Ordering::Relaxed),
                rejected_total: fe.rejected.load(Ordering::Relaxed),
                backends: read(&fe.backends)
                    .iter()
                    .map(|b| BackendStats {
                        name: b.name.clone(),
                        addr: b.addr,
                        up: b.up.load(Ordering::Relaxed),
                        last_check: lock(&b.last_check).clone(),
                        active_connections: b.counters.active.load(Ordering::Relaxed),
                        connections_total: b.counters.total.load(Ordering::Relaxed),
                        connect_failures: b.counters.connect_failures.load(Ordering::Relaxed),
                        bytes_in: b.counters.bytes_in.load(Ordering::Relaxed),
                        bytes_out: b.counters.bytes_out.load(Ordering::Relaxed),
                    })
                    .collect(),
            })
            .collect();
        Stats { frontends }
    }

    /// The snapshot in the Prometheus text exposition format (version 0.0.4):
    /// `okd_lb_backend_up` (gauge, 0/1), `okd_lb_active_connections` (gauge),
    /// `okd_lb_connections_total` (counter), `okd_lb_bytes_total` (counter,
    /// `direction="in"` client→backend, `"out"` backend→client), each labelled
    /// `frontend` and `backend`; plus `okd_lb_frontend_connections_total` and
    /// `okd_lb_frontend_rejected_total` labelled `frontend`.
    pub fn prometheus(&self) -> String {
        render_prometheus(&self.snapshot())
    }

    /// Stops accepting, checking and proxying, and waits until every listener
    /// is closed (its port can be bound again when this returns).
    pub async fn shutdown(self) {
        self.inner.shutdown.send_replace(true);
        let tasks = std::mem::take(&mut *lock(&self.inner.tasks));
        for t in tasks {
            let _ = t.await;
        }
    }

    /// A future that completes when `shutdown` has been requested (by
    /// [`LoadBalancer::shutdown`] or by dropping the load balancer).
    pub fn closed(&self) -> impl Future<Output = ()> + Send + 'static {
        let mut rx = self.inner.shutdown.subscribe();
        async move {
            let _ = rx.wait_for(|v| *v).await;
        }
    }
}

impl Drop for LoadBalancer {
    fn drop(&mut self) {
        self.inner.shutdown.send_replace(true);
    }
}

/// Per-backend sample extractor: `(direction label, value)` pairs.
type Samples<'a> = &'a dyn Fn(&BackendStats) -> Vec<(Option<&'static str>, u64)>;

/// Renders a [`Stats`] in the Prometheus text format (see [`LoadBalancer::prometheus`]).
pub fn render_prometheus(stats: &Stats) -> String {
    let mut out = String::new();
    let be_metric = |out: &mut String, name: &str, kind: &str, help: &str, f: Samples<'_>| {
        let _ = writeln!(out, "# HELP {name} {help}");
        let _ = writeln!(out, "# TYPE {name} {kind}");
        for fe in &stats.frontends {
            for be in &fe.backends {
                for (dir, v) in f(be) {
                    let extra = dir
                        .map(|d| format!(",direction=\"{d}\""))
                        .unwrap_or_default();
                    let _ = writeln!(
                        out,
                        "{name}{{frontend=\"{}\",backend=\"{}\"{extra}}} {v}",
                        escape(&fe.name),
                        escape(&be.name)
                    );
                }
            }
        }
    };
    be_metric(
        &mut out,
        "okd_lb_backend_up",
        "gauge",
        "Whether the backend receives connections (1) or is DOWN (0).",
        &|b| vec![(None, u64::from(b.up))],
    );
    be_metric(
        &mut out,
        "okd_lb_active_connections",
        "gauge",
        "Connections proxied to the backend right now.",
        &|b| vec![(None, b.active_connections)],
    );
    be_metric(
        &mut out,
        "okd_lb_connections_total",
        "counter",
        "Connections proxied to the backend since start.",
        &|b| vec![(None, b.connections_total)],
    );
    be_metric(
        &mut out,
        "okd_lb_bytes_total",
        "counter",
        "Bytes proxied; direction in is client to backend, out is backend to client.",
        &|b| vec![(Some("in"), b.bytes_in), (Some("out"), b.bytes_out)],
    );
    for (name, help, f) in [
        (
            "okd_lb_frontend_connections_total",
            "Connections accepted by the frontend since start.",
            (|f: &FrontendStats| f.connections_total) as fn(&FrontendStats) -> u64,
        ),
        (
            "okd_lb_frontend_rejected_total",
            "Connections closed because no backend was up or reachable.",
            |f: &FrontendStats| f.rejected_total,
        ),
    ] {
        let _ = writeln!(out, "# HELP {name} {help}");
        let _ = writeln!(out, "# TYPE {name} counter");
        for fe in &stats.frontends {
            let _ = writeln!(out, "{name}{{frontend=\"{}\"}} {}", escape(&fe.name), f(fe));
        }
    }
    out
}

fn escape(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn validate(frontends: &[Frontend]) -> Result<(), LbError> {
    let mut names = std::collections::BTreeSet::new();
    for f in frontends {
        if f.name.is_empty() {
            return Err(LbError::Config(format!(
                "frontend on {} has no name",
                f.bind
            )));
        }
        if !names.insert(f.name.as_str()) {
            return Err(LbError::Config(format!("duplicate frontend {}", f.name)));
        }
        let mut bes = std::collections::BTreeSet::new();
        for b in &f.backends {
            if !bes.insert(b.name.as_str()) {
                return Err(LbError::Config(format!(
                    "frontend {}: duplicate backend {}",
                    f.name, b.name
                )));
            }
        }
    }
    Ok(())
}

fn new_backend(frontend: &str, b: &Backend) -> Arc<BackendState> {
    Arc::new(BackendState {
        name: b.name.clone(),
        addr: b.addr,
        frontend: frontend.to_string(),
        up: AtomicBool::new(true),
        removed: AtomicBool::new(false),
        last_check: Mutex::new(None),
        counters: Counters::default(),
    })
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn read<T>(m: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    m.read().unwrap_or_else(|e| e.into_inner())
}

fn write<T>(m: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    m.write().unwrap_or_else(|e| e.into_inner())
}

/// FNV-1a over the address bytes: stable across runs and Rust versions.
fn source_hash(ip: std::net::IpAddr) -> u64 {
    let bytes: Vec<u8> = match ip {
        std::net::IpAddr::V4(a) => a.octets().to_vec(),
        std::net::IpAddr::V6(a) => match a.to_ipv4_mapped() {
            Some(v4) => v4.octets().to_vec(),
            None => a.octets().to_vec(),
        },
    };
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// The healthy backends in the order they should be tried for `client`.
fn candidates(fe: &FrontendState, client: SocketAddr) -> Vec<Arc<BackendState>> {
    let healthy: Vec<Arc<BackendState>> = read(&fe.backends)
        .iter()
        .filter(|b| b.up.load(Ordering::SeqCst))
        .cloned()
        .collect();
    if healthy.is_empty() {
        return healthy;
    }
    let n = healthy.len();
    let start = match fe.balance {
        Balance::Source => (source_hash(client.ip()) % n as u64) as usize,
        Balance::RoundRobin => fe.rr.fetch_add(1, Ordering::Relaxed) % n,
    };
    (0..n).map(|i| healthy[(start + i) % n].clone()).collect()
}

async fn accept_loop(fe: Arc<FrontendState>, l: TcpListener, mut stop: watch::Receiver<bool>) {
    let child = stop.clone();
    loop {
        tokio::select! {
            _ = stopped(&mut stop) => break,
            r = l.accept() => match r {
                Ok((client, peer)) => {
                    fe.total.fetch_add(1, Ordering::Relaxed);
                    tokio::spawn(proxy(fe.clone(), client, peer, child.clone()));
                }
                Err(e) => {
                    // EMFILE and friends: back off instead of spinning.
                    tracing::warn!(frontend = %fe.name, "accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
    }
    tracing::info!(frontend = %fe.name, "frontend stopped");
}

/// Completes once shutdown was requested (or the sender is gone).
async fn stopped(rx: &mut watch::Receiver<bool>) {
    let _ = rx.wait_for(|v| *v).await;
}

struct ActiveGuard<'a>(&'a AtomicU64);

impl Drop for ActiveGuard<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

async fn proxy(
    fe: Arc<FrontendState>,
    client: TcpStream,
    peer: SocketAddr,
    mut stop: watch::Receiver<bool>,
) {
    fe.active.fetch_add(1, Ordering::Relaxed);
    let _fe_active = ActiveGuard(&fe.active);
    let mut chosen = None;
    for be in candidates(&fe, peer) {
        match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(be.addr)).await {
            Ok(Ok(s)) => {
                chosen = Some((be, s));
                break;
            }
            Ok(Err(e)) => {
                be.counters.connect_failures.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(frontend = %fe.name, backend = %be.name, "connect to {} failed: {e}", be.addr);
            }
            Err(_) => {
                be.counters.connect_failures.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(frontend = %fe.name, backend = %be.name, "connect to {} timed out", be.addr);
            }
        }
    }
    let Some((be, server)) = chosen else {
        fe.rejected.fetch_add(1, Ordering::Relaxed);
        tracing::warn!(frontend = %fe.name, client = %peer, "no backend available; closing connection");
        return;
    };
    if let (Some(obs), Ok(local)) = (&fe.observer.0, server.local_addr()) {
        obs.proxied(&fe.name, &be.name, peer, local);
    }
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    be.counters.total.fetch_add(1, Ordering::Relaxed);
    be.counters.active.fetch_add(1, Ordering::Relaxed);
    let _be_active = ActiveGuard(&be.counters.active);
    let mut client = Counted {
        inner: client,
        read: &be.counters.bytes_in,
        written: &be.counters.bytes_out,
    };
    let mut server = server;
    tokio::select! {
        _ = stopped(&mut stop) => {}
        r = tokio::io::copy_bidirectional_with_sizes(&mut client, &mut server, COPY_BUFFER, COPY_BUFFER) => {
            if let Err(e) = r {
                tracing::debug!(frontend = %fe.name, backend = %be.name, client = %peer, "connection ended: {e}");
            }
        }
    }
}

/// A stream that adds the bytes read and written to two counters as they pass.
struct Counted<'a, S> {
    inner: S,
    read: &'a AtomicU64,
    written: &'a AtomicU64,
}

impl<S: AsyncRead + Unpin> AsyncRead for Counted<'_, S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        let n = buf.filled().len() - before;
        if n > 0 {
            self.read.fetch_add(n as u64, Ordering::Relaxed);
        }
        r
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Counted<'_, S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = &r {
            self.written.fetch_add(*n as u64, Ordering::Relaxed);
        }
        r
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

async fn check_loop(
    check: HealthCheck,
    be: Arc<BackendState>,
    tls: Arc<rustls::ClientConfig>,
    mut stop: watch::Receiver<bool>,
) {
    let successes = AtomicU32::new(0);
    let failures = AtomicU32::new(0);
    let mut tick = tokio::time::interval(check.interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = stopped(&mut stop) => break,
            _ = tick.tick() => {}
        }
        if be.removed.load(Ordering::SeqCst) {
            break;
        }
        let started = Instant::now();
        let outcome = tokio::select! {
            _ = stopped(&mut stop) => break,
            r = tokio::time::timeout(check.timeout, run_check(&check.kind, be.addr, &tls)) => match r {
                Ok(r) => r,
                Err(_) => Err(format!("timeout after {:?}", check.timeout)),
            },
        };
        let result = CheckResult {
            ok: outcome.is_ok(),
            detail: match &outcome {
                Ok(d) | Err(d) => d.clone(),
            },
            at_unix_ms: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_millis() as u64)
                .unwrap_or(0),
            duration_ms: started.elapsed().as_millis() as u64,
        };
        if be.removed.load(Ordering::SeqCst) {
            break;
        }
        let up = be.up.load(Ordering::SeqCst);
        if result.ok {
            failures.store(0, Ordering::Relaxed);
            let s = successes.fetch_add(1, Ordering::Relaxed) + 1;
            if !up && s >= check.rise {
                be.up.store(true, Ordering::SeqCst);
                tracing::warn!(
                    "backend {} ({}) of frontend {} is UP: {}",
                    be.name,
                    be.addr,
                    be.frontend,
                    result.detail
                );
            }
        } else {
            successes.store(0, Ordering::Relaxed);
            let f = failures.fetch_add(1, Ordering::Relaxed) + 1;
            if up && f >= check.fall {
                be.up.store(false, Ordering::SeqCst);
                tracing::warn!(
                    "backend {} ({}) of frontend {} is DOWN: {}",
                    be.name,
                    be.addr,
                    be.frontend,
                    result.detail
                );
            }
        }
        *lock(&be.last_check) = Some(result);
    }
}

/// Runs one check; `Ok(detail)` when it passed, `Err(reason)` otherwise.
async fn run_check(
    kind: &CheckKind,
    addr: SocketAddr,
    tls: &Arc<rustls::ClientConfig>,
) -> Result<String, String> {
    let tcp = match kind {
        CheckKind::None => return Ok("no check".into()),
        _ => TcpStream::connect(addr).await.map_err(|e| io_reason(&e))?,
    };
    match kind {
        CheckKind::None | CheckKind::Tcp => Ok("connected".into()),
        CheckKind::HttpGet { path } => http_get(tcp, addr, path).await,
        CheckKind::HttpsGet { path } => {
            let connector = tokio_rustls::TlsConnector::from(tls.clone());
            let name = rustls_pki_types::ServerName::IpAddress(addr.ip().into());
            let stream = connector
                .connect(name, tcp)
                .await
                .map_err(|e| format!("TLS handshake failed: {e}"))?;
            http_get(stream, addr, path).await
        }
    }
}

/// Sends `GET path HTTP/1.0` and judges the status line (2xx/3xx pass).
async fn http_get<S: AsyncRead + AsyncWrite + Unpin>(
    mut s: S,
    addr: SocketAddr,
    path: &str,
) -> Result<String, String> {
    let req = format!(
        "GET {path} HTTP/1.0\r\nHost: {addr}\r\nUser-Agent: okd-lb-check\r\nConnection: close\r\n\r\n"
    );
    s.write_all(req.as_bytes())
        .await
        .map_err(|e| format!("sending check request: {}", io_reason(&e)))?;
    s.flush()
        .await
        .map_err(|e| format!("sending check request: {}", io_reason(&e)))?;
    let mut buf = Vec::with_capacity(256);
    let mut chunk = [0u8; 256];
    while !buf.windows(2).any(|w| w == b"\r\n") && buf.len() < 4096 {
        let n = s
            .read(&mut chunk)
            .await
            .map_err(|e| format!("reading check response: {}", io_reason(&e)))?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let line = String::from_utf8_lossy(&buf);
    let line = line.lines().next().unwrap_or("");
    let mut parts = line.split_whitespace();
    let (Some(version), Some(code)) = (parts.next(), parts.next()) else {
        return Err(format!("bad HTTP response {line:?}"));
    };
    if !version.starts_with("HTTP/") {
        return Err(format!("bad HTTP response {line:?}"));
    }
    let code: u16 = code
        .parse()
        .map_err(|_| format!("bad HTTP status in {line:?}"))?;
    if (200..400).contains(&code) {
        Ok(format!("HTTP {code}"))
    } else {
        Err(format!("HTTP {code}"))
    }
}

/// Accepts any server certificate (HAProxy `check-ssl verify none`); the
/// handshake signature is still checked against the presented key.
#[derive(Debug)]
struct NoVerify(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for NoVerify {
    fn verify_server_cert(
        &self,
        _end_entity: &rustls_pki_types::CertificateDer<'_>,
        _intermediates: &[rustls_pki_types::CertificateDer<'_>],
        _server_name: &rustls_pki_types::ServerName<'_>,
        _ocsp_response: &[u8],
        _now: rustls_pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls_pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls_pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

fn insecure_tls_config() -> rustls::ClientConfig {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .expect("aws-lc-rs supports TLS 1.2 and 1.3");
    builder
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(NoVerify(provider)))
        .with_no_client_auth()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_hash_is_stable() {
        let a: std::net::IpAddr = "192.168.120.50".parse().unwrap();
        assert_eq!(source_hash(a), source_hash(a));
        let mapped: std::net::IpAddr = "::ffff:192.168.120.50".parse().unwrap();
        assert_eq!(source_hash(a), source_hash(mapped));
    }

    #[test]
    fn bind_error_text() {
        let e = LbError::Bind {
            frontend: "machine-config".into(),
            addr: "127.0.0.1:22623".parse().unwrap(),
            source: std::io::Error::from(std::io::ErrorKind::AddrInUse),
        };
        assert_eq!(
            e.to_string(),
            "frontend machine-config: cannot listen on 127.0.0.1:22623: address already in use"
        );
    }
}
