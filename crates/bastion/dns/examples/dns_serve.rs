//! Runs the okd-dns server alone, for the benchmark and for trying it with
//! `dig`.
//!
//! `dns_serve <inventory dir> <cluster name> <base domain> <bind addr:port> [--etcd] [--observe] [--limit-loopback] [--upstream addr:port]...`
//!
//! Loads the inventory (`agent-config.yaml`, `bastion-config.yaml`),
//! replaces its upstream resolvers by the `--upstream` ones (none by
//! default), serves on the bind address (port 0: any), prints
//! `listening <addr>` on stdout and serves until stdin closes. `--observe`
//! installs an observer that counts queries, as `okd-install serve` has
//! one. `RUST_LOG=debug` logs every query.

use std::io::{BufRead, Write};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Counts queries.
#[derive(Default)]
struct Count(AtomicU64);

impl okd_dns::DnsObserver for Count {
    fn answered(&self, _: SocketAddr, _: &str, _: &str, _: &[String]) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 4 {
        eprintln!(
            "usage: dns_serve <inventory dir> <cluster name> <base domain> <bind addr:port> [--etcd] [--observe] [--limit-loopback] [--upstream addr:port]..."
        );
        std::process::exit(2);
    }
    let mut inv = okd_hosts::Inventory::load(Path::new(&args[0]), &args[1], &args[2])
        .unwrap_or_else(|e| panic!("inventory: {e}"));
    let bind: SocketAddr = args[3].parse().expect("bind address");
    let etcd = args.iter().any(|a| a == "--etcd");
    let limit_loopback = args.iter().any(|a| a == "--limit-loopback");
    let count = Arc::new(Count::default());
    let observer: Option<Arc<dyn okd_dns::DnsObserver>> = args
        .iter()
        .any(|a| a == "--observe")
        .then(|| count.clone() as Arc<dyn okd_dns::DnsObserver>);
    inv.upstreams = args
        .windows(2)
        .filter(|w| w[0] == "--upstream")
        .map(|w| w[1].parse().expect("upstream address"))
        .collect();
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let mut options = okd_dns::DnsOptions::default();
        if limit_loopback {
            // Loopback goes through the rate limiter too (a limit too high
            // to bite), so a benchmark pays for the account lookup.
            options.rate = okd_dns::RateLimit {
                responses_per_second: u32::MAX,
                exempt: vec![],
                ..okd_dns::RateLimit::default()
            };
            inv.allow_recursion
                .retain(|n| !n.contains(&std::net::IpAddr::from([127, 0, 0, 1])));
        }
        let server = okd_dns::DnsServer::start_with(&inv, bind, etcd, observer, options)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        println!("listening {}", server.local_addr());
        let _ = std::io::stdout().flush();
        // Serve until stdin closes (the parent exits or closes the pipe).
        let _ = tokio::task::spawn_blocking(|| {
            let mut line = String::new();
            let mut stdin = std::io::stdin().lock();
            while stdin.read_line(&mut line).map(|n| n > 0).unwrap_or(false) {
                line.clear();
            }
        })
        .await;
        server.shutdown().await;
    });
    let n = count.0.load(Ordering::Relaxed);
    if n > 0 {
        eprintln!("observer saw {n} queries");
    }
}
