//! SSH through the system OpenSSH client (`ssh`, `ssh-agent`, `ssh-add`;
//! Debian openssh-client), as openshift-install's `pkg/gather/ssh` does with
//! Go's x/crypto/ssh: public-key authentication from an agent that holds the
//! given keys, that agent forwarded so the bootstrap host can log in to the
//! masters, host keys not checked (a bootstrap host's key is new on every
//! install), and a bounded connect time.
//!
//! The keys live in a private `ssh-agent` started for the run (its socket in
//! a 0700 temporary directory) and killed by PID when the run ends, so the
//! bootstrap host only ever sees the keys given for this gather, never the
//! user's own agent, unless no key was given at all.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::error::GatherError;

/// How long to wait for a new ssh-agent's socket.
const AGENT_START: Duration = Duration::from_secs(10);

/// One key for the agent: its file and how to name it in messages.
#[derive(Debug, Clone)]
pub(crate) struct Key {
    /// The private key file.
    pub(crate) path: PathBuf,
    /// The name the user knows (the path, or "the installer's bootstrap SSH key").
    pub(crate) label: String,
}

/// A private ssh-agent, killed (by PID) and its socket directory removed on drop.
pub(crate) struct Agent {
    child: Child,
    socket: PathBuf,
    _dir: tempfile::TempDir,
}

impl Agent {
    /// Starts `ssh-agent -D -a <socket>` (no keys yet: [`Agent::add_key`]).
    ///
    /// # Errors
    /// [`GatherError::Program`] when ssh-agent cannot run,
    /// [`GatherError::Agent`] when the socket does not appear within 10 s.
    pub(crate) fn start() -> Result<Agent, GatherError> {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::Builder::new()
            .prefix("okd-gather-agent-")
            .permissions(std::fs::Permissions::from_mode(0o700))
            .tempdir()
            .map_err(|source| GatherError::Program {
                program: "ssh-agent",
                source,
            })?;
        let socket = dir.path().join("agent.sock");
        let child = Command::new("ssh-agent")
            .arg("-D")
            .arg("-a")
            .arg(&socket)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|source| GatherError::Program {
                program: "ssh-agent",
                source,
            })?;
        let mut agent = Agent {
            child,
            socket,
            _dir: dir,
        };
        let start = Instant::now();
        while !agent.socket.exists() {
            if let Ok(Some(st)) = agent.child.try_wait() {
                return Err(GatherError::Agent(format!("ssh-agent exited ({st})")));
            }
            if start.elapsed() > AGENT_START {
                return Err(GatherError::Agent(format!(
                    "no socket {} after {} s",
                    agent.socket.display(),
                    AGENT_START.as_secs()
                )));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        tracing::debug!("Started ssh-agent (pid {}) for this run", agent.child.id());
        Ok(agent)
    }

    /// Adds one key with `ssh-add` (no passphrase prompt).
    ///
    /// # Errors
    /// [`GatherError::Program`] when ssh-add cannot run,
    /// [`GatherError::KeyRejected`] naming the key when it refuses it.
    pub(crate) fn add_key(&self, key: &Key) -> Result<(), GatherError> {
        let out = Command::new("ssh-add")
            .arg("-q")
            .arg(&key.path)
            .env("SSH_AUTH_SOCK", &self.socket)
            .env("SSH_ASKPASS_REQUIRE", "never")
            .env_remove("DISPLAY")
            .stdin(Stdio::null())
            .output()
            .map_err(|source| GatherError::Program {
                program: "ssh-add",
                source,
            })?;
        if !out.status.success() {
            let detail = String::from_utf8_lossy(&out.stderr).trim().to_string();
            return Err(GatherError::KeyRejected {
                key: key.label.clone(),
                detail: if detail.is_empty() {
                    format!("ssh-add exited with {}", out.status)
                } else {
                    detail
                },
            });
        }
        tracing::debug!("Added {} to this run's ssh-agent", key.label);
        Ok(())
    }

    /// The agent's socket, for `SSH_AUTH_SOCK`.
    pub(crate) fn socket(&self) -> &Path {
        &self.socket
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Where and how to log in.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    /// The user (`core`).
    pub(crate) user: String,
    /// Host name or address (IPv6 without brackets).
    pub(crate) host: String,
    /// TCP port (22).
    pub(crate) port: u16,
    /// `ConnectTimeout`.
    pub(crate) connect_timeout: Duration,
    /// `SSH_AUTH_SOCK` for ssh (the run's agent, or the user's), forwarded.
    pub(crate) agent: Option<PathBuf>,
    /// Extra identity files (`-i`), tried after the agent's keys.
    pub(crate) identity_files: Vec<PathBuf>,
}

impl Target {
    /// `user@host:port` for messages.
    pub(crate) fn display(&self) -> String {
        if self.host.contains(':') {
            format!("{}@[{}]:{}", self.user, self.host, self.port)
        } else {
            format!("{}@{}:{}", self.user, self.host, self.port)
        }
    }

    /// `ssh` with the options of every connection, ready for the remote command.
    pub(crate) fn command(&self, remote: &str) -> Command {
        let mut c = Command::new("ssh");
        c.arg("-A")
            .arg("-p")
            .arg(self.port.to_string())
            .args(["-o", "BatchMode=yes"])
            .arg("-o")
            .arg(format!(
                "ConnectTimeout={}",
                self.connect_timeout.as_secs().max(1)
            ))
            .args([
                "-o",
                "StrictHostKeyChecking=no",
                "-o",
                "UserKnownHostsFile=/dev/null",
                "-o",
                "LogLevel=ERROR",
                "-o",
                "PreferredAuthentications=publickey",
                "-o",
                "ServerAliveInterval=15",
                "-o",
                "ServerAliveCountMax=4",
            ]);
        for f in &self.identity_files {
            c.arg("-i").arg(f);
        }
        c.arg("-l")
            .arg(&self.user)
            .arg("--")
            .arg(&self.host)
            .arg(remote);
        match &self.agent {
            Some(sock) => c.env("SSH_AUTH_SOCK", sock),
            None => c.env_remove("SSH_AUTH_SOCK"),
        };
        c.env("SSH_ASKPASS_REQUIRE", "never").stdin(Stdio::null());
        c
    }
}

/// What a failed `ssh` (exit status 255, its own failures) means, from its
/// message: authentication, or connecting.
pub(crate) enum SshFailure {
    /// `Permission denied (publickey...)`.
    Auth,
    /// Refused, unreachable, timed out, unknown name.
    Connect,
    /// Something else (the message says what).
    Other,
}

/// Sorts ssh's message into [`SshFailure`].
pub(crate) fn classify(stderr: &str) -> SshFailure {
    let s = stderr.to_ascii_lowercase();
    if s.contains("permission denied") || s.contains("too many authentication failures") {
        SshFailure::Auth
    } else if [
        "connection refused",
        "connection timed out",
        "no route to host",
        "network is unreachable",
        "could not resolve hostname",
        "name or service not known",
        "operation timed out",
        "connection closed by",
        "connection reset",
    ]
    .iter()
    .any(|p| s.contains(p))
    {
        SshFailure::Connect
    } else {
        SshFailure::Other
    }
}

/// The last `n` non-empty lines of `text`, joined with `; `.
pub(crate) fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    lines[lines.len().saturating_sub(n)..].join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_ssh_messages() {
        assert!(matches!(
            classify("core@10.0.0.1: Permission denied (publickey)."),
            SshFailure::Auth
        ));
        assert!(matches!(
            classify("ssh: connect to host 10.0.0.1 port 22: No route to host"),
            SshFailure::Connect
        ));
        assert!(matches!(
            classify("ssh: connect to host 10.0.0.1 port 22: Connection timed out"),
            SshFailure::Connect
        ));
        assert!(matches!(classify("something odd"), SshFailure::Other));
        assert_eq!(last_lines("a\n\nb\nc\n", 2), "b; c");
    }

    #[test]
    fn ipv6_targets_are_bracketed_in_messages() {
        let t = Target {
            user: "core".into(),
            host: "fd00::2".into(),
            port: 22,
            connect_timeout: Duration::from_secs(10),
            agent: None,
            identity_files: Vec::new(),
        };
        assert_eq!(t.display(), "core@[fd00::2]:22");
    }
}
