//! Logging of backend states, alone in its test binary: `tracing` caches
//! per call site whether any subscriber wants its events, and a test of
//! another file running beside this one on another thread without a
//! subscriber can leave a call site's cache saying "no one" (a DOWN warning
//! went missing in CI that way). Here no other test runs in the process.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use okd_lb::{Backend, Frontend, HealthCheck, LoadBalancer};
use tokio::net::TcpListener;

use common::{ask, fast, lo, localhost};

/// A `tracing` writer into a shared buffer.
#[derive(Clone, Default)]
struct LogBuf(Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for LogBuf {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Issue #42 finding 9: a backend that has not served yet (a host not
/// booted) is no warning; one that passed its checks and then failed them
/// is, once.
#[tokio::test]
async fn only_a_backend_that_went_down_is_a_warning() {
    let buf = LogBuf::default();
    let w = buf.clone();
    let sub = tracing_subscriber::fmt()
        .with_writer(move || w.clone())
        .with_ansi(false)
        .with_max_level(tracing::Level::INFO)
        .finish();
    let _guard = tracing::subscriber::set_default(sub);
    let log = || String::from_utf8_lossy(&buf.0.lock().unwrap()).into_owned();
    let warnings = |log: &str| -> Vec<String> {
        log.lines()
            .filter(|l| l.contains("WARN") && l.contains("backend later"))
            .map(String::from)
            .collect()
    };
    let probe = TcpListener::bind(lo("127.0.0.1")).await.unwrap();
    let addr = probe.local_addr().unwrap();
    drop(probe);
    let mut fe = Frontend::new("api", lo("127.0.0.1"), vec![Backend::new("later", addr)]);
    fe.check = fast(HealthCheck::tcp());
    let lb = LoadBalancer::start(vec![fe]).await.unwrap();
    wait_state(&lb, false).await;
    let first = log();
    assert!(first.contains("is not serving yet"), "{first}");
    assert!(warnings(&first).is_empty(), "{first}");

    // The host boots: UP, still no warning.
    let server = TcpListener::bind(addr).await.unwrap();
    let accept = tokio::spawn(async move {
        loop {
            if let Ok((s, _)) = server.accept().await {
                drop(s);
            }
        }
    });
    wait_state(&lb, true).await;
    assert!(warnings(&log()).is_empty(), "{}", log());

    // It goes away after serving: one warning.
    accept.abort();
    let _ = accept.await;
    wait_state(&lb, false).await;
    let w = warnings(&log());
    assert_eq!(w.len(), 1, "{}", log());
    assert!(w[0].contains("is DOWN"), "{w:?}");
    lb.shutdown().await;
}

/// Waits (10 s at most) until backend `later` of `api` is checked and UP
/// (`want`) or DOWN.
async fn wait_state(lb: &LoadBalancer, want: bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    // is_up is false before the first check too: wait for a checked state.
    let checked = || lb.snapshot().frontends[0].backends[0].state != "not checked yet";
    while lb.is_up("api", "later") != Some(want) || !checked() {
        assert!(
            Instant::now() < deadline,
            "never {}",
            if want { "UP" } else { "DOWN" }
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Issue #26 finding 7: connections closed for want of a backend are
/// logged once when that starts, not once per connection.
#[tokio::test]
async fn rejections_are_logged_once_per_state_change() {
    let buf = LogBuf::default();
    let w = buf.clone();
    let sub = tracing_subscriber::fmt()
        .with_writer(move || w.clone())
        .with_ansi(false)
        .with_max_level(tracing::Level::INFO)
        .finish();
    // current_thread runtime: every task of this test logs on this thread.
    let _guard = tracing::subscriber::set_default(sub);
    let dead = TcpListener::bind(lo("127.0.0.1")).await.unwrap();
    let dead_addr = dead.local_addr().unwrap();
    drop(dead);
    let mut fe = Frontend::new(
        "api",
        lo("127.0.0.1"),
        vec![Backend::new("gone", dead_addr)],
    );
    fe.check = fast(HealthCheck::tcp());
    let lb = LoadBalancer::start(vec![fe]).await.unwrap();
    let addr = lb.local_addr("api").unwrap();
    for _ in 0..20 {
        assert!(ask(addr, localhost()).await.is_err());
    }
    assert_eq!(lb.snapshot().frontends[0].rejected_total, 20);
    let log = String::from_utf8_lossy(&buf.0.lock().unwrap()).into_owned();
    let n = log.matches("no backend available").count();
    assert_eq!(n, 1, "logged {n} times for 20 closed connections:\n{log}");
    lb.shutdown().await;
}
