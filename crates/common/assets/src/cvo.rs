//! The CVO-ignore asset (openshift/installer `pkg/asset/ignition/bootstrap/cvoignore.go`).

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::ctx::GenCtx;
use crate::dir::AssetFile;
use crate::error::AssetError;
use crate::filelist::{api_group, yaml};
use crate::machines::{MasterMachines, OpenshiftInstallManifests, WorkerMachines};
use crate::manifests::{CommonManifests, OpenshiftManifests};
use crate::store::{Asset, Dep, Parents, dep};

/// `manifests/cvo-overrides.yaml` as it goes into bootstrap.ign, and
/// `/opt/openshift/original_cvo_overrides.patch` (openshift/installer
/// `pkg/asset/ignition/bootstrap/cvoignore.go`): every
/// other manifest is listed unmanaged so the CVO leaves them to bootkube.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CvoIgnore {
    /// `manifests/cvo-overrides.yaml` (with `spec.overrides`) and `original_cvo_overrides.patch`.
    #[serde(rename = "FileList")]
    pub file_list: Vec<AssetFile>,
}

impl Asset for CvoIgnore {
    const NAME: &'static str = "CVO Ignore";
    const STATE_KEY: &'static str = "*bootstrap.CVOIgnore";

    fn dependencies() -> Vec<Dep> {
        vec![
            dep::<CommonManifests>(),
            dep::<OpenshiftManifests>(),
            dep::<OpenshiftInstallManifests>(),
            dep::<MasterMachines>(),
            dep::<WorkerMachines>(),
        ]
    }

    fn generate(_: &GenCtx, p: &Parents<'_>) -> Result<Self, AssetError> {
        let mut all: Vec<&AssetFile> = Vec::new();
        all.extend(&p.get::<CommonManifests>().0.file_list);
        all.extend(&p.get::<OpenshiftManifests>().0.file_list);
        all.extend(&p.get::<OpenshiftInstallManifests>().0.file_list);
        all.extend(&p.get::<MasterMachines>().0.file_list);
        all.extend(&p.get::<WorkerMachines>().0.file_list);
        let mut seen: std::collections::HashMap<String, String> = std::collections::HashMap::new();
        let mut overrides = Vec::new();
        let mut cvo: Option<Value> = None;
        for f in &all {
            let doc: Value = match serde_yaml_ng::from_slice(&f.data) {
                Ok(v) => v,
                Err(e) => {
                    return Err(AssetError::decode(
                        f.filename.clone(),
                        "cannot parse manifest",
                        e,
                    ));
                }
            };
            if f.filename == "manifests/cvo-overrides.yaml" {
                cvo = Some(doc);
                continue;
            }
            let s = |k: &str| doc.get(k).and_then(Value::as_str).unwrap_or("").to_string();
            let meta = |k: &str| {
                doc.get("metadata")
                    .and_then(|m| m.get(k))
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string()
            };
            let (group, kind, ns, name) = (
                api_group(&s("apiVersion")).to_string(),
                s("kind"),
                meta("namespace"),
                meta("name"),
            );
            let key = format!("{group} |! {kind} |! {ns} |! {name}");
            if let Some(prev) = seen.insert(key, f.filename.clone()) {
                return Err(AssetError::Invalid(format!(
                    "multiple manifests for group {group} kind {kind} namespace {ns} name {name}: {prev}, {}",
                    f.filename
                )));
            }
            overrides.push(json!({"group": group, "kind": kind, "name": name, "namespace": ns, "unmanaged": true}));
        }
        let mut cvo = cvo.ok_or_else(|| {
            AssetError::Invalid("manifests/cvo-overrides.yaml is missing from the manifests".into())
        })?;
        let original = cvo
            .get("spec")
            .and_then(|s| s.get("overrides"))
            .cloned()
            .unwrap_or(Value::Null);
        if let Value::Array(user) = &original {
            overrides.extend(user.iter().cloned());
        }
        cvo["spec"]["overrides"] = Value::Array(overrides);
        let patch = okd_types::gojson::to_string(&json!({"spec": {"overrides": original}}));
        Ok(CvoIgnore {
            file_list: vec![
                AssetFile::new("manifests/cvo-overrides.yaml", yaml(&cvo)),
                AssetFile::new("original_cvo_overrides.patch", patch),
            ],
        })
    }
}
