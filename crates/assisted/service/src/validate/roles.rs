//! Role suggestion by weight and the machine networks
//! (assisted-service `internal/cluster/monitor` SortHosts,
//! `internal/network`).

use super::*;

/// A host's weight for role suggestion: `(cores − 4) + 0.1·(RAM GiB −
/// 16) + 0.004·(eligible disk GiB − 100)`; lighter hosts are considered
/// first (`monitor.go` SortHosts).
pub fn weight(inv: &Inventory) -> f64 {
    let gib = |b: u64| b as f64 / (1024.0 * 1024.0 * 1024.0);
    let disk = eligible_disks(inv, WORKER)
        .first()
        .map(|d| gib(d.size_bytes))
        .unwrap_or(0.0);
    (f64::from(inv.cpu.count) - 4.0)
        + 0.1 * (gib(inv.memory.physical_bytes) - 16.0)
        + 0.004 * (disk - 100.0)
}

/// What role suggestion needs of one host's inventory, kept for every
/// host of a cluster while its validations run page by page.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RoleFacts {
    /// [`weight`].
    pub weight: f64,
    /// Whether it meets the cluster's master requirement in CPU and
    /// memory ([`meets`]).
    pub meets_master: bool,
}

/// The [`RoleFacts`] of `inv` in `cluster`.
pub fn role_facts(cluster: &ClusterParams, inv: &Inventory) -> RoleFacts {
    let (cpu, mem) = meets(inv, requirement(cluster, "master"));
    RoleFacts {
        weight: weight(inv),
        meets_master: cpu && mem,
    }
}

/// Suggested roles for the cluster's auto-assign hosts, by index into
/// `hosts` (`(role, role facts of the inventory)`), once every host has an
/// inventory: hosts sorted by [`weight`]; each one becomes master while
/// fewer than `control_plane_count` hosts are masters and it meets the
/// master requirement, else worker (`host.go` AutoAssignRole). All `None`
/// while some host has no inventory.
pub fn suggest_roles(
    cluster: &ClusterParams,
    hosts: &[(&str, Option<RoleFacts>)],
) -> Vec<Option<&'static str>> {
    let mut out = vec![None; hosts.len()];
    if hosts.iter().any(|(_, f)| f.is_none()) {
        return out;
    }
    let mut masters = hosts.iter().filter(|(r, _)| *r == "master").count();
    let mut order: Vec<usize> = (0..hosts.len())
        .filter(|&i| hosts[i].0 == "auto-assign")
        .collect();
    let w = |i: usize| hosts[i].1.map(|f| f.weight).unwrap_or(0.0);
    order.sort_by(|&a, &b| w(a).total_cmp(&w(b)).then(a.cmp(&b)));
    let want = usize::from(cluster.control_plane_count);
    for i in order {
        let meets_master = hosts[i].1.is_some_and(|f| f.meets_master);
        if masters < want && meets_master {
            masters += 1;
            out[i] = Some("master");
        } else {
            out[i] = Some("worker");
        }
    }
    out
}

/// The machine networks in force: the user's, else the network of a
/// host address that holds the API VIP (assisted-service computes it from
/// the VIPs the same way).
pub fn machine_networks(cluster: &ClusterParams, inventories: &[&Inventory]) -> Vec<Cidr> {
    let addrs: Vec<IpNet> = inventories.iter().flat_map(|i| host_networks(i)).collect();
    machine_networks_of(cluster, &addrs)
}

/// [`machine_networks`] from the hosts' addresses ([`host_networks`]).
pub fn machine_networks_of(cluster: &ClusterParams, host_addresses: &[IpNet]) -> Vec<Cidr> {
    if !cluster.machine_networks.is_empty() {
        return cluster.machine_networks.clone();
    }
    let Some(vip) = cluster
        .api_vips
        .first()
        .and_then(|v| v.ip.parse::<IpAddr>().ok())
    else {
        return vec![];
    };
    host_addresses
        .iter()
        .find(|n| n.contains(&vip))
        .map(|n| {
            vec![Cidr {
                cidr: n.trunc().to_string(),
            }]
        })
        .unwrap_or_default()
}
