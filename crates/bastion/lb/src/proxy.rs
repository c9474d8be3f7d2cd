//! Accepting clients and proxying them to a healthy backend, both ways.

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::watch;

use crate::{
    BackendState, Balance, CONNECT_TIMEOUT, COPY_BUFFER, FrontendState, lock, read, unmapped,
};

/// FNV-1a over the address bytes: stable across runs and Rust versions.
fn source_hash(ip: std::net::IpAddr) -> u64 {
    let bytes: Vec<u8> = match ip {
        std::net::IpAddr::V4(a) => a.octets().to_vec(),
        std::net::IpAddr::V6(a) => match a.to_ipv4_mapped() {
            Some(v4) => v4.octets().to_vec(),
            None => a.octets().to_vec(),
        },
    };
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// The backends in the order they should be tried for `client`: the UP
/// ones; when none is UP, those not checked yet; in both, only those the
/// client is not kept from ([`crate::Backend::not_for`]). When that leaves
/// none while backends kept from the client are UP, their names come back
/// as the second value: the client is held, not failed.
fn candidates(fe: &FrontendState, client: SocketAddr) -> (Vec<Arc<BackendState>>, Vec<String>) {
    let ip = unmapped(client.ip());
    let bes = read(&fe.backends);
    let (allowed, kept): (Vec<&Arc<BackendState>>, Vec<&Arc<BackendState>>) =
        bes.iter().partition(|b| !b.not_for.contains(&ip));
    let mut healthy: Vec<Arc<BackendState>> = allowed
        .iter()
        .filter(|b| b.up.load(Ordering::SeqCst))
        .map(|b| (*b).clone())
        .collect();
    if healthy.is_empty() {
        healthy = allowed
            .iter()
            .filter(|b| !b.checked.load(Ordering::SeqCst))
            .map(|b| (*b).clone())
            .collect();
    }
    let held: Vec<String> = if healthy.is_empty() {
        kept.iter()
            .filter(|b| b.up.load(Ordering::SeqCst))
            .map(|b| b.name.clone())
            .collect()
    } else {
        Vec::new()
    };
    drop(bes);
    if healthy.is_empty() {
        return (healthy, held);
    }
    let n = healthy.len();
    let start = match fe.balance {
        Balance::Source => (source_hash(client.ip()) % n as u64) as usize,
        Balance::RoundRobin => fe.rr.fetch_add(1, Ordering::Relaxed) % n,
    };
    (
        (0..n).map(|i| healthy[(start + i) % n].clone()).collect(),
        held,
    )
}

pub(crate) async fn accept_loop(
    fe: Arc<FrontendState>,
    l: okd_listen::Listener,
    mut stop: watch::Receiver<bool>,
) {
    let child = stop.clone();
    loop {
        // The listener closes connections over its caps and backs off on
        // accept errors (EMFILE) itself.
        tokio::select! {
            _ = stopped(&mut stop) => break,
            (client, peer) = l.accept() => {
                fe.total.fetch_add(1, Ordering::Relaxed);
                tokio::spawn(proxy(fe.clone(), client, peer, child.clone()));
            }
        }
    }
    tracing::info!(frontend = %fe.name, "frontend stopped");
}

/// Completes once shutdown was requested (or the sender is gone).
pub(crate) async fn stopped(rx: &mut watch::Receiver<bool>) {
    let _ = rx.wait_for(|v| *v).await;
}

struct ActiveGuard<'a>(&'a AtomicU64);

impl Drop for ActiveGuard<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

async fn proxy(
    fe: Arc<FrontendState>,
    client: okd_listen::Conn<TcpStream>,
    peer: SocketAddr,
    mut stop: watch::Receiver<bool>,
) {
    fe.active.fetch_add(1, Ordering::Relaxed);
    let _fe_active = ActiveGuard(&fe.active);
    let mut chosen = None;
    let (candidates, held) = candidates(&fe, peer);
    if candidates.is_empty() && !held.is_empty() {
        fe.rejected.fetch_add(1, Ordering::Relaxed);
        if lock(&fe.held).insert(unmapped(peer.ip())) {
            tracing::warn!(
                frontend = %fe.name,
                client = %peer,
                "holding {}: its only UP backends ({}) are kept from it; closing its connections until another backend is UP (logged once per client)",
                peer.ip(),
                held.join(", ")
            );
        }
        if let Some(obs) = &fe.observer.0 {
            obs.held(&fe.name, peer, &held);
        }
        return;
    }
    for be in candidates {
        match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(be.addr)).await {
            Ok(Ok(s)) => {
                chosen = Some((be, s));
                break;
            }
            Ok(Err(e)) => {
                be.counters.connect_failures.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(frontend = %fe.name, backend = %be.name, "connect to {} failed: {e}", be.addr);
            }
            Err(_) => {
                be.counters.connect_failures.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(frontend = %fe.name, backend = %be.name, "connect to {} timed out", be.addr);
            }
        }
    }
    let Some((be, server)) = chosen else {
        fe.rejected.fetch_add(1, Ordering::Relaxed);
        fe.rejected_run.fetch_add(1, Ordering::Relaxed);
        if fe.rejecting.swap(true, Ordering::SeqCst) {
            tracing::debug!(frontend = %fe.name, client = %peer, "no backend available; closing connection");
        } else {
            tracing::warn!(frontend = %fe.name, client = %peer, "no backend available; closing connections until one is (logged once)");
        }
        return;
    };
    if fe.rejecting.swap(false, Ordering::SeqCst) {
        let n = fe.rejected_run.swap(0, Ordering::Relaxed);
        tracing::warn!(frontend = %fe.name, backend = %be.name, "a backend is available again; {n} connections were closed meanwhile");
    }
    if let (Some(obs), Ok(local)) = (&fe.observer.0, server.local_addr()) {
        obs.proxied(&fe.name, &be.name, peer, local);
    }
    if lock(&fe.held).remove(&unmapped(peer.ip())) {
        tracing::info!(frontend = %fe.name, backend = %be.name, client = %peer, "{} is no longer held: proxied to {}", peer.ip(), be.name);
    }
    let _ = server.set_nodelay(true);
    be.counters.total.fetch_add(1, Ordering::Relaxed);
    be.counters.active.fetch_add(1, Ordering::Relaxed);
    let _be_active = ActiveGuard(&be.counters.active);
    let mut client = Counted {
        inner: client,
        read: &be.counters.bytes_in,
        written: &be.counters.bytes_out,
    };
    let mut server = server;
    tokio::select! {
        _ = stopped(&mut stop) => {}
        r = tokio::io::copy_bidirectional_with_sizes(&mut client, &mut server, COPY_BUFFER, COPY_BUFFER) => {
            match r {
                Ok((_, to_client)) => {
                    if let Some(obs) = &fe.observer.0 {
                        obs.closed(&fe.name, &be.name, peer, to_client);
                    }
                }
                Err(e) => {
                    tracing::debug!(frontend = %fe.name, backend = %be.name, client = %peer, "connection ended: {e}");
                }
            }
        }
    }
}

/// A stream that adds the bytes read and written to two counters as they pass.
struct Counted<'a, S> {
    inner: S,
    read: &'a AtomicU64,
    written: &'a AtomicU64,
}

impl<S: AsyncRead + Unpin> AsyncRead for Counted<'_, S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        let n = buf.filled().len() - before;
        if n > 0 {
            self.read.fetch_add(n as u64, Ordering::Relaxed);
        }
        r
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Counted<'_, S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = &r {
            self.written.fetch_add(*n as u64, Ordering::Relaxed);
        }
        r
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_hash_is_stable() {
        let a: std::net::IpAddr = "192.168.120.50".parse().unwrap();
        assert_eq!(source_hash(a), source_hash(a));
        let mapped: std::net::IpAddr = "::ffff:192.168.120.50".parse().unwrap();
        assert_eq!(source_hash(a), source_hash(mapped));
    }
}
