//! `bastion-config.yaml`: okd-install's own settings for what agent-config
//! has no place for (listen address, API/ingress addresses, upstream
//! resolvers, the UPI bootstrap host, ports, OS images).

use std::collections::BTreeMap;
use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use crate::{BASTION_CONFIG_FILE, HostsError, Metadata, invalid};

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
    /// serve's status page, `/status` and `/metrics` (9000).
    #[serde(default = "p9000")]
    pub status: u16,
    /// The stats page of the HAProxy that `create bastion-configs` writes
    /// (9001): the helper node's guide puts HAProxy stats on 9000, which
    /// is serve's status page, and both run on one bastion when serve runs
    /// beside the user's HAProxy (`--services mcs,http,status`).
    #[serde(default = "p9001")]
    pub haproxy_stats: u16,
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
fn p9001() -> u16 {
    9001
}
fn p22625() -> u16 {
    22625
}

impl Ports {
    /// Every TCP port with its field path in `bastion-config.yaml`
    /// (`ports.api`, …): serve binds each on the listen address and the
    /// generated HAProxy binds its frontends on every address, so no two
    /// may be equal.
    pub fn tcp(&self) -> [(&'static str, u16); 9] {
        [
            ("ports.api", self.api),
            ("ports.machineConfig", self.machine_config),
            ("ports.http", self.http),
            ("ports.ingressHttp", self.ingress_http),
            ("ports.ingressHttps", self.ingress_https),
            ("ports.dns", self.dns),
            ("ports.status", self.status),
            ("ports.haproxyStats", self.haproxy_stats),
            ("ports.machineConfigServer", self.machine_config_server),
        ]
    }
}

/// No two of `ports` ([`Ports::tcp`]) are the same (0, any free port, may
/// repeat).
///
/// # Errors
/// [`HostsError::Invalid`] naming both fields.
pub(crate) fn check_ports(ports: &Ports) -> Result<(), HostsError> {
    let all = ports.tcp();
    for (i, (a, pa)) in all.iter().enumerate() {
        // 0 binds any free port (tests, and a service the user leaves to
        // the system): never a clash.
        if *pa == 0 {
            continue;
        }
        if let Some((b, _)) = all[i + 1..].iter().find(|(_, pb)| pb == pa) {
            return Err(crate::invalid(
                BASTION_CONFIG_FILE,
                *b,
                format!(
                    "port {pa} is also {a}: every port must be different (serve and the generated HAProxy bind them all)"
                ),
            ));
        }
    }
    Ok(())
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
            haproxy_stats: 9001,
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
    /// Client networks (CIDRs, e.g. `192.168.120.0/24`) whose DNS queries
    /// for names outside the cluster zones are forwarded; others get
    /// REFUSED. Default (absent): the networks of the hosts' addresses plus
    /// loopback ([`crate::Inventory::allow_recursion`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_recursion: Option<Vec<ipnet::IpNet>>,
}

/// Parses `bastion-config.yaml` (kind `BastionConfig`, apiVersion `v1alpha1`; unknown fields rejected).
///
/// # Errors
/// [`HostsError::Parse`] with serde's line/column, [`HostsError::Invalid`] for a wrong kind or version.
pub fn parse_bastion_config(bytes: &[u8]) -> Result<BastionConfig, HostsError> {
    let c: BastionConfig =
        serde_yaml_ng::from_slice(bytes).map_err(|source| HostsError::Parse {
            file: BASTION_CONFIG_FILE.into(),
            source,
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

/// `osImages.directory` is served over plain HTTP to anyone on the network,
/// so it must stay below the asset directory and away from its secrets: a
/// relative path with no `.`, `..` or `auth` component (and not empty).
pub(crate) fn check_images_dir(dir: &str) -> Result<(), HostsError> {
    let field = "osImages.directory";
    let bad = |why: &str| invalid(BASTION_CONFIG_FILE, field, format!("{dir:?} {why}"));
    if dir.is_empty() {
        return Err(bad(
            "is empty: name a subdirectory of the asset directory, e.g. images",
        ));
    }
    if dir.starts_with('/') {
        return Err(bad("must be relative to the asset directory"));
    }
    for part in dir.split('/') {
        if part == "." || part == ".." || part == "auth" || part.is_empty() {
            return Err(bad(
                "must not contain `.`, `..`, `auth` or empty components (the asset directory's secrets would be served)",
            ));
        }
    }
    Ok(())
}
