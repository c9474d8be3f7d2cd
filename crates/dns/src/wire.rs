//! The DNS message format (RFC 1035 §4.1) for the server's own use: reading
//! a query's header, question and EDNS OPT record (RFC 6891), encoding
//! names and the record types of [`crate::zone`], and assembling responses.

use std::borrow::Cow;
use std::fmt::Write as _;

use crate::zone::RecordData;

/// Header length (RFC 1035 §4.1.1).
pub(crate) const HEADER_LEN: usize = 12;
/// The EDNS UDP payload size we advertise and accept at most (the DNS Flag
/// Day 2020 value).
pub(crate) const EDNS_PAYLOAD: u16 = 1232;
/// Largest UDP response without EDNS (RFC 1035 §4.2.1).
pub(crate) const PLAIN_UDP_MAX: usize = 512;

/// TYPE OPT (RFC 6891).
const TYPE_OPT: u16 = 41;
/// QTYPE `*` (RFC 1035 §3.2.3).
pub(crate) const TYPE_ANY: u16 = 255;
/// CLASS IN.
pub(crate) const CLASS_IN: u16 = 1;
/// QCLASS `*`.
pub(crate) const CLASS_ANY: u16 = 255;

/// RCODE values (RFC 1035 §4.1.1, RFC 6891 §9).
pub(crate) mod rcode {
    /// No error.
    pub const NOERROR: u16 = 0;
    /// Format error.
    pub const FORMERR: u16 = 1;
    /// Server failure.
    pub const SERVFAIL: u16 = 2;
    /// Name error.
    pub const NXDOMAIN: u16 = 3;
    /// Not implemented.
    pub const NOTIMP: u16 = 4;
    /// Refused.
    pub const REFUSED: u16 = 5;
    /// Bad OPT version (extended RCODE 16).
    pub const BADVERS: u16 = 16;
}

/// The EDNS OPT record of a query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Edns {
    /// Requestor's UDP payload size (at least 512 is assumed).
    pub payload: u16,
    /// EDNS version (only 0 is known).
    pub version: u8,
    /// DNSSEC OK bit (copied into the response, RFC 3225).
    pub dnssec_ok: bool,
}

/// A query as far as the server reads it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Query<'a> {
    /// Message ID.
    pub id: u16,
    /// RD flag.
    pub rd: bool,
    /// CD flag (copied, RFC 4035 §3.1.6).
    pub cd: bool,
    /// The question section as received: QNAME, QTYPE, QCLASS.
    pub question: &'a [u8],
    /// QNAME in wire form, as received (original case).
    pub qname: &'a [u8],
    /// QTYPE.
    pub qtype: u16,
    /// QCLASS.
    pub qclass: u16,
    /// The OPT record, if any.
    pub edns: Option<Edns>,
}

/// Why a message is not a query we can look up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reject {
    /// Not worth an answer: shorter than a header, or a response (QR set).
    Drop,
    /// Answer with this RCODE and no question (FORMERR, NOTIMP).
    Error {
        /// Message ID.
        id: u16,
        /// RD flag.
        rd: bool,
        /// Opcode (echoed).
        opcode: u8,
        /// RCODE to send.
        rcode: u16,
    },
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*b.get(at)?, *b.get(at + 1)?]))
}

/// Length of the uncompressed name at `b[at..]` (labels and the root byte);
/// `None` when truncated, compressed, over 255 octets or using a reserved
/// label type.
fn plain_name_len(b: &[u8], at: usize) -> Option<usize> {
    let mut i = at;
    loop {
        let len = usize::from(*b.get(i)?);
        if len == 0 {
            let n = i + 1 - at;
            return (n <= 255).then_some(n);
        }
        if len > 63 {
            return None;
        }
        i += 1 + len;
        if i - at > 255 {
            return None;
        }
    }
}

/// Skips a possibly compressed name (RFC 1035 §4.1.4) and returns the
/// offset after it.
fn skip_name(b: &[u8], mut i: usize) -> Option<usize> {
    loop {
        let len = *b.get(i)?;
        match len & 0xc0 {
            0x00 if len == 0 => return Some(i + 1),
            0x00 => i += 1 + usize::from(len),
            0xc0 => {
                b.get(i + 1)?;
                return Some(i + 2);
            }
            _ => return None,
        }
    }
}

/// Reads a query (RFC 1035 §4.1): one question with an uncompressed QNAME,
/// and the OPT record (RFC 6891 §6.1.1) from the additional section.
pub(crate) fn parse_query(b: &[u8]) -> Result<Query<'_>, Reject> {
    if b.len() < HEADER_LEN {
        return Err(Reject::Drop);
    }
    let id = u16::from_be_bytes([b[0], b[1]]);
    let flags = u16::from_be_bytes([b[2], b[3]]);
    if flags & 0x8000 != 0 {
        return Err(Reject::Drop);
    }
    let rd = flags & 0x0100 != 0;
    let opcode = ((flags >> 11) & 0xf) as u8;
    let err = |rcode| Reject::Error {
        id,
        rd,
        opcode,
        rcode,
    };
    if opcode != 0 {
        return Err(err(rcode::NOTIMP));
    }
    let count = |at| u16::from_be_bytes([b[at], b[at + 1]]);
    let (qd, an, ns, ar) = (count(4), count(6), count(8), count(10));
    if qd != 1 {
        return Err(err(rcode::FORMERR));
    }
    let formerr = || err(rcode::FORMERR);
    let name_len = plain_name_len(b, HEADER_LEN).ok_or_else(formerr)?;
    let qend = HEADER_LEN + name_len + 4;
    if b.len() < qend {
        return Err(formerr());
    }
    let qtype = u16::from_be_bytes([b[qend - 4], b[qend - 3]]);
    let qclass = u16::from_be_bytes([b[qend - 2], b[qend - 1]]);
    let mut edns = None;
    let mut i = qend;
    for n in 0..usize::from(an) + usize::from(ns) + usize::from(ar) {
        let name_start = i;
        i = skip_name(b, i).ok_or_else(formerr)?;
        let rtype = u16_at(b, i).ok_or_else(formerr)?;
        let class = u16_at(b, i + 2).ok_or_else(formerr)?;
        let ttl_hi = u16_at(b, i + 4).ok_or_else(formerr)?;
        let ttl_lo = u16_at(b, i + 6).ok_or_else(formerr)?;
        let rdlen = usize::from(u16_at(b, i + 8).ok_or_else(formerr)?);
        i += 10 + rdlen;
        if i > b.len() {
            return Err(formerr());
        }
        if rtype == TYPE_OPT {
            // Only in the additional section, only once, owned by the root.
            if n < usize::from(an) + usize::from(ns) || edns.is_some() || b[name_start] != 0 {
                return Err(formerr());
            }
            edns = Some(Edns {
                payload: class.max(PLAIN_UDP_MAX as u16),
                version: (ttl_hi & 0xff) as u8,
                dnssec_ok: ttl_lo & 0x8000 != 0,
            });
        }
    }
    Ok(Query {
        id,
        rd,
        cd: flags & 0x0010 != 0,
        question: &b[HEADER_LEN..qend],
        qname: &b[HEADER_LEN..HEADER_LEN + name_len],
        qtype,
        qclass,
        edns,
    })
}

/// Lower-cases ASCII letters of a wire-form name into `out` (cleared
/// first). Label length bytes are ≤ 63 and so never change.
pub(crate) fn lower_name_into(name: &[u8], out: &mut Vec<u8>) {
    out.clear();
    out.extend(name.iter().map(u8::to_ascii_lowercase));
}

/// Presentation form of a wire-form name (RFC 1035 §5.1): lower case,
/// trailing dot, `.` and `\` inside labels escaped with `\`, other
/// non-printable octets as `\DDD`; the root is `.`.
pub(crate) fn name_to_string(name: &[u8]) -> String {
    let mut s = String::with_capacity(name.len() + 1);
    let mut i = 0;
    while let Some(&len) = name.get(i) {
        if len == 0 {
            break;
        }
        let end = (i + 1 + usize::from(len)).min(name.len());
        for &c in &name[i + 1..end] {
            match c.to_ascii_lowercase() {
                c @ (b'.' | b'\\') => {
                    s.push('\\');
                    s.push(char::from(c));
                }
                c @ 0x21..=0x7e => s.push(char::from(c)),
                c => {
                    let _ = write!(s, "\\{c:03}");
                }
            }
        }
        s.push('.');
        i = end;
    }
    if s.is_empty() {
        s.push('.');
    }
    s
}

/// Mnemonic of a TYPE (`A`, `SRV`, …), `TYPE<n>` for unknown ones (RFC 3597 §5).
pub(crate) fn type_name(code: u16) -> Cow<'static, str> {
    use hickory_proto::rr::RecordType;
    match RecordType::from(code) {
        RecordType::Unknown(n) => Cow::Owned(format!("TYPE{n}")),
        t => Cow::Borrowed(<&'static str>::from(t)),
    }
}

/// Appends `name` (presentation form, trailing dot, no escapes) in wire
/// form, uncompressed.
pub(crate) fn put_name(out: &mut Vec<u8>, name: &str) {
    for label in name.trim_end_matches('.').split('.') {
        if label.is_empty() {
            continue;
        }
        out.push(label.len() as u8);
        out.extend_from_slice(label.as_bytes());
    }
    out.push(0);
}

/// Wire form of `name` (see [`put_name`]), lower case.
pub(crate) fn wire_name(name: &str) -> Vec<u8> {
    let mut v = Vec::with_capacity(name.len() + 2);
    put_name(&mut v, &name.to_ascii_lowercase());
    v
}

/// Owner name that is a pointer to the question's QNAME, which always
/// starts right after the header (RFC 1035 §4.1.4).
pub(crate) const QNAME_POINTER: [u8; 2] = [0xc0, HEADER_LEN as u8];

/// Appends one resource record (RFC 1035 §4.1.3): `owner` already in wire
/// form (a name or [`QNAME_POINTER`]), class IN, `ttl`, and `data`
/// (names inside uncompressed, as RFC 2782 and RFC 3597 §4 require).
pub(crate) fn put_record(out: &mut Vec<u8>, owner: &[u8], ttl: u32, data: &RecordData) {
    out.extend_from_slice(owner);
    out.extend_from_slice(&data.type_code().to_be_bytes());
    out.extend_from_slice(&CLASS_IN.to_be_bytes());
    out.extend_from_slice(&ttl.to_be_bytes());
    let len_at = out.len();
    out.extend_from_slice(&[0, 0]);
    match data {
        RecordData::A(a) => out.extend_from_slice(&a.octets()),
        RecordData::Aaaa(a) => out.extend_from_slice(&a.octets()),
        RecordData::Ns(n) | RecordData::Ptr(n) => put_name(out, n),
        RecordData::Srv {
            priority,
            weight,
            port,
            target,
        } => {
            for v in [priority, weight, port] {
                out.extend_from_slice(&v.to_be_bytes());
            }
            put_name(out, target);
        }
        RecordData::Soa {
            mname,
            rname,
            serial,
            refresh,
            retry,
            expire,
            minimum,
        } => {
            put_name(out, mname);
            put_name(out, rname);
            for v in [serial, refresh, retry, expire, minimum] {
                out.extend_from_slice(&v.to_be_bytes());
            }
        }
    }
    let rdlen = (out.len() - len_at - 2) as u16;
    out[len_at..len_at + 2].copy_from_slice(&rdlen.to_be_bytes());
}

/// The sections after the question of a response, already encoded.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Sections<'a> {
    /// Answer RRs.
    pub answer: &'a [u8],
    /// Number of answer RRs.
    pub ancount: u16,
    /// Authority RRs.
    pub authority: &'a [u8],
    /// Number of authority RRs.
    pub nscount: u16,
    /// Additional RRs (without OPT).
    pub additional: &'a [u8],
    /// Number of additional RRs.
    pub arcount: u16,
}

/// Header flags of a response besides QR, opcode, RD and CD.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Flags {
    /// AA: we are authoritative for the answer.
    pub aa: bool,
    /// RA: recursion (forwarding) is available.
    pub ra: bool,
    /// RCODE, with the extended bits (≥ 16) carried in OPT.
    pub rcode: u16,
}

/// Writes the response to `q` into `out` (cleared first): header, the
/// question as received, `s`, and an OPT record when the query had one
/// (RFC 6891 §7). When the result exceeds `limit` octets the additional
/// records are left out; when it still does, all sections are and TC is
/// set (RFC 2181 §9).
pub(crate) fn write_response(
    out: &mut Vec<u8>,
    q: &Query<'_>,
    f: Flags,
    s: &Sections<'_>,
    limit: usize,
) {
    let needed = HEADER_LEN
        + q.question.len()
        + s.answer.len()
        + s.authority.len()
        + if q.edns.is_some() { 11 } else { 0 };
    let tc = needed > limit;
    let with_additional = !tc && needed + s.additional.len() <= limit;
    out.clear();
    out.extend_from_slice(&q.id.to_be_bytes());
    let mut flags: u16 = 0x8000 | (f.rcode & 0xf);
    if f.aa {
        flags |= 0x0400;
    }
    if tc {
        flags |= 0x0200;
    }
    if q.rd {
        flags |= 0x0100;
    }
    if f.ra {
        flags |= 0x0080;
    }
    if q.cd {
        flags |= 0x0010;
    }
    out.extend_from_slice(&flags.to_be_bytes());
    let (an, ns) = if tc { (0, 0) } else { (s.ancount, s.nscount) };
    let ar = if with_additional { s.arcount } else { 0 };
    let opt = u16::from(q.edns.is_some());
    for c in [1, an, ns, ar + opt] {
        out.extend_from_slice(&c.to_be_bytes());
    }
    out.extend_from_slice(q.question);
    if !tc {
        out.extend_from_slice(s.answer);
        out.extend_from_slice(s.authority);
    }
    if with_additional {
        out.extend_from_slice(s.additional);
    }
    if let Some(e) = q.edns {
        put_opt(out, f.rcode, e.dnssec_ok);
    }
}

/// Appends our OPT record: payload [`EDNS_PAYLOAD`], the upper RCODE bits,
/// version 0, the DO bit, no options.
fn put_opt(out: &mut Vec<u8>, rcode: u16, dnssec_ok: bool) {
    out.push(0);
    out.extend_from_slice(&TYPE_OPT.to_be_bytes());
    out.extend_from_slice(&EDNS_PAYLOAD.to_be_bytes());
    out.push((rcode >> 4) as u8);
    out.push(0);
    out.extend_from_slice(&(if dnssec_ok { 0x8000u16 } else { 0 }).to_be_bytes());
    out.extend_from_slice(&[0, 0]);
}

/// Writes a question-less error response (FORMERR, NOTIMP) to a message
/// that could not be read as a query.
pub(crate) fn write_error(out: &mut Vec<u8>, id: u16, rd: bool, opcode: u8, rcode: u16, ra: bool) {
    out.clear();
    out.extend_from_slice(&id.to_be_bytes());
    let mut flags: u16 = 0x8000 | (u16::from(opcode & 0xf) << 11) | (rcode & 0xf);
    if rd {
        flags |= 0x0100;
    }
    if ra {
        flags |= 0x0080;
    }
    out.extend_from_slice(&flags.to_be_bytes());
    out.extend_from_slice(&[0; 8]);
}

/// The largest UDP response the client takes (RFC 6891 §6.2.5): its EDNS
/// payload size capped at ours, or 512 without EDNS.
pub(crate) fn udp_limit(q: &Query<'_>) -> usize {
    match q.edns {
        Some(e) => usize::from(e.payload.min(EDNS_PAYLOAD)),
        None => PLAIN_UDP_MAX,
    }
}

/// Whether `resp` answers `query`: a response (QR) with the same ID and
/// the same question (names compared case-insensitively).
pub(crate) fn matches(query: &[u8], resp: &[u8]) -> bool {
    if resp.len() < HEADER_LEN || query.len() < HEADER_LEN {
        return false;
    }
    if resp[0..2] != query[0..2] || resp[2] & 0x80 == 0 {
        return false;
    }
    // Question sections: compare QDCOUNT and, when one question, its bytes.
    if resp[4..6] != query[4..6] {
        return false;
    }
    let Some(ql) = plain_name_len(query, HEADER_LEN) else {
        return true;
    };
    let end = HEADER_LEN + ql + 4;
    match (query.get(HEADER_LEN..end), resp.get(HEADER_LEN..end)) {
        (Some(a), Some(b)) => a.eq_ignore_ascii_case(b),
        // A question-less error (FORMERR) to a question we could not read either.
        _ => resp[4..6] == [0, 0],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hickory_proto::op::Message;

    fn query(name: &str, qtype: u16, edns: Option<u16>) -> Vec<u8> {
        let mut b = vec![0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0];
        put_name(&mut b, name);
        b.extend_from_slice(&qtype.to_be_bytes());
        b.extend_from_slice(&CLASS_IN.to_be_bytes());
        if let Some(p) = edns {
            b[11] = 1;
            b.push(0);
            b.extend_from_slice(&TYPE_OPT.to_be_bytes());
            b.extend_from_slice(&p.to_be_bytes());
            b.extend_from_slice(&[0, 0, 0x80, 0, 0, 0]);
        }
        b
    }

    #[test]
    fn reads_a_query_with_edns() {
        let b = query("Api.OKD.example.", 1, Some(4096));
        let q = parse_query(&b).unwrap();
        assert_eq!((q.id, q.rd, q.qtype, q.qclass), (0x1234, true, 1, 1));
        assert_eq!(name_to_string(q.qname), "api.okd.example.");
        assert_eq!(
            q.edns,
            Some(Edns {
                payload: 4096,
                version: 0,
                dnssec_ok: true
            })
        );
        assert_eq!(udp_limit(&q), 1232);
    }

    #[test]
    fn rejects_bad_messages() {
        assert_eq!(parse_query(&[0; 5]).unwrap_err(), Reject::Drop);
        let mut resp = query("a.", 1, None);
        resp[2] |= 0x80;
        assert_eq!(parse_query(&resp).unwrap_err(), Reject::Drop);
        let mut two = query("a.", 1, None);
        two[5] = 2;
        assert!(matches!(
            parse_query(&two).unwrap_err(),
            Reject::Error { rcode: 1, .. }
        ));
        let mut notify = query("a.", 6, None);
        notify[2] = 4 << 3;
        assert!(matches!(
            parse_query(&notify).unwrap_err(),
            Reject::Error {
                rcode: 4,
                opcode: 4,
                ..
            }
        ));
        let mut cut = query("abc.", 1, None);
        cut.truncate(cut.len() - 1);
        assert!(matches!(
            parse_query(&cut).unwrap_err(),
            Reject::Error { rcode: 1, .. }
        ));
        let mut compressed = query("abc.", 1, None);
        compressed[12] = 0xc0;
        assert!(parse_query(&compressed).is_err());
    }

    #[test]
    fn names_print_escaped() {
        assert_eq!(name_to_string(&[0]), ".");
        assert_eq!(name_to_string(&[3, b'a', b'.', 0xff, 0]), "a\\.\\255.");
        assert_eq!(type_name(33), "SRV");
        assert_eq!(type_name(65280), "TYPE65280");
    }

    #[test]
    fn responses_decode_with_hickory() {
        let b = query("x.apps.okd.example.", 1, Some(1232));
        let q = parse_query(&b).unwrap();
        let mut ans = Vec::new();
        put_record(
            &mut ans,
            &QNAME_POINTER,
            60,
            &RecordData::A([10, 0, 0, 1].into()),
        );
        let mut auth = Vec::new();
        put_record(
            &mut auth,
            &wire_name("okd.example."),
            60,
            &RecordData::Soa {
                mname: "ns1.okd.example.".into(),
                rname: "hostmaster.okd.example.".into(),
                serial: 7,
                refresh: 3600,
                retry: 600,
                expire: 604800,
                minimum: 60,
            },
        );
        let mut add = Vec::new();
        put_record(
            &mut add,
            &wire_name("_etcd-server-ssl._tcp.okd.example."),
            60,
            &RecordData::Srv {
                priority: 0,
                weight: 10,
                port: 2380,
                target: "etcd-0.okd.example.".into(),
            },
        );
        let mut out = Vec::new();
        let flags = Flags {
            aa: true,
            ra: false,
            rcode: 0,
        };
        let s = Sections {
            answer: &ans,
            ancount: 1,
            authority: &auth,
            nscount: 1,
            additional: &add,
            arcount: 1,
        };
        write_response(&mut out, &q, flags, &s, 512);
        let m = Message::from_vec(&out).unwrap();
        assert!(m.metadata.authoritative && !m.metadata.truncation);
        assert_eq!(m.metadata.id, 0x1234);
        assert_eq!(m.answers[0].name.to_string(), "x.apps.okd.example.");
        assert_eq!(m.answers[0].data.to_string(), "10.0.0.1");
        assert_eq!(
            m.authorities[0].data.to_string(),
            "ns1.okd.example. hostmaster.okd.example. 7 3600 600 604800 60"
        );
        assert_eq!(
            m.additionals[0].data.to_string(),
            "0 10 2380 etcd-0.okd.example."
        );
        assert!(m.edns.is_some());
        assert!(matches(&b, &out));

        // Without room for the additional records: left out, no TC.
        let full = out.len();
        write_response(&mut out, &q, flags, &s, full - 1);
        let m = Message::from_vec(&out).unwrap();
        assert!(!m.metadata.truncation && m.additionals.is_empty());
        assert_eq!((m.answers.len(), m.authorities.len()), (1, 1));
        assert!(m.edns.is_some());
        write_response(&mut out, &q, flags, &s, 60);
        let m = Message::from_vec(&out).unwrap();
        assert!(m.metadata.truncation && m.answers.is_empty());
    }
}
