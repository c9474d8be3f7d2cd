//! Every record the server is authoritative for ([`okd_dns::zone_records`]),
//! for inventories that exercise each kind of record (VIPs apart from the
//! bastion, IPv6, extra records, a wildcard, mixed-case names, the API on a
//! node, etcd records on and off), equals `tests/data/golden.txt` with the
//! SOA serial masked. Regenerate the file with `OKD_BLESS=1` only for an
//! intended change.

mod common;

use std::net::IpAddr;

use okd_dns::RecordData;
use okd_hosts::Inventory;

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

/// The cases of the generated-files golden test of `okd-bastion`
/// (`crates/bastion/configs/tests/golden.rs`).
fn cases() -> Vec<(&'static str, Inventory)> {
    let plain = common::single_master();
    let mut vips = common::single_master();
    vips.api = ip("192.168.120.200");
    vips.ingress = ip("192.168.120.201");
    vips.nodes[2].address = ip("fd00:120::104");
    vips.extra_records.insert("quay".into(), ip("10.0.0.5"));
    vips.extra_records.insert("*.svc".into(), ip("10.0.0.6"));
    vips.extra_records
        .insert("v6.Registry".into(), ip("fd00::5"));
    let mut on_node = common::single_master();
    on_node.api = on_node.nodes[1].address;
    on_node.ingress = ip("fd00:120::80");
    on_node.nodes[2].hostname = "Worker1".into();
    on_node.nodes[2].fqdn = "Worker1.okd.example".into();
    on_node.upstreams.clear();
    vec![("plain", plain), ("vips", vips), ("api-on-node", on_node)]
}

/// One line per zone and record, the SOA serial replaced by 0.
fn render() -> String {
    let mut out = String::new();
    for (label, inv) in cases() {
        for etcd in [false, true] {
            for z in okd_dns::zone_records(&inv, etcd).unwrap() {
                out.push_str(&format!("=== {label} etcd={etcd} {}\n", z.origin));
                for r in &z.records {
                    let data = match &r.data {
                        RecordData::Soa { .. } => {
                            let mut f: Vec<String> =
                                r.data.to_string().split(' ').map(String::from).collect();
                            f[2] = "0".into();
                            f.join(" ")
                        }
                        d => d.to_string(),
                    };
                    out.push_str(&format!(
                        "{} {} {} {} {data}\n",
                        r.name,
                        r.ttl,
                        r.data.rtype(),
                        r.data.type_code()
                    ));
                }
            }
        }
    }
    out
}

#[test]
fn served_records_are_unchanged() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/golden.txt");
    let got = render();
    if std::env::var_os("OKD_BLESS").is_some() {
        std::fs::write(&path, &got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (run with OKD_BLESS=1 once)", path.display()));
    if got != want {
        let first = got
            .lines()
            .zip(want.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(got.lines().count().min(want.lines().count()));
        panic!(
            "{}: the served records changed at line {}:\n got: {:?}\nwant: {:?}",
            path.display(),
            first + 1,
            got.lines().nth(first),
            want.lines().nth(first)
        );
    }
}
