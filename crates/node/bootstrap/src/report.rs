//! `progress.service` on the bootstrap node (openshift/installer
//! `report-progress.sh`): waits for bootkube to finish
//! (`/opt/openshift/.bootkube.done`) and, on a highly available control
//! plane, for at least two masters running a rolled-out kube-apiserver,
//! then creates ConfigMap `kube-system/bootstrap` with `status: complete`
//! through the api-int kubeconfig: the object `wait-for
//! bootstrap-complete` waits for. Stages `wait-for-bootstrap-complete` and
//! `report-bootstrap-complete` go to `/var/log/openshift/progress.json`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::api::{Api, ListParams, PostParams};
use okd_service_record::Recorder;
use tracing::{info, warn};

use crate::release::{PayloadKind, PulledRelease};

/// The unit's name in the service records (`progress.json`).
pub const PROGRESS_SERVICE: &str = "progress";

/// How often each wait looks again (report-progress.sh: 5 s).
pub const POLL: Duration = Duration::from_secs(5);

/// The masters with a rolled-out kube-apiserver a highly available control
/// plane needs before the bootstrap reports completion.
pub const HA_APISERVERS: usize = 2;

/// Where `okd-install bootstrap report-progress` works.
#[derive(Debug, Clone)]
pub struct ReportOptions {
    /// bootkube's directories (the `.bootkube.done` marker, the records).
    pub dirs: okd_bootkube::Dirs,
    /// The api-int kubeconfig (`/opt/openshift/auth/kubeconfig`).
    pub kubeconfig: PathBuf,
}

fn record(r: Result<(), okd_fs::FsError>) {
    if let Err(e) = r {
        warn!("could not write the service record: {e}");
    }
}

/// progress.service's stage for an upstream payload: the bootstrap etcd
/// member removed once the masters keep quorum without it.
pub const REMOVE_MEMBER_STAGE: &str = "remove-bootstrap-etcd-member";

/// The kube-apiservers that count for the HA wait, from what the cluster
/// shows: with an OKD/OCP payload the kube-apiserver operator's
/// `status.nodeStatuses` with `currentRevision > 0` (report-progress.sh's
/// query); with an upstream payload the masters' `kube-system/kube-apiserver-<node>`
/// mirror pods that are Ready, one per node (the counts of
/// okd-cluster-bootstrap's HA checks).
pub fn rolled_out_apiservers(
    kind: PayloadKind,
    operator_status: Option<&serde_json::Value>,
    pods: &[Pod],
) -> usize {
    use okd_cluster_bootstrap::ha;
    match kind {
        PayloadKind::Openshift => ha::available_from_status(operator_status).0,
        PayloadKind::Upstream => ha::available_from_pods(pods, ha::COMPONENTS[0].pod).0,
    }
}

async fn client(kubeconfig: &Path) -> Result<kube::Client, String> {
    okd_cluster::Cluster::from_kubeconfig(kubeconfig)
        .await
        .map(|c| c.client())
        .map_err(|e| e.to_string())
}

/// Waits for a highly available API when the Infrastructure's
/// `status.controlPlaneTopology` is `HighlyAvailable`.
async fn wait_for_ha_api(opts: &ReportOptions, kind: PayloadKind) {
    loop {
        let topology = async {
            let c = client(&opts.kubeconfig).await?;
            let infra = okd_cluster::openshift::infrastructures(c)
                .get("cluster")
                .await
                .map_err(|e| e.to_string())?;
            Ok::<_, String>(
                infra
                    .data
                    .pointer("/status/controlPlaneTopology")
                    .and_then(|t| t.as_str())
                    .unwrap_or_default()
                    .to_string(),
            )
        };
        match topology.await {
            Ok(t) if t == "HighlyAvailable" => break,
            Ok(t) => {
                info!("control plane topology {t:?}: no wait for a highly available API");
                return;
            }
            Err(e) => {
                info!("waiting for infrastructures/cluster ({e})");
                tokio::time::sleep(POLL).await;
            }
        }
    }
    info!("Waiting for at least {HA_APISERVERS} nodes with a rolled out kube-apiserver revision");
    loop {
        let count = async {
            let c = client(&opts.kubeconfig).await?;
            Ok::<_, String>(match kind {
                PayloadKind::Openshift => {
                    let o = okd_cluster::openshift::kube_apiservers(c)
                        .get("cluster")
                        .await
                        .map_err(|e| e.to_string())?;
                    rolled_out_apiservers(kind, o.data.get("status"), &[])
                }
                PayloadKind::Upstream => {
                    let pods: Api<Pod> = Api::namespaced(c, "kube-system");
                    let list = pods
                        .list(&ListParams::default())
                        .await
                        .map_err(|e| e.to_string())?;
                    rolled_out_apiservers(kind, None, &list.items)
                }
            })
        };
        match count.await {
            Ok(n) if n >= HA_APISERVERS => {
                info!("Got at least {HA_APISERVERS} nodes with successful revision rolled out");
                return;
            }
            Ok(n) => info!("{n} of {HA_APISERVERS} kube-apiservers rolled out; waiting"),
            Err(e) => info!("waiting for the kube-apiservers' status ({e})"),
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Creates ConfigMap `kube-system/bootstrap` with `status: complete`, the
/// object `wait-for bootstrap-complete` waits for (report-progress.sh and
/// bootstrap-in-place-post-reboot.sh: `oc create configmap bootstrap -n
/// kube-system --from-literal status=complete`); one that exists already
/// counts as done.
///
/// # Errors
/// The API refused or could not be reached (the message says which).
pub async fn create_bootstrap_complete(client: kube::Client) -> Result<(), String> {
    let cms: Api<ConfigMap> = Api::namespaced(client, "kube-system");
    let cm = ConfigMap {
        metadata: kube::api::ObjectMeta {
            name: Some("bootstrap".into()),
            namespace: Some("kube-system".into()),
            ..Default::default()
        },
        data: Some([("status".to_string(), "complete".to_string())].into()),
        ..Default::default()
    };
    match cms.create(&PostParams::default(), &cm).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 409 => Ok(()),
        Err(e) => Err(format!("ConfigMap kube-system/bootstrap: {e}")),
    }
}

/// Runs `progress.service` to the end: never fails, waits as long as it
/// must (the unit runs until the bootstrap is complete).
pub async fn report_progress(opts: &ReportOptions) {
    let mut rec = Recorder::new(&opts.dirs.records, PROGRESS_SERVICE);
    record(rec.service_start());
    record(rec.stage_start("wait-for-bootstrap-complete"));
    let done = opts.dirs.work.join(okd_bootkube::BOOTKUBE_DONE);
    info!("Waiting for bootstrap to complete ({})", done.display());
    while !done.exists() {
        tokio::time::sleep(POLL).await;
    }
    let kind = PulledRelease::load(&opts.dirs.work)
        .map(|r| r.kind)
        .unwrap_or(PayloadKind::Openshift);
    wait_for_ha_api(opts, kind).await;
    record(rec.stage_success());
    record(rec.stage_start("report-bootstrap-complete"));
    info!("Reporting install progress...");
    loop {
        let attempt = async {
            let c = client(&opts.kubeconfig).await?;
            create_bootstrap_complete(c).await
        };
        match attempt.await {
            Ok(()) => break,
            Err(e) => {
                info!("creating ConfigMap kube-system/bootstrap failed ({e}); trying again");
                tokio::time::sleep(POLL).await;
            }
        }
    }
    info!("Bootstrap complete reported");
    record(rec.stage_success());
    if kind == PayloadKind::Upstream {
        // cluster-etcd-operator removes the bootstrap member once the
        // bootstrap is complete; with no operator the bootstrap does it.
        record(rec.stage_start(REMOVE_MEMBER_STAGE));
        match crate::masters::expected_masters(&opts.dirs.work) {
            Ok(masters) => {
                let c = loop {
                    match client(&opts.kubeconfig).await {
                        Ok(c) => break c,
                        Err(e) => {
                            info!("waiting for the API to record the etcd member removal ({e})");
                            tokio::time::sleep(POLL).await;
                        }
                    }
                };
                crate::bootstrap_member::remove_bootstrap_member(
                    &opts.dirs.work,
                    &masters,
                    c,
                    POLL,
                )
                .await;
                record(rec.stage_success());
            }
            Err(e) => {
                warn!("the bootstrap etcd member stays: {e}");
                record(rec.stage_failure("report-progress", &e));
            }
        }
    }
    record(rec.service_end(None));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_count_follows_the_payload() {
        // The counting itself is okd-cluster-bootstrap's (ha.rs tests).
        let status = serde_json::json!({"nodeStatuses": [
            {"nodeName": "m0", "currentRevision": 3},
            {"nodeName": "m1", "currentRevision": 0},
        ]});
        assert_eq!(
            rolled_out_apiservers(PayloadKind::Openshift, Some(&status), &[]),
            1
        );
        assert_eq!(
            rolled_out_apiservers(PayloadKind::Upstream, Some(&status), &[]),
            0
        );
    }
}
