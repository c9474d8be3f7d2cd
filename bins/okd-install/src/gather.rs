//! `okd-install gather bootstrap` and `okd-install destroy bootstrap`: the
//! options, and one call each into `okd-gather` and `okd-destroy`.

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};

use crate::{Failure, fail};

/// `okd-install gather`.
#[derive(Subcommand, Debug)]
pub enum GatherCmd {
    /// Gather debugging data for a failing-to-bootstrap control plane: logs
    /// in to the bootstrap host over SSH, runs installer-gather.sh there and
    /// writes <dir>/log-bundle-<id>.tar.gz.
    Bootstrap(BootstrapArgs),
}

/// Options of `gather bootstrap` (openshift-install's, plus `--ssh-user`).
#[derive(Args, Debug)]
pub struct BootstrapArgs {
    /// Hostname or IP of the bootstrap host.
    #[arg(long)]
    bootstrap: Option<String>,
    /// Hostnames or IPs of all control plane hosts (repeatable).
    #[arg(long = "master")]
    masters: Vec<String>,
    /// Path to an SSH private key for authentication (repeatable). The
    /// installer's bootstrap key from the state file is always added; with
    /// no --key, your ssh-agent (SSH_AUTH_SOCK) or ~/.ssh/id_* keys are used too.
    #[arg(long = "key")]
    keys: Vec<PathBuf>,
    /// Skip analysis of the gathered data.
    #[arg(long = "skipAnalysis", alias = "skip-analysis")]
    skip_analysis: bool,
    /// The user to log in as on the bootstrap host and the masters.
    #[arg(long = "ssh-user", default_value = "core")]
    ssh_user: String,
}

/// `okd-install destroy`.
#[derive(Subcommand, Debug)]
pub enum DestroyCmd {
    /// Takes the bootstrap out of okd-install serve's pools (platform none
    /// and baremetal) and prints what to power off and remove; refuses
    /// while the cluster says the bootstrap's etcd member is still needed.
    Bootstrap {
        /// Remove it without asking the cluster (the bootstrap is gone
        /// already, or the cluster is being thrown away).
        #[arg(long)]
        force: bool,
        /// VM clusters (`create cluster`): seconds to wait for the API VIP
        /// to move from the bootstrap VM to a master before removing the VM.
        #[arg(long = "vip-timeout", default_value_t = 300)]
        vip_timeout: u64,
    },
    /// Removes every VM, volume, DHCP reservation and file `create cluster`
    /// made (the record vm-cluster.json), and nothing else.
    Cluster {
        /// The libvirt connection URI (default: the one the record names).
        #[arg(long = "libvirt-uri")]
        libvirt_uri: Option<String>,
    },
}

/// Runs `gather ...`.
pub fn run_gather(dir: &Path, cmd: &GatherCmd) -> Result<(), Failure> {
    match cmd {
        GatherCmd::Bootstrap(a) => {
            let opts = okd_gather::GatherOptions {
                bootstrap: a.bootstrap.clone(),
                masters: a.masters.clone(),
                keys: a.keys.clone(),
                skip_analysis: a.skip_analysis,
                ssh_user: a.ssh_user.clone(),
                ..okd_gather::GatherOptions::default()
            };
            okd_gather::gather_bootstrap(dir, &opts).map_err(fail)?;
            Ok(())
        }
    }
}

/// Runs `destroy ...`; the report goes to stdout.
pub fn run_destroy(dir: &Path, cmd: &DestroyCmd) -> Result<(), Failure> {
    match cmd {
        DestroyCmd::Bootstrap { force, vip_timeout } => {
            if dir
                .join(okd_aws_upi::generate::AWS_DIR)
                .join(okd_aws_upi::deploy::STATE_FILE)
                .exists()
            {
                etcd_gate(dir, *force)?;
                return crate::aws::destroy_bootstrap(dir);
            }
            okd_destroy::check_metadata(dir).map_err(fail)?;
            etcd_gate(dir, *force)?;
            if okd_vm_cluster::state::ClusterState::path(dir).exists() {
                return crate::vms::destroy_bootstrap_vm(dir, *vip_timeout);
            }
            let report = okd_destroy::destroy_bootstrap(dir).map_err(fail)?;
            print!("{}", report.text);
            Ok(())
        }
        DestroyCmd::Cluster { libvirt_uri } => {
            crate::vms::destroy_cluster(dir, libvirt_uri.as_deref())
        }
    }
}

/// `destroy bootstrap` and `serve remove-bootstrap` refuse while the
/// bootstrap's etcd member is needed ([`okd_destroy::etcd_gate`]), unless
/// `force`.
pub(crate) fn etcd_gate(dir: &Path, force: bool) -> Result<(), Failure> {
    if force {
        tracing::warn!(
            "--force: not asking the cluster whether the bootstrap's etcd member is still needed"
        );
        return Ok(());
    }
    crate::runtime()
        .map_err(fail)?
        .block_on(okd_destroy::etcd_gate(dir))
        .map_err(fail)
}
