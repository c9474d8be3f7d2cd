//! The arguments and outputs of the discovery agent's network and disk
//! steps (assisted-service `swagger.yaml` definitions
//! `connectivity_check_params`, `connectivity_report`,
//! `domain_resolution_request`, `domain_resolution_response`,
//! `verify_vips_request`, `verify_vips_response`,
//! `disk_speed_check_request`, `disk_speed_check_response`,
//! `free_addresses_request`, `free_networks_addresses`,
//! `logs_gather_cmd_request`). A step's
//! argument is the JSON text of the request (`step.args[0]`); its reply's
//! `output` is the JSON text of the response.

use serde::{Deserialize, Serialize};

/// `connectivity-check` argument: the other hosts of the cluster, each
/// with its NICs (swagger `connectivity_check_params`).
pub type ConnectivityCheckParams = Vec<ConnectivityCheckHost>;

/// One host to check (swagger `connectivity_check_host`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ConnectivityCheckHost {
    /// The remote host's id.
    pub host_id: String,
    /// Its interfaces with addresses.
    #[serde(default)]
    pub nics: Vec<ConnectivityCheckNic>,
}

/// One remote NIC (swagger `connectivity_check_nic`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ConnectivityCheckNic {
    /// Interface name on the remote host.
    pub name: String,
    /// Its MAC address, `aa:bb:cc:dd:ee:ff`.
    #[serde(default)]
    pub mac: String,
    /// Its addresses in CIDR form (`192.0.2.10/24`, `2001:db8::a/64`).
    #[serde(default)]
    pub ip_addresses: Vec<String>,
}

/// `connectivity-check` output (swagger `connectivity_report`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ConnectivityReport {
    /// One entry per remote host checked.
    #[serde(default)]
    pub remote_hosts: Vec<ConnectivityRemoteHost>,
}

/// What one host saw of one remote host (swagger
/// `connectivity_remote_host`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ConnectivityRemoteHost {
    /// The remote host's id.
    pub host_id: String,
    /// ARP results (IPv4 remote addresses in a subnet of a local NIC).
    #[serde(default)]
    pub l2_connectivity: Vec<L2Connectivity>,
    /// ICMP echo results (every remote address).
    #[serde(default)]
    pub l3_connectivity: Vec<L3Connectivity>,
    /// Full-size echoes with Don't Fragment set (IPv4 remote addresses
    /// that answered the ordinary echoes).
    #[serde(default)]
    pub mtu_report: Vec<MtuReport>,
}

/// Whether a packet of the outgoing interface's full MTU reached a remote
/// address unfragmented (swagger `mtu_report`; the reference agent's
/// `ping -M do -s <mtu − 28>`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MtuReport {
    /// The local interface the echoes left by (empty: routed).
    #[serde(default)]
    pub outgoing_nic: String,
    /// The remote address.
    pub remote_ip: String,
    /// Whether an echo of the full MTU came back.
    pub mtu_successful: bool,
}

/// One ARP probe (swagger `l2_connectivity`; RFC 826).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct L2Connectivity {
    /// The local interface the request left by.
    pub outgoing_nic: String,
    /// The local address it was sent from.
    pub outgoing_ip_address: String,
    /// The remote address asked for.
    pub remote_ip_address: String,
    /// The MAC that answered (empty: none).
    #[serde(default)]
    pub remote_mac: String,
    /// Whether the remote address answered.
    pub successful: bool,
}

/// One ICMP echo series (swagger `l3_connectivity`; RFC 792 / 4443).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct L3Connectivity {
    /// The local interface whose subnet holds the remote address (empty:
    /// routed).
    #[serde(default)]
    pub outgoing_nic: String,
    /// The remote address pinged.
    pub remote_ip_address: String,
    /// Whether any echo came back.
    pub successful: bool,
    /// Mean round-trip time of the echoes that came back, ms.
    #[serde(default)]
    pub average_rtt_ms: f64,
    /// Echoes lost, percent (0–100).
    #[serde(default)]
    pub packet_loss_percentage: f64,
}

/// `domain-resolution` argument (swagger `domain_resolution_request`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DomainResolutionRequest {
    /// The names to resolve.
    pub domains: Vec<DomainResolutionName>,
}

/// One name to resolve.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DomainResolutionName {
    /// A fully qualified name without the trailing dot.
    pub domain_name: String,
}

/// `domain-resolution` output (swagger `domain_resolution_response`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DomainResolutionResponse {
    /// One entry per name asked.
    pub resolutions: Vec<DomainResolution>,
}

/// What one name resolved to with the host's own resolver (no answer:
/// empty lists).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DomainResolution {
    /// The name asked.
    pub domain_name: String,
    /// Its A records.
    #[serde(default)]
    pub ipv4_addresses: Vec<String>,
    /// Its AAAA records.
    #[serde(default)]
    pub ipv6_addresses: Vec<String>,
    /// The CNAME chain followed, if any.
    #[serde(default)]
    pub cnames: Vec<String>,
}

/// `verify-vips` argument (swagger `verify_vips_request`).
pub type VerifyVipsRequest = Vec<VerifyVip>;

/// One virtual IP to check for being unused.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct VerifyVip {
    /// The address.
    pub vip: String,
    /// `api` or `ingress`.
    pub vip_type: String,
}

/// `verify-vips` output (swagger `verify_vips_response`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct VerifyVipsResponse {
    /// One entry per address asked.
    pub vips: Vec<VerifiedVip>,
}

/// One virtual IP's result.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct VerifiedVip {
    /// The address.
    pub vip: String,
    /// `api` or `ingress`.
    pub vip_type: String,
    /// `succeeded` (nothing answered for it), `failed` (something did:
    /// the address is in use) or `unverified` (no local interface in its
    /// subnet, or an IPv6 address).
    pub verification: String,
}

/// `installation-disk-speed-check` argument (swagger
/// `disk_speed_check_request`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DiskSpeedCheckRequest {
    /// The installation disk, e.g. `/dev/disk/by-id/…` or `/dev/vda`.
    pub path: String,
}

/// `installation-disk-speed-check` output (swagger
/// `disk_speed_check_response`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DiskSpeedCheckResponse {
    /// The disk measured.
    pub path: String,
    /// The 99th percentile of fdatasync after a 2,300-byte write, ms
    /// (fio `--bs=2300 --fdatasync=1` over 22 MiB).
    pub io_sync_duration: i64,
}

/// `free-network-addresses` argument (swagger `free_addresses_request`):
/// IPv4 networks in CIDR form (`192.0.2.0/24`). The service sends only
/// networks of at most [`MAX_FREE_ADDRESSES_NETWORK_SIZE`] addresses.
pub type FreeAddressesRequest = Vec<String>;

/// The largest network the free-addresses scan covers, addresses: a
/// prefix of /22 or longer (assisted-service
/// `internal/host/hostcommands/free_addresses_cmd.go`,
/// `MaxSmallV4PrefixSize` 10 host bits).
pub const MAX_FREE_ADDRESSES_NETWORK_SIZE: u32 = 1 << 10;

/// `free-network-addresses` output (swagger `free_networks_addresses`).
pub type FreeNetworksAddresses = Vec<FreeNetworkAddresses>;

/// One network's unanswered addresses (swagger `free_network_addresses`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FreeNetworkAddresses {
    /// The network scanned, in CIDR form.
    pub network: String,
    /// Its host addresses that nothing answered ARP for, ascending.
    #[serde(default)]
    pub free_addresses: Vec<String>,
}

/// `logs-gather` argument (swagger `logs_gather_cmd_request`): where the
/// host's logs go and what to collect.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LogsGatherCmdRequest {
    /// The cluster the logs are uploaded under.
    pub cluster_id: String,
    /// The host's infra-env.
    pub infra_env_id: String,
    /// The host.
    pub host_id: String,
    /// Whether the host is the bootstrap host (the reference collects
    /// more there).
    #[serde(default)]
    pub bootstrap: bool,
    /// Whether to run the installer's own gather (bootstrap host).
    #[serde(default)]
    pub installer_gather: bool,
    /// The control plane hosts' addresses (for the installer's gather).
    #[serde(default)]
    pub master_ips: Vec<String>,
}
