//! Guarded TCP listeners for every server of `okd-install serve` (issue #10
//! item 2): a hostile or broken client on the install network must not be
//! able to take a service down by opening connections and then sending
//! nothing, half a request, or reading nothing.
//!
//! * [`Limits`]: the numbers, with documented defaults.
//! * [`Gate`]: a global and a per-client-IP connection cap. A connection over
//!   either cap is closed at once (it is accepted first, so the kernel's
//!   backlog never fills up and later clients are not stalled).
//! * [`Conn`]: a stream wrapper closing the connection (the read or write
//!   fails with [`std::io::ErrorKind::TimedOut`]) after [`Limits::idle`]
//!   without a byte moving in either direction.
//! * [`Listener`]: a `tokio` TCP listener whose `accept` applies the gate,
//!   sets `TCP_NODELAY` and wraps the stream in a [`Conn`]. Use it for raw
//!   TCP services (load-balancer frontends, DNS over TCP).
//! * [`serve_router`]: serves an axum `Router` over HTTP/1.1 (plain or with
//!   a rustls `ServerConfig`) from a [`Listener`], with the caps, the idle
//!   timeout, a TLS-handshake and request-head timeout
//!   ([`Limits::header_read`]) and graceful shutdown.
//! * [`raise_nofile_limit`]: raises the soft `RLIMIT_NOFILE` to the hard
//!   limit at start, so the caps, not the descriptor table, are what bounds
//!   connections.
//!
//! The defaults follow common server practice: nginx's
//! `client_header_timeout` and Go's `http.Server.ReadHeaderTimeout` bound
//! the request head the same way; 1024 connections is nginx's
//! `worker_connections` default. The numbers are tuned for an install
//! network of tens of machines: a real client (Ignition, kubelet, dig,
//! HAProxy health checks) needs a handful of connections and sends its
//! request head within milliseconds.

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::{Instant, Sleep};

mod http;

pub use http::{TlsFailureHook, serve_router, serve_router_with};

/// Default [`Limits::max_connections`]: 1024 connections open at once per
/// listener.
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;
/// Default [`Limits::max_per_client`]: 64 connections open at once from one
/// client IP address per listener.
pub const DEFAULT_MAX_PER_CLIENT: usize = 64;
/// Default [`Limits::header_read`]: 10 seconds.
pub const DEFAULT_HEADER_READ: Duration = Duration::from_secs(10);
/// Default [`Limits::idle`]: 60 seconds.
pub const DEFAULT_IDLE: Duration = Duration::from_secs(60);

/// The limits one listener enforces. [`Limits::default`] gives the
/// `DEFAULT_*` constants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Connections open at once on the listener; the next one is closed
    /// right after `accept`.
    pub max_connections: usize,
    /// Connections open at once from one client IP address (IPv4-mapped
    /// IPv6 addresses count as their IPv4 address); the next one from that
    /// address is closed right after `accept`.
    pub max_per_client: usize,
    /// HTTP only ([`serve_router`]): the time allowed for the TLS handshake
    /// and for each request head (request line and headers). hyper starts
    /// the head timer when it begins waiting for a request, so this is also
    /// how long a kept-alive connection may wait idle between requests.
    pub header_read: Duration,
    /// Time without a single byte read or written, after which the
    /// connection is closed (a request body or response that stalls, a raw
    /// TCP client that goes quiet).
    pub idle: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_per_client: DEFAULT_MAX_PER_CLIENT,
            header_read: DEFAULT_HEADER_READ,
            idle: DEFAULT_IDLE,
        }
    }
}

/// Counts open connections against [`Limits::max_connections`] and
/// [`Limits::max_per_client`]. Memory is bounded: one map entry per client
/// address with a connection open, so at most `max_connections` entries.
///
/// [`Listener`] uses one internally; use one directly for listeners that
/// are not TCP (e.g. a Unix control socket: [`Gate::enter`] with `None`).
#[derive(Debug)]
pub struct Gate {
    max_connections: usize,
    max_per_client: usize,
    state: Mutex<GateState>,
    refused: AtomicU64,
}

#[derive(Debug, Default)]
struct GateState {
    open: usize,
    per_client: HashMap<IpAddr, usize>,
}

/// One admitted connection; dropping it frees its slot in the [`Gate`].
#[derive(Debug)]
pub struct Permit {
    gate: Arc<Gate>,
    client: Option<IpAddr>,
}

impl Gate {
    /// A gate with `limits`' two caps.
    pub fn new(limits: &Limits) -> Arc<Gate> {
        Arc::new(Gate {
            max_connections: limits.max_connections,
            max_per_client: limits.max_per_client,
            state: Mutex::new(GateState::default()),
            refused: AtomicU64::new(0),
        })
    }

    /// Admits a connection from `client` (`None`: not an IP client, only
    /// the global cap applies), or `None` when a cap is reached (counted in
    /// [`Gate::refused`]).
    pub fn enter(self: &Arc<Gate>, client: Option<IpAddr>) -> Option<Permit> {
        let client = client.map(|ip| ip.to_canonical());
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let refuse = st.open >= self.max_connections
            || client.is_some_and(|ip| {
                st.per_client.get(&ip).copied().unwrap_or(0) >= self.max_per_client
            });
        if refuse {
            drop(st);
            self.refused.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        st.open += 1;
        if let Some(ip) = client {
            *st.per_client.entry(ip).or_insert(0) += 1;
        }
        Some(Permit {
            gate: self.clone(),
            client,
        })
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).open
    }

    /// Connections refused by a cap since the gate was made.
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        let mut st = self.gate.state.lock().unwrap_or_else(|e| e.into_inner());
        st.open = st.open.saturating_sub(1);
        if let Some(ip) = self.client
            && let Some(n) = st.per_client.get_mut(&ip)
        {
            *n -= 1;
            if *n == 0 {
                st.per_client.remove(&ip);
            }
        }
    }
}

/// A stream that fails with [`io::ErrorKind::TimedOut`] once `idle` passes
/// without a byte read or written (progress in either direction restarts
/// the clock for both). Optionally holds the connection's [`Permit`], so
/// the slot is freed when the stream is dropped.
#[derive(Debug)]
pub struct Conn<S> {
    io: S,
    idle: Duration,
    last: Instant,
    read_timer: Option<Pin<Box<Sleep>>>,
    write_timer: Option<Pin<Box<Sleep>>>,
    permit: Option<Permit>,
}

impl<S> Conn<S> {
    /// Wraps `io` with an idle timeout of `idle` (e.g. a backend connection
    /// of a proxy, or a Unix-socket stream with a [`Gate`] permit).
    pub fn new(io: S, idle: Duration, permit: Option<Permit>) -> Conn<S> {
        Conn {
            io,
            idle,
            last: Instant::now(),
            read_timer: None,
            write_timer: None,
            permit,
        }
    }

    /// The wrapped stream.
    pub fn get_ref(&self) -> &S {
        &self.io
    }

    /// The wrapped stream, mutably (bytes moved through it directly do not
    /// count as activity).
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.io
    }

    /// The idle timeout.
    pub fn idle(&self) -> Duration {
        self.idle
    }

    /// Whether this stream holds a [`Gate`] permit.
    pub fn has_permit(&self) -> bool {
        self.permit.is_some()
    }
}

/// Polls `timer` (created on first use) against `last + idle`: pending
/// while the connection is not idle that long, an error when it is.
fn poll_idle(
    timer: &mut Option<Pin<Box<Sleep>>>,
    last: Instant,
    idle: Duration,
    cx: &mut Context<'_>,
) -> Poll<io::Result<()>> {
    let timer = timer.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(last + idle)));
    loop {
        if timer.as_mut().poll(cx).is_pending() {
            return Poll::Pending;
        }
        let deadline = last + idle;
        if deadline <= Instant::now() {
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "connection idle too long",
            )));
        }
        timer.as_mut().reset(deadline);
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Conn<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        match Pin::new(&mut this.io).poll_read(cx, buf) {
            Poll::Ready(r) => {
                if buf.filled().len() > before {
                    this.last = Instant::now();
                }
                Poll::Ready(r)
            }
            Poll::Pending => match poll_idle(&mut this.read_timer, this.last, this.idle, cx) {
                Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
                _ => Poll::Pending,
            },
        }
    }
}

impl<S: AsyncWrite + Unpin> Conn<S> {
    fn pending_write<T>(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<T>> {
        match poll_idle(&mut self.write_timer, self.last, self.idle, cx) {
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            _ => Poll::Pending,
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Conn<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        match Pin::new(&mut this.io).poll_write(cx, buf) {
            Poll::Ready(r) => {
                if matches!(r, Ok(n) if n > 0) {
                    this.last = Instant::now();
                }
                Poll::Ready(r)
            }
            Poll::Pending => this.pending_write(cx),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        match Pin::new(&mut this.io).poll_write_vectored(cx, bufs) {
            Poll::Ready(r) => {
                if matches!(r, Ok(n) if n > 0) {
                    this.last = Instant::now();
                }
                Poll::Ready(r)
            }
            Poll::Pending => this.pending_write(cx),
        }
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        match Pin::new(&mut this.io).poll_flush(cx) {
            Poll::Ready(r) => Poll::Ready(r),
            Poll::Pending => this.pending_write(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        match Pin::new(&mut this.io).poll_shutdown(cx) {
            Poll::Ready(r) => Poll::Ready(r),
            Poll::Pending => this.pending_write(cx),
        }
    }
}

/// A TCP listener applying [`Limits`] (see the crate documentation).
#[derive(Debug)]
pub struct Listener {
    inner: tokio::net::TcpListener,
    limits: Limits,
    gate: Arc<Gate>,
}

impl Listener {
    /// Guards an already bound `tokio` listener.
    pub fn new(inner: tokio::net::TcpListener, limits: Limits) -> Listener {
        Listener {
            inner,
            gate: Gate::new(&limits),
            limits,
        }
    }

    /// Guards an already bound std listener (made non-blocking here); must
    /// be called inside a tokio runtime.
    ///
    /// # Errors
    /// The I/O error of registering the socket with the runtime.
    pub fn from_std(inner: std::net::TcpListener, limits: Limits) -> io::Result<Listener> {
        inner.set_nonblocking(true)?;
        Ok(Listener::new(
            tokio::net::TcpListener::from_std(inner)?,
            limits,
        ))
    }

    /// Binds `addr` and guards it.
    ///
    /// # Errors
    /// The bind error.
    pub async fn bind(addr: SocketAddr, limits: Limits) -> io::Result<Listener> {
        Ok(Listener::new(
            tokio::net::TcpListener::bind(addr).await?,
            limits,
        ))
    }

    /// The bound address.
    ///
    /// # Errors
    /// The operating system's error.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }

    /// The limits this listener applies.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The connection gate (open and refused counts).
    pub fn gate(&self) -> &Arc<Gate> {
        &self.gate
    }

    /// The next admitted connection, with `TCP_NODELAY` set, wrapped in a
    /// [`Conn`] holding its permit, and the client's address.
    ///
    /// Never fails: connections over a cap are closed at once (logged at
    /// debug level), and accept errors (e.g. `EMFILE` when out of file
    /// descriptors) are logged and retried after 50 ms, so a busy loop
    /// cannot form.
    pub async fn accept(&self) -> (Conn<TcpStream>, SocketAddr) {
        loop {
            let (stream, peer) = match self.inner.accept().await {
                Ok(a) => a,
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed; retrying in 50 ms");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            let Some(permit) = self.gate.enter(Some(peer.ip())) else {
                tracing::debug!(client = %peer, "connection cap reached; closing the connection");
                drop(stream);
                continue;
            };
            let _ = stream.set_nodelay(true);
            return (Conn::new(stream, self.limits.idle, Some(permit)), peer);
        }
    }
}

/// The `RLIMIT_NOFILE` values before and after [`raise_nofile_limit`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NofileLimit {
    /// Soft limit found (`None`: unlimited).
    pub before: Option<u64>,
    /// Soft limit now (`None`: unlimited).
    pub after: Option<u64>,
}

/// Raises the soft `RLIMIT_NOFILE` (open file descriptors) to the hard
/// limit, as servers do at start (getrlimit(2)/setrlimit(2)); a soft limit
/// already at the hard limit is left alone.
///
/// # Errors
/// The `setrlimit` error (e.g. `EPERM` inside some sandboxes).
pub fn raise_nofile_limit() -> io::Result<NofileLimit> {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let cur = getrlimit(Resource::Nofile);
    if cur.current == cur.maximum {
        return Ok(NofileLimit {
            before: cur.current,
            after: cur.current,
        });
    }
    let mut new = cur;
    new.current = cur.maximum;
    setrlimit(Resource::Nofile, new).map_err(io::Error::from)?;
    let now = getrlimit(Resource::Nofile);
    Ok(NofileLimit {
        before: cur.current,
        after: now.current,
    })
}

/// Waits for SIGTERM or SIGINT (Ctrl-C) and says which came: how every
/// long-running command of okd-install stops (serve, the assisted service,
/// the agent, approve-csr --watch). Never completes when the handlers
/// cannot be installed.
pub async fn shutdown_signal() -> &'static str {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        std::future::pending::<()>().await;
        return "";
    };
    tokio::select! {
        _ = term.recv() => "SIGTERM",
        _ = int.recv() => "SIGINT",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gate_caps_globally_and_per_client() {
        let g = Gate::new(&Limits {
            max_connections: 3,
            max_per_client: 2,
            ..Limits::default()
        });
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let mapped: IpAddr = "::ffff:10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        let p1 = g.enter(Some(a)).unwrap();
        let _p2 = g.enter(Some(mapped)).unwrap();
        assert!(g.enter(Some(a)).is_none(), "third from one client");
        let _p3 = g.enter(Some(b)).unwrap();
        assert!(g.enter(None).is_none(), "global cap");
        assert_eq!((g.open(), g.refused()), (3, 2));
        drop(p1);
        assert!(g.enter(Some(a)).is_some());
        assert_eq!(g.state.lock().unwrap().per_client.len(), 2);
    }

    #[test]
    fn nofile_soft_limit_reaches_hard() {
        use rustix::process::{Resource, getrlimit, setrlimit};
        let start = getrlimit(Resource::Nofile);
        // Lower the soft limit first, so raising has something to do.
        if start.maximum.is_none_or(|m| m > 256) {
            let mut low = start;
            low.current = Some(256);
            setrlimit(Resource::Nofile, low).unwrap();
        }
        let l = raise_nofile_limit().unwrap();
        let now = getrlimit(Resource::Nofile);
        assert_eq!(now.current, start.maximum);
        assert_eq!(l.after, now.current);
        if start.maximum.is_none_or(|m| m > 256) {
            assert_eq!(l.before, Some(256));
        }
    }
}
