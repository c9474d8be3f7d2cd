//! Reporting answered queries to the [`crate::DnsObserver`] off the
//! serving path.
//!
//! The receive loops never wait for the observer: a report is handed to a
//! thread of its own through a bounded queue ([`QUEUE`] reports; when it is
//! full the report is dropped), and a client asking the same question
//! (name, type) again within [`REPEAT`] is reported once, so a node's
//! resolver storm costs the observer a few calls per second, not one per
//! query.

use std::borrow::Cow;
use std::hash::BuildHasher;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::time::{Duration, Instant};

use crate::DnsObserver;
use crate::hash::Fast;

/// Reports waiting for the observer at most.
pub(crate) const QUEUE: usize = 4096;
/// A repeated question from one client within this time is reported once.
pub(crate) const REPEAT: Duration = Duration::from_secs(1);
/// Entries of the repeat filter (a question whose entry was taken by
/// another is reported again: the filter only ever reports too much).
const RECENT: usize = 8192;
/// Resolution of the repeat filter's clock.
const TICK_MS: u128 = 100;

/// One report.
struct Report {
    client: SocketAddr,
    name: String,
    qtype: Cow<'static, str>,
    answers: Vec<String>,
}

/// The queue to the reporting thread and the repeat filter.
pub(crate) struct Reporter {
    tx: SyncSender<Report>,
    /// Per entry: the question's hash tag (high 32 bits) and the tick it
    /// was last reported (low 32 bits, odd; 0: empty).
    recent: Box<[AtomicU64]>,
    hasher: Fast,
    epoch: Instant,
}

impl Reporter {
    /// Starts the reporting thread for `observer`; it ends when the
    /// reporter is dropped.
    pub(crate) fn start(observer: Arc<dyn DnsObserver>) -> std::io::Result<Reporter> {
        let (tx, rx) = std::sync::mpsc::sync_channel(QUEUE);
        std::thread::Builder::new()
            .name("okd-dns-report".into())
            .spawn(move || run(&rx, &*observer))?;
        Ok(Reporter {
            tx,
            recent: (0..RECENT).map(|_| AtomicU64::new(0)).collect(),
            hasher: Fast::new(),
            epoch: Instant::now(),
        })
    }

    /// Whether `client` asking `qname` (wire form, lower case) of `qtype`
    /// is worth a report: not reported within [`REPEAT`]. Marks it reported.
    pub(crate) fn fresh(&self, client: IpAddr, qname: &[u8], qtype: u16) -> bool {
        let h = self.hasher.hash_one((client, qname, qtype));
        let tag = h >> 32;
        // Ticks count from 1: an entry of 0 is empty.
        let tick = (self.epoch.elapsed().as_millis() / TICK_MS) as u32 | 1;
        let slot = &self.recent[(h as usize) % RECENT];
        let old = slot.load(Ordering::Relaxed);
        let repeat_ticks = (REPEAT.as_millis() / TICK_MS) as u32;
        if old != 0 && old >> 32 == tag && tick.wrapping_sub(old as u32) < repeat_ticks {
            return false;
        }
        slot.store((tag << 32) | u64::from(tick), Ordering::Relaxed);
        true
    }

    /// Queues one report; drops it when the queue is full.
    pub(crate) fn send(
        &self,
        client: SocketAddr,
        name: String,
        qtype: Cow<'static, str>,
        answers: Vec<String>,
    ) {
        let r = Report {
            client,
            name,
            qtype,
            answers,
        };
        if let Err(TrySendError::Full(_)) = self.tx.try_send(r) {
            tracing::debug!(%client, "DNS observer behind; report dropped");
        }
    }
}

fn run(rx: &Receiver<Report>, observer: &dyn DnsObserver) {
    while let Ok(r) = rx.recv() {
        observer.answered(r.client, &r.name, &r.qtype, &r.answers);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[derive(Default)]
    struct Names(Mutex<Vec<String>>);

    impl DnsObserver for Names {
        fn answered(&self, _: SocketAddr, name: &str, _: &str, _: &[String]) {
            self.0.lock().unwrap().push(name.to_string());
        }
    }

    #[test]
    fn repeats_within_a_second_are_reported_once() {
        let names = Arc::new(Names::default());
        let r = Reporter::start(names.clone()).unwrap();
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        assert!(r.fresh(a, b"\x03api\0", 1));
        assert!(!r.fresh(a, b"\x03api\0", 1));
        assert!(r.fresh(a, b"\x03api\0", 28), "another type");
        assert!(r.fresh(b, b"\x03api\0", 1), "another client");
        assert!(r.fresh(a, b"\x03app\0", 1), "another name");
        std::thread::sleep(REPEAT + Duration::from_millis(150));
        assert!(r.fresh(a, b"\x03api\0", 1), "again after a second");
        let client = SocketAddr::new(a, 5353);
        r.send(client, "api.".into(), "A".into(), Vec::new());
        drop(r);
        let deadline = Instant::now() + Duration::from_secs(3);
        while names.0.lock().unwrap().is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(*names.0.lock().unwrap(), ["api."]);
    }
}
