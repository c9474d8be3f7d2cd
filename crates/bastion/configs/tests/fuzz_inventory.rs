//! Fuzz target (issue #10 item 9): what the bastion generates from host
//! files — every configuration file ([`bastion_configs`]) and each node's
//! kernel arguments ([`kernel_args`], [`pxe_kernel_args`]).
//!
//! Inputs are the single-master example's `agent-config.yaml` and
//! `bastion-config.yaml`, mutated field by field (and sometimes byte by
//! byte) as in the okd-hosts target; those that resolve to an inventory are
//! handed to the generators, with and without etcd records. Properties: no
//! panic; every generated file has a relative path and content; every
//! node's kernel arguments carry its `ip=` setting and no line break.
//!
//! CI runs a few hundred cases; `OKD_FUZZ_CASES=<n>` runs more (README).

use okd_bastion::{bastion_configs, kernel_args, pxe_kernel_args};
use okd_hosts::{
    AGENT_CONFIG_FILE, BASTION_CONFIG_FILE, Inventory, parse_agent_config, parse_bastion_config,
};
use okd_test_utils::fuzz;
use okd_test_utils::single_master_example as example;
use proptest::prelude::*;

const FIELDS: &[&str] = &[
    "hostname",
    "role",
    "interfaces",
    "name",
    "macAddress",
    "ip",
    "prefix-length",
    "server",
    "next-hop-address",
    "listenAddress",
    "apiAddress",
    "ingressAddress",
    "upstreamResolvers",
    "bootstrap",
    "address",
    "gateway",
    "installationDisk",
    "extraRecords",
    "ports",
    "http",
    "osImages",
    "directory",
    "kernel",
];

#[test]
fn fuzz_bastion_files_and_kernel_args() {
    let agent = example(AGENT_CONFIG_FILE);
    let bastion = example(BASTION_CONFIG_FILE);
    let tally = fuzz::Tally::default();
    fuzz::run(
        "bastion files and kernel args",
        300,
        (
            fuzz::mutated_yaml(vec![agent], FIELDS),
            fuzz::mutated_yaml(vec![bastion], FIELDS),
            any::<bool>(),
        ),
        |(agent, bastion, etcd)| {
            let (Ok(a), Ok(b)) = (parse_agent_config(&agent), parse_bastion_config(&bastion))
            else {
                tally.hit("parse error");
                return Ok(());
            };
            let Ok(inv) = Inventory::resolve(&a, &b, "okd", "example") else {
                tally.hit("resolve error");
                return Ok(());
            };
            tally.hit("generated");
            for f in bastion_configs(&inv, etcd) {
                prop_assert!(
                    !f.path.is_empty() && !f.path.starts_with('/') && !f.path.contains(".."),
                    "{}",
                    f.path
                );
            }
            for n in &inv.nodes {
                for args in [kernel_args(&inv, n), pxe_kernel_args(&inv, n)] {
                    prop_assert!(args.iter().any(|a| a.starts_with("ip=")), "{args:?}");
                    prop_assert!(
                        args.iter().all(|a| !a.contains(char::is_whitespace)),
                        "{args:?}"
                    );
                }
            }
            Ok(())
        },
    );
    tally.print("bastion files and kernel args");
}
