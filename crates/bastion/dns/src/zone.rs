//! The records the server is authoritative for, as plain data.
//!
//! [`zone_records`] renders the cluster's records, built once by
//! [`okd_dns_records::cluster_records`] (the same records the BIND, CoreDNS
//! and dnsmasq files of `okd_bastion::configs` are rendered from), into the
//! forward zone of the cluster domain and one reverse zone per /24 (IPv4) or
//! /64 (IPv6) that holds a node or the API address: names lower-cased and
//! fully qualified, repeated records dropped, and the `apps` name itself
//! answered beside `*.apps` (as dnsmasq's `address=/apps.<domain>/` does).

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use okd_dns_records::{ClusterRecords, cluster_records};
use okd_hosts::Inventory;

use crate::DnsError;

/// TTL of every record served and of negative answers (RFC 2308 SOA
/// minimum), in seconds: [`okd_dns_records::TTL_SECS`], the TTL of the
/// generated BIND and dnsmasq files too.
pub const TTL_SECS: u32 = okd_dns_records::TTL_SECS;

/// One zone: its origin and every record in it, SOA first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Zone {
    /// Zone apex, lower case with a trailing dot, e.g. `okd.example.` or
    /// `120.168.192.in-addr.arpa.`.
    pub origin: String,
    /// The records: SOA, NS, then the data records in the order of the
    /// generated BIND zone file; no two are equal.
    pub records: Vec<ZoneRecord>,
}

/// One resource record (class IN).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZoneRecord {
    /// Owner name, lower case FQDN with a trailing dot (`api.okd.example.`);
    /// a leading `*` label is an RFC 4592 wildcard (`*.apps.okd.example.`).
    pub name: String,
    /// Time to live in seconds ([`TTL_SECS`]).
    pub ttl: u32,
    /// Type and data.
    pub data: RecordData,
}

/// The record types the server holds (RFC 1035 §3.3, RFC 3596, RFC 2782).
/// Names inside are lower case FQDNs with a trailing dot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordData {
    /// IPv4 host address (type 1, RFC 1035 §3.4.1).
    A(Ipv4Addr),
    /// IPv6 host address (type 28, RFC 3596).
    Aaaa(Ipv6Addr),
    /// Name server of the zone (type 2).
    Ns(String),
    /// Reverse-mapping pointer (type 12).
    Ptr(String),
    /// Service location (type 33, RFC 2782).
    Srv {
        /// Priority (lower first).
        priority: u16,
        /// Weight among equal priorities.
        weight: u16,
        /// TCP/UDP port.
        port: u16,
        /// Target host name.
        target: String,
    },
    /// Start of authority (type 6, RFC 1035 §3.3.13); times in seconds.
    Soa {
        /// Primary name server (`ns1.<cluster domain>.`).
        mname: String,
        /// Mailbox of the responsible person (`hostmaster.<cluster domain>.`).
        rname: String,
        /// Zone serial: Unix time in seconds when the zones were built.
        serial: u32,
        /// Refresh interval.
        refresh: u32,
        /// Retry interval.
        retry: u32,
        /// Expiry.
        expire: u32,
        /// Negative-caching TTL (RFC 2308).
        minimum: u32,
    },
}

impl RecordData {
    /// The A or AAAA record for `ip`.
    pub fn address(ip: IpAddr) -> RecordData {
        match ip {
            IpAddr::V4(v4) => RecordData::A(v4),
            IpAddr::V6(v6) => RecordData::Aaaa(v6),
        }
    }

    /// Mnemonic of the type: `A`, `AAAA`, `NS`, `PTR`, `SRV` or `SOA`.
    pub fn rtype(&self) -> &'static str {
        match self {
            RecordData::A(_) => "A",
            RecordData::Aaaa(_) => "AAAA",
            RecordData::Ns(_) => "NS",
            RecordData::Ptr(_) => "PTR",
            RecordData::Srv { .. } => "SRV",
            RecordData::Soa { .. } => "SOA",
        }
    }

    /// Numeric TYPE (RFC 1035 §3.2.2, RFC 3596, RFC 2782): 1, 28, 2, 12, 33 or 6.
    pub fn type_code(&self) -> u16 {
        match self {
            RecordData::A(_) => 1,
            RecordData::Aaaa(_) => 28,
            RecordData::Ns(_) => 2,
            RecordData::Ptr(_) => 12,
            RecordData::Srv { .. } => 33,
            RecordData::Soa { .. } => 6,
        }
    }
}

/// Presentation (zone file) form of the data, as `dig` prints it:
/// `192.168.120.101`, `0 10 2380 etcd-0.okd.example.`,
/// `ns1.okd.example. hostmaster.okd.example. 1700000000 3600 600 604800 60`.
impl fmt::Display for RecordData {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecordData::A(a) => write!(f, "{a}"),
            RecordData::Aaaa(a) => write!(f, "{a}"),
            RecordData::Ns(n) | RecordData::Ptr(n) => f.write_str(n),
            RecordData::Srv {
                priority,
                weight,
                port,
                target,
            } => write!(f, "{priority} {weight} {port} {target}"),
            RecordData::Soa {
                mname,
                rname,
                serial,
                refresh,
                retry,
                expire,
                minimum,
            } => write!(
                f,
                "{mname} {rname} {serial} {refresh} {retry} {expire} {minimum}"
            ),
        }
    }
}

pub use okd_dns_records::reverse_zone;

/// The zones for `inv`, serial = the current Unix time in seconds (as the
/// generated BIND zones).
///
/// Forward zone `<cluster domain>.` (RFC 1035 zone, TTL [`TTL_SECS`]):
/// SOA (`ns1.<d>. hostmaster.<d>. <serial> 3600 600 604800 60`), NS
/// `ns1.<d>.`, `ns1` → the listen address (unless a name `ns1` already
/// exists), `api` and `api-int` → `inv.api`, every node's host name → its
/// address, `etcd-<n>` → each master's address when `etcd_records`
/// (releases ≤ 4.5, `ReleaseTarget::wants_etcd_srv_records()`), the extra
/// records, `apps` and the wildcard `*.apps` (RFC 4592) → `inv.ingress`, and
/// with `etcd_records` one SRV `_etcd-server-ssl._tcp.<d>.` `0 10 2380
/// etcd-<n>.<d>.` per master (RFC 2782). Addresses are A or AAAA by family.
///
/// Reverse zones (see [`reverse_zone`]), sorted by name, each with the same
/// SOA and NS: a PTR from every node address to the node's FQDN, and from
/// the API address to `api.<d>.` and `api-int.<d>.` when no node has it.
///
/// # Errors
/// [`DnsError::InvalidName`] when a name is not a valid domain name (an
/// empty label, a label over 63 octets or a name over 255 octets, RFC 1035
/// §2.3.4).
pub fn zone_records(inv: &Inventory, etcd_records: bool) -> Result<Vec<Zone>, DnsError> {
    zones_with_serial(inv, etcd_records, okd_dns_records::serial_now())
}

/// [`zone_records`] with a given SOA serial.
pub(crate) fn zones_with_serial(
    inv: &Inventory,
    etcd: bool,
    serial: u32,
) -> Result<Vec<Zone>, DnsError> {
    let records = cluster_records(inv, etcd);
    let names = Names {
        domain: records.domain.trim_end_matches('.').to_ascii_lowercase(),
        serial,
    };
    let mut zones = vec![forward_zone(&records, &names)];
    zones.extend(reverse_zones(&records, &names));
    for z in &zones {
        check_zone_names(z)?;
    }
    Ok(zones)
}

/// The cluster domain (lower case, no trailing dot) and the SOA serial
/// shared by every zone of one [`zones_with_serial`] call.
struct Names {
    domain: String,
    serial: u32,
}

impl Names {
    /// `rel` (relative, any case, trailing dot ignored) as a lower-case FQDN
    /// under the cluster domain, with the trailing dot.
    fn fq(&self, rel: &str) -> String {
        format!(
            "{}.{}.",
            rel.trim_end_matches('.').to_ascii_lowercase(),
            self.domain
        )
    }

    /// The SOA and NS records every zone starts with, owned by `origin`.
    fn head(&self, origin: &str) -> Vec<ZoneRecord> {
        let ns = self.fq(okd_dns_records::NAME_SERVER);
        vec![
            rec(
                origin.to_string(),
                RecordData::Soa {
                    mname: ns.clone(),
                    rname: self.fq("hostmaster"),
                    serial: self.serial,
                    refresh: okd_dns_records::SOA_REFRESH_SECS,
                    retry: okd_dns_records::SOA_RETRY_SECS,
                    expire: okd_dns_records::SOA_EXPIRE_SECS,
                    minimum: TTL_SECS,
                },
            ),
            rec(origin.to_string(), RecordData::Ns(ns)),
        ]
    }
}

/// `fqdn` (any case, trailing dot or not) lower case with the trailing dot.
fn absolute(fqdn: &str) -> String {
    format!("{}.", fqdn.trim_end_matches('.').to_ascii_lowercase())
}

/// A record with the zone TTL ([`TTL_SECS`]).
fn rec(name: String, data: RecordData) -> ZoneRecord {
    ZoneRecord {
        name,
        ttl: TTL_SECS,
        data,
    }
}

/// The forward zone `<cluster domain>.` as described on [`zone_records`].
fn forward_zone(r: &ClusterRecords, names: &Names) -> Zone {
    let origin = format!("{}.", names.domain);
    let mut fwd = names.head(&origin);
    if let Some(ip) = r.name_server {
        fwd.push(rec(
            names.fq(okd_dns_records::NAME_SERVER),
            RecordData::address(ip),
        ));
    }
    for a in &r.addresses {
        fwd.push(rec(names.fq(&a.name), RecordData::address(a.ip)));
    }
    for name in [okd_dns_records::APPS, okd_dns_records::APPS_WILDCARD] {
        fwd.push(rec(names.fq(name), RecordData::address(r.apps)));
    }
    for s in &r.services {
        fwd.push(rec(
            names.fq(&s.name),
            RecordData::Srv {
                priority: s.priority,
                weight: s.weight,
                port: s.port,
                target: names.fq(&s.target),
            },
        ));
    }
    Zone {
        origin,
        records: dedup(fwd),
    }
}

/// The reverse zones, sorted by origin, with the PTR records of
/// [`ClusterRecords::reverse_zones`].
fn reverse_zones(r: &ClusterRecords, names: &Names) -> Vec<Zone> {
    r.reverse_zones()
        .into_iter()
        .map(|(zone, ptrs)| {
            let origin = format!("{zone}.");
            let mut records = names.head(&origin);
            for (label, target) in ptrs {
                records.push(rec(
                    format!("{label}.{origin}"),
                    RecordData::Ptr(absolute(&target)),
                ));
            }
            Zone {
                origin,
                records: dedup(records),
            }
        })
        .collect()
}

/// Checks every owner name and every name inside the records of `z`.
fn check_zone_names(z: &Zone) -> Result<(), DnsError> {
    for r in &z.records {
        check_name(&r.name)?;
        match &r.data {
            RecordData::Ns(n) | RecordData::Ptr(n) => check_name(n)?,
            RecordData::Srv { target, .. } => check_name(target)?,
            RecordData::Soa { mname, rname, .. } => {
                check_name(mname)?;
                check_name(rname)?;
            }
            RecordData::A(_) | RecordData::Aaaa(_) => {}
        }
    }
    Ok(())
}

/// Drops repeated records (RFC 2181 §5: an RRset holds no duplicates),
/// keeping the first.
fn dedup(records: Vec<ZoneRecord>) -> Vec<ZoneRecord> {
    let mut out: Vec<ZoneRecord> = Vec::with_capacity(records.len());
    for r in records {
        if !out.contains(&r) {
            out.push(r);
        }
    }
    out
}

/// RFC 1035 §2.3.4 size limits on an FQDN with a trailing dot.
fn check_name(name: &str) -> Result<(), DnsError> {
    let bad = |reason: &str| {
        Err(DnsError::InvalidName {
            name: name.to_string(),
            reason: reason.to_string(),
        })
    };
    let Some(body) = name.strip_suffix('.') else {
        return bad("not fully qualified");
    };
    if body.is_empty() {
        return Ok(());
    }
    let mut wire = 1;
    for label in body.split('.') {
        if label.is_empty() {
            return bad("empty label");
        }
        if label.len() > 63 {
            return bad("label longer than 63 octets");
        }
        wire += 1 + label.len();
    }
    if wire > 255 {
        return bad("longer than 255 octets");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn example() -> Inventory {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../../examples/baremetal-single-master");
        Inventory::load(&dir, "okd", "example").unwrap()
    }

    fn lines(z: &Zone) -> Vec<String> {
        z.records
            .iter()
            .map(|r| format!("{} {} {} {}", r.name, r.ttl, r.data.rtype(), r.data))
            .collect()
    }

    #[test]
    fn example_zones() {
        let zones = zones_with_serial(&example(), true, 7).unwrap();
        assert_eq!(zones.len(), 2);
        assert_eq!(zones[0].origin, "okd.example.");
        assert_eq!(
            lines(&zones[0]),
            [
                "okd.example. 60 SOA ns1.okd.example. hostmaster.okd.example. 7 3600 600 604800 60",
                "okd.example. 60 NS ns1.okd.example.",
                "ns1.okd.example. 60 A 192.168.120.101",
                "api.okd.example. 60 A 192.168.120.101",
                "api-int.okd.example. 60 A 192.168.120.101",
                "bootstrap.okd.example. 60 A 192.168.120.102",
                "master.okd.example. 60 A 192.168.120.103",
                "worker1.okd.example. 60 A 192.168.120.104",
                "etcd-0.okd.example. 60 A 192.168.120.103",
                "bastion.okd.example. 60 A 192.168.120.101",
                "registry.okd.example. 60 A 192.168.120.101",
                "apps.okd.example. 60 A 192.168.120.101",
                "*.apps.okd.example. 60 A 192.168.120.101",
                "_etcd-server-ssl._tcp.okd.example. 60 SRV 0 10 2380 etcd-0.okd.example.",
            ]
        );
        assert_eq!(zones[1].origin, "120.168.192.in-addr.arpa.");
        assert_eq!(
            lines(&zones[1])[2..],
            [
                "101.120.168.192.in-addr.arpa. 60 PTR api.okd.example.",
                "101.120.168.192.in-addr.arpa. 60 PTR api-int.okd.example.",
                "102.120.168.192.in-addr.arpa. 60 PTR bootstrap.okd.example.",
                "103.120.168.192.in-addr.arpa. 60 PTR master.okd.example.",
                "104.120.168.192.in-addr.arpa. 60 PTR worker1.okd.example.",
            ]
        );
        let no_etcd = zones_with_serial(&example(), false, 7).unwrap();
        assert!(!lines(&no_etcd[0]).iter().any(|l| l.contains("etcd")));
    }

    #[test]
    fn ipv6_nodes_get_aaaa_and_ip6_arpa() {
        let mut inv = example();
        inv.nodes[2].address = "2001:db8::104".parse().unwrap();
        let zones = zones_with_serial(&inv, false, 1).unwrap();
        assert!(lines(&zones[0]).contains(&"worker1.okd.example. 60 AAAA 2001:db8::104".into()));
        let z = zones
            .iter()
            .find(|z| z.origin.ends_with("ip6.arpa."))
            .unwrap();
        assert_eq!(z.origin, "0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa.");
        assert_eq!(
            lines(z)[2],
            "4.0.1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa. 60 PTR worker1.okd.example."
        );
    }

    #[test]
    fn invalid_names_are_errors() {
        let mut inv = example();
        inv.extra_records
            .insert("x".repeat(64), "10.0.0.1".parse().unwrap());
        let e = zones_with_serial(&inv, false, 1).unwrap_err().to_string();
        assert!(e.contains("label longer than 63 octets"), "{e}");
        let mut inv = example();
        inv.extra_records
            .insert("a..b".into(), "10.0.0.1".parse().unwrap());
        let e = zones_with_serial(&inv, false, 1).unwrap_err().to_string();
        assert!(e.contains("empty label"), "{e}");
    }
}
