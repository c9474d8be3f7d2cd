//! Telling hosts apart: freshly booted machines often share a host name
//! (`localhost` replaced by a MAC-derived one, `vm`, an image's default),
//! so the client's host list, its `host set` and the service's page show
//! what is unique to each host: its id, or the shortest prefix of it no
//! other host shares ([`id_prefix`]), and its primary interface's MAC and
//! address ([`primary_interface`]). One rule for both, here.

use serde_json::Value;

/// The shortest id prefix shown (the first group of a UUID).
pub const MIN_ID_PREFIX: usize = 8;

/// The shortest prefix of `id`, at least [`MIN_ID_PREFIX`] characters, that
/// no other id of `all` starts with; the whole id when no prefix is unique
/// (another id is a prefix of it, or equal) or it is that short already.
pub fn id_prefix(id: &str, all: &[&str]) -> String {
    (MIN_ID_PREFIX.min(id.len())..id.len())
        .filter(|n| id.is_char_boundary(*n))
        .map(|n| &id[..n])
        .find(|p| !all.iter().any(|o| *o != id && o.starts_with(p)))
        .unwrap_or(id)
        .to_string()
}

/// The non-empty addresses of an interface's `field` (`ipv4_addresses` or
/// `ipv6_addresses` of swagger's `interface`, CIDR strings), without their
/// prefix lengths.
pub fn addresses(interface: &Value, field: &str) -> Vec<String> {
    interface[field]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter(|a| !a.is_empty())
        .map(|a| a.split('/').next().unwrap_or(a).to_string())
        .collect()
}

/// The primary interface of an inventory (swagger `inventory`, as JSON):
/// the one the IPv4 default route with the lowest metric leaves by (when it
/// has an IPv4 address), else the first with an IPv4 address, else the
/// first with an IPv6 one, else the first with a MAC; `None` for an
/// inventory without interfaces.
pub fn primary_interface(inventory: &Value) -> Option<&Value> {
    let ifaces = inventory["interfaces"].as_array()?;
    let route_dev = inventory["routes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| r["family"].as_i64() == Some(4) && r["destination"].as_str() == Some("0.0.0.0"))
        .min_by_key(|r| r["metric"].as_i64().unwrap_or(0))
        .and_then(|r| r["interface"].as_str());
    let has = |i: &&Value, field: &str| !addresses(i, field).is_empty();
    route_dev
        .and_then(|d| {
            ifaces
                .iter()
                .find(|i| i["name"].as_str() == Some(d) && has(i, "ipv4_addresses"))
        })
        .or_else(|| ifaces.iter().find(|i| has(i, "ipv4_addresses")))
        .or_else(|| ifaces.iter().find(|i| has(i, "ipv6_addresses")))
        .or_else(|| {
            ifaces
                .iter()
                .find(|i| i["mac_address"].as_str().is_some_and(|m| !m.is_empty()))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn id_prefixes_are_the_shortest_unique_ones() {
        let all = ["aaaaaaaa-1111", "aaaaaaaa-1112", "bbbbbbbb-0000", "short"];
        assert_eq!(id_prefix(all[0], &all), "aaaaaaaa-1111");
        assert_eq!(id_prefix(all[1], &all), "aaaaaaaa-1112");
        assert_eq!(id_prefix(all[2], &all), "bbbbbbbb");
        assert_eq!(id_prefix(all[3], &all), "short");
        // An id that is a prefix of another is shown whole.
        let dup = ["same-id-same-id", "same-id-same-id-2"];
        assert_eq!(id_prefix(dup[0], &dup), "same-id-same-id");
        assert_eq!(id_prefix(dup[1], &dup), "same-id-same-id-");
    }

    #[test]
    fn the_default_route_picks_the_primary_interface() {
        let inv = json!({
            "interfaces": [
                {"name": "eth0", "mac_address": "52:54:00:00:00:01", "ipv4_addresses": ["10.0.0.5/24"]},
                {"name": "eth1", "mac_address": "52:54:00:00:00:02", "ipv4_addresses": ["192.168.126.10/24"]},
            ],
            "routes": [
                {"family": 4, "destination": "0.0.0.0", "interface": "eth0", "metric": 200},
                {"family": 4, "destination": "0.0.0.0", "interface": "eth1", "metric": 100},
            ],
        });
        let p = primary_interface(&inv).unwrap();
        assert_eq!(p["name"], "eth1");
        assert_eq!(addresses(p, "ipv4_addresses"), ["192.168.126.10"]);
        let no_route = json!({"interfaces": [
            {"name": "eth0", "mac_address": "52:54:00:00:00:01"},
            {"name": "eth1", "ipv6_addresses": ["fd00::5/64"]},
        ]});
        assert_eq!(primary_interface(&no_route).unwrap()["name"], "eth1");
        assert!(primary_interface(&Value::Null).is_none());
    }
}
