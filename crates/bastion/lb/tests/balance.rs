//! Balancing on loopback: source affinity spreads clients and keeps each on
//! its backend, round robin alternates, a removed backend leaves every frontend.

mod common;

use std::net::IpAddr;

use okd_lb::{Backend, Balance, Frontend, HealthCheck, LoadBalancer};

use common::{ask, echo, lo, localhost};

#[tokio::test]
async fn source_affinity_is_stable_and_spreads_clients() {
    let a = echo("a").await;
    let b = echo("b").await;
    let fe = Frontend {
        name: "api".into(),
        bind: lo("127.0.0.1"),
        backends: vec![Backend::new("a", a.addr), Backend::new("b", b.addr)],
        check: HealthCheck::none(),
        balance: Balance::Source,
        limits: okd_lb::Limits::default(),
    };
    let lb = LoadBalancer::start(vec![fe]).await.unwrap();
    let addr = lb.local_addr("api").unwrap();
    let mut seen = std::collections::BTreeSet::new();
    for last in 1..=12u8 {
        let src: IpAddr = format!("127.0.0.{last}").parse().unwrap();
        let first = ask(addr, src).await.unwrap();
        for _ in 0..4 {
            assert_eq!(ask(addr, src).await.unwrap(), first, "client {src} moved");
        }
        seen.insert(first);
    }
    assert_eq!(seen.len(), 2, "12 client addresses all went to {seen:?}");
    let st = lb.snapshot();
    let total: u64 = st.frontends[0]
        .backends
        .iter()
        .map(|b| b.connections_total)
        .sum();
    assert_eq!(total, 60);
    lb.shutdown().await;
}

#[tokio::test]
async fn round_robin_alternates() {
    let a = echo("a").await;
    let b = echo("b").await;
    let mut fe = Frontend::new(
        "rr",
        lo("127.0.0.1"),
        vec![Backend::new("a", a.addr), Backend::new("b", b.addr)],
    );
    fe.balance = Balance::RoundRobin;
    fe.check = HealthCheck::none();
    let lb = LoadBalancer::start(vec![fe]).await.unwrap();
    let addr = lb.local_addr("rr").unwrap();
    let mut tags = Vec::new();
    for _ in 0..4 {
        tags.push(ask(addr, localhost()).await.unwrap());
    }
    assert_eq!(tags, ["a", "b", "a", "b"]);
}

#[tokio::test]
async fn remove_backend_leaves_every_frontend() {
    let boot = echo("bootstrap").await;
    let master = echo("master").await;
    let fes: Vec<Frontend> = ["api", "machine-config"]
        .iter()
        .map(|name| Frontend {
            name: name.to_string(),
            bind: lo("127.0.0.1"),
            backends: vec![
                Backend::new("bootstrap", boot.addr),
                Backend::new("master", master.addr),
            ],
            check: HealthCheck::none(),
            balance: Balance::RoundRobin,
            limits: okd_lb::Limits::default(),
        })
        .collect();
    let lb = LoadBalancer::start(fes).await.unwrap();
    assert_eq!(lb.remove_backend("bootstrap"), ["api", "machine-config"]);
    assert!(lb.remove_backend("bootstrap").is_empty());
    for fe in ["api", "machine-config"] {
        let addr = lb.local_addr(fe).unwrap();
        for _ in 0..6 {
            assert_eq!(ask(addr, localhost()).await.unwrap(), "master");
        }
        assert_eq!(lb.is_up(fe, "bootstrap"), None);
    }
    let st = lb.snapshot();
    for fe in &st.frontends {
        let names: Vec<_> = fe.backends.iter().map(|b| b.name.as_str()).collect();
        assert_eq!(names, ["master"]);
    }
    let json = serde_json::to_value(&st).unwrap();
    assert_eq!(json["frontends"][0]["backends"][0]["connections_total"], 6);
}
