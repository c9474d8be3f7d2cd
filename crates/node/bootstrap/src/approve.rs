//! `approve-csr.service` on the bootstrap node: approves the CSRs of the
//! nodes bootstrap.ign names (`/opt/openshift/okd-node-identities.json`,
//! written from the install's inventory) with okd-approve-csr's identity
//! checks, until bootkube is done (`/opt/openshift/.bootkube.done`), as
//! openshift/installer's `approve-csr.sh` runs until then; but never every
//! pending CSR: a CSR for a name or address the inventory does not have
//! stays pending with a Warning event naming the rule.

use std::path::{Path, PathBuf};
use std::time::Duration;

use okd_approve_csr::{Approver, Identities};
use okd_types::node_identities::{NODE_IDENTITIES_FILE, NodeIdentities};
use tracing::{info, warn};

/// How often the approver looks for `.bootkube.done` and retries the API.
pub const POLL: Duration = Duration::from_secs(5);

/// What `okd-install bootstrap approve-csr` works with.
#[derive(Debug, Clone)]
pub struct ApproveOptions {
    /// The asset directory (`/opt/openshift`): the identities file and the
    /// `.bootkube.done` marker.
    pub work: PathBuf,
    /// The kubeconfig (the unit passes `auth/kubeconfig-loopback`).
    pub kubeconfig: PathBuf,
}

/// Why the approver stopped without running.
#[derive(Debug, thiserror::Error)]
pub enum ApproveError {
    /// The identities file is unreadable or malformed.
    #[error("{path}: {detail}")]
    Identities {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        detail: String,
    },
}

/// Reads `<work>/okd-node-identities.json`; `Ok(None)` when bootstrap.ign
/// carries none (no inventory when it was made).
///
/// # Errors
/// [`ApproveError::Identities`] naming the file.
pub fn read_identities(work: &Path) -> Result<Option<NodeIdentities>, ApproveError> {
    let path = work.join(NODE_IDENTITIES_FILE);
    let text = match std::fs::read(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(ApproveError::Identities {
                path,
                detail: e.to_string(),
            });
        }
    };
    serde_json::from_slice(&text)
        .map(Some)
        .map_err(|e| ApproveError::Identities {
            path,
            detail: format!("not a node identities file: {e}"),
        })
}

fn done(work: &Path) -> bool {
    work.join(okd_bootkube::BOOTKUBE_DONE).exists()
}

/// Runs the approver until `.bootkube.done` exists: waits for the API
/// (every [`POLL`], logging what it waits for), then watches CSRs and
/// decides each pending one (okd-approve-csr's watch). Without identities
/// it approves nothing, says so and returns.
///
/// # Errors
/// [`ApproveError`] when the identities file is malformed.
pub async fn approve_csr(opts: &ApproveOptions) -> Result<(), ApproveError> {
    let Some(ids) = read_identities(&opts.work)? else {
        warn!(
            "{} is missing: bootstrap.ign was made without agent-config.yaml or bastion-config.yaml, so this node knows no node to approve and approves no CSR; approve them from the workstation with `okd-install approve-csr --watch` (with the inventory, or --node-name-pattern)",
            opts.work.join(NODE_IDENTITIES_FILE).display()
        );
        return Ok(());
    };
    let names: Vec<&str> = ids
        .nodes
        .iter()
        .filter_map(|n| n.names.first().map(String::as_str))
        .collect();
    info!(
        "approving the CSRs of {} nodes ({}) after the identity checks, until {} exists",
        names.len(),
        names.join(", "),
        opts.work.join(okd_bootkube::BOOTKUBE_DONE).display()
    );
    let identities = Identities::from_node_identities(&ids);
    let cluster = loop {
        if done(&opts.work) {
            info!("bootkube is done; not approving CSRs any more");
            return Ok(());
        }
        let attempt = async {
            let c = okd_cluster::Cluster::from_kubeconfig(&opts.kubeconfig).await?;
            c.version().await?;
            Ok::<_, okd_cluster::ClusterError>(c)
        };
        match attempt.await {
            Ok(c) => break c,
            Err(e) => {
                info!("waiting for the bootstrap API ({e})");
                tokio::time::sleep(POLL).await;
            }
        }
    };
    let mut approver = Approver::new(cluster, identities);
    let work = opts.work.clone();
    let stop = async move {
        while !done(&work) {
            tokio::time::sleep(POLL).await;
        }
    };
    if let Err(e) = approver.watch(stop).await {
        warn!("the CSR watch ended: {e}");
    }
    info!("bootkube is done; not approving CSRs any more");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identities_are_read_and_a_bad_file_is_named() {
        let d = tempfile::tempdir().unwrap();
        assert!(read_identities(d.path()).unwrap().is_none());
        let p = d.path().join(NODE_IDENTITIES_FILE);
        std::fs::write(
            &p,
            r#"{"nodes":[{"names":["master","master.okd.example"],"addresses":["192.168.120.103"]}]}"#,
        )
        .unwrap();
        let ids = read_identities(d.path()).unwrap().unwrap();
        assert_eq!(ids.nodes[0].names[1], "master.okd.example");
        std::fs::write(&p, "{").unwrap();
        let e = read_identities(d.path()).unwrap_err().to_string();
        assert!(e.contains(NODE_IDENTITIES_FILE), "{e}");
    }
}
