//! The generated haproxy.cfg and the embedded load balancer put the same
//! hosts on the same ports behind each frontend (one membership rule,
//! `okd_lb::Service`), also with the bastion's frontend ports moved.

use std::collections::BTreeSet;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

use okd_hosts::{Inventory, Role};

/// (frontend, server name, address) of every `server` line of the
/// frontends' default backends (not the `-kept` ones, see [`kept`]).
fn haproxy_servers(cfg: &str) -> BTreeSet<(String, String, SocketAddr)> {
    let mut out = BTreeSet::new();
    let mut backend = String::new();
    for line in cfg.lines() {
        if let Some(b) = line.strip_prefix("backend ") {
            backend = b.trim().to_string();
        }
        let mut w = line.split_whitespace();
        if w.next() == Some("server") && !backend.ends_with("-kept") {
            let name = w.next().unwrap().to_string();
            let addr: SocketAddr = w.next().unwrap().parse().unwrap();
            out.insert((backend.clone(), name, addr));
        }
    }
    out
}

fn embedded(inv: &Inventory) -> BTreeSet<(String, String, SocketAddr)> {
    let mcs = SocketAddr::new(inv.listen, inv.ports.machine_config_server);
    okd_lb::frontends_for(inv, Some(mcs))
        .into_iter()
        .flat_map(|f| {
            f.backends
                .into_iter()
                .map(move |b| (f.name.clone(), b.name, b.addr))
        })
        .collect()
}

/// Per frontend: the client addresses kept from some servers and the
/// servers they get instead. From haproxy.cfg: the `acl kept_hosts src`
/// list and the `<frontend>-kept` backend; from the embedded balancer: the
/// backends' `not_for` and the backends without one.
fn kept(cfg: &str) -> BTreeSet<(String, Vec<IpAddr>, BTreeSet<String>)> {
    let mut out = BTreeSet::new();
    let (mut frontend, mut backend) = (String::new(), String::new());
    let mut acl: std::collections::BTreeMap<String, Vec<IpAddr>> = Default::default();
    let mut servers: std::collections::BTreeMap<String, BTreeSet<String>> = Default::default();
    for line in cfg.lines() {
        if let Some(f) = line.strip_prefix("frontend ") {
            frontend = f.trim().to_string();
        }
        if let Some(b) = line.strip_prefix("backend ") {
            backend = b.trim().to_string();
        }
        if let Some(list) = line.trim().strip_prefix("acl kept_hosts src ") {
            acl.insert(
                frontend.clone(),
                list.split_whitespace()
                    .map(|a| a.parse().unwrap())
                    .collect(),
            );
        }
        let mut w = line.split_whitespace();
        if w.next() == Some("server")
            && let Some(f) = backend.strip_suffix("-kept")
        {
            servers
                .entry(f.to_string())
                .or_default()
                .insert(w.next().unwrap().to_string());
        }
    }
    for (f, addrs) in acl {
        let s = servers.remove(&f).unwrap_or_default();
        out.insert((f, addrs, s));
    }
    assert!(
        servers.is_empty(),
        "a -kept backend without its acl: {servers:?}"
    );
    out
}

fn embedded_kept(inv: &Inventory) -> BTreeSet<(String, Vec<IpAddr>, BTreeSet<String>)> {
    let mcs = SocketAddr::new(inv.listen, inv.ports.machine_config_server);
    let mut out = BTreeSet::new();
    for f in okd_lb::frontends_for(inv, Some(mcs)) {
        let mut addrs: Vec<IpAddr> = Vec::new();
        for b in &f.backends {
            for a in &b.not_for {
                if !addrs.contains(a) {
                    addrs.push(*a);
                }
            }
        }
        if addrs.is_empty() {
            continue;
        }
        let allowed = f
            .backends
            .iter()
            .filter(|b| b.not_for.is_empty())
            .map(|b| b.name.clone())
            .collect();
        out.insert((f.name, addrs, allowed));
    }
    out
}

/// The single-master example, and the same with two workers added.
fn inventories() -> Vec<Inventory> {
    let dir =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../examples/baremetal-single-master");
    let inv = Inventory::load(&dir, "okd", "example").expect("example inventory loads");
    let mut with_workers = inv.clone();
    let master = inv.role(Role::Master).next().unwrap().clone();
    for i in 0..2u8 {
        let mut w = master.clone();
        w.role = Role::Worker;
        w.hostname = format!("worker-{i}");
        w.address = format!("192.168.120.{}", 150 + i).parse().unwrap();
        with_workers.nodes.push(w);
    }
    vec![inv, with_workers]
}

#[test]
fn haproxy_cfg_and_embedded_balancer_agree() {
    for (example, mut inv) in inventories().into_iter().enumerate() {
        let want = embedded(&inv);
        let cfg = okd_bastion::configs::haproxy_cfg(&inv);
        assert_eq!(haproxy_servers(&cfg), want);
        // The same hosts are kept from the same servers (issue #27: the
        // workers from the bootstrap's machine-config server).
        let kept_want = embedded_kept(&inv);
        assert_eq!(kept(&cfg), kept_want, "{cfg}");
        assert_eq!(
            kept_want
                .iter()
                .map(|(f, a, _)| (f.as_str(), a.len()))
                .collect::<Vec<_>>(),
            if inv.role(Role::Worker).count() > 0 {
                vec![("machine-config", inv.role(Role::Worker).count())]
            } else {
                vec![]
            },
            "{example}"
        );
        // Frontend ports moved: the hosts still serve on 6443/22623/80/443.
        inv.ports.api = 16443;
        inv.ports.machine_config = 32623;
        inv.ports.ingress_http = 8081;
        inv.ports.ingress_https = 8443;
        let moved = embedded(&inv);
        assert_eq!(moved, want, "{example}: backends follow the hosts' ports");
        assert_eq!(
            haproxy_servers(&okd_bastion::configs::haproxy_cfg(&inv)),
            moved
        );
        // The bootstrap is behind the API and machine-config only.
        let boot = inv.role(Role::Bootstrap).next().unwrap().hostname.clone();
        let fronts: BTreeSet<&str> = want
            .iter()
            .filter(|(_, n, _)| *n == boot)
            .map(|(f, _, _)| f.as_str())
            .collect();
        assert_eq!(fronts, BTreeSet::from(["api", "machine-config"]));
    }
}
