//! `wait-for install-complete` puts the ingress CA in front of every
//! cluster CA of `auth/kubeconfig`, so `oc` trusts routes' certificates too
//! (upstream `cmd/openshift-install/create.go` addRouterCAToClusterCA;
//! `pkg/asset/kubeconfig/`).

use std::path::Path;

use base64::Engine as _;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::Api;
use okd_cluster::Cluster;
use tracing::debug;

/// Reads `openshift-config-managed/default-ingress-cert` key `ca-bundle.crt`
/// and prepends it to each `clusters[].cluster.certificate-authority-data`
/// of `path` (once: a CA already in front is not added again), then writes
/// the file atomically (0600) with `apiVersion: v1` and `kind: Config`.
///
/// # Errors
/// The endpoint and cause, or the file and what is wrong with it.
pub async fn add_router_ca(cluster: &Cluster, path: &Path) -> Result<(), String> {
    let api: Api<ConfigMap> = Api::namespaced(cluster.client(), "openshift-config-managed");
    let cm = api.get("default-ingress-cert").await.map_err(|e| {
        format!(
            "fetching the router CA: {}",
            cluster.api_error(
                "/api/v1/namespaces/openshift-config-managed/configmaps/default-ingress-cert",
                e
            )
        )
    })?;
    let ca = cm
        .data
        .as_ref()
        .and_then(|d| d.get("ca-bundle.crt"))
        .ok_or("configmap openshift-config-managed/default-ingress-cert has no ca-bundle.crt")?
        .clone();
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut doc: serde_yaml_ng::Value =
        serde_yaml_ng::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut changed = false;
    if let Some(clusters) = doc.get_mut("clusters").and_then(|c| c.as_sequence_mut()) {
        for c in clusters {
            let Some(entry) = c.get_mut("cluster") else {
                continue;
            };
            let old = entry
                .get("certificate-authority-data")
                .and_then(|v| v.as_str())
                .map(|s| b64.decode(s.trim()))
                .transpose()
                .map_err(|e| format!("{}: certificate-authority-data: {e}", path.display()))?
                .unwrap_or_default();
            if old.starts_with(ca.as_bytes()) {
                continue;
            }
            let mut new = ca.clone().into_bytes();
            if !new.ends_with(b"\n") {
                new.push(b'\n');
            }
            new.extend_from_slice(&old);
            if let Some(m) = entry.as_mapping_mut() {
                m.insert(
                    "certificate-authority-data".into(),
                    serde_yaml_ng::Value::String(b64.encode(new)),
                );
                changed = true;
            }
        }
    }
    if !changed {
        debug!("{} already trusts the router CA", path.display());
        return Ok(());
    }
    if let Some(m) = doc.as_mapping_mut() {
        m.insert("apiVersion".into(), "v1".into());
        m.insert("kind".into(), "Config".into());
    }
    let out = serde_yaml_ng::to_string(&doc).map_err(|e| e.to_string())?;
    okd_fs::write_atomic(path, out.as_bytes(), 0o600)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    debug!("Added the router CA to {}", path.display());
    Ok(())
}
