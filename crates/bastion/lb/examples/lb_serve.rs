//! One-frontend load balancer for the benchmark:
//! `lb_serve <listen addr> <backend addr> [<backend addr>...]`.
//!
//! Prints `listening on <addr>` once bound and runs until SIGINT/SIGTERM.

use std::net::SocketAddr;

use okd_lb::{Backend, Frontend, LoadBalancer};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let usage = "usage: lb_serve <listen addr> <backend addr>...";
    let listen: SocketAddr = args.next().ok_or(usage)?.parse()?;
    let backends = args
        .enumerate()
        .map(|(i, a)| Ok(Backend::new(format!("b{i}"), a.parse()?)))
        .collect::<Result<Vec<_>, std::net::AddrParseError>>()?;
    if backends.is_empty() {
        return Err(usage.into());
    }
    let lb = LoadBalancer::start(vec![Frontend::new("bench", listen, backends)]).await?;
    println!(
        "listening on {}",
        lb.local_addr("bench").ok_or("frontend missing")?
    );
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    eprintln!("{}", serde_json::to_string(&lb.snapshot())?);
    lb.shutdown().await;
    Ok(())
}
