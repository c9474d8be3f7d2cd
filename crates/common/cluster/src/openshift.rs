//! The OpenShift API types the cluster commands read, as dynamic resources (their
//! CRDs come with the release payload; openshift/api).

use kube::api::{Api, ApiResource, DynamicObject};
use kube::core::GroupVersionKind;

fn resource(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural)
}

/// The ApiResource of `kind`: `ClusterVersion`, `ClusterOperator`, `Etcd`
/// or `Route`.
pub fn resource_of(kind: &str) -> ApiResource {
    match kind {
        "ClusterVersion" => resource("config.openshift.io", "v1", kind, "clusterversions"),
        "ClusterOperator" => resource("config.openshift.io", "v1", kind, "clusteroperators"),
        "Etcd" => resource("operator.openshift.io", "v1", kind, "etcds"),
        _ => resource("route.openshift.io", "v1", "Route", "routes"),
    }
}

/// `clusterversions.config.openshift.io` (cluster-scoped).
pub fn cluster_versions(client: kube::Client) -> Api<DynamicObject> {
    Api::all_with(
        client,
        &resource(
            "config.openshift.io",
            "v1",
            "ClusterVersion",
            "clusterversions",
        ),
    )
}

/// `clusteroperators.config.openshift.io` (cluster-scoped).
pub fn cluster_operators(client: kube::Client) -> Api<DynamicObject> {
    Api::all_with(
        client,
        &resource(
            "config.openshift.io",
            "v1",
            "ClusterOperator",
            "clusteroperators",
        ),
    )
}

/// `etcds.operator.openshift.io` (cluster-scoped; the one named `cluster`).
pub fn etcds(client: kube::Client) -> Api<DynamicObject> {
    Api::all_with(
        client,
        &resource("operator.openshift.io", "v1", "Etcd", "etcds"),
    )
}

/// `infrastructures.config.openshift.io` (cluster-scoped; the one named
/// `cluster`).
pub fn infrastructures(client: kube::Client) -> Api<DynamicObject> {
    Api::all_with(
        client,
        &resource(
            "config.openshift.io",
            "v1",
            "Infrastructure",
            "infrastructures",
        ),
    )
}

/// `kubeapiservers.operator.openshift.io` (cluster-scoped; the one named
/// `cluster`).
pub fn kube_apiservers(client: kube::Client) -> Api<DynamicObject> {
    Api::all_with(
        client,
        &resource(
            "operator.openshift.io",
            "v1",
            "KubeAPIServer",
            "kubeapiservers",
        ),
    )
}

/// `routes.route.openshift.io` in `namespace`.
pub fn routes(client: kube::Client, namespace: &str) -> Api<DynamicObject> {
    Api::namespaced_with(
        client,
        namespace,
        &resource("route.openshift.io", "v1", "Route", "routes"),
    )
}

/// One `status.conditions[]` entry of an OpenShift object.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Condition {
    /// `type`.
    pub type_: String,
    /// `status`: `True`, `False`, `Unknown`.
    pub status: String,
    /// `reason`.
    pub reason: String,
    /// `message`.
    pub message: String,
    /// `lastTransitionTime` (RFC 3339).
    pub last_transition: String,
}

/// The `status.conditions` of a dynamic object.
pub fn conditions(obj: &DynamicObject) -> Vec<Condition> {
    let s = |v: &serde_json::Value, k: &str| v[k].as_str().unwrap_or_default().to_string();
    obj.data["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| Condition {
            type_: s(c, "type"),
            status: s(c, "status"),
            reason: s(c, "reason"),
            message: s(c, "message"),
            last_transition: s(c, "lastTransitionTime"),
        })
        .collect()
}

/// The condition of `type_`, if present.
pub fn condition<'a>(conds: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conds.iter().find(|c| c.type_ == type_)
}

/// How often a kind the API server does not serve yet (its CRD not
/// created) is asked for again.
pub const UNSERVED_RETRY: std::time::Duration = std::time::Duration::from_secs(30);

/// Returns once the API server serves `api`'s kind (a list of at most one
/// object succeeds), asking every [`UNSERVED_RETRY`]. A watch on a kind
/// whose CRD does not exist yet would otherwise retry its list about once a
/// second.
pub async fn until_served(api: &Api<DynamicObject>) {
    let lp = kube::api::ListParams::default().limit(1);
    while api.list(&lp).await.is_err() {
        tokio::time::sleep(UNSERVED_RETRY).await;
    }
}

/// A watch of a dynamic kind kept in a store: waits with [`until_served`]
/// until the kind is served, then List+Watch with the default backoff. The
/// stream must be polled to make progress; each item is `Some(cause)` (the
/// [`crate::ApiCause`] text) for a failed request, `None` for anything else.
pub fn served_reflector(
    api: Api<DynamicObject>,
    resource: ApiResource,
    cfg: kube::runtime::watcher::Config,
) -> (
    kube::runtime::reflector::Store<DynamicObject>,
    futures_util::stream::BoxStream<'static, Option<String>>,
) {
    use futures_util::StreamExt as _;
    let writer = kube::runtime::reflector::store::Writer::<DynamicObject>::new(resource);
    let reader = writer.as_reader();
    let probe = api.clone();
    let stream = futures_util::stream::once(async move {
        until_served(&probe).await;
        None
    })
    .chain(watch_into(writer, api, cfg))
    .boxed();
    (reader, stream)
}

/// A List+Watch of a built-in kind `K` (CSRs, Nodes, ConfigMaps) kept in a
/// store, with the default backoff. Like [`served_reflector`], the stream
/// must be polled; each item is `Some(cause)` (the [`crate::ApiCause`]
/// text) for a failed request, `None` for anything else.
pub fn reflected<K>(
    api: Api<K>,
    cfg: kube::runtime::watcher::Config,
) -> (
    kube::runtime::reflector::Store<K>,
    futures_util::stream::BoxStream<'static, Option<String>>,
)
where
    K: kube::Resource<DynamicType = ()>
        + Clone
        + std::fmt::Debug
        + serde::de::DeserializeOwned
        + Send
        + Sync
        + 'static,
{
    use futures_util::StreamExt as _;
    let (reader, writer) = kube::runtime::reflector::store();
    (reader, watch_into(writer, api, cfg).boxed())
}

/// The watch of `api` applied to `writer`, each event mapped to its error's
/// classified cause or `None`.
fn watch_into<K>(
    writer: kube::runtime::reflector::store::Writer<K>,
    api: Api<K>,
    cfg: kube::runtime::watcher::Config,
) -> impl futures_util::Stream<Item = Option<String>> + Send + 'static
where
    K: kube::Resource
        + Clone
        + std::fmt::Debug
        + serde::de::DeserializeOwned
        + Send
        + Sync
        + 'static,
    K::DynamicType: Eq + std::hash::Hash + Clone + Send + Sync,
{
    use futures_util::StreamExt as _;
    use kube::runtime::WatchStreamExt as _;
    kube::runtime::reflector(writer, kube::runtime::watcher(api, cfg))
        .default_backoff()
        .map(|e| e.err().map(|e| crate::ApiCause::of_watch(&e).to_string()))
}

/// How many ClusterOperators there are, how many are Available, and the
/// names of the Degraded ones (sorted).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OperatorSummary {
    /// Operators with `Available=True`.
    pub available: usize,
    /// All operators.
    pub total: usize,
    /// Names of the operators with `Degraded=True`, sorted.
    pub degraded: Vec<String>,
}

/// The [`OperatorSummary`] of `ops`.
pub fn operator_summary<O: std::ops::Deref<Target = DynamicObject>>(ops: &[O]) -> OperatorSummary {
    let mut s = OperatorSummary {
        total: ops.len(),
        ..Default::default()
    };
    for o in ops {
        let c = conditions(o);
        if condition(&c, "Available").is_some_and(|c| c.status == "True") {
            s.available += 1;
        }
        if condition(&c, "Degraded").is_some_and(|c| c.status == "True") {
            s.degraded.push(o.metadata.name.clone().unwrap_or_default());
        }
    }
    s.degraded.sort();
    s
}

/// The condition on `etcds.operator.openshift.io/cluster` that says the
/// bootstrap's etcd member is gone (cluster-etcd-operator
/// `pkg/operator/bootstrapteardown`); `wait-for bootstrap-complete` and
/// `destroy bootstrap` wait for it to be `True`.
pub const BOOTSTRAP_MEMBER_REMOVED: &str = "EtcdBootstrapMemberRemoved";

/// Whether the bootstrap's etcd member is gone, as
/// `etcds.operator.openshift.io/cluster` says (condition
/// `EtcdBootstrapMemberRemoved`, set by cluster-etcd-operator's bootstrap
/// teardown controller, or by the bootstrap itself for a payload without
/// operators): `Ok(None)` when removed, `Ok(Some(why not))` otherwise, in
/// words for a refusal.
///
/// # Errors
/// The API cannot be read (other than the object or its kind missing).
pub async fn bootstrap_member_kept(client: kube::Client) -> Result<Option<String>, kube::Error> {
    let o = match etcds(client).get_opt("cluster").await {
        Ok(Some(o)) => o,
        Ok(None) => {
            return Ok(Some(
                "etcds.operator.openshift.io/cluster does not exist yet (the etcd operator has not started)".into(),
            ));
        }
        Err(kube::Error::Api(e)) if e.code == 404 => {
            return Ok(Some(
                "the cluster serves no etcds.operator.openshift.io yet".into(),
            ));
        }
        Err(e) => return Err(e),
    };
    let cond = o
        .data
        .pointer("/status/conditions")
        .and_then(|c| c.as_array())
        .and_then(|cs| {
            cs.iter()
                .find(|c| c["type"] == BOOTSTRAP_MEMBER_REMOVED)
                .cloned()
        });
    Ok(match cond {
        Some(c) if c["status"] == "True" => None,
        Some(c) => Some(format!(
            "etcds/cluster: {BOOTSTRAP_MEMBER_REMOVED} is {} ({}: {})",
            c["status"].as_str().unwrap_or("?"),
            c["reason"].as_str().unwrap_or(""),
            c["message"].as_str().unwrap_or("")
        )),
        None => Some(format!(
            "etcds/cluster has no {BOOTSTRAP_MEMBER_REMOVED} condition yet: the bootstrap's etcd member is still a member"
        )),
    })
}
