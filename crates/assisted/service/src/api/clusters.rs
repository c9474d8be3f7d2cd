//! Clusters: register, list, get, update and delete, the settings checks and
//! the cluster document as served.

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use okd_assisted_api::Inventory;
use okd_assisted_api::rest::{self, Cidr, ClusterCreateParams, ClusterUpdateParams};

use super::{Failure, Res, body, check_name, check_pull_secret, json};
use crate::db::{ClusterRow, now_ms};
use crate::model::{self, ClusterParams};
use crate::{Shared, events, validate};

fn check_params(p: &ClusterParams) -> Res<()> {
    if ![1, 3, 4, 5].contains(&p.control_plane_count) {
        return Err(Failure::bad(format!(
            "control_plane_count {}: must be 1 (single node), 3, 4 or 5",
            p.control_plane_count
        )));
    }
    for (field, list) in [
        (
            "cluster_networks",
            p.cluster_networks
                .iter()
                .map(|n| n.cidr.clone())
                .collect::<Vec<_>>(),
        ),
        (
            "service_networks",
            p.service_networks.iter().map(|n| n.cidr.clone()).collect(),
        ),
        (
            "machine_networks",
            p.machine_networks.iter().map(|n| n.cidr.clone()).collect(),
        ),
    ] {
        for (i, c) in list.iter().enumerate() {
            if c.parse::<ipnet::IpNet>().is_err() {
                return Err(Failure::bad(format!(
                    "{field}[{i}].cidr {c:?}: not a CIDR (address/prefix)"
                )));
            }
        }
    }
    for (i, n) in p.cluster_networks.iter().enumerate() {
        let prefix = n
            .cidr
            .parse::<ipnet::IpNet>()
            .map(|n| n.prefix_len())
            .unwrap_or(0);
        if n.host_prefix <= prefix || n.host_prefix > 30 {
            return Err(Failure::bad(format!(
                "cluster_networks[{i}].host_prefix {}: must be longer than the network's /{prefix} and at most 30",
                n.host_prefix
            )));
        }
    }
    for (field, vips) in [("api_vips", &p.api_vips), ("ingress_vips", &p.ingress_vips)] {
        for (i, v) in vips.iter().enumerate() {
            if v.ip.parse::<std::net::IpAddr>().is_err() {
                return Err(Failure::bad(format!(
                    "{field}[{i}].ip {:?}: not an IP address",
                    v.ip
                )));
            }
        }
        if vips.len() > 2 {
            return Err(Failure::bad(format!(
                "{field}: at most one address per IP family"
            )));
        }
    }
    if let (Some(a), Some(i)) = (p.api_vips.first(), p.ingress_vips.first())
        && a.ip == i.ip
    {
        return Err(Failure::bad(format!(
            "api_vips and ingress_vips: the same address {} (they must differ)",
            a.ip
        )));
    }
    if !matches!(p.network_type.as_str(), "OVNKubernetes" | "OpenShiftSDN") {
        return Err(Failure::bad(format!(
            "network_type {:?}: must be OVNKubernetes or OpenShiftSDN",
            p.network_type
        )));
    }
    if p.cpu_architecture != "x86_64" {
        return Err(Failure::bad(format!(
            "cpu_architecture {:?}: only x86_64 is supported",
            p.cpu_architecture
        )));
    }
    if !p.base_dns_domain.is_empty()
        && !p
            .base_dns_domain
            .split('.')
            .all(|l| !l.is_empty() && validate::hostname_ok(l))
    {
        return Err(Failure::bad(format!(
            "base_dns_domain {:?}: not a DNS domain",
            p.base_dns_domain
        )));
    }
    Ok(())
}

pub(super) async fn cluster_or_404(s: &Shared, id: &str) -> Res<ClusterRow> {
    s.db.cluster(id)
        .await?
        .ok_or_else(|| Failure::not_found(format!("cluster {id} not found")))
}

/// The cluster document as served: hosts and machine networks included.
pub async fn cluster_document(s: &Shared, c: &ClusterRow) -> Res<rest::Cluster> {
    let hosts = s.db.hosts_of_cluster(&c.id).await?;
    let invs: Vec<Inventory> = hosts
        .iter()
        .filter_map(|h| serde_json::from_str(&h.inventory).ok())
        .collect();
    let refs: Vec<&Inventory> = invs.iter().collect();
    let nets = validate::machine_networks(&model::cluster_params(c), &refs);
    Ok(model::cluster_doc(c, &hosts, nets))
}

/// The machine networks of a cluster in force (for the monitor and the
/// documents).
pub fn networks_of(c: &ClusterRow, invs: &[&Inventory]) -> Vec<Cidr> {
    validate::machine_networks(&model::cluster_params(c), invs)
}

pub(super) async fn register_cluster(State(s): State<Shared>, b: Bytes) -> Res<Response> {
    let p: ClusterCreateParams = body("cluster-create-params", &b)?;
    check_name("name", &p.name)?;
    if p.openshift_version.is_empty() {
        return Err(Failure::bad("openshift_version: required (e.g. \"4.19\")"));
    }
    check_pull_secret("pull_secret", &p.pull_secret)?;
    let mut params = model::defaults(&p.openshift_version, None);
    params.base_dns_domain = p.base_dns_domain.unwrap_or_default();
    if let Some(n) = p.control_plane_count {
        params.control_plane_count = n;
    }
    if let Some(v) = p.cluster_networks {
        params.cluster_networks = v;
    }
    if let Some(v) = p.service_networks {
        params.service_networks = v;
    }
    params.machine_networks = p.machine_networks.unwrap_or_default();
    params.api_vips = p.api_vips.unwrap_or_default();
    params.ingress_vips = p.ingress_vips.unwrap_or_default();
    if let Some(v) = p.network_type {
        params.network_type = v;
    }
    params.ssh_public_key = p.ssh_public_key.unwrap_or_default();
    params.additional_ntp_source = p.additional_ntp_source.unwrap_or_default();
    if let Some(v) = p.cpu_architecture {
        params.cpu_architecture = v;
    }
    check_params(&params)?;
    let now = now_ms();
    let row = ClusterRow {
        id: uuid::Uuid::new_v4().to_string(),
        name: p.name.clone(),
        status: "insufficient".into(),
        status_info: "Cluster is not ready for install".into(),
        status_updated_at: now,
        params: serde_json::to_string(&params).unwrap_or_default(),
        pull_secret: p.pull_secret,
        validations_info: String::new(),
        install_started_at: 0,
        created_at: now,
        updated_at: now,
    };
    s.db.insert_cluster(&row).await?;
    events::cluster(
        &s.db,
        &row.id,
        "info",
        "cluster_registration_succeeded",
        format!("Successfully registered cluster {}", row.name),
    )
    .await;
    s.monitor.notify_one();
    Ok(json(
        StatusCode::CREATED,
        &cluster_document(&s, &row).await?,
    ))
}

pub(super) async fn list_clusters(State(s): State<Shared>) -> Res<Response> {
    let mut out = Vec::new();
    for c in s.db.clusters().await? {
        out.push(cluster_document(&s, &c).await?);
    }
    Ok(json(StatusCode::OK, &out))
}

pub(super) async fn get_cluster(State(s): State<Shared>, Path(id): Path<String>) -> Res<Response> {
    let c = cluster_or_404(&s, &id).await?;
    Ok(json(StatusCode::OK, &cluster_document(&s, &c).await?))
}

/// Statuses in which a cluster's settings may change
/// (`VerifyClusterUpdatability`).
pub const UPDATABLE: &[&str] = &["insufficient", "ready", "pending-for-input", "adding-hosts"];

pub(super) async fn update_cluster(
    State(s): State<Shared>,
    Path(id): Path<String>,
    b: Bytes,
) -> Res<Response> {
    let u: ClusterUpdateParams = body("v2-cluster-update-params", &b)?;
    let c = cluster_or_404(&s, &id).await?;
    let mut p = model::cluster_params(&c);
    let mut name = c.name.clone();
    let mut ps = c.pull_secret.clone();
    if let Some(v) = u.name {
        check_name("name", &v)?;
        name = v;
    }
    if let Some(v) = u.pull_secret {
        check_pull_secret("pull_secret", &v)?;
        ps = v;
    }
    macro_rules! set {
        ($f:ident) => {
            if let Some(v) = u.$f {
                p.$f = v;
            }
        };
    }
    set!(base_dns_domain);
    set!(cluster_networks);
    set!(service_networks);
    set!(machine_networks);
    set!(api_vips);
    set!(ingress_vips);
    set!(network_type);
    set!(ssh_public_key);
    set!(additional_ntp_source);
    check_params(&p)?;
    let params = serde_json::to_string(&p).unwrap_or_default();
    if !s
        .db
        .update_cluster_params(&id, &name, &params, &ps, UPDATABLE)
        .await?
    {
        return Err(Failure::conflict(format!(
            "cluster {id} cannot be updated in status {} (only in {})",
            c.status,
            UPDATABLE.join(", ")
        )));
    }
    events::cluster(
        &s.db,
        &id,
        "info",
        "cluster_updated",
        "Cluster was updated".to_string(),
    )
    .await;
    s.cluster_args.forget(&id);
    s.monitor.notify_one();
    let c = cluster_or_404(&s, &id).await?;
    Ok(json(StatusCode::CREATED, &cluster_document(&s, &c).await?))
}

pub(super) async fn delete_cluster(
    State(s): State<Shared>,
    Path(id): Path<String>,
) -> Res<Response> {
    if !s.db.delete_cluster(&id).await? {
        return Err(Failure::not_found(format!("cluster {id} not found")));
    }
    s.cluster_args.forget(&id);
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// `GET /v2/clusters/{cluster_id}/free_addresses?network=<cidr>[&prefix=][&limit=]`
/// (swagger `V2GetFreeAddresses`): the addresses of `network` that every
/// host of the cluster which scanned it found free
/// ([`crate::free_addresses::free_addresses`]), a JSON list of strings.
/// `limit`: 1 to 8000 (default 8000). 400 for a malformed network or
/// limit, 404 for an unknown cluster or a network no host scanned.
pub(super) async fn free_addresses(
    State(s): State<Shared>,
    Path(id): Path<String>,
    axum::extract::Query(q): axum::extract::Query<std::collections::HashMap<String, String>>,
) -> Res<Response> {
    use crate::free_addresses::{self as fa, FreeAddressesError};
    let network = q
        .get("network")
        .ok_or_else(|| Failure::bad("network: required (an IPv4 network in CIDR form)"))?;
    let limit = match q.get("limit") {
        None => fa::MAX_LIMIT,
        Some(l) => l
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=fa::MAX_LIMIT).contains(n))
            .ok_or_else(|| {
                Failure::bad(format!(
                    "limit {l:?}: must be a whole number from 1 to 8000"
                ))
            })?,
    };
    let prefix = q.get("prefix").map(String::as_str).unwrap_or("");
    cluster_or_404(&s, &id).await?;
    let reports = s.db.free_addresses_of_cluster(&id).await?;
    match fa::free_addresses(reports.iter().map(String::as_str), network, prefix, limit) {
        Ok(list) => Ok(json(StatusCode::OK, &list)),
        Err(e @ FreeAddressesError::BadNetwork(_)) => Err(Failure::bad(e.to_string())),
        Err(e @ FreeAddressesError::NotScanned(_)) => Err(Failure::not_found(e.to_string())),
    }
}
