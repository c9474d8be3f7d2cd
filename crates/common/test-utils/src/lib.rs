//! Harness shared by the tests of the workspace (dev-dependency only).
//!
//! Tests drive real programs (Ignition, dig, dnsmasq, haproxy, curl,
//! docker-registry, ...). [`tool`] finds one, and decides what a missing one
//! means: in CI (`OKD_REQUIRE_TOOLS=1`) the test fails naming the Debian
//! package; elsewhere it says loudly that it skips.

pub mod assisted;
pub mod fuzz;
pub mod moto;
pub mod pkcs10;
pub mod postgres;

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

/// Finds program `name` of the Python tools the AWS tests drive (PyPI's
/// `cfn-lint`, `python3` with moto 5.2.1), installed by `.ci/run` in a
/// virtual environment: `$OKD_PY_BIN/<name>`, else
/// `/var/tmp/okd-py/bin/<name>`, else `PATH`. When it is missing: as
/// [`tool`].
pub fn py_tool(name: &str) -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Ok(d) = std::env::var("OKD_PY_BIN") {
        dirs.push(PathBuf::from(d));
    }
    dirs.push(PathBuf::from("/var/tmp/okd-py/bin"));
    let candidates: Vec<String> = dirs
        .iter()
        .map(|d| d.join(name).to_string_lossy().into_owned())
        .collect();
    let refs: Vec<&str> = candidates.iter().map(String::as_str).collect();
    tool(
        name,
        &refs,
        Some("python3-venv, then .ci/run's virtual environment"),
    )
}

/// Finds program `name` of the control-plane kit (`tests/kube`: `etcd`,
/// `kube-apiserver`, `kube-controller-manager`, `kube-scheduler`,
/// `kubelet`): in `$OKD_KUBE_BIN` (set by `.ci/run`), else where
/// `tests/kube/build.sh --path` says it was built. When it is missing:
/// panics if `OKD_REQUIRE_TOOLS=1`, else prints a `SKIPPING` line and
/// returns `None`.
pub fn kube_tool(name: &str) -> Option<PathBuf> {
    let dir = match std::env::var_os("OKD_KUBE_BIN") {
        Some(d) => Some(PathBuf::from(d)),
        None => {
            // The checkout the test runs in (cargo runs tests in their
            // package's directory), else the one this crate was built from.
            let from_cwd = std::env::current_dir().ok().and_then(|d| {
                d.ancestors()
                    .map(|a| a.join("tests/kube/build.sh"))
                    .find(|p| p.is_file())
            });
            let script = from_cwd.unwrap_or_else(|| {
                Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../tests/kube/build.sh")
            });
            Command::new("bash")
                .arg(&script)
                .arg("--path")
                .output()
                .ok()
                .filter(|o| o.status.success())
                .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
        }
    };
    if let Some(p) = dir.map(|d| d.join(name)).filter(|p| p.is_file()) {
        return Some(p);
    }
    let why =
        format!("{name} of the control-plane kit is not built (run bash tests/kube/build.sh)");
    if std::env::var("OKD_REQUIRE_TOOLS").as_deref() == Ok("1") {
        panic!("required program: {why}");
    }
    eprintln!("SKIPPING part of this test: {why}");
    None
}

/// A child process killed (by PID) and reaped when dropped, also when the
/// test fails.
pub struct ChildGuard(pub std::process::Child);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The text of `name` in the repository's `examples/baremetal-single-master`
/// (the single-master example's install-config, agent-config or
/// bastion-config); panics naming the path when it cannot be read.
pub fn single_master_example(name: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../examples/baremetal-single-master")
        .join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// A TCP port free on 127.0.0.1 right now.
pub fn free_tcp_port() -> u16 {
    std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0))
        .expect("bind 127.0.0.1:0")
        .local_addr()
        .expect("local address")
        .port()
}

/// Starts `bin serve config` (the distribution registry, Debian
/// `docker-registry`) with its output in `log`, and waits (at most 15 s)
/// until 127.0.0.1:`port` accepts connections. Panics with the log when the
/// registry exits or does not listen in time.
pub fn start_docker_registry(bin: &Path, config: &Path, log: &Path, port: u16) -> ChildGuard {
    use std::time::{Duration, Instant};
    let f = std::fs::File::create(log).expect("create the registry log");
    let child = Command::new(bin)
        .arg("serve")
        .arg(config)
        .stdin(std::process::Stdio::null())
        .stdout(f.try_clone().expect("log file"))
        .stderr(f)
        .spawn()
        .expect("start docker-registry");
    let mut guard = ChildGuard(child);
    let deadline = Instant::now() + Duration::from_secs(15);
    while std::net::TcpStream::connect((std::net::Ipv4Addr::LOCALHOST, port)).is_err() {
        let text = || std::fs::read_to_string(log).unwrap_or_default();
        if let Some(st) = guard.0.try_wait().expect("wait for docker-registry") {
            panic!("docker-registry exited ({st}): {}", text());
        }
        assert!(
            Instant::now() < deadline,
            "docker-registry did not listen on {port} in 15 s: {}",
            text()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    guard
}

/// A size field of `/proc/<pid>/status` in KiB (`VmRSS`, `VmHWM`, …; see
/// proc_pid_status(5)); 0 when the process or the field is gone.
pub fn proc_status_kib(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}
