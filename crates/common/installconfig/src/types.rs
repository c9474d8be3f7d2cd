//! The install-config v1 data model (openshift/installer `pkg/types/installconfig.go`,
//! `machinepools.go` and `pkg/types/<platform>/platform.go`).
//!
//! Field names are the JSON/YAML names of openshift-install's
//! `pkg/types/installconfig.go`; fields are declared in the Go struct order and
//! serialize with Go's `omitempty` rules, so `serde_json::to_value` of a
//! normalized config is the document openshift-install re-serializes.
//! Deprecated fields (openshift/installer `pkg/types/conversion/installconfig.go`) are read
//! but cleared by up-conversion.

use std::collections::BTreeMap;

use okd_secret::Secret;
use serde::{Deserialize, Serialize};
use serde_json::Value;

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_zero(n: &i64) -> bool {
    *n == 0
}

/// Object metadata of the install-config; only `name` is meaningful (the cluster name).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectMeta {
    /// The cluster name, validated as a DNS-1123 subdomain of at most 54 characters
    /// (openshift/installer `pkg/types/validation/installconfig.go`).
    #[serde(default)]
    pub name: String,
    /// Ignored namespace (kept for round-trips).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Always serialized as `null`, as sigs.k8s.io/yaml writes it when openshift-install
    /// re-serializes the file); input ignored.
    #[serde(default, serialize_with = "ser_null")]
    pub creation_timestamp: Option<Value>,
    /// Ignored labels (kept for round-trips).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Ignored annotations (kept for round-trips).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

fn ser_null<S: serde::Serializer>(_: &Option<Value>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_none()
}

/// The whole `install-config.yaml` (`types.InstallConfig`, apiVersion v1;
/// openshift/installer `pkg/types/installconfig.go`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InstallConfig {
    /// `v1` after up-conversion (`v1beta3`/`v1beta4` are accepted on input).
    #[serde(default)]
    pub api_version: String,
    /// Optional TypeMeta kind (normally absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// `metadata.name` is the cluster name.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// Extra PEM CA certificates trusted by the cluster (mirror registries, proxies).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub additional_trust_bundle: Option<String>,
    /// `Proxyonly` (default) or `Always`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub additional_trust_bundle_policy: Option<String>,
    /// One authorized_keys line installed for user `core`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssh_key: Option<String>,
    /// The base DNS domain; cluster records live under `<name>.<baseDomain>`.
    #[serde(default)]
    pub base_domain: String,
    /// Cluster, machine and service networks (defaulted, `pkg/types/defaults/installconfig.go`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub networking: Option<Networking>,
    /// The control-plane pool (`name: master`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control_plane: Option<MachinePool>,
    /// The arbiter pool (feature gate HighlyAvailableArbiter).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arbiter: Option<MachinePool>,
    /// Compute pools (`worker`, `edge`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub compute: Vec<MachinePool>,
    /// Exactly one platform key.
    #[serde(default)]
    pub platform: Platform,
    /// JSON docker config `{"auths": {...}}`; always serialized (`""` when redacted);
    /// `Debug` shows `[REDACTED]`.
    #[serde(default, serialize_with = "okd_secret::serialize")]
    pub pull_secret: Secret,
    /// Cluster-wide egress proxy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy: Option<Proxy>,
    /// Deprecated mirror list (ImageContentSourcePolicy).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub image_content_sources: Vec<ImageSource>,
    /// Mirror list (ImageDigestMirrorSet, 4.14+).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub image_digest_sources: Vec<ImageSource>,
    /// `External` (default), `Internal` or `Mixed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub publish: Option<String>,
    /// `{ingress, apiserver}`; only with `publish: Mixed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operator_publishing_strategy: Option<Value>,
    /// FIPS mode for the cluster's nodes.
    #[serde(default, skip_serializing_if = "is_false")]
    pub fips: bool,
    /// `None` or `AllNodes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_partitioning_mode: Option<String>,
    /// `Mint`, `Passthrough` or `Manual` (not allowed on none/baremetal).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials_mode: Option<String>,
    /// Single-node bootstrap-in-place settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bootstrap_in_place: Option<BootstrapInPlace>,
    /// Cluster capabilities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<Capabilities>,
    /// Feature set (`TechPreviewNoUpgrade`, `CustomNoUpgrade`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feature_set: Option<String>,
    /// `Name=bool` entries; only with `CustomNoUpgrade`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub feature_gates: Vec<String>,
}

/// `networking` (`pkg/types/installconfig.go`); CIDRs are kept as text and validated in
/// the order of `pkg/types/validation/installconfig.go`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Networking {
    /// `OVNKubernetes` (default) or `OpenShiftSDN` (≤ 4.14), normalized case-insensitively.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub network_type: String,
    /// Node networks; default `[{cidr: 10.0.0.0/16}]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub machine_network: Vec<MachineNetworkEntry>,
    /// Pod networks; default `[{cidr: 10.128.0.0/14, hostPrefix: 23}]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cluster_network: Vec<ClusterNetworkEntry>,
    /// Service CIDRs; default `[172.30.0.0/16]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub service_network: Vec<String>,
    /// Overlay MTU in bytes (AWS only).
    #[serde(default, rename = "clusterNetworkMTU", skip_serializing_if = "is_zero")]
    pub cluster_network_mtu: i64,
    /// `ovnKubernetesConfig.ipv4.internalJoinSubnet`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ovn_kubernetes_config: Option<OvnKubernetesConfig>,
    /// Deprecated: up-converted to `machineNetwork[0].cidr`.
    #[serde(
        default,
        rename = "machineCIDR",
        skip_serializing_if = "Option::is_none"
    )]
    pub machine_cidr: Option<String>,
    /// Deprecated: up-converted to `networkType`.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub deprecated_type: Option<String>,
    /// Deprecated: up-converted to `serviceNetwork[0]`.
    #[serde(
        default,
        rename = "serviceCIDR",
        skip_serializing_if = "Option::is_none"
    )]
    pub service_cidr: Option<String>,
    /// Deprecated: up-converted to `clusterNetwork`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_networks: Option<Vec<ClusterNetworkEntry>>,
}

impl Networking {
    /// The IPv4 OVN join subnet override (`ovnKubernetesConfig.ipv4.internalJoinSubnet`), if set.
    pub fn internal_join_subnet(&self) -> Option<String> {
        self.ovn_kubernetes_config
            .as_ref()?
            .ipv4
            .as_ref()?
            .internal_join_subnet
            .clone()
            .filter(|s| !s.is_empty())
    }
}

/// One `machineNetwork` entry.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MachineNetworkEntry {
    /// The CIDR, e.g. `10.0.0.0/16`.
    #[serde(default)]
    pub cidr: String,
}

/// One `clusterNetwork` entry.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterNetworkEntry {
    /// The pod CIDR.
    #[serde(default)]
    pub cidr: String,
    /// Prefix length of each node's slice (0 = unset).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub host_prefix: i64,
    /// Deprecated: `hostPrefix = (32|128) − hostSubnetLength`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_subnet_length: Option<i64>,
}

/// `networking.ovnKubernetesConfig`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OvnKubernetesConfig {
    /// IPv4 settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ipv4: Option<OvnIpv4Config>,
}

/// `networking.ovnKubernetesConfig.ipv4`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OvnIpv4Config {
    /// Replaces the default join subnet 100.64.0.0/16.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub internal_join_subnet: Option<String>,
}

/// A machine pool (`types.MachinePool`, `pkg/types/machinepools.go`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MachinePool {
    /// `master`, `worker`, `edge` or `arbiter`.
    #[serde(default)]
    pub name: String,
    /// Machine count; defaults to 3 (0 for edge/arbiter).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i64>,
    /// Per-platform settings as a JSON object keyed by platform name (`{}` for none);
    /// read with `platform.get("aws")`.
    #[serde(default)]
    pub platform: Value,
    /// `Enabled` (default) or `Disabled`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hyperthreading: Option<String>,
    /// `amd64`, `arm64`, `s390x` or `ppc64le`; defaults to the host architecture.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub architecture: Option<String>,
    /// Two-node fencing credentials (`{credentials: [...]}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fencing: Option<Value>,
}

/// `platform`: exactly one key must be set (`pkg/types/validation/installconfig.go`).
/// `Debug` shows it as JSON with every `password` redacted (see [`BaremetalPlatform`]).
#[derive(Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Platform {
    /// Cloud IPI/UPI on AWS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aws: Option<AwsPlatform>,
    /// Azure (unvalidated object).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub azure: Option<Value>,
    /// Bare metal IPI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baremetal: Option<BaremetalPlatform>,
    /// External platform (unvalidated object).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external: Option<Value>,
    /// GCP (unvalidated object).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gcp: Option<Value>,
    /// IBM Cloud (unvalidated object).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ibmcloud: Option<Value>,
    /// User-provisioned infrastructure without a platform; `none: {}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub none: Option<NonePlatform>,
    /// Nutanix (unvalidated object).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nutanix: Option<Value>,
    /// OpenStack (unvalidated object).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub openstack: Option<Value>,
    /// PowerVS (unvalidated object).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub powervs: Option<Value>,
    /// vSphere (unvalidated object; credentials stripped by `redacted`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vsphere: Option<Value>,
}

/// `platform.none`: an empty object.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NonePlatform {}

/// `platform.aws` (`pkg/types/aws/platform.go`), the fields okd-install reads plus pass-throughs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AwsPlatform {
    /// Region, e.g. `us-east-1`.
    #[serde(default)]
    pub region: String,
    /// Existing subnet IDs (older field).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subnets: Vec<String>,
    /// `vpc.subnets[] {id, roles[]}` (newer field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vpc: Option<Value>,
    /// Custom RHCOS AMI.
    #[serde(default, rename = "amiID", skip_serializing_if = "Option::is_none")]
    pub ami_id: Option<String>,
    /// Existing private hosted zone ID.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hosted_zone: Option<String>,
    /// Role ARN for a shared-VPC hosted zone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hosted_zone_role: Option<String>,
    /// Extra tags for every created resource.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub user_tags: BTreeMap<String, String>,
    /// Propagate user tags to operator-created resources.
    #[serde(default, skip_serializing_if = "is_false")]
    pub propagate_user_tags: bool,
    /// Custom service endpoints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_endpoints: Option<Value>,
    /// `Classic` or `NLB`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lb_type: Option<String>,
    /// `Enabled`/`Disabled`.
    #[serde(
        default,
        rename = "userProvisionedDNS",
        skip_serializing_if = "Option::is_none"
    )]
    pub user_provisioned_dns: Option<String>,
    /// Default machine pool platform.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_machine_platform: Option<Value>,
    /// Public IPv4 pool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub public_ipv4_pool: Option<String>,
    /// Keep the bootstrap ignition in S3.
    #[serde(default, skip_serializing_if = "is_false")]
    pub preserve_bootstrap_ignition: bool,
    /// Best-effort delete of the bootstrap ignition.
    #[serde(default, skip_serializing_if = "is_false")]
    pub best_effort_delete_ignition: bool,
}

/// `platform.baremetal` (`pkg/types/baremetal/platform.go`).
/// `Debug` shows it as JSON with every `password` (the hosts' `bmc`) redacted.
#[derive(Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BaremetalPlatform {
    /// libvirt URI of the bootstrap host; default `qemu:///system`.
    #[serde(
        default,
        rename = "libvirtURI",
        skip_serializing_if = "Option::is_none"
    )]
    pub libvirt_uri: Option<String>,
    /// Provisioning IP of the cluster (default host .3 of the provisioning CIDR).
    #[serde(
        default,
        rename = "clusterProvisioningIP",
        skip_serializing_if = "Option::is_none"
    )]
    pub cluster_provisioning_ip: Option<String>,
    /// Provisioning IP of the bootstrap VM (default host .2).
    #[serde(
        default,
        rename = "bootstrapProvisioningIP",
        skip_serializing_if = "Option::is_none"
    )]
    pub bootstrap_provisioning_ip: Option<String>,
    /// External bridge; default `baremetal`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_bridge: Option<String>,
    /// MAC of the bootstrap VM's external NIC.
    #[serde(
        default,
        rename = "externalMACAddress",
        skip_serializing_if = "Option::is_none"
    )]
    pub external_mac_address: Option<String>,
    /// `Managed` (default), `Unmanaged` or `Disabled`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provisioning_network: Option<String>,
    /// Provisioning bridge; default `provisioning`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provisioning_bridge: Option<String>,
    /// MAC of the bootstrap VM's provisioning NIC.
    #[serde(
        default,
        rename = "provisioningMACAddress",
        skip_serializing_if = "Option::is_none"
    )]
    pub provisioning_mac_address: Option<String>,
    /// Provisioning NIC name on the hosts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provisioning_network_interface: Option<String>,
    /// Provisioning CIDR; default `172.22.0.0/24`.
    #[serde(
        default,
        rename = "provisioningNetworkCIDR",
        skip_serializing_if = "Option::is_none"
    )]
    pub provisioning_network_cidr: Option<String>,
    /// `start,end` DHCP range on the provisioning network.
    #[serde(
        default,
        rename = "provisioningDHCPRange",
        skip_serializing_if = "Option::is_none"
    )]
    pub provisioning_dhcp_range: Option<String>,
    /// The hosts (BMC, role, boot MAC, ...), passed through.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<Value>,
    /// Default machine pool platform.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_machine_platform: Option<Value>,
    /// API VIPs (one per IP family, at most 2).
    #[serde(default, rename = "apiVIPs", skip_serializing_if = "Vec::is_empty")]
    pub api_vips: Vec<String>,
    /// Ingress VIPs (one per IP family, at most 2).
    #[serde(default, rename = "ingressVIPs", skip_serializing_if = "Vec::is_empty")]
    pub ingress_vips: Vec<String>,
    /// Bootstrap OS image URL.
    #[serde(
        default,
        rename = "bootstrapOSImage",
        skip_serializing_if = "Option::is_none"
    )]
    pub bootstrap_os_image: Option<String>,
    /// Cluster OS image URL.
    #[serde(
        default,
        rename = "clusterOSImage",
        skip_serializing_if = "Option::is_none"
    )]
    pub cluster_os_image: Option<String>,
    /// Static external IP of the bootstrap VM.
    #[serde(
        default,
        rename = "bootstrapExternalStaticIP",
        skip_serializing_if = "Option::is_none"
    )]
    pub bootstrap_external_static_ip: Option<String>,
    /// Static external gateway of the bootstrap VM.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bootstrap_external_static_gateway: Option<String>,
    /// Static DNS of the bootstrap VM.
    #[serde(
        default,
        rename = "bootstrapExternalStaticDNS",
        skip_serializing_if = "Option::is_none"
    )]
    pub bootstrap_external_static_dns: Option<String>,
    /// `{type: OpenShiftManagedDefault|UserManaged}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_balancer: Option<LoadBalancer>,
    /// Extra NTP servers.
    #[serde(
        default,
        rename = "additionalNTPServers",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub additional_ntp_servers: Vec<String>,
    /// Deprecated: up-converted to `apiVIPs`.
    #[serde(default, rename = "apiVIP", skip_serializing_if = "Option::is_none")]
    pub api_vip: Option<String>,
    /// Deprecated: up-converted to `ingressVIPs`.
    #[serde(
        default,
        rename = "ingressVIP",
        skip_serializing_if = "Option::is_none"
    )]
    pub ingress_vip: Option<String>,
    /// Deprecated: up-converted to `clusterProvisioningIP`.
    #[serde(
        default,
        rename = "provisioningHostIP",
        skip_serializing_if = "Option::is_none"
    )]
    pub provisioning_host_ip: Option<String>,
    /// Deprecated: `true` up-converts to `provisioningNetwork: Unmanaged`.
    #[serde(
        default,
        rename = "provisioningDHCPExternal",
        skip_serializing_if = "Option::is_none"
    )]
    pub provisioning_dhcp_external: Option<bool>,
}

/// `platform.baremetal.loadBalancer`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoadBalancer {
    /// `OpenShiftManagedDefault` or `UserManaged`.
    #[serde(default, rename = "type")]
    pub lb_type: String,
}

/// `proxy` (`pkg/types/installconfig.go`). `Debug` shows it as JSON with the
/// password of a URL's `user:password@` redacted.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Proxy {
    /// `http://` proxy URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_proxy: Option<String>,
    /// `http://` or `https://` proxy URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub https_proxy: Option<String>,
    /// `*` or a comma list of IPs, CIDRs and domains.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_proxy: Option<String>,
}

/// One mirror entry of `imageContentSources` / `imageDigestSources`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageSource {
    /// The repository being mirrored, e.g. `quay.io/openshift/okd`.
    #[serde(default)]
    pub source: String,
    /// Mirror repositories, tried in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mirrors: Vec<String>,
    /// `AllowContactingSource` / `NeverContactSource` (digest sources only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_policy: Option<String>,
}

/// `bootstrapInPlace` (single node, `pkg/types/installconfig.go`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BootstrapInPlace {
    /// The disk the live ISO installs to, e.g. `/dev/sda`.
    #[serde(default)]
    pub installation_disk: String,
}

/// `capabilities` (validated in `pkg/types/validation/installconfig.go`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Capabilities {
    /// `None`, `v4.11` ... or `vCurrent`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline_capability_set: Option<String>,
    /// Capability names enabled on top of the baseline.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub additional_enabled_capabilities: Vec<String>,
}

macro_rules! debug_redacted {
    ($($ty:ident),*) => {$(
        impl std::fmt::Debug for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                let mut v = serde_json::to_value(self).unwrap_or(Value::Null);
                redact_credentials(&mut v);
                write!(f, "{} {v}", stringify!($ty))
            }
        }
    )*};
}

debug_redacted!(Platform, BaremetalPlatform, Proxy);

/// Replaces, for `Debug`, the value of every `password` key (a baremetal
/// host's `bmc`, vSphere's vCenters: stanzas passed through as JSON) and the
/// password of every URL's `user:password@` with [`okd_secret::REDACTED`].
fn redact_credentials(v: &mut Value) {
    match v {
        Value::Object(m) => {
            for (k, x) in m.iter_mut() {
                if k.eq_ignore_ascii_case("password") {
                    *x = Value::String(okd_secret::REDACTED.to_string());
                } else {
                    redact_credentials(x);
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(redact_credentials),
        Value::String(s) => {
            if let Some(r) = redact_userinfo(s) {
                *s = r;
            }
        }
        _ => {}
    }
}

/// `scheme://user:password@host…` with the password redacted; `None` when
/// `s` is no URL with a password.
fn redact_userinfo(s: &str) -> Option<String> {
    let (scheme, rest) = s.split_once("://")?;
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let at = rest[..end].rfind('@')?;
    let (user, _) = rest[..at].split_once(':')?;
    Some(format!(
        "{scheme}://{user}:{}{}",
        okd_secret::REDACTED,
        &rest[at..]
    ))
}
