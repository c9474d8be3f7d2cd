//! Which inventory hosts sit behind which frontend: the one rule the
//! embedded load balancer (`okd_lb::frontends_for`), the generated
//! `haproxy.cfg` (`okd_bastion::configs::haproxy_cfg`) and `destroy
//! bootstrap` all follow (the install guides' HAProxy, as in
//! RedHatOfficial/ocp4-helpernode `templates/haproxy.cfg.j2`). Pure: no
//! sockets, so workstation crates use it without the balancer.

use serde::Serialize;

use crate::{Inventory, Node, Ports, Role};

/// A service the install's load balancer carries, one frontend each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Service {
    /// The Kubernetes API (`api`, backend port 6443).
    Api,
    /// The machine-config server (`machine-config`, backend port 22623).
    MachineConfig,
    /// Ingress over HTTP (`ingress-http`, backend port 80).
    IngressHttp,
    /// Ingress over HTTPS (`ingress-https`, backend port 443).
    IngressHttps,
}

/// How a service's backends are health-checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probe {
    /// `GET <path>` over TLS without verification (HAProxy `option httpchk
    /// GET <path>` + `check-ssl verify none`).
    HttpsGet(&'static str),
    /// A TCP connect (HAProxy plain `check`).
    Tcp,
}

impl Service {
    /// Every service, in frontend order.
    pub const ALL: [Service; 4] = [
        Service::Api,
        Service::MachineConfig,
        Service::IngressHttp,
        Service::IngressHttps,
    ];

    /// The frontend (and HAProxy backend) name: `api`, `machine-config`,
    /// `ingress-http`, `ingress-https`.
    pub fn name(self) -> &'static str {
        match self {
            Service::Api => "api",
            Service::MachineConfig => "machine-config",
            Service::IngressHttp => "ingress-http",
            Service::IngressHttps => "ingress-https",
        }
    }

    /// The port the frontend listens on, from the bastion-config `ports`.
    pub fn frontend_port(self, ports: &Ports) -> u16 {
        match self {
            Service::Api => ports.api,
            Service::MachineConfig => ports.machine_config,
            Service::IngressHttp => ports.ingress_http,
            Service::IngressHttps => ports.ingress_https,
        }
    }

    /// The port the hosts serve it on: 6443, 22623, 80, 443.
    pub fn backend_port(self) -> u16 {
        match self {
            Service::Api => 6443,
            Service::MachineConfig => 22623,
            Service::IngressHttp => 80,
            Service::IngressHttps => 443,
        }
    }

    /// The health check: `GET /readyz` (API) and `GET /healthz`
    /// (machine-config) over TLS, a TCP connect for ingress.
    pub fn probe(self) -> Probe {
        match self {
            Service::Api => Probe::HttpsGet("/readyz"),
            Service::MachineConfig => Probe::HttpsGet("/healthz"),
            Service::IngressHttp | Service::IngressHttps => Probe::Tcp,
        }
    }

    /// The hosts behind the frontend, in inventory order: bootstrap and
    /// masters for the API and machine-config (the bootstrap until
    /// `remove-bootstrap`), the workers for ingress (the masters when there
    /// are none).
    pub fn members(self, inv: &Inventory) -> Vec<&Node> {
        match self {
            Service::Api | Service::MachineConfig => inv
                .nodes
                .iter()
                .filter(|n| matches!(n.role, Role::Bootstrap | Role::Master))
                .collect(),
            Service::IngressHttp | Service::IngressHttps => {
                let workers: Vec<&Node> = inv.role(Role::Worker).collect();
                if workers.is_empty() {
                    inv.role(Role::Master).collect()
                } else {
                    workers
                }
            }
        }
    }

    /// The hosts that must never be sent to `member` through this
    /// frontend: the workers, for the bootstrap's machine-config server.
    /// It refuses the worker pool by design (openshift/machine-config-operator
    /// `pkg/server/bootstrap_server.go`: "refusing to serve bootstrap
    /// configuration to pool worker", HTTP 500; issue
    /// openshift/machine-config-operator#2562), so a worker that `balance
    /// source` sends there loops on 500 until the bootstrap is removed; the
    /// upstream guides have workers wait for the masters' machine-config
    /// servers. Empty for every other pair.
    pub fn kept_away<'a>(self, member: &Node, inv: &'a Inventory) -> Vec<&'a Node> {
        if self == Service::MachineConfig && member.role == Role::Bootstrap {
            inv.role(Role::Worker).collect()
        } else {
            Vec::new()
        }
    }

    /// Whether `okd-install serve`'s own machine-config server
    /// (`<listen>:<ports.machine_config_server>`, named
    /// `machine-config-server`) is a backend too: only for machine-config.
    pub fn includes_local_mcs(self) -> bool {
        self == Service::MachineConfig
    }
}
