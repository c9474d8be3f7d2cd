//! Hostile and careless clients (issue #10 items 2 and 4): recursion only
//! for the allowed networks, relayed replies cut to the client's UDP size,
//! response rate limiting outside the allowed networks, and a slow TCP flood — with `dig` and a real
//! dnsmasq upstream on loopback.

mod common;

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream, UdpSocket};
use std::time::{Duration, Instant};

use common::{Dnsmasq, Running, dig, dig_program, dnsmasq_program, single_master};
use okd_dns::{DnsOptions, RateLimit};

fn upstream(conf: &str) -> Option<Dnsmasq> {
    let dnsmasq = dnsmasq_program()?;
    Some(Dnsmasq::start(
        &dnsmasq,
        &format!("no-resolv\nno-hosts\naddress=/upstream.test/10.9.8.7\n{conf}"),
    ))
}

#[test]
fn recursion_only_for_allowed_networks_authoritative_for_all() {
    let Some(dig_bin) = dig_program() else { return };
    let Some(up) = upstream("") else { return };
    let mut inv = single_master();
    inv.upstreams = vec![up.addr];
    inv.allow_recursion = vec!["127.0.0.2/32".parse().unwrap()];
    let s = Running::start(&inv, false);
    let inside = dig(&dig_bin, s.addr, &["-b", "127.0.0.2", "upstream.test", "A"]);
    assert_eq!(inside.status, "NOERROR", "{}", inside.raw);
    assert_eq!(inside.data(), ["10.9.8.7"], "{}", inside.raw);
    assert!(inside.flags.iter().any(|f| f == "ra"), "{}", inside.raw);
    for args in [
        &["-b", "127.0.0.3", "upstream.test", "A"][..],
        &["-b", "127.0.0.3", "+tcp", "upstream.test", "A"][..],
    ] {
        let outside = dig(&dig_bin, s.addr, args);
        assert_eq!(outside.status, "REFUSED", "{}", outside.raw);
        assert!(outside.answer.is_empty(), "{}", outside.raw);
        assert!(!outside.flags.iter().any(|f| f == "ra"), "{}", outside.raw);
    }
    // Our own zone answers everyone, with AA.
    let own = dig(
        &dig_bin,
        s.addr,
        &["-b", "127.0.0.3", "api.okd.example", "A"],
    );
    assert_eq!(own.status, "NOERROR", "{}", own.raw);
    assert!(own.aa(), "{}", own.raw);
    assert_eq!(own.data(), ["192.168.120.101"], "{}", own.raw);
}

/// dig's `;; MSG SIZE  rcvd: N`.
fn size(raw: &str) -> usize {
    raw.lines()
        .find_map(|l| l.strip_prefix(";; MSG SIZE  rcvd: "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no size in {raw}"))
}

#[test]
fn relayed_replies_are_cut_to_the_clients_udp_size() {
    let Some(dig_bin) = dig_program() else { return };
    // Ten 200-octet TXT strings: a ~2.2 kB answer, which dnsmasq sends
    // whole to a client advertising 4096.
    let chunk = "x".repeat(200);
    let txt: String = (0..10)
        .map(|i| format!("txt-record=big.upstream.test,\"{i}{chunk}\"\n"))
        .collect();
    let Some(up) = upstream(&format!("edns-packet-max=4096\n{txt}")) else {
        return;
    };
    let mut inv = single_master();
    inv.upstreams = vec![up.addr];
    let s = Running::start(&inv, false);
    // Over UDP with a 4096 buffer: at most our 1232, TC set, no records.
    let r = dig(
        &dig_bin,
        s.addr,
        &["+bufsize=4096", "+ignore", "big.upstream.test", "TXT"],
    );
    assert!(r.flags.iter().any(|f| f == "tc"), "{}", r.raw);
    assert!(r.answer.is_empty(), "{}", r.raw);
    assert!(size(&r.raw) <= 1232, "{}", r.raw);
    // A 1232-octet client gets the same; TCP gets it whole.
    let r = dig(&dig_bin, s.addr, &["+tcp", "big.upstream.test", "TXT"]);
    assert_eq!(r.answer.len(), 10, "{}", r.raw);
    assert!(size(&r.raw) > 2000, "{}", r.raw);
    // Small replies are relayed as they are.
    let r = dig(&dig_bin, s.addr, &["+bufsize=4096", "upstream.test", "A"]);
    assert_eq!(r.data(), ["10.9.8.7"], "{}", r.raw);
    assert!(!r.flags.iter().any(|f| f == "tc"), "{}", r.raw);
}

/// A query for `api.okd.example. A` with ID `id`.
fn query(id: u16) -> Vec<u8> {
    let mut q = vec![(id >> 8) as u8, id as u8, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0];
    for l in ["api", "okd", "example"] {
        q.push(l.len() as u8);
        q.extend_from_slice(l.as_bytes());
    }
    q.extend_from_slice(&[0, 0, 1, 0, 1]);
    q
}

/// Sends `n` queries from `src` (20 at a time, reading what came back in
/// between) and collects the replies that come within 500 ms of the last
/// one sent.
fn exchange(src: &str, to: SocketAddr, n: u16) -> Vec<Vec<u8>> {
    let sock = UdpSocket::bind((src, 0)).unwrap();
    let mut got = Vec::new();
    let mut b = [0u8; 512];
    let mut drain = |sock: &UdpSocket, wait: Duration| {
        sock.set_read_timeout(Some(wait)).unwrap();
        let deadline = Instant::now() + wait;
        while Instant::now() < deadline {
            if let Ok(len) = sock.recv(&mut b) {
                got.push(b[..len].to_vec());
            }
        }
    };
    for id in 0..n {
        sock.send_to(&query(id), to).unwrap();
        if id % 20 == 19 {
            drain(&sock, Duration::from_millis(2));
        }
    }
    drain(&sock, Duration::from_millis(500));
    got
}

/// Whether a reply has TC set.
fn tc(r: &[u8]) -> bool {
    r[2] & 0x02 != 0
}

#[test]
fn rate_limit_per_prefix_outside_the_allowed_networks_with_slip() {
    let mut inv = single_master();
    inv.allow_recursion = vec!["127.0.2.0/24".parse().unwrap()];
    let s = Running::start_with(
        &inv,
        false,
        DnsOptions {
            rate: RateLimit {
                responses_per_second: 10,
                slip: 2,
                exempt: vec![],
                ..RateLimit::default()
            },
            ..DnsOptions::default()
        },
    );
    // 100 from one client outside: the one second of credit answered, of
    // the other responses every second truncated, the rest dropped.
    let r = exchange("127.0.0.7", s.addr, 100);
    let full = r.iter().filter(|r| !tc(r)).count();
    let slipped: Vec<_> = r.iter().filter(|r| tc(r)).collect();
    assert!((10..=13).contains(&full), "{full} answered of 100");
    assert!(
        (43..=45).contains(&slipped.len()),
        "{} truncated of 100",
        slipped.len()
    );
    let sent = query(0).len();
    for t in &slipped {
        assert!(t.len() <= sent, "truncated reply of {} octets", t.len());
        assert_eq!(&t[6..12], [0; 6], "records in a truncated reply");
    }
    let back: usize = r.iter().map(Vec::len).sum();
    assert!(
        back < 100 * sent,
        "{back} octets back for {} sent",
        100 * sent
    );
    // The same /24 shares the account; another /24 has its own.
    let same = exchange("127.0.0.8", s.addr, 10);
    assert_eq!(same.len(), 5, "{same:?}");
    assert!(same.iter().all(|r| tc(r)), "{same:?}");
    let other = exchange("127.0.1.8", s.addr, 10);
    assert_eq!(other.iter().filter(|r| !tc(r)).count(), 10);
    // The allowed networks are never limited.
    let allowed = exchange("127.0.2.9", s.addr, 1000);
    assert_eq!(allowed.iter().filter(|r| !tc(r)).count(), 1000);
}

/// A TCP connection from `src` to `to`.
fn connect_from(src: IpAddr, to: SocketAddr) -> TcpStream {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let s = tokio::net::TcpSocket::new_v4().unwrap();
        s.bind(SocketAddr::new(src, 0)).unwrap();
        s.connect(to).await.unwrap().into_std().unwrap()
    })
}

/// Whether the server closed `c` within `within`.
fn closed_within(c: &mut TcpStream, within: Duration) -> bool {
    c.set_nonblocking(false).unwrap();
    c.set_read_timeout(Some(within)).unwrap();
    let mut b = [0u8; 64];
    match c.read(&mut b) {
        Ok(n) => n == 0,
        Err(e) => !matches!(
            e.kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
        ),
    }
}

#[test]
fn slow_tcp_flood_from_one_address_leaves_tcp_answering() {
    let Some(dig_bin) = dig_program() else { return };
    let inv = single_master();
    let mut opts = DnsOptions::default();
    opts.tcp.idle = Duration::from_millis(1500);
    let s = Running::start_with(&inv, false, opts);
    // 300 connections from one address: nothing, or half a length prefix.
    let src: IpAddr = "127.0.5.1".parse().unwrap();
    let mut flood: Vec<TcpStream> = (0..300)
        .map(|i| {
            let mut c = connect_from(src, s.addr);
            if i % 2 == 0 {
                let _ = c.write_all(&[0]);
            }
            c
        })
        .collect();
    // A real client over TCP is answered at once.
    let t = Instant::now();
    let r = dig(&dig_bin, s.addr, &["+tcp", "api.okd.example", "A"]);
    assert_eq!(r.data(), ["192.168.120.101"], "{}", r.raw);
    assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
    // Only 16 of the flood were kept; those close after the idle time.
    let t = Instant::now();
    let open = flood
        .iter_mut()
        .map(|c| closed_within(c, Duration::from_millis(5)))
        .filter(|closed| !closed)
        .count();
    assert!(open <= 16, "{open} flood connections still open");
    std::thread::sleep(Duration::from_millis(1500).saturating_sub(t.elapsed()));
    // One deadline for all, so a failure is quick too.
    let deadline = Instant::now() + Duration::from_secs(2);
    for c in &mut flood {
        let left = deadline
            .saturating_duration_since(Instant::now())
            .max(Duration::from_millis(10));
        assert!(closed_within(c, left), "idle connection kept");
    }
}
