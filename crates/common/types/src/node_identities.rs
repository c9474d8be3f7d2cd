//! The nodes whose certificate signing requests the bootstrap node may
//! approve: `/opt/openshift/okd-node-identities.json` in bootstrap.ign,
//! written from the install's inventory (agent-config.yaml,
//! bastion-config.yaml) and read by `okd-install bootstrap approve-csr`.
//! openshift-install has no such file: its bootstrap approves every
//! pending CSR (`approve-csr.sh`).

use std::net::IpAddr;

use serde::{Deserialize, Serialize};

/// The file's name under the bootstrap's asset directory.
pub const NODE_IDENTITIES_FILE: &str = "okd-node-identities.json";

/// Where bootstrap.ign puts the file.
pub const NODE_IDENTITIES_PATH: &str = "/opt/openshift/okd-node-identities.json";

/// The file: `{"nodes": [{"names": [...], "addresses": [...]}, ...]}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeIdentities {
    /// The control-plane and compute hosts (never the bootstrap).
    pub nodes: Vec<NodeIdentity>,
}

/// One node: the names its kubelet may register as and the addresses its
/// serving certificate may name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeIdentity {
    /// Host name and FQDN, lower case.
    pub names: Vec<String>,
    /// Its addresses.
    pub addresses: Vec<IpAddr>,
    /// `true` for a control-plane host (the masters the bootstrap hands
    /// etcd and the control plane to); absent in files of older builds.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub master: bool,
}
