//! `okd-install`: openshift-install's user-provisioned workflow in one binary.
//!
//! `main` parses arguments, sets up logging, runs the command and ends with
//! the exit code of the error's class (okd-types `exit`: openshift-install's
//! codes, 3 for install-config errors; the README's "Exit codes" table).
//! [`run`] calls one function per command, in the module of its family.

mod assisted;
mod aws;
mod cluster;
mod create;
mod gather;
mod interactive;
mod logging;
mod mirror;
mod node;
mod release;
mod serve;
mod vms;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use okd_types::exit::{Exit, ExitClass};
use tracing::error;

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

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Create part of an OpenShift cluster.
    #[command(subcommand)]
    Create(create::CreateCmd),
    /// Print version information.
    Version,
    /// Serve an install from the asset directory: DNS, load balancer,
    /// machine-config server, HTTP for Ignition/images/PXE, status page.
    Serve {
        /// Services to run (comma-separated); leave out those you run
        /// yourself, e.g. `--services mcs,http` beside your own HAProxy and DNS.
        #[arg(long, value_enum, value_delimiter = ',', default_values_t = serve::ServiceArg::ALL)]
        services: Vec<serve::ServiceArg>,
        /// Serve bootstrap.ign only with a one-time token in its URL (written
        /// to auth/bootstrap-ignition-url and into the bootstrap host's PXE
        /// scripts); it is always served only to the bootstrap host's address.
        /// The token serves retries until the bootstrap is seen running (its
        /// machine-config server or API passes the balancer's check) or 30
        /// minutes after the first fetch; the dashboard says which spent it.
        #[arg(long)]
        bootstrap_token: bool,
        /// How often the preflight checks run again after the one at start
        /// (e.g. `30s`, `5m`; `0`: only at start). The dashboard shows the
        /// latest; a check that appears or clears is logged.
        #[arg(long, value_parser = crate::node::parse_duration, default_value = "60s")]
        preflight_every: std::time::Duration,
        /// Ask the running server instead of starting one.
        #[command(subcommand)]
        action: Option<serve::ServeCmd>,
    },
    /// Check the install's environment before a node boots: the load
    /// balancer (your haproxy.cfg, 22623's certificate, /readyz), DNS as
    /// each node's nameserver answers it, the 24-hour certificates, the
    /// clock, the install disks and the OS images. One line per check with
    /// its id, result, cause and fix; exit status 1 when a check failed.
    Preflight(serve::PreflightArgs),
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
    /// AWS user-provisioned infrastructure: deploy or destroy the
    /// CloudFormation stacks of `create aws-stacks`.
    #[command(subcommand)]
    Aws(aws::AwsCmd),
    /// The assisted flow: the assisted service and its client commands.
    #[command(subcommand)]
    Assisted(assisted::AssistedCmd),
    /// The discovery agent: registers this host with an assisted service,
    /// reports its inventory and runs the steps the service hands out.
    Agent(assisted::AgentArgs),
    /// Wait for install-time events.
    #[command(subcommand)]
    WaitFor(cluster::WaitForCmd),
    /// The bootstrap node's programs, run by bootstrap.ign's units
    /// (release-image.service, bootkube.service, approve-csr.service,
    /// progress.service).
    #[command(subcommand)]
    Bootstrap(node::BootstrapCmd),
    /// A master's program for payloads without operators, run by its
    /// machine config (okd-control-plane.service).
    #[command(subcommand)]
    Node(node::NodeCmd),
    /// Adds or removes workers of a cluster made by `create cluster`.
    Scale {
        /// The number of workers wanted.
        #[arg(long)]
        workers: u32,
        /// The libvirt connection URI (default: the one the record names).
        #[arg(long = "libvirt-uri")]
        libvirt_uri: Option<String>,
    },
    /// Print the asset graph of a target in Graphviz DOT.
    Graph {
        /// Target: install-config, manifests, ignition-configs, single-node-ignition-config.
        #[arg(default_value = "ignition-configs")]
        target: String,
    },
}

/// A failed command: the error and its exit code (one of
/// [`okd_types::exit::Exit`]'s codes, or the node program's 128 + signal).
type Failure = (anyhow::Error, u8);

/// An error of class [`Exit::Failed`] (exit code 1).
pub(crate) fn fail(e: impl Into<anyhow::Error>) -> Failure {
    (e.into(), Exit::Failed.code())
}

/// An error with the exit code of its own class (okd-types `exit`).
pub(crate) fn classified<E>(e: E) -> Failure
where
    E: ExitClass + std::error::Error + Send + Sync + 'static,
{
    let code = e.exit_class().code();
    (anyhow::Error::new(e), code)
}

/// An error of class `class` whatever its type.
pub(crate) fn failure(class: Exit, e: impl Into<anyhow::Error>) -> Failure {
    (e.into(), class.code())
}

/// Runs the command of `cli`: one function per command.
fn run(cli: &Cli) -> Result<(), Failure> {
    let dir = cli.dir.as_path();
    match &cli.cmd {
        Cmd::Version => version(dir),
        Cmd::Graph { target } => create::graph(target),
        Cmd::Serve {
            action,
            services,
            bootstrap_token,
            preflight_every,
        } => serve::run(
            dir,
            action.as_ref(),
            &okd_serve::ServeOptions {
                services: services.iter().map(|s| s.service()).collect(),
                bootstrap_token: *bootstrap_token,
                preflight_every: *preflight_every,
            },
        ),
        Cmd::Preflight(p) => serve::preflight(dir, p),
        Cmd::ApproveCsr {
            watch,
            kubeconfig,
            node_name_patterns,
        } => cluster::approve_csr(dir, *watch, kubeconfig.as_deref(), node_name_patterns),
        Cmd::Gather(g) => gather::run_gather(dir, g),
        Cmd::Destroy(d) => gather::run_destroy(dir, d),
        Cmd::Aws(a) => aws::run(dir, a),
        Cmd::Assisted(a) => assisted::run(dir, a),
        Cmd::Agent(a) => assisted::agent(a),
        Cmd::WaitFor(w) => cluster::wait_for(dir, w),
        Cmd::Mirror(m) => mirror::command(dir, m),
        Cmd::Create(c) => create::run(dir, c),
        Cmd::Bootstrap(b) => node::command(b),
        Cmd::Node(n) => node::node_command(n),
        Cmd::Scale {
            workers,
            libvirt_uri,
        } => vms::scale(dir, *workers, libvirt_uri.as_deref()),
    }
}

/// `okd-install version`: this program, its commit and the release it targets for `dir`.
fn version(dir: &Path) -> Result<(), Failure> {
    let ctx = release::release_context_lenient(dir);
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

/// For an error about a generated file that `dir` lacks, which command makes
/// it: `bootstrap.ign is made by \`okd-install create ignition-configs --dir D\``
/// (`D` quoted for the shell); none when the error names the step already.
fn missing_file_hint(dir: &Path, text: &str) -> Option<String> {
    if text.contains("`okd-install create ") {
        return None;
    }
    const MADE_BY: [(&str, &str); 6] = [
        ("install-config.yaml", "install-config"),
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
                okd_fs::shell_path(dir)
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
        Cmd::Create(_)
            | Cmd::Gather(_)
            | Cmd::Destroy(_)
            | Cmd::WaitFor(_)
            | Cmd::Scale { .. }
            | Cmd::Aws(_)
    )
    .then(|| cli.dir.clone())
    // Only `create` makes its directory; the others log there when it
    // exists, so a mistyped --dir is not created just for a log file.
    .filter(|d| matches!(cli.cmd, Cmd::Create(_)) || d.is_dir());
    if let Err(e) = logging::init(level, log_dir.as_deref()) {
        eprintln!(
            "level=fatal msg=setting up logging in {}: {e:#}",
            cli.dir.display()
        );
        return ExitCode::from(1);
    }
    match run(&cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err((e, code)) => {
            let text = okd_assets::chain(e.as_ref());
            // The node commands run on the nodes, where the asset
            // directory's files are not made by `create`; a stopped prompt
            // or `create install-config` itself need no advice to run
            // `create install-config`.
            let hint = if matches!(cli.cmd, Cmd::Bootstrap(_) | Cmd::Node(_))
                || code == Exit::Interrupted.code()
                || matches!(
                    cli.cmd,
                    Cmd::Create(create::CreateCmd::InstallConfig { .. })
                ) {
                None
            } else {
                missing_file_hint(&cli.dir, &text)
            };
            match hint {
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
