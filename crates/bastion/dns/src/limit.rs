//! Response rate limiting (RRL) for UDP clients outside the allowed
//! networks, in the manner of BIND 9's `rate-limit` (BIND 9 ARM, "Response
//! Rate Limiting"; `responses-per-second`, `window`, `slip`,
//! `ipv4-prefix-length`, `ipv6-prefix-length`).

use std::hash::{BuildHasher, RandomState};
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::Instant;

/// Default [`RateLimit::responses_per_second`]: 20 responses per second to
/// one client prefix outside the allowed networks.
pub const DEFAULT_RESPONSES_PER_SECOND: u32 = 20;
/// Default [`RateLimit::window`]: 15 s (BIND's default).
pub const DEFAULT_WINDOW_SECS: u32 = 15;
/// Default [`RateLimit::slip`]: every 2nd limited response goes out
/// truncated (BIND's default).
pub const DEFAULT_SLIP: u32 = 2;
/// Accounts kept; prefixes share an account when their hashes meet.
const SLOTS: usize = 4096;

/// Response rate limiting of [`crate::DnsServer`] over UDP, as BIND 9's
/// `rate-limit` (BIND 9 ARM, "Response Rate Limiting").
///
/// Clients inside the allowed networks are never limited: `exempt`, the
/// inventory's `allow_recursion` networks and every node's network (the
/// cluster's own hosts, e.g. a resolver storm at boot). Every other client
/// address is accounted by its prefix (`/24` for IPv4, `/56` for IPv6 by
/// default): the prefix may get `responses_per_second` responses per
/// second, with a credit of at most one second's worth. A response beyond
/// that is *limited*: every `slip`-th limited response goes out truncated
/// (TC set, no records: header, question and OPT only, never longer than
/// the query), so a real client retries over TCP; the others are dropped.
/// So a flood with a forged source gets fewer bytes back than it sent.
/// A prefix that keeps asking while limited stays limited: its debt grows
/// up to `window` seconds' worth of responses and must be paid off first.
/// TCP is not limited (its handshake proves the source address; the
/// listener's connection caps apply).
///
/// State is a fixed table of 4096 accounts indexed by a keyed hash of the
/// prefix (memory does not grow with the number of clients; two prefixes
/// whose hashes meet share an account).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateLimit {
    /// Responses per second per prefix (0: no limit).
    pub responses_per_second: u32,
    /// Seconds of debt a limited prefix can build up (at least 1).
    pub window: u32,
    /// Every `slip`-th limited response is sent truncated, the others
    /// dropped; 0 drops all, 1 truncates all.
    pub slip: u32,
    /// IPv4 prefix length of an account (0..=32; default 24).
    pub ipv4_prefix_length: u8,
    /// IPv6 prefix length of an account (0..=128; default 56).
    pub ipv6_prefix_length: u8,
    /// Client networks never limited besides the inventory's allowed
    /// networks. Default: `127.0.0.0/8` and `::1/128` (the bastion's own
    /// processes; the kernel does not accept these source addresses from
    /// the network).
    pub exempt: Vec<ipnet::IpNet>,
}

impl Default for RateLimit {
    fn default() -> Self {
        RateLimit {
            responses_per_second: DEFAULT_RESPONSES_PER_SECOND,
            window: DEFAULT_WINDOW_SECS,
            slip: DEFAULT_SLIP,
            ipv4_prefix_length: 24,
            ipv6_prefix_length: 56,
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

/// What to do with one response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Send it.
    Send,
    /// Send it truncated (TC, no records).
    Slip,
    /// Drop it.
    Drop,
}

#[derive(Debug, Clone, Copy)]
struct Account {
    /// Responses still allowed (negative: debt).
    balance: f64,
    at: Instant,
    /// Limited responses since the account went into debt.
    limited: u32,
}

/// The accounts of a [`RateLimit`].
#[derive(Debug)]
pub(crate) struct Limiter {
    rate: f64,
    floor: f64,
    slip: u32,
    v4_mask: u32,
    v6_mask: u128,
    exempt: crate::hash::Nets,
    hasher: RandomState,
    slots: Box<[Mutex<Option<Account>>]>,
}

impl Limiter {
    /// The limiter of `r`, never limiting `allowed` (the inventory's
    /// networks) nor `r.exempt`.
    pub(crate) fn new(r: &RateLimit, allowed: &[ipnet::IpNet]) -> Limiter {
        let rate = f64::from(r.responses_per_second);
        let mut exempt = r.exempt.clone();
        for n in allowed {
            if !exempt.contains(n) {
                exempt.push(*n);
            }
        }
        let v4 = u32::from(r.ipv4_prefix_length.min(32));
        let v6 = u32::from(r.ipv6_prefix_length.min(128));
        Limiter {
            rate,
            floor: -rate * f64::from(r.window.max(1)),
            slip: r.slip,
            v4_mask: u32::MAX.checked_shl(32 - v4).unwrap_or(0),
            v6_mask: u128::MAX.checked_shl(128 - v6).unwrap_or(0),
            exempt: crate::hash::Nets::new(&exempt),
            hasher: RandomState::new(),
            slots: (0..SLOTS).map(|_| Mutex::new(None)).collect(),
        }
    }

    /// Whether `client` is never limited.
    pub(crate) fn exempt(&self, client: IpAddr) -> bool {
        self.rate == 0.0 || self.exempt.contains(client)
    }

    /// Accounts one response to `client` (canonical form) and says what to
    /// do with it.
    pub(crate) fn verdict(&self, client: IpAddr) -> Verdict {
        if self.exempt(client) {
            return Verdict::Send;
        }
        let prefix = match client {
            IpAddr::V4(a) => (4u8, u128::from(u32::from(a) & self.v4_mask)),
            IpAddr::V6(a) => (6u8, u128::from(a) & self.v6_mask),
        };
        let slot = &self.slots[(self.hasher.hash_one(prefix) as usize) % SLOTS];
        let now = Instant::now();
        let mut guard = slot.lock().unwrap_or_else(|e| e.into_inner());
        let a = guard.get_or_insert(Account {
            balance: self.rate,
            at: now,
            limited: 0,
        });
        let refill = now.duration_since(a.at).as_secs_f64() * self.rate;
        a.balance = (a.balance + refill).min(self.rate) - 1.0;
        a.at = now;
        if a.balance >= 0.0 {
            a.limited = 0;
            return Verdict::Send;
        }
        a.balance = a.balance.max(self.floor);
        a.limited = a.limited.wrapping_add(1);
        let first = a.limited == 1;
        let slip = self.slip > 0 && a.limited.is_multiple_of(self.slip);
        drop(guard);
        if first {
            tracing::info!(
                client = %client,
                per_second = self.rate,
                slip = self.slip,
                "DNS responses to this client's prefix are over the rate limit: dropping them, every slip-th truncated"
            );
        }
        if slip { Verdict::Slip } else { Verdict::Drop }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limiter(rate: u32, slip: u32) -> Limiter {
        Limiter::new(
            &RateLimit {
                responses_per_second: rate,
                window: 2,
                slip,
                exempt: vec!["10.0.9.0/24".parse().unwrap()],
                ..RateLimit::default()
            },
            &["192.168.120.0/24".parse().unwrap()],
        )
    }

    fn count(l: &Limiter, ip: &str, n: usize) -> [usize; 3] {
        let ip: IpAddr = ip.parse().unwrap();
        let mut c = [0; 3];
        for _ in 0..n {
            c[l.verdict(ip) as usize] += 1;
        }
        c
    }

    #[test]
    fn per_prefix_with_slip() {
        let l = limiter(10, 2);
        // The credit of one second (10), then every second limited
        // response slips.
        assert_eq!(count(&l, "10.0.0.1", 31), [10, 10, 11]);
        // The same /24 shares the account; another /24 does not.
        assert_eq!(count(&l, "10.0.0.200", 2), [0, 1, 1]);
        assert_eq!(count(&l, "10.0.1.1", 5), [5, 0, 0]);
        // Allowed networks and exempt ones are never limited.
        assert_eq!(count(&l, "192.168.120.103", 1000), [1000, 0, 0]);
        assert_eq!(count(&l, "10.0.9.7", 1000), [1000, 0, 0]);
        // IPv6: per /56.
        assert_eq!(count(&l, "2001:db8:0:1::1", 12)[0], 10);
        assert_eq!(count(&l, "2001:db8:0:1:ff::1", 1)[0], 0);
        assert_eq!(count(&l, "2001:db8:0:100::1", 1)[0], 1);
    }

    #[test]
    fn slip_zero_drops_all_and_one_truncates_all() {
        assert_eq!(count(&limiter(1, 0), "10.0.0.1", 12), [1, 0, 11]);
        assert_eq!(count(&limiter(1, 1), "10.0.0.1", 12), [1, 11, 0]);
        assert_eq!(count(&limiter(0, 1), "10.0.0.1", 100), [100, 0, 0]);
    }

    #[test]
    fn a_flooding_prefix_pays_its_debt() {
        let l = limiter(10, 2);
        // 100 at once: 10 sent, the debt capped at window × rate = 20.
        assert_eq!(count(&l, "10.0.0.1", 100)[0], 10);
        std::thread::sleep(std::time::Duration::from_millis(1000));
        // 1 s × 10/s = 10 of the debt of 20 paid: still limited.
        assert_eq!(count(&l, "10.0.0.1", 1)[0], 0);
        std::thread::sleep(std::time::Duration::from_millis(2000));
        assert_eq!(count(&l, "10.0.0.1", 1)[0], 1);
    }
}
