//! Helpers of the `okd-install serve` tests: a served asset directory, the
//! wait for readiness, control-socket requests.

use std::path::Path;
use std::time::{Duration, Instant};

use super::*;

/// An asset directory with the single-master example's install-config,
/// agent-config and bastion-config (upstream resolvers removed: no traffic
/// leaves the namespaces), after `create ignition-configs`.
pub fn served_dir() -> tempfile::TempDir {
    let d = example_dir("baremetal-single-master");
    let ex = repo().join("examples/baremetal-single-master");
    std::fs::copy(
        ex.join("agent-config.yaml"),
        d.path().join("agent-config.yaml"),
    )
    .unwrap();
    let bastion = std::fs::read_to_string(ex.join("bastion-config.yaml"))
        .unwrap()
        .replace("  - 8.8.8.8\n", "");
    let bastion = bastion.replace("upstreamResolvers:\n", "upstreamResolvers: []\n");
    std::fs::write(d.path().join("bastion-config.yaml"), bastion).unwrap();
    okd_ok(d.path(), &["create", "ignition-configs"]);
    d
}

/// Waits (bounded) until the serve log says every service listens.
pub fn wait_ready(log: &Path) {
    let start = Instant::now();
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if text.contains("msg=Serving") {
            return;
        }
        assert!(
            !text.contains("level=error") && !text.contains("level=fatal"),
            "serve failed:\n{text}"
        );
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "serve did not become ready:\n{text}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// `okd-install serve <what> --dir dir`: asserts success, returns stdout.
pub fn control(dir: &Path, what: &str) -> String {
    let out = okd(dir, &["serve", what]);
    assert!(
        out.status.success(),
        "serve {what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}
