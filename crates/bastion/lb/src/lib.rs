//! TCP load balancer for a user-provisioned install: what the install guides'
//! HAProxy does (`mode tcp`, `balance source`, `check inter 2s rise 2 fall 3`,
//! `option httpchk GET /readyz` with `check-ssl verify none`), in-process.
//!
//! * [`frontends_for`] turns an [`okd_hosts::Inventory`] into the four
//!   frontends of the guides: `api` (6443), `machine-config` (22623),
//!   `ingress-http` (80) and `ingress-https` (443). Which hosts sit behind
//!   which frontend is [`Service::members`], the rule the generated
//!   `haproxy.cfg` follows too.
//! * Every frontend accepts through an [`okd_listen::Listener`] with its
//!   [`Frontend::limits`]: connection caps per frontend and per client
//!   address, and an idle timeout ([`service_limits`] for the guides'
//!   frontends).
//! * [`LoadBalancer::start`] binds every frontend, proxies TCP both ways,
//!   health-checks every backend and counts connections and bytes.
//! * [`LoadBalancer::remove_backend`] takes e.g. the bootstrap out of every
//!   frontend; [`LoadBalancer::snapshot`] and [`LoadBalancer::prometheus`]
//!   report state for the status page.
//!
//! A health-checked backend starts *not checked yet* (unlike HAProxy, which
//! starts its servers UP): it becomes UP on its first passed check and DOWN
//! on its first failed one; after that it goes DOWN after `fall`
//! consecutive failed checks and UP again after `rise` consecutive good
//! ones. Connections go to UP backends; to a not-checked one only while no
//! backend of the frontend is UP. Each change is logged with `tracing`;
//! connections closed for want of a backend are logged once when that
//! starts and once when it ends, not per connection. A backend without a
//! check ([`CheckKind::None`]) is always UP.
//!
//! Modules: `config` (frontends, checks; the membership rule is
//! [`okd_hosts::Service`]),
//! `proxy` (accept and copy), `health` (checks), `metrics` (stats,
//! Prometheus).

mod config;
mod health;
mod metrics;
mod proxy;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use tokio::sync::watch;
use tokio::task::JoinHandle;

pub use config::{Backend, Frontend, LOCAL_MCS_BACKEND, frontends_for, service_limits};
pub use metrics::render_prometheus;
/// The membership rule (which hosts sit behind which frontend), from okd-hosts.
pub use okd_hosts::{Probe, Service};
/// The per-frontend connection limits ([`Frontend::limits`]).
pub use okd_listen::Limits;
/// The snapshot and check types of `/status`, from okd-serve-api.
pub use okd_serve_api::lb::{
    BackendStats, Balance, CheckKind, CheckResult, FrontendStats, HealthCheck, NOT_CHECKED, Stats,
};

use config::validate;
use health::{check_loop, insecure_tls_config};
use proxy::accept_loop;

/// How long a connection to a backend may take before the next backend is
/// tried (HAProxy `timeout connect 5s` of the guides).
pub const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

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
    /// A frontend has an empty name.
    #[error("invalid load balancer configuration: frontend on {bind} has no name")]
    UnnamedFrontend {
        /// Its listen address.
        bind: SocketAddr,
    },
    /// Two frontends have the same name.
    #[error("invalid load balancer configuration: duplicate frontend {frontend}")]
    DuplicateFrontend {
        /// The name.
        frontend: String,
    },
    /// Two backends of one frontend have the same name.
    #[error(
        "invalid load balancer configuration: frontend {frontend}: duplicate backend {backend}"
    )]
    DuplicateBackend {
        /// The frontend.
        frontend: String,
        /// The backend name.
        backend: String,
    },
}

fn io_reason(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::AddrInUse => "address already in use".to_string(),
        std::io::ErrorKind::PermissionDenied => "permission denied".to_string(),
        std::io::ErrorKind::AddrNotAvailable => "address not available".to_string(),
        _ => e.to_string(),
    }
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
    /// Clients never sent here ([`Backend::not_for`], IPv4-mapped
    /// addresses unmapped).
    not_for: Vec<std::net::IpAddr>,
    frontend: String,
    up: AtomicBool,
    /// Whether a health check has finished (always true without a check).
    checked: AtomicBool,
    removed: AtomicBool,
    last_check: Mutex<Option<CheckResult>>,
    /// When `up` last changed (or the backend was added), ms since the epoch.
    since_unix_ms: std::sync::atomic::AtomicU64,
    /// When a health check last passed, ms since the epoch; 0 = never.
    last_ok_unix_ms: std::sync::atomic::AtomicU64,
    counters: Counters,
}

/// Milliseconds since the Unix epoch, now.
pub(crate) fn now_unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
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

    /// A proxied connection ended after `to_client` octets went from the
    /// backend to the client (not called when the balancer stops, or when
    /// the copy failed). Default: nothing.
    fn closed(&self, frontend: &str, backend: &str, client: SocketAddr, to_client: u64) {
        let _ = (frontend, backend, client, to_client);
    }

    /// `client`'s connection to `frontend` was closed because every UP
    /// backend is kept from it ([`Backend::not_for`]); `kept` names them.
    /// Called for every such connection. Default: nothing.
    fn held(&self, frontend: &str, client: SocketAddr, kept: &[String]) {
        let _ = (frontend, client, kept);
    }
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
    /// Whether the last connection was closed for want of a backend (the
    /// warning is logged when this turns true, not per connection).
    rejecting: AtomicBool,
    /// Connections closed since `rejecting` turned true.
    rejected_run: AtomicU64,
    /// Clients held back ([`Backend::not_for`]) whose hold was logged, so
    /// it is logged once per client until a backend takes it.
    held: Mutex<std::collections::HashSet<std::net::IpAddr>>,
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
            let l = okd_listen::Listener::bind(f.bind, f.limits)
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
            let checked = f.check.kind == CheckKind::None;
            let backends = f
                .backends
                .iter()
                .map(|b| new_backend(&f.name, b, checked))
                .collect();
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
                rejecting: AtomicBool::new(false),
                rejected_run: AtomicU64::new(0),
                held: Mutex::new(std::collections::HashSet::new()),
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

    /// Whether backend `backend` of frontend `frontend` is UP (false while
    /// it is not checked yet); `None` when there is no such backend.
    pub fn is_up(&self, frontend: &str, backend: &str) -> Option<bool> {
        let fe = self.inner.frontends.iter().find(|f| f.name == frontend)?;
        let bes = read(&fe.backends);
        let be = bes.iter().find(|b| b.name == backend)?;
        Some(be.up.load(Ordering::SeqCst))
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

/// A backend as it starts: UP when it has no check (`checked`), else not
/// checked yet (and not UP).
fn new_backend(frontend: &str, b: &Backend, checked: bool) -> Arc<BackendState> {
    Arc::new(BackendState {
        name: b.name.clone(),
        addr: b.addr,
        not_for: b.not_for.iter().map(|a| unmapped(*a)).collect(),
        frontend: frontend.to_string(),
        up: AtomicBool::new(checked),
        checked: AtomicBool::new(checked),
        removed: AtomicBool::new(false),
        last_check: Mutex::new(None),
        since_unix_ms: std::sync::atomic::AtomicU64::new(now_unix_ms()),
        last_ok_unix_ms: std::sync::atomic::AtomicU64::new(0),
        counters: Counters::default(),
    })
}

/// `ip` with an IPv4-mapped IPv6 address turned into its IPv4 address.
pub(crate) fn unmapped(ip: std::net::IpAddr) -> std::net::IpAddr {
    match ip {
        std::net::IpAddr::V6(a) => a.to_ipv4_mapped().map_or(ip, std::net::IpAddr::V4),
        v4 => v4,
    }
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

#[cfg(test)]
mod tests {
    use super::*;

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
