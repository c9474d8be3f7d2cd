//! Fuzz target (issue #10 item 9): `agent-config.yaml` and
//! `bastion-config.yaml` parsing and resolution.
//!
//! Inputs are the single-master example's two files (and an IPv6 variant of
//! the agent file), mutated field by field and sometimes byte by byte, then
//! parsed ([`parse_agent_config`], [`parse_bastion_config`]) and joined
//! ([`Inventory::resolve`]). Properties: no panic; errors name their file
//! (and a field for rule errors); a resolved inventory has unique host
//! names, addresses and MACs, every MAC in normalized form, lookups by MAC
//! and address finding each node, and every node's netmask computable.
//!
//! CI runs a few hundred cases; `OKD_FUZZ_CASES=<n>` runs more (README).

use okd_hosts::{
    AGENT_CONFIG_FILE, BASTION_CONFIG_FILE, HostsError, Inventory, normalize_mac,
    parse_agent_config, parse_bastion_config,
};
use okd_test_utils::fuzz;
use okd_test_utils::single_master_example as example;
use proptest::prelude::*;

const FIELDS: &[&str] = &[
    "apiVersion",
    "kind",
    "metadata",
    "name",
    "rendezvousIP",
    "hosts",
    "hostname",
    "role",
    "rootDeviceHints",
    "deviceName",
    "interfaces",
    "macAddress",
    "networkConfig",
    "mac-address",
    "ipv4",
    "ipv6",
    "address",
    "ip",
    "prefix-length",
    "dns-resolver",
    "config",
    "server",
    "routes",
    "destination",
    "next-hop-address",
    "listenAddress",
    "apiAddress",
    "ingressAddress",
    "upstreamResolvers",
    "bootstrap",
    "interface",
    "gateway",
    "installationDisk",
    "extraRecords",
    "ports",
    "api",
    "machineConfig",
    "http",
    "dns",
    "status",
    "osImages",
    "directory",
    "kernel",
    "initramfs",
    "rootfs",
    "metal",
];

/// An IPv6-only host file (addresses and routes in `ipv6`).
const AGENT_V6: &str = "apiVersion: v1beta1
kind: AgentConfig
metadata:
  name: okd
hosts:
  - hostname: master
    role: master
    interfaces:
      - name: eth0
        macAddress: 52:54:00:12:01:03
    networkConfig:
      interfaces:
        - name: eth0
          type: ethernet
          ipv6:
            enabled: true
            address:
              - ip: fd00:120::103
                prefix-length: 64
      dns-resolver:
        config:
          server:
            - fd00:120::101
      routes:
        config:
          - destination: ::/0
            next-hop-address: fd00:120::101
";

/// Checks what the module documentation promises of one pair of files.
fn check(agent: &[u8], bastion: &[u8], tally: &fuzz::Tally) -> Result<(), TestCaseError> {
    let a = parse_agent_config(agent);
    let b = parse_bastion_config(bastion);
    for (r, file) in [
        (a.as_ref().err(), AGENT_CONFIG_FILE),
        (b.as_ref().err(), BASTION_CONFIG_FILE),
    ] {
        if let Some(e) = r {
            prop_assert!(e.to_string().contains(file), "{e}");
        }
    }
    let (Ok(a), Ok(b)) = (a, b) else {
        tally.hit("parse error");
        return Ok(());
    };
    let inv = match Inventory::resolve(&a, &b, "okd", "example") {
        Ok(inv) => inv,
        Err(e) => {
            tally.hit("resolve error");
            let text = e.to_string();
            match &e {
                HostsError::Invalid { file, field, .. } => {
                    prop_assert!(!field.is_empty(), "{text}");
                    prop_assert!(text.contains(file.as_str()), "{text}");
                }
                other => prop_assert!(false, "resolve gave a non-rule error: {other}"),
            }
            return Ok(());
        }
    };
    tally.hit("resolved");
    for (i, n) in inv.nodes.iter().enumerate() {
        for m in &inv.nodes[i + 1..] {
            prop_assert_ne!(&n.hostname, &m.hostname);
            prop_assert_ne!(n.address, m.address);
            if n.mac.is_some() {
                prop_assert_ne!(&n.mac, &m.mac);
            }
        }
        if let Some(mac) = &n.mac {
            prop_assert_eq!(normalize_mac(mac), Some(mac.clone()));
            prop_assert_eq!(
                inv.by_mac(&mac.to_uppercase()).map(|x| &x.hostname),
                Some(&n.hostname)
            );
        }
        prop_assert_eq!(
            inv.by_address(n.address).map(|x| &x.hostname),
            Some(&n.hostname)
        );
        let mask = n.netmask();
        prop_assert!(!mask.is_empty());
    }
    Ok(())
}

#[test]
fn fuzz_agent_and_bastion_config() {
    let agents = vec![example(AGENT_CONFIG_FILE), AGENT_V6.to_string()];
    let bastions = vec![example(BASTION_CONFIG_FILE)];
    let agent_seed = agents[0].clone().into_bytes();
    let bastion_seed = bastions[0].clone().into_bytes();
    let tally = fuzz::Tally::default();
    fuzz::run(
        "hosts agent+bastion config",
        400,
        (
            fuzz::mutated_yaml(agents, FIELDS),
            fuzz::mutated_yaml(bastions, FIELDS),
            0..4u8,
        ),
        // Mostly one file mutated at a time, so the other one parses.
        |(agent, bastion, which)| match which {
            0 | 1 => check(&agent, &bastion_seed, &tally),
            2 => check(&agent_seed, &bastion, &tally),
            _ => check(&agent, &bastion, &tally),
        },
    );
    tally.print("hosts agent+bastion config");
}

#[test]
fn fuzz_normalize_mac() {
    let text = prop_oneof![
        "[0-9a-fA-FgG:.-]{0,24}",
        ".{0,20}",
        (
            prop::sample::select(vec![
                "52:54:00:12:01:03",
                "52-54-00-12-01-03",
                "5254.0012.0103"
            ]),
            prop::collection::vec(fuzz::byte_edit(), 1..3)
        )
            .prop_map(|(s, edits)| {
                let mut b = s.as_bytes().to_vec();
                fuzz::apply_byte_edits(&mut b, &edits);
                String::from_utf8_lossy(&b).into_owned()
            }),
    ];
    fuzz::run("hosts normalize_mac", 2000, text, |s| {
        if let Some(m) = normalize_mac(&s) {
            prop_assert_eq!(m.len(), 17, "{:?} -> {:?}", s, m);
            prop_assert_eq!(normalize_mac(&m), Some(m.clone()));
        }
        Ok(())
    });
}

/// Regression input of the hosts target: an IPv4 nmstate address with
/// `prefix-length: 33` resolved, and computing its netmask panicked with an
/// arithmetic overflow. It is now refused at load (issue #10 item 7).
#[test]
fn ipv4_prefix_length_33_is_rejected_at_load() {
    let agent = example(AGENT_CONFIG_FILE).replacen("prefix-length: 24", "prefix-length: 33", 1);
    let bastion = example(BASTION_CONFIG_FILE);
    let a = parse_agent_config(agent.as_bytes());
    let b = parse_bastion_config(bastion.as_bytes()).expect("example bastion-config");
    let result = a.and_then(|a| Inventory::resolve(&a, &b, "okd", "example"));
    match result {
        Err(e) => {
            let text = e.to_string();
            assert!(
                text.contains(AGENT_CONFIG_FILE) && text.contains("prefix-length"),
                "{text}"
            );
        }
        Ok(inv) => panic!(
            "prefix-length 33 accepted; netmask would be {}",
            inv.nodes[1].netmask()
        ),
    }
}

/// Regression inputs of the okd-bastion kernel-argument target: a line
/// break or space in the bootstrap NIC, a host name, an install disk or an
/// image name was copied into the `ip=` and `coreos.inst.*` kernel
/// arguments (splitting the PXE command line); and of the okd-dns zones
/// target: a non-ASCII host name (U+0224) became a zone owner that is not
/// lower case. Each is now refused at load naming its file and field.
#[test]
fn kernel_argument_values_with_whitespace_are_rejected_at_load() {
    let agent = example(AGENT_CONFIG_FILE);
    let bastion = example(BASTION_CONFIG_FILE);
    let cases = [
        (
            agent.clone(),
            bastion.replace("interface: ens787f0", "interface: \"\\nns787f0\""),
            BASTION_CONFIG_FILE,
            "bootstrap.interface",
        ),
        (
            agent.replace("hostname: worker1", "hostname: \"worker1 rd.break\""),
            bastion.clone(),
            AGENT_CONFIG_FILE,
            "hosts[1].hostname",
        ),
        (
            agent.replace("hostname: worker1", "hostname: \"\u{224}\""),
            bastion.clone(),
            AGENT_CONFIG_FILE,
            "hosts[1].hostname",
        ),
        (
            agent
                .replace("- name: ens786f1", "- name: \"ens786f1:x\"")
                .replace("        - name: ens786f1", "        - name: \"ens786f1:x\""),
            bastion.clone(),
            AGENT_CONFIG_FILE,
            "hosts[1].interfaces",
        ),
        (
            agent.replacen(
                "deviceName: /dev/sda",
                "deviceName: \"/dev/sda rd.break\"",
                1,
            ),
            bastion.clone(),
            AGENT_CONFIG_FILE,
            "hosts[0].rootDeviceHints.deviceName",
        ),
        (
            agent.clone(),
            format!("{bastion}osImages:\n  metal: \"coreos.raw.xz\\tx\"\n"),
            BASTION_CONFIG_FILE,
            "osImages.metal",
        ),
    ];
    for (a, b, file, field) in cases {
        let a = parse_agent_config(a.as_bytes()).expect("agent-config parses");
        let b = parse_bastion_config(b.as_bytes()).expect("bastion-config parses");
        let e = Inventory::resolve(&a, &b, "okd", "example").expect_err(field);
        let text = e.to_string();
        assert!(text.contains(file) && text.contains(field), "{text}");
    }
}

/// Regression input of the okd-dns zones target: an `extraRecords` key with
/// a space and braces loaded, built zones, and only the DNS server's start
/// failed ("invalid DNS name"), without naming file or field; it is now
/// refused at load.
#[test]
fn extra_record_names_are_checked_at_load() {
    let agent = parse_agent_config(example(AGENT_CONFIG_FILE).as_bytes()).expect("agent-config");
    let bastion = example(BASTION_CONFIG_FILE);
    for (key, ok) in [
        ("\"r .{F'{egistry\"", false),
        ("\"a..b\"", false),
        ("\"x*\"", false),
        ("registry2", true),
        ("\"*.wild\"", true),
        ("_svc._tcp", true),
    ] {
        let text = bastion.replace("  registry: ", &format!("  {key}: "));
        let b = parse_bastion_config(text.as_bytes()).expect("bastion-config parses");
        let r = Inventory::resolve(&agent, &b, "okd", "example");
        match (r, ok) {
            (Ok(_), true) => {}
            (Err(e), false) => {
                let t = e.to_string();
                assert!(
                    t.contains(BASTION_CONFIG_FILE) && t.contains("extraRecords"),
                    "{t}"
                );
            }
            (r, _) => panic!("{key}: {r:?}"),
        }
    }
}
