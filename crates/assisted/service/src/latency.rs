//! The link-quality host validations computed from a host's own
//! `connectivity-check` report: `sufficient-network-latency-requirement-for-role`,
//! `sufficient-packet-loss-requirement-for-role` (assisted-service
//! `internal/host/validator.go`, thresholds of
//! `data/default_hw_requirements.json`) and `mtu-valid`.
//!
//! Which peers count: a master is measured against the other masters
//! (etcd's quorum traffic is what needs the low latency), a worker
//! against every other host. A peer reached at several addresses counts
//! by its best one, so an unused second NIC does not fail a host; a peer
//! with no address answering counts as 100 % loss and has no latency
//! (that it is unreachable is `belongs-to-majority-group`'s to say).

use std::collections::HashMap;

use okd_assisted_api::rest::ValidationResult;
use okd_assisted_api::steps::{ConnectivityRemoteHost, ConnectivityReport};

use crate::network::Majority;
use crate::validate::result;

/// Largest mean round-trip time to the peers that still passes, ms, and
/// largest packet loss, percent (`HW_VALIDATOR_REQUIREMENTS`' defaults).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinkRequirement {
    /// Mean RTT of the echoes, ms.
    pub max_rtt_ms: f64,
    /// Lost echoes, percent (0 to 100).
    pub max_loss_percent: f64,
}

/// master: 100 ms, 0 % loss.
pub const MASTER_LINK: LinkRequirement = LinkRequirement {
    max_rtt_ms: 100.0,
    max_loss_percent: 0.0,
};
/// worker: 1000 ms, 10 % loss.
pub const WORKER_LINK: LinkRequirement = LinkRequirement {
    max_rtt_ms: 1000.0,
    max_loss_percent: 10.0,
};

/// The validation ids, in the order [`link_validations`] returns them.
pub const LATENCY: &str = "sufficient-network-latency-requirement-for-role";
/// See [`LATENCY`].
pub const PACKET_LOSS: &str = "sufficient-packet-loss-requirement-for-role";
/// See [`LATENCY`].
pub const MTU: &str = "mtu-valid";

/// A peer's best measurement: the lowest loss over its addresses, and the
/// lowest mean RTT of those that answered (`None`: none did), with the
/// address each was seen at.
fn best(r: &ConnectivityRemoteHost) -> (f64, Option<(f64, &str)>) {
    let loss = r
        .l3_connectivity
        .iter()
        .map(|c| {
            if c.successful {
                c.packet_loss_percentage
            } else {
                100.0
            }
        })
        .fold(100.0, f64::min);
    let rtt = r
        .l3_connectivity
        .iter()
        .filter(|c| c.successful)
        .map(|c| (c.average_rtt_ms, c.remote_ip_address.as_str()))
        .min_by(|a, b| a.0.total_cmp(&b.0));
    (loss, rtt)
}

/// The three link validations of host `id` with effective `role`, from
/// its `connectivity-check` output `report` (JSON text, empty before the
/// first) and the effective role of every host of the cluster by id
/// (`auto-assign` while undecided). Single-node clusters pass (there is
/// no peer); when the majority groups are disabled (too many hosts for
/// connectivity checks) these are disabled with the same reason.
///
/// Returns `[latency, packet loss, mtu]` results.
pub fn link_validations(
    id: &str,
    role: &str,
    sno: bool,
    report: &str,
    roles: &HashMap<&str, &str>,
    majority: &Majority,
) -> [ValidationResult; 3] {
    if sno {
        return [
            result(
                LATENCY,
                "success",
                "Network latency requirement does not apply to a single node",
            ),
            result(
                PACKET_LOSS,
                "success",
                "Packet loss requirement does not apply to a single node",
            ),
            result(MTU, "success", "MTU check does not apply to a single node"),
        ];
    }
    if let Majority::Disabled(why) = majority {
        return [LATENCY, PACKET_LOSS, MTU].map(|v| result(v, "disabled", why.clone()));
    }
    let parsed = if report.is_empty() {
        None
    } else {
        serde_json::from_str::<ConnectivityReport>(report).ok()
    };
    let Some(report) = parsed else {
        let why = "Waiting for the host's connectivity check to the other hosts";
        return [LATENCY, PACKET_LOSS, MTU].map(|v| result(v, "pending", why));
    };
    let mtu = mtu_validation(id, &report, roles);
    let req = match role {
        "master" => MASTER_LINK,
        "worker" => WORKER_LINK,
        _ => {
            let why = "Waiting for the host's role to be decided";
            return [
                result(LATENCY, "pending", why),
                result(PACKET_LOSS, "pending", why),
                mtu,
            ];
        }
    };
    let peers = report.remote_hosts.iter().filter(|r| {
        r.host_id != id
            && match roles.get(r.host_id.as_str()) {
                None => false,
                Some(peer) => role == "worker" || *peer == "master",
            }
    });
    let (mut slow, mut lossy) = (Vec::new(), Vec::new());
    for r in peers {
        let (loss, rtt) = best(r);
        if let Some((ms, ip)) = rtt
            && ms > req.max_rtt_ms
        {
            slow.push(format!("{ip} ({ms:.2} ms)"));
        }
        if loss > req.max_loss_percent {
            let at = r
                .l3_connectivity
                .first()
                .map_or(r.host_id.as_str(), |c| c.remote_ip_address.as_str());
            lossy.push(format!("{at} ({loss:.0} %)"));
        }
    }
    let against = if role == "master" {
        "the other masters"
    } else {
        "the other hosts"
    };
    let latency = if slow.is_empty() {
        result(
            LATENCY,
            "success",
            format!(
                "Network latency to {against} is within the {role} limit of {} ms",
                req.max_rtt_ms
            ),
        )
    } else {
        result(
            LATENCY,
            "failure",
            format!(
                "Network latency to {against} exceeds the {role} limit of {} ms (mean round trip): {}",
                req.max_rtt_ms,
                slow.join(", ")
            ),
        )
    };
    let loss = if lossy.is_empty() {
        result(
            PACKET_LOSS,
            "success",
            format!(
                "Packet loss to {against} is within the {role} limit of {} %",
                req.max_loss_percent
            ),
        )
    } else {
        result(
            PACKET_LOSS,
            "failure",
            format!(
                "Packet loss to {against} exceeds the {role} limit of {} %: {}",
                req.max_loss_percent,
                lossy.join(", ")
            ),
        )
    };
    [latency, loss, mtu]
}

/// `mtu-valid`: every full-size echo series to a host of the cluster came
/// back (reports without an MTU part pass).
fn mtu_validation(
    id: &str,
    report: &ConnectivityReport,
    roles: &HashMap<&str, &str>,
) -> ValidationResult {
    let broken: Vec<String> = report
        .remote_hosts
        .iter()
        .filter(|r| r.host_id != id && roles.contains_key(r.host_id.as_str()))
        .flat_map(|r| r.mtu_report.iter())
        .filter(|m| !m.mtu_successful)
        .map(|m| {
            if m.outgoing_nic.is_empty() {
                m.remote_ip.clone()
            } else {
                format!("{} via {}", m.remote_ip, m.outgoing_nic)
            }
        })
        .collect();
    if broken.is_empty() {
        result(MTU, "success", "MTU is ok")
    } else {
        result(
            MTU,
            "failure",
            format!(
                "Packets of the interface's full MTU do not reach {} unfragmented: set the same MTU on every host and switch port of the network",
                broken.join(", ")
            ),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use okd_assisted_api::steps::{L3Connectivity, MtuReport};

    fn peer(id: &str, ip: &str, rtt: f64, loss: f64, mtu_ok: bool) -> ConnectivityRemoteHost {
        ConnectivityRemoteHost {
            host_id: id.into(),
            l2_connectivity: vec![],
            l3_connectivity: vec![L3Connectivity {
                outgoing_nic: "eth0".into(),
                remote_ip_address: ip.into(),
                successful: loss < 100.0,
                average_rtt_ms: rtt,
                packet_loss_percentage: loss,
            }],
            mtu_report: vec![MtuReport {
                outgoing_nic: "eth0".into(),
                remote_ip: ip.into(),
                mtu_successful: mtu_ok,
            }],
        }
    }

    fn groups() -> Majority {
        Majority::Groups {
            members: Default::default(),
            reported: Default::default(),
            incomplete: Default::default(),
        }
    }

    fn run(role: &str, peers: Vec<ConnectivityRemoteHost>) -> Vec<(String, String)> {
        let report = serde_json::to_string(&ConnectivityReport {
            remote_hosts: peers,
        })
        .unwrap();
        let roles: HashMap<&str, &str> = [
            ("a", role),
            ("m1", "master"),
            ("m2", "master"),
            ("w1", "worker"),
        ]
        .into_iter()
        .collect();
        link_validations("a", role, false, &report, &roles, &groups())
            .into_iter()
            .map(|r| (r.status, r.message))
            .collect()
    }

    #[test]
    fn master_measured_against_masters_only() {
        // A slow, lossy link to a worker does not fail a master.
        let v = run(
            "master",
            vec![
                peer("m1", "10.0.0.2", 0.3, 0.0, true),
                peer("w1", "10.0.0.9", 400.0, 50.0, true),
            ],
        );
        assert_eq!(v[0].0, "success", "{v:?}");
        assert_eq!(v[1].0, "success", "{v:?}");
        // The same link to a master does.
        let v = run(
            "master",
            vec![
                peer("m1", "10.0.0.2", 0.3, 0.0, true),
                peer("m2", "10.0.0.3", 150.5, 34.0, true),
            ],
        );
        assert_eq!(v[0].0, "failure");
        assert!(
            v[0].1.contains("10.0.0.3 (150.50 ms)") && v[0].1.contains("100 ms"),
            "{}",
            v[0].1
        );
        assert_eq!(v[1].0, "failure");
        assert!(
            v[1].1.contains("10.0.0.3 (34 %)") && v[1].1.contains("limit of 0 %"),
            "{}",
            v[1].1
        );
    }

    #[test]
    fn worker_thresholds_are_looser() {
        let v = run("worker", vec![peer("m1", "10.0.0.2", 150.0, 5.0, true)]);
        assert_eq!(
            (v[0].0.as_str(), v[1].0.as_str()),
            ("success", "success"),
            "{v:?}"
        );
        let v = run("worker", vec![peer("m1", "10.0.0.2", 1200.0, 20.0, true)]);
        assert_eq!(
            (v[0].0.as_str(), v[1].0.as_str()),
            ("failure", "failure"),
            "{v:?}"
        );
    }

    #[test]
    fn best_address_counts() {
        let mut p = peer("m1", "10.0.0.2", 0.4, 0.0, true);
        p.l3_connectivity.push(L3Connectivity {
            outgoing_nic: String::new(),
            remote_ip_address: "192.168.5.2".into(),
            successful: false,
            average_rtt_ms: 0.0,
            packet_loss_percentage: 100.0,
        });
        let v = run("master", vec![p]);
        assert_eq!(
            (v[0].0.as_str(), v[1].0.as_str()),
            ("success", "success"),
            "{v:?}"
        );
        // Unreachable everywhere: 100 % loss, no latency to judge.
        let v = run("master", vec![peer("m1", "10.0.0.2", 0.0, 100.0, true)]);
        assert_eq!(
            (v[0].0.as_str(), v[1].0.as_str()),
            ("success", "failure"),
            "{v:?}"
        );
    }

    #[test]
    fn mtu_broken_names_the_address_and_nic() {
        let v = run(
            "worker",
            vec![
                peer("m1", "10.0.0.2", 0.3, 0.0, true),
                peer("m2", "10.0.0.3", 0.3, 0.0, false),
            ],
        );
        assert_eq!(v[2].0, "failure");
        assert!(v[2].1.contains("10.0.0.3 via eth0"), "{}", v[2].1);
        // A host that left the cluster does not count.
        let v = run("worker", vec![peer("gone", "10.0.0.7", 0.3, 0.0, false)]);
        assert_eq!(v[2].0, "success", "{v:?}");
    }

    #[test]
    fn pending_disabled_and_single_node() {
        let roles: HashMap<&str, &str> = [("a", "master")].into_iter().collect();
        let v = link_validations("a", "master", false, "", &roles, &groups());
        assert!(v.iter().all(|r| r.status == "pending"), "{v:?}");
        let report = serde_json::to_string(&ConnectivityReport {
            remote_hosts: vec![],
        })
        .unwrap();
        let v = link_validations("a", "auto-assign", false, &report, &roles, &groups());
        assert_eq!(v[0].status, "pending");
        assert_eq!(v[2].status, "success");
        let v = link_validations(
            "a",
            "master",
            false,
            &report,
            &roles,
            &Majority::Disabled("too many hosts".into()),
        );
        assert!(
            v.iter()
                .all(|r| r.status == "disabled" && r.message == "too many hosts")
        );
        let v = link_validations("a", "master", true, "", &roles, &groups());
        assert!(v.iter().all(|r| r.status == "success"), "{v:?}");
    }
}
