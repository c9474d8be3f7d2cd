//! Running `serve`: every port bound first (a port in use stops the start,
//! naming it), then every service spawned, then one wait for a signal or a
//! failing service, then an orderly stop.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::Context as _;
use okd_hosts::Inventory;
use okd_lb::LoadBalancer;
use tokio::task::JoinSet;
use tracing::info;

use crate::app::{Observer, StatusApp, control_reply, status_router};
use crate::inputs;
use crate::status::Status;
use crate::{BOOTSTRAP_URL_FILE, ClusterInfo, ServeOptions, Service, control};

/// A random token of 32 lowercase hex digits (128 bits).
fn new_token() -> okd_secret::Secret {
    use rand::RngCore as _;
    let mut b = [0u8; 16];
    rand::rng().fill_bytes(&mut b);
    okd_secret::Secret::new(b.iter().map(|x| format!("{x:02x}")).collect::<String>())
}

/// The HTTP state, with the one-time token when asked for (written to
/// [`BOOTSTRAP_URL_FILE`]), and the log line saying what is served to whom.
fn http_state(
    dir: &Path,
    inv: &Inventory,
    http_addr: SocketAddr,
    token: bool,
    removed: Option<&str>,
) -> Result<okd_bootserver::HttpState, crate::ServeError> {
    let mut st = okd_bootserver::HttpState::new(dir, inv.clone());
    if let Some(t) = removed {
        st.remove_bootstrap();
        info!(
            "HTTP on {http_addr} serves master.ign and worker.ign to any client; bootstrap.ign to none: the bootstrap was removed at {t} (recorded in {}; `okd-install serve restore-bootstrap` undoes it), images from {}/",
            okd_serve_api::removal::path(dir).display(),
            inv.os_images.directory
        );
        return Ok(st);
    }
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
        let url = format!(
            "http://{http_addr}/ignition/bootstrap.ign?token={}\n",
            okd_secret::ExposeSecret::expose_secret(&t)
        );
        let file = dir.join(BOOTSTRAP_URL_FILE);
        okd_assets::dir::create_dir_all(&dir.join("auth"))?;
        okd_assets::dir::write_atomic(&file, url.as_bytes(), 0o600)?;
        st = st.with_bootstrap_token(t);
        guard = format!(
            " with a one-time token (URL in {}, also in the bootstrap host's PXE scripts; valid for retries until the bootstrap is seen running or {} after its first fetch)",
            file.display(),
            okd_bootserver::limit_words(okd_bootserver::BOOTSTRAP_TOKEN_LIMIT)
        );
    }
    info!(
        "HTTP on {http_addr} serves master.ign and worker.ign to any client, bootstrap.ign only to {} (bootstrap){guard} until `serve remove-bootstrap`, images from {}/",
        clients.join(", "),
        inv.os_images.directory
    );
    Ok(st)
}

/// How often serve looks at the load balancer's view of the bootstrap for
/// the one-time token (the balancer checks every 2 s).
const TOKEN_WATCH_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// The services of the bootstrap whose passed health check shows it runs,
/// in the words of the log and the dashboard.
const RUNNING_SIGNS: [(okd_hosts::Service, &str); 2] = [
    (okd_hosts::Service::MachineConfig, "machine-config server"),
    (okd_hosts::Service::Api, "API"),
];

/// Spends the one-time token of bootstrap.ign once the bootstrap is seen
/// running: the load balancer's check passed on its machine-config server
/// or API (backends named `bootstrap`, the inventory's bootstrap hosts).
/// Without a balancer only the token's time limit spends it (asking
/// [`okd_bootserver::HttpState::bootstrap_token`] notices that, and logs
/// it). Returns once the token is spent.
async fn spend_token_when_running(
    http: Arc<okd_bootserver::HttpState>,
    lb: Option<Arc<LoadBalancer>>,
    bootstrap: Vec<String>,
) {
    let mut tick = tokio::time::interval(TOKEN_WATCH_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        if http.bootstrap_token().is_none_or(|t| t.spent.is_some()) {
            return;
        }
        let Some(lb) = &lb else { continue };
        let running = RUNNING_SIGNS.iter().find(|(svc, _)| {
            bootstrap
                .iter()
                .any(|b| lb.is_up(svc.name(), b) == Some(true))
        });
        if let Some((_, what)) = running {
            http.bootstrap_seen_running(what);
            return;
        }
    }
}

/// The servers [`spawn_all`] starts, bound but not serving yet.
struct Servers {
    mcs: Option<(Arc<okd_mcs::McsState>, std::net::TcpListener)>,
    http: Option<(tokio::net::TcpListener, Arc<okd_bootserver::HttpState>)>,
    status: Option<tokio::net::TcpListener>,
    control: tokio::net::UnixListener,
}

/// Every listener of one serve: DNS and the balancer already answer, the
/// other servers are bound.
struct Bound {
    servers: Servers,
    dns: Option<okd_dns::DnsServer>,
    lb: Option<Arc<LoadBalancer>>,
    /// One phrase per service for the "Serving" line.
    ready: Vec<String>,
}

/// The machine-config server's state (logging its pools) and listener.
fn bind_mcs(
    dir: &Path,
    addr: SocketAddr,
) -> Result<(Arc<okd_mcs::McsState>, std::net::TcpListener), crate::ServeError> {
    let state = okd_mcs::McsState::from_asset_dir(dir).with_context(|| {
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
    Ok((Arc::new(state), okd_mcs::bind(addr)?))
}

/// Starts the load balancer's frontends (with our machine-config server as
/// a backend when it runs) and describes them.
async fn start_lb(
    inv: &Inventory,
    mcs_backend: Option<SocketAddr>,
    obs: Arc<Observer>,
    bootstrap_removed: bool,
) -> Result<(Arc<LoadBalancer>, String), crate::ServeError> {
    let mut frontends = okd_lb::frontends_for(inv, mcs_backend);
    if bootstrap_removed {
        let names: Vec<&str> = inv
            .role(okd_hosts::Role::Bootstrap)
            .map(|n| n.hostname.as_str())
            .collect();
        for fe in &mut frontends {
            fe.backends.retain(|b| !names.contains(&b.name.as_str()));
        }
    }
    let lb = LoadBalancer::start_observed(frontends, Some(obs)).await?;
    let addr = |f: &str| lb.local_addr(f).map(|a| a.to_string()).unwrap_or_default();
    let ready = format!(
        "load balancer api {} machine-config {} ingress {} and {}",
        addr("api"),
        addr("machine-config"),
        addr("ingress-http"),
        addr("ingress-https")
    );
    Ok((Arc::new(lb), ready))
}

/// Binds every selected service's port, in a fixed order.
async fn bind_all(
    dir: &Path,
    opts: &ServeOptions,
    info: &ClusterInfo,
    inv: &Inventory,
    obs: &Arc<Observer>,
    removed: Option<&str>,
) -> Result<Bound, crate::ServeError> {
    let on = |s: Service| opts.services.contains(&s);
    let mut ready = Vec::new();
    let mcs_addr = SocketAddr::new(inv.listen, inv.ports.machine_config_server);
    let mcs = if on(Service::Mcs) {
        ready.push(format!("machine-config server on {mcs_addr} (TLS)"));
        Some(bind_mcs(dir, mcs_addr)?)
    } else {
        None
    };
    let http_addr = SocketAddr::new(inv.listen, inv.ports.http);
    let http = if on(Service::Http) {
        let l = okd_bootserver::bind(http_addr).await?;
        ready.push(format!("HTTP on {http_addr}"));
        let st = Arc::new(http_state(
            dir,
            inv,
            http_addr,
            opts.bootstrap_token,
            removed,
        )?);
        Some((l, st))
    } else {
        None
    };
    let status_addr = SocketAddr::new(inv.listen, inv.ports.status);
    let status = if on(Service::Status) {
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
            inv,
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
        let (lb, line) = start_lb(
            inv,
            mcs.as_ref().map(|_| mcs_addr),
            obs.clone(),
            removed.is_some(),
        )
        .await?;
        ready.push(line);
        Some(lb)
    } else {
        None
    };
    Ok(Bound {
        servers: Servers {
            mcs,
            http,
            status,
            control: control::bind(dir)?,
        },
        dns,
        lb,
        ready,
    })
}

/// Spawns the machine-config, HTTP and status servers and the control
/// socket on `tasks`; each stops when `stopped()` completes.
fn spawn_all<F, Fut>(
    tasks: &mut JoinSet<Result<(), crate::ServeError>>,
    servers: Servers,
    app: &StatusApp,
    inv: &Inventory,
    obs: &Arc<Observer>,
    stale: &Arc<inputs::Stale>,
    stopped: F,
) where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let Servers {
        mcs,
        http,
        status,
        control: control_listener,
    } = servers;
    let guard = || axum::middleware::from_fn_with_state(stale.clone(), inputs::refuse_when_stale);
    if let Some((st, l)) = mcs {
        let (o, s) = (obs.clone(), stopped());
        let router = guard();
        tasks.spawn(async move {
            let tls = okd_mcs::tls_config(&st.inputs().tls_cert_pem, &st.inputs().tls_key_pem)
                .context("machine-config server")?;
            let l = okd_listen::Listener::from_std(l, okd_listen::Limits::default())
                .context("machine-config server")?;
            let router = okd_mcs::router(st, Some(o.clone())).layer(router);
            // A node that refuses the certificate (or sends no handshake)
            // is named once per cause.
            let hook: okd_listen::TlsFailureHook =
                Arc::new(move |peer, cause| o.0.tls_failed(peer, cause));
            okd_listen::serve_router_with(l, router, Some(Arc::new(tls)), s, Some(hook)).await;
            Ok(())
        });
    }
    if let Some((l, st)) = http {
        let router = okd_bootserver::router(st, Some(obs.clone())).layer(guard());
        let s = stopped();
        tasks.spawn(async move {
            okd_bootserver::serve(l, router, s)
                .await
                .context("HTTP server")
        });
    }
    if let Some(l) = status {
        let router = status_router(app.clone());
        let s = stopped();
        tasks.spawn(async move { serve_status_apart(l, router, s).await });
    }
    let (app, inv) = (app.clone(), inv.clone());
    tasks.spawn(async move {
        control::serve(control_listener, move |line| {
            control_reply(&app, &inv, line)
        })
        .await;
        Ok(())
    });
}

/// How much the status page's threads yield the CPU (nice increment,
/// setpriority(2); Linux keeps a nice value per thread).
const STATUS_NICE: i32 = 10;

/// Lowers the calling thread's CPU priority by [`STATUS_NICE`]; a failure
/// (e.g. a seccomp profile) only costs the preference.
fn lower_priority() {
    if let Err(e) = rustix::process::nice(STATUS_NICE) {
        tracing::debug!("cannot lower the status page's CPU priority: {e}");
    }
}

/// Serves the status page, `/status` and `/metrics` on a thread and
/// runtime of their own (one worker, plus its blocking pool for building
/// the document), both at a lower CPU priority (nice +[`STATUS_NICE`]), so
/// readers of a large status never wait in the queue of the runtime that
/// answers DNS, the load balancer and Ignition, and the kernel prefers
/// those when the CPUs are busy. Returns when `stop` completes (or the
/// thread fails).
///
/// This is the only runtime a library crate builds, and deliberately so:
/// every other runtime is the binary's (`okd-install`'s `runtime()`, on
/// which [`crate::serve`] runs); this one isolates the unauthenticated,
/// CPU-heavy status page from the serving path.
async fn serve_status_apart(
    l: tokio::net::TcpListener,
    router: axum::Router,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), crate::ServeError> {
    // A listener belongs to the runtime that registered it: hand it over
    // as a plain socket.
    let l = l.into_std().context("status listener")?;
    let (done_tx, done_rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("okd-serve-status".into())
        .spawn(move || {
            lower_priority();
            let r = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .on_thread_start(lower_priority)
                .build()
                .context("starting the status page's runtime")
                .and_then(|rt| {
                    rt.block_on(async move {
                        let l = tokio::net::TcpListener::from_std(l).context("status listener")?;
                        let l = okd_listen::Listener::new(l, okd_listen::Limits::default());
                        okd_listen::serve_router(l, router, None, stop).await;
                        Ok(())
                    })
                });
            let _ = done_tx.send(r);
        })
        .context("starting the status page's thread")?;
    done_rx.await.unwrap_or_else(|_| {
        Err(crate::ServeError::Stopped(
            "the status page's thread ended".into(),
        ))
    })
}

/// The lock file of a running serve in the asset directory (its PID inside).
pub(crate) const LOCK: &str = ".okd-serve.lock";

/// Takes [`LOCK`] in `dir` for this serve's lifetime; another serve holding
/// it stops this one with "another `okd-install serve` is running for
/// <dir> (PID n)".
fn lock_dir(dir: &Path) -> Result<okd_fs::DirLock, crate::ServeError> {
    match okd_fs::DirLock::acquire_file(dir, LOCK) {
        Ok(l) => Ok(l),
        Err(okd_fs::FsError::Locked { pid, .. }) => Err(crate::ServeError::Stopped(format!(
            "another `okd-install serve` is running for {} ({}); stop it first",
            dir.display(),
            pid.map_or_else(|| format!("it holds {LOCK}"), |p| format!("PID {p}"))
        ))),
        Err(e) => Err(e).with_context(|| format!("locking {}", dir.join(LOCK).display())),
    }
}

/// `okd-install serve` on the runtime: see [`crate::serve`].
pub(crate) async fn serve_async(dir: PathBuf, opts: ServeOptions) -> Result<(), crate::ServeError> {
    // Connection caps, not the descriptor table, bound what clients can hold.
    match okd_listen::raise_nofile_limit() {
        Ok(l) => tracing::debug!("open files limit {:?} (was {:?})", l.after, l.before),
        Err(e) => tracing::warn!("cannot raise the open files limit: {e}"),
    }
    // Fingerprinted before anything is read, so a change while loading
    // counts as a change.
    let start_inputs = inputs::Inputs::read(&dir);
    let (info, inv) = crate::load(&dir)?;
    // One serve per directory, decided before any port is bound.
    let _lock = lock_dir(&dir)?;
    let status = Arc::new(
        Status::new(inv.clone())
            .with_certs(crate::dashboard::short_lived(&dir.join("bootstrap.ign"))),
    );
    let removed = okd_serve_api::removal::recorded(&dir)?;
    if let Some(t) = &removed {
        status.bootstrap_removed_before(t);
        tracing::warn!(
            "The bootstrap was removed at {t} (`serve remove-bootstrap`, recorded in {}): bootstrap.ign is not served and the bootstrap is no backend; `okd-install serve restore-bootstrap` undoes it",
            okd_serve_api::removal::path(&dir).display()
        );
    }
    let obs = Arc::new(Observer(status.clone()));
    let bound = bind_all(&dir, &opts, &info, &inv, &obs, removed.as_deref()).await?;
    let serves_http = bound.servers.http.is_some();

    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let stopped = move || {
        let mut rx = stop_rx.clone();
        async move {
            let _ = rx.wait_for(|v| *v).await;
        }
    };
    let app = StatusApp {
        dir: dir.clone(),
        status,
        lb: bound.lb.clone(),
        http: bound.servers.http.as_ref().map(|(_, st)| st.clone()),
    };
    let mut tasks = JoinSet::new();
    if let Some(http) = app.http.clone() {
        app.status.set_http(http.clone());
        if http.bootstrap_token_required() {
            let lb = app.lb.clone();
            let names = inv
                .role(okd_hosts::Role::Bootstrap)
                .map(|n| n.hostname.clone())
                .collect();
            let s = stopped();
            tasks.spawn(async move {
                tokio::select! {
                    () = s => {}
                    () = spend_token_when_running(http, lb, names) => {
                        // Done watching; a service that ends stops serve.
                        std::future::pending::<()>().await;
                    }
                }
                Ok(())
            });
        }
    }
    {
        let (dir, status, s) = (dir.clone(), app.status.clone(), stopped());
        let api = SocketAddr::new(inv.api, inv.ports.api);
        tasks.spawn(async move {
            crate::cluster::watch(dir, api, status, s).await;
            Ok(())
        });
    }
    let stale = Arc::new(inputs::Stale::default());
    {
        let (stale, s) = (stale.clone(), stopped());
        tasks.spawn(async move {
            inputs::watch(start_inputs, stale, s).await;
            // Done watching once the inputs changed; the refusals go on.
            std::future::pending::<()>().await;
            Ok(())
        });
    }
    {
        // The same checks as `okd-install preflight`, once serve's DNS,
        // balancer and servers answer (they are bound; spawn_all serves
        // them), then again every `preflight_every`: failures go to the log
        // when they appear, and the dashboard shows the latest report.
        let (dir, status, s) = (dir.clone(), app.status.clone(), stopped());
        let every = opts.preflight_every;
        tasks.spawn(async move {
            let mut s = std::pin::pin!(s);
            let mut last: Option<okd_preflight::Report> = None;
            let checks = okd_preflight::Options::new(&dir);
            loop {
                // A stop does not wait for a run (its probes take seconds).
                let report = tokio::select! {
                    () = s.as_mut() => break,
                    r = okd_preflight::run(&checks) => r,
                };
                log_preflight(last.as_ref(), &report, &dir);
                status.set_preflight(report.clone());
                last = Some(report);
                if every.is_zero() {
                    s.as_mut().await;
                    break;
                }
                tokio::select! {
                    () = s.as_mut() => break,
                    () = tokio::time::sleep(every) => {}
                }
            }
            Ok(())
        });
    }

    spawn_all(&mut tasks, bound.servers, &app, &inv, &obs, &stale, stopped);

    info!("Serving {}: {}", inv.cluster_domain, bound.ready.join(", "));
    if serves_http {
        info!(
            "Nodes boot with the kernel arguments served at http://{}/pxe/ipxe?mac=<MAC>; `okd-install serve status --dir {}` shows what each host fetched",
            SocketAddr::new(inv.listen, inv.ports.http),
            okd_fs::shell_path(&dir)
        );
    }

    let result = tokio::select! {
        r = okd_listen::shutdown_signal() => { info!("Received {r}, shutting down"); Ok(()) }
        Some(r) = tasks.join_next() => match r {
            Ok(Ok(())) => Err(crate::ServeError::Stopped(
                "a service stopped unexpectedly".into(),
            )),
            Ok(Err(e)) => Err(e),
            Err(e) => Err(crate::ServeError::Stopped(format!("a service panicked: {e}"))),
        },
    };
    stop_tx.send_replace(true);
    tasks.abort_all();
    while tasks.join_next().await.is_some() {}
    drop(app);
    if let Some(d) = bound.dns {
        d.shutdown().await;
    }
    if let Some(lb) = bound.lb.and_then(|lb| Arc::try_unwrap(lb).ok()) {
        lb.shutdown().await;
    }
    let _ = std::fs::remove_file(control::socket_path(&dir));
    result
}

/// Logs a preflight report against the one before (`None`: the first):
/// each check that does not pass when it first does so (a warning), each
/// that passes again after not passing, and the summary when anything
/// changed. Results are compared by id, not by cause (the DNS check asks a
/// random `*.apps` name each time).
fn log_preflight(
    last: Option<&okd_preflight::Report>,
    now: &okd_preflight::Report,
    dir: &std::path::Path,
) {
    use okd_preflight::Outcome;
    let before = |id: &str| {
        last.and_then(|r| r.checks.iter().find(|c| c.id == id))
            .map(|c| c.result)
    };
    let mut changed = last.is_none();
    for c in &now.checks {
        let was = before(&c.id);
        if last.is_some() && was == Some(c.result) {
            continue;
        }
        if c.result >= Outcome::Warn {
            tracing::warn!("preflight: {}", c.line());
            changed = true;
        } else if was.is_some_and(|w| w >= Outcome::Warn) {
            info!("preflight: {}", c.line());
            changed = true;
        }
    }
    if changed {
        info!(
            "Preflight checks: {} (the dashboard lists them; `okd-install preflight --dir {}` runs them now)",
            now.summary(),
            okd_fs::shell_path(dir)
        );
    }
}
