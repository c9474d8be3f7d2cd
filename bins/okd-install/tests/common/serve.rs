//! Helpers of the `okd-install serve` tests: a served asset directory, the
//! wait for readiness, control-socket requests.

use std::path::{Path, PathBuf};

use super::netns::Lab;
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

/// The real Ignition binary (Debian `ignition`).
pub const IGNITION: &str = "/usr/lib/dracut/modules.d/30ignition/ignition";

/// Runs Ignition's files stage into `root` from the config cached in `run`
/// by a fetch stage, with the stub programs of `stub` (setfiles) first on
/// `PATH` (see [`ignition_root`]).
pub fn ignition_files(root: &Path, run: &Path, stub: &Path) -> std::process::Output {
    let path = format!(
        "{}:{}",
        stub.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    std::process::Command::new(IGNITION)
        .args(["-platform=file", "-stage=files", "-log-to-stdout"])
        .arg(format!("-root={}", root.display()))
        .arg(format!(
            "-config-cache={}",
            run.join("ignition.json").display()
        ))
        .arg(format!("-state-file={}", run.join("state").display()))
        .env("PATH", path)
        .output()
        .unwrap()
}

/// Runs Ignition's fetch stage for `pointer` inside `ns` (bounded by `timeout`),
/// then, if it succeeded, the files stage into a fresh root. Returns (ok, log, root).
pub fn ignite(
    _lab: &Lab,
    ns: &str,
    pointer: &Path,
    scratch: &Path,
    secs: u64,
) -> (bool, String, PathBuf) {
    ignite_in(ns, pointer, scratch, secs)
}

/// [`ignite`] in any namespace `ns` (a lab's or a control plane's node).
pub fn ignite_in(ns: &str, pointer: &Path, scratch: &Path, secs: u64) -> (bool, String, PathBuf) {
    let (root, run, stub) = ignition_root(scratch);
    let cache = run.join("ignition.json");
    let out = super::kube::in_ns(ns, "timeout")
        .arg(secs.to_string())
        .arg(IGNITION)
        .args(["-platform=file", "-stage=fetch", "-log-to-stdout"])
        .arg(format!("-config-cache={}", cache.display()))
        .arg(format!("-state-file={}", run.join("state").display()))
        .arg(format!("-neednet={}", run.join("neednet").display()))
        .env("IGNITION_CONFIG_FILE", pointer)
        .output()
        .unwrap();
    let mut log =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        return (false, log, root);
    }
    let out = ignition_files(&root, &run, &stub);
    log += &String::from_utf8_lossy(&out.stdout);
    log += &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), log, root)
}
