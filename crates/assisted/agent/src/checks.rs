//! The agent's network and disk steps (assisted-installer-agent
//! `src/connectivity_check`, `src/domain_resolution`, `src/vips_verifier`,
//! `src/disk_speed_check`, `src/free_addresses`): each takes the step's `args` and returns
//! `(exit_code, output, error)` with the output as the JSON text of its
//! model in [`okd_assisted_api::steps`].
//!
//! The reference agent runs `arping`, `ping`, `nmap` and `fio`; this one
//! uses its own probes ([`crate::net`]) so that the discovery image needs
//! no extra tools. Names resolve through the system resolver
//! (`getaddrinfo`: `/etc/hosts`, then the nameservers of
//! `/etc/resolv.conf`), as the reference's Go resolver does.

use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::time::Duration;

use ipnet::{IpNet, Ipv4Net};
use okd_assisted_api::steps::{
    ConnectivityCheckParams, ConnectivityRemoteHost, ConnectivityReport, DiskSpeedCheckRequest,
    DiskSpeedCheckResponse, DomainResolution, DomainResolutionRequest, DomainResolutionResponse,
    FreeAddressesRequest, FreeNetworkAddresses, FreeNetworksAddresses, L2Connectivity,
    L3Connectivity, MAX_FREE_ADDRESSES_NETWORK_SIZE, MtuReport, VerifiedVip, VerifyVipsRequest,
    VerifyVipsResponse,
};

use crate::{Root, disk_guard, inventory, net};

/// How long an ARP probe waits for its answer (`arping -w`; the reference
/// waits 5 s with 10 requests, this one 2 s with a request every 200 ms).
pub const ARP_TIMEOUT: Duration = Duration::from_secs(2);

/// ICMP echoes per remote address, their spacing and each one's wait.
pub const PING_COUNT: u32 = 3;
/// See [`PING_COUNT`].
pub const PING_INTERVAL: Duration = Duration::from_millis(200);
/// See [`PING_COUNT`].
pub const PING_TIMEOUT: Duration = Duration::from_secs(1);

/// Full-size echoes with Don't Fragment per remote IPv4 address (the
/// reference's `ping -M do -c 3`; two here, each waiting
/// [`PING_TIMEOUT`]).
pub const MTU_PING_COUNT: u32 = 2;

/// Probes running at once (each holds a blocking thread).
pub const PARALLEL_PROBES: usize = 16;

/// A name's resolution may take this long (the resolver's own timeouts
/// and retries stay inside it).
pub const RESOLVE_TIMEOUT: Duration = Duration::from_secs(15);

/// The disk check's time limit (assisted-service: 8 minutes).
pub const DISK_SPEED_TIMEOUT: Duration = Duration::from_secs(8 * 60);

type Outcome = (i64, String, String);

fn arg<T: serde::de::DeserializeOwned>(
    step: &str,
    args: &[String],
    shape: &str,
) -> Result<T, Outcome> {
    let a = args.first().ok_or_else(|| {
        (
            -1,
            String::new(),
            format!("{step}: no argument (want {shape})"),
        )
    })?;
    serde_json::from_str(a).map_err(|e| {
        (
            -1,
            String::new(),
            format!("{step}: args[0] is not {shape}: {e}"),
        )
    })
}

fn done<T: serde::Serialize>(v: &T) -> Outcome {
    match serde_json::to_string(v) {
        Ok(s) => (0, s, String::new()),
        Err(e) => (-1, String::new(), format!("the output as JSON: {e}")),
    }
}

/// This machine's IPv4 addresses with their interfaces and networks.
fn local_v4(root: &Root) -> Vec<(String, Ipv4Net)> {
    inventory::interfaces(root)
        .into_iter()
        .flat_map(|i| {
            let name = i.name.clone();
            i.ipv4_addresses
                .into_iter()
                .filter_map(move |a| a.parse::<Ipv4Net>().ok().map(|n| (name.clone(), n)))
        })
        .collect()
}

/// [`local_v4`] on a blocking thread (it reads `/sys` and netlink).
async fn local_v4_of(root: &Root) -> Vec<(String, Ipv4Net)> {
    let root = root.clone();
    tokio::task::spawn_blocking(move || local_v4(&root))
        .await
        .unwrap_or_default()
}

/// The local interface and address whose network holds `ip`.
fn via(local: &[(String, Ipv4Net)], ip: Ipv4Addr) -> Option<(String, Ipv4Addr)> {
    local
        .iter()
        .find(|(_, n)| n.contains(&ip) && n.addr() != ip)
        .map(|(i, n)| (i.clone(), n.addr()))
}

fn mac_text(m: [u8; 6]) -> String {
    m.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// Runs `f` on a blocking thread, at most [`PARALLEL_PROBES`] at once.
async fn probe<T: Send + 'static>(
    limit: &Arc<tokio::sync::Semaphore>,
    f: impl FnOnce() -> T + Send + 'static,
) -> Option<T> {
    let _permit = limit.clone().acquire_owned().await.ok()?;
    tokio::task::spawn_blocking(f).await.ok()
}

/// `connectivity-check`: for every address of every remote NIC in
/// `args[0]` ([`ConnectivityCheckParams`]), an ARP probe from the local
/// interface whose IPv4 network holds it (L2), [`PING_COUNT`] ICMP
/// echoes (L3) and, for IPv4 addresses that answered them,
/// [`MTU_PING_COUNT`] echoes of the route's full MTU with Don't Fragment
/// set (the MTU report). Output: [`ConnectivityReport`]. A probe that cannot run
/// (no raw socket) counts as unsuccessful, with a warning in the log.
pub async fn connectivity_check(args: &[String], root: &Root) -> Outcome {
    let peers: ConnectivityCheckParams = match arg(
        "connectivity-check",
        args,
        "a list of hosts with their NICs",
    ) {
        Ok(p) => p,
        Err(o) => return o,
    };
    let local = local_v4_of(root).await;
    let limit = Arc::new(tokio::sync::Semaphore::new(PARALLEL_PROBES));
    let mut tasks = tokio::task::JoinSet::new();
    for (hi, host) in peers.iter().enumerate() {
        for nic in &host.nics {
            for a in &nic.ip_addresses {
                let Some(ip) = a
                    .parse::<IpNet>()
                    .map(|n| n.addr())
                    .or_else(|_| a.parse::<IpAddr>())
                    .ok()
                else {
                    continue;
                };
                let (limit, local) = (limit.clone(), local.clone());
                tasks.spawn(async move {
                    let out_if = match ip {
                        IpAddr::V4(v4) => via(&local, v4),
                        IpAddr::V6(_) => None,
                    };
                    let l2 = match (&out_if, ip) {
                        (Some((ifname, src)), IpAddr::V4(v4)) => {
                            let (ifname2, src) = (ifname.clone(), *src);
                            let r = probe(&limit, move || {
                                net::arp_probe(&ifname2, src, v4, ARP_TIMEOUT)
                            })
                            .await;
                            let mac = match r {
                                Some(Ok(m)) => m,
                                Some(Err(e)) => {
                                    tracing::warn!(error = %e, "ARP probe failed");
                                    None
                                }
                                None => None,
                            };
                            Some(L2Connectivity {
                                outgoing_nic: ifname.clone(),
                                outgoing_ip_address: src.to_string(),
                                remote_ip_address: v4.to_string(),
                                remote_mac: mac.map(mac_text).unwrap_or_default(),
                                successful: mac.is_some(),
                            })
                        }
                        _ => None,
                    };
                    let stats = probe(&limit, move || {
                        net::ping(ip, PING_COUNT, PING_INTERVAL, PING_TIMEOUT)
                    })
                    .await;
                    let answered = matches!(&stats, Some(Ok(s)) if s.received > 0);
                    let mtu = match ip {
                        IpAddr::V4(v4) if answered => {
                            let r = probe(&limit, move || {
                                net::ping_full_size(v4, MTU_PING_COUNT, PING_INTERVAL, PING_TIMEOUT)
                            })
                            .await;
                            let ok = match r {
                                Some(Ok((_, s))) => s.received > 0,
                                Some(Err(e)) => {
                                    tracing::warn!(error = %e, "full-size ping failed");
                                    false
                                }
                                None => false,
                            };
                            Some(MtuReport {
                                outgoing_nic: out_if
                                    .as_ref()
                                    .map(|o| o.0.clone())
                                    .unwrap_or_default(),
                                remote_ip: v4.to_string(),
                                mtu_successful: ok,
                            })
                        }
                        _ => None,
                    };
                    let l3 = match stats {
                        Some(Ok(s)) => L3Connectivity {
                            outgoing_nic: out_if.map(|o| o.0).unwrap_or_default(),
                            remote_ip_address: ip.to_string(),
                            successful: s.received > 0,
                            average_rtt_ms: s.average_rtt_ms,
                            packet_loss_percentage: s.packet_loss_percentage(),
                        },
                        other => {
                            if let Some(Err(e)) = other {
                                tracing::warn!(error = %e, "ping failed");
                            }
                            L3Connectivity {
                                outgoing_nic: out_if.map(|o| o.0).unwrap_or_default(),
                                remote_ip_address: ip.to_string(),
                                successful: false,
                                average_rtt_ms: 0.0,
                                packet_loss_percentage: 100.0,
                            }
                        }
                    };
                    (hi, l2, l3, mtu)
                });
            }
        }
    }
    let mut report = ConnectivityReport {
        remote_hosts: peers
            .iter()
            .map(|h| ConnectivityRemoteHost {
                host_id: h.host_id.clone(),
                ..Default::default()
            })
            .collect(),
    };
    while let Some(r) = tasks.join_next().await {
        if let Ok((hi, l2, l3, mtu)) = r {
            let rh = &mut report.remote_hosts[hi];
            rh.l2_connectivity.extend(l2);
            rh.l3_connectivity.push(l3);
            rh.mtu_report.extend(mtu);
        }
    }
    for rh in &mut report.remote_hosts {
        rh.l2_connectivity
            .sort_by(|a, b| a.remote_ip_address.cmp(&b.remote_ip_address));
        rh.l3_connectivity
            .sort_by(|a, b| a.remote_ip_address.cmp(&b.remote_ip_address));
        rh.mtu_report.sort_by(|a, b| a.remote_ip.cmp(&b.remote_ip));
    }
    done(&report)
}

/// `domain-resolution`: every name of `args[0]`
/// ([`DomainResolutionRequest`]) resolved as an absolute name (a trailing
/// dot, so no search domain is tried) by the system resolver. A name that
/// does not resolve gets empty lists. Output:
/// [`DomainResolutionResponse`] (CNAME chains are not reported).
pub async fn domain_resolution(args: &[String]) -> Outcome {
    let req: DomainResolutionRequest = match arg(
        "domain-resolution",
        args,
        "{\"domains\":[{\"domain_name\":…}]}",
    ) {
        Ok(r) => r,
        Err(o) => return o,
    };
    let mut resolutions = Vec::new();
    for d in req.domains {
        let name = d.domain_name.trim_end_matches('.').to_string();
        let mut r = DomainResolution {
            domain_name: name.clone(),
            ..Default::default()
        };
        let valid = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | '*'));
        if valid {
            let found = tokio::time::timeout(
                RESOLVE_TIMEOUT,
                tokio::net::lookup_host((format!("{name}."), 0)),
            )
            .await;
            if let Ok(Ok(addrs)) = found {
                for a in addrs {
                    let ip = a.ip().to_string();
                    let list = if a.is_ipv4() {
                        &mut r.ipv4_addresses
                    } else {
                        &mut r.ipv6_addresses
                    };
                    if !list.contains(&ip) {
                        list.push(ip);
                    }
                }
            }
        }
        resolutions.push(r);
    }
    done(&DomainResolutionResponse { resolutions })
}

/// `verify-vips`: each IPv4 VIP of `args[0]` ([`VerifyVipsRequest`])
/// ARP-probed from the local interface whose network holds it: an answer
/// means the address is in use (`failed`), silence `succeeded`; no such
/// interface, an IPv6 VIP, or a probe that cannot run: `unverified`.
/// Output: [`VerifyVipsResponse`].
pub async fn verify_vips(args: &[String], root: &Root) -> Outcome {
    let req: VerifyVipsRequest = match arg("verify-vips", args, "a list of {vip, vip_type}") {
        Ok(r) => r,
        Err(o) => return o,
    };
    let local = local_v4_of(root).await;
    let limit = Arc::new(tokio::sync::Semaphore::new(PARALLEL_PROBES));
    let mut vips = Vec::new();
    for v in req {
        let verification = match v.vip.parse::<IpAddr>() {
            Ok(IpAddr::V4(ip)) => match via(&local, ip) {
                Some((ifname, src)) => {
                    match probe(&limit, move || {
                        net::arp_probe(&ifname, src, ip, ARP_TIMEOUT)
                    })
                    .await
                    {
                        Some(Ok(Some(_))) => "failed",
                        Some(Ok(None)) => "succeeded",
                        Some(Err(e)) => {
                            tracing::warn!(error = %e, "ARP probe of a VIP failed");
                            "unverified"
                        }
                        None => "unverified",
                    }
                }
                None => "unverified",
            },
            _ => "unverified",
        };
        vips.push(VerifiedVip {
            vip: v.vip,
            vip_type: v.vip_type,
            verification: verification.into(),
        });
    }
    done(&VerifyVipsResponse { vips })
}

/// How long the free-addresses scan of one network listens for answers
/// (requests are resent every [`net::ARP_RESEND_INTERVAL`] to the
/// addresses that have not answered).
pub const FREE_ADDRESSES_SCAN_TIMEOUT: Duration = Duration::from_secs(2);

/// `free-network-addresses`: each IPv4 network of `args[0]`
/// ([`FreeAddressesRequest`]) ARP-scanned ([`net::arp_scan`]) from the
/// local interface that has an address in it; its host addresses that
/// nothing answered for, and that are not this machine's own, are free.
/// Output: [`FreeNetworksAddresses`], in the order asked. A network with
/// no local interface in it, an IPv6 network or one larger than
/// [`MAX_FREE_ADDRESSES_NETWORK_SIZE`] addresses is left out (logged);
/// a scan that cannot run fails the step with its cause.
pub async fn free_addresses(args: &[String], root: &Root) -> Outcome {
    let req: FreeAddressesRequest = match arg(
        "free-network-addresses",
        args,
        "a list of IPv4 networks in CIDR form",
    ) {
        Ok(r) => r,
        Err(o) => return o,
    };
    let local = local_v4_of(root).await;
    let mut out: FreeNetworksAddresses = Vec::new();
    for cidr in req {
        let Ok(net) = cidr.parse::<Ipv4Net>().map(|n| n.trunc()) else {
            tracing::warn!(network = %cidr, "free-network-addresses: not an IPv4 network; skipped");
            continue;
        };
        let size = 1u64 << (32 - u32::from(net.prefix_len()));
        if size > u64::from(MAX_FREE_ADDRESSES_NETWORK_SIZE) {
            tracing::warn!(network = %net, "free-network-addresses: more than {MAX_FREE_ADDRESSES_NETWORK_SIZE} addresses; skipped");
            continue;
        }
        let Some((ifname, src)) = local
            .iter()
            .find(|(_, n)| n.trunc() == net)
            .map(|(i, n)| (i.clone(), n.addr()))
        else {
            tracing::warn!(network = %net, "free-network-addresses: no local interface in it; skipped");
            continue;
        };
        let own: Vec<Ipv4Addr> = local.iter().map(|(_, n)| n.addr()).collect();
        let targets: Vec<Ipv4Addr> = net.hosts().filter(|a| !own.contains(a)).collect();
        let scan_targets = targets.clone();
        let scanned = tokio::task::spawn_blocking(move || {
            net::arp_scan(&ifname, src, &scan_targets, FREE_ADDRESSES_SCAN_TIMEOUT)
        })
        .await;
        let answered = match scanned {
            Ok(Ok(a)) => a,
            Ok(Err(e)) => return (-1, String::new(), format!("scanning {net}: {e}")),
            Err(e) => return (-1, String::new(), format!("the scan task of {net}: {e}")),
        };
        out.push(FreeNetworkAddresses {
            network: net.to_string(),
            free_addresses: targets
                .iter()
                .filter(|a| !answered.contains_key(a))
                .map(|a| a.to_string())
                .collect(),
        });
    }
    done(&out)
}

/// `installation-disk-speed-check`: the disk `args[0]` names
/// ([`DiskSpeedCheckRequest`]) checked by [`disk_guard::check`] under
/// `root` (a block device under the root's `/dev` that this host's own
/// inventory reports as eligible), opened by [`disk_guard::CheckedDisk::open`]
/// (`O_NOFOLLOW`, `fstat` of the descriptor) and measured as
/// [`net::disk_sync_speed`] does, at most [`DISK_SPEED_TIMEOUT`] in all.
/// Output: [`DiskSpeedCheckResponse`] with the p99 rounded up to whole
/// ms. It overwrites the disk's first 22 MiB; the service hands it out
/// only while preparing an install onto it.
///
/// Exit code -1 with the error text for a bad argument, a refused disk
/// (assisted-installer-agent's `src/disk_speed_check` answers a missing
/// path the same way; it does not check the path, this agent does:
/// [`disk_guard::DiskRefusal::step_error`] names the field, the path and
/// the rule), a failed measurement or the time limit.
pub async fn disk_speed_check(args: &[String], root: &Root) -> Outcome {
    let req: DiskSpeedCheckRequest = match arg(
        "installation-disk-speed-check",
        args,
        "{\"path\": \"/dev/…\"}",
    ) {
        Ok(r) => r,
        Err(o) => return o,
    };
    let (root, path) = (root.clone(), req.path.clone());
    let measured = tokio::time::timeout(
        DISK_SPEED_TIMEOUT,
        tokio::task::spawn_blocking(move || -> Result<net::DiskSpeed, String> {
            let disk = disk_guard::check(&root, "installation-disk-speed-check path", &path)
                .map_err(|e| e.step_error())?;
            let dev = disk.open().map_err(|e| e.step_error())?;
            tracing::info!(path, device = %dev.path().display(), "installation-disk-speed-check: measuring");
            dev.sync_speed().map_err(|e| e.to_string())
        }),
    )
    .await;
    match measured {
        Ok(Ok(Ok(s))) => done(&DiskSpeedCheckResponse {
            path: req.path,
            io_sync_duration: s.p99_ms.ceil() as i64,
        }),
        Ok(Ok(Err(e))) => (-1, String::new(), e),
        Ok(Err(e)) => (-1, String::new(), format!("the disk check task: {e}")),
        Err(_) => (
            -1,
            String::new(),
            format!(
                "{}: the disk speed check did not finish within {} minutes",
                req.path,
                DISK_SPEED_TIMEOUT.as_secs() / 60
            ),
        ),
    }
}
