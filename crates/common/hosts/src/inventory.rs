//! The resolved inventory: agent-config and bastion-config joined with the
//! cluster name and base domain into the nodes and addresses every service
//! uses, with the cross-file rules (unique names, addresses and MACs).

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::bastion::check_images_dir;
use crate::nmstate::{nmstate_address, nmstate_dns, nmstate_gateway};
use crate::{
    AGENT_CONFIG_FILE, AgentConfig, AgentHost, BASTION_CONFIG_FILE, BastionConfig, BootstrapHost,
    HostsError, OsImages, Ports, invalid, parse_agent_config, parse_bastion_config,
};

/// A node's role in the install.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The temporary bootstrap node.
    Bootstrap,
    /// A control-plane node.
    Master,
    /// A compute node.
    Worker,
}

impl Role {
    /// `bootstrap`, `master` or `worker`: also the Ignition file stem and MCS pool.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Bootstrap => "bootstrap",
            Role::Master => "master",
            Role::Worker => "worker",
        }
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A resolved node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Node {
    /// Short host name (`master`).
    pub hostname: String,
    /// `<hostname>.<cluster domain>`.
    pub fqdn: String,
    /// Role.
    pub role: Role,
    /// Boot NIC MAC, lowercase colon form.
    pub mac: Option<String>,
    /// NIC name for `ip=`.
    pub interface: Option<String>,
    /// Static IPv4 or IPv6 address.
    pub address: IpAddr,
    /// Prefix length of `address`.
    pub prefix: u8,
    /// Default gateway.
    pub gateway: Option<IpAddr>,
    /// DNS servers (default: the bastion).
    pub nameservers: Vec<IpAddr>,
    /// Install disk, e.g. `/dev/sda`.
    pub install_disk: String,
    /// `etcd-<n>` for masters (n in agent-config order).
    pub etcd_name: Option<String>,
}

impl Node {
    /// The netmask of `prefix` for IPv4 (`255.255.255.0`), or the prefix for IPv6.
    pub fn netmask(&self) -> String {
        match self.address {
            IpAddr::V4(_) => {
                // Range-checked at load; checked here too, so no prefix can panic.
                let bits = u32::MAX
                    .checked_shl(32u32.saturating_sub(u32::from(self.prefix)))
                    .unwrap_or(0);
                Ipv4Addr::from(bits).to_string()
            }
            IpAddr::V6(_) => self.prefix.to_string(),
        }
    }
}

/// Everything the bastion services need, resolved and checked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Inventory {
    /// `metadata.name` of install-config.
    pub cluster_name: String,
    /// `baseDomain` of install-config.
    pub base_domain: String,
    /// `<cluster_name>.<base_domain>`.
    pub cluster_domain: String,
    /// The bastion's listen address.
    pub listen: IpAddr,
    /// `api`/`api-int` address.
    pub api: IpAddr,
    /// `*.apps` address.
    pub ingress: IpAddr,
    /// Upstream resolvers as socket addresses (port 53 unless given).
    pub upstreams: Vec<std::net::SocketAddr>,
    /// Bootstrap, masters, workers in file order.
    pub nodes: Vec<Node>,
    /// Ports.
    pub ports: Ports,
    /// Images.
    pub os_images: OsImages,
    /// Extra A records relative to the cluster domain.
    pub extra_records: BTreeMap<String, IpAddr>,
    /// Networks whose clients the DNS server recurses for:
    /// bastion-config's `allowRecursion`, or by default every node's
    /// network (address/prefix, deduplicated, in node order) plus
    /// `127.0.0.0/8` and `::1/128` (the bastion itself).
    pub allow_recursion: Vec<ipnet::IpNet>,
}

/// The default of [`Inventory::allow_recursion`] for `nodes`.
pub fn default_allow_recursion(nodes: &[Node]) -> Vec<ipnet::IpNet> {
    let mut nets: Vec<ipnet::IpNet> = Vec::new();
    let loopback = [
        ipnet::IpNet::V4(ipnet::Ipv4Net::new_assert(Ipv4Addr::new(127, 0, 0, 0), 8)),
        ipnet::IpNet::V6(ipnet::Ipv6Net::new_assert(
            std::net::Ipv6Addr::LOCALHOST,
            128,
        )),
    ];
    let node_nets = nodes.iter().filter_map(|n| {
        ipnet::IpNet::new(n.address, n.prefix)
            .ok()
            .map(|i| i.trunc())
    });
    for net in node_nets.chain(loopback) {
        if !nets.contains(&net) {
            nets.push(net);
        }
    }
    nets
}

impl Inventory {
    /// The control-plane and compute hosts (never the bootstrap, which
    /// never joins as a node) as bootstrap.ign's node identities: host
    /// name and FQDN in lower case, and the address.
    pub fn node_identities(&self) -> okd_types::node_identities::NodeIdentities {
        use okd_types::node_identities::{NodeIdentities, NodeIdentity};
        NodeIdentities {
            nodes: self
                .nodes
                .iter()
                .filter(|n| n.role != Role::Bootstrap)
                .map(|n| {
                    let mut names = vec![n.hostname.to_lowercase()];
                    let fqdn = n.fqdn.to_lowercase();
                    if !fqdn.is_empty() && !names.contains(&fqdn) {
                        names.push(fqdn);
                    }
                    NodeIdentity {
                        names,
                        addresses: vec![n.address],
                        master: n.role == Role::Master,
                    }
                })
                .collect(),
        }
    }

    /// Nodes of one role, in order.
    pub fn role(&self, role: Role) -> impl Iterator<Item = &Node> {
        self.nodes.iter().filter(move |n| n.role == role)
    }

    /// The node with this MAC (case-insensitive, `-` or `:` separators).
    pub fn by_mac(&self, mac: &str) -> Option<&Node> {
        let want = normalize_mac(mac)?;
        self.nodes
            .iter()
            .find(|n| n.mac.as_deref() == Some(want.as_str()))
    }

    /// The node with this address.
    pub fn by_address(&self, ip: IpAddr) -> Option<&Node> {
        self.nodes.iter().find(|n| n.address == ip)
    }

    /// Reads `agent-config.yaml` and `bastion-config.yaml` from `dir` and resolves them.
    ///
    /// # Errors
    /// [`HostsError`] naming the file and field.
    pub fn load(
        dir: &Path,
        cluster_name: &str,
        base_domain: &str,
    ) -> Result<Inventory, HostsError> {
        let read = |name: &str| {
            std::fs::read(dir.join(name)).map_err(|source| HostsError::Io {
                file: name.to_string(),
                source,
            })
        };
        let agent = parse_agent_config(&read(AGENT_CONFIG_FILE)?)?;
        let bastion = parse_bastion_config(&read(BASTION_CONFIG_FILE)?)?;
        Inventory::resolve(&agent, &bastion, cluster_name, base_domain)
    }

    /// Joins the two files: addresses from nmstate, bootstrap from the bastion
    /// file, etcd names for masters, every rule checked.
    ///
    /// # Errors
    /// [`HostsError::Invalid`] for a host without a usable address, a
    /// duplicate host name, MAC or address, an unknown role, a bad MAC.
    pub fn resolve(
        agent: &AgentConfig,
        bastion: &BastionConfig,
        cluster_name: &str,
        base_domain: &str,
    ) -> Result<Inventory, HostsError> {
        let cluster_domain = format!("{cluster_name}.{base_domain}");
        check_cluster_names(agent, bastion, cluster_name)?;
        let mut nodes = Vec::new();
        if let Some(b) = &bastion.bootstrap {
            nodes.push(bootstrap_node(b, bastion, &cluster_domain)?);
        }
        let mut masters = 0;
        for (i, h) in agent.hosts.iter().enumerate() {
            let mut node = agent_node(i, h, bastion, &cluster_domain)?;
            if node.role == Role::Master {
                node.etcd_name = Some(format!("etcd-{masters}"));
                masters += 1;
            }
            nodes.push(node);
        }
        check_unique(&nodes)?;
        check_images_dir(&bastion.os_images.directory)?;
        crate::bastion::check_ports(&bastion.ports)?;
        let upstreams = upstreams(bastion)?;
        crate::bootargs::check(&nodes, &bastion.os_images)?;
        crate::records::check(&bastion.extra_records)?;
        let allow_recursion = match &bastion.allow_recursion {
            Some(nets) => nets.iter().map(ipnet::IpNet::trunc).collect(),
            None => default_allow_recursion(&nodes),
        };
        Ok(Inventory {
            cluster_name: cluster_name.to_string(),
            base_domain: base_domain.to_string(),
            cluster_domain,
            listen: bastion.listen_address,
            api: bastion.api_address.unwrap_or(bastion.listen_address),
            ingress: bastion.ingress_address.unwrap_or(bastion.listen_address),
            upstreams,
            nodes,
            ports: bastion.ports.clone(),
            os_images: bastion.os_images.clone(),
            extra_records: bastion.extra_records.clone(),
            allow_recursion,
        })
    }
}

/// `metadata.name` of either file, when set, must be the install-config's cluster name.
fn check_cluster_names(
    agent: &AgentConfig,
    bastion: &BastionConfig,
    cluster_name: &str,
) -> Result<(), HostsError> {
    for (file, name) in [
        (AGENT_CONFIG_FILE, &agent.metadata.name),
        (BASTION_CONFIG_FILE, &bastion.metadata.name),
    ] {
        if !name.is_empty() && name != cluster_name {
            return Err(invalid(
                file,
                "metadata.name",
                format!("{name:?} does not match the install-config cluster name {cluster_name:?}"),
            ));
        }
    }
    Ok(())
}

/// The bootstrap node of bastion-config's `bootstrap` (gateway and resolver
/// default to the bastion).
fn bootstrap_node(
    b: &BootstrapHost,
    bastion: &BastionConfig,
    cluster_domain: &str,
) -> Result<Node, HostsError> {
    let f = BASTION_CONFIG_FILE;
    let net: ipnet::IpNet = b.address.parse().map_err(|_| {
        invalid(
            f,
            "bootstrap.address",
            format!(
                "{:?} is not an address with prefix (192.168.1.2/24)",
                b.address
            ),
        )
    })?;
    let mac = match &b.mac_address {
        Some(m) => Some(normalize_mac(m).ok_or_else(|| {
            invalid(
                f,
                "bootstrap.macAddress",
                format!("{m:?} is not a MAC address"),
            )
        })?),
        None => None,
    };
    let hostname = short(&b.hostname, cluster_domain);
    Ok(Node {
        fqdn: format!("{hostname}.{cluster_domain}"),
        hostname,
        role: Role::Bootstrap,
        mac,
        interface: b.interface.clone(),
        address: net.addr(),
        prefix: net.prefix_len(),
        gateway: Some(b.gateway.unwrap_or(bastion.listen_address)),
        nameservers: vec![bastion.listen_address],
        install_disk: b
            .installation_disk
            .clone()
            .unwrap_or_else(|| "/dev/sda".into()),
        etcd_name: None,
    })
}

/// The node of agent-config's `hosts[i]`: role, name, first NIC's MAC and the
/// nmstate address, gateway and resolvers (defaulting to the bastion). The
/// caller numbers the etcd members.
fn agent_node(
    i: usize,
    h: &AgentHost,
    bastion: &BastionConfig,
    cluster_domain: &str,
) -> Result<Node, HostsError> {
    let f = AGENT_CONFIG_FILE;
    let at = |field: &str| format!("hosts[{i}].{field}");
    // The PXE/ISO flow installs with coreos.inst.install_dev, a device
    // path: a serial number, WWN, HCTL, model or size hint cannot be
    // honoured, and used to be dropped in favour of /dev/sda.
    if let Some(key) = h
        .root_device_hints
        .as_ref()
        .and_then(|r| r.other.keys().next())
    {
        return Err(invalid(
            f,
            at(&format!("rootDeviceHints.{key}")),
            format!(
                "is not supported here: nodes install with coreos.inst.install_dev, which takes a device path; give rootDeviceHints.deviceName instead, e.g. the disk's stable /dev/disk/by-id/… or /dev/disk/by-path/… name{}",
                if h.root_device_hints
                    .as_ref()
                    .is_some_and(|r| r.device_name.is_none())
                {
                    " (without it /dev/sda would be used)"
                } else {
                    ""
                }
            ),
        ));
    }
    let role = match h.role.as_deref().unwrap_or("worker") {
        "master" => Role::Master,
        "worker" => Role::Worker,
        other => {
            return Err(invalid(
                f,
                at("role"),
                format!("{other:?} is not master or worker"),
            ));
        }
    };
    let hostname = h.hostname.clone().ok_or_else(|| {
        invalid(
            f,
            at("hostname"),
            "required to serve DNS and per-host boot entries",
        )
    })?;
    let nic = h.interfaces.first();
    let mac = match nic {
        Some(n) => Some(normalize_mac(&n.mac_address).ok_or_else(|| {
            invalid(
                f,
                at("interfaces[0].macAddress"),
                format!("{:?} is not a MAC address", n.mac_address),
            )
        })?),
        None => None,
    };
    let net = h.network_config.as_ref().ok_or_else(|| {
        invalid(
            f,
            at("networkConfig"),
            "a static address (nmstate interfaces[].ipv4.address) is required",
        )
    })?;
    let (address, prefix, iface) = nmstate_address(net)
        .map_err(|(field, rule)| invalid(f, at(&field), format!("host {hostname:?}: {rule}")))?
        .ok_or_else(|| {
            invalid(
                f,
                at("networkConfig.interfaces"),
                "no static ipv4/ipv6 address with prefix-length found",
            )
        })?;
    if let (Some(n), Some(ifn)) = (nic, &iface)
        && !h.interfaces.iter().any(|x| &x.name == ifn)
    {
        return Err(invalid(
            f,
            at("networkConfig.interfaces"),
            format!(
                "interface {ifn:?} is not in interfaces[] (has {:?})",
                n.name
            ),
        ));
    }
    let short_name = short(&hostname, cluster_domain);
    let nameservers = match nmstate_dns(net) {
        d if d.is_empty() => vec![bastion.listen_address],
        d => d,
    };
    Ok(Node {
        fqdn: format!("{short_name}.{cluster_domain}"),
        hostname: short_name,
        role,
        mac,
        interface: iface.or_else(|| nic.map(|n| n.name.clone())),
        address,
        prefix,
        gateway: nmstate_gateway(net).or(Some(bastion.listen_address)),
        nameservers,
        install_disk: h
            .root_device_hints
            .as_ref()
            .and_then(|r| r.device_name.clone())
            .unwrap_or_else(|| "/dev/sda".into()),
        etcd_name: None,
    })
}

/// Host names, addresses and MACs are unique across all nodes; the error
/// names the file of the later node.
fn check_unique(nodes: &[Node]) -> Result<(), HostsError> {
    for (i, a) in nodes.iter().enumerate() {
        for b in &nodes[i + 1..] {
            let file = if b.role == Role::Bootstrap {
                BASTION_CONFIG_FILE
            } else {
                AGENT_CONFIG_FILE
            };
            if a.hostname == b.hostname {
                return Err(invalid(
                    file,
                    "hosts.hostname",
                    format!("{:?} is used twice", a.hostname),
                ));
            }
            if a.address == b.address {
                return Err(invalid(
                    file,
                    "hosts.networkConfig",
                    format!(
                        "address {} is used by {} and {}",
                        a.address, a.hostname, b.hostname
                    ),
                ));
            }
            if a.mac.is_some() && a.mac == b.mac {
                return Err(invalid(
                    file,
                    "hosts.interfaces.macAddress",
                    format!(
                        "{} is used by {} and {}",
                        a.mac.as_deref().unwrap_or(""),
                        a.hostname,
                        b.hostname
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// `upstreamResolvers[]` as socket addresses (`ip` or `ip:port`, port 53 by default).
fn upstreams(bastion: &BastionConfig) -> Result<Vec<SocketAddr>, HostsError> {
    bastion
        .upstream_resolvers
        .iter()
        .enumerate()
        .map(|(i, u)| {
            u.parse::<SocketAddr>()
                .or_else(|_| u.parse::<IpAddr>().map(|ip| SocketAddr::new(ip, 53)))
                .map_err(|_| {
                    invalid(
                        BASTION_CONFIG_FILE,
                        format!("upstreamResolvers[{i}]"),
                        format!("{u:?} is not an address or address:port"),
                    )
                })
        })
        .collect()
}

fn short(hostname: &str, cluster_domain: &str) -> String {
    hostname
        .strip_suffix(&format!(".{cluster_domain}"))
        .unwrap_or(hostname)
        .split('.')
        .next()
        .unwrap_or(hostname)
        .to_string()
}

/// Lowercase colon-separated MAC, or `None` when `s` is not 6 hex octets.
pub fn normalize_mac(s: &str) -> Option<String> {
    let parts: Vec<&str> = s.split([':', '-']).collect();
    if parts.len() != 6
        || parts
            .iter()
            .any(|p| p.len() != 2 || !p.chars().all(|c| c.is_ascii_hexdigit()))
    {
        return None;
    }
    Some(parts.join(":").to_ascii_lowercase())
}
