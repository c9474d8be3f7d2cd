//! Shared by the tests: a session on libvirt's test driver, or a loud skip.

use std::io::Write as _;

use okd_libvirt::{LibvirtError, Virsh};

/// Connects to `uri` (a `test:///…` URI: the driver lives inside the virsh
/// process, no libvirtd needed). When virsh is missing: None with a message
/// if `OKD_SKIP_MISSING_TOOLS` is set, else a panic saying what to install.
pub fn connect(uri: &str) -> Option<Virsh> {
    match Virsh::connect(uri) {
        Ok(virsh) => Some(virsh),
        Err(e @ LibvirtError::Missing { .. }) => {
            if std::env::var_os("OKD_SKIP_MISSING_TOOLS").is_some() {
                // Straight to stderr: the test harness swallows eprintln!
                // of a passing test, and a skip must be seen.
                let _ = writeln!(std::io::stderr(), "SKIPPED (OKD_SKIP_MISSING_TOOLS): {e}");
                None
            } else {
                panic!("{e}");
            }
        }
        Err(e) => panic!("connecting to {uri}: {e}"),
    }
}
