use super::*;
use hickory_proto::op::Message;

fn query(name: &str, qtype: RecordType, edns: Option<u16>) -> Vec<u8> {
    let mut m = Message::query();
    m.metadata.id = 0x1234;
    m.metadata.recursion_desired = true;
    m.add_query(Question::query(Name::from_ascii(name).unwrap(), qtype));
    if let Some(p) = edns {
        let mut e = OptRecord::new();
        e.set_max_payload(p).set_dnssec_ok(true);
        m.edns = Some(e);
    }
    m.to_vec().unwrap()
}

#[test]
fn reads_a_query_with_edns() {
    let b = query("Api.OKD.example.", RecordType::A, Some(4096));
    let q = parse_query(&b).unwrap();
    assert_eq!(
        (q.id, q.flags[0] & 1 == 1, q.qtype, q.qclass),
        (0x1234, true, 1, 1)
    );
    assert_eq!(name_to_string(q.qname), "api.okd.example.");
    assert_eq!(
        q.qname.to_ascii_lowercase(),
        wire_name("api.okd.example.").unwrap()
    );
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
    let mut resp = query("a.", RecordType::A, None);
    resp[2] |= 0x80;
    assert_eq!(parse_query(&resp).unwrap_err(), Reject::Drop);
    let mut two = query("a.", RecordType::A, None);
    two[5] = 2;
    assert!(matches!(
        parse_query(&two).unwrap_err(),
        Reject::Error { rcode: 1, .. }
    ));
    let mut notify = query("a.", RecordType::SOA, None);
    notify[2] = 4 << 3;
    assert!(matches!(
        parse_query(&notify).unwrap_err(),
        Reject::Error {
            rcode: 4,
            opcode: 4,
            ..
        }
    ));
    let mut cut = query("abc.", RecordType::A, None);
    cut.truncate(cut.len() - 1);
    assert!(matches!(
        parse_query(&cut).unwrap_err(),
        Reject::Error { rcode: 1, .. }
    ));
    let mut compressed = query("abc.", RecordType::A, None);
    compressed[12] = 0xc0;
    assert!(parse_query(&compressed).is_err());
}

#[test]
fn names_print_escaped() {
    let mut b = vec![0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0];
    b.extend_from_slice(&[3, b'a', b'.', 0xff, 0, 0, 1, 0, 1]);
    let q = parse_query(&b).unwrap();
    assert_eq!(name_to_string(q.qname), "a\\.\\255.");
    assert_eq!(name_to_string(&[0]), ".");
    assert_eq!(type_name(33), "SRV");
    assert_eq!(type_name(65280), "TYPE65280");
}

#[test]
fn responses_decode_with_hickory() {
    let b = query("x.apps.okd.example.", RecordType::A, Some(1232));
    let q = parse_query(&b).unwrap();
    let mut ans = Vec::new();
    put_record(&mut ans, None, 60, &RecordData::A([10, 0, 0, 1].into())).unwrap();
    let mut auth = Vec::new();
    put_record(
        &mut auth,
        Some("okd.example."),
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
    )
    .unwrap();
    let mut add = Vec::new();
    put_record(
        &mut add,
        Some("_etcd-server-ssl._tcp.okd.example."),
        60,
        &RecordData::Srv {
            priority: 0,
            weight: 10,
            port: 2380,
            target: "etcd-0.okd.example.".into(),
        },
    )
    .unwrap();
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

    // BADVERS: extended RCODE 1 in OPT, 0 in the header.
    let f = Flags {
        aa: false,
        ra: false,
        rcode: rcode::BADVERS,
    };
    write_response(&mut out, &q, f, &Sections::default(), 512);
    let m = Message::from_vec(&out).unwrap();
    assert_eq!(u16::from(m.metadata.response_code), rcode::BADVERS);
}

/// The header as hickory-proto wrote it before [`write_response`]
/// wrote its own.
fn hickory_header(q: &Query<'_>, f: Flags, tc: bool, counts: [u16; 3]) -> Vec<u8> {
    let req = [q.id.to_be_bytes(), q.flags, [0, 1], [0, 0], [0, 0], [0, 0]].concat();
    let mut d = BinDecoder::new(&req);
    let req = Header::read(&mut d).unwrap().metadata;
    let mut metadata = Metadata::response_from_request(&req);
    metadata.authoritative = f.aa;
    metadata.truncation = tc;
    metadata.recursion_available = f.ra;
    metadata.response_code = <ResponseCode as From<u16>>::from(f.rcode);
    let header = Header {
        metadata,
        counts: HeaderCounts {
            queries: 1,
            answers: counts[0],
            authorities: counts[1],
            additionals: counts[2],
        },
    };
    let mut out = Vec::new();
    put_header(&mut out, &header);
    out
}

/// A query built from parts that often make the common form, and
/// often do not.
fn message() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
    use proptest::prelude::*;
    let label = prop_oneof![
        4 => proptest::collection::vec(prop_oneof![Just(b'a'), Just(b'Z'), Just(b'.'), any::<u8>()], 0..8)
            .prop_map(|l| [vec![l.len() as u8], l].concat()),
        1 => proptest::collection::vec(any::<u8>(), 60..66)
            .prop_map(|l| [vec![l.len() as u8], l].concat()),
        1 => any::<u8>().prop_map(|b| vec![b]),
    ];
    let name =
        proptest::collection::vec(label, 0..6).prop_map(|ls| [ls.concat(), vec![0]].concat());
    let opt = prop_oneof![
        2 => Just(Vec::new()),
        3 => (any::<u16>(), any::<u32>()).prop_map(|(c, t)| {
            [vec![0, 0, 41], c.to_be_bytes().to_vec(), t.to_be_bytes().to_vec(), vec![0, 0]].concat()
        }),
        1 => proptest::collection::vec(any::<u8>(), 0..16),
    ];
    (
        any::<[u8; 4]>(),
        prop_oneof![
            Just([0u8, 1, 0, 0, 0, 0, 0, 0]),
            Just([0, 1, 0, 0, 0, 0, 0, 1]),
            any::<[u8; 8]>()
        ],
        name,
        any::<[u8; 4]>(),
        opt,
        proptest::collection::vec((any::<usize>(), any::<u8>()), 0..2),
        proptest::collection::vec(any::<u8>(), 0..3),
        0usize..4,
    )
        .prop_map(|(idf, counts, name, tc, opt, edits, tail, flagmode)| {
            let mut idf = idf;
            if flagmode > 0 {
                // Mostly plain queries: QR clear, opcode 0.
                idf[2] &= 0x07;
            }
            let mut m = [idf.to_vec(), counts.to_vec(), name, tc.to_vec(), opt, tail].concat();
            for (at, b) in edits {
                let n = m.len();
                m[at % n] = b;
            }
            m
        })
}

proptest::proptest! {
    #![proptest_config(proptest::test_runner::Config::with_cases(20_000))]

    /// The in-place reader agrees with hickory-proto's whenever it
    /// reads a message, and the response header it writes is the one
    /// hickory-proto wrote.
    #[test]
    fn plain_reading_agrees_with_hickory(m in message(), aa: bool, ra: bool, limit in 0usize..600) {
        let hickory = parse_with_hickory(&m);
        if let Some(q) = parse_plain(&m) {
            proptest::prop_assert_eq!(Ok(q.clone()), hickory.clone());
            for rcode in [rcode::NOERROR, rcode::NXDOMAIN, rcode::REFUSED, rcode::BADVERS] {
                let f = Flags { aa, ra, rcode };
                let mut out = Vec::new();
                let (mut answer, mut additional) = (Vec::new(), Vec::new());
                put_record(&mut answer, None, 60, &RecordData::A([10, 0, 0, 1].into())).unwrap();
                for _ in 0..2 {
                    put_record(&mut additional, Some("x.test."), 60, &RecordData::A([10, 0, 0, 2].into())).unwrap();
                }
                let s = Sections { answer: &answer, ancount: 1, additional: &additional, arcount: 2, ..Sections::default() };
                write_response(&mut out, &q, f, &s, limit);
                let tc = out[2] & 0x02 != 0;
                let counts = [0, 1, 2].map(|i| u16::from_be_bytes([out[6 + 2 * i], out[7 + 2 * i]]));
                proptest::prop_assert_eq!(&out[..HEADER_LEN], &hickory_header(&q, f, tc, counts)[..]);
                proptest::prop_assert!(Message::from_vec(&out).is_ok());
            }
        }
        if let Ok(q) = hickory {
            let name = Name::read(&mut BinDecoder::new(q.qname)).unwrap();
            proptest::prop_assert_eq!(name_to_string(q.qname), hickory_name_to_string(&name));
        }
    }
}

/// The presentation form as it was written from a hickory [`Name`].
fn hickory_name_to_string(name: &Name) -> String {
    if name.is_root() {
        return ".".into();
    }
    let mut s = String::new();
    for label in name.iter() {
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
    }
    s
}

#[test]
fn plain_reading_takes_common_queries() {
    for edns in [None, Some(1232), Some(100)] {
        let b = query("Api.OKD.example.", RecordType::A, edns);
        let q = parse_plain(&b).expect("read in place");
        assert_eq!(Ok(q), parse_with_hickory(&b));
    }
}
