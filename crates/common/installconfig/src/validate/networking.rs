//! `networking`: machine, service and cluster networks, host prefixes, OVN
//! reserved ranges, IP families and the baremetal VIPs (openshift/installer
//! pkg/types/validation/installconfig.go validateNetworking).

use okd_types::release::ReleaseTarget;

use super::*;

pub(super) fn overlaps(a: &IpNet, b: &IpNet) -> bool {
    match (a, b) {
        (IpNet::V4(_), IpNet::V4(_)) | (IpNet::V6(_), IpNet::V6(_)) => {
            a.contains(&b.network()) || b.contains(&a.network())
        }
        _ => false,
    }
}

/// Parses a CIDR and checks it is a network address; reports under `path`.
pub(super) fn cidr(path: &str, s: &str, e: &mut Errs) -> Option<IpNet> {
    if s.is_empty() {
        e.required(path, "address must be specified");
        return None;
    }
    match s.parse::<IpNet>() {
        Ok(n) if n.trunc() == n => Some(n),
        Ok(n) => {
            e.invalid(
                path,
                s,
                format!("invalid network address. got {s}, expecting {}", n.trunc()),
            );
            None
        }
        Err(_) => {
            e.invalid(path, s, format!("invalid CIDR address: {s}"));
            None
        }
    }
}

pub(super) fn is_v4(n: &IpNet) -> bool {
    matches!(n, IpNet::V4(_))
}

/// Checks one network list for the both-family/ordering rules of
/// `pkg/types/validation/installconfig.go`.
pub(super) fn family_rules(
    path: &str,
    nets: &[IpNet],
    dual: bool,
    allow_v6_primary: bool,
    e: &mut Errs,
) {
    if nets.is_empty() {
        return;
    }
    let has4 = nets.iter().any(is_v4);
    let has6 = nets.iter().any(|n| !is_v4(n));
    if dual {
        if !has6 {
            e.invalid(
                path,
                &join_nets(nets),
                "dual-stack IPv4/IPv6 requires an IPv6 network in this list",
            );
        }
        if !has4 {
            e.invalid(
                path,
                &join_nets(nets),
                "dual-stack IPv4/IPv6 requires an IPv4 network in this list",
            );
        }
        if has4 && has6 && !is_v4(&nets[0]) && !allow_v6_primary {
            e.invalid(
                path,
                &join_nets(nets),
                "IPv4 addresses must be listed before IPv6 addresses",
            );
        }
    }
}

pub(super) fn join_nets(nets: &[IpNet]) -> String {
    nets.iter()
        .map(|n| n.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The shape of one networking check: the config and the networks already parsed.
struct Nets<'a> {
    machine: &'a [IpNet],
    service: &'a [IpNet],
    cluster: &'a [IpNet],
}

pub(super) fn networking(
    c: &InstallConfig,
    n: &Networking,
    o: &LoadOptions,
    e: &mut Errs,
    warnings: &mut Vec<String>,
) {
    let t = o.target;
    let ovn = n.network_type == "OVNKubernetes";
    network_type(n, t, e);
    let machine = machine_networks(n, e, warnings);
    let service = service_networks(n, &machine, e);
    let cluster = cluster_networks(n, ovn, &machine, &service, e);
    let nets = Nets {
        machine: &machine,
        service: &service,
        cluster: &cluster,
    };
    if ovn {
        ovn_reserved(n, t, &nets, e);
    }
    ovn_config(n, ovn, &nets, e);
    if n.cluster_network_mtu != 0 && c.platform_kind() != Some(P::Aws) {
        e.invalid_n(
            "networking.clusterNetworkMTU",
            n.cluster_network_mtu,
            "cluster network MTU is allowed only in AWS deployments",
        );
    }
    ip_families(c, n, &nets, e);
    // VIPs (baremetal)
    if let Some(b) = &c.platform.baremetal {
        let user_lb = b
            .load_balancer
            .as_ref()
            .is_some_and(|l| l.lb_type == "UserManaged");
        vips(b, &machine, user_lb, e);
    }
}

/// `networkType`: required, no Kuryr after 4.14, no OpenShiftSDN where the target refuses it.
fn network_type(n: &Networking, t: ReleaseTarget, e: &mut Errs) {
    if n.network_type.is_empty() {
        e.required("networking.networkType", "network provider type required");
    } else if n.network_type.eq_ignore_ascii_case("Kuryr") && t.at_least(15) {
        e.invalid(
            "networking.networkType",
            &n.network_type,
            "networkType Kuryr is not supported on OpenShift later than 4.14",
        );
    } else if n.network_type == "OpenShiftSDN" && !t.allows_openshift_sdn() {
        e.invalid(
            "networking.networkType",
            &n.network_type,
            format!(
                "networkType OpenShiftSDN is not supported, please use OVNKubernetes (the target release is {t}; a config for 4.14 or earlier needs its release, e.g. --release-image quay.io/openshift/okd:4.5.0-0.okd-2020-08-12-020541)"
            ),
        );
    }
}

/// `machineNetwork[]`: network addresses, Docker bridge warning, no overlap.
fn machine_networks(n: &Networking, e: &mut Errs, warnings: &mut Vec<String>) -> Vec<IpNet> {
    let mut machine: Vec<IpNet> = Vec::new();
    if n.machine_network.is_empty() {
        e.required(
            "networking.machineNetwork",
            "at least one machine network is required",
        );
    }
    let docker: IpNet = "172.17.0.0/16".parse().expect("static");
    for (i, m) in n.machine_network.iter().enumerate() {
        let path = format!("networking.machineNetwork[{i}].cidr");
        if let Some(net) = cidr(&path, &m.cidr, e) {
            if overlaps(&net, &docker) {
                warnings.push(format!(
                    "{path}: {} overlaps with default Docker Bridge subnet",
                    m.cidr
                ));
            }
            if let Some(j) = machine.iter().position(|p| overlaps(p, &net)) {
                e.invalid(
                    &format!("networking.machineNetwork[{i}]"),
                    &m.cidr,
                    format!("machine network must not overlap with machine network {j}"),
                );
            }
            machine.push(net);
        }
    }
    machine
}

/// `serviceNetwork[]`: size, no overlap with machine or earlier service networks, one per family.
fn service_networks(n: &Networking, machine: &[IpNet], e: &mut Errs) -> Vec<IpNet> {
    let mut service: Vec<IpNet> = Vec::new();
    if n.service_network.is_empty() {
        e.required("networking.serviceNetwork", "a service network is required");
    }
    for (i, s) in n.service_network.iter().enumerate() {
        let path = format!("networking.serviceNetwork[{i}]");
        let Some(net) = cidr(&path, s, e) else {
            continue;
        };
        match net {
            IpNet::V4(v) if v.prefix_len() < 12 => e.invalid(
                &path,
                s,
                "subnet size for IPv4 service network must be /12 or greater (/16 is recommended)",
            ),
            IpNet::V6(v) if v.prefix_len() < 108 => e.invalid(
                &path,
                s,
                "subnet size for IPv6 service network should be /112",
            ),
            _ => {}
        }
        if machine.iter().any(|m| overlaps(m, &net)) {
            e.invalid(
                &path,
                s,
                "service network must not overlap with any of the machine networks",
            );
        }
        if let Some(j) = service.iter().position(|p| overlaps(p, &net)) {
            e.invalid(
                &path,
                s,
                format!("service network must not overlap with service network {j}"),
            );
        }
        service.push(net);
    }
    let svc4 = service.iter().filter(|n| is_v4(n)).count();
    let svc6 = service.len() - svc4;
    if service.len() > 1 && svc6 == 0 {
        e.invalid(
            "networking.serviceNetwork",
            &n.service_network.join(", "),
            "only one service network can be specified",
        );
    }
    service
}

/// `clusterNetwork[]`: CIDRs without overlaps, and the `hostPrefix` rules.
fn cluster_networks(
    n: &Networking,
    ovn: bool,
    machine: &[IpNet],
    service: &[IpNet],
    e: &mut Errs,
) -> Vec<IpNet> {
    let mut cluster: Vec<IpNet> = Vec::new();
    if n.cluster_network.is_empty() {
        e.required("networking.clusterNetwork", "cluster network required");
    }
    let mut v4_prefix: Option<i64> = None;
    for (i, cn) in n.cluster_network.iter().enumerate() {
        let path = format!("networking.clusterNetwork[{i}]");
        let net = cidr(&format!("{path}.cidr"), &cn.cidr, e);
        if let Some(net) = net {
            if machine.iter().any(|m| overlaps(m, &net)) {
                e.invalid(
                    &format!("{path}.cidr"),
                    &cn.cidr,
                    "cluster network must not overlap with any of the machine networks",
                );
            }
            for (j, s) in service.iter().enumerate() {
                if overlaps(s, &net) {
                    e.invalid(
                        &format!("{path}.cidr"),
                        &cn.cidr,
                        format!("cluster network must not overlap with service network {j}"),
                    );
                }
            }
            if let Some(j) = cluster.iter().position(|p| overlaps(p, &net)) {
                e.invalid(
                    &format!("{path}.cidr"),
                    &cn.cidr,
                    format!("cluster network must not overlap with cluster network {j}"),
                );
            }
            cluster.push(net);
        }
        if ovn || cn.host_prefix != 0 {
            let hp = format!("{path}.hostPrefix");
            if cn.host_prefix < 0 {
                e.invalid_n(&hp, cn.host_prefix, "hostPrefix must be positive");
            } else if let Some(net) = net {
                if cn.host_prefix < i64::from(net.prefix_len()) {
                    e.invalid_n(&hp, cn.host_prefix, format!("cluster network host subnetwork prefix must not be larger size than CIDR {}", cn.cidr));
                } else if is_v4(&net) && cn.host_prefix > 32 {
                    // Not an openshift-install rule (it leaves this to the
                    // network operator); no IPv4 prefix is longer than 32.
                    e.invalid_n(&hp, cn.host_prefix, "cluster network host subnetwork prefix must be at most 32 for IPv4 networks");
                } else if is_v4(&net) {
                    match v4_prefix {
                        Some(p) if p != cn.host_prefix => {
                            e.invalid_n(&hp, cn.host_prefix, "cluster network host subnetwork prefix must be the same value for IPv4 networks")
                        }
                        _ => v4_prefix = Some(cn.host_prefix),
                    }
                } else if cn.host_prefix != 64 {
                    e.invalid_n(
                        &hp,
                        cn.host_prefix,
                        "cluster network host subnetwork prefix must be 64 for IPv6 networks",
                    );
                }
            }
        }
    }
    cluster
}

/// OVN-Kubernetes' reserved join, transit and masquerade subnets (pkg/validate/validate.go).
fn ovn_reserved(n: &Networking, t: ReleaseTarget, nets: &Nets<'_>, e: &mut Errs) {
    let (machine, service, cluster) = (nets.machine, nets.service, nets.cluster);
    let join_override = n.internal_join_subnet();
    {
        let masq4 = if t.at_least(18) {
            "169.254.0.0/17"
        } else {
            "169.254.169.0/29"
        };
        let masq6 = if t.at_least(18) {
            "fd69::/112"
        } else {
            "fd69::/125"
        };
        let mut reserved: Vec<(&str, String)> = Vec::new();
        if join_override.is_none() {
            reserved.push(("internal", "100.64.0.0/16".to_string()));
        }
        reserved.push(("transit", "100.88.0.0/16".to_string()));
        reserved.push(("masquerade", masq4.to_string()));
        reserved.push(("internal", "fd98::/64".to_string()));
        reserved.push(("transit", "fd97::/64".to_string()));
        reserved.push(("masquerade", masq6.to_string()));
        let lists: [(&str, &[IpNet]); 3] = [
            ("networking.machineNetwork", machine),
            ("networking.serviceNetwork", service),
            ("networking.clusterNetwork", cluster),
        ];
        for (base, nets) in lists.iter() {
            for (i, net) in nets.iter().enumerate() {
                for (kind, r) in &reserved {
                    let rn: IpNet = r.parse().expect("static");
                    if overlaps(net, &rn) {
                        let path = if *base == "networking.serviceNetwork" {
                            format!("{base}[{i}]")
                        } else {
                            format!("{base}[{i}].cidr")
                        };
                        e.invalid(
                            &path,
                            &net.to_string(),
                            format!(
                                "must not overlap with OVNKubernetes default {kind} subnet {r}"
                            ),
                        );
                    }
                }
            }
        }
    }
}

/// `ovnKubernetesConfig`: OVN only; the join subnet free and large enough.
fn ovn_config(n: &Networking, ovn: bool, nets: &Nets<'_>, e: &mut Errs) {
    let (machine, service, cluster) = (nets.machine, nets.service, nets.cluster);
    if let Some(ovnc) = &n.ovn_kubernetes_config {
        let path = "networking.ovnKubernetesConfig";
        if !ovn {
            e.invalid(
                path,
                &n.network_type,
                "ovnKubernetesConfig is only allowed with the OVNKubernetes network type",
            );
        } else if let Some(j) = ovnc
            .ipv4
            .as_ref()
            .and_then(|v| v.internal_join_subnet.as_deref())
        {
            let jp = "networking.ovnKubernetesConfig.ipv4.internalJoinSubnet";
            if let Some(join) = cidr(jp, j, e) {
                if !is_v4(&join) {
                    e.invalid(jp, j, "internalJoinSubnet must be an IPv4 network");
                } else {
                    for (kind, nets) in [
                        ("cluster", &cluster),
                        ("machine", &machine),
                        ("service", &service),
                    ] {
                        if nets.iter().any(|x| overlaps(x, &join)) {
                            e.invalid(jp, j, format!("must not overlap with {kind} network"));
                        }
                    }
                    let mut nodes: u128 = 0;
                    for cn in &n.cluster_network {
                        if let Ok(IpNet::V4(v)) = cn.cidr.parse::<IpNet>()
                            && let Some(d) = cn.host_prefix.checked_sub(i64::from(v.prefix_len()))
                            && (0..64).contains(&d)
                        {
                            nodes = nodes.saturating_add(1u128 << d);
                        }
                    }
                    let cap = (1u128 << (32 - u32::from(join.prefix_len()))).saturating_sub(3);
                    if nodes >= cap {
                        e.invalid(
                            jp,
                            j,
                            "ipv4InternalJoinSubnet is not large enough for the maximum number of nodes which can be supported by ClusterNetwork",
                        );
                    }
                }
            }
        }
    }
}

/// Dual stack and IPv6 per platform, and the family order of each list.
fn ip_families(c: &InstallConfig, n: &Networking, nets: &Nets<'_>, e: &mut Errs) {
    let (machine, service, cluster) = (nets.machine, nets.service, nets.cluster);
    let svc4 = service.iter().filter(|n| is_v4(n)).count();
    let svc6 = service.len() - svc4;
    let all: Vec<&IpNet> = machine.iter().chain(service).chain(cluster).collect();
    let has4 = all.iter().any(|n| is_v4(n));
    let has6 = all.iter().any(|n| !is_v4(n));
    let plat = c.platform_kind();
    // openshift-install's list also has ovirt, which this model does not know.
    let v6_ok = matches!(
        plat,
        Some(P::None | P::External | P::Baremetal | P::VSphere | P::OpenStack | P::Nutanix)
    );
    let v6_primary_ok = matches!(plat, Some(P::Baremetal | P::VSphere | P::OpenStack));
    if has4 && has6 {
        if !v6_ok {
            e.invalid("networking", &join_nets(&all.iter().map(|n| **n).collect::<Vec<_>>()), "dual-stack IPv4/IPv6 is not supported for this platform, specify only one type of address");
        } else {
            if !(svc4 == 1 && svc6 == 1) {
                e.invalid(
                    "networking.serviceNetwork",
                    &n.service_network.join(", "),
                    "when installing dual-stack IPv4/IPv6 you must provide two service networks, one for each IP address type",
                );
            }
            family_rules("networking.machineNetwork", machine, true, v6_primary_ok, e);
            family_rules("networking.serviceNetwork", service, true, v6_primary_ok, e);
            family_rules("networking.clusterNetwork", cluster, true, v6_primary_ok, e);
        }
    } else if has6 && !v6_ok {
        e.invalid(
            "networking",
            &join_nets(&all.iter().map(|n| **n).collect::<Vec<_>>()),
            "single-stack IPv6 is not supported for this platform",
        );
    }
}

pub(super) fn vips(b: &BaremetalPlatform, machine: &[IpNet], user_lb: bool, e: &mut Errs) {
    for (field, list, what) in [
        ("apiVIPs", &b.api_vips, "API"),
        ("ingressVIPs", &b.ingress_vips, "Ingress"),
    ] {
        let path = format!("platform.baremetal.{field}");
        if list.is_empty() {
            e.required(
                &path,
                &format!("must specify at least one VIP for the {what}"),
            );
            continue;
        }
        if list.len() > 2 {
            e.too_many(&path, list.len(), 2);
            continue;
        }
        for v in list.iter() {
            let Ok(ip) = v.parse::<IpAddr>() else {
                e.invalid(&path, v, format!("{v:?} is not a valid IP"));
                continue;
            };
            if user_lb {
                continue;
            }
            if field == "apiVIPs" && b.ingress_vips.iter().any(|i| i == v) {
                e.invalid(&path, v, "VIP for API must not be one of the Ingress VIPs");
            }
            if !machine.iter().any(|m| m.contains(&ip)) {
                e.invalid(
                    &path,
                    v,
                    format!(
                        "IP expected to be in one of the machine networks: {}",
                        machine
                            .iter()
                            .map(|m| m.to_string())
                            .collect::<Vec<_>>()
                            .join(",")
                    ),
                );
            }
        }
    }
}
