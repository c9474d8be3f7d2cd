//! The low-level probes behind the agent's steps, done in-process where
//! openshift/assisted-installer-agent runs tools:
//!
//! - [`arp_probe`]: who answers ARP for an IPv4 address on an interface
//!   (its `arping -c … -w … -I <if> <ip>`, RFC 826), for the free-addresses
//!   and connectivity checks;
//! - [`ping`]: ICMP echo round trips (its `ping -c … -i … -W …`, RFC 792 /
//!   RFC 4443), for the connectivity check;
//! - [`disk_sync_speed`]: the 99th percentile of `fdatasync` latency of
//!   small sequential writes (its `fio --rw=write --ioengine=sync
//!   --size=22m --bs=2300 --fdatasync=1`), for the installation disk speed
//!   check.
//!
//! All three block; callers on the runtime use
//! `tokio::task::spawn_blocking`. The network probes use raw sockets and so
//! need root (`CAP_NET_RAW`), which the agent has. They act in the network
//! namespace of the calling thread, which is how the tests run them between
//! two namespaces of their own.
//!
//! No `unsafe`: the workspace forbids it. The packet socket is opened with
//! `socket2` and bound to the link-layer address `getifaddrs` reports for
//! the interface (a `sockaddr_ll` carrying its index), through `nix`.

use std::io::{self, Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::{Duration, Instant};

use socket2::{Domain, Protocol, Socket, Type};

/// EtherType of ARP (RFC 826; IEEE registry), 0x0806.
const ETHERTYPE_ARP: u16 = 0x0806;
/// EtherType of IPv4, the protocol type ARP resolves here, 0x0800.
const ETHERTYPE_IPV4: u16 = 0x0800;
/// ARP hardware type of Ethernet (RFC 826 `ar$hrd`), 1.
const ARP_HTYPE_ETHERNET: u16 = 1;
/// ARP opcode of a request (RFC 826 `ares_op$REQUEST`).
const ARP_REQUEST: u16 = 1;
/// ARP opcode of a reply (RFC 826 `ares_op$REPLY`).
const ARP_REPLY: u16 = 2;
/// Length of an Ethernet header (destination, source, EtherType), bytes.
const ETH_HEADER_LEN: usize = 14;
/// Length of an Ethernet/IPv4 ARP packet, bytes.
const ARP_LEN: usize = 28;
/// The shortest Ethernet frame without its FCS (`ETH_ZLEN`), bytes; the
/// request is padded with zeros to it.
const ETH_MIN_FRAME: usize = 60;
/// How often [`arp_probe`] sends its request again while waiting.
pub const ARP_RESEND_INTERVAL: Duration = Duration::from_millis(200);

/// Sends an ARP request for `target` out of the interface `ifname` and
/// returns the MAC address (6 bytes) of whoever answers, `None` when nobody
/// did within `timeout`.
///
/// The request follows RFC 826 for Ethernet and IPv4: an Ethernet broadcast
/// (ff:ff:ff:ff:ff:ff, EtherType 0x0806) whose sender hardware address is
/// the interface's MAC and whose sender protocol address is `source`
/// (give `0.0.0.0` for an RFC 5227 probe that leaves the peers' caches
/// alone), target hardware address zero. It goes out on an `AF_PACKET`,
/// `SOCK_RAW` socket for `ETH_P_ARP` bound to the interface, and is sent
/// again every [`ARP_RESEND_INTERVAL`] (200 ms) until a reply comes or
/// `timeout` has passed, as `arping -w` does. The first ARP reply (opcode 2)
/// whose sender protocol address is `target` wins; replies for other
/// addresses are ignored.
///
/// Blocks for up to `timeout` (plus scheduling slack); acts in the calling
/// thread's network namespace. Needs `CAP_NET_RAW`.
///
/// # Errors
///
/// `NotFound` naming the interface when it does not exist in this network
/// namespace; `InvalidInput` when it has no Ethernet (6-byte) address; the
/// socket, bind, send and receive errors (e.g. `PermissionDenied` without
/// `CAP_NET_RAW`, or the interface being down) with the interface named.
pub fn arp_probe(
    ifname: &str,
    source: Ipv4Addr,
    target: Ipv4Addr,
    timeout: Duration,
) -> io::Result<Option<[u8; 6]>> {
    Ok(arp_scan(ifname, source, &[target], timeout)?
        .get(&target)
        .copied())
}

/// [`arp_probe`] for many addresses at once: one packet socket, the
/// requests for every target in `targets` sent in one burst every
/// [`ARP_RESEND_INTERVAL`] to the targets that have not answered, until
/// all answered or `timeout` passed (`nmap -sn -PR`'s ARP ping scan, for
/// the free-addresses step). Returns the targets that answered with their
/// MAC addresses; the same rules for replies and the same errors as
/// [`arp_probe`]. Blocks for up to `timeout`.
pub fn arp_scan(
    ifname: &str,
    source: Ipv4Addr,
    targets: &[Ipv4Addr],
    timeout: Duration,
) -> io::Result<std::collections::HashMap<Ipv4Addr, [u8; 6]>> {
    let what = match targets {
        [one] => one.to_string(),
        many => format!("{} addresses", many.len()),
    };
    let ctx = |step: &str, e: io::Error| {
        io::Error::new(
            e.kind(),
            format!("ARP probe for {what} on interface {ifname}: {step}: {e}"),
        )
    };
    let link = link_address(ifname)?;
    let mac = link.addr().filter(|_| link.halen() == 6).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("interface {ifname} has no Ethernet (6-byte) hardware address"),
        )
    })?;
    let socket = Socket::new(
        Domain::PACKET,
        Type::RAW,
        Some(Protocol::from(i32::from(ETHERTYPE_ARP.to_be()))),
    )
    .map_err(|e| ctx("opening an AF_PACKET socket (needs CAP_NET_RAW)", e))?;
    // The address getifaddrs reports for the link is a sockaddr_ll with
    // the interface's index and protocol 0, which keeps the socket's
    // ETH_P_ARP: bound, the socket sends out of and hears only that link.
    nix::sys::socket::bind(socket.as_raw_fd(), &link)
        .map_err(|e| ctx("binding the packet socket", e.into()))?;
    let wanted: std::collections::HashSet<Ipv4Addr> = targets.iter().copied().collect();
    let mut found = std::collections::HashMap::new();

    let start = Instant::now();
    let deadline = start + timeout;
    let mut next_send = start;
    let mut buf = [0u8; 1600];
    while found.len() < wanted.len() {
        let now = Instant::now();
        if now >= deadline {
            break;
        }
        if now >= next_send {
            for t in targets.iter().filter(|t| !found.contains_key(*t)) {
                match (&socket).write_all(&arp_request(mac, source, *t)) {
                    Ok(()) => {}
                    // A full transmit queue drops this round's rest; the
                    // next round sends them again.
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) => return Err(ctx("sending the request", e)),
                }
            }
            next_send += ARP_RESEND_INTERVAL;
        }
        let wait = next_send.min(deadline).saturating_duration_since(now);
        socket
            .set_read_timeout(Some(wait.max(Duration::from_millis(1))))
            .map_err(|e| ctx("setting the receive timeout", e))?;
        match (&socket).read(&mut buf) {
            Ok(n) => {
                if let Some((ip, mac)) = arp_reply(&buf[..n])
                    && wanted.contains(&ip)
                {
                    found.entry(ip).or_insert(mac);
                }
            }
            Err(e) if is_timeout(&e) || e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(ctx("receiving", e)),
        }
    }
    Ok(found)
}

/// The link-layer (`AF_PACKET`) address `getifaddrs` reports for the
/// interface `ifname` in the calling thread's network namespace.
fn link_address(ifname: &str) -> io::Result<nix::sys::socket::LinkAddr> {
    let addrs = nix::ifaddrs::getifaddrs().map_err(|e| {
        io::Error::new(
            io::Error::from(e).kind(),
            format!("listing the interfaces to find {ifname}: {e}"),
        )
    })?;
    let mut found = false;
    for a in addrs.filter(|a| a.interface_name == ifname) {
        found = true;
        if let Some(link) = a.address.as_ref().and_then(|s| s.as_link_addr()) {
            return Ok(*link);
        }
    }
    Err(if found {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("interface {ifname} has no link-layer address"),
        )
    } else {
        io::Error::new(
            io::ErrorKind::NotFound,
            format!("interface {ifname} not found"),
        )
    })
}

/// An Ethernet broadcast frame carrying an RFC 826 ARP request for
/// `target` from `mac`/`source`, padded to [`ETH_MIN_FRAME`] bytes.
fn arp_request(mac: [u8; 6], source: Ipv4Addr, target: Ipv4Addr) -> Vec<u8> {
    let mut f = Vec::with_capacity(ETH_MIN_FRAME);
    f.extend_from_slice(&[0xff; 6]); // destination: broadcast
    f.extend_from_slice(&mac); // source
    f.extend_from_slice(&ETHERTYPE_ARP.to_be_bytes());
    f.extend_from_slice(&ARP_HTYPE_ETHERNET.to_be_bytes()); // ar$hrd
    f.extend_from_slice(&ETHERTYPE_IPV4.to_be_bytes()); // ar$pro
    f.push(6); // ar$hln
    f.push(4); // ar$pln
    f.extend_from_slice(&ARP_REQUEST.to_be_bytes()); // ar$op
    f.extend_from_slice(&mac); // ar$sha
    f.extend_from_slice(&source.octets()); // ar$spa
    f.extend_from_slice(&[0; 6]); // ar$tha: unknown
    f.extend_from_slice(&target.octets()); // ar$tpa
    f.resize(ETH_MIN_FRAME, 0);
    f
}

/// The sender protocol and hardware addresses of `frame` when it is an
/// Ethernet/IPv4 ARP reply.
fn arp_reply(frame: &[u8]) -> Option<(Ipv4Addr, [u8; 6])> {
    let be16 = |at: usize| u16::from_be_bytes([frame[at], frame[at + 1]]);
    if frame.len() < ETH_HEADER_LEN + ARP_LEN || be16(12) != ETHERTYPE_ARP {
        return None;
    }
    let arp = &frame[ETH_HEADER_LEN..];
    let ok = be16(14) == ARP_HTYPE_ETHERNET
        && be16(16) == ETHERTYPE_IPV4
        && arp[4] == 6
        && arp[5] == 4
        && be16(20) == ARP_REPLY;
    let spa: [u8; 4] = arp[14..18].try_into().expect("4 bytes");
    ok.then(|| (Ipv4Addr::from(spa), arp[8..14].try_into().expect("6 bytes")))
}

/// Whether a socket read ended because its receive timeout passed.
fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

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

/// ICMPv4 type of an echo request (RFC 792).
const ICMPV4_ECHO_REQUEST: u8 = 8;
/// ICMPv4 type of an echo reply (RFC 792).
const ICMPV4_ECHO_REPLY: u8 = 0;
/// ICMPv6 type of an echo request (RFC 4443 section 4.1).
const ICMPV6_ECHO_REQUEST: u8 = 128;
/// ICMPv6 type of an echo reply (RFC 4443 section 4.2).
const ICMPV6_ECHO_REPLY: u8 = 129;
/// Bytes of data after the 8-byte echo header, as `ping` sends by default.
const PING_DATA_LEN: usize = 56;

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

/// Bytes of an IPv4 header without options (RFC 791).
const IPV4_HEADER_LEN: usize = 20;

/// An IPv4 header (RFC 791 section 3.1) for an ICMP payload of
/// `payload_len` bytes to `dst`: version 4, no options, DF set, TTL 64,
/// protocol 1. Source, identification and checksum are left 0 for the
/// kernel to fill in (raw(7), `IP_HDRINCL`); it fills the total length too,
/// which is set here all the same.
fn ipv4_header_df(dst: Ipv4Addr, payload_len: usize) -> Vec<u8> {
    let total = (IPV4_HEADER_LEN + payload_len) as u16;
    let mut h = Vec::with_capacity(IPV4_HEADER_LEN + payload_len);
    h.push(0x45); // version 4, IHL 5 words
    h.push(0); // DSCP/ECN
    h.extend_from_slice(&total.to_be_bytes());
    h.extend_from_slice(&[0, 0]); // identification: the kernel's
    h.extend_from_slice(&0x4000u16.to_be_bytes()); // flags: DF, offset 0
    h.push(64); // TTL
    h.push(1); // protocol: ICMP
    h.extend_from_slice(&[0, 0]); // checksum: the kernel's
    h.extend_from_slice(&[0, 0, 0, 0]); // source: the kernel's
    h.extend_from_slice(&dst.octets());
    h
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

/// An ICMP(v6) echo request of `request_type` with `ident`, `seq` and
/// `data_len` bytes of data; the checksum filled in for IPv4 (the kernel
/// fills ICMPv6's).
fn echo_request(request_type: u8, ident: u16, seq: u16, ipv4: bool, data_len: usize) -> Vec<u8> {
    let mut p = Vec::with_capacity(8 + data_len);
    p.push(request_type);
    p.push(0); // code
    p.extend_from_slice(&[0, 0]); // checksum, below
    p.extend_from_slice(&ident.to_be_bytes());
    p.extend_from_slice(&seq.to_be_bytes());
    p.extend((0..data_len).map(|i| i as u8));
    if ipv4 {
        let sum = internet_checksum(&p);
        p[2..4].copy_from_slice(&sum.to_be_bytes());
    }
    p
}

/// The Internet checksum (RFC 1071, as RFC 792 uses it for ICMP): the
/// one's complement of the one's-complement sum of the big-endian 16-bit
/// words of `data`, an odd last byte padded with zero.
fn internet_checksum(data: &[u8]) -> u16 {
    let mut sum: u32 = data
        .chunks(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], *w.get(1).unwrap_or(&0)])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// The sequence number of `packet` when it is an echo reply carrying
/// `ident`: for IPv4 a raw socket reads the IP header first (its length
/// from the IHL field), for IPv6 only the ICMPv6 message.
fn echo_reply_seq(packet: &[u8], ident: u16, ipv4: bool) -> Option<u16> {
    let (icmp, reply_type) = if ipv4 {
        let ihl = usize::from(*packet.first()? & 0x0f) * 4;
        if packet.first()? >> 4 != 4 || packet.get(9) != Some(&1) {
            return None;
        }
        (packet.get(ihl..)?, ICMPV4_ECHO_REPLY)
    } else {
        (packet, ICMPV6_ECHO_REPLY)
    };
    if icmp.len() < 8 || icmp[0] != reply_type || icmp[1] != 0 {
        return None;
    }
    (u16::from_be_bytes([icmp[4], icmp[5]]) == ident)
        .then(|| u16::from_be_bytes([icmp[6], icmp[7]]))
}

/// How much [`disk_sync_speed`] writes: 22 MiB (fio's `--size=22m`).
pub const DISK_SPEED_SIZE: u64 = 22 * 1024 * 1024;
/// The size of each of [`disk_sync_speed`]'s writes: 2300 bytes (fio's
/// `--bs=2300`).
pub const DISK_SPEED_BLOCK: usize = 2300;

/// What [`disk_sync_speed`] measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DiskSpeed {
    /// The 99th percentile (nearest rank) of the `fdatasync` latencies, in
    /// milliseconds: what assisted's installation disk speed check compares
    /// with its threshold (etcd's 10 ms by default).
    pub p99_ms: f64,
    /// How many writes (each followed by one timed `fdatasync`) were done.
    pub writes: u32,
}

/// Measures how fast `path` makes small sequential writes durable, the way
/// assisted-installer-agent's installation disk speed check runs fio
/// (`fio --filename=<path> --name=test --rw=write --ioengine=sync
/// --size=22m --bs=2300 --fdatasync=1`, then reads the 99th percentile of
/// `sync` latency), which is etcd's recommended disk check.
///
/// Opens `path` for writing, without creating or truncating it (a block
/// device, or a regular file, which grows if it is shorter than 22 MiB),
/// writes [`DISK_SPEED_BLOCK`] (2300) byte blocks one after the other from
/// offset 0 up to [`DISK_SPEED_SIZE`] (22 MiB; the last block is shortened
/// to end there, ⌈22 MiB / 2300⌉ = 10030 writes), calls `fdatasync` after
/// each write and times it. Returns the 99th percentile (nearest rank) of
/// those times in milliseconds.
///
/// **This overwrites the first 22 MiB of `path`**: on the installation
/// disk, which the agent runs it on only after the user started the
/// install (the disk is about to be written anyway), it destroys the
/// partition table and whatever the start of the disk held.
///
/// Blocks (on slow disks for tens of seconds).
///
/// # Errors
///
/// Opening (e.g. `NotFound`), writing or syncing `path`, with the path
/// named.
pub fn disk_sync_speed(path: &Path) -> io::Result<DiskSpeed> {
    let ctx = |what: &str, e: io::Error| {
        io::Error::new(
            e.kind(),
            format!("disk speed check of {}: {what}: {e}", path.display()),
        )
    };
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(|e| ctx("opening for writing", e))?;
    let block: Vec<u8> = (0..DISK_SPEED_BLOCK)
        .map(|i| (i as u8).wrapping_mul(31) ^ 0x5a)
        .collect();
    let mut latencies =
        Vec::with_capacity(DISK_SPEED_SIZE.div_ceil(DISK_SPEED_BLOCK as u64) as usize);
    let mut offset = 0u64;
    while offset < DISK_SPEED_SIZE {
        let len = (DISK_SPEED_SIZE - offset).min(DISK_SPEED_BLOCK as u64) as usize;
        file.write_all_at(&block[..len], offset)
            .map_err(|e| ctx(&format!("writing at offset {offset}"), e))?;
        let start = Instant::now();
        file.sync_data()
            .map_err(|e| ctx(&format!("fdatasync after writing at offset {offset}"), e))?;
        latencies.push(start.elapsed());
        offset += len as u64;
    }
    Ok(DiskSpeed {
        p99_ms: percentile(&mut latencies, 99).as_secs_f64() * 1000.0,
        writes: latencies.len() as u32,
    })
}

/// The `p`th percentile (nearest rank: the ⌈p/100 × n⌉th smallest) of
/// `values`, zero when there are none.
fn percentile(values: &mut [Duration], p: usize) -> Duration {
    if values.is_empty() {
        return Duration::ZERO;
    }
    values.sort_unstable();
    let rank = (p * values.len()).div_ceil(100).max(1);
    values[rank - 1]
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    #[test]
    fn arp_frames_round_trip() {
        let mac = [2, 0, 0, 0, 0, 1];
        let req = arp_request(mac, Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2));
        assert_eq!(req.len(), ETH_MIN_FRAME);
        assert_eq!(&req[..6], &[0xff; 6]);
        assert_eq!(&req[12..14], &[0x08, 0x06]);
        // A request is not a reply.
        assert_eq!(arp_reply(&req), None);
        // Turn it into the reply of 10.0.0.2 at 02:..:02.
        let mut reply = req.clone();
        reply[21] = 2;
        reply[22..28].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
        reply[28..32].copy_from_slice(&[10, 0, 0, 2]);
        assert_eq!(
            arp_reply(&reply),
            Some((Ipv4Addr::new(10, 0, 0, 2), [2, 0, 0, 0, 0, 2]))
        );
        assert_eq!(arp_reply(&reply[..30]), None);
    }

    #[test]
    fn icmp_checksum_and_replies() {
        // RFC 1071's example words sum to 0xddf2 (checksum 0x220d).
        assert_eq!(
            internet_checksum(&[0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7]),
            !0xddf2
        );
        let req = echo_request(ICMPV4_ECHO_REQUEST, 0x1234, 7, true, PING_DATA_LEN);
        assert_eq!(req.len(), 8 + PING_DATA_LEN);
        // A packet with its checksum in place sums to zero.
        assert_eq!(internet_checksum(&req), 0);
        // The same message as a reply behind a 20-byte IPv4 header.
        let mut packet = vec![0x45, 0, 0, 0, 0, 0, 0, 0, 64, 1];
        packet.resize(20, 0);
        let mut reply = req.clone();
        reply[0] = ICMPV4_ECHO_REPLY;
        packet.extend_from_slice(&reply);
        assert_eq!(echo_reply_seq(&packet, 0x1234, true), Some(7));
        assert_eq!(echo_reply_seq(&packet, 0x1235, true), None);
        packet[20] = ICMPV4_ECHO_REQUEST;
        assert_eq!(echo_reply_seq(&packet, 0x1234, true), None);
        let mut v6 = echo_request(ICMPV6_ECHO_REQUEST, 9, 3, false, PING_DATA_LEN);
        assert_eq!(&v6[2..4], &[0, 0]);
        v6[0] = ICMPV6_ECHO_REPLY;
        assert_eq!(echo_reply_seq(&v6, 9, false), Some(3));
    }

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
    fn percentile_nearest_rank() {
        let mut v: Vec<Duration> = (1..=200).rev().map(Duration::from_millis).collect();
        assert_eq!(percentile(&mut v, 99), Duration::from_millis(198));
        let mut one = vec![Duration::from_millis(5)];
        assert_eq!(percentile(&mut one, 99), Duration::from_millis(5));
        assert_eq!(percentile(&mut [], 99), Duration::ZERO);
    }

    #[test]
    fn disk_sync_speed_of_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("disk");
        let file = std::fs::File::create(&path).unwrap();
        file.set_len(DISK_SPEED_SIZE).unwrap();
        drop(file);
        let speed = disk_sync_speed(&path).unwrap();
        assert_eq!(
            u64::from(speed.writes),
            DISK_SPEED_SIZE.div_ceil(DISK_SPEED_BLOCK as u64)
        );
        assert_eq!(speed.writes, 10030);
        assert!(speed.p99_ms > 0.0, "{speed:?}");
        assert_eq!(std::fs::metadata(&path).unwrap().len(), DISK_SPEED_SIZE);
        // The last (short) block ends exactly at 22 MiB with the pattern.
        let data = std::fs::read(&path).unwrap();
        assert_eq!(data[0], 0x5a);

        let missing = dir.path().join("no-such-disk");
        let err = disk_sync_speed(&missing).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
        assert!(
            err.to_string().contains(&missing.display().to_string()),
            "{err}"
        );
        assert!(!missing.exists(), "the check must not create the path");
    }

    #[test]
    fn arp_probe_of_a_missing_interface_names_it() {
        let err = arp_probe(
            "okd-no-such-if",
            Ipv4Addr::UNSPECIFIED,
            Ipv4Addr::new(10, 0, 0, 1),
            Duration::from_millis(10),
        )
        .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
        assert!(err.to_string().contains("okd-no-such-if"), "{err}");
    }

    /// Runs `ip <args>`, panicking with its stderr when it fails.
    fn ip(args: &[&str]) -> String {
        let out = Command::new("ip").args(args).output().expect("running ip");
        assert!(
            out.status.success(),
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Why the namespace tests cannot run here (not root, no `ip`), `None`
    /// when they can. With `OKD_REQUIRE_TOOLS=1` a reason fails the test.
    fn netns_unavailable() -> Option<String> {
        let reason = if !nix::unistd::geteuid().is_root() {
            Some("not running as root".to_string())
        } else if Command::new("ip").arg("-V").output().is_err() {
            Some("the ip tool (iproute2) is missing".to_string())
        } else {
            None
        };
        if let Some(r) = &reason {
            assert!(
                std::env::var("OKD_REQUIRE_TOOLS").as_deref() != Ok("1"),
                "OKD_REQUIRE_TOOLS=1 but {r}"
            );
            eprintln!("skipped: {r}");
        }
        reason
    }

    /// Two network namespaces joined by a veth pair, `10.200.<x>.1/24` on
    /// `if_a` in `ns_a` and `.2/24` on `if_b` in `ns_b`, both links up;
    /// removed (with the pair) on drop, when a test fails as well.
    struct VethPair {
        ns_a: String,
        ns_b: String,
        if_a: String,
        mac_b: [u8; 6],
        net: u8,
    }

    impl VethPair {
        fn new(tag: &str) -> VethPair {
            let pid = std::process::id();
            let mut pair = VethPair {
                ns_a: format!("okdnet-{pid}-{tag}-a"),
                ns_b: format!("okdnet-{pid}-{tag}-b"),
                if_a: format!("okd{pid}{tag}a"),
                mac_b: [0; 6],
                net: (pid % 250) as u8,
            };
            let if_b = format!("okd{pid}{tag}b");
            assert!(if_b.len() <= 15, "interface name {if_b} too long");
            ip(&["netns", "add", &pair.ns_a]);
            // `pair` exists: a panic from here on drops it, removing both.
            ip(&["netns", "add", &pair.ns_b]);
            ip(&[
                "-n", &pair.ns_a, "link", "add", &pair.if_a, "type", "veth", "peer", "name", &if_b,
                "netns", &pair.ns_b,
            ]);
            let (a, b) = (pair.addr(1), pair.addr(2));
            ip(&[
                "-n",
                &pair.ns_a,
                "addr",
                "add",
                &format!("{a}/24"),
                "dev",
                &pair.if_a,
            ]);
            ip(&[
                "-n",
                &pair.ns_b,
                "addr",
                "add",
                &format!("{b}/24"),
                "dev",
                &if_b,
            ]);
            for (ns, ifname) in [(&pair.ns_a, &pair.if_a), (&pair.ns_b, &if_b)] {
                ip(&["-n", ns, "link", "set", "lo", "up"]);
                ip(&["-n", ns, "link", "set", ifname, "up"]);
            }
            let show = ip(&["-n", &pair.ns_b, "link", "show", &if_b]);
            let mac = show
                .split_whitespace()
                .skip_while(|w| *w != "link/ether")
                .nth(1)
                .unwrap_or_else(|| panic!("no link/ether in {show}"));
            let bytes: Vec<u8> = mac
                .split(':')
                .map(|h| u8::from_str_radix(h, 16).unwrap())
                .collect();
            pair.mac_b = bytes.try_into().unwrap();
            pair
        }

        fn addr(&self, host: u8) -> Ipv4Addr {
            Ipv4Addr::new(10, 200, self.net, host)
        }

        /// Runs `f` on a new thread that entered `ns_a`'s network
        /// namespace (the test's other threads stay where they are).
        fn in_ns_a<T: Send + 'static>(&self, f: impl FnOnce() -> T + Send + 'static) -> T {
            let path = format!("/run/netns/{}", self.ns_a);
            std::thread::spawn(move || {
                let ns = std::fs::File::open(&path).unwrap();
                nix::sched::setns(ns, nix::sched::CloneFlags::CLONE_NEWNET).unwrap();
                f()
            })
            .join()
            .unwrap()
        }
    }

    impl Drop for VethPair {
        fn drop(&mut self) {
            for ns in [&self.ns_a, &self.ns_b] {
                let _ = Command::new("ip").args(["netns", "del", ns]).output();
            }
        }
    }

    #[test]
    fn arp_probe_between_namespaces() {
        if netns_unavailable().is_some() {
            return;
        }
        let pair = VethPair::new("r");
        let (ifname, a, b, c) = (pair.if_a.clone(), pair.addr(1), pair.addr(2), pair.addr(3));
        let (found, unused, waited) = pair.in_ns_a(move || {
            let found = arp_probe(&ifname, a, b, Duration::from_secs(2)).unwrap();
            let start = Instant::now();
            let unused = arp_probe(&ifname, a, c, Duration::from_millis(700)).unwrap();
            (found, unused, start.elapsed())
        });
        assert_eq!(found, Some(pair.mac_b));
        assert_eq!(unused, None);
        assert!(
            waited >= Duration::from_millis(700) && waited < Duration::from_millis(1500),
            "{waited:?}"
        );
    }

    #[test]
    fn arp_scan_between_namespaces() {
        if netns_unavailable().is_some() {
            return;
        }
        let pair = VethPair::new("s");
        let if_b = format!("okd{}sb", std::process::id());
        ip(&[
            "-n",
            &pair.ns_b,
            "addr",
            "add",
            &format!("{}/24", pair.addr(7)),
            "dev",
            &if_b,
        ]);
        let (ifname, a) = (pair.if_a.clone(), pair.addr(1));
        let targets: Vec<Ipv4Addr> = (2..=254).map(|h| pair.addr(h)).collect();
        let found = pair.in_ns_a(move || arp_scan(&ifname, a, &targets, Duration::from_secs(2)));
        let found = found.unwrap();
        let mut answered: Vec<Ipv4Addr> = found.keys().copied().collect();
        answered.sort();
        assert_eq!(answered, vec![pair.addr(2), pair.addr(7)]);
        assert!(found.values().all(|m| *m == pair.mac_b), "{found:?}");
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

    #[test]
    fn df_header() {
        let h = ipv4_header_df(Ipv4Addr::new(10, 0, 0, 9), 1480);
        assert_eq!(h.len(), 20);
        assert_eq!(h[0], 0x45);
        assert_eq!(u16::from_be_bytes([h[2], h[3]]), 1500);
        assert_eq!(u16::from_be_bytes([h[6], h[7]]) & 0x4000, 0x4000);
        assert_eq!(h[9], 1);
        assert_eq!(&h[16..20], &[10, 0, 0, 9]);
    }
}
