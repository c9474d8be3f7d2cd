//! The `free-network-addresses` step and what its reports answer
//! (assisted-service `internal/host/hostcommands/free_addresses_cmd.go`,
//! `V2GetFreeAddresses`): each host of a cluster ARP-scans its own small
//! IPv4 networks, and `GET /v2/clusters/{id}/free_addresses` lists the
//! addresses no host heard an answer for, which is where a user picks
//! the API and ingress VIPs from.
//!
//! Which hosts are due a scan lives in this process's memory
//! ([`ScanCache`], published by the monitor): after a restart, or on
//! another replica, a host is simply scanned once more.

use std::collections::{BTreeSet, HashMap};

use ipnet::Ipv4Net;
use okd_assisted_api::Inventory;
use okd_assisted_api::steps::{FreeNetworksAddresses, MAX_FREE_ADDRESSES_NETWORK_SIZE};

/// A host's networks are scanned again after this long, ms (5 min): the
/// reference scans at every poll interval; addresses taken by other
/// machines show up within this time.
pub const RESCAN_MS: i64 = 5 * 60 * 1000;

/// An unanswered scan is handed out again after this long, ms (the scan
/// itself takes about 2 s per network).
pub const RESEND_MS: i64 = 60 * 1000;

/// The most addresses `GET …/free_addresses` returns (swagger: `limit`
/// maximum 8000, its default).
pub const MAX_LIMIT: usize = 8000;

/// The networks a host scans: the IPv4 networks of its interfaces'
/// addresses with at most [`MAX_FREE_ADDRESSES_NETWORK_SIZE`] addresses
/// (a prefix of /22 or longer), in CIDR form, sorted, without repeats.
pub fn scan_networks(inv: &Inventory) -> Vec<String> {
    let nets: BTreeSet<Ipv4Net> = inv
        .interfaces
        .iter()
        .flat_map(|i| &i.ipv4_addresses)
        .filter_map(|a| a.parse::<Ipv4Net>().ok())
        .map(|n| n.trunc())
        .filter(|n| {
            (1u64 << (32 - u32::from(n.prefix_len()))) <= u64::from(MAX_FREE_ADDRESSES_NETWORK_SIZE)
        })
        .collect();
    nets.into_iter().map(|n| n.to_string()).collect()
}

/// The networks a stored `free-network-addresses` report covers, sorted
/// (empty when there is none or it does not parse).
pub fn reported_networks(report: &str) -> Vec<String> {
    let mut nets: Vec<String> = serde_json::from_str::<FreeNetworksAddresses>(report)
        .map(|r| r.into_iter().map(|n| n.network).collect())
        .unwrap_or_default();
    nets.sort();
    nets.dedup();
    nets
}

#[derive(Debug)]
struct Scan {
    /// The step's argument (the JSON list of networks).
    args: String,
    /// Whether the host's stored report covers exactly these networks.
    reported: bool,
    /// Unix ms it was last handed out (or first seen reported).
    sent_at: Option<i64>,
}

/// The `free-network-addresses` argument of each host, published by the
/// monitor, and when each was last handed out.
#[derive(Debug, Default)]
pub struct ScanCache {
    hosts: std::sync::Mutex<HashMap<String, Scan>>,
}

impl ScanCache {
    /// Publishes host `host_id` of `infra_env_id`: `networks` from its
    /// inventory ([`scan_networks`]; empty withdraws it) and whether its
    /// stored report covers them. `now_ms`: Unix ms.
    pub fn publish(
        &self,
        (infra_env_id, host_id): (&str, &str),
        networks: &[String],
        reported: bool,
        now_ms: i64,
    ) {
        let mut st = self.hosts.lock().unwrap_or_else(|e| e.into_inner());
        let key = format!("{infra_env_id}/{host_id}");
        if networks.is_empty() {
            st.remove(&key);
            return;
        }
        let args = serde_json::to_string(networks).unwrap_or_default();
        match st.get_mut(&key) {
            Some(s) if s.args == args => s.reported = reported,
            _ => {
                st.insert(
                    key,
                    Scan {
                        args,
                        reported,
                        // A host reported before this process started
                        // is not scanned again before its rescan time.
                        sent_at: reported.then_some(now_ms),
                    },
                );
            }
        }
    }

    /// The `free-network-addresses` argument for a host when a scan is
    /// due at `now_ms` (never handed out; unanswered for [`RESEND_MS`];
    /// or [`RESCAN_MS`] since the last), recorded as handed out; `None`
    /// otherwise or when the monitor has not published the host.
    pub fn due(&self, (infra_env_id, host_id): (&str, &str), now_ms: i64) -> Option<String> {
        let mut st = self.hosts.lock().unwrap_or_else(|e| e.into_inner());
        let s = st.get_mut(&format!("{infra_env_id}/{host_id}"))?;
        let due = match s.sent_at {
            None => true,
            Some(at) if !s.reported => now_ms - at >= RESEND_MS,
            Some(at) => now_ms - at >= RESCAN_MS,
        };
        if !due {
            return None;
        }
        s.sent_at = Some(now_ms);
        Some(s.args.clone())
    }

    /// Forgets a host (it registered again or was deleted).
    pub fn forget(&self, infra_env_id: &str, host_id: &str) {
        let mut st = self.hosts.lock().unwrap_or_else(|e| e.into_inner());
        st.remove(&format!("{infra_env_id}/{host_id}"));
    }
}

/// Why [`free_addresses`] has no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FreeAddressesError {
    /// `network` is not an IPv4 network in CIDR form.
    #[error("network {0:?}: must be an IPv4 network in CIDR form, e.g. 192.168.126.0/24")]
    BadNetwork(String),
    /// No host of the cluster reported a scan of this network.
    #[error(
        "no host of the cluster has scanned {0} yet (hosts scan the IPv4 networks of /22 or smaller that they have an address in)"
    )]
    NotScanned(String),
}

/// The addresses of `network` that every host which scanned it found
/// free (the intersection of `reports`, each a host's stored
/// [`FreeNetworksAddresses`] text), those starting with `prefix`, in
/// address order, at most `limit`.
///
/// # Errors
///
/// [`FreeAddressesError`]: a malformed network, or no report covering it.
pub fn free_addresses<'a>(
    reports: impl IntoIterator<Item = &'a str>,
    network: &str,
    prefix: &str,
    limit: usize,
) -> Result<Vec<String>, FreeAddressesError> {
    let net = network
        .parse::<Ipv4Net>()
        .map_err(|_| FreeAddressesError::BadNetwork(network.to_string()))?
        .trunc();
    let mut common: Option<BTreeSet<std::net::Ipv4Addr>> = None;
    for report in reports {
        let Ok(r) = serde_json::from_str::<FreeNetworksAddresses>(report) else {
            continue;
        };
        for n in r {
            if n.network.parse::<Ipv4Net>().map(|x| x.trunc()) != Ok(net) {
                continue;
            }
            let free: BTreeSet<std::net::Ipv4Addr> = n
                .free_addresses
                .iter()
                .filter_map(|a| a.parse().ok())
                .filter(|a| net.contains(a))
                .collect();
            common = Some(match common {
                None => free,
                Some(c) => c.intersection(&free).copied().collect(),
            });
        }
    }
    let common = common.ok_or_else(|| FreeAddressesError::NotScanned(net.to_string()))?;
    Ok(common
        .into_iter()
        .map(|a| a.to_string())
        .filter(|a| a.starts_with(prefix))
        .take(limit)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use okd_assisted_api::Interface;

    fn inv(addrs: &[&str]) -> Inventory {
        Inventory {
            interfaces: vec![Interface {
                name: "eth0".into(),
                ipv4_addresses: addrs.iter().map(|a| a.to_string()).collect(),
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    #[test]
    fn only_small_ipv4_networks_are_scanned() {
        let i = inv(&[
            "192.168.126.10/24",
            "10.0.0.5/16",
            "172.16.4.9/22",
            "192.168.126.11/24",
        ]);
        assert_eq!(scan_networks(&i), vec!["172.16.4.0/22", "192.168.126.0/24"]);
        assert!(scan_networks(&inv(&["10.0.0.5/21"])).is_empty());
    }

    #[test]
    fn a_scan_is_due_once_then_on_resend_and_rescan() {
        let c = ScanCache::default();
        let host = ("ie", "h1");
        assert_eq!(c.due(host, 0), None, "not published yet");
        let nets = vec!["192.168.126.0/24".to_string()];
        c.publish(host, &nets, false, 0);
        assert_eq!(
            c.due(host, 1_000).as_deref(),
            Some(r#"["192.168.126.0/24"]"#)
        );
        assert_eq!(
            c.due(host, 2_000),
            None,
            "handed out, waiting for the reply"
        );
        assert!(
            c.due(host, 1_000 + RESEND_MS).is_some(),
            "unanswered: again"
        );
        c.publish(host, &nets, true, 70_000);
        assert_eq!(c.due(host, 70_000 + RESEND_MS), None, "answered");
        assert!(
            c.due(host, 1_000 + RESEND_MS + RESCAN_MS).is_some(),
            "rescan"
        );
        // New networks: due at once.
        let more = vec!["10.1.0.0/24".to_string(), "192.168.126.0/24".to_string()];
        c.publish(host, &more, false, 400_000);
        assert!(c.due(host, 400_001).is_some());
        c.forget("ie", "h1");
        assert_eq!(c.due(host, 900_000), None);
        // A host reported before a restart waits for its rescan time.
        c.publish(("ie", "h2"), &nets, true, 10);
        assert_eq!(c.due(("ie", "h2"), 20), None);
        assert!(c.due(("ie", "h2"), 10 + RESCAN_MS).is_some());
    }

    #[test]
    fn the_clusters_free_addresses_are_what_every_scan_found_free() {
        let a = r#"[{"network":"192.168.126.0/24","free_addresses":["192.168.126.5","192.168.126.6","192.168.126.100"]},{"network":"10.1.0.0/24","free_addresses":["10.1.0.9"]}]"#;
        let b = r#"[{"network":"192.168.126.0/24","free_addresses":["192.168.126.6","192.168.126.100","192.168.126.7"]}]"#;
        let got = free_addresses([a, b, "", "garbage"], "192.168.126.0/24", "", 10).unwrap();
        assert_eq!(got, vec!["192.168.126.6", "192.168.126.100"]);
        assert_eq!(
            free_addresses([a, b], "192.168.126.0/24", "192.168.126.1", 10).unwrap(),
            vec!["192.168.126.100"]
        );
        assert_eq!(
            free_addresses([a, b], "192.168.126.0/24", "", 1).unwrap(),
            vec!["192.168.126.6"]
        );
        assert_eq!(
            free_addresses([a, b], "10.1.0.0/24", "", 10).unwrap(),
            vec!["10.1.0.9"]
        );
        assert_eq!(
            free_addresses([a, b], "10.2.0.0/24", "", 10),
            Err(FreeAddressesError::NotScanned("10.2.0.0/24".into()))
        );
        let e = free_addresses([a], "fd00::/64", "", 10).unwrap_err();
        assert!(e.to_string().contains("IPv4 network"), "{e}");
    }
}
