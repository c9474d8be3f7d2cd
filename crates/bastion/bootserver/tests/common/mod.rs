//! Shared test fixtures.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use okd_bootserver::{HttpObserver, Served};
use okd_hosts::Inventory;

/// The single-master guide's inventory (cluster `okd`, base domain `example`).
pub fn single_master() -> Inventory {
    let dir =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../examples/baremetal-single-master");
    Inventory::load(&dir, "okd", "example").expect("example inventory loads")
}

/// A log sink for a `tracing` subscriber that tests read back.
#[derive(Clone, Default)]
pub struct Logs(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Logs {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Logs {
    /// A plain-text `tracing` subscriber writing into this sink.
    pub fn subscriber(&self) -> impl tracing::Subscriber + Send + Sync + 'static {
        let l = self.clone();
        tracing_subscriber::fmt()
            .with_writer(move || l.clone())
            .with_ansi(false)
            .finish()
    }

    /// Everything written so far, as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

/// (peer, path, status, octets sent, complete) of each answered request.
pub type Record = (SocketAddr, String, u16, u64, bool);

/// An [`HttpObserver`] keeping every report.
#[derive(Default)]
pub struct Recorder(pub Mutex<Vec<Record>>);

impl HttpObserver for Recorder {
    fn served(&self, s: Served<'_>) {
        self.0
            .lock()
            .unwrap()
            .push((s.peer, s.path.to_string(), s.status, s.sent, s.complete));
    }
}

impl Recorder {
    /// Whether a record matches `pred`; fails the test once 10 s passed
    /// since `start` without one (the observer is told when the body ended,
    /// which may be just after the client read it).
    fn seen(&self, pred: &impl Fn(&Record) -> bool, start: Instant) -> bool {
        let rec = self.0.lock().unwrap().clone();
        if rec.iter().any(pred) {
            return true;
        }
        assert!(start.elapsed() < Duration::from_secs(10), "{rec:?}");
        false
    }

    /// Waits (at most 10 s) until a record matches `pred`.
    pub fn wait_for_blocking(&self, pred: impl Fn(&Record) -> bool) {
        let start = Instant::now();
        while !self.seen(&pred, start) {
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// [`Recorder::wait_for_blocking`] from async tests on the server's runtime.
    pub async fn wait_for(&self, pred: impl Fn(&Record) -> bool) {
        let start = Instant::now();
        while !self.seen(&pred, start) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}
