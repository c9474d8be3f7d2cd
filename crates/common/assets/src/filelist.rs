//! What the manifest assets share: their state shape (`{"FileList": [...]}`),
//! the YAML renderer, the file extensions read back from `manifests/` and
//! `openshift/`, and which files of `openshift/` the machine assets own.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::dir::AssetFile;

/// Base name of the OpenShift Install manifest in `openshift/`.
pub const OPENSHIFT_INSTALL_MANIFEST: &str = "openshift-install-manifests.yaml";

/// Extensions of manifest files read back from `manifests/` and `openshift/`.
pub const MANIFEST_EXTS: &[&str] = &[".yaml", ".yml", ".json"];

/// Renders a JSON object as openshift-install's YAML.
pub fn yaml(v: &Value) -> Vec<u8> {
    okd_types::goyaml::to_string(v).into_bytes()
}

/// A list of files as stored for manifest assets: `{"FileList": [...]}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct FileListAsset {
    /// Files relative to the asset directory.
    #[serde(rename = "FileList")]
    pub file_list: Vec<AssetFile>,
}

/// True for the files of `openshift/` owned by the Master/Worker Machines assets
/// or the OpenShift Install manifest (`pkg/asset/machines/master.go` IsMachineManifest).
pub fn is_machine_manifest(name: &str) -> bool {
    let base = name.rsplit('/').next().unwrap_or(name);
    base.starts_with("99_openshift-cluster-api_")
        || base.starts_with("99_openshift-machineconfig_")
        || base.starts_with("99_openshift-machine-api_")
        || base == OPENSHIFT_INSTALL_MANIFEST
}

/// Splits `apiVersion` into its group (`""` for the core group).
pub fn api_group(api_version: &str) -> &str {
    api_version.rsplit_once('/').map(|(g, _)| g).unwrap_or("")
}
