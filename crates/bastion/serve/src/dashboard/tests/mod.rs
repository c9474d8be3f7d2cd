//! Unit tests of the dashboard: stages, warnings and the page, built from a
//! status document of a bootstrap, a master and a worker.

use super::*;
use okd_hosts::Role;
use okd_serve_api::lb::{BackendStats, CheckResult, FrontendStats, HealthCheck, Stats};
use okd_serve_api::status::{
    BootstrapConfigMap, BootstrapRemoved, Certificates, ClientStatus, ClusterData, ClusterView,
    CsrKind, CsrView, DnsEvent, HostStatus, HttpEvent, IgnitionEvent, NodeView, OperatorsView,
    Stage, StatusDocument,
};
use time::macros::datetime;

mod bootstrap;
mod render;
mod warnings;

fn dns(time: &str, name: &str) -> DnsEvent {
    DnsEvent {
        time: time.into(),
        name: name.into(),
        qtype: "A".into(),
        answers: Vec::new(),
    }
}

fn http(time: &str, path: &str, status: u16, bytes: u64, size: Option<u64>) -> HttpEvent {
    HttpEvent {
        time: time.into(),
        path: path.into(),
        status,
        bytes,
        size,
        complete: size == Some(bytes),
    }
}

fn host(name: &str, role: Role, last: u8) -> HostStatus {
    HostStatus::new(
        name,
        format!("{name}.okd.example"),
        role,
        std::net::IpAddr::from([192, 168, 120, last]),
    )
}

/// A checked backend, UP or DOWN since `since_unix_ms`, with its last check.
fn backend(name: &str, addr: &str, up: bool, since_unix_ms: u64, check: &str) -> BackendStats {
    BackendStats {
        name: name.into(),
        addr: addr.parse().expect("backend address"),
        up,
        checked: true,
        state: BackendStats::state_text(up, true).into(),
        since_unix_ms,
        last_check: Some(CheckResult {
            ok: up,
            detail: check.into(),
            at_unix_ms: since_unix_ms,
            duration_ms: 1,
        }),
        last_ok_unix_ms: None,
        active_connections: 0,
        connections_total: 0,
        connect_failures: 0,
        bytes_in: 0,
        bytes_out: 0,
    }
}

fn frontend(name: &str, bind: &str, backends: Vec<BackendStats>) -> FrontendStats {
    FrontendStats {
        name: name.into(),
        bind: bind.parse().expect("bind address"),
        balance: Default::default(),
        check: HealthCheck::https_get("/readyz"),
        connections_total: 0,
        active_connections: 0,
        rejected_total: 0,
        backends,
    }
}

/// The cluster as watched: CSRs, nodes, operators, the bootstrap ConfigMap.
fn cluster(
    csrs: Vec<CsrView>,
    nodes: Vec<NodeView>,
    operators: OperatorsView,
    bootstrap: Option<BootstrapConfigMap>,
) -> ClusterData {
    ClusterData {
        available: true,
        error: None,
        view: Some(ClusterView {
            server: "https://api.okd.example:6443".into(),
            csrs,
            nodes,
            operators,
            bootstrap,
            bootstrap_progress: Default::default(),
        }),
    }
}

/// The bootstrap ConfigMap with `status`, created at 10:30.
fn bootstrap_cm(status: &str, time: &str) -> Option<BootstrapConfigMap> {
    Some(BootstrapConfigMap {
        status: Some(status.into()),
        time: Some(time.into()),
    })
}

fn csr(name: &str, kind: CsrKind, node: &str, approved: Option<&str>) -> CsrView {
    CsrView {
        name: Some(name.into()),
        kind,
        node: Some(node.into()),
        approved: approved.is_some(),
        denied: false,
        time: approved.map(str::to_string),
        created: None,
    }
}

fn doc() -> StatusDocument {
    let mut bootstrap = host("bootstrap", Role::Bootstrap, 102);
    bootstrap
        .dns
        .push(dns("2026-11-24T10:01:00Z", "api-int.okd.example"));
    bootstrap.http.push(http(
        "2026-11-24T10:01:05Z",
        "/ignition/bootstrap.ign",
        200,
        300_000,
        Some(300_000),
    ));
    let mut master = host("master", Role::Master, 103);
    master
        .dns
        .push(dns("2026-11-24T10:02:00Z", "api-int.okd.example"));
    master.http.push(http(
        "2026-11-24T10:02:01Z",
        "/ignition/bootstrap.ign",
        403,
        0,
        None,
    ));
    let mut worker1 = host("worker1", Role::Worker, 104);
    worker1.ignition.push(IgnitionEvent {
        time: "2026-11-24T10:03:00Z".into(),
        pool: "worker".into(),
        spec: "3.2.0".into(),
        status: 500,
        via: None,
        bytes: None,
        held: false,
    });
    // UP since 2026-11-24T10:05:00Z.
    let mut api_boot = backend(
        "bootstrap",
        "192.168.120.102:6443",
        true,
        1795514700000,
        "HTTP 200",
    );
    api_boot.active_connections = 2;
    api_boot.connections_total = 40;
    api_boot.bytes_in = 2048;
    api_boot.bytes_out = 3_000_000;
    let mut api_master = backend(
        "master",
        "192.168.120.103:6443",
        false,
        1795999200000,
        "connection refused",
    );
    api_master.last_ok_unix_ms = Some(1795999100000);
    let mcs_boot = backend(
        "bootstrap",
        "192.168.120.102:22623",
        false,
        1795514400000,
        "HTTP 503",
    );
    StatusDocument {
        cluster: "okd.example".into(),
        started: "2026-11-24T10:00:00Z".into(),
        hosts: vec![bootstrap, master, worker1],
        unknown_clients: vec![ClientStatus {
            address: std::net::IpAddr::from([192, 168, 120, 66]),
            dns: Vec::new(),
            ignition: Vec::new(),
            http: vec![http(
                "2026-11-24T10:04:00Z",
                "/ignition/bootstrap.ign",
                403,
                0,
                None,
            )],
        }],
        load_balancer: Some(Stats {
            frontends: vec![
                frontend("api", "192.168.120.101:6443", vec![api_boot, api_master]),
                frontend("machine-config", "192.168.120.101:22623", vec![mcs_boot]),
            ],
        }),
        cluster_data: ClusterData::unavailable("not read yet"),
        certificates: None,
        bootstrap_removed: None,
        warnings: Vec::new(),
        preflight: None,
    }
}

/// The load balancer's frontends of `d`.
fn fes(d: &mut StatusDocument) -> &mut Vec<FrontendStats> {
    &mut d.load_balancer.as_mut().expect("load balancer").frontends
}

/// The names of a host's stages.
fn names(h: &HostStatus) -> Vec<&str> {
    h.stages.iter().map(|s| s.stage.as_str()).collect()
}

/// The stage `name` of the first host (the bootstrap of [`doc`]).
fn boot_stage<'a>(d: &'a StatusDocument, name: &str) -> &'a Stage {
    d.hosts[0]
        .stage(name)
        .unwrap_or_else(|| panic!("no stage {name}: {:?}", d.hosts[0].stages))
}

fn warns(d: &StatusDocument) -> Vec<String> {
    d.warnings.clone()
}

const JOURNAL: &str = "`journalctl -b -f -u release-image.service -u bootkube.service`";
const REMOVE: &str =
    "remove it with `okd-install destroy bootstrap` (or `okd-install serve remove-bootstrap`)";

/// Sets the last check's text of backend `b`.
fn set_check(b: &mut BackendStats, detail: &str) {
    if let Some(c) = b.last_check.as_mut() {
        c.detail = detail.into();
    }
}
