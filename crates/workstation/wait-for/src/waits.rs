//! The waits, each with openshift-install's log lines and limits
//! (openshift/installer `cmd/openshift-install/waitfor.go`, `create.go`).

use std::pin::pin;
use std::time::{Duration, Instant};

use futures_util::StreamExt as _;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DynamicObject, ListParams};
use kube::runtime::WatchStreamExt as _;
use kube::runtime::watcher::{self, Event};
use okd_cluster::Cluster;
use tracing::{debug, error, info, warn};

use crate::duration::up_to;
use okd_cluster::openshift::{self as resources, Condition, condition, conditions};

/// A failed wait: the cause (`timed out waiting for the condition`, or the
/// last thing seen) and openshift-install's explanation.
#[derive(Debug)]
pub struct Failure {
    /// What went wrong.
    pub cause: String,
    /// The explanation openshift-install prints with it.
    pub explain: &'static str,
}

const API_EXPLAIN: &str = "Failed waiting for Kubernetes API. This error usually happens when there is a problem on the bootstrap host that prevents creating a temporary control plane.";
const BOOTSTRAP_EXPLAIN: &str = "Failed to wait for bootstrapping to complete. This error usually happens when there is a problem with control plane hosts that prevents the control plane operators from creating the control plane.";
const TIMED_OUT: &str = "timed out waiting for the condition";

/// Where the API is asked through the load balancer and where the
/// bootstrap's own API server listens, to tell a balancer with no server
/// UP from an API that is not up (the inventory's API address and port,
/// the bootstrap host's address on 6443).
#[derive(Debug, Clone)]
pub struct ApiPaths {
    /// The bootstrap's own API server (`<address>:6443`).
    pub own: std::net::SocketAddr,
    /// The API address and port of the load balancer.
    pub via: std::net::SocketAddr,
    /// `api.<domain>`.
    pub host: String,
}

/// How often the API's path is compared while the API does not answer.
const COMPARE_EVERY: Duration = Duration::from_secs(20);

/// Polls `/version` every 2 s until it answers or `limit` passes.
/// `Still waiting for the Kubernetes API: <err>` is logged (debug) when the
/// text after the error's last `:` changes, or every 15 identical errors; a
/// cause that will not fix itself (wrong CA, refused certificate) is also
/// logged once as a warning at once. With `paths`, while the API does not
/// answer, `/readyz` through the balancer is compared with the bootstrap's
/// own every 20 s: a bootstrap that is ready behind a balancer that does
/// not pass it on, twice in a row (a balancer that has just started may
/// still try a server it has not checked yet), is named as that, with the
/// fix, as a warning when first seen and again as an error when the wait
/// fails.
pub async fn api(
    cluster: &Cluster,
    limit: Duration,
    paths: Option<&ApiPaths>,
) -> Result<String, Failure> {
    info!(
        "Waiting up to {} for the Kubernetes API at {}...",
        up_to(limit),
        cluster.server()
    );
    let deadline = Instant::now() + limit;
    let mut last_tail = String::new();
    let mut same = 0u32;
    let mut warned = String::new();
    let mut compared: Option<Instant> = None;
    let mut diagnosis: Option<String> = None;
    let mut seen_before = false;
    loop {
        match cluster.version().await {
            Ok(v) => {
                info!("API {v} up");
                return Ok(v);
            }
            Err(e) => {
                let text = e.to_string();
                let tail = text.rsplit(':').next().unwrap_or("").trim().to_string();
                same += 1;
                if tail != last_tail || same >= 15 {
                    debug!("Still waiting for the Kubernetes API: {text}");
                    last_tail = tail;
                    same = 0;
                }
                if !e.is_transient() && warned != text {
                    warn!("{text}");
                    warned = text;
                }
                if let Some(p) =
                    paths.filter(|_| compared.is_none_or(|t| t.elapsed() >= COMPARE_EVERY))
                {
                    compared = Some(Instant::now());
                    let now = lb_diagnosis(p).await;
                    if now.is_none() {
                        diagnosis = None;
                    } else if !seen_before {
                        debug!("Load balancer: {}", now.as_deref().unwrap_or_default());
                    } else if diagnosis.is_none() {
                        warn!("{}", now.as_deref().unwrap_or_default());
                        diagnosis = now.clone();
                    }
                    seen_before = now.is_some();
                }
            }
        }
        if Instant::now() + Duration::from_secs(2) > deadline {
            if let Some(d) = &diagnosis {
                error!("{d}");
            }
            error!("{API_EXPLAIN}");
            return Err(Failure {
                cause: TIMED_OUT.into(),
                explain: API_EXPLAIN,
            });
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}

/// The balancer named as the cause when the bootstrap's own API is ready
/// and the API address does not pass that on; `None` otherwise (the
/// bootstrap is not ready yet, or both answer 200).
async fn lb_diagnosis(p: &ApiPaths) -> Option<String> {
    use okd_probe::ApiPath;
    let limit = Duration::from_secs(5);
    let (own, via) = (p.own, p.via);
    match okd_probe::compare_api(own, via, &p.host, limit, Duration::ZERO).await {
        ApiPath::BootstrapNotReady(why) => {
            debug!("The bootstrap's own API at {own} is not ready: {why}");
            None
        }
        ApiPath::Same => None,
        ApiPath::Differs(r) => Some(format!(
            "The bootstrap's own API at {own} answers /readyz with 200, but through the load balancer at {via} it answers {} ({}): point the API frontend at port 6443 of the bootstrap and masters",
            r.status, r.body
        )),
        ApiPath::Fails(e) => Some(format!(
            "The bootstrap's own API at {own} answers /readyz with 200, but the load balancer at {via} passes nothing on ({e}): it has no API server UP; {}",
            okd_probe::API_BACKEND_FIX
        )),
    }
}

/// Watches ConfigMap `kube-system/bootstrap` until `data.status` is
/// `complete`, logging each status seen.
pub async fn bootstrap_configmap(cluster: &Cluster, limit: Duration) -> Result<(), Failure> {
    info!(
        "Waiting up to {} for bootstrapping to complete...",
        up_to(limit)
    );
    let api: Api<ConfigMap> = Api::namespaced(cluster.client(), "kube-system");
    let cfg = watcher::Config::default().fields("metadata.name=bootstrap");
    let stream = watcher::watcher(api, cfg).default_backoff();
    let wait = async {
        let mut stream = pin!(stream);
        while let Some(ev) = stream.next().await {
            match ev {
                Ok(Event::Apply(cm) | Event::InitApply(cm)) => {
                    match cm.data.as_ref().and_then(|d| d.get("status")) {
                        Some(s) => {
                            debug!("Bootstrap status: {s}");
                            if s == "complete" {
                                return true;
                            }
                        }
                        None => debug!("No status found in bootstrap configmap"),
                    }
                }
                Ok(_) => {}
                Err(e) => debug!(
                    "Watching kube-system/bootstrap at {}: {e}",
                    cluster.server()
                ),
            }
        }
        false
    };
    match tokio::time::timeout(limit, wait).await {
        Ok(true) => Ok(()),
        _ => {
            error!("{BOOTSTRAP_EXPLAIN}");
            Err(Failure {
                cause: TIMED_OUT.into(),
                explain: BOOTSTRAP_EXPLAIN,
            })
        }
    }
}

/// Watches `etcds.operator.openshift.io/cluster` until its condition
/// `EtcdBootstrapMemberRemoved` is `True` (no limit of its own upstream;
/// `limit` when given).
pub async fn etcd_bootstrap_removed(
    cluster: &Cluster,
    limit: Option<Duration>,
) -> Result<(), Failure> {
    info!("Waiting for the bootstrap etcd member to be removed...");
    let cfg = watcher::Config::default().fields("metadata.name=cluster");
    let api = resources::etcds(cluster.client());
    let stream = watcher::watcher(api.clone(), cfg).default_backoff();
    let wait = async {
        resources::until_served(&api).await;
        let mut stream = pin!(stream);
        while let Some(ev) = stream.next().await {
            match ev {
                Ok(Event::Apply(o) | Event::InitApply(o)) => {
                    let c = conditions(&o);
                    if condition(&c, okd_cluster::openshift::BOOTSTRAP_MEMBER_REMOVED)
                        .is_some_and(|c| c.status == "True")
                    {
                        return true;
                    }
                }
                Ok(_) => {}
                Err(e) => debug!("Watching etcds/cluster at {}: {e}", cluster.server()),
            }
        }
        false
    };
    let done = match limit {
        Some(l) => tokio::time::timeout(l, wait).await.unwrap_or(false),
        None => wait.await,
    };
    if done {
        info!("Bootstrap etcd member has been removed");
        Ok(())
    } else {
        error!("{BOOTSTRAP_EXPLAIN}");
        Err(Failure {
            cause: "timed out waiting for the bootstrap etcd member to be removed".into(),
            explain: BOOTSTRAP_EXPLAIN,
        })
    }
}

/// Whether ClusterVersion conditions say initialized: Available=True,
/// Failing=False, Progressing=False. Otherwise the message to show: the
/// Failing message when Failing is True, else the Progressing message.
pub fn cluster_version_state(conds: &[Condition]) -> Result<(), String> {
    let is = |t: &str, s: &str| condition(conds, t).is_some_and(|c| c.status == s);
    if is("Available", "True") && is("Failing", "False") && is("Progressing", "False") {
        return Ok(());
    }
    if let Some(f) = condition(conds, "Failing").filter(|c| c.status == "True") {
        return Err(f.message.clone());
    }
    Err(condition(conds, "Progressing")
        .map(|c| c.message.clone())
        .unwrap_or_else(|| "Working towards the release".to_string()))
}

/// Watches `clusterversions/version` until [`cluster_version_state`] is Ok.
pub async fn cluster_version(cluster: &Cluster, limit: Duration) -> Result<(), Failure> {
    info!(
        "Waiting up to {} for the cluster at {} to initialize...",
        up_to(limit),
        cluster.server()
    );
    let cfg = watcher::Config::default().fields("metadata.name=version");
    let api = resources::cluster_versions(cluster.client());
    let stream = watcher::watcher(api.clone(), cfg).default_backoff();
    let mut last = String::new();
    let wait = async {
        resources::until_served(&api).await;
        let mut stream = pin!(stream);
        while let Some(ev) = stream.next().await {
            match ev {
                Ok(Event::Apply(o) | Event::InitApply(o)) => {
                    match cluster_version_state(&conditions(&o)) {
                        Ok(()) => return true,
                        Err(msg) => {
                            if msg != last {
                                debug!("Still waiting for the cluster to initialize: {msg}");
                                last = msg;
                            }
                        }
                    }
                }
                Ok(_) => {}
                Err(e) => debug!(
                    "Watching clusterversions/version at {}: {e}",
                    cluster.server()
                ),
            }
        }
        false
    };
    let done = tokio::time::timeout(limit, wait).await.unwrap_or(false);
    if done {
        Ok(())
    } else {
        Err(Failure {
            cause: if last.is_empty() {
                TIMED_OUT.to_string()
            } else {
                last.clone()
            },
            explain: "",
        })
    }
}

/// The operators not yet stable: Progressing not False, or False for less
/// than `stable`. Empty when every operator is stable (and there is one).
pub fn unstable_operators(
    ops: &[DynamicObject],
    stable: Duration,
    now: time::OffsetDateTime,
) -> Vec<String> {
    let mut bad = Vec::new();
    for o in ops {
        let name = o.metadata.name.clone().unwrap_or_default();
        let c = conditions(o);
        let ok = condition(&c, "Progressing").is_some_and(|p| {
            p.status == "False"
                && time::OffsetDateTime::parse(
                    &p.last_transition,
                    &time::format_description::well_known::Rfc3339,
                )
                .is_ok_and(|t| now - t >= stable)
        });
        if !ok {
            bad.push(name);
        }
    }
    bad.sort();
    bad
}

/// Every second, checks that every ClusterOperator has Progressing=False
/// for at least `stable`; the objects come from one watch.
pub async fn operators_stable(
    cluster: &Cluster,
    limit: Duration,
    stable: Duration,
) -> Result<(), Failure> {
    info!(
        "Waiting up to {} to ensure each cluster operator has finished progressing...",
        up_to(limit)
    );
    let (store, stream) = resources::served_reflector(
        resources::cluster_operators(cluster.client()),
        resources::resource_of("ClusterOperator"),
        watcher::Config::default(),
    );
    let deadline = Instant::now() + limit;
    let mut stream = pin!(stream);
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    let mut last_bad = Vec::new();
    loop {
        tokio::select! {
            ev = stream.next() => {
                if let Some(Some(e)) = ev {
                    debug!("Watching clusteroperators at {}: {e}", cluster.server());
                }
            }
            _ = tick.tick() => {
                let ops: Vec<DynamicObject> = store.state().iter().map(|o| (**o).clone()).collect();
                if !ops.is_empty() {
                    let bad = unstable_operators(&ops, stable, time::OffsetDateTime::now_utc());
                    if bad.is_empty() {
                        info!("All cluster operators have completed progressing");
                        return Ok(());
                    }
                    last_bad = bad;
                }
                if Instant::now() >= deadline {
                    let list = format!("[{}]", last_bad.join(" "));
                    error!("These cluster operators were not stable: {list}");
                    return Err(Failure {
                        cause: format!("These cluster operators were not stable: {list}"),
                        explain: "",
                    });
                }
            }
        }
    }
}

/// Polls route `openshift-console/console` every 2 s for up to `limit`;
/// a 404 (no console, or no route API) ends the wait with a warning.
pub async fn console_url(cluster: &Cluster, limit: Duration) -> Option<String> {
    info!("Checking to see if there is a route at openshift-console/console...");
    let api = resources::routes(cluster.client(), "openshift-console");
    let deadline = Instant::now() + limit;
    loop {
        let last = match api.get("console").await {
            Ok(r) => {
                let admitted = r.data["status"]["ingress"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .find(|i| {
                        i["conditions"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .any(|c| c["type"] == "Admitted" && c["status"] == "True")
                    })
                    .and_then(|i| i["host"].as_str().map(str::to_string));
                if let Some(host) = admitted {
                    return Some(format!("https://{host}"));
                }
                "the console route is not admitted yet".to_string()
            }
            Err(kube::Error::Api(s)) if s.code == 404 => {
                warn!("Cluster does not have a console available: {}", s.message);
                return None;
            }
            Err(e) => cluster
                .api_error(
                    "/apis/route.openshift.io/v1/namespaces/openshift-console/routes/console",
                    e,
                )
                .to_string(),
        };
        if Instant::now() >= deadline {
            warn!("Cluster does not have a console available: {last}");
            return None;
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}

/// Logs every ClusterOperator condition but Upgradeable: Available and
/// Degraded at error level, the others at info level
/// (`Cluster operator <name> <Type> is <Status> with <Reason>: <Message>`).
pub async fn log_operator_conditions(cluster: &Cluster) {
    let list = match resources::cluster_operators(cluster.client())
        .list(&ListParams::default())
        .await
    {
        Ok(l) => l,
        Err(e) => {
            debug!(
                "Listing clusteroperators: {}",
                cluster.api_error("/apis/config.openshift.io/v1/clusteroperators", e)
            );
            return;
        }
    };
    for o in &list.items {
        let name = o.metadata.name.clone().unwrap_or_default();
        for c in conditions(o) {
            let line = format!(
                "Cluster operator {name} {} is {} with {}: {}",
                c.type_, c.status, c.reason, c.message
            );
            match c.type_.as_str() {
                "Upgradeable" => {}
                "Available" | "Degraded" => error!("{line}"),
                _ => info!("{line}"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cond(t: &str, s: &str, m: &str) -> Condition {
        Condition {
            type_: t.into(),
            status: s.into(),
            message: m.into(),
            ..Default::default()
        }
    }

    #[test]
    fn cluster_version_rules() {
        let done = [
            cond("Available", "True", ""),
            cond("Failing", "False", ""),
            cond("Progressing", "False", ""),
        ];
        assert_eq!(cluster_version_state(&done), Ok(()));
        let failing = [
            cond("Available", "False", ""),
            cond("Failing", "True", "boom"),
            cond("Progressing", "True", "p"),
        ];
        assert_eq!(cluster_version_state(&failing), Err("boom".into()));
        let prog = [
            cond("Available", "False", ""),
            cond("Failing", "False", ""),
            cond("Progressing", "True", "Working towards 4.19"),
        ];
        assert_eq!(
            cluster_version_state(&prog),
            Err("Working towards 4.19".into())
        );
    }
}
