//! The bootstrap's progress, published into its own temporary API for the
//! workstation and the bastion to see: ConfigMap
//! `kube-system/okd-install-bootstrap-progress` holds the service records
//! of `release-image` and `bootkube` (`/var/log/openshift/<unit>.json`,
//! the format of openshift/installer `bootstrap-service-record.sh`), kept
//! up to date while bootkube runs. serve's dashboard and `wait-for
//! bootstrap-complete` read it through the API as they read
//! `kube-system/bootstrap`. Stages before the API is up appear as soon as
//! it is. openshift-install has no such object: its stages are visible
//! only on the node (journal, service records) and in `gather bootstrap`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams};
use tracing::debug;

/// The ConfigMap's namespace and name.
pub const CONFIGMAP: (&str, &str) = okd_service_record::PROGRESS_CONFIGMAP;

/// The services whose records are published, by file name in the records
/// directory.
pub const SERVICES: [&str; 2] = ["release-image", "bootkube"];

/// At most this much of each record (its last lines) goes into the
/// ConfigMap, which the API limits to 1 MiB in all.
pub const MAX_RECORD_BYTES: usize = 256 << 10;

/// How often the records are looked at.
pub const INTERVAL: Duration = Duration::from_secs(3);

/// The ConfigMap's data: `<service>.json` → the record (its last
/// [`MAX_RECORD_BYTES`], cut at a line start).
pub fn data(records: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for s in SERVICES {
        let Ok(text) = std::fs::read_to_string(records.join(format!("{s}.json"))) else {
            continue;
        };
        let text = if text.len() > MAX_RECORD_BYTES {
            let cut = text.len() - MAX_RECORD_BYTES;
            let start = text[cut..].find('\n').map_or(text.len(), |i| cut + i + 1);
            text[start..].to_string()
        } else {
            text
        };
        out.insert(format!("{s}.json"), text);
    }
    out
}

async fn apply(kubeconfig: &Path, data: &BTreeMap<String, String>) -> Result<(), String> {
    let cluster = okd_cluster::Cluster::from_kubeconfig(kubeconfig)
        .await
        .map_err(|e| e.to_string())?;
    let api: Api<ConfigMap> = Api::namespaced(cluster.client(), CONFIGMAP.0);
    let cm = serde_json::json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": { "name": CONFIGMAP.1, "namespace": CONFIGMAP.0 },
        "data": data,
    });
    tokio::time::timeout(
        Duration::from_secs(10),
        api.patch(
            CONFIGMAP.1,
            &PatchParams::apply("okd-install-bootstrap").force(),
            &Patch::Apply(cm),
        ),
    )
    .await
    .map_err(|_| "no answer in 10 s".to_string())?
    .map_err(|e| e.to_string())?;
    Ok(())
}

/// Publishes the records of `records` through `kubeconfig` (the loopback
/// kubeconfig) every [`INTERVAL`] when they changed, until the task is
/// dropped. An API that does not answer yet is tried again at the next
/// tick (logged at debug level only: it is expected until the temporary
/// control plane runs).
pub async fn publish(records: PathBuf, kubeconfig: PathBuf) {
    let mut last: Option<BTreeMap<String, String>> = None;
    loop {
        let now = data(&records);
        if !now.is_empty() && last.as_ref() != Some(&now) {
            match apply(&kubeconfig, &now).await {
                Ok(()) => {
                    debug!(
                        "published the bootstrap's progress to {}/{}",
                        CONFIGMAP.0, CONFIGMAP.1
                    );
                    last = Some(now);
                }
                Err(e) => debug!("cannot publish the bootstrap's progress yet: {e}"),
            }
        }
        tokio::time::sleep(INTERVAL).await;
    }
}

/// One last publication (bootkube ended), bounded to 15 s.
pub async fn publish_once(records: &Path, kubeconfig: &Path) {
    let now = data(records);
    if now.is_empty() {
        return;
    }
    if let Err(e) = tokio::time::timeout(Duration::from_secs(15), apply(kubeconfig, &now))
        .await
        .unwrap_or_else(|_| Err("no answer in 15 s".into()))
    {
        debug!("cannot publish the bootstrap's progress: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_record_keeps_its_last_whole_lines() {
        let d = tempfile::tempdir().unwrap();
        let line = format!("{{\"stage\":\"{}\"}}\n", "x".repeat(100));
        let text = line.repeat(MAX_RECORD_BYTES / line.len() + 10);
        std::fs::write(d.path().join("bootkube.json"), &text).unwrap();
        let data = data(d.path());
        let kept = &data["bootkube.json"];
        assert!(kept.len() <= MAX_RECORD_BYTES);
        assert!(kept.starts_with('{') && kept.ends_with('\n'));
        assert!(!data.contains_key("release-image.json"));
    }
}
