//! cluster-bootstrap's `start` on the bootstrap node, after
//! openshift/cluster-bootstrap `pkg/start/start.go` (`startCommand.Run`):
//! bootkube's `cb-bootstrap` stage runs it to bring the temporary control
//! plane up, create the cluster's manifests in it and tell the installer
//! when the cluster's own control plane has taken over.
//!
//! [`start`] runs these steps in order ([`Step`]):
//! 1. [`Step::LayDown`]: `<asset-dir>/tls/*` into the bootstrap secrets
//!    directory with the loopback kubeconfig, `<asset-dir>/bootstrap-manifests/*`
//!    into the kubelet's static pod directory (`pkg/start/bootstrap.go`).
//! 2. [`Step::WaitApi`]: `GET /readyz` through the client until `ok`
//!    ([`Options::api_timeout`], 20 min as upstream's
//!    `bootstrapPodsRunningTimeout`).
//! 3. [`Step::CreateManifests`]: every object of `<asset-dir>/manifests/`
//!    created in the background until all exist (openshift/library-go
//!    `pkg/assets/create/creater.go`; see [`create`]).
//! 4. [`Step::WaitPods`]: the required pods Running and Ready
//!    ([`Options::pods_timeout`], 20 min; `pkg/start/status.go`).
//! 5. [`Step::BootstrapSuccess`]: the Event `kube-system/bootstrap-success`;
//!    then [`Step::WaitManifests`] waits for step 3 to finish
//!    ([`Options::assets_timeout`], 60 min, upstream's
//!    `--assets-create-timeout`), and [`Step::BootstrapFinished`] creates
//!    `kube-system/bootstrap-finished`.
//!
//! 6. [`Step::HaChecks`] (HA installs only, between [`Step::WaitPods`] and
//!    [`Step::BootstrapSuccess`]): the production kube-apiserver, scheduler
//!    and controller manager available on two masters, then the teardown
//!    delay ([`ha`]).
//!
//! 7. [`Step::Teardown`] after [`Step::BootstrapFinished`]
//!    (`bootstrapControlPlane.Teardown`): the bootstrap secrets directory
//!    and [`LaidDown::static_pods`] removed, so the kubelet stops the
//!    temporary control plane.
//!
//! Every step may run again: a restarted run lays the same files down,
//! finds existing objects and events and counts them as done.

pub mod copy;
pub mod create;
pub mod ha;
pub mod manifests;
pub mod pods;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Event, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kube::api::{Api, PostParams};
use tracing::info;

pub use copy::LaidDown;
pub use create::{ManifestFailure, Progress};
pub use manifests::Manifest;
pub use pods::{BOOTKUBE_REQUIRED_PODS, PodState, RequiredPod};

/// How long to wait for the API (upstream: `bootstrapPodsRunningTimeout`,
/// `pkg/start/start.go`, also used by `waitForApi`).
pub const DEFAULT_API_TIMEOUT: Duration = Duration::from_secs(20 * 60);
/// How long to wait for the required pods (`bootstrapPodsRunningTimeout`).
pub const DEFAULT_PODS_TIMEOUT: Duration = Duration::from_secs(20 * 60);
/// How long the manifests may take after `bootstrap-success`
/// (`--assets-create-timeout`, `cmd/cluster-bootstrap/start.go`).
pub const DEFAULT_ASSETS_TIMEOUT: Duration = Duration::from_secs(60 * 60);
/// The namespace of the two events.
pub const EVENT_NAMESPACE: &str = "kube-system";
/// The event created once the required pods run (step 5).
pub const BOOTSTRAP_SUCCESS: &str = "bootstrap-success";
/// The event created once every manifest is created.
pub const BOOTSTRAP_FINISHED: &str = "bootstrap-finished";

/// How [`start`] reaches the API.
#[derive(Clone)]
pub enum Connect {
    /// A kubeconfig to build the client from (on the node,
    /// `<asset-dir>/auth/kubeconfig-loopback`, for `https://localhost:6443`).
    Kubeconfig(PathBuf),
    /// A client the caller built.
    Client(kube::Client),
}

/// What [`start`] works on. [`Options::new`] gives the node's values.
#[derive(Clone)]
pub struct Options {
    /// The asset directory (`/opt/openshift`): `tls/`, `auth/`,
    /// `bootstrap-manifests/`, `manifests/`.
    pub asset_dir: PathBuf,
    /// The API connection.
    pub connect: Connect,
    /// The kubelet's static pod directory (`--pod-manifest-path`,
    /// `/etc/kubernetes/manifests`).
    pub pod_manifest_dir: PathBuf,
    /// Where the temporary control plane reads its secrets
    /// (`/etc/kubernetes/bootstrap-secrets`).
    pub bootstrap_secrets_dir: PathBuf,
    /// The pods that must be Running and Ready (`--required-pods`).
    pub required_pods: Vec<RequiredPod>,
    /// Step 2's limit.
    pub api_timeout: Duration,
    /// Step 4's limit.
    pub pods_timeout: Duration,
    /// How long the manifests may still take after `bootstrap-success`.
    pub assets_timeout: Duration,
    /// Step 6 on HA installs: where the masters' control plane is seen
    /// ([`ha::Source`]); `None`: not HA, no wait. [`Options::new`] sets
    /// [`ha::Source::Operators`] when [`ha::is_ha`].
    pub ha: Option<ha::Source>,
    /// Step 6's limit for each of its conditions (30 min).
    pub ha_timeout: Duration,
    /// Step 6's teardown delay after the conditions hold (30 s).
    pub teardown_delay: Duration,
    /// Where the manifests' creation records what it did, shared with the
    /// caller while [`start`] runs (a manifest the API refuses is shown as
    /// it happens, e.g. on the node's console).
    pub progress: Arc<Mutex<Progress>>,
}

impl Options {
    /// The bootstrap node's options for `asset_dir`: the loopback
    /// kubeconfig, `/etc/kubernetes/{manifests,bootstrap-secrets}`,
    /// [`BOOTKUBE_REQUIRED_PODS`], the default timeouts.
    pub fn new(asset_dir: &Path) -> Options {
        let required = BOOTKUBE_REQUIRED_PODS
            .iter()
            .map(|p| RequiredPod {
                desc: p.to_string(),
                prefixes: vec![p.to_string()],
            })
            .collect();
        Options {
            asset_dir: asset_dir.to_path_buf(),
            connect: Connect::Kubeconfig(asset_dir.join(copy::ASSET_KUBECONFIG)),
            pod_manifest_dir: PathBuf::from("/etc/kubernetes/manifests"),
            bootstrap_secrets_dir: PathBuf::from("/etc/kubernetes/bootstrap-secrets"),
            required_pods: required,
            api_timeout: DEFAULT_API_TIMEOUT,
            pods_timeout: DEFAULT_PODS_TIMEOUT,
            assets_timeout: DEFAULT_ASSETS_TIMEOUT,
            ha: ha::is_ha(asset_dir).then_some(ha::Source::Operators),
            ha_timeout: ha::DEFAULT_HA_TIMEOUT,
            teardown_delay: ha::DEFAULT_TEARDOWN_DELAY,
            progress: Arc::default(),
        }
    }
}

/// The steps of [`start`], in the order they run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Secrets, kubeconfig and static pod manifests copied.
    LayDown,
    /// `/readyz` answered `ok`.
    WaitApi,
    /// The manifests' creation started (it runs on in the background).
    CreateManifests,
    /// The required pods are Running and Ready.
    WaitPods,
    /// HA only: the production control plane available on two masters,
    /// then the teardown delay.
    HaChecks,
    /// `kube-system/bootstrap-success` exists.
    BootstrapSuccess,
    /// Every manifest is created.
    WaitManifests,
    /// `kube-system/bootstrap-finished` exists.
    BootstrapFinished,
    /// The bootstrap secrets and the laid-down static pods removed.
    Teardown,
}

/// What a successful [`start`] did.
#[derive(Debug, Clone)]
pub struct Report {
    /// The steps run, in order.
    pub steps: Vec<Step>,
    /// Step 1's files.
    pub laid_down: LaidDown,
    /// The manifests: created, already there, status written.
    pub manifests: Progress,
    /// Each required pod's final state.
    pub pods: Vec<(String, PodState)>,
    /// Each event and whether it already existed (a resumed run).
    pub events: Vec<(&'static str, bool)>,
}

/// Why [`start`] stopped. No variant holds a manifest's content.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A manifest cannot be read or is not a Kubernetes object.
    #[error("manifest {file}: {message}")]
    Manifest {
        /// The file relative to `<asset-dir>/manifests` (and document).
        file: String,
        /// What is wrong.
        message: String,
    },
    /// A `--required-pods` clause does not parse.
    #[error("required pods: {0}")]
    RequiredPods(String),
    /// A file could not be read or removed.
    #[error("{action} {}: {source}", path.display())]
    Io {
        /// What was being done.
        action: &'static str,
        /// The path.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A file could not be written.
    #[error(transparent)]
    Fs(#[from] okd_fs::FsError),
    /// The client could not be built from the kubeconfig, or an event
    /// could not be created.
    #[error(transparent)]
    Cluster(#[from] okd_cluster::ClusterError),
    /// `/readyz` did not answer `ok` in time.
    #[error("timed out after {} waiting for the Kubernetes API (/readyz): {last}", pods::human(*after))]
    ApiTimeout {
        /// The limit.
        after: Duration,
        /// The last answer or error.
        last: String,
    },
    /// The required pods were not all Running and Ready in time.
    #[error(
        "timed out after {} waiting for the required pods to be Running and Ready: {}",
        pods::human(*after),
        pods.iter().map(|(p, s)| format!("{p} {s}")).collect::<Vec<_>>().join(", ")
    )]
    PodsTimeout {
        /// The limit.
        after: Duration,
        /// Each required pod's last state.
        pods: Vec<(String, PodState)>,
    },
    /// Some manifests were not created in time.
    #[error(
        "timed out after {} creating the manifests; {remaining} not created:\n{}",
        pods::human(*after),
        failures.iter().map(|f| format!("  {f}")).collect::<Vec<_>>().join("\n")
    )]
    AssetsTimeout {
        /// The limit.
        after: Duration,
        /// How many objects were not created.
        remaining: usize,
        /// The latest failure of each (file, object, step, the API's
        /// message).
        failures: Vec<ManifestFailure>,
    },
    /// HA: the masters' control plane was not available in time.
    #[error("timed out waiting for the control plane on the masters: {0}")]
    HaTimeout(String),
    /// The background creation of the manifests ended abnormally.
    #[error("creating the manifests stopped: {0}")]
    Creator(String),
}

impl Error {
    fn io(action: &'static str, path: &Path, source: std::io::Error) -> Error {
        Error::Io {
            action,
            path: path.to_path_buf(),
            source,
        }
    }
}

/// Runs cluster-bootstrap's `start` (see the crate documentation for the
/// steps).
///
/// # Errors
/// [`Error::Manifest`] before anything is done when a manifest does not
/// parse; [`Error::Io`]/[`Error::Fs`] from step 1 or the teardown;
/// [`Error::HaTimeout`] naming the conditions not met; [`Error::Cluster`] when
/// the kubeconfig cannot be used or an event cannot be created;
/// [`Error::ApiTimeout`], [`Error::PodsTimeout`], [`Error::AssetsTimeout`]
/// (naming each manifest not created, its object and the API's message)
/// when a wait runs out; [`Error::Creator`] if the background creation
/// panicked.
pub async fn start(opts: &Options) -> Result<Report, Error> {
    let manifests = manifests::load(&opts.asset_dir.join(copy::ASSET_MANIFESTS))?;
    let mut steps = Vec::new();

    // 1.
    let laid_down = copy::lay_down(opts)?;
    steps.push(Step::LayDown);

    let (client, server) = match &opts.connect {
        Connect::Kubeconfig(kc) => {
            let c = okd_cluster::Cluster::from_kubeconfig(kc).await?;
            (c.client(), c.server().to_string())
        }
        // The client does not tell its URL.
        Connect::Client(c) => (c.clone(), "the caller's API server".to_string()),
    };

    // 2.
    wait_api(&client, &server, opts.api_timeout).await?;
    steps.push(Step::WaitApi);

    // 3.
    let progress = opts.progress.clone();
    *progress.lock().unwrap_or_else(|e| e.into_inner()) = Progress::default();
    info!("Creating {} objects from the manifests", manifests.len());
    let creator = tokio::spawn(create::create_all(
        client.clone(),
        opts.asset_dir.join(copy::ASSET_MANIFESTS),
        manifests,
        progress.clone(),
    ));
    // Stops the background creation on every early return.
    let creator = AbortOnDrop(creator);
    steps.push(Step::CreateManifests);

    // 4.
    let pods = pods::wait_running(client.clone(), &opts.required_pods, opts.pods_timeout).await?;
    steps.push(Step::WaitPods);

    // 6. (HA) the production control plane on two masters, then the
    // teardown delay.
    if let Some(source) = opts.ha {
        ha::wait_available(&client, source, opts.ha_timeout)
            .await
            .map_err(Error::HaTimeout)?;
        info!(
            "Waiting {} before reporting success (teardown delay)",
            pods::human(opts.teardown_delay)
        );
        tokio::time::sleep(opts.teardown_delay).await;
        steps.push(Step::HaChecks);
    }

    // 5.
    let mut events = vec![(
        BOOTSTRAP_SUCCESS,
        create_event(&client, &server, BOOTSTRAP_SUCCESS).await?,
    )];
    steps.push(Step::BootstrapSuccess);

    info!("Waiting for remaining assets to be created.");
    let mut creator = creator;
    match tokio::time::timeout(opts.assets_timeout, &mut creator.0).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return Err(Error::Creator(e.to_string())),
        Err(_) => {
            creator.0.abort();
            let p = progress.lock().unwrap_or_else(|e| e.into_inner());
            return Err(Error::AssetsTimeout {
                after: opts.assets_timeout,
                remaining: p.remaining,
                failures: p.failures.values().cloned().collect(),
            });
        }
    }
    steps.push(Step::WaitManifests);

    events.push((
        BOOTSTRAP_FINISHED,
        create_event(&client, &server, BOOTSTRAP_FINISHED).await?,
    ));
    steps.push(Step::BootstrapFinished);

    // 8. The teardown (upstream's `bootstrapControlPlane.Teardown`): the
    // bootstrap secrets and the static pods laid down in step 1 go, so the
    // kubelet stops the temporary control plane. Only after success: a
    // failed run leaves it up for bootkube's restart (upstream also tears
    // down on failure; its restarts lay everything down again).
    copy::tear_down(opts, &laid_down)?;
    steps.push(Step::Teardown);

    let manifests = progress.lock().unwrap_or_else(|e| e.into_inner()).clone();
    info!(
        "cluster-bootstrap done: {} objects created, {} already existed, {} statuses written",
        manifests.created.len(),
        manifests.existed.len(),
        manifests.status_written.len()
    );
    Ok(Report {
        steps,
        laid_down,
        manifests,
        pods,
        events,
    })
}

struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// How often `/readyz` is asked.
pub const API_POLL: Duration = Duration::from_secs(1);
/// How long one `/readyz` request may take.
pub const API_REQUEST: Duration = Duration::from_secs(10);

async fn wait_api(client: &kube::Client, server: &str, timeout: Duration) -> Result<(), Error> {
    info!(
        "Waiting up to {} for the Kubernetes API ({server})",
        pods::human(timeout)
    );
    let deadline = tokio::time::Instant::now() + timeout;
    let mut last = String::new();
    loop {
        let mut req = http::Request::new(Vec::new());
        *req.uri_mut() = http::Uri::from_static("/readyz");
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let answer = tokio::time::timeout(API_REQUEST.min(left), client.request_text(req)).await;
        let now = match answer {
            Ok(Ok(body)) if body.trim() == "ok" => {
                info!("API is up");
                return Ok(());
            }
            Ok(Ok(body)) => format!("/readyz answered {:?}", body.trim()),
            Ok(Err(e)) => okd_cluster::ApiCause::of(&e).to_string(),
            // Cut short by the deadline: the cause seen before stands.
            Err(_) if left < API_REQUEST && !last.is_empty() => last.clone(),
            Err(_) => format!("no answer within {}", pods::human(API_REQUEST.min(left))),
        };
        if now != last {
            info!("Still waiting for the Kubernetes API: {now}");
            last = now;
        }
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        if left.is_zero() {
            return Err(Error::ApiTimeout {
                after: timeout,
                last,
            });
        }
        tokio::time::sleep(API_POLL.min(left)).await;
    }
}

/// Creates the event `kube-system/<name>` as upstream's
/// `makeBootstrapSuccessEvent`; returns whether it already existed.
/// Transient failures (API unreachable or 5xx) are retried for a minute.
async fn create_event(
    client: &kube::Client,
    server: &str,
    name: &'static str,
) -> Result<bool, Error> {
    info!("Sending {name} event.");
    let api: Api<Event> = Api::namespaced(client.clone(), EVENT_NAMESPACE);
    let now = Time(k8s_openapi::jiff::Timestamp::now());
    let event = Event {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            namespace: Some(EVENT_NAMESPACE.to_string()),
            ..Default::default()
        },
        involved_object: ObjectReference {
            namespace: Some(EVENT_NAMESPACE.to_string()),
            ..Default::default()
        },
        message: Some("Required control plane pods have been created".into()),
        count: Some(1),
        first_timestamp: Some(now.clone()),
        last_timestamp: Some(now),
        ..Default::default()
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        match api.create(&PostParams::default(), &event).await {
            Ok(_) => return Ok(false),
            Err(kube::Error::Api(s)) if s.code == 409 => {
                info!("Event {EVENT_NAMESPACE}/{name} already exists");
                return Ok(true);
            }
            Err(source) => {
                let err = okd_cluster::ClusterError::Api {
                    endpoint: format!("{server} (events {EVENT_NAMESPACE}/{name})"),
                    cause: okd_cluster::ApiCause::of(&source),
                    source,
                };
                if !err.is_transient() || tokio::time::Instant::now() >= deadline {
                    return Err(err.into());
                }
                info!("creating event {name} (retrying): {err}");
                tokio::time::sleep(API_POLL).await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Step 1 done, the API never answers: the error says how long and why.
    #[tokio::test]
    async fn an_api_that_never_answers_times_out_with_the_cause() {
        let t = tempfile::tempdir().unwrap();
        let a = t.path().join("assets");
        for d in ["tls", "auth", "bootstrap-manifests", "manifests"] {
            std::fs::create_dir_all(a.join(d)).unwrap();
        }
        std::fs::write(a.join("auth/kubeconfig-loopback"), "kc").unwrap();
        // A port nothing listens on.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let config = kube::Config::new(format!("http://127.0.0.1:{port}").parse().unwrap());
        let mut opts = Options::new(&a);
        opts.connect = Connect::Client(kube::Client::try_from(config).unwrap());
        opts.bootstrap_secrets_dir = t.path().join("secrets");
        opts.pod_manifest_dir = t.path().join("pods");
        opts.api_timeout = Duration::from_millis(1500);
        let e = start(&opts).await.unwrap_err();
        let text = e.to_string();
        assert!(matches!(e, Error::ApiTimeout { .. }), "{text}");
        assert!(
            text.starts_with("timed out after 1.5s waiting for the Kubernetes API (/readyz): the API server is unreachable"),
            "{text}"
        );
        assert!(t.path().join("secrets/kubeconfig").is_file());
    }
}
