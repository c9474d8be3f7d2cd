//! What the hosts' network and disk steps report, turned into validations
//! (assisted-service `internal/network/connectivity_groups.go`,
//! `internal/host/validator.go`: belongs-to-majority-group, the
//! domain-name checks, dns-wildcard-not-configured,
//! sufficient-installation-disk-speed; `internal/cluster/validator.go`:
//! api-vips-valid and ingress-vips-valid's "not in use").
//!
//! The step arguments the service hands out are built here too:
//! `connectivity-check` (the cluster's hosts and their NICs),
//! `domain-resolution` (the cluster's names) and `verify-vips`.

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;

use ipnet::IpNet;
use okd_assisted_api::Inventory;
use okd_assisted_api::rest::ValidationResult;
use okd_assisted_api::steps::{
    ConnectivityCheckHost, ConnectivityCheckNic, ConnectivityReport, DiskSpeedCheckResponse,
    DomainResolutionName, DomainResolutionRequest, DomainResolutionResponse, VerifyVip,
    VerifyVipsResponse,
};

use crate::model::ClusterParams;
use crate::validate::result;

/// Clusters with more hosts than this get no `connectivity-check` (its
/// argument and the majority-group search grow with the square of the
/// hosts); their `belongs-to-majority-group` says so as `disabled`.
pub const MAX_CONNECTIVITY_HOSTS: usize = 200;

/// A host's connectivity is checked again after this long even when the
/// cluster's hosts did not change, ms (5 min).
pub const CONNECTIVITY_RECHECK_MS: i64 = 5 * 60 * 1000;

/// The highest fdatasync p99 an installation disk may show, ms
/// (`HW_VALIDATOR_REQUIREMENTS` `installation_disk_speed_threshold_ms`,
/// every role).
pub const DISK_SPEED_THRESHOLD_MS: i64 = 10;

/// The name that must not resolve: a wildcard above the cluster's domain
/// would answer it (assisted-service's probe name).
pub const WILDCARD_PROBE: &str = "validateNoWildcardDNS";

/// Whether the cluster's API and ingress addresses are VIPs the cluster
/// itself holds (keepalived on the baremetal platform): several control
/// plane hosts and an API VIP. Single node clusters (platform none) use
/// the node's own address and the user's DNS.
pub fn managed_networking(p: &ClusterParams) -> bool {
    p.control_plane_count > 1 && !p.api_vips.is_empty()
}

/// The `connectivity-check` peers: every host with an inventory and its
/// NICs that have addresses (a host skips its own entry).
pub fn connectivity_peers<'a>(
    hosts: impl IntoIterator<Item = (&'a str, &'a Inventory)>,
) -> Vec<ConnectivityCheckHost> {
    hosts
        .into_iter()
        .map(|(id, inv)| ConnectivityCheckHost {
            host_id: id.to_string(),
            nics: inv
                .interfaces
                .iter()
                .filter(|i| !i.ipv4_addresses.is_empty() || !i.ipv6_addresses.is_empty())
                .map(|i| ConnectivityCheckNic {
                    name: i.name.clone(),
                    mac: i.mac_address.clone(),
                    ip_addresses: i
                        .ipv4_addresses
                        .iter()
                        .chain(&i.ipv6_addresses)
                        .cloned()
                        .collect(),
                })
                .collect(),
        })
        .filter(|h| !h.nics.is_empty())
        .collect()
}

/// One cluster's `connectivity-check` peers, as the monitor last saw them.
#[derive(Debug, Clone, Default)]
pub struct ClusterPeers {
    /// A hash of `hosts` (changes when a host, NIC or address does).
    pub generation: u64,
    /// Every host with addresses.
    pub hosts: Vec<ConnectivityCheckHost>,
}

#[derive(Debug, Default)]
struct PeerState {
    clusters: HashMap<String, std::sync::Arc<ClusterPeers>>,
    /// `<infra-env>/<host>` → (generation, Unix ms) last handed out.
    sent: HashMap<String, (u64, i64)>,
}

/// The `connectivity-check` arguments per cluster (published by the
/// monitor each pass) and when each host was last handed one, in this
/// process's memory: after a restart, or on another replica, a host is
/// simply checked once more.
#[derive(Debug, Default)]
pub struct PeerCache {
    state: std::sync::Mutex<PeerState>,
}

impl PeerCache {
    /// Publishes cluster `cluster_id`'s peers (an empty list, or more than
    /// [`MAX_CONNECTIVITY_HOSTS`], withdraws them).
    pub fn publish(&self, cluster_id: &str, hosts: Vec<ConnectivityCheckHost>) {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if hosts.len() < 2 || hosts.len() > MAX_CONNECTIVITY_HOSTS {
            st.clusters.remove(cluster_id);
            return;
        }
        let generation = {
            use std::hash::{Hash, Hasher};
            let mut h = std::collections::hash_map::DefaultHasher::new();
            serde_json::to_string(&hosts)
                .unwrap_or_default()
                .hash(&mut h);
            h.finish()
        };
        if st
            .clusters
            .get(cluster_id)
            .is_some_and(|c| c.generation == generation)
        {
            return;
        }
        st.clusters.insert(
            cluster_id.to_string(),
            std::sync::Arc::new(ClusterPeers { generation, hosts }),
        );
    }

    /// The `connectivity-check` argument for host `host_id` of
    /// `infra_env_id` in `cluster_id` when one is due at `now_ms` (it has
    /// no report stored (`reported` false), the peers changed since its
    /// last, or [`CONNECTIVITY_RECHECK_MS`] passed), recorded as handed
    /// out; `None` otherwise. The host's own entry is left out.
    pub fn due(
        &self,
        cluster_id: &str,
        (infra_env_id, host_id): (&str, &str),
        reported: bool,
        now_ms: i64,
    ) -> Option<String> {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let peers = st.clusters.get(cluster_id)?.clone();
        let key = format!("{infra_env_id}/{host_id}");
        if let Some((g, at)) = st.sent.get(&key)
            && reported
            && *g == peers.generation
            && now_ms - at < CONNECTIVITY_RECHECK_MS
        {
            return None;
        }
        let others: Vec<&ConnectivityCheckHost> = peers
            .hosts
            .iter()
            .filter(|h| h.host_id != host_id)
            .collect();
        if others.is_empty() {
            return None;
        }
        st.sent.insert(key, (peers.generation, now_ms));
        serde_json::to_string(&others).ok()
    }

    /// Forgets what host `host_id` was handed (it registered again: its
    /// report was cleared, so it is checked at its next poll).
    pub fn forget(&self, infra_env_id: &str, host_id: &str) {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        st.sent.remove(&format!("{infra_env_id}/{host_id}"));
    }
}

/// A cluster's arguments of the steps every pre-install host gets at
/// each poll, computed once per monitor pass instead of once per poll.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClusterStepArgs {
    /// `ntp-synchronizer`'s `ntp_source` (comma-separated, maybe empty).
    pub ntp_source: String,
    /// `domain-resolution`'s argument; `None`: not handed out (no name
    /// or base domain yet).
    pub domain_resolution: Option<String>,
    /// `verify-vips`' argument; `None`: not handed out (no managed
    /// networking, or no VIPs).
    pub verify_vips: Option<String>,
}

impl ClusterStepArgs {
    /// The arguments of cluster `c`.
    pub fn of(c: &crate::db::ClusterRow) -> ClusterStepArgs {
        let p = crate::model::cluster_params(c);
        ClusterStepArgs {
            domain_resolution: domain_request(&c.name, &p.base_dns_domain)
                .and_then(|r| serde_json::to_string(&r).ok()),
            verify_vips: verify_vips_request(&p).and_then(|r| serde_json::to_string(&r).ok()),
            ntp_source: p.additional_ntp_source,
        }
    }
}

/// [`ClusterStepArgs`] per cluster, in memory: published by the monitor
/// each pass and by a poll that found none; forgotten when the cluster
/// changes or goes.
#[derive(Debug, Default)]
pub struct ClusterArgsCache {
    clusters: std::sync::Mutex<HashMap<String, std::sync::Arc<ClusterStepArgs>>>,
}

impl ClusterArgsCache {
    /// Publishes cluster `id`'s arguments.
    pub fn publish(&self, id: &str, args: ClusterStepArgs) {
        let mut m = self.clusters.lock().unwrap_or_else(|e| e.into_inner());
        if m.get(id).is_some_and(|a| **a == args) {
            return;
        }
        m.insert(id.to_string(), std::sync::Arc::new(args));
    }

    /// Cluster `id`'s arguments, if published.
    pub fn get(&self, id: &str) -> Option<std::sync::Arc<ClusterStepArgs>> {
        let m = self.clusters.lock().unwrap_or_else(|e| e.into_inner());
        m.get(id).cloned()
    }

    /// Forgets cluster `id`'s arguments (it was updated or deleted).
    pub fn forget(&self, id: &str) {
        let mut m = self.clusters.lock().unwrap_or_else(|e| e.into_inner());
        m.remove(id);
    }
}

/// The connectivity majority groups of a cluster, as the host validation
/// reads them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Majority {
    /// Not computed, with the reason (too many hosts).
    Disabled(String),
    /// Not computable yet, with the reason (no machine network, fewer
    /// than three hosts reporting).
    Pending(String),
    /// Computed: the hosts in the majority group of every machine network,
    /// and the hosts that reported at all.
    Groups {
        /// In the group of every machine network.
        members: HashSet<String>,
        /// Hosts whose report was used.
        reported: HashSet<String>,
        /// Hosts some pair of reports does not cover yet (a report made
        /// before the other host was there): outside the group they are
        /// pending, not failing.
        incomplete: HashSet<String>,
    },
}

/// The remote hosts `report` reached inside `net`: by ARP for IPv4, by
/// ICMP echo for IPv6 and for IPv4 addresses ARP was not tried on.
fn reached(report: &ConnectivityReport, net: &IpNet) -> HashSet<String> {
    let inside = |a: &str| a.parse::<IpAddr>().is_ok_and(|ip| net.contains(&ip));
    report
        .remote_hosts
        .iter()
        .filter(|r| {
            let l2: Vec<_> = r
                .l2_connectivity
                .iter()
                .filter(|c| inside(&c.remote_ip_address))
                .collect();
            if l2.iter().any(|c| c.successful) {
                return true;
            }
            l2.is_empty()
                && r.l3_connectivity
                    .iter()
                    .any(|c| c.successful && inside(&c.remote_ip_address))
        })
        .map(|r| r.host_id.clone())
        .collect()
}

/// The largest set of hosts that all reached each other both ways, found
/// greedily from every host in turn (hosts with most peers first; ties by
/// id, so every replica finds the same group).
fn largest_group(edges: &HashMap<String, HashSet<String>>) -> HashSet<String> {
    let both = |a: &str, b: &str| {
        edges.get(a).is_some_and(|s| s.contains(b)) && edges.get(b).is_some_and(|s| s.contains(a))
    };
    let mut order: Vec<&String> = edges.keys().collect();
    let degree = |a: &str| edges.keys().filter(|b| *b != a && both(a, b)).count();
    let degrees: HashMap<&str, usize> = order.iter().map(|a| (a.as_str(), degree(a))).collect();
    order.sort_by(|a, b| degrees[b.as_str()].cmp(&degrees[a.as_str()]).then(a.cmp(b)));
    let mut best: Vec<&String> = Vec::new();
    for seed in &order {
        if degrees[seed.as_str()] < best.len() {
            break;
        }
        let mut group = vec![*seed];
        for c in &order {
            if !group.contains(c) && group.iter().all(|g| both(g, c)) {
                group.push(c);
            }
        }
        if group.len() > best.len() {
            best = group;
        }
    }
    best.into_iter().cloned().collect()
}

/// The majority groups for `nets` from the hosts' addresses and
/// `connectivity-check` outputs (`(id, addresses with their networks as
/// [`crate::validate::host_networks`] gives them (`None`: no inventory
/// yet), output JSON text)`).
/// A network's group is taken from the hosts with an address in it that
/// reported; fewer than three such hosts leave it pending.
pub fn majority(nets: &[IpNet], hosts: &[(&str, Option<&[IpNet]>, &str)]) -> Majority {
    if hosts.iter().filter(|h| h.1.is_some()).count() > MAX_CONNECTIVITY_HOSTS {
        return Majority::Disabled(format!(
            "Connectivity is not checked in clusters of more than {MAX_CONNECTIVITY_HOSTS} hosts"
        ));
    }
    if nets.is_empty() {
        return Majority::Pending(
            "Machine Network CIDR or Connectivity Majority Groups missing".into(),
        );
    }
    let reports: HashMap<&str, ConnectivityReport> = hosts
        .iter()
        .filter_map(|(id, _, out)| {
            serde_json::from_str::<ConnectivityReport>(out)
                .ok()
                .map(|r| (*id, r))
        })
        .collect();
    let mut members: Option<HashSet<String>> = None;
    let mut incomplete: HashSet<String> = HashSet::new();
    for net in nets {
        let mut edges: HashMap<String, HashSet<String>> = HashMap::new();
        for (id, inv, _) in hosts {
            let in_net = inv.is_some_and(|addrs| addrs.iter().any(|a| net.contains(&a.addr())));
            if let (true, Some(r)) = (in_net, reports.get(id)) {
                edges.insert(id.to_string(), reached(r, net));
            }
        }
        if edges.len() < 3 {
            return Majority::Pending(
                "Machine Network CIDR or Connectivity Majority Groups missing".into(),
            );
        }
        for a in edges.keys() {
            let Some(ra) = reports.get(a.as_str()) else {
                continue;
            };
            let listed: HashSet<&str> =
                ra.remote_hosts.iter().map(|r| r.host_id.as_str()).collect();
            for b in edges.keys().filter(|b| *b != a) {
                if !listed.contains(b.as_str()) {
                    incomplete.insert(a.clone());
                    incomplete.insert(b.clone());
                }
            }
        }
        let group = largest_group(&edges);
        members = Some(match members {
            None => group,
            Some(m) => m.intersection(&group).cloned().collect(),
        });
    }
    Majority::Groups {
        members: members.unwrap_or_default(),
        reported: reports.keys().map(|k| k.to_string()).collect(),
        incomplete,
    }
}

/// `belongs-to-majority-group` for host `id` (single node clusters pass:
/// there is no one to reach).
pub fn majority_validation(id: &str, sno: bool, m: &Majority) -> ValidationResult {
    const ID: &str = "belongs-to-majority-group";
    if sno {
        return result(
            ID,
            "success",
            "Host has connectivity to the majority of hosts in the cluster",
        );
    }
    match m {
        Majority::Disabled(why) => result(ID, "disabled", why.clone()),
        Majority::Pending(why) => result(ID, "pending", why.clone()),
        Majority::Groups { reported, .. } if !reported.contains(id) => result(
            ID,
            "pending",
            "Waiting for the host's connectivity check to the other hosts",
        ),
        Majority::Groups { members, .. } if members.contains(id) => result(
            ID,
            "success",
            "Host has connectivity to the majority of hosts in the cluster",
        ),
        Majority::Groups { incomplete, .. } if incomplete.contains(id) => result(
            ID,
            "pending",
            "Waiting for the hosts' connectivity checks to include this host",
        ),
        Majority::Groups { .. } => result(
            ID,
            "failure",
            "No connectivity to the majority of hosts in the cluster",
        ),
    }
}

/// The names the `domain-resolution` step asks for: `api`, `api-int`, a
/// name under `*.apps`, and the wildcard probe (all fully qualified).
pub fn domain_names(cluster_name: &str, base_domain: &str) -> [String; 4] {
    let d = format!("{cluster_name}.{base_domain}");
    [
        format!("api.{d}"),
        format!("api-int.{d}"),
        format!("console-openshift-console.apps.{d}"),
        format!("{WILDCARD_PROBE}.{d}"),
    ]
}

/// The `domain-resolution` argument for a cluster (`None` without a name
/// or base domain).
pub fn domain_request(cluster_name: &str, base_domain: &str) -> Option<DomainResolutionRequest> {
    if cluster_name.is_empty() || base_domain.is_empty() {
        return None;
    }
    Some(DomainResolutionRequest {
        domains: domain_names(cluster_name, base_domain)
            .into_iter()
            .map(|domain_name| DomainResolutionName { domain_name })
            .collect(),
    })
}

/// The domain validations from a host's `domain-resolution` output (JSON
/// text, `''` before the first): `api-domain-name-resolved-correctly`,
/// `api-int-domain-name-resolved-correctly`,
/// `apps-domain-name-resolved-correctly`, `dns-wildcard-not-configured`.
///
/// With managed networking a name need not resolve (the cluster's own
/// DNS answers for it on the nodes), but one that does must resolve to
/// its VIP; otherwise (single node) api, api-int and apps must resolve.
pub fn domain_validations(
    cluster_name: &str,
    p: &ClusterParams,
    output: &str,
) -> Vec<ValidationResult> {
    let names = domain_names(cluster_name, &p.base_dns_domain);
    let checks = [
        ("api-domain-name-resolved-correctly", &names[0], &p.api_vips),
        (
            "api-int-domain-name-resolved-correctly",
            &names[1],
            &p.api_vips,
        ),
        (
            "apps-domain-name-resolved-correctly",
            &names[2],
            &p.ingress_vips,
        ),
    ];
    let mut out = Vec::new();
    let parsed = serde_json::from_str::<DomainResolutionResponse>(output).ok();
    let Some(parsed) = parsed.filter(|_| !p.base_dns_domain.is_empty()) else {
        for (id, _, _) in checks {
            out.push(result(
                id,
                "pending",
                "DNS validation pending: waiting for the host's domain name resolution",
            ));
        }
        out.push(result(
            "dns-wildcard-not-configured",
            "pending",
            "DNS validation pending: waiting for the host's domain name resolution",
        ));
        return out;
    };
    let addrs = |name: &str| -> Vec<String> {
        parsed
            .resolutions
            .iter()
            .filter(|r| r.domain_name.trim_end_matches('.') == name)
            .flat_map(|r| r.ipv4_addresses.iter().chain(&r.ipv6_addresses).cloned())
            .collect()
    };
    let managed = managed_networking(p);
    for (id, name, vips) in checks {
        let got = addrs(name);
        let shown = if name.starts_with("console-openshift-console.apps.") {
            format!("*.apps.{cluster_name}.{}", p.base_dns_domain)
        } else {
            name.clone()
        };
        let wanted: Vec<&str> = vips.iter().map(|v| v.ip.as_str()).collect();
        out.push(if got.is_empty() && managed {
            result(
                id,
                "success",
                format!("Domain name resolution for the {shown} domain is not required (managed networking)"),
            )
        } else if got.is_empty() {
            result(
                id,
                "failure",
                format!("Couldn't resolve domain name {shown} on the host. To continue installation, create the necessary DNS entries to resolve this domain name to your cluster's {} IP address", if id.starts_with("apps") { "ingress" } else { "API" }),
            )
        } else if managed && !wanted.iter().any(|w| got.iter().any(|g| g == w)) {
            result(
                id,
                "failure",
                format!(
                    "Domain name {shown} resolves to {} on the host, not to the cluster's {} VIP {}",
                    got.join(", "),
                    if id.starts_with("apps") { "ingress" } else { "API" },
                    wanted.join(", ")
                ),
            )
        } else {
            result(
                id,
                "success",
                format!("Domain name resolution for the {shown} domain was successful or not required"),
            )
        });
    }
    let wildcard = addrs(&names[3]);
    out.push(if wildcard.is_empty() {
        result(
            "dns-wildcard-not-configured",
            "success",
            "DNS wildcard check was successful",
        )
    } else {
        result(
            "dns-wildcard-not-configured",
            "failure",
            format!(
                "DNS wildcard configuration was detected for domain *.{cluster_name}.{} - the installation will not be able to complete while this record exists. Please remove it to proceed. ({} resolved to {})",
                p.base_dns_domain,
                names[3],
                wildcard.join(", ")
            ),
        )
    });
    out
}

/// The `verify-vips` argument for a cluster with managed networking
/// (`None` otherwise, or without VIPs).
pub fn verify_vips_request(p: &ClusterParams) -> Option<Vec<VerifyVip>> {
    if !managed_networking(p) {
        return None;
    }
    let list: Vec<VerifyVip> = p
        .api_vips
        .iter()
        .map(|v| (v, "api"))
        .chain(p.ingress_vips.iter().map(|v| (v, "ingress")))
        .map(|(v, t)| VerifyVip {
            vip: v.ip.clone(),
            vip_type: t.into(),
        })
        .collect();
    (!list.is_empty()).then_some(list)
}

/// What the hosts' `verify-vips` outputs say of `vip`: `Some(host ids)`
/// of the hosts that found it answering (in use), `None` when no host
/// verified it either way.
pub fn vip_in_use(vip: &str, outputs: &[(&str, &str)]) -> Option<Vec<String>> {
    let mut verified = false;
    let mut answering = Vec::new();
    for (id, out) in outputs {
        let Ok(r) = serde_json::from_str::<VerifyVipsResponse>(out) else {
            continue;
        };
        for v in r.vips.iter().filter(|v| v.vip == vip) {
            match v.verification.as_str() {
                "failed" => {
                    verified = true;
                    answering.push(id.to_string());
                }
                "succeeded" => verified = true,
                _ => {}
            }
        }
    }
    verified.then_some(answering)
}

/// `sufficient-installation-disk-speed` from the host's
/// `installation-disk-speed-check` output (JSON text, `''` when not
/// measured: it is measured while preparing the installation).
pub fn disk_speed_validation(output: &str) -> ValidationResult {
    const ID: &str = "sufficient-installation-disk-speed";
    match serde_json::from_str::<DiskSpeedCheckResponse>(output) {
        Err(_) => result(
            ID,
            "success",
            "Speed of installation disk has not yet been measured",
        ),
        Ok(r) if r.io_sync_duration > DISK_SPEED_THRESHOLD_MS => result(
            ID,
            "failure",
            format!(
                "While preparing the previous installation the installation disk speed measurement failed or was found to be insufficient ({}: fdatasync p99 {} ms, at most {DISK_SPEED_THRESHOLD_MS} ms)",
                r.path, r.io_sync_duration
            ),
        ),
        Ok(_) => result(ID, "success", "Speed of installation disk is sufficient"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use okd_assisted_api::steps::{ConnectivityRemoteHost, L2Connectivity};

    fn inv(ip: &str) -> Inventory {
        Inventory {
            interfaces: vec![okd_assisted_api::Interface {
                name: "eth0".into(),
                mac_address: "52:54:00:00:00:01".into(),
                ipv4_addresses: vec![format!("{ip}/24")],
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    fn report(pairs: &[(&str, &str, bool)]) -> String {
        serde_json::to_string(&ConnectivityReport {
            remote_hosts: pairs
                .iter()
                .map(|(id, ip, ok)| ConnectivityRemoteHost {
                    host_id: id.to_string(),
                    l2_connectivity: vec![L2Connectivity {
                        outgoing_nic: "eth0".into(),
                        outgoing_ip_address: "x".into(),
                        remote_ip_address: ip.to_string(),
                        remote_mac: String::new(),
                        successful: *ok,
                    }],
                    l3_connectivity: vec![],
                    mtu_report: vec![],
                })
                .collect(),
        })
        .unwrap()
    }

    #[test]
    fn majority_group_leaves_out_the_host_cut_off() {
        let net: IpNet = "10.0.0.0/24".parse().unwrap();
        let ips = [
            ("a", "10.0.0.1"),
            ("b", "10.0.0.2"),
            ("c", "10.0.0.3"),
            ("d", "10.0.0.4"),
        ];
        let invs: Vec<Vec<IpNet>> = ips
            .iter()
            .map(|(_, ip)| crate::validate::host_networks(&inv(ip)))
            .collect();
        // d reaches nobody and nobody reaches d; a, b, c see each other.
        let reps: Vec<String> = ips
            .iter()
            .map(|(me, _)| {
                let pairs: Vec<(&str, &str, bool)> = ips
                    .iter()
                    .filter(|(o, _)| o != me)
                    .map(|(o, ip)| (*o, *ip, *me != "d" && *o != "d"))
                    .collect();
                report(&pairs)
            })
            .collect();
        let hosts: Vec<(&str, Option<&[IpNet]>, &str)> = ips
            .iter()
            .zip(&invs)
            .zip(&reps)
            .map(|(((id, _), i), r)| (*id, Some(i.as_slice()), r.as_str()))
            .collect();
        let m = majority(&[net], &hosts);
        for id in ["a", "b", "c"] {
            assert_eq!(majority_validation(id, false, &m).status, "success", "{id}");
        }
        let d = majority_validation("d", false, &m);
        assert_eq!(d.status, "failure");
        assert_eq!(
            d.message,
            "No connectivity to the majority of hosts in the cluster"
        );
        // Two hosts reporting: pending.
        let m2 = majority(&[net], &hosts[..2]);
        assert_eq!(majority_validation("a", false, &m2).status, "pending");
        // A host that has not reported yet: pending, not failure.
        let mut late = hosts.clone();
        late[3].2 = "";
        let m3 = majority(&[net], &late);
        assert_eq!(majority_validation("d", false, &m3).status, "pending");
        assert_eq!(majority_validation("a", false, &m3).status, "success");
        // The others checked before d registered (their reports do not
        // list d): d is pending, not failing.
        let early: Vec<String> = ips
            .iter()
            .map(|(me, _)| {
                let pairs: Vec<(&str, &str, bool)> = ips
                    .iter()
                    .filter(|(o, _)| o != me && (*me == "d" || *o != "d"))
                    .map(|(o, ip)| (*o, *ip, true))
                    .collect();
                report(&pairs)
            })
            .collect();
        let hosts4: Vec<(&str, Option<&[IpNet]>, &str)> = ips
            .iter()
            .zip(&invs)
            .zip(&early)
            .map(|(((id, _), i), r)| (*id, Some(i.as_slice()), r.as_str()))
            .collect();
        let m4 = majority(&[net], &hosts4);
        let d4 = majority_validation("d", false, &m4);
        assert_eq!(d4.status, "pending", "{d4:?}");
        assert_eq!(majority_validation("a", false, &m4).status, "success");
        // Single node: passes.
        assert_eq!(
            majority_validation("z", true, &Majority::Pending(String::new())).status,
            "success"
        );
    }

    #[test]
    fn one_way_reachability_does_not_join_a_group() {
        let edges = HashMap::from([
            (
                "a".to_string(),
                HashSet::from(["b".to_string(), "c".to_string()]),
            ),
            (
                "b".to_string(),
                HashSet::from(["a".to_string(), "c".to_string()]),
            ),
            ("c".to_string(), HashSet::from(["a".to_string()])),
        ]);
        let g = largest_group(&edges);
        assert_eq!(g.len(), 2, "{g:?}");
        assert!(g.contains("a"));
    }

    fn params(vips: bool, cp: u8) -> ClusterParams {
        let mut p = crate::model::defaults("4.19", None);
        p.base_dns_domain = "example.com".into();
        p.control_plane_count = cp;
        if vips {
            p.api_vips = vec![okd_assisted_api::rest::Vip {
                ip: "10.0.0.250".into(),
            }];
            p.ingress_vips = vec![okd_assisted_api::rest::Vip {
                ip: "10.0.0.251".into(),
            }];
        }
        p
    }

    fn resolved(pairs: &[(&str, &str)]) -> String {
        serde_json::to_string(&DomainResolutionResponse {
            resolutions: pairs
                .iter()
                .map(|(n, ip)| okd_assisted_api::steps::DomainResolution {
                    domain_name: n.to_string(),
                    ipv4_addresses: vec![ip.to_string()],
                    ..Default::default()
                })
                .collect(),
        })
        .unwrap()
    }

    #[test]
    fn domains_by_networking_kind() {
        let ha = params(true, 3);
        let by_id = |v: Vec<ValidationResult>| -> HashMap<String, (String, String)> {
            v.into_iter()
                .map(|r| (r.id, (r.status, r.message)))
                .collect()
        };
        // Nothing resolves: fine with managed networking.
        let v = by_id(domain_validations("c", &ha, &resolved(&[])));
        assert_eq!(v["api-domain-name-resolved-correctly"].0, "success");
        assert_eq!(v["dns-wildcard-not-configured"].0, "success");
        // api to the wrong address, a wildcard above the cluster.
        let v = by_id(domain_validations(
            "c",
            &ha,
            &resolved(&[
                ("api.c.example.com", "10.0.0.9"),
                ("console-openshift-console.apps.c.example.com", "10.0.0.251"),
                ("validateNoWildcardDNS.c.example.com", "10.0.0.7"),
            ]),
        ));
        assert_eq!(v["api-domain-name-resolved-correctly"].0, "failure");
        assert!(
            v["api-domain-name-resolved-correctly"]
                .1
                .contains("10.0.0.9"),
            "{:?}",
            v
        );
        assert_eq!(v["apps-domain-name-resolved-correctly"].0, "success");
        assert_eq!(v["dns-wildcard-not-configured"].0, "failure");
        // Single node: the names must resolve.
        let sno = params(false, 1);
        let v = by_id(domain_validations(
            "c",
            &sno,
            &resolved(&[("api.c.example.com", "10.0.0.5")]),
        ));
        assert_eq!(v["api-domain-name-resolved-correctly"].0, "success");
        assert_eq!(v["api-int-domain-name-resolved-correctly"].0, "failure");
        assert!(
            v["apps-domain-name-resolved-correctly"]
                .1
                .contains("*.apps.c.example.com")
        );
        // No reply yet: pending.
        let v = by_id(domain_validations("c", &ha, ""));
        assert_eq!(v["api-domain-name-resolved-correctly"].0, "pending");
    }

    #[test]
    fn vips_in_use_and_disk_speed() {
        let out = |v: &str| {
            format!(r#"{{"vips":[{{"vip":"10.0.0.250","vip_type":"api","verification":"{v}"}}]}}"#)
        };
        let (ok, bad, unv) = (out("succeeded"), out("failed"), out("unverified"));
        assert_eq!(
            vip_in_use("10.0.0.250", &[("a", &ok), ("b", &ok)]),
            Some(vec![])
        );
        assert_eq!(
            vip_in_use("10.0.0.250", &[("a", &ok), ("b", &bad)]),
            Some(vec!["b".to_string()])
        );
        assert_eq!(vip_in_use("10.0.0.250", &[("a", &unv), ("b", "")]), None);
        assert_eq!(vip_in_use("10.0.0.251", &[("a", &ok)]), None);
        assert_eq!(disk_speed_validation("").status, "success");
        assert_eq!(
            disk_speed_validation(r#"{"path":"/dev/vda","io_sync_duration":4}"#).status,
            "success"
        );
        let slow = disk_speed_validation(r#"{"path":"/dev/vda","io_sync_duration":25}"#);
        assert_eq!(slow.status, "failure");
        assert!(slow.message.contains("25 ms"));
    }
}
