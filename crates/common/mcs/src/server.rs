//! HTTP routes and listeners (openshift/machine-config-operator `pkg/server/api.go`,
//! `cmd/machine-config-server/`).

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::Response;
use axum::routing::any;

use crate::McsError;
use crate::accept::negotiate;
use crate::state::McsState;

/// Where a bootstrap's machine-config server serves its okd-install
/// program, when given one ([`McsState::set_node_program`]): `GET`/`HEAD`,
/// `application/octet-stream`, streamed from the file; 404 without one.
pub const NODE_PROGRAM_ROUTE: &str = "/okd-install/node-program";

/// Told about every `/config/<pool>` request, e.g. by a status page.
pub trait FetchObserver: Send + Sync {
    /// `peer` asked for `pool`; `spec` is the served spec version
    /// (`"3.2.0"`, empty when none was chosen) and `status` the HTTP status.
    fn fetched(&self, peer: SocketAddr, pool: &str, spec: &str, status: u16);
}

#[derive(Clone)]
struct AppState {
    state: Arc<McsState>,
    observer: Option<Arc<dyn FetchObserver>>,
}

/// The machine-config server's routes:
/// - `GET`/`HEAD /config/<pool>` (pool = last path element, trailing `/`
///   ignored, like Go's `path.Base`): 200,
///   `Content-Type: application/json`, `Content-Length`, the pool's
///   rendered config in the spec the Accept header asks for
///   ([`crate::negotiate`]); `HEAD` sends the headers only. Unknown pool 404;
///   unsupported Accept version 400 (`unsupported Ignition version in Accept
///   header`); a config the spec cannot express 500; other methods 405 with
///   `Content-Length: 0`.
/// - `GET`/`HEAD /healthz`: 200, empty body; other methods 405.
/// - anything else: 404 for `GET`/`HEAD`, 405 for other methods.
///
/// Every config request is logged at info level as
/// `Pool "<p>" requested by address:"<ip:port>" User-Agent:"<ua>" Accept-Header: "<accept>"`
/// and reported to `observer`. Needs the peer address as
/// `ConnectInfo<SocketAddr>` (as [`serve`] gives it,
/// through [`okd_listen::serve_router`]).
pub fn router(state: Arc<McsState>, observer: Option<Arc<dyn FetchObserver>>) -> Router {
    Router::new()
        .route("/healthz", any(healthz))
        .route("/config/{*rest}", any(config))
        .route(NODE_PROGRAM_ROUTE, any(node_program))
        .fallback(not_found)
        .with_state(AppState { state, observer })
}

fn empty(status: StatusCode) -> Response {
    let mut r = Response::new(Body::empty());
    *r.status_mut() = status;
    r.headers_mut()
        .insert(header::CONTENT_LENGTH, HeaderValue::from_static("0"));
    r
}

fn text(status: StatusCode, msg: &str, head: bool) -> Response {
    let body = format!("{msg}\n");
    let len = body.len();
    let mut r = Response::new(if head {
        Body::empty()
    } else {
        Body::from(body)
    });
    *r.status_mut() = status;
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(len));
    r
}

async fn not_found(method: Method) -> Response {
    if method == Method::GET || method == Method::HEAD {
        text(StatusCode::NOT_FOUND, "404 page not found", false)
    } else {
        empty(StatusCode::METHOD_NOT_ALLOWED)
    }
}

async fn healthz(method: Method) -> Response {
    if method == Method::GET || method == Method::HEAD {
        empty(StatusCode::OK)
    } else {
        empty(StatusCode::METHOD_NOT_ALLOWED)
    }
}

async fn node_program(
    State(app): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    method: Method,
) -> Response {
    let head = method == Method::HEAD;
    if !head && method != Method::GET {
        return empty(StatusCode::METHOD_NOT_ALLOWED);
    }
    let Some(path) = app.state.node_program() else {
        return text(StatusCode::NOT_FOUND, "404 page not found", head);
    };
    let opened = async {
        let f = tokio::fs::File::open(path).await?;
        let len = f.metadata().await?.len();
        Ok::<_, std::io::Error>((f, len))
    };
    let (file, len) = match opened.await {
        Ok(v) => v,
        Err(e) => {
            tracing::error!("cannot serve the node program {}: {e}", path.display());
            return text(
                StatusCode::INTERNAL_SERVER_ERROR,
                "node program unreadable",
                head,
            );
        }
    };
    tracing::info!("node program ({len} bytes) requested by address:\"{peer}\"");
    // Streamed in 256 KiB reads: the program is tens of MiB.
    let body = if head {
        Body::empty()
    } else {
        let stream = futures_util::stream::unfold(file, |mut f| async move {
            use tokio::io::AsyncReadExt as _;
            let mut buf = vec![0u8; 256 * 1024];
            match f.read(&mut buf).await {
                Ok(0) => None,
                Ok(n) => {
                    buf.truncate(n);
                    Some((Ok::<_, std::io::Error>(axum::body::Bytes::from(buf)), f))
                }
                Err(e) => Some((Err(e), f)),
            }
        });
        Body::from_stream(stream)
    };
    let mut r = Response::new(body);
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(len));
    r
}

fn header_str(h: &HeaderMap, name: header::HeaderName) -> Option<&str> {
    h.get(name).and_then(|v| v.to_str().ok())
}

async fn config(
    State(app): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    req: Request,
) -> Response {
    let method = req.method().clone();
    // Go's path.Base: the last element, trailing slashes ignored.
    let pool = req
        .uri()
        .path()
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap_or("")
        .to_string();
    let h = req.headers();
    let ua = header_str(h, header::USER_AGENT).unwrap_or("");
    let accept = header_str(h, header::ACCEPT);
    tracing::info!(
        "Pool \"{pool}\" requested by address:\"{peer}\" User-Agent:\"{ua}\" Accept-Header: \"{}\"",
        accept.unwrap_or("")
    );
    let (resp, spec) = respond(&app.state, &method, &pool, accept);
    if let Some(o) = &app.observer {
        o.fetched(peer, &pool, spec, resp.status().as_u16());
    }
    resp
}

fn respond(
    state: &McsState,
    method: &Method,
    pool: &str,
    accept: Option<&str>,
) -> (Response, &'static str) {
    let head = *method == Method::HEAD;
    if !head && *method != Method::GET {
        return (empty(StatusCode::METHOD_NOT_ALLOWED), "");
    }
    if state.pool(pool).is_none() {
        tracing::info!("pool {pool:?} not found");
        return (text(StatusCode::NOT_FOUND, "pool not found", head), "");
    }
    let spec = match negotiate(accept) {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!("{e}");
            return (
                text(
                    StatusCode::BAD_REQUEST,
                    "unsupported Ignition version in Accept header",
                    head,
                ),
                "",
            );
        }
    };
    match state.shared_body(pool, spec) {
        Some(Ok(body)) => {
            let mut r = Response::new(if head {
                Body::empty()
            } else {
                Body::from(body.clone())
            });
            let hm = r.headers_mut();
            hm.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            hm.insert(header::CONTENT_LENGTH, HeaderValue::from(body.len()));
            (r, spec.as_str())
        }
        Some(Err(msg)) => {
            tracing::error!("couldn't serve pool {pool:?} as spec {spec}: {msg}");
            (
                text(StatusCode::INTERNAL_SERVER_ERROR, msg, head),
                spec.as_str(),
            )
        }
        None => (text(StatusCode::NOT_FOUND, "pool not found", head), ""),
    }
}

/// Binds a TCP listener on `addr` (use port 0 for an ephemeral port).
///
/// # Errors
/// [`McsError::Bind`], displayed as
/// `cannot listen on 127.0.0.1:22623: address already in use`.
pub fn bind(addr: SocketAddr) -> Result<std::net::TcpListener, McsError> {
    std::net::TcpListener::bind(addr).map_err(|source| McsError::Bind { addr, source })
}

/// Builds the rustls server config: the given PEM chain and key, TLS 1.2 and
/// 1.3 only, ALPN `http/1.1` only (the MCS disables HTTP/2).
///
/// # Errors
/// [`McsError::Tls`] when the PEM data or the key is unusable.
pub fn tls_config(cert_pem: &[u8], key_pem: &[u8]) -> Result<rustls::ServerConfig, McsError> {
    use rustls_pki_types::pem::PemObject;
    use rustls_pki_types::{CertificateDer, PrivateKeyDer};
    let tls = |reason: String| McsError::Tls { reason };
    let certs = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| tls(format!("certificate: {e}")))?;
    if certs.is_empty() {
        return Err(tls("no certificate in PEM data".into()));
    }
    let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| tls(format!("key: {e}")))?;
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut cfg = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .map_err(|e| tls(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| tls(e.to_string()))?;
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(cfg)
}

/// How the machine-config server speaks on a listener.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// HTTPS with the state's TLS pair ([`tls_config`]); the real MCS's
    /// port 22623.
    Tls,
    /// Plain HTTP; the real MCS's port 22624.
    Plain,
}

/// Serves [`router`] on `listener` over `transport` with connection
/// `limits` (caps, idle timeout, and `header_read` for the TLS handshake and
/// each request head, [`okd_listen::serve_router`]) until `shutdown`
/// completes, then drains connections for at most 5 s.
///
/// # Errors
/// [`McsError::Tls`] for a bad TLS pair, [`McsError::Serve`] when the
/// listener cannot be used.
pub async fn serve(
    listener: std::net::TcpListener,
    state: Arc<McsState>,
    observer: Option<Arc<dyn FetchObserver>>,
    transport: Transport,
    limits: okd_listen::Limits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), McsError> {
    let tls = match transport {
        Transport::Tls => Some(Arc::new(tls_config(
            &state.inputs().tls_cert_pem,
            &state.inputs().tls_key_pem,
        )?)),
        Transport::Plain => None,
    };
    let listener = okd_listen::Listener::from_std(listener, limits).map_err(serve_err)?;
    okd_listen::serve_router(listener, router(state, observer), tls, shutdown).await;
    Ok(())
}

/// [`serve`] over [`Transport::Tls`] with the default
/// [`okd_listen::Limits`].
///
/// # Errors
/// As [`serve`].
pub async fn serve_tls(
    listener: std::net::TcpListener,
    state: Arc<McsState>,
    observer: Option<Arc<dyn FetchObserver>>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), McsError> {
    let limits = okd_listen::Limits::default();
    serve(listener, state, observer, Transport::Tls, limits, shutdown).await
}

fn serve_err(source: std::io::Error) -> McsError {
    McsError::Serve { source }
}
