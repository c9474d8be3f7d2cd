//! `okd-install bootstrap …`: the commands `bootstrap.ign`'s units run on
//! the bootstrap node (crate okd-bootstrap); `okd-install node …`: what a
//! master's machine config runs (crate okd-control-plane-installer).

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::anyhow;
use clap::Subcommand;

use crate::{Failure, fail, runtime};

/// The bootstrap node's commands.
#[derive(Subcommand, Debug)]
pub enum BootstrapCmd {
    /// release-image.service: pull the release by digest through the
    /// mirrors of /etc/containers/registries.conf, check its architecture and
    /// write /opt/openshift/okd-release.json; retried until it works.
    ReleaseImage {
        /// The install's release image.
        #[arg(long)]
        release_image: String,
        /// Give up after this long (e.g. `10m`; default: never, as the unit).
        #[arg(long, value_parser = parse_duration)]
        give_up_after: Option<Duration>,
        /// Registries reached over plain HTTP (`host:port`; tests only).
        #[arg(long = "plain-http", hide = true)]
        plain_http: Vec<String>,
    },
    /// approve-csr.service: approves the CSRs of the nodes bootstrap.ign names,
    /// after the identity checks, until bootkube is done.
    ApproveCsr {
        /// The kubeconfig [default: <work>/auth/kubeconfig-loopback].
        #[arg(long)]
        kubeconfig: Option<PathBuf>,
        /// The asset directory on the node.
        #[arg(long, default_value = "/opt/openshift")]
        work: PathBuf,
    },
    /// progress.service: waits for bootkube and a highly available API, then
    /// creates ConfigMap kube-system/bootstrap (status: complete).
    ReportProgress {
        /// The api-int kubeconfig [default: <work>/auth/kubeconfig].
        #[arg(long)]
        kubeconfig: Option<PathBuf>,
        /// The asset directory on the node.
        #[arg(long, default_value = "/opt/openshift")]
        work: PathBuf,
        /// Where the service records go.
        #[arg(long, default_value = "/var/log/openshift")]
        records: PathBuf,
    },
    /// Single node, after the reboot from the installation disk (the unit
    /// master.ign carries): reports the bootstrap complete, restores the CVO
    /// overrides, approves this node's CSRs until it is Ready, cleans up.
    PostReboot {
        /// The kubeconfig to this node's API [default: <work>/auth/kubeconfig-loopback].
        #[arg(long)]
        kubeconfig: Option<PathBuf>,
        /// The asset directory on the node.
        #[arg(long, default_value = "/opt/openshift")]
        work: PathBuf,
        /// Where the service record goes.
        #[arg(long, default_value = "/var/log/openshift")]
        records: PathBuf,
    },
    /// bootkube.service: bootkube's stages, resumed at the first not done.
    Bootkube {
        /// The bootstrap's address [default: $OPENSHIFT_INSTALL_BOOTSTRAP_NODE_IP,
        /// else the source address of the route to api-int].
        #[arg(long)]
        node_ip: Option<IpAddr>,
        /// Single node (bootstrap-in-place): the bootstrap becomes the master.
        #[arg(long)]
        single_node: bool,
        /// cluster-bootstrap's --required-pods (`<ns>/<prefix>`, comma-separated)
        /// [default: by payload and topology].
        #[arg(long, value_delimiter = ',')]
        required_pods: Option<Vec<String>>,
        /// cluster-bootstrap's API and pod waits [default: 20m].
        #[arg(long, value_parser = parse_duration)]
        cluster_bootstrap_timeout: Option<Duration>,
        /// The asset directory on the node.
        #[arg(long, default_value = "/opt/openshift")]
        work: PathBuf,
    },
}

/// A master node's commands.
#[derive(Subcommand, Debug)]
pub enum NodeCmd {
    /// okd-control-plane.service (payloads without operators): writes the
    /// etcd member and control plane the bootstrap hands this master
    /// (Secret kube-system/okd-control-plane-<node>) into /etc/kubernetes;
    /// ends once they are in place.
    ControlPlane {
        /// The kubelet's kubeconfig (its client certificate is this node's
        /// identity).
        #[arg(long, default_value = "/var/lib/kubelet/kubeconfig")]
        kubeconfig: PathBuf,
        /// This node's name [default: the host name].
        #[arg(long)]
        node_name: Option<String>,
        /// How often the Secret is read while waiting.
        #[arg(long, value_parser = parse_duration, default_value = "5s")]
        poll: Duration,
    },
}

/// Runs a master node command.
pub fn node_command(cmd: &NodeCmd) -> Result<(), Failure> {
    let rt = runtime().map_err(fail)?;
    match cmd {
        NodeCmd::ControlPlane {
            kubeconfig,
            node_name,
            poll,
        } => {
            let node = match node_name {
                Some(n) => n.clone(),
                None => std::fs::read_to_string("/proc/sys/kernel/hostname")
                    .map_err(|e| fail(anyhow!("cannot read the host name: {e}; give --node-name")))?
                    .trim()
                    .to_lowercase(),
            };
            let opts = okd_control_plane_installer::Options {
                kubeconfig: kubeconfig.clone(),
                node,
                root: PathBuf::from("/"),
                poll: *poll,
            };
            rt.block_on(okd_control_plane_installer::run(&opts))
                .map_err(fail)
        }
    }
}

/// `90s`, `10m`, `1h`, or seconds.
pub(crate) fn parse_duration(s: &str) -> Result<Duration, String> {
    let (n, unit) = s
        .find(|c: char| !c.is_ascii_digit())
        .map_or((s, "s"), |i| (&s[..i], &s[i..]));
    let n: u64 = n
        .parse()
        .map_err(|_| format!("{s:?}: expected a duration such as 90s, 10m or 1h"))?;
    let secs = match unit {
        "s" => n,
        "m" => n * 60,
        "h" => n * 3600,
        _ => return Err(format!("{s:?}: the unit must be s, m or h")),
    };
    Ok(Duration::from_secs(secs))
}

/// A bootstrap unit stopped by `signal` (recorded by
/// [`okd_bootstrap::until_signal`]): a failure, with the shell's status
/// for a signal (128 + its number), as systemd counts it.
fn killed(signal: &'static str) -> Failure {
    let code = if signal == "SIGINT" { 130 } else { 143 };
    (anyhow!("stopped by {signal}"), code)
}

/// Runs a bootstrap node command.
pub fn command(cmd: &BootstrapCmd) -> Result<(), Failure> {
    let rt = runtime().map_err(fail)?;
    match cmd {
        BootstrapCmd::ReleaseImage {
            release_image,
            give_up_after,
            plain_http,
        } => {
            let dirs = okd_bootkube::Dirs::node();
            okd_bootstrap::check_node(&dirs.work).map_err(|e| fail(anyhow!(e)))?;
            let mut opts = okd_bootstrap::PullOptions::node(release_image);
            opts.plain_http = plain_http.clone();
            rt.block_on(okd_bootstrap::until_signal(
                &dirs.records,
                okd_bootstrap::RELEASE_SERVICE,
                okd_bootstrap::release_image(&opts, &dirs, *give_up_after),
            ))
            .map_err(killed)?
            .map_err(fail)?;
            Ok(())
        }
        BootstrapCmd::ApproveCsr { kubeconfig, work } => {
            okd_bootstrap::check_node(work).map_err(|e| fail(anyhow!(e)))?;
            let opts = okd_bootstrap::approve::ApproveOptions {
                work: work.clone(),
                kubeconfig: kubeconfig
                    .clone()
                    .unwrap_or_else(|| work.join("auth/kubeconfig-loopback")),
            };
            rt.block_on(okd_bootstrap::approve::approve_csr(&opts))
                .map_err(fail)?;
            Ok(())
        }
        BootstrapCmd::ReportProgress {
            kubeconfig,
            work,
            records,
        } => {
            okd_bootstrap::check_node(work).map_err(|e| fail(anyhow!(e)))?;
            let mut dirs = okd_bootkube::Dirs::node();
            dirs.work = work.clone();
            dirs.records = records.clone();
            let opts = okd_bootstrap::report::ReportOptions {
                dirs,
                kubeconfig: kubeconfig
                    .clone()
                    .unwrap_or_else(|| work.join("auth/kubeconfig")),
            };
            rt.block_on(okd_bootstrap::until_signal(
                &opts.dirs.records,
                okd_bootstrap::report::PROGRESS_SERVICE,
                okd_bootstrap::report::report_progress(&opts),
            ))
            .map_err(killed)
        }
        BootstrapCmd::PostReboot {
            kubeconfig,
            work,
            records,
        } => {
            let mut opts = okd_bootstrap::post_reboot::PostRebootOptions::node();
            let marker = work.join("auth/kubeconfig-loopback");
            if !okd_bootstrap::post_reboot::is_done(work) && !marker.is_file() {
                return Err(fail(anyhow!(
                    "{} is missing: this is not a single node booted from its master.ign (the master-ignition stage puts that file there); `okd-install bootstrap post-reboot` runs from that node's bootkube.service after the reboot",
                    marker.display()
                )));
            }
            opts.kubeconfig = kubeconfig
                .clone()
                .unwrap_or_else(|| work.join("auth/kubeconfig-loopback"));
            opts.work = work.clone();
            opts.records = records.clone();
            rt.block_on(okd_bootstrap::until_signal(
                &opts.records,
                okd_bootstrap::post_reboot::POST_REBOOT_SERVICE,
                okd_bootstrap::post_reboot::post_reboot(&opts),
            ))
            .map_err(killed)?
            .map_err(|e| fail(anyhow!(e)))
        }
        BootstrapCmd::Bootkube {
            node_ip,
            single_node,
            required_pods,
            cluster_bootstrap_timeout,
            work,
        } => {
            let topology = if *single_node {
                okd_bootkube::Topology::SingleNode
            } else {
                okd_bootkube::Topology::WithBootstrap
            };
            okd_bootstrap::check_node(work).map_err(|e| fail(anyhow!(e)))?;
            let mut opts = okd_bootstrap::NodeOptions::node(topology);
            opts.dirs.work = work.clone();
            opts.node_ip = match node_ip {
                Some(ip) => Some(*ip),
                None => match std::env::var("OPENSHIFT_INSTALL_BOOTSTRAP_NODE_IP") {
                    Ok(v) if !v.is_empty() => Some(v.parse().map_err(|_| {
                        fail(anyhow!(
                            "OPENSHIFT_INSTALL_BOOTSTRAP_NODE_IP={v:?} is not an IP address"
                        ))
                    })?),
                    _ => None,
                },
            };
            opts.required_pods = required_pods.clone();
            opts.cluster_bootstrap_timeout = *cluster_bootstrap_timeout;
            let records = opts.dirs.records.clone();
            rt.block_on(okd_bootstrap::until_signal(
                &records,
                okd_bootkube::SERVICE,
                okd_bootstrap::bootkube(opts),
            ))
            .map_err(killed)?
            .map_err(fail)?;
            Ok(())
        }
    }
}
