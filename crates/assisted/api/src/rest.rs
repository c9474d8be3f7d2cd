//! The REST API v2's documents (assisted-service `swagger.yaml`,
//! `basePath: /api/assisted-install`, paths under `/v2`), for the service,
//! the agent and the client commands alike.
//!
//! Request bodies refuse fields they do not know (`deny_unknown_fields`):
//! a typo is named in the 400 instead of silently dropped. Response
//! documents carry the swagger's names; times are RFC 3339 text; the
//! swagger's "JSON inside JSON" fields (`validations_info`, `inventory`,
//! …) are JSON text, as the real service sends them.

use serde::{Deserialize, Serialize};

/// The path every operation lives under.
pub const BASE_PATH: &str = "/api/assisted-install/v2";

/// One network of `cluster_networks` (swagger `cluster_network`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClusterNetwork {
    /// The pod network, e.g. `10.128.0.0/14`.
    pub cidr: String,
    /// Each node's slice of it, e.g. 23.
    pub host_prefix: u8,
}

/// A CIDR list entry (`service_networks`, `machine_networks`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Cidr {
    /// The network, e.g. `192.168.126.0/24`.
    pub cidr: String,
}

/// A VIP (`api_vips`, `ingress_vips`; swagger `api_vip`/`ingress_vip`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Vip {
    /// The address.
    pub ip: String,
}

/// `POST /v2/clusters` (swagger `cluster-create-params`): the fields this
/// service knows. Required: `name`, `openshift_version`, `pull_secret`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClusterCreateParams {
    /// The cluster's name (a DNS label).
    pub name: String,
    /// The release's `major.minor`, e.g. `4.19`.
    pub openshift_version: String,
    /// The pull secret (JSON text); never returned.
    pub pull_secret: String,
    /// The base domain, e.g. `example.com`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_dns_domain: Option<String>,
    /// Masters: 1 (single node), 3, 4 or 5. Default 3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control_plane_count: Option<u8>,
    /// Default `[{10.128.0.0/14, 23}]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_networks: Option<Vec<ClusterNetwork>>,
    /// Default `[172.30.0.0/16]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_networks: Option<Vec<Cidr>>,
    /// The hosts' network; when absent, the monitor takes the network the
    /// API VIP lies in from the hosts' addresses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine_networks: Option<Vec<Cidr>>,
    /// One per IP family.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_vips: Option<Vec<Vip>>,
    /// One per IP family.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ingress_vips: Option<Vec<Vip>>,
    /// `OVNKubernetes` (default) or `OpenShiftSDN`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_type: Option<String>,
    /// The SSH key for the `core` user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssh_public_key: Option<String>,
    /// NTP sources the hosts add, comma-separated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub additional_ntp_source: Option<String>,
    /// Only `x86_64` here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_architecture: Option<String>,
}

/// `PATCH /v2/clusters/{id}` (swagger `v2-cluster-update-params`): every
/// field optional; absent fields keep their value.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClusterUpdateParams {
    /// See [`ClusterCreateParams`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// See [`ClusterCreateParams`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pull_secret: Option<String>,
    /// See [`ClusterCreateParams`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_dns_domain: Option<String>,
    /// See [`ClusterCreateParams`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_networks: Option<Vec<ClusterNetwork>>,
    /// See [`ClusterCreateParams`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_networks: Option<Vec<Cidr>>,
    /// See [`ClusterCreateParams`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine_networks: Option<Vec<Cidr>>,
    /// See [`ClusterCreateParams`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_vips: Option<Vec<Vip>>,
    /// See [`ClusterCreateParams`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ingress_vips: Option<Vec<Vip>>,
    /// See [`ClusterCreateParams`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_type: Option<String>,
    /// See [`ClusterCreateParams`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssh_public_key: Option<String>,
    /// See [`ClusterCreateParams`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub additional_ntp_source: Option<String>,
}

/// A cluster as the service returns it (swagger `cluster`, the fields
/// this service keeps). The pull secret is never returned, only whether
/// it is set.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Cluster {
    /// UUID.
    pub id: String,
    /// `/api/assisted-install/v2/clusters/<id>`.
    pub href: String,
    /// `Cluster`.
    pub kind: String,
    /// See [`ClusterCreateParams`].
    pub name: String,
    /// See [`ClusterCreateParams`].
    pub openshift_version: String,
    /// See [`ClusterCreateParams`].
    #[serde(default)]
    pub base_dns_domain: String,
    /// The cluster state machine's status (`insufficient`, `ready`, …).
    pub status: String,
    /// The status in words.
    pub status_info: String,
    /// RFC 3339.
    pub status_updated_at: String,
    /// JSON text: `{"<category>":[{"id","status","message"}]}`.
    #[serde(default)]
    pub validations_info: String,
    /// Masters.
    pub control_plane_count: u8,
    /// See [`ClusterCreateParams`].
    pub cluster_networks: Vec<ClusterNetwork>,
    /// See [`ClusterCreateParams`].
    pub service_networks: Vec<Cidr>,
    /// Given, or taken from the hosts.
    pub machine_networks: Vec<Cidr>,
    /// See [`ClusterCreateParams`].
    pub api_vips: Vec<Vip>,
    /// See [`ClusterCreateParams`].
    pub ingress_vips: Vec<Vip>,
    /// See [`ClusterCreateParams`].
    pub network_type: String,
    /// See [`ClusterCreateParams`].
    #[serde(default)]
    pub ssh_public_key: String,
    /// See [`ClusterCreateParams`].
    #[serde(default)]
    pub additional_ntp_source: String,
    /// `x86_64`.
    pub cpu_architecture: String,
    /// Whether a pull secret is stored.
    pub pull_secret_set: bool,
    /// The cluster's hosts.
    #[serde(default)]
    pub hosts: Vec<Host>,
    /// Hosts bound to the cluster.
    pub total_host_count: u32,
    /// Of them, `known`.
    pub ready_host_count: u32,
    /// Of them, not disabled.
    pub enabled_host_count: u32,
    /// RFC 3339.
    pub created_at: String,
    /// RFC 3339.
    pub updated_at: String,
    /// RFC 3339, once installation began.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub install_started_at: String,
}

/// `POST /v2/infra-envs` (swagger `infra-env-create-params`). Required:
/// `name`, `pull_secret`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InfraEnvCreateParams {
    /// The infra-env's name.
    pub name: String,
    /// The pull secret (JSON text); never returned.
    pub pull_secret: String,
    /// Bind every host that registers to this cluster ("early binding").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_id: Option<String>,
    /// See [`ClusterCreateParams`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub openshift_version: Option<String>,
    /// `x86_64`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_architecture: Option<String>,
    /// `full-iso` or `minimal-iso`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_type: Option<String>,
    /// The discovery image's SSH key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssh_authorized_key: Option<String>,
    /// NTP sources, comma-separated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub additional_ntp_sources: Option<String>,
}

/// An infra-env as the service returns it (swagger `infra-env`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct InfraEnv {
    /// UUID.
    pub id: String,
    /// `/api/assisted-install/v2/infra-envs/<id>`.
    pub href: String,
    /// `InfraEnv`.
    pub kind: String,
    /// See [`InfraEnvCreateParams`].
    pub name: String,
    /// The bound cluster, if any.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cluster_id: String,
    /// See [`InfraEnvCreateParams`].
    #[serde(default)]
    pub openshift_version: String,
    /// `x86_64`.
    pub cpu_architecture: String,
    /// `full-iso` or `minimal-iso`.
    pub r#type: String,
    /// See [`InfraEnvCreateParams`].
    #[serde(default)]
    pub ssh_authorized_key: String,
    /// See [`InfraEnvCreateParams`].
    #[serde(default)]
    pub additional_ntp_sources: String,
    /// Whether a pull secret is stored.
    pub pull_secret_set: bool,
    /// RFC 3339.
    pub created_at: String,
    /// RFC 3339.
    pub updated_at: String,
}

/// `POST /v2/infra-envs/{id}/hosts` (swagger `host-create-params`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HostCreateParams {
    /// The host's id (agent: board serial, system UUID or lowest MAC).
    pub host_id: String,
    /// The agent's version or image.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub discovery_agent_version: String,
}

/// `PATCH /v2/infra-envs/{id}/hosts/{host_id}` (swagger
/// `host-update-params`, the fields this service knows).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HostUpdateParams {
    /// The host name to use instead of the inventory's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_name: Option<String>,
    /// `auto-assign`, `master` or `worker`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_role: Option<String>,
    /// `[{id, role: install|none}]`: the installation disk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disks_selected_config: Option<Vec<DiskSelection>>,
}

/// One entry of `disks_selected_config`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DiskSelection {
    /// The disk's `id` from the inventory.
    pub id: String,
    /// `install` or `none`.
    pub role: String,
}

/// A host as the service returns it (swagger `host`, the fields this
/// service keeps).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Host {
    /// UUID chosen by the agent.
    pub id: String,
    /// `/api/assisted-install/v2/infra-envs/<infra_env_id>/hosts/<id>`.
    pub href: String,
    /// `Host`.
    pub kind: String,
    /// The infra-env it registered with.
    pub infra_env_id: String,
    /// The cluster it is bound to.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cluster_id: String,
    /// The host state machine's status (`discovering`, `known`, …).
    pub status: String,
    /// The status in words.
    pub status_info: String,
    /// RFC 3339.
    pub status_updated_at: String,
    /// JSON text: `{"hardware":[…],"network":[…]}`.
    #[serde(default)]
    pub validations_info: String,
    /// JSON text of [`crate::Inventory`]; empty until the first reply.
    #[serde(default)]
    pub inventory: String,
    /// `auto-assign`, `master` or `worker`.
    pub role: String,
    /// The monitor's choice for an `auto-assign` host.
    #[serde(default)]
    pub suggested_role: String,
    /// The host that runs the bootstrap control plane.
    pub bootstrap: bool,
    /// The host name the user asked for (wins over the inventory's).
    #[serde(default)]
    pub requested_hostname: String,
    /// The installation disk's id.
    #[serde(default)]
    pub installation_disk_id: String,
    /// The installation disk's path.
    #[serde(default)]
    pub installation_disk_path: String,
    /// JSON text of the NTP sources the host reported.
    #[serde(default)]
    pub ntp_sources: String,
    /// JSON text of the connectivity report.
    #[serde(default)]
    pub connectivity: String,
    /// JSON text of the domain resolutions.
    #[serde(default)]
    pub domain_name_resolutions: String,
    /// JSON text of the free addresses.
    #[serde(default)]
    pub free_addresses: String,
    /// JSON text of the disks measured, by path: `{"/dev/vda":
    /// {"path": "/dev/vda", "disk_speed": {"tested": true, "speed_ms": 2,
    /// "exit_code": 0}}}` (the installation-disk-speed-check's p99, ms);
    /// `''` before the first measurement.
    #[serde(default)]
    pub disks_info: String,
    /// Installation progress.
    #[serde(default)]
    pub progress: HostProgress,
    /// RFC 3339 of the last next-steps poll.
    #[serde(default)]
    pub checked_in_at: String,
    /// RFC 3339 of the host's last logs upload (`logs-gather`); `''` for
    /// none.
    #[serde(default)]
    pub logs_collected_at: String,
    /// RFC 3339.
    pub registered_at: String,
    /// The host's own clock at its last poll, Unix seconds.
    #[serde(default)]
    pub timestamp: i64,
    /// The agent's version.
    #[serde(default)]
    pub discovery_agent_version: String,
    /// RFC 3339.
    pub created_at: String,
    /// RFC 3339.
    pub updated_at: String,
}

/// Swagger `host-progress-info`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct HostProgress {
    /// The stage reached (`Starting installation`, …).
    #[serde(default)]
    pub current_stage: String,
    /// Free text from the installer.
    #[serde(default)]
    pub progress_info: String,
    /// 0-100.
    #[serde(default)]
    pub installation_percentage: u8,
    /// When the current stage began (RFC 3339; empty before the first
    /// stage). The stage's timeout counts from it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub stage_started_at: String,
}

/// `POST /v2/infra-envs/{id}/hosts` → 201 (swagger
/// `host_registration_response`): the host and how to run the steps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct HostRegistrationResponse {
    /// The host as stored.
    #[serde(flatten)]
    pub host: Host,
    /// The next-step runner to start.
    pub next_step_runner_command: NextStepRunnerCommand,
    /// The token this host sends as `X-Secret-Key` from now on (an
    /// okd-install extension): bound to this host id, revoked when the
    /// host registers again. Absent when the service runs without
    /// authentication. The infra-env's discovery token only registers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_token: Option<String>,
}

/// Swagger `host_registration_response.next_step_runner_command`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NextStepRunnerCommand {
    /// The program (empty: the agent runs its built-in runner).
    #[serde(default)]
    pub command: String,
    /// One JSON document: `{infra_env_id, host_id, agent_version}`.
    #[serde(default)]
    pub args: Vec<String>,
    /// Seconds to wait before registering again when the runner ends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_seconds: Option<u64>,
}

/// `GET …/hosts/{host_id}/instructions` → 200 (swagger `steps`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Steps {
    /// Seconds until the next poll.
    pub next_instruction_seconds: u64,
    /// `continue` or `exit` (the runner ends and the agent registers again).
    pub post_step_action: String,
    /// The steps to run now, concurrently.
    #[serde(default)]
    pub instructions: Vec<Step>,
}

/// One instruction (swagger `step`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Step {
    /// `inventory`, `connectivity-check`, `free-network-addresses`,
    /// `ntp-synchronizer`, `domain-resolution`,
    /// `installation-disk-speed-check`, `install`, `logs-gather`, …
    pub step_type: String,
    /// `<step_type>-<8 hex digits>`.
    pub step_id: String,
    /// Arguments; for most types one JSON document.
    #[serde(default)]
    pub args: Vec<String>,
}

/// `POST …/hosts/{host_id}/instructions` (swagger `step-reply`) → 204.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StepReply {
    /// As in the [`Step`].
    pub step_type: String,
    /// As in the [`Step`].
    pub step_id: String,
    /// The step's exit code (0 success; 256: the discovery medium is gone).
    pub exit_code: i64,
    /// The step's output: JSON text for most types.
    #[serde(default)]
    pub output: String,
    /// The step's error text when it failed.
    #[serde(default)]
    pub error: String,
}

/// An event (swagger `event`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Event {
    /// The cluster it concerns.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cluster_id: String,
    /// The host it concerns.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub host_id: String,
    /// The infra-env it concerns.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub infra_env_id: String,
    /// `info`, `warning`, `error` or `critical`.
    pub severity: String,
    /// `user`.
    pub category: String,
    /// A stable name (`host_status_updated`, `cluster_registration_succeeded`, …).
    pub name: String,
    /// In words.
    pub message: String,
    /// RFC 3339.
    pub event_time: String,
}

/// One validation of `validations_info`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ValidationResult {
    /// The validation id (`has-min-memory`, …).
    pub id: String,
    /// `success`, `failure`, `pending`, `error` or `disabled`.
    pub status: String,
    /// In words.
    pub message: String,
}

/// The error body of business-logic failures (swagger `error`):
/// `{"kind":"Error","id":409,"code":"409","href":"","reason":"…"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ApiError {
    /// `Error`.
    pub kind: String,
    /// The HTTP status.
    pub id: u16,
    /// The HTTP status as text.
    pub code: String,
    /// Empty.
    #[serde(default)]
    pub href: String,
    /// In words.
    pub reason: String,
}

/// The body of authentication failures (swagger `infra_error`):
/// `{"code":401,"message":"…"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct InfraError {
    /// 401 or 403.
    pub code: u16,
    /// In words.
    pub message: String,
}

/// `POST /v2/clusters/{id}/actions/complete-installation` body (swagger
/// `completion_params`): how the installation ended, as the
/// assisted-installer-controller reports it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CompletionParams {
    /// Whether the cluster installed.
    pub is_success: bool,
    /// Why not, when it did not.
    #[serde(default)]
    pub error_info: String,
    /// Extra data from the controller (kept out of the status).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<serde_json::Value>,
}
