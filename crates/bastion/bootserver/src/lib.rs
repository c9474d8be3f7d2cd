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
//! `?token=<token>`. Whether a body reached the host cannot be known from
//! the sending side (a client that reads 200 bytes and drops the connection
//! may find the whole file already handed to the kernel), so no transfer
//! spends the token: it stays valid for any number of fetches and retries
//! from the bootstrap's address until the bootstrap is seen running
//! ([`HttpState::bootstrap_seen_running`]: serve calls it when the load
//! balancer's health check passes on the bootstrap's machine-config server
//! or API) or until [`BOOTSTRAP_TOKEN_LIMIT`] after its first `GET`;
//! then it is spent, and [`HttpState::bootstrap_token`] says which of the
//! two spent it and when. `HEAD` is no fetch. Only answers to the bootstrap
//! host's own address carry the token in the PXE scripts, while it is
//! valid. Anything else gets 403 and
//! a `warn` line naming the client. The image
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
use std::time::{Duration, Instant, SystemTime};

use axum::Router;
use axum::body::Body;
use axum::extract::{ConnectInfo, Path as UrlPath, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use okd_hosts::{Inventory, Node, Role, normalize_mac};
use okd_secret::{ExposeSecret as _, Secret};
use sha2::{Digest, Sha256};
use tokio::net::TcpListener;

use okd_bastion::pxe;

mod counted;
mod files;

pub use files::{RangeReq, http_date, parse_range};
use files::{send_file, send_file_then};

/// Size of one chunk of a streamed file body, in bytes.
const CHUNK_BYTES: usize = 64 * 1024;

/// How long the one-time token of `bootstrap.ign` stays valid after the
/// bootstrap host's first `GET` with it when the bootstrap is not seen
/// running before ([`HttpState::bootstrap_seen_running`]): 30 minutes.
/// Long enough for a bootstrap that lost power mid-download to be booted
/// again (a PXE boot and the CoreOS install take minutes), short enough
/// that a token read off a disk or a console log is of no use for long;
/// once the bootstrap runs, its machine-config server or API passes the
/// load balancer's check within minutes of the fetch and spends the token
/// sooner. [`HttpState::with_bootstrap_token_limit`] sets another limit.
pub const BOOTSTRAP_TOKEN_LIMIT: Duration = Duration::from_secs(30 * 60);

/// Why the one-time token of `bootstrap.ign` was spent ([`TokenStatus::spent`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SpentBy {
    /// The bootstrap was seen running: this service of it (e.g.
    /// `"machine-config server"`, `"API"`) passed a health check.
    SeenRunning(String),
    /// [`TokenStatus::limit`] passed since the first fetch.
    TimeLimit,
}

/// What became of the one-time token of `bootstrap.ign`
/// ([`HttpState::bootstrap_token`]); never the token itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenStatus {
    /// The addresses it is valid from: the inventory's bootstrap hosts.
    pub clients: Vec<std::net::IpAddr>,
    /// When the bootstrap host first fetched `bootstrap.ign` with it (a
    /// `GET` that was answered); `None` before.
    pub first_fetch: Option<SystemTime>,
    /// How long after the first fetch it stays valid at most.
    pub limit: Duration,
    /// When and why it was spent; `None` while it is valid.
    pub spent: Option<(SystemTime, SpentBy)>,
}

/// One answered request whose body ended or broke off, for [`HttpObserver`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Served<'a> {
    /// The client's address (`0.0.0.0:0` when the router runs without
    /// connect info).
    pub peer: SocketAddr,
    /// The request path, without the query (so never a token).
    pub path: &'a str,
    /// The HTTP status code.
    pub status: u16,
    /// Body octets handed to the connection.
    pub sent: u64,
    /// Body octets announced in `Content-Length` (0 for `HEAD`), `None`
    /// when the length was not announced.
    pub size: Option<u64>,
    /// Whether the whole body went out: the body reached its end (or, with
    /// a known size, all `size` octets were handed over). False when the
    /// client went away or the transfer failed part way.
    pub complete: bool,
}

/// Told about every answered request, for the status page.
pub trait HttpObserver: Send + Sync {
    /// One request was answered and its body ended or was dropped (so a
    /// large download is told about when it is over, with the octets that
    /// actually went out).
    fn served(&self, served: Served<'_>);
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
    /// The one-time token and what of the file went out with it.
    token: Mutex<Option<OneTime>>,
    /// Set by [`HttpState::remove_bootstrap`]; never cleared.
    removed: AtomicBool,
}

/// The one-time token of `bootstrap.ign`, when it was first used and
/// whether it is spent, and the octets of the file that complete bodies
/// delivered with it (for the log only: a body handed to the connection may
/// still never reach the host, so delivery spends nothing).
#[derive(Debug, Default)]
struct OneTime {
    /// `Debug` shows `[REDACTED]`.
    token: Secret,
    /// [`BOOTSTRAP_TOKEN_LIMIT`] unless set otherwise.
    limit: Duration,
    /// The first `GET` answered with the token.
    first: Option<(Instant, SystemTime)>,
    /// When and why it was spent.
    spent: Option<(SystemTime, SpentBy)>,
    /// Whether complete bodies have delivered the whole file (logged once).
    whole: bool,
    /// Size and modification time of the file `covered` refers to.
    file: Option<(u64, Option<SystemTime>)>,
    /// Disjoint, sorted half-open octet ranges `[a, b)` delivered completely.
    covered: Vec<(u64, u64)>,
}

impl OneTime {
    /// Spends the token once [`OneTime::limit`] passed since the first
    /// fetch (at the first fetch's time plus the limit); returns whether
    /// it is spent.
    fn expire(&mut self) -> bool {
        if self.spent.is_none()
            && let Some((at, wall)) = self.first
            && at.elapsed() >= self.limit
        {
            self.spent = Some((wall + self.limit, SpentBy::TimeLimit));
            tracing::info!(
                "the one-time token of bootstrap.ign is spent: {} passed since its first fetch and the bootstrap was not seen running (its API or machine-config server passing the load balancer's check)",
                limit_words(self.limit)
            );
        }
        self.spent.is_some()
    }

    /// Adds a complete body of octets `start..start + count` of a file of
    /// `len` octets (modified at `modified`); returns whether every octet
    /// of the file has now gone out. Ranges of an earlier version of the
    /// file are forgotten.
    fn deliver(&mut self, start: u64, count: u64, len: u64, modified: Option<SystemTime>) -> bool {
        if self.file != Some((len, modified)) {
            self.file = Some((len, modified));
            self.covered.clear();
        }
        let (mut a, mut b) = (start, start.saturating_add(count).min(len));
        let mut merged = Vec::with_capacity(self.covered.len() + 1);
        for &(x, y) in &self.covered {
            if y < a || x > b {
                merged.push((x, y));
            } else {
                a = a.min(x);
                b = b.max(y);
            }
        }
        merged.push((a, b));
        merged.sort_unstable();
        self.covered = merged;
        self.covered.first() == Some(&(0, len))
    }
}

/// "30 min", "90 s", "2 h": a limit in words.
pub fn limit_words(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        _ if s >= 3600 && s.is_multiple_of(3600) => format!("{} h", s / 3600),
        _ if s >= 60 && s.is_multiple_of(60) => format!("{} min", s / 60),
        _ => format!("{s} s"),
    }
}

/// Why a `bootstrap.ign` request was refused (the 403 body and log line).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refusal {
    Removed,
    NotBootstrap,
    NoBootstrapHost,
    Token,
    /// Spent: the bootstrap was seen running.
    SpentRunning,
    /// Spent: the time limit after the first fetch passed.
    SpentTime,
}

impl Refusal {
    fn reason(self) -> &'static str {
        match self {
            Refusal::Removed => "the bootstrap was removed (serve remove-bootstrap)",
            Refusal::NotBootstrap => "the client is not the bootstrap host of the inventory",
            Refusal::NoBootstrapHost => "the inventory names no bootstrap host",
            Refusal::Token => "missing or wrong token",
            Refusal::SpentRunning => {
                "the one-time token is spent: the bootstrap was seen running (its API or machine-config server passed the load balancer's check)"
            }
            Refusal::SpentTime => {
                "the one-time token is spent: its time limit after the first fetch passed"
            }
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

    /// Requires `?token=<token>` on `bootstrap.ign` requests; it stays
    /// valid for any number of fetches from the bootstrap's address until
    /// [`HttpState::bootstrap_seen_running`] or [`BOOTSTRAP_TOKEN_LIMIT`]
    /// after the first `GET` (see the crate docs). The PXE scripts answered
    /// to the bootstrap host's address carry the token in
    /// `coreos.inst.ignition_url` while it is valid.
    pub fn with_bootstrap_token(self, token: impl Into<Secret>) -> HttpState {
        if let Ok(mut t) = self.bootstrap.token.lock() {
            *t = Some(OneTime {
                token: token.into(),
                limit: BOOTSTRAP_TOKEN_LIMIT,
                ..OneTime::default()
            });
        }
        self
    }

    /// Sets how long the one-time token stays valid after the first fetch
    /// (instead of [`BOOTSTRAP_TOKEN_LIMIT`]); no effect without a token.
    pub fn with_bootstrap_token_limit(self, limit: Duration) -> HttpState {
        if let Ok(mut t) = self.bootstrap.token.lock()
            && let Some(t) = t.as_mut()
        {
            t.limit = limit;
        }
        self
    }

    /// The bootstrap was seen running: `service` of it (e.g.
    /// `"machine-config server"`, `"API"`) passed a health check. Spends
    /// the one-time token, if one is set and still valid, and logs it;
    /// returns whether this call spent it.
    pub fn bootstrap_seen_running(&self, service: &str) -> bool {
        let Ok(mut guard) = self.bootstrap.token.lock() else {
            return false;
        };
        let Some(t) = guard.as_mut() else {
            return false;
        };
        if t.expire() {
            return false;
        }
        t.spent = Some((SystemTime::now(), SpentBy::SeenRunning(service.to_string())));
        tracing::info!(
            "the one-time token of bootstrap.ign is spent: the bootstrap's {service} passed the load balancer's check, so the bootstrap runs"
        );
        true
    }

    /// What became of the one-time token (when first used, whether and why
    /// spent); `None` without one. Spends it when its time limit passed.
    pub fn bootstrap_token(&self) -> Option<TokenStatus> {
        let mut guard = self.bootstrap.token.lock().ok()?;
        let t = guard.as_mut()?;
        t.expire();
        Some(TokenStatus {
            clients: self.bootstrap.allowed.clone(),
            first_fetch: t.first.map(|(_, wall)| wall),
            limit: t.limit,
            spent: t.spent.clone(),
        })
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

    /// Whether the one-time token is set and spent (see [`HttpState::bootstrap_token`]).
    pub fn bootstrap_token_used(&self) -> bool {
        self.bootstrap_token().is_some_and(|t| t.spent.is_some())
    }

    /// The unused one-time token, for the PXE scripts answered to `peer`:
    /// only when `peer` is a bootstrap host's address and bootstrap.ign is
    /// still served.
    fn token_for(&self, peer: Option<SocketAddr>) -> Option<Secret> {
        let ip = peer.map(|p| p.ip().to_canonical())?;
        if !self.bootstrap.allowed.contains(&ip) || !self.bootstrap_served() {
            return None;
        }
        let mut guard = self.bootstrap.token.lock().ok()?;
        let t = guard.as_mut()?;
        (!t.expire()).then(|| t.token.clone())
    }

    /// Checks a `bootstrap.ign` request from `peer` with `token`; a `GET`
    /// (`fetch`) let through starts the token's time limit.
    fn check_bootstrap(
        &self,
        peer: Option<SocketAddr>,
        token: Option<&str>,
        fetch: bool,
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
        let mut guard = self.bootstrap.token.lock().map_err(|_| Refusal::Token)?;
        let Some(t) = guard.as_mut() else {
            return Ok(());
        };
        let good =
            token.is_some_and(|g| same_secret(g.as_bytes(), t.token.expose_secret().as_bytes()));
        if !good {
            return Err(Refusal::Token);
        }
        t.expire();
        match &t.spent {
            Some((_, SpentBy::SeenRunning(_))) => Err(Refusal::SpentRunning),
            Some((_, SpentBy::TimeLimit)) => Err(Refusal::SpentTime),
            None => {
                if fetch && t.first.is_none() {
                    t.first = Some((Instant::now(), SystemTime::now()));
                }
                Ok(())
            }
        }
    }

    /// A `bootstrap.ign` body to `client` ended: logs what went out, and
    /// once when complete bodies have delivered the whole file with the
    /// one-time token (which spends nothing: the octets may sit in a
    /// kernel buffer of a host that lost power).
    fn bootstrap_delivered(&self, client: &str, d: files::Delivery) {
        let range = if d.count == d.len {
            String::new()
        } else {
            format!(
                " (octets {}-{})",
                d.start,
                (d.start + d.count).saturating_sub(1)
            )
        };
        if !d.complete {
            tracing::warn!(
                "bootstrap.ign to {client} broke off after {} of {} bytes{range}; the bootstrap host may retry",
                d.sent,
                d.count
            );
            return;
        }
        tracing::info!(
            "bootstrap.ign sent to {client}: {} of {} bytes{range}",
            d.sent,
            d.len
        );
        if let Ok(mut guard) = self.bootstrap.token.lock()
            && let Some(t) = guard.as_mut()
            && !t.whole
            && t.spent.is_none()
            && t.deliver(d.start, d.count, d.len, d.modified)
        {
            t.whole = true;
            tracing::info!(
                "the whole of bootstrap.ign went out; its one-time token stays valid for retries from the bootstrap's address until the bootstrap is seen running (its API or machine-config server passing the load balancer's check) or {} after the first fetch",
                limit_words(t.limit)
            );
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
                let size = if head {
                    Some(0)
                } else {
                    // Files announce Content-Length; text answers (PXE
                    // scripts, .sha256) are sized by their body.
                    resp.headers()
                        .get(header::CONTENT_LENGTH)
                        .and_then(|v| v.to_str().ok()?.parse().ok())
                        .or_else(|| axum::body::HttpBody::size_hint(resp.body()).exact())
                };
                let status = resp.status().as_u16();
                let (parts, body) = resp.into_parts();
                let report: counted::Report = Box::new(move |sent, complete| {
                    obs.served(Served {
                        peer,
                        path: &path,
                        status,
                        sent,
                        size,
                        complete,
                    });
                });
                Response::from_parts(parts, Body::new(counted::Counted::new(body, size, report)))
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
    let peer = peer_of(&ext);
    if let Err(why) = st.check_bootstrap(peer, q.get("token").map(String::as_str), !head) {
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
    let client = peer.map_or_else(|| "an unknown client".to_string(), |p| p.ip().to_string());
    let state = st.clone();
    let on_end: files::OnEnd = Box::new(move |d| state.bootstrap_delivered(&client, d));
    send_file_then(&path, &headers, head, "application/json", Some(on_end)).await
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

/// The client's address, when the router runs with connect info.
fn peer_of(ext: &axum::http::Extensions) -> Option<SocketAddr> {
    ext.get::<ConnectInfo<SocketAddr>>().map(|c| c.0)
}

async fn pxe_file(
    State(st): State<Arc<HttpState>>,
    UrlPath(file): UrlPath<String>,
    Query(q): Query<HashMap<String, String>>,
    ext: axum::http::Extensions,
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
    text(with_token(&st, node, peer_of(&ext), script))
}

/// Adds the unused one-time token to the bootstrap host's Ignition URL when
/// the script is answered to the bootstrap host's own address `peer`.
fn with_token(st: &HttpState, node: &Node, peer: Option<SocketAddr>, script: String) -> String {
    match st.token_for(peer) {
        Some(t) if node.role == Role::Bootstrap => script.replace(
            "/ignition/bootstrap.ign",
            &format!("/ignition/bootstrap.ign?token={}", t.expose_secret()),
        ),
        _ => script,
    }
}

async fn pxelinux_file(
    State(st): State<Arc<HttpState>>,
    UrlPath(file): UrlPath<String>,
    ext: axum::http::Extensions,
) -> Response {
    let Some(mac) = file.strip_prefix("01-") else {
        return not_found();
    };
    match node_by_mac(&st, Some(mac)) {
        Ok(n) => text(with_token(
            &st,
            n,
            peer_of(&ext),
            pxe::pxelinux_cfg(&st.inv, n),
        )),
        Err(r) => r,
    }
}

#[cfg(test)]
mod tests;
