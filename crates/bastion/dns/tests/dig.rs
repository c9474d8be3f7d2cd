//! The server on 127.0.0.1, asked by the real `dig` (bind9-dnsutils), with a
//! real dnsmasq as the upstream resolver.

mod common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::{Dnsmasq, Running, dig, dig_program, dnsmasq_program, single_master};

const D: &str = "okd.example.";

#[test]
fn forward_zone_names_resolve_with_aa() {
    let Some(dig_bin) = dig_program() else { return };
    let s = Running::start(&single_master(), false);
    for (name, want) in [
        ("api.okd.example", "192.168.120.101"),
        ("api-int.okd.example", "192.168.120.101"),
        (
            "console-openshift-console.apps.okd.example",
            "192.168.120.101",
        ),
        ("oauth-openshift.apps.okd.example", "192.168.120.101"),
        ("apps.okd.example", "192.168.120.101"),
        ("bootstrap.okd.example", "192.168.120.102"),
        ("master.okd.example", "192.168.120.103"),
        ("worker1.okd.example", "192.168.120.104"),
        ("registry.okd.example", "192.168.120.101"),
        ("ns1.okd.example", "192.168.120.101"),
        // Case does not matter (RFC 4343), and the question is echoed as asked.
        ("Master.OKD.Example", "192.168.120.103"),
    ] {
        let r = dig(&dig_bin, s.addr, &[name, "A"]);
        assert_eq!(r.status, "NOERROR", "{name}:\n{}", r.raw);
        assert!(r.aa(), "{name} lacks aa:\n{}", r.raw);
        assert_eq!(r.data(), [want], "{name}:\n{}", r.raw);
        assert_eq!(r.answer[0].name, format!("{}.", name.to_ascii_lowercase()));
        assert_eq!(r.answer[0].ttl, 60);
    }
    let soa = dig(&dig_bin, s.addr, &[D, "SOA"]);
    assert_eq!(soa.answer.len(), 1, "{}", soa.raw);
    assert!(
        soa.answer[0]
            .data
            .starts_with("ns1.okd.example. hostmaster.okd.example. "),
        "{}",
        soa.raw
    );
    let ns = dig(&dig_bin, s.addr, &[D, "NS"]);
    assert_eq!(ns.data(), ["ns1.okd.example."], "{}", ns.raw);
    assert_eq!(ns.additional[0].data, "192.168.120.101", "{}", ns.raw);
}

#[test]
fn ptr_records_for_nodes_and_api() {
    let Some(dig_bin) = dig_program() else { return };
    let s = Running::start(&single_master(), false);
    for (ip, want) in [
        ("192.168.120.102", vec!["bootstrap.okd.example."]),
        ("192.168.120.103", vec!["master.okd.example."]),
        ("192.168.120.104", vec!["worker1.okd.example."]),
        (
            "192.168.120.101",
            vec!["api-int.okd.example.", "api.okd.example."],
        ),
    ] {
        let r = dig(&dig_bin, s.addr, &["-x", ip]);
        assert_eq!(r.status, "NOERROR", "{ip}:\n{}", r.raw);
        assert!(r.aa(), "{}", r.raw);
        assert_eq!(r.data(), want, "{ip}:\n{}", r.raw);
    }
    // An address of the reverse zone that no host has.
    let r = dig(&dig_bin, s.addr, &["-x", "192.168.120.250"]);
    assert_eq!(r.status, "NXDOMAIN", "{}", r.raw);
    assert!(r.aa(), "{}", r.raw);
    assert_eq!(r.authority[0].name, "120.168.192.in-addr.arpa.");
    assert_eq!(r.authority[0].rtype, "SOA");
}

#[test]
fn etcd_records_only_when_asked() {
    let Some(dig_bin) = dig_program() else { return };
    let srv = "_etcd-server-ssl._tcp.okd.example";
    let on = Running::start(&single_master(), true);
    let r = dig(&dig_bin, on.addr, &[srv, "SRV"]);
    assert_eq!(r.status, "NOERROR", "{}", r.raw);
    assert!(r.aa(), "{}", r.raw);
    assert_eq!(r.data(), ["0 10 2380 etcd-0.okd.example."], "{}", r.raw);
    assert_eq!(r.additional.len(), 1, "{}", r.raw);
    assert_eq!(r.additional[0].name, "etcd-0.okd.example.");
    assert_eq!(r.additional[0].data, "192.168.120.103");
    let r = dig(&dig_bin, on.addr, &["etcd-0.okd.example", "A"]);
    assert_eq!(r.data(), ["192.168.120.103"], "{}", r.raw);
    drop(on);

    let off = Running::start(&single_master(), false);
    for (name, t) in [(srv, "SRV"), ("etcd-0.okd.example", "A")] {
        let r = dig(&dig_bin, off.addr, &[name, t]);
        assert_eq!(r.status, "NXDOMAIN", "{name}:\n{}", r.raw);
        assert!(r.answer.is_empty() && r.aa(), "{}", r.raw);
    }
}

#[test]
fn unknown_names_nxdomain_and_other_types_nodata() {
    let Some(dig_bin) = dig_program() else { return };
    let s = Running::start(&single_master(), true);
    for name in [
        "nope.okd.example",
        "x.master.okd.example",
        "okd.okd.example",
    ] {
        let r = dig(&dig_bin, s.addr, &[name, "A"]);
        assert_eq!(r.status, "NXDOMAIN", "{name}:\n{}", r.raw);
        assert!(r.aa(), "{name}:\n{}", r.raw);
        assert!(r.answer.is_empty());
        assert_eq!(r.authority.len(), 1, "{}", r.raw);
        assert_eq!(r.authority[0].rtype, "SOA");
        assert_eq!(r.authority[0].name, D);
    }
    // NODATA: the name exists, the type does not (RFC 2308 §2.2).
    for (name, t) in [
        ("master.okd.example", "AAAA"),
        ("api.okd.example", "TXT"),
        ("x.apps.okd.example", "AAAA"),
        // An empty non-terminal (RFC 8020).
        ("_tcp.okd.example", "SRV"),
    ] {
        let r = dig(&dig_bin, s.addr, &[name, t]);
        assert_eq!(r.status, "NOERROR", "{name} {t}:\n{}", r.raw);
        assert!(r.aa(), "{}", r.raw);
        assert!(r.answer.is_empty(), "{}", r.raw);
        assert_eq!(r.authority[0].rtype, "SOA", "{}", r.raw);
    }
}

#[test]
fn tcp_answers_the_same() {
    let Some(dig_bin) = dig_program() else { return };
    let s = Running::start(&single_master(), true);
    let r = dig(&dig_bin, s.addr, &["+tcp", "api-int.okd.example", "A"]);
    assert!(r.raw.contains("(TCP)"), "{}", r.raw);
    assert_eq!(r.data(), ["192.168.120.101"], "{}", r.raw);
    let r = dig(
        &dig_bin,
        s.addr,
        &["+tcp", "_etcd-server-ssl._tcp.okd.example", "SRV"],
    );
    assert_eq!(r.data(), ["0 10 2380 etcd-0.okd.example."], "{}", r.raw);
    let r = dig(&dig_bin, s.addr, &["+tcp", "-x", "192.168.120.103"]);
    assert_eq!(r.data(), ["master.okd.example."], "{}", r.raw);
    // Several queries on one connection (RFC 7766 §6.2.1).
    let r = dig(
        &dig_bin,
        s.addr,
        &[
            "+tcp",
            "+keepopen",
            "master.okd.example",
            "A",
            "worker1.okd.example",
            "A",
        ],
    );
    assert_eq!(
        r.data(),
        ["192.168.120.103", "192.168.120.104"],
        "{}",
        r.raw
    );
}

#[test]
fn outside_the_zone_is_refused_without_upstreams() {
    let Some(dig_bin) = dig_program() else { return };
    let s = Running::start(&single_master(), false);
    for args in [
        &["example.com", "A"][..],
        &["+tcp", "example.com", "A"],
        &["example", "A"],
        &["-x", "10.1.2.3"],
    ] {
        let r = dig(&dig_bin, s.addr, args);
        assert_eq!(r.status, "REFUSED", "{args:?}:\n{}", r.raw);
        assert!(!r.aa(), "{}", r.raw);
        assert!(!r.flags.iter().any(|f| f == "ra"), "{}", r.raw);
    }
    let seen = s.seen.wait_for("example.com.", "A");
    assert!(seen.answers.is_empty());
}

#[test]
fn forwards_to_upstream_dnsmasq() {
    let Some(dig_bin) = dig_program() else { return };
    let Some(dnsmasq) = dnsmasq_program() else {
        return;
    };
    let up = Dnsmasq::start(
        &dnsmasq,
        "no-resolv\nno-hosts\naddress=/upstream.test/10.9.8.7\n",
    );
    let mut inv = single_master();
    inv.upstreams = vec![up.addr];
    let s = Running::start(&inv, false);
    let r = dig(&dig_bin, s.addr, &["upstream.test", "A"]);
    assert_eq!(r.status, "NOERROR", "{}", r.raw);
    assert_eq!(r.data(), ["10.9.8.7"], "{}", r.raw);
    assert!(r.flags.iter().any(|f| f == "ra"), "{}", r.raw);
    let r = dig(&dig_bin, s.addr, &["+tcp", "www.upstream.test", "A"]);
    assert_eq!(r.data(), ["10.9.8.7"], "{}", r.raw);
    let seen = s.seen.wait_for("www.upstream.test.", "A");
    assert_eq!(seen.answers, ["10.9.8.7"]);
    // Our own zone is still ours, with upstreams configured.
    let r = dig(&dig_bin, s.addr, &["nope.okd.example", "A"]);
    assert_eq!(r.status, "NXDOMAIN", "{}", r.raw);
    assert!(r.aa(), "{}", r.raw);
}

#[test]
fn a_dead_upstream_does_not_slow_our_zone() {
    let Some(dig_bin) = dig_program() else { return };
    // An upstream that reads queries and never answers.
    let silent = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut inv = single_master();
    inv.upstreams = vec![silent.local_addr().unwrap()];
    let s = Running::start(&inv, false);
    let addr = s.addr;
    let slow = std::thread::spawn({
        let dig_bin = dig_bin.clone();
        move || dig(&dig_bin, addr, &["+time=5", "stuck.test", "A"])
    });
    // 50 more forwards stuck behind it, from a raw client.
    let client = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    client
        .set_read_timeout(Some(Duration::from_secs(1)))
        .unwrap();
    for i in 0..50u16 {
        client
            .send_to(&query(i, &format!("stuck{i}.test."), 1), addr)
            .unwrap();
    }
    silent
        .set_read_timeout(Some(Duration::from_secs(3)))
        .unwrap();
    let mut buf = [0u8; 512];
    silent
        .recv_from(&mut buf)
        .expect("queries reach the upstream");
    // Our own names still answer at once, one after the other.
    let t = Instant::now();
    for i in 0..100u16 {
        let id = 1000 + i;
        client
            .send_to(&query(id, "api.okd.example.", 1), addr)
            .unwrap();
        let (n, _) = client.recv_from(&mut buf).expect("answer in time");
        assert_eq!(buf[..2], id.to_be_bytes(), "answers come in order");
        assert_eq!(&buf[n - 4..n], &[192, 168, 120, 101]);
    }
    assert!(
        t.elapsed() < Duration::from_secs(1),
        "100 answers took {:?} while forwards were pending",
        t.elapsed()
    );
    // No upstream answered: SERVFAIL once the forward gives up.
    let r = slow.join().unwrap();
    assert_eq!(r.status, "SERVFAIL", "{}", r.raw);
}

/// A plain query (RD, no EDNS).
fn query(id: u16, name: &str, qtype: u16) -> Vec<u8> {
    let mut b = id.to_be_bytes().to_vec();
    b.extend_from_slice(&[1, 0, 0, 1, 0, 0, 0, 0, 0, 0]);
    for l in name.trim_end_matches('.').split('.') {
        b.push(l.len() as u8);
        b.extend_from_slice(l.as_bytes());
    }
    b.push(0);
    b.extend_from_slice(&qtype.to_be_bytes());
    b.extend_from_slice(&[0, 1]);
    b
}

#[test]
fn large_answers_truncate_over_udp_and_come_whole_over_tcp() {
    let Some(dig_bin) = dig_program() else { return };
    // 30 masters: 30 SRV records (about 1.2 kB) and 30 addresses for them.
    let mut inv = single_master();
    let master = inv.nodes[1].clone();
    for i in 1..30u8 {
        let mut m = master.clone();
        m.hostname = format!("master{i}");
        m.fqdn = format!("master{i}.okd.example");
        m.address = std::net::IpAddr::from([192, 168, 121, i]);
        m.mac = None;
        m.etcd_name = Some(format!("etcd-{i}"));
        inv.nodes.push(m);
    }
    let s = Running::start(&inv, true);
    let srv = "_etcd-server-ssl._tcp.okd.example";
    // No EDNS: 512 octets; dig +ignore shows the truncated reply.
    let r = dig(&dig_bin, s.addr, &["+noedns", "+ignore", srv, "SRV"]);
    assert!(r.flags.iter().any(|f| f == "tc"), "{}", r.raw);
    assert!(r.answer.is_empty(), "{}", r.raw);
    // Without +ignore dig retries over TCP and gets everything.
    let r = dig(&dig_bin, s.addr, &["+noedns", srv, "SRV"]);
    assert!(r.raw.contains("(TCP)"), "{}", r.raw);
    assert_eq!(r.answer.len(), 30, "{}", r.raw);
    assert_eq!(r.additional.len(), 30, "{}", r.raw);
    // EDNS 1232: the answers fit, the target addresses do not and are left out.
    let r = dig(&dig_bin, s.addr, &["+bufsize=1232", srv, "SRV"]);
    assert!(!r.flags.iter().any(|f| f == "tc"), "{}", r.raw);
    assert!(r.raw.contains("(UDP)"), "{}", r.raw);
    assert_eq!(r.answer.len(), 30, "{}", r.raw);
    assert!(r.additional.is_empty(), "{}", r.raw);
}

#[test]
fn observer_sees_name_type_and_answers() {
    let Some(dig_bin) = dig_program() else { return };
    let s = Running::start(&single_master(), true);
    dig(&dig_bin, s.addr, &["API-Int.okd.example", "A"]);
    dig(
        &dig_bin,
        s.addr,
        &["_etcd-server-ssl._tcp.okd.example", "SRV"],
    );
    dig(&dig_bin, s.addr, &["nope.okd.example", "A"]);
    dig(&dig_bin, s.addr, &["master.okd.example", "AAAA"]);
    dig(&dig_bin, s.addr, &["-x", "192.168.120.103"]);
    let a = s.seen.wait_for("api-int.okd.example.", "A");
    assert_eq!(a.answers, ["192.168.120.101"]);
    assert_eq!(
        a.client.ip(),
        "127.0.0.1".parse::<std::net::IpAddr>().unwrap()
    );
    assert_ne!(a.client.port(), s.addr.port());
    let srv = s.seen.wait_for("_etcd-server-ssl._tcp.okd.example.", "SRV");
    assert_eq!(srv.answers, ["0 10 2380 etcd-0.okd.example."]);
    assert!(s.seen.wait_for("nope.okd.example.", "A").answers.is_empty());
    assert!(
        s.seen
            .wait_for("master.okd.example.", "AAAA")
            .answers
            .is_empty()
    );
    let ptr = s.seen.wait_for("103.120.168.192.in-addr.arpa.", "PTR");
    assert_eq!(ptr.answers, ["master.okd.example."]);
}

#[test]
fn port_in_use_is_a_clear_error() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let inv = single_master();
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let taken = udp.local_addr().unwrap();
    let e = rt
        .block_on(okd_dns::DnsServer::start(&inv, taken, false, None))
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        format!("cannot listen on {taken} (udp): address already in use")
    );
    drop(udp);

    let port = common::free_port();
    let tcp = std::net::TcpListener::bind(("127.0.0.1", port)).unwrap();
    let taken: SocketAddr = ([127, 0, 0, 1], port).into();
    let e = rt
        .block_on(okd_dns::DnsServer::start(&inv, taken, false, None))
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        format!("cannot listen on 127.0.0.1:{port} (tcp): address already in use")
    );
    drop(tcp);
}

#[test]
fn shutdown_releases_both_sockets() {
    let s = Running::start(&single_master(), false);
    let addr = s.stop();
    std::net::UdpSocket::bind(addr).expect("udp port free after shutdown");
    std::net::TcpListener::bind(addr).expect("tcp port free after shutdown");
}
