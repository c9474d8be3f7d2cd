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
use std::time::SystemTime;

use axum::Router;
use axum::body::Body;
use axum::extract::{ConnectInfo, Path as UrlPath, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use okd_hosts::{Inventory, Node, Role, normalize_mac};
use sha2::{Digest, Sha256};
use tokio::net::TcpListener;

use okd_bastion::pxe;

mod files;

use files::send_file;
pub use files::{RangeReq, http_date, parse_range};

/// Size of one chunk of a streamed file body, in bytes.
const CHUNK_BYTES: usize = 64 * 1024;

/// Told about every answered request, for the status page.
pub trait HttpObserver: Send + Sync {
    /// One request was answered: `peer` is the client's address (or
    /// `0.0.0.0:0` when the router runs without connect info), `path` the
    /// request path without query, `status` the HTTP status code, `bytes` the
    /// body length: announced in `Content-Length`, else the exact size of a
    /// body built in memory (a PXE script); 0 for `HEAD` and for bodies of
    /// unknown length.
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
                    // Files announce Content-Length; text answers (PXE
                    // scripts, .sha256) are sized by their body.
                    resp.headers()
                        .get(header::CONTENT_LENGTH)
                        .and_then(|v| v.to_str().ok()?.parse().ok())
                        .or_else(|| axum::body::HttpBody::size_hint(resp.body()).exact())
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
    use crate::files::civil_from_days;
    use std::time::UNIX_EPOCH;

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
