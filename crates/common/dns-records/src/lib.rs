//! The cluster's DNS records, built once.
//!
//! [`cluster_records`] turns the resolved [`Inventory`] and one fact of the
//! cluster (whether its release wants etcd records) into every record a
//! user-provisioned install needs, following the DNS requirements of the
//! bare-metal UPI guide (openshift/openshift-docs
//! `modules/installation-dns-user-infra.adoc`: `api`, `api-int`, `*.apps`,
//! one name per node, reverse records for the nodes and the API, and for
//! releases ≤ 4.5 `etcd-<n>` and `_etcd-server-ssl._tcp` SRV records) and the
//! helper node's zone templates (RedHatOfficial/ocp4-helpernode
//! `templates/zonefile.j2`, `templates/reverse.j2`).
//!
//! The result is plain data with names as the inventory spells them; each
//! consumer renders it: `okd-dns` into the zones `okd-install serve` answers
//! from (lower-cased FQDNs, plus the `apps` name itself), `okd-bastion` into
//! the BIND, CoreDNS and dnsmasq files of `create bastion-configs`. So the
//! served answers and the generated files cannot disagree about a record.
//! No I/O, no clock: [`serial_now`] is the one place the SOA serial comes
//! from, for callers that want "now".

use std::collections::BTreeMap;
use std::net::IpAddr;

use okd_hosts::Inventory;

/// TTL of every record and of negative answers (the SOA minimum, RFC 2308
/// §4), in seconds: short, so fixes propagate during an install.
pub const TTL_SECS: u32 = 60;
/// SOA refresh interval in seconds (RFC 1035 §3.3.13).
pub const SOA_REFRESH_SECS: u32 = 3600;
/// SOA retry interval in seconds (RFC 1035 §3.3.13).
pub const SOA_RETRY_SECS: u32 = 600;
/// SOA expiry in seconds (RFC 1035 §3.3.13).
pub const SOA_EXPIRE_SECS: u32 = 604_800;

/// The zones' name server, relative to the cluster domain (`ns1`): the SOA
/// MNAME and the NS record of every zone.
pub const NAME_SERVER: &str = "ns1";
/// The ingress name itself (`apps`), relative to the cluster domain.
pub const APPS: &str = "apps";
/// The ingress wildcard (`*.apps`, RFC 4592), relative to the cluster domain.
pub const APPS_WILDCARD: &str = "*.apps";
/// Owner of the etcd SRV records, relative to the cluster domain
/// (`_etcd-server-ssl._tcp`, RFC 2782).
pub const ETCD_SRV: &str = "_etcd-server-ssl._tcp";

/// The SOA serial for zones built now: the Unix time in seconds (so a zone
/// rebuilt later has a higher serial, RFC 1982), 1 if the clock reads before
/// 1970.
pub fn serial_now() -> u32 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as u32)
        .unwrap_or(1)
}

/// One A or AAAA record (by the address's family).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Address {
    /// Owner name relative to the cluster domain, as the inventory spells it
    /// (`api`, `worker1`, `*.svc`), no trailing dot.
    pub name: String,
    /// The address.
    pub ip: IpAddr,
}

/// One SRV record (RFC 2782).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Service {
    /// Owner name relative to the cluster domain ([`ETCD_SRV`]).
    pub name: String,
    /// Priority (lower first).
    pub priority: u16,
    /// Weight among equal priorities.
    pub weight: u16,
    /// TCP port.
    pub port: u16,
    /// Target host name relative to the cluster domain (`etcd-0`).
    pub target: String,
}

/// Every record of one cluster, before any rendering. Names are as the
/// inventory spells them (case kept); renderers qualify and normalize them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterRecords {
    /// The cluster domain `<metadata.name>.<baseDomain>` as the inventory
    /// holds it, no trailing dot added.
    pub domain: String,
    /// The address of [`NAME_SERVER`] (the bastion's listen address), or
    /// `None` when [`ClusterRecords::addresses`] already has a name `ns1`
    /// (compared without regard to case, RFC 4343).
    pub name_server: Option<IpAddr>,
    /// The forward records in zone-file order: `api` and `api-int` → the API
    /// address, each node's host name → its address (inventory order), with
    /// etcd records each master's `etcd-<n>` → its address, then the extra
    /// records of bastion-config.yaml (by name, trailing dot dropped).
    pub addresses: Vec<Address>,
    /// The ingress address: [`APPS_WILDCARD`] (and, where a renderer answers
    /// it, [`APPS`]) resolve to it.
    pub apps: IpAddr,
    /// With etcd records, one [`ETCD_SRV`] record per master, `0 10 2380
    /// etcd-<n>`, in master order; else empty.
    pub services: Vec<Service>,
    /// Reverse records, by address (ascending): each node's FQDN, and for an
    /// API address no node holds, `api.<domain>` and `api-int.<domain>`.
    /// Targets are FQDNs without the trailing dot.
    pub pointers: BTreeMap<IpAddr, Vec<String>>,
}

/// The records of `inv`'s cluster. With `etcd_records` (the release wants
/// them: `okd_types::release::ReleaseTarget::wants_etcd_srv_records()`,
/// releases ≤ 4.5) the `etcd-<n>` names and the SRV records are included.
/// Pure: the same inventory gives the same records.
pub fn cluster_records(inv: &Inventory, etcd_records: bool) -> ClusterRecords {
    let mut addresses = vec![
        Address {
            name: "api".into(),
            ip: inv.api,
        },
        Address {
            name: "api-int".into(),
            ip: inv.api,
        },
    ];
    for n in &inv.nodes {
        addresses.push(Address {
            name: n.hostname.clone(),
            ip: n.address,
        });
    }
    let etcd: Vec<(&str, IpAddr)> = if etcd_records {
        inv.nodes
            .iter()
            .filter_map(|n| n.etcd_name.as_deref().map(|e| (e, n.address)))
            .collect()
    } else {
        Vec::new()
    };
    for (name, ip) in &etcd {
        addresses.push(Address {
            name: (*name).to_string(),
            ip: *ip,
        });
    }
    for (name, ip) in &inv.extra_records {
        addresses.push(Address {
            name: name.trim_end_matches('.').to_string(),
            ip: *ip,
        });
    }
    let name_server = (!addresses
        .iter()
        .any(|a| a.name.eq_ignore_ascii_case(NAME_SERVER)))
    .then_some(inv.listen);
    let services = etcd
        .iter()
        .map(|(name, _)| Service {
            name: ETCD_SRV.into(),
            priority: 0,
            weight: 10,
            port: 2380,
            target: (*name).to_string(),
        })
        .collect();
    let mut pointers: BTreeMap<IpAddr, Vec<String>> = BTreeMap::new();
    for n in &inv.nodes {
        pointers.entry(n.address).or_default().push(n.fqdn.clone());
    }
    if inv.by_address(inv.api).is_none() {
        let e = pointers.entry(inv.api).or_default();
        e.push(format!("api.{}", inv.cluster_domain));
        e.push(format!("api-int.{}", inv.cluster_domain));
    }
    ClusterRecords {
        domain: inv.cluster_domain.clone(),
        name_server,
        addresses,
        apps: inv.ingress,
        services,
        pointers,
    }
}

impl ClusterRecords {
    /// The SOA MNAME and the NS target of every zone, `ns1.<domain>`, no
    /// trailing dot.
    pub fn name_server_fqdn(&self) -> String {
        format!("{NAME_SERVER}.{}", self.domain)
    }

    /// The SOA RNAME (the responsible mailbox, RFC 1035 §8),
    /// `hostmaster.<domain>`, no trailing dot.
    pub fn hostmaster(&self) -> String {
        format!("hostmaster.{}", self.domain)
    }

    /// The reverse zones: zone name (see [`reverse_zone`], no trailing dot,
    /// sorted) → its PTR records as `(label inside the zone, target FQDN
    /// without trailing dot)`, in address order.
    pub fn reverse_zones(&self) -> BTreeMap<String, Vec<(String, String)>> {
        let mut zones: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
        for (ip, targets) in &self.pointers {
            let (zone, label) = reverse_zone(*ip);
            let records = zones.entry(zone).or_default();
            for t in targets {
                records.push((label.clone(), t.clone()));
            }
        }
        zones
    }
}

/// The reverse zone holding `ip` and the record's label(s) inside it: the /24
/// for IPv4 (`120.168.192.in-addr.arpa`, `102`; RFC 1035 §3.5), the /64 in
/// nibble form for IPv6 (`….ip6.arpa` of 16 nibbles, and 16 nibbles inside
/// it; RFC 3596 §2.5). Neither has a trailing dot; nibbles are lower case.
pub fn reverse_zone(ip: IpAddr) -> (String, String) {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, c, d] = v4.octets();
            (format!("{c}.{b}.{a}.in-addr.arpa"), d.to_string())
        }
        IpAddr::V6(v6) => {
            let nibbles: Vec<String> = v6
                .octets()
                .iter()
                .flat_map(|b| [b >> 4, b & 0xf])
                .map(|n| format!("{n:x}"))
                .collect();
            let rev = |s: &[String]| s.iter().rev().cloned().collect::<Vec<_>>().join(".");
            (
                format!("{}.ip6.arpa", rev(&nibbles[..16])),
                rev(&nibbles[16..]),
            )
        }
    }
}

/// The full reverse name of `ip`, no trailing dot
/// (`102.120.168.192.in-addr.arpa`).
pub fn reverse_name(ip: IpAddr) -> String {
    let (zone, label) = reverse_zone(ip);
    format!("{label}.{zone}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn example() -> Inventory {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../../examples/baremetal-single-master");
        Inventory::load(&dir, "okd", "example").unwrap()
    }

    fn names(r: &ClusterRecords) -> Vec<String> {
        r.addresses
            .iter()
            .map(|a| format!("{} {}", a.name, a.ip))
            .collect()
    }

    #[test]
    fn example_records() {
        let r = cluster_records(&example(), true);
        assert_eq!(r.domain, "okd.example");
        assert_eq!(r.name_server, Some("192.168.120.101".parse().unwrap()));
        assert_eq!(
            names(&r),
            [
                "api 192.168.120.101",
                "api-int 192.168.120.101",
                "bootstrap 192.168.120.102",
                "master 192.168.120.103",
                "worker1 192.168.120.104",
                "etcd-0 192.168.120.103",
                "bastion 192.168.120.101",
                "registry 192.168.120.101",
            ]
        );
        assert_eq!(
            r.services,
            [Service {
                name: ETCD_SRV.into(),
                priority: 0,
                weight: 10,
                port: 2380,
                target: "etcd-0".into()
            }]
        );
        let rev = r.reverse_zones();
        assert_eq!(
            rev["120.168.192.in-addr.arpa"],
            [
                ("101".into(), "api.okd.example".into()),
                ("101".into(), "api-int.okd.example".into()),
                ("102".into(), "bootstrap.okd.example".into()),
                ("103".into(), "master.okd.example".into()),
                ("104".into(), "worker1.okd.example".into()),
            ]
        );
        let plain = cluster_records(&example(), false);
        assert!(plain.services.is_empty());
        assert!(!names(&plain).iter().any(|n| n.starts_with("etcd")));
    }

    #[test]
    fn a_name_ns1_takes_the_place_of_the_name_server_record() {
        let mut inv = example();
        inv.extra_records
            .insert("NS1".into(), "10.0.0.9".parse().unwrap());
        assert_eq!(cluster_records(&inv, false).name_server, None);
    }

    #[test]
    fn the_api_on_a_node_gets_no_pointer_of_its_own() {
        let mut inv = example();
        inv.api = inv.nodes[1].address;
        let r = cluster_records(&inv, false);
        assert_eq!(r.pointers[&inv.api], ["master.okd.example"]);
    }

    #[test]
    fn reverse_names() {
        assert_eq!(
            reverse_zone("192.168.120.102".parse().unwrap()),
            ("120.168.192.in-addr.arpa".into(), "102".into())
        );
        let (z, r) = reverse_zone("2001:db8::1".parse().unwrap());
        assert_eq!(z, "0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa");
        assert_eq!(r, "1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0");
        assert_eq!(
            reverse_name("10.0.0.1".parse().unwrap()),
            "1.0.0.10.in-addr.arpa"
        );
    }
}
