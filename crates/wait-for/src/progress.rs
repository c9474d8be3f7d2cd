//! Progress a person can follow while `wait-for` waits: per host what
//! `serve` saw (through its control socket), then from the API: etcd
//! members, CSRs pending/approved, nodes Ready, ClusterVersion and
//! ClusterOperators. On a terminal the lines are live (indicatif); else a
//! line is logged when it changes. One snapshot costs one local socket
//! request and four API lists.

use std::path::PathBuf;
use std::time::Duration;

use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, ListParams};
use okd_cluster::Cluster;
use tracing::info;

use crate::resources::{self, condition, conditions};

/// One snapshot: labelled lines, e.g. `("hosts", "master: Ignition served (master)")`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// (label, text) in display order.
    pub lines: Vec<(&'static str, String)>,
}

/// What `serve` saw per host: `name: Ignition served (pool)` or
/// `name: DNS only` / `name: nothing yet`, from its status JSON.
pub fn hosts_line(status: &serde_json::Value) -> Option<String> {
    let hosts = status["hosts"].as_array()?;
    let parts: Vec<String> = hosts
        .iter()
        .map(|h| {
            let name = h["hostname"].as_str().unwrap_or("?");
            let served = h["ignition"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|e| e["status"] == 200)
                .filter_map(|e| e["pool"].as_str())
                .next_back();
            let http = h["http"].as_array().into_iter().flatten().any(|e| {
                e["status"] == 200 && e["path"].as_str().is_some_and(|p| p.ends_with(".ign"))
            });
            match served {
                Some(pool) => format!("{name}: Ignition served ({pool})"),
                None if http => format!("{name}: Ignition file fetched"),
                None if h["dns"].as_array().is_some_and(|d| !d.is_empty()) => {
                    format!("{name}: DNS only, no Ignition yet")
                }
                None => format!("{name}: nothing seen yet"),
            }
        })
        .collect();
    Some(parts.join("; "))
}

/// Takes one snapshot.
pub async fn snapshot(cluster: &Cluster, dir: &std::path::Path) -> Snapshot {
    let mut s = Snapshot::default();
    if let Ok(text) = okd_serve::control_reply(dir, "status")
        && let Ok(v) = serde_json::from_str::<serde_json::Value>(&text)
        && let Some(line) = hosts_line(&v)
    {
        s.lines.push(("hosts", line));
    }
    let client = cluster.client();
    if let Ok(e) = resources::etcds(client.clone()).get("cluster").await {
        let c = conditions(&e);
        if let Some(m) = condition(&c, "EtcdMembersAvailable") {
            s.lines.push(("etcd", m.message.clone()));
        }
    }
    match Api::<CertificateSigningRequest>::all(client.clone())
        .list(&ListParams::default())
        .await
    {
        Ok(l) => {
            let approved = l
                .items
                .iter()
                .filter(|c| {
                    c.status
                        .as_ref()
                        .and_then(|s| s.conditions.as_ref())
                        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Approved"))
                })
                .count();
            let pending = l.items.iter().filter(|c| okd_pending(c)).count();
            s.lines
                .push(("CSRs", format!("{pending} pending, {approved} approved")));
        }
        Err(e) => {
            s.lines.push((
                "API",
                cluster
                    .api_error("/apis/certificates.k8s.io/v1/certificatesigningrequests", e)
                    .to_string(),
            ));
            return s;
        }
    }
    if let Ok(l) = Api::<Node>::all(client.clone())
        .list(&ListParams::default())
        .await
    {
        let ready: Vec<String> = l
            .items
            .iter()
            .filter(|n| {
                n.status
                    .as_ref()
                    .and_then(|s| s.conditions.as_ref())
                    .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
            })
            .filter_map(|n| n.metadata.name.clone())
            .collect();
        s.lines.push((
            "nodes",
            format!("{}/{} Ready {ready:?}", ready.len(), l.items.len()),
        ));
    }
    if let Ok(cv) = resources::cluster_versions(client.clone())
        .get("version")
        .await
    {
        let c = conditions(&cv);
        let msg = match crate::waits::cluster_version_state(&c) {
            Ok(()) => "Available".to_string(),
            Err(m) => m,
        };
        s.lines.push(("ClusterVersion", msg));
    }
    if let Ok(l) = resources::cluster_operators(client)
        .list(&ListParams::default())
        .await
    {
        let mut available = 0;
        let mut degraded = Vec::new();
        for o in &l.items {
            let c = conditions(o);
            if condition(&c, "Available").is_some_and(|c| c.status == "True") {
                available += 1;
            }
            if condition(&c, "Degraded").is_some_and(|c| c.status == "True") {
                degraded.push(o.metadata.name.clone().unwrap_or_default());
            }
        }
        let mut line = format!("{available}/{} available", l.items.len());
        if !degraded.is_empty() {
            line += &format!(", degraded: {degraded:?}");
        }
        s.lines.push(("ClusterOperators", line));
    }
    s
}

fn okd_pending(c: &CertificateSigningRequest) -> bool {
    c.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_none_or(|cs| cs.is_empty())
}

/// Starts the progress task: a snapshot every `every`, shown live on a
/// terminal, else logged as `Progress: <label>: <text>` when a line changes.
pub fn spawn(cluster: Cluster, dir: PathBuf, every: Duration) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let tty = std::io::IsTerminal::is_terminal(&std::io::stderr());
        let multi = indicatif::MultiProgress::new();
        let mut bars: Vec<(&'static str, indicatif::ProgressBar)> = Vec::new();
        let mut last = Snapshot::default();
        loop {
            let s = snapshot(&cluster, &dir).await;
            if tty {
                for (label, text) in &s.lines {
                    let bar = match bars.iter().find(|(l, _)| l == label) {
                        Some((_, b)) => b.clone(),
                        None => {
                            let b = multi.add(indicatif::ProgressBar::new_spinner());
                            b.enable_steady_tick(Duration::from_millis(200));
                            bars.push((label, b.clone()));
                            b
                        }
                    };
                    bar.set_message(format!("{label}: {text}"));
                }
            } else {
                for (label, text) in &s.lines {
                    if !last.lines.iter().any(|(l, t)| l == label && t == text) {
                        info!("Progress: {label}: {text}");
                    }
                }
            }
            last = s;
            tokio::time::sleep(every).await;
        }
    })
}

#[cfg(test)]
mod tests {
    use super::hosts_line;

    #[test]
    fn hosts_line_says_what_serve_saw() {
        let status = serde_json::json!({"hosts": [
            {"hostname": "bootstrap", "http": [{"path": "/ignition/bootstrap.ign", "status": 200}], "ignition": [], "dns": []},
            {"hostname": "master", "ignition": [{"pool": "master", "status": 200}], "dns": [{"name": "api-int"}]},
            {"hostname": "worker1", "ignition": [{"pool": "worker", "status": 500}], "dns": [{"name": "api-int"}]},
            {"hostname": "worker2", "ignition": [], "dns": []},
        ]});
        assert_eq!(
            hosts_line(&status).unwrap(),
            "bootstrap: Ignition file fetched; master: Ignition served (master); \
             worker1: DNS only, no Ignition yet; worker2: nothing seen yet"
        );
        assert_eq!(hosts_line(&serde_json::json!({})), None);
    }
}
