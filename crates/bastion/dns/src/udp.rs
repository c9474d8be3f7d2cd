//! UDP serving: blocking receive threads, each on a socket of its own
//! (`SO_REUSEPORT`, so the kernel spreads clients over them by address and
//! port), that answer our zones inline, batch the replies into one
//! `sendmmsg`, and spawn forwards on the runtime; and how to stop them.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use crate::wire::{self, Flags, Sections, rcode};
use crate::{Handled, Shared, Transport, UDP_BUF, UDP_RCVBUF};

/// The UDP receive threads and how to stop them.
pub(crate) struct UdpThreads {
    stop: Arc<AtomicBool>,
    socks: Vec<Weak<std::net::UdpSocket>>,
    pub(crate) threads: Vec<std::thread::JoinHandle<()>>,
}

impl UdpThreads {
    /// Tells the threads to stop and wakes those blocked in a receive
    /// (a read shutdown ends a blocking `recvfrom` on Linux even on an
    /// unconnected socket; the 1 s receive timeout is the fallback).
    pub(crate) fn stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
        for s in &self.socks {
            if let Some(s) = s.upgrade() {
                let _ = rustix::net::shutdown(&*s, rustix::net::Shutdown::Read);
            }
        }
    }
}

/// A UDP socket bound to `addr` with `SO_REUSEPORT` (every socket of the
/// group must set it before binding) and a receive buffer of
/// [`UDP_RCVBUF`] (best effort: beyond `net.core.rmem_max` only with
/// `CAP_NET_ADMIN`).
pub(crate) fn bind_reuseport(addr: SocketAddr) -> std::io::Result<std::net::UdpSocket> {
    use rustix::net::{AddressFamily, SocketFlags, SocketType, sockopt};
    let family = if addr.is_ipv4() {
        AddressFamily::INET
    } else {
        AddressFamily::INET6
    };
    let fd = rustix::net::socket_with(family, SocketType::DGRAM, SocketFlags::CLOEXEC, None)?;
    sockopt::set_socket_reuseport(&fd, true)?;
    if sockopt::set_socket_recv_buffer_size_force(&fd, UDP_RCVBUF).is_err() {
        let _ = sockopt::set_socket_recv_buffer_size(&fd, UDP_RCVBUF);
    }
    rustix::net::bind(&fd, &addr)?;
    Ok(std::net::UdpSocket::from(fd))
}

/// Starts `n` threads, the first serving `first` (bound with
/// [`bind_reuseport`]), each other one a socket of its own bound the same
/// way to the same address; the sockets block with a 1 s receive timeout.
/// Forwards are spawned on `rt`.
pub(crate) fn start_udp_threads(
    first: std::net::UdpSocket,
    n: usize,
    shared: &Arc<Shared>,
    rt: &tokio::runtime::Handle,
) -> std::io::Result<UdpThreads> {
    let local = first.local_addr()?;
    let stop = Arc::new(AtomicBool::new(false));
    let mut started = UdpThreads {
        stop,
        socks: Vec::with_capacity(n),
        threads: Vec::with_capacity(n),
    };
    let mut first = Some(first);
    for i in 0..n.max(1) {
        let t = first
            .take()
            .map_or_else(|| bind_reuseport(local), Ok)
            .and_then(|sock| {
                sock.set_nonblocking(false)?;
                sock.set_read_timeout(Some(Duration::from_secs(1)))?;
                let sock = Arc::new(sock);
                started.socks.push(Arc::downgrade(&sock));
                let (shared, rt, halt) = (shared.clone(), rt.clone(), started.stop.clone());
                std::thread::Builder::new()
                    .name(format!("okd-dns-udp-{i}"))
                    .spawn(move || udp_loop(&sock, &shared, &rt, &halt))
            });
        match t {
            Ok(t) => started.threads.push(t),
            Err(e) => {
                started.stop();
                return Err(e);
            }
        }
    }
    Ok(started)
}

/// Queries read at most before the replies go out together.
const BATCH: usize = 32;

/// After a batch of one query (the queue was found empty), the next
/// `PROBE_EVERY - 1` queries are each answered at once, without looking
/// at the queue.
const PROBE_EVERY: u32 = 8;

/// One UDP receive loop: answers our zones inline, spawns forwards on
/// `rt`, until `stop`. After a blocking receive it takes what else is
/// queued already (up to [`BATCH`] queries, without waiting) and sends the
/// replies with one `sendmmsg` (Linux), so a busy socket costs fewer
/// system calls per query. When the queue was found empty after a query,
/// the next few are answered at once without looking (see
/// [`PROBE_EVERY`]): a receive that finds nothing is one system call in
/// three for a lone query.
fn udp_loop(
    sock: &Arc<std::net::UdpSocket>,
    shared: &Arc<Shared>,
    rt: &tokio::runtime::Handle,
    stop: &AtomicBool,
) {
    let mut buf = vec![0u8; UDP_BUF];
    let mut out = Vec::with_capacity(UDP_BUF);
    let mut scratch = Vec::with_capacity(256);
    let mut replies: Vec<u8> = Vec::with_capacity(BATCH * 512);
    let mut ends: Vec<(usize, rustix::net::SocketAddrAny)> = Vec::with_capacity(BATCH);
    let weak = Arc::downgrade(sock);
    // Batches still to go without looking at the queue.
    let mut skip: u32 = 0;
    while !stop.load(Ordering::Relaxed) {
        let mut next = match sock.recv_from(&mut buf) {
            Ok(r) => Some(r),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                continue;
            }
            Err(e) => {
                // E.g. ICMP errors surfacing on the socket: never spin.
                tracing::debug!(error = %e, "dns udp receive failed");
                std::thread::sleep(Duration::from_millis(1));
                continue;
            }
        };
        replies.clear();
        ends.clear();
        let mut taken = 0;
        let look = skip == 0;
        skip = skip.saturating_sub(1);
        while let Some((n, client)) = next.take() {
            taken += 1;
            let msg = &buf[..n];
            match shared.handle(msg, client, Transport::Udp, &mut scratch, &mut out) {
                Handled::Reply => {
                    replies.extend_from_slice(&out);
                    ends.push((replies.len(), client.into()));
                }
                Handled::Forward => {
                    spawn_udp_forward(shared, sock, &weak, rt, msg, client, &mut out);
                }
                Handled::Drop => {}
            }
            if look
                && taken < BATCH
                && let Ok((n, _, Some(from))) =
                    rustix::net::recvfrom(&**sock, &mut buf[..], rustix::net::RecvFlags::DONTWAIT)
                && let Ok(client) = SocketAddr::try_from(from)
            {
                next = Some((n.min(UDP_BUF), client));
            }
        }
        if look && taken == 1 {
            skip = PROBE_EVERY - 1;
        }
        send_batch(sock, &replies, &ends);
    }
}

/// Sends the replies `replies` (each ending at its offset in `ends`, to its
/// address): one `sendto`, or `sendmmsg` for several.
fn send_batch(
    sock: &std::net::UdpSocket,
    replies: &[u8],
    ends: &[(usize, rustix::net::SocketAddrAny)],
) {
    use rustix::net::{MMsgHdr, SendAncillaryBuffer, SendFlags};
    use std::io::IoSlice;
    if let [(end, to)] = ends {
        if let Err(e) = rustix::net::sendto(sock, &replies[..*end], SendFlags::empty(), to) {
            tracing::debug!(error = %e, "dns udp send failed");
        }
        return;
    }
    let mut start = 0;
    let iovs: Vec<[IoSlice<'_>; 1]> = ends
        .iter()
        .map(|(end, _)| {
            let iov = [IoSlice::new(&replies[start..*end])];
            start = *end;
            iov
        })
        .collect();
    let mut controls: Vec<SendAncillaryBuffer<'_, '_, '_>> = ends
        .iter()
        .map(|_| SendAncillaryBuffer::default())
        .collect();
    let mut msgs: Vec<MMsgHdr<'_>> = iovs
        .iter()
        .zip(ends)
        .zip(controls.iter_mut())
        .map(|((iov, (_, to)), control)| MMsgHdr::new_with_addr(to, iov, control))
        .collect();
    let mut sent = 0;
    while sent < msgs.len() {
        match rustix::net::sendmmsg(sock, &mut msgs[sent..], SendFlags::empty()) {
            Ok(k) if k > 0 => sent += k,
            // The first message failed: skip it.
            Ok(_) | Err(_) => sent += 1,
        }
    }
}

/// Starts relaying `msg` in a task on `rt`, replying through `weak` (so a
/// stopped server's socket closes at once; the reply is sent without
/// waiting); SERVFAIL at once through `sock` when too many queries are in
/// flight already.
fn spawn_udp_forward(
    shared: &Arc<Shared>,
    sock: &std::net::UdpSocket,
    weak: &Weak<std::net::UdpSocket>,
    rt: &tokio::runtime::Handle,
    msg: &[u8],
    client: SocketAddr,
    out: &mut Vec<u8>,
) {
    let Some(fwd) = &shared.forwarder else { return };
    let Ok(permit) = fwd.permits.clone().try_acquire_owned() else {
        tracing::warn!(%client, "too many queries being forwarded; answering SERVFAIL");
        if let Ok(q) = wire::parse_query(msg) {
            let f = Flags {
                aa: false,
                ra: true,
                rcode: rcode::SERVFAIL,
            };
            wire::write_response(out, &q, f, &Sections::default(), usize::MAX);
            let _ = sock.send_to(out, client);
        }
        return;
    };
    let (shared, sock, msg) = (shared.clone(), weak.clone(), msg.to_vec());
    rt.spawn(async move {
        let reply = shared.forward(&msg, client, Transport::Udp).await;
        if let (Some(reply), Some(s)) = (reply, sock.upgrade()) {
            let _ = rustix::net::sendto(&*s, &reply, rustix::net::SendFlags::DONTWAIT, &client);
        }
        drop(permit);
    });
}
