//! The control socket of a running `okd-install serve`: `<dir>/.okd-serve.sock`,
//! one request line (`status` or `remove-bootstrap`) and one reply, so that
//! `okd-install serve status|remove-bootstrap --dir D` reach the process that
//! serves D (even from another network namespace: the socket is a file).

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};

/// The socket's file name in the asset directory.
pub(crate) const SOCKET: &str = ".okd-serve.sock";

/// The socket path for `dir`.
pub(crate) fn socket_path(dir: &Path) -> PathBuf {
    dir.join(SOCKET)
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
    /// No serve runs and the removal of the bootstrap could not be recorded
    /// (the text names the file).
    #[error("{0}")]
    Record(String),
}

/// How long a client waits for the reply.
pub(crate) const REPLY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// The reply text, or [`ControlError::Refused`] for `error: <text>`.
fn judge(out: String) -> Result<String, ControlError> {
    if let Some(err) = out.strip_prefix("error: ") {
        return Err(ControlError::Refused(err.trim_end().to_string()));
    }
    Ok(out)
}

/// Sends one request and returns the reply (blocking; for the CLI, never
/// inside an async task: use [`request_async`] there). Waits at most
/// [`REPLY_TIMEOUT`] for the reply.
pub(crate) fn request(dir: &Path, what: &str) -> Result<String, ControlError> {
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

/// [`request`] with async I/O (tokio), for callers on an async runtime:
/// connecting, sending and reading the reply together take at most `limit`
/// ([`REPLY_TIMEOUT`] for the CLI's wait); a reply not complete by then is
/// [`ControlError::Io`] with kind `TimedOut`.
pub(crate) async fn request_async(
    dir: &Path,
    what: &str,
    limit: std::time::Duration,
) -> Result<String, ControlError> {
    use tokio::io::AsyncReadExt as _;
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

/// Longest request line read, in bytes; longer requests are refused.
const MAX_REQUEST: u64 = 1024;
/// How long a client may take to send its request line.
const REQUEST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);
/// Requests handled at once; further connections wait in the kernel's backlog.
const MAX_CONNECTIONS: usize = 16;

/// Serves requests until the listener fails; `handle` maps a request line to
/// a reply. A request line is at most [`MAX_REQUEST`] bytes and must arrive
/// within [`REQUEST_TIMEOUT`]; at most [`MAX_CONNECTIONS`] are served at once.
pub(crate) async fn serve<F>(listener: tokio::net::UnixListener, handle: F)
where
    F: Fn(&str) -> String + Send + Sync + 'static,
{
    use tokio::io::AsyncReadExt as _;
    let handle = std::sync::Arc::new(handle);
    let slots = std::sync::Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    loop {
        let Ok(permit) = slots.clone().acquire_owned().await else {
            return;
        };
        let Ok((stream, _)) = listener.accept().await else {
            return;
        };
        let handle = handle.clone();
        tokio::spawn(async move {
            let _permit = permit;
            let (r, mut w) = stream.into_split();
            let mut line = String::new();
            let mut reader = BufReader::new(r.take(MAX_REQUEST + 1));
            let read = tokio::time::timeout(REQUEST_TIMEOUT, reader.read_line(&mut line)).await;
            let reply = match read {
                Ok(Ok(_)) if line.len() as u64 > MAX_REQUEST => {
                    format!("error: request longer than {MAX_REQUEST} bytes\n")
                }
                // Building the status document is CPU work: off the runtime's threads.
                Ok(Ok(_)) => {
                    let handle = handle.clone();
                    tokio::task::spawn_blocking(move || handle(line.trim()))
                        .await
                        .unwrap_or_else(|_| "error: the request failed\n".to_string())
                }
                Ok(Err(_)) => return,
                Err(_) => "error: no request line within 10 s\n".to_string(),
            };
            let _ = w.write_all(reply.as_bytes()).await;
            let _ = w.shutdown().await;
            // Read (and drop) what an oversized request still sends, briefly,
            // so the client reads the reply instead of a reset.
            let mut rest = reader.into_inner().into_inner().take(64 * 1024);
            let _ = tokio::time::timeout(
                std::time::Duration::from_secs(1),
                tokio::io::copy(&mut rest, &mut tokio::io::sink()),
            )
            .await;
        });
    }
}

/// Binds the socket, replacing a stale one left by a dead process (but not a
/// live one). The socket is made in a private directory (0700) beside it,
/// set to 0600 and renamed into place, so it is never reachable with looser
/// permissions.
pub(crate) fn bind(dir: &Path) -> anyhow::Result<tokio::net::UnixListener> {
    use std::os::unix::fs::PermissionsExt as _;
    let path = socket_path(dir);
    if path.exists() {
        if std::os::unix::net::UnixStream::connect(&path).is_ok() {
            anyhow::bail!(
                "another `okd-install serve` is already serving {} (socket {})",
                dir.display(),
                path.display()
            );
        }
        std::fs::remove_file(&path)
            .with_context(|| format!("removing stale {}", path.display()))?;
    }
    let private = tempfile::Builder::new()
        .prefix(".okd-serve-sock-")
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir_in(dir)
        .with_context(|| format!("creating a private directory in {}", dir.display()))?;
    let tmp = private.path().join("sock");
    let std_listener = std::os::unix::net::UnixListener::bind(&tmp)
        .with_context(|| format!("cannot listen on {}", tmp.display()))?;
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o600))?;
    std::fs::rename(&tmp, &path)
        .with_context(|| format!("cannot move the socket to {}", path.display()))?;
    std_listener.set_nonblocking(true)?;
    let l = tokio::net::UnixListener::from_std(std_listener)
        .with_context(|| format!("cannot listen on {}", path.display()))?;
    Ok(l)
}
