//! The pointer Ignition configs `master.ign` and `worker.ign`
//! (openshift/installer `pkg/asset/ignition/machine/`): each merges its pool's config from the
//! machine-config server and trusts the root CA; and [`IgnitionAsset`], the
//! state shape every Ignition asset shares.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use okd_types::ignition::{Config, Resource};

use crate::ctx::GenCtx;
use crate::dir::{AssetDir, AssetFile};
use crate::error::AssetError;
use crate::installconfig::{InstallConfigAsset, ReleaseImage};
use crate::store::{Asset, Dep, Parents, dep};
use crate::tls::{RootCa, api_vips};

/// An Ignition config asset: `{"Config": {ignition JSON}, "File": {...}}`.
/// `Debug` shows neither the config nor the file's contents: a bootstrap
/// config holds the pull secret and private keys.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
pub struct IgnitionAsset {
    /// The config as a JSON object.
    #[serde(rename = "Config")]
    pub config: Value,
    /// The compact JSON file.
    #[serde(rename = "File")]
    pub file: AssetFile,
}

impl std::fmt::Debug for IgnitionAsset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IgnitionAsset")
            .field("config", &okd_secret::REDACTED)
            .field("file", &self.file)
            .finish()
    }
}

impl IgnitionAsset {
    pub(crate) fn new(path: &str, cfg: &Config) -> Result<Self, AssetError> {
        cfg.check_spec()
            .map_err(|e| AssetError::decode(path, "not valid for its Ignition spec", e))?;
        let text = cfg.to_json();
        let config: Value = serde_json::from_str(&text)
            .map_err(|e| AssetError::decode(path, "not an Ignition config", e))?;
        Ok(IgnitionAsset {
            config,
            file: AssetFile::new(path, text),
        })
    }

    /// Reads `path` of `dir`, its embedded files over 1 MiB held as
    /// placeholders in the cache of `ctx` ([`crate::blobs::read_config`]).
    pub(crate) fn load(
        dir: &AssetDir,
        path: &str,
        ctx: &GenCtx,
    ) -> Result<Option<Self>, AssetError> {
        let Some(data) = crate::blobs::read_config(&dir.path(path), ctx.cache_dir.as_deref())?
        else {
            return Ok(None);
        };
        let config: Value = serde_json::from_slice(&data)
            .map_err(|e| AssetError::decode(path, "not an Ignition config", e))?;
        Ok(Some(IgnitionAsset {
            config,
            file: AssetFile::new(path, data),
        }))
    }
}

/// The machine-config-server URL a pool's pointer config merges:
/// `https://api-int.<cluster domain>:22623/config/<role>`, or the first API VIP
/// on baremetal (bracketed if IPv6) (openshift/installer
/// `pkg/asset/ignition/machine/node.go`).
pub fn pointer_url(ic: &okd_installconfig::InstallConfig, role: &str) -> String {
    let host = match api_vips(ic).first() {
        Some(v) if v.contains(':') => format!("[{v}]"),
        Some(v) => v.clone(),
        None => format!("api-int.{}", ic.cluster_domain()),
    };
    format!("https://{host}:22623/config/{role}")
}

/// A pointer config: merge from the machine-config server, trust root-ca.
pub fn pointer_config(ctx: &GenCtx, url: String, root_ca_pem: &str) -> Config {
    let mut c = Config::new(ctx.ignition_spec);
    c.ignition.config.merge.push(Resource {
        source: Some(url),
        ..Default::default()
    });
    c.ignition
        .security
        .tls
        .certificate_authorities
        .push(Resource {
            source: Some(okd_types::dataurl::encode(root_ca_pem.as_bytes())),
            ..Default::default()
        });
    c
}

macro_rules! pointer_asset {
    ($(#[$m:meta])* $ty:ident, $key:literal, $name:literal, $file:literal, $role:literal) => {
        $(#[$m])*
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $ty(pub IgnitionAsset);

        impl std::ops::Deref for $ty {
            type Target = IgnitionAsset;
            fn deref(&self) -> &IgnitionAsset {
                &self.0
            }
        }

        impl Asset for $ty {
            const NAME: &'static str = $name;
            const STATE_KEY: &'static str = $key;
            const WRITABLE: bool = true;
            fn dependencies() -> Vec<Dep> {
                vec![dep::<InstallConfigAsset>(), dep::<RootCa>(), dep::<ReleaseImage>()]
            }
            fn generate(ctx: &GenCtx, p: &Parents<'_>) -> Result<Self, AssetError> {
                let ic = &p.get::<InstallConfigAsset>().config;
                let cfg = pointer_config(ctx, pointer_url(ic, $role), p.get::<RootCa>().0.cert_pem());
                Ok($ty(IgnitionAsset::new($file, &cfg)?))
            }
            fn files(&self) -> Vec<AssetFile> {
                vec![self.0.file.clone()]
            }
            fn load(dir: &AssetDir, ctx: &GenCtx) -> Result<Option<Self>, AssetError> {
                Ok(IgnitionAsset::load(dir, $file, ctx)?.map($ty))
            }
        }
    };
}

pointer_asset!(
    /// `master.ign`: pointer config for the control plane pool.
    MasterIgnition, "*machine.Master", "Master Ignition Config", "master.ign", "master");
pointer_asset!(
    /// `worker.ign`: pointer config for the compute pool.
    WorkerIgnition, "*machine.Worker", "Worker Ignition Config", "worker.ign", "worker");
