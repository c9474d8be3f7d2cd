//! The bytes of every file `create bastion-configs` writes, for inventories
//! that exercise each kind of record (VIPs apart from the bastion, IPv6,
//! extra records, a wildcard, mixed-case names, the API on a node, etcd
//! records on and off), equal `tests/data/golden.txt` with the SOA serial
//! masked. A change to the output shows up here as a diff; regenerate the
//! file with `OKD_BLESS=1` only for an intended change.

mod common;

use std::net::IpAddr;

use okd_hosts::Inventory;

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

/// The cases, each with a label.
fn cases() -> Vec<(&'static str, Inventory)> {
    let plain = common::single_master();
    let mut vips = common::with_vips();
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

/// Every file of every case, the SOA serial replaced by `SERIAL`.
fn render() -> String {
    let mut out = String::new();
    for (label, inv) in cases() {
        for etcd in [false, true] {
            for f in okd_bastion::bastion_configs(&inv, etcd) {
                out.push_str(&format!(
                    "=== {label} etcd={etcd} {} {:o}\n",
                    f.path, f.mode
                ));
                for line in f.contents.lines() {
                    if line.ends_with("\t; serial") {
                        out.push_str("\t\tSERIAL\t; serial\n");
                    } else {
                        out.push_str(line);
                        out.push('\n');
                    }
                }
            }
        }
    }
    out
}

#[test]
fn generated_bytes_are_unchanged() {
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
            "{}: the generated files changed at line {}:\n got: {:?}\nwant: {:?}",
            path.display(),
            first + 1,
            got.lines().nth(first),
            want.lines().nth(first)
        );
    }
}
