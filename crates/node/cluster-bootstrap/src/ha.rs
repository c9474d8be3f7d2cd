//! Step 6 of [`crate::start`] on HA installs (openshift/cluster-bootstrap
//! `pkg/start/ha_checker.go`,
//! `waitForSelfHostedControlPlaneAvailabilityBeforeTearDown`): before the
//! bootstrap reports success, the production kube-apiserver, kube-scheduler
//! and kube-controller-manager must each be available on at least
//! [`MIN_MASTERS`] masters; each wait has its own limit (30 min upstream),
//! polled every [`POLL`].
//!
//! Two ways to see "available", per [`Source`]: the operators'
//! `status.nodeStatuses` with `currentRevision >= 1` (an OKD/OCP payload,
//! as upstream), or, for a control plane without operators, the masters'
//! mirror pods `kube-system/<component>-<node>` Ready, counted by node.

use std::path::Path;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};
use tracing::info;

/// How many masters each component must run on.
pub const MIN_MASTERS: usize = 2;

/// How often each condition is checked (upstream: 2 s).
pub const POLL: Duration = Duration::from_secs(2);

/// Upstream's limit for each condition.
pub const DEFAULT_HA_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// Upstream's teardown delay on HA installs: time for load balancers to
/// see the masters' API servers before the bootstrap's goes.
pub const DEFAULT_TEARDOWN_DELAY: Duration = Duration::from_secs(30);

/// Where availability is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// `kubeapiservers` / `kubeschedulers` / `kubecontrollermanagers`
    /// `.operator.openshift.io/cluster` `status.nodeStatuses`.
    Operators,
    /// Ready mirror pods `kube-system/<component>-<node>`.
    MirrorPods,
}

/// One of the three conditions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Component {
    /// The condition in upstream's words.
    pub what: &'static str,
    /// The operator resource's plural (`operator.openshift.io/v1`).
    pub plural: &'static str,
    /// Its kind.
    pub kind: &'static str,
    /// The static pod's name before `-<node>`.
    pub pod: &'static str,
}

/// The three conditions, in upstream's order.
pub const COMPONENTS: [Component; 3] = [
    Component {
        what: "API should be available on at least two master nodes",
        plural: "kubeapiservers",
        kind: "KubeAPIServer",
        pod: "kube-apiserver",
    },
    Component {
        what: "scheduler should be available on at least two master nodes",
        plural: "kubeschedulers",
        kind: "KubeScheduler",
        pod: "kube-scheduler",
    },
    Component {
        what: "kcm should be available on at least two master nodes",
        plural: "kubecontrollermanagers",
        kind: "KubeControllerManager",
        pod: "kube-controller-manager",
    },
];

/// Whether the install is HA as [CB] decides it: `controlPlane.replicas`
/// of the install-config in `manifests/cluster-config.yaml` is 3 or more.
/// A file that cannot be read or parsed counts as not HA.
pub fn is_ha(asset_dir: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(
        asset_dir
            .join(crate::copy::ASSET_MANIFESTS)
            .join("cluster-config.yaml"),
    ) else {
        return false;
    };
    let Ok(cm) = serde_yaml_ng::from_str::<serde_yaml_ng::Value>(&text) else {
        return false;
    };
    let Some(ic) = cm
        .get("data")
        .and_then(|d| d.get("install-config"))
        .and_then(|v| v.as_str())
    else {
        return false;
    };
    serde_yaml_ng::from_str::<serde_yaml_ng::Value>(ic)
        .ok()
        .and_then(|v| v.get("controlPlane")?.get("replicas")?.as_u64())
        .is_some_and(|r| r >= 3)
}

/// From an operator's `status`: how many nodes run a revision >= 1, and
/// upstream's summary (`[node at Current: c, Target: t]` …).
pub fn available_from_status(status: Option<&serde_json::Value>) -> (usize, String) {
    let list = status
        .and_then(|s| s.get("nodeStatuses"))
        .and_then(|n| n.as_array())
        .cloned()
        .unwrap_or_default();
    let mut n = 0;
    let mut msg = String::new();
    for s in &list {
        let num = |k: &str| s.get(k).and_then(|v| v.as_i64()).unwrap_or(0);
        let node = s.get("nodeName").and_then(|v| v.as_str()).unwrap_or("?");
        msg.push_str(&format!(
            " [{node} at Current: {}, Target: {}]",
            num("currentRevision"),
            num("targetRevision")
        ));
        if num("currentRevision") >= 1 {
            n += 1;
        }
    }
    if list.is_empty() {
        msg = " empty".into();
    }
    (n, msg)
}

/// From the pods of `kube-system`: the nodes where `<prefix>-<node>` is
/// Ready.
pub fn available_from_pods(pods: &[Pod], prefix: &str) -> (usize, String) {
    let mut nodes = std::collections::BTreeSet::new();
    for p in pods {
        let name = p.metadata.name.as_deref().unwrap_or_default();
        let ready = p
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"));
        let node = p.spec.as_ref().and_then(|s| s.node_name.clone());
        if let (true, Some(node)) = (ready, node)
            && name.strip_prefix(prefix).and_then(|r| r.strip_prefix('-')) == Some(node.as_str())
        {
            nodes.insert(node);
        }
    }
    let msg = format!(
        " Ready on [{}]",
        nodes.iter().cloned().collect::<Vec<_>>().join(", ")
    );
    (nodes.len(), msg)
}

async fn available(
    client: &kube::Client,
    source: Source,
    c: &Component,
) -> Result<(usize, String), String> {
    match source {
        Source::Operators => {
            let ar = kube::discovery::ApiResource {
                group: "operator.openshift.io".into(),
                version: "v1".into(),
                api_version: "operator.openshift.io/v1".into(),
                kind: c.kind.into(),
                plural: c.plural.into(),
            };
            let api: Api<kube::api::DynamicObject> = Api::all_with(client.clone(), &ar);
            let o = api
                .get("cluster")
                .await
                .map_err(|e| format!("error getting {}/cluster - {e}", c.plural))?;
            let (n, msg) = available_from_status(o.data.get("status"));
            Ok((n, format!("{}/cluster NodeStatuses:{msg}", c.plural)))
        }
        Source::MirrorPods => {
            let api: Api<Pod> = Api::namespaced(client.clone(), "kube-system");
            let list = api
                .list(&ListParams::default())
                .await
                .map_err(|e| format!("listing kube-system pods - {e}"))?;
            let (n, msg) = available_from_pods(&list.items, c.pod);
            Ok((n, format!("{}-<node>:{msg}", c.pod)))
        }
    }
}

/// Waits for one condition; `Err(last status)` when `timeout` passes.
async fn wait_one(
    client: &kube::Client,
    source: Source,
    c: &Component,
    timeout: Duration,
) -> Result<(), String> {
    info!(
        "Waiting up to {} for condition: {}",
        crate::pods::human(timeout),
        c.what
    );
    let mut last = String::new();
    let wait = async {
        loop {
            match available(client, source, c).await {
                Ok((n, msg)) if n >= MIN_MASTERS => {
                    info!("condition {:?} has been satisfied, reason: {msg}", c.what);
                    return;
                }
                Ok((_, msg)) | Err(msg) => {
                    if msg != last {
                        info!("polling will continue, last status: {msg}");
                        last = msg;
                    }
                }
            }
            tokio::time::sleep(POLL).await;
        }
    };
    match tokio::time::timeout(timeout, wait).await {
        Ok(()) => Ok(()),
        Err(_) => Err(format!("time out waiting for condition: {:?}", c.what)),
    }
}

/// Waits for the three conditions at once, each up to `timeout`.
///
/// # Errors
/// The conditions that timed out, joined.
pub async fn wait_available(
    client: &kube::Client,
    source: Source,
    timeout: Duration,
) -> Result<(), String> {
    let results = futures_util::future::join_all(
        COMPONENTS
            .iter()
            .map(|c| wait_one(client, source, c, timeout)),
    )
    .await;
    let errs: Vec<String> = results.into_iter().filter_map(Result::err).collect();
    if errs.is_empty() {
        Ok(())
    } else {
        Err(errs.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operator_status_counts_nodes_at_a_revision() {
        let s = serde_json::json!({"nodeStatuses": [
            {"nodeName": "m0", "currentRevision": 3, "targetRevision": 3},
            {"nodeName": "m1", "currentRevision": 0, "targetRevision": 3},
            {"nodeName": "m2", "currentRevision": 1},
        ]});
        let (n, msg) = available_from_status(Some(&s));
        assert_eq!(n, 2);
        assert_eq!(
            msg,
            " [m0 at Current: 3, Target: 3] [m1 at Current: 0, Target: 3] [m2 at Current: 1, Target: 0]"
        );
        assert_eq!(available_from_status(None), (0, " empty".into()));
    }

    #[test]
    fn mirror_pods_count_by_node_when_ready() {
        let pod = |name: &str, node: &str, ready: &str| -> Pod {
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": name, "namespace": "kube-system"},
                "spec": {"nodeName": node, "containers": []},
                "status": {"conditions": [{"type": "Ready", "status": ready}]},
            }))
            .unwrap()
        };
        let pods = [
            pod("kube-apiserver-m0", "m0", "True"),
            pod("kube-apiserver-m1", "m1", "False"),
            pod("kube-apiserver-m2", "m2", "True"),
            // another node's name, or another component: not counted
            pod("kube-apiserver-m3", "m4", "True"),
            pod("kube-scheduler-m1", "m1", "True"),
        ];
        assert_eq!(available_from_pods(&pods, "kube-apiserver").0, 2);
        assert_eq!(available_from_pods(&pods, "kube-scheduler").0, 1);
    }

    #[test]
    fn ha_is_three_or_more_control_plane_replicas() {
        let d = tempfile::tempdir().unwrap();
        assert!(!is_ha(d.path()));
        let m = d.path().join("manifests");
        std::fs::create_dir_all(&m).unwrap();
        let write = |r: u32| {
            std::fs::write(
                m.join("cluster-config.yaml"),
                format!(
                    "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: cluster-config-v1, namespace: kube-system}}\ndata:\n  install-config: |\n    apiVersion: v1\n    controlPlane:\n      name: master\n      replicas: {r}\n"
                ),
            )
            .unwrap();
        };
        write(1);
        assert!(!is_ha(d.path()));
        write(3);
        assert!(is_ha(d.path()));
    }
}
