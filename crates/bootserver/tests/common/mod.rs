//! Shared test fixtures.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use okd_hosts::Inventory;

/// The single-master guide's inventory (cluster `okd`, base domain `example`).
pub fn single_master() -> Inventory {
    let dir =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/baremetal-single-master");
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
