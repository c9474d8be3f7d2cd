//! Files over HTTP: a single `Range` (RFC 9110 §14), `Last-Modified` dates
//! (RFC 9110 §5.6.7 IMF-fixdate), and the streamed body of a file with
//! `Accept-Ranges`, `Content-Length` and `Content-Range`.

use std::io;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use tokio::io::{AsyncReadExt, AsyncSeekExt};

use crate::{CHUNK_BYTES, not_found};

/// What the `Range` header asks for, given the file size.
#[derive(Debug, PartialEq, Eq)]
pub enum RangeReq {
    /// Serve the whole file (no header, several ranges, or bad syntax).
    Full,
    /// Serve bytes `start..=end`.
    Part(u64, u64),
    /// 416.
    Unsatisfiable,
}

/// Reads a `Range` header (RFC 9110 §14.2) for a file of `len` octets:
/// one `bytes=` range (`a-b`, `a-`, `-suffix`) gives the inclusive octet
/// range clamped to the file, a range starting at or past the end (or an
/// empty suffix) is unsatisfiable, and anything else (no header, several
/// ranges, another unit, bad syntax) serves the whole file. Public for the
/// fuzz target (`tests/fuzz_range.rs`).
pub fn parse_range(h: Option<&HeaderValue>, len: u64) -> RangeReq {
    let Some(v) = h.and_then(|v| v.to_str().ok()) else {
        return RangeReq::Full;
    };
    let v = v.trim();
    let Some((unit, spec)) = v.split_once('=') else {
        return RangeReq::Full;
    };
    if !unit.trim().eq_ignore_ascii_case("bytes") || spec.contains(',') {
        return RangeReq::Full;
    }
    let Some((a, b)) = spec.trim().split_once('-') else {
        return RangeReq::Full;
    };
    let (a, b) = (a.trim(), b.trim());
    let num = |s: &str| -> Option<u64> {
        (!s.is_empty() && s.bytes().all(|c| c.is_ascii_digit()))
            .then(|| s.parse().ok())
            .flatten()
    };
    match (a.is_empty(), b.is_empty()) {
        (true, true) => RangeReq::Full,
        (true, false) => match num(b) {
            None => RangeReq::Full,
            Some(0) => RangeReq::Unsatisfiable,
            Some(_) if len == 0 => RangeReq::Unsatisfiable,
            Some(n) => RangeReq::Part(len.saturating_sub(n), len - 1),
        },
        (false, true) => match num(a) {
            None => RangeReq::Full,
            Some(s) if s >= len => RangeReq::Unsatisfiable,
            Some(s) => RangeReq::Part(s, len - 1),
        },
        (false, false) => match (num(a), num(b)) {
            (Some(s), Some(e)) if s <= e => {
                if s >= len {
                    RangeReq::Unsatisfiable
                } else {
                    RangeReq::Part(s, e.min(len - 1))
                }
            }
            _ => RangeReq::Full,
        },
    }
}

/// What one file body delivered, told to the `on_end` of [`send_file_then`]
/// once the body ended or was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Delivery {
    /// First octet of the body in the file (0 for a `200`).
    pub(crate) start: u64,
    /// Octets announced in `Content-Length`.
    pub(crate) count: u64,
    /// Octets handed to the connection.
    pub(crate) sent: u64,
    /// Size of the file in octets.
    pub(crate) len: u64,
    /// The file's modification time, so ranges of two versions of a file
    /// are not put together.
    pub(crate) modified: Option<SystemTime>,
    /// Whether all `count` octets were handed to the connection: the server
    /// took the last chunk (hyper writes a chunk into the connection's
    /// buffer as soon as it takes it, and stops polling, dropping the body,
    /// once `Content-Length` octets were written); false when the client
    /// went away, the transfer timed out or the file shrank before that.
    pub(crate) complete: bool,
}

/// Called once with the [`Delivery`] of a file body.
pub(crate) type OnEnd = Box<dyn FnOnce(Delivery) + Send>;

/// The chunks of a file body, telling `on_end` what went out when the
/// stream ends or is dropped (after the last chunk, or when the connection
/// closed part way).
struct Tracked {
    inner: std::pin::Pin<Box<dyn futures_util::Stream<Item = io::Result<Bytes>> + Send>>,
    delivery: Delivery,
    failed: bool,
    on_end: Option<OnEnd>,
}

impl Tracked {
    fn finish(&mut self) {
        if let Some(f) = self.on_end.take() {
            self.delivery.complete = !self.failed && self.delivery.sent == self.delivery.count;
            f(self.delivery);
        }
    }
}

impl futures_util::Stream for Tracked {
    type Item = io::Result<Bytes>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        use std::task::Poll;
        let item = self.inner.as_mut().poll_next(cx);
        match &item {
            Poll::Ready(Some(Ok(b))) => self.delivery.sent += b.len() as u64,
            Poll::Ready(Some(Err(_))) => self.failed = true,
            Poll::Ready(None) => self.finish(),
            Poll::Pending => {}
        }
        item
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.finish();
    }
}

/// Streams `path` (or the asked range of it) without reading it whole.
pub(crate) async fn send_file(
    path: &Path,
    headers: &HeaderMap,
    head: bool,
    content_type: &str,
) -> Response {
    send_file_then(path, headers, head, content_type, None).await
}

/// [`send_file`], telling `on_end` what the body delivered when it ends
/// (never for `HEAD`, errors and `416`; at once for an empty body).
pub(crate) async fn send_file_then(
    path: &Path,
    headers: &HeaderMap,
    head: bool,
    content_type: &str,
    on_end: Option<OnEnd>,
) -> Response {
    let mut file = match tokio::fs::File::open(path).await {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return not_found(),
        Err(e) => {
            tracing::error!(file = %path.display(), error = %e, "cannot open file");
            return (StatusCode::INTERNAL_SERVER_ERROR, "cannot read file\n").into_response();
        }
    };
    let meta = match file.metadata().await {
        Ok(m) if m.is_file() => m,
        _ => return not_found(),
    };
    let len = meta.len();
    let mut resp = Response::new(Body::empty());
    let h = resp.headers_mut();
    h.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    if let Ok(ct) = HeaderValue::from_str(content_type) {
        h.insert(header::CONTENT_TYPE, ct);
    }
    if let Some(lm) = meta
        .modified()
        .ok()
        .and_then(|t| HeaderValue::from_str(&http_date(t)).ok())
    {
        h.insert(header::LAST_MODIFIED, lm);
    }
    let (start, count) = match parse_range(headers.get(header::RANGE), len) {
        RangeReq::Full => (0, len),
        RangeReq::Part(s, e) => {
            *resp.status_mut() = StatusCode::PARTIAL_CONTENT;
            if let Ok(v) = HeaderValue::from_str(&format!("bytes {s}-{e}/{len}")) {
                resp.headers_mut().insert(header::CONTENT_RANGE, v);
            }
            (s, e - s + 1)
        }
        RangeReq::Unsatisfiable => {
            *resp.status_mut() = StatusCode::RANGE_NOT_SATISFIABLE;
            if let Ok(v) = HeaderValue::from_str(&format!("bytes */{len}")) {
                resp.headers_mut().insert(header::CONTENT_RANGE, v);
            }
            resp.headers_mut()
                .insert(header::CONTENT_LENGTH, HeaderValue::from(0u64));
            return resp;
        }
    };
    resp.headers_mut()
        .insert(header::CONTENT_LENGTH, HeaderValue::from(count));
    let delivery = Delivery {
        start,
        count,
        sent: 0,
        len,
        modified: meta.modified().ok(),
        complete: count == 0,
    };
    if head {
        return resp;
    }
    if count == 0 {
        if let Some(f) = on_end {
            f(delivery);
        }
        return resp;
    }
    if start > 0
        && let Err(e) = file.seek(io::SeekFrom::Start(start)).await
    {
        tracing::error!(file = %path.display(), error = %e, "cannot seek");
        return (StatusCode::INTERNAL_SERVER_ERROR, "cannot read file\n").into_response();
    }
    let stream = futures_util::stream::unfold((file, count), |(mut f, left)| async move {
        if left == 0 {
            return None;
        }
        let want = usize::try_from(left)
            .unwrap_or(CHUNK_BYTES)
            .min(CHUNK_BYTES);
        let mut buf = vec![0u8; want];
        match f.read(&mut buf).await {
            Ok(0) => Some((
                Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "file shrank while being served",
                )),
                (f, 0),
            )),
            Ok(n) => {
                buf.truncate(n);
                Some((Ok(Bytes::from(buf)), (f, left - n as u64)))
            }
            Err(e) => Some((Err(e), (f, 0))),
        }
    });
    *resp.body_mut() = Body::from_stream(Tracked {
        inner: Box::pin(stream),
        delivery,
        failed: false,
        on_end,
    });
    resp
}

/// IMF-fixdate (RFC 9110 §5.6.7) of `t`, e.g. `Sun, 06 Nov 1994 08:49:37 GMT`.
pub fn http_date(t: SystemTime) -> String {
    let secs = match t.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_secs() as i64,
        Err(e) => -(e.duration().as_secs() as i64),
    };
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    const WD: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
    const MON: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    format!(
        "{}, {:02} {} {:04} {:02}:{:02}:{:02} GMT",
        WD[(days + 4).rem_euclid(7) as usize],
        d,
        MON[(m - 1) as usize],
        y,
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// Gregorian (year, month 1–12, day 1–31) of a day count since 1970-01-01.
pub(crate) fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}
