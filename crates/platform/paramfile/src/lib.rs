//! The kcli-style parameter file of `okd-install create cluster`
//! (`parameters.yml`): the keys karmab/kcli-openshift4 documents (its
//! `README.md`, "Create a parameters.yml", and the keys its `run.py` and
//! VM plans `masters.yml`/`workers.yml` read), each with the default that
//! project documents, and the checks made before anything is created.
//!
//! Unlike kcli, which merges the file over its defaults and ignores what it
//! does not know, a key that is not one of [`KEYS`] is an error naming it,
//! and so is a value of the wrong type: a typo (`worker_memmory`) must not
//! silently give a default.
//!
//! Sizes: memory in MiB, disks in GB (kcli's units).

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// Which OpenShift/OKD release stream the cluster installs (kcli-openshift4
/// `version`; `upstream` is OKD).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Version {
    /// Nightly builds (kcli-openshift4's default).
    #[default]
    Nightly,
    /// CI builds (need a CI pull secret).
    Ci,
    /// The stable channel.
    Stable,
    /// OKD.
    Upstream,
}

/// A parameter file, every key with its default filled in.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Parameters {
    /// `version`: the release stream. Default `nightly`.
    pub version: Version,
    /// `tag`: the release tag within the stream (e.g. `4.5`). Default none.
    pub tag: Option<String>,
    /// `cluster`: the cluster name, and the VM name prefix. Default `testk`.
    pub cluster: String,
    /// `domain`: the base domain. Default `karmalabs.com`.
    pub domain: String,
    /// `network_type`: `OpenShiftSDN` or `OVNKubernetes`. kcli-openshift4
    /// documents `OpenShiftSDN` as its default, which releases from 4.15 on
    /// refuse; when the file does not say, the install-config leaves it
    /// out and the release's own default applies (OVNKubernetes since 4.12).
    pub network_type: Option<String>,
    /// `pub_key`: the SSH public key file. Default `~/.ssh/id_rsa.pub`.
    pub pub_key: PathBuf,
    /// `keys`: more SSH public keys (their text). Default none.
    pub keys: Vec<String>,
    /// `pull_secret`: the pull secret file. Default `./openshift_pull.json`
    /// (not needed with `version: upstream`).
    pub pull_secret: PathBuf,
    /// `image`: the CoreOS disk image on the hypervisor. Default none.
    pub image: Option<String>,
    /// `helper_image`: the image of kcli's temporary helper VMs. Default
    /// `CentOS-7-x86_64-GenericCloud.qcow2` (okd-install needs no helper
    /// VM; the key is accepted for compatibility).
    pub helper_image: String,
    /// `helper_sleep`: seconds kcli waits for a helper VM. Default 15.
    pub helper_sleep: u32,
    /// `masters`: control-plane VMs. Default 1.
    pub masters: u32,
    /// `workers`: worker VMs. Default 0.
    pub workers: u32,
    /// `network`: the libvirt network of every VM. Default `default`.
    pub network: String,
    /// `extra_networks`: more libvirt networks, one NIC each. Default none.
    pub extra_networks: Vec<String>,
    /// `master_memory`, MiB. Default 8192.
    pub master_memory: u32,
    /// `worker_memory`, MiB. Default 8192.
    pub worker_memory: u32,
    /// `bootstrap_memory`, MiB. Default 4096.
    pub bootstrap_memory: u32,
    /// `numcpus`: vCPUs of every VM. Default 4.
    pub numcpus: u32,
    /// `bootstrap_numcpus`: vCPUs of the bootstrap VM. Default: `numcpus`.
    pub bootstrap_numcpus: Option<u32>,
    /// `disk_size`: each node's first disk, GB. Default 30.
    pub disk_size: u32,
    /// `extra_disk`: whether each node gets a second disk. Default false.
    pub extra_disk: bool,
    /// `extra_disks`: more disks per node, GB each. Default none.
    pub extra_disks: Vec<u32>,
    /// `api_ip`: the API VIP. Default none (kcli then looks for a free
    /// address with a temporary VM).
    pub api_ip: Option<IpAddr>,
    /// `ingress_ip`: the ingress VIP. Default none (the API VIP serves both).
    pub ingress_ip: Option<IpAddr>,
    /// `public_api_ip`: the API's public address (OpenStack floating IP).
    pub public_api_ip: Option<IpAddr>,
    /// `bootstrap_api_ip`: the bootstrap's own address for the API.
    pub bootstrap_api_ip: Option<IpAddr>,
    /// `bootstrap_mac`: the bootstrap VM's MAC. Default: generated.
    pub bootstrap_mac: Option<String>,
    /// `bootstrap_ip`: the bootstrap VM's address. Default: DHCP.
    pub bootstrap_ip: Option<IpAddr>,
    /// `bootstrap_helper_mac`: the helper VM's MAC (kcli).
    pub bootstrap_helper_mac: Option<String>,
    /// `bootstrap_helper_ip`: the helper VM's address (kcli).
    pub bootstrap_helper_ip: Option<IpAddr>,
    /// `master_macs`: the masters' MACs, in order. Default: generated.
    pub master_macs: Vec<String>,
    /// `worker_macs`: the workers' MACs, in order. Default: generated.
    pub worker_macs: Vec<String>,
    /// `dhcp_ip`: kcli's DHCP helper VM's address.
    pub dhcp_ip: Option<IpAddr>,
    /// `dhcp_netmask`: that helper's netmask.
    pub dhcp_netmask: Option<String>,
    /// `dhcp_gateway`: that helper's gateway.
    pub dhcp_gateway: Option<IpAddr>,
    /// `dhcp_dns`: that helper's DNS server.
    pub dhcp_dns: Option<IpAddr>,
    /// `autostart`: whether libvirt starts the VMs with the host. Default false.
    pub autostart: bool,
    /// `macosx`: kcli's macOS client mode (no /etc/hosts edits). Default false.
    pub macosx: bool,
    /// `numa`: NUMA settings for the workers (kcli plan syntax), kept as given.
    pub numa: Option<serde_yaml_ng::Value>,
    /// `numamode`: the workers' NUMA mode.
    pub numamode: Option<String>,
    /// `cpupinning`: the workers' CPU pinning (kcli plan syntax), kept as given.
    pub cpupinning: Option<serde_yaml_ng::Value>,
    /// `pcidevices`: PCI devices passed through to the first worker.
    pub pcidevices: Vec<String>,
    /// `ca`: more CA certificates to trust (PEM), the install-config's
    /// `additionalTrustBundle`.
    pub ca: Option<String>,
}

impl Default for Parameters {
    fn default() -> Parameters {
        Parameters {
            version: Version::Nightly,
            tag: None,
            cluster: "testk".into(),
            domain: "karmalabs.com".into(),
            network_type: None,
            pub_key: PathBuf::from("~/.ssh/id_rsa.pub"),
            keys: Vec::new(),
            pull_secret: PathBuf::from("./openshift_pull.json"),
            image: None,
            helper_image: "CentOS-7-x86_64-GenericCloud.qcow2".into(),
            helper_sleep: 15,
            masters: 1,
            workers: 0,
            network: "default".into(),
            extra_networks: Vec::new(),
            master_memory: 8192,
            worker_memory: 8192,
            bootstrap_memory: 4096,
            numcpus: 4,
            bootstrap_numcpus: None,
            disk_size: 30,
            extra_disk: false,
            extra_disks: Vec::new(),
            api_ip: None,
            ingress_ip: None,
            public_api_ip: None,
            bootstrap_api_ip: None,
            bootstrap_mac: None,
            bootstrap_ip: None,
            bootstrap_helper_mac: None,
            bootstrap_helper_ip: None,
            master_macs: Vec::new(),
            worker_macs: Vec::new(),
            dhcp_ip: None,
            dhcp_netmask: None,
            dhcp_gateway: None,
            dhcp_dns: None,
            autostart: false,
            macosx: false,
            numa: None,
            numamode: None,
            cpupinning: None,
            pcidevices: Vec::new(),
            ca: None,
        }
    }
}

/// Every key a parameter file may have, in the order of [`Parameters`].
pub const KEYS: &[&str] = &[
    "version",
    "tag",
    "cluster",
    "domain",
    "network_type",
    "pub_key",
    "keys",
    "pull_secret",
    "image",
    "helper_image",
    "helper_sleep",
    "masters",
    "workers",
    "network",
    "extra_networks",
    "master_memory",
    "worker_memory",
    "bootstrap_memory",
    "numcpus",
    "bootstrap_numcpus",
    "disk_size",
    "extra_disk",
    "extra_disks",
    "api_ip",
    "ingress_ip",
    "public_api_ip",
    "bootstrap_api_ip",
    "bootstrap_mac",
    "bootstrap_ip",
    "bootstrap_helper_mac",
    "bootstrap_helper_ip",
    "master_macs",
    "worker_macs",
    "dhcp_ip",
    "dhcp_netmask",
    "dhcp_gateway",
    "dhcp_dns",
    "autostart",
    "macosx",
    "numa",
    "numamode",
    "cpupinning",
    "pcidevices",
    "ca",
];

/// The network types a parameter file may name.
pub const NETWORK_TYPES: &[&str] = &["OpenShiftSDN", "OVNKubernetes"];

/// Why a parameter file was refused; each names the file.
#[derive(Debug, thiserror::Error)]
pub enum ParamError {
    /// The file cannot be read.
    #[error("{path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Not YAML, not a mapping, an unknown key, or a value of the wrong
    /// type (the YAML library's message, which names the key and the line).
    #[error("{path}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What is wrong, and where.
        message: String,
    },
    /// A value breaks a rule.
    #[error("{path}: {key}: {rule}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// The key.
        key: &'static str,
        /// The rule, with the value.
        rule: String,
    },
}

/// Reads and checks the parameter file at `path` ([`parse`]).
///
/// # Errors
/// [`ParamError`], naming the file, the key and the rule.
pub fn load(path: &Path) -> Result<Parameters, ParamError> {
    let text = std::fs::read_to_string(path).map_err(|source| ParamError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    parse(&text, path)
}

/// Reads the parameter file at `path` with kcli's `-P key=value`
/// overrides on top (they win over the file; each value is read as YAML,
/// so `workers=2` is a number and `extra_disks=[10]` a list), then
/// [`Parameters::check`].
///
/// # Errors
/// [`ParamError`]; an override without `=` or of an unknown key names the
/// override.
pub fn load_with_overrides(path: &Path, overrides: &[String]) -> Result<Parameters, ParamError> {
    if overrides.is_empty() {
        return load(path);
    }
    let text = std::fs::read_to_string(path).map_err(|source| ParamError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let bad = |message: String| ParamError::Parse {
        path: path.to_path_buf(),
        message,
    };
    let mut map = match serde_yaml_ng::from_str::<serde_yaml_ng::Value>(&text)
        .map_err(|e| bad(e.to_string()))?
    {
        serde_yaml_ng::Value::Null => serde_yaml_ng::Mapping::new(),
        serde_yaml_ng::Value::Mapping(m) => m,
        _ => {
            return Err(bad(
                "a parameter file is a YAML mapping of keys (e.g. `masters: 3`)".into(),
            ));
        }
    };
    for o in overrides {
        let Some((key, value)) = o.split_once('=') else {
            return Err(bad(format!("-P {o}: an override is key=value")));
        };
        if !KEYS.contains(&key) {
            return Err(bad(format!("-P {o}: unknown key {key:?}")));
        }
        let v: serde_yaml_ng::Value =
            serde_yaml_ng::from_str(value).map_err(|e| bad(format!("-P {o}: {e}")))?;
        map.insert(serde_yaml_ng::Value::String(key.to_string()), v);
    }
    let merged = serde_yaml_ng::to_string(&map).map_err(|e| bad(e.to_string()))?;
    parse(&merged, path).map_err(|e| match e {
        ParamError::Parse { path, message } => ParamError::Parse {
            path,
            message: format!("{message} (with the -P overrides {})", overrides.join(" ")),
        },
        other => other,
    })
}

/// Parses parameter file `text` (`path` names it in errors): YAML mapping
/// of [`KEYS`], missing keys take their defaults, an empty file is all
/// defaults; then [`Parameters::check`].
///
/// # Errors
/// [`ParamError::Parse`] for YAML, unknown keys and wrong types;
/// [`ParamError::Invalid`] for a value that breaks a rule.
pub fn parse(text: &str, path: &Path) -> Result<Parameters, ParamError> {
    let parse_err = |message: String| ParamError::Parse {
        path: path.to_path_buf(),
        message,
    };
    let value: serde_yaml_ng::Value =
        serde_yaml_ng::from_str(text).map_err(|e| parse_err(e.to_string()))?;
    let p = match value {
        serde_yaml_ng::Value::Null => Parameters::default(),
        serde_yaml_ng::Value::Mapping(_) => {
            serde_yaml_ng::from_str(text).map_err(|e| parse_err(e.to_string()))?
        }
        _ => {
            return Err(parse_err(
                "a parameter file is a YAML mapping of keys (e.g. `masters: 3`)".into(),
            ));
        }
    };
    p.check(path)?;
    Ok(p)
}

/// Whether `s` is a MAC address written as six two-digit hex pairs with
/// colons (`52:54:00:12:01:03`).
pub fn is_mac(s: &str) -> bool {
    let parts: Vec<&str> = s.split(':').collect();
    parts.len() == 6
        && parts
            .iter()
            .all(|p| p.len() == 2 && p.chars().all(|c| c.is_ascii_hexdigit()))
}

/// Whether `s` is a DNS label (RFC 1123: lowercase letters, digits and
/// `-`, not at either end, 1 to 63 characters).
fn is_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && !s.starts_with('-')
        && !s.ends_with('-')
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

impl Parameters {
    /// The rules a parameter file must keep before anything is created:
    /// `cluster` a DNS label short enough for `<cluster>-master-<n>` VM
    /// names, `domain` DNS labels, at least one master, a known
    /// `network_type`, sizes above zero, every MAC well formed and used
    /// once, no more MACs than VMs of their role, the ingress VIP apart
    /// from the API VIP and of the same family.
    ///
    /// # Errors
    /// [`ParamError::Invalid`] for the first rule broken, naming `path`
    /// and the key.
    pub fn check(&self, path: &Path) -> Result<(), ParamError> {
        let bad = |key: &'static str, rule: String| ParamError::Invalid {
            path: path.to_path_buf(),
            key,
            rule,
        };
        // kcli names VMs <cluster>-master-<n> and <cluster>-bootstrap; a
        // libvirt domain name has no fixed limit, but the node's host name
        // (a DNS label) does.
        if !is_label(&self.cluster) || self.cluster.len() > 63 - "-bootstrap".len() {
            return Err(bad(
                "cluster",
                format!(
                    "{:?} must be a DNS label (lowercase letters, digits, '-') of at most {} characters, so that <cluster>-bootstrap and <cluster>-master-N are host names",
                    self.cluster,
                    63 - "-bootstrap".len()
                ),
            ));
        }
        if self
            .domain
            .split('.')
            .any(|l| !is_label(&l.to_ascii_lowercase()))
        {
            return Err(bad(
                "domain",
                format!("{:?} must be DNS labels separated by dots", self.domain),
            ));
        }
        if self.masters == 0 {
            return Err(bad("masters", "at least one master is needed".into()));
        }
        if let Some(t) = &self.network_type
            && !NETWORK_TYPES.contains(&t.as_str())
        {
            return Err(bad(
                "network_type",
                format!("{:?} is not one of {}", t, NETWORK_TYPES.join(", ")),
            ));
        }
        for (key, v) in [
            ("master_memory", self.master_memory),
            ("worker_memory", self.worker_memory),
            ("bootstrap_memory", self.bootstrap_memory),
            ("numcpus", self.numcpus),
            ("disk_size", self.disk_size),
        ] {
            if v == 0 {
                return Err(bad(key, "must be more than 0".into()));
            }
        }
        if self.bootstrap_numcpus == Some(0) {
            return Err(bad("bootstrap_numcpus", "must be more than 0".into()));
        }
        if self.extra_disks.contains(&0) {
            return Err(bad(
                "extra_disks",
                "every disk needs a size above 0 GB".into(),
            ));
        }
        for (key, macs, count) in [
            ("master_macs", &self.master_macs, self.masters),
            ("worker_macs", &self.worker_macs, self.workers),
        ] {
            if macs.len() > count as usize {
                return Err(bad(
                    key,
                    format!(
                        "{} MACs for {count} VMs (the {} key)",
                        macs.len(),
                        if key == "master_macs" {
                            "masters"
                        } else {
                            "workers"
                        }
                    ),
                ));
            }
        }
        let mut seen: BTreeMap<String, &'static str> = BTreeMap::new();
        let all = self
            .master_macs
            .iter()
            .map(|m| ("master_macs", m))
            .chain(self.worker_macs.iter().map(|m| ("worker_macs", m)))
            .chain(self.bootstrap_mac.iter().map(|m| ("bootstrap_mac", m)))
            .chain(
                self.bootstrap_helper_mac
                    .iter()
                    .map(|m| ("bootstrap_helper_mac", m)),
            );
        for (key, mac) in all {
            if !is_mac(mac) {
                return Err(bad(
                    key,
                    format!("{mac:?} is not a MAC address (six hex pairs with colons)"),
                ));
            }
            if let Some(first) = seen.insert(mac.to_ascii_lowercase(), key) {
                return Err(bad(key, format!("{mac} is given twice (also in {first})")));
            }
        }
        if let (Some(api), Some(ingress)) = (self.api_ip, self.ingress_ip)
            && api.is_ipv4() != ingress.is_ipv4()
        {
            return Err(bad(
                "ingress_ip",
                format!("{ingress} and api_ip {api} are of different IP families"),
            ));
        }
        Ok(())
    }

    /// The keys this file sets that okd-install accepts for kcli
    /// compatibility but does not act on, each with the reason: kcli's
    /// helper VMs (`helper_image`, `helper_sleep`, `bootstrap_helper_*`,
    /// `dhcp_*`: no helper VM is needed), cloud-only addresses
    /// (`public_api_ip`, `bootstrap_api_ip`), host tuning not applied to
    /// the domain XML (`numa`, `numamode`, `cpupinning`, `pcidevices`),
    /// `macosx`, and `tag`/`version` beyond the pull secret (the release is
    /// `--release-image`). Only keys whose value differs from the default
    /// are named.
    pub fn ignored_keys(&self) -> Vec<(&'static str, &'static str)> {
        let d = Parameters::default();
        let mut out = Vec::new();
        let helper = "okd-install needs no helper VM";
        for (key, set) in [
            ("helper_image", self.helper_image != d.helper_image),
            ("helper_sleep", self.helper_sleep != d.helper_sleep),
            ("bootstrap_helper_mac", self.bootstrap_helper_mac.is_some()),
            ("bootstrap_helper_ip", self.bootstrap_helper_ip.is_some()),
            ("dhcp_ip", self.dhcp_ip.is_some()),
            ("dhcp_netmask", self.dhcp_netmask.is_some()),
            ("dhcp_gateway", self.dhcp_gateway.is_some()),
            ("dhcp_dns", self.dhcp_dns.is_some()),
        ] {
            if set {
                out.push((key, helper));
            }
        }
        let cloud = "a cloud provider's address; libvirt VMs use api_ip";
        if self.public_api_ip.is_some() {
            out.push(("public_api_ip", cloud));
        }
        if self.bootstrap_api_ip.is_some() {
            out.push(("bootstrap_api_ip", cloud));
        }
        let tuning = "not applied to the domain XML yet";
        for (key, set) in [
            ("numa", self.numa.is_some()),
            ("numamode", self.numamode.is_some()),
            ("cpupinning", self.cpupinning.is_some()),
            ("pcidevices", !self.pcidevices.is_empty()),
        ] {
            if set {
                out.push((key, tuning));
            }
        }
        if self.macosx {
            out.push(("macosx", "okd-install edits no /etc/hosts anyway"));
        }
        if self.tag.is_some() {
            out.push(("tag", "the release is --release-image, not a download"));
        }
        out
    }

    /// The bootstrap VM's vCPUs: `bootstrap_numcpus`, else `numcpus`.
    pub fn bootstrap_cpus(&self) -> u32 {
        self.bootstrap_numcpus.unwrap_or(self.numcpus)
    }
}

/// A VM's role in the cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The temporary bootstrap VM.
    Bootstrap,
    /// A control-plane VM.
    Master,
    /// A worker VM.
    Worker,
}

/// One VM of the cluster as the parameter file describes it (kcli-openshift4
/// `masters.yml`, `workers.yml` and the bootstrap in `run.py`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Vm {
    /// `<cluster>-bootstrap`, `<cluster>-master-<n>`, `<cluster>-worker-<n>`
    /// (n from 0), also its host name.
    pub name: String,
    /// Its role.
    pub role: Role,
    /// Memory, MiB.
    pub memory_mib: u32,
    /// vCPUs.
    pub cpus: u32,
    /// Disk sizes, GB: `disk_size`, then `extra_disks` (masters and
    /// workers), or one more of `disk_size` with `extra_disk: true` and no
    /// `extra_disks`.
    pub disks_gb: Vec<u32>,
    /// The first NIC's network (`network`), then `extra_networks`.
    pub networks: Vec<String>,
    /// The first NIC's MAC: the one the file gives for this VM, else
    /// [`generated_mac`].
    pub mac: String,
}

/// A stable MAC for VM `name` in the locally administered qemu range
/// `52:54:00:xx:xx:xx`, from an FNV-1a hash of the name: the same VM gets
/// the same MAC on every run (kcli draws `00:16:3e` MACs at random, so a
/// re-run or a scale cannot find them again).
pub fn generated_mac(name: &str) -> String {
    let h = fnv1a(name.as_bytes());
    format!(
        "52:54:00:{:02x}:{:02x}:{:02x}",
        (h >> 16) & 0xff,
        (h >> 8) & 0xff,
        h & 0xff
    )
}

fn fnv1a(data: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in data {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The VRRP `virtual_router_id` of the cluster's API VIP (the ingress VIP
/// uses the next one): 1 to 253 from an FNV-1a hash of `<cluster>.<domain>`.
/// kcli computes `hash(cluster) % 254 + 1` with Python's per-process salted
/// string hash, so the id changes between runs unless saved; this one is
/// the same on every run and machine.
pub fn virtual_router_id(cluster: &str, domain: &str) -> u8 {
    (fnv1a(format!("{cluster}.{domain}").as_bytes()) % 253) as u8 + 1
}

impl Parameters {
    /// The VMs the file describes, bootstrap first, then masters and
    /// workers in order.
    ///
    /// # Errors
    /// [`ParamError::Invalid`] (naming `path`) when a generated MAC
    /// collides with another VM's MAC (given or generated); give that VM's
    /// MAC in the file then.
    pub fn vms(&self, path: &Path) -> Result<Vec<Vm>, ParamError> {
        let mut disks = vec![self.disk_size];
        if !self.extra_disks.is_empty() {
            disks.extend(&self.extra_disks);
        } else if self.extra_disk {
            disks.push(self.disk_size);
        }
        let mut networks = vec![self.network.clone()];
        networks.extend(self.extra_networks.iter().cloned());
        let mut vms = vec![Vm {
            name: format!("{}-bootstrap", self.cluster),
            role: Role::Bootstrap,
            memory_mib: self.bootstrap_memory,
            cpus: self.bootstrap_cpus(),
            disks_gb: vec![self.disk_size],
            networks: vec![self.network.clone()],
            mac: String::new(),
        }];
        vms[0].mac = self
            .bootstrap_mac
            .clone()
            .unwrap_or_else(|| generated_mac(&vms[0].name));
        for (role, count, memory, macs, word) in [
            (
                Role::Master,
                self.masters,
                self.master_memory,
                &self.master_macs,
                "master",
            ),
            (
                Role::Worker,
                self.workers,
                self.worker_memory,
                &self.worker_macs,
                "worker",
            ),
        ] {
            for i in 0..count as usize {
                let name = format!("{}-{word}-{i}", self.cluster);
                let mac = macs.get(i).cloned().unwrap_or_else(|| generated_mac(&name));
                vms.push(Vm {
                    name,
                    role,
                    memory_mib: memory,
                    cpus: self.numcpus,
                    disks_gb: disks.clone(),
                    networks: networks.clone(),
                    mac,
                });
            }
        }
        let mut seen: BTreeMap<String, &str> = BTreeMap::new();
        for vm in &vms {
            if let Some(other) = seen.insert(vm.mac.to_ascii_lowercase(), &vm.name) {
                return Err(ParamError::Invalid {
                    path: path.to_path_buf(),
                    key: match vm.role {
                        Role::Bootstrap => "bootstrap_mac",
                        Role::Master => "master_macs",
                        Role::Worker => "worker_macs",
                    },
                    rule: format!(
                        "{} would get MAC {}, which {other} has; give its MAC in the file",
                        vm.name, vm.mac
                    ),
                });
            }
        }
        Ok(vms)
    }
}

#[cfg(test)]
mod tests {

    use super::*;

    fn p(text: &str) -> Result<Parameters, ParamError> {
        parse(text, Path::new("parameters.yml"))
    }

    #[test]
    fn keys_without_effect_are_named() {
        assert!(p("masters: 1\n").unwrap().ignored_keys().is_empty());
        let set = p("numa: {cores: 2}\nhelper_sleep: 30\ndhcp_ip: 10.0.0.2\ntag: '4.5'\n").unwrap();
        let keys: Vec<&str> = set.ignored_keys().iter().map(|(k, _)| *k).collect();
        assert_eq!(keys, ["helper_sleep", "dhcp_ip", "numa", "tag"]);
    }

    #[test]
    fn an_empty_file_is_every_default() {
        let d = p("").unwrap();
        assert_eq!(d, Parameters::default());
        assert_eq!(d.cluster, "testk");
        assert_eq!((d.masters, d.workers), (1, 0));
        assert_eq!(d.version, Version::Nightly);
        assert_eq!(d.bootstrap_cpus(), 4);
        assert_eq!(p("# only a comment\n").unwrap(), d);
    }

    #[test]
    fn every_key_is_accepted_and_an_unknown_one_is_named() {
        // Each documented key with a value of its type.
        let all = "version: upstream\ntag: '4.5'\ncluster: c\ndomain: d.example\nnetwork_type: OVNKubernetes\npub_key: k.pub\nkeys: [ssh-ed25519 AAAA]\npull_secret: ps.json\nimage: img.qcow2\nhelper_image: h.qcow2\nhelper_sleep: 5\nmasters: 3\nworkers: 2\nnetwork: n\nextra_networks: [n2]\nmaster_memory: 1\nworker_memory: 1\nbootstrap_memory: 1\nnumcpus: 1\nbootstrap_numcpus: 2\ndisk_size: 1\nextra_disk: true\nextra_disks: [10]\napi_ip: 10.0.0.5\ningress_ip: 10.0.0.6\npublic_api_ip: 1.2.3.4\nbootstrap_api_ip: 10.0.0.7\nbootstrap_mac: 52:54:00:00:00:01\nbootstrap_ip: 10.0.0.8\nbootstrap_helper_mac: 52:54:00:00:00:02\nbootstrap_helper_ip: 10.0.0.9\nmaster_macs: ['52:54:00:00:01:01']\nworker_macs: ['52:54:00:00:02:01']\ndhcp_ip: 10.0.0.2\ndhcp_netmask: 255.255.255.0\ndhcp_gateway: 10.0.0.1\ndhcp_dns: 10.0.0.1\nautostart: true\nmacosx: false\nnuma: {cores: 2}\nnumamode: strict\ncpupinning: {vcpu: 0}\npcidevices: ['0000:00:1f.0']\nca: cert\n";
        let given: Vec<&str> = all.lines().map(|l| l.split(':').next().unwrap()).collect();
        assert_eq!(given, KEYS, "the test covers every key, in order");
        let v = p(all).unwrap();
        assert_eq!(v.version, Version::Upstream);
        assert_eq!(v.bootstrap_cpus(), 2);
        assert_eq!(v.api_ip, Some("10.0.0.5".parse().unwrap()));
        let e = p("masters: 3\nworker_memmory: 4096\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("parameters.yml: ") && e.contains("unknown field `worker_memmory`"),
            "{e}"
        );
        assert!(e.contains("line 2"), "{e}");
    }

    #[test]
    fn wrong_types_and_broken_rules_are_named() {
        for (text, key, said) in [
            ("masters: three\n", "masters", "invalid type"),
            ("api_ip: 10.0.0\n", "api_ip", "invalid IP address"),
            ("version: latest\n", "version", "unknown variant `latest`"),
            ("- a\n- b\n", "", "YAML mapping"),
        ] {
            let e = p(text).unwrap_err().to_string();
            assert!(e.contains(said) && e.contains(key), "{text}: {e}");
        }
        for (text, said) in [
            (
                "cluster: Test_K\n",
                "cluster: \"Test_K\" must be a DNS label",
            ),
            ("masters: 0\n", "masters: at least one master"),
            (
                "network_type: Calico\n",
                "network_type: \"Calico\" is not one of",
            ),
            ("worker_memory: 0\n", "worker_memory: must be more than 0"),
            (
                "masters: 1\nmaster_macs: ['52:54:00:00:00:01', '52:54:00:00:00:02']\n",
                "master_macs: 2 MACs for 1 VMs",
            ),
            (
                "workers: 1\nworker_macs: ['52:54:00:00:00:0g']\n",
                "worker_macs: \"52:54:00:00:00:0g\" is not a MAC address",
            ),
            (
                "workers: 1\nmaster_macs: ['52:54:00:00:00:01']\nworker_macs: ['52:54:00:00:00:01']\n",
                "worker_macs: 52:54:00:00:00:01 is given twice (also in master_macs)",
            ),
            (
                "api_ip: 10.0.0.5\ningress_ip: fd00::5\n",
                "ingress_ip: fd00::5 and api_ip 10.0.0.5 are of different IP families",
            ),
            ("extra_disks: [0]\n", "extra_disks: every disk needs a size"),
        ] {
            let e = p(text).unwrap_err().to_string();
            assert!(
                e.starts_with(&format!("parameters.yml: {said}")),
                "{text}: {e}"
            );
        }
    }

    #[test]
    fn the_vms_follow_the_file_and_keep_their_macs_across_runs() {
        let v = p("cluster: c1\nmasters: 3\nworkers: 2\nmaster_memory: 16384\nextra_disks: [10, 20]\nextra_networks: [storage]\nmaster_macs: ['52:54:00:aa:00:01']\n")
            .unwrap();
        let vms = v.vms(Path::new("parameters.yml")).unwrap();
        let names: Vec<&str> = vms.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "c1-bootstrap",
                "c1-master-0",
                "c1-master-1",
                "c1-master-2",
                "c1-worker-0",
                "c1-worker-1"
            ]
        );
        assert_eq!(vms[0].role, Role::Bootstrap);
        assert_eq!((vms[0].memory_mib, vms[0].cpus), (4096, 4));
        assert_eq!(vms[0].disks_gb, [30], "the bootstrap gets no extra disks");
        assert_eq!(vms[1].memory_mib, 16384);
        assert_eq!(vms[1].disks_gb, [30, 10, 20]);
        assert_eq!(vms[1].networks, ["default", "storage"]);
        assert_eq!(vms[1].mac, "52:54:00:aa:00:01", "a given MAC");
        assert_eq!(vms[4].memory_mib, 8192);
        // Generated MACs: qemu's range, stable, all different.
        assert_eq!(vms[2].mac, generated_mac("c1-master-1"));
        assert!(
            vms.iter()
                .all(|m| is_mac(&m.mac) && m.mac.starts_with("52:54:00:"))
        );
        assert_eq!(v.vms(Path::new("parameters.yml")).unwrap(), vms);
        let mut macs: Vec<&str> = vms.iter().map(|m| m.mac.as_str()).collect();
        macs.sort_unstable();
        macs.dedup();
        assert_eq!(macs.len(), vms.len());
        // extra_disk without extra_disks: a second disk of disk_size.
        let v = p("extra_disk: true\n").unwrap();
        assert_eq!(v.vms(Path::new("p")).unwrap()[1].disks_gb, [30, 30]);
    }

    #[test]
    fn a_given_mac_that_a_generated_one_repeats_is_refused_by_name() {
        let taken = generated_mac("c1-master-1");
        let v = p(&format!(
            "cluster: c1\nmasters: 2\nworkers: 1\nworker_macs: ['{taken}']\n"
        ))
        .unwrap();
        let e = v.vms(Path::new("parameters.yml")).unwrap_err().to_string();
        assert!(
            e.contains("c1-worker-0") || e.contains("c1-master-1"),
            "{e}"
        );
        assert!(
            e.contains(&taken) && e.contains("give its MAC in the file"),
            "{e}"
        );
    }

    #[test]
    fn the_virtual_router_id_is_stable_and_in_range() {
        let a = virtual_router_id("testk", "karmalabs.com");
        assert_eq!(a, virtual_router_id("testk", "karmalabs.com"));
        assert!((1..=253).contains(&a));
        let ids: std::collections::BTreeSet<u8> = (0..200)
            .map(|i| virtual_router_id(&format!("c{i}"), "example.com"))
            .collect();
        assert!(ids.len() > 100, "spread over the range: {} ids", ids.len());
        assert!(ids.iter().all(|i| (1..=253).contains(i)));
    }

    #[test]
    fn a_missing_file_is_named() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("nope.yml");
        let e = load(&f).unwrap_err().to_string();
        assert!(e.contains("nope.yml"), "{e}");
    }
}
