//! `vm-cluster.json` in the asset directory: what `create cluster` made, so
//! that `scale` and `destroy cluster` find it again (kcli keeps
//! `~/.kcli/clusters/<cluster>/kcli_parameters.yml` for the same reason).
//! Written atomically after every step, mode 0600 (it holds the VRRP
//! password).

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::ClusterError;

/// The record's file name in the asset directory.
pub const STATE_FILE: &str = "vm-cluster.json";

/// The record of one VM cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterState {
    /// The libvirt connection URI the VMs were made through.
    pub uri: String,
    /// The storage pool of their volumes.
    pub pool: String,
    /// The first network (the DHCP reservations').
    pub network: String,
    /// The parameter file they were made from.
    pub param_file: PathBuf,
    /// The `-P key=value` overrides given with it.
    #[serde(default)]
    pub overrides: Vec<String>,
    /// The domain type (`kvm`, `qemu`).
    pub domain_type: String,
    /// The cluster name.
    pub cluster: String,
    /// The base domain.
    pub domain: String,
    /// The API VIP.
    pub api_vip: IpAddr,
    /// The ingress VIP.
    pub ingress_vip: IpAddr,
    /// The network's prefix length.
    pub prefix: u8,
    /// The network's resolver.
    pub gateway: IpAddr,
    /// keepalived's API `virtual_router_id` (the ingress VIP's is the next).
    pub virtual_router_id: u8,
    /// keepalived's VRRP password.
    pub auth_pass: String,
    /// The network's DNS entries made for the cluster (`api` and `api-int`
    /// at the API VIP), so a node's Ignition resolves api-int in the
    /// initramfs, before the layer's CoreDNS runs.
    #[serde(default)]
    pub dns_hosts: Vec<okd_libvirt::DnsHost>,
    /// The VMs, in the order they were made.
    pub vms: Vec<VmRecord>,
}

/// What was made for one VM; each flag is set once that part exists.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VmRecord {
    /// The domain's name.
    pub name: String,
    /// `bootstrap`, `master` or `worker`.
    pub role: String,
    /// The first NIC's MAC.
    pub mac: String,
    /// Its DHCP reservation's address.
    pub ip: IpAddr,
    /// The reservation exists.
    pub reserved: bool,
    /// Its entry in the network's DNS (`<name>.<cluster>.<domain>`, and
    /// `workers.<cluster>.<domain>` for a worker), once made.
    #[serde(default)]
    pub dns: Option<okd_libvirt::DnsHost>,
    /// The volumes made for it, in the pool.
    pub volumes: Vec<String>,
    /// Its Ignition config file.
    pub ignition: Option<PathBuf>,
    /// Its side disk image (files too large for fw_cfg), if it has one.
    #[serde(default)]
    pub side_disk: Option<PathBuf>,
    /// The domain is defined.
    pub defined: bool,
}

impl ClusterState {
    /// The record's path in `dir`.
    pub fn path(dir: &Path) -> PathBuf {
        dir.join(STATE_FILE)
    }

    /// Reads the record of `dir`; `Ok(None)` when there is none.
    ///
    /// # Errors
    /// [`ClusterError::File`] when it cannot be read or parsed.
    pub fn read(dir: &Path) -> Result<Option<ClusterState>, ClusterError> {
        let path = Self::path(dir);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => {
                return Err(ClusterError::File {
                    path,
                    message: e.to_string(),
                });
            }
        };
        serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| ClusterError::File {
                path,
                message: format!("not a record of okd-install create cluster: {e}"),
            })
    }

    /// Writes the record into `dir` atomically, mode 0600.
    ///
    /// # Errors
    /// [`ClusterError::File`].
    pub fn write(&self, dir: &Path) -> Result<(), ClusterError> {
        let path = Self::path(dir);
        let text = serde_json::to_string_pretty(self).expect("the record serializes");
        okd_fs::write_atomic(&path, text.as_bytes(), 0o600).map_err(|e| ClusterError::File {
            path,
            message: e.to_string(),
        })
    }

    /// Removes the record of `dir` (absent is fine).
    ///
    /// # Errors
    /// [`ClusterError::File`].
    pub fn remove(dir: &Path) -> Result<(), ClusterError> {
        let path = Self::path(dir);
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(ClusterError::File {
                path,
                message: e.to_string(),
            }),
        }
    }
}
