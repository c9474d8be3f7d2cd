//! VMs of an OpenShift/OKD cluster from a kcli-style parameter file, on
//! libvirt (`okd-install create cluster`, `scale`, `destroy cluster`),
//! after karmab/kcli-openshift4 `run.py` and karmab/kcli
//! `kvirt/cluster/openshift/__init__.py` (`create`, `scale`) and
//! `kvirt/config.py` (`delete_kube`).
//!
//! The flow of `create cluster --dir D --paramfile P`:
//! 1. [`plan`]: everything checked before anything is made — the network
//!    and its IPv4 subnet, the extra networks, the storage pool, the image,
//!    the VIPs inside the subnet (the API VIP defaults, as kcli's, to the
//!    third-from-last address: `.253` of a /24), VM names free, MACs,
//!    names and addresses not reserved by another host of the network; each
//!    VM gets a DHCP reservation (its address, so that CoreDNS, HAProxy and
//!    the inventory can name it);
//! 2. [`install_config_yaml`] for the caller's asset graph (platform none,
//!    the network's subnet as the machine network);
//! 3. [`create_vms`]: each VM's Ignition (bootstrap.ign, or the master or
//!    worker pointer config, plus its host name and the VIP/DNS/LB layer of
//!    okd-vip-layer) in `D/vms/<vm>.ign`, handed to the guest through
//!    fw_cfg; the DHCP reservation, volumes, domain, start; bootstrap, then
//!    masters, then workers. Every step is recorded in `D/vm-cluster.json`
//!    ([`state::ClusterState`]) before the next, and a failure removes what
//!    was made (or lists it with the command that removes it).
//!
//! [`scale`] adds or removes workers; [`destroy`] removes every VM, volume,
//! reservation and file the record names, and nothing else (a domain whose
//! metadata names another cluster is left alone and reported).

pub mod bootstrap;
mod ops;
pub mod side;
pub mod state;

use std::collections::BTreeSet;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use ipnet::IpNet;
use okd_libvirt::{LibvirtError, Virsh};
use okd_paramfile::{Parameters, Role, Vm};

pub use ops::{ScaleReport, create_vms, destroy, scale};

/// What [`plan`], [`create_vms`], [`scale`] and [`destroy`] refuse or fail on.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// The parameter file itself ([`okd_paramfile::ParamError`]).
    #[error(transparent)]
    Param(#[from] okd_paramfile::ParamError),
    /// A parameter that does not fit the hypervisor (a network or pool that
    /// does not exist, a VIP outside the network, a VM name in use).
    #[error("{file}: {key}: {rule}")]
    Invalid {
        /// The parameter file (or the flag, for `--pool`).
        file: String,
        /// The key.
        key: String,
        /// The rule, with the value.
        rule: String,
    },
    /// libvirt refused or failed.
    #[error("libvirt ({uri}): {source}")]
    Libvirt {
        /// The connection URI.
        uri: String,
        /// virsh's error.
        source: LibvirtError,
    },
    /// A file of the asset directory.
    #[error("{path}: {message}")]
    File {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A step failed after others had made things; `left` lists what still
    /// exists, with the command that removes it.
    #[error("{message}{left}")]
    Partial {
        /// The failure.
        message: String,
        /// What was made and could not be removed ("" when all was).
        left: String,
    },
}

/// How the VMs are made (command-line options of `create cluster`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// The libvirt connection URI (`qemu:///system`, kcli's default).
    pub uri: String,
    /// The storage pool of the VMs' volumes (kcli's `pool`, default `default`).
    pub pool: String,
    /// The domain type: `kvm`, or `qemu` for software emulation.
    pub domain_type: String,
    /// The `-P key=value` overrides (recorded for `scale`).
    pub overrides: Vec<String>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            uri: "qemu:///system".into(),
            pool: "default".into(),
            domain_type: "kvm".into(),
            overrides: Vec::new(),
        }
    }
}

/// One VM of the plan: the parameter file's VM and its reserved address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedVm {
    /// Name, role, memory, CPUs, disks, networks, MAC.
    pub vm: Vm,
    /// Its DHCP reservation on the first network.
    pub ip: IpAddr,
}

/// Everything checked and decided before anything is made.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The parameters.
    pub params: Parameters,
    /// The parameter file.
    pub param_file: PathBuf,
    /// The options.
    pub options: Options,
    /// The first network's subnet (the install-config's machine network).
    pub subnet: IpNet,
    /// The network's own address (its resolver, CoreDNS's upstream).
    pub gateway: IpAddr,
    /// The API VIP.
    pub api_vip: IpAddr,
    /// The ingress VIP (the API VIP when the file gives none).
    pub ingress_vip: IpAddr,
    /// The VMs, bootstrap first.
    pub vms: Vec<PlannedVm>,
    /// keepalived's `virtual_router_id` for the API VIP (the ingress VIP
    /// uses the next): [`okd_paramfile::virtual_router_id`], moved on past
    /// the ids (and the next ones) that other clusters' VMs on this libvirt
    /// connection record, so clusters on one L2 network never share one.
    pub virtual_router_id: u8,
}

fn libvirt(v: &Virsh) -> impl Fn(LibvirtError) -> ClusterError + '_ {
    move |source| ClusterError::Libvirt {
        uri: v.uri().to_string(),
        source,
    }
}

/// Checks `params` (read from `param_file`) against the hypervisor behind
/// `virsh` and decides the VIPs and each VM's address; makes nothing.
///
/// # Errors
/// [`ClusterError::Invalid`] naming the file and the key: `network` or
/// `extra_networks` missing or without IPv4, `pool` missing, `image` not
/// in the pool, `api_ip`/`ingress_ip` outside the network or on its
/// gateway, `cluster` when a VM of that name exists already, a MAC, name or
/// address another host of the network reserves, no free address left;
/// [`ClusterError::Libvirt`] when virsh fails otherwise.
pub fn plan(
    virsh: &mut Virsh,
    params: Parameters,
    param_file: &Path,
    options: Options,
) -> Result<Plan, ClusterError> {
    let file = param_file.display().to_string();
    let bad = |key: &str, rule: String| ClusterError::Invalid {
        file: file.clone(),
        key: key.to_string(),
        rule,
    };
    let vms = params.vms(param_file)?;
    let uri = virsh.uri().to_string();
    let network = match virsh.network(&params.network) {
        Ok(n) => n,
        Err(LibvirtError::NotFound { .. }) => {
            return Err(bad(
                "network",
                format!(
                    "libvirt network {:?} does not exist at {uri} (virsh net-list --all)",
                    params.network
                ),
            ));
        }
        Err(e) => return Err(libvirt(virsh)(e)),
    };
    let Some(ip) = network.ipv4.clone() else {
        return Err(bad(
            "network",
            format!(
                "libvirt network {:?} has no IPv4 address, so no subnet for the VIPs and the DHCP reservations",
                params.network
            ),
        ));
    };
    for extra in &params.extra_networks {
        match virsh.network(extra) {
            Ok(_) => {}
            Err(LibvirtError::NotFound { .. }) => {
                return Err(bad(
                    "extra_networks",
                    format!("libvirt network {extra:?} does not exist at {uri}"),
                ));
            }
            Err(e) => return Err(libvirt(virsh)(e)),
        }
    }
    match virsh.pool(&options.pool) {
        Ok(_) => {}
        Err(LibvirtError::NotFound { .. }) => {
            return Err(ClusterError::Invalid {
                file: "--pool".into(),
                key: "pool".into(),
                rule: format!(
                    "libvirt storage pool {:?} does not exist at {uri} (virsh pool-list --all)",
                    options.pool
                ),
            });
        }
        Err(e) => return Err(libvirt(virsh)(e)),
    }
    if let Some(image) = &params.image
        && !virsh
            .volume_exists(&options.pool, image)
            .map_err(libvirt(virsh))?
    {
        return Err(bad(
            "image",
            format!(
                "no volume {image:?} in pool {:?} (virsh vol-list {}); upload the CoreOS qcow2 image there first",
                options.pool, options.pool
            ),
        ));
    }
    let subnet = IpNet::new(ip.address, ip.prefix)
        .map_err(|e| bad("network", format!("{}/{}: {e}", ip.address, ip.prefix)))?
        .trunc();
    let api_vip = match params.api_ip {
        Some(v) => v,
        None => third_from_last(&subnet).ok_or_else(|| {
            bad(
                "api_ip",
                format!("{subnet} is too small to pick a VIP from; give api_ip"),
            )
        })?,
    };
    let ingress_vip = params.ingress_ip.unwrap_or(api_vip);
    for (key, vip) in [("api_ip", api_vip), ("ingress_ip", ingress_vip)] {
        if !subnet.contains(&vip) || vip == subnet.network() || vip == subnet.broadcast() {
            return Err(bad(
                key,
                format!(
                    "{vip} is not an address of network {:?} ({subnet})",
                    params.network
                ),
            ));
        }
        if vip == ip.address {
            return Err(bad(
                key,
                format!("{vip} is network {:?}'s own address", params.network),
            ));
        }
    }
    for vm in &vms {
        if virsh.domain_exists(&vm.name).map_err(libvirt(virsh))? {
            return Err(bad(
                "cluster",
                format!(
                    "a VM named {} exists already at {uri}: choose another cluster name, or remove it (virsh undefine {})",
                    vm.name, vm.name
                ),
            ));
        }
        if let Some(h) = network
            .dhcp_hosts
            .iter()
            .find(|h| h.mac.eq_ignore_ascii_case(&vm.mac) || h.name == vm.name)
        {
            return Err(bad(
                mac_key(vm.role),
                format!(
                    "network {:?} already reserves {} for {} ({}); remove that reservation or change {}",
                    params.network, h.ip, h.name, h.mac, vm.name
                ),
            ));
        }
    }
    let cd = format!("{}.{}", params.cluster, params.domain);
    for h in &network.dns_hosts {
        if let Some(name) = h
            .hostnames
            .iter()
            .find(|n| **n == format!("api.{cd}") || **n == format!("api-int.{cd}"))
        {
            return Err(bad(
                "cluster",
                format!(
                    "network {:?} already resolves {name} to {} (virsh net-update {} delete dns-host …, or another cluster name)",
                    params.network, h.ip, params.network
                ),
            ));
        }
    }
    let taken = taken_addresses(&network, &[ip.address, api_vip, ingress_vip]);
    let free = free_addresses(subnet, ip.dhcp_range, taken.clone());
    if let Some(ip) = params.bootstrap_ip
        && (!subnet.contains(&ip) || taken.contains(&ip))
    {
        return Err(bad(
            "bootstrap_ip",
            format!(
                "{ip} is not a free address of network {:?} ({subnet}: not its address, a VIP or reserved)",
                params.network
            ),
        ));
    }
    let boot_ip = params.bootstrap_ip;
    let mut free = free.filter(move |a| Some(*a) != boot_ip);
    let mut planned = Vec::new();
    for vm in vms {
        if vm.role == Role::Bootstrap
            && let Some(ip) = boot_ip
        {
            planned.push(PlannedVm { vm, ip });
            continue;
        }
        let addr = free.next().ok_or_else(|| {
            bad(
                "network",
                format!(
                    "no free address left in {} of network {:?} for {}",
                    ip.dhcp_range
                        .map_or(subnet.to_string(), |(a, b)| format!("{a}-{b}")),
                    params.network,
                    vm.name
                ),
            )
        })?;
        planned.push(PlannedVm { vm, ip: addr });
    }
    let virtual_router_id = free_router_id(
        virsh,
        okd_paramfile::virtual_router_id(&params.cluster, &params.domain),
        &params.cluster,
    )
    .map_err(|e| match e {
        Some(e) => libvirt(virsh)(e),
        None => bad(
            "cluster",
            "every keepalived virtual_router_id pair is taken by other clusters on this libvirt connection".into(),
        ),
    })?;
    Ok(Plan {
        virtual_router_id,
        params,
        param_file: param_file.to_path_buf(),
        options,
        subnet,
        gateway: ip.address,
        api_vip,
        ingress_vip,
        vms: planned,
    })
}

/// The first id from `wanted` on (wrapping within 1-253) such that neither
/// it nor the next is used by another cluster's VMs on `virsh`'s
/// connection (their `<okd:vrid>`, and the next of each). `Err(None)` when
/// none is free.
/// The addresses of `network` a new VM may not get: its DHCP reservations,
/// its DNS hosts (the api/api-int entries and other clusters' names), and
/// `also` (the network's own address, the VIPs, VMs already recorded).
pub(crate) fn taken_addresses(network: &okd_libvirt::Network, also: &[IpAddr]) -> BTreeSet<IpAddr> {
    let mut taken: BTreeSet<IpAddr> = network.dhcp_hosts.iter().map(|h| h.ip).collect();
    taken.extend(network.dns_hosts.iter().map(|h| h.ip));
    taken.extend(also.iter().copied());
    taken
}

/// The free addresses for new VMs, in order: the hosts of `subnet` inside
/// the network's DHCP range (all hosts without one) that are not `taken`.
pub(crate) fn free_addresses(
    subnet: ipnet::IpNet,
    dhcp_range: Option<(IpAddr, IpAddr)>,
    taken: BTreeSet<IpAddr>,
) -> impl Iterator<Item = IpAddr> {
    let (first, last) = dhcp_range.unwrap_or((subnet.network(), subnet.broadcast()));
    subnet
        .hosts()
        .filter(move |a| *a >= first && *a <= last && !taken.contains(a))
}

fn free_router_id(
    virsh: &mut Virsh,
    wanted: u8,
    cluster: &str,
) -> Result<u8, Option<LibvirtError>> {
    let mut used = BTreeSet::new();
    for name in virsh.domains().map_err(Some)? {
        let Ok(xml) = virsh.domain_xml(&name) else {
            continue;
        };
        if let (Some((owner, _)), Some(id)) = (
            okd_libvirt::domain_owner(&xml),
            okd_libvirt::domain_vrid(&xml),
        ) && owner != cluster
        {
            used.insert(id);
            used.insert(id.saturating_add(1));
        }
    }
    (0..253u16)
        .map(|step| ((u16::from(wanted) - 1 + step) % 253 + 1) as u8)
        .find(|id| !used.contains(id) && !used.contains(&(id + 1)))
        .ok_or(None)
}

fn mac_key(role: Role) -> &'static str {
    match role {
        Role::Bootstrap => "bootstrap_mac",
        Role::Master => "master_macs",
        Role::Worker => "worker_macs",
    }
}

/// kcli's VIP pick on a NAT or routed libvirt network: the third address
/// from the end of an IPv4 subnet (`.253` of a /24), the third of an IPv6 one.
pub fn third_from_last(subnet: &IpNet) -> Option<IpAddr> {
    match subnet {
        IpNet::V4(n) => {
            let last = u32::from(n.broadcast());
            let addr = std::net::Ipv4Addr::from(last.checked_sub(2)?);
            (n.contains(&addr) && addr > n.network()).then_some(IpAddr::V4(addr))
        }
        IpNet::V6(n) => n.hosts().nth(2).map(IpAddr::V6),
    }
}

/// The install-config of the plan (install-config v1, platform `none`, as
/// kcli renders `kvirt/cluster/openshift/install-config.yaml` for libvirt):
/// base domain, name, replicas, network type, the network's subnet as the
/// machine network, the pull secret and SSH key given as text, and `ca`
/// as `additionalTrustBundle`.
pub fn install_config_yaml(plan: &Plan, pull_secret: &str, ssh_key: &str) -> String {
    let p = &plan.params;
    let mut v = serde_json::json!({
        "apiVersion": "v1",
        "baseDomain": p.domain,
        "metadata": {"name": p.cluster},
        "controlPlane": {"name": "master", "hyperthreading": "Enabled", "replicas": p.masters},
        "compute": [{"name": "worker", "hyperthreading": "Enabled", "replicas": p.workers}],
        "networking": {
            "clusterNetwork": [{"cidr": "10.128.0.0/14", "hostPrefix": 23}],
            "serviceNetwork": ["172.30.0.0/16"],
            "machineNetwork": [{"cidr": plan.subnet.to_string()}],
        },
        "platform": {"none": {}},
        "pullSecret": pull_secret.trim(),
        "sshKey": ssh_key.trim(),
    });
    if let Some(t) = &p.network_type {
        v["networking"]["networkType"] = serde_json::Value::String(t.clone());
    }
    if let Some(ca) = &p.ca {
        v["additionalTrustBundle"] = serde_json::Value::String(ca.clone());
    }
    serde_yaml_string(&v)
}

fn serde_yaml_string(v: &serde_json::Value) -> String {
    // JSON is YAML; one document per line keeps the secrets out of diffs' context.
    let mut s = String::from(
        "# install-config from a kcli-style parameter file (okd-install create cluster)\n",
    );
    s.push_str(&serde_json::to_string_pretty(v).expect("JSON values serialize"));
    s.push('\n');
    s
}

/// The pull secret kcli uses for OKD when none is given
/// (karmab/kcli `kvirt/cluster/openshift/fake_pull.json`'s shape: one
/// registry `fake` with a dummy login).
pub const FAKE_PULL_SECRET: &str = r#"{"auths":{"fake":{"auth":"aWQ6cGFzcwo="}}}"#;

/// Reads the pull secret the parameters name (a relative path is taken
/// from the current directory, as kcli does); with `version: upstream`
/// (OKD) and no such file, [`FAKE_PULL_SECRET`].
///
/// # Errors
/// [`ClusterError::Invalid`] naming `pull_secret` and the path.
pub fn read_pull_secret(plan: &Plan) -> Result<String, ClusterError> {
    let path = plan.params.pull_secret.clone();
    match std::fs::read_to_string(&path) {
        Ok(s) => Ok(s),
        Err(e)
            if e.kind() == std::io::ErrorKind::NotFound
                && plan.params.version == okd_paramfile::Version::Upstream =>
        {
            Ok(FAKE_PULL_SECRET.to_string())
        }
        Err(e) => Err(ClusterError::Invalid {
            file: plan.param_file.display().to_string(),
            key: "pull_secret".into(),
            rule: format!("{}: {e}", path.display()),
        }),
    }
}

/// Reads the SSH public key `pub_key` names (`~` is `$HOME`; a relative
/// path is taken from the current directory, as kcli does) plus the
/// `keys` given as text.
///
/// # Errors
/// [`ClusterError::Invalid`] naming `pub_key` and the path.
pub fn read_ssh_keys(plan: &Plan) -> Result<String, ClusterError> {
    let p = &plan.params.pub_key;
    let path = match p.strip_prefix("~") {
        Ok(rest) => PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(rest),
        Err(_) => p.clone(),
    };
    let mut text = std::fs::read_to_string(&path).map_err(|e| ClusterError::Invalid {
        file: plan.param_file.display().to_string(),
        key: "pub_key".into(),
        rule: format!("{}: {e}", path.display()),
    })?;
    for k in &plan.params.keys {
        text = format!("{}\n{}", text.trim_end(), k.trim());
    }
    Ok(text.trim().to_string() + "\n")
}

/// The NIC name a q35 guest's first virtio NIC gets (systemd's predictable
/// names: PCIe root port 1, slot 0), used in the inventory files.
pub const GUEST_NIC: &str = "enp1s0";

/// The hosts of the plan as okd-install's inventory files, so that the
/// commands shared with bare metal know the VMs: `agent-config.yaml`
/// (openshift-install's agent format: each master and worker with its host
/// name, role, MAC and reserved address) and `bastion-config.yaml` (the
/// hypervisor's network address as the "bastion", the VIPs as the API and
/// ingress addresses, the bootstrap VM). From them `create ignition-configs`
/// puts the node identities into bootstrap.ign, so the bootstrap approves
/// exactly these VMs' CSRs, and approve-csr, wait-for and serve's dashboard
/// name them.
pub fn inventory_yaml(plan: &Plan) -> (String, String) {
    use std::fmt::Write as _;
    let p = &plan.params;
    let prefix = plan.subnet.prefix_len();
    let family_any = if plan.gateway.is_ipv4() {
        "0.0.0.0/0"
    } else {
        "::/0"
    };
    let ipkey = if plan.gateway.is_ipv4() {
        "ipv4"
    } else {
        "ipv6"
    };
    let mut agent = format!(
        "# The VMs of cluster {c} (okd-install create cluster), in openshift-install's agent format.\n\
         apiVersion: v1beta1\n\
         kind: AgentConfig\n\
         metadata:\n\
         \x20 name: {c}\n\
         hosts:\n",
        c = p.cluster
    );
    let mut bootstrap = None;
    for pv in &plan.vms {
        if pv.vm.role == Role::Bootstrap {
            bootstrap = Some(pv);
            continue;
        }
        let role = if pv.vm.role == Role::Master {
            "master"
        } else {
            "worker"
        };
        let _ = write!(
            agent,
            "  - hostname: {name}\n\
             \x20   role: {role}\n\
             \x20   rootDeviceHints:\n\
             \x20     deviceName: /dev/vda\n\
             \x20   interfaces:\n\
             \x20     - name: {nic}\n\
             \x20       macAddress: {mac}\n\
             \x20   networkConfig:\n\
             \x20     interfaces:\n\
             \x20       - name: {nic}\n\
             \x20         type: ethernet\n\
             \x20         state: up\n\
             \x20         mac-address: {mac}\n\
             \x20         {ipkey}:\n\
             \x20           enabled: true\n\
             \x20           dhcp: false\n\
             \x20           address:\n\
             \x20             - ip: {ip}\n\
             \x20               prefix-length: {prefix}\n\
             \x20     dns-resolver:\n\
             \x20       config:\n\
             \x20         server:\n\
             \x20           - {gw}\n\
             \x20     routes:\n\
             \x20       config:\n\
             \x20         - destination: {family_any}\n\
             \x20           next-hop-address: {gw}\n\
             \x20           next-hop-interface: {nic}\n",
            name = pv.vm.name,
            nic = GUEST_NIC,
            mac = pv.vm.mac,
            ip = pv.ip,
            gw = plan.gateway,
        );
    }
    let mut bastion = format!(
        "# The hypervisor's network {net} as the \"bastion\" of cluster {c} (okd-install create cluster):\n\
         # DNS, the VIPs and the load balancing run on the nodes (okd-vip-layer), so\n\
         # `okd-install serve` is not needed; the file names the VIPs and the bootstrap VM.\n\
         apiVersion: v1alpha1\n\
         kind: BastionConfig\n\
         metadata:\n\
         \x20 name: {c}\n\
         listenAddress: {gw}\n\
         apiAddress: {api}\n\
         ingressAddress: {ingress}\n\
         upstreamResolvers:\n\
         \x20 - {gw}\n",
        net = p.network,
        c = p.cluster,
        gw = plan.gateway,
        api = plan.api_vip,
        ingress = plan.ingress_vip,
    );
    if let Some(b) = bootstrap {
        let _ = write!(
            bastion,
            "bootstrap:\n\
             \x20 hostname: {name}\n\
             \x20 macAddress: {mac}\n\
             \x20 interface: {nic}\n\
             \x20 address: {ip}/{prefix}\n\
             \x20 gateway: {gw}\n\
             \x20 installationDisk: /dev/vda\n",
            name = b.vm.name,
            mac = b.vm.mac,
            nic = GUEST_NIC,
            ip = b.ip,
            gw = plan.gateway,
        );
    }
    (agent, bastion)
}

/// The inventory files [`inventory_yaml`] makes.
pub const INVENTORY_FILES: [&str; 2] = ["agent-config.yaml", "bastion-config.yaml"];

/// Whether inventory file `name` in `dir` was written by `create cluster`
/// (its first line says so): a repeated run may rewrite it and `destroy
/// cluster` removes it; a user's own file is never touched.
pub fn inventory_made_here(dir: &Path, name: &str) -> bool {
    std::fs::read_to_string(dir.join(name))
        .map(|t| {
            t.lines()
                .next()
                .unwrap_or("")
                .contains("(okd-install create cluster)")
        })
        .unwrap_or(false)
}
