//! Removing the bootstrap VM once it is no longer needed (kcli deletes it
//! after `openshift-install wait-for bootstrap-complete`, karmab/kcli
//! `kvirt/cluster/openshift/__init__.py`): only when the API VIP is held by
//! a master, told by the hypervisor's neighbour table.

use std::net::{IpAddr, SocketAddr, TcpStream};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use okd_libvirt::Virsh;
use tracing::{info, warn};

use crate::ClusterError;
use crate::state::ClusterState;

/// Who holds the API VIP, as this host sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VipHolder {
    /// A VM of the record (its name and role).
    Vm {
        /// The VM's name.
        name: String,
        /// `bootstrap`, `master` or `worker`.
        role: String,
    },
    /// A MAC that is none of the record's VMs.
    Other(String),
    /// No neighbour entry: the VIP is not reachable from here (another
    /// hypervisor, or nobody holds it).
    Unknown,
}

/// The MAC of `ip` in `ip neigh show to <ip>` output (`<ip> dev <nic>
/// lladdr <mac> REACHABLE`); None for FAILED/INCOMPLETE entries or none.
pub fn parse_neighbour(text: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let mut words = l.split_whitespace();
        while let Some(w) = words.next() {
            if w == "lladdr" {
                return words.next().map(|m| m.to_ascii_lowercase());
            }
        }
        None
    })
}

/// Asks the kernel who holds `vip`: a TCP connection attempt to
/// `vip:6443` (at most 2 s; refused or answered, either fills the
/// neighbour table), then `ip neigh show to <vip>`, matched against the
/// record's MACs.
pub fn vip_holder(state: &ClusterState, vip: IpAddr) -> VipHolder {
    let _ = TcpStream::connect_timeout(&SocketAddr::new(vip, 6443), Duration::from_secs(2));
    let out = Command::new("ip")
        .args(["neigh", "show", "to", &vip.to_string()])
        .output();
    let Some(mac) = out
        .ok()
        .and_then(|o| parse_neighbour(&String::from_utf8_lossy(&o.stdout)))
    else {
        return VipHolder::Unknown;
    };
    match state.vms.iter().find(|v| v.mac.eq_ignore_ascii_case(&mac)) {
        Some(v) => VipHolder::Vm {
            name: v.name.clone(),
            role: v.role.clone(),
        },
        None => VipHolder::Other(mac),
    }
}

/// Removes the bootstrap VM of the cluster in `dir` (domain, volumes,
/// DHCP reservation, Ignition file; the record updated), after waiting up
/// to `wait` for the API VIP to be on a master (checked every 2 s, each
/// wait logged). When the VIP cannot be seen from this host (a remote
/// hypervisor) it says so and goes on: the bootstrap's keepalived has the
/// lowest priority, so the VIP fails over to a master within seconds.
/// Returns the removed VM's name, or None when the record has no
/// bootstrap (removed already).
///
/// # Errors
/// [`ClusterError::File`] without a record; [`ClusterError::Invalid`]
/// (key `api_ip`) when the VIP is still on the bootstrap (or on a host
/// that is not a master) after `wait`; [`ClusterError::Partial`] when the
/// VM could not be removed.
pub fn remove_bootstrap(
    dir: &Path,
    virsh: &mut Virsh,
    wait: Duration,
) -> Result<Option<String>, ClusterError> {
    let Some(mut state) = ClusterState::read(dir)? else {
        return Err(ClusterError::File {
            path: ClusterState::path(dir),
            message: "no record of a cluster made with `okd-install create cluster` here".into(),
        });
    };
    let Some(boot) = state.vms.iter().find(|v| v.role == "bootstrap").cloned() else {
        info!("the bootstrap VM of {} is removed already", state.cluster);
        return Ok(None);
    };
    let deadline = Instant::now() + wait;
    loop {
        match vip_holder(&state, state.api_vip) {
            VipHolder::Vm { role, name } if role == "master" => {
                info!("the API VIP {} is on {name}", state.api_vip);
                break;
            }
            VipHolder::Unknown => {
                warn!(
                    "cannot see who holds the API VIP {} from this host; the bootstrap has keepalived's lowest priority, so a master takes it over",
                    state.api_vip
                );
                break;
            }
            other => {
                let who = match &other {
                    VipHolder::Vm { name, .. } => name.clone(),
                    VipHolder::Other(mac) => format!("a host with MAC {mac} outside the cluster"),
                    VipHolder::Unknown => unreachable!(),
                };
                if Instant::now() >= deadline {
                    return Err(ClusterError::Invalid {
                        file: ClusterState::path(dir).display().to_string(),
                        key: "api_ip".into(),
                        rule: format!(
                            "the API VIP {} is still on {who} after {}s; the bootstrap stays until a master holds it (is a master's kube-apiserver answering /readyz?)",
                            state.api_vip,
                            wait.as_secs()
                        ),
                    });
                }
                info!(
                    "waiting for the API VIP {} to move from {who} to a master",
                    state.api_vip
                );
                std::thread::sleep(Duration::from_secs(2).min(wait));
            }
        }
    }
    crate::ops::remove_one(virsh, &state, &boot).map_err(|why| ClusterError::Partial {
        message: format!("removing the bootstrap VM {}", boot.name),
        left: format!(": {why}"),
    })?;
    state.vms.retain(|v| v.name != boot.name);
    state.write(dir)?;
    info!("removed the bootstrap VM {}", boot.name);
    Ok(Some(boot.name))
}

#[cfg(test)]
mod tests {
    use super::parse_neighbour;

    #[test]
    fn neighbour_lines() {
        assert_eq!(
            parse_neighbour("192.168.122.253 dev virbr0 lladdr 52:54:00:AA:bb:cc REACHABLE\n"),
            Some("52:54:00:aa:bb:cc".into())
        );
        assert_eq!(parse_neighbour("192.168.122.253 dev virbr0 FAILED\n"), None);
        assert_eq!(parse_neighbour(""), None);
    }
}
