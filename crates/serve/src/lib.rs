//! `okd-install serve`: the bastion layer of a user-provisioned install in
//! one process, and `create bastion-configs`, the same layer as files for
//! real daemons. The binary parses the command line and calls [`serve`],
//! [`control_request`] or [`create_bastion_configs`].
//!
//! From the asset directory (after `create ignition-configs`) plus
//! `agent-config.yaml` and `bastion-config.yaml` it runs, on the bastion's
//! listen address:
//!
//! | port (default) | service |
//! | --- | --- |
//! | 53 udp+tcp | DNS, authoritative for `<cluster>.<baseDomain>` and the reverse zones, the rest forwarded |
//! | 6443, 22623, 80, 443 | the load balancer (bootstrap + masters; workers, or masters, for ingress) |
//! | 22625 | our machine-config server over TLS, a backend of 22623 |
//! | 8080 | Ignition files, OS images, PXE scripts |
//! | 9000 | status page (`/`), `/status` JSON, `/metrics` (Prometheus), `/healthz` |
//!
//! and a control socket `<dir>/.okd-serve.sock` for `serve status` and
//! `serve remove-bootstrap`. Every port is bound before anything is served,
//! so a port in use stops the start with an error naming it.

mod control;
mod status;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context as _;
use axum::Router;
use axum::extract::State;
use axum::http::header;
use axum::response::{Html, IntoResponse};
use axum::routing::get;
use okd_hosts::{Inventory, Role};
use okd_lb::LoadBalancer;
use okd_types::release::ReleaseTarget;
use serde_json::Value;
use status::Status;
use tracing::info;

/// What a served directory needs besides its hosts: the cluster's name and
/// base domain and the target release, read from the state file that
/// `create` wrote (or from `install-config.yaml` when no step consumed it yet).
#[derive(Debug, Clone)]
pub(crate) struct ClusterInfo {
    /// `metadata.name`.
    pub(crate) name: String,
    /// `baseDomain`.
    pub(crate) base_domain: String,
    /// The release the assets were made for.
    pub(crate) target: Option<ReleaseTarget>,
}

impl ClusterInfo {
    /// Reads `dir/.openshift_install_state.json`, falling back to
    /// `dir/install-config.yaml`.
    ///
    /// # Errors
    /// When neither names the cluster.
    pub(crate) fn load(dir: &Path) -> anyhow::Result<ClusterInfo> {
        use okd_assets::installconfig::{InstallConfigAsset, ReleaseImage};
        let recorded = okd_assets::recorded::Recorded::load(dir)?;
        let from_state = match &recorded {
            Some(r) => r.get::<InstallConfigAsset>()?.map(|a| a.config),
            None => None,
        };
        let (name, base_domain) = match from_state {
            Some(c) => (c.metadata.name, c.base_domain),
            None => {
                let p = dir.join("install-config.yaml");
                let text = std::fs::read_to_string(&p).with_context(|| {
                    format!(
                        "{} has neither {} nor install-config.yaml: run `okd-install create ignition-configs --dir {}` first",
                        dir.display(),
                        okd_assets::store::STATE_FILE,
                        dir.display()
                    )
                })?;
                let c: NameAndDomain = serde_yaml_ng::from_str(&text).with_context(|| {
                    format!(
                        "cannot read metadata.name and baseDomain from {}",
                        p.display()
                    )
                })?;
                (c.metadata.name, c.base_domain)
            }
        };
        let target = match &recorded {
            Some(r) => r
                .get::<ReleaseImage>()?
                .and_then(|i| ReleaseTarget::from_release_image(&i.pull_spec)),
            None => None,
        };
        Ok(ClusterInfo {
            name,
            base_domain,
            target,
        })
    }

    /// Whether DNS carries the etcd A and SRV records (releases ≤ 4.5).
    pub(crate) fn etcd_records(&self) -> bool {
        self.target
            .as_ref()
            .is_some_and(ReleaseTarget::wants_etcd_srv_records)
    }
}

/// The two fields of an install-config.yaml that no step consumed yet which
/// `serve` needs.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct NameAndDomain {
    metadata: NameOnly,
    base_domain: String,
}

#[derive(serde::Deserialize)]
struct NameOnly {
    name: String,
}

/// Loads the cluster info and the hosts of `dir`.
fn load(dir: &Path) -> anyhow::Result<(ClusterInfo, Inventory)> {
    let info = ClusterInfo::load(dir)?;
    let inv = Inventory::load(dir, &info.name, &info.base_domain)
        .with_context(|| format!("reading the hosts of {}", dir.display()))?;
    Ok((info, inv))
}

/// `okd-install create bastion-configs`: writes the files of
/// [`okd_bastion::bastion_configs`] under `<dir>/bastion/` (atomically, file
/// by file) and logs where.
pub fn create_bastion_configs(dir: &Path) -> anyhow::Result<()> {
    let (info, inv) = load(dir)?;
    let files = okd_bastion::bastion_configs(&inv, info.etcd_records());
    let root = dir.join("bastion");
    okd_bastion::configs::write_generated(&root, &files)
        .with_context(|| format!("writing {}", root.display()))?;
    info!(
        "Bastion configs created in: {} ({} files: haproxy, keepalived, dnsmasq, BIND, CoreDNS, PXE)",
        root.display(),
        files.len()
    );
    Ok(())
}

/// `okd-install serve status|remove-bootstrap`: one request to the running
/// server of `dir`, printed on stdout.
pub fn control_request(dir: &Path, what: &str) -> anyhow::Result<()> {
    let reply = control::request(dir, what)?;
    print!("{reply}");
    Ok(())
}

/// Reports every service's events to the [`Status`].
struct Observer(Arc<Status>);

impl okd_mcs::FetchObserver for Observer {
    fn fetched(&self, peer: SocketAddr, pool: &str, spec: &str, status: u16) {
        self.0.ignition(peer, pool, spec, status);
    }
}

impl okd_bootserver::HttpObserver for Observer {
    fn served(&self, peer: SocketAddr, path: &str, status: u16, bytes: u64) {
        self.0.http(peer, path, status, bytes);
    }
}

impl okd_dns::DnsObserver for Observer {
    fn answered(&self, client: SocketAddr, name: &str, qtype: &str, answers: &[String]) {
        self.0.dns(client, name, qtype, answers);
    }
}

impl okd_lb::ConnObserver for Observer {
    fn proxied(&self, _frontend: &str, _backend: &str, client: SocketAddr, local: SocketAddr) {
        self.0.proxied(client, local);
    }
}

/// The services `serve` can run; `--services` picks a subset (default all).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Service {
    /// DNS on `ports.dns`.
    Dns,
    /// The load balancer (api, machine-config, ingress frontends).
    Lb,
    /// The machine-config server on `ports.machineConfigServer`.
    Mcs,
    /// Ignition files, OS images and PXE scripts on `ports.http`.
    Http,
    /// The status page, `/status` and `/metrics` on `ports.status`.
    Status,
}

impl Service {
    /// Every service.
    pub const ALL: [Service; 5] = [
        Service::Dns,
        Service::Lb,
        Service::Mcs,
        Service::Http,
        Service::Status,
    ];
}

#[derive(Clone)]
struct StatusApp {
    status: Arc<Status>,
    lb: Option<Arc<LoadBalancer>>,
    http: Option<Arc<okd_bootserver::HttpState>>,
}

impl StatusApp {
    fn lb_json(&self) -> Value {
        self.lb
            .as_ref()
            .map(|lb| serde_json::to_value(lb.snapshot()).unwrap_or(Value::Null))
            .unwrap_or(Value::Null)
    }

    fn prometheus(&self) -> String {
        let mut out = self
            .lb
            .as_ref()
            .map(|lb| lb.prometheus())
            .unwrap_or_default();
        out += "# HELP okd_serve_unknown_clients Clients outside the inventory remembered by the status page (bounded).\n";
        out += "# TYPE okd_serve_unknown_clients gauge\n";
        out += &format!(
            "okd_serve_unknown_clients {}\n",
            self.status.unknown_clients()
        );
        out
    }
}

fn status_router(app: StatusApp) -> Router {
    Router::new()
        .route(
            "/",
            get(|State(a): State<StatusApp>| async move { Html(a.status.html(a.lb_json())) }),
        )
        .route(
            "/status",
            get(|State(a): State<StatusApp>| async move {
                (
                    [(header::CONTENT_TYPE, "application/json")],
                    serde_json::to_string_pretty(&a.status.json(a.lb_json())).unwrap_or_default(),
                )
                    .into_response()
            }),
        )
        .route(
            "/metrics",
            get(|State(a): State<StatusApp>| async move {
                (
                    [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
                    a.prometheus(),
                )
                    .into_response()
            }),
        )
        .route("/healthz", get(|| async { "ok\n" }))
        .with_state(app)
}

/// The reply of the control socket to one request line.
fn control_reply(app: &StatusApp, inv: &Inventory, line: &str) -> String {
    match line {
        "status" => {
            serde_json::to_string_pretty(&app.status.json(app.lb_json())).unwrap_or_default() + "\n"
        }
        "remove-bootstrap" => {
            let names: Vec<&str> = inv
                .role(Role::Bootstrap)
                .map(|n| n.hostname.as_str())
                .collect();
            if names.is_empty() {
                return "error: the inventory has no bootstrap host (bastion-config.yaml `bootstrap`)\n".into();
            }
            if app.lb.is_none() && app.http.is_none() {
                return "error: this serve runs neither the load balancer nor HTTP (--services): remove the bootstrap from your own balancer\n".into();
            }
            let mut out = String::new();
            if let Some(http) = &app.http {
                if http.remove_bootstrap() {
                    info!("bootstrap.ign is no longer served (serve remove-bootstrap)");
                    out += "bootstrap.ign is no longer served\n";
                } else {
                    out += "bootstrap.ign was already no longer served\n";
                }
            }
            if let Some(lb) = &app.lb {
                for name in names {
                    let left = lb.remove_backend(name);
                    if left.is_empty() {
                        out += &format!("backend {name} was already removed\n");
                    } else {
                        out += &format!(
                            "removed backend {name} from frontends {}\n",
                            left.join(", ")
                        );
                    }
                }
            } else {
                out += "this serve runs no load balancer: remove the bootstrap from your own balancer\n";
            }
            out
        }
        other => format!("error: unknown request {other:?} (status, remove-bootstrap)\n"),
    }
}

/// What `okd-install serve` runs and how.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// The services to run (`--services`, default [`Service::ALL`]).
    pub services: Vec<Service>,
    /// Guard `bootstrap.ign` with a one-time token in its URL
    /// (`--bootstrap-token`): written to `auth/bootstrap-ignition-url` (0600)
    /// and put into the bootstrap host's PXE scripts.
    pub bootstrap_token: bool,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            services: Service::ALL.to_vec(),
            bootstrap_token: false,
        }
    }
}

/// The file, under the asset directory, that holds the one-time
/// `bootstrap.ign` URL of `serve --bootstrap-token` (mode 0600).
pub const BOOTSTRAP_URL_FILE: &str = "auth/bootstrap-ignition-url";

/// Runs `okd-install serve --dir dir` until SIGINT or SIGTERM.
///
/// # Errors
/// The asset directory or inventory cannot be read, a port cannot be bound
/// (the error names it), or a service stops.
pub fn serve(dir: &Path, opts: &ServeOptions) -> anyhow::Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    rt.block_on(serve_async(dir.to_path_buf(), opts.clone()))
}

/// A random token of 32 lowercase hex digits (128 bits).
fn new_token() -> String {
    use rand::RngCore as _;
    let mut b = [0u8; 16];
    rand::rng().fill_bytes(&mut b);
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The HTTP state, with the one-time token when asked for (written to
/// [`BOOTSTRAP_URL_FILE`]), and the log line saying what is served to whom.
fn http_state(
    dir: &Path,
    inv: &Inventory,
    http_addr: SocketAddr,
    token: bool,
) -> anyhow::Result<okd_bootserver::HttpState> {
    let mut st = okd_bootserver::HttpState::new(dir, inv.clone());
    let clients: Vec<String> = st
        .bootstrap_clients()
        .iter()
        .map(ToString::to_string)
        .collect();
    if clients.is_empty() {
        tracing::warn!(
            "HTTP on {http_addr} serves master.ign and worker.ign to any client; bootstrap.ign to none: {} names no bootstrap host",
            okd_hosts::BASTION_CONFIG_FILE
        );
        return Ok(st);
    }
    let mut guard = String::new();
    if token {
        let t = new_token();
        let url = format!("http://{http_addr}/ignition/bootstrap.ign?token={t}\n");
        let file = dir.join(BOOTSTRAP_URL_FILE);
        okd_assets::dir::create_dir_all(&dir.join("auth"))?;
        okd_assets::dir::write_atomic(&file, url.as_bytes(), 0o600)?;
        st = st.with_bootstrap_token(t);
        guard = format!(
            " with a one-time token (URL in {}, also in the bootstrap host's PXE scripts)",
            file.display()
        );
    }
    info!(
        "HTTP on {http_addr} serves master.ign and worker.ign to any client, bootstrap.ign only to {} (bootstrap){guard} until `serve remove-bootstrap`, images from {}/",
        clients.join(", "),
        inv.os_images.directory
    );
    Ok(st)
}

async fn serve_async(dir: PathBuf, opts: ServeOptions) -> anyhow::Result<()> {
    // Connection caps, not the descriptor table, bound what clients can hold.
    match okd_listen::raise_nofile_limit() {
        Ok(l) => tracing::debug!("open files limit {:?} (was {:?})", l.after, l.before),
        Err(e) => tracing::warn!("cannot raise the open files limit: {e}"),
    }
    let services = opts.services.clone();
    let on = |s: Service| services.contains(&s);
    let (info, inv) = load(&dir)?;
    let status = Arc::new(Status::new(inv.clone()));
    let obs = Arc::new(Observer(status.clone()));
    let mut ready = Vec::new();

    // Bind every port first: a port in use stops the start, naming the port.
    let mcs_addr = SocketAddr::new(inv.listen, inv.ports.machine_config_server);
    let mcs = if on(Service::Mcs) {
        let state = okd_mcs::McsState::from_asset_dir(&dir).with_context(|| {
            format!(
                "loading the machine-config server's inputs from {}",
                dir.display()
            )
        })?;
        for pool in state.pools() {
            if let Some(p) = state.pool(pool) {
                info!("Machine-config pool {pool}: {}", p.name());
            }
        }
        let l = okd_mcs::bind(mcs_addr)?;
        ready.push(format!("machine-config server on {mcs_addr} (TLS)"));
        Some((Arc::new(state), l))
    } else {
        None
    };
    let http_addr = SocketAddr::new(inv.listen, inv.ports.http);
    let http = if on(Service::Http) {
        let l = okd_bootserver::bind(http_addr).await?;
        ready.push(format!("HTTP on {http_addr}"));
        let st = Arc::new(http_state(&dir, &inv, http_addr, opts.bootstrap_token)?);
        Some((l, st))
    } else {
        None
    };
    let status_addr = SocketAddr::new(inv.listen, inv.ports.status);
    let status_listener = if on(Service::Status) {
        let l = tokio::net::TcpListener::bind(status_addr)
            .await
            .with_context(|| format!("cannot listen on {status_addr} (status page)"))?;
        ready.push(format!("status on http://{status_addr}/"));
        Some(l)
    } else {
        None
    };
    let dns = if on(Service::Dns) {
        let d = okd_dns::DnsServer::start(
            &inv,
            SocketAddr::new(inv.listen, inv.ports.dns),
            info.etcd_records(),
            Some(obs.clone()),
        )
        .await?;
        ready.push(format!("DNS on {} (udp+tcp)", d.local_addr()));
        Some(d)
    } else {
        None
    };
    let lb = if on(Service::Lb) {
        let mcs_backend = mcs.as_ref().map(|_| mcs_addr);
        let lb = LoadBalancer::start_observed(
            okd_lb::frontends_for(&inv, mcs_backend),
            Some(obs.clone()),
        )
        .await?;
        let addr = |f: &str| lb.local_addr(f).map(|a| a.to_string()).unwrap_or_default();
        ready.push(format!(
            "load balancer api {} machine-config {} ingress {} and {}",
            addr("api"),
            addr("machine-config"),
            addr("ingress-http"),
            addr("ingress-https")
        ));
        Some(Arc::new(lb))
    } else {
        None
    };
    let control_listener = control::bind(&dir)?;

    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let stopped = move || {
        let mut rx = stop_rx.clone();
        async move {
            let _ = rx.wait_for(|v| *v).await;
        }
    };
    let mut tasks = tokio::task::JoinSet::new();
    if let Some((st, l)) = mcs {
        let (o, s) = (obs.clone(), stopped());
        tasks.spawn(async move {
            okd_mcs::serve_tls(l, st, Some(o), s)
                .await
                .context("machine-config server")
        });
    }
    let http_state = http.as_ref().map(|(_, st)| st.clone());
    if let Some((l, st)) = http {
        let router = okd_bootserver::router(st, Some(obs.clone()));
        let s = stopped();
        tasks.spawn(async move {
            okd_bootserver::serve(l, router, s)
                .await
                .context("HTTP server")
        });
    }
    let app = StatusApp {
        status: status.clone(),
        lb: lb.clone(),
        http: http_state,
    };
    if let Some(l) = status_listener {
        let router = status_router(app.clone());
        let s = stopped();
        tasks.spawn(async move {
            let l = okd_listen::Listener::new(l, okd_listen::Limits::default());
            okd_listen::serve_router(l, router, None, s).await;
            Ok(())
        });
    }
    {
        let (app, inv) = (app.clone(), inv.clone());
        tasks.spawn(async move {
            control::serve(control_listener, move |line| {
                control_reply(&app, &inv, line)
            })
            .await;
            Ok(())
        });
    }

    info!("Serving {}: {}", inv.cluster_domain, ready.join(", "));
    if on(Service::Http) {
        info!(
            "Nodes boot with the kernel arguments served at http://{http_addr}/pxe/ipxe?mac=<MAC>; `okd-install serve status --dir {}` shows what each host fetched",
            dir.display()
        );
    }

    let result = tokio::select! {
        r = shutdown_signal() => { info!("Received {r}, shutting down"); Ok(()) }
        Some(r) = tasks.join_next() => match r {
            Ok(Ok(())) => Err(anyhow::anyhow!("a service stopped unexpectedly")),
            Ok(Err(e)) => Err(e),
            Err(e) => Err(anyhow::anyhow!("a service panicked: {e}")),
        },
    };
    stop_tx.send_replace(true);
    tasks.abort_all();
    while tasks.join_next().await.is_some() {}
    drop(app);
    if let Some(d) = dns {
        d.shutdown().await;
    }
    if let Some(lb) = lb.and_then(|lb| Arc::try_unwrap(lb).ok()) {
        lb.shutdown().await;
    }
    let _ = std::fs::remove_file(control::socket_path(&dir));
    result
}

async fn shutdown_signal() -> &'static str {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        std::future::pending::<()>().await;
        return "";
    };
    tokio::select! {
        _ = term.recv() => "SIGTERM",
        _ = int.recv() => "SIGINT",
    }
}
