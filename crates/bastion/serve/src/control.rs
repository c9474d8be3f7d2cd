//! The server side of the control socket of a running `okd-install serve`
//! (`<dir>/.okd-serve.sock`): one request line (`status` or
//! `remove-bootstrap`) and one reply, so that `okd-install serve
//! status|remove-bootstrap --dir D` reach the process that serves D (even
//! from another network namespace: the socket is a file). The protocol and
//! its clients are [`okd_serve_api::control`].

use std::path::Path;

use crate::error::Context as _;
use okd_serve_api::control::{MAX_REQUEST, error_reply};
pub(crate) use okd_serve_api::socket_path;
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};

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
                    error_reply(&format!("request longer than {MAX_REQUEST} bytes"))
                }
                // Building the status document is CPU work: off the runtime's threads.
                Ok(Ok(_)) => {
                    let handle = handle.clone();
                    tokio::task::spawn_blocking(move || handle(line.trim()))
                        .await
                        .unwrap_or_else(|_| error_reply("the request failed"))
                }
                Ok(Err(_)) => return,
                Err(_) => error_reply("no request line within 10 s"),
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
pub(crate) fn bind(dir: &Path) -> Result<tokio::net::UnixListener, crate::ServeError> {
    use std::os::unix::fs::PermissionsExt as _;
    let path = socket_path(dir);
    if path.exists() {
        if std::os::unix::net::UnixStream::connect(&path).is_ok() {
            return Err(crate::ServeError::Stopped(format!(
                "another `okd-install serve` is already serving {} (socket {})",
                dir.display(),
                path.display()
            )));
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
