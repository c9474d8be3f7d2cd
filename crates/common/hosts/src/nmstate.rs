//! The few facts read from a host's nmstate `networkConfig`
//! (<https://nmstate.io/devel/yaml_api.html>): the first static address, the
//! default route's gateway and the DNS servers.

use std::net::IpAddr;

use serde_json::Value;

/// A static address from nmstate: `(address, prefix length, interface name)`.
pub(crate) type StaticAddress = (IpAddr, u8, Option<String>);

/// The first static address of the nmstate config: `(address, prefix length,
/// interface name)`. `Ok(None)` when there is none. An address whose
/// `prefix-length` is out of range for its family (IPv4 0-32, IPv6 0-128;
/// nmstate's `InterfaceIpAddr`) is an error `(field path, rule)` below
/// `networkConfig`, checked before the number is narrowed.
pub(crate) fn nmstate_address(net: &Value) -> Result<Option<StaticAddress>, (String, String)> {
    let Some(ifaces) = net.get("interfaces").and_then(Value::as_array) else {
        return Ok(None);
    };
    for (n, iface) in ifaces.iter().enumerate() {
        for (fam, max) in [("ipv4", 32u64), ("ipv6", 128)] {
            let Some(addrs) = iface
                .get(fam)
                .and_then(|v| v.get("address"))
                .and_then(Value::as_array)
            else {
                continue;
            };
            for (k, a) in addrs.iter().enumerate() {
                let field =
                    format!("networkConfig.interfaces[{n}].{fam}.address[{k}].prefix-length");
                let ip = a
                    .get("ip")
                    .and_then(Value::as_str)
                    .and_then(|s| s.parse::<IpAddr>().ok());
                let prefix = match a.get("prefix-length") {
                    None => continue,
                    Some(p) => match p.as_u64().filter(|p| *p <= max) {
                        Some(p) => u8::try_from(p).unwrap_or(u8::MAX),
                        None => {
                            return Err((
                                field,
                                format!("{p} is not a prefix length for {fam} (0-{max})"),
                            ));
                        }
                    },
                };
                let Some(ip) = ip else { continue };
                if ip.is_ipv4() != (fam == "ipv4") {
                    return Err((field, format!("{ip} is not an {fam} address")));
                }
                return Ok(Some((
                    ip,
                    prefix,
                    iface.get("name").and_then(Value::as_str).map(String::from),
                )));
            }
        }
    }
    Ok(None)
}

pub(crate) fn nmstate_gateway(net: &Value) -> Option<IpAddr> {
    net.pointer("/routes/config")?
        .as_array()?
        .iter()
        .find_map(|r| {
            let dest = r.get("destination").and_then(Value::as_str)?;
            if dest == "0.0.0.0/0" || dest == "::/0" {
                r.get("next-hop-address")
                    .and_then(Value::as_str)?
                    .parse()
                    .ok()
            } else {
                None
            }
        })
}

pub(crate) fn nmstate_dns(net: &Value) -> Vec<IpAddr> {
    net.pointer("/dns-resolver/config/server")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|s| s.as_str()?.parse().ok()).collect())
        .unwrap_or_default()
}
