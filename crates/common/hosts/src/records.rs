//! Names of `extraRecords` in `bastion-config.yaml`.
//!
//! Each key is a name relative to the cluster domain (`registry` →
//! `registry.<cluster domain>`) that the DNS server and the generated zone
//! files serve. Keys are checked when the file is loaded, so a bad one is
//! reported with its file and field rather than when the DNS server starts:
//! dot-separated labels of 1 to 63 ASCII letters, digits, `-` or `_`
//! (RFC 1035 §2.3.1 with the `_` of service names, RFC 2782), the first one
//! may be the wildcard `*` (RFC 4592).

use std::collections::BTreeMap;
use std::net::IpAddr;

use crate::{BASTION_CONFIG_FILE, HostsError, invalid};

fn valid(name: &str) -> bool {
    name.split('.').enumerate().all(|(i, l)| {
        (i == 0 && l == "*")
            || (!l.is_empty()
                && l.len() <= 63
                && l.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'))
    })
}

/// Checks every key of `records`.
///
/// # Errors
/// [`HostsError::Invalid`] naming `extraRecords` and the key.
pub(crate) fn check(records: &BTreeMap<String, IpAddr>) -> Result<(), HostsError> {
    match records.keys().find(|k| !valid(k)) {
        None => Ok(()),
        Some(k) => Err(invalid(
            BASTION_CONFIG_FILE,
            format!("extraRecords[{k:?}]"),
            "must be a name relative to the cluster domain: dot-separated labels of 1 to 63 letters, digits, '-' or '_' (the first may be '*')",
        )),
    }
}
