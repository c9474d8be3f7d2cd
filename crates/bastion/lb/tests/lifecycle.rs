//! Starting and stopping: a port in use names the frontend and the port,
//! shutdown releases the ports.

mod common;

use std::time::Duration;

use okd_lb::{Frontend, LbError, LoadBalancer};
use tokio::net::TcpListener;

use common::lo;

#[tokio::test]
async fn port_in_use_names_frontend_and_port() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap();
    let fes = vec![
        Frontend::new("api", lo("127.0.0.1"), vec![]),
        Frontend::new("machine-config", addr, vec![]),
    ];
    let err = LoadBalancer::start(fes).await.unwrap_err();
    assert!(matches!(err, LbError::Bind { .. }));
    assert_eq!(
        err.to_string(),
        format!("frontend machine-config: cannot listen on {addr}: address already in use")
    );
}

#[tokio::test]
async fn shutdown_releases_ports() {
    let lb = LoadBalancer::start(vec![Frontend::new("api", lo("127.0.0.1"), vec![])])
        .await
        .unwrap();
    let addr = lb.local_addr("api").unwrap();
    let closed = lb.closed();
    lb.shutdown().await;
    tokio::time::timeout(Duration::from_secs(1), closed)
        .await
        .unwrap();
    TcpListener::bind(addr).await.unwrap();
}
