//! An axum `Router` served over HTTP/1.1 from a guarded [`Listener`].

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::{GracefulShutdown, Watcher};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::task::JoinSet;
use tower_service::Service;

use crate::Listener;

/// How long connections may finish their requests after shutdown began.
const DRAIN: Duration = Duration::from_secs(5);

/// Serves `router` on `listener` over HTTP/1.1 until `shutdown` completes,
/// then stops accepting, lets open requests finish for at most 5 s and
/// closes every connection.
///
/// With `tls`, each connection first completes a TLS handshake with that
/// config (ALPN as the config says; only HTTP/1.1 is spoken). Limits: the
/// listener's caps and idle timeout ([`crate::Conn`]); the TLS handshake
/// and every request head must complete within
/// [`crate::Limits::header_read`] (hyper's `header_read_timeout`, counted
/// from when the server starts waiting for the request, so it also bounds
/// keep-alive idle time between requests). Keep-alive is on.
///
/// Handlers get the client's address as
/// `axum::extract::ConnectInfo<SocketAddr>`, like
/// `into_make_service_with_connect_info::<SocketAddr>()` gives.
pub async fn serve_router(
    listener: Listener,
    router: Router,
    tls: Option<Arc<rustls::ServerConfig>>,
    shutdown: impl Future<Output = ()> + Send,
) {
    serve_router_with(listener, router, tls, shutdown, None).await;
}

/// Told of each failed TLS handshake: the client's address and the cause
/// (rustls' error text, e.g. `received fatal alert: BadCertificate`, or
/// `no TLS handshake within 10 s`).
pub type TlsFailureHook = Arc<dyn Fn(SocketAddr, &str) + Send + Sync>;

/// [`serve_router`] with `on_tls_failure` told of every TLS handshake that
/// failed or timed out (still logged at debug here).
pub async fn serve_router_with(
    listener: Listener,
    router: Router,
    tls: Option<Arc<rustls::ServerConfig>>,
    shutdown: impl Future<Output = ()> + Send,
    on_tls_failure: Option<TlsFailureHook>,
) {
    let limits = *listener.limits();
    let tls = tls.map(tokio_rustls::TlsAcceptor::from);
    let mut http = http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_read)
        .keep_alive(true);
    let graceful = GracefulShutdown::new();
    let mut conns = JoinSet::new();
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            (conn, peer) = listener.accept() => {
                let (http, router, watcher) = (http.clone(), router.clone(), graceful.watcher());
                match tls.clone() {
                    None => {
                        conns.spawn(serve_conn(conn, peer, http, router, watcher));
                    }
                    Some(acceptor) => {
                        let hook = on_tls_failure.clone();
                        conns.spawn(async move {
                            let cause = match tokio::time::timeout(limits.header_read, acceptor.accept(conn)).await {
                                Ok(Ok(s)) => return serve_conn(s, peer, http, router, watcher).await,
                                Ok(Err(e)) => {
                                    tracing::debug!(client = %peer, error = %e, "TLS handshake failed");
                                    e.to_string()
                                }
                                Err(_) => {
                                    tracing::debug!(client = %peer, "TLS handshake timed out");
                                    format!("no TLS handshake within {} s", limits.header_read.as_secs())
                                }
                            };
                            if let Some(h) = hook {
                                h(peer, &cause);
                            }
                        });
                    }
                }
            }
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
            () = &mut shutdown => break,
        }
    }
    drop(listener);
    if tokio::time::timeout(DRAIN, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::debug!("connections still open after the drain time; closing them");
    }
    conns.shutdown().await;
}

/// Serves one connection's requests with `router`.
async fn serve_conn<I>(
    io: I,
    peer: SocketAddr,
    http: http1::Builder,
    router: Router,
    watcher: Watcher,
) where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let svc = hyper::service::service_fn(move |mut req: hyper::Request<hyper::body::Incoming>| {
        req.extensions_mut().insert(ConnectInfo(peer));
        router.clone().call(req)
    });
    let conn = http.serve_connection(TokioIo::new(io), svc);
    if let Err(e) = watcher.watch(conn).await {
        tracing::debug!(client = %peer, error = %e, "HTTP connection ended with an error");
    }
}
