//! The load balancer's configuration: frontends, backends, health checks,
//! balancing, and [`frontends_for`] (the install guides' four frontends).

use std::net::SocketAddr;
use std::time::Duration;

use okd_hosts::Inventory;
use serde::Serialize;

use crate::LbError;
use crate::membership::{Probe, Service};

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
    /// Connection caps and idle timeout of the listener (raw TCP:
    /// `header_read` is unused). Not serialised.
    #[serde(skip)]
    pub limits: okd_listen::Limits,
}

impl Frontend {
    /// A frontend with a TCP check, source balancing and the default
    /// [`okd_listen::Limits`].
    pub fn new(name: impl Into<String>, bind: SocketAddr, backends: Vec<Backend>) -> Frontend {
        Frontend {
            name: name.into(),
            bind,
            backends,
            check: HealthCheck::tcp(),
            balance: Balance::Source,
            limits: okd_listen::Limits::default(),
        }
    }
}

/// The frontends of the install guides for `inv`, bound on `inv.listen`,
/// one per [`Service`] with its members, ports, health check and limits
/// ([`Service::members`], [`Service::probe`], [`Service::limits`]); the
/// machine-config frontend also gets `mcs_backend` (named
/// `machine-config-server`, our in-process machine-config server) when
/// given. All use [`Balance::Source`] and HAProxy's default timing.
pub fn frontends_for(inv: &Inventory, mcs_backend: Option<SocketAddr>) -> Vec<Frontend> {
    Service::ALL
        .iter()
        .map(|&svc| {
            let port = svc.backend_port();
            let mut backends: Vec<Backend> = svc
                .members(inv)
                .iter()
                .map(|n| Backend::new(n.hostname.clone(), SocketAddr::new(n.address, port)))
                .collect();
            if let (true, Some(addr)) = (svc.includes_local_mcs(), mcs_backend) {
                backends.push(Backend::new("machine-config-server", addr));
            }
            Frontend {
                name: svc.name().into(),
                bind: SocketAddr::new(inv.listen, svc.frontend_port(&inv.ports)),
                backends,
                check: match svc.probe() {
                    Probe::HttpsGet(path) => HealthCheck::https_get(path),
                    Probe::Tcp => HealthCheck::tcp(),
                },
                balance: Balance::Source,
                limits: svc.limits(),
            }
        })
        .collect()
}

pub(crate) fn validate(frontends: &[Frontend]) -> Result<(), LbError> {
    let mut names = std::collections::BTreeSet::new();
    for f in frontends {
        if f.name.is_empty() {
            return Err(LbError::UnnamedFrontend { bind: f.bind });
        }
        if !names.insert(f.name.as_str()) {
            return Err(LbError::DuplicateFrontend {
                frontend: f.name.clone(),
            });
        }
        let mut bes = std::collections::BTreeSet::new();
        for b in &f.backends {
            if !bes.insert(b.name.as_str()) {
                return Err(LbError::DuplicateBackend {
                    frontend: f.name.clone(),
                    backend: b.name.clone(),
                });
            }
        }
    }
    Ok(())
}
