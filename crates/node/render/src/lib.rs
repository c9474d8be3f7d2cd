//! The render stages of the bootstrap node for a payload of upstream
//! components (etcd, kube-apiserver, kube-controller-manager,
//! kube-scheduler): what `cluster-etcd-operator render`,
//! `cluster-kube-apiserver-operator render`,
//! `cluster-kube-controller-manager-operator render` and
//! `cluster-kube-scheduler-operator render` produce on an OpenShift
//! bootstrap node (openshift/installer
//! `data/data/bootstrap/files/usr/local/bin/bootkube.sh.template`, stages
//! `etcd-bootstrap` … `kube-scheduler-bootstrap`), written by okd-install
//! itself because a payload without the OpenShift operators has no image
//! to run them.
//!
//! Layout, as on an OpenShift bootstrap node:
//! - [`etcd::render`] (stage `etcd-bootstrap`): the etcd signer, the
//!   bootstrap member's serving and peer certificates and the etcd client
//!   certificate (openshift/cluster-etcd-operator `pkg/cmd/render`,
//!   `pkg/tlshelpers`), written to `<assets>/tls/etcd-*` and
//!   `/etc/kubernetes/static-pod-resources/etcd-member/`, and the static
//!   pod `/etc/kubernetes/manifests/etcd-member-pod.yaml`, which the
//!   kubelet starts at once;
//! - [`control_plane::render`] (stages `kube-apiserver-bootstrap`,
//!   `kube-controller-manager-bootstrap`, `kube-scheduler-bootstrap`): the
//!   static pods `<assets>/bootstrap-manifests/kube-*-pod.yaml`, which
//!   cluster-bootstrap copies into `/etc/kubernetes/manifests` after it
//!   copied `<assets>/tls` to `/etc/kubernetes/bootstrap-secrets` and the
//!   loopback kubeconfig to `bootstrap-secrets/kubeconfig`
//!   (openshift/cluster-bootstrap `pkg/start/start.go`). Their flags are
//!   those of the operators' bootstrap configs
//!   (openshift/cluster-kube-apiserver-operator
//!   `bindata/bootkube/config/bootstrap-config-overrides.yaml`,
//!   openshift/cluster-kube-controller-manager-operator
//!   `bindata/bootkube/config/bootstrap-config-overrides.yaml`) with the
//!   install's certificates from `bootstrap.ign`.

pub mod api;
pub mod control_plane;
pub mod etcd;

use std::net::IpAddr;
use std::path::{Path, PathBuf};

/// What the render stages read and where they write.
#[derive(Debug, Clone)]
pub struct Input {
    /// The asset directory (`/opt/openshift`): `tls/`, `auth/`,
    /// `manifests/`, `bootstrap-manifests/`.
    pub assets: PathBuf,
    /// The kubelet's configuration root (`/etc/kubernetes`).
    pub etc_kubernetes: PathBuf,
    /// The bootstrap node's address (etcd's and the API's advertise
    /// address).
    pub node_ip: IpAddr,
    /// The etcd image (pull spec, by digest from the release).
    pub etcd_image: String,
    /// The image with `/usr/bin/kube-apiserver`,
    /// `/usr/bin/kube-controller-manager` and `/usr/bin/kube-scheduler`
    /// (the release's `hyperkube`).
    pub hyperkube_image: String,
}

/// The path inside the pods where cluster-bootstrap puts the bootstrap
/// secrets (`<assets>/tls/*` and the loopback kubeconfig).
pub const BOOTSTRAP_SECRETS: &str = "/etc/kubernetes/bootstrap-secrets";

/// A render stage that failed.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    /// An input file is missing or unreadable.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// An input manifest does not say what the stage needs.
    #[error("{path}: {field}: {rule}")]
    Manifest {
        /// The file.
        path: PathBuf,
        /// The field, as a path.
        field: &'static str,
        /// What is wrong.
        rule: String,
    },
    /// A certificate or key could not be made.
    #[error("making {what}: {source}")]
    Pki {
        /// The certificate.
        what: &'static str,
        /// Why.
        source: okd_pki::PkiError,
    },
    /// An output could not be written.
    #[error(transparent)]
    Fs(#[from] okd_fs::FsError),
}

/// The cluster's networks, from `<assets>/manifests/cluster-network-02-config.yml`
/// (the `config.openshift.io/v1` Network that openshift-install writes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Networks {
    /// `spec.clusterNetwork[*].cidr`, comma-joined (the pod networks).
    pub cluster: String,
    /// `spec.serviceNetwork`, comma-joined.
    pub service: String,
}

impl Networks {
    /// Reads the Network manifest of `assets`.
    ///
    /// # Errors
    /// [`RenderError::Read`] when it is missing, [`RenderError::Manifest`]
    /// naming the field when a network is absent.
    pub fn read(assets: &Path) -> Result<Networks, RenderError> {
        let path = assets.join("manifests/cluster-network-02-config.yml");
        let text = std::fs::read_to_string(&path).map_err(|source| RenderError::Read {
            path: path.clone(),
            source,
        })?;
        let doc: serde_yaml_ng::Value =
            serde_yaml_ng::from_str(&text).map_err(|e| RenderError::Manifest {
                path: path.clone(),
                field: "(document)",
                rule: e.to_string(),
            })?;
        let list = |field: &'static str, key: Option<&str>| -> Result<String, RenderError> {
            let items: Vec<String> = doc["spec"][field]
                .as_sequence()
                .map(|s| {
                    s.iter()
                        .filter_map(|v| match key {
                            Some(k) => v[k].as_str(),
                            None => v.as_str(),
                        })
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default();
            if items.is_empty() {
                return Err(RenderError::Manifest {
                    path: path.clone(),
                    field: if key.is_some() {
                        "spec.clusterNetwork[].cidr"
                    } else {
                        "spec.serviceNetwork"
                    },
                    rule: "must list at least one network".into(),
                });
            }
            Ok(items.join(","))
        };
        Ok(Networks {
            cluster: list("clusterNetwork", Some("cidr"))?,
            service: list("serviceNetwork", None)?,
        })
    }
}

/// Writes a static pod (a `v1` Pod as YAML) atomically, 0644.
fn write_pod(path: &Path, pod: &serde_json::Value) -> Result<(), RenderError> {
    let yaml = serde_yaml_ng::to_string(pod).expect("a pod serializes");
    okd_fs::write_atomic(path, yaml.as_bytes(), 0o644)?;
    Ok(())
}

/// A `hostPath` volume and its mount at the same path.
fn host_dir(name: &str, path: &str, read_only: bool) -> (serde_json::Value, serde_json::Value) {
    (
        serde_json::json!({ "name": name, "hostPath": { "path": path } }),
        serde_json::json!({ "name": name, "mountPath": path, "readOnly": read_only }),
    )
}

#[cfg(test)]
mod tests;
