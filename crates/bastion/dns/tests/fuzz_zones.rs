//! Fuzz target (issue #10 item 9): the DNS zones built from host files
//! ([`zone_records`]), the input the server's tables are made of.
//!
//! Inputs are the single-master example's `agent-config.yaml` and
//! `bastion-config.yaml` mutated field by field (host names, addresses,
//! extra records, prefix lengths...), and sometimes byte by byte; those that
//! resolve to an inventory are turned into zones, with and without etcd
//! records. Properties: no panic; zones are refused only with an
//! invalid-name error; every record's owner is a lower-case FQDN inside its
//! zone, SOA first; a server starts on the zones and answers the SOA of
//! each over UDP (every 20th case, to keep CI short).
//!
//! CI runs a few hundred cases; `OKD_FUZZ_CASES=<n>` runs more (README).

use std::net::UdpSocket;
use std::time::Duration;

use okd_dns::{DnsError, DnsServer, RecordData, zone_records};
use okd_hosts::{
    AGENT_CONFIG_FILE, BASTION_CONFIG_FILE, Inventory, parse_agent_config, parse_bastion_config,
};
use okd_test_utils::fuzz;
use okd_test_utils::single_master_example as example;
use proptest::prelude::*;

const FIELDS: &[&str] = &[
    "hostname",
    "role",
    "ip",
    "prefix-length",
    "listenAddress",
    "apiAddress",
    "ingressAddress",
    "bootstrap",
    "address",
    "extraRecords",
    "registry",
    "*",
    "a.b",
];

/// A wire-form SOA query for `origin` with ID 7.
fn soa_query(origin: &str) -> Vec<u8> {
    let mut b = vec![0, 7, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0];
    for l in origin
        .trim_end_matches('.')
        .split('.')
        .filter(|l| !l.is_empty())
    {
        b.push(l.len() as u8);
        b.extend_from_slice(l.as_bytes());
    }
    b.extend_from_slice(&[0, 0, 6, 0, 1]);
    b
}

#[test]
fn fuzz_zones_from_host_files() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let tally = fuzz::Tally::default();
    let serve_every = std::sync::atomic::AtomicUsize::new(0);
    fuzz::run(
        "dns zones from host files",
        300,
        (
            fuzz::mutated_yaml(vec![example(AGENT_CONFIG_FILE)], FIELDS),
            fuzz::mutated_yaml(vec![example(BASTION_CONFIG_FILE)], FIELDS),
            any::<bool>(),
        ),
        |(agent, bastion, etcd)| {
            let (Ok(a), Ok(b)) = (parse_agent_config(&agent), parse_bastion_config(&bastion))
            else {
                tally.hit("parse error");
                return Ok(());
            };
            let Ok(mut inv) = Inventory::resolve(&a, &b, "okd", "example") else {
                tally.hit("resolve error");
                return Ok(());
            };
            let zones = match zone_records(&inv, etcd) {
                Ok(z) => z,
                Err(e) => {
                    prop_assert!(matches!(e, DnsError::InvalidName { .. }), "{e}");
                    tally.hit("invalid name");
                    return Ok(());
                }
            };
            tally.hit("zones");
            for z in &zones {
                prop_assert!(z.origin.ends_with('.'), "{}", z.origin);
                prop_assert!(
                    matches!(
                        z.records.first().map(|r| &r.data),
                        Some(RecordData::Soa { .. })
                    ),
                    "{} does not start with its SOA",
                    z.origin
                );
                for r in &z.records {
                    prop_assert!(r.name.ends_with('.'), "{}", r.name);
                    prop_assert_eq!(&r.name.to_lowercase(), &r.name);
                    prop_assert!(
                        r.name == z.origin || r.name.ends_with(&format!(".{}", z.origin)),
                        "{} outside {}",
                        r.name,
                        z.origin
                    );
                }
            }
            if !serve_every
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst)
                .is_multiple_of(20)
            {
                return Ok(());
            }
            inv.upstreams.clear();
            let server = match rt.block_on(DnsServer::start(
                &inv,
                "127.0.0.1:0".parse().expect("addr"),
                etcd,
                None,
            )) {
                Ok(s) => s,
                Err(e) => {
                    return Err(TestCaseError::fail(format!(
                        "zones built but not served: {e}"
                    )));
                }
            };
            let client = UdpSocket::bind("127.0.0.1:0").expect("client");
            client
                .set_read_timeout(Some(Duration::from_secs(3)))
                .expect("timeout");
            let mut buf = [0u8; 4096];
            for z in &zones {
                client
                    .send_to(&soa_query(&z.origin), server.local_addr())
                    .expect("send");
                let (n, _) = client.recv_from(&mut buf).expect("SOA answered");
                prop_assert!(
                    n >= 12 && buf[2] & 0x04 != 0,
                    "no AA answer for {}",
                    z.origin
                );
                prop_assert_eq!(
                    u16::from_be_bytes([buf[6], buf[7]]),
                    1,
                    "SOA of {}",
                    &z.origin
                );
            }
            rt.block_on(server.shutdown());
            tally.hit("served");
            Ok(())
        },
    );
    tally.print("dns zones from host files");
}
