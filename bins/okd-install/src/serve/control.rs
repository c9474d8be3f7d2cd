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

/// Sends one request and returns the reply (blocking; for the CLI).
pub(crate) fn request(dir: &Path, what: &str) -> anyhow::Result<String> {
    use std::io::{Read as _, Write as _};
    let path = socket_path(dir);
    let mut s = std::os::unix::net::UnixStream::connect(&path).with_context(|| {
        format!(
            "no `okd-install serve` is running for {} ({} not reachable)",
            dir.display(),
            path.display()
        )
    })?;
    s.set_read_timeout(Some(std::time::Duration::from_secs(30)))?;
    s.write_all(format!("{what}\n").as_bytes())?;
    s.shutdown(std::net::Shutdown::Write)?;
    let mut out = String::new();
    s.read_to_string(&mut out)?;
    if let Some(err) = out.strip_prefix("error: ") {
        anyhow::bail!("{}", err.trim_end());
    }
    Ok(out)
}

/// Serves requests until the listener fails; `handle` maps a request line to a reply.
pub(crate) async fn serve<F>(listener: tokio::net::UnixListener, handle: F)
where
    F: Fn(&str) -> String + Send + Sync + 'static,
{
    let handle = std::sync::Arc::new(handle);
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            return;
        };
        let handle = handle.clone();
        tokio::spawn(async move {
            let (r, mut w) = stream.into_split();
            let mut line = String::new();
            if BufReader::new(r).read_line(&mut line).await.is_ok() {
                let reply = handle(line.trim());
                let _ = w.write_all(reply.as_bytes()).await;
                let _ = w.shutdown().await;
            }
        });
    }
}

/// Binds the socket, replacing a stale one left by a dead process (but not a live one).
pub(crate) fn bind(dir: &Path) -> anyhow::Result<tokio::net::UnixListener> {
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
    let l = tokio::net::UnixListener::bind(&path)
        .with_context(|| format!("cannot listen on {}", path.display()))?;
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o600))?;
    Ok(l)
}
