//! The packets of ICMP echo (RFC 792, RFC 4443): requests, the IPv4 header
//! with Don't Fragment (RFC 791) and the replies read back.

use std::net::Ipv4Addr;

/// ICMPv4 type of an echo request (RFC 792).
pub(super) const ICMPV4_ECHO_REQUEST: u8 = 8;
/// ICMPv4 type of an echo reply (RFC 792).
const ICMPV4_ECHO_REPLY: u8 = 0;
/// ICMPv6 type of an echo request (RFC 4443 section 4.1).
pub(super) const ICMPV6_ECHO_REQUEST: u8 = 128;
/// ICMPv6 type of an echo reply (RFC 4443 section 4.2).
const ICMPV6_ECHO_REPLY: u8 = 129;
/// Bytes of data after the 8-byte echo header, as `ping` sends by default.
pub(super) const PING_DATA_LEN: usize = 56;

/// Bytes of an IPv4 header without options (RFC 791).
pub(super) const IPV4_HEADER_LEN: usize = 20;

/// An IPv4 header (RFC 791 section 3.1) for an ICMP payload of
/// `payload_len` bytes to `dst`: version 4, no options, DF set, TTL 64,
/// protocol 1. Source, identification and checksum are left 0 for the
/// kernel to fill in (raw(7), `IP_HDRINCL`); it fills the total length too,
/// which is set here all the same.
pub(super) fn ipv4_header_df(dst: Ipv4Addr, payload_len: usize) -> Vec<u8> {
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

/// An ICMP(v6) echo request of `request_type` with `ident`, `seq` and
/// `data_len` bytes of data; the checksum filled in for IPv4 (the kernel
/// fills ICMPv6's).
pub(super) fn echo_request(
    request_type: u8,
    ident: u16,
    seq: u16,
    ipv4: bool,
    data_len: usize,
) -> Vec<u8> {
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
pub(super) fn echo_reply_seq(packet: &[u8], ident: u16, ipv4: bool) -> Option<u16> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
