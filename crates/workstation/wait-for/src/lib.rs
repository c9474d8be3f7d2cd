//! `okd-install wait-for bootstrap-complete` and `wait-for
//! install-complete`: openshift-install's waits with its log lines,
//! timeouts and exit codes (openshift/installer
//! `cmd/openshift-install/waitfor.go`, `create.go`), plus progress a person
//! can follow meanwhile: what `serve` saw of each host, the API, etcd,
//! CSRs, nodes, ClusterVersion and ClusterOperators (live lines on a
//! terminal, log lines otherwise).
//!
//! Every wait on an object is a watch (List+Watch) that re-lists after a
//! disconnect, so an API server restart mid-wait neither ends the wait nor
//! counts as success.

pub mod duration;
mod kubeconfig;
mod progress;

mod waits;

use std::path::PathBuf;
use std::time::Duration;

use okd_cluster::install::{Install, InstallError};
use okd_cluster::{Cluster, ClusterError};
use okd_installconfig::PlatformName;
use tracing::{debug, error, info};

pub use progress::Snapshot;

/// The limits of each wait.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Timeouts {
    /// The Kubernetes API to answer `/version` (20 min).
    pub api: Duration,
    /// The `kube-system/bootstrap` ConfigMap to say `complete` (45 min;
    /// 60 on baremetal and vSphere).
    pub bootstrap: Duration,
    /// The etcd bootstrap member removal (none upstream: `None`).
    pub etcd: Option<Duration>,
    /// ClusterVersion to be Available (40 min; 60 on baremetal).
    pub install: Duration,
    /// Every ClusterOperator to stop progressing (30 min).
    pub operators: Duration,
    /// How long an operator must have stopped progressing (30 s).
    pub stable: Duration,
    /// The console route (2 min).
    pub console: Duration,
    /// Between progress snapshots (15 s).
    pub progress: Duration,
}

impl Timeouts {
    /// openshift-install's limits for `platform` (openshift/installer
    /// `cmd/openshift-install/waitfor.go`, `create.go`).
    pub fn for_platform(platform: Option<PlatformName>) -> Timeouts {
        let long_bootstrap = matches!(
            platform,
            Some(PlatformName::Baremetal | PlatformName::VSphere)
        );
        let long_install = matches!(platform, Some(PlatformName::Baremetal));
        Timeouts {
            api: Duration::from_secs(20 * 60),
            bootstrap: Duration::from_secs(if long_bootstrap { 60 } else { 45 } * 60),
            etcd: None,
            install: Duration::from_secs(if long_install { 60 } else { 40 } * 60),
            operators: Duration::from_secs(30 * 60),
            stable: Duration::from_secs(30),
            console: Duration::from_secs(2 * 60),
            progress: Duration::from_secs(15),
        }
    }

    /// Applies overrides `key=duration,…` with keys `api`, `bootstrap`,
    /// `etcd`, `install`, `operators`, `stable`, `console`, `progress`
    /// (the `--timeouts` flag / `OKD_WAIT_FOR_TIMEOUTS`), e.g.
    /// `api=30s,bootstrap=2m`.
    ///
    /// # Errors
    /// A message naming the bad key or duration.
    pub fn with_overrides(mut self, spec: &str) -> Result<Timeouts, String> {
        for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (k, v) = part
                .split_once('=')
                .ok_or_else(|| format!("--timeouts: {part:?} is not key=duration"))?;
            let d = duration::parse(v).map_err(|e| format!("--timeouts {k}: {e}"))?;
            match k.trim() {
                "api" => self.api = d,
                "bootstrap" => self.bootstrap = d,
                "etcd" => self.etcd = Some(d),
                "install" => self.install = d,
                "operators" => self.operators = d,
                "stable" => self.stable = d,
                "console" => self.console = d,
                "progress" => self.progress = d,
                other => {
                    return Err(format!(
                        "--timeouts: unknown key {other:?} (api, bootstrap, etcd, install, operators, stable, console, progress)"
                    ));
                }
            }
        }
        Ok(self)
    }
}

/// What `wait-for` was asked to do.
#[derive(Debug, Clone)]
pub struct Options {
    /// The asset directory.
    pub dir: PathBuf,
    /// `--timeouts` overrides (see [`Timeouts::with_overrides`]).
    pub timeouts: Option<String>,
}

/// Why a wait failed; its exit code is its [`okd_types::exit::ExitClass`].
#[derive(Debug, thiserror::Error)]
pub enum WaitError {
    /// The install could not be read.
    #[error(transparent)]
    Install(#[from] InstallError),
    /// The kubeconfig cannot be used, or is for another cluster.
    #[error(transparent)]
    Cluster(#[from] ClusterError),
    /// A bad `--timeouts`.
    #[error("{0}")]
    Timeouts(String),
    /// The bootstrap did not complete (the explanatory text).
    #[error("{0}")]
    Bootstrap(String),
    /// The cluster did not initialize.
    #[error("failed to initialize the cluster: {0}")]
    Install6(String),
    /// Operators kept progressing.
    #[error("{0}")]
    Operators(String),
}

/// openshift-install's exit codes for a wait (`cmd/openshift-install/
/// create.go`: 5 bootstrap failed, 6 install failed, 7 operators not
/// stable); a `--timeouts` that cannot be parsed is a usage error (2); the
/// install's files or the cluster not reachable 1.
impl okd_types::exit::ExitClass for WaitError {
    fn exit_class(&self) -> okd_types::exit::Exit {
        use okd_types::exit::Exit;
        match self {
            WaitError::Bootstrap(_) => Exit::Bootstrap,
            WaitError::Install6(_) => Exit::Install,
            WaitError::Operators(_) => Exit::Operators,
            WaitError::Timeouts(_) => Exit::Usage,
            WaitError::Install(_) | WaitError::Cluster(_) => Exit::Failed,
        }
    }
}

/// An install and its connected client.
struct Ctx {
    install: Install,
    cluster: Cluster,
    timeouts: Timeouts,
}

async fn setup(opts: &Options) -> Result<Ctx, WaitError> {
    let install = Install::load(&opts.dir)?;
    let mut timeouts = Timeouts::for_platform(install.platform());
    if let Some(spec) = &opts.timeouts {
        timeouts = timeouts.with_overrides(spec).map_err(WaitError::Timeouts)?;
    }
    let kubeconfig = install.admin_kubeconfig();
    let cluster = Cluster::from_kubeconfig(&kubeconfig).await?;
    cluster.expect_cluster(&install.domain())?;
    debug!("Using kubeconfig {}", kubeconfig.display());
    Ok(Ctx {
        install,
        cluster,
        timeouts,
    })
}

/// Per-stage elapsed times (upstream `pkg/metrics/timer`).
struct Timer {
    start: std::time::Instant,
    last: std::time::Instant,
    stages: Vec<(&'static str, Duration)>,
}

impl Timer {
    fn new() -> Timer {
        let now = std::time::Instant::now();
        Timer {
            start: now,
            last: now,
            stages: Vec::new(),
        }
    }

    fn stage(&mut self, name: &'static str) {
        let now = std::time::Instant::now();
        self.stages.push((name, now - self.last));
        self.last = now;
    }

    fn log(&self) {
        debug!("Time elapsed per stage:");
        let width = self.stages.iter().map(|(n, _)| n.len()).max().unwrap_or(0);
        for (n, d) in &self.stages {
            debug!("{n:>width$}: {}", duration::go_duration(round(*d)));
        }
        info!(
            "Time elapsed: {}",
            duration::go_duration(round(self.start.elapsed()))
        );
    }
}

fn round(d: Duration) -> Duration {
    Duration::from_secs(d.as_secs() + u64::from(d.subsec_millis() >= 500))
}

/// The bootstrap's own API and the balancer's API address from the
/// inventory (agent-config.yaml + bastion-config.yaml); `None` without an
/// inventory or a bootstrap host in it.
fn api_paths(install: &Install) -> Option<waits::ApiPaths> {
    let inv = match install.inventory() {
        Ok(Some(inv)) => inv,
        Ok(None) => return None,
        Err(e) => {
            debug!("No load balancer comparison: {e}");
            return None;
        }
    };
    let boot = inv.role(okd_hosts::Role::Bootstrap).next()?;
    Some(waits::ApiPaths {
        own: std::net::SocketAddr::new(boot.address, 6443),
        via: std::net::SocketAddr::new(inv.api, inv.ports.api),
        host: format!("api.{}", inv.cluster_domain),
    })
}

/// `wait-for bootstrap-complete`.
///
/// # Errors
/// [`WaitError`]; its [`WaitError::exit_code`] is 5 for a bootstrap that
/// did not complete (after the ClusterOperator conditions and the gather
/// hint are logged).
pub async fn bootstrap_complete(opts: &Options) -> Result<(), WaitError> {
    let ctx = setup(opts).await?;
    let progress = progress::spawn(
        ctx.cluster.clone(),
        ctx.install.dir.clone(),
        ctx.timeouts.progress,
    );
    let mut timer = Timer::new();
    let result = async {
        waits::api(
            &ctx.cluster,
            ctx.timeouts.api,
            api_paths(&ctx.install).as_ref(),
        )
        .await?;
        timer.stage("API");
        waits::bootstrap_configmap(&ctx.cluster, ctx.timeouts.bootstrap).await?;
        timer.stage("Bootstrap Complete");
        waits::etcd_bootstrap_removed(&ctx.cluster, ctx.timeouts.etcd).await?;
        timer.stage("Bootstrap etcd Removed");
        Ok::<(), waits::Failure>(())
    }
    .await;
    progress.abort();
    match result {
        Ok(()) => {
            info!("It is now safe to remove the bootstrap resources");
            timer.log();
            Ok(())
        }
        Err(f) => {
            waits::log_operator_conditions(&ctx.cluster).await;
            error!("Use the following commands to gather logs from the cluster");
            error!("okd-install gather bootstrap --help");
            error!("Bootstrap failed to complete: {}", f.cause);
            Err(WaitError::Bootstrap(f.explain.to_string()))
        }
    }
}

/// `wait-for install-complete`.
///
/// # Errors
/// [`WaitError`]; exit code 6 when the cluster did not initialize (or the
/// router CA could not be merged), 7 when operators did not settle.
pub async fn install_complete(opts: &Options) -> Result<(), WaitError> {
    let ctx = setup(opts).await?;
    let progress = progress::spawn(
        ctx.cluster.clone(),
        ctx.install.dir.clone(),
        ctx.timeouts.progress,
    );
    let mut timer = Timer::new();
    let initialized = waits::cluster_version(&ctx.cluster, ctx.timeouts.install).await;
    if let Err(f) = initialized {
        progress.abort();
        waits::log_operator_conditions(&ctx.cluster).await;
        for line in INSTALL_FAILED_TEXT.lines() {
            error!("{line}");
        }
        return Err(WaitError::Install6(f.cause));
    }
    timer.stage("Cluster Operators Available");
    if let Err(e) = kubeconfig::add_router_ca(&ctx.cluster, &ctx.install.admin_kubeconfig()).await {
        progress.abort();
        return Err(WaitError::Install6(e));
    }
    let stable =
        waits::operators_stable(&ctx.cluster, ctx.timeouts.operators, ctx.timeouts.stable).await;
    progress.abort();
    if let Err(f) = stable {
        return Err(WaitError::Operators(f.cause));
    }
    timer.stage("Cluster Operators Stable");
    let console = waits::console_url(&ctx.cluster, ctx.timeouts.console).await;
    let dir = std::path::absolute(&ctx.install.dir).unwrap_or_else(|_| ctx.install.dir.clone());
    info!("Install complete!");
    info!("To access the cluster as the system:admin user when using 'oc', run");
    info!(
        "    export KUBECONFIG={}",
        okd_fs::shell_path(&dir.join("auth/kubeconfig"))
    );
    if let Some(url) = console {
        info!("Access the OpenShift web-console here: {url}");
    }
    // The password itself is never logged (it would land in
    // .openshift_install.log and terminal scrollback); its file is named.
    info!(
        "Login to the console with user: \"kubeadmin\", and the password in {}",
        dir.join("auth/kubeadmin-password").display()
    );
    timer.log();
    Ok(())
}

/// The text openshift-install logs when `install-complete` fails
/// (`cmd/openshift-install/create.go`).
const INSTALL_FAILED_TEXT: &str = "Cluster initialization failed because one or more operators are not functioning properly.
The cluster should be accessible for troubleshooting as detailed in the documentation linked below,
https://docs.openshift.com/container-platform/latest/support/troubleshooting/troubleshooting-installations.html
The 'wait-for install-complete' subcommand can then be used to continue the installation";
