//! Counters as the status page sees them: [`Stats`] snapshots and the
//! Prometheus text format.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;

use serde::Serialize;

use crate::{Balance, CheckResult, HealthCheck, LoadBalancer, lock, read};

/// Counters and state of one backend, as [`LoadBalancer::snapshot`] reports them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BackendStats {
    /// Backend name.
    pub name: String,
    /// Backend address.
    pub addr: SocketAddr,
    /// Whether it is UP (false while not checked yet).
    pub up: bool,
    /// Whether a health check has finished (always true without a check).
    pub checked: bool,
    /// `UP`, `DOWN` or `not checked yet` (see [`BackendStats::state_text`]).
    pub state: &'static str,
    /// Since when it is up (or down): the last change, or when it was
    /// added; milliseconds since the Unix epoch.
    pub since_unix_ms: u64,
    /// The last health check, `None` before the first one (or with [`CheckKind::None`]).
    pub last_check: Option<CheckResult>,
    /// When a health check last passed, milliseconds since the Unix epoch;
    /// `None` if none has (a backend DOWN with a passed check has gone
    /// down, one without never came up).
    pub last_ok_unix_ms: Option<u64>,
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

impl BackendStats {
    /// What a backend's state reads as: `UP`, `DOWN`, or `not checked yet`
    /// before its first health check finished.
    pub fn state_text(up: bool, checked: bool) -> &'static str {
        match (checked, up) {
            (false, _) => NOT_CHECKED,
            (true, true) => "UP",
            (true, false) => "DOWN",
        }
    }
}

/// The state of a backend before its first health check finished.
pub const NOT_CHECKED: &str = "not checked yet";

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

impl LoadBalancer {
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
                    .map(|b| {
                        let up = b.up.load(Ordering::Relaxed);
                        let checked = b.checked.load(Ordering::Relaxed);
                        BackendStats {
                            name: b.name.clone(),
                            addr: b.addr,
                            up,
                            checked,
                            state: BackendStats::state_text(up, checked),
                            since_unix_ms: b.since_unix_ms.load(Ordering::Relaxed),
                            last_check: lock(&b.last_check).clone(),
                            last_ok_unix_ms: match b.last_ok_unix_ms.load(Ordering::Relaxed) {
                                0 => None,
                                ms => Some(ms),
                            },
                            active_connections: b.counters.active.load(Ordering::Relaxed),
                            connections_total: b.counters.total.load(Ordering::Relaxed),
                            connect_failures: b.counters.connect_failures.load(Ordering::Relaxed),
                            bytes_in: b.counters.bytes_in.load(Ordering::Relaxed),
                            bytes_out: b.counters.bytes_out.load(Ordering::Relaxed),
                        }
                    })
                    .collect(),
            })
            .collect();
        Stats { frontends }
    }

    /// The snapshot in the Prometheus text exposition format (version 0.0.4):
    /// `okd_lb_backend_up` (gauge, 0/1), `okd_lb_backend_checked` (gauge, 0
    /// = not checked yet), `okd_lb_active_connections` (gauge),
    /// `okd_lb_connections_total` (counter), `okd_lb_bytes_total` (counter,
    /// `direction="in"` client→backend, `"out"` backend→client), each labelled
    /// `frontend` and `backend`; plus `okd_lb_frontend_connections_total` and
    /// `okd_lb_frontend_rejected_total` labelled `frontend`.
    pub fn prometheus(&self) -> String {
        render_prometheus(&self.snapshot())
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
        "Whether the backend is UP (1), or DOWN or not checked yet (0; see okd_lb_backend_checked).",
        &|b| vec![(None, u64::from(b.up))],
    );
    be_metric(
        &mut out,
        "okd_lb_backend_checked",
        "gauge",
        "Whether a health check of the backend has finished (1) or it is not checked yet (0).",
        &|b| vec![(None, u64::from(b.checked))],
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
