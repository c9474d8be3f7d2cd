//! DNS messages (RFC 1035 §4.1, RFC 6891) read and written with
//! `hickory-proto`: queries are decoded with its [`BinDecoder`] (header,
//! question, and every record to find the EDNS OPT record); records, OPT
//! records and headers are encoded with its [`BinEncoder`].
//!
//! Answers are encoded once, when the zones are loaded; a response is then
//! assembled from a freshly encoded header, the question exactly as the
//! client sent it, those encoded sections and an OPT record.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::sync::LazyLock;

use hickory_proto::ProtoError;
use hickory_proto::op::{
    Edns as OptRecord, Header, HeaderCounts, MessageType, Metadata, OpCode, Query as Question,
    ResponseCode,
};
use hickory_proto::rr::{DNSClass, Name, RData, Record, RecordType, rdata};
use hickory_proto::serialize::binary::{
    BinDecodable, BinDecoder, BinEncodable, BinEncoder, NameEncoding,
};

use crate::zone::RecordData;

/// Header length (RFC 1035 §4.1.1).
pub(crate) const HEADER_LEN: usize = 12;
/// The EDNS UDP payload size we advertise and accept at most (the DNS Flag
/// Day 2020 value).
pub(crate) const EDNS_PAYLOAD: u16 = 1232;
/// Largest UDP response without EDNS (RFC 1035 §4.2.1).
pub(crate) const PLAIN_UDP_MAX: usize = 512;

/// RCODE values (RFC 1035 §4.1.1, RFC 6891 §9), as numbers.
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

/// QTYPE `*` (RFC 1035 §3.2.3).
pub(crate) fn type_any() -> u16 {
    RecordType::ANY.into()
}

/// Whether a QCLASS asks for class IN data (IN or `*`).
pub(crate) fn class_in_or_any(qclass: u16) -> bool {
    matches!(DNSClass::from(qclass), DNSClass::IN | DNSClass::ANY)
}

/// What the server uses of a query's EDNS OPT record.
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
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Query<'a> {
    /// The header's ID.
    pub id: u16,
    /// The header's third and fourth octets as received (QR, opcode, AA,
    /// TC, RD; RA, Z, AD, CD, RCODE): RD and CD are echoed.
    pub flags: [u8; 2],
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

/// Octets of `name` in uncompressed wire form.
fn wire_len(name: &Name) -> usize {
    if name.is_root() { 1 } else { name.len() + 1 }
}

/// Reads a query: the header, one question with an uncompressed QNAME,
/// then every record, taking the OPT record (RFC 6891 §6.1.1) from the
/// additional section.
///
/// The common query (header, question, at most an option-less OPT record
/// and nothing else) is read in place without allocating
/// ([`parse_plain`]); anything else by hickory-proto's decoder
/// ([`parse_with_hickory`]), with the same result for the same octets.
pub(crate) fn parse_query(b: &[u8]) -> Result<Query<'_>, Reject> {
    match parse_plain(b) {
        Some(q) => Ok(q),
        None => parse_with_hickory(b),
    }
}

/// The common query read in place: header (a query, opcode QUERY, one
/// question, no answer or authority records, at most one additional
/// record), a QNAME of labels (no pointer, at most 255 octets), QTYPE,
/// QCLASS, then nothing or an OPT record owned by the root without
/// options. `None` for anything else (which [`parse_with_hickory`] reads,
/// or rejects).
pub(crate) fn parse_plain(b: &[u8]) -> Option<Query<'_>> {
    let header: &[u8; HEADER_LEN] = b.get(..HEADER_LEN)?.try_into().ok()?;
    // QR clear, opcode 0; QDCOUNT 1, ANCOUNT 0, NSCOUNT 0, ARCOUNT ≤ 1.
    if header[2] & 0xf8 != 0 || header[4..10] != [0, 1, 0, 0, 0, 0] || header[10] != 0 {
        return None;
    }
    let arcount = header[11];
    if arcount > 1 {
        return None;
    }
    let mut at = HEADER_LEN;
    loop {
        let len = usize::from(*b.get(at)?);
        if len == 0 {
            at += 1;
            break;
        }
        // A pointer or a reserved label type, or too long a label.
        if len > 63 {
            return None;
        }
        at += 1 + len;
        // The name, root octet included, must fit 255 octets.
        if at + 1 - HEADER_LEN > 255 {
            return None;
        }
    }
    let name_end = at;
    let fixed = b.get(at..at + 4)?;
    let qtype = u16::from_be_bytes([fixed[0], fixed[1]]);
    let qclass = u16::from_be_bytes([fixed[2], fixed[3]]);
    let qend = at + 4;
    let edns = if arcount == 1 {
        // Root owner, TYPE OPT, CLASS (payload), TTL, RDLENGTH 0.
        let opt = b.get(qend..qend + 11)?;
        if opt[..3] != [0, 0, 41] || opt[9..11] != [0, 0] {
            return None;
        }
        Some(Edns {
            payload: u16::from_be_bytes([opt[3], opt[4]]).max(PLAIN_UDP_MAX as u16),
            version: opt[6],
            dnssec_ok: opt[7] & 0x80 != 0,
        })
    } else {
        None
    };
    Some(Query {
        id: u16::from_be_bytes([header[0], header[1]]),
        flags: [header[2], header[3]],
        question: &b[HEADER_LEN..qend],
        qname: &b[HEADER_LEN..name_end],
        qtype,
        qclass,
        edns,
    })
}

/// [`parse_query`] by hickory-proto's decoder, for every message.
pub(crate) fn parse_with_hickory(b: &[u8]) -> Result<Query<'_>, Reject> {
    let mut d = BinDecoder::new(b);
    let header = Header::read(&mut d).map_err(|_| Reject::Drop)?;
    let meta = header.metadata;
    if meta.message_type == MessageType::Response {
        return Err(Reject::Drop);
    }
    let err = |rcode| Reject::Error {
        id: meta.id,
        rd: meta.recursion_desired,
        opcode: meta.op_code.into(),
        rcode,
    };
    if meta.op_code != OpCode::Query {
        return Err(err(rcode::NOTIMP));
    }
    let counts = header.counts;
    if counts.queries != 1 {
        return Err(err(rcode::FORMERR));
    }
    let formerr = |_| err(rcode::FORMERR);
    let question = Question::read(&mut d).map_err(formerr)?;
    let qend = d.index();
    let name_len = wire_len(question.name());
    // A compressed QNAME (its wire form longer than what was read) cannot
    // be echoed as received.
    if HEADER_LEN + name_len + 4 != qend {
        return Err(err(rcode::FORMERR));
    }
    let an_ns = usize::from(counts.answers) + usize::from(counts.authorities);
    let mut edns = None;
    for n in 0..an_ns + usize::from(counts.additionals) {
        let record = Record::read(&mut d).map_err(formerr)?;
        if record.record_type() == RecordType::OPT {
            // Only in the additional section, only once (the owner is
            // checked to be the root by the decoder).
            if n < an_ns || edns.is_some() {
                return Err(err(rcode::FORMERR));
            }
            let opt = OptRecord::from(&record);
            edns = Some(Edns {
                payload: opt.max_payload().max(PLAIN_UDP_MAX as u16),
                version: opt.version(),
                dnssec_ok: opt.flags().dnssec_ok,
            });
        }
    }
    Ok(Query {
        id: meta.id,
        flags: [b[2], b[3]],
        question: &b[HEADER_LEN..qend],
        qname: &b[HEADER_LEN..HEADER_LEN + name_len],
        qtype: question.query_type().into(),
        qclass: question.query_class().into(),
        edns,
    })
}

/// Lower-cases ASCII letters of a wire-form name into `out` (cleared
/// first). Label length bytes are ≤ 63 and so never change.
pub(crate) fn lower_name_into(name: &[u8], out: &mut Vec<u8>) {
    out.clear();
    out.extend(name.iter().map(u8::to_ascii_lowercase));
}

/// Presentation form of a wire-form name (RFC 1035 §5.1; uncompressed,
/// as [`Query::qname`]): lower case, trailing dot, `.` and `\` inside
/// labels escaped with `\`, other non-printable octets as `\DDD` in
/// decimal (hickory-proto's own `to_ascii` writes them in octal); the root
/// is `.`.
pub(crate) fn name_to_string(name: &[u8]) -> String {
    let mut s = String::with_capacity(name.len() + 1);
    let mut at = 0;
    while let Some(&len) = name.get(at) {
        if len == 0 {
            break;
        }
        let label = name.get(at + 1..at + 1 + usize::from(len)).unwrap_or(&[]);
        for &c in label {
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
        at += 1 + usize::from(len);
    }
    if s.is_empty() {
        s.push('.');
    }
    s
}

/// Mnemonic of a TYPE (`A`, `SRV`, …), `TYPE<n>` for unknown ones (RFC 3597 §5).
pub(crate) fn type_name(code: u16) -> Cow<'static, str> {
    match RecordType::from(code) {
        RecordType::Unknown(n) => Cow::Owned(format!("TYPE{n}")),
        t => Cow::Borrowed(<&'static str>::from(t)),
    }
}

/// `name` (presentation form, fully qualified) as a hickory name.
pub(crate) fn parse_name(name: &str) -> Result<Name, ProtoError> {
    let mut n = Name::from_ascii(name)?;
    n.set_fqdn(true);
    Ok(n)
}

/// An encoder appending to `out` with names never compressed (each record
/// is encoded on its own, to be copied into responses whose earlier
/// contents vary).
fn encode_into(out: &mut Vec<u8>, item: &impl BinEncodable) -> Result<(), ProtoError> {
    let mut buf = Vec::new();
    let mut e = BinEncoder::new(&mut buf);
    e.set_name_encoding(NameEncoding::Uncompressed);
    item.emit(&mut e)?;
    out.extend_from_slice(&buf);
    Ok(())
}

/// Wire form of `name`, lower case, uncompressed.
pub(crate) fn wire_name(name: &str) -> Result<Vec<u8>, ProtoError> {
    let mut v = Vec::with_capacity(name.len() + 2);
    encode_into(&mut v, &parse_name(name)?.to_lowercase())?;
    Ok(v)
}

/// Owner name that is a pointer to the question's QNAME, which always
/// starts right after the header (RFC 1035 §4.1.4).
pub(crate) const QNAME_POINTER: [u8; 2] = [0xc0, HEADER_LEN as u8];

/// The hickory form of our record data.
fn rdata(data: &RecordData) -> Result<RData, ProtoError> {
    Ok(match data {
        RecordData::A(a) => RData::A(rdata::A(*a)),
        RecordData::Aaaa(a) => RData::AAAA(rdata::AAAA(*a)),
        RecordData::Ns(n) => RData::NS(rdata::NS(parse_name(n)?)),
        RecordData::Ptr(n) => RData::PTR(rdata::PTR(parse_name(n)?)),
        RecordData::Srv {
            priority,
            weight,
            port,
            target,
        } => RData::SRV(rdata::SRV::new(
            *priority,
            *weight,
            *port,
            parse_name(target)?,
        )),
        RecordData::Soa {
            mname,
            rname,
            serial,
            refresh,
            retry,
            expire,
            minimum,
        } => {
            let secs = |v: u32| i32::try_from(v).unwrap_or(i32::MAX);
            RData::SOA(rdata::SOA::new(
                parse_name(mname)?,
                parse_name(rname)?,
                *serial,
                secs(*refresh),
                secs(*retry),
                secs(*expire),
                *minimum,
            ))
        }
    })
}

/// Appends one resource record, class IN, encoded by hickory: owned by
/// `owner` (presentation form), or with `None` by the question's QNAME
/// ([`QNAME_POINTER`]). Names inside the data are not compressed (as RFC
/// 2782 and RFC 3597 §4 require for SRV and others).
pub(crate) fn put_record(
    out: &mut Vec<u8>,
    owner: Option<&str>,
    ttl: u32,
    data: &RecordData,
) -> Result<(), ProtoError> {
    let name = match owner {
        Some(o) => parse_name(o)?.to_lowercase(),
        None => Name::root(),
    };
    let start = out.len();
    encode_into(out, &Record::from_rdata(name, ttl, rdata(data)?))?;
    if owner.is_none() {
        // The root owner (one zero octet) becomes the pointer.
        out.splice(start..start + 1, QNAME_POINTER);
    }
    Ok(())
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

/// Our OPT record (payload [`EDNS_PAYLOAD`], version 0, no options), with
/// the upper RCODE bits and the DO bit, encoded by hickory.
fn opt_record(rcode_high: u8, dnssec_ok: bool) -> Vec<u8> {
    let mut e = OptRecord::new();
    e.set_max_payload(EDNS_PAYLOAD)
        .set_version(0)
        .set_rcode_high(rcode_high)
        .set_dnssec_ok(dnssec_ok);
    let mut out = Vec::with_capacity(11);
    // Encoding a fixed, option-less OPT record into a Vec cannot fail.
    let _ = encode_into(&mut out, &e);
    out
}

/// [`opt_record`] without extended RCODE bits, without and with DO.
static OPT: LazyLock<[Vec<u8>; 2]> = LazyLock::new(|| [opt_record(0, false), opt_record(0, true)]);

/// Emits `header` at the start of `out` (cleared first).
fn put_header(out: &mut Vec<u8>, header: &Header) {
    out.clear();
    let mut e = BinEncoder::new(out);
    // Twelve octets into an empty Vec: cannot fail.
    let _ = header.emit(&mut e);
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
    let rcode_high = (f.rcode >> 4) as u8;
    let opt: Cow<'_, [u8]> = match q.edns {
        None => Cow::Borrowed(&[]),
        Some(e) if rcode_high == 0 => Cow::Borrowed(&OPT[usize::from(e.dnssec_ok)]),
        Some(e) => Cow::Owned(opt_record(rcode_high, e.dnssec_ok)),
    };
    let needed = HEADER_LEN + q.question.len() + s.answer.len() + s.authority.len() + opt.len();
    let tc = needed > limit;
    let with_additional = !tc && needed + s.additional.len() <= limit;
    let (an, ns) = if tc { (0, 0) } else { (s.ancount, s.nscount) };
    let ar = if with_additional { s.arcount } else { 0 } + u16::from(q.edns.is_some());
    // QR, opcode QUERY (the only one answered), AA, TC, RD echoed; RA, CD
    // echoed, RCODE's low bits (RFC 1035 §4.1.1, RFC 6840 §5.9).
    let flags = [
        0x80 | (u8::from(f.aa) << 2) | (u8::from(tc) << 1) | (q.flags[0] & 0x01),
        (u8::from(f.ra) << 7) | (q.flags[1] & 0x10) | (f.rcode & 0x0f) as u8,
    ];
    out.clear();
    out.extend_from_slice(&q.id.to_be_bytes());
    out.extend_from_slice(&flags);
    out.extend_from_slice(&[0, 1]);
    out.extend_from_slice(&an.to_be_bytes());
    out.extend_from_slice(&ns.to_be_bytes());
    out.extend_from_slice(&ar.to_be_bytes());
    out.extend_from_slice(q.question);
    if !tc {
        out.extend_from_slice(s.answer);
        out.extend_from_slice(s.authority);
    }
    if with_additional {
        out.extend_from_slice(s.additional);
    }
    out.extend_from_slice(&opt);
}

/// Writes a question-less error response (FORMERR, NOTIMP) to a message
/// that could not be read as a query.
pub(crate) fn write_error(out: &mut Vec<u8>, id: u16, rd: bool, opcode: u8, rcode: u16, ra: bool) {
    let mut metadata = Metadata::new(id, MessageType::Response, OpCode::from_u8(opcode));
    metadata.recursion_desired = rd;
    metadata.recursion_available = ra;
    metadata.response_code = <ResponseCode as From<u16>>::from(rcode);
    let header = Header {
        metadata,
        counts: HeaderCounts::default(),
    };
    put_header(out, &header);
}

/// Sets TC in a response already written to `out` (header flags, RFC 1035
/// §4.1.1).
pub(crate) fn set_tc(out: &mut [u8]) {
    if let Some(flags) = out.get_mut(2) {
        *flags |= 0x02;
    }
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
    let mut qd = BinDecoder::new(query);
    let mut rd = BinDecoder::new(resp);
    let (Ok(qh), Ok(rh)) = (Header::read(&mut qd), Header::read(&mut rd)) else {
        return false;
    };
    if qh.metadata.id != rh.metadata.id
        || rh.metadata.message_type != MessageType::Response
        || qh.counts.queries != rh.counts.queries
    {
        return false;
    }
    if qh.counts.queries != 1 {
        return true;
    }
    let Ok(qq) = Question::read(&mut qd) else {
        return true;
    };
    match Question::read(&mut rd) {
        // Name equality in hickory ignores ASCII case.
        Ok(rq) => {
            qq.name() == rq.name()
                && qq.query_type() == rq.query_type()
                && qq.query_class() == rq.query_class()
        }
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests;
