//! `okd-install create cluster`, `scale` and `destroy cluster`: VMs on
//! libvirt from a kcli-style parameter file (okd-vm-cluster).

use std::path::{Path, PathBuf};

use okd_assets::Target;
use okd_libvirt::Virsh;
use okd_vm_cluster::{Options, state::ClusterState};
use tracing::info;

use crate::release::ReleaseOpts;
use crate::{Failure, fail};
use okd_types::exit::Exit;

/// The options of `create cluster`.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct ClusterOpts {
    /// The kcli-style parameter file (parameters.yml).
    #[arg(long = "paramfile", visible_alias = "pf", value_name = "FILE")]
    paramfile: PathBuf,
    /// A parameter that wins over the file, as kcli's `-P key=value`
    /// (e.g. `-P workers=2`); may be repeated.
    #[arg(short = 'P', long = "param", value_name = "KEY=VALUE")]
    params: Vec<String>,
    /// The libvirt connection URI.
    #[arg(long = "libvirt-uri", default_value = "qemu:///system")]
    uri: String,
    /// The storage pool of the VMs' volumes.
    #[arg(long, default_value = "default")]
    pool: String,
    /// The libvirt domain type: kvm, or qemu (software emulation).
    #[arg(long = "domain-type", default_value = "kvm", value_parser = ["kvm", "qemu"])]
    domain_type: String,
    /// Go on as kcli does (without `async`): `wait-for bootstrap-complete`,
    /// then the bootstrap VM removed once a master holds the API VIP, then
    /// `wait-for install-complete`.
    #[arg(long)]
    wait: bool,
    /// With --wait: the waits' limits as `key=duration,...` (see
    /// `wait-for --timeouts`).
    #[arg(long, requires = "wait")]
    timeouts: Option<String>,
}

fn connect(uri: &str) -> Result<Virsh, Failure> {
    Virsh::connect(uri).map_err(|e| fail(anyhow::anyhow!("libvirt ({uri}): {e}")))
}

/// `create cluster`: checks the parameter file against libvirt, writes the
/// install-config, runs the asset graph to the Ignition configs, makes the
/// VMs and prints what to run next.
pub(crate) fn create_cluster(
    dir: &Path,
    opts: &ClusterOpts,
    release: &ReleaseOpts,
) -> Result<(), Failure> {
    if ClusterState::path(dir).exists() {
        return Err(fail(anyhow::anyhow!(
            "{} exists: a cluster was made from this directory already (`okd-install destroy cluster --dir {}` removes it)",
            ClusterState::path(dir).display(),
            okd_fs::shell_path(dir)
        )));
    }
    // A run that failed after the Ignition configs may be repeated (the
    // state file then holds what it generated); a user's install-config is
    // not overwritten.
    for theirs in [
        "install-config.yaml",
        "agent-config.yaml",
        "bastion-config.yaml",
    ] {
        if dir.join(theirs).exists() && !okd_vm_cluster::inventory_made_here(dir, theirs) {
            return Err(fail(anyhow::anyhow!(
                "{} exists: create cluster writes it from the parameter file; use another directory",
                dir.join(theirs).display()
            )));
        }
    }
    let params = okd_paramfile::load_with_overrides(&opts.paramfile, &opts.params)
        .map_err(|e| crate::failure(Exit::InstallConfig, e))?;
    for (key, why) in params.ignored_keys() {
        tracing::warn!(
            "{}: {key} is accepted for kcli's sake and has no effect here: {why}",
            opts.paramfile.display()
        );
    }
    let mut virsh = connect(&opts.uri)?;
    let plan = okd_vm_cluster::plan(
        &mut virsh,
        params,
        &opts.paramfile,
        Options {
            uri: opts.uri.clone(),
            pool: opts.pool.clone(),
            domain_type: opts.domain_type.clone(),
            overrides: opts.params.clone(),
        },
    )
    .map_err(|e| crate::failure(Exit::InstallConfig, e))?;
    let pull = okd_vm_cluster::read_pull_secret(&plan)
        .map_err(|e| crate::failure(Exit::InstallConfig, e))?;
    let keys =
        okd_vm_cluster::read_ssh_keys(&plan).map_err(|e| crate::failure(Exit::InstallConfig, e))?;
    info!(
        "Cluster {}.{}: API VIP {}, ingress VIP {}, network {} ({}), {} VMs",
        plan.params.cluster,
        plan.params.domain,
        plan.api_vip,
        plan.ingress_vip,
        plan.params.network,
        plan.subnet,
        plan.vms.len()
    );
    okd_fs::create_dir_all(dir, 0o755).map_err(fail)?;
    let (agent, bastion) = okd_vm_cluster::inventory_yaml(&plan);
    for (name, text) in [
        ("agent-config.yaml", agent),
        ("bastion-config.yaml", bastion),
    ] {
        okd_fs::write_atomic(&dir.join(name), text.as_bytes(), 0o644).map_err(fail)?;
    }
    okd_fs::write_atomic(
        &dir.join("install-config.yaml"),
        okd_vm_cluster::install_config_yaml(&plan, &pull, &keys).as_bytes(),
        0o600,
    )
    .map_err(fail)?;
    if let Err((e, code)) = crate::create::generate(
        dir,
        Target::IgnitionConfigs,
        &crate::release::AssetOpts::release_only(release),
        None,
    ) {
        // The install-config is ours, made from the parameter file: not left half-way.
        let _ = std::fs::remove_file(dir.join("install-config.yaml"));
        return Err((
            e.context(format!(
                "the install-config made from {} was refused",
                opts.paramfile.display()
            )),
            code,
        ));
    }
    let state = okd_vm_cluster::create_vms(dir, &mut virsh, &plan).map_err(fail)?;
    println!("VMs of cluster {} (libvirt {}):", state.cluster, state.uri);
    for vm in &state.vms {
        println!("  {:<28} {:<9} {:<15} {}", vm.name, vm.role, vm.ip, vm.mac);
    }
    println!(
        "API VIP {} (api, api-int.{c}.{d}), ingress VIP {} (*.apps.{c}.{d})",
        state.api_vip,
        state.ingress_vip,
        c = state.cluster,
        d = state.domain
    );
    println!(
        "From this host the names resolve through network {net}'s DNS ({gw}) or these /etc/hosts lines:\n  {api} api.{c}.{d}\n  {ing} console-openshift-console.apps.{c}.{d} oauth-openshift.apps.{c}.{d}",
        net = state.network,
        gw = state.gateway,
        api = state.api_vip,
        ing = state.ingress_vip,
        c = state.cluster,
        d = state.domain
    );
    if !opts.wait {
        println!(
            "Next: okd-install wait-for bootstrap-complete --dir {dir}; okd-install destroy bootstrap --dir {dir} then removes the bootstrap VM; okd-install destroy cluster --dir {dir} removes everything",
            dir = okd_fs::shell_path(dir)
        );
        return Ok(());
    }
    let wait = crate::cluster::wait_options(dir, opts.timeouts.as_deref());
    let rt = crate::runtime().map_err(fail)?;
    let waited = |r: Result<(), okd_wait_for::WaitError>, what: &str| {
        r.map_err(|e| {
            let code = okd_types::exit::ExitClass::exit_class(&e).code();
            (
                anyhow::Error::new(e).context(format!(
                    "the VMs are running; `okd-install {what} --dir {}` waits again",
                    okd_fs::shell_path(dir)
                )),
                code,
            )
        })
    };
    waited(
        rt.block_on(okd_wait_for::bootstrap_complete(&wait)),
        "wait-for bootstrap-complete",
    )?;
    destroy_bootstrap_vm(dir, 300)?;
    waited(
        rt.block_on(okd_wait_for::install_complete(&wait)),
        "wait-for install-complete",
    )
}

fn recorded_uri(dir: &Path, uri: Option<&str>) -> Result<String, Failure> {
    if let Some(u) = uri {
        return Ok(u.to_string());
    }
    match ClusterState::read(dir).map_err(fail)? {
        Some(s) => Ok(s.uri),
        None => Err(fail(anyhow::anyhow!(
            "{}: no record of a cluster made with `okd-install create cluster` here",
            ClusterState::path(dir).display()
        ))),
    }
}

/// `scale --workers N`.
pub(crate) fn scale(dir: &Path, workers: u32, uri: Option<&str>) -> Result<(), Failure> {
    let uri = recorded_uri(dir, uri)?;
    let mut virsh = connect(&uri)?;
    let r = okd_vm_cluster::scale(dir, &mut virsh, workers).map_err(fail)?;
    for n in &r.added {
        println!("added {n}");
    }
    for n in &r.removed {
        println!("removed {n}");
    }
    if r.added.is_empty() && r.removed.is_empty() {
        println!("the cluster has {workers} worker(s) already");
    }
    Ok(())
}

/// `destroy cluster`.
pub(crate) fn destroy_cluster(dir: &Path, uri: Option<&str>) -> Result<(), Failure> {
    let uri = recorded_uri(dir, uri)?;
    let mut virsh = connect(&uri)?;
    let removed = okd_vm_cluster::destroy(dir, &mut virsh).map_err(fail)?;
    for n in &removed {
        println!("removed {n}");
    }
    Ok(())
}

/// `destroy bootstrap` for a VM cluster: the bootstrap VM removed once a
/// master holds the API VIP.
pub(crate) fn destroy_bootstrap_vm(dir: &Path, vip_timeout: u64) -> Result<(), Failure> {
    let uri = recorded_uri(dir, None)?;
    let mut virsh = connect(&uri)?;
    match okd_vm_cluster::bootstrap::remove_bootstrap(
        dir,
        &mut virsh,
        std::time::Duration::from_secs(vip_timeout),
    )
    .map_err(fail)?
    {
        Some(name) => println!("removed the bootstrap VM {name}"),
        None => println!("the bootstrap VM is removed already"),
    }
    Ok(())
}
