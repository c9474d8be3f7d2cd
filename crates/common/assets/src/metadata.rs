//! `metadata.json` (openshift/installer `pkg/asset/cluster/metadata.go`,
//! `pkg/types/clustermetadata.go`): cluster name, ID, infraID and the
//! platform key, compact Go JSON in struct order.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::ctx::GenCtx;
use crate::dir::{AssetDir, AssetFile};
use crate::error::AssetError;
use crate::installconfig::{ClusterId, InstallConfigAsset, ReleaseImage};
use crate::store::{Asset, Dep, Parents, dep};

/// The file name.
pub const METADATA_FILE: &str = "metadata.json";

#[derive(Serialize)]
struct MetadataJson<'a> {
    #[serde(rename = "clusterName")]
    cluster_name: &'a str,
    #[serde(rename = "clusterID")]
    cluster_id: &'a str,
    #[serde(rename = "infraID")]
    infra_id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    aws: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    baremetal: Option<Value>,
    #[serde(rename = "featureSet", skip_serializing_if = "Option::is_none")]
    feature_set: Option<&'a str>,
    #[serde(rename = "customFeatureSet", skip_serializing_if = "Option::is_none")]
    custom_feature_set: Option<Value>,
}

/// `{"File": {...}}` holding metadata.json (`*cluster.Metadata`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterMetadata {
    /// The metadata.json file.
    #[serde(rename = "File")]
    pub file: AssetFile,
}

impl Asset for ClusterMetadata {
    const NAME: &'static str = "Metadata";
    const STATE_KEY: &'static str = "*cluster.Metadata";
    const WRITABLE: bool = true;

    fn dependencies() -> Vec<Dep> {
        vec![
            dep::<ClusterId>(),
            dep::<InstallConfigAsset>(),
            dep::<ReleaseImage>(),
        ]
    }

    fn generate(ctx: &GenCtx, p: &Parents<'_>) -> Result<Self, AssetError> {
        let ic = &p.get::<InstallConfigAsset>().config;
        let id = p.get::<ClusterId>();
        let aws = ic.platform.aws.as_ref().map(|a| {
            json!({"region": a.region, "identifier": [{format!("kubernetes.io/cluster/{}", id.infra_id): "owned"}, {"openshiftClusterID": id.uuid}],
                "clusterDomain": ic.cluster_domain()})
        });
        let baremetal = ic.platform.baremetal.as_ref().map(|_| json!({"libvirtURI": "qemu:///system", "bootstrapProvisioningIP": "", "provisioningHostIP": ""}));
        let fs = ic.feature_set.clone().unwrap_or_default();
        let m = MetadataJson {
            cluster_name: &ic.metadata.name,
            cluster_id: &id.uuid,
            infra_id: &id.infra_id,
            aws,
            baremetal,
            feature_set: ctx.target.metadata_has_feature_set().then_some(fs.as_str()),
            custom_feature_set: ctx.target.metadata_has_feature_set().then_some(Value::Null),
        };
        Ok(ClusterMetadata {
            file: AssetFile::new(METADATA_FILE, okd_types::gojson::to_string(&m)),
        })
    }

    fn files(&self) -> Vec<AssetFile> {
        vec![self.file.clone()]
    }

    fn load(dir: &AssetDir, _: &GenCtx) -> Result<Option<Self>, AssetError> {
        Ok(dir.read(METADATA_FILE)?.map(|d| ClusterMetadata {
            file: AssetFile::new(METADATA_FILE, d),
        }))
    }
}
