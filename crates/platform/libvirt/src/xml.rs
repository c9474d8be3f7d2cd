//! What this crate reads of libvirt's network and storage pool XML
//! (<https://libvirt.org/formatnetwork.html>,
//! <https://libvirt.org/formatstorage.html>) and of `net-info`/`pool-info`.

use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;

use roxmltree::{Document, Node};
use serde::{Deserialize, Serialize};

/// A libvirt virtual network (`net-dumpxml` and `net-info`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Network {
    /// `<name>`.
    pub name: String,
    /// Whether it is running (`net-info`: `Active: yes`).
    pub active: bool,
    /// `<bridge name=…>`, e.g. `virbr0`; None when libvirt has not named it.
    pub bridge: Option<String>,
    /// `<forward mode=…>`: `nat`, `route`, `open`, `bridge`, …; `nat` for a
    /// `<forward/>` without mode (libvirt's default); None when there is no
    /// `<forward>` (an isolated network).
    pub forward: Option<String>,
    /// The first `<ip>` of family `ipv4` (the default family), if any.
    pub ipv4: Option<NetworkIp>,
    /// Every `<dhcp><host mac=… ip=…/>` of every `<ip>`, in document order
    /// (hosts without `mac`, such as IPv6 ones with `id`, are left out).
    pub dhcp_hosts: Vec<DhcpHost>,
    /// Every `<dns><host ip=…><hostname>…</hostname></host>`, in document order.
    pub dns_hosts: Vec<DnsHost>,
}

/// A name the network's dnsmasq answers, `<dns><host ip='…'><hostname>…`
/// (libvirt formatnetwork, "Addressing": `dns` `host`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DnsHost {
    /// The address the names resolve to.
    pub ip: IpAddr,
    /// The names, fully qualified.
    pub hostnames: Vec<String>,
}

impl DnsHost {
    /// The one-line `<host>` element for `net-update … dns-host`, every
    /// value XML-escaped.
    pub fn to_xml(&self) -> String {
        let mut xml = format!("<host ip='{}'>", self.ip);
        for h in &self.hostnames {
            xml.push_str(&format!(
                "<hostname>{}</hostname>",
                crate::domain::escape(h)
            ));
        }
        xml.push_str("</host>");
        xml
    }
}

/// One `<ip>` element of a network.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NetworkIp {
    /// `address`: the host's address on the network, e.g. `192.168.122.1`.
    pub address: IpAddr,
    /// The prefix length in bits: `prefix`, else counted from `netmask`, else
    /// the address class (A 8, B 16, C 24) as libvirt does.
    pub prefix: u8,
    /// `<dhcp><range start end/>` (the first range), inclusive.
    pub dhcp_range: Option<(IpAddr, IpAddr)>,
}

/// A static DHCP lease, `<host mac='…' name='…' ip='…'/>` in a network's
/// `<dhcp>` (libvirt formatnetwork, "Addressing").
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DhcpHost {
    /// The MAC address, `52:54:00:xx:xx:xx` (compared without regard to case).
    pub mac: String,
    /// The host name dnsmasq hands out; empty when the entry has none.
    pub name: String,
    /// The address leased to `mac`.
    pub ip: IpAddr,
}

impl DhcpHost {
    /// The one-line `<host/>` element for `net-update … ip-dhcp-host`
    /// (`name` left out when empty), every value XML-escaped.
    pub fn to_xml(&self) -> String {
        let mut xml = format!("<host mac='{}'", crate::domain::escape(&self.mac));
        if !self.name.is_empty() {
            xml.push_str(&format!(" name='{}'", crate::domain::escape(&self.name)));
        }
        xml.push_str(&format!(" ip='{}'/>", self.ip));
        xml
    }

    /// Whether `other` is the same lease: the MAC without regard to case,
    /// the same name and address.
    pub fn same_as(&self, other: &DhcpHost) -> bool {
        self.mac.eq_ignore_ascii_case(&other.mac) && self.name == other.name && self.ip == other.ip
    }
}

/// A libvirt storage pool (`pool-dumpxml` and `pool-info`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pool {
    /// `<name>`.
    pub name: String,
    /// `<target><path>`: the directory of a `dir` pool (None for pool types
    /// without one).
    pub path: Option<PathBuf>,
    /// Whether it is running (`pool-info`: `State: running`).
    pub active: bool,
}

/// Parses `net-dumpxml`; `active` comes from `net-info`.
pub(crate) fn parse_network(xml: &str, active: bool) -> Result<Network, String> {
    let doc = Document::parse(xml).map_err(|e| e.to_string())?;
    let root = doc.root_element();
    if !root.has_tag_name("network") {
        return Err(format!(
            "root element <{}>, not <network>",
            root.tag_name().name()
        ));
    }
    let name = child(root, "name")
        .and_then(|n| n.text())
        .ok_or("no <name>")?
        .to_owned();
    let bridge = child(root, "bridge")
        .and_then(|b| b.attribute("name"))
        .map(str::to_owned);
    let forward = child(root, "forward").map(|f| f.attribute("mode").unwrap_or("nat").to_owned());
    let mut ipv4 = None;
    let mut dhcp_hosts = Vec::new();
    for ip in root.children().filter(|n| n.has_tag_name("ip")) {
        let family = ip.attribute("family").unwrap_or("ipv4");
        if family == "ipv4" && ipv4.is_none() {
            ipv4 = Some(parse_ip(ip)?);
        }
        for host in child(ip, "dhcp")
            .into_iter()
            .flat_map(|d| d.children())
            .filter(|n| n.has_tag_name("host"))
        {
            let (Some(mac), Some(addr)) = (host.attribute("mac"), host.attribute("ip")) else {
                continue;
            };
            dhcp_hosts.push(DhcpHost {
                mac: mac.to_owned(),
                name: host.attribute("name").unwrap_or_default().to_owned(),
                ip: parse_addr(addr, "<host ip>")?,
            });
        }
    }
    let mut dns_hosts = Vec::new();
    for host in child(root, "dns")
        .into_iter()
        .flat_map(|d| d.children())
        .filter(|n| n.has_tag_name("host"))
    {
        let Some(addr) = host.attribute("ip") else {
            continue;
        };
        dns_hosts.push(DnsHost {
            ip: parse_addr(addr, "<dns><host ip>")?,
            hostnames: host
                .children()
                .filter(|n| n.has_tag_name("hostname"))
                .filter_map(|n| n.text())
                .map(|t| t.trim().to_owned())
                .collect(),
        });
    }
    Ok(Network {
        name,
        active,
        bridge,
        forward,
        ipv4,
        dhcp_hosts,
        dns_hosts,
    })
}

fn parse_ip(ip: Node<'_, '_>) -> Result<NetworkIp, String> {
    let address = parse_addr(
        ip.attribute("address").ok_or("<ip> without address")?,
        "<ip address>",
    )?;
    let IpAddr::V4(v4) = address else {
        return Err(format!("<ip address='{address}'> of family ipv4"));
    };
    let prefix = if let Some(p) = ip.attribute("prefix") {
        match p.parse::<u8>() {
            Ok(p) if p <= 32 => p,
            _ => return Err(format!("<ip prefix='{p}'>: not 0..=32")),
        }
    } else if let Some(mask) = ip.attribute("netmask") {
        let bits = u32::from(
            mask.parse::<Ipv4Addr>()
                .map_err(|_| format!("<ip netmask='{mask}'>: not an IPv4 address"))?,
        );
        if bits.leading_ones() + bits.trailing_zeros() != 32 {
            return Err(format!("<ip netmask='{mask}'>: not contiguous"));
        }
        bits.leading_ones() as u8
    } else {
        match v4.octets()[0] {
            0..=127 => 8,
            128..=191 => 16,
            _ => 24,
        }
    };
    let dhcp_range = match child(ip, "dhcp").and_then(|d| child(d, "range")) {
        Some(range) => {
            let start = range.attribute("start").ok_or("<range> without start")?;
            let end = range.attribute("end").ok_or("<range> without end")?;
            Some((
                parse_addr(start, "<range start>")?,
                parse_addr(end, "<range end>")?,
            ))
        }
        None => None,
    };
    Ok(NetworkIp {
        address,
        prefix,
        dhcp_range,
    })
}

/// Parses `pool-dumpxml`; `active` comes from `pool-info`.
pub(crate) fn parse_pool(xml: &str, active: bool) -> Result<Pool, String> {
    let doc = Document::parse(xml).map_err(|e| e.to_string())?;
    let root = doc.root_element();
    if !root.has_tag_name("pool") {
        return Err(format!(
            "root element <{}>, not <pool>",
            root.tag_name().name()
        ));
    }
    let name = child(root, "name")
        .and_then(|n| n.text())
        .ok_or("no <name>")?
        .to_owned();
    let path = child(root, "target")
        .and_then(|t| child(t, "path"))
        .and_then(|p| p.text())
        .map(|p| PathBuf::from(p.trim()));
    Ok(Pool { name, path, active })
}

/// The value of a `Label:   value` line of `net-info`/`pool-info`.
pub(crate) fn info_field<'a>(text: &'a str, label: &str) -> Option<&'a str> {
    text.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        (key.trim() == label).then(|| value.trim())
    })
}

pub(crate) fn child<'a, 'i>(node: Node<'a, 'i>, name: &str) -> Option<Node<'a, 'i>> {
    node.children().find(|n| n.has_tag_name(name))
}

fn parse_addr(text: &str, what: &str) -> Result<IpAddr, String> {
    text.parse()
        .map_err(|_| format!("{what} '{text}': not an IP address"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEFAULT_NET: &str = "<network>
  <name>default</name>
  <forward mode='nat'/>
  <bridge name='virbr0' stp='on' delay='0'/>
  <ip address='192.168.122.1' netmask='255.255.255.0'>
    <dhcp>
      <range start='192.168.122.2' end='192.168.122.254'/>
      <host mac='52:54:00:AA:bb:01' name='m0' ip='192.168.122.10'/>
    </dhcp>
  </ip>
  <ip family='ipv6' address='fd00::1' prefix='64'>
    <dhcp><host id='0:1' name='v6' ip='fd00::10'/></dhcp>
  </ip>
</network>";

    #[test]
    fn network_reads_forward_bridge_ipv4_and_hosts() {
        let net = parse_network(DEFAULT_NET, true).unwrap();
        assert_eq!(net.forward.as_deref(), Some("nat"));
        assert_eq!(net.bridge.as_deref(), Some("virbr0"));
        let ip = net.ipv4.unwrap();
        assert_eq!(ip.prefix, 24);
        assert_eq!(
            ip.dhcp_range,
            Some((
                "192.168.122.2".parse().unwrap(),
                "192.168.122.254".parse().unwrap()
            ))
        );
        assert_eq!(net.dhcp_hosts.len(), 1, "the IPv6 host has no mac");
        let want = DhcpHost {
            mac: "52:54:00:aa:BB:01".into(),
            name: "m0".into(),
            ip: "192.168.122.10".parse().unwrap(),
        };
        assert!(net.dhcp_hosts[0].same_as(&want));
    }

    #[test]
    fn network_prefix_from_attribute_class_and_bad_mask() {
        let net =
            |ip: &str| parse_network(&format!("<network><name>n</name>{ip}</network>"), false);
        let n = net("<forward/><ip address='10.1.0.1' prefix='16'/>").unwrap();
        assert_eq!(
            (n.forward.as_deref(), n.ipv4.unwrap().prefix),
            (Some("nat"), 16)
        );
        assert_eq!(
            net("<ip address='172.16.0.1'/>")
                .unwrap()
                .ipv4
                .unwrap()
                .prefix,
            16
        );
        assert_eq!(
            net("").unwrap(),
            Network {
                name: "n".into(),
                active: false,
                bridge: None,
                forward: None,
                ipv4: None,
                dhcp_hosts: vec![],
                dns_hosts: vec![],
            }
        );
        let err = net("<ip address='10.0.0.1' netmask='255.0.255.0'/>").unwrap_err();
        assert!(err.contains("not contiguous"), "{err}");
        assert!(
            parse_network("<pool/>", true)
                .unwrap_err()
                .contains("<pool>")
        );
    }

    #[test]
    fn host_xml_escapes_and_skips_an_empty_name() {
        let mut host = DhcpHost {
            mac: "52:54:00:00:00:01".into(),
            name: "a'b".into(),
            ip: "10.0.0.5".parse().unwrap(),
        };
        assert_eq!(
            host.to_xml(),
            "<host mac='52:54:00:00:00:01' name='a&apos;b' ip='10.0.0.5'/>"
        );
        host.name.clear();
        assert_eq!(
            host.to_xml(),
            "<host mac='52:54:00:00:00:01' ip='10.0.0.5'/>"
        );
    }

    #[test]
    fn info_field_reads_labels() {
        let text = "Name:           default\nActive:         yes\nState:          running\n";
        assert_eq!(info_field(text, "Active"), Some("yes"));
        assert_eq!(info_field(text, "State"), Some("running"));
        assert_eq!(info_field(text, "Bridge"), None);
    }
}
