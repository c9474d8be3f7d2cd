//! Cheap hashing and network matching for the serving path.
//!
//! The zone table and the observer's repeat filter hash a short name per
//! query; SipHash (std's default) costs more than the rest of a lookup.
//! [`Fast`] is a multiply-rotate hash (as rustc's `FxHash`) over 8 octets
//! at a time, keyed with a random seed per table and finished with a
//! 64-bit mixer. It is not meant to resist an adversary who sees hash
//! values: the table's keys are fixed at start (a crafted name costs at
//! most a compare per key) and a collision in the repeat filter only
//! reports a query again.

use std::hash::{BuildHasher, Hasher, RandomState};
use std::net::IpAddr;

/// Builds [`FastHasher`]s with one random seed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fast {
    seed: u64,
}

impl Fast {
    /// A hasher builder with a fresh random seed.
    pub(crate) fn new() -> Fast {
        Fast {
            seed: RandomState::new().hash_one(0x006f_6b64_5f64_6e73_u64),
        }
    }
}

impl BuildHasher for Fast {
    type Hasher = FastHasher;
    fn build_hasher(&self) -> FastHasher {
        FastHasher(self.seed)
    }
}

/// The state of one [`Fast`] hash.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FastHasher(u64);

impl FastHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

impl Hasher for FastHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.add(u64::from_le_bytes(w));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(w));
        }
    }
    #[inline]
    fn write_u8(&mut self, v: u8) {
        self.add(u64::from(v));
    }
    #[inline]
    fn write_u16(&mut self, v: u16) {
        self.add(u64::from(v));
    }
    #[inline]
    fn write_u32(&mut self, v: u32) {
        self.add(u64::from(v));
    }
    #[inline]
    fn write_u64(&mut self, v: u64) {
        self.add(v);
    }
    #[inline]
    fn write_u128(&mut self, v: u128) {
        self.add(v as u64);
        self.add((v >> 64) as u64);
    }
    #[inline]
    fn write_usize(&mut self, v: usize) {
        self.add(v as u64);
    }
    #[inline]
    fn finish(&self) -> u64 {
        // MurmurHash3's fmix64: every input bit reaches the high and low
        // bits (the hash table uses both).
        let mut h = self.0;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        h ^ (h >> 33)
    }
}

/// A list of networks, matched against an address with a mask and a
/// compare per network.
#[derive(Debug, Clone, Default)]
pub(crate) struct Nets {
    v4: Vec<(u32, u32)>,
    v6: Vec<(u128, u128)>,
}

impl Nets {
    /// The networks `nets`.
    pub(crate) fn new(nets: &[ipnet::IpNet]) -> Nets {
        let mut n = Nets::default();
        for net in nets {
            match net {
                ipnet::IpNet::V4(v) => n.v4.push((u32::from(v.network()), u32::from(v.netmask()))),
                ipnet::IpNet::V6(v) => {
                    n.v6.push((u128::from(v.network()), u128::from(v.netmask())))
                }
            }
        }
        n
    }

    /// Whether `ip` (canonical: an IPv4-mapped address as IPv4) is in one
    /// of the networks.
    #[inline]
    pub(crate) fn contains(&self, ip: IpAddr) -> bool {
        match ip {
            IpAddr::V4(a) => {
                let a = u32::from(a);
                self.v4.iter().any(|&(net, mask)| a & mask == net)
            }
            IpAddr::V6(a) => {
                let a = u128::from(a);
                self.v6.iter().any(|&(net, mask)| a & mask == net)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nets_match_as_ipnet_does() {
        let list: Vec<ipnet::IpNet> = [
            "192.168.120.0/24",
            "10.0.0.0/8",
            "::1/128",
            "fd00::/64",
            "0.0.0.0/0",
        ]
        .iter()
        .map(|n| n.parse().unwrap())
        .collect();
        for k in 0..list.len() {
            let nets = Nets::new(&list[..k]);
            for ip in [
                "192.168.120.7",
                "192.168.121.7",
                "10.9.9.9",
                "::1",
                "::2",
                "fd00::5",
                "fd00:0:0:1::5",
                "8.8.8.8",
            ] {
                let ip: IpAddr = ip.parse().unwrap();
                assert_eq!(
                    nets.contains(ip),
                    list[..k].iter().any(|n| n.contains(&ip)),
                    "{ip} in {:?}",
                    &list[..k]
                );
            }
        }
    }

    #[test]
    fn fast_hash_tells_short_keys_apart() {
        let f = Fast::new();
        let keys: [&[u8]; 6] = [
            b"",
            b"\0",
            b"\x03api\0",
            b"\x03apI\0",
            b"\x03api\0\0",
            b"\x07api-int\x03okd\x07example\0",
        ];
        let hashes: std::collections::HashSet<u64> = keys.iter().map(|k| f.hash_one(k)).collect();
        assert_eq!(hashes.len(), keys.len());
    }
}
