//! Helpers of the `okd-install serve` tests: a served asset directory, the
//! wait for readiness, control-socket requests.

use std::path::{Path, PathBuf};

use super::netns::Lab;
use std::time::{Duration, Instant};

use super::*;

/// An asset directory with the single-master example's install-config,
/// agent-config and bastion-config (upstream resolvers removed: no traffic
/// leaves the namespaces), after `create ignition-configs`, its
/// bootstrap.ign carrying a node program over 1 MiB as a release build's
/// does (on a release build of the tests, the program itself).
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
    if cfg!(debug_assertions) {
        create_carrying_a_program(d.path(), &[]);
    } else {
        okd_ok(d.path(), &["create", "ignition-configs"]);
    }
    d
}

/// The bastion's address in the labs of the serve tests.
pub const BASTION: &str = "192.168.120.101";

/// The bootstrap and the master of the example's inventory.
pub const BOOTSTRAP_AND_MASTER: [(&str, &str); 2] = [
    ("bootstrap", "192.168.120.102"),
    ("master", "192.168.120.103"),
];

/// Starts `okd-install serve` (extra `args`) in the bastion namespace of a lab
/// with `nodes` (name, address); returns the lab, the serve PID and the log
/// path at once (serve may still be starting).
pub fn lab_spawning_serve(
    d: &Path,
    prefix: &str,
    nodes: &[(&str, &str)],
    args: &[&str],
) -> (Lab, u32, std::path::PathBuf) {
    let prefix = format!("{prefix}{}", std::process::id() % 100000);
    let mut lab = Lab::new(&prefix, BASTION, nodes, "okd.example");
    let (pid, serve_log) = spawn_serve(&mut lab, d, args, "serve.log");
    (lab, pid, serve_log)
}

/// Starts `okd-install serve --dir d` (extra `args`) in the bastion namespace
/// of `lab`, logging to `<d>/<log>`; returns its PID and the log path at once
/// (serve may still be starting).
pub fn spawn_serve(lab: &mut Lab, d: &Path, args: &[&str], log: &str) -> (u32, PathBuf) {
    let serve_log = d.join(log);
    let bastion = lab.bastion.ns.clone();
    let dir = d.to_string_lossy().into_owned();
    let mut all = vec!["serve", "--dir", &dir];
    all.extend_from_slice(args);
    let pid = lab.spawn(
        &bastion,
        env!("CARGO_BIN_EXE_okd-install"),
        &all,
        &serve_log,
    );
    (pid, serve_log)
}

/// Kills the serve `pid` of `lab` (0: none) and starts it again with `args`,
/// logging to `<d>/<log>`; returns the new PID and log once it serves.
pub fn restart_serve(
    lab: &mut Lab,
    d: &Path,
    pid: u32,
    args: &[&str],
    log: &str,
) -> (u32, PathBuf) {
    lab.kill(pid);
    let (pid, serve_log) = spawn_serve(lab, d, args, log);
    wait_ready(&serve_log);
    (pid, serve_log)
}

/// [`lab_spawning_serve`] with the bootstrap (192.168.120.102) and the
/// master (192.168.120.103), returning once serve logged that it serves.
pub fn lab_with_serve(d: &Path, prefix: &str, args: &[&str]) -> (Lab, u32, std::path::PathBuf) {
    let (lab, pid, log) = lab_spawning_serve(d, prefix, &BOOTSTRAP_AND_MASTER, args);
    wait_ready(&log);
    (lab, pid, log)
}

/// `curl` inside `ns`: (HTTP status, body).
pub fn curl_in(lab: &Lab, ns: &str, url: &str) -> (u16, String) {
    let out = lab
        .cmd(ns, "curl")
        .args(["-s", "--max-time", "10", "-w", "\n%{http_code}", url])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", "0"));
    (code.trim().parse().unwrap_or(0), body.to_string())
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
    let mut args = vec!["serve"];
    args.extend(what.split_whitespace());
    let out = okd(dir, &args);
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
    ignition_files_cmd(std::process::Command::new(IGNITION), root, run, stub)
}

/// [`ignition_files`] inside network namespace `ns`, bounded by `secs`:
/// a config whose files come from URLs (the master config's okd-install)
/// fetches them there, through the lab's DNS and balancer.
pub fn ignition_files_in(
    ns: &str,
    secs: u64,
    root: &Path,
    run: &Path,
    stub: &Path,
) -> std::process::Output {
    let mut c = super::kube::in_ns(ns, "timeout");
    c.arg(secs.to_string()).arg(IGNITION);
    ignition_files_cmd(c, root, run, stub)
}

fn ignition_files_cmd(
    mut c: std::process::Command,
    root: &Path,
    run: &Path,
    stub: &Path,
) -> std::process::Output {
    let path = format!(
        "{}:{}",
        stub.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    c.args(["-platform=file", "-stage=files", "-log-to-stdout"])
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
    let out = ignition_files_in(ns, secs, &root, &run, &stub);
    log += &String::from_utf8_lossy(&out.stdout);
    log += &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), log, root)
}
