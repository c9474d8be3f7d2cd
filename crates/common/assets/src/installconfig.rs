//! The install-config asset, the cluster ID and the release image.
//!
//! `install-config.yaml` is the root of the graph (openshift/installer
//! `pkg/asset/installconfig/installconfig.go`). Loading it
//! runs okd-installconfig's pipeline (strict parse, up-conversion, defaults,
//! validation with every error collected) and re-serializes the normalized
//! config, so a file that differs only in whitespace or in defaults made
//! explicit still equals the state copy. It is consumed by `create manifests`.

use okd_installconfig::{InstallConfig, LoadOptions};
use serde::{Deserialize, Serialize};
use tracing::{info, warn};

use crate::ctx::GenCtx;
pub use crate::ctx::InstallConfigSource;
use crate::dir::{AssetDir, AssetFile};
use crate::error::AssetError;
use crate::store::{Asset, Dep, Parents, dep};

/// File name of the install-config in the asset directory.
pub const INSTALL_CONFIG_FILE: &str = "install-config.yaml";

/// `install-config.yaml`: state shape `{"config": {...}, "file": {File}}`
/// (`pkg/asset/installconfig/installconfigbase.go`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InstallConfigAsset {
    /// The normalized config (defaults explicit).
    pub config: InstallConfig,
    /// The normalized YAML as written by `create install-config`.
    pub file: AssetFile,
}

impl InstallConfigAsset {
    /// Wraps a validated config and renders its normalized YAML.
    pub fn from_config(config: InstallConfig) -> Self {
        let yaml = okd_types::goyaml::to_string(&config.to_json_value());
        InstallConfigAsset {
            config,
            file: AssetFile::new(INSTALL_CONFIG_FILE, yaml),
        }
    }

    /// The load options for the context's target release.
    pub fn options(ctx: &GenCtx) -> LoadOptions {
        LoadOptions {
            target: ctx.target,
            host_fips: ctx.host_fips,
        }
    }
}

fn log_outcome(l: &okd_installconfig::Loaded) {
    for w in &l.warnings {
        warn!("{w}");
    }
    for i in &l.infos {
        info!("{i}");
    }
}

impl Asset for InstallConfigAsset {
    const NAME: &'static str = "Install Config";
    const STATE_KEY: &'static str = "*installconfig.InstallConfig";
    const WRITABLE: bool = true;

    fn dependencies() -> Vec<Dep> {
        Vec::new()
    }

    fn generate(ctx: &GenCtx, _: &Parents<'_>) -> Result<Self, AssetError> {
        let src = ctx.install_config_source.as_ref().ok_or_else(|| {
            AssetError::Invalid(format!(
                "{INSTALL_CONFIG_FILE} not found in the asset directory: write one, or make it with `create install-config`"
            ))
        })?;
        // What the prompts or flags gave breaks a rule: an install-config
        // error (exit 3), unless the user stopped the prompt.
        let config = src().map_err(|e| match e {
            AssetError::Interrupted(_) => e,
            other => AssetError::InstallConfigInput(Box::new(other)),
        })?;
        let loaded = okd_installconfig::finish(config, &Self::options(ctx))
            .map_err(AssetError::InstallConfig)?;
        log_outcome(&loaded);
        Ok(Self::from_config(loaded.config))
    }

    fn files(&self) -> Vec<AssetFile> {
        vec![self.file.clone()]
    }

    fn load(dir: &AssetDir, ctx: &GenCtx) -> Result<Option<Self>, AssetError> {
        let Some(bytes) = dir.read(INSTALL_CONFIG_FILE)? else {
            return Ok(None);
        };
        let loaded = okd_installconfig::load(INSTALL_CONFIG_FILE, &bytes, &Self::options(ctx))
            .map_err(AssetError::InstallConfig)?;
        log_outcome(&loaded);
        Ok(Some(Self::from_config(loaded.config)))
    }

    fn same_as(&self, other: &Self) -> bool {
        self.config.to_json_value() == other.config.to_json_value()
    }

    /// The recorded config validated again for this run's target release
    /// (a release given later may refuse what the first one accepted, e.g.
    /// OpenShiftSDN from 4.15 on); its warnings were logged when it was read.
    fn recheck(&self, ctx: &GenCtx) -> Result<(), AssetError> {
        okd_installconfig::finish(self.config.clone(), &Self::options(ctx))
            .map(|_| ())
            .map_err(AssetError::InstallConfig)
    }
}

/// The cluster's identity: `{"UUID": "<uuid v4>", "InfraID": "<name>-<5 chars>"}`
/// (`pkg/asset/installconfig/clusterid.go`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterId {
    /// Random UUID v4, lowercase canonical form; `spec.clusterID` and metadata.json.
    #[serde(rename = "UUID")]
    pub uuid: String,
    /// The infrastructure name: sanitized cluster name (≤ 21 chars) + `-` + 5 random chars.
    #[serde(rename = "InfraID")]
    pub infra_id: String,
}

impl Asset for ClusterId {
    const NAME: &'static str = "Cluster ID";
    const STATE_KEY: &'static str = "*installconfig.ClusterID";

    fn dependencies() -> Vec<Dep> {
        vec![dep::<InstallConfigAsset>()]
    }

    fn generate(ctx: &GenCtx, p: &Parents<'_>) -> Result<Self, AssetError> {
        use rand::Rng as _;
        let ic = &p.get::<InstallConfigAsset>().config;
        let alphabet: Vec<char> = okd_installconfig::INFRA_ID_ALPHABET.chars().collect();
        let (suffix, uuid_bytes): (String, [u8; 16]) = ctx.with_rng(|rng| {
            let suffix = (0..5)
                .map(|_| alphabet[rng.random_range(0..alphabet.len())])
                .collect();
            (suffix, rng.random())
        });
        let (infra_id, warning) = okd_installconfig::infra_id(&ic.metadata.name, &suffix);
        if let Some(w) = warning {
            warn!("{w}");
        }
        Ok(ClusterId {
            // A version-4 UUID (RFC 9562 §5.4) from the context's generator.
            uuid: uuid::Builder::from_random_bytes(uuid_bytes)
                .into_uuid()
                .to_string(),
            infra_id,
        })
    }
}

/// The release image pull spec: `{"PullSpec": "..."}` (`pkg/asset/releaseimage`),
/// plus what okd-install generated for: the target release (`"okdRelease":
/// "4.5"`, `"okdFlavour": "okd"` or `"ocp"`) and the Ignition spec
/// (`"okdIgnitionSpec": "3.0.0"`). openshift-install ignores the extra keys;
/// state files without them (older runs) read as unknown.
///
/// The value comes from the command line (`--release-image`,
/// `--release-version`, `--ignition-spec` or the state file when none is
/// given, see [`GenCtx`]): when it differs from the state file's copy, the
/// store uses it and regenerates every asset that depends on it
/// ([`Asset::given`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReleaseImage {
    /// e.g. `quay.io/openshift/okd:4.5.0-0.okd-2020-08-12-020541`.
    #[serde(rename = "PullSpec")]
    pub pull_spec: String,
    /// The target release `4.<minor>`, e.g. `4.5`.
    #[serde(
        rename = "okdRelease",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub release: Option<String>,
    /// `okd` or `ocp`.
    #[serde(
        rename = "okdFlavour",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub flavour: Option<String>,
    /// The Ignition spec written, e.g. `3.0.0`.
    #[serde(
        rename = "okdIgnitionSpec",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub ignition_spec: Option<String>,
}

impl ReleaseImage {
    /// The release of `ctx`.
    pub fn of(ctx: &GenCtx) -> Self {
        ReleaseImage {
            pull_spec: ctx.release_image.clone(),
            release: Some(format!("{}.{}", ctx.target.major, ctx.target.minor)),
            flavour: Some(if ctx.target.okd { "okd" } else { "ocp" }.to_string()),
            ignition_spec: Some(ctx.ignition_spec.to_string()),
        }
    }

    /// The recorded target release, when the state file has one.
    pub fn target(&self) -> Option<okd_types::release::ReleaseTarget> {
        let okd = self.flavour.as_deref() == Some("okd");
        okd_types::release::ReleaseTarget::parse_version(self.release.as_deref()?, okd).ok()
    }

    /// The recorded Ignition spec, when the state file has one.
    pub fn spec(&self) -> Option<okd_types::release::IgnitionSpec> {
        self.ignition_spec.as_deref()?.parse().ok()
    }

    /// One line for logs: `<pull spec> (release 4.5, Ignition spec 3.0.0)`.
    pub fn describe(&self) -> String {
        format!(
            "{} (release {}, Ignition spec {})",
            self.pull_spec,
            self.release.as_deref().unwrap_or("unknown"),
            self.ignition_spec.as_deref().unwrap_or("unknown")
        )
    }
}

impl Asset for ReleaseImage {
    const NAME: &'static str = "Release Image Pull Spec";
    const STATE_KEY: &'static str = "*releaseimage.Image";

    fn dependencies() -> Vec<Dep> {
        Vec::new()
    }

    fn generate(ctx: &GenCtx, _: &Parents<'_>) -> Result<Self, AssetError> {
        Ok(Self::of(ctx))
    }

    fn given(ctx: &GenCtx) -> Option<Self> {
        Some(Self::of(ctx))
    }

    /// Equal pull specs, and equal release and spec where `other` (the
    /// state file's copy) records them (older state files do not).
    fn same_as(&self, other: &Self) -> bool {
        let agrees = |a: &Option<String>, b: &Option<String>| b.is_none() || a == b;
        self.pull_spec == other.pull_spec
            && agrees(&self.release, &other.release)
            && agrees(&self.flavour, &other.flavour)
            && agrees(&self.ignition_spec, &other.ignition_spec)
    }

    fn describe_change(&self, old: &Self) -> String {
        format!(
            "the release changed from {} to {}",
            old.describe(),
            self.describe()
        )
    }
}

#[cfg(test)]
mod tests {
    use okd_types::release::{DEFAULT_RELEASE_IMAGE, ReleaseTarget};
    use serde_json::json;

    use super::*;
    use crate::{AssetDir, Target, create};

    fn ctx(name: Option<&'static str>) -> GenCtx {
        let target = ReleaseTarget::default_target();
        let mut ctx = GenCtx::new(
            DEFAULT_RELEASE_IMAGE.to_string(),
            target,
            target.ignition_spec(),
        );
        ctx.install_config_source = name.map(|name| -> InstallConfigSource {
            Box::new(move || {
                Ok(serde_json::from_value(json!({
                    "apiVersion": "v1", "baseDomain": "example.com", "metadata": {"name": name},
                    "platform": {"none": {}}, "pullSecret": "{\"auths\":{\"a\":{\"auth\":\"eDp5\"}}}",
                }))
                .expect("a valid install-config"))
            })
        });
        ctx
    }

    /// The source is an input of the generation context, not process state:
    /// two runs in one process with different sources each get their own
    /// (a process-wide `OnceLock` kept the first one), and a context without
    /// one reports the missing file.
    #[test]
    fn install_config_source_comes_from_the_context() {
        for name in ["first", "second"] {
            let d = tempfile::tempdir().unwrap();
            create(
                &AssetDir::new(d.path()),
                &mut ctx(Some(name)),
                Target::InstallConfig,
                1,
            )
            .unwrap();
            let text = std::fs::read_to_string(d.path().join(INSTALL_CONFIG_FILE)).unwrap();
            assert!(text.contains(&format!("name: {name}\n")), "{text}");
        }
        let d = tempfile::tempdir().unwrap();
        let e = create(
            &AssetDir::new(d.path()),
            &mut ctx(None),
            Target::InstallConfig,
            1,
        )
        .unwrap_err();
        assert!(
            crate::chain(&e).contains("install-config.yaml not found in the asset directory"),
            "{}",
            crate::chain(&e)
        );
    }
}
