//! `okd-install approve-csr`: approves the CSRs of nodes joining a
//! user-provisioned cluster — and only those.
//!
//! openshift-install's bootstrap node runs `approve-csr.sh`, which approves
//! every pending CSR while bootstrapping (openshift/installer
//! `data/data/bootstrap/files/usr/local/bin/approve-csr.sh`); after that UPI
//! users approve by hand (openshift/installer#3711). Both approve a forged
//! node as readily as a real one. Here each CSR must pass the identity
//! rules of [`rules`]: a client CSR for a node name okd-install knows (from
//! agent-config.yaml/bastion-config.yaml, or an explicit
//! `--node-name-pattern`) filed by the node-bootstrapper identity; a serving
//! CSR filed by that node itself naming only its own host names and
//! addresses. Anything else stays pending, with a log line and a Warning
//! event on the CSR that names the rule.
//!
//! A node gets one bootstrap client certificate: the node-bootstrapper
//! kubeconfig is in every config the machine-config server hands out, so
//! whoever reaches it can file more. As openshift/cluster-machine-approver
//! does (`pkg/controller/csr_check.go`, `authorizeNodeClientCSR`: the Node
//! must not exist yet), a client CSR is refused once the node's Node object
//! exists or once a client CSR for that node is Approved — read from the
//! API (the CSR list, or the watch's initial list, before any pending CSR is
//! decided), so the rule holds across restarts and for one-shot runs. Nodes
//! are read with a GET per client CSR in a one-shot run, from a List+Watch
//! of Nodes (complete before any CSR is decided) under `--watch`.
//! Approved CSRs are garbage-collected by kube-controller-manager after an
//! hour; by then a real node has registered its Node object.

pub mod rules;

use std::collections::{BTreeMap, HashSet};
use std::net::IpAddr;
use std::time::Duration;

use futures_util::StreamExt as _;
use k8s_openapi::api::certificates::v1::{
    CertificateSigningRequest, CertificateSigningRequestCondition,
};
use k8s_openapi::api::core::v1::{Event, Node, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kube::api::{Api, ListParams, PostParams};
use okd_cluster::{Cluster, ClusterError};
use tracing::{debug, info, warn};

pub use rules::{CsrKind, CsrView, Identities, KnownNode, Refusal, Verdict};

/// The event source and approval reason okd-install writes.
pub const COMPONENT: &str = "okd-install-approve-csr";

/// What one pass did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Summary {
    /// Approved CSRs: (name, kind, node).
    pub approved: Vec<(String, CsrKind, String)>,
    /// Refused CSRs: (name, rule reason).
    pub refused: Vec<(String, &'static str)>,
    /// Pending CSRs seen.
    pub pending: usize,
}

/// Whether a CSR has neither an Approved nor a Denied/Failed condition.
pub fn is_pending(csr: &CertificateSigningRequest) -> bool {
    csr.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_none_or(|c| {
            !c.iter()
                .any(|c| matches!(c.type_.as_str(), "Approved" | "Denied" | "Failed"))
        })
}

/// The approver: a cluster client, the identities, what was already
/// reported (so a refused CSR is logged and evented once), and which node
/// identities ([`Identities::identity`]) have an Approved client CSR (name).
pub struct Approver {
    cluster: Cluster,
    ids: Identities,
    reported: HashSet<String>,
    issued: BTreeMap<String, String>,
    nodes: Option<kube::runtime::reflector::Store<Node>>,
}

impl Approver {
    /// An approver for `cluster` with `ids`.
    pub fn new(cluster: Cluster, ids: Identities) -> Approver {
        Approver {
            cluster,
            ids,
            reported: HashSet::new(),
            issued: BTreeMap::new(),
            nodes: None,
        }
    }

    fn csrs(&self) -> Api<CertificateSigningRequest> {
        Api::all(self.cluster.client())
    }

    /// Lists the CSRs once and decides every pending one, oldest first,
    /// after noting every Approved client CSR.
    ///
    /// # Errors
    /// [`ClusterError`] when the list fails; a failed approval is logged
    /// and the CSR stays pending.
    pub async fn pass(&mut self) -> Result<Summary, ClusterError> {
        let list = self
            .csrs()
            .list(&ListParams::default())
            .await
            .map_err(|e| {
                self.cluster
                    .api_error("/apis/certificates.k8s.io/v1/certificatesigningrequests", e)
            })?;
        let mut summary = Summary::default();
        for csr in oldest_first(list.items, |c| self.note_issued(c)) {
            self.handle(&csr, &mut summary).await;
        }
        Ok(summary)
    }

    /// Remembers `csr` when it is an Approved (not Failed) client CSR:
    /// its node has had its bootstrap client certificate.
    fn note_issued(&mut self, csr: &CertificateSigningRequest) {
        let conds = csr.status.as_ref().and_then(|s| s.conditions.as_ref());
        let has = |t: &str| conds.is_some_and(|c| c.iter().any(|c| c.type_ == t));
        if csr.spec.signer_name != rules::CLIENT_SIGNER || !has("Approved") || has("Failed") {
            return;
        }
        if let Some(node) = rules::requested_node(&csr.spec.request.0) {
            let name = csr.metadata.name.clone().unwrap_or_default();
            self.issued.entry(self.ids.identity(&node)).or_insert(name);
        }
    }

    /// Why a bootstrap client CSR for `node` that passed the rules must
    /// still wait: the node has an Approved client CSR, or its Node exists
    /// (under any of its names), or the Node could not be read.
    async fn joined(&self, node: &str) -> Option<Refusal> {
        if let Some(csr) = self.issued.get(&self.ids.identity(node)) {
            return Some(Refusal::ClientIssued {
                node: node.to_string(),
                csr: csr.clone(),
            });
        }
        let nodes = Api::<Node>::all(self.cluster.client());
        for name in self.ids.node_names(node) {
            if let Some(store) = &self.nodes {
                let key = kube::runtime::reflector::ObjectRef::new(&name);
                if store.get(&key).is_some() {
                    return Some(Refusal::NodeExists(name));
                }
                continue;
            }
            match nodes.get_opt(&name).await {
                Ok(Some(_)) => return Some(Refusal::NodeExists(name)),
                Ok(None) => {}
                Err(e) => {
                    let e = self.cluster.api_error(&format!("/api/v1/nodes/{name}"), e);
                    return Some(Refusal::NodeLookup(e.to_string()));
                }
            }
        }
        None
    }

    /// Decides one CSR (if pending) and acts on it.
    pub async fn handle(&mut self, csr: &CertificateSigningRequest, summary: &mut Summary) {
        if !is_pending(csr) {
            self.note_issued(csr);
            return;
        }
        summary.pending += 1;
        let view = CsrView::of(csr);
        // A pattern-matched node's addresses come from its Node object.
        let mut node_addresses: BTreeMap<String, Vec<IpAddr>> = BTreeMap::new();
        if view.signer == rules::SERVING_SIGNER
            && let Some(node) = view.username.strip_prefix("system:node:")
            && self.ids.known(node).is_none()
            && self.ids.matches_pattern(node)
        {
            match node_addresses_of(&self.cluster, node).await {
                Ok(a) => {
                    node_addresses.insert(node.to_string(), a);
                }
                Err(e) => debug!("reading node {node}: {e}"),
            }
        }
        let mut lookup = |name: &str| -> Result<Vec<IpAddr>, String> {
            node_addresses.get(name).cloned().ok_or_else(|| {
                format!("node {name} has not registered yet, or its addresses are not readable")
            })
        };
        let mut verdict = rules::decide(&view, &self.ids, &mut lookup);
        if let Verdict::Approve {
            kind: CsrKind::Client,
            node,
        } = &verdict
            && let Some(r) = self.joined(node).await
        {
            verdict = Verdict::Refuse(r);
        }
        match verdict {
            Verdict::Approve { kind, node } => match self.approve(csr, kind, &node).await {
                Ok(()) => {
                    if kind == CsrKind::Client {
                        self.issued
                            .entry(self.ids.identity(&node))
                            .or_insert_with(|| view.name.clone());
                    }
                    info!(
                        "Approved {kind} CSR {} for node {node} (requested by {})",
                        view.name, view.username
                    );
                    summary.approved.push((view.name.clone(), kind, node));
                }
                Err(e) => warn!("Approving CSR {}: {e}", view.name),
            },
            Verdict::Refuse(r) => {
                summary.refused.push((view.name.clone(), r.reason()));
                let uid = csr
                    .metadata
                    .uid
                    .clone()
                    .unwrap_or_else(|| view.name.clone());
                if self.reported.insert(uid) {
                    warn!(
                        "Not approving CSR {} (signer {}, requested by {}): {r}",
                        view.name, view.signer, view.username
                    );
                    if let Err(e) = self.event(csr, &r).await {
                        warn!("Recording an event on CSR {}: {e}", view.name);
                    }
                }
            }
        }
    }

    /// Adds the Approved condition with a PUT of the `approval`
    /// subresource carrying the object's resourceVersion, so a CSR changed
    /// meanwhile (denied by someone else) fails with 409 instead of being
    /// overwritten.
    async fn approve(
        &self,
        csr: &CertificateSigningRequest,
        kind: CsrKind,
        node: &str,
    ) -> Result<(), ClusterError> {
        let name = csr.metadata.name.clone().unwrap_or_default();
        let mut obj = csr.clone();
        let status = obj.status.get_or_insert_with(Default::default);
        status
            .conditions
            .get_or_insert_with(Vec::new)
            .push(CertificateSigningRequestCondition {
                type_: "Approved".into(),
                status: "True".into(),
                reason: Some("OKDInstallApproved".into()),
                message: Some(format!(
                    "{kind} certificate for node {node}: identity checked by {COMPONENT}"
                )),
                last_update_time: Some(Time(k8s_openapi::jiff::Timestamp::now())),
                last_transition_time: None,
            });
        self.csrs()
            .replace_subresource("approval", &name, &PostParams::default(), &obj)
            .await
            .map(|_| ())
            .map_err(|e| {
                self.cluster.api_error(
                    &format!(
                        "/apis/certificates.k8s.io/v1/certificatesigningrequests/{name}/approval"
                    ),
                    e,
                )
            })
    }

    async fn event(
        &self,
        csr: &CertificateSigningRequest,
        r: &Refusal,
    ) -> Result<(), ClusterError> {
        let name = csr.metadata.name.clone().unwrap_or_default();
        let now = Time(k8s_openapi::jiff::Timestamp::now());
        let ev = Event {
            metadata: ObjectMeta {
                generate_name: Some(format!("{name}.")),
                namespace: Some("default".into()),
                ..Default::default()
            },
            involved_object: ObjectReference {
                api_version: Some("certificates.k8s.io/v1".into()),
                kind: Some("CertificateSigningRequest".into()),
                name: Some(name),
                uid: csr.metadata.uid.clone(),
                ..Default::default()
            },
            reason: Some(r.reason().into()),
            message: Some(format!("Not approved by {COMPONENT}: {r}")),
            type_: Some("Warning".into()),
            source: Some(k8s_openapi::api::core::v1::EventSource {
                component: Some(COMPONENT.into()),
                host: None,
            }),
            first_timestamp: Some(now.clone()),
            last_timestamp: Some(now),
            count: Some(1),
            ..Default::default()
        };
        Api::<Event>::namespaced(self.cluster.client(), "default")
            .create(&PostParams::default(), &ev)
            .await
            .map(|_| ())
            .map_err(|e| {
                self.cluster
                    .api_error("/api/v1/namespaces/default/events", e)
            })
    }

    /// Watches CSRs and decides each pending one as it appears, until
    /// `stop` resolves. The watch re-lists after a disconnect (an API
    /// restart) with backoff; while the API is unreachable nothing is
    /// approved.
    ///
    /// # Errors
    /// Never returns an error for API trouble (it logs and retries); the
    /// `Result` is for future fatal conditions.
    pub async fn watch(
        &mut self,
        stop: impl std::future::Future<Output = ()>,
    ) -> Result<(), ClusterError> {
        use kube::runtime::WatchStreamExt as _;
        use kube::runtime::watcher::{self, Event as WEvent};
        let stream = watcher::watcher(self.csrs(), watcher::Config::default()).default_backoff();
        let mut stream = std::pin::pin!(stream);
        // Nodes in a store, listed before any CSR is decided.
        let (nodes, node_events) = okd_cluster::openshift::reflected(
            Api::<Node>::all(self.cluster.client()),
            watcher::Config::default(),
        );
        self.nodes = Some(nodes.clone());
        let mut node_events = std::pin::pin!(node_events);
        let mut nodes_listed = std::pin::pin!(nodes.wait_until_ready());
        let mut nodes_ready = false;
        let mut nodes_open = true;
        let mut stop = std::pin::pin!(stop);
        info!(
            "Watching CSRs at {} ({} known nodes)",
            self.cluster.server(),
            self.ids.node_count()
        );
        // CSRs refused for a reason that may pass (a pattern-matched node
        // not registered yet, an approval that failed): looked at again
        // every RETRY_EVERY, by name, while any exist.
        let mut retry: BTreeMap<String, ()> = BTreeMap::new();
        // The initial list (also after a re-list), decided once complete:
        // Approved client CSRs first noted, so list order cannot let a
        // second client CSR of a node through.
        let mut initial: Vec<CertificateSigningRequest> = Vec::new();
        let mut tick = tokio::time::interval(RETRY_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let next = tokio::select! {
                _ = &mut stop => return Ok(()),
                e = node_events.next(), if nodes_open => {
                    match e {
                        None => nodes_open = false,
                        Some(Some(cause)) => {
                            warn!("Watching Nodes at {}: {cause}; retrying", self.cluster.server());
                        }
                        Some(None) => {}
                    }
                    continue;
                }
                _ = &mut nodes_listed, if !nodes_ready => {
                    nodes_ready = true;
                    continue;
                }
                _ = tick.tick(), if !retry.is_empty() => {
                    for name in retry.keys().cloned().collect::<Vec<_>>() {
                        match self.csrs().get_opt(&name).await {
                            Ok(Some(csr)) => self.decide_tracking(&csr, &mut retry).await,
                            Ok(None) => {
                                retry.remove(&name);
                            }
                            Err(e) => debug!("Reading CSR {name}: {e}"),
                        }
                    }
                    continue;
                }
                n = stream.next(), if nodes_ready => n,
            };
            match next {
                None => return Ok(()),
                Some(Ok(WEvent::Init)) => initial.clear(),
                Some(Ok(WEvent::InitApply(csr))) => initial.push(csr),
                Some(Ok(WEvent::InitDone)) => {
                    let all = std::mem::take(&mut initial);
                    for csr in oldest_first(all, |c| self.note_issued(c)) {
                        self.decide_tracking(&csr, &mut retry).await;
                    }
                }
                Some(Ok(WEvent::Apply(csr))) => {
                    self.decide_tracking(&csr, &mut retry).await;
                }
                Some(Ok(WEvent::Delete(csr))) => {
                    retry.remove(&csr.metadata.name.clone().unwrap_or_default());
                    if let Some(uid) = &csr.metadata.uid {
                        self.reported.remove(uid);
                    }
                }
                Some(Err(e)) => {
                    warn!(
                        "Watching CSRs at {}: {e}; retrying (nothing is approved meanwhile)",
                        self.cluster.server()
                    );
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            }
        }
    }

    /// Handles one CSR; remembers it for a retry when it stays pending for
    /// a reason that may pass.
    async fn decide_tracking(
        &mut self,
        csr: &CertificateSigningRequest,
        retry: &mut BTreeMap<String, ()>,
    ) {
        let name = csr.metadata.name.clone().unwrap_or_default();
        let mut s = Summary::default();
        self.handle(csr, &mut s).await;
        let transient = s
            .refused
            .iter()
            .any(|(_, r)| matches!(*r, "NodeAddressesUnknown" | "NodeLookupFailed"))
            || (s.pending > 0 && s.refused.is_empty() && s.approved.is_empty());
        if transient {
            retry.insert(name, ());
        } else {
            retry.remove(&name);
        }
    }
}

/// The pending CSRs of `all`, oldest first (then by name), after `seen`
/// was called on every CSR that is not pending.
fn oldest_first(
    all: Vec<CertificateSigningRequest>,
    mut seen: impl FnMut(&CertificateSigningRequest),
) -> Vec<CertificateSigningRequest> {
    let (mut pending, done): (Vec<_>, Vec<_>) = all.into_iter().partition(is_pending);
    done.iter().for_each(&mut seen);
    pending.sort_by(|a, b| {
        let key = |c: &CertificateSigningRequest| {
            (
                c.metadata.creation_timestamp.as_ref().map(|t| t.0),
                c.metadata.name.clone(),
            )
        };
        key(a).cmp(&key(b))
    });
    pending
}

/// How often CSRs refused for a passing reason are looked at again.
pub const RETRY_EVERY: Duration = Duration::from_secs(30);

/// The InternalIP/ExternalIP addresses of Node `name`.
async fn node_addresses_of(cluster: &Cluster, name: &str) -> Result<Vec<IpAddr>, ClusterError> {
    let node = Api::<Node>::all(cluster.client())
        .get(name)
        .await
        .map_err(|e| cluster.api_error(&format!("/api/v1/nodes/{name}"), e))?;
    Ok(node
        .status
        .and_then(|s| s.addresses)
        .unwrap_or_default()
        .iter()
        .filter(|a| a.type_ == "InternalIP" || a.type_ == "ExternalIP")
        .filter_map(|a| a.address.parse().ok())
        .collect())
}

/// What `okd-install approve-csr` was asked to do.
#[derive(Debug, Clone)]
pub struct Options {
    /// The asset directory (install-config in the state file, the inventory).
    pub dir: std::path::PathBuf,
    /// The kubeconfig; default `<dir>/auth/kubeconfig`.
    pub kubeconfig: Option<std::path::PathBuf>,
    /// Extra node names allowed, as glob patterns.
    pub node_name_patterns: Vec<String>,
    /// Keep watching instead of one pass.
    pub watch: bool,
}

/// Why approve-csr could not start.
#[derive(Debug, thiserror::Error)]
pub enum ApproveError {
    /// The install could not be read.
    #[error(transparent)]
    Install(#[from] okd_cluster::install::InstallError),
    /// The inventory could not be read.
    #[error(transparent)]
    Hosts(#[from] okd_hosts::HostsError),
    /// A bad `--node-name-pattern`.
    #[error(transparent)]
    Pattern(#[from] rules::PatternError),
    /// No node is known, so nothing could ever be checked.
    #[error(
        "no node is known in {}: add agent-config.yaml/bastion-config.yaml or --node-name-pattern \
         (approve-csr approves only nodes whose identity it can check)"
    , dir.display())]
    NoIdentities {
        /// The asset directory.
        dir: std::path::PathBuf,
    },
    /// The cluster could not be reached or refused.
    #[error(transparent)]
    Cluster(#[from] ClusterError),
}

/// Runs `approve-csr`: one pass, or a watch until SIGINT/SIGTERM.
///
/// # Errors
/// [`ApproveError`]: the install, the inventory, the patterns, or the API
/// (checked with `GET /version` before anything else, so a wrong CA or an
/// expired certificate is reported at once, naming the endpoint).
pub async fn run(opts: &Options) -> Result<Summary, ApproveError> {
    let install = okd_cluster::install::Install::load(&opts.dir)?;
    let mut ids = match install.inventory()? {
        Some(inv) => Identities::from_inventory(&inv),
        None => Identities::default(),
    };
    ids = ids.with_patterns(&opts.node_name_patterns)?;
    if ids.is_empty() {
        return Err(ApproveError::NoIdentities {
            dir: opts.dir.clone(),
        });
    }
    let kubeconfig = opts
        .kubeconfig
        .clone()
        .unwrap_or_else(|| install.admin_kubeconfig());
    let cluster = Cluster::from_kubeconfig(&kubeconfig).await?;
    cluster.expect_cluster(&install.domain())?;
    let version = cluster.version().await?;
    debug!("API {version} at {}", cluster.server());
    let mut approver = Approver::new(cluster, ids);
    if opts.watch {
        approver
            .watch(async {
                okd_listen::shutdown_signal().await;
            })
            .await?;
        return Ok(Summary::default());
    }
    let s = approver.pass().await?;
    info!(
        "{} pending CSRs: {} approved, {} left pending",
        s.pending,
        s.approved.len(),
        s.refused.len()
    );
    Ok(s)
}
