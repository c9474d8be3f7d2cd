//! The cluster's validations and its pre-install status
//! (assisted-service `internal/cluster/validator.go`,
//! `internal/cluster/statemachine.go`).

use super::*;

/// What the cluster validations look at.
#[derive(Debug, Clone)]
pub struct ClusterFacts<'a> {
    /// The settings.
    pub params: &'a ClusterParams,
    /// Whether a pull secret is stored.
    pub pull_secret_set: bool,
    /// The machine networks in force.
    pub machine_networks: &'a [Cidr],
    /// Each host's status and effective role.
    pub hosts: Vec<(&'a str, &'a str)>,
    /// Each host's clock at its last poll, Unix s.
    pub host_clocks: Vec<i64>,
    /// Each host's id and `verify-vips` output (JSON text, `''` for none).
    pub verified_vips: Vec<(&'a str, &'a str)>,
}

fn vip_valid(
    id: &str,
    kind: &str,
    vips: &[okd_assisted_api::rest::Vip],
    nets: &[Cidr],
    verified: &[(&str, &str)],
) -> ValidationResult {
    let Some(vip) = vips.first() else {
        return result(id, "pending", format!("{kind} virtual IPs are undefined"));
    };
    let Ok(ip) = vip.ip.parse::<IpAddr>() else {
        return result(
            id,
            "failure",
            format!("{kind} virtual IP {} is not a valid IP address", vip.ip),
        );
    };
    if nets.is_empty() {
        return result(
            id,
            "pending",
            format!("{kind} virtual IPs are undefined or machine network is not set"),
        );
    }
    let inside = nets.iter().any(|n| {
        n.cidr
            .parse::<IpNet>()
            .map(|n| n.contains(&ip) && ip != n.network() && ip != n.broadcast())
            .unwrap_or(false)
    });
    let cidrs = || {
        nets.iter()
            .map(|n| n.cidr.as_str())
            .collect::<Vec<_>>()
            .join(",")
    };
    if inside {
        match crate::network::vip_in_use(&vip.ip, verified) {
            None => result(
                id,
                "pending",
                format!(
                    "{kind} virtual IP {} belongs to the Machine CIDR; waiting for the hosts to verify that it is not in use",
                    vip.ip
                ),
            ),
            Some(answering) if !answering.is_empty() => result(
                id,
                "failure",
                format!(
                    "{kind} virtual IP {} is already in use in cidr {} (hosts {} saw it answer ARP)",
                    vip.ip,
                    cidrs(),
                    answering.join(", ")
                ),
            ),
            Some(_) => result(
                id,
                "success",
                format!(
                    "{kind} virtual IPs {} belongs to the Machine CIDR and is not in use.",
                    vip.ip
                ),
            ),
        }
    } else {
        result(
            id,
            "failure",
            format!(
                "{kind} virtual IP {} does not belong to machine-network-cidr {}",
                vip.ip,
                nets.iter()
                    .map(|n| n.cidr.as_str())
                    .collect::<Vec<_>>()
                    .join(",")
            ),
        )
    }
}

/// Cluster validations (ids and messages of assisted-service's cluster
/// validator, the ones this service computes).
pub fn cluster_validations(c: &ClusterFacts<'_>) -> Validations {
    let p = c.params;
    let mut v = Validations::default();
    let cfg = &mut v.configuration;
    cfg.push(if c.pull_secret_set {
        result("pull-secret-set", "success", "The pull secret is set.")
    } else {
        result("pull-secret-set", "failure", "The pull secret is not set.")
    });
    cfg.push(if p.base_dns_domain.is_empty() {
        result(
            "dns-domain-defined",
            "failure",
            "The base domain is undefined and must be provided.",
        )
    } else {
        result(
            "dns-domain-defined",
            "success",
            "The base domain is defined.",
        )
    });
    let net = &mut v.network;
    net.push(if c.machine_networks.is_empty() {
        result(
            "machine-cidr-defined",
            "pending",
            "The Machine Network CIDR is undefined; setting the API or Ingress virtual IPs defines it from the hosts' networks.",
        )
    } else {
        result("machine-cidr-defined", "success", "The Machine Network CIDR is defined.")
    });
    net.push(if p.cluster_networks.is_empty() {
        result(
            "cluster-cidr-defined",
            "failure",
            "The Cluster Network CIDR is undefined.",
        )
    } else {
        result(
            "cluster-cidr-defined",
            "success",
            "The Cluster Network CIDR is defined.",
        )
    });
    net.push(if p.service_networks.is_empty() {
        result(
            "service-cidr-defined",
            "failure",
            "The Service Network CIDR is undefined.",
        )
    } else {
        result(
            "service-cidr-defined",
            "success",
            "The Service Network CIDR is defined.",
        )
    });
    let sno = p.control_plane_count == 1;
    for (id, kind, vips) in [
        ("api-vips-defined", "API", &p.api_vips),
        ("ingress-vips-defined", "Ingress", &p.ingress_vips),
    ] {
        net.push(if sno || !vips.is_empty() {
            result(id, "success", format!("{kind} virtual IPs are defined."))
        } else {
            result(
                id,
                "failure",
                format!("{kind} virtual IPs are undefined and must be provided."),
            )
        });
    }
    if sno {
        net.push(result(
            "api-vips-valid",
            "success",
            "API virtual IPs are not required: SNO",
        ));
        net.push(result(
            "ingress-vips-valid",
            "success",
            "Ingress virtual IPs are not required: SNO",
        ));
    } else {
        net.push(vip_valid(
            "api-vips-valid",
            "API",
            &p.api_vips,
            c.machine_networks,
            &c.verified_vips,
        ));
        net.push(vip_valid(
            "ingress-vips-valid",
            "Ingress",
            &p.ingress_vips,
            c.machine_networks,
            &c.verified_vips,
        ));
    }
    let nets: Vec<IpNet> = p
        .cluster_networks
        .iter()
        .map(|n| n.cidr.as_str())
        .chain(p.service_networks.iter().map(|n| n.cidr.as_str()))
        .chain(c.machine_networks.iter().map(|n| n.cidr.as_str()))
        .filter_map(|s| s.parse().ok())
        .collect();
    let overlap = nets.iter().enumerate().find_map(|(i, a)| {
        nets[i + 1..]
            .iter()
            .find(|b| a.contains(&b.network()) || b.contains(&a.network()))
            .map(|b| (a, b))
    });
    net.push(match overlap {
        Some((a, b)) => result(
            "no-cidrs-overlapping",
            "failure",
            format!("CIDRS {a} and {b} overlap"),
        ),
        None => result(
            "no-cidrs-overlapping",
            "success",
            "No CIDRS are overlapping.",
        ),
    });
    net.push(
        if matches!(p.network_type.as_str(), "OVNKubernetes" | "OpenShiftSDN") {
            result(
                "network-type-valid",
                "success",
                "The cluster has a valid network type",
            )
        } else {
            result(
                "network-type-valid",
                "failure",
                format!("The network type {} is not supported", p.network_type),
            )
        },
    );
    let (lo, hi) = (
        c.host_clocks.iter().filter(|&&t| t > 0).min(),
        c.host_clocks.iter().filter(|&&t| t > 0).max(),
    );
    net.push(match (lo, hi) {
        (Some(lo), Some(hi)) if hi - lo > 4 * 60 => result(
            "ntp-server-configured",
            "failure",
            "Hosts' clocks are not synchronized (there is more than a 4 minutes gap between clocks), please configure an NTP server via DHCP or set clocks manually.",
        ),
        _ => result(
            "ntp-server-configured",
            "success",
            "No ntp problems found",
        ),
    });
    let hd = &mut v.hosts_data;
    let all_ready = !c.hosts.is_empty() && c.hosts.iter().all(|(s, _)| *s == "known");
    hd.push(if all_ready {
        result(
            "all-hosts-are-ready-to-install",
            "success",
            "All hosts in the cluster are ready to install.",
        )
    } else {
        result(
            "all-hosts-are-ready-to-install",
            "failure",
            "The cluster has hosts that are not ready to install.",
        )
    });
    let masters = c.hosts.iter().filter(|(_, r)| *r == "master").count();
    let workers = c.hosts.iter().filter(|(_, r)| *r == "worker").count();
    let want = usize::from(p.control_plane_count);
    hd.push(if masters == want && (!sno || workers == 0) {
        result(
            "sufficient-masters-count",
            "success",
            "The cluster has the exact amount of dedicated control plane nodes.",
        )
    } else if sno {
        result(
            "sufficient-masters-count",
            "failure",
            "Single-node clusters must have a single control plane node and no workers.",
        )
    } else {
        result(
            "sufficient-masters-count",
            "failure",
            format!(
                "The cluster must have exactly {want} dedicated control plane nodes. Add or remove hosts, or change their roles configurations to meet the requirement."
            ),
        )
    });
    v
}

/// Cluster validations that make the input complete ("pending
/// conditions" and "vips defined").
pub const CLUSTER_INPUT: &[&str] = &[
    "machine-cidr-defined",
    "cluster-cidr-defined",
    "service-cidr-defined",
    "dns-domain-defined",
    "pull-secret-set",
    "api-vips-defined",
    "ingress-vips-defined",
];
/// Cluster validations required for install.
pub const CLUSTER_REQUIRED: &[&str] = &[
    "api-vips-valid",
    "ingress-vips-valid",
    "all-hosts-are-ready-to-install",
    "sufficient-masters-count",
    "no-cidrs-overlapping",
    "ntp-server-configured",
    "network-type-valid",
];

/// The cluster's next pre-install status and its words (sources
/// pending-for-input, ready, insufficient; `None` otherwise).
pub fn cluster_status(current: &str, v: &Validations) -> Option<(&'static str, String)> {
    if !matches!(current, "pending-for-input" | "ready" | "insufficient") {
        return None;
    }
    if !v.passed(CLUSTER_INPUT) {
        return Some(("pending-for-input", "User input required".into()));
    }
    if !v.passed(CLUSTER_REQUIRED) {
        return Some(("insufficient", "Cluster is not ready for install".into()));
    }
    Some(("ready", "Cluster ready to be installed".into()))
}
