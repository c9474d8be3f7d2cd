//! ARP (RFC 826) on an `AF_PACKET` socket: [`arp_probe`] of one address,
//! [`arp_scan`] of many, and the Ethernet frames they send and read.

use std::io::{self, Read, Write};
use std::net::Ipv4Addr;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use socket2::{Domain, Protocol, Socket, Type};

use super::is_timeout;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::netns::{VethPair, ip, netns_unavailable};

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
}
