//! Counters as the status page sees them: [`Stats`] snapshots and the
//! Prometheus text format.

use std::fmt::Write as _;
use std::sync::atomic::Ordering;

use crate::{BackendStats, FrontendStats, LoadBalancer, Stats, lock, read};

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
                            state: BackendStats::state_text(up, checked).to_string(),
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
