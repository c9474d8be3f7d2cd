//! The embedded server and the files `okd_bastion::configs` generates for
//! users who run their own daemons hold the same records: the BIND zone
//! files as read by the real `named-checkzone`, and the answers of a real
//! dnsmasq run with the generated `dnsmasq.conf`.

mod common;

use std::collections::BTreeSet;
use std::net::IpAddr;
use std::process::Command;

use common::{Dnsmasq, Running, dig, dig_program, dnsmasq_program, named_checkzone_program};
use okd_hosts::Inventory;

/// The example, and the example with API and ingress VIPs apart from the
/// bastion and an IPv6 worker.
fn inventories() -> Vec<(&'static str, Inventory)> {
    let plain = common::single_master();
    let mut vips = plain.clone();
    vips.api = "192.168.120.200".parse::<IpAddr>().unwrap();
    vips.ingress = "192.168.120.201".parse::<IpAddr>().unwrap();
    vips.nodes[2].address = "fd00:120::104".parse().unwrap();
    vips.extra_records
        .insert("quay".into(), "10.0.0.5".parse().unwrap());
    vec![("single-master", plain), ("vips-ipv6", vips)]
}

/// `name ttl IN type data` lines with one space, the SOA serial replaced by 0.
fn canonical(name: &str, ttl: &str, rtype: &str, data: &str) -> String {
    let mut data: Vec<&str> = data.split_whitespace().collect();
    if rtype == "SOA" && data.len() == 7 {
        data[2] = "0";
    }
    format!(
        "{} {ttl} IN {rtype} {}",
        name.to_ascii_lowercase(),
        data.join(" ")
    )
}

#[test]
fn zones_match_the_generated_bind_files() {
    let Some(checkzone) = named_checkzone_program() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    for (label, inv) in inventories() {
        for etcd in [false, true] {
            let ours = okd_dns::zone_records(&inv, etcd).unwrap();
            let files = okd_bastion::configs::bastion_configs(&inv, etcd);
            let bind_zones: Vec<&okd_bastion::GeneratedFile> = files
                .iter()
                .filter(|f| f.path.starts_with("bind/db."))
                .collect();
            assert_eq!(
                bind_zones.len(),
                ours.len(),
                "{label}: zones {:?} vs {:?}",
                bind_zones.iter().map(|f| &f.path).collect::<Vec<_>>(),
                ours.iter().map(|z| &z.origin).collect::<Vec<_>>()
            );
            for z in &ours {
                let zone = z.origin.trim_end_matches('.');
                let f = bind_zones
                    .iter()
                    .find(|f| f.path == format!("bind/db.{zone}"))
                    .unwrap_or_else(|| panic!("{label}: no BIND file for {zone}"));
                let path = dir.path().join(format!("db.{zone}"));
                std::fs::write(&path, &f.contents).unwrap();
                let out = Command::new(&checkzone)
                    .args(["-q", "-D", "-o", "-", zone])
                    .arg(&path)
                    .output()
                    .unwrap();
                assert!(
                    out.status.success(),
                    "named-checkzone {zone}: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
                let bind: BTreeSet<String> = String::from_utf8_lossy(&out.stdout)
                    .lines()
                    .filter_map(|l| {
                        let f: Vec<&str> = l.split_whitespace().collect();
                        (f.len() >= 5).then(|| canonical(f[0], f[1], f[3], &f[4..].join(" ")))
                    })
                    .collect();
                let mine: BTreeSet<String> = z
                    .records
                    .iter()
                    .map(|r| {
                        canonical(
                            &r.name,
                            &r.ttl.to_string(),
                            r.data.rtype(),
                            &r.data.to_string(),
                        )
                    })
                    // `apps` itself, as dnsmasq's address=/apps.<d>/ answers it.
                    .filter(|l| !l.starts_with("apps.okd.example. "))
                    .collect();
                assert_eq!(
                    mine, bind,
                    "{label} etcd={etcd} zone {zone} differs from the BIND file"
                );
            }
        }
    }
}

#[test]
fn answers_match_dnsmasq_with_the_generated_conf() {
    let Some(dig_bin) = dig_program() else { return };
    let Some(dnsmasq) = dnsmasq_program() else {
        return;
    };
    for (label, inv) in inventories() {
        let conf: String = okd_bastion::configs::dnsmasq_conf(&inv, true)
            .lines()
            .filter(|l| {
                !l.starts_with("port=")
                    && !l.starts_with("listen-address=")
                    && !l.starts_with("server=")
            })
            .map(|l| format!("{l}\n"))
            .collect();
        let theirs = Dnsmasq::start(&dnsmasq, &conf);
        let ours = Running::start(&inv, true);
        let mut questions: Vec<Vec<String>> = [
            ["api.okd.example", "A"],
            ["api-int.okd.example", "A"],
            ["console-openshift-console.apps.okd.example", "A"],
            ["a.b.apps.okd.example", "A"],
            ["etcd-0.okd.example", "A"],
            ["_etcd-server-ssl._tcp.okd.example", "SRV"],
            ["registry.okd.example", "A"],
            ["nope.okd.example", "A"],
        ]
        .iter()
        .map(|q| q.iter().map(|s| s.to_string()).collect())
        .collect();
        questions.push(vec!["-x".into(), inv.api.to_string()]);
        for n in &inv.nodes {
            let t = if n.address.is_ipv6() { "AAAA" } else { "A" };
            questions.push(vec![n.fqdn.clone(), t.into()]);
            questions.push(vec!["-x".into(), n.address.to_string()]);
        }
        for q in &questions {
            let args: Vec<&str> = q.iter().map(String::as_str).collect();
            let a = dig(&dig_bin, ours.addr, &args);
            let b = dig(&dig_bin, theirs.addr, &args);
            assert_eq!(
                (&a.status, a.data()),
                (&b.status, b.data()),
                "{label}: {q:?}\nours:\n{}\ndnsmasq:\n{}",
                a.raw,
                b.raw
            );
            assert!(!a.status.is_empty(), "{}", a.raw);
        }
    }
}
