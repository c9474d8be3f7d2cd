//! The control socket of a running `okd-install serve`: `<dir>/`[`SOCKET`]
//! (mode 0600), one request line and one reply, so that `okd-install serve
//! status|remove-bootstrap`, `destroy bootstrap` and `wait-for`'s progress
//! reach the process that serves a directory (even from another network
//! namespace: the socket is a file).
//!
//! The protocol: the client sends one [`Request`] line (`status\n` or
//! `remove-bootstrap\n`, at most [`MAX_REQUEST`] bytes) and shuts down its
//! writing side; the server answers and closes. A reply is either
//! `error: <text>\n` ([`ControlError::Refused`]) or, for
//! [`Request::Status`], the [`StatusDocument`] as pretty JSON followed by a
//! newline, and for [`Request::RemoveBootstrap`] lines of text for a person.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use crate::removal::{self, RemovalError};
use crate::status::StatusDocument;

/// The socket's file name in the asset directory.
pub const SOCKET: &str = ".okd-serve.sock";

/// Longest request line a server reads, in bytes (newline included); longer
/// requests are refused with `error: request longer than 1024 bytes`.
pub const MAX_REQUEST: u64 = 1024;

/// How long a client waits for the reply.
pub const REPLY_TIMEOUT: Duration = Duration::from_secs(30);

/// The socket path for `dir`.
pub fn socket_path(dir: &Path) -> PathBuf {
    dir.join(SOCKET)
}

/// One request to the control socket. Serialised (and sent) as its line:
/// `status`, `remove-bootstrap`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Request {
    /// The [`StatusDocument`] (pretty JSON).
    Status,
    /// Take the bootstrap out of the load balancer, stop serving
    /// bootstrap.ign and record it (see [`crate::removal`]); the reply says
    /// what was done, one line each.
    RemoveBootstrap,
}

impl Request {
    /// Every request, as the server lists them in its refusal of others.
    pub const ALL: [Request; 2] = [Request::Status, Request::RemoveBootstrap];

    /// The request line without its newline.
    pub fn as_str(self) -> &'static str {
        match self {
            Request::Status => "status",
            Request::RemoveBootstrap => "remove-bootstrap",
        }
    }

    /// The request of a line (surrounding white space ignored), `None` for
    /// an unknown one.
    pub fn parse(line: &str) -> Option<Request> {
        Request::ALL.into_iter().find(|r| r.as_str() == line.trim())
    }
}

impl std::fmt::Display for Request {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The reply line refusing a request: `error: <text>\n`.
pub fn error_reply(text: &str) -> String {
    format!("error: {text}\n")
}

/// Why a request to the control socket failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ControlError {
    /// Nothing listens on the socket: no serve runs for this directory.
    #[error("no `okd-install serve` is running for {} ({} not reachable)", dir.display(), socket.display())]
    NotRunning {
        /// The asset directory.
        dir: PathBuf,
        /// The socket path.
        socket: PathBuf,
        /// The connect error.
        #[source]
        source: std::io::Error,
    },
    /// The exchange broke off after connecting.
    #[error("talking to `okd-install serve` through {}", socket.display())]
    Io {
        /// The socket path.
        socket: PathBuf,
        /// The reason.
        #[source]
        source: std::io::Error,
    },
    /// The server answered `error: <text>`.
    #[error("{0}")]
    Refused(String),
    /// The status reply is not a [`StatusDocument`] (a serve of another
    /// version, or a reply cut short).
    #[error("the status reply of `okd-install serve` through {} is not a status document", socket.display())]
    Reply {
        /// The socket path.
        socket: PathBuf,
        /// The parse error.
        #[source]
        source: serde_json::Error,
    },
    /// No serve runs and the removal of the bootstrap could not be recorded
    /// (the error names the file).
    #[error("{0}")]
    Record(#[from] RemovalError),
}

/// The reply text, or [`ControlError::Refused`] for `error: <text>`.
fn judge(out: String) -> Result<String, ControlError> {
    if let Some(err) = out.strip_prefix("error: ") {
        return Err(ControlError::Refused(err.trim_end().to_string()));
    }
    Ok(out)
}

/// Sends one request line `what` and returns the reply (blocking; for the
/// CLI, never inside an async task: use [`control_reply_async`] there).
/// Waits at most [`REPLY_TIMEOUT`] for the reply.
///
/// # Errors
/// [`ControlError::NotRunning`] when no serve listens for `dir`,
/// [`ControlError::Refused`] with the server's error text,
/// [`ControlError::Io`] when the exchange breaks off.
pub fn control_reply(dir: &Path, what: &str) -> Result<String, ControlError> {
    use std::io::{Read as _, Write as _};
    let path = socket_path(dir);
    let mut s = std::os::unix::net::UnixStream::connect(&path).map_err(|source| {
        ControlError::NotRunning {
            dir: dir.to_path_buf(),
            socket: path.clone(),
            source,
        }
    })?;
    let io = |source| ControlError::Io {
        socket: path.clone(),
        source,
    };
    s.set_read_timeout(Some(REPLY_TIMEOUT)).map_err(io)?;
    s.write_all(format!("{what}\n").as_bytes()).map_err(io)?;
    s.shutdown(std::net::Shutdown::Write).map_err(io)?;
    let mut out = String::new();
    s.read_to_string(&mut out).map_err(io)?;
    judge(out)
}

/// [`control_reply`] with async I/O (tokio), for callers on an async
/// runtime (e.g. `wait-for`'s progress): connecting, sending and reading
/// the reply together take at most `limit`.
///
/// # Errors
/// As [`control_reply`]; [`ControlError::Io`] with kind `TimedOut` when no
/// complete reply came within `limit`.
pub async fn control_reply_async(
    dir: &Path,
    what: &str,
    limit: Duration,
) -> Result<String, ControlError> {
    let path = socket_path(dir);
    let exchange = async {
        let mut s = tokio::net::UnixStream::connect(&path)
            .await
            .map_err(|source| ControlError::NotRunning {
                dir: dir.to_path_buf(),
                socket: path.clone(),
                source,
            })?;
        let io = |source| ControlError::Io {
            socket: path.clone(),
            source,
        };
        s.write_all(format!("{what}\n").as_bytes())
            .await
            .map_err(io)?;
        s.shutdown().await.map_err(io)?;
        let mut out = String::new();
        s.read_to_string(&mut out).await.map_err(io)?;
        Ok::<String, ControlError>(out)
    };
    match tokio::time::timeout(limit, exchange).await {
        Ok(r) => judge(r?),
        Err(_) => Err(ControlError::Io {
            socket: path.clone(),
            source: std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("no reply within {limit:?}"),
            ),
        }),
    }
}

/// The [`StatusDocument`] of the serve running for `dir` ([`Request::Status`]
/// with async I/O, at most `limit`).
///
/// # Errors
/// As [`control_reply_async`]; [`ControlError::Reply`] when the reply is no
/// status document.
pub async fn status_async(dir: &Path, limit: Duration) -> Result<StatusDocument, ControlError> {
    let text = control_reply_async(dir, Request::Status.as_str(), limit).await?;
    serde_json::from_str(&text).map_err(|source| ControlError::Reply {
        socket: socket_path(dir),
        source,
    })
}

/// `okd-install serve remove-bootstrap` (and `destroy bootstrap`): asks the
/// running serve of `dir` to stop serving bootstrap.ign and take the
/// bootstrap out of its load balancer; it records the removal in
/// `<dir>/`[`removal::REMOVED_FILE`] so later serves keep it. When no serve
/// runs, only records it. Returns the running serve's reply, or `None` when
/// none runs.
///
/// # Errors
/// [`ControlError::Refused`] or [`ControlError::Io`] from a running serve;
/// [`ControlError::Record`] when the record cannot be written.
pub fn remove_bootstrap(dir: &Path) -> Result<Option<String>, ControlError> {
    match control_reply(dir, Request::RemoveBootstrap.as_str()) {
        Ok(reply) => Ok(Some(reply)),
        Err(ControlError::NotRunning { .. }) => {
            removal::record(dir)?;
            tracing::info!(
                "No `okd-install serve` is running for {}: recorded the removal of the bootstrap in {}; later serves neither serve bootstrap.ign nor balance to the bootstrap",
                dir.display(),
                removal::path(dir).display()
            );
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_their_lines() {
        for r in Request::ALL {
            assert_eq!(Request::parse(&format!("{r}\n")), Some(r));
            assert_eq!(
                serde_json::to_value(r).unwrap(),
                serde_json::Value::String(r.as_str().into())
            );
        }
        assert_eq!(Request::parse("stat"), None);
    }

    #[test]
    fn error_replies_are_refusals() {
        match judge(error_reply("no bootstrap host")) {
            Err(ControlError::Refused(t)) => assert_eq!(t, "no bootstrap host"),
            other => panic!("{other:?}"),
        }
        assert_eq!(judge("removed\n".into()).unwrap(), "removed\n");
    }
}
