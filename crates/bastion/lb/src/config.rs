//! The load balancer's configuration: frontends, backends, health checks,
//! balancing, and [`frontends_for`] (the install guides' four frontends).

use std::net::{IpAddr, SocketAddr};

use okd_hosts::Inventory;
use serde::Serialize;

use crate::{Balance, HealthCheck, LbError, Probe, Service};

/// One server of a frontend (HAProxy `server <name> <addr>`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Backend {
    /// Name, unique within the frontend (the host name, e.g. `master`).
    pub name: String,
    /// Address and port connections and checks go to.
    pub addr: SocketAddr,
    /// Client addresses never proxied to this backend (an IPv4-mapped IPv6
    /// client matches its IPv4 address): the workers, for the bootstrap's
    /// machine-config server ([`Service::kept_away`]). A client whose only
    /// UP backends are kept from it is held: its connections are closed
    /// (and the observer told, [`crate::ConnObserver::held`]) until
    /// another backend is UP.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub not_for: Vec<IpAddr>,
}

impl Backend {
    /// A backend named `name` at `addr`, for every client.
    pub fn new(name: impl Into<String>, addr: SocketAddr) -> Backend {
        Backend {
            name: name.into(),
            addr,
            not_for: Vec::new(),
        }
    }
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

/// The backend name of `okd-install serve`'s own machine-config server in
/// the machine-config frontend ([`frontends_for`]).
pub const LOCAL_MCS_BACKEND: &str = "machine-config-server";

/// The frontends of the install guides for `inv`, bound on `inv.listen`,
/// one per [`Service`] with its members, ports, health check and limits
/// ([`Service::members`], [`Service::probe`], [`service_limits`]); the
/// machine-config frontend also gets `mcs_backend` (named
/// `machine-config-server`, our in-process machine-config server) when
/// given, and keeps the workers away from the bootstrap
/// ([`Backend::not_for`], [`Service::kept_away`]). All use [`Balance::Source`] and HAProxy's default timing.
pub fn frontends_for(inv: &Inventory, mcs_backend: Option<SocketAddr>) -> Vec<Frontend> {
    Service::ALL
        .iter()
        .map(|&svc| {
            let port = svc.backend_port();
            let mut backends: Vec<Backend> = svc
                .members(inv)
                .iter()
                .map(|n| Backend {
                    not_for: svc.kept_away(n, inv).iter().map(|c| c.address).collect(),
                    ..Backend::new(n.hostname.clone(), SocketAddr::new(n.address, port))
                })
                .collect();
            if let (true, Some(addr)) = (svc.includes_local_mcs(), mcs_backend) {
                backends.push(Backend::new(LOCAL_MCS_BACKEND, addr));
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
                limits: service_limits(svc),
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

/// The embedded balancer's connection limits for the frontend of `svc`. The
/// API and ingress carry long-lived watches and streams: 4 h idle (the
/// generated `haproxy.cfg`'s `timeout client`), 8192 connections, 512 per
/// client address. The machine-config server only answers short Ignition
/// fetches: 60 s idle, 1024 connections, 64 per address.
pub fn service_limits(svc: Service) -> okd_listen::Limits {
    match svc {
        Service::MachineConfig => okd_listen::Limits::default(),
        _ => okd_listen::Limits {
            max_connections: 8192,
            max_per_client: 512,
            idle: std::time::Duration::from_secs(4 * 3600),
            ..okd_listen::Limits::default()
        },
    }
}
