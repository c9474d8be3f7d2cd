//! The `dns.<nameserver>.<name>` checks: every nameserver the nodes use
//! (agent-config's nmstate `dns-resolver`, serve's DNS by default) asked
//! what a node asks: `api` and `api-int` (bootkube's, the kubelet's and
//! report-progress's names; openshift/installer#6104: "lookup api-int…: no
//! such host"), a random `*.apps` name (the routes), and every host's A
//! and PTR records (the node names the kubelet registers and
//! approve-csr checks).

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use hickory_proto::op::{Message, Query, ResponseCode};
use hickory_proto::rr::{Name, RecordType};
use okd_hosts::Inventory;

use crate::Check;

/// One answer: the response code and the answers as text.
type Answer = Result<(ResponseCode, Vec<String>), String>;

/// Asks `ns` (UDP, port 53 unless given) for `name`/`qtype`: two tries of
/// `timeout` each.
pub(crate) async fn ask(
    ns: SocketAddr,
    name: &str,
    qtype: RecordType,
    timeout: Duration,
) -> Answer {
    let qname = Name::from_ascii(name).map_err(|e| format!("{name}: {e}"))?;
    let mut m = Message::query();
    m.metadata.id = rand::random();
    m.metadata.recursion_desired = true;
    m.add_query(Query::query(qname, qtype));
    let bytes = m.to_vec().map_err(|e| e.to_string())?;
    let bind: SocketAddr = if ns.is_ipv4() {
        "0.0.0.0:0".parse().expect("an address")
    } else {
        "[::]:0".parse().expect("an address")
    };
    let sock = tokio::net::UdpSocket::bind(bind)
        .await
        .map_err(|e| format!("a UDP socket: {e}"))?;
    sock.connect(ns).await.map_err(|e| format!("{ns}: {e}"))?;
    let mut last = String::new();
    for _ in 0..2 {
        sock.send(&bytes).await.map_err(|e| format!("{ns}: {e}"))?;
        let mut buf = vec![0u8; 4096];
        match tokio::time::timeout(timeout, sock.recv(&mut buf)).await {
            Ok(Ok(n)) => {
                let r = Message::from_vec(&buf[..n]).map_err(|e| format!("{ns}: {e}"))?;
                if r.metadata.id != m.metadata.id {
                    last = format!("{ns}: an answer to another query");
                    continue;
                }
                let answers = r
                    .answers
                    .iter()
                    .filter(|a| a.record_type() == qtype)
                    .map(|a| a.data.to_string().trim_end_matches('.').to_string())
                    .collect();
                return Ok((r.metadata.response_code, answers));
            }
            Ok(Err(e)) => last = format!("{ns}: {e}"),
            Err(_) => last = format!("{ns}: no answer within {} s", timeout.as_secs_f32()),
        }
    }
    Err(last)
}

/// What one name must resolve to.
struct Want {
    /// The id's last part: `api`, `api-int`, `apps`, `<host>`, `<host>.ptr`.
    key: String,
    name: String,
    qtype: RecordType,
    /// The expected answer (an address, or a host's FQDN for PTR).
    value: String,
    /// Why it matters, for the cause.
    why: &'static str,
}

fn wants(inv: &Inventory) -> Vec<Want> {
    let d = &inv.cluster_domain;
    let a = |ip: IpAddr| {
        if ip.is_ipv4() {
            RecordType::A
        } else {
            RecordType::AAAA
        }
    };
    let mut out = vec![
        Want {
            key: "api".into(),
            name: format!("api.{d}"),
            qtype: a(inv.api),
            value: inv.api.to_string(),
            why: "oc, wait-for and the console",
        },
        Want {
            key: "api-int".into(),
            name: format!("api-int.{d}"),
            qtype: a(inv.api),
            value: inv.api.to_string(),
            why: "the nodes' kubelets, Ignition's machine-config URL and bootkube",
        },
        Want {
            key: "apps".into(),
            name: format!("preflight-{:08x}.apps.{d}", rand::random::<u32>()),
            qtype: a(inv.ingress),
            value: inv.ingress.to_string(),
            why: "every route (*.apps): console, OAuth, the ingress canary",
        },
    ];
    for n in &inv.nodes {
        out.push(Want {
            key: n.hostname.clone(),
            name: n.fqdn.clone(),
            qtype: a(n.address),
            value: n.address.to_string(),
            why: "the node's name",
        });
        out.push(Want {
            key: format!("{}.ptr", n.hostname),
            name: okd_dns_records::reverse_name(n.address),
            qtype: RecordType::PTR,
            value: n.fqdn.clone(),
            why: "the name the node takes from its address (its kubelet's node name)",
        });
    }
    out
}

/// The response code as dig names it (`NXDOMAIN`, `SERVFAIL`, `REFUSED`).
fn rcode(rc: ResponseCode) -> String {
    match rc {
        ResponseCode::NoError => "NOERROR".into(),
        ResponseCode::NXDomain => "NXDOMAIN".into(),
        ResponseCode::ServFail => "SERVFAIL".into(),
        ResponseCode::Refused => "REFUSED".into(),
        other => other.to_string(),
    }
}

/// The checks for every nameserver the nodes use, and which nodes use it.
pub(crate) async fn check(inv: &Inventory, timeout: Duration) -> Vec<Check> {
    let serve_dns = SocketAddr::new(inv.listen, inv.ports.dns);
    let mut servers: BTreeMap<SocketAddr, Vec<String>> = BTreeMap::new();
    for n in &inv.nodes {
        let list = if n.nameservers.is_empty() {
            vec![inv.listen]
        } else {
            n.nameservers.clone()
        };
        for ns in list {
            let addr = if ns == inv.listen {
                serve_dns
            } else {
                SocketAddr::new(ns, 53)
            };
            servers.entry(addr).or_default().push(n.hostname.clone());
        }
    }
    let wants = wants(inv);
    let mut out = Vec::new();
    for (ns, users) in servers {
        let prefix = format!("dns.{}", ns.ip());
        if ns != serve_dns {
            out.push(Check::warn(
                format!("{prefix}.serve"),
                format!(
                    "{} use nameserver {ns}, not serve's DNS ({serve_dns}): it must answer the cluster's names as below",
                    users.join(", ")
                ),
                format!(
                    "point the nodes at {} (nmstate dns-resolver in {}), or give that nameserver the records of `okd-install create bastion-configs` (bastion/dnsmasq, bind, coredns)",
                    inv.listen,
                    okd_hosts::AGENT_CONFIG_FILE
                ),
            ));
        }
        let mut unreachable = None;
        for w in &wants {
            let id = format!("{prefix}.{}", w.key);
            if let Some(e) = &unreachable {
                out.push(Check::skip(id, format!("{ns} did not answer: {e}")));
                continue;
            }
            match ask(ns, &w.name, w.qtype, timeout).await {
                Err(e) => {
                    out.push(Check::fail(
                        id,
                        format!("{} {}: {e} (used by {})", w.name, w.qtype, users.join(", ")),
                        format!("start the DNS server on {ns} (okd-install serve, or your own with the files of `create bastion-configs`), and let the nodes' network reach it"),
                    ));
                    unreachable = Some(e);
                }
                Ok((_, answers)) if answers.iter().any(|a| a.eq_ignore_ascii_case(&w.value)) => {
                    let extra = if answers.len() > 1 {
                        format!(
                            " (also {})",
                            answers
                                .iter()
                                .filter(|a| !a.eq_ignore_ascii_case(&w.value))
                                .cloned()
                                .collect::<Vec<_>>()
                                .join(", ")
                        )
                    } else {
                        String::new()
                    };
                    out.push(Check::pass(
                        id,
                        format!("{} {} is {}{extra}", w.name, w.qtype, w.value),
                    ));
                }
                Ok((rc, answers)) => {
                    let got = if answers.is_empty() {
                        format!("{}, no {} record", rcode(rc), w.qtype)
                    } else {
                        answers.join(", ")
                    };
                    out.push(Check::fail(
                        id,
                        format!(
                            "{} {} answers {got} where the inventory says {} ({})",
                            w.name, w.qtype, w.value, w.why
                        ),
                        format!(
                            "add `{} {}` to the DNS at {ns} (the records of `okd-install create bastion-configs`), or let the nodes use serve's DNS",
                            w.name, w.value
                        ),
                    ));
                }
            }
        }
    }
    out
}
