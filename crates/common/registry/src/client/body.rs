//! Reading what a registry sends with limits: bodies with a size cap (read
//! piece by piece, never buffered whole and then checked), every wait with
//! the read timeout, and registry-supplied text sanitized before it goes
//! into a message.

use std::time::Duration;

use bytes::{Bytes, BytesMut};

use super::error::{OciError, root_cause};

/// Largest manifest or index accepted, bytes (4 MiB: the limit distribution
/// itself enforces on manifest PUTs, `registry/handlers/manifests.go`
/// `maxManifestBodySize`).
pub const MAX_MANIFEST: u64 = 4 << 20;
/// Largest token answer or error body read, bytes (64 KiB).
pub const MAX_SMALL_BODY: u64 = 64 << 10;
/// Characters of a registry's error body kept in a message.
const EXCERPT_CHARS: usize = 300;

/// Waits for `fut` at most `limit`; `Timeout` names `registry` and `what`.
pub(crate) async fn idle<T>(
    limit: Duration,
    registry: &str,
    what: impl FnOnce() -> String,
    fut: impl Future<Output = T>,
) -> Result<T, OciError> {
    tokio::time::timeout(limit, fut)
        .await
        .map_err(|_| OciError::Timeout {
            registry: registry.to_string(),
            what: what(),
            seconds: limit.as_secs().max(1),
        })
}

/// Reads a whole body of at most `cap` bytes: refused at once when the
/// declared `Content-Length` is larger, or as soon as more bytes arrive;
/// each read waits at most `timeout`.
pub(crate) async fn read_capped(
    mut resp: reqwest::Response,
    cap: u64,
    timeout: Duration,
    registry: &str,
    what: &str,
) -> Result<Bytes, OciError> {
    let too_large = || OciError::TooLarge {
        what: what.to_string(),
        limit: cap,
    };
    if resp.content_length().is_some_and(|n| n > cap) {
        return Err(too_large());
    }
    let mut buf = BytesMut::new();
    loop {
        let piece = idle(
            timeout,
            registry,
            || format!("reading {what}"),
            resp.chunk(),
        )
        .await?
        .map_err(|e| OciError::Transfer {
            what: what.to_string(),
            detail: root_cause(&e),
        })?;
        let Some(piece) = piece else { break };
        let total = (buf.len() as u64).saturating_add(piece.len() as u64);
        if total > cap {
            return Err(too_large());
        }
        buf.extend_from_slice(&piece);
    }
    Ok(buf.freeze())
}

/// The start of an error body (at most [`MAX_SMALL_BODY`] read, failures
/// ignored), lossily decoded; pass it through [`sanitize`] before use.
pub(crate) async fn error_text(mut resp: reqwest::Response, timeout: Duration) -> String {
    let mut buf = Vec::new();
    while (buf.len() as u64) < MAX_SMALL_BODY {
        match tokio::time::timeout(timeout, resp.chunk()).await {
            Ok(Ok(Some(p))) => buf.extend_from_slice(&p),
            _ => break,
        }
    }
    buf.truncate(MAX_SMALL_BODY as usize);
    String::from_utf8_lossy(&buf).into_owned()
}

/// Control characters (except space) as escapes (`\u{1b}`, `\r`); line
/// breaks and tabs become spaces.
pub fn escape_controls(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\n' | '\t' => out.push(' '),
            c if c.is_control() => out.extend(c.escape_default()),
            c => out.push(c),
        }
    }
    out
}

/// Registry-supplied text made fit for a message or log line: every
/// occurrence of a `secret` replaced by `<redacted>`, trimmed, cut to 300
/// characters, control characters escaped ([`escape_controls`]).
pub fn sanitize<'a>(text: &str, secrets: impl IntoIterator<Item = &'a str>) -> String {
    let mut t = text.to_string();
    for s in secrets {
        if s.len() >= 3 {
            t = t.replace(s, "<redacted>");
        }
    }
    let cut: String = t.trim().chars().take(EXCERPT_CHARS).collect();
    escape_controls(&cut)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitized() {
        assert_eq!(
            sanitize("bad \x1b[31mred\r\nnext pw=hunter2", ["hunter2"]),
            "bad \\u{1b}[31mred\\r next pw=<redacted>"
        );
        assert_eq!(sanitize(&"x".repeat(1000), []).len(), EXCERPT_CHARS);
    }
}
