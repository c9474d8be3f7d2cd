//! What the bootstrap node hands a master for its share of the production
//! control plane when the release payload has no operators to do it (a
//! payload of upstream components): the master's etcd member and, once
//! that member votes, its kube-apiserver, kube-controller-manager and
//! kube-scheduler, as files for the master's `/etc/kubernetes`.
//!
//! On OpenShift the operators' installer pods write these files on each
//! master (openshift/library-go `pkg/operator/staticpod/installerpod`:
//! the revision's ConfigMaps and Secrets copied under
//! `/etc/kubernetes/static-pod-resources`, then the static pod). Here the
//! bootstrap writes one Secret per master, `kube-system/okd-control-plane-<node>`,
//! readable by that node's identity (`system:node:<node>`) alone, with one
//! key, [`BUNDLE_KEY`], holding a [`Bundle`] as JSON; `okd-install node
//! control-plane` on the master reads it with the kubelet's client
//! certificate and writes the files.

use base64::Engine as _;
use serde::{Deserialize, Serialize};

/// Where a master's machine config puts the okd-install program.
pub const NODE_PROGRAM_PATH: &str = "/usr/local/bin/okd-install";

/// The namespace of the Secrets.
pub const NAMESPACE: &str = "kube-system";

/// The Secret's name prefix; the node's name follows.
pub const SECRET_PREFIX: &str = "okd-control-plane-";

/// The Secret's one data key.
pub const BUNDLE_KEY: &str = "bundle.json";

/// The Secret of node `node`.
pub fn secret_name(node: &str) -> String {
    format!("{SECRET_PREFIX}{node}")
}

/// What a master's files are at one revision.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bundle {
    /// 1: the etcd member only; 2: the etcd member and the control plane.
    /// A master applies a revision once and records it.
    pub revision: u32,
    /// The node the bundle is for (the Secret's name says it too).
    pub node: String,
    /// The files, in the order they are to be written: certificates and
    /// keys first, static pods last (the kubelet starts a pod as soon as
    /// its file appears).
    pub files: Vec<BundleFile>,
}

/// One file of a [`Bundle`].
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BundleFile {
    /// Absolute path on the master (under `/etc/kubernetes`).
    pub path: String,
    /// Unix mode (0600 for keys and kubeconfigs, 0644 else).
    pub mode: u32,
    /// The contents, standard base64.
    pub contents: String,
}

impl std::fmt::Debug for BundleFile {
    // Keys and kubeconfigs never reach a log.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BundleFile")
            .field("path", &self.path)
            .field("mode", &format_args!("{:o}", self.mode))
            .field("bytes", &self.contents.len())
            .finish()
    }
}

impl BundleFile {
    /// A file of `data`.
    pub fn new(path: impl Into<String>, mode: u32, data: &[u8]) -> BundleFile {
        BundleFile {
            path: path.into(),
            mode,
            contents: base64::engine::general_purpose::STANDARD.encode(data),
        }
    }

    /// The contents.
    ///
    /// # Errors
    /// The contents are not base64 (the message names the path).
    pub fn data(&self) -> Result<Vec<u8>, String> {
        base64::engine::general_purpose::STANDARD
            .decode(&self.contents)
            .map_err(|e| format!("{}: contents are not base64: {e}", self.path))
    }
}

impl Bundle {
    /// The bundle of Secret `name`'s data (`data`: the Secret's decoded
    /// data map, as the API client gives it).
    ///
    /// # Errors
    /// No [`BUNDLE_KEY`], or not a bundle; the message names the Secret.
    pub fn from_secret_data(
        name: &str,
        data: Option<&std::collections::BTreeMap<String, Vec<u8>>>,
    ) -> Result<Bundle, String> {
        let bytes = data
            .and_then(|d| d.get(BUNDLE_KEY))
            .ok_or_else(|| format!("Secret {NAMESPACE}/{name} has no {BUNDLE_KEY}"))?;
        serde_json::from_slice(bytes)
            .map_err(|e| format!("Secret {NAMESPACE}/{name}: {BUNDLE_KEY}: {e}"))
    }

    /// Checks what a master is about to write: absolute paths under
    /// `/etc/kubernetes/` without `..`, modes at most 0755, base64
    /// contents.
    ///
    /// # Errors
    /// The first file that breaks a rule, named with the rule.
    pub fn check(&self) -> Result<(), String> {
        for f in &self.files {
            if !f.path.starts_with("/etc/kubernetes/") || f.path.split('/').any(|c| c == "..") {
                return Err(format!(
                    "{}: a control-plane file must be under /etc/kubernetes/ without '..'",
                    f.path
                ));
            }
            if f.mode & !0o755 != 0 {
                return Err(format!("{}: mode {:o} is not allowed", f.path, f.mode));
            }
            f.data()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_round_trip_and_keys_stay_out_of_debug() {
        let f = BundleFile::new("/etc/kubernetes/x.key", 0o600, b"SECRET KEY");
        assert_eq!(f.data().unwrap(), b"SECRET KEY");
        assert!(!format!("{f:?}").contains("SECRET"));
        let b = Bundle {
            revision: 1,
            node: "m0".into(),
            files: vec![f],
        };
        let json = serde_json::to_string(&b).unwrap();
        assert_eq!(serde_json::from_str::<Bundle>(&json).unwrap(), b);
        b.check().unwrap();
    }

    #[test]
    fn paths_outside_etc_kubernetes_and_odd_modes_are_refused() {
        for (path, mode, rule) in [
            ("/etc/passwd", 0o644, "under /etc/kubernetes/"),
            ("/etc/kubernetes/../shadow", 0o644, "'..'"),
            ("etc/kubernetes/x", 0o644, "under /etc/kubernetes/"),
            ("/etc/kubernetes/x", 0o4755, "mode 4755"),
        ] {
            let b = Bundle {
                revision: 1,
                node: "m0".into(),
                files: vec![BundleFile::new(path, mode, b"x")],
            };
            let e = b.check().unwrap_err();
            assert!(e.contains(rule) && e.contains(path), "{e}");
        }
        let mut bad = BundleFile::new("/etc/kubernetes/x", 0o644, b"x");
        bad.contents = "!!".into();
        let b = Bundle {
            revision: 1,
            node: "m0".into(),
            files: vec![bad],
        };
        assert!(b.check().unwrap_err().contains("not base64"));
    }
}
