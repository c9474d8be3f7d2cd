//! Kubeconfigs (openshift/installer `pkg/asset/kubeconfig/`): clientcmd v1 without apiVersion/kind,
//! keys sorted, CA and client credentials embedded as base64 data.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::ctx::GenCtx;
use crate::dir::{AssetDir, AssetFile, base64_std};
use crate::error::AssetError;
use crate::installconfig::InstallConfigAsset;
use crate::store::{Asset, Dep, Parents, dep};
use crate::tls::{
    AdminKubeConfigClient, CertKeyAsset, KubeApiServerCompleteCaBundle,
    KubeApiServerLocalhostCaBundle, KubeletClient,
};

/// `{"Config": {clientcmd v1}, "File": {...}}`. `Debug` shows neither the
/// config nor the file's contents: they hold the client key.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
pub struct KubeconfigAsset {
    /// The kubeconfig object.
    #[serde(rename = "Config")]
    pub config: Value,
    /// The rendered YAML file.
    #[serde(rename = "File")]
    pub file: AssetFile,
}

impl std::fmt::Debug for KubeconfigAsset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubeconfigAsset")
            .field("config", &okd_secret::REDACTED)
            .field("file", &self.file)
            .finish()
    }
}

/// Builds a kubeconfig for `user` against `server` trusting `ca_pem`.
pub fn kubeconfig(
    path: &str,
    cluster: &str,
    server: &str,
    ca_pem: &str,
    user: &str,
    client: &CertKeyAsset,
) -> KubeconfigAsset {
    let config = json!({
        "clusters": [{"cluster": {"certificate-authority-data": base64_std(ca_pem.as_bytes()), "server": server}, "name": cluster}],
        "contexts": [{"context": {"cluster": cluster, "user": user}, "name": user}],
        "current-context": user,
        "preferences": {},
        "users": [{"name": user, "user": {"client-certificate-data": base64_std(&client.cert_raw), "client-key-data": base64_std(&client.key_raw)}}],
    });
    let file = AssetFile::new(path, okd_types::goyaml::to_string(&config));
    KubeconfigAsset { config, file }
}

macro_rules! kubeconfig_asset {
    ($(#[$m:meta])* $ty:ident, $key:literal, $name:literal, path: $path:literal, writable: $w:expr, host: $host:expr, ca: $ca:ty, client: $client:ty, user: $user:literal) => {
        $(#[$m])*
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $ty(pub KubeconfigAsset);

        impl Asset for $ty {
            const NAME: &'static str = $name;
            const STATE_KEY: &'static str = $key;
            const WRITABLE: bool = $w;
            fn dependencies() -> Vec<Dep> {
                vec![dep::<$client>(), dep::<$ca>(), dep::<InstallConfigAsset>()]
            }
            fn generate(_: &GenCtx, p: &Parents<'_>) -> Result<Self, AssetError> {
                let ic = &p.get::<InstallConfigAsset>().config;
                let host: fn(&str) -> String = $host;
                Ok($ty(kubeconfig($path, &ic.metadata.name, &host(&ic.cluster_domain()), p.get::<$ca>().0.pem(), $user, &p.get::<$client>().0)))
            }
            fn files(&self) -> Vec<AssetFile> {
                if $w { vec![self.0.file.clone()] } else { Vec::new() }
            }
            fn load(dir: &AssetDir, _: &GenCtx) -> Result<Option<Self>, AssetError> {
                if !$w {
                    return Ok(None);
                }
                let Some(data) = dir.read($path)? else { return Ok(None) };
                let config: Value = serde_yaml_ng::from_slice(&data)
                    .map_err(|e| AssetError::decode($path, "not a kubeconfig", e))?;
                Ok(Some($ty(KubeconfigAsset { config, file: AssetFile::new($path, data) })))
            }
        }
    };
}

kubeconfig_asset!(
    /// `auth/kubeconfig`: system:admin against `https://api.<cluster domain>:6443`.
    AdminClient, "*kubeconfig.AdminClient", "Kubeconfig Admin Client", path: "auth/kubeconfig", writable: true,
    host: |d| format!("https://api.{d}:6443"), ca: KubeApiServerCompleteCaBundle, client: AdminKubeConfigClient, user: "admin");
kubeconfig_asset!(
    /// `/opt/openshift/auth/kubeconfig` on the bootstrap node: admin against api-int.
    AdminInternalClient, "*kubeconfig.AdminInternalClient", "Kubeconfig Admin Internal Client", path: "auth/kubeconfig", writable: false,
    host: |d| format!("https://api-int.{d}:6443"), ca: KubeApiServerCompleteCaBundle, client: AdminKubeConfigClient, user: "admin");
kubeconfig_asset!(
    /// `/opt/openshift/auth/kubeconfig-kubelet`: the node-bootstrapper identity against api-int.
    Kubelet, "*kubeconfig.Kubelet", "Kubeconfig Kubelet", path: "auth/kubeconfig-kubelet", writable: false,
    host: |d| format!("https://api-int.{d}:6443"), ca: KubeApiServerCompleteCaBundle, client: KubeletClient, user: "kubelet");
kubeconfig_asset!(
    /// `/opt/openshift/auth/kubeconfig-loopback`: admin against `https://localhost:6443`.
    LoopbackClient, "*kubeconfig.LoopbackClient", "Kubeconfig Admin Client (Loopback)", path: "auth/kubeconfig-loopback", writable: false,
    host: |_| "https://localhost:6443".to_string(), ca: KubeApiServerLocalhostCaBundle, client: AdminKubeConfigClient, user: "loopback");
