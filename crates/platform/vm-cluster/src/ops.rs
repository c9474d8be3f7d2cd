//! Making and removing the VMs: [`create_vms`], [`scale`], [`destroy`].

use std::path::{Path, PathBuf};

use indicatif::{ProgressBar, ProgressStyle};
use okd_libvirt::{DhcpHost, DiskSpec, DomainSpec, NicSpec, Virsh};
use okd_paramfile::Role;
use okd_types::ignition::{Config, File};
use okd_vip_layer::{Images, Layer, Node};
use rand::Rng as _;
use tracing::{info, warn};

use crate::state::{ClusterState, VmRecord};
use crate::{ClusterError, Plan, PlannedVm};

fn role_word(r: Role) -> &'static str {
    match r {
        Role::Bootstrap => "bootstrap",
        Role::Master => "master",
        Role::Worker => "worker",
    }
}

/// The record of a planned VM before any part of it exists.
fn planned_record(pv: &PlannedVm) -> VmRecord {
    VmRecord {
        name: pv.vm.name.clone(),
        role: role_word(pv.vm.role).into(),
        mac: pv.vm.mac.clone(),
        ip: pv.ip,
        reserved: false,
        dns: None,
        volumes: Vec::new(),
        ignition: None,
        side_disk: None,
        defined: false,
    }
}

fn layer_role(word: &str) -> okd_vip_layer::Role {
    match word {
        "bootstrap" => okd_vip_layer::Role::Bootstrap,
        "master" => okd_vip_layer::Role::Master,
        _ => okd_vip_layer::Role::Worker,
    }
}

/// The VIP/DNS/LB layer of a recorded cluster, with `extra` VMs added.
fn layer_of(state: &ClusterState) -> Layer {
    Layer {
        cluster: state.cluster.clone(),
        domain: state.domain.clone(),
        api_vip: state.api_vip,
        ingress_vip: state.ingress_vip,
        prefix: state.prefix,
        virtual_router_id: state.virtual_router_id,
        auth_pass: state.auth_pass.clone(),
        upstream_dns: vec![state.gateway],
        nodes: state
            .vms
            .iter()
            .map(|v| Node {
                name: v.name.clone(),
                role: layer_role(&v.role),
                ip: v.ip,
            })
            .collect(),
        images: Images::default(),
    }
}

fn random_password() -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    let mut rng = rand::rng();
    (0..8)
        .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char)
        .collect()
}

fn read_config(dir: &Path, name: &str) -> Result<(Vec<u8>, Config), ClusterError> {
    let path = dir.join(name);
    let bytes = std::fs::read(&path).map_err(|e| ClusterError::File {
        path: path.clone(),
        message: format!(
            "{e} (made by `okd-install create ignition-configs --dir {}`)",
            okd_fs::shell_path(dir)
        ),
    })?;
    let config =
        Config::from_json(&String::from_utf8_lossy(&bytes)).map_err(|e| ClusterError::File {
            path,
            message: format!("not an Ignition config: {e}"),
        })?;
    Ok((bytes, config))
}

/// Writes VM `vm`'s Ignition config into `<dir>/vms/<vm>.ign` (0600): the
/// installer's config for its role, its host name, and the layer's files
/// (kcli's merge rule: a path the installer's config has wins).
fn write_vm_ignition(
    dir: &Path,
    layer: &Layer,
    node: &Node,
    base: &Config,
    served: &[(String, Vec<u8>)],
) -> Result<(PathBuf, Option<PathBuf>), ClusterError> {
    let mut config = base.clone();
    if !config
        .storage
        .files
        .iter()
        .any(|f| f.path == "/etc/hostname")
    {
        config.storage.files.push(File::data(
            "/etc/hostname",
            0o644,
            format!("{}\n", node.name).as_bytes(),
        ));
    }
    let skipped = layer.merge_into(&mut config, node, served);
    for p in skipped {
        warn!(
            "{}: {p} is in the installer's config; the layer's copy is left out",
            node.name
        );
    }
    let vms = dir.join("vms");
    okd_fs::create_dir_all(&vms, 0o700).map_err(|e| ClusterError::File {
        path: vms.clone(),
        message: e.to_string(),
    })?;
    let side = match crate::side::split(&mut config).map_err(|message| ClusterError::File {
        path: vms.join(format!("{}.ign", node.name)),
        message,
    })? {
        None => None,
        Some((image, files)) => {
            let path = vms.join(format!("{}-files.img", node.name));
            okd_fs::write_atomic(&path, &image, 0o600).map_err(|e| ClusterError::File {
                path: path.clone(),
                message: e.to_string(),
            })?;
            for f in &files {
                info!(
                    "{}: {} ({} bytes) goes on the side disk, not through fw_cfg",
                    node.name, f.path, f.len
                );
            }
            Some(std::path::absolute(&path).unwrap_or(path))
        }
    };
    let path = vms.join(format!("{}.ign", node.name));
    okd_fs::write_atomic(&path, config.to_json().as_bytes(), 0o600).map_err(|e| {
        ClusterError::File {
            path: path.clone(),
            message: e.to_string(),
        }
    })?;
    Ok((std::path::absolute(&path).unwrap_or(path), side))
}

fn progress(len: usize) -> ProgressBar {
    let bar = ProgressBar::new(len as u64);
    bar.set_style(
        ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} {msg}")
            .expect("a valid template")
            .progress_chars("=> "),
    );
    bar.set_prefix("VMs");
    bar
}

/// Makes one VM: reservation, volumes, Ignition, domain, start; each part
/// recorded in `state` (and written to `dir`) as soon as it exists.
fn make_vm(
    dir: &Path,
    virsh: &mut Virsh,
    state: &mut ClusterState,
    pv: &PlannedVm,
    image: Option<&str>,
    files: &(PathBuf, Option<PathBuf>),
    autostart: bool,
) -> Result<(), ClusterError> {
    let (ignition, side_disk) = (files.0.as_path(), files.1.clone());
    let uri = virsh.uri().to_string();
    let lv = |source| ClusterError::Libvirt {
        uri: uri.clone(),
        source,
    };
    let vm = &pv.vm;
    state.vms.push(VmRecord {
        ignition: Some(ignition.to_path_buf()),
        side_disk: side_disk.clone(),
        ..planned_record(pv)
    });
    state.write(dir)?;
    let i = state.vms.len() - 1;
    let host = DhcpHost {
        mac: vm.mac.clone(),
        name: vm.name.clone(),
        ip: pv.ip,
    };
    info!(
        "{}: reserving {} for {} on network {}",
        vm.name, pv.ip, vm.mac, state.network
    );
    virsh.add_dhcp_host(&state.network, &host).map_err(lv)?;
    state.vms[i].reserved = true;
    state.write(dir)?;
    let cd = format!("{}.{}", state.cluster, state.domain);
    let mut names = vec![format!("{}.{cd}", vm.name)];
    if vm.role == Role::Worker {
        // HAProxy on the masters follows this name's records (okd-vip-layer).
        names.push(format!("workers.{cd}"));
    }
    let entry = okd_libvirt::DnsHost {
        ip: pv.ip,
        hostnames: names,
    };
    virsh.add_dns_host(&state.network, &entry).map_err(lv)?;
    state.vms[i].dns = Some(entry);
    state.write(dir)?;
    let mut disks = Vec::new();
    for (n, size) in vm.disks_gb.iter().enumerate() {
        let volume = format!("{}-disk{n}.qcow2", vm.name);
        let backing = if n == 0 { image } else { None };
        info!(
            "{}: volume {volume} ({size} GB) in pool {}",
            vm.name, state.pool
        );
        virsh
            .create_volume(&state.pool, &volume, *size, "qcow2", backing)
            .map_err(lv)?;
        state.vms[i].volumes.push(volume.clone());
        state.write(dir)?;
        disks.push(DiskSpec {
            pool: state.pool.clone(),
            volume,
            format: "qcow2".into(),
        });
    }
    let spec = DomainSpec {
        name: vm.name.clone(),
        domain_type: state.domain_type.clone(),
        memory_mib: vm.memory_mib,
        cpus: vm.cpus,
        disks,
        nics: vm
            .networks
            .iter()
            .enumerate()
            .map(|(n, net)| NicSpec {
                network: net.clone(),
                mac: if n == 0 {
                    vm.mac.clone()
                } else {
                    okd_paramfile::generated_mac(&format!("{}-nic{n}", vm.name))
                },
            })
            .collect(),
        ignition: Some(ignition.to_path_buf()),
        cluster: state.cluster.clone(),
        role: role_word(vm.role).into(),
        virtual_router_id: Some(state.virtual_router_id),
        side_disk,
    };
    virsh.define(&okd_libvirt::domain_xml(&spec)).map_err(lv)?;
    state.vms[i].defined = true;
    state.write(dir)?;
    if autostart {
        virsh.set_autostart(&vm.name, true).map_err(lv)?;
    }
    info!(
        "{}: starting ({} MiB, {} vCPUs)",
        vm.name, vm.memory_mib, vm.cpus
    );
    virsh.start(&vm.name).map_err(lv)?;
    Ok(())
}

/// Makes the plan's VMs after `create ignition-configs` wrote
/// `bootstrap.ign`, `master.ign` and `worker.ign` into `dir`: each VM's
/// Ignition with the VIP/DNS/LB layer ([`okd_vip_layer`]), then its DHCP
/// reservation, volumes (the first backed by `image` when given), domain
/// (Ignition through fw_cfg) and start, bootstrap first; the record
/// `vm-cluster.json` is written after every step. On a failure what was
/// made is removed again ([`destroy`]), and the error says what, if
/// anything, is left.
///
/// # Errors
/// [`ClusterError::File`] for a missing or broken Ignition config or an
/// existing record (a cluster is made there already);
/// [`ClusterError::Partial`] when a step failed.
pub fn create_vms(
    dir: &Path,
    virsh: &mut Virsh,
    plan: &Plan,
) -> Result<ClusterState, ClusterError> {
    if let Some(s) = ClusterState::read(dir)? {
        return Err(ClusterError::File {
            path: ClusterState::path(dir),
            message: format!(
                "cluster {} was made from this directory already; `okd-install destroy cluster --dir {}` removes it",
                s.cluster,
                okd_fs::shell_path(dir)
            ),
        });
    }
    let (_, bootstrap) = read_config(dir, "bootstrap.ign")?;
    let (master_bytes, master) = read_config(dir, "master.ign")?;
    let (worker_bytes, worker) = read_config(dir, "worker.ign")?;
    let p = &plan.params;
    let mut state = ClusterState {
        uri: virsh.uri().to_string(),
        pool: plan.options.pool.clone(),
        network: p.network.clone(),
        param_file: std::path::absolute(&plan.param_file).unwrap_or(plan.param_file.clone()),
        domain_type: plan.options.domain_type.clone(),
        overrides: plan.options.overrides.clone(),
        cluster: p.cluster.clone(),
        domain: p.domain.clone(),
        api_vip: plan.api_vip,
        ingress_vip: plan.ingress_vip,
        prefix: plan.subnet.prefix_len(),
        gateway: plan.gateway,
        virtual_router_id: plan.virtual_router_id,
        auth_pass: random_password(),
        dns_hosts: Vec::new(),
        vms: Vec::new(),
    };
    // The layer knows every node from the start (addresses are reserved).
    let mut full = state.clone();
    full.vms = plan.vms.iter().map(planned_record).collect();
    let layer = layer_of(&full);
    layer.check().map_err(|e| ClusterError::Invalid {
        file: plan.param_file.display().to_string(),
        key: e.field.to_string(),
        rule: e.rule,
    })?;
    let served = vec![
        ("master.ign".to_string(), master_bytes),
        ("worker.ign".to_string(), worker_bytes),
    ];
    let mut files = Vec::new();
    for (pv, node) in plan.vms.iter().zip(&layer.nodes) {
        let base = match pv.vm.role {
            Role::Bootstrap => &bootstrap,
            Role::Master => &master,
            Role::Worker => &worker,
        };
        files.push(write_vm_ignition(dir, &layer, node, base, &served)?);
    }
    state.write(dir)?;
    let cd = format!("{}.{}", p.cluster, p.domain);
    let dns = okd_libvirt::DnsHost {
        ip: plan.api_vip,
        hostnames: vec![format!("api.{cd}"), format!("api-int.{cd}")],
    };
    info!(
        "network {}: api.{cd} and api-int.{cd} at {} for the nodes' first boot",
        state.network, plan.api_vip
    );
    if let Err(source) = virsh.add_dns_host(&state.network, &dns) {
        let e = ClusterError::Libvirt {
            uri: state.uri.clone(),
            source,
        };
        return Err(undo(dir, virsh, e, &files));
    }
    state.dns_hosts.push(dns);
    state.write(dir)?;
    let bar = progress(plan.vms.len());
    for (pv, ign) in plan.vms.iter().zip(&files) {
        bar.set_message(pv.vm.name.clone());
        if let Err(e) = make_vm(
            dir,
            virsh,
            &mut state,
            pv,
            p.image.as_deref(),
            ign,
            p.autostart,
        ) {
            bar.abandon_with_message(format!("{} failed", pv.vm.name));
            return Err(undo(dir, virsh, e, &files));
        }
        bar.inc(1);
    }
    bar.finish_with_message("all running");
    Ok(state)
}

/// After a failed step: removes what the record names, and the Ignition
/// files written for VMs never made; the error says what is left.
fn undo(
    dir: &Path,
    virsh: &mut Virsh,
    err: ClusterError,
    files: &[(PathBuf, Option<PathBuf>)],
) -> ClusterError {
    warn!("{err}; removing what was made");
    for (ign, side) in files {
        let _ = std::fs::remove_file(ign);
        if let Some(side) = side {
            let _ = std::fs::remove_file(side);
        }
    }
    match destroy(dir, virsh) {
        Ok(_) => ClusterError::Partial {
            message: err.to_string(),
            left: "; what was made is removed again".into(),
        },
        Err(left) => ClusterError::Partial {
            message: err.to_string(),
            left: format!("; removing what was made failed too: {left}"),
        },
    }
}

/// Removes every VM the record of `dir` names, newest first: the domain
/// (powered off, undefined) when its metadata names this cluster, its
/// volumes, its DHCP reservation and its Ignition file; then the record
/// and `vms/` when empty, and the inventory files `create cluster` wrote
/// ([`crate::inventory_made_here`]). Returns the names of the VMs removed.
///
/// A domain whose metadata names another cluster (or none) is not
/// touched: it stays in the record and the error names it.
///
/// # Errors
/// [`ClusterError::File`] when `dir` has no record;
/// [`ClusterError::Partial`] listing what could not be removed.
pub fn destroy(dir: &Path, virsh: &mut Virsh) -> Result<Vec<String>, ClusterError> {
    let Some(mut state) = ClusterState::read(dir)? else {
        return Err(ClusterError::File {
            path: ClusterState::path(dir),
            message: "no record of a cluster made with `okd-install create cluster` here".into(),
        });
    };
    let mut removed = Vec::new();
    let mut left: Vec<String> = Vec::new();
    let mut keep = Vec::new();
    while let Some(vm) = state.vms.pop() {
        match remove_vm(virsh, &state, &vm) {
            Ok(()) => {
                info!("{}: removed", vm.name);
                removed.push(vm.name.clone());
            }
            Err(why) => {
                left.push(format!("{}: {why}", vm.name));
                keep.push(vm);
            }
        }
    }
    keep.reverse();
    state.vms = keep;
    if state.vms.is_empty() {
        while let Some(h) = state.dns_hosts.last().cloned() {
            match virsh.remove_dns_host(&state.network, &h) {
                Ok(_) => {
                    state.dns_hosts.pop();
                }
                Err(e) => {
                    left.push(format!(
                        "the DNS entry {:?} of network {}: {e}",
                        h.hostnames, state.network
                    ));
                    break;
                }
            }
        }
    }
    if state.vms.is_empty() && state.dns_hosts.is_empty() {
        ClusterState::remove(dir)?;
        let _ = std::fs::remove_dir(dir.join("vms"));
        for name in crate::INVENTORY_FILES {
            if crate::inventory_made_here(dir, name) {
                let _ = std::fs::remove_file(dir.join(name));
            }
        }
        Ok(removed)
    } else {
        state.write(dir)?;
        Err(ClusterError::Partial {
            message: format!(
                "{} VM(s) and {} DNS entr(ies) could not be removed",
                state.vms.len(),
                state.dns_hosts.len()
            ),
            left: format!(
                ":\n  {}\n(`okd-install destroy cluster --dir {}` tries again; they stay in {})",
                left.join("\n  "),
                okd_fs::shell_path(dir),
                ClusterState::path(dir).display()
            ),
        })
    }
}

/// Removes one VM of the record (see [`destroy`]); the reason as text.
pub(crate) fn remove_one(
    virsh: &mut Virsh,
    state: &ClusterState,
    vm: &VmRecord,
) -> Result<(), String> {
    remove_vm(virsh, state, vm)
}

fn remove_vm(virsh: &mut Virsh, state: &ClusterState, vm: &VmRecord) -> Result<(), String> {
    if virsh.domain_exists(&vm.name).map_err(|e| e.to_string())? {
        let xml = virsh.domain_xml(&vm.name).map_err(|e| e.to_string())?;
        match okd_libvirt::domain_owner(&xml) {
            Some((cluster, _)) if cluster == state.cluster => {
                virsh.remove_domain(&vm.name).map_err(|e| e.to_string())?;
            }
            Some((other, _)) => {
                return Err(format!(
                    "domain {} belongs to cluster {other}, not {}; not touched",
                    vm.name, state.cluster
                ));
            }
            None => {
                return Err(format!(
                    "domain {} was not made by okd-install (no okd metadata); not touched",
                    vm.name
                ));
            }
        }
    }
    for v in &vm.volumes {
        virsh
            .delete_volume(&state.pool, v)
            .map_err(|e| e.to_string())?;
    }
    if let Some(entry) = &vm.dns {
        virsh
            .remove_dns_host(&state.network, entry)
            .map_err(|e| e.to_string())?;
    }
    if vm.reserved {
        let host = DhcpHost {
            mac: vm.mac.clone(),
            name: vm.name.clone(),
            ip: vm.ip,
        };
        virsh
            .remove_dhcp_host(&state.network, &host)
            .map_err(|e| e.to_string())?;
    }
    for f in vm.ignition.iter().chain(vm.side_disk.iter()) {
        match std::fs::remove_file(f) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(format!("{}: {e}", f.display())),
        }
    }
    Ok(())
}

/// What [`scale`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScaleReport {
    /// Workers made.
    pub added: Vec<String>,
    /// Workers removed.
    pub removed: Vec<String>,
}

/// Sets the cluster of `dir` to `workers` workers (kcli `scale -P
/// workers=N`): new ones are planned from the recorded parameter file
/// (names, memory, MACs, free addresses) and made like [`create_vms`]
/// makes them, with `worker.ign`; surplus ones are removed, highest
/// number first. The masters' HAProxy and every node's CoreDNS keep the
/// workers they were made with (their files are not rewritten).
///
/// # Errors
/// [`ClusterError::File`] without a record; the parameter file's errors;
/// [`ClusterError::Partial`] when a worker could not be made (the new
/// ones are removed again) or removed.
pub fn scale(dir: &Path, virsh: &mut Virsh, workers: u32) -> Result<ScaleReport, ClusterError> {
    let Some(mut state) = ClusterState::read(dir)? else {
        return Err(ClusterError::File {
            path: ClusterState::path(dir),
            message: "no record of a cluster made with `okd-install create cluster` here".into(),
        });
    };
    let current: Vec<usize> = (0..state.vms.len())
        .filter(|i| state.vms[*i].role == "worker")
        .collect();
    let mut report = ScaleReport {
        added: Vec::new(),
        removed: Vec::new(),
    };
    if (workers as usize) < current.len() {
        let surplus: Vec<VmRecord> = current[workers as usize..]
            .iter()
            .map(|i| state.vms[*i].clone())
            .collect();
        for vm in surplus.iter().rev() {
            remove_vm(virsh, &state, vm).map_err(|why| ClusterError::Partial {
                message: format!("removing worker {}", vm.name),
                left: format!(": {why}"),
            })?;
            state.vms.retain(|v| v.name != vm.name);
            state.write(dir)?;
            info!("{}: removed", vm.name);
            report.removed.push(vm.name.clone());
        }
        return Ok(report);
    }
    let mut params = okd_paramfile::load_with_overrides(&state.param_file, &state.overrides)?;
    params.workers = workers;
    let wanted: Vec<_> = params
        .vms(&state.param_file)?
        .into_iter()
        .filter(|v| v.role == Role::Worker)
        .filter(|v| !state.vms.iter().any(|r| r.name == v.name))
        .collect();
    if wanted.is_empty() {
        return Ok(report);
    }
    let network = virsh
        .network(&state.network)
        .map_err(|source| ClusterError::Libvirt {
            uri: state.uri.clone(),
            source,
        })?;
    // The same rule as create's plan: DNS-only entries (other clusters'
    // names, api/api-int) are taken too.
    let mut also = vec![state.gateway, state.api_vip, state.ingress_vip];
    also.extend(state.vms.iter().map(|v| v.ip));
    let taken = crate::taken_addresses(&network, &also);
    let subnet = ipnet::IpNet::new(state.gateway, state.prefix)
        .expect("a recorded prefix")
        .trunc();
    let mut free = crate::free_addresses(
        subnet,
        network.ipv4.as_ref().and_then(|i| i.dhcp_range),
        taken,
    );
    let mut planned = Vec::new();
    for vm in wanted {
        if virsh
            .domain_exists(&vm.name)
            .map_err(|source| ClusterError::Libvirt {
                uri: state.uri.clone(),
                source,
            })?
        {
            return Err(ClusterError::Invalid {
                file: state.param_file.display().to_string(),
                key: "workers".into(),
                rule: format!("a VM named {} exists already", vm.name),
            });
        }
        let Some(addr) = free.next() else {
            return Err(ClusterError::Invalid {
                file: state.param_file.display().to_string(),
                key: "network".into(),
                rule: format!("no free address left for {}", vm.name),
            });
        };
        planned.push(PlannedVm { vm, ip: addr });
    }
    let (_, worker) = read_config(dir, "worker.ign")?;
    let mut with_new = state.clone();
    with_new.vms.extend(planned.iter().map(planned_record));
    let layer = layer_of(&with_new);
    let bar = progress(planned.len());
    for pv in &planned {
        let node = layer
            .nodes
            .iter()
            .find(|n| n.name == pv.vm.name)
            .expect("planned above");
        bar.set_message(pv.vm.name.clone());
        let made = write_vm_ignition(dir, &layer, node, &worker, &[]).and_then(|files| {
            make_vm(
                dir,
                virsh,
                &mut state,
                pv,
                params.image.as_deref(),
                &files,
                params.autostart,
            )
        });
        if let Err(e) = made {
            bar.abandon_with_message(format!("{} failed", pv.vm.name));
            // Remove the workers this run made, newest first.
            let mut left = Vec::new();
            while let Some(vm) = state.vms.last().cloned() {
                if !planned.iter().any(|p| p.vm.name == vm.name) {
                    break;
                }
                if let Err(why) = remove_vm(virsh, &state, &vm) {
                    left.push(format!("{}: {why}", vm.name));
                    break;
                }
                state.vms.pop();
            }
            state.write(dir)?;
            return Err(ClusterError::Partial {
                message: e.to_string(),
                left: if left.is_empty() {
                    "; the workers this run made are removed again".into()
                } else {
                    format!("; left: {}", left.join("; "))
                },
            });
        }
        state.write(dir)?;
        report.added.push(pv.vm.name.clone());
        bar.inc(1);
    }
    bar.finish_with_message("all running");
    Ok(report)
}
