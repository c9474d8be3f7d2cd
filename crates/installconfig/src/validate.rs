//! `ValidateInstallConfig` (installer.md §2.4), in evaluation order.
//!
//! Every error is a k8s field-error text (`<path>: Invalid value: "<v>": <detail>`,
//! `Required value`, `Unsupported value`, `Forbidden`, `Duplicate value`, `Too many`).

use std::net::IpAddr;

use base64::Engine as _;
use ipnet::IpNet;
use serde_json::Value;

use crate::LoadOptions;
use crate::types::*;

const RFC1123_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

const PLATFORMS: &str =
    "aws, azure, baremetal, external, gcp, ibmcloud, none, nutanix, openstack, powervs, vsphere";

/// Collector of field errors.
#[derive(Default)]
struct Errs(Vec<String>);

impl Errs {
    fn invalid(&mut self, path: &str, value: &str, detail: impl AsRef<str>) {
        self.0.push(format!(
            "{path}: Invalid value: {}: {}",
            quote(value),
            detail.as_ref()
        ));
    }
    fn invalid_n(&mut self, path: &str, value: i64, detail: impl AsRef<str>) {
        self.0.push(format!(
            "{path}: Invalid value: {value}: {}",
            detail.as_ref()
        ));
    }
    /// `Invalid value` without the value (apimachinery's omitted value), for
    /// fields whose value is a secret.
    fn invalid_omitted(&mut self, path: &str, detail: impl AsRef<str>) {
        self.0
            .push(format!("{path}: Invalid value: {}", detail.as_ref()));
    }
    fn required(&mut self, path: &str, detail: &str) {
        self.0.push(format!("{path}: Required value: {detail}"));
    }
    fn unsupported(&mut self, path: &str, value: &str, supported: &[&str]) {
        let s: Vec<String> = supported.iter().map(|s| quote(s)).collect();
        self.0.push(format!(
            "{path}: Unsupported value: {}: supported values: {}",
            quote(value),
            s.join(", ")
        ));
    }
    fn forbidden(&mut self, path: &str, detail: &str) {
        self.0.push(format!("{path}: Forbidden: {detail}"));
    }
    fn duplicate(&mut self, path: &str, value: &str) {
        self.0
            .push(format!("{path}: Duplicate value: {}", quote(value)));
    }
    fn too_many(&mut self, path: &str, n: usize, max: usize) {
        self.0.push(format!(
            "{path}: Too many: {n}: must have at most {max} items"
        ));
    }
}

/// Go `%q` of a string (close enough: JSON string escaping).
fn quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

/// Runs every rule; returns the errors (empty when valid) and appends warnings.
pub(crate) fn validate(
    c: &InstallConfig,
    o: &LoadOptions,
    warnings: &mut Vec<String>,
) -> Vec<String> {
    let mut e = Errs::default();
    if c.api_version.is_empty() {
        e.required("apiVersion", "install-config version required");
        return e.0;
    }
    if c.api_version != "v1" {
        e.invalid(
            "apiVersion",
            &c.api_version,
            "install-config version must be \"v1\"",
        );
        return e.0;
    }
    ssh_key(c, o, &mut e);
    trust_bundle(c, &mut e, warnings);
    if let Some(p) = c.additional_trust_bundle_policy.as_deref()
        && p != "Proxyonly"
        && p != "Always"
    {
        e.unsupported("additionalTrustBundlePolicy", p, &["Proxyonly", "Always"]);
    }
    names(c, &mut e);
    match &c.networking {
        Some(n) => networking(c, n, o, &mut e, warnings),
        None => e.required("networking", "networking is required"),
    }
    platform(c, &mut e);
    pools(c, &mut e);
    pull_secret(c, &mut e);
    if let Some(p) = &c.proxy {
        proxy(c, p, &mut e);
    }
    mirrors(c, o, &mut e, warnings);
    publish(c, &mut e);
    capabilities(c, o, &mut e);
    feature_set(c, &mut e);
    if let Some(m) = c.cpu_partitioning_mode.as_deref()
        && m != "None"
        && m != "AllNodes"
    {
        e.unsupported("cpuPartitioningMode", m, &["AllNodes", "None"]);
    }
    e.0
}

// ---------------------------------------------------------------- keys

const SSH_TYPES: &[&str] = &[
    "ssh-rsa",
    "ssh-dss",
    "ssh-ed25519",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "sk-ecdsa-sha2-nistp256@openssh.com",
    "sk-ssh-ed25519@openssh.com",
];

/// x/crypto/ssh ParseAuthorizedKey, reduced: returns the key type of the first
/// parsable line, or the ssh error text.
fn parse_authorized_key(text: &str) -> Result<String, String> {
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = line.split_whitespace().collect();
        for (i, f) in fields.iter().enumerate() {
            let base = f.strip_suffix("-cert-v01@openssh.com").unwrap_or(f);
            if !SSH_TYPES.contains(&base) && !SSH_TYPES.contains(f) {
                continue;
            }
            let Some(b64) = fields.get(i + 1) else {
                continue;
            };
            let Ok(blob) = base64::engine::general_purpose::STANDARD.decode(b64) else {
                continue;
            };
            if blob.len() < 4 {
                continue;
            }
            let n = u32::from_be_bytes([blob[0], blob[1], blob[2], blob[3]]) as usize;
            if blob.get(4..).and_then(|b| b.get(..n)) != Some(f.as_bytes()) {
                continue;
            }
            return Ok((*f).to_string());
        }
    }
    Err("ssh: no key found".to_string())
}

/// The `sshKey` detail text, or `None` when valid (non-FIPS rule of §2.4).
pub(crate) fn ssh_key_error(key: &str) -> Option<String> {
    parse_authorized_key(key).err()
}

fn ssh_key(c: &InstallConfig, o: &LoadOptions, e: &mut Errs) {
    let key = c.ssh_key.as_deref().unwrap_or("");
    if c.fips {
        if !key.is_empty() {
            match parse_authorized_key(key) {
                Ok(t) => {
                    let ok = t == "ssh-rsa"
                        || (t.starts_with("ecdsa-sha2-nistp")
                            && t.len() == 19
                            && t[16..].bytes().all(|b| b.is_ascii_digit()));
                    if !ok {
                        e.invalid("sshKey", key, format!("SSH key type {t} unavailable when FIPS is enabled. Please use rsa or ecdsa."));
                    }
                }
                Err(err) => e.invalid(
                    "sshKey",
                    key,
                    format!("Fatal error trying to parse configured public key: {err}"),
                ),
            }
        }
        if !o.host_fips {
            e.forbidden(
                "fips",
                "target cluster is in FIPS mode, operation requires FIPS mode, but current host is not FIPS-enabled (/proc/sys/crypto/fips_enabled is not 1)",
            );
        }
    } else if !key.is_empty()
        && let Err(err) = parse_authorized_key(key)
    {
        e.invalid("sshKey", key, err);
    }
}

fn trust_bundle(c: &InstallConfig, e: &mut Errs, warnings: &mut Vec<String>) {
    let Some(bundle) = c.additional_trust_bundle.as_deref() else {
        return;
    };
    if bundle.is_empty() {
        return;
    }
    let mut rest = bundle.as_bytes();
    let mut any = false;
    loop {
        match x509_parser::pem::parse_x509_pem(rest) {
            Ok((r, pem)) => {
                any = true;
                rest = r;
                match pem.parse_x509() {
                    Ok(cert) => {
                        let now = time::OffsetDateTime::now_utc().unix_timestamp();
                        let exp = cert.validity().not_after;
                        if exp.timestamp() < now {
                            warnings.push(format!(
                                "additionalTrustBundle: certificate {:?} expired on {} (clients will reject it; replace it before installing)",
                                cert.subject().to_string(),
                                exp
                            ));
                        }
                    }
                    Err(err) => {
                        e.invalid(
                            "additionalTrustBundle",
                            bundle,
                            format!("x509: malformed certificate: {err}"),
                        );
                        return;
                    }
                }
                if rest.iter().all(|b| b.is_ascii_whitespace()) {
                    break;
                }
            }
            Err(_) => {
                if !any || !rest.iter().all(|b| b.is_ascii_whitespace()) {
                    e.invalid("additionalTrustBundle", bundle, "invalid block");
                }
                break;
            }
        }
    }
}

// ---------------------------------------------------------------- names

fn is_label(l: &str) -> bool {
    let b = l.as_bytes();
    !b.is_empty()
        && b[0].is_ascii_lowercase() | b[0].is_ascii_digit()
        && (b[b.len() - 1].is_ascii_lowercase() || b[b.len() - 1].is_ascii_digit())
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
}

/// k8s IsDNS1123Subdomain error texts.
fn dns1123_subdomain(v: &str) -> Vec<String> {
    let mut out = Vec::new();
    if v.len() > 253 {
        out.push("must be no more than 253 characters".to_string());
    }
    if !v.split('.').all(is_label) {
        out.push(RFC1123_MSG.to_string());
    }
    out
}

/// The `metadata.name` detail text for `platform`, or `None` when valid (§2.4 "Names").
pub(crate) fn cluster_name_error(name: &str, plat: &str) -> Option<String> {
    let err = if name.len() > 54 {
        vec!["must be no more than 54 characters".to_string()]
    } else {
        dns1123_subdomain(name)
    };
    if !err.is_empty() {
        Some(err.join("\n"))
    } else if matches!(plat, "gcp" | "azure")
        && !name.starts_with(|ch: char| ch.is_ascii_lowercase())
    {
        Some("cluster name must begin with a lower-case letter".to_string())
    } else if matches!(plat, "vsphere" | "baremetal" | "openstack" | "nutanix")
        && name.contains('.')
    {
        Some("cluster name must not contain '.'".to_string())
    } else {
        None
    }
}

/// The `baseDomain` detail text (one trailing dot allowed), or `None` when valid.
pub(crate) fn base_domain_error(base_domain: &str) -> Option<String> {
    let bd = base_domain.strip_suffix('.').unwrap_or(base_domain);
    let err = dns1123_subdomain(bd);
    (!err.is_empty()).then(|| err.join("\n"))
}

fn names(c: &InstallConfig, e: &mut Errs) {
    let name = &c.metadata.name;
    let name_err = cluster_name_error(name, c.platform_name());
    if let Some(d) = &name_err {
        e.invalid("metadata.name", name, d);
    }
    if let Some(d) = base_domain_error(&c.base_domain) {
        e.invalid("baseDomain", &c.base_domain, d);
    } else if name_err.is_none() {
        let bd = c.base_domain.strip_suffix('.').unwrap_or(&c.base_domain);
        let err = dns1123_subdomain(&format!("{name}.{bd}"));
        if !err.is_empty() {
            e.invalid("baseDomain", &c.base_domain, err.join("\n"));
        }
    }
}

// ---------------------------------------------------------------- networking

fn overlaps(a: &IpNet, b: &IpNet) -> bool {
    match (a, b) {
        (IpNet::V4(_), IpNet::V4(_)) | (IpNet::V6(_), IpNet::V6(_)) => {
            a.contains(&b.network()) || b.contains(&a.network())
        }
        _ => false,
    }
}

/// Parses a CIDR and checks it is a network address; reports under `path`.
fn cidr(path: &str, s: &str, e: &mut Errs) -> Option<IpNet> {
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

fn is_v4(n: &IpNet) -> bool {
    matches!(n, IpNet::V4(_))
}

/// Checks one network list for both-family/ordering rules of §2.4 "IP families".
fn family_rules(path: &str, nets: &[IpNet], dual: bool, allow_v6_primary: bool, e: &mut Errs) {
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

fn join_nets(nets: &[IpNet]) -> String {
    nets.iter()
        .map(|n| n.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

fn networking(
    c: &InstallConfig,
    n: &Networking,
    o: &LoadOptions,
    e: &mut Errs,
    warnings: &mut Vec<String>,
) {
    let t = o.target;
    let ovn = n.network_type == "OVNKubernetes";
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
            "networkType OpenShiftSDN is not supported, please use OVNKubernetes",
        );
    }

    // machineNetwork
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

    // serviceNetwork
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

    // clusterNetwork
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

    // OVN reserved ranges
    let join_override = n.internal_join_subnet();
    if ovn {
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
            ("networking.machineNetwork", &machine),
            ("networking.serviceNetwork", &service),
            ("networking.clusterNetwork", &cluster),
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
    if n.cluster_network_mtu != 0 && c.platform_name() != "aws" {
        e.invalid_n(
            "networking.clusterNetworkMTU",
            n.cluster_network_mtu,
            "cluster network MTU is allowed only in AWS deployments",
        );
    }

    // IP families
    let all: Vec<&IpNet> = machine.iter().chain(&service).chain(&cluster).collect();
    let has4 = all.iter().any(|n| is_v4(n));
    let has6 = all.iter().any(|n| !is_v4(n));
    let plat = c.platform_name();
    let v6_ok = matches!(
        plat,
        "none" | "external" | "baremetal" | "vsphere" | "openstack" | "ovirt" | "nutanix"
    );
    let v6_primary_ok = matches!(plat, "baremetal" | "vsphere" | "openstack");
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
            family_rules(
                "networking.machineNetwork",
                &machine,
                true,
                v6_primary_ok,
                e,
            );
            family_rules(
                "networking.serviceNetwork",
                &service,
                true,
                v6_primary_ok,
                e,
            );
            family_rules(
                "networking.clusterNetwork",
                &cluster,
                true,
                v6_primary_ok,
                e,
            );
        }
    } else if has6 && !v6_ok {
        e.invalid(
            "networking",
            &join_nets(&all.iter().map(|n| **n).collect::<Vec<_>>()),
            "single-stack IPv6 is not supported for this platform",
        );
    }

    // VIPs (baremetal)
    if let Some(b) = &c.platform.baremetal {
        let user_lb = b
            .load_balancer
            .as_ref()
            .is_some_and(|l| l.lb_type == "UserManaged");
        vips(b, &machine, user_lb, e);
    }
}

fn vips(b: &BaremetalPlatform, machine: &[IpNet], user_lb: bool, e: &mut Errs) {
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

// ---------------------------------------------------------------- platform and pools

fn platform(c: &InstallConfig, e: &mut Errs) {
    let names = c.platform.names();
    match names.len() {
        0 => e.invalid(
            "platform",
            "",
            format!("must specify one of the platforms ({PLATFORMS})"),
        ),
        1 => {}
        _ => e.invalid(
            "platform",
            names[0],
            format!(
                "must only specify a single type of platform; cannot use both {:?} and {:?}",
                names[0], names[1]
            ),
        ),
    }
    // pkg/types/aws/validation/platform.go ValidatePlatform.
    if let Some(aws) = &c.platform.aws
        && aws.region.is_empty()
    {
        e.required("platform.aws.region", "region must be specified");
    }
}

fn gate_enabled(c: &InstallConfig, gate: &str) -> bool {
    match c.feature_set.as_deref().unwrap_or("") {
        "TechPreviewNoUpgrade" | "DevPreviewNoUpgrade" => true,
        "CustomNoUpgrade" => c.feature_gates.iter().any(|g| {
            g.split_once('=')
                .is_some_and(|(n, v)| n.trim() == gate && v.trim() == "true")
        }),
        _ => false,
    }
}

fn pool_common(path: &str, p: &MachinePool, plat: &str, e: &mut Errs) {
    match p.replicas {
        None => e.required(&format!("{path}.replicas"), "replicas is required"),
        Some(r) if r < 0 => e.invalid_n(
            &format!("{path}.replicas"),
            r,
            "number of replicas must not be negative",
        ),
        _ => {}
    }
    if let Some(h) = p.hyperthreading.as_deref()
        && h != "Enabled"
        && h != "Disabled"
    {
        e.unsupported(
            &format!("{path}.hyperthreading"),
            h,
            &["Disabled", "Enabled"],
        );
    }
    if let Some(a) = p.architecture.as_deref()
        && !matches!(a, "amd64" | "arm64" | "ppc64le" | "s390x")
    {
        e.unsupported(
            &format!("{path}.architecture"),
            a,
            &["amd64", "arm64", "ppc64le", "s390x"],
        );
    }
    match &p.platform {
        Value::Object(m) => {
            for k in m.keys() {
                if !plat.is_empty() && k != plat {
                    e.invalid(
                        &format!("{path}.platform"),
                        k,
                        format!(
                            "cannot specify {k:?} for machine pool when cluster is using {plat:?}"
                        ),
                    );
                }
            }
        }
        Value::Null => {}
        other => e.invalid(
            &format!("{path}.platform"),
            &other.to_string(),
            "machine pool platform must be an object",
        ),
    }
}

fn fencing_creds(p: &MachinePool) -> Option<usize> {
    let f = p.fencing.as_ref()?;
    Some(
        f.get("credentials")
            .and_then(Value::as_array)
            .map_or(0, Vec::len),
    )
}

/// The largest control plane okd-install generates (etcd itself is meant for 3 or 5 members).
const MAX_CONTROL_PLANE_REPLICAS: i64 = 100;

fn pools(c: &InstallConfig, e: &mut Errs) {
    let plat = c.platform_name();
    let cp_arch = c
        .control_plane
        .as_ref()
        .and_then(|p| p.architecture.clone());
    match &c.control_plane {
        None => e.required("controlPlane", "controlPlane is required"),
        Some(cp) => {
            if cp.name != "master" {
                e.unsupported("controlPlane.name", &cp.name, &["master"]);
            }
            if cp.replicas == Some(0) {
                e.invalid_n(
                    "controlPlane.replicas",
                    0,
                    "number of control plane replicas must be positive",
                );
            }
            // Not an openshift-install rule: one etcd endpoint and (on AWS) one
            // Machine is written per replica, so a hostile count would exhaust
            // memory (docs/differences.md).
            if let Some(r) = cp.replicas.filter(|r| *r > MAX_CONTROL_PLANE_REPLICAS) {
                e.invalid_n(
                    "controlPlane.replicas",
                    r,
                    format!("number of control plane replicas must be at most {MAX_CONTROL_PLANE_REPLICAS}"),
                );
            }
            pool_common("controlPlane", cp, plat, e);
            let replicas = cp.replicas.unwrap_or(0);
            match fencing_creds(cp) {
                Some(_) if !matches!(plat, "baremetal" | "external" | "none") => e.forbidden(
                    "controlPlane.fencing",
                    "fencing is only supported on baremetal, external or none platforms",
                ),
                Some(n) if replicas == 2 && n != 2 => e.invalid_n(
                    "controlPlane.fencing.credentials",
                    n as i64,
                    "exactly 2 fencing credentials are required for a two-node control plane",
                ),
                Some(n) if replicas != 2 && n != 0 => e.forbidden(
                    "controlPlane.fencing",
                    "fencing is only allowed with exactly 2 control plane replicas",
                ),
                _ => {}
            }
        }
    }
    if let Some(a) = &c.arbiter {
        if !gate_enabled(c, "HighlyAvailableArbiter") {
            e.forbidden("arbiter", "HighlyAvailableArbiter feature must be enabled in order to use arbiter cluster deployment");
        } else {
            if plat != "baremetal" {
                e.invalid(
                    "arbiter",
                    plat,
                    "arbiter is only supported on the baremetal platform",
                );
            }
            if c.control_plane
                .as_ref()
                .and_then(|p| p.replicas)
                .unwrap_or(0)
                < 2
            {
                e.invalid_n(
                    "controlPlane.replicas",
                    c.control_plane_replicas(),
                    "an arbiter cluster requires at least 2 control plane replicas",
                );
            }
            pool_common("arbiter", a, plat, e);
        }
    }
    let mut seen: Vec<&str> = Vec::new();
    for (i, p) in c.compute.iter().enumerate() {
        let path = format!("compute[{i}]");
        if p.name != "worker" && p.name != "edge" {
            e.unsupported(&format!("{path}.name"), &p.name, &["worker", "edge"]);
        } else if p.name == "edge" && plat != "aws" {
            e.invalid(
                &format!("{path}.name"),
                &p.name,
                "edge compute pools are only supported on the AWS platform",
            );
        }
        if seen.contains(&p.name.as_str()) {
            e.duplicate(&format!("{path}.name"), &p.name);
        }
        seen.push(&p.name);
        pool_common(&path, p, plat, e);
        if p.fencing.is_some() {
            e.forbidden(
                &format!("{path}.fencing"),
                "fencing is only allowed on the control plane",
            );
        }
        if let (Some(a), Some(cpa)) = (p.architecture.as_deref(), cp_arch.as_deref())
            && a != cpa
            && !gate_enabled(c, "MultiArchInstallAWS")
            && !gate_enabled(c, "MultiArchInstallGCP")
            && !gate_enabled(c, "MultiArchInstallAzure")
        {
            e.invalid(
                    &format!("{path}.architecture"),
                    a,
                    "heteregeneous multi-arch is not supported; compute pool architecture must match control plane",
                );
        }
    }
}

// ---------------------------------------------------------------- pull secret, proxy, mirrors, publish

/// pkg/types/validation/installconfig.go echoes the pull secret in the error;
/// here the value is omitted: it holds registry credentials, and the error
/// goes to stderr and `.openshift_install.log` (docs/differences.md).
fn pull_secret(c: &InstallConfig, e: &mut Errs) {
    if let Some(d) = pull_secret_error(&c.pull_secret) {
        e.invalid_omitted("pullSecret", d);
    }
}

/// The `pullSecret` detail text, or `None` when valid (§2.4 "Pull secret"): JSON
/// syntax errors verbatim, `auths required`, `"<registry>" requires either auth or credsStore`.
pub(crate) fn pull_secret_error(ps: &str) -> Option<String> {
    let v: Value = match serde_json::from_str(ps) {
        Ok(v) => v,
        Err(err) => {
            return Some(if ps.trim().is_empty() {
                "unexpected end of JSON input".to_string()
            } else {
                err.to_string()
            });
        }
    };
    let m = match v.get("auths").and_then(Value::as_object) {
        Some(m) if !m.is_empty() => m,
        _ => return Some("auths required".to_string()),
    };
    let mut errs: Vec<String> = m
        .iter()
        .filter(|(_, entry)| entry.get("auth").is_none() && entry.get("credsStore").is_none())
        .map(|(reg, _)| format!("{reg:?} requires either auth or credsStore"))
        .collect();
    match errs.len() {
        0 => None,
        1 => errs.pop(),
        _ => Some(format!("[{}]", errs.join(", "))),
    }
}

/// A minimal Go `url.ParseRequestURI`: returns `(scheme, host)`.
fn parse_request_uri(s: &str) -> Result<(String, String), String> {
    let Some((scheme, rest)) = s.split_once("://") else {
        return Err(format!("parse {s:?}: invalid URI for request"));
    };
    let scheme_ok = scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c));
    if !scheme_ok || s.contains(char::is_whitespace) {
        return Err(format!("parse {s:?}: invalid URI for request"));
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let hostport = authority.rsplit('@').next().unwrap_or("");
    let host = if let Some(h) = hostport.strip_prefix('[') {
        h.split(']').next().unwrap_or("").to_string()
    } else {
        hostport.split(':').next().unwrap_or("").to_string()
    };
    Ok((scheme.to_ascii_lowercase(), host))
}

fn proxy(c: &InstallConfig, p: &Proxy, e: &mut Errs) {
    let http = p.http_proxy.as_deref().filter(|s| !s.is_empty());
    let https = p.https_proxy.as_deref().filter(|s| !s.is_empty());
    if http.is_none() && https.is_none() {
        e.required("proxy", "must include httpProxy or httpsProxy");
    }
    let cluster = c.cluster_networks();
    let service = c.service_networks();
    for (field, val, schemes) in [
        ("httpProxy", http, &["http"][..]),
        ("httpsProxy", https, &["http", "https"][..]),
    ] {
        let Some(v) = val else { continue };
        let path = format!("proxy.{field}");
        match parse_request_uri(v) {
            Err(err) => e.invalid(&path, v, err),
            Ok((scheme, host)) => {
                if !schemes.contains(&scheme.as_str()) {
                    e.unsupported(&path, &scheme, schemes);
                }
                if let Ok(ip) = host.parse::<IpAddr>() {
                    if cluster.iter().any(|(n, _)| n.contains(&ip)) {
                        e.invalid(&path, v, "proxy value is part of the cluster networks");
                    }
                    if service.iter().any(|n| n.contains(&ip)) {
                        e.invalid(&path, v, "proxy value is part of the service networks");
                    }
                }
            }
        }
    }
    if let Some(np) = p.no_proxy.as_deref().filter(|s| !s.is_empty())
        && np != "*"
    {
        if np.contains(' ') {
            e.invalid("proxy.noProxy", np, "noProxy must not have spaces");
        }
        for (i, el) in np.split(',').enumerate() {
            let el = el.trim();
            if el.is_empty() || el.parse::<IpAddr>().is_ok() || el.parse::<IpNet>().is_ok() {
                continue;
            }
            let d = el.strip_prefix('.').unwrap_or(el);
            let lower = d.to_ascii_lowercase();
            if d.contains('*') || !dns1123_subdomain(&lower).is_empty() {
                e.invalid(
                        "proxy.noProxy",
                        np,
                        format!("each element of noProxy must be a IP, CIDR or domain without wildcard characters, which is violated by element {i} {el:?}"),
                    );
            }
        }
    }
}

/// Docker distribution reference check: `Ok(())` for a repository name, error text otherwise.
fn named_repository(r: &str) -> Result<(), String> {
    if r.is_empty() {
        return Err(
            "failed to parse: repository name must have at least one component".to_string(),
        );
    }
    let (name, reference) = match r.find('@') {
        Some(i) => (&r[..i], true),
        None => {
            let last = r.rsplit('/').next().unwrap_or(r);
            let has_tag = last.contains(':') && r.contains('/');
            let tag_less = if has_tag {
                &r[..r.len() - (last.len() - last.find(':').unwrap_or(0))]
            } else {
                r
            };
            (tag_less, has_tag)
        }
    };
    let mut comps = name.split('/');
    let first = comps.next().unwrap_or("");
    let host_like = first.contains('.') || first.contains(':') || first == "localhost";
    let host_ok = first
        .chars()
        .all(|ch| ch.is_ascii_alphanumeric() || "-.:[]".contains(ch));
    if !host_ok || (!host_like && first.chars().any(|ch| ch.is_ascii_uppercase())) {
        return Err("failed to parse: invalid reference format".to_string());
    }
    for comp in comps {
        if comp.is_empty() {
            return Err("failed to parse: invalid reference format".to_string());
        }
        if comp.chars().any(|ch| ch.is_ascii_uppercase()) {
            return Err(
                "failed to parse: invalid reference format: repository name must be lowercase"
                    .to_string(),
            );
        }
        if !comp
            .chars()
            .all(|ch| ch.is_ascii_lowercase() || ch.is_ascii_digit() || "._-".contains(ch))
        {
            return Err("failed to parse: invalid reference format".to_string());
        }
    }
    if reference {
        return Err("must be repository--not reference".to_string());
    }
    Ok(())
}

fn mirrors(c: &InstallConfig, o: &LoadOptions, e: &mut Errs, warnings: &mut Vec<String>) {
    for (field, list) in [
        ("imageContentSources", &c.image_content_sources),
        ("imageDigestSources", &c.image_digest_sources),
    ] {
        for (i, s) in list.iter().enumerate() {
            if let Err(err) = named_repository(&s.source) {
                e.invalid(&format!("{field}[{i}].source"), &s.source, err);
            }
            for (j, m) in s.mirrors.iter().enumerate() {
                if let Err(err) = named_repository(m) {
                    e.invalid(&format!("{field}[{i}].mirrors[{j}]"), m, err);
                }
            }
        }
    }
    if !c.image_content_sources.is_empty() && !c.image_digest_sources.is_empty() {
        e.forbidden(
            "imageContentSources",
            "cannot set imageContentSources and imageDigestSources at the same time",
        );
    }
    if !c.image_content_sources.is_empty() && o.target.has_image_digest_sources() {
        warnings
            .push("imageContentSources is deprecated, please use ImageDigestSources".to_string());
    }
    let has_mirrors = c.image_sources().iter().any(|s| !s.mirrors.is_empty());
    if has_mirrors
        && c.additional_trust_bundle
            .as_deref()
            .unwrap_or("")
            .trim()
            .is_empty()
    {
        warnings.push(
            "image mirrors are configured but additionalTrustBundle is empty: nodes will not trust a mirror registry whose certificate is signed by a private CA".to_string(),
        );
    }
}

fn publish(c: &InstallConfig, e: &mut Errs) {
    let plat = c.platform_name();
    let p = c.publish.as_deref().unwrap_or("External");
    match p {
        "External" => {}
        "Internal" => {
            if !matches!(plat, "aws" | "azure" | "gcp" | "ibmcloud" | "powervs") {
                e.invalid(
                    "publish",
                    p,
                    format!("Internal publish strategy is not supported on {plat:?} platform"),
                );
            }
        }
        "Mixed" => {
            if plat != "azure" {
                e.invalid(
                    "publish",
                    p,
                    format!("mixed publish strategy is not supported on {plat:?} platform"),
                );
            } else if c.operator_publishing_strategy.is_none() {
                e.required(
                    "operatorPublishingStrategy",
                    "please specify the operator publishing strategy for mixed publish strategy",
                );
            }
        }
        other => e.unsupported("publish", other, &["External", "Internal", "Mixed"]),
    }
    if c.operator_publishing_strategy.is_some() && p != "Mixed" {
        e.invalid(
            "operatorPublishingStrategy",
            p,
            "operator publishing strategy is only allowed with the Mixed publish strategy",
        );
    }
    if let Some(m) = c.credentials_mode.as_deref().filter(|m| !m.is_empty()) {
        if !matches!(m, "Mint" | "Passthrough" | "Manual") {
            e.unsupported("credentialsMode", m, &["Manual", "Mint", "Passthrough"]);
        } else if matches!(plat, "none" | "baremetal") {
            e.invalid(
                "credentialsMode",
                m,
                format!("cannot be set when using the {plat:?} platform"),
            );
        }
    }
}

// ---------------------------------------------------------------- capabilities and feature sets

const CAPABILITIES: &[&str] = &[
    "Build",
    "CSISnapshot",
    "CloudControllerManager",
    "CloudCredential",
    "Console",
    "DeploymentConfig",
    "ImageRegistry",
    "Ingress",
    "Insights",
    "MachineAPI",
    "NodeTuning",
    "OperatorLifecycleManager",
    "OperatorLifecycleManagerV1",
    "Storage",
    "baremetal",
    "marketplace",
    "openshift-samples",
];

fn capabilities(c: &InstallConfig, o: &LoadOptions, e: &mut Errs) {
    let Some(caps) = &c.capabilities else { return };
    let base = caps
        .baseline_capability_set
        .as_deref()
        .unwrap_or("vCurrent");
    let minor = o.target.minor.max(11);
    let known = base == "None"
        || base == "vCurrent"
        || base
            .strip_prefix("v4.")
            .and_then(|m| m.parse::<u32>().ok())
            .is_some_and(|m| (11..=minor).contains(&m) && base == format!("v4.{m}"));
    if !known {
        // The list in the message is bounded whatever minor the target claims.
        let mut sets: Vec<String> = vec!["None".to_string()];
        sets.extend((11..=minor.min(11 + 64)).map(|m| format!("v4.{m}")));
        sets.push("vCurrent".to_string());
        let refs: Vec<&str> = sets.iter().map(String::as_str).collect();
        e.unsupported("capabilities.baselineCapabilitySet", base, &refs);
    }
    for (i, a) in caps.additional_enabled_capabilities.iter().enumerate() {
        if !CAPABILITIES.contains(&a.as_str()) {
            e.unsupported(
                &format!("capabilities.additionalEnabledCapabilities[{i}]"),
                a,
                CAPABILITIES,
            );
        }
    }
    if base != "None" {
        return;
    }
    let on = |n: &str| caps.additional_enabled_capabilities.iter().any(|a| a == n);
    let list = caps.additional_enabled_capabilities.join(", ");
    if on("marketplace") && !on("OperatorLifecycleManager") {
        e.invalid(
            "capabilities.additionalEnabledCapabilities",
            &list,
            "the marketplace capability requires the OperatorLifecycleManager capability",
        );
    }
    let plat = c.platform_name();
    if plat == "baremetal" && !on("baremetal") {
        e.invalid(
            "capabilities.additionalEnabledCapabilities",
            &list,
            "platform baremetal requires the baremetal capability",
        );
    }
    if !on("CloudCredential") && !matches!(plat, "none" | "baremetal") {
        e.invalid(
            "capabilities",
            base,
            "disabling CloudCredential capability available only for baremetal platforms",
        );
    }
    if !on("CloudControllerManager") && !matches!(plat, "none" | "baremetal" | "external") {
        e.invalid("capabilities", base, "disabling CloudControllerManager is only supported on the Baremetal, None, or External platform with cloudControllerManager value none");
    }
    if o.target.at_least(16) && !on("Ingress") {
        e.invalid("capabilities", base, "the Ingress capability is required");
    }
}

fn feature_set(c: &InstallConfig, e: &mut Errs) {
    let fs = c.feature_set.as_deref().unwrap_or("");
    let known = [
        "",
        "CustomNoUpgrade",
        "DevPreviewNoUpgrade",
        "TechPreviewNoUpgrade",
    ];
    if !known.contains(&fs) {
        e.unsupported("featureSet", fs, &known);
    }
    // Fields guarded by a feature gate that is off in the default feature set.
    let gated: [(&str, &str, bool); 2] = [
        (
            "controlPlane.fencing",
            "DualReplica",
            c.control_plane
                .as_ref()
                .is_some_and(|p| p.fencing.is_some()),
        ),
        (
            "platform.aws.userProvisionedDNS",
            "AWSClusterHostedDNS",
            c.platform
                .aws
                .as_ref()
                .and_then(|a| a.user_provisioned_dns.as_deref())
                .is_some_and(|v| v == "Enabled"),
        ),
    ];
    for (path, gate, used) in gated {
        if used && !gate_enabled(c, gate) {
            e.forbidden(
                path,
                &format!("this field is protected by the {gate} feature gate which must be enabled through either the TechPreviewNoUpgrade or CustomNoUpgrade feature set"),
            );
        }
    }
    if !c.feature_gates.is_empty() {
        if fs != "CustomNoUpgrade" {
            e.forbidden(
                "featureGates",
                "featureGates can only be used with the CustomNoUpgrade feature set",
            );
        }
        for (i, g) in c.feature_gates.iter().enumerate() {
            let ok = g
                .split_once('=')
                .is_some_and(|(n, v)| !n.trim().is_empty() && matches!(v.trim(), "true" | "false"));
            if !ok {
                e.invalid(
                    &format!("featureGates[{i}]"),
                    g,
                    "must match the format <feature-name>=<bool>",
                );
            }
        }
    }
}
