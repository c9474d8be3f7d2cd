//! The hosts of a user-provisioned install and the bastion that serves them.
//!
//! Two files in the asset directory describe them:
//!
//! * `agent-config.yaml` — openshift-install's agent-flow format
//!   (`apiVersion: v1beta1`, `kind: AgentConfig`; assisted.md §"agent-config"),
//!   unchanged so the same file works with `openshift-install agent`: `hosts[]`
//!   with `hostname`, `role` (`master`/`worker`), `rootDeviceHints.deviceName`,
//!   `interfaces[{name, macAddress}]` and an nmstate `networkConfig` whose first
//!   static IPv4 address, default route and DNS servers give the node's
//!   addresses.
//! * `bastion-config.yaml` — okd-install's own small file (`apiVersion:
//!   v1alpha1`, `kind: BastionConfig`) for what agent-config has no place for:
//!   the bastion's listen address, the API and ingress addresses (or VIPs), the
//!   upstream resolvers, the bootstrap host (a UPI-only role agent-config does
//!   not allow), ports, and where the CoreOS images are.
//!
//! [`Inventory::resolve`] joins them with the cluster name and base domain into
//! the resolved view every service uses (DNS names, backends, kernel arguments).

mod bootargs;
mod records;

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// File name of the agent-flow host list.
pub const AGENT_CONFIG_FILE: &str = "agent-config.yaml";
/// File name of the bastion settings.
pub const BASTION_CONFIG_FILE: &str = "bastion-config.yaml";

/// Errors reading or resolving the host files; each names the file and field.
#[derive(Debug, thiserror::Error)]
pub enum HostsError {
    /// A file could not be read.
    #[error("{file}: {source}")]
    Io {
        /// The file.
        file: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A file is not valid YAML for its schema.
    #[error("failed to unmarshal {file}: {message}")]
    Parse {
        /// The file.
        file: String,
        /// serde's message (with line and column).
        message: String,
    },
    /// A field breaks a rule.
    #[error("invalid {file}: {field}: {message}")]
    Invalid {
        /// The file.
        file: String,
        /// Field path, e.g. `hosts[1].interfaces[0].macAddress`.
        field: String,
        /// The rule that failed.
        message: String,
    },
}

fn invalid(file: &str, field: impl Into<String>, message: impl Into<String>) -> HostsError {
    HostsError::Invalid {
        file: file.to_string(),
        field: field.into(),
        message: message.into(),
    }
}

/// `metadata` of both files.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Metadata {
    /// Cluster name (informational; must match install-config when set).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
}

/// `rootDeviceHints` (only the hint the PXE/ISO flow needs).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RootDeviceHints {
    /// Install disk, e.g. `/dev/sda`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_name: Option<String>,
    /// Other hints, kept for the agent flow.
    #[serde(flatten)]
    pub other: BTreeMap<String, Value>,
}

/// One NIC of a host (`interfaces[]`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Interface {
    /// Interface name as the OS names it, e.g. `ens787f0`.
    pub name: String,
    /// MAC address, `aa:bb:cc:dd:ee:ff`.
    pub mac_address: String,
}

/// One host of `agent-config.yaml`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentHost {
    /// Short or fully qualified host name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    /// `master` or `worker`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// Install disk hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root_device_hints: Option<RootDeviceHints>,
    /// NICs with MACs.
    #[serde(default)]
    pub interfaces: Vec<Interface>,
    /// nmstate YAML (interfaces, routes, dns-resolver).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_config: Option<Value>,
}

/// `agent-config.yaml` (openshift-install `agent.Config`, v1beta1).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentConfig {
    /// `v1beta1` (`v1alpha1` accepted).
    pub api_version: String,
    /// `AgentConfig`.
    pub kind: String,
    /// Cluster name.
    #[serde(default)]
    pub metadata: Metadata,
    /// Node zero of the agent flow; unused by `serve`.
    #[serde(
        default,
        rename = "rendezvousIP",
        skip_serializing_if = "Option::is_none"
    )]
    pub rendezvous_ip: Option<String>,
    /// Base URL of PXE artifacts (agent flow).
    #[serde(
        default,
        rename = "bootArtifactsBaseURL",
        skip_serializing_if = "Option::is_none"
    )]
    pub boot_artifacts_base_url: Option<String>,
    /// Extra NTP servers.
    #[serde(
        default,
        rename = "additionalNTPSources",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub additional_ntp_sources: Vec<String>,
    /// The hosts.
    #[serde(default)]
    pub hosts: Vec<AgentHost>,
}

/// The bootstrap host of a UPI install (`bastion-config.yaml` `bootstrap`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BootstrapHost {
    /// Host name, e.g. `bootstrap`.
    pub hostname: String,
    /// Boot NIC MAC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mac_address: Option<String>,
    /// NIC name for the `ip=` kernel argument.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface: Option<String>,
    /// Static address with prefix, e.g. `192.168.120.102/24`.
    pub address: String,
    /// Default gateway (default: the bastion's listen address).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway: Option<IpAddr>,
    /// Install disk (default `/dev/sda`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub installation_disk: Option<String>,
}

/// Where the CoreOS artifacts are served from (paths under the HTTP root or URLs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OsImages {
    /// Directory served under `/images/` (relative to the asset directory).
    #[serde(default = "default_images_dir")]
    pub directory: String,
    /// Live kernel file name.
    #[serde(default = "default_kernel")]
    pub kernel: String,
    /// Live initramfs file name.
    #[serde(default = "default_initramfs")]
    pub initramfs: String,
    /// Live rootfs file name (`coreos.live.rootfs_url`).
    #[serde(default = "default_rootfs")]
    pub rootfs: String,
    /// Metal image for `coreos.inst.image_url` (e.g. `coreos.raw.xz`).
    #[serde(default = "default_metal")]
    pub metal: String,
}

fn default_images_dir() -> String {
    "images".into()
}
fn default_kernel() -> String {
    "kernel".into()
}
fn default_initramfs() -> String {
    "initramfs.img".into()
}
fn default_rootfs() -> String {
    "rootfs.img".into()
}
fn default_metal() -> String {
    "coreos.raw.xz".into()
}

impl Default for OsImages {
    fn default() -> Self {
        OsImages {
            directory: default_images_dir(),
            kernel: default_kernel(),
            initramfs: default_initramfs(),
            rootfs: default_rootfs(),
            metal: default_metal(),
        }
    }
}

/// Listening ports (defaults are the real ones).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Ports {
    /// Kubernetes API load balancer frontend (6443).
    #[serde(default = "p6443")]
    pub api: u16,
    /// Machine-config server load balancer frontend (22623).
    #[serde(default = "p22623")]
    pub machine_config: u16,
    /// HTTP for Ignition, images and PXE scripts (8080).
    #[serde(default = "p8080")]
    pub http: u16,
    /// Ingress HTTP frontend (80).
    #[serde(default = "p80")]
    pub ingress_http: u16,
    /// Ingress HTTPS frontend (443).
    #[serde(default = "p443")]
    pub ingress_https: u16,
    /// DNS (53).
    #[serde(default = "p53")]
    pub dns: u16,
    /// Status page, stats and metrics (9000, as the guide's HAProxy stats).
    #[serde(default = "p9000")]
    pub status: u16,
    /// Our machine-config server when it runs behind our load balancer on the
    /// same address (22624 is the real MCS's plain-HTTP port, so 22625).
    #[serde(default = "p22625")]
    pub machine_config_server: u16,
}

fn p6443() -> u16 {
    6443
}
fn p22623() -> u16 {
    22623
}
fn p8080() -> u16 {
    8080
}
fn p80() -> u16 {
    80
}
fn p443() -> u16 {
    443
}
fn p53() -> u16 {
    53
}
fn p9000() -> u16 {
    9000
}
fn p22625() -> u16 {
    22625
}

impl Default for Ports {
    fn default() -> Self {
        Ports {
            api: 6443,
            machine_config: 22623,
            http: 8080,
            ingress_http: 80,
            ingress_https: 443,
            dns: 53,
            status: 9000,
            machine_config_server: 22625,
        }
    }
}

/// `bastion-config.yaml`: the bastion's own settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BastionConfig {
    /// `v1alpha1`.
    pub api_version: String,
    /// `BastionConfig`.
    pub kind: String,
    /// Cluster name (optional; checked against install-config when set).
    #[serde(default)]
    pub metadata: Metadata,
    /// Address every service listens on, e.g. `192.168.120.101`.
    pub listen_address: IpAddr,
    /// Address `api` and `api-int` resolve to (a VIP or the bastion; default the listen address).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_address: Option<IpAddr>,
    /// Address `*.apps` resolves to (default the listen address).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ingress_address: Option<IpAddr>,
    /// Resolvers for names outside the cluster domain (`ip` or `ip:port`).
    #[serde(default)]
    pub upstream_resolvers: Vec<String>,
    /// The bootstrap host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bootstrap: Option<BootstrapHost>,
    /// Ports.
    #[serde(default)]
    pub ports: Ports,
    /// CoreOS artifacts.
    #[serde(default)]
    pub os_images: OsImages,
    /// Extra A records (`registry: 192.168.120.101`), relative to the cluster domain.
    #[serde(default)]
    pub extra_records: BTreeMap<String, IpAddr>,
}

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
                let bits: u32 = if self.prefix == 0 {
                    0
                } else {
                    u32::MAX << (32 - u32::from(self.prefix))
                };
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
}

impl Inventory {
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
        for (file, name) in [
            (AGENT_CONFIG_FILE, &agent.metadata.name),
            (BASTION_CONFIG_FILE, &bastion.metadata.name),
        ] {
            if !name.is_empty() && name != cluster_name {
                return Err(invalid(
                    file,
                    "metadata.name",
                    format!(
                        "{name:?} does not match the install-config cluster name {cluster_name:?}"
                    ),
                ));
            }
        }
        let mut nodes = Vec::new();
        if let Some(b) = &bastion.bootstrap {
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
            nodes.push(Node {
                hostname: short(&b.hostname, &cluster_domain),
                fqdn: format!("{}.{cluster_domain}", short(&b.hostname, &cluster_domain)),
                role: Role::Bootstrap,
                mac: match &b.mac_address {
                    Some(m) => Some(normalize_mac(m).ok_or_else(|| {
                        invalid(
                            f,
                            "bootstrap.macAddress",
                            format!("{m:?} is not a MAC address"),
                        )
                    })?),
                    None => None,
                },
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
            });
        }
        let mut masters = 0;
        for (i, h) in agent.hosts.iter().enumerate() {
            let f = AGENT_CONFIG_FILE;
            let at = |field: &str| format!("hosts[{i}].{field}");
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
            let (address, prefix, iface) = nmstate_address(net).ok_or_else(|| {
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
            let etcd_name = (role == Role::Master).then(|| {
                masters += 1;
                format!("etcd-{}", masters - 1)
            });
            let short_name = short(&hostname, &cluster_domain);
            nodes.push(Node {
                fqdn: format!("{short_name}.{cluster_domain}"),
                hostname: short_name,
                role,
                mac,
                interface: iface.or_else(|| nic.map(|n| n.name.clone())),
                address,
                prefix,
                gateway: nmstate_gateway(net).or(Some(bastion.listen_address)),
                nameservers: {
                    let d = nmstate_dns(net);
                    if d.is_empty() {
                        vec![bastion.listen_address]
                    } else {
                        d
                    }
                },
                install_disk: h
                    .root_device_hints
                    .as_ref()
                    .and_then(|r| r.device_name.clone())
                    .unwrap_or_else(|| "/dev/sda".into()),
                etcd_name,
            });
        }
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
        let upstreams = bastion
            .upstream_resolvers
            .iter()
            .enumerate()
            .map(|(i, u)| {
                u.parse::<std::net::SocketAddr>()
                    .or_else(|_| {
                        u.parse::<IpAddr>()
                            .map(|ip| std::net::SocketAddr::new(ip, 53))
                    })
                    .map_err(|_| {
                        invalid(
                            BASTION_CONFIG_FILE,
                            format!("upstreamResolvers[{i}]"),
                            format!("{u:?} is not an address or address:port"),
                        )
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        bootargs::check(&nodes, &bastion.os_images)?;
        records::check(&bastion.extra_records)?;
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
        })
    }
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

fn nmstate_address(net: &Value) -> Option<(IpAddr, u8, Option<String>)> {
    for iface in net.get("interfaces")?.as_array()? {
        for fam in ["ipv4", "ipv6"] {
            let Some(addrs) = iface
                .get(fam)
                .and_then(|v| v.get("address"))
                .and_then(Value::as_array)
            else {
                continue;
            };
            for a in addrs {
                let ip = a
                    .get("ip")
                    .and_then(Value::as_str)
                    .and_then(|s| s.parse::<IpAddr>().ok());
                let prefix = a.get("prefix-length").and_then(Value::as_u64);
                if let (Some(ip), Some(p)) = (ip, prefix) {
                    return Some((
                        ip,
                        p as u8,
                        iface.get("name").and_then(Value::as_str).map(String::from),
                    ));
                }
            }
        }
    }
    None
}

fn nmstate_gateway(net: &Value) -> Option<IpAddr> {
    net.pointer("/routes/config")?
        .as_array()?
        .iter()
        .find_map(|r| {
            let dest = r.get("destination").and_then(Value::as_str)?;
            if dest == "0.0.0.0/0" || dest == "::/0" {
                r.get("next-hop-address")
                    .and_then(Value::as_str)?
                    .parse()
                    .ok()
            } else {
                None
            }
        })
}

fn nmstate_dns(net: &Value) -> Vec<IpAddr> {
    net.pointer("/dns-resolver/config/server")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|s| s.as_str()?.parse().ok()).collect())
        .unwrap_or_default()
}

/// Parses `agent-config.yaml` (kind `AgentConfig`, apiVersion `v1beta1` or `v1alpha1`).
///
/// # Errors
/// [`HostsError::Parse`] with serde's line/column, [`HostsError::Invalid`] for a wrong kind or version.
pub fn parse_agent_config(bytes: &[u8]) -> Result<AgentConfig, HostsError> {
    let c: AgentConfig = serde_yaml_ng::from_slice(bytes).map_err(|e| HostsError::Parse {
        file: AGENT_CONFIG_FILE.into(),
        message: e.to_string(),
    })?;
    if c.kind != "AgentConfig" {
        return Err(invalid(
            AGENT_CONFIG_FILE,
            "kind",
            format!("must be AgentConfig, not {:?}", c.kind),
        ));
    }
    if c.api_version != "v1beta1" && c.api_version != "v1alpha1" {
        return Err(invalid(
            AGENT_CONFIG_FILE,
            "apiVersion",
            format!("must be v1beta1, not {:?}", c.api_version),
        ));
    }
    Ok(c)
}

/// Parses `bastion-config.yaml` (kind `BastionConfig`, apiVersion `v1alpha1`; unknown fields rejected).
///
/// # Errors
/// [`HostsError::Parse`] with serde's line/column, [`HostsError::Invalid`] for a wrong kind or version.
pub fn parse_bastion_config(bytes: &[u8]) -> Result<BastionConfig, HostsError> {
    let c: BastionConfig = serde_yaml_ng::from_slice(bytes).map_err(|e| HostsError::Parse {
        file: BASTION_CONFIG_FILE.into(),
        message: e.to_string(),
    })?;
    if c.kind != "BastionConfig" {
        return Err(invalid(
            BASTION_CONFIG_FILE,
            "kind",
            format!("must be BastionConfig, not {:?}", c.kind),
        ));
    }
    if c.api_version != "v1alpha1" {
        return Err(invalid(
            BASTION_CONFIG_FILE,
            "apiVersion",
            format!("must be v1alpha1, not {:?}", c.api_version),
        ));
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn example() -> Inventory {
        let root =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/baremetal-single-master");
        Inventory::load(&root, "okd", "example").unwrap()
    }

    #[test]
    fn single_master_example_resolves() {
        let inv = example();
        assert_eq!(inv.cluster_domain, "okd.example");
        assert_eq!(inv.api.to_string(), "192.168.120.101");
        let names: Vec<(&str, Role, String)> = inv
            .nodes
            .iter()
            .map(|n| (n.hostname.as_str(), n.role, n.address.to_string()))
            .collect();
        assert_eq!(
            names,
            vec![
                ("bootstrap", Role::Bootstrap, "192.168.120.102".into()),
                ("master", Role::Master, "192.168.120.103".into()),
                ("worker1", Role::Worker, "192.168.120.104".into()),
            ]
        );
        let m = &inv.nodes[1];
        assert_eq!(m.etcd_name.as_deref(), Some("etcd-0"));
        assert_eq!(m.netmask(), "255.255.255.0");
        assert_eq!(m.gateway.unwrap().to_string(), "192.168.120.101");
        assert_eq!(m.interface.as_deref(), Some("ens787f0"));
        assert_eq!(inv.nodes[2].interface.as_deref(), Some("ens786f1"));
        assert_eq!(m.install_disk, "/dev/sda");
        assert!(
            inv.by_mac(&m.mac.clone().unwrap().to_uppercase().replace(':', "-"))
                .is_some()
        );
    }

    #[test]
    fn rules_name_file_and_field() {
        let root =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/baremetal-single-master");
        let agent_text = std::fs::read_to_string(root.join(AGENT_CONFIG_FILE)).unwrap();
        let bastion =
            parse_bastion_config(&std::fs::read(root.join(BASTION_CONFIG_FILE)).unwrap()).unwrap();
        let mut agent = parse_agent_config(agent_text.as_bytes()).unwrap();
        agent.hosts[1].interfaces[0].mac_address = "zz".into();
        let e = Inventory::resolve(&agent, &bastion, "okd", "example")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("agent-config.yaml") && e.contains("hosts[1].interfaces[0].macAddress"),
            "{e}"
        );
        let mut agent = parse_agent_config(agent_text.as_bytes()).unwrap();
        agent.hosts[1].network_config = agent.hosts[0].network_config.clone();
        let e = Inventory::resolve(&agent, &bastion, "okd", "example")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("192.168.120.103 is used by master and worker1")
                || e.contains("is not in interfaces[]"),
            "{e}"
        );
        let e = Inventory::resolve(
            &parse_agent_config(agent_text.as_bytes()).unwrap(),
            &bastion,
            "other",
            "example",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("metadata.name"), "{e}");
        let e = parse_bastion_config(
            b"apiVersion: v1alpha1\nkind: BastionConfig\nlistenAddress: 1.2.3.4\nbogus: 1\n",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("bastion-config.yaml") && e.contains("bogus"),
            "{e}"
        );
    }
}
