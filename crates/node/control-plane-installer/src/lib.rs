//! `okd-install node control-plane`: a master's share of the production
//! control plane when the release payload has no operators (a payload of
//! upstream components). The bootstrap hands each master a [`Bundle`] in
//! the Secret `kube-system/okd-control-plane-<node>`
//! ([`okd_types::control_plane`]); this program, run on the master by the
//! unit its machine config carries, reads that Secret with the kubelet's
//! client certificate (`/var/lib/kubelet/kubeconfig`, identity
//! `system:node:<node>`, which a Role lets read that one Secret) and
//! writes the files into `/etc/kubernetes` as the operators' installer
//! pods do on OpenShift (openshift/library-go
//! `pkg/operator/staticpod/installerpod`): certificates and keys first,
//! then the static pods, each file atomically with its mode.
//!
//! Revision 1 is the etcd member, revision 2 adds kube-apiserver,
//! kube-controller-manager and kube-scheduler. The applied revision is
//! recorded in [`REVISION_FILE`], so a restarted program writes nothing
//! twice; it ends once the last revision is applied.

use std::path::{Path, PathBuf};
use std::time::Duration;

use k8s_openapi::api::core::v1::Secret;
use kube::api::Api;
use okd_types::control_plane::{Bundle, NAMESPACE, secret_name};
use tracing::info;

/// The record of the applied revision, under `/etc/kubernetes`.
pub const REVISION_FILE: &str = "static-pod-resources/okd-control-plane.revision";

/// The last revision: the etcd member and the control plane.
pub const LAST_REVISION: u32 = 2;

/// What the program reads and where it writes.
#[derive(Debug, Clone)]
pub struct Options {
    /// The kubelet's kubeconfig (`/var/lib/kubelet/kubeconfig`).
    pub kubeconfig: PathBuf,
    /// This node's name (the kubelet's; default the host name).
    pub node: String,
    /// Where the bundle's absolute paths land: `/` on a master (a test
    /// gives a directory).
    pub root: PathBuf,
    /// How often the Secret is read while waiting.
    pub poll: Duration,
}

/// Why the program stopped.
#[derive(Debug, thiserror::Error)]
pub enum InstallerError {
    /// The kubeconfig cannot be used.
    #[error("{path}: {message}")]
    Kubeconfig {
        /// The kubeconfig.
        path: PathBuf,
        /// Why.
        message: String,
    },
    /// The bootstrap's bundle breaks a rule (a path, a mode, the node).
    #[error("Secret {NAMESPACE}/{secret}: {message}")]
    Bundle {
        /// The Secret's name.
        secret: String,
        /// The rule.
        message: String,
    },
    /// A file could not be written.
    #[error(transparent)]
    Fs(#[from] okd_fs::FsError),
}

/// The applied revision recorded under `root` (0: none).
pub fn applied(root: &Path) -> u32 {
    std::fs::read_to_string(root.join("etc/kubernetes").join(REVISION_FILE))
        .ok()
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or(0)
}

/// Writes `bundle`'s files under `root` in order (parents 0755, each file
/// atomically with its mode), then records its revision; the temporary
/// files a killed run left in those directories are removed first. A revision at
/// or below the recorded one is left alone. Returns whether it wrote.
///
/// # Errors
/// [`InstallerError::Bundle`] when the bundle is for another node or
/// breaks [`Bundle::check`]'s rules (nothing is written then);
/// [`InstallerError::Fs`] when a file cannot be written.
pub fn apply(root: &Path, node: &str, bundle: &Bundle) -> Result<bool, InstallerError> {
    let secret = secret_name(node);
    if bundle.node != node {
        return Err(InstallerError::Bundle {
            secret,
            message: format!("the bundle is for node {:?}, this is {node:?}", bundle.node),
        });
    }
    bundle.check().map_err(|message| InstallerError::Bundle {
        secret: secret.clone(),
        message,
    })?;
    if bundle.revision <= applied(root) {
        return Ok(false);
    }
    // A run killed while writing left its temporary files (okd-fs names
    // them `.okd-install-*`; the kubelet skips dot files): gone before
    // this run writes. One program per node writes here (its unit).
    let dirs: std::collections::BTreeSet<PathBuf> = bundle
        .files
        .iter()
        .filter_map(|f| {
            root.join(f.path.trim_start_matches('/'))
                .parent()
                .map(Path::to_path_buf)
        })
        .collect();
    for d in &dirs {
        for p in okd_fs::sweep_temp_files(d, &[okd_fs::TEMP_PREFIX], 0)? {
            info!("removed {}, left by a run that was stopped", p.display());
        }
    }
    for f in &bundle.files {
        let data = f.data().map_err(|message| InstallerError::Bundle {
            secret: secret.clone(),
            message,
        })?;
        let path = root.join(f.path.trim_start_matches('/'));
        if let Some(dir) = path.parent() {
            okd_fs::create_dir_all(dir, 0o755)?;
        }
        okd_fs::write_atomic(&path, &data, f.mode)?;
    }
    okd_fs::write_atomic(
        &root.join("etc/kubernetes").join(REVISION_FILE),
        format!("{}\n", bundle.revision).as_bytes(),
        0o644,
    )?;
    info!(
        "applied revision {} of this master's control plane ({} files)",
        bundle.revision,
        bundle.files.len()
    );
    Ok(true)
}

async fn client(path: &Path) -> Result<kube::Client, InstallerError> {
    let err = |message: String| InstallerError::Kubeconfig {
        path: path.to_path_buf(),
        message,
    };
    let kc = kube::config::Kubeconfig::read_from(path).map_err(|e| err(e.to_string()))?;
    let cfg = kube::Config::from_custom_kubeconfig(kc, &Default::default())
        .await
        .map_err(|e| err(e.to_string()))?;
    kube::Client::try_from(cfg).map_err(|e| err(e.to_string()))
}

/// Reads the node's Secret: `Ok(None)` while it is not there or not
/// readable yet (404, or 403 before the bootstrap grants the Role).
async fn fetch(client: &kube::Client, node: &str) -> Result<Option<Bundle>, String> {
    let name = secret_name(node);
    let api: Api<Secret> = Api::namespaced(client.clone(), NAMESPACE);
    match api.get(&name).await {
        Ok(s) => {
            let data = s
                .data
                .map(|d| d.into_iter().map(|(k, v)| (k, v.0)).collect());
            Bundle::from_secret_data(&name, data.as_ref()).map(Some)
        }
        Err(kube::Error::Api(e)) if e.code == 404 || e.code == 403 => Ok(None),
        Err(e) => Err(format!("reading Secret {NAMESPACE}/{name}: {e}")),
    }
}

/// Runs until [`LAST_REVISION`] is applied: reads the Secret every
/// `opts.poll`, applies each new revision, logs what it waits for when
/// that changes.
///
/// # Errors
/// The kubeconfig cannot be used, a bundle breaks the rules, or a file
/// cannot be written. Unreachable APIs are waited out.
pub async fn run(opts: &Options) -> Result<(), InstallerError> {
    let mut last = String::new();
    let mut say = |s: String| {
        if s != last {
            info!("{s}");
            last = s;
        }
    };
    loop {
        if applied(&opts.root) >= LAST_REVISION {
            info!("this master's control plane is in place (revision {LAST_REVISION})");
            return Ok(());
        }
        // The kubelet rewrites its kubeconfig's certificate on rotation:
        // read it on each pass.
        match client(&opts.kubeconfig).await {
            Err(e) => say(format!("waiting for the kubelet's kubeconfig: {e}")),
            Ok(c) => match fetch(&c, &opts.node).await {
                Ok(Some(b)) => {
                    apply(&opts.root, &opts.node, &b)?;
                }
                Ok(None) => say(format!(
                    "waiting for the bootstrap to hand over this master's etcd member (Secret {NAMESPACE}/{})",
                    secret_name(&opts.node)
                )),
                Err(e) => say(format!("waiting for the API: {e}")),
            },
        }
        tokio::time::sleep(opts.poll).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use okd_types::control_plane::BundleFile;

    fn bundle(rev: u32, files: Vec<BundleFile>) -> Bundle {
        Bundle {
            revision: rev,
            node: "master-0".into(),
            files,
        }
    }

    #[test]
    fn revisions_apply_in_order_with_modes_and_never_twice() {
        use std::os::unix::fs::PermissionsExt as _;
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        let key = BundleFile::new(
            "/etc/kubernetes/static-pod-resources/etcd-member/etcd-peer.key",
            0o600,
            b"k1",
        );
        let pod = BundleFile::new(
            "/etc/kubernetes/manifests/etcd-member-pod.yaml",
            0o644,
            b"pod",
        );
        assert!(apply(root, "master-0", &bundle(1, vec![key.clone(), pod.clone()])).unwrap());
        assert_eq!(applied(root), 1);
        let kp = root.join("etc/kubernetes/static-pod-resources/etcd-member/etcd-peer.key");
        assert_eq!(std::fs::read(&kp).unwrap(), b"k1");
        assert_eq!(
            std::fs::metadata(&kp).unwrap().permissions().mode() & 0o777,
            0o600
        );
        // The same revision again (a restarted program) writes nothing.
        let changed = BundleFile::new(key.path.clone(), 0o600, b"k2");
        assert!(!apply(root, "master-0", &bundle(1, vec![changed.clone()])).unwrap());
        assert_eq!(std::fs::read(&kp).unwrap(), b"k1");
        let api = BundleFile::new(
            "/etc/kubernetes/manifests/kube-apiserver-pod.yaml",
            0o644,
            b"api",
        );
        assert!(apply(root, "master-0", &bundle(2, vec![key, pod, api])).unwrap());
        assert_eq!(applied(root), 2);
        assert!(
            root.join("etc/kubernetes/manifests/kube-apiserver-pod.yaml")
                .exists()
        );
    }

    #[test]
    fn a_bundle_for_another_node_or_outside_etc_kubernetes_writes_nothing() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        let mut b = bundle(1, vec![BundleFile::new("/etc/kubernetes/x", 0o644, b"x")]);
        b.node = "master-1".into();
        let e = apply(root, "master-0", &b).unwrap_err().to_string();
        assert!(
            e.contains("okd-control-plane-master-0") && e.contains("master-1"),
            "{e}"
        );
        let b = bundle(
            1,
            vec![
                BundleFile::new("/etc/kubernetes/ok", 0o644, b"x"),
                BundleFile::new("/etc/cron.d/evil", 0o644, b"x"),
            ],
        );
        let e = apply(root, "master-0", &b).unwrap_err().to_string();
        assert!(e.contains("/etc/cron.d/evil"), "{e}");
        assert!(!root.join("etc/kubernetes/ok").exists());
        assert_eq!(applied(root), 0);
    }
}
