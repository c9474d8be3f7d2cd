//! `okd-install serve [status|remove-bootstrap|restore-bootstrap]`: the
//! options, and one call into `okd-serve`.

use std::path::Path;

use clap::Subcommand;

use crate::{Failure, fail};

/// `--services` values; see [`okd_serve::Service`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ServiceArg {
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
    /// Every service: what `serve` runs without `--services`.
    pub(crate) const ALL: [ServiceArg; 5] = [
        ServiceArg::Dns,
        ServiceArg::Lb,
        ServiceArg::Mcs,
        ServiceArg::Http,
        ServiceArg::Status,
    ];

    pub(crate) fn service(self) -> okd_serve::Service {
        match self {
            ServiceArg::Dns => okd_serve::Service::Dns,
            ServiceArg::Lb => okd_serve::Service::Lb,
            ServiceArg::Mcs => okd_serve::Service::Mcs,
            ServiceArg::Http => okd_serve::Service::Http,
            ServiceArg::Status => okd_serve::Service::Status,
        }
    }
}

/// `okd-install serve <action>`: asks the running server.
#[derive(Subcommand, Debug)]
pub(crate) enum ServeCmd {
    /// Print what each host fetched and the load balancer's health (JSON).
    Status,
    /// Remove the bootstrap from every load-balancer pool and stop serving
    /// bootstrap.ign (after bootstrap-complete); recorded in the directory,
    /// so later serves keep it removed (also when no serve runs now).
    /// Refuses while the cluster says the bootstrap's etcd member is still
    /// needed.
    RemoveBootstrap {
        /// Remove it without asking the cluster.
        #[arg(long)]
        force: bool,
    },
    /// Undo a recorded `remove-bootstrap` (with no serve running): the next
    /// serve serves bootstrap.ign and balances to the bootstrap again.
    RestoreBootstrap,
}

/// `okd-install serve`: runs `opts.services` for `dir` until stopped, or with an
/// `action` asks the running server (or records the bootstrap's removal).
pub(crate) fn run(
    dir: &Path,
    action: Option<&ServeCmd>,
    opts: &okd_serve::ServeOptions,
) -> Result<(), Failure> {
    match action {
        None => crate::runtime()
            .map_err(fail)?
            .block_on(okd_serve::serve(dir, opts))
            .map_err(fail),
        Some(ServeCmd::Status) => okd_serve::control_request(dir, "status").map_err(fail),
        Some(ServeCmd::RemoveBootstrap { force }) => match crate::gather::etcd_gate(dir, *force)
            .and_then(|()| okd_serve::remove_bootstrap(dir).map_err(fail))
        {
            Ok(Some(reply)) => {
                print!("{reply}");
                Ok(())
            }
            Ok(None) => {
                println!(
                    "no serve is running: recorded in {}; the next serve neither serves bootstrap.ign nor balances to the bootstrap",
                    dir.join(okd_serve::BOOTSTRAP_REMOVED_FILE).display()
                );
                Ok(())
            }
            Err(e) => Err(e),
        },
        Some(ServeCmd::RestoreBootstrap) => okd_serve::restore_bootstrap(dir)
            .map(|t| print!("{t}"))
            .map_err(fail),
    }
}

/// `okd-install preflight` options.
#[derive(clap::Args, Debug)]
pub(crate) struct PreflightArgs {
    /// Your own HAProxy's configuration, compared with what the install
    /// needs (frontends, servers and ports, health paths).
    #[arg(long)]
    haproxy_cfg: Option<std::path::PathBuf>,
    /// How long from now the last node may boot: the 24-hour certificates
    /// must stay valid that long (e.g. `90m`, `4h`).
    #[arg(long, value_parser = crate::node::parse_duration, default_value = "2h")]
    boot_within: std::time::Duration,
    /// Check only the files: no DNS queries, no connections to the load balancer.
    #[arg(long)]
    offline: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t = PreflightOutput::Text)]
    output: PreflightOutput,
}

/// `--output` of `preflight`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum PreflightOutput {
    /// One line per check, then a summary.
    Text,
    /// The report as JSON (`{"time", "checks": [{"id", "result", "cause", "fix"}]}`).
    Json,
}

/// `okd-install preflight`: runs okd-preflight's checks for `dir` and
/// prints them; exit status 1 when one failed.
pub(crate) fn preflight(dir: &Path, a: &PreflightArgs) -> Result<(), Failure> {
    let mut opts = okd_preflight::Options::new(dir);
    opts.haproxy_cfg.clone_from(&a.haproxy_cfg);
    opts.boot_within = a.boot_within;
    opts.network = !a.offline;
    let report = crate::runtime()
        .map_err(fail)?
        .block_on(okd_preflight::run(&opts));
    match a.output {
        PreflightOutput::Text => print!("{}", okd_preflight::text(&report)),
        PreflightOutput::Json => {
            println!("{}", serde_json::to_string_pretty(&report).map_err(fail)?)
        }
    }
    if report.worst() == okd_preflight::Outcome::Fail {
        return Err(fail(anyhow::anyhow!(
            "preflight: {} (the FAIL lines say what to change)",
            report.summary()
        )));
    }
    Ok(())
}
