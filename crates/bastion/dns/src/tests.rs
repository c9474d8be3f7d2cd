use super::*;
use hickory_proto::op::{Message, ResponseCode};

fn shared(upstreams: bool) -> Shared {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../examples/baremetal-single-master");
    let inv = okd_hosts::Inventory::load(&dir, "okd", "example").unwrap();
    Shared {
        table: Table::new(&zone_records(&inv, true).unwrap()).unwrap(),
        forwarder: upstreams.then(|| Forwarder::new(vec!["127.0.0.1:9".parse().unwrap()])),
        reporter: None,
        allow_recursion: hash::Nets::new(&inv.allow_recursion),
        limiter: Limiter::new(&RateLimit::default(), &allowed_networks(&inv)),
    }
}

fn query(name: &str, qtype: u16, class: u16) -> Vec<u8> {
    use hickory_proto::rr::{DNSClass, Name, RecordType};
    let mut q =
        hickory_proto::op::Query::query(Name::from_ascii(name).unwrap(), RecordType::from(qtype));
    q.set_query_class(DNSClass::from(class));
    let mut m = Message::query();
    m.metadata.id = 0xbeef;
    m.metadata.recursion_desired = true;
    m.add_query(q);
    m.to_vec().unwrap()
}

fn ask(s: &Shared, msg: &[u8]) -> Option<Message> {
    let mut out = Vec::new();
    let client = "127.0.0.1:5000".parse().unwrap();
    match s.handle(msg, client, Transport::Udp, &mut Vec::new(), &mut out) {
        Handled::Reply => Some(Message::from_vec(&out).unwrap()),
        Handled::Forward => None,
        Handled::Drop => panic!("dropped"),
    }
}

#[test]
fn answers_refusals_and_errors() {
    let s = shared(false);
    let m = ask(&s, &query("API.okd.example.", 1, 1)).unwrap();
    assert_eq!(m.metadata.response_code, ResponseCode::NoError);
    assert!(m.metadata.authoritative && !m.metadata.recursion_available);
    assert_eq!(m.metadata.id, 0xbeef);
    assert_eq!(m.queries[0].name().to_string(), "API.okd.example.");
    assert_eq!(m.answers[0].data.to_string(), "192.168.120.101");

    let m = ask(&s, &query("nope.okd.example.", 1, 1)).unwrap();
    assert_eq!(m.metadata.response_code, ResponseCode::NXDomain);
    assert_eq!(m.authorities.len(), 1);

    // Class CHAOS and names outside the zones: not ours, nobody to ask.
    for q in [query("version.bind.", 16, 3), query("example.com.", 1, 1)] {
        let m = ask(&s, &q).unwrap();
        assert_eq!(m.metadata.response_code, ResponseCode::Refused);
        assert!(!m.metadata.authoritative);
    }
    // With upstreams the same questions are forwarded, ours are not.
    let f = shared(true);
    assert!(ask(&f, &query("example.com.", 1, 1)).is_none());
    let m = ask(&f, &query("master.okd.example.", 1, 1)).unwrap();
    assert!(m.metadata.recursion_available && m.metadata.authoritative);

    // Two questions: FORMERR; NOTIFY: NOTIMP.
    let mut two = query("api.okd.example.", 1, 1);
    two[5] = 2;
    let m = ask(&s, &two).unwrap();
    assert_eq!(m.metadata.response_code, ResponseCode::FormErr);
    let mut notify = query("okd.example.", 6, 1);
    notify[2] = 4 << 3;
    let m = ask(&s, &notify).unwrap();
    assert_eq!(m.metadata.response_code, ResponseCode::NotImp);
}

#[test]
fn edns_version_1_is_badvers() {
    let s = shared(false);
    let mut q = query("api.okd.example.", 1, 1);
    q[11] = 1;
    q.extend_from_slice(&[0, 0, 41, 0x10, 0, 0, 1, 0, 0, 0, 0]);
    let mut out = Vec::new();
    let client = "127.0.0.1:5000".parse().unwrap();
    assert!(matches!(
        s.handle(&q, client, Transport::Udp, &mut Vec::new(), &mut out),
        Handled::Reply
    ));
    // Header RCODE 0, OPT extended RCODE 1: 16 = BADVERS (RFC 6891 §6.1.3).
    assert_eq!(out[3] & 0xf, 0);
    let opt = &out[out.len() - 11..];
    assert_eq!((opt[2], opt[5]), (41, 1));
    // Version 0 is answered normally, with an OPT record.
    let version_at = q.len() - 5;
    q[version_at] = 0;
    let m = ask(&s, &q).unwrap();
    assert_eq!(m.answers.len(), 1);
    assert!(m.edns.is_some());
}
