//! How often the periodic checks run on each host, whatever its poll rate.
//!
//! assisted-service hands `inventory`, `ntp-synchronizer`,
//! `domain-resolution` and `verify-vips` to a pre-install host at every
//! poll, and the host polls every 60 s (the reference's §6.3). Here an
//! agent may poll more often (`--next-instruction-seconds`, to pick up its
//! install step sooner), and these checks still run once per check
//! interval (`--check-interval-seconds`, 60 s): a host polling every 10 s
//! does not answer six times as many checks. A check whose argument
//! changed (the cluster's VIPs, NTP sources or names) is handed out at
//! once. The record is in memory: a restarted service, or a second
//! replica, hands each check out once more.
//!
//! Hosts that boot together (a rack PXE-booted at once) would otherwise
//! answer their checks together, every interval, for as long as they run:
//! at 5,000 hosts, 20,000 replies within the same 10 s each minute
//! (bench/assisted-agents.sh). Each hand-out therefore waits a random
//! 1 to 1 + [`SPREAD`] intervals before the next, so the hosts' checks
//! drift apart and spread over the interval.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::Mutex;

/// The step types this paces.
pub const PACED: &[&str] = &[
    "inventory",
    "ntp-synchronizer",
    "domain-resolution",
    "verify-vips",
];

/// When each paced check was last handed to each host, with a hash of its
/// argument; one entry per (infra-env, host, step type).
#[derive(Debug, Default)]
pub struct Cadence {
    sent: Mutex<HashMap<HostKey, HashMap<&'static str, Handed>>>,
}

/// (infra-env id, host id).
type HostKey = (String, String);
/// When a check was handed out (Unix ms), its argument's hash and the
/// random part of the wait before the next (a fraction of the interval in
/// `[0, SPREAD)`).
type Handed = (i64, u64, f64);

/// The random part of the wait between two hand-outs of a host's checks,
/// as a fraction of the check interval: the wait is 1 to 1.5 intervals.
pub const SPREAD: f64 = 0.5;

fn digest(arg: &str) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    arg.hash(&mut h);
    h.finish()
}

impl Cadence {
    /// Whether `step` with argument `arg` is due on `host` (infra-env id,
    /// host id) at `now` (Unix ms): never handed out, its argument changed,
    /// or last handed out at least `period_ms × (1 + s) − slack_ms` ago,
    /// `s` the random fraction drawn at that hand-out (`[0, SPREAD)`;
    /// `slack_ms`: half a poll interval, so a host polling exactly every
    /// period is not skipped for a few ms of jitter). Step types not in
    /// [`PACED`] are always due.
    pub fn due(
        &self,
        host: (&str, &str),
        step: &str,
        arg: &str,
        now: i64,
        period_ms: i64,
        slack_ms: i64,
    ) -> bool {
        if !PACED.contains(&step) {
            return true;
        }
        let m = self.sent.lock().unwrap_or_else(|e| e.into_inner());
        match m
            .get(&(host.0.to_string(), host.1.to_string()))
            .and_then(|s| s.get(step))
        {
            None => true,
            Some(&(at, d, spread)) => {
                let wait = (period_ms as f64 * (1.0 + spread)) as i64;
                d != digest(arg) || now - at >= wait - slack_ms
            }
        }
    }

    /// Records that `steps` (type, argument) were handed to `host` at
    /// `now`, with one random wait for all of them (they travel together);
    /// types not in [`PACED`] are left out.
    pub fn handed(&self, host: (&str, &str), steps: &[(&str, &str)], now: i64) {
        let spread = rand::random::<f64>() * SPREAD;
        let mut m = self.sent.lock().unwrap_or_else(|e| e.into_inner());
        let e = m
            .entry((host.0.to_string(), host.1.to_string()))
            .or_default();
        for (t, arg) in steps {
            if let Some(p) = PACED.iter().find(|p| **p == *t) {
                e.insert(p, (now, digest(arg), spread));
            }
        }
    }

    /// Forgets `host` (it registered again, or was deleted): every check
    /// is due at its next poll.
    pub fn forget(&self, infra_env_id: &str, host_id: &str) {
        let mut m = self.sent.lock().unwrap_or_else(|e| e.into_inner());
        m.remove(&(infra_env_id.to_string(), host_id.to_string()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paced_by_period_and_argument() {
        let c = Cadence::default();
        let h = ("ie", "h1");
        assert!(c.due(h, "verify-vips", "a", 0, 60_000, 5_000));
        c.handed(h, &[("verify-vips", "a"), ("install", "x")], 0);
        // Polls every 10 s: not again before 55 s, and by 85 s (60 s
        // plus a random part below 30 s, less the slack).
        assert!(!c.due(h, "verify-vips", "a", 10_000, 60_000, 5_000));
        assert!(!c.due(h, "verify-vips", "a", 54_999, 60_000, 5_000));
        assert!(c.due(h, "verify-vips", "a", 85_000, 60_000, 5_000));
        // A new argument is due at once; other types and hosts are apart.
        assert!(c.due(h, "verify-vips", "b", 10_000, 60_000, 5_000));
        assert!(c.due(h, "inventory", "", 10_000, 60_000, 5_000));
        assert!(c.due(("ie", "h2"), "verify-vips", "a", 10_000, 60_000, 5_000));
        // Not paced: always due.
        assert!(c.due(h, "install", "x", 1, 60_000, 5_000));
        c.forget("ie", "h1");
        assert!(c.due(h, "verify-vips", "a", 10_000, 60_000, 5_000));
    }

    #[test]
    fn hosts_that_start_together_drift_apart() {
        // 1,000 hosts handed their checks at the same instant: the next
        // hand-outs spread over the [60 s, 90 s) window, none before it.
        let c = Cadence::default();
        let ids: Vec<String> = (0..1000).map(|i| format!("h{i}")).collect();
        for id in &ids {
            c.handed(("ie", id), &[("inventory", "")], 0);
        }
        let mut per_5s = [0usize; 8];
        for id in &ids {
            let first = (0..=90_000)
                .step_by(100)
                .find(|&t| c.due(("ie", id), "inventory", "", t, 60_000, 0))
                .expect("due by 90 s");
            assert!(first >= 60_000, "{id} due at {first} ms");
            per_5s[((first - 60_000) / 5_000).min(7) as usize] += 1;
        }
        // Uniform over six 5-s slots: about 167 each; none empty or
        // holding more than a third.
        for (i, n) in per_5s[..6].iter().enumerate() {
            assert!((50..333).contains(n), "slot {i}: {n} of 1000 ({per_5s:?})");
        }
    }
}
