//! What each of bootkube's stages does on the node ([`NodeStages`], the
//! real implementation of [`okd_bootkube::Stages`]).

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use okd_bootkube::{Stage, StageFailure, Topology};
use okd_bootstrap_render::{Input, control_plane, etcd};
use okd_cluster_bootstrap::RequiredPod;
use tracing::{info, warn};

use crate::checks::{self, kubeconfig_server, poll, url_host};
use crate::operators;
use crate::release::{PayloadKind, PulledRelease};

/// The pods cluster-bootstrap waits for with an upstream payload: the
/// production control plane's static pods on the masters, as the kubelets
/// mirror them (`kube-system/kube-apiserver-<master>` …; [CB]'s default
/// list without the pod-checkpointer).
pub const UPSTREAM_REQUIRED_PODS: &[&str] = &[
    "kube-system/kube-apiserver",
    "kube-system/kube-scheduler",
    "kube-system/kube-controller-manager",
];

/// How long a resolve or readyz check tries before it records a failure
/// and lets bootkube go on (bootkube.sh records these and never stops).
pub const CHECK_LIMIT: Duration = Duration::from_secs(60);

/// How long `wait-for-etcd` waits before the stage fails (and the unit
/// starts again).
pub const ETCD_LIMIT: Duration = Duration::from_secs(20 * 60);

/// How long single node's `stop-etcd` waits for etcd to stop.
pub const STOP_ETCD_LIMIT: Duration = Duration::from_secs(5 * 60);

/// How often the handover to the masters looks again (upstream payload).
pub const HANDOVER_PASS: Duration = Duration::from_secs(2);

/// The patch `cvo-overrides` applies (written by the installer into
/// bootstrap.ign).
pub const CVO_PATCH: &str = "original_cvo_overrides.patch";

/// How often `cvo-overrides` tries the patch again (bootkube.sh: 10 s).
pub const CVO_RETRY: Duration = Duration::from_secs(10);

/// Where the node program works and what it may change.
#[derive(Debug, Clone)]
pub struct NodeOptions {
    /// bootkube's directories (`/opt/openshift`, `/var/log/openshift`,
    /// `/etc/issue.d`).
    pub dirs: okd_bootkube::Dirs,
    /// The kubelet's configuration root (`/etc/kubernetes`).
    pub etc_kubernetes: PathBuf,
    /// `/etc` (mco-bootstrap's copies for an OpenShift payload:
    /// `mcc/bootstrap`, `mcs/kubeconfig`, `ssl/mcs`).
    pub etc: PathBuf,
    /// The program that runs the OpenShift operators' renders (`podman`).
    pub podman: PathBuf,
    /// The bootstrap's address (`OPENSHIFT_INSTALL_BOOTSTRAP_NODE_IP`);
    /// `None`: the source address of the route to api-int.
    pub node_ip: Option<IpAddr>,
    /// With or without a separate bootstrap machine.
    pub topology: Topology,
    /// Where the bootstrap machine-config server listens (`0.0.0.0:22623`).
    pub mcs_listen: SocketAddr,
    /// cluster-bootstrap's `--required-pods`; `None`: by payload and
    /// topology.
    pub required_pods: Option<Vec<String>>,
    /// cluster-bootstrap's waits (API, pods); `None`: its defaults (20 min).
    pub cluster_bootstrap_timeout: Option<Duration>,
    /// etcd's data directory on this node (`/var/lib/etcd`), which single
    /// node's `master-ignition` embeds.
    pub etcd_data: PathBuf,
}

impl NodeOptions {
    /// The bootstrap node's paths.
    pub fn node(topology: Topology) -> NodeOptions {
        NodeOptions {
            dirs: okd_bootkube::Dirs::node(),
            etc_kubernetes: PathBuf::from("/etc/kubernetes"),
            etc: PathBuf::from("/etc"),
            podman: PathBuf::from("podman"),
            node_ip: None,
            topology,
            mcs_listen: SocketAddr::from(([0, 0, 0, 0], 22623)),
            required_pods: None,
            cluster_bootstrap_timeout: None,
            etcd_data: PathBuf::from(okd_bootstrap_render::etcd::DATA_DIR),
        }
    }
}

/// bootkube's stages on the bootstrap node.
pub struct NodeStages {
    opts: NodeOptions,
    release: Option<PulledRelease>,
    node_ip: Option<IpAddr>,
    mcs: Option<(
        tokio::task::JoinHandle<()>,
        tokio::sync::oneshot::Sender<()>,
    )>,
    mcs_state: Option<Arc<okd_mcs::McsState>>,
}

fn fail(e: impl std::fmt::Display) -> StageFailure {
    StageFailure::new(e.to_string())
}

impl NodeStages {
    /// Stages working in `opts`' directories. When `mco-bootstrap` is
    /// already done (a restarted unit), the bootstrap machine-config
    /// server starts again at once.
    ///
    /// # Errors
    /// The machine-config server cannot start (its inputs, its port).
    pub async fn new(opts: NodeOptions) -> Result<NodeStages, StageFailure> {
        let mut s = NodeStages {
            opts,
            release: None,
            node_ip: None,
            mcs: None,
            mcs_state: None,
        };
        let w = &s.opts.dirs.work;
        // An OpenShift payload's machine-config server is the MCO's static
        // pod, which the kubelet keeps running by itself.
        if w.join("mco-bootstrap.done").exists()
            && !w.join(okd_bootkube::BOOTKUBE_DONE).exists()
            && PulledRelease::load(w).is_ok_and(|r| r.kind == PayloadKind::Upstream)
        {
            s.start_mcs()?;
        }
        Ok(s)
    }

    fn work(&self) -> &Path {
        &self.opts.dirs.work
    }

    fn release(&mut self) -> Result<&PulledRelease, StageFailure> {
        if self.release.is_none() {
            self.release = Some(PulledRelease::load(&self.opts.dirs.work).map_err(fail)?);
        }
        Ok(self.release.as_ref().expect("loaded"))
    }

    fn kind(&mut self) -> Result<PayloadKind, StageFailure> {
        Ok(self.release()?.kind)
    }

    /// The api-int kubeconfig's server (`auth/kubeconfig`).
    fn api_int(&self) -> Result<checks::KubeconfigServer, StageFailure> {
        kubeconfig_server(&self.work().join("auth/kubeconfig")).map_err(fail)
    }

    async fn node_ip(&mut self) -> Result<IpAddr, StageFailure> {
        if let Some(ip) = self.opts.node_ip.or(self.node_ip) {
            return Ok(ip);
        }
        let server = self.api_int()?;
        let host = url_host(&server.server)
            .ok_or_else(|| {
                fail(format!(
                    "auth/kubeconfig: server {} is not https://host:port",
                    server.server
                ))
            })?
            .to_string();
        let addrs = checks::resolve(&host).await.map_err(|e| {
            fail(format!(
                "cannot find this host's address: {e}; set OPENSHIFT_INSTALL_BOOTSTRAP_NODE_IP (or --node-ip)"
            ))
        })?;
        // The source address the kernel picks for the route to api-int
        // (a UDP connect sends nothing).
        let target = addrs[0];
        let bind: SocketAddr = if target.is_ipv4() {
            ([0, 0, 0, 0], 0).into()
        } else {
            (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
        };
        let sock = std::net::UdpSocket::bind(bind).map_err(fail)?;
        sock.connect(target).map_err(|e| {
            fail(format!(
                "no route to api-int ({target}): {e}; set OPENSHIFT_INSTALL_BOOTSTRAP_NODE_IP"
            ))
        })?;
        let ip = sock.local_addr().map_err(fail)?.ip();
        info!("the bootstrap's address is {ip} (the route to api-int {target})");
        self.node_ip = Some(ip);
        Ok(ip)
    }

    async fn render_input(&mut self) -> Result<Input, StageFailure> {
        let node_ip = self.node_ip().await?;
        let assets = self.opts.dirs.work.clone();
        let etc_kubernetes = self.opts.etc_kubernetes.clone();
        let r = self.release()?;
        Ok(Input {
            assets,
            etc_kubernetes,
            node_ip,
            etcd_image: r.image_for("etcd").map_err(fail)?.to_string(),
            hyperkube_image: r.image_for("hyperkube").map_err(fail)?.to_string(),
        })
    }

    fn start_mcs(&mut self) -> Result<(), StageFailure> {
        // The masters of an upstream payload get this program and the unit
        // that runs `okd-install node control-plane` (okd_bootstrap::masters).
        // Single node: the node itself becomes the master (master.ign
        // embeds the program); nothing to hand over.
        let mut extra = Vec::new();
        let mut served = None;
        if self.opts.topology == Topology::WithBootstrap {
            let program = std::env::current_exe().map_err(fail)?;
            let sha512 = crate::masters::program_sha512(
                &program,
                &self.work().join(crate::masters::PROGRAM_SHA512_CACHE),
            )
            .map_err(fail)?;
            let server = self.api_int()?;
            let host = url_host(&server.server).unwrap_or("localhost").to_string();
            let url = format!(
                "https://{host}:{}{}",
                self.opts.mcs_listen.port(),
                okd_mcs::NODE_PROGRAM_ROUTE
            );
            extra.push(crate::masters::node_program_machine_config(&url, &sha512));
            served = Some(program);
        }
        let mut state =
            okd_mcs::McsState::from_bootstrap_node_with(self.work(), extra).map_err(fail)?;
        if let Some(program) = served {
            state.set_node_program(program);
        }
        let listener = okd_mcs::bind(self.opts.mcs_listen).map_err(fail)?;
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let addr = self.opts.mcs_listen;
        let state = Arc::new(state);
        self.mcs_state = Some(state.clone());
        let task = tokio::spawn(async move {
            let shutdown = async move {
                let _ = rx.await;
            };
            if let Err(e) = okd_mcs::serve_tls(listener, state, None, shutdown).await {
                warn!("the bootstrap machine-config server on {addr} stopped: {e}");
            }
        });
        info!("the bootstrap machine-config server listens on {addr}");
        self.mcs = Some((task, tx));
        Ok(())
    }

    async fn stop_mcs(&mut self) {
        if let Some((task, tx)) = self.mcs.take() {
            let _ = tx.send(());
            let _ = task.await;
            info!("stopped the bootstrap machine-config server");
        }
    }

    /// Whether the bootstrap machine-config server runs (tests).
    pub fn mcs_running(&self) -> bool {
        self.mcs.is_some()
    }

    /// An OpenShift payload: runs the stage's operator image with podman
    /// as bootkube.sh does ([`operators`]). An upstream payload has no
    /// operators: nothing to run.
    async fn operator_render(&mut self, stage: &str, operator: &str) -> Result<(), StageFailure> {
        match self.kind()? {
            PayloadKind::Upstream => {
                info!("stage {stage}: the upstream payload has no {operator}: nothing to render");
                Ok(())
            }
            PayloadKind::Openshift => {
                let roots = operators::Roots {
                    work: self.work().to_path_buf(),
                    etc_kubernetes: self.opts.etc_kubernetes.clone(),
                    etc: self.opts.etc.clone(),
                };
                let podman = self.opts.podman.clone();
                let release = self.release()?.clone();
                let Some(render) = operators::plan(stage, &release, &roots.work).map_err(fail)?
                else {
                    return Err(fail(format!(
                        "stage {stage}: okd-install does not run {operator} for an OpenShift payload yet"
                    )));
                };
                if stage == "mco-bootstrap" {
                    operators::write_image_references(&release, &roots.work).map_err(fail)?;
                }
                operators::run(&podman, &render, &release, &roots)
                    .await
                    .map_err(fail)
            }
        }
    }

    async fn resolve_stage(&mut self, public: bool) -> Result<(), StageFailure> {
        let server = self.api_int()?;
        let host = api_host(&server.server, public)?;
        match poll(&format!("{host} to resolve"), CHECK_LIMIT, || {
            checks::resolve(&host)
        })
        .await
        {
            Ok(addrs) => {
                let list: Vec<String> = addrs.iter().map(|a| a.ip().to_string()).collect();
                info!("{host} resolves to {}", list.join(", "));
                Ok(())
            }
            Err(e) => Err(StageFailure::recorded(e)),
        }
    }

    async fn check_stage(&mut self, public: bool) -> Result<(), StageFailure> {
        let server = self.api_int()?;
        let host = api_host(&server.server, public)?;
        let ca = self
            .work()
            .join("tls/kube-apiserver-complete-server-ca-bundle.crt");
        let ca = if ca.exists() {
            ca
        } else {
            let p = self.work().join(".api-ca.crt");
            okd_fs::write_atomic(&p, &server.ca_pem, 0o644).map_err(fail)?;
            p
        };
        let client = checks::client(&ca, None).map_err(fail)?;
        let url = format!("https://{host}:6443/readyz");
        match poll(&format!("{url} to answer ok"), CHECK_LIMIT, || {
            checks::get(&client, &url)
        })
        .await
        {
            Ok(_) => {
                info!("{url}: ok");
                Ok(())
            }
            Err(e) => Err(StageFailure::recorded(e)),
        }
    }

    async fn wait_for_etcd(&mut self) -> Result<(), StageFailure> {
        let tls = self.work().join("tls");
        let client = checks::client(
            &tls.join("etcd-ca-bundle.crt"),
            Some((&tls.join("etcd-client.crt"), &tls.join("etcd-client.key"))),
        )
        .map_err(fail)?;
        let url = "https://localhost:2379/health";
        poll(
            "etcd (https://localhost:2379/health)",
            ETCD_LIMIT,
            || async {
                let body = checks::get(&client, url).await?;
                if body.contains("\"health\":\"true\"") {
                    Ok(())
                } else {
                    Err(format!("{url}: {body}"))
                }
            },
        )
        .await
        .map_err(fail)?;
        info!("etcd is healthy");
        Ok(())
    }

    /// The handover to the masters (upstream payload), through the
    /// api-int kubeconfig (the bootstrap's API before the teardown, the
    /// masters' after).
    async fn handover(&mut self) -> Result<crate::masters::Handover, StageFailure> {
        let masters = crate::masters::expected_masters(self.work()).map_err(fail)?;
        let cluster = okd_cluster::Cluster::from_kubeconfig(&self.work().join("auth/kubeconfig"))
            .await
            .map_err(fail)?;
        let r = self.release()?;
        let etcd_image = r.image_for("etcd").map_err(fail)?.to_string();
        let hyperkube = r.image_for("hyperkube").map_err(fail)?.to_string();
        crate::masters::Handover::new(
            &self.opts.dirs.work,
            masters,
            cluster.client(),
            &etcd_image,
            &hyperkube,
        )
        .map_err(fail)
    }

    /// Single node's `master-ignition`: the master config of this node's
    /// machine-config server (in this process for an upstream payload; the
    /// MCO's bootstrap pod on `localhost:22624` for an OKD/OCP payload),
    /// then [`crate::in_place::master_ignition`] into `master.ign` (0600).
    async fn master_ignition(&mut self) -> Result<(), StageFailure> {
        let original: Vec<u8> = match self.kind()? {
            PayloadKind::Upstream => {
                if self.mcs_state.is_none() {
                    self.start_mcs()?;
                }
                let state = self.mcs_state.as_ref().expect("started");
                match state.body("master", okd_mcs::SpecVersion::V3(2)) {
                    Some(Ok(b)) => b.to_vec(),
                    Some(Err(e)) => {
                        return Err(fail(format!("the master config as spec 3.2.0: {e}")));
                    }
                    None => return Err(fail("the machine-config server has no master pool")),
                }
            }
            PayloadKind::Openshift => crate::in_place::fetch_master_config(ETCD_LIMIT)
                .await
                .map_err(fail)?,
        };
        let node_ip = self.node_ip().await?;
        let hyperkube = self
            .release()?
            .image_for("hyperkube")
            .map_err(fail)?
            .to_string();
        let p = crate::in_place::InPlace {
            work: self.opts.dirs.work.clone(),
            etc_kubernetes: self.opts.etc_kubernetes.clone(),
            etcd_data: self.opts.etcd_data.clone(),
            node_ip,
            hyperkube_image: hyperkube,
            program: std::env::current_exe().ok(),
        };
        crate::in_place::write_master_ign(&p, &original).map_err(fail)
    }

    async fn cvo_overrides(&mut self) -> Result<(), StageFailure> {
        crate::restore_cvo_overrides(
            &self.work().join(CVO_PATCH),
            &self.work().join("auth/kubeconfig"),
            CVO_RETRY,
        )
        .await
        .map_err(fail)
    }

    async fn cluster_bootstrap(&mut self) -> Result<(), StageFailure> {
        let kind = self.kind()?;
        let mut o = okd_cluster_bootstrap::Options::new(self.work());
        o.pod_manifest_dir = self.opts.etc_kubernetes.join("manifests");
        o.bootstrap_secrets_dir = self.opts.etc_kubernetes.join("bootstrap-secrets");
        let pods: Vec<String> = match (&self.opts.required_pods, self.opts.topology, kind) {
            (Some(p), _, _) => p.clone(),
            (None, Topology::SingleNode, _) => Vec::new(),
            (None, _, PayloadKind::Upstream) => UPSTREAM_REQUIRED_PODS
                .iter()
                .map(|s| s.to_string())
                .collect(),
            (None, _, PayloadKind::Openshift) => okd_cluster_bootstrap::BOOTKUBE_REQUIRED_PODS
                .iter()
                .map(|s| s.to_string())
                .collect(),
        };
        let clauses: Vec<&str> = pods.iter().map(String::as_str).collect();
        o.required_pods = RequiredPod::parse(&clauses).map_err(fail)?;
        // An upstream control plane has no operators: the masters' mirror
        // pods show it.
        if o.ha.is_some() && kind == PayloadKind::Upstream {
            o.ha = Some(okd_cluster_bootstrap::ha::Source::MirrorPods);
        }
        if let Some(t) = self.opts.cluster_bootstrap_timeout {
            o.api_timeout = t;
            o.pods_timeout = t;
        }
        let watcher = tokio::spawn(refusals_on_console(
            o.progress.clone(),
            self.opts.dirs.issue.clone(),
        ));
        // With an upstream payload the bootstrap itself moves etcd and the
        // control plane to the masters while cluster-bootstrap waits for
        // their pods (the etcd and control-plane operators' part).
        let handover =
            if kind == PayloadKind::Upstream && self.opts.topology != Topology::SingleNode {
                match self.handover().await {
                    Ok(h) => Some(tokio::spawn(async move { h.run(HANDOVER_PASS).await })),
                    Err(e) => {
                        warn!(
                            "cannot hand etcd and the control plane to the masters: {}",
                            e.message
                        );
                        None
                    }
                }
            } else {
                None
            };
        let result = okd_cluster_bootstrap::start(&o).await;
        watcher.abort();
        let _ = watcher.await;
        if let Some(h) = handover {
            h.abort();
            let _ = h.await;
        }
        let report = result.map_err(fail)?;
        info!(
            "cluster-bootstrap done: {} steps, events {:?}",
            report.steps.len(),
            report.events.iter().map(|(e, _)| *e).collect::<Vec<_>>()
        );
        Ok(())
    }
}

/// The console message while the API refuses manifests as invalid.
pub const MANIFESTS_ISSUE_FILE: &str = "61_okd-install-manifests.issue";

/// Every 2 s while cluster-bootstrap runs: the manifests the API refuses
/// as invalid go to the console (`/etc/issue.d/61_okd-install-manifests.issue`)
/// and the log, once per change; the message goes once none is refused.
async fn refusals_on_console(
    progress: std::sync::Arc<std::sync::Mutex<okd_cluster_bootstrap::Progress>>,
    issue: PathBuf,
) {
    let path = issue.join(MANIFESTS_ISSUE_FILE);
    // A message an earlier run left is stale until this run sees refusals.
    let _ = std::fs::remove_file(&path);
    let mut shown = String::new();
    loop {
        let refused: Vec<String> = {
            let p = progress.lock().unwrap_or_else(|e| e.into_inner());
            p.failures
                .values()
                .filter(|f| f.invalid)
                .map(|f| format!("manifests/{f}"))
                .collect()
        };
        let text = if refused.is_empty() {
            String::new()
        } else {
            format!(
                "okd-install: the API refuses {} manifest(s) as invalid; cluster-bootstrap tries again and reads a fixed file:\n{}\n",
                refused.len(),
                refused.join("\n")
            )
        };
        if text != shown {
            if text.is_empty() {
                let _ = std::fs::remove_file(&path);
                info!("no manifest is refused any more");
            } else {
                warn!("{}", text.trim_end());
                if let Err(e) = okd_fs::write_atomic(&path, text.as_bytes(), 0o644) {
                    warn!("could not write the console message: {e}");
                }
            }
            shown = text;
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}

fn api_host(api_int_server: &str, public: bool) -> Result<String, StageFailure> {
    let host = url_host(api_int_server).ok_or_else(|| {
        fail(format!(
            "auth/kubeconfig: server {api_int_server} is not https://host:port"
        ))
    })?;
    Ok(if public {
        host.strip_prefix("api-int.")
            .map_or(host.to_string(), |d| format!("api.{d}"))
    } else {
        host.to_string()
    })
}

fn copy_files(from: &Path, to: &Path) -> Result<usize, StageFailure> {
    okd_fs::create_dir_all(to, 0o755).map_err(fail)?;
    operators::copy_dir(from, to, false).map_err(fail)
}

impl okd_bootkube::Stages for NodeStages {
    async fn run(&mut self, stage: &'static Stage) -> Result<(), StageFailure> {
        match stage.name {
            "openshift-manifests" => {
                let n = copy_files(
                    &self.work().join("openshift"),
                    &self.work().join("manifests"),
                )?;
                info!("copied {n} files from openshift/ to manifests/");
                Ok(())
            }
            "api-bootstrap" => {
                if self.kind()? == PayloadKind::Openshift {
                    return self.operator_render(stage.name, "cluster-config-api").await;
                }
                let manifests = self.work().join("manifests");
                okd_bootstrap_render::api::render_etcd_operator_cr(&manifests).map_err(fail)?;
                let written = okd_bootstrap_render::api::render_crds(&manifests).map_err(fail)?;
                info!(
                    "stage {}: the upstream payload has no cluster-config-api: wrote {} CustomResourceDefinitions for the OpenShift kinds the manifests use",
                    stage.name,
                    written.len()
                );
                Ok(())
            }
            "auth-api-bootstrap" => {
                self.operator_render(stage.name, "cluster-authentication-operator")
                    .await
            }
            "config-bootstrap" => {
                self.operator_render(stage.name, "cluster-config-operator")
                    .await
            }
            "cvo-bootstrap" => {
                if self.kind()? == PayloadKind::Upstream {
                    let manifests = self.work().join("manifests");
                    let mut written =
                        okd_bootstrap_render::api::render_namespaces(&manifests).map_err(fail)?;
                    written.extend(
                        okd_bootstrap_render::api::render_node_bootstrap_rbac(&manifests)
                            .map_err(fail)?,
                    );
                    info!(
                        "stage {}: the upstream payload has no cluster-version-operator or machine-config-operator: wrote {} Namespaces the manifests use and the node bootstrap RBAC",
                        stage.name,
                        written.len()
                    );
                } else {
                    self.operator_render(stage.name, "cluster-version-operator")
                        .await?;
                }
                let kc =
                    std::fs::read(self.work().join("auth/kubeconfig-loopback")).map_err(fail)?;
                okd_fs::write_atomic(&self.opts.etc_kubernetes.join("kubeconfig"), &kc, 0o600)
                    .map_err(fail)
            }
            "etcd-bootstrap" => match self.kind()? {
                PayloadKind::Upstream => {
                    let input = self.render_input().await?;
                    okd_fs::create_dir_all(&self.opts.etc_kubernetes.join("manifests"), 0o755)
                        .map_err(fail)?;
                    etcd::render(&input).map_err(fail)
                }
                PayloadKind::Openshift => {
                    self.operator_render(stage.name, "cluster-etcd-operator")
                        .await
                }
            },
            "kube-apiserver-bootstrap"
            | "kube-controller-manager-bootstrap"
            | "kube-scheduler-bootstrap" => match self.kind()? {
                PayloadKind::Upstream => {
                    let input = self.render_input().await?;
                    match stage.name {
                        "kube-apiserver-bootstrap" => control_plane::render_apiserver(&input),
                        "kube-controller-manager-bootstrap" => {
                            control_plane::render_controller_manager(&input)
                        }
                        _ => control_plane::render_scheduler(&input),
                    }
                    .map_err(fail)
                }
                PayloadKind::Openshift => {
                    let op = format!(
                        "cluster-{}-operator",
                        stage.name.trim_end_matches("-bootstrap")
                    );
                    self.operator_render(stage.name, &op).await
                }
            },
            "ingress-operator-bootstrap" => {
                self.operator_render(stage.name, "cluster-ingress-operator")
                    .await
            }
            "node-tuning-bootstrap" | "cmdbootline-nto-bootstrap" => {
                self.operator_render(stage.name, "cluster-node-tuning-operator")
                    .await
            }
            "mco-bootstrap" => {
                if self.kind()? == PayloadKind::Openshift {
                    return self
                        .operator_render(stage.name, "machine-config-operator")
                        .await;
                }
                if self.mcs.is_none() {
                    self.start_mcs()?;
                }
                Ok(())
            }
            "resolve-api-url" => self.resolve_stage(true).await,
            "resolve-api-int-url" => self.resolve_stage(false).await,
            "cco-bootstrap" => {
                self.operator_render(stage.name, "cloud-credential-operator")
                    .await
            }
            "wait-for-etcd" => self.wait_for_etcd().await,
            "cb-bootstrap" => self.cluster_bootstrap().await,
            "cvo-overrides" => {
                self.cvo_overrides().await?;
                // bootkube.sh stops the bootstrap machine-config server
                // right after restoring the CVO overrides.
                match self.kind()? {
                    PayloadKind::Upstream => self.stop_mcs().await,
                    PayloadKind::Openshift => {
                        let pod = self
                            .opts
                            .etc_kubernetes
                            .join("manifests")
                            .join(operators::MCO_BOOTSTRAP_POD);
                        match std::fs::remove_file(&pod) {
                            Ok(()) => info!("removed {}", pod.display()),
                            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                            Err(e) => {
                                return Err(fail(format!("cannot remove {}: {e}", pod.display())));
                            }
                        }
                    }
                }
                Ok(())
            }
            "wait-for-ceo" => match self.kind()? {
                PayloadKind::Openshift => {
                    self.operator_render(stage.name, "cluster-etcd-operator")
                        .await
                }
                PayloadKind::Upstream => {
                    // cluster-etcd-operator's wait-for-ceo waits until etcd
                    // runs on the masters; here the bootstrap finishes the
                    // handover itself and returns when every master is a
                    // healthy voter with its control plane.
                    let h = self.handover().await?;
                    info!(
                        "waiting for etcd and the control plane on {} master(s)",
                        h.masters().len()
                    );
                    h.run(HANDOVER_PASS).await;
                    Ok(())
                }
            },
            "stop-etcd" => {
                crate::in_place::stop_etcd_pod(&self.opts.etc_kubernetes).map_err(fail)?;
                let tls = self.work().join("tls");
                let client = checks::client(
                    &tls.join("etcd-ca-bundle.crt"),
                    Some((&tls.join("etcd-client.crt"), &tls.join("etcd-client.key"))),
                )
                .map_err(fail)?;
                crate::in_place::wait_etcd_stopped(
                    &client,
                    "https://localhost:2379/health",
                    STOP_ETCD_LIMIT,
                )
                .await
                .map_err(fail)
            }
            "master-ignition" => self.master_ignition().await,
            "check-api-url" => self.check_stage(true).await,
            "check-api-int-url" => self.check_stage(false).await,
            other => Err(fail(format!("no implementation for stage {other}"))),
        }
    }
}
