//! Relaying queries outside our zones to the upstream resolvers.
//!
//! The client's message goes to an upstream unchanged except for a fresh
//! random ID (RFC 5452 §9.2), from a fresh socket on a kernel-chosen port
//! (UDP) or over a new TCP connection (RFC 7766) when the client asked over
//! TCP. A reply counts only when it comes from that upstream with the same
//! ID and question; it goes back to the client with the client's ID, as
//! received (a truncated UDP reply stays truncated so the client retries
//! over TCP). Upstreams are tried in order, starting with the one that
//! answered last, each for a bounded time.

use std::hash::{BuildHasher, RandomState};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UdpSocket};
use tokio::sync::Semaphore;
use tokio::time::{Instant, timeout, timeout_at};

use crate::wire::{HEADER_LEN, matches};

/// How long one upstream gets to answer over UDP.
const UDP_TRY: Duration = Duration::from_millis(1500);
/// How long one upstream gets to connect and answer over TCP.
const TCP_TRY: Duration = Duration::from_secs(3);
/// Queries being forwarded at once; more are answered SERVFAIL.
pub(crate) const MAX_IN_FLIGHT: usize = 1024;

/// The upstream resolvers and the bound on queries in flight to them.
#[derive(Debug)]
pub(crate) struct Forwarder {
    upstreams: Vec<SocketAddr>,
    /// Index of the upstream that answered last.
    preferred: AtomicUsize,
    /// One permit per query in flight.
    pub permits: Arc<Semaphore>,
}

impl Forwarder {
    /// A forwarder to `upstreams` (not empty).
    pub fn new(upstreams: Vec<SocketAddr>) -> Forwarder {
        Forwarder {
            upstreams,
            preferred: AtomicUsize::new(0),
            permits: Arc::new(Semaphore::new(MAX_IN_FLIGHT)),
        }
    }

    /// Upstreams in the order to try them.
    fn order(&self) -> impl Iterator<Item = (usize, SocketAddr)> + '_ {
        let n = self.upstreams.len();
        let first = self.preferred.load(Ordering::Relaxed) % n;
        (0..n).map(move |k| {
            let i = (first + k) % n;
            (i, self.upstreams[i])
        })
    }

    /// Relays `query` (a whole DNS message) over UDP; the reply with the
    /// client's ID, or `None` when no upstream answered in time.
    pub async fn udp(&self, query: &[u8]) -> Option<Vec<u8>> {
        let (sent, client_id) = with_fresh_id(query)?;
        for (i, up) in self.order() {
            match udp_exchange(up, &sent).await {
                Ok(mut reply) => {
                    self.preferred.store(i, Ordering::Relaxed);
                    reply[0..2].copy_from_slice(&client_id);
                    return Some(reply);
                }
                Err(e) => {
                    tracing::debug!(upstream = %up, error = %e, "upstream did not answer (udp)")
                }
            }
        }
        None
    }

    /// Relays `query` over TCP (2-octet length prefix, RFC 1035 §4.2.2).
    pub async fn tcp(&self, query: &[u8]) -> Option<Vec<u8>> {
        let (sent, client_id) = with_fresh_id(query)?;
        for (i, up) in self.order() {
            match timeout(TCP_TRY, tcp_exchange(up, &sent)).await {
                Ok(Ok(mut reply)) => {
                    self.preferred.store(i, Ordering::Relaxed);
                    reply[0..2].copy_from_slice(&client_id);
                    return Some(reply);
                }
                Ok(Err(e)) => {
                    tracing::debug!(upstream = %up, error = %e, "upstream did not answer (tcp)")
                }
                Err(_) => tracing::debug!(upstream = %up, "upstream timed out (tcp)"),
            }
        }
        None
    }
}

/// A copy of `query` with a random ID, and the client's ID.
fn with_fresh_id(query: &[u8]) -> Option<(Vec<u8>, [u8; 2])> {
    if query.len() < HEADER_LEN {
        return None;
    }
    let mut sent = query.to_vec();
    let client_id = [query[0], query[1]];
    // A fresh RandomState carries fresh per-thread random keys.
    let id = RandomState::new().hash_one(query) as u16;
    sent[0..2].copy_from_slice(&id.to_be_bytes());
    Some((sent, client_id))
}

fn invalid(what: &str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_string())
}

async fn udp_exchange(up: SocketAddr, sent: &[u8]) -> std::io::Result<Vec<u8>> {
    let local: SocketAddr = if up.is_ipv4() {
        (Ipv4Addr::UNSPECIFIED, 0).into()
    } else {
        (Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let sock = UdpSocket::bind(local).await?;
    // Connected: replies from anyone else are dropped by the kernel, and an
    // ICMP port unreachable ends the wait at once.
    sock.connect(up).await?;
    sock.send(sent).await?;
    let deadline = Instant::now() + UDP_TRY;
    let mut buf = vec![0u8; 65535];
    loop {
        let n = timeout_at(deadline, sock.recv(&mut buf))
            .await
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "timed out"))??;
        if matches(sent, &buf[..n]) {
            buf.truncate(n);
            return Ok(buf);
        }
    }
}

async fn tcp_exchange(up: SocketAddr, sent: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut s = TcpStream::connect(up).await?;
    s.set_nodelay(true)?;
    let len = u16::try_from(sent.len()).map_err(|_| invalid("query too long"))?;
    let mut framed = Vec::with_capacity(sent.len() + 2);
    framed.extend_from_slice(&len.to_be_bytes());
    framed.extend_from_slice(sent);
    s.write_all(&framed).await?;
    let n = usize::from(s.read_u16().await?);
    let mut buf = vec![0u8; n];
    s.read_exact(&mut buf).await?;
    if !matches(sent, &buf) {
        return Err(invalid("reply does not match the query"));
    }
    Ok(buf)
}
