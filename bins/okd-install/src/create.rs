//! `okd-install create ...` and `okd-install graph`: the asset targets
//! (openshift/installer `cmd/openshift-install/create.go`, `graph.go`).

use std::path::Path;

use clap::Subcommand;
use okd_assets::{AssetDir, Target};
use tracing::debug;

use crate::release::{AssetOpts, ReleaseOpts, release_context};
use crate::{Failure, fail, interactive};

/// `okd-install create`.
#[derive(Subcommand, Debug)]
pub(crate) enum CreateCmd {
    /// Generates the Install Config asset.
    InstallConfig {
        #[command(flatten)]
        opts: Box<interactive::InstallConfigOpts>,
        #[command(flatten)]
        release: ReleaseOpts,
    },
    /// Generates the Kubernetes manifests.
    Manifests(AssetOpts),
    /// Generates the Ignition Config asset.
    IgnitionConfigs(AssetOpts),
    /// Generates the bootstrap-in-place Ignition config for a single node.
    SingleNodeIgnitionConfig(AssetOpts),
    /// Writes haproxy, keepalived, dnsmasq, BIND and CoreDNS configs and the
    /// PXE tree for the hosts of agent-config.yaml + bastion-config.yaml.
    BastionConfigs,
    /// Makes a whole cluster of libvirt VMs from a kcli-style parameter
    /// file: install-config, Ignition configs with the VIP/DNS/LB layer,
    /// DHCP reservations, volumes and VMs (Ignition through fw_cfg).
    Cluster {
        #[command(flatten)]
        opts: crate::vms::ClusterOpts,
        #[command(flatten)]
        release: ReleaseOpts,
    },
    /// Writes the AWS UPI CloudFormation templates and parameter files of
    /// the install to `aws/` (after `create ignition-configs`).
    AwsStacks(crate::aws::AwsStacksOpts),
}

/// The target a `create` word names (`manifests`, `ignition-configs`, ...).
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

/// `okd-install graph <target>`: the asset graph of `target` in Graphviz DOT on stdout.
pub(crate) fn graph(target: &str) -> Result<(), Failure> {
    let t = target_of(target).ok_or_else(|| fail(anyhow::anyhow!("unknown target {target:?}")))?;
    print!("{}", okd_assets::store::graph_dot(&t.assets()));
    Ok(())
}

/// `okd-install create <target>`: generates the target's assets in `dir`
/// (exit code 3 for install-config errors); `bastion-configs` writes the
/// bastion's files instead.
pub(crate) fn run(dir: &Path, c: &CreateCmd) -> Result<(), Failure> {
    let mut source = None;
    let (target, release) = match c {
        CreateCmd::InstallConfig { opts, release } => {
            interactive::refuse_contradictions(dir, opts)
                .map_err(|e| crate::failure(okd_types::exit::Exit::InstallConfig, e))?;
            source = Some(interactive::source((**opts).clone()));
            (Target::InstallConfig, AssetOpts::release_only(release))
        }
        CreateCmd::Manifests(r) => (Target::Manifests, r.clone()),
        CreateCmd::IgnitionConfigs(r) => (Target::IgnitionConfigs, r.clone()),
        CreateCmd::SingleNodeIgnitionConfig(r) => (Target::SingleNodeIgnitionConfig, r.clone()),
        CreateCmd::BastionConfigs => {
            return okd_serve::create_bastion_configs(dir).map_err(fail);
        }
        CreateCmd::Cluster { opts, release } => {
            return crate::vms::create_cluster(dir, opts, release);
        }
        CreateCmd::AwsStacks(o) => return crate::aws::create_aws_stacks(dir, o),
    };
    generate(dir, target, &release, source)
}

/// Runs the asset graph to `target` in `dir` for `opts`' release (exit code
/// 3 for install-config errors).
pub(crate) fn generate(
    dir: &Path,
    target: Target,
    opts: &AssetOpts,
    source: Option<okd_assets::installconfig::InstallConfigSource>,
) -> Result<(), Failure> {
    let mut ctx = release_context(dir, &opts.release).map_err(fail)?;
    ctx.aws_machine_api = opts.with_machine_api;
    ctx.install_config_source = source;
    if matches!(
        target,
        Target::IgnitionConfigs | Target::SingleNodeIgnitionConfig
    ) {
        ctx.node_identities = okd_cluster::install::node_identities(dir);
    }
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
    okd_assets::create(&AssetDir::new(dir), &mut ctx, target, threads).map_err(|e| {
        let code = okd_types::exit::ExitClass::exit_class(&e).code();
        (anyhow::anyhow!(okd_assets::chain(&e)), code)
    })?;
    Ok(())
}
