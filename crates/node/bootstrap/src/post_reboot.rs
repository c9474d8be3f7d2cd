//! Single node, after the reboot (openshift/installer
//! `data/data/bootstrap/bootstrap-in-place/files/opt/openshift/bootstrap-in-place/bootstrap-in-place-post-reboot.sh`,
//! installer reference §9 step 4): the node boots from the installation
//! disk with the master config `master-ignition` built (the bootstrap's
//! etcd data and the control plane embedded), and the unit
//! [`crate::in_place::POST_REBOOT_UNIT`] runs `okd-install bootstrap
//! post-reboot` once, which finishes what the bootstrap would have:
//!
//! 1. `wait-for-api`: the API on this node answers through the loopback
//!    kubeconfig (`/opt/openshift/auth/kubeconfig-loopback`);
//! 2. `report-bootstrap-complete`: ConfigMap `kube-system/bootstrap` with
//!    `status: complete` (what `wait-for bootstrap-complete` waits for);
//! 3. `release-leases`: the Leases and ConfigMaps
//!    `openshift-cluster-version/version` and
//!    `kube-system/cluster-policy-controller-lock` the bootstrap's
//!    processes held before the reboot are deleted, so the new ones take
//!    over at once;
//! 4. `cvo-overrides`: `original_cvo_overrides.patch` applied to
//!    `clusterversion/version`;
//! 5. `approve-csrs`: this node's CSRs approved after okd-approve-csr's
//!    identity checks (the inventory in `okd-node-identities.json`) until
//!    its Node is Ready and its kubelet serving certificate is approved
//!    (or [`SERVING_GRACE`] after Ready);
//! 6. `etcd-bootstrap-member` (upstream payload only, where no
//!    cluster-etcd-operator runs): condition `EtcdBootstrapMemberRemoved=True`
//!    on `etcds.operator.openshift.io/cluster` with reason
//!    [`IN_PLACE_REASON`]: the bootstrap's member *is* this node's member,
//!    there is none to remove, and the cluster's one voter stays;
//! 7. `cleanup`: `/etc/kubernetes/bootstrap-*` and the stopped etcd pod
//!    removed, the unit disabled, `/opt/openshift` emptied but for the
//!    [`POST_REBOOT_DONE`] marker (the admin kubeconfig and the bootstrap's
//!    assets do not stay on the node's disk).
//!
//! Every step is safe to repeat: a run killed half-way starts again from
//! step 1 and ends the same. The steps go to the service record
//! `/var/log/openshift/post-reboot.json`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Node};
use kube::api::{Api, DeleteParams, ListParams};
use okd_approve_csr::{Approver, Identities};
use okd_service_record::Recorder;
use tracing::{info, warn};

use crate::release::{PayloadKind, PulledRelease};

/// The marker the post-reboot step leaves in the asset directory when it
/// is done; its unit has `ConditionPathExists=!/opt/openshift/.post-reboot.done`.
pub const POST_REBOOT_DONE: &str = ".post-reboot.done";

/// The unit's name in the service records (`post-reboot.json`).
pub const POST_REBOOT_SERVICE: &str = "post-reboot";

/// How long, once the Node is Ready, the step keeps approving while the
/// kubelet's serving certificate is still pending.
pub const SERVING_GRACE: Duration = Duration::from_secs(120);

/// The reason of `EtcdBootstrapMemberRemoved=True` on a single node: the
/// bootstrap member is the node's own, nothing was removed.
pub const IN_PLACE_REASON: &str = "BootstrapInPlace";

/// The Leases and ConfigMaps the bootstrap's processes held before the
/// reboot (bootstrap-in-place-post-reboot.sh `release_cvo_lease` and
/// `release_cpc_lease`): `(namespace, name)`.
pub const HELD_LOCKS: &[(&str, &str)] = &[
    ("openshift-cluster-version", "version"),
    ("kube-system", "cluster-policy-controller-lock"),
];

/// The directories under `/etc/kubernetes` the bootstrap left that the
/// clean-up removes (the script: `rm -rf /etc/kubernetes/bootstrap-*`; plus
/// where `stop-etcd` moved the bootstrap's etcd pod).
pub const BOOTSTRAP_LEFTOVERS: &[&str] = &[
    "bootstrap-configs",
    "bootstrap-manifests",
    "bootstrap-secrets",
    crate::in_place::STOPPED_DIR,
];

/// Where `okd-install bootstrap post-reboot` works.
#[derive(Debug, Clone)]
pub struct PostRebootOptions {
    /// The asset directory master.ign laid down (`/opt/openshift`).
    pub work: PathBuf,
    /// The kubelet's configuration root (`/etc/kubernetes`).
    pub etc_kubernetes: PathBuf,
    /// systemd's unit directory (`/etc/systemd/system`), where the unit is
    /// disabled.
    pub systemd: PathBuf,
    /// Where the service record goes (`/var/log/openshift`).
    pub records: PathBuf,
    /// The kubeconfig to this node's API (`<work>/auth/kubeconfig-loopback`).
    pub kubeconfig: PathBuf,
    /// How often each wait looks again.
    pub poll: Duration,
}

impl PostRebootOptions {
    /// The node's own paths, every wait at 5 s.
    pub fn node() -> PostRebootOptions {
        let work = PathBuf::from("/opt/openshift");
        PostRebootOptions {
            kubeconfig: work.join("auth/kubeconfig-loopback"),
            work,
            etc_kubernetes: PathBuf::from("/etc/kubernetes"),
            systemd: PathBuf::from("/etc/systemd/system"),
            records: PathBuf::from(okd_service_record::RECORDS_DIR),
            poll: Duration::from_secs(5),
        }
    }
}

/// Whether the post-reboot step has finished on this node.
pub fn is_done(work: &Path) -> bool {
    work.join(POST_REBOOT_DONE).exists()
}

fn record(r: Result<(), okd_fs::FsError>) {
    if let Err(e) = r {
        warn!("could not write the service record: {e}");
    }
}

/// Runs `attempt` every `poll` until it works, logging `what` and the
/// reason each time the reason changes.
async fn until_ok<T, F, Fut>(what: &str, poll: Duration, mut attempt: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, String>>,
{
    let mut last = String::new();
    loop {
        match attempt().await {
            Ok(v) => return v,
            Err(e) => {
                if e != last {
                    info!("waiting for {what} ({e})");
                    last = e;
                }
                tokio::time::sleep(poll).await;
            }
        }
    }
}

async fn client(kubeconfig: &Path) -> Result<kube::Client, String> {
    let c = okd_cluster::Cluster::from_kubeconfig(kubeconfig)
        .await
        .map_err(|e| e.to_string())?;
    c.version().await.map_err(|e| e.to_string())?;
    Ok(c.client())
}

/// Deletes Lease and ConfigMap `namespace/name`; absent ones (or an absent
/// namespace) count as deleted.
async fn release_lock(client: &kube::Client, namespace: &str, name: &str) -> Result<(), String> {
    let gone = |r: Result<_, kube::Error>| match r {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
        Err(e) => Err(format!("{namespace}/{name}: {e}")),
    };
    let leases: Api<Lease> = Api::namespaced(client.clone(), namespace);
    gone(
        leases
            .delete(name, &DeleteParams::default())
            .await
            .map(|_| ()),
    )?;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    gone(cms.delete(name, &DeleteParams::default()).await.map(|_| ()))
}

/// Whether Node `name` exists with condition `Ready=True`.
pub fn node_is_ready(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// Whether a kubelet serving CSR filed by `system:node:<node>` is approved
/// among `csrs` (signer `kubernetes.io/kubelet-serving`).
pub fn serving_approved(csrs: &[CertificateSigningRequest], node: &str) -> bool {
    let user = format!("system:node:{node}");
    csrs.iter().any(|c| {
        c.spec.signer_name == "kubernetes.io/kubelet-serving"
            && c.spec.username.as_deref() == Some(user.as_str())
            && c.status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|cs| cs.iter().any(|x| x.type_ == "Approved"))
    })
}

/// Resolves once Node `node` is Ready and its serving certificate is
/// approved, or [`SERVING_GRACE`] after it became Ready.
async fn node_settled(client: kube::Client, node: String, poll: Duration) {
    let nodes: Api<Node> = Api::all(client.clone());
    let csrs: Api<CertificateSigningRequest> = Api::all(client);
    let mut ready_since: Option<tokio::time::Instant> = None;
    let mut last = String::new();
    loop {
        let state = async {
            let ready = nodes
                .get_opt(&node)
                .await
                .map_err(|e| e.to_string())?
                .is_some_and(|n| node_is_ready(&n));
            let serving = ready
                && serving_approved(
                    &csrs
                        .list(&ListParams::default())
                        .await
                        .map_err(|e| e.to_string())?
                        .items,
                    &node,
                );
            Ok::<_, String>((ready, serving))
        };
        let say = match state.await {
            Ok((true, true)) => {
                info!("Node {node} is Ready and its serving certificate approved");
                return;
            }
            Ok((true, false)) => {
                let since = *ready_since.get_or_insert_with(tokio::time::Instant::now);
                if since.elapsed() >= SERVING_GRACE {
                    warn!(
                        "Node {node} is Ready; its kubelet filed no serving CSR in {} s: going on without one",
                        SERVING_GRACE.as_secs()
                    );
                    return;
                }
                format!("Node {node} is Ready; waiting for its serving CSR")
            }
            Ok((false, _)) => format!("waiting for Node {node} to be Ready"),
            Err(e) => format!("waiting for Node {node} ({e})"),
        };
        if say != last {
            info!("{say}");
            last = say;
        }
        tokio::time::sleep(poll).await;
    }
}

/// Removes what the bootstrap left (see [`BOOTSTRAP_LEFTOVERS`]), disables
/// the post-reboot unit (its `multi-user.target.wants` link), writes
/// [`POST_REBOOT_DONE`] and then removes everything else in the asset
/// directory. Repeating it changes nothing.
///
/// # Errors
/// A path cannot be removed or the marker written (the message names it).
pub fn clean_up(opts: &PostRebootOptions) -> Result<(), String> {
    let rm_dir = |p: &Path| match std::fs::remove_dir_all(p) {
        Ok(()) => {
            info!("removed {}", p.display());
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(format!("cannot remove {}: {e}", p.display())),
    };
    for d in BOOTSTRAP_LEFTOVERS {
        rm_dir(&opts.etc_kubernetes.join(d))?;
    }
    let wants = opts
        .systemd
        .join("multi-user.target.wants")
        .join(crate::in_place::POST_REBOOT_UNIT);
    match std::fs::remove_file(&wants) {
        Ok(()) => info!("disabled {}", crate::in_place::POST_REBOOT_UNIT),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(format!("cannot remove {}: {e}", wants.display())),
    }
    okd_fs::write_atomic(&opts.work.join(POST_REBOOT_DONE), b"", 0o644)
        .map_err(|e| e.to_string())?;
    let entries =
        std::fs::read_dir(&opts.work).map_err(|e| format!("{}: {e}", opts.work.display()))?;
    for e in entries {
        let e = e.map_err(|e| format!("{}: {e}", opts.work.display()))?;
        if e.file_name() == POST_REBOOT_DONE {
            continue;
        }
        let p = e.path();
        let r = if e.file_type().is_ok_and(|t| t.is_dir()) {
            std::fs::remove_dir_all(&p)
        } else {
            std::fs::remove_file(&p)
        };
        r.map_err(|err| format!("cannot remove {}: {err}", p.display()))?;
    }
    info!("emptied {} but for {POST_REBOOT_DONE}", opts.work.display());
    Ok(())
}

/// The post-reboot step (module docs), to the end. A node where it is done
/// already ([`is_done`]) returns at once.
///
/// # Errors
/// Before anything changes: the node identities do not name exactly one
/// master, or the file is malformed; at the end: the clean-up failed.
/// Waits on the API never fail, they log what they wait for.
pub async fn post_reboot(opts: &PostRebootOptions) -> Result<(), String> {
    if is_done(&opts.work) {
        info!(
            "{} exists: the post-reboot step is done on this node",
            opts.work.join(POST_REBOOT_DONE).display()
        );
        return Ok(());
    }
    let masters = crate::masters::expected_masters(&opts.work)?;
    let [master] = masters.as_slice() else {
        return Err(format!(
            "{}: a single node has exactly one master; it names {}",
            opts.work
                .join(okd_types::node_identities::NODE_IDENTITIES_FILE)
                .display(),
            masters.len()
        ));
    };
    let ids = crate::approve::read_identities(&opts.work)
        .map_err(|e| e.to_string())?
        .expect("expected_masters read it");
    let kind = PulledRelease::load(&opts.work)
        .map(|r| r.kind)
        .unwrap_or(PayloadKind::Openshift);
    let poll = opts.poll;
    let mut rec = Recorder::new(&opts.records, POST_REBOOT_SERVICE);
    record(rec.service_start());

    record(rec.stage_start("wait-for-api"));
    let kc = opts.kubeconfig.clone();
    let c = until_ok("this node's API", poll, || client(&kc)).await;
    info!("the API answers");
    record(rec.stage_success());

    record(rec.stage_start("report-bootstrap-complete"));
    until_ok("ConfigMap kube-system/bootstrap", poll, || {
        crate::report::create_bootstrap_complete(c.clone())
    })
    .await;
    info!("Bootstrap complete reported");
    record(rec.stage_success());

    record(rec.stage_start("release-leases"));
    for (ns, name) in HELD_LOCKS {
        until_ok(&format!("{ns}/{name} released"), poll, || {
            release_lock(&c, ns, name)
        })
        .await;
    }
    record(rec.stage_success());

    record(rec.stage_start("cvo-overrides"));
    crate::restore_cvo_overrides(
        &opts.work.join(crate::CVO_PATCH),
        &opts.kubeconfig,
        crate::CVO_RETRY,
    )
    .await?;
    record(rec.stage_success());

    record(rec.stage_start("approve-csrs"));
    info!(
        "approving {}'s CSRs after the identity checks until it is Ready",
        master.name
    );
    let cluster = until_ok("the API for the CSR approver", poll, || async {
        okd_cluster::Cluster::from_kubeconfig(&opts.kubeconfig)
            .await
            .map_err(|e| e.to_string())
    })
    .await;
    let mut approver = Approver::new(cluster, Identities::from_node_identities(&ids));
    if let Err(e) = approver
        .watch(node_settled(c.clone(), master.name.clone(), poll))
        .await
    {
        warn!("the CSR watch ended: {e}");
    }
    record(rec.stage_success());

    if kind == PayloadKind::Upstream {
        record(rec.stage_start("etcd-bootstrap-member"));
        let message = format!(
            "single node (bootstrap-in-place): the bootstrap's etcd member is {}'s own; there is no other member to remove",
            master.name
        );
        for (type_, reason) in [
            (crate::bootstrap_member::MEMBERS_CONDITION, "AsExpected"),
            (crate::bootstrap_member::REMOVED_CONDITION, IN_PLACE_REASON),
        ] {
            until_ok(&format!("etcds/cluster {type_}"), poll, || {
                crate::bootstrap_member::set_etcd_condition(&c, type_, true, reason, &message)
            })
            .await;
        }
        info!("etcds/cluster: EtcdBootstrapMemberRemoved=True ({IN_PLACE_REASON})");
        record(rec.stage_success());
    }

    record(rec.stage_start("cleanup"));
    if let Err(e) = clean_up(opts) {
        record(rec.stage_failure("cleanup", &e));
        record(rec.service_end(Some(("cleanup", &e))));
        return Err(e);
    }
    record(rec.stage_success());
    record(rec.service_end(None));
    info!("post-reboot done: the single node is installed");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(root: &Path) -> PostRebootOptions {
        PostRebootOptions {
            work: root.join("opt/openshift"),
            etc_kubernetes: root.join("etc/kubernetes"),
            systemd: root.join("etc/systemd/system"),
            records: root.join("var/log/openshift"),
            kubeconfig: root.join("opt/openshift/auth/kubeconfig-loopback"),
            poll: Duration::from_millis(10),
        }
    }

    #[test]
    fn clean_up_leaves_the_marker_the_control_plane_and_nothing_of_the_bootstrap() {
        let d = tempfile::tempdir().unwrap();
        let o = opts(d.path());
        for p in [
            "opt/openshift/auth/kubeconfig",
            "opt/openshift/tls/root-ca.key",
            "opt/openshift/okd-release.json",
            "etc/kubernetes/bootstrap-secrets/kubeconfig",
            "etc/kubernetes/manifests-stopped/etcd-member-pod.yaml",
            "etc/kubernetes/manifests/kube-apiserver-pod.yaml",
            "etc/kubernetes/static-pod-resources/okd-control-plane/kubeconfig",
        ] {
            let p = d.path().join(p);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, "x").unwrap();
        }
        let wants = o.systemd.join("multi-user.target.wants");
        std::fs::create_dir_all(&wants).unwrap();
        std::os::unix::fs::symlink("../bootkube.service", wants.join("bootkube.service")).unwrap();
        clean_up(&o).unwrap();
        let left: Vec<_> = std::fs::read_dir(&o.work)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, [POST_REBOOT_DONE]);
        assert!(is_done(&o.work));
        assert!(!o.etc_kubernetes.join("bootstrap-secrets").exists());
        assert!(!o.etc_kubernetes.join("manifests-stopped").exists());
        assert!(
            o.etc_kubernetes
                .join("manifests/kube-apiserver-pod.yaml")
                .exists()
        );
        assert!(
            o.etc_kubernetes
                .join("static-pod-resources/okd-control-plane/kubeconfig")
                .exists()
        );
        assert!(std::fs::symlink_metadata(wants.join("bootkube.service")).is_err());
        clean_up(&o).unwrap();
        assert!(is_done(&o.work), "a repeated clean-up changes nothing");
    }

    #[tokio::test]
    async fn a_node_done_returns_at_once_and_an_inventory_without_one_master_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let o = opts(d.path());
        std::fs::create_dir_all(&o.work).unwrap();
        let e = post_reboot(&o).await.unwrap_err();
        assert!(
            e.contains(okd_types::node_identities::NODE_IDENTITIES_FILE),
            "{e}"
        );
        std::fs::write(
            o.work
                .join(okd_types::node_identities::NODE_IDENTITIES_FILE),
            r#"{"nodes":[
                {"names":["m0"],"addresses":["10.0.0.3"],"master":true},
                {"names":["m1"],"addresses":["10.0.0.4"],"master":true}]}"#,
        )
        .unwrap();
        let e = post_reboot(&o).await.unwrap_err();
        assert!(e.contains("exactly one master; it names 2"), "{e}");
        assert!(
            !o.records.join("post-reboot.json").exists(),
            "refused before anything is recorded"
        );
        std::fs::write(o.work.join(POST_REBOOT_DONE), "").unwrap();
        post_reboot(&o).await.unwrap();
    }

    #[test]
    fn the_serving_certificate_counts_only_for_this_node_once_approved() {
        let csr = |user: &str, signer: &str, approved: bool| {
            let mut c = CertificateSigningRequest::default();
            c.spec.signer_name = signer.into();
            c.spec.username = Some(user.into());
            if approved {
                c.status = Some(
                    k8s_openapi::api::certificates::v1::CertificateSigningRequestStatus {
                        conditions: Some(vec![
                        k8s_openapi::api::certificates::v1::CertificateSigningRequestCondition {
                            type_: "Approved".into(),
                            status: "True".into(),
                            ..Default::default()
                        },
                    ]),
                        ..Default::default()
                    },
                );
            }
            c
        };
        let serving = "kubernetes.io/kubelet-serving";
        let client = "kubernetes.io/kube-apiserver-client-kubelet";
        assert!(!serving_approved(
            &[
                csr("system:node:master", serving, false),
                csr("system:node:other", serving, true),
                csr("system:node:master", client, true),
            ],
            "master"
        ));
        assert!(serving_approved(
            &[csr("system:node:master", serving, true)],
            "master"
        ));
    }
}
