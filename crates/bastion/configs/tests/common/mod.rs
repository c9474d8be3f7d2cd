//! Shared test fixtures.
#![allow(dead_code)]

use std::net::IpAddr;
use std::path::PathBuf;

use okd_hosts::Inventory;

/// The repository's single-master example directory.
pub fn example_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../examples/baremetal-single-master")
}

/// The single-master guide's inventory (cluster `okd`, base domain `example`).
pub fn single_master() -> Inventory {
    Inventory::load(&example_dir(), "okd", "example").expect("example inventory loads")
}

/// The same hosts with API and ingress VIPs distinct from the bastion.
pub fn with_vips() -> Inventory {
    let mut inv = single_master();
    inv.api = "192.168.120.200".parse::<IpAddr>().unwrap();
    inv.ingress = "192.168.120.201".parse::<IpAddr>().unwrap();
    inv
}

/// Path of a program if it is installed (PATH plus /usr/sbin, /sbin).
pub fn program(name: &str) -> Option<PathBuf> {
    let path = std::env::var("PATH").unwrap_or_default();
    path.split(':')
        .chain(["/usr/sbin", "/sbin", "/usr/bin"])
        .map(|d| PathBuf::from(d).join(name))
        .find(|p| p.is_file())
}
