//! Cluster data for the dashboard: CSRs, nodes, ClusterOperators and the
//! bootstrap's `kube-system/bootstrap` ConfigMap, watched through the
//! install's `auth/kubeconfig` with the same client as `approve-csr` and
//! `wait-for` (okd-cluster). Each kind is one List+Watch kept open (the
//! ConfigMap's limited to that one object); the view handed to the status
//! store is rebuilt from the watches' caches after each event (at most
//! every 100 ms), so the page costs the API nothing. Errors name the
//! server, the address connected to and the classified cause
//! ([`okd_cluster::ApiCause`]).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt as _;
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use k8s_openapi::api::core::v1::{ConfigMap, Node};
use kube::api::{Api, DynamicObject};
use kube::runtime::reflector::Store;
use kube::runtime::watcher;
use okd_cluster::openshift;
use okd_serve_api::status::{
    BootstrapConfigMap, ClusterData, ClusterView, CsrKind, CsrView, NodeView, OperatorsView,
};

use crate::status::Status;

fn csr_view(c: &CertificateSigningRequest) -> CsrView {
    let kind = match c.spec.signer_name.as_str() {
        okd_approve_csr::rules::CLIENT_SIGNER => CsrKind::Client,
        okd_approve_csr::rules::SERVING_SIGNER => CsrKind::Serving,
        _ => CsrKind::Other,
    };
    let node = match kind {
        CsrKind::Serving => c
            .spec
            .username
            .as_deref()
            .and_then(|u| u.strip_prefix("system:node:"))
            .map(str::to_string),
        _ => okd_approve_csr::rules::requested_node(&c.spec.request.0),
    };
    let conds = c
        .status
        .as_ref()
        .and_then(|s| s.conditions.clone())
        .unwrap_or_default();
    let approved = conds.iter().find(|c| c.type_ == "Approved");
    let denied = conds
        .iter()
        .any(|c| c.type_ == "Denied" || c.type_ == "Failed");
    CsrView {
        name: c.metadata.name.clone(),
        kind,
        node,
        approved: approved.is_some(),
        denied,
        time: approved
            .and_then(|a| a.last_update_time.as_ref())
            .map(|t| t.0.to_string()),
        created: c
            .metadata
            .creation_timestamp
            .as_ref()
            .map(|t| t.0.to_string()),
    }
}

fn node_view(n: &Node) -> NodeView {
    let ready = n
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == "Ready"));
    NodeView {
        name: n.metadata.name.clone(),
        ready: ready.is_some_and(|c| c.status == "True"),
        since: ready
            .and_then(|c| c.last_transition_time.as_ref())
            .map(|t| t.0.to_string()),
    }
}

/// The namespace and name of the ConfigMap the bootstrap node creates with
/// `data.status: complete` when it is done (openshift/installer
/// data/data/bootstrap/files/usr/local/bin/report-progress.sh; what
/// `wait-for bootstrap-complete` waits for).
const BOOTSTRAP_CM: (&str, &str) = ("kube-system", "bootstrap");

/// `data.status` and `creationTimestamp` of the bootstrap ConfigMap in
/// `cms`, or `None` when there is none.
fn bootstrap_view(cms: &[Arc<ConfigMap>]) -> Option<BootstrapConfigMap> {
    cms.iter()
        .find(|c| {
            c.metadata.namespace.as_deref() == Some(BOOTSTRAP_CM.0)
                && c.metadata.name.as_deref() == Some(BOOTSTRAP_CM.1)
        })
        .map(|c| BootstrapConfigMap {
            status: c.data.as_ref().and_then(|d| d.get("status")).cloned(),
            time: c
                .metadata
                .creation_timestamp
                .as_ref()
                .map(|t| t.0.to_string()),
        })
}

/// The bootstrap node's progress ConfigMap (okd-bootstrap `progress`):
/// each `<service>.json` record summarised; a record that does not parse
/// is left out.
fn progress_view(
    cms: &[Arc<ConfigMap>],
) -> std::collections::BTreeMap<String, okd_service_record::Progress> {
    let mut out = std::collections::BTreeMap::new();
    let Some(cm) = cms.iter().find(|c| {
        c.metadata.namespace.as_deref() == Some(PROGRESS_CM.0)
            && c.metadata.name.as_deref() == Some(PROGRESS_CM.1)
    }) else {
        return out;
    };
    for (key, text) in cm.data.iter().flatten() {
        let Some(service) = key.strip_suffix(".json") else {
            continue;
        };
        if let Some(p) = okd_service_record::progress_of(text) {
            out.insert(service.to_string(), p);
        }
    }
    out
}

/// The ConfigMap the bootstrap node keeps its service records in while it
/// runs.
const PROGRESS_CM: (&str, &str) = okd_service_record::PROGRESS_CONFIGMAP;

/// The cluster view of the watches' stores (see the module docs for the shape).
fn view(
    server: &str,
    csrs: &Store<CertificateSigningRequest>,
    nodes: &Store<Node>,
    ops: &Store<DynamicObject>,
    boot: &Store<ConfigMap>,
    progress: &Store<ConfigMap>,
    error: &Option<String>,
) -> ClusterData {
    let mut c: Vec<CsrView> = csrs.state().iter().map(|c| csr_view(c)).collect();
    c.sort_by(|a, b| a.name.cmp(&b.name));
    let mut n: Vec<NodeView> = nodes.state().iter().map(|n| node_view(n)).collect();
    n.sort_by(|a, b| a.name.cmp(&b.name));
    let sum = openshift::operator_summary(&ops.state());
    ClusterData {
        available: error.is_none(),
        error: error.clone(),
        view: Some(ClusterView {
            server: server.to_string(),
            csrs: c,
            nodes: n,
            operators: OperatorsView {
                available: sum.available,
                total: sum.total,
                degraded: sum.degraded,
            },
            bootstrap: bootstrap_view(&boot.state()),
            bootstrap_progress: progress_view(&progress.state()),
        }),
    }
}

/// How long a watch's error is shown after it last happened. A watch
/// that reconnects after an outage says nothing until an object changes
/// (kube's watcher resumes from its resource version without an event),
/// while one that keeps failing retries, and fails again, at least every
/// 30 s with jitter (kube-runtime `DefaultBackoff`: 0.8 s doubling to
/// 30 s); an error not repeated for longer is from a watch that is back.
const WATCH_ERROR_SHOWN: Duration = Duration::from_secs(70);

/// The last error of each of the watches, cleared by its next answer or
/// when it is older than [`WATCH_ERROR_SHOWN`].
#[derive(Debug, Default)]
struct WatchErrors(std::collections::BTreeMap<usize, (String, Instant)>);

impl WatchErrors {
    fn failed(&mut self, watch: usize, e: String, now: Instant) {
        self.0.insert(watch, (e, now));
    }

    fn answered(&mut self, watch: usize) {
        self.0.remove(&watch);
    }

    fn any(&self) -> bool {
        !self.0.is_empty()
    }

    /// The newest error still shown at `now`; older ones are dropped.
    fn current(&mut self, now: Instant) -> Option<String> {
        self.0
            .retain(|_, (_, at)| now.saturating_duration_since(*at) < WATCH_ERROR_SHOWN);
        self.0
            .values()
            .max_by_key(|(_, at)| *at)
            .map(|(e, _)| e.clone())
    }
}

/// Watches the cluster of `dir`'s `auth/kubeconfig` at `api` (the
/// inventory's API address and port) until `stop`, handing the view to
/// `status` within 100 ms of each watch event. Without a kubeconfig, or when it cannot be used,
/// the view says why (and the task waits for `stop`: serve treats a
/// finished task as a failure).
pub(crate) async fn watch(
    dir: PathBuf,
    api: std::net::SocketAddr,
    status: Arc<Status>,
    stop: impl std::future::Future<Output = ()>,
) {
    let kubeconfig = dir.join("auth/kubeconfig");
    if !kubeconfig.exists() {
        status.set_cluster(ClusterData::unavailable(format!(
            "no kubeconfig at {}",
            kubeconfig.display()
        )));
        return stop.await;
    }
    // The API address of the inventory, not the resolver: the bastion may
    // not resolve the cluster's names, and serve's own traffic stays on
    // the install network.
    let cluster = match okd_cluster::Cluster::from_kubeconfig_via(&kubeconfig, api).await {
        Ok(c) => c,
        Err(e) => {
            status.set_cluster(ClusterData::unavailable(e.to_string()));
            return stop.await;
        }
    };
    let client = cluster.client();
    let (csrs, csr_s) = openshift::reflected(
        Api::<CertificateSigningRequest>::all(client.clone()),
        watcher::Config::default(),
    );
    let (nodes, node_s) =
        openshift::reflected(Api::<Node>::all(client.clone()), watcher::Config::default());
    let (boot, boot_s) = openshift::reflected(
        Api::<ConfigMap>::namespaced(client.clone(), BOOTSTRAP_CM.0),
        watcher::Config::default().fields(&format!("metadata.name={}", BOOTSTRAP_CM.1)),
    );
    let (progress, progress_s) = openshift::reflected(
        Api::<ConfigMap>::namespaced(client.clone(), PROGRESS_CM.0),
        watcher::Config::default().fields(&format!("metadata.name={}", PROGRESS_CM.1)),
    );
    let (ops, op_s) = openshift::served_reflector(
        openshift::cluster_operators(client),
        openshift::resource_of("ClusterOperator"),
        watcher::Config::default(),
    );
    let mut events = futures_util::stream::select_all(
        [csr_s, node_s, op_s, boot_s, progress_s]
            .into_iter()
            .enumerate()
            .map(|(i, s)| s.map(move |e| (i, e)).boxed()),
    );
    let mut stop = std::pin::pin!(stop);
    // The view is rebuilt at most every 100 ms, and only after a watch
    // event, so a change reaches the page's next refresh at once.
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut dirty = true;
    // Unavailable until a watch has answered once.
    let mut answered = false;
    let mut errors = WatchErrors::default();
    let via = format!("{} (through {api})", cluster.server());
    let mut last_build = tokio::time::Instant::now();
    let (mut clock_asked, mut clock): (Option<Instant>, Option<String>) = (None, None);
    loop {
        tokio::select! {
            _ = &mut stop => return,
            ev = events.next() => {
                match ev {
                    Some((i, Some(e))) => {
                        // A 401 may be the clocks (a node's behind the
                        // certificates): asked at most every 30 s.
                        let e = if e.starts_with("401 Unauthorized") {
                            if clock_asked.is_none_or(|t: Instant| t.elapsed() >= Duration::from_secs(30)) {
                                clock_asked = Some(Instant::now());
                                clock = cluster.explain_unauthorized().await.map(|c| c.to_string());
                            }
                            clock.clone().unwrap_or(e)
                        } else {
                            e
                        };
                        errors.failed(i, format!("{via}: {e}"), Instant::now());
                    }
                    Some((i, None)) => {
                        answered = true;
                        errors.answered(i);
                    }
                    None => return stop.await,
                }
                dirty = true;
            }
            _ = tick.tick() => {
                // Errors age out: a watch that reconnected says nothing
                // until an object changes.
                if !dirty && (errors.any() && last_build.elapsed() >= Duration::from_secs(1)) {
                    dirty = true;
                }
                if !dirty {
                    continue;
                }
                dirty = false;
                last_build = tokio::time::Instant::now();
                let error = errors.current(Instant::now()).or_else(|| {
                    (!answered).then(|| format!("no answer yet from {}", cluster.server()))
                });
                status.set_cluster(view(
                    cluster.server(),
                    &csrs,
                    &nodes,
                    &ops,
                    &boot,
                    &progress,
                    &error,
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
    use kube::runtime::reflector;

    fn cm(ns: &str, name: &str, status: Option<&str>) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                namespace: Some(ns.into()),
                name: Some(name.into()),
                creation_timestamp: Some(Time("2026-11-24T10:30:00Z".parse().expect("timestamp"))),
                ..ObjectMeta::default()
            },
            data: status.map(|s| [("status".to_string(), s.to_string())].into()),
            ..ConfigMap::default()
        }
    }

    /// Issue #27: the dashboard dropped no error once its watches
    /// reconnected (a resumed watch yields no event).
    #[test]
    fn watch_errors_clear_on_an_answer_or_with_age() {
        let t0 = Instant::now();
        let mut e = WatchErrors::default();
        assert_eq!(e.current(t0), None);
        e.failed(0, "csrs: connection refused".into(), t0);
        e.failed(
            2,
            "operators: connection refused".into(),
            t0 + Duration::from_secs(1),
        );
        assert_eq!(
            e.current(t0 + Duration::from_secs(2)).as_deref(),
            Some("operators: connection refused")
        );
        e.answered(2);
        assert_eq!(
            e.current(t0 + Duration::from_secs(2)).as_deref(),
            Some("csrs: connection refused")
        );
        // A watch failing for good repeats its error within the backoff.
        e.failed(0, "csrs: 403".into(), t0 + Duration::from_secs(40));
        assert_eq!(
            e.current(t0 + Duration::from_secs(100)).as_deref(),
            Some("csrs: 403")
        );
        // Not repeated for longer than a backoff: the watch is back.
        assert_eq!(
            e.current(t0 + Duration::from_secs(40) + WATCH_ERROR_SHOWN),
            None
        );
        assert!(!e.any());
    }

    #[test]
    fn view_has_the_bootstrap_configmap() {
        let (csrs, _) = reflector::store::<CertificateSigningRequest>();
        let (nodes, _) = reflector::store::<Node>();
        let ops = reflector::store::Writer::<DynamicObject>::new(openshift::resource_of(
            "ClusterOperator",
        ))
        .as_reader();
        let (boot, mut w) = reflector::store::<ConfigMap>();
        let (progress, _) = reflector::store::<ConfigMap>();
        let boot_of = |boot: &Store<ConfigMap>| {
            view(
                "https://api:6443",
                &csrs,
                &nodes,
                &ops,
                boot,
                &progress,
                &None,
            )
            .view
            .expect("the watched objects")
            .bootstrap
        };
        assert_eq!(boot_of(&boot), None);
        // Another namespace's ConfigMap of that name is not the bootstrap's.
        w.apply_watcher_event(&watcher::Event::Apply(cm(
            "default",
            "bootstrap",
            Some("complete"),
        )));
        assert_eq!(boot_of(&boot), None);
        w.apply_watcher_event(&watcher::Event::Apply(cm(
            "kube-system",
            "bootstrap",
            Some("complete"),
        )));
        assert_eq!(
            boot_of(&boot),
            Some(BootstrapConfigMap {
                status: Some("complete".into()),
                time: Some("2026-11-24T10:30:00Z".into()),
            })
        );
        w.apply_watcher_event(&watcher::Event::Apply(cm("kube-system", "bootstrap", None)));
        assert_eq!(
            boot_of(&boot),
            Some(BootstrapConfigMap {
                status: None,
                time: Some("2026-11-24T10:30:00Z".into()),
            })
        );
    }

    #[test]
    fn the_bootstrap_progress_configmap_is_summarised() {
        let mut c = cm("kube-system", "okd-install-bootstrap-progress", None);
        c.data = Some(
            [
                (
                    "bootkube.json".to_string(),
                    "{\"timestamp\":\"2026-11-24T10:30:00Z\",\"phase\":\"service start\"}\n\
                     {\"timestamp\":\"2026-11-24T10:30:01Z\",\"stage\":\"etcd-bootstrap\",\"phase\":\"stage start\"}\n"
                        .to_string(),
                ),
                ("junk.json".to_string(), "not json\n".to_string()),
            ]
            .into(),
        );
        let p = progress_view(&[Arc::new(c)]);
        assert_eq!(p.len(), 1, "{p:?}");
        assert_eq!(p["bootkube"].running.as_deref(), Some("etcd-bootstrap"));
        let other = cm("default", "okd-install-bootstrap-progress", None);
        assert!(progress_view(&[Arc::new(other)]).is_empty());
    }
}
