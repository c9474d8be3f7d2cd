//! bootkube's `cvo-overrides` step (openshift/installer `bootkube.sh`:
//! `oc patch clusterversion.config.openshift.io version --type=merge
//! --patch-file=/opt/openshift/original_cvo_overrides.patch`), shared by
//! the bootkube stage and the single node's post-reboot step.

use std::path::Path;
use std::time::Duration;

use tracing::{info, warn};

/// `cvo-overrides`: restores the ClusterVersion's `spec.overrides` the
/// installer replaced (openshift/installer `cvoignore.go`): a merge patch
/// of `clusterversion/version` with `patch_file`
/// (`original_cvo_overrides.patch`) through `kubeconfig` (the api-int
/// `auth/kubeconfig`), tried every `retry` until it works, as
/// bootkube.sh's `oc patch` loop does. No patch file: nothing to do.
///
/// # Errors
/// The patch file is unreadable or not JSON.
pub async fn restore_cvo_overrides(
    patch_file: &Path,
    kubeconfig: &Path,
    retry: Duration,
) -> Result<(), String> {
    let text = match std::fs::read(patch_file) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            info!("no {}: no CVO overrides to restore", patch_file.display());
            return Ok(());
        }
        Err(e) => return Err(format!("cannot read {}: {e}", patch_file.display())),
    };
    let patch: serde_json::Value = serde_json::from_slice(&text)
        .map_err(|e| format!("{}: not JSON: {e}", patch_file.display()))?;
    loop {
        let attempt = async {
            let c = okd_cluster::Cluster::from_kubeconfig(kubeconfig)
                .await
                .map_err(|e| e.to_string())?;
            okd_cluster::openshift::cluster_versions(c.client())
                .patch(
                    "version",
                    &kube::api::PatchParams::default(),
                    &kube::api::Patch::Merge(&patch),
                )
                .await
                .map_err(|e| e.to_string())
        };
        match attempt.await {
            Ok(_) => {
                info!("restored the CVO overrides");
                return Ok(());
            }
            Err(e) => {
                warn!(
                    "Trying again to restore CVO overrides in {} s: {e}",
                    retry.as_secs()
                );
                tokio::time::sleep(retry).await;
            }
        }
    }
}
