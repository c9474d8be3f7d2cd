//! `okd-install approve-csr` and `okd-install wait-for ...`: the commands
//! that talk to the cluster, each on a runtime of its own (wait-for after
//! openshift/installer `cmd/openshift-install/command/waitfor.go`).

use std::path::Path;

use clap::Subcommand;

use crate::{Failure, fail};

/// `okd-install wait-for`.
#[derive(Subcommand, Debug)]
pub(crate) enum WaitForCmd {
    /// Wait until cluster bootstrapping has completed.
    BootstrapComplete(WaitForOpts),
    /// Wait until the cluster is ready.
    InstallComplete(WaitForOpts),
}

/// Options of `wait-for bootstrap-complete` and `install-complete`.
#[derive(clap::Args, Debug)]
pub(crate) struct WaitForOpts {
    /// Override limits, e.g. `api=5m,bootstrap=1h` (keys: api, bootstrap,
    /// etcd, install, operators, stable, console, progress)
    /// [env: OKD_WAIT_FOR_TIMEOUTS].
    #[arg(long)]
    timeouts: Option<String>,
}

/// `okd-install approve-csr [--watch]`: approves the CSRs of the
/// inventory's nodes (and of `node_name_patterns`) through `kubeconfig`.
pub(crate) fn approve_csr(
    dir: &Path,
    watch: bool,
    kubeconfig: Option<&Path>,
    node_name_patterns: &[String],
) -> Result<(), Failure> {
    let opts = okd_approve_csr::Options {
        dir: dir.to_path_buf(),
        kubeconfig: kubeconfig.map(Path::to_path_buf),
        node_name_patterns: node_name_patterns.to_vec(),
        watch,
    };
    crate::runtime()
        .map_err(fail)?
        .block_on(okd_approve_csr::run(&opts))
        .map(|_| ())
        .map_err(|e| fail(anyhow::Error::new(e)))
}

/// The waits' options for `dir`: `timeouts` (`--timeouts`), else
/// `OKD_WAIT_FOR_TIMEOUTS`.
pub(crate) fn wait_options(dir: &Path, timeouts: Option<&str>) -> okd_wait_for::Options {
    okd_wait_for::Options {
        dir: dir.to_path_buf(),
        timeouts: timeouts
            .map(str::to_string)
            .or_else(|| std::env::var("OKD_WAIT_FOR_TIMEOUTS").ok()),
    }
}

/// `okd-install wait-for bootstrap-complete|install-complete`, with the
/// wait's own exit code on failure.
pub(crate) fn wait_for(dir: &Path, w: &WaitForCmd) -> Result<(), Failure> {
    let (opts, install) = match w {
        WaitForCmd::BootstrapComplete(o) => (o, false),
        WaitForCmd::InstallComplete(o) => (o, true),
    };
    let opts = wait_options(dir, opts.timeouts.as_deref());
    let rt = crate::runtime().map_err(fail)?;
    let result = if install {
        rt.block_on(okd_wait_for::install_complete(&opts))
    } else {
        rt.block_on(okd_wait_for::bootstrap_complete(&opts))
    };
    result.map_err(crate::classified)
}
