//! Routing by role: the frontends built from the inventory keep the workers
//! from the bootstrap's machine-config server (`not_for`), and a kept client is
//! held until another backend is UP.

mod common;

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use okd_lb::{Backend, Balance, Frontend, HealthCheck, LoadBalancer, frontends_for};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;

use common::{ask, echo, fast, lo, wait_up};

#[test]
fn frontends_follow_inventory() {
    use okd_hosts::{Inventory, Node, Ports, Role};
    let node = |name: &str, role: Role, last: u8| Node {
        hostname: name.into(),
        fqdn: format!("{name}.lab.example.com"),
        role,
        mac: None,
        interface: None,
        address: format!("192.168.120.{last}").parse().unwrap(),
        prefix: 24,
        gateway: None,
        nameservers: vec![],
        install_disk: "/dev/sda".into(),
        etcd_name: None,
    };
    let mut inv = Inventory {
        cluster_name: "lab".into(),
        base_domain: "example.com".into(),
        cluster_domain: "lab.example.com".into(),
        listen: "192.168.120.101".parse().unwrap(),
        api: "192.168.120.101".parse().unwrap(),
        ingress: "192.168.120.101".parse().unwrap(),
        upstreams: vec![],
        nodes: vec![
            node("bootstrap", Role::Bootstrap, 102),
            node("master", Role::Master, 103),
        ],
        ports: Ports::default(),
        os_images: Default::default(),
        extra_records: Default::default(),
        allow_recursion: vec![],
    };
    let mcs: SocketAddr = "192.168.120.101:22625".parse().unwrap();
    let fes = frontends_for(&inv, Some(mcs));
    let names: Vec<_> = fes.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(
        names,
        ["api", "machine-config", "ingress-http", "ingress-https"]
    );
    let show = |f: &Frontend| {
        f.backends
            .iter()
            .map(|b| format!("{}={}", b.name, b.addr))
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert_eq!(fes[0].bind.to_string(), "192.168.120.101:6443");
    assert_eq!(
        show(&fes[0]),
        "bootstrap=192.168.120.102:6443 master=192.168.120.103:6443"
    );
    assert_eq!(fes[0].check, HealthCheck::https_get("/readyz"));
    assert_eq!(fes[1].bind.to_string(), "192.168.120.101:22623");
    assert_eq!(
        show(&fes[1]),
        "bootstrap=192.168.120.102:22623 master=192.168.120.103:22623 machine-config-server=192.168.120.101:22625"
    );
    assert_eq!(fes[1].check, HealthCheck::https_get("/healthz"));
    // No workers: ingress goes to the masters.
    assert_eq!(show(&fes[2]), "master=192.168.120.103:80");
    assert_eq!(show(&fes[3]), "master=192.168.120.103:443");
    assert_eq!(fes[3].check, HealthCheck::tcp());
    assert!(fes.iter().all(|f| f.balance == Balance::Source));
    inv.nodes.push(node("worker", Role::Worker, 104));
    let fes = frontends_for(&inv, None);
    assert_eq!(show(&fes[2]), "worker=192.168.120.104:80");
    assert_eq!(
        show(&fes[1]),
        "bootstrap=192.168.120.102:22623 master=192.168.120.103:22623"
    );
    // Issue #27: the workers never go to the bootstrap's machine-config
    // server, which refuses their pool; nothing else is kept from anyone.
    let worker: IpAddr = "192.168.120.104".parse().unwrap();
    assert_eq!(fes[1].backends[0].not_for, vec![worker]);
    assert!(fes[1].backends[1].not_for.is_empty());
    assert!(
        fes.iter()
            .filter(|f| f.name != "machine-config")
            .flat_map(|f| &f.backends)
            .all(|b| b.not_for.is_empty())
    );
}

/// A client kept from the only UP backend is held (closed, the observer
/// told, no connection reaches that backend) while other clients go
/// there; once another backend is UP the held client goes to it.
#[tokio::test]
async fn a_kept_client_is_held_until_another_backend_is_up() {
    #[derive(Default)]
    struct Seen {
        held: std::sync::Mutex<Vec<(String, SocketAddr, Vec<String>)>>,
        closed: std::sync::Mutex<Vec<(String, u64)>>,
    }
    impl okd_lb::ConnObserver for Seen {
        fn proxied(&self, _: &str, _: &str, _: SocketAddr, _: SocketAddr) {}
        fn held(&self, frontend: &str, client: SocketAddr, kept: &[String]) {
            self.held
                .lock()
                .unwrap()
                .push((frontend.into(), client, kept.to_vec()));
        }
        fn closed(&self, _: &str, backend: &str, _: SocketAddr, to_client: u64) {
            self.closed
                .lock()
                .unwrap()
                .push((backend.into(), to_client));
        }
    }
    let boot = echo("bootstrap").await;
    // The master's address is known, but nothing listens there yet.
    let master_l = TcpListener::bind(lo("127.0.0.1")).await.unwrap();
    let master_addr = master_l.local_addr().unwrap();
    drop(master_l);
    let worker: IpAddr = "127.0.0.4".parse().unwrap();
    let fe = Frontend {
        name: "machine-config".into(),
        bind: lo("127.0.0.1"),
        backends: vec![
            Backend {
                not_for: vec![worker],
                ..Backend::new("bootstrap", boot.addr)
            },
            Backend::new("master", master_addr),
        ],
        check: fast(HealthCheck::tcp()),
        balance: Balance::Source,
        limits: okd_lb::Limits::default(),
    };
    let seen = Arc::new(Seen::default());
    let lb = LoadBalancer::start_observed(vec![fe], Some(seen.clone()))
        .await
        .unwrap();
    let addr = lb.local_addr("machine-config").unwrap();
    wait_up(&lb, "machine-config", "bootstrap", true).await;
    wait_up(&lb, "machine-config", "master", false).await;
    // A master (any other client) reaches the bootstrap.
    assert_eq!(
        ask(addr, "127.0.0.3".parse().unwrap()).await.unwrap(),
        "bootstrap"
    );
    // The worker is held, every time, and never reaches it.
    for _ in 0..3 {
        assert!(ask(addr, worker).await.is_err());
    }
    {
        let held = seen.held.lock().unwrap();
        assert_eq!(held.len(), 3, "{:?}", *held);
        assert!(held.iter().all(|(f, c, k)| f == "machine-config"
            && c.ip() == worker
            && k == &["bootstrap".to_string()]));
    }
    let st = lb.snapshot();
    let boot_total = st.frontends[0].backends[0].connections_total;
    assert_eq!(
        boot_total, 1,
        "only the master's connection reached the bootstrap"
    );
    assert_eq!(st.frontends[0].rejected_total, 3);
    // The master's machine-config server comes up: the worker goes there.
    let master = TcpListener::bind(master_addr).await.unwrap();
    let task = tokio::spawn(async move {
        loop {
            let Ok((mut s, _)) = master.accept().await else {
                continue;
            };
            tokio::spawn(async move {
                let _ = s.write_all(b"master\n").await;
                let (mut r, mut w) = s.split();
                let _ = tokio::io::copy(&mut r, &mut w).await;
            });
        }
    });
    wait_up(&lb, "machine-config", "master", true).await;
    assert_eq!(ask(addr, worker).await.unwrap(), "master");
    assert_eq!(seen.held.lock().unwrap().len(), 3);
    // Each connection that ended was reported with what went to the client.
    let deadline = Instant::now() + Duration::from_secs(5);
    while seen.closed.lock().unwrap().len() < 2 {
        assert!(Instant::now() < deadline, "closed connections not reported");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let closed = seen.closed.lock().unwrap().clone();
    assert!(
        closed.contains(&("bootstrap".to_string(), "bootstrap\nping\n".len() as u64)),
        "{closed:?}"
    );
    assert!(
        closed.contains(&("master".to_string(), "master\nping\n".len() as u64)),
        "{closed:?}"
    );
    task.abort();
    lb.shutdown().await;
}
