//! Running the mirror registry written by [`crate::registry::init`]:
//! `docker-registry serve <dir>/config.yml` (Debian package
//! `docker-registry`, the CNCF distribution registry) started in the
//! background with its PID in `registry.pid` and its output in
//! `registry.log`, or stopped again by that PID.

use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::MirrorError;
use crate::registry::files;

/// File holding the PID of the running registry.
pub const PID_FILE: &str = "registry.pid";
/// File receiving the registry's output.
pub const LOG_FILE: &str = "registry.log";
/// How long [`start`] waits for the registry's port (and [`stop`] for its exit).
pub const WAIT: Duration = Duration::from_secs(30);

/// A started registry.
#[derive(Debug)]
pub struct Started {
    /// Its PID.
    pub pid: u32,
    /// `host:port` it listens on (`http.addr` of config.yml).
    pub addr: String,
    /// Its log file.
    pub log: PathBuf,
    /// False when it was already running (nothing was started).
    pub new: bool,
}

fn opt(msg: String) -> MirrorError {
    MirrorError::Options(msg)
}

/// `http.addr` of a distribution `config.yml`. Errors name the file.
pub fn listen_addr(config: &Path) -> Result<String, MirrorError> {
    let text =
        std::fs::read_to_string(config).map_err(|e| MirrorError::io("reading", config, e))?;
    let v: serde_yaml_ng::Value = serde_yaml_ng::from_str(&text)
        .map_err(|e| opt(format!("{}: not YAML: {e}", config.display())))?;
    v.get("http")
        .and_then(|h| h.get("addr"))
        .and_then(|a| a.as_str())
        .map(str::to_string)
        .ok_or_else(|| opt(format!("{}: http.addr is missing", config.display())))
}

/// What the PID in `registry.pid` is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PidState {
    /// No PID file, or its process has exited.
    NotRunning,
    /// The registry started from this directory: `program serve <dir>/config.yml`.
    Registry(u32),
    /// Another process has that PID now.
    Other {
        /// The PID.
        pid: u32,
        /// Its executable (`/proc/PID/exe`).
        exe: String,
        /// Its command line, arguments joined by spaces.
        cmdline: String,
    },
}

/// `program` as a path: itself when it has a `/`, else the first match on `PATH`.
fn resolve_program(program: &Path) -> Option<PathBuf> {
    if program.components().count() > 1 || program.is_absolute() {
        return std::fs::canonicalize(program).ok();
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
        .and_then(|p| std::fs::canonicalize(p).ok())
}

/// Checks the PID in `<dir>/registry.pid` (Linux `/proc`): the registry is
/// ours when `/proc/PID/exe` is `program` (resolved on `PATH`) and one of
/// its arguments is `<dir>/config.yml`. A zombie counts as exited.
pub fn pid_state(dir: &Path, program: &Path) -> PidState {
    let Some(pid) = std::fs::read_to_string(dir.join(PID_FILE))
        .ok()
        .and_then(|t| t.trim().parse::<u32>().ok())
        .filter(|p| *p > 0)
    else {
        return PidState::NotRunning;
    };
    let proc = PathBuf::from(format!("/proc/{pid}"));
    let (Ok(raw), Ok(stat)) = (
        std::fs::read(proc.join("cmdline")),
        std::fs::read_to_string(proc.join("stat")),
    ) else {
        return PidState::NotRunning;
    };
    let state = stat
        .rsplit_once(") ")
        .map(|x| x.1.chars().next().unwrap_or('?'));
    if state == Some('Z') {
        return PidState::NotRunning;
    }
    let exe = std::fs::read_link(proc.join("exe")).ok();
    let args: Vec<String> = raw
        .split(|b| *b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    let config = std::fs::canonicalize(dir.join(files::CONFIG)).ok();
    let cwd = std::fs::read_link(proc.join("cwd")).unwrap_or_default();
    let names_config = config.is_some()
        && args
            .iter()
            .skip(1)
            .any(|a| std::fs::canonicalize(cwd.join(a)).ok() == config);
    let is_program =
        exe.is_some() && exe.as_deref().map(Path::to_path_buf) == resolve_program(program);
    if is_program && names_config {
        return PidState::Registry(pid);
    }
    PidState::Other {
        pid,
        exe: exe.map_or_else(
            || "(unknown executable)".into(),
            |e| e.display().to_string(),
        ),
        cmdline: crate::escape_controls(&args.join(" ")),
    }
}

/// The PID in `registry.pid` if that process is alive and is the registry
/// of `dir` ([`pid_state`]).
pub fn running(dir: &Path, program: &Path) -> Option<u32> {
    match pid_state(dir, program) {
        PidState::Registry(pid) => Some(pid),
        _ => None,
    }
}

/// Where to probe a listen address `http.addr` (`host:port`, `:port`,
/// `[v6]:port`): the address itself, or loopback for a wildcard (empty
/// host, `0.0.0.0`, `[::]`). `None` when the port cannot be read.
pub fn probe_addrs(addr: &str) -> Option<Vec<SocketAddr>> {
    let (host, port) = addr.rsplit_once(':')?;
    let port: u16 = port.parse().ok()?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let v4 = SocketAddr::from((std::net::Ipv4Addr::LOCALHOST, port));
    let v6 = SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, port));
    match host {
        "" => Some(vec![v4, v6]),
        "0.0.0.0" => Some(vec![v4]),
        "::" => Some(vec![v6, v4]),
        _ => Some((host, port).to_socket_addrs().ok()?.collect()),
    }
}

fn connectable(addrs: &[SocketAddr]) -> bool {
    addrs
        .iter()
        .any(|a| TcpStream::connect_timeout(a, Duration::from_millis(200)).is_ok())
}

/// Inodes of the TCP sockets listening on `port` (`/proc/net/tcp`,
/// `/proc/net/tcp6`: `local_address` `HEX:PORT`, `st` `0A` = LISTEN).
fn listening_inodes(port: u16) -> Vec<u64> {
    let mut out = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let text = std::fs::read_to_string(table).unwrap_or_default();
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() < 10 || f[3] != "0A" {
                continue;
            }
            let local_port = f[1]
                .rsplit_once(':')
                .and_then(|(_, p)| u16::from_str_radix(p, 16).ok());
            if local_port == Some(port)
                && let Ok(inode) = f[9].parse::<u64>()
            {
                out.push(inode);
            }
        }
    }
    out
}

/// Whether process `pid` holds a socket listening on `port`: one of its
/// file descriptors (`/proc/PID/fd`, `socket:[INODE]`) is a listening
/// socket of [`listening_inodes`]. This tells our registry from another
/// process that holds the port.
pub fn listens_on(pid: u32, port: u16) -> bool {
    let inodes = listening_inodes(port);
    if inodes.is_empty() {
        return false;
    }
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    fds.flatten().any(|fd| {
        std::fs::read_link(fd.path()).is_ok_and(|l| {
            l.to_str()
                .and_then(|s| s.strip_prefix("socket:["))
                .and_then(|s| s.strip_suffix(']'))
                .and_then(|s| s.parse::<u64>().ok())
                .is_some_and(|i| inodes.contains(&i))
        })
    })
}

/// The last `n` lines of `log`, joined with ` | `, control characters escaped.
fn log_tail(log: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let mut tail: Vec<&str> = text.lines().rev().take(n).collect();
    tail.reverse();
    crate::escape_controls(&tail.join(" | "))
}

/// Starts `program serve <dir>/config.yml` in its own process group, output
/// appended to `<dir>/registry.log`, PID in `<dir>/registry.pid`, and waits
/// (at most [`WAIT`]) until that child itself listens on the port of
/// `http.addr` ([`listens_on`]) and the address accepts connections
/// (loopback for a wildcard address, [`probe_addrs`]). Does nothing when
/// it already runs. Errors: no config.yml (run init first), the program
/// missing, the registry exiting (e.g. its port is held by another
/// process), or not ready in time; in every case the child is stopped
/// first and the message carries the last lines of its log.
pub fn start(dir: &Path, program: &Path) -> Result<Started, MirrorError> {
    let config = dir.join(files::CONFIG);
    if !config.is_file() {
        return Err(opt(format!(
            "{} does not exist: run `okd-install mirror registry init` first",
            config.display()
        )));
    }
    let addr = listen_addr(&config)?;
    let probe = probe_addrs(&addr)
        .filter(|a| !a.is_empty())
        .ok_or_else(|| {
            opt(format!(
                "{}: http.addr {addr:?} is not host:port",
                config.display()
            ))
        })?;
    let port = probe[0].port();
    let log = dir.join(LOG_FILE);
    if let Some(pid) = running(dir, program) {
        return Ok(Started {
            pid,
            addr,
            log,
            new: false,
        });
    }
    let out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log)
        .map_err(|e| MirrorError::io("opening", &log, e))?;
    let err = out
        .try_clone()
        .map_err(|e| MirrorError::io("opening", &log, e))?;
    use std::os::unix::process::CommandExt as _;
    let mut child = Command::new(program)
        .arg("serve")
        .arg(&config)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .process_group(0)
        .spawn()
        .map_err(|e| {
            opt(format!(
                "cannot run {}: {e} (install the Debian package docker-registry, or pass --registry-program)",
                program.display()
            ))
        })?;
    let pid = child.id();
    let pid_path = dir.join(PID_FILE);
    okd_fs::write_atomic(&pid_path, format!("{pid}\n").as_bytes(), 0o644)?;
    let t0 = Instant::now();
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            let _ = std::fs::remove_file(&pid_path);
            return Err(opt(format!(
                "the registry exited ({status}) at start; last lines of {}: {}",
                log.display(),
                log_tail(&log, 3)
            )));
        }
        if listens_on(pid, port) && connectable(&probe) {
            return Ok(Started {
                pid,
                addr,
                log,
                new: true,
            });
        }
        if t0.elapsed() > WAIT {
            // Not ready: stop it (its whole process group) so nothing is left behind.
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{pid}")])
                .status();
            let _ = child.wait();
            let _ = std::fs::remove_file(&pid_path);
            return Err(opt(format!(
                "the registry (PID {pid}) did not listen on {addr} within {}s and was stopped; last lines of {}: {}",
                WAIT.as_secs(),
                log.display(),
                log_tail(&log, 3)
            )));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Stops the registry of `<dir>/registry.pid` (SIGTERM, then SIGKILL after
/// [`WAIT`]) and removes the PID file. Returns the PID, or `None` when
/// none was running. Errors: the PID belongs to another process (not
/// `program` serving `<dir>/config.yml`, see [`pid_state`]): nothing is
/// signalled and the message says what that process is.
pub fn stop(dir: &Path, program: &Path) -> Result<Option<u32>, MirrorError> {
    let pid_path = dir.join(PID_FILE);
    let pid = match pid_state(dir, program) {
        PidState::NotRunning => {
            let _ = std::fs::remove_file(&pid_path);
            return Ok(None);
        }
        PidState::Registry(pid) => pid,
        PidState::Other { pid, exe, cmdline } => {
            return Err(opt(format!(
                "refusing to stop PID {pid} of {}: it is {exe} ({cmdline}), not {} serving {}; remove the PID file if the registry is not running (or pass the --registry-program it was started with)",
                pid_path.display(),
                program.display(),
                dir.join(files::CONFIG).display()
            )));
        }
    };
    let signal = |sig: &str| {
        Command::new("kill")
            .args([sig, &pid.to_string()])
            .status()
            .map_err(|e| opt(format!("running kill: {e}")))
    };
    signal("-TERM")?;
    let t0 = Instant::now();
    while running(dir, program) == Some(pid) {
        if t0.elapsed() > WAIT {
            signal("-KILL")?;
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = std::fs::remove_file(&pid_path);
    Ok(Some(pid))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_addresses() {
        let a = |s: &str| s.parse::<SocketAddr>().unwrap();
        assert_eq!(
            probe_addrs(":5000").unwrap(),
            vec![a("127.0.0.1:5000"), a("[::1]:5000")]
        );
        assert_eq!(
            probe_addrs("0.0.0.0:5000").unwrap(),
            vec![a("127.0.0.1:5000")]
        );
        assert_eq!(probe_addrs("[::]:5000").unwrap()[0], a("[::1]:5000"));
        assert_eq!(
            probe_addrs("192.0.2.7:5000").unwrap(),
            vec![a("192.0.2.7:5000")]
        );
        assert_eq!(
            probe_addrs("[fd00::1]:443").unwrap(),
            vec![a("[fd00::1]:443")]
        );
        assert!(probe_addrs("5000").is_none() && probe_addrs(":x").is_none());
    }

    #[test]
    fn listens_on_tells_the_listening_process() {
        let l = std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0)).unwrap();
        let port = l.local_addr().unwrap().port();
        assert!(listens_on(std::process::id(), port));
        // PID 1 (init) does not hold our socket.
        assert!(!listens_on(1, port));
        drop(l);
        assert!(!listens_on(std::process::id(), port));
    }
}
