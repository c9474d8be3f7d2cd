//! Per-client query rate limit: a token bucket per client address.

use std::hash::{BuildHasher, RandomState};
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::Instant;

/// Default [`RateLimit::per_second`]: 500 queries/s per client address.
pub const DEFAULT_QUERIES_PER_SECOND: u32 = 500;
/// Default [`RateLimit::burst`]: 1000 queries.
pub const DEFAULT_BURST: u32 = 1000;
/// Buckets kept; client addresses share a bucket when their hashes meet.
const SLOTS: usize = 4096;

/// The per-client query rate limit of [`crate::DnsServer`]: each client
/// address may send `burst` queries at once and `per_second` queries per
/// second after that; further queries over UDP are dropped unanswered (so
/// a spoofed source cannot aim our answers at a victim), over TCP answered
/// REFUSED.
///
/// State is a fixed table of 4096 buckets indexed by a keyed hash of the
/// address (memory does not grow with the number of clients; two clients
/// whose hashes meet share a bucket).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateLimit {
    /// Sustained queries per second per client address (0: no limit).
    pub per_second: u32,
    /// Queries a client may send at once (bucket size, at least 1).
    pub burst: u32,
    /// Client networks never limited. Default: `127.0.0.0/8` and `::1/128`
    /// (the bastion's own processes; the kernel does not accept these
    /// source addresses from the network).
    pub exempt: Vec<ipnet::IpNet>,
}

impl Default for RateLimit {
    fn default() -> Self {
        RateLimit {
            per_second: DEFAULT_QUERIES_PER_SECOND,
            burst: DEFAULT_BURST,
            exempt: vec![
                ipnet::IpNet::V4(ipnet::Ipv4Net::new_assert([127, 0, 0, 0].into(), 8)),
                ipnet::IpNet::V6(ipnet::Ipv6Net::new_assert(
                    std::net::Ipv6Addr::LOCALHOST,
                    128,
                )),
            ],
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

/// The buckets of a [`RateLimit`].
#[derive(Debug)]
pub(crate) struct Limiter {
    rate: f64,
    burst: f64,
    exempt: Vec<ipnet::IpNet>,
    hasher: RandomState,
    slots: Box<[Mutex<Option<Bucket>>]>,
}

impl Limiter {
    pub(crate) fn new(r: &RateLimit) -> Limiter {
        Limiter {
            rate: f64::from(r.per_second),
            burst: f64::from(r.burst.max(1)),
            exempt: r.exempt.clone(),
            hasher: RandomState::new(),
            slots: (0..SLOTS).map(|_| Mutex::new(None)).collect(),
        }
    }

    /// Takes one query's token for `client`; `false` when it has none left.
    pub(crate) fn admit(&self, client: IpAddr) -> bool {
        if self.rate == 0.0 {
            return true;
        }
        let client = client.to_canonical();
        if self.exempt.iter().any(|n| n.contains(&client)) {
            return true;
        }
        let slot = &self.slots[(self.hasher.hash_one(client) as usize) % SLOTS];
        let now = Instant::now();
        let mut b = slot.lock().unwrap_or_else(|e| e.into_inner());
        let bucket = b.get_or_insert(Bucket {
            tokens: self.burst,
            at: now,
        });
        let refill = now.duration_since(bucket.at).as_secs_f64() * self.rate;
        bucket.tokens = (bucket.tokens + refill).min(self.burst);
        bucket.at = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn burst_then_refill_per_client() {
        let l = Limiter::new(&RateLimit {
            per_second: 10,
            burst: 5,
            exempt: vec!["10.0.9.0/24".parse().unwrap()],
        });
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        assert_eq!((0..8).filter(|_| l.admit(a)).count(), 5);
        assert!(l.admit(b), "another client has its own bucket");
        assert!((0..100).all(|_| l.admit("10.0.9.7".parse().unwrap())));
        std::thread::sleep(std::time::Duration::from_millis(250));
        // 0.25 s at 10/s: two more.
        assert_eq!((0..5).filter(|_| l.admit(a)).count(), 2);
    }
}
