//! Parse, up-conversion and defaults (openshift/installer
//! `pkg/asset/installconfig/installconfigbase.go`, `pkg/types/conversion/installconfig.go`,
//! `pkg/types/defaults/installconfig.go`).

use std::net::{IpAddr, Ipv4Addr};

use ipnet::IpNet;
use serde_json::Value;

use crate::LoadError;
use crate::field::FieldError;
use crate::types::*;

/// Parses the YAML. Syntax and type errors are fatal (with line numbers); an
/// unknown key produces the warning/info pair of openshift/installer
/// `pkg/asset/installconfig/installconfigbase.go` and is ignored.
pub(crate) fn parse(
    file: &str,
    bytes: &[u8],
    warnings: &mut Vec<String>,
    infos: &mut Vec<String>,
) -> Result<InstallConfig, LoadError> {
    let perr = |e: serde_yaml_ng::Error| LoadError::Parse {
        file: file.to_string(),
        message: e.to_string(),
    };
    let raw: Value = if bytes.iter().all(|b| b.is_ascii_whitespace()) {
        Value::Object(Default::default())
    } else {
        serde_yaml_ng::from_slice(bytes).map_err(perr)?
    };
    let raw = if raw.is_null() {
        Value::Object(Default::default())
    } else {
        raw
    };
    if !raw.is_object() {
        return Err(LoadError::Parse {
            file: file.to_string(),
            message: "the document is not a mapping of install-config fields".to_string(),
        });
    }
    let cfg: InstallConfig = if raw.as_object().is_some_and(|m| m.is_empty()) {
        InstallConfig::default()
    } else {
        serde_yaml_ng::from_slice(bytes).map_err(perr)?
    };
    let back = serde_json::to_value(&cfg).unwrap_or(Value::Null);
    if let Some(key) = first_unknown(&raw, &back) {
        warnings.push(format!(
            "failed to parse first occurrence of unknown field: failed to unmarshal {file}: error unmarshaling JSON: while decoding JSON: json: unknown field {key:?}"
        ));
        infos.push("Attempting to unmarshal while ignoring unknown keys because strict unmarshaling failed".to_string());
    }
    Ok(cfg)
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
    }
}

/// The first key of `input` that the typed model dropped (`back` is the typed
/// model re-serialized; keys omitted because empty are not counted).
fn first_unknown(input: &Value, back: &Value) -> Option<String> {
    match (input, back) {
        (Value::Object(i), Value::Object(b)) => {
            for (k, v) in i {
                match b.get(k) {
                    Some(bv) => {
                        if let Some(u) = first_unknown(v, bv) {
                            return Some(u);
                        }
                    }
                    None if !is_empty(v) => return Some(k.clone()),
                    None => {}
                }
            }
            None
        }
        (Value::Object(i), Value::Null) => {
            i.iter().find(|(_, v)| !is_empty(v)).map(|(k, _)| k.clone())
        }
        (Value::Array(i), Value::Array(b)) => {
            i.iter().zip(b).find_map(|(x, y)| first_unknown(x, y))
        }
        _ => None,
    }
}

/// `pkg/types/conversion/installconfig.go`: accepted apiVersions and deprecated-field mapping;
/// sets apiVersion `v1`.
/// Errors are field errors on the field that cannot be converted.
pub(crate) fn upconvert(mut c: InstallConfig) -> Result<InstallConfig, FieldError> {
    match c.api_version.as_str() {
        "" => {
            return Err(FieldError::required(
                "apiVersion",
                "no version was provided",
            ));
        }
        "v1" | "v1beta3" | "v1beta4" => {}
        // pkg/types/conversion/installconfig.go ConvertInstallConfig: a field error on apiVersion.
        other => {
            return Err(FieldError::invalid(
                "apiVersion",
                other,
                format!("cannot upconvert from version {other}"),
            ));
        }
    }
    if let Some(n) = c.networking.as_mut() {
        if let Some(old) = n.cluster_networks.take()
            && n.cluster_network.is_empty()
        {
            n.cluster_network = old;
        }
        for (i, e) in n.cluster_network.iter_mut().enumerate() {
            if let Some(len) = e.host_subnet_length.take()
                && e.host_prefix == 0
            {
                // Upstream's field is an int32 and the subtraction cannot leave
                // 0..=bits for a sane value; an absurd one is an error here.
                let bits: i64 = if e.cidr.contains(':') { 128 } else { 32 };
                if !(0..=bits).contains(&len) {
                    return Err(FieldError::invalid_n(
                        format!("networking.clusterNetwork[{i}].hostSubnetLength"),
                        len,
                        format!("must be between 0 and {bits}"),
                    ));
                }
                e.host_prefix = bits - len;
            }
        }
        if let Some(m) = n.machine_cidr.take()
            && n.machine_network.is_empty()
        {
            n.machine_network = vec![MachineNetworkEntry { cidr: m }];
        }
        if let Some(s) = n.service_cidr.take()
            && n.service_network.is_empty()
        {
            n.service_network = vec![s];
        }
        if let Some(t) = n.deprecated_type.take()
            && n.network_type.is_empty()
        {
            n.network_type = t;
        }
        if n.network_type.eq_ignore_ascii_case("openshiftsdn") {
            n.network_type = "OpenShiftSDN".to_string();
        } else if n.network_type.eq_ignore_ascii_case("ovnkubernetes") {
            n.network_type = "OVNKubernetes".to_string();
        }
    }
    if let Some(b) = c.platform.baremetal.as_mut() {
        if let Some(v) = b.api_vip.take().filter(|v| !v.is_empty()) {
            if b.api_vips.is_empty() {
                b.api_vips = vec![v];
            } else if b.api_vips[0] != v {
                return Err(FieldError::invalid(
                    "platform.baremetal.apiVIP",
                    &v,
                    "value must be empty or the same as the first entry of apiVIPs",
                ));
            }
        }
        if let Some(v) = b.ingress_vip.take().filter(|v| !v.is_empty()) {
            if b.ingress_vips.is_empty() {
                b.ingress_vips = vec![v];
            } else if b.ingress_vips[0] != v {
                return Err(FieldError::invalid(
                    "platform.baremetal.ingressVIP",
                    &v,
                    "value must be empty or the same as the first entry of ingressVIPs",
                ));
            }
        }
        if b.provisioning_dhcp_external.take() == Some(true) && b.provisioning_network.is_none() {
            b.provisioning_network = Some("Unmanaged".to_string());
        }
        if let Some(ip) = b.provisioning_host_ip.take()
            && b.cluster_provisioning_ip.is_none()
        {
            b.cluster_provisioning_ip = Some(ip);
        }
    }
    c.api_version = "v1".to_string();
    Ok(c)
}

/// The installer binary's GOARCH for the running host.
fn host_arch() -> &'static str {
    match std::env::consts::ARCH {
        "aarch64" => "arm64",
        "powerpc64" => "ppc64le",
        "s390x" => "s390x",
        _ => "amd64",
    }
}

fn pool_defaults(p: &mut MachinePool, default_replicas: i64) {
    if p.replicas.is_none() {
        p.replicas = Some(default_replicas);
    }
    if p.hyperthreading.as_deref().unwrap_or("").is_empty() {
        p.hyperthreading = Some("Enabled".to_string());
    }
    if p.architecture.as_deref().unwrap_or("").is_empty() {
        p.architecture = Some(host_arch().to_string());
    }
    if p.platform.is_null() {
        p.platform = Value::Object(Default::default());
    }
}

fn nth_host(net: &IpNet, n: u32) -> Option<IpAddr> {
    match net {
        IpNet::V4(v4) => Some(IpAddr::V4(Ipv4Addr::from(
            u32::from(v4.network()).checked_add(n)?,
        ))),
        IpNet::V6(v6) => Some(IpAddr::V6(std::net::Ipv6Addr::from(
            u128::from(v6.network()).checked_add(u128::from(n))?,
        ))),
    }
}

fn random_mac() -> String {
    use rand::Rng as _;
    let mut r = rand::rng();
    format!(
        "52:54:00:{:02x}:{:02x}:{:02x}",
        r.random::<u8>(),
        r.random::<u8>(),
        r.random::<u8>()
    )
}

/// Defaults (openshift/installer pkg/types/defaults): networking, publish, trust-bundle policy,
/// pools (replicas 3 / 0 for edge and arbiter, hyperthreading Enabled, host
/// architecture, platform `{}`), the worker pool, baremetal provisioning defaults.
pub(crate) fn apply_defaults(c: &mut InstallConfig) {
    let n = c.networking.get_or_insert_with(Networking::default);
    if n.machine_network.is_empty() {
        n.machine_network = vec![MachineNetworkEntry {
            cidr: "10.0.0.0/16".to_string(),
        }];
    }
    if n.network_type.is_empty() {
        n.network_type = "OVNKubernetes".to_string();
    }
    if n.service_network.is_empty() {
        n.service_network = vec!["172.30.0.0/16".to_string()];
    }
    if n.cluster_network.is_empty() {
        n.cluster_network = vec![ClusterNetworkEntry {
            cidr: "10.128.0.0/14".to_string(),
            host_prefix: 23,
            host_subnet_length: None,
        }];
    }
    if c.publish.as_deref().unwrap_or("").is_empty() {
        c.publish = Some("External".to_string());
    }
    if c.additional_trust_bundle_policy
        .as_deref()
        .unwrap_or("")
        .is_empty()
    {
        c.additional_trust_bundle_policy = Some("Proxyonly".to_string());
    }
    let cp = c.control_plane.get_or_insert_with(MachinePool::default);
    cp.name = "master".to_string();
    pool_defaults(cp, 3);
    if let Some(a) = c.arbiter.as_mut() {
        a.name = "arbiter".to_string();
        pool_defaults(a, 0);
    }
    if !c.compute.iter().any(|p| p.name == "worker") {
        c.compute.push(MachinePool {
            name: "worker".to_string(),
            ..Default::default()
        });
    }
    for p in &mut c.compute {
        let r = if p.name == "edge" { 0 } else { 3 };
        pool_defaults(p, r);
    }
    if let Some(b) = c.platform.baremetal.as_mut() {
        b.libvirt_uri
            .get_or_insert_with(|| "qemu:///system".to_string());
        b.provisioning_network
            .get_or_insert_with(|| "Managed".to_string());
        let cidr = b
            .provisioning_network_cidr
            .get_or_insert_with(|| "172.22.0.0/24".to_string())
            .clone();
        if let Ok(net) = cidr.parse::<IpNet>() {
            if b.bootstrap_provisioning_ip.is_none() {
                b.bootstrap_provisioning_ip = nth_host(&net, 2).map(|ip| ip.to_string());
            }
            if b.cluster_provisioning_ip.is_none() {
                b.cluster_provisioning_ip = nth_host(&net, 3).map(|ip| ip.to_string());
            }
            if b.provisioning_dhcp_range.is_none()
                && b.provisioning_network.as_deref() == Some("Managed")
                && let (Some(start), IpNet::V4(v4)) = (nth_host(&net, 10), net)
            {
                let end = Ipv4Addr::from(u32::from(v4.broadcast()).saturating_sub(1));
                b.provisioning_dhcp_range = Some(format!("{start},{end}"));
            }
        }
        b.external_bridge
            .get_or_insert_with(|| "baremetal".to_string());
        b.provisioning_bridge
            .get_or_insert_with(|| "provisioning".to_string());
        b.external_mac_address.get_or_insert_with(random_mac);
        b.provisioning_mac_address.get_or_insert_with(random_mac);
        for h in &mut b.hosts {
            if let Some(m) = h.as_object_mut() {
                m.entry("hardwareProfile")
                    .or_insert_with(|| Value::String("default".into()));
                m.entry("bootMode")
                    .or_insert_with(|| Value::String("UEFI".into()));
            }
        }
    }
}
