//! Telling hosts apart (issue #42 item 1): freshly booted machines often
//! share a host name (`localhost` replaced, `vm`, the image's default), so
//! the commands show and accept what is unique to each: its id (full, or
//! the shortest prefix of at least [`MIN_ID_PREFIX`] characters that no
//! other host shares), its primary interface's MAC and address, and its
//! installation disk.

use okd_assisted_api::rest::Host;
use serde_json::Value;

pub use okd_assisted_api::identity::{MIN_ID_PREFIX, id_prefix};
use okd_assisted_api::identity::{addresses, primary_interface};

/// What a host's line shows of it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Facts {
    /// The requested host name, else the inventory's, else the id.
    pub name: String,
    /// The primary interface's MAC (`-` while no inventory arrived).
    pub mac: String,
    /// The primary interface's first IPv4 address without its prefix
    /// length, else its first IPv6 one (`-` when none).
    pub address: String,
    /// The installation disk's path, else its id (`-` when none is set).
    pub disk: String,
    /// Every interface's MAC, lower case (for matching).
    pub macs: Vec<String>,
    /// Every interface's addresses without prefix length (for matching).
    pub addresses: Vec<String>,
}

/// The host's name: requested, else the inventory's, else its id.
pub fn name(h: &Host) -> String {
    if !h.requested_hostname.is_empty() {
        return h.requested_hostname.clone();
    }
    serde_json::from_str::<Value>(&h.inventory)
        .ok()
        .and_then(|v| v["hostname"].as_str().map(str::to_string))
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| h.id.clone())
}

/// What the host's line shows ([`Facts`]).
pub fn facts(h: &Host) -> Facts {
    let inv: Value = serde_json::from_str(&h.inventory).unwrap_or(Value::Null);
    let ifaces: Vec<Value> = inv["interfaces"].as_array().cloned().unwrap_or_default();
    let mut f = Facts {
        name: name(h),
        mac: "-".into(),
        address: "-".into(),
        disk: if !h.installation_disk_path.is_empty() {
            h.installation_disk_path.clone()
        } else if !h.installation_disk_id.is_empty() {
            h.installation_disk_id.clone()
        } else {
            "-".into()
        },
        ..Facts::default()
    };
    for i in &ifaces {
        if let Some(m) = i["mac_address"].as_str().filter(|m| !m.is_empty()) {
            f.macs.push(m.to_ascii_lowercase());
        }
        f.addresses.extend(addresses(i, "ipv4_addresses"));
        f.addresses.extend(addresses(i, "ipv6_addresses"));
    }
    if let Some(p) = primary_interface(&inv) {
        if let Some(m) = p["mac_address"].as_str().filter(|m| !m.is_empty()) {
            f.mac = m.to_ascii_lowercase();
        }
        let v4 = addresses(p, "ipv4_addresses");
        let v6 = addresses(p, "ipv6_addresses");
        if let Some(a) = v4.first().or(v6.first()) {
            f.address = a.clone();
        }
    }
    f
}

/// A MAC as typed (`52-54-00-AA-00-01` or `52:54:00:aa:00:01`) in the
/// inventory's form; `None` when it is not one.
fn as_mac(s: &str) -> Option<String> {
    let parts: Vec<&str> = s.split([':', '-']).collect();
    (parts.len() == 6
        && parts
            .iter()
            .all(|p| p.len() == 2 && p.bytes().all(|b| b.is_ascii_hexdigit())))
    .then(|| parts.join(":").to_ascii_lowercase())
}

/// How `wanted` picks hosts of `hosts`: a whole id picks that host alone;
/// otherwise every host it names as an id prefix, a MAC of any of its
/// interfaces, an address (with or without prefix length) or its host
/// name, each with what matched.
pub fn matching<'a>(hosts: &'a [Host], wanted: &str) -> Vec<(&'a Host, &'static str)> {
    let w = wanted.trim();
    if let Some(h) = hosts.iter().find(|h| h.id.eq_ignore_ascii_case(w)) {
        return vec![(h, "id")];
    }
    if w.is_empty() {
        return Vec::new();
    }
    let mac = as_mac(w);
    // An address given with its prefix length (`192.168.126.21/24`).
    let addr = w.split('/').next().unwrap_or(w);
    let lower = w.to_ascii_lowercase();
    hosts
        .iter()
        .filter_map(|h| {
            let f = facts(h);
            let how = if mac.as_ref().is_some_and(|m| f.macs.contains(m)) {
                "MAC"
            } else if addr.parse::<std::net::IpAddr>().is_ok()
                && f.addresses.iter().any(|a| {
                    a.parse::<std::net::IpAddr>().ok() == addr.parse::<std::net::IpAddr>().ok()
                })
            {
                "address"
            } else if h.id.to_ascii_lowercase().starts_with(&lower) {
                "id prefix"
            } else if f.name == w {
                "host name"
            } else {
                return None;
            };
            Some((h, how))
        })
        .collect()
}

/// A host on one line for a list of candidates: `<id> <name>, MAC <mac>,
/// address <address>, <status>`.
pub fn describe(h: &Host) -> String {
    let f = facts(h);
    format!(
        "{} {} (MAC {}, address {}, {})",
        h.id, f.name, f.mac, f.address, h.status
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(id: &str, inv: Value) -> Host {
        serde_json::from_value(serde_json::json!({
            "id": id, "href": "", "kind": "Host", "infra_env_id": "ie", "status": "known",
            "status_info": "", "status_updated_at": "", "role": "auto-assign",
            "bootstrap": false, "registered_at": "", "created_at": "", "updated_at": "",
            "inventory": if inv.is_null() { String::new() } else { inv.to_string() }
        }))
        .unwrap()
    }

    #[test]
    fn the_primary_interface_is_the_default_routes() {
        let h = host(
            "h1",
            serde_json::json!({
                "hostname": "vm",
                "interfaces": [
                    {"name": "ens3", "mac_address": "52:54:00:00:00:01", "ipv4_addresses": ["10.0.0.5/24"]},
                    {"name": "ens4", "mac_address": "52:54:00:00:00:02", "ipv4_addresses": ["192.168.126.10/24"]}
                ],
                "routes": [
                    {"interface": "ens4", "destination": "0.0.0.0", "gateway": "192.168.126.1", "family": 4, "metric": 100},
                    {"interface": "ens3", "destination": "0.0.0.0", "gateway": "10.0.0.1", "family": 4, "metric": 200}
                ]
            }),
        );
        let f = facts(&h);
        assert_eq!(
            (f.name.as_str(), f.mac.as_str(), f.address.as_str()),
            ("vm", "52:54:00:00:00:02", "192.168.126.10")
        );
        assert_eq!(f.disk, "-");
        let none = host("h2", Value::Null);
        let f = facts(&none);
        assert_eq!((f.name.as_str(), f.mac.as_str()), ("h2", "-"));
    }

    #[test]
    fn hosts_match_by_id_prefix_mac_address_and_name() {
        let mk = |id: &str, mac: &str, ip: &str| {
            host(
                id,
                serde_json::json!({"hostname": "vm", "interfaces": [
                    {"name": "ens3", "mac_address": mac, "ipv4_addresses": [format!("{ip}/24")]}
                ]}),
            )
        };
        let hosts = vec![
            mk("aaaaaaaa-0001", "52:54:00:00:00:01", "192.168.126.11"),
            mk("aaaaaaaa-0002", "52:54:00:00:00:02", "192.168.126.12"),
        ];
        let ids = |w: &str| -> Vec<(String, &str)> {
            matching(&hosts, w)
                .into_iter()
                .map(|(h, how)| (h.id.clone(), how))
                .collect()
        };
        assert_eq!(ids("aaaaaaaa-0002"), [("aaaaaaaa-0002".into(), "id")]);
        assert_eq!(ids("52-54-00-00-00-01"), [("aaaaaaaa-0001".into(), "MAC")]);
        assert_eq!(ids("192.168.126.12"), [("aaaaaaaa-0002".into(), "address")]);
        assert_eq!(
            ids("192.168.126.12/24"),
            [("aaaaaaaa-0002".into(), "address")]
        );
        assert_eq!(ids("aaaaaaaa-0001"), [("aaaaaaaa-0001".into(), "id")]);
        assert_eq!(ids("AAAAAAAA").len(), 2);
        assert_eq!(ids("vm").len(), 2);
        assert!(ids("192.168.126.13").is_empty());
        assert!(ids("").is_empty());
    }
}
