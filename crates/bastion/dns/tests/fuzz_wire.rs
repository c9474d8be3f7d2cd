//! Fuzz target (issue #10 item 9): DNS messages through the real server
//! path — the wire parser, the zone lookup, response assembly, the
//! observer report and the forwarder — over UDP and TCP on 127.0.0.1.
//!
//! One [`DnsServer`] serves the single-master example's zones (with etcd
//! SRV records) and forwards other names to a hostile upstream run by this
//! test on 127.0.0.1, which answers every forwarded query first with a
//! mutated reply and then with a correct one. Queries are built from parts
//! (header flags and counts, names of the zones in any case, wildcard and
//! reverse names, odd labels and compression pointers, every type and
//! class, an EDNS OPT record with any payload, version and DO, extra
//! records) and sometimes byte-mutated.
//!
//! Properties, checked after every case: no panic in any server task (a
//! panic hook counts them; a panicking task would otherwise die silently);
//! the server still answers a probe query over UDP; every reply is a DNS
//! response (12+ octets, QR set) with an ID that was sent; an authoritative
//! (AA) UDP reply is a well-formed message no larger than the client's
//! UDP limit (its EDNS payload capped at 1232, or 512 without EDNS).
//!
//! CI runs a few thousand cases; `OKD_FUZZ_CASES=<n>` runs more (README).

use std::collections::HashSet;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use okd_dns::{DnsObserver, DnsServer};
use okd_hosts::Inventory;
use okd_test_utils::fuzz::{self, ByteEdit};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

/// Panics seen anywhere in this test binary (server tasks included).
static PANICS: AtomicUsize = AtomicUsize::new(0);

/// The probe's ID; generated queries never use it.
const PROBE_ID: u16 = 0xffff;

/// Names worth asking: the zones' own, in odd case, below and beside them.
const NAMES: &[&str] = &[
    "api.okd.example",
    "API-INT.okd.EXAMPLE",
    "okd.example",
    "x.apps.okd.example",
    "a.b.c.apps.okd.example",
    "*.apps.okd.example",
    "apps.okd.example",
    "master.okd.example",
    "bootstrap.okd.example",
    "_etcd-server-ssl._tcp.okd.example",
    "etcd-0.okd.example",
    "ns1.okd.example",
    "nope.okd.example",
    "103.120.168.192.in-addr.arpa",
    "120.168.192.in-addr.arpa",
    "1.1.1.10.in-addr.arpa",
    "in-addr.arpa",
    "ip6.arpa",
    "example",
    "forwarded.test",
    "",
];

/// Record types: the ones served, meta types and unknown ones.
const TYPES: &[u16] = &[
    1, 2, 5, 6, 12, 15, 16, 28, 33, 41, 43, 46, 48, 251, 252, 255, 256, 65535, 0,
];

/// Counts panics, then reports them as usual.
fn count_panics() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        PANICS.fetch_add(1, Ordering::SeqCst);
        default(info);
    }));
}

/// A generated query.
#[derive(Debug, Clone)]
struct Msg {
    flags: u16,
    qdcount: u16,
    name: Name,
    qtype: u16,
    qclass: u16,
    /// Extra records put in the answer/authority sections (counted).
    extra: Vec<(u16, Vec<u8>)>,
    /// OPT record: (payload, extended rcode, version, DO, options).
    opt: Option<(u16, u8, u8, bool, Vec<u8>)>,
}

/// A question name.
#[derive(Debug, Clone)]
enum Name {
    /// One of [`NAMES`], with some labels prepended.
    Known(&'static str, Vec<String>),
    /// Raw labels (any octets, any length up to 63).
    Labels(Vec<Vec<u8>>),
    /// A compression pointer to `offset`.
    Pointer(u16),
    /// Labels adding up past 255 octets.
    Long(usize),
}

impl Name {
    fn encode(&self, out: &mut Vec<u8>) {
        let mut labels = |ls: &mut dyn Iterator<Item = Vec<u8>>| {
            for l in ls {
                let l = &l[..l.len().min(63)];
                out.push(l.len() as u8);
                out.extend_from_slice(l);
            }
            out.push(0);
        };
        match self {
            Name::Known(n, pre) => {
                let it = pre.iter().map(|p| p.as_bytes().to_vec()).chain(
                    n.split('.')
                        .filter(|l| !l.is_empty())
                        .map(|l| l.as_bytes().to_vec()),
                );
                labels(&mut it.collect::<Vec<_>>().into_iter())
            }
            Name::Labels(ls) => labels(&mut ls.clone().into_iter()),
            Name::Pointer(off) => out.extend_from_slice(&(0xc000 | (off & 0x3fff)).to_be_bytes()),
            Name::Long(n) => labels(&mut (0..*n).map(|i| vec![b'a' + (i % 26) as u8; 63])),
        }
    }
}

impl Msg {
    fn encode(&self, id: u16) -> Vec<u8> {
        let ancount = self.extra.len() as u16;
        let arcount = u16::from(self.opt.is_some());
        let mut b = Vec::with_capacity(64);
        b.extend_from_slice(&id.to_be_bytes());
        b.extend_from_slice(&self.flags.to_be_bytes());
        for c in [self.qdcount, ancount, 0, arcount] {
            b.extend_from_slice(&c.to_be_bytes());
        }
        if self.qdcount > 0 {
            self.name.encode(&mut b);
            b.extend_from_slice(&self.qtype.to_be_bytes());
            b.extend_from_slice(&self.qclass.to_be_bytes());
        }
        for (rtype, data) in &self.extra {
            b.push(0);
            b.extend_from_slice(&rtype.to_be_bytes());
            b.extend_from_slice(&[0, 1, 0, 0, 0, 60]);
            b.extend_from_slice(&(data.len() as u16).to_be_bytes());
            b.extend_from_slice(data);
        }
        if let Some((payload, ext, version, dnssec_ok, options)) = &self.opt {
            b.push(0);
            b.extend_from_slice(&41u16.to_be_bytes());
            b.extend_from_slice(&payload.to_be_bytes());
            b.push(*ext);
            b.push(*version);
            b.extend_from_slice(&(if *dnssec_ok { 0x8000u16 } else { 0 }).to_be_bytes());
            b.extend_from_slice(&(options.len() as u16).to_be_bytes());
            b.extend_from_slice(options);
        }
        b
    }

    /// The UDP size the server must keep an AA reply under, for an
    /// unmutated message it reads as a query.
    fn udp_limit(&self) -> usize {
        match &self.opt {
            Some((payload, ..)) => usize::from((*payload).clamp(512, 1232)),
            None => 512,
        }
    }
}

fn name() -> impl Strategy<Value = Name> {
    prop_oneof![
        8 => (
            prop::sample::select(NAMES),
            prop::collection::vec(
                prop_oneof!["[a-zA-Z0-9-]{1,10}", Just("*".to_string()), Just("_tcp".to_string())],
                0..3
            )
        )
            .prop_map(|(n, pre)| Name::Known(n, pre)),
        2 => prop::collection::vec(prop::collection::vec(any::<u8>(), 0..70), 0..5)
            .prop_map(Name::Labels),
        1 => prop_oneof![Just(12u16), Just(0), Just(13), any::<u16>()].prop_map(Name::Pointer),
        1 => (4usize..6).prop_map(Name::Long),
    ]
}

fn msg() -> impl Strategy<Value = Msg> {
    let flags = prop_oneof![
        6 => prop::sample::select(vec![0x0100u16, 0x0000, 0x0110, 0x0120]),
        1 => any::<u16>(),
    ];
    let qdcount = prop_oneof![10 => Just(1u16), 1 => prop::sample::select(vec![0u16, 2, 65535])];
    let qclass = prop_oneof![
        8 => Just(1u16),
        1 => prop::sample::select(vec![3u16, 4, 254, 255, 0, 65535])
    ];
    let opt = prop::option::weighted(
        0.5,
        (
            prop_oneof![
                prop::sample::select(vec![0u16, 1, 511, 512, 513, 1232, 1233, 4096, 65535]),
                any::<u16>()
            ],
            prop_oneof![8 => Just(0u8), 1 => any::<u8>()],
            prop_oneof![8 => Just(0u8), 1 => any::<u8>()],
            any::<bool>(),
            prop_oneof![
                6 => Just(Vec::new()),
                1 => prop::collection::vec(any::<u8>(), 0..12)
            ],
        ),
    );
    let extra = prop_oneof![
        8 => Just(Vec::new()),
        1 => prop::collection::vec(
            (prop::sample::select(vec![1u16, 41, 16, 99]), prop::collection::vec(any::<u8>(), 0..8)),
            1..3
        ),
    ];
    (
        flags,
        qdcount,
        name(),
        prop_oneof![4 => prop::sample::select(TYPES), 1 => any::<u16>()],
        qclass,
        extra,
        opt,
    )
        .prop_map(|(flags, qdcount, name, qtype, qclass, extra, opt)| Msg {
            flags,
            qdcount,
            name,
            qtype,
            qclass,
            extra,
            opt,
        })
}

/// One case: the query, its byte edits, the transport, the upstream's
/// edits of its first reply.
type Case = (Msg, Vec<ByteEdit>, bool, Vec<ByteEdit>);

fn case() -> impl Strategy<Value = Case> {
    let edits = || {
        prop_oneof![
            3 => Just(Vec::new()),
            1 => prop::collection::vec(fuzz::byte_edit(), 1..5),
        ]
    };
    (msg(), edits(), prop::bool::weighted(0.25), edits())
}

/// A query for `api.okd.example` A with the probe's ID.
fn probe() -> Vec<u8> {
    Msg {
        flags: 0x0100,
        qdcount: 1,
        name: Name::Known("api.okd.example", Vec::new()),
        qtype: 1,
        qclass: 1,
        extra: Vec::new(),
        opt: None,
    }
    .encode(PROBE_ID)
}

/// The hostile upstream: answers each query with a mutated reply (AA
/// cleared), then a correct one, until `stop`.
struct Upstream {
    addr: SocketAddr,
    edits: Arc<Mutex<Vec<ByteEdit>>>,
    forwarded: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Upstream {
    fn start() -> Upstream {
        let sock = UdpSocket::bind("127.0.0.1:0").expect("bind upstream");
        sock.set_read_timeout(Some(Duration::from_millis(50)))
            .expect("timeout");
        let addr = sock.local_addr().expect("addr");
        let edits = Arc::new(Mutex::new(Vec::new()));
        let forwarded = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (e, f, s) = (edits.clone(), forwarded.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while !s.load(Ordering::SeqCst) {
                let Ok((n, from)) = sock.recv_from(&mut buf) else {
                    continue;
                };
                f.fetch_add(1, Ordering::SeqCst);
                let mut good = buf[..n].to_vec();
                if good.len() >= 3 {
                    good[2] = (good[2] | 0x80) & !0x04;
                }
                let mut bad = good.clone();
                fuzz::apply_byte_edits(&mut bad, &e.lock().unwrap_or_else(|p| p.into_inner()));
                bad.truncate(1232);
                if bad.len() >= 3 {
                    bad[2] &= !0x04;
                }
                let _ = sock.send_to(&bad, from);
                let _ = sock.send_to(&good, from);
            }
        });
        Upstream {
            addr,
            edits,
            forwarded,
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Observes every report (so the report path runs) and counts them.
#[derive(Default)]
struct Count(AtomicUsize);

impl DnsObserver for Count {
    fn answered(&self, _: SocketAddr, name: &str, qtype: &str, _: &[String]) {
        assert!(name.ends_with('.'), "{name:?}");
        assert!(!qtype.is_empty());
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// Checks one reply datagram or TCP message.
fn check_reply(
    r: &[u8],
    sent: &HashSet<u16>,
    this: Option<(u16, usize)>,
) -> Result<(), TestCaseError> {
    prop_assert!(r.len() >= 12, "reply of {} octets: {:?}", r.len(), r);
    prop_assert!(r[2] & 0x80 != 0, "reply without QR: {:?}", &r[..12]);
    let id = u16::from_be_bytes([r[0], r[1]]);
    prop_assert!(sent.contains(&id), "reply with an ID never sent: {id}");
    let aa = r[2] & 0x04 != 0;
    if aa
        && let Some((want, limit)) = this
        && id == want
    {
        prop_assert!(
            r.len() <= limit,
            "AA reply of {} octets over {limit}",
            r.len()
        );
        if let Err(e) = hickory_proto::op::Message::from_vec(r) {
            return Err(TestCaseError::fail(format!(
                "AA reply does not parse: {e}: {r:?}"
            )));
        }
    }
    Ok(())
}

/// Sends one message over TCP and reads the replies until the server
/// closes or 5 s pass.
fn over_tcp(addr: SocketAddr, msg: &[u8]) -> Vec<Vec<u8>> {
    let Ok(mut s) = TcpStream::connect_timeout(&addr, Duration::from_secs(2)) else {
        return Vec::new();
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    let mut framed = (msg.len().min(65535) as u16).to_be_bytes().to_vec();
    framed.extend_from_slice(&msg[..msg.len().min(65535)]);
    if s.write_all(&framed).is_err() {
        return Vec::new();
    }
    let mut len = [0u8; 2];
    if s.read_exact(&mut len).is_err() {
        return Vec::new();
    }
    let mut r = vec![0u8; usize::from(u16::from_be_bytes(len))];
    if s.read_exact(&mut r).is_err() {
        return Vec::new();
    }
    vec![r]
}

#[test]
fn fuzz_dns_messages_udp_and_tcp() {
    count_panics();
    let upstream = Upstream::start();
    let dir =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../examples/baremetal-single-master");
    let mut inv = Inventory::load(&dir, "okd", "example").expect("example inventory");
    inv.upstreams = vec![upstream.addr];
    // One worker: queries are answered in the order they arrive.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let seen = Arc::new(Count::default());
    let obs: Arc<dyn DnsObserver> = seen.clone();
    let server = rt
        .block_on(DnsServer::start(
            &inv,
            "127.0.0.1:0".parse().expect("addr"),
            true,
            Some(obs),
        ))
        .expect("server starts");
    let addr = server.local_addr();
    let client = UdpSocket::bind("127.0.0.1:0").expect("client");
    client
        .set_read_timeout(Some(Duration::from_millis(200)))
        .expect("timeout");
    let sent = Mutex::new(HashSet::from([PROBE_ID]));
    let next_id = AtomicUsize::new(0);
    let tally = fuzz::Tally::default();
    // A panicking task leaves the server without it, so every later case
    // fails too: no shrinking; the failing case is the first one reported.
    let cfg = proptest::test_runner::Config {
        max_shrink_iters: 0,
        ..fuzz::config(2000)
    };
    fuzz::run_with(
        "dns messages",
        cfg,
        case(),
        |(m, edits, tcp, upstream_edits)| {
            let id = (next_id.fetch_add(1, Ordering::SeqCst) % 0xffff) as u16;
            let mut bytes = m.encode(id);
            fuzz::apply_byte_edits(&mut bytes, &edits);
            if bytes.len() >= 2 {
                bytes[..2].copy_from_slice(&id.to_be_bytes());
            }
            let mut sent = sent.lock().unwrap_or_else(|p| p.into_inner());
            sent.insert(id);
            *upstream.edits.lock().unwrap_or_else(|p| p.into_inner()) = upstream_edits;
            let limit = if edits.is_empty() {
                m.udp_limit()
            } else {
                1232
            };
            let forwarded = upstream.forwarded.load(Ordering::SeqCst);
            if tcp {
                tally.hit("tcp");
                for r in over_tcp(addr, &bytes) {
                    check_reply(&r, &sent, Some((id, 65535)))?;
                }
            } else {
                tally.hit("udp");
                client.send_to(&bytes, addr).expect("send");
            }
            client.send_to(&probe(), addr).expect("send probe");
            let deadline = Instant::now() + Duration::from_secs(5);
            let mut buf = [0u8; 65536];
            loop {
                prop_assert_eq!(PANICS.load(Ordering::SeqCst), 0, "a server task panicked");
                prop_assert!(
                    Instant::now() < deadline,
                    "the server stopped answering (probe unanswered for 5 s)"
                );
                let Ok((n, _)) = client.recv_from(&mut buf) else {
                    continue;
                };
                let r = &buf[..n];
                check_reply(r, &sent, (!tcp).then_some((id, limit)))?;
                if u16::from_be_bytes([r[0], r[1]]) == PROBE_ID {
                    prop_assert!(r[2] & 0x04 != 0, "probe answered without AA");
                    break;
                }
                if u16::from_be_bytes([r[0], r[1]]) == id {
                    tally.hit(if r[2] & 0x04 != 0 {
                        "answered (AA)"
                    } else {
                        "answered"
                    });
                }
            }
            if upstream.forwarded.load(Ordering::SeqCst) != forwarded {
                tally.hit("forwarded");
            }
            prop_assert_eq!(PANICS.load(Ordering::SeqCst), 0, "a server task panicked");
            Ok(())
        },
    );
    tally.print("dns messages");
    eprintln!(
        "fuzz dns messages: {} queries reported to the observer",
        seen.0.load(Ordering::SeqCst)
    );
    rt.block_on(server.shutdown());
    drop(upstream);
    assert_eq!(PANICS.load(Ordering::SeqCst), 0, "a panic happened");
}
