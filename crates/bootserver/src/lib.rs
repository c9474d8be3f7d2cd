//! The boot server: the bastion's HTTP server of `okd-install serve` (port
//! 8080 by default) for Ignition files, CoreOS images and per-host
//! network-boot scripts. The scripts' text and the kernel arguments come from
//! [`okd_bastion`]'s generators; this crate only serves them.
//!
//! Routes (all `GET` and `HEAD`):
//!
//! | path | answer |
//! | --- | --- |
//! | `/ignition/{master,worker}.ign` | `<asset dir>/<role>.ign`, 404 if absent |
//! | `/ignition/bootstrap.ign` | `<asset dir>/bootstrap.ign`, only to the bootstrap host (see below) |
//! | `/install/<file>`, `/images/<file>` | `<asset dir>/<os_images.directory>/<file>`, streamed, one `Range` |
//! | `/install/<file>.sha256`, `/images/<file>.sha256` | the file on disk if it exists, else `<hex>  <file>\n` computed once per (size, mtime) |
//! | `/pxe/boot.ipxe` | iPXE script chaining to `/pxe/ipxe?mac=${net0/mac}` |
//! | `/pxe/ipxe?mac=<mac>`, `/pxe/<mac>.ipxe` | the host's iPXE script |
//! | `/pxe/grub?mac=<mac>`, `/pxe/grub.cfg-01-<mac-with-dashes>` | the host's GRUB 2 config |
//! | `/pxe/pxelinux?mac=<mac>`, `/pxe/pxelinux.cfg/01-<mac-with-dashes>` | the host's pxelinux config |
//!
//! Files are served with `Accept-Ranges: bytes`, `Content-Length` and
//! `Last-Modified`; a single `Range: bytes=a-b | a- | -n` gives `206` with
//! `Content-Range` (RFC 9110 §14), an unsatisfiable one `416` with
//! `Content-Range: bytes */<size>`, several ranges or a malformed header the
//! whole file (which RFC 9110 allows). File names are one path segment without
//! `/`, `\`, NUL and not `.`/`..`, so nothing outside the two directories can
//! be reached; anything else is 404. Unknown MACs are 404 with a `warn` log
//! line naming the MAC; malformed MACs are 400.
//!
//! `bootstrap.ign` carries every private key of the cluster, the admin
//! kubeconfig and the pull secret, so it is answered only to a client whose
//! address is the bootstrap host's in the inventory (`bastion-config.yaml`
//! `bootstrap`), only until [`HttpState::remove_bootstrap`], and, when a
//! one-time token is set ([`HttpState::with_bootstrap_token`]), only with
//! `?token=<token>`, which the first complete `GET` answered 200 uses up.
//! Anything else gets 403 and a `warn` line naming the client. The image
//! routes never answer dotfiles or `*.ign` files, so the state file,
//! `auth/` and the Ignition configs cannot be reached through them even when
//! `osImages.directory` is misconfigured.

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, Path as UrlPath, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use okd_hosts::{Inventory, Node, Role, normalize_mac};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncSeekExt};
use tokio::net::TcpListener;

use okd_bastion::pxe;

/// Size of one chunk of a streamed file body, in bytes.
const CHUNK_BYTES: usize = 64 * 1024;

/// Told about every answered request, for the status page.
pub trait HttpObserver: Send + Sync {
    /// One request was answered: `peer` is the client's address (or
    /// `0.0.0.0:0` when the router runs without connect info), `path` the
    /// request path without query, `status` the HTTP status code, `bytes` the
    /// body length announced in `Content-Length` (0 for `HEAD` and for bodies
    /// of unknown length).
    fn served(&self, peer: SocketAddr, path: &str, status: u16, bytes: u64);
}

/// Errors of the HTTP server's set-up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HttpError {
    /// The listening socket could not be bound, e.g.
    /// `cannot listen on 0.0.0.0:8080: address already in use`.
    #[error("cannot listen on {addr}: {reason}")]
    Bind {
        /// The address and port asked for.
        addr: SocketAddr,
        /// Short lowercase reason derived from the I/O error kind.
        reason: String,
        /// The I/O error.
        error: io::Error,
    },
}

/// Key of a cached digest: file path, size in bytes and modification time,
/// so a replaced image is hashed again.
type SumKey = (PathBuf, u64, Option<SystemTime>);

/// What the HTTP handlers share: the asset directory, the inventory and the
/// cache of SHA-256 digests.
pub struct HttpState {
    asset_dir: PathBuf,
    inv: Inventory,
    sums: Mutex<HashMap<SumKey, Arc<tokio::sync::OnceCell<String>>>>,
    bootstrap: BootstrapAccess,
}

/// Who may fetch `bootstrap.ign`: the bootstrap hosts' addresses, an optional
/// one-time token, and whether the bootstrap was removed.
#[derive(Debug, Default)]
struct BootstrapAccess {
    /// Addresses of the inventory's bootstrap hosts.
    allowed: Vec<std::net::IpAddr>,
    /// The one-time token while it is unused; `Some("")` once used.
    token: Mutex<Option<String>>,
    /// Set by [`HttpState::remove_bootstrap`]; never cleared.
    removed: AtomicBool,
}

/// Why a `bootstrap.ign` request was refused (the 403 body and log line).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refusal {
    Removed,
    NotBootstrap,
    NoBootstrapHost,
    Token,
    TokenUsed,
}

impl Refusal {
    fn reason(self) -> &'static str {
        match self {
            Refusal::Removed => "the bootstrap was removed (serve remove-bootstrap)",
            Refusal::NotBootstrap => "the client is not the bootstrap host of the inventory",
            Refusal::NoBootstrapHost => "the inventory names no bootstrap host",
            Refusal::Token => "missing or wrong token",
            Refusal::TokenUsed => "the one-time token was already used",
        }
    }
}

/// Compares two byte strings in time independent of where they differ.
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

impl std::fmt::Debug for HttpState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpState")
            .field("asset_dir", &self.asset_dir)
            .field("cluster_domain", &self.inv.cluster_domain)
            .finish_non_exhaustive()
    }
}

impl HttpState {
    /// State serving `asset_dir` (where `openshift-install`/`okd-install`
    /// wrote `bootstrap.ign`, `master.ign`, `worker.ign`, and under which
    /// `inv.os_images.directory` holds the images) for the hosts of `inv`.
    /// Nothing is read until requests come.
    pub fn new(asset_dir: impl Into<PathBuf>, inv: Inventory) -> HttpState {
        let allowed = inv.role(Role::Bootstrap).map(|n| n.address).collect();
        HttpState {
            asset_dir: asset_dir.into(),
            inv,
            sums: Mutex::new(HashMap::new()),
            bootstrap: BootstrapAccess {
                allowed,
                ..BootstrapAccess::default()
            },
        }
    }

    /// Requires `?token=<token>` on `bootstrap.ign` requests; the first
    /// complete `GET` answered 200 uses it up. The bootstrap host's PXE
    /// scripts carry the token in `coreos.inst.ignition_url`.
    pub fn with_bootstrap_token(self, token: impl Into<String>) -> HttpState {
        if let Ok(mut t) = self.bootstrap.token.lock() {
            *t = Some(token.into());
        }
        self
    }

    /// Stops serving `bootstrap.ign` for good (after bootstrap-complete).
    /// Returns whether it was still served before this call.
    pub fn remove_bootstrap(&self) -> bool {
        !self.bootstrap.removed.swap(true, Ordering::SeqCst)
    }

    /// Whether `bootstrap.ign` is still served (to the bootstrap host).
    pub fn bootstrap_served(&self) -> bool {
        !self.bootstrap.removed.load(Ordering::SeqCst)
    }

    /// The addresses `bootstrap.ign` is served to: the inventory's bootstrap hosts.
    pub fn bootstrap_clients(&self) -> &[std::net::IpAddr] {
        &self.bootstrap.allowed
    }

    /// Whether a one-time token guards `bootstrap.ign`.
    pub fn bootstrap_token_required(&self) -> bool {
        self.bootstrap
            .token
            .lock()
            .map(|t| t.is_some())
            .unwrap_or(true)
    }

    /// The unused one-time token, for the bootstrap host's PXE scripts.
    fn unused_token(&self) -> Option<String> {
        self.bootstrap
            .token
            .lock()
            .ok()
            .and_then(|t| t.clone())
            .filter(|t| !t.is_empty())
    }

    /// Checks a `bootstrap.ign` request from `peer` with `token`.
    fn check_bootstrap(
        &self,
        peer: Option<SocketAddr>,
        token: Option<&str>,
    ) -> Result<(), Refusal> {
        if self.bootstrap.removed.load(Ordering::SeqCst) {
            return Err(Refusal::Removed);
        }
        if self.bootstrap.allowed.is_empty() {
            return Err(Refusal::NoBootstrapHost);
        }
        let ip = peer.map(|p| p.ip().to_canonical());
        if !ip.is_some_and(|ip| self.bootstrap.allowed.contains(&ip)) {
            return Err(Refusal::NotBootstrap);
        }
        let guard = self.bootstrap.token.lock().map_err(|_| Refusal::Token)?;
        match guard.as_deref() {
            None => Ok(()),
            Some("") => Err(Refusal::TokenUsed),
            Some(t) if token.is_some_and(|g| same_secret(g.as_bytes(), t.as_bytes())) => Ok(()),
            Some(_) => Err(Refusal::Token),
        }
    }

    /// Uses up the one-time token after a complete 200 `GET`.
    fn use_token(&self) {
        if let Ok(mut t) = self.bootstrap.token.lock()
            && t.is_some()
        {
            *t = Some(String::new());
        }
    }

    /// The asset directory.
    pub fn asset_dir(&self) -> &Path {
        &self.asset_dir
    }

    /// `<asset dir>/<os_images.directory>`, served under `/images/` and `/install/`.
    pub fn images_dir(&self) -> PathBuf {
        self.asset_dir.join(&self.inv.os_images.directory)
    }

    /// The inventory the PXE scripts are made from.
    pub fn inventory(&self) -> &Inventory {
        &self.inv
    }

    /// The SHA-256 of `path` (lowercase hex), computed on a blocking thread
    /// in 1 MiB reads and cached per (path, size, mtime); concurrent callers
    /// for the same file wait for one computation.
    async fn sha256(&self, path: &Path, len: u64, mtime: Option<SystemTime>) -> io::Result<String> {
        let cell = {
            let mut sums = self.sums.lock().unwrap_or_else(|p| p.into_inner());
            sums.entry((path.to_path_buf(), len, mtime))
                .or_default()
                .clone()
        };
        let path = path.to_path_buf();
        cell.get_or_try_init(|| async move {
            tokio::task::spawn_blocking(move || hash_file(&path))
                .await
                .map_err(io::Error::other)?
        })
        .await
        .cloned()
    }
}

fn hash_file(path: &Path) -> io::Result<String> {
    use std::io::Read;
    let mut f = std::fs::File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hex(&hasher.finalize()))
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// The HTTP router of the bastion (routes in the module docs). With an
/// `observer`, every answered request is reported to it; the peer address
/// is known when the router is served with connect info (as [`serve`] does).
pub fn router(state: Arc<HttpState>, observer: Option<Arc<dyn HttpObserver>>) -> Router {
    let r = Router::new()
        .route("/ignition/{file}", get(ignition))
        .route("/install/{file}", get(image))
        .route("/images/{file}", get(image))
        .route("/pxe/{file}", get(pxe_file))
        .route("/pxe/pxelinux.cfg/{file}", get(pxelinux_file))
        .fallback(|| async { not_found() })
        .with_state(state);
    match observer {
        None => r,
        Some(obs) => r.layer(middleware::from_fn(move |req: Request, next: Next| {
            let obs = obs.clone();
            async move {
                let peer = req
                    .extensions()
                    .get::<ConnectInfo<SocketAddr>>()
                    .map(|c| c.0)
                    .unwrap_or_else(|| SocketAddr::from(([0, 0, 0, 0], 0)));
                let path = req.uri().path().to_string();
                let head = req.method() == Method::HEAD;
                let resp = next.run(req).await;
                let bytes = if head {
                    0
                } else {
                    resp.headers()
                        .get(header::CONTENT_LENGTH)
                        .and_then(|v| v.to_str().ok()?.parse().ok())
                        .unwrap_or(0)
                };
                obs.served(peer, &path, resp.status().as_u16(), bytes);
                resp
            }
        })),
    }
}

/// Binds `addr` for [`serve`]; the error names the address and port
/// (`cannot listen on 0.0.0.0:8080: address already in use`).
pub async fn bind(addr: SocketAddr) -> Result<TcpListener, HttpError> {
    TcpListener::bind(addr)
        .await
        .map_err(|error| HttpError::Bind {
            addr,
            reason: bind_reason(&error),
            error,
        })
}

fn bind_reason(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::AddrInUse => "address already in use".into(),
        io::ErrorKind::AddrNotAvailable => "address not available on this host".into(),
        io::ErrorKind::PermissionDenied => {
            "permission denied (ports below 1024 need root or CAP_NET_BIND_SERVICE)".into()
        }
        _ => e.to_string(),
    }
}

/// Serves `router` on `listener` (with the peer address available to the
/// observer) with the default [`okd_listen::Limits`] until `shutdown`
/// completes, then lets in-flight requests finish (at most 5 s).
/// Errors: registering the listener with the runtime.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    serve_with_limits(listener, router, okd_listen::Limits::default(), shutdown).await
}

/// [`serve`] with explicit connection caps and timeouts: at most
/// `limits.max_connections` connections, `limits.max_per_client` from one
/// address, each request head within `limits.header_read`, no connection
/// idle longer than `limits.idle`, so slow or idle clients cannot exhaust
/// the server.
/// Errors: registering the listener with the runtime.
pub async fn serve_with_limits(
    listener: TcpListener,
    router: Router,
    limits: okd_listen::Limits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    let listener = okd_listen::Listener::new(listener, limits);
    okd_listen::serve_router(listener, router, None, shutdown).await;
    Ok(())
}

fn not_found() -> Response {
    (StatusCode::NOT_FOUND, "not found\n").into_response()
}

fn text(body: String) -> Response {
    ([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], body).into_response()
}

/// One safe path segment: no separators, NUL, `.` or `..`.
fn safe_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\\', '\0'])
}

async fn ignition(
    State(st): State<Arc<HttpState>>,
    UrlPath(file): UrlPath<String>,
    Query(q): Query<HashMap<String, String>>,
    method: Method,
    headers: HeaderMap,
    ext: axum::http::Extensions,
) -> Response {
    if !matches!(file.as_str(), "bootstrap.ign" | "master.ign" | "worker.ign") {
        return not_found();
    }
    let head = method == Method::HEAD;
    let path = st.asset_dir.join(&file);
    if file != "bootstrap.ign" {
        return send_file(&path, &headers, head, "application/json").await;
    }
    let peer = ext.get::<ConnectInfo<SocketAddr>>().map(|c| c.0);
    if let Err(why) = st.check_bootstrap(peer, q.get("token").map(String::as_str)) {
        let client = peer.map_or_else(|| "an unknown client".to_string(), |p| p.ip().to_string());
        tracing::warn!(
            "bootstrap.ign was requested by {client}, refused: {}",
            why.reason()
        );
        return (
            StatusCode::FORBIDDEN,
            format!("bootstrap.ign refused: {}\n", why.reason()),
        )
            .into_response();
    }
    let resp = send_file(&path, &headers, head, "application/json").await;
    if !head && resp.status() == StatusCode::OK {
        st.use_token();
    }
    resp
}

async fn image(
    State(st): State<Arc<HttpState>>,
    UrlPath(file): UrlPath<String>,
    method: Method,
    headers: HeaderMap,
) -> Response {
    if !safe_name(&file) || !servable_image(&file) {
        return not_found();
    }
    let dir = st.images_dir();
    let path = dir.join(&file);
    let head = method == Method::HEAD;
    if let Some(base) = file.strip_suffix(".sha256")
        && !base.is_empty()
        && !is_file(&path).await
    {
        let target = dir.join(base);
        let Ok(meta) = tokio::fs::metadata(&target).await else {
            return not_found();
        };
        if !meta.is_file() {
            return not_found();
        }
        return match st.sha256(&target, meta.len(), meta.modified().ok()).await {
            Ok(sum) => {
                let body = format!("{sum}  {base}\n");
                let mut resp = text(body.clone());
                if head {
                    *resp.body_mut() = Body::empty();
                    resp.headers_mut()
                        .insert(header::CONTENT_LENGTH, HeaderValue::from(body.len()));
                }
                resp
            }
            Err(e) => {
                tracing::error!(file = %target.display(), error = %e, "cannot hash file");
                (StatusCode::INTERNAL_SERVER_ERROR, "cannot read file\n").into_response()
            }
        };
    }
    send_file(&path, &headers, head, "application/octet-stream").await
}

/// Whether an image route may answer `file`: never a dotfile (the state
/// file, `.openshift_install.log`, the control socket) nor an Ignition config,
/// also not as `<file>.sha256`.
fn servable_image(file: &str) -> bool {
    let base = file.strip_suffix(".sha256").unwrap_or(file);
    !file.starts_with('.') && !base.ends_with(".ign") && !file.ends_with(".ign")
}

async fn is_file(p: &Path) -> bool {
    tokio::fs::metadata(p)
        .await
        .map(|m| m.is_file())
        .unwrap_or(false)
}

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

/// Streams `path` (or the asked range of it) without reading it whole.
async fn send_file(path: &Path, headers: &HeaderMap, head: bool, content_type: &str) -> Response {
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
    if head || count == 0 {
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
    *resp.body_mut() = Body::from_stream(stream);
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

/// Finds the node of a MAC given in a request, or the error response:
/// 400 for a malformed MAC, 404 plus a warn line naming it for an unknown one.
#[allow(clippy::result_large_err)]
fn node_by_mac<'a>(st: &'a HttpState, mac: Option<&str>) -> Result<&'a Node, Response> {
    let Some(raw) = mac else {
        return Err((StatusCode::BAD_REQUEST, "missing mac= parameter\n").into_response());
    };
    let Some(mac) = normalize_mac(raw) else {
        tracing::warn!(mac = raw, "PXE request with a malformed MAC address");
        return Err((StatusCode::BAD_REQUEST, "not a MAC address\n").into_response());
    };
    match st.inv.by_mac(&mac) {
        Some(n) => Ok(n),
        None => {
            tracing::warn!(
                "no host with MAC {mac} in {}/{}",
                okd_hosts::AGENT_CONFIG_FILE,
                okd_hosts::BASTION_CONFIG_FILE
            );
            Err(not_found())
        }
    }
}

async fn pxe_file(
    State(st): State<Arc<HttpState>>,
    UrlPath(file): UrlPath<String>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let qmac = q.get("mac").map(String::as_str);
    let (kind, mac) = match file.as_str() {
        "boot.ipxe" | "boot.ipxe.0" => return text(pxe::ipxe_chain_script(&st.inv)),
        "ipxe" => ("ipxe", qmac),
        "grub" => ("grub", qmac),
        "pxelinux" => ("pxelinux", qmac),
        f => {
            if let Some(m) = f.strip_suffix(".ipxe") {
                ("ipxe", Some(m))
            } else if let Some(m) = f.strip_prefix("grub.cfg-01-") {
                ("grub", Some(m))
            } else {
                return not_found();
            }
        }
    };
    let node = match node_by_mac(&st, mac) {
        Ok(n) => n,
        Err(r) => return r,
    };
    let script = match kind {
        "ipxe" => pxe::ipxe_script(&st.inv, node),
        "grub" => pxe::grub_cfg(&st.inv, node),
        _ => pxe::pxelinux_cfg(&st.inv, node),
    };
    text(with_token(&st, node, script))
}

/// Adds the unused one-time token to the bootstrap host's Ignition URL.
fn with_token(st: &HttpState, node: &Node, script: String) -> String {
    match st.unused_token() {
        Some(t) if node.role == Role::Bootstrap => script.replace(
            "/ignition/bootstrap.ign",
            &format!("/ignition/bootstrap.ign?token={t}"),
        ),
        _ => script,
    }
}

async fn pxelinux_file(
    State(st): State<Arc<HttpState>>,
    UrlPath(file): UrlPath<String>,
) -> Response {
    let Some(mac) = file.strip_prefix("01-") else {
        return not_found();
    };
    match node_by_mac(&st, Some(mac)) {
        Ok(n) => text(with_token(&st, n, pxe::pxelinux_cfg(&st.inv, n))),
        Err(r) => r,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges() {
        let h = |s: &str| HeaderValue::from_str(s).unwrap();
        assert_eq!(parse_range(None, 10), RangeReq::Full);
        assert_eq!(parse_range(Some(&h("bytes=0-4")), 10), RangeReq::Part(0, 4));
        assert_eq!(parse_range(Some(&h("bytes=5-")), 10), RangeReq::Part(5, 9));
        assert_eq!(parse_range(Some(&h("bytes=-3")), 10), RangeReq::Part(7, 9));
        assert_eq!(parse_range(Some(&h("bytes=-30")), 10), RangeReq::Part(0, 9));
        assert_eq!(
            parse_range(Some(&h("bytes=8-100")), 10),
            RangeReq::Part(8, 9)
        );
        assert_eq!(
            parse_range(Some(&h("bytes=10-")), 10),
            RangeReq::Unsatisfiable
        );
        assert_eq!(
            parse_range(Some(&h("bytes=-0")), 10),
            RangeReq::Unsatisfiable
        );
        assert_eq!(parse_range(Some(&h("bytes=4-2")), 10), RangeReq::Full);
        assert_eq!(parse_range(Some(&h("bytes=0-1,4-5")), 10), RangeReq::Full);
        assert_eq!(parse_range(Some(&h("items=0-1")), 10), RangeReq::Full);
        assert_eq!(parse_range(Some(&h("bytes=x-1")), 10), RangeReq::Full);
    }

    #[test]
    fn dates() {
        let t = UNIX_EPOCH + std::time::Duration::from_secs(784_111_777);
        assert_eq!(http_date(t), "Sun, 06 Nov 1994 08:49:37 GMT");
        assert_eq!(http_date(UNIX_EPOCH), "Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(civil_from_days(19_782), (2024, 2, 29));
    }

    #[test]
    fn names() {
        assert!(safe_name("coreos.raw.xz"));
        for bad in ["", ".", "..", "../x", "a/b", "a\\b", "a\0"] {
            assert!(!safe_name(bad), "{bad:?}");
        }
    }
}
