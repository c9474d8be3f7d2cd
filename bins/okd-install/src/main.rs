//! `okd-install`: openshift-install's user-provisioned workflow in one binary.
//!
//! `main` parses arguments, sets up logging, runs the command and maps errors to
//! openshift-install's exit codes (3 for install-config errors, 1 otherwise).

mod gather;
mod interactive;
mod logging;
mod mirror;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use okd_assets::{AssetDir, GenCtx, Target};
use okd_types::release::{DEFAULT_RELEASE_IMAGE, IgnitionSpec, ReleaseTarget};
use tracing::{debug, error, warn};

/// Installs OKD/OpenShift 4 on infrastructure you provision yourself.
#[derive(Parser, Debug)]
#[command(name = "okd-install", version, help_expected = true)]
struct Cli {
    /// Assets directory.
    #[arg(long, global = true, default_value = ".")]
    dir: PathBuf,
    /// Log level (debug, info, warn, error).
    #[arg(long = "log-level", global = true, default_value = "info")]
    log_level: String,
    #[command(subcommand)]
    cmd: Cmd,
}

/// The release options, offered only by the commands that generate for a
/// release (`create install-config`, `manifests`, `ignition-configs`,
/// `single-node-ignition-config`).
#[derive(clap::Args, Debug, Clone, Default)]
struct ReleaseOpts {
    /// Release image to install [env: OPENSHIFT_INSTALL_RELEASE_IMAGE_OVERRIDE];
    /// its tag selects the target release (default: the one the directory's
    /// state file records, else a current OKD 4.x). A release other than the
    /// recorded one regenerates what depends on it.
    #[arg(long = "release-image")]
    release_image: Option<String>,
    /// Target release 4.<minor> when the image tag does not tell (e.g. a digest).
    #[arg(long = "release-version")]
    release_version: Option<String>,
    /// Ignition spec to write (3.0.0-3.4.0); default follows the release.
    #[arg(long = "ignition-spec")]
    ignition_spec: Option<String>,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Create part of an OpenShift cluster.
    #[command(subcommand)]
    Create(CreateCmd),
    /// Print version information.
    Version,
    /// Serve an install from the asset directory: DNS, load balancer,
    /// machine-config server, HTTP for Ignition/images/PXE, status page.
    Serve {
        /// Services to run (comma-separated); leave out those you run
        /// yourself, e.g. `--services mcs,http` beside your own HAProxy and DNS.
        #[arg(long, value_enum, value_delimiter = ',', default_values_t = ServiceArg::ALL)]
        services: Vec<ServiceArg>,
        /// Serve bootstrap.ign only with a one-time token in its URL (written
        /// to auth/bootstrap-ignition-url and into the bootstrap host's PXE
        /// scripts); it is always served only to the bootstrap host's address.
        #[arg(long)]
        bootstrap_token: bool,
        /// Ask the running server instead of starting one.
        #[command(subcommand)]
        action: Option<ServeCmd>,
    },
    /// Disconnected installs: set up a mirror registry.
    #[command(subcommand)]
    Mirror(mirror::MirrorCmd),
    /// Approve the CSRs of joining nodes, checking each node's identity:
    /// client CSRs only for nodes of agent-config.yaml/bastion-config.yaml
    /// (or --node-name-pattern), serving CSRs only from the node itself for
    /// its own names and addresses. Others stay pending, with a reason.
    ApproveCsr {
        /// Keep watching and approve as CSRs arrive (until SIGINT/SIGTERM).
        #[arg(long)]
        watch: bool,
        /// Kubeconfig to use [default: <dir>/auth/kubeconfig].
        #[arg(long)]
        kubeconfig: Option<PathBuf>,
        /// Also accept node names matching this glob (`worker-*`); repeatable.
        #[arg(long = "node-name-pattern")]
        node_name_patterns: Vec<String>,
    },
    /// Gather debugging data for a given installation failure.
    #[command(subcommand)]
    Gather(gather::GatherCmd),
    /// Destroy part of an OpenShift cluster.
    #[command(subcommand)]
    Destroy(gather::DestroyCmd),
    /// Wait for install-time events.
    #[command(subcommand)]
    WaitFor(WaitForCmd),
    /// Print the asset graph of a target in Graphviz DOT.
    Graph {
        /// Target: install-config, manifests, ignition-configs, single-node-ignition-config.
        #[arg(default_value = "ignition-configs")]
        target: String,
    },
}

/// `--services` values; see [`okd_serve::Service`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum ServiceArg {
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

impl ServiceArg {
    const ALL: [ServiceArg; 5] = [
        ServiceArg::Dns,
        ServiceArg::Lb,
        ServiceArg::Mcs,
        ServiceArg::Http,
        ServiceArg::Status,
    ];

    fn service(self) -> okd_serve::Service {
        match self {
            ServiceArg::Dns => okd_serve::Service::Dns,
            ServiceArg::Lb => okd_serve::Service::Lb,
            ServiceArg::Mcs => okd_serve::Service::Mcs,
            ServiceArg::Http => okd_serve::Service::Http,
            ServiceArg::Status => okd_serve::Service::Status,
        }
    }
}

#[derive(Subcommand, Debug)]
enum ServeCmd {
    /// Print what each host fetched and the load balancer's health (JSON).
    Status,
    /// Remove the bootstrap from every load-balancer pool and stop serving
    /// bootstrap.ign (after bootstrap-complete); recorded in the directory,
    /// so later serves keep it removed (also when no serve runs now).
    RemoveBootstrap,
    /// Undo a recorded `remove-bootstrap` (with no serve running): the next
    /// serve serves bootstrap.ign and balances to the bootstrap again.
    RestoreBootstrap,
}

#[derive(Subcommand, Debug)]
enum WaitForCmd {
    /// Wait until cluster bootstrapping has completed.
    BootstrapComplete(WaitForOpts),
    /// Wait until the cluster is ready.
    InstallComplete(WaitForOpts),
}

#[derive(clap::Args, Debug)]
struct WaitForOpts {
    /// Override limits, e.g. `api=5m,bootstrap=1h` (keys: api, bootstrap,
    /// etcd, install, operators, stable, console, progress)
    /// [env: OKD_WAIT_FOR_TIMEOUTS].
    #[arg(long)]
    timeouts: Option<String>,
}

#[derive(Subcommand, Debug)]
enum CreateCmd {
    /// Generates the Install Config asset.
    InstallConfig {
        #[command(flatten)]
        opts: Box<interactive::InstallConfigOpts>,
        #[command(flatten)]
        release: ReleaseOpts,
    },
    /// Generates the Kubernetes manifests.
    Manifests(ReleaseOpts),
    /// Generates the Ignition Config asset.
    IgnitionConfigs(ReleaseOpts),
    /// Generates the bootstrap-in-place Ignition config for a single node.
    SingleNodeIgnitionConfig(ReleaseOpts),
    /// Writes haproxy, keepalived, dnsmasq, BIND and CoreDNS configs and the
    /// PXE tree for the hosts of agent-config.yaml + bastion-config.yaml.
    BastionConfigs,
}

fn target_of(word: &str) -> Option<Target> {
    [
        Target::InstallConfig,
        Target::Manifests,
        Target::IgnitionConfigs,
        Target::SingleNodeIgnitionConfig,
    ]
    .into_iter()
    .find(|t| t.command() == word)
}

/// Decides the release image, target and Ignition spec for `dir`: flag, else
/// `OPENSHIFT_INSTALL_RELEASE_IMAGE_OVERRIDE`, else what an earlier run
/// recorded in the state file (image, target release and Ignition spec),
/// else the default. The target comes from `--release-version`, else the
/// record when the image is the recorded one, else the image's tag; the spec
/// from `--ignition-spec`, else the record when image and target are the
/// recorded ones, else the release's.
///
/// # Errors
/// An unreadable state file, a bad `--release-version`/`--ignition-spec`,
/// or an image whose tag does not tell the release (a digest) without
/// `--release-version`.
fn release_context(dir: &std::path::Path, opts: &ReleaseOpts) -> anyhow::Result<GenCtx> {
    let env = std::env::var("OPENSHIFT_INSTALL_RELEASE_IMAGE_OVERRIDE")
        .ok()
        .filter(|s| !s.is_empty());
    if env.is_some() && opts.release_image.is_none() {
        warn!(
            "Found override for release image ({}). Please be warned, this is not advised",
            env.as_deref().unwrap_or_default()
        );
    }
    let recorded = okd_assets::recorded::Recorded::load(dir)?
        .map(|r| r.get::<okd_assets::installconfig::ReleaseImage>())
        .transpose()?
        .flatten();
    let image = opts
        .release_image
        .clone()
        .or(env)
        .or_else(|| recorded.as_ref().map(|r| r.pull_spec.clone()))
        .unwrap_or_else(|| DEFAULT_RELEASE_IMAGE.to_string());
    let recorded = recorded.filter(|r| r.pull_spec == image);
    let okd_hint = image.contains("okd");
    let target = match &opts.release_version {
        Some(v) => ReleaseTarget::parse_version(v, okd_hint)?,
        None => match recorded.as_ref().and_then(|r| r.target()) {
            Some(t) => t,
            None => ReleaseTarget::from_release_image(&image).ok_or_else(|| {
                anyhow::anyhow!(
                    "cannot tell the release version from {image:?}: add --release-version 4.<minor>"
                )
            })?,
        },
    };
    let spec = match &opts.ignition_spec {
        Some(s) => s.parse::<IgnitionSpec>()?,
        None => recorded
            .filter(|r| r.target() == Some(target))
            .and_then(|r| r.spec())
            .unwrap_or_else(|| target.ignition_spec()),
    };
    let mut ctx = GenCtx::new(image, target, spec);
    if let Ok(inv) = std::env::var("OPENSHIFT_INSTALL_INVOKER")
        && !inv.is_empty()
    {
        ctx.invoker = inv;
    }
    Ok(ctx)
}

/// The release for commands that do not generate for one (`version`,
/// `mirror`): [`release_context`] without options, and when it fails (e.g. a
/// digest in `OPENSHIFT_INSTALL_RELEASE_IMAGE_OVERRIDE`) a warning and the
/// default release, as openshift-install's `version` only warns.
fn release_context_lenient(dir: &std::path::Path) -> GenCtx {
    release_context(dir, &ReleaseOpts::default()).unwrap_or_else(|e| {
        let t = ReleaseTarget::default_target();
        warn!("{e:#}; this command goes on with the rules of release {t}");
        let image = std::env::var("OPENSHIFT_INSTALL_RELEASE_IMAGE_OVERRIDE")
            .ok()
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| DEFAULT_RELEASE_IMAGE.to_string());
        GenCtx::new(image, t, t.ignition_spec())
    })
}

fn run(cli: Cli) -> Result<(), (anyhow::Error, u8)> {
    let fail = |e: anyhow::Error| (e, 1u8);
    match &cli.cmd {
        Cmd::Version => {
            let ctx = release_context_lenient(&cli.dir);
            println!("okd-install v{}", env!("CARGO_PKG_VERSION"));
            println!(
                "built from commit {}",
                option_env!("OKD_INSTALL_COMMIT").unwrap_or("unknown")
            );
            println!("release image {}", ctx.release_image);
            println!("release architecture amd64");
            println!(
                "target release {} (Ignition spec {})",
                ctx.target, ctx.ignition_spec
            );
            Ok(())
        }
        Cmd::Graph { target } => {
            let t = target_of(target)
                .ok_or_else(|| fail(anyhow::anyhow!("unknown target {target:?}")))?;
            print!("{}", okd_assets::store::graph_dot(&t.assets()));
            Ok(())
        }
        Cmd::Serve {
            action,
            services,
            bootstrap_token,
        } => match action {
            None => runtime()
                .map_err(fail)?
                .block_on(okd_serve::serve(
                    &cli.dir,
                    &okd_serve::ServeOptions {
                        services: services.iter().map(|s| s.service()).collect(),
                        bootstrap_token: *bootstrap_token,
                    },
                ))
                .map_err(|e| fail(e.into())),
            Some(ServeCmd::Status) => {
                okd_serve::control_request(&cli.dir, "status").map_err(|e| fail(e.into()))
            }
            Some(ServeCmd::RemoveBootstrap) => match okd_serve::remove_bootstrap(&cli.dir) {
                Ok(Some(reply)) => {
                    print!("{reply}");
                    Ok(())
                }
                Ok(None) => {
                    println!(
                        "no serve is running: recorded in {}; the next serve neither serves bootstrap.ign nor balances to the bootstrap",
                        cli.dir.join(okd_serve::BOOTSTRAP_REMOVED_FILE).display()
                    );
                    Ok(())
                }
                Err(e) => Err(fail(e.into())),
            },
            Some(ServeCmd::RestoreBootstrap) => okd_serve::restore_bootstrap(&cli.dir)
                .map(|t| print!("{t}"))
                .map_err(|e| fail(e.into())),
        },
        Cmd::ApproveCsr {
            watch,
            kubeconfig,
            node_name_patterns,
        } => {
            let opts = okd_approve_csr::Options {
                dir: cli.dir.clone(),
                kubeconfig: kubeconfig.clone(),
                node_name_patterns: node_name_patterns.clone(),
                watch: *watch,
            };
            runtime()
                .map_err(fail)?
                .block_on(okd_approve_csr::run(&opts))
                .map(|_| ())
                .map_err(|e| fail(anyhow::Error::new(e)))
        }
        Cmd::Gather(g) => gather::run_gather(&cli.dir, g).map_err(fail),
        Cmd::Destroy(d) => gather::run_destroy(&cli.dir, d).map_err(fail),
        Cmd::WaitFor(w) => {
            let (opts, install) = match w {
                WaitForCmd::BootstrapComplete(o) => (o, false),
                WaitForCmd::InstallComplete(o) => (o, true),
            };
            let opts = okd_wait_for::Options {
                dir: cli.dir.clone(),
                timeouts: opts
                    .timeouts
                    .clone()
                    .or_else(|| std::env::var("OKD_WAIT_FOR_TIMEOUTS").ok()),
            };
            let rt = runtime().map_err(fail)?;
            let result = if install {
                rt.block_on(okd_wait_for::install_complete(&opts))
            } else {
                rt.block_on(okd_wait_for::bootstrap_complete(&opts))
            };
            result.map_err(|e| {
                let code = e.exit_code();
                (anyhow::Error::new(e), code)
            })
        }
        Cmd::Mirror(m) => {
            let ctx = release_context_lenient(&cli.dir);
            mirror::run(&cli.dir, m, ctx.target).map_err(|e| {
                // Exit code 3 for install-config errors, as for `create`.
                let code = match e.downcast_ref::<okd_mirror_registry::MirrorError>() {
                    Some(
                        okd_mirror_registry::MirrorError::InstallConfig(_)
                        | okd_mirror_registry::MirrorError::InstallConfigInvalid(_),
                    ) => 3,
                    _ => 1,
                };
                (e, code)
            })
        }
        Cmd::Create(c) => {
            let mut source = None;
            let (target, release) = match c {
                CreateCmd::InstallConfig { opts, release } => {
                    interactive::refuse_contradictions(&cli.dir, opts).map_err(|e| (e, 3))?;
                    source = Some(interactive::source((**opts).clone()));
                    (Target::InstallConfig, release)
                }
                CreateCmd::Manifests(r) => (Target::Manifests, r),
                CreateCmd::IgnitionConfigs(r) => (Target::IgnitionConfigs, r),
                CreateCmd::SingleNodeIgnitionConfig(r) => (Target::SingleNodeIgnitionConfig, r),
                CreateCmd::BastionConfigs => {
                    return okd_serve::create_bastion_configs(&cli.dir).map_err(|e| fail(e.into()));
                }
            };
            let mut ctx = release_context(&cli.dir, release).map_err(fail)?;
            ctx.install_config_source = source;
            debug!(
                "OpenShift Installer okd-install v{}",
                env!("CARGO_PKG_VERSION")
            );
            debug!(
                "Built from commit {}",
                option_env!("OKD_INSTALL_COMMIT").unwrap_or("unknown")
            );
            debug!(
                "Target release {}, Ignition spec {}, release image {}",
                ctx.target, ctx.ignition_spec, ctx.release_image
            );
            let threads = std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(2);
            okd_assets::create(&AssetDir::new(&cli.dir), &mut ctx, target, threads).map_err(
                |e| {
                    let code = if e.is_install_config_error() { 3 } else { 1 };
                    (anyhow::anyhow!(okd_assets::chain(&e)), code)
                },
            )?;
            Ok(())
        }
    }
}

/// For an error about a generated file that `dir` lacks, which command makes
/// it: `bootstrap.ign is made by \`okd-install create ignition-configs --dir D\``.
fn missing_file_hint(dir: &std::path::Path, text: &str) -> Option<String> {
    const MADE_BY: [(&str, &str); 5] = [
        ("bootstrap.ign", "ignition-configs"),
        ("master.ign", "ignition-configs"),
        ("worker.ign", "ignition-configs"),
        ("metadata.json", "ignition-configs"),
        ("auth/kubeconfig", "ignition-configs"),
    ];
    MADE_BY
        .iter()
        .find(|(file, _)| text.contains(file) && !dir.join(file).exists())
        .map(|(file, cmd)| {
            format!(
                "{file} is made by `okd-install create {cmd} --dir {}`",
                dir.display()
            )
        })
}

/// The one tokio runtime of a command (serve, approve-csr, wait-for,
/// mirror): the library crates expose async functions and the binary
/// block_on's them here. Two workers: the machine of a bastion is small,
/// and serve answers DNS, the load balancer and Ignition from them (its
/// status page has a runtime of its own, see okd-serve's `run.rs`).
pub(crate) fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let level = match logging::parse_level(&cli.log_level) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("level=fatal msg={e}");
            return ExitCode::from(1);
        }
    };
    let log_dir = matches!(
        cli.cmd,
        Cmd::Create(_) | Cmd::Gather(_) | Cmd::Destroy(_) | Cmd::WaitFor(_)
    )
    .then(|| cli.dir.clone());
    if let Err(e) = logging::init(level, log_dir.as_deref()) {
        eprintln!(
            "level=fatal msg=setting up logging in {}: {e:#}",
            cli.dir.display()
        );
        return ExitCode::from(1);
    }
    let dir = cli.dir.clone();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err((e, code)) => {
            let text = okd_assets::chain(e.as_ref());
            match missing_file_hint(&dir, &text) {
                Some(hint) => error!("{text}; {hint}"),
                None => error!("{text}"),
            }
            ExitCode::from(code)
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn cli_is_well_formed() {
        super::Cli::command().debug_assert();
    }
}
