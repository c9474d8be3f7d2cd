//! Harness shared by the tests of the workspace (dev-dependency only).
//!
//! Tests drive real programs (Ignition, dig, dnsmasq, haproxy, curl,
//! docker-registry, ...). [`tool`] finds one, and decides what a missing one
//! means: in CI (`OKD_REQUIRE_TOOLS=1`) the test fails naming the Debian
//! package; elsewhere it says loudly that it skips.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Finds program `name`: the first of `paths` that is a file, else `command
/// -v name` on `PATH`. When it is missing: panics if `OKD_REQUIRE_TOOLS=1`
/// (naming `package`, the Debian package to install, when given), else
/// prints a `SKIPPING` line and returns `None`.
pub fn tool(name: &str, paths: &[&str], package: Option<&str>) -> Option<PathBuf> {
    if let Some(p) = paths.iter().find(|p| Path::new(p).is_file()) {
        return Some(PathBuf::from(p));
    }
    if let Ok(out) = Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {name}"))
        .output()
    {
        let s = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if out.status.success() && !s.is_empty() {
            return Some(PathBuf::from(s));
        }
    }
    let install = match package {
        Some(p) => format!("apt-get install -y {p}"),
        None => "run .ci/run, or apt-get install it".to_string(),
    };
    if std::env::var("OKD_REQUIRE_TOOLS").as_deref() == Ok("1") {
        panic!("required program {name} is not installed ({install})");
    }
    eprintln!("SKIPPING part of this test: {name} is not installed ({install})");
    None
}
