//! Shared test fixtures.
#![allow(dead_code)]

use std::path::PathBuf;

use okd_hosts::Inventory;

/// The single-master guide's inventory (cluster `okd`, base domain `example`).
pub fn single_master() -> Inventory {
    let dir =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/baremetal-single-master");
    Inventory::load(&dir, "okd", "example").expect("example inventory loads")
}
