//! What happens on install (the reference's §7.2-7.3, assisted-service
//! `internal/bminventory/inventory.go` InstallClusterInternal and
//! setBootstrapHost, `internal/ignition/installmanifests.go`): roles fixed
//! from the suggestions, the bootstrap host chosen, the install-config
//! written from the cluster and its hosts, the Ignition configs generated
//! by okd-install's own asset graph (not an extracted openshift-install),
//! then post-processed: bootstrap.ign gets
//! `/opt/openshift/assisted-install-bootstrap` (the marker that tells the
//! etcd operator the bootstrap host becomes a master) and each host gets a
//! pointer config `<role>-<host_id>.ign` with its `/etc/hostname`.
//!
//! The files are stored in the database (`cluster_files`), so every
//! replica of the service can hand them out.

use std::net::IpAddr;

use okd_assisted_api::Inventory;
use okd_types::node_identities::{NodeIdentities, NodeIdentity};
use serde_json::{Value, json};

use crate::db::{ClusterRow, HostRow};
use crate::model::ClusterParams;
use crate::validate;

/// The marker bootstrap.ign carries in an assisted install.
pub const BOOTSTRAP_MARKER: &str = "/opt/openshift/assisted-install-bootstrap";

/// One host as the install sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedHost {
    /// The host's id.
    pub id: String,
    /// Its infra-env.
    pub infra_env_id: String,
    /// Its effective host name.
    pub name: String,
    /// `master` or `worker`.
    pub role: String,
    /// Whether it runs the bootstrap control plane first.
    pub bootstrap: bool,
    /// The installation disk (`/dev/…`, by-id or by-path as the inventory
    /// names it).
    pub disk: String,
    /// Its addresses.
    pub addresses: Vec<IpAddr>,
}

/// The install's plan: the hosts with their roles and the install-config.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The hosts, in the cluster's order.
    pub hosts: Vec<PlannedHost>,
    /// `install-config.yaml`'s text.
    pub install_config: String,
}

/// The effective role of a host: its role, else the monitor's suggestion.
pub fn effective_role(h: &HostRow) -> &str {
    if h.role == "auto-assign" {
        &h.suggested_role
    } else {
        &h.role
    }
}

/// Plans the install of `c` with `hosts` (every one `known`).
///
/// The bootstrap host is the last master in the cluster's order, unless
/// one is marked already (setBootstrapHost); a single node is its own
/// bootstrap. Errors: a host without a role or an installation disk, in
/// words.
pub fn plan(
    c: &ClusterRow,
    p: &ClusterParams,
    hosts: &[HostRow],
    machine_networks: &[okd_assisted_api::rest::Cidr],
) -> Result<Plan, String> {
    let mut out = Vec::new();
    for h in hosts {
        let inv: Inventory = serde_json::from_str(&h.inventory)
            .map_err(|_| format!("host {}: no inventory", h.id))?;
        let role = effective_role(h);
        if role != "master" && role != "worker" {
            return Err(format!("host {}: no role assigned", h.id));
        }
        let req = validate::requirement(p, role);
        let disk = if h.installation_disk_id.is_empty() {
            validate::eligible_disks(&inv, req)
                .first()
                .map(|d| d.id.clone())
                .ok_or_else(|| format!("host {}: no eligible installation disk", h.id))?
        } else {
            h.installation_disk_id.clone()
        };
        let addresses = validate::host_networks(&inv)
            .iter()
            .map(ipnet::IpNet::addr)
            .collect();
        out.push(PlannedHost {
            id: h.id.clone(),
            infra_env_id: h.infra_env_id.clone(),
            name: validate::hostname(&h.requested_hostname, Some(&inv)),
            role: role.to_string(),
            bootstrap: h.bootstrap,
            disk,
            addresses,
        });
    }
    let vips: Vec<String> = p
        .api_vips
        .iter()
        .chain(&p.ingress_vips)
        .map(|v| v.ip.clone())
        .collect();
    unique_addresses(&out, &vips)?;
    if !out.iter().any(|h| h.bootstrap) {
        match out.iter_mut().rev().find(|h| h.role == "master") {
            Some(h) => h.bootstrap = true,
            None => return Err("no master host to be the bootstrap".into()),
        }
    }
    let install_config = install_config(c, p, &out, machine_networks)?;
    Ok(Plan {
        hosts: out,
        install_config,
    })
}

/// Refuses addresses two hosts report, or a host reports that is one of
/// `vips` (the API and ingress VIPs): the reported addresses become the node identities the
/// bootstrap's CSR approval trusts (issue #41), so one host must not be
/// able to claim another's (or the VIPs').
///
/// # Errors
/// The address and the two hosts (by id) in words.
pub fn unique_addresses(hosts: &[PlannedHost], vips: &[String]) -> Result<(), String> {
    let mut seen: std::collections::BTreeMap<IpAddr, &str> = std::collections::BTreeMap::new();
    for v in vips {
        if let Ok(ip) = v.parse::<IpAddr>() {
            seen.insert(ip, "a VIP of the cluster");
        }
    }
    for h in hosts {
        for a in &h.addresses {
            if let Some(other) = seen.insert(*a, &h.id) {
                return Err(format!(
                    "address {a} is reported by host {} and by {}: every host's addresses become its node identity for CSR approval, so no two may share one (a host reporting another's address is misconfigured or impersonating it)",
                    h.id,
                    if other.starts_with("a VIP") {
                        other.to_string()
                    } else {
                        format!("host {other}")
                    }
                ));
            }
        }
    }
    Ok(())
}

/// `install-config.yaml` for the cluster (what assisted-service's
/// `installcfg` builder writes, on platform baremetal with the VIPs for
/// several nodes and platform none with `bootstrapInPlace` for one).
pub fn install_config(
    c: &ClusterRow,
    p: &ClusterParams,
    hosts: &[PlannedHost],
    machine_networks: &[okd_assisted_api::rest::Cidr],
) -> Result<String, String> {
    let masters = hosts.iter().filter(|h| h.role == "master").count();
    let workers = hosts.iter().filter(|h| h.role == "worker").count();
    let platform = if p.control_plane_count == 1 {
        json!({ "none": {} })
    } else {
        json!({ "baremetal": {
            "apiVIPs": p.api_vips.iter().map(|v| v.ip.clone()).collect::<Vec<_>>(),
            "ingressVIPs": p.ingress_vips.iter().map(|v| v.ip.clone()).collect::<Vec<_>>(),
        }})
    };
    let mut doc = json!({
        "apiVersion": "v1",
        "baseDomain": p.base_dns_domain,
        "metadata": { "name": c.name },
        "compute": [{ "name": "worker", "replicas": workers, "hyperthreading": "Enabled", "architecture": "amd64" }],
        "controlPlane": { "name": "master", "replicas": masters, "hyperthreading": "Enabled", "architecture": "amd64" },
        "networking": {
            "networkType": p.network_type,
            "clusterNetwork": p.cluster_networks.iter().map(|n| json!({"cidr": n.cidr, "hostPrefix": n.host_prefix})).collect::<Vec<_>>(),
            "serviceNetwork": p.service_networks.iter().map(|n| n.cidr.clone()).collect::<Vec<_>>(),
            "machineNetwork": machine_networks.iter().map(|n| json!({"cidr": n.cidr})).collect::<Vec<_>>(),
        },
        "platform": platform,
        "pullSecret": c.pull_secret,
    });
    if !p.ssh_public_key.is_empty() {
        doc["sshKey"] = Value::String(p.ssh_public_key.clone());
    }
    if p.control_plane_count == 1 {
        let disk = hosts
            .iter()
            .find(|h| h.role == "master")
            .map(|h| h.disk.clone())
            .unwrap_or_default();
        doc["bootstrapInPlace"] = json!({ "installationDisk": disk });
    }
    serde_yaml_ng::to_string(&doc).map_err(|e| format!("install-config.yaml: {e}"))
}

/// Adds a file (mode 0644 unless given, `data:` URL contents) to an
/// Ignition config's `storage.files`.
pub fn add_file(config: &mut Value, path: &str, contents: &str, mode: u32) {
    let enc: String = contents
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect();
    let file = json!({
        "path": path,
        "mode": mode,
        "overwrite": true,
        "contents": { "source": format!("data:,{enc}") },
    });
    if !config["storage"].is_object() {
        config["storage"] = json!({});
    }
    if !config["storage"]["files"].is_array() {
        config["storage"]["files"] = json!([]);
    }
    if let Some(files) = config["storage"]["files"].as_array_mut() {
        files.retain(|f| f["path"] != path);
        files.push(file);
    }
}

/// The nodes' identities for the bootstrap's CSR approval.
pub fn identities(plan: &Plan, base_domain: &str, cluster: &str) -> NodeIdentities {
    NodeIdentities {
        nodes: plan
            .hosts
            .iter()
            .map(|h| NodeIdentity {
                names: vec![
                    h.name.to_lowercase(),
                    format!("{}.{cluster}.{base_domain}", h.name.to_lowercase()),
                ],
                addresses: h.addresses.clone(),
                master: h.role == "master",
            })
            .collect(),
    }
}

/// Runs the asset graph for `plan` in a temporary directory and returns
/// the files the service hands out: `install-config.yaml`,
/// `bootstrap.ign` (with [`BOOTSTRAP_MARKER`]), `master.ign`,
/// `worker.ign`, `metadata.json`, `kubeadmin-password`,
/// `kubeconfig-noingress`, and `<role>-<host_id>.ign` per host. Blocking
/// (seconds): run it off the async workers.
///
/// Errors: the asset graph's, in words (with the chain of causes).
pub fn generate(
    plan: &Plan,
    release_image: &str,
    openshift_version: &str,
    base_domain: &str,
    cluster: &str,
) -> Result<Vec<(String, String)>, String> {
    use okd_types::release::ReleaseTarget;
    let work = tempfile::tempdir().map_err(|e| format!("a work directory: {e}"))?;
    let dir = work.path();
    std::fs::write(dir.join("install-config.yaml"), &plan.install_config)
        .map_err(|e| format!("install-config.yaml: {e}"))?;
    let okd = release_image.contains("okd");
    let target = ReleaseTarget::parse_version(openshift_version, okd)
        .map_err(|e| format!("openshift_version {openshift_version:?}: {e}"))?;
    let mut ctx =
        okd_assets::GenCtx::new(release_image.to_string(), target, target.ignition_spec());
    ctx.invoker = "assisted-installer".into();
    ctx.node_identities = Some(identities(plan, base_domain, cluster));
    // The hosts run the discovery agent from /usr/local/bin/okd-install,
    // where bootstrap.ign would put the node program: it is there already,
    // so bootstrap.ign carries none (not 40 MB more per cluster in the
    // database; docs/differences.md).
    ctx.node_program = Some(okd_assets::node_program::NodeProgramAsset::default());
    okd_assets::create(
        &okd_assets::AssetDir::new(dir),
        &mut ctx,
        okd_assets::Target::IgnitionConfigs,
        2,
    )
    .map_err(|e| okd_assets::chain(&e))?;
    let read = |p: &str| std::fs::read_to_string(dir.join(p)).map_err(|e| format!("{p}: {e}"));
    let mut bootstrap: Value =
        serde_json::from_str(&read("bootstrap.ign")?).map_err(|e| format!("bootstrap.ign: {e}"))?;
    add_file(&mut bootstrap, BOOTSTRAP_MARKER, "", 0o644);
    let master = read("master.ign")?;
    let worker = read("worker.ign")?;
    let mut files = vec![
        (
            "install-config.yaml".to_string(),
            plan.install_config.clone(),
        ),
        ("bootstrap.ign".into(), bootstrap.to_string()),
        ("master.ign".into(), master.clone()),
        ("worker.ign".into(), worker.clone()),
        ("metadata.json".into(), read("metadata.json")?),
        (
            "kubeadmin-password".into(),
            read("auth/kubeadmin-password")?,
        ),
        ("kubeconfig-noingress".into(), read("auth/kubeconfig")?),
    ];
    for h in &plan.hosts {
        let base = if h.role == "master" { &master } else { &worker };
        let mut cfg: Value =
            serde_json::from_str(base).map_err(|e| format!("{}.ign: {e}", h.role))?;
        add_file(&mut cfg, "/etc/hostname", &format!("{}\n", h.name), 0o644);
        files.push((format!("{}-{}.ign", h.role, h.id), cfg.to_string()));
    }
    Ok(files)
}

/// The install step's argument (swagger `install_cmd_request`) for `h`.
pub fn install_request(cluster_id: &str, p: &ClusterParams, h: &PlannedHost) -> Value {
    json!({
        "cluster_id": cluster_id,
        "infra_env_id": h.infra_env_id,
        "host_id": h.id,
        "role": if h.bootstrap { "bootstrap" } else { h.role.as_str() },
        "boot_device": h.disk,
        "openshift_version": p.openshift_version,
        "control_plane_count": p.control_plane_count,
        "installer_args": "[]",
        "disks_to_format": [],
        "check_cvo": true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_cannot_claim_another_hosts_address() {
        let host = |id: &str, ip: &str| PlannedHost {
            id: id.into(),
            infra_env_id: "ie".into(),
            name: id.into(),
            role: "master".into(),
            bootstrap: false,
            disk: "/dev/vda".into(),
            addresses: vec![ip.parse().unwrap()],
        };
        assert!(unique_addresses(&[host("a", "10.0.0.1"), host("b", "10.0.0.2")], &[]).is_ok());
        let e = unique_addresses(&[host("a", "10.0.0.1"), host("b", "10.0.0.1")], &[]).unwrap_err();
        assert!(
            e.contains("10.0.0.1") && e.contains("host b") && e.contains("host a"),
            "{e}"
        );
        let e = unique_addresses(&[host("a", "10.0.0.9")], &["10.0.0.9".into()]).unwrap_err();
        assert!(e.contains("a VIP of the cluster"), "{e}");
    }

    #[test]
    fn a_file_is_added_once_with_its_contents() {
        let mut c = json!({"ignition": {"version": "3.2.0"}});
        add_file(&mut c, "/etc/hostname", "master-0\n", 0o644);
        add_file(&mut c, "/etc/hostname", "master-1\n", 0o644);
        let files = c["storage"]["files"].as_array().unwrap();
        assert_eq!(files.len(), 1);
        assert_eq!(files[0]["contents"]["source"], "data:,master-1%0A");
        assert_eq!(files[0]["mode"], 420);
    }
}
