//! `agent-config.yaml`: openshift-install's agent-flow host list
//! (openshift/installer `pkg/types/agent/agent_config_type.go`),
//! read unchanged so the same file works with `openshift-install agent`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{AGENT_CONFIG_FILE, HostsError, Metadata, invalid};

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

/// Parses `agent-config.yaml` (kind `AgentConfig`, apiVersion `v1beta1` or `v1alpha1`).
///
/// # Errors
/// [`HostsError::Parse`] with serde's line/column, [`HostsError::Invalid`] for a wrong kind or version.
pub fn parse_agent_config(bytes: &[u8]) -> Result<AgentConfig, HostsError> {
    let c: AgentConfig = serde_yaml_ng::from_slice(bytes).map_err(|source| HostsError::Parse {
        file: AGENT_CONFIG_FILE.into(),
        source,
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
