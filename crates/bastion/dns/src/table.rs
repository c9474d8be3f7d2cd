//! The zones as a lookup table of encoded answers.
//!
//! Every name of every zone (and every empty non-terminal between a name and
//! its apex, RFC 8020) is a key in wire form, lower case; its value holds
//! each RRset already encoded with the question's name as owner (a pointer
//! to offset 12), so answering is one hash lookup and a copy. Names that
//! are not keys are resolved by the closest-encloser rule of RFC 4592 §3.3:
//! a wildcard child of the closest encloser answers, otherwise NXDOMAIN.

use std::collections::HashMap;

use hickory_proto::ProtoError;

use crate::DnsError;
use crate::hash::Fast;
use crate::wire::{put_record, type_any, wire_name};
use crate::zone::{RecordData, Zone, ZoneRecord};

/// One RRset (or all records of a name, for QTYPE `*`), encoded.
#[derive(Debug, Default)]
pub(crate) struct RrSet {
    /// TYPE code (0 for the `*` set).
    rtype: u16,
    /// Answer RRs, owner = pointer to QNAME.
    pub answer: Vec<u8>,
    /// Number of answer RRs.
    pub ancount: u16,
    /// Addresses of SRV and NS targets in our zones (RFC 2782, RFC 1035
    /// §3.3.11 additional processing).
    pub additional: Vec<u8>,
    /// Number of additional RRs.
    pub arcount: u16,
    /// The answers' data in presentation form, for the observer.
    pub text: Vec<String>,
}

/// A zone's SOA, encoded for the authority section of negative answers
/// (RFC 2308 §3).
#[derive(Debug)]
pub(crate) struct ZoneInfo {
    /// The zone apex, e.g. `okd.example.`.
    pub origin: String,
    /// The SOA RR with the apex as owner and TTL min(TTL, MINIMUM).
    pub soa: Vec<u8>,
}

#[derive(Debug)]
struct Node {
    zone: usize,
    sets: Vec<RrSet>,
    any: Option<RrSet>,
}

/// What the zones say about a question.
#[derive(Debug)]
pub(crate) enum Lookup<'a> {
    /// NOERROR with these records.
    Answer(&'a RrSet),
    /// The name exists without this type: NOERROR, no answers, SOA.
    NoData(&'a ZoneInfo),
    /// The name does not exist in the zone: NXDOMAIN, SOA.
    NxDomain(&'a ZoneInfo),
    /// Outside every zone we hold.
    NotOurs,
}

/// The lookup table of a set of zones.
#[derive(Debug)]
pub(crate) struct Table {
    nodes: HashMap<Box<[u8]>, Node, Fast>,
    zones: Vec<ZoneInfo>,
}

impl Table {
    /// Encodes `zones` (records of one zone must lie at or below its apex).
    ///
    /// # Errors
    /// [`DnsError::InvalidName`] for a name hickory-proto does not take.
    pub fn new(zones: &[Zone]) -> Result<Table, DnsError> {
        let mut nodes: HashMap<Box<[u8]>, Node, Fast> = HashMap::with_hasher(Fast::new());
        let mut infos = Vec::with_capacity(zones.len());
        let mut records_at: HashMap<Box<[u8]>, Vec<&ZoneRecord>> = HashMap::new();
        for (zi, z) in zones.iter().enumerate() {
            let apex = wire_name(&z.origin).map_err(invalid(&z.origin))?;
            let mut soa = Vec::new();
            for r in &z.records {
                if let RecordData::Soa { minimum, .. } = &r.data
                    && soa.is_empty()
                {
                    put_record(&mut soa, Some(&z.origin), r.ttl.min(*minimum), &r.data)
                        .map_err(invalid(&r.name))?;
                }
            }
            infos.push(ZoneInfo {
                origin: z.origin.clone(),
                soa,
            });
            nodes.entry(apex.clone().into()).or_insert_with(|| Node {
                zone: zi,
                sets: Vec::new(),
                any: None,
            });
            for r in &z.records {
                let key = wire_name(&r.name).map_err(invalid(&r.name))?;
                records_at.entry(key.clone().into()).or_default().push(r);
                // The name and every empty non-terminal up to the apex.
                let mut at = 0;
                while key.len() - at > apex.len() {
                    nodes.entry(key[at..].into()).or_insert_with(|| Node {
                        zone: zi,
                        sets: Vec::new(),
                        any: None,
                    });
                    at += 1 + usize::from(key[at]);
                }
            }
        }
        let all: Vec<&ZoneRecord> = zones.iter().flat_map(|z| &z.records).collect();
        for (key, recs) in &records_at {
            let Some(node) = nodes.get_mut(key) else {
                continue;
            };
            let mut types: Vec<u16> = recs.iter().map(|r| r.data.type_code()).collect();
            types.dedup();
            types.sort_unstable();
            types.dedup();
            for t in types {
                node.sets.push(encode(
                    t,
                    recs.iter().copied().filter(|r| r.data.type_code() == t),
                    &all,
                )?);
            }
            node.any = Some(encode(type_any(), recs.iter().copied(), &all)?);
        }
        Ok(Table {
            nodes,
            zones: infos,
        })
    }

    /// Looks up `qname` (wire form, lower case) and `qtype`.
    pub fn lookup(&self, qname: &[u8], qtype: u16) -> Lookup<'_> {
        if let Some(node) = self.nodes.get(qname) {
            return self.at(node, qtype);
        }
        // Closest encloser, then its wildcard child (RFC 4592 §3.3.1).
        let mut at = 0;
        while let Some(&len) = qname.get(at) {
            if len == 0 {
                break;
            }
            at += 1 + usize::from(len);
            let Some(suffix) = qname.get(at..) else { break };
            let Some(encloser) = self.nodes.get(suffix) else {
                continue;
            };
            let mut wild = [0u8; 258];
            wild[0] = 1;
            wild[1] = b'*';
            wild[2..2 + suffix.len()].copy_from_slice(suffix);
            return match self.nodes.get(&wild[..2 + suffix.len()]) {
                Some(w) => self.at(w, qtype),
                None => Lookup::NxDomain(&self.zones[encloser.zone]),
            };
        }
        Lookup::NotOurs
    }

    fn at<'a>(&'a self, node: &'a Node, qtype: u16) -> Lookup<'a> {
        let found = if qtype == type_any() {
            node.any.as_ref()
        } else {
            node.sets.iter().find(|s| s.rtype == qtype)
        };
        match found {
            Some(set) => Lookup::Answer(set),
            None => Lookup::NoData(&self.zones[node.zone]),
        }
    }

    /// The zones, in the order given to [`Table::new`].
    pub fn zones(&self) -> &[ZoneInfo] {
        &self.zones
    }
}

/// Encodes records with the QNAME pointer as owner, and the A/AAAA records
/// of their SRV/NS targets (from `all`) as additional data.
fn encode<'a>(
    rtype: u16,
    recs: impl Iterator<Item = &'a ZoneRecord>,
    all: &[&ZoneRecord],
) -> Result<RrSet, DnsError> {
    let mut set = RrSet {
        rtype,
        ..RrSet::default()
    };
    let mut targets: Vec<&str> = Vec::new();
    for r in recs {
        put_record(&mut set.answer, None, r.ttl, &r.data).map_err(invalid(&r.name))?;
        set.ancount += 1;
        set.text.push(r.data.to_string());
        if let RecordData::Srv { target, .. } | RecordData::Ns(target) = &r.data
            && !targets.contains(&target.as_str())
        {
            targets.push(target);
        }
    }
    for t in targets {
        for r in all.iter().filter(|r| r.name == t) {
            if matches!(r.data, RecordData::A(_) | RecordData::Aaaa(_)) {
                put_record(&mut set.additional, Some(&r.name), r.ttl, &r.data)
                    .map_err(invalid(&r.name))?;
                set.arcount += 1;
            }
        }
    }
    Ok(set)
}

/// Maps a hickory-proto error about `name` to [`DnsError::InvalidName`].
fn invalid(name: &str) -> impl Fn(ProtoError) -> DnsError + '_ {
    move |e| DnsError::InvalidName {
        name: name.to_string(),
        reason: e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::zone::TTL_SECS;

    fn rec(name: &str, data: RecordData) -> ZoneRecord {
        ZoneRecord {
            name: name.into(),
            ttl: TTL_SECS,
            data,
        }
    }

    fn table() -> Table {
        let soa = RecordData::Soa {
            mname: "ns1.c.test.".into(),
            rname: "hostmaster.c.test.".into(),
            serial: 1,
            refresh: 3600,
            retry: 600,
            expire: 604800,
            minimum: 60,
        };
        Table::new(&[Zone {
            origin: "c.test.".into(),
            records: vec![
                rec("c.test.", soa),
                rec("c.test.", RecordData::Ns("ns1.c.test.".into())),
                rec("ns1.c.test.", RecordData::A([10, 0, 0, 1].into())),
                rec("api.c.test.", RecordData::A([10, 0, 0, 2].into())),
                rec("api.c.test.", RecordData::A([10, 0, 0, 3].into())),
                rec("*.apps.c.test.", RecordData::A([10, 0, 0, 4].into())),
                rec(
                    "_etcd-server-ssl._tcp.c.test.",
                    RecordData::Srv {
                        priority: 0,
                        weight: 10,
                        port: 2380,
                        target: "api.c.test.".into(),
                    },
                ),
            ],
        }])
        .unwrap()
    }

    fn texts(l: Lookup<'_>) -> Vec<String> {
        match l {
            Lookup::Answer(s) => s.text.clone(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn exact_wildcard_and_negative() {
        let t = table();
        let w = |s: &str| wire_name(s).unwrap();
        assert_eq!(
            texts(t.lookup(&w("api.c.test."), 1)),
            ["10.0.0.2", "10.0.0.3"]
        );
        assert_eq!(texts(t.lookup(&w("console.apps.c.test."), 1)), ["10.0.0.4"]);
        assert_eq!(texts(t.lookup(&w("a.b.apps.c.test."), 1)), ["10.0.0.4"]);
        assert!(matches!(
            t.lookup(&w("a.b.apps.c.test."), 28),
            Lookup::NoData(_)
        ));
        assert!(matches!(t.lookup(&w("api.c.test."), 28), Lookup::NoData(_)));
        // Empty non-terminals exist (RFC 8020): NODATA, not NXDOMAIN.
        assert!(matches!(
            t.lookup(&w("_tcp.c.test."), 33),
            Lookup::NoData(_)
        ));
        assert!(matches!(t.lookup(&w("apps.c.test."), 1), Lookup::NoData(_)));
        assert!(matches!(
            t.lookup(&w("nope.c.test."), 1),
            Lookup::NxDomain(_)
        ));
        assert!(matches!(
            t.lookup(&w("x.api.c.test."), 1),
            Lookup::NxDomain(_)
        ));
        assert!(matches!(t.lookup(&w("c.test.x."), 1), Lookup::NotOurs));
        assert!(matches!(t.lookup(&w("test."), 1), Lookup::NotOurs));
        assert!(matches!(t.lookup(&w("."), 1), Lookup::NotOurs));
        assert_eq!(texts(t.lookup(&w("c.test."), 2)), ["ns1.c.test."]);
        assert_eq!(texts(t.lookup(&w("c.test."), type_any())).len(), 2);
    }

    #[test]
    fn srv_and_ns_carry_target_addresses() {
        let t = table();
        match t.lookup(&wire_name("_etcd-server-ssl._tcp.c.test.").unwrap(), 33) {
            Lookup::Answer(s) => {
                assert_eq!(s.text, ["0 10 2380 api.c.test."]);
                assert_eq!(s.arcount, 2);
            }
            other => panic!("{other:?}"),
        }
        match t.lookup(&wire_name("c.test.").unwrap(), 2) {
            Lookup::Answer(s) => assert_eq!(s.arcount, 1),
            other => panic!("{other:?}"),
        }
    }
}
