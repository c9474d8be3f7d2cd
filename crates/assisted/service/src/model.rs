//! What the service keeps beside the rows' columns (a cluster's and an
//! infra-env's settings as JSON), and the rows as API documents.

use okd_assisted_api::rest::{self, Cidr, ClusterNetwork, Vip};
use serde::{Deserialize, Serialize};

use crate::db::{ClusterRow, EventRow, HostRow, InfraEnvRow};

/// A cluster's settings with the defaults filled in (stored as the
/// `params` column).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClusterParams {
    /// `major.minor`.
    pub openshift_version: String,
    /// The base domain (`''`: not set yet).
    #[serde(default)]
    pub base_dns_domain: String,
    /// Masters.
    pub control_plane_count: u8,
    /// Pod networks.
    pub cluster_networks: Vec<ClusterNetwork>,
    /// Service networks.
    pub service_networks: Vec<Cidr>,
    /// Machine networks the user gave (empty: taken from the API VIP).
    #[serde(default)]
    pub machine_networks: Vec<Cidr>,
    /// API VIPs.
    #[serde(default)]
    pub api_vips: Vec<Vip>,
    /// Ingress VIPs.
    #[serde(default)]
    pub ingress_vips: Vec<Vip>,
    /// `OVNKubernetes` or `OpenShiftSDN`.
    pub network_type: String,
    /// The `core` user's key.
    #[serde(default)]
    pub ssh_public_key: String,
    /// Extra NTP sources, comma-separated.
    #[serde(default)]
    pub additional_ntp_source: String,
    /// `x86_64`.
    pub cpu_architecture: String,
}

/// An infra-env's settings (stored as the `params` column).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct InfraEnvParams {
    /// `major.minor` (may be empty).
    #[serde(default)]
    pub openshift_version: String,
    /// `x86_64`.
    pub cpu_architecture: String,
    /// `full-iso` or `minimal-iso`.
    pub image_type: String,
    /// The discovery image's key.
    #[serde(default)]
    pub ssh_authorized_key: String,
    /// Extra NTP sources.
    #[serde(default)]
    pub additional_ntp_sources: String,
}

/// A step handed to a host and not answered yet (the `steps` column).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outstanding {
    /// `<type>-<8 hex>`.
    pub step_id: String,
    /// The step's type.
    pub step_type: String,
    /// Unix ms when handed out.
    pub issued_at: i64,
}

/// Unix milliseconds as RFC 3339 text (UTC), `''` for 0.
pub fn rfc3339(ms: i64) -> String {
    if ms == 0 {
        return String::new();
    }
    let t = time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    t.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

/// The stored settings of a cluster row (a row written by this version
/// always parses; a damaged one gives the defaults of a new cluster).
pub fn cluster_params(c: &ClusterRow) -> ClusterParams {
    serde_json::from_str(&c.params).unwrap_or_else(|_| defaults("", None))
}

/// The defaults assisted-service gives a new cluster: 3 masters, pod
/// network `10.128.0.0/14` with host prefix 23, service network
/// `172.30.0.0/16`, OVNKubernetes, x86_64.
pub fn defaults(version: &str, base: Option<&ClusterParams>) -> ClusterParams {
    base.cloned().unwrap_or(ClusterParams {
        openshift_version: version.to_string(),
        base_dns_domain: String::new(),
        control_plane_count: 3,
        cluster_networks: vec![ClusterNetwork {
            cidr: "10.128.0.0/14".into(),
            host_prefix: 23,
        }],
        service_networks: vec![Cidr {
            cidr: "172.30.0.0/16".into(),
        }],
        machine_networks: vec![],
        api_vips: vec![],
        ingress_vips: vec![],
        network_type: "OVNKubernetes".into(),
        ssh_public_key: String::new(),
        additional_ntp_source: String::new(),
        cpu_architecture: "x86_64".into(),
    })
}

/// A host row as the API's `host`.
pub fn host_doc(h: &HostRow) -> rest::Host {
    let path = okd_assisted_api::rest::BASE_PATH;
    rest::Host {
        id: h.id.clone(),
        href: format!("{path}/infra-envs/{}/hosts/{}", h.infra_env_id, h.id),
        kind: "Host".into(),
        infra_env_id: h.infra_env_id.clone(),
        cluster_id: h.cluster_id.clone(),
        status: h.status.clone(),
        status_info: h.status_info.clone(),
        status_updated_at: rfc3339(h.status_updated_at),
        validations_info: h.validations_info.clone(),
        inventory: h.inventory.clone(),
        role: h.role.clone(),
        suggested_role: h.suggested_role.clone(),
        bootstrap: h.bootstrap,
        requested_hostname: h.requested_hostname.clone(),
        installation_disk_id: h.installation_disk_id.clone(),
        installation_disk_path: h.installation_disk_path.clone(),
        ntp_sources: h.ntp_sources.clone(),
        connectivity: h.connectivity.clone(),
        domain_name_resolutions: h.domain_name_resolutions.clone(),
        free_addresses: h.free_addresses.clone(),
        disks_info: disks_info(&h.disk_speed),
        progress: rest::HostProgress {
            current_stage: h.progress_stage.clone(),
            progress_info: h.progress_info.clone(),
            installation_percentage: 0,
            stage_started_at: rfc3339(h.progress_stage_started_at),
        },
        checked_in_at: rfc3339(h.checked_in_at),
        logs_collected_at: rfc3339(h.logs_collected_at),
        registered_at: rfc3339(h.registered_at),
        timestamp: h.host_timestamp,
        discovery_agent_version: h.agent_version.clone(),
        created_at: rfc3339(h.created_at),
        updated_at: rfc3339(h.updated_at),
    }
}

/// A host's installation disk as its `installation_disk_id` and
/// `installation_disk_path` columns: the disk's inventory `id` (its
/// by-id path when it has one, as assisted-service's
/// `internal/common/disks_info.go` `GetDeviceIdentifier` gives) and its
/// device `path` (`/dev/sda`); both `''` for none.
pub fn installation_disk_columns(d: Option<&okd_assisted_api::Disk>) -> (String, String) {
    d.map_or_else(Default::default, |d| (d.id.clone(), d.path.clone()))
}

/// A cluster row and its hosts as the API's `cluster`; `machine_networks`
/// is what the monitor uses (given, or derived).
pub fn cluster_doc(
    c: &ClusterRow,
    hosts: &[HostRow],
    machine_networks: Vec<Cidr>,
) -> rest::Cluster {
    let p = cluster_params(c);
    let docs: Vec<rest::Host> = hosts.iter().map(host_doc).collect();
    let count = |pred: &dyn Fn(&HostRow) -> bool| -> u32 {
        u32::try_from(hosts.iter().filter(|h| pred(h)).count()).unwrap_or(u32::MAX)
    };
    rest::Cluster {
        id: c.id.clone(),
        href: format!("{}/clusters/{}", rest::BASE_PATH, c.id),
        kind: "Cluster".into(),
        name: c.name.clone(),
        openshift_version: p.openshift_version,
        base_dns_domain: p.base_dns_domain,
        status: c.status.clone(),
        status_info: c.status_info.clone(),
        status_updated_at: rfc3339(c.status_updated_at),
        validations_info: c.validations_info.clone(),
        control_plane_count: p.control_plane_count,
        cluster_networks: p.cluster_networks,
        service_networks: p.service_networks,
        machine_networks,
        api_vips: p.api_vips,
        ingress_vips: p.ingress_vips,
        network_type: p.network_type,
        ssh_public_key: p.ssh_public_key,
        additional_ntp_source: p.additional_ntp_source,
        cpu_architecture: p.cpu_architecture,
        pull_secret_set: !c.pull_secret.is_empty(),
        hosts: docs,
        total_host_count: count(&|_| true),
        ready_host_count: count(&|h| h.status == "known"),
        enabled_host_count: count(&|h| h.status != "disabled"),
        created_at: rfc3339(c.created_at),
        updated_at: rfc3339(c.updated_at),
        install_started_at: rfc3339(c.install_started_at),
    }
}

/// An infra-env row as the API's `infra-env`.
pub fn infra_env_doc(e: &InfraEnvRow) -> rest::InfraEnv {
    let p: InfraEnvParams = serde_json::from_str(&e.params).unwrap_or_default();
    rest::InfraEnv {
        id: e.id.clone(),
        href: format!("{}/infra-envs/{}", rest::BASE_PATH, e.id),
        kind: "InfraEnv".into(),
        name: e.name.clone(),
        cluster_id: e.cluster_id.clone(),
        openshift_version: p.openshift_version,
        cpu_architecture: p.cpu_architecture,
        r#type: p.image_type,
        ssh_authorized_key: p.ssh_authorized_key,
        additional_ntp_sources: p.additional_ntp_sources,
        pull_secret_set: !e.pull_secret.is_empty(),
        created_at: rfc3339(e.created_at),
        updated_at: rfc3339(e.updated_at),
    }
}

/// An event row as the API's `event`.
pub fn event_doc(e: &EventRow) -> rest::Event {
    rest::Event {
        cluster_id: e.cluster_id.clone(),
        host_id: e.host_id.clone(),
        infra_env_id: e.infra_env_id.clone(),
        severity: e.severity.clone(),
        category: e.category.clone(),
        name: e.name.clone(),
        message: e.message.clone(),
        event_time: rfc3339(e.event_time),
    }
}

/// The host document's `disks_info` from the stored
/// `installation-disk-speed-check` output (`''` when none).
pub fn disks_info(disk_speed: &str) -> String {
    match serde_json::from_str::<okd_assisted_api::steps::DiskSpeedCheckResponse>(disk_speed) {
        Ok(r) => serde_json::json!({
            r.path.clone(): {
                "path": r.path,
                "disk_speed": {"tested": true, "speed_ms": r.io_sync_duration, "exit_code": 0}
            }
        })
        .to_string(),
        Err(_) => String::new(),
    }
}
