//! The generated haproxy.cfg and the embedded load balancer put the same
//! hosts on the same ports behind each frontend (one membership rule,
//! `okd_lb::Service`), also with the bastion's frontend ports moved.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::PathBuf;

use okd_hosts::{Inventory, Role};

/// (frontend, server name, address) of every `server` line.
fn haproxy_servers(cfg: &str) -> BTreeSet<(String, String, SocketAddr)> {
    let mut out = BTreeSet::new();
    let mut backend = String::new();
    for line in cfg.lines() {
        if let Some(b) = line.strip_prefix("backend ") {
            backend = b.trim().to_string();
        }
        let mut w = line.split_whitespace();
        if w.next() == Some("server") {
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
        assert_eq!(
            haproxy_servers(&okd_bastion::configs::haproxy_cfg(&inv)),
            want
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
