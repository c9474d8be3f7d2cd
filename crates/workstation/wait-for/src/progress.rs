//! Progress a person can follow while `wait-for` waits: per host what
//! `serve` saw (through its control socket), then from the API: etcd
//! members, CSRs pending/approved, nodes Ready, ClusterVersion and
//! ClusterOperators. On a terminal the lines are live (indicatif); else a
//! line is logged when it changes. The objects come from watches (one
//! List+Watch per kind, kept open), so a snapshot makes no API request;
//! serve's status comes through its local control socket.

use std::path::PathBuf;
use std::time::Duration;

use futures_util::StreamExt as _;
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use k8s_openapi::api::core::v1::{ConfigMap, Node};
use kube::api::{Api, DynamicObject};
use kube::runtime::reflector::Store;
use kube::runtime::watcher;
use okd_cluster::Cluster;
use okd_serve_api::StatusDocument;
use tracing::info;

use okd_cluster::openshift::{self as resources, condition, conditions};

/// One snapshot: labelled lines, e.g. `("hosts", "master: Ignition served (master)")`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// (label, text) in display order.
    pub lines: Vec<(&'static str, String)>,
}

/// What `serve` saw per host: `name: Ignition served (pool)` or
/// `name: DNS only` / `name: nothing yet`, from its status document;
/// `None` when it lists no host.
pub fn hosts_line(status: &StatusDocument) -> Option<String> {
    if status.hosts.is_empty() {
        return None;
    }
    let parts: Vec<String> = status
        .hosts
        .iter()
        .map(|h| {
            let name = &h.hostname;
            let served = h
                .ignition
                .iter()
                .filter(|e| e.status == 200)
                .map(|e| e.pool.as_str())
                .next_back();
            let fetched = h
                .http
                .iter()
                .filter(|e| e.status == 200 && e.path.ends_with(".ign"))
                .map(|e| e.path.as_str())
                .next_back();
            let http = fetched.is_some();
            // Every config but bootstrap.ign is a pointer to the
            // machine-config server.
            let pointer = fetched.is_some_and(|p| !p.ends_with("bootstrap.ign"));
            let last = h.ignition.last();
            let refused = h.ignition.iter().rev().find(|e| e.status >= 400);
            match served {
                Some(pool) => format!("{name}: Ignition served ({pool})"),
                None if last.is_some_and(|e| e.held) => format!(
                    "{name}: held back from {}'s machine-config server (it refuses pool {}), waiting for a master's",
                    last.and_then(|e| e.via.as_deref()).unwrap_or("the bootstrap"),
                    last.map_or("", |e| e.pool.as_str())
                ),
                None if refused.is_some() => format!(
                    "{name}: the machine-config server answered HTTP {} (pool {})",
                    refused.map_or(0, |e| e.status),
                    refused.map_or("", |e| e.pool.as_str())
                ),
                None if pointer => {
                    format!("{name}: pointer Ignition config fetched, no machine config yet")
                }
                None if http => format!("{name}: Ignition file fetched"),
                None if !h.dns.is_empty() => format!("{name}: DNS only, no Ignition yet"),
                None => format!("{name}: nothing seen yet"),
            }
        })
        .collect();
    Some(parts.join("; "))
}

/// The watched objects the snapshots are read from (no request per
/// snapshot: each kind is one List+Watch kept open).
struct Stores {
    csrs: Store<CertificateSigningRequest>,
    nodes: Store<Node>,
    operators: Store<DynamicObject>,
    versions: Store<DynamicObject>,
    etcds: Store<DynamicObject>,
    bootstrap_progress: Store<ConfigMap>,
}

/// The ConfigMap the bootstrap node publishes its service records in.
const PROGRESS_CM: (&str, &str) = okd_service_record::PROGRESS_CONFIGMAP;

/// The bootstrap node's own progress from its ConfigMap's `bootkube.json`:
/// `bootkube: 12 stages done; now creating the manifests (cb-bootstrap)`,
/// a failure with its stage and message, or `bootkube.service complete`;
/// `None` without the ConfigMap or a readable record.
pub fn bootkube_line(cm: &ConfigMap) -> Option<String> {
    let p = okd_service_record::progress_of(cm.data.as_ref()?.get("bootkube.json")?)?;
    let words = |s: &str| {
        okd_service_record::stage_words(s).map_or(s.to_string(), |w| format!("{w} ({s})"))
    };
    Some(if p.complete {
        format!("bootkube.service complete ({} stages)", p.done.len())
    } else if let Some((stage, msg)) = &p.failure {
        format!("bootkube failed {}: {msg}; the node retries", words(stage))
    } else if let Some(stage) = &p.running {
        format!("{} stages done; now {}", p.done.len(), words(stage))
    } else {
        format!("{} stages done", p.done.len())
    })
}

/// How long the progress waits for serve's status reply.
const SERVE_REPLY: Duration = Duration::from_secs(10);

/// [`hosts_line`] of the status of the serve running for `dir`, asked
/// through its control socket with async I/O (the progress task shares the
/// runtime with the waits): `None` when no serve answers within `limit`.
async fn serve_hosts(dir: &std::path::Path, limit: Duration) -> Option<String> {
    let status = okd_serve_api::status_async(dir, limit).await.ok()?;
    hosts_line(&status)
}

/// A snapshot from the stores plus serve's status.
async fn snapshot(stores: &Stores, dir: &std::path::Path) -> Snapshot {
    let mut s = Snapshot::default();
    if let Some(line) = serve_hosts(dir, SERVE_REPLY).await {
        s.lines.push(("hosts", line));
    }
    if let Some(line) = stores
        .bootstrap_progress
        .state()
        .iter()
        .find(|c| c.metadata.name.as_deref() == Some(PROGRESS_CM.1))
        .and_then(|c| bootkube_line(c))
    {
        s.lines.push(("bootstrap", line));
    }
    for e in stores.etcds.state() {
        let c = conditions(&e);
        if let Some(m) = condition(&c, "EtcdMembersAvailable") {
            s.lines.push(("etcd", m.message.clone()));
        }
    }
    let csrs = stores.csrs.state();
    {
        let approved = csrs
            .iter()
            .filter(|c| {
                c.status
                    .as_ref()
                    .and_then(|s| s.conditions.as_ref())
                    .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Approved"))
            })
            .count();
        let pending = csrs.iter().filter(|c| okd_pending(c)).count();
        s.lines
            .push(("CSRs", format!("{pending} pending, {approved} approved")));
    }
    let nodes = stores.nodes.state();
    if !nodes.is_empty() {
        let ready: Vec<String> = nodes
            .iter()
            .filter(|n| {
                n.status
                    .as_ref()
                    .and_then(|s| s.conditions.as_ref())
                    .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
            })
            .filter_map(|n| n.metadata.name.clone())
            .collect();
        s.lines.push((
            "nodes",
            format!("{}/{} Ready {ready:?}", ready.len(), nodes.len()),
        ));
    }
    for cv in stores.versions.state() {
        let msg = match crate::waits::cluster_version_state(&conditions(&cv)) {
            Ok(()) => "Available".to_string(),
            Err(m) => m,
        };
        s.lines.push(("ClusterVersion", msg));
    }
    let ops = stores.operators.state();
    if !ops.is_empty() {
        let sum = resources::operator_summary(&ops);
        let mut line = format!("{}/{} available", sum.available, sum.total);
        if !sum.degraded.is_empty() {
            line += &format!(", degraded: {:?}", sum.degraded);
        }
        s.lines.push(("ClusterOperators", line));
    }
    s
}

fn okd_pending(c: &CertificateSigningRequest) -> bool {
    c.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_none_or(|cs| cs.is_empty())
}

/// Starts the progress task: watches the objects it reports on and, every
/// `every`, shows a snapshot live on a terminal, else logs
/// `Progress: <label>: <text>` for each line that changed. Aborting the
/// task ends the watches.
pub fn spawn(cluster: Cluster, dir: PathBuf, every: Duration) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let client = cluster.client();
        let (csrs, csr_stream) = resources::reflected(
            Api::<CertificateSigningRequest>::all(client.clone()),
            watcher::Config::default(),
        );
        let (nodes, node_stream) =
            resources::reflected(Api::<Node>::all(client.clone()), watcher::Config::default());
        let (operators, op_stream) = resources::served_reflector(
            resources::cluster_operators(client.clone()),
            resources::resource_of("ClusterOperator"),
            watcher::Config::default(),
        );
        let (versions, cv_stream) = resources::served_reflector(
            resources::cluster_versions(client.clone()),
            resources::resource_of("ClusterVersion"),
            watcher::Config::default().fields("metadata.name=version"),
        );
        let (etcds, etcd_stream) = resources::served_reflector(
            resources::etcds(client.clone()),
            resources::resource_of("Etcd"),
            watcher::Config::default().fields("metadata.name=cluster"),
        );
        let (bootstrap_progress, progress_stream) = resources::reflected(
            Api::<ConfigMap>::namespaced(client.clone(), PROGRESS_CM.0),
            watcher::Config::default().fields(&format!("metadata.name={}", PROGRESS_CM.1)),
        );
        let stores = Stores {
            csrs,
            nodes,
            operators,
            versions,
            etcds,
            bootstrap_progress,
        };
        let mut events = futures_util::stream::select_all([
            csr_stream,
            node_stream,
            op_stream,
            cv_stream,
            etcd_stream,
            progress_stream,
        ]);
        let tty = std::io::IsTerminal::is_terminal(&std::io::stderr());
        let multi = indicatif::MultiProgress::new();
        let mut bars: Vec<(&'static str, indicatif::ProgressBar)> = Vec::new();
        let mut last = Snapshot::default();
        let mut tick = tokio::time::interval(every);
        loop {
            tokio::select! {
                _ = events.next() => continue,
                _ = tick.tick() => {}
            }
            let s = snapshot(&stores, &dir).await;
            if tty {
                for (label, text) in &s.lines {
                    let bar = match bars.iter().find(|(l, _)| l == label) {
                        Some((_, b)) => b.clone(),
                        None => {
                            let b = multi.add(indicatif::ProgressBar::new_spinner());
                            b.enable_steady_tick(Duration::from_millis(200));
                            bars.push((label, b.clone()));
                            b
                        }
                    };
                    bar.set_message(format!("{label}: {text}"));
                }
            } else {
                for (label, text) in &s.lines {
                    if !last.lines.iter().any(|(l, t)| l == label && t == text) {
                        info!("Progress: {label}: {text}");
                    }
                }
            }
            last = s;
        }
    })
}

#[cfg(test)]
mod tests {
    use super::{bootkube_line, hosts_line, serve_hosts};

    #[test]
    fn the_bootstrap_line_says_where_bootkube_is() {
        let cm = |record: &str| k8s_openapi::api::core::v1::ConfigMap {
            data: Some([("bootkube.json".to_string(), record.to_string())].into()),
            ..Default::default()
        };
        let start = "{\"timestamp\":\"2026-11-24T10:30:00Z\",\"phase\":\"service start\"}\n";
        let etcd = "{\"timestamp\":\"2026-11-24T10:30:01Z\",\"stage\":\"etcd-bootstrap\",\"phase\":\"stage start\"}\n\
                    {\"timestamp\":\"2026-11-24T10:30:02Z\",\"stage\":\"etcd-bootstrap\",\"phase\":\"stage end\",\"result\":\"success\"}\n";
        let cb = "{\"timestamp\":\"2026-11-24T10:30:03Z\",\"stage\":\"cb-bootstrap\",\"phase\":\"stage start\"}\n";
        let line = bootkube_line(&cm(&format!("{start}{etcd}{cb}"))).expect("a line");
        assert!(line.starts_with("1 stages done; now "), "{line}");
        assert!(line.ends_with("(cb-bootstrap)"), "{line}");
        let failed = format!(
            "{start}{cb}{{\"timestamp\":\"2026-11-24T10:31:00Z\",\"stage\":\"cb-bootstrap\",\"phase\":\"stage end\",\"result\":\"failure\",\"errorMessage\":\"API down\"}}\n"
        );
        let line = bootkube_line(&cm(&failed)).expect("a line");
        assert!(
            line.contains("(cb-bootstrap): API down; the node retries"),
            "{line}"
        );
        assert_eq!(bootkube_line(&cm("garbage")), None);
        assert_eq!(
            bootkube_line(&k8s_openapi::api::core::v1::ConfigMap::default()),
            None
        );
    }
    use std::time::{Duration, Instant};

    /// Issue #18 finding 10: asking a serve that does not answer leaves a
    /// current_thread runtime free: a timer on the same runtime fires while
    /// the request waits, and the request gives up at its limit.
    #[test]
    fn serve_status_request_does_not_block_the_runtime() {
        let dir = tempfile::tempdir().expect("tempdir");
        let listener = std::os::unix::net::UnixListener::bind(dir.path().join(".okd-serve.sock"))
            .expect("bind");
        // A serve that accepts and holds the connection for 3 s without a reply.
        let server = std::thread::spawn(move || {
            let (s, _) = listener.accept().expect("accept");
            std::thread::sleep(Duration::from_secs(3));
            drop(s);
        });
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let start = Instant::now();
        let (timer_at, line) = rt.block_on(async {
            let dir = dir.path().to_path_buf();
            let req = tokio::spawn(async move { serve_hosts(&dir, Duration::from_secs(1)).await });
            tokio::time::sleep(Duration::from_millis(100)).await;
            let timer_at = start.elapsed();
            (timer_at, req.await.expect("request task"))
        });
        assert!(
            timer_at < Duration::from_millis(900),
            "a 100 ms timer fired after {timer_at:?}: the request blocked the runtime"
        );
        assert_eq!(line, None);
        let took = start.elapsed();
        assert!(
            took < Duration::from_secs(3),
            "gave up after {took:?}, want 1 s"
        );
        server.join().expect("server");
    }

    #[test]
    fn hosts_line_says_what_serve_saw() {
        use okd_hosts::Role;
        use okd_serve_api::status::{
            ClusterData, DnsEvent, HostStatus, HttpEvent, IgnitionEvent, StatusDocument,
        };
        let t = "2026-11-24T10:00:00Z".to_string();
        let dns = DnsEvent {
            time: t.clone(),
            name: "api-int.okd.example".into(),
            qtype: "A".into(),
            answers: Vec::new(),
        };
        let ign = |pool: &str, status| IgnitionEvent {
            time: t.clone(),
            pool: pool.into(),
            spec: "3.2.0".into(),
            status,
            via: None,
            bytes: None,
            held: false,
        };
        let host = |name: &str, role, last: u8| {
            HostStatus::new(
                name,
                format!("{name}.okd.example"),
                role,
                std::net::IpAddr::from([192, 168, 120, last]),
            )
        };
        let mut bootstrap = host("bootstrap", Role::Bootstrap, 102);
        bootstrap.http.push(HttpEvent {
            time: t.clone(),
            path: "/ignition/bootstrap.ign".into(),
            status: 200,
            bytes: 10,
            size: Some(10),
            complete: true,
        });
        let mut master = host("master", Role::Master, 103);
        master.ignition.push(ign("master", 200));
        master.dns.push(dns.clone());
        let mut worker1 = host("worker1", Role::Worker, 104);
        worker1.ignition.push(ign("worker", 500));
        worker1.dns.push(dns);
        let mut worker2 = host("worker2", Role::Worker, 105);
        worker2.http.push(HttpEvent {
            time: t.clone(),
            path: "/ignition/worker.ign".into(),
            status: 200,
            bytes: 10,
            size: Some(10),
            complete: true,
        });
        let mut worker3 = host("worker3", Role::Worker, 106);
        worker3.ignition.push(IgnitionEvent {
            status: 0,
            held: true,
            via: Some("bootstrap".into()),
            ..ign("worker", 0)
        });
        let worker4 = host("worker4", Role::Worker, 107);
        let mut status = StatusDocument {
            cluster: "okd.example".into(),
            started: t.clone(),
            hosts: vec![bootstrap, master, worker1, worker2, worker3, worker4],
            unknown_clients: Vec::new(),
            load_balancer: None,
            cluster_data: ClusterData::unavailable("not read yet"),
            certificates: None,
            bootstrap_removed: None,
            warnings: Vec::new(),
            preflight: None,
        };
        assert_eq!(
            hosts_line(&status).unwrap(),
            "bootstrap: Ignition file fetched; master: Ignition served (master); \
             worker1: the machine-config server answered HTTP 500 (pool worker); \
             worker2: pointer Ignition config fetched, no machine config yet; \
             worker3: held back from bootstrap's machine-config server (it refuses pool worker), waiting for a master's; \
             worker4: nothing seen yet"
        );
        status.hosts.clear();
        assert_eq!(hosts_line(&status), None);
    }
}
