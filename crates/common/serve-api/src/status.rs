//! The `/status` document of `okd-install serve` (also the reply to
//! [`crate::Request::Status`]): what each host fetched and when, the
//! dashboard's stage lines and warnings, the cluster seen through
//! `auth/kubeconfig`, the load balancer's snapshot and the bootstrap's
//! removal. Serve builds it from these types and every reader (the
//! dashboard, `wait-for`'s progress, the tests) reads it through them, so a
//! renamed field breaks them at compile time.
//!
//! The JSON keys are the field names in camel case where they always were
//! (`unknownClients`, `loadBalancer`, `clusterData`, `bootstrapRemoved`,
//! `notAfter`) and the load balancer's snake case inside `loadBalancer`
//! ([`crate::lb`]). Every time is an RFC 3339 string, except the load
//! balancer's milliseconds since the Unix epoch. The document names no MAC
//! address and no token: `/status` and the page are unauthenticated.

use std::net::IpAddr;

use okd_hosts::Role;
use serde::{Deserialize, Serialize};

use crate::lb::{FrontendStats, Stats};

/// The whole document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatusDocument {
    /// The cluster domain, `<metadata.name>.<baseDomain>`.
    pub cluster: String,
    /// When this serve started (RFC 3339).
    pub started: String,
    /// Every inventory host, in inventory order (also those not heard from).
    pub hosts: Vec<HostStatus>,
    /// Clients outside the inventory, most recently heard from first
    /// (bounded: serve keeps at most 1024).
    #[serde(rename = "unknownClients")]
    pub unknown_clients: Vec<ClientStatus>,
    /// The load balancer's snapshot; `null` when this serve runs none.
    #[serde(rename = "loadBalancer")]
    pub load_balancer: Option<Stats>,
    /// What the cluster says, or why it cannot be read.
    #[serde(rename = "clusterData")]
    pub cluster_data: ClusterData,
    /// The first of bootstrap.ign's short-lived (24-hour) certificates to
    /// expire; `null` without a bootstrap.ign.
    pub certificates: Option<Certificates>,
    /// When `remove-bootstrap` took the bootstrap out of the load balancer;
    /// `null` while it is not removed.
    #[serde(rename = "bootstrapRemoved")]
    pub bootstrap_removed: Option<BootstrapRemoved>,
    /// Warnings in plain words with the next step, for a person.
    #[serde(default)]
    pub warnings: Vec<String>,
    /// The preflight checks serve ran at start (`okd-install preflight`);
    /// `null` until they ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preflight: Option<crate::preflight::Report>,
}

/// One inventory host and what it fetched (at most 50 events of each kind,
/// oldest first).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostStatus {
    /// Its short host name.
    pub hostname: String,
    /// Its fully qualified name.
    pub fqdn: String,
    /// Its role.
    pub role: Role,
    /// Its address on the install network.
    pub address: IpAddr,
    /// DNS queries it made.
    pub dns: Vec<DnsEvent>,
    /// Machine-config server answers it got.
    pub ignition: Vec<IgnitionEvent>,
    /// Files and PXE scripts it fetched over HTTP.
    pub http: Vec<HttpEvent>,
    /// Its stage line, in order (DNS answered, Ignition fetched, …).
    #[serde(default)]
    pub stages: Vec<Stage>,
}

impl HostStatus {
    /// A host not heard from yet: no events, no stages.
    pub fn new(
        hostname: impl Into<String>,
        fqdn: impl Into<String>,
        role: Role,
        address: IpAddr,
    ) -> HostStatus {
        HostStatus {
            hostname: hostname.into(),
            fqdn: fqdn.into(),
            role,
            address,
            dns: Vec::new(),
            ignition: Vec::new(),
            http: Vec::new(),
            stages: Vec::new(),
        }
    }

    /// Its stage named `name`.
    pub fn stage(&self, name: &str) -> Option<&Stage> {
        self.stages.iter().find(|s| s.stage == name)
    }
}

/// A client outside the inventory and what it asked for (at most 8 events
/// of each kind).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClientStatus {
    /// Its source address.
    pub address: IpAddr,
    /// DNS queries it made.
    pub dns: Vec<DnsEvent>,
    /// Machine-config server answers it got.
    pub ignition: Vec<IgnitionEvent>,
    /// HTTP requests it made.
    pub http: Vec<HttpEvent>,
}

/// A DNS query and its answers (strings cut at 256 bytes, at most 16
/// answers; a longer list ends with `… (N answers, truncated)`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DnsEvent {
    /// When (RFC 3339).
    pub time: String,
    /// The name asked for.
    pub name: String,
    /// The query type (`A`, `AAAA`, `SRV`, …).
    #[serde(rename = "type")]
    pub qtype: String,
    /// The answers as text.
    pub answers: Vec<String>,
}

/// A machine-config server answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IgnitionEvent {
    /// When (RFC 3339).
    pub time: String,
    /// The pool asked for (`master`, `worker`).
    pub pool: String,
    /// The Ignition spec version served (from the `Accept` header).
    pub spec: String,
    /// The HTTP status (0 for a connection serve's balancer held back,
    /// see `held`; 200 for one judged by its size, see `via`).
    pub status: u16,
    /// The balancer backend that answered when it was not serve's own
    /// machine-config server (`bootstrap`, `master0`): serve sees only a
    /// proxied TLS connection, so the answer counts as a fetched config
    /// when at least [`PROXIED_CONFIG_BYTES`] went to the client
    /// (`bytes`); `None` for serve's own server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<String>,
    /// Octets that went to the client over that proxied connection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// The balancer held the connection back: every UP backend refuses
    /// this host's pool (a worker while only the bootstrap's
    /// machine-config server is up; `okd_hosts::Service::kept_away`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub held: bool,
}

/// Octets from a machine-config server, through serve's balancer, above
/// which a proxied connection counts as a fetched config: a TLS handshake
/// and an error page stay well below it (about 5 KiB with the certificate
/// chain), a rendered master or worker config is 100 KiB or more.
pub const PROXIED_CONFIG_BYTES: u64 = 32 * 1024;

/// An HTTP response of the file/PXE server, recorded when its body ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HttpEvent {
    /// When the body ended (RFC 3339).
    pub time: String,
    /// The request path (no query: the token is never recorded).
    pub path: String,
    /// The HTTP status.
    pub status: u16,
    /// Octets of the body that went out.
    pub bytes: u64,
    /// Octets announced (`Content-Length`), `null` when none was.
    pub size: Option<u64>,
    /// Whether every announced octet went out.
    pub complete: bool,
}

/// One stage of a host's stage line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stage {
    /// Its name, e.g. `DNS answered`, `Ignition fetched`, `Node Ready`.
    pub stage: String,
    /// Whether the host reached it.
    pub done: bool,
    /// When (RFC 3339), `null` when not reached or not known.
    pub time: Option<String>,
    /// What the stage rests on or what is missing; may be empty.
    pub detail: String,
}

impl Stage {
    /// A stage named `stage`.
    pub fn new(
        stage: impl Into<String>,
        done: bool,
        time: Option<String>,
        detail: impl Into<String>,
    ) -> Stage {
        Stage {
            stage: stage.into(),
            done,
            time,
            detail: detail.into(),
        }
    }
}

/// What the cluster says through `auth/kubeconfig`, or why not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterData {
    /// Whether every watch answered.
    pub available: bool,
    /// Why not (names the server and the cause); `null` when available.
    pub error: Option<String>,
    /// The watched objects; absent before serve could connect.
    #[serde(flatten)]
    pub view: Option<ClusterView>,
}

impl ClusterData {
    /// Unavailable, because of `error`, with nothing watched.
    pub fn unavailable(error: impl Into<String>) -> ClusterData {
        ClusterData {
            available: false,
            error: Some(error.into()),
            view: None,
        }
    }
}

/// The watched objects of the cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterView {
    /// The API server's URL (from the kubeconfig).
    pub server: String,
    /// Every CSR, by name.
    pub csrs: Vec<CsrView>,
    /// Every Node, by name.
    pub nodes: Vec<NodeView>,
    /// The ClusterOperators, counted.
    pub operators: OperatorsView,
    /// The ConfigMap `kube-system/bootstrap`, `null` when there is none.
    pub bootstrap: Option<BootstrapConfigMap>,
    /// The bootstrap node's own progress, per service (`release-image`,
    /// `bootkube`), from its ConfigMap
    /// `kube-system/okd-install-bootstrap-progress` (okd-bootstrap
    /// `progress`); empty until the node published it.
    #[serde(default, rename = "bootstrapProgress")]
    pub bootstrap_progress: std::collections::BTreeMap<String, okd_service_record::Progress>,
}

/// Which signer a CSR asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CsrKind {
    /// `kubernetes.io/kube-apiserver-client-kubelet`.
    Client,
    /// `kubernetes.io/kubelet-serving`.
    Serving,
    /// Any other signer.
    Other,
}

impl CsrKind {
    /// `client`, `serving`, `other`.
    pub fn as_str(self) -> &'static str {
        match self {
            CsrKind::Client => "client",
            CsrKind::Serving => "serving",
            CsrKind::Other => "other",
        }
    }
}

/// One CertificateSigningRequest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CsrView {
    /// `metadata.name`.
    pub name: Option<String>,
    /// Its signer.
    pub kind: CsrKind,
    /// The node it is for (from the request's subject, or the serving
    /// CSR's `system:node:<name>` user).
    pub node: Option<String>,
    /// Whether it has an `Approved` condition.
    pub approved: bool,
    /// Whether it has a `Denied` or `Failed` condition.
    pub denied: bool,
    /// When it was approved.
    pub time: Option<String>,
    /// `metadata.creationTimestamp`.
    pub created: Option<String>,
}

/// One Node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeView {
    /// `metadata.name`.
    pub name: Option<String>,
    /// Whether its `Ready` condition is `True`.
    pub ready: bool,
    /// When its `Ready` condition last changed.
    pub since: Option<String>,
}

/// The ClusterOperators, counted.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct OperatorsView {
    /// Operators with `Available=True`.
    pub available: usize,
    /// All operators.
    pub total: usize,
    /// Names of the operators with `Degraded=True`, sorted.
    pub degraded: Vec<String>,
}

/// The ConfigMap `kube-system/bootstrap` the bootstrap node creates
/// (openshift/installer `report-progress.sh`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BootstrapConfigMap {
    /// `data.status` (`complete` when done).
    pub status: Option<String>,
    /// `metadata.creationTimestamp`.
    pub time: Option<String>,
}

/// The first short-lived certificate of bootstrap.ign to expire.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Certificates {
    /// Its file under `tls/`.
    pub file: String,
    /// Its `notAfter` (RFC 3339).
    #[serde(rename = "notAfter")]
    pub not_after: String,
}

/// The removal of the bootstrap from the load balancer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BootstrapRemoved {
    /// When (RFC 3339).
    pub time: String,
    /// The load balancer's frontends just before, each with only the
    /// bootstrap's backends (so its stage line stays complete).
    pub frontends: Vec<FrontendStats>,
    /// Whether an earlier serve removed it (recorded in the asset
    /// directory); its backends were never balanced by this serve. Only
    /// present when true.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub earlier: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lb::{BackendStats, HealthCheck};

    fn doc() -> StatusDocument {
        let mut h = HostStatus::new(
            "bootstrap",
            "bootstrap.okd.example",
            Role::Bootstrap,
            IpAddr::from([192, 0, 2, 2]),
        );
        h.dns.push(DnsEvent {
            time: "2026-11-24T10:00:00Z".into(),
            name: "api-int.okd.example".into(),
            qtype: "A".into(),
            answers: vec!["192.0.2.1".into()],
        });
        h.http.push(HttpEvent {
            time: "2026-11-24T10:00:01Z".into(),
            path: "/ignition/bootstrap.ign".into(),
            status: 200,
            bytes: 10,
            size: None,
            complete: true,
        });
        h.stages
            .push(Stage::new("DNS answered", true, None, "api-int A"));
        let backend = BackendStats {
            name: "bootstrap".into(),
            addr: "192.0.2.2:6443".parse().unwrap(),
            up: false,
            checked: false,
            state: crate::lb::NOT_CHECKED.into(),
            since_unix_ms: 1,
            last_check: None,
            last_ok_unix_ms: None,
            active_connections: 0,
            connections_total: 0,
            connect_failures: 0,
            bytes_in: 0,
            bytes_out: 0,
        };
        let fe = FrontendStats {
            name: "api".into(),
            bind: "192.0.2.1:6443".parse().unwrap(),
            balance: Default::default(),
            check: HealthCheck::https_get("/readyz"),
            connections_total: 0,
            active_connections: 0,
            rejected_total: 0,
            backends: vec![backend],
        };
        StatusDocument {
            cluster: "okd.example".into(),
            started: "2026-11-24T09:59:00Z".into(),
            hosts: vec![h],
            unknown_clients: Vec::new(),
            load_balancer: Some(Stats {
                frontends: vec![fe.clone()],
            }),
            cluster_data: ClusterData::unavailable("no kubeconfig"),
            certificates: Some(Certificates {
                file: "kubelet-client.crt".into(),
                not_after: "2026-11-25T09:59:00Z".into(),
            }),
            bootstrap_removed: Some(BootstrapRemoved {
                time: "2026-11-24T11:00:00Z".into(),
                frontends: vec![fe],
                earlier: false,
            }),
            warnings: vec!["w".into()],
            preflight: None,
        }
    }

    /// The JSON keys readers of earlier serves relied on, and a round trip.
    #[test]
    fn wire_keys_and_round_trip() {
        let d = doc();
        let v = serde_json::to_value(&d).unwrap();
        for key in [
            "cluster",
            "started",
            "hosts",
            "unknownClients",
            "loadBalancer",
            "clusterData",
            "certificates",
            "bootstrapRemoved",
            "warnings",
        ] {
            assert!(v.get(key).is_some(), "no {key} in {v}");
        }
        let h = &v["hosts"][0];
        assert_eq!(h["role"], "bootstrap");
        assert_eq!(h["address"], "192.0.2.2");
        assert_eq!(h["dns"][0]["type"], "A");
        assert_eq!(h["http"][0]["size"], serde_json::Value::Null);
        assert_eq!(h["stages"][0]["stage"], "DNS answered");
        assert_eq!(v["certificates"]["notAfter"], "2026-11-25T09:59:00Z");
        let be = &v["loadBalancer"]["frontends"][0]["backends"][0];
        assert_eq!(be["state"], "not checked yet");
        assert_eq!(be["last_ok_unix_ms"], serde_json::Value::Null);
        // Not available yet: only `available` and `error`.
        assert_eq!(
            v["clusterData"],
            serde_json::json!({"available": false, "error": "no kubeconfig"})
        );
        // `earlier` only when true.
        assert!(v["bootstrapRemoved"].get("earlier").is_none(), "{v}");
        let back: StatusDocument = serde_json::from_value(v).unwrap();
        assert_eq!(back, d);
    }

    /// The cluster view flattens into `clusterData`, `bootstrap` null when
    /// there is no ConfigMap.
    #[test]
    fn cluster_view_flattens() {
        let cd = ClusterData {
            available: true,
            error: None,
            view: Some(ClusterView {
                server: "https://api.okd.example:6443".into(),
                csrs: vec![CsrView {
                    name: Some("csr-1".into()),
                    kind: CsrKind::Serving,
                    node: Some("master".into()),
                    approved: false,
                    denied: false,
                    time: None,
                    created: None,
                }],
                nodes: Vec::new(),
                operators: OperatorsView::default(),
                bootstrap: None,
                bootstrap_progress: Default::default(),
            }),
        };
        let v = serde_json::to_value(&cd).unwrap();
        assert_eq!(v["server"], "https://api.okd.example:6443");
        assert_eq!(v["csrs"][0]["kind"], "serving");
        assert_eq!(v["bootstrap"], serde_json::Value::Null);
        assert_eq!(v["error"], serde_json::Value::Null);
        let back: ClusterData = serde_json::from_value(v).unwrap();
        assert_eq!(back, cd);
    }
}
