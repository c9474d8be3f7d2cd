//! An install-config-like file (openshift-install's `install-config.yaml`,
//! `apiVersion: v1`) mapped to the assisted service's
//! `cluster-create-params` (assisted-service `swagger.yaml`; the mapping
//! its `docs/user-guide/rest-api-getting-started.md` describes field by
//! field).
//!
//! Taken: `apiVersion` (v1), `baseDomain`, `metadata.name`,
//! `controlPlane.replicas`, `compute[0].replicas`,
//! `networking.{clusterNetwork, serviceNetwork, machineNetwork,
//! networkType}`, `platform.baremetal.{apiVIPs, ingressVIPs}` (or the
//! deprecated `apiVIP`/`ingressVIP`), `platform.none` (a single node
//! only), `pullSecret`, `sshKey`, and `fips: false`. Any other field is
//! refused with its name: the assisted flow does not take it, and dropping
//! it silently would install something else than the file says.

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use ipnet::IpNet;
use okd_assisted_api::rest::{Cidr, ClusterCreateParams, ClusterNetwork, Vip};
use serde::Deserialize;
use serde_yaml_ng::{Mapping, Value};

/// The release `major.minor` a cluster is created for when none is given.
pub const DEFAULT_OPENSHIFT_VERSION: &str = "4.19";

/// The top-level fields taken (`fips` only as `false`).
pub const TOP_LEVEL_FIELDS: &[&str] = &[
    "apiVersion",
    "baseDomain",
    "metadata",
    "controlPlane",
    "compute",
    "networking",
    "platform",
    "pullSecret",
    "sshKey",
    "fips",
];

/// A file that cannot be taken: its path, the field and the rule.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file cannot be read.
    #[error("{}: cannot read it: {source}", file.display())]
    Read {
        /// The file.
        file: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Not YAML, or a field of the wrong shape (serde_yaml_ng's reason
    /// names the field's path, the line and the column).
    #[error("{}: {reason}", file.display())]
    Yaml {
        /// The file.
        file: PathBuf,
        /// Why.
        reason: String,
    },
    /// A field breaks a rule.
    #[error("{}: {field}: {rule}", file.display())]
    Field {
        /// The file.
        file: PathBuf,
        /// The field's path, e.g. `platform.baremetal.apiVIPs[0]`.
        field: String,
        /// The rule, with the value when it is not secret.
        rule: String,
    },
}

/// What the file says, as the service takes it.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterConfig {
    /// The body of `POST /v2/clusters`.
    pub params: ClusterCreateParams,
    /// `compute[0].replicas`: the workers the file expects (the assisted
    /// flow takes as workers whatever hosts register beyond the control
    /// plane; this is for the summary). `None` when not given.
    pub workers: Option<u32>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct InstallConfig {
    api_version: Option<String>,
    base_domain: Option<String>,
    metadata: Option<Metadata>,
    control_plane: Option<Pool>,
    compute: Option<Vec<Pool>>,
    networking: Option<Networking>,
    pull_secret: Option<String>,
    ssh_key: Option<String>,
    fips: Option<bool>,
    // `platform` is read from the untyped document (its keys decide).
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Metadata {
    name: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Pool {
    name: Option<String>,
    replicas: Option<u32>,
    hyperthreading: Option<String>,
    architecture: Option<String>,
    platform: Option<Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Networking {
    cluster_network: Option<Vec<IcClusterNetwork>>,
    service_network: Option<Vec<String>>,
    machine_network: Option<Vec<IcCidr>>,
    network_type: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct IcClusterNetwork {
    cidr: String,
    host_prefix: u8,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct IcCidr {
    cidr: String,
}

/// Reads `path` ([`parse_install_config`]).
///
/// # Errors
/// [`ConfigError::Read`], or those of [`parse_install_config`].
pub fn read_install_config(
    path: &Path,
    openshift_version: &str,
) -> Result<ClusterConfig, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        file: path.to_path_buf(),
        source,
    })?;
    parse_install_config(path, &text, openshift_version)
}

/// Maps the install-config text of `file` to `cluster-create-params`:
/// `metadata.name` → `name`, `openshift_version` as given, `baseDomain` →
/// `base_dns_domain`, `controlPlane.replicas` → `control_plane_count`
/// (default 3; 1, 3, 4 or 5), `networking.clusterNetwork` →
/// `cluster_networks`, `serviceNetwork` → `service_networks`,
/// `machineNetwork` → `machine_networks`, `networkType` →
/// `network_type`, `platform.baremetal.apiVIPs`/`ingressVIPs` →
/// `api_vips`/`ingress_vips`, `pullSecret` → `pull_secret`, `sshKey` →
/// `ssh_public_key`. Absent networking fields are left to the service's
/// defaults (10.128.0.0/14 /23, 172.30.0.0/16, OVNKubernetes).
///
/// Checked here so that the error names the file and the field: names
/// and domains are DNS names, CIDRs and addresses parse, a host prefix is
/// longer than its network's, the VIPs are one per IP family, differ, and
/// lie in a machine network when one is given; a cluster of several
/// control-plane nodes has `platform.baremetal` with both VIPs (the
/// service has no user-managed networking), `platform.none` is for a
/// single node; the pull secret is JSON with an `auths` object (its text
/// is never put into an error).
///
/// # Errors
/// [`ConfigError::Yaml`] for YAML or shape errors (serde_yaml_ng names
/// the field, line and column); [`ConfigError::Field`] naming the field
/// and the rule, including any field not taken (module docs).
pub fn parse_install_config(
    file: &Path,
    text: &str,
    openshift_version: &str,
) -> Result<ClusterConfig, ConfigError> {
    let field = |field: &str, rule: String| ConfigError::Field {
        file: file.to_path_buf(),
        field: field.to_string(),
        rule,
    };
    let yaml = |e: serde_yaml_ng::Error| ConfigError::Yaml {
        file: file.to_path_buf(),
        reason: e.to_string(),
    };
    let doc: Value = serde_yaml_ng::from_str(text).map_err(yaml)?;
    let Value::Mapping(top) = &doc else {
        return Err(ConfigError::Yaml {
            file: file.to_path_buf(),
            reason: "not a mapping of install-config fields (apiVersion, baseDomain, metadata, …)"
                .into(),
        });
    };
    for (k, _) in top {
        let name = key_name(k);
        if !TOP_LEVEL_FIELDS.contains(&name.as_str()) {
            return Err(field(
                &name,
                format!(
                    "the assisted flow does not take this field; remove it (taken: {})",
                    TOP_LEVEL_FIELDS.join(", ")
                ),
            ));
        }
    }
    let ic: InstallConfig = serde_yaml_ng::from_str(text).map_err(yaml)?;

    if let Some(v) = &ic.api_version
        && v != "v1"
    {
        return Err(field("apiVersion", format!("{v:?}: must be v1")));
    }
    if ic.fips == Some(true) {
        return Err(field(
            "fips",
            "true: the assisted flow does not install FIPS clusters; remove it or set false".into(),
        ));
    }
    let name = ic
        .metadata
        .and_then(|m| m.name)
        .ok_or_else(|| field("metadata.name", "required (the cluster's name)".into()))?;
    if !dns_label(&name) || name.len() > 54 {
        return Err(field(
            "metadata.name",
            format!(
                "{name:?}: must be a DNS label of lower-case letters, digits and '-', at most 54 characters"
            ),
        ));
    }
    let base_domain = ic.base_domain.ok_or_else(|| {
        field(
            "baseDomain",
            "required (the cluster's parent domain, e.g. example.com)".into(),
        )
    })?;
    if !base_domain.split('.').all(dns_label) {
        return Err(field(
            "baseDomain",
            format!("{base_domain:?}: not a DNS domain"),
        ));
    }

    let masters = match &ic.control_plane {
        Some(p) => {
            check_pool(p, "controlPlane", "master", &field)?;
            p.replicas.unwrap_or(3)
        }
        None => 3,
    };
    if ![1, 3, 4, 5].contains(&masters) {
        return Err(field(
            "controlPlane.replicas",
            format!("{masters}: must be 1 (single node), 3, 4 or 5"),
        ));
    }
    let workers = match ic.compute.as_deref() {
        None | Some([]) => None,
        Some([p]) => {
            check_pool(p, "compute[0]", "worker", &field)?;
            p.replicas
        }
        Some(_) => {
            return Err(field(
                "compute",
                "one machine pool (worker) at most: the assisted flow makes every host beyond the control plane a worker".into(),
            ));
        }
    };

    let mut params = ClusterCreateParams {
        name,
        openshift_version: openshift_version.to_string(),
        base_dns_domain: Some(base_domain),
        control_plane_count: Some(u8::try_from(masters).unwrap_or(3)),
        ..ClusterCreateParams::default()
    };
    let mut machine_nets: Vec<IpNet> = Vec::new();
    if let Some(n) = ic.networking {
        if let Some(list) = n.cluster_network {
            let mut out = Vec::new();
            for (i, c) in list.into_iter().enumerate() {
                let f = format!("networking.clusterNetwork[{i}]");
                let net = cidr(&c.cidr).ok_or_else(|| {
                    field(
                        &format!("{f}.cidr"),
                        format!("{:?} is not a CIDR (address/prefix)", c.cidr),
                    )
                })?;
                let max = if net.addr().is_ipv4() { 30 } else { 128 };
                if c.host_prefix <= net.prefix_len() || c.host_prefix > max {
                    return Err(field(
                        &format!("{f}.hostPrefix"),
                        format!(
                            "{}: must be longer than the network's /{} and at most {max}",
                            c.host_prefix,
                            net.prefix_len()
                        ),
                    ));
                }
                out.push(ClusterNetwork {
                    cidr: c.cidr,
                    host_prefix: c.host_prefix,
                });
            }
            params.cluster_networks = Some(out);
        }
        if let Some(list) = n.service_network {
            for (i, c) in list.iter().enumerate() {
                if cidr(c).is_none() {
                    return Err(field(
                        &format!("networking.serviceNetwork[{i}]"),
                        format!("{c:?} is not a CIDR (address/prefix)"),
                    ));
                }
            }
            params.service_networks = Some(list.into_iter().map(|cidr| Cidr { cidr }).collect());
        }
        if let Some(list) = n.machine_network {
            for (i, c) in list.iter().enumerate() {
                let net = cidr(&c.cidr).ok_or_else(|| {
                    field(
                        &format!("networking.machineNetwork[{i}].cidr"),
                        format!("{:?} is not a CIDR (address/prefix)", c.cidr),
                    )
                })?;
                machine_nets.push(net);
            }
            params.machine_networks =
                Some(list.into_iter().map(|c| Cidr { cidr: c.cidr }).collect());
        }
        if let Some(t) = n.network_type {
            if !matches!(t.as_str(), "OVNKubernetes" | "OpenShiftSDN") {
                return Err(field(
                    "networking.networkType",
                    format!("{t:?}: must be OVNKubernetes or OpenShiftSDN"),
                ));
            }
            params.network_type = Some(t);
        }
    }

    let (api, ingress) = platform(top.get("platform"), masters, &field)?;
    for (kind, vips) in [("apiVIPs", &api), ("ingressVIPs", &ingress)] {
        for (i, ip) in vips.iter().enumerate() {
            if !machine_nets.is_empty() && !machine_nets.iter().any(|n| n.contains(ip)) {
                return Err(field(
                    &format!("platform.baremetal.{kind}[{i}]"),
                    format!(
                        "{ip} is not in networking.machineNetwork ({})",
                        machine_nets
                            .iter()
                            .map(ToString::to_string)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
            }
        }
    }
    let vips = |v: Vec<IpAddr>| {
        (!v.is_empty()).then(|| v.into_iter().map(|ip| Vip { ip: ip.to_string() }).collect())
    };
    params.api_vips = vips(api);
    params.ingress_vips = vips(ingress);

    let pull_secret = ic.pull_secret.ok_or_else(|| {
        field(
            "pullSecret",
            "required (the pull secret from console.redhat.com, or {\"auths\":{\"fake\":{\"auth\":\"aWQ6cGFzcwo=\"}}} for OKD)".into(),
        )
    })?;
    let auths_ok = serde_json::from_str::<serde_json::Value>(&pull_secret)
        .ok()
        .is_some_and(|v| v.get("auths").is_some_and(serde_json::Value::is_object));
    if !auths_ok {
        return Err(field(
            "pullSecret",
            "must be a JSON document with an \"auths\" object (its text is not shown)".into(),
        ));
    }
    params.pull_secret = pull_secret;
    params.ssh_public_key = ic
        .ssh_key
        .map(|k| k.trim().to_string())
        .filter(|k| !k.is_empty());
    Ok(ClusterConfig { params, workers })
}

/// A YAML key as text (non-string keys as YAML).
fn key_name(k: &Value) -> String {
    match k {
        Value::String(s) => s.clone(),
        other => serde_yaml_ng::to_string(other)
            .map(|s| s.trim().to_string())
            .unwrap_or_default(),
    }
}

fn cidr(s: &str) -> Option<IpNet> {
    s.parse::<IpNet>().ok()
}

/// A DNS label: lower-case letters, digits and '-', 1-63 characters, not
/// beginning or ending with '-'.
fn dns_label(l: &str) -> bool {
    !l.is_empty()
        && l.len() <= 63
        && l.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !l.starts_with('-')
        && !l.ends_with('-')
}

fn check_pool(
    p: &Pool,
    at: &str,
    want: &str,
    field: &impl Fn(&str, String) -> ConfigError,
) -> Result<(), ConfigError> {
    if let Some(n) = &p.name
        && n != want
    {
        return Err(field(
            &format!("{at}.name"),
            format!("{n:?}: must be {want}"),
        ));
    }
    if let Some(h) = &p.hyperthreading
        && h != "Enabled"
    {
        return Err(field(
            &format!("{at}.hyperthreading"),
            format!("{h:?}: the assisted flow installs with hyperthreading Enabled only"),
        ));
    }
    if let Some(a) = &p.architecture
        && a != "amd64"
    {
        return Err(field(
            &format!("{at}.architecture"),
            format!("{a:?}: only amd64 (x86_64) is supported"),
        ));
    }
    match &p.platform {
        None | Some(Value::Null) => {}
        Some(Value::Mapping(m)) if m.is_empty() => {}
        Some(_) => {
            return Err(field(
                &format!("{at}.platform"),
                "the assisted flow takes no machine-pool platform settings; remove them".into(),
            ));
        }
    }
    Ok(())
}

/// `platform`: the API and Ingress VIPs (empty for `none`).
fn platform(
    v: Option<&Value>,
    masters: u32,
    field: &impl Fn(&str, String) -> ConfigError,
) -> Result<(Vec<IpAddr>, Vec<IpAddr>), ConfigError> {
    const WHICH: &str = "the assisted flow installs on platform baremetal (with apiVIPs and ingressVIPs) or, for a single node, none";
    let empty = Mapping::new();
    let m = match v {
        Some(Value::Mapping(m)) => m,
        None | Some(Value::Null) => &empty,
        Some(_) => return Err(field("platform", format!("must be a mapping: {WHICH}"))),
    };
    let keys: Vec<String> = m.keys().map(key_name).collect();
    let (key, body) = match (keys.as_slice(), m.iter().next()) {
        ([k], Some((_, body))) => (k.as_str(), body),
        ([], _) => return Err(field("platform", format!("required: {WHICH}"))),
        _ => {
            return Err(field(
                "platform",
                format!("one platform, not {}: {WHICH}", keys.join(" and ")),
            ));
        }
    };
    match key {
        "none" => {
            if !matches!(body, Value::Null) && body.as_mapping().is_none_or(|b| !b.is_empty()) {
                return Err(field("platform.none", "must be empty ({})".into()));
            }
            if masters != 1 {
                return Err(field(
                    "platform.none",
                    format!(
                        "a cluster of {masters} control-plane nodes needs platform.baremetal with apiVIPs and ingressVIPs in the assisted flow (the service has no user-managed networking; only a single-node cluster, controlPlane.replicas 1, takes platform none)"
                    ),
                ));
            }
            Ok((Vec::new(), Vec::new()))
        }
        "baremetal" => {
            let b = match body {
                Value::Mapping(b) => b,
                Value::Null => &empty,
                _ => return Err(field("platform.baremetal", "must be a mapping".into())),
            };
            for k in b.keys().map(key_name) {
                if !["apiVIPs", "ingressVIPs", "apiVIP", "ingressVIP"].contains(&k.as_str()) {
                    return Err(field(
                        &format!("platform.baremetal.{k}"),
                        "the assisted flow does not take this field: hosts register through the discovery agent, and only apiVIPs and ingressVIPs (or apiVIP and ingressVIP) are used; remove it".into(),
                    ));
                }
            }
            let api = vips(b, "apiVIPs", "apiVIP", field)?;
            let ingress = vips(b, "ingressVIPs", "ingressVIP", field)?;
            if masters != 1 {
                for (k, v) in [("apiVIPs", &api), ("ingressVIPs", &ingress)] {
                    if v.is_empty() {
                        return Err(field(
                            &format!("platform.baremetal.{k}"),
                            format!(
                                "required for a cluster of {masters} control-plane nodes (an address in the machine network that the cluster holds)"
                            ),
                        ));
                    }
                }
            }
            for (i, a) in api.iter().enumerate() {
                if let Some(j) = ingress.iter().position(|x| x == a) {
                    return Err(field(
                        &format!("platform.baremetal.ingressVIPs[{j}]"),
                        format!("{a} is also apiVIPs[{i}]: the API and Ingress VIPs must differ"),
                    ));
                }
            }
            Ok((api, ingress))
        }
        other => Err(field(&format!("platform.{other}"), WHICH.to_string())),
    }
}

/// `platform.baremetal.<list>`, or the deprecated `<single>` (both: they
/// must agree).
fn vips(
    b: &Mapping,
    list: &str,
    single: &str,
    field: &impl Fn(&str, String) -> ConfigError,
) -> Result<Vec<IpAddr>, ConfigError> {
    let scalar = |v: &Value| match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    };
    let ip = |f: &str, v: &Value| -> Result<IpAddr, ConfigError> {
        let text =
            scalar(v).ok_or_else(|| field(f, "must be an IP address (a string)".to_string()))?;
        text.trim()
            .parse::<IpAddr>()
            .map_err(|_| field(f, format!("{text:?} is not an IP address")))
    };
    let mut out = Vec::new();
    match b.get(list) {
        None | Some(Value::Null) => {}
        Some(Value::Sequence(seq)) => {
            for (i, v) in seq.iter().enumerate() {
                out.push(ip(&format!("platform.baremetal.{list}[{i}]"), v)?);
            }
        }
        Some(_) => {
            return Err(field(
                &format!("platform.baremetal.{list}"),
                "must be a list of IP addresses".into(),
            ));
        }
    }
    if out.len() > 2 || (out.len() == 2 && out[0].is_ipv4() == out[1].is_ipv4()) {
        return Err(field(
            &format!("platform.baremetal.{list}"),
            "one address per IP family at most".into(),
        ));
    }
    if let Some(v) = b.get(single).filter(|v| !v.is_null()) {
        let f = format!("platform.baremetal.{single}");
        let one = ip(&f, v)?;
        match out.first() {
            None => out.push(one),
            Some(first) if *first == one => {}
            Some(first) => {
                return Err(field(
                    &f,
                    format!(
                        "{one} differs from {list}[0] {first}; give {list} only ({single} is deprecated)"
                    ),
                ));
            }
        }
    }
    Ok(out)
}
