//! ICMP echo round trips on raw sockets: [`ping`], and [`ping_full_size`]
//! with the route's full MTU and Don't Fragment set.

use std::io::{self, Read};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::{Duration, Instant};

use socket2::{Domain, Protocol, Socket, Type};

use super::icmp::{
    ICMPV4_ECHO_REQUEST, ICMPV6_ECHO_REQUEST, IPV4_HEADER_LEN, PING_DATA_LEN, echo_reply_seq,
    echo_request, ipv4_header_df,
};
use super::is_timeout;

/// What [`ping`] saw: echo requests sent, matching replies received and
/// their mean round-trip time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PingStats {
    /// Echo requests sent.
    pub sent: u32,
    /// Echo replies received in time, each matching a request sent (same
    /// identifier and sequence number) and counted once.
    pub received: u32,
    /// Mean round-trip time of the received replies, in milliseconds;
    /// 0 when none was received.
    pub average_rtt_ms: f64,
}

impl PingStats {
    /// Percentage (0 to 100) of the requests sent that got no reply, as
    /// `ping` prints it as "packet loss"; 0 when nothing was sent.
    pub fn packet_loss_percentage(&self) -> f64 {
        if self.sent == 0 {
            return 0.0;
        }
        100.0 * f64::from(self.sent.saturating_sub(self.received)) / f64::from(self.sent)
    }
}

/// The next echo identifier's offset from the process id, so concurrent
/// calls in one process tell their replies apart.
static NEXT_IDENT: AtomicU16 = AtomicU16::new(0);

/// Sends `count` ICMP echo requests to `target`, one every `interval`, and
/// counts the replies that come back within `timeout` of their request.
///
/// IPv4 uses ICMP echo (type 8, replies type 0, RFC 792) with the checksum
/// computed here (the RFC 1071 one's-complement sum); IPv6 uses ICMPv6
/// echo (type 128, replies type 129, RFC 4443), whose checksum over the
/// pseudo-header the kernel fills in. Requests carry an identifier of this
/// call and sequence numbers 0, 1, 2, … (modulo 2^16) and 56 bytes of data;
/// a reply counts when it comes from `target` with the same identifier and
/// the sequence number of a request still waiting, once. The socket is a
/// raw one (`SOCK_RAW`, `IPPROTO_ICMP`/`IPPROTO_ICMPV6`) connected to
/// `target`, so only `target`'s packets are read. IPv6 link-local targets
/// need a scope, which an [`IpAddr`] has not: they are not supported.
///
/// Blocks for at most about `(count - 1) × interval + timeout`, less when
/// every reply is in; acts in the calling thread's network namespace. Send
/// errors of unreachable destinations count as lost requests.
///
/// # Errors
///
/// Opening or connecting the socket (e.g. `PermissionDenied` without
/// `CAP_NET_RAW`), and other send or receive errors, with `target` named.
pub fn ping(
    target: IpAddr,
    count: u32,
    interval: Duration,
    timeout: Duration,
) -> io::Result<PingStats> {
    let ctx =
        |what: &str, e: io::Error| io::Error::new(e.kind(), format!("ping {target}: {what}: {e}"));
    let (domain, protocol, request_type) = match target {
        IpAddr::V4(_) => (Domain::IPV4, Protocol::ICMPV4, ICMPV4_ECHO_REQUEST),
        IpAddr::V6(_) => (Domain::IPV6, Protocol::ICMPV6, ICMPV6_ECHO_REQUEST),
    };
    let socket = Socket::new(domain, Type::RAW, Some(protocol))
        .map_err(|e| ctx("opening a raw ICMP socket (needs CAP_NET_RAW)", e))?;
    socket
        .connect(&SocketAddr::new(target, 0).into())
        .map_err(|e| ctx("connecting the socket", e))?;
    let ident = next_ident();
    let ipv4 = target.is_ipv4();
    echo_series(&socket, ipv4, ident, count, interval, timeout, |seq| {
        echo_request(request_type, ident, seq, ipv4, PING_DATA_LEN)
    })
    .map_err(|(what, e)| ctx(what, e))
}

/// Sends `count` IPv4 ICMP echo requests of the full MTU of the route to
/// `target` with Don't Fragment set, one every `interval`, and counts the
/// replies that come back within `timeout` of their request: whether
/// packets of that size cross the path unfragmented (the reference
/// agent's `ping -M do -s <mtu − 28>`). Returns the MTU used (bytes of
/// the IP packet) and the counts.
///
/// The socket is a raw ICMP one with `IP_HDRINCL` (raw(7)), so this code
/// writes the IPv4 header (RFC 791) with the DF flag itself; the kernel
/// fills in the source address, identification, total length and header
/// checksum. The size is the route's MTU as `IP_MTU` reports it for the
/// connected socket (ip(7)): the outgoing interface's unless a smaller
/// path MTU is cached. A packet dropped for its size, and an ICMP error
/// back, count as lost requests.
///
/// # Errors
///
/// As [`ping`].
pub fn ping_full_size(
    target: Ipv4Addr,
    count: u32,
    interval: Duration,
    timeout: Duration,
) -> io::Result<(u32, PingStats)> {
    let ctx = |what: &str, e: io::Error| {
        io::Error::new(e.kind(), format!("full-size ping {target}: {what}: {e}"))
    };
    let socket = Socket::new(Domain::IPV4, Type::RAW, Some(Protocol::ICMPV4))
        .map_err(|e| ctx("opening a raw ICMP socket (needs CAP_NET_RAW)", e))?;
    socket
        .set_header_included_v4(true)
        .map_err(|e| ctx("setting IP_HDRINCL", e))?;
    socket
        .connect(&SocketAddr::new(IpAddr::V4(target), 0).into())
        .map_err(|e| ctx("connecting the socket", e))?;
    let mtu = nix::sys::socket::getsockopt(&socket, nix::sys::socket::sockopt::IpMtu)
        .map_err(|e| ctx("reading the route's MTU (IP_MTU)", io::Error::from(e)))?;
    let mtu = u32::try_from(mtu)
        .ok()
        .filter(|m| (IPV4_HEADER_LEN as u32 + 8..=65535).contains(m))
        .ok_or_else(|| {
            ctx(
                "reading the route's MTU (IP_MTU)",
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("MTU {mtu} out of range"),
                ),
            )
        })?;
    let data_len = mtu as usize - IPV4_HEADER_LEN - 8;
    let ident = next_ident();
    let stats = echo_series(&socket, true, ident, count, interval, timeout, |seq| {
        let icmp = echo_request(ICMPV4_ECHO_REQUEST, ident, seq, true, data_len);
        let mut p = ipv4_header_df(target, icmp.len());
        p.extend_from_slice(&icmp);
        p
    })
    .map_err(|(what, e)| ctx(what, e))?;
    Ok((mtu, stats))
}

/// A fresh echo identifier for this process.
fn next_ident() -> u16 {
    (std::process::id() as u16) ^ NEXT_IDENT.fetch_add(1, Ordering::Relaxed)
}

/// The send-and-count loop of [`ping`] and [`ping_full_size`] on a
/// connected raw socket: `request(seq)` is the packet to send for
/// sequence number `seq`. Errors carry what was being done.
fn echo_series(
    socket: &Socket,
    ipv4: bool,
    ident: u16,
    count: u32,
    interval: Duration,
    timeout: Duration,
    request: impl Fn(u16) -> Vec<u8>,
) -> Result<PingStats, (&'static str, io::Error)> {
    let mut stats = PingStats {
        sent: 0,
        received: 0,
        average_rtt_ms: 0.0,
    };
    let mut rtt_total = Duration::ZERO;
    // Requests waiting for their reply: sequence number and when sent.
    let mut pending: Vec<(u16, Instant)> = Vec::new();
    let mut next_send = Instant::now();
    let mut buf = vec![0u8; 65536];
    loop {
        let now = Instant::now();
        if stats.sent < count && now >= next_send {
            let seq = stats.sent as u16;
            match socket.send(&request(seq)) {
                Ok(_) => {}
                Err(e) if is_unreachable(&e) => {}
                Err(e) => return Err(("sending an echo request", e)),
            }
            pending.push((seq, now));
            stats.sent += 1;
            next_send += interval;
        }
        pending.retain(|&(_, sent)| now.duration_since(sent) < timeout);
        if stats.sent == count && pending.is_empty() {
            break;
        }
        let mut wake = pending.iter().map(|&(_, sent)| sent + timeout).min();
        if stats.sent < count {
            wake = Some(wake.map_or(next_send, |w| w.min(next_send)));
        }
        let wait = wake.map_or(Duration::ZERO, |w| w.saturating_duration_since(now));
        socket
            .set_read_timeout(Some(wait.max(Duration::from_millis(1))))
            .map_err(|e| ("setting the receive timeout", e))?;
        let mut reader = socket;
        match reader.read(&mut buf) {
            Ok(n) => {
                let arrived = Instant::now();
                let Some(seq) = echo_reply_seq(&buf[..n], ident, ipv4) else {
                    continue;
                };
                if let Some(i) = pending.iter().position(|&(s, _)| s == seq) {
                    let (_, sent) = pending.swap_remove(i);
                    stats.received += 1;
                    rtt_total += arrived.duration_since(sent);
                }
            }
            Err(e)
                if is_timeout(&e)
                    || is_unreachable(&e)
                    || e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(("receiving", e)),
        }
    }
    if stats.received > 0 {
        stats.average_rtt_ms = rtt_total.as_secs_f64() * 1000.0 / f64::from(stats.received);
    }
    Ok(stats)
}

/// Whether a socket error reports an unreachable destination (an ICMP
/// error or a failed neighbour resolution), which [`ping`] counts as loss.
fn is_unreachable(e: &io::Error) -> bool {
    use nix::errno::Errno;
    e.raw_os_error().is_some_and(|code| {
        [
            Errno::EHOSTUNREACH,
            Errno::ENETUNREACH,
            Errno::EHOSTDOWN,
            Errno::ENETDOWN,
            Errno::ECONNREFUSED,
            Errno::EMSGSIZE,
        ]
        .contains(&Errno::from_raw(code))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::netns::{VethPair, ip, netns_unavailable};

    #[test]
    fn ping_stats_loss() {
        let s = PingStats {
            sent: 4,
            received: 3,
            average_rtt_ms: 1.0,
        };
        assert_eq!(s.packet_loss_percentage(), 25.0);
        let none = PingStats {
            sent: 0,
            received: 0,
            average_rtt_ms: 0.0,
        };
        assert_eq!(none.packet_loss_percentage(), 0.0);
    }

    #[test]
    fn ping_between_namespaces() {
        if netns_unavailable().is_some() {
            return;
        }
        let pair = VethPair::new("p");
        let (b, c) = (IpAddr::V4(pair.addr(2)), IpAddr::V4(pair.addr(3)));
        let interval = Duration::from_millis(50);
        let (up, down) = pair.in_ns_a(move || {
            let up = ping(b, 4, interval, Duration::from_secs(1)).unwrap();
            let down = ping(c, 3, interval, Duration::from_millis(500)).unwrap();
            (up, down)
        });
        assert_eq!((up.sent, up.received), (4, 4), "{up:?}");
        assert!(up.average_rtt_ms > 0.0, "{up:?}");
        assert_eq!(up.packet_loss_percentage(), 0.0);
        assert_eq!((down.sent, down.received), (3, 0), "{down:?}");
        assert_eq!(down.packet_loss_percentage(), 100.0);
        assert_eq!(down.average_rtt_ms, 0.0);
    }

    #[test]
    fn full_size_ping_between_namespaces() {
        if netns_unavailable().is_some() {
            return;
        }
        let pair = VethPair::new("m");
        let b = pair.addr(2);
        let interval = Duration::from_millis(50);
        let (mtu, whole) =
            pair.in_ns_a(move || ping_full_size(b, 2, interval, Duration::from_secs(1)).unwrap());
        assert_eq!(mtu, 1500);
        assert_eq!((whole.sent, whole.received), (2, 2), "{whole:?}");
        // The far end takes at most 1400 bytes: full-size packets from
        // this side are dropped, ordinary echoes still pass.
        let if_b = format!("okd{}mb", std::process::id());
        ip(&["-n", &pair.ns_b, "link", "set", &if_b, "mtu", "1400"]);
        let (mtu, cut, small) = pair.in_ns_a(move || {
            let (mtu, cut) = ping_full_size(b, 2, interval, Duration::from_millis(500)).unwrap();
            let small = ping(IpAddr::V4(b), 2, interval, Duration::from_secs(1)).unwrap();
            (mtu, cut, small)
        });
        assert_eq!(mtu, 1500);
        assert_eq!((cut.sent, cut.received), (2, 0), "{cut:?}");
        assert_eq!(small.received, 2, "{small:?}");
    }
}
