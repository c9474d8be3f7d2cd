//! TLS assets: every signer, certificate, CA bundle and key pair of
//! openshift/installer `pkg/asset/tls/`, one asset type each, keyed in the
//! state file by openshift-install's Go type names (`*tls.RootCA`, …).
//!
//! Profiles (subjects, SANs, usages, validity) follow `pkg/asset/tls/*.go` as
//! measured from openshift-install 4.13 runs; bundles follow
//! `pkg/asset/tls/cabundle.go`,
//! including the complete-client-bundle quirk (only the first certificate of
//! each input bundle). Keys come from the context's key pool so generation runs
//! in parallel with the rest of the graph.

use std::net::IpAddr;
use std::time::Duration;

use okd_pki::{CertConfig, CertKey, Certificate, ExtKeyUsage, KeyUsage, NameAttr, RsaKey};
use serde::{Deserialize, Serialize};

use crate::ctx::GenCtx;
use crate::dir::{AssetFile, b64};
use crate::error::AssetError;
use crate::installconfig::InstallConfigAsset;
use crate::store::{Asset, Dep, Parents, dep};

/// One day, the validity of bootstrap-only signers and serving certificates.
pub const ONE_DAY: Duration = Duration::from_secs(24 * 3600);
/// One year (365 days).
pub const ONE_YEAR: Duration = Duration::from_secs(365 * 24 * 3600);
/// Ten years (3650 days, no leap days), the validity of long-lived signers.
pub const TEN_YEARS: Duration = Duration::from_secs(3650 * 24 * 3600);

/// A certificate and its private key as stored in the state file:
/// `{"CertRaw": b64(PEM), "KeyRaw": b64(PEM), "FileList": [...]}` (`pkg/asset/tls/certkey.go`).
/// `Debug` shows the certificate, not the key.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CertKeyAsset {
    /// Certificate PEM; for "append parent" server certs the leaf, a blank line, then the signer.
    #[serde(rename = "CertRaw", with = "b64")]
    pub cert_raw: Vec<u8>,
    /// Private key PEM (`RSA PRIVATE KEY`, PKCS#1).
    #[serde(rename = "KeyRaw", with = "b64")]
    pub key_raw: Vec<u8>,
    /// `tls/<base>.key` then `tls/<base>.crt`.
    #[serde(rename = "FileList")]
    pub file_list: Vec<AssetFile>,
}

impl std::fmt::Debug for CertKeyAsset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CertKeyAsset")
            .field("cert_raw", &self.cert_pem())
            .field("key_raw", &okd_secret::REDACTED)
            .field("file_list", &self.file_list)
            .finish()
    }
}

impl CertKeyAsset {
    fn new(base: &str, ck: &CertKey, parent: Option<&Certificate>) -> Self {
        let cert = match parent {
            Some(p) => okd_pki::pem_with_parent(&ck.cert, p),
            None => ck.cert.pem.clone(),
        };
        let key = ck.key.private_pem();
        CertKeyAsset {
            file_list: vec![
                AssetFile::new(format!("tls/{base}.key"), key.clone()),
                AssetFile::new(format!("tls/{base}.crt"), cert.clone()),
            ],
            cert_raw: cert.into_bytes(),
            key_raw: key.into_bytes(),
        }
    }

    /// The certificate PEM (with its parent for chained server certs).
    pub fn cert_pem(&self) -> &str {
        std::str::from_utf8(&self.cert_raw).unwrap_or_default()
    }

    /// The private key PEM.
    pub fn key_pem(&self) -> &str {
        std::str::from_utf8(&self.key_raw).unwrap_or_default()
    }

    /// Rebuilds the signing material (certificate + key) of a CA, e.g. one read
    /// back from the state file.
    pub fn to_pki(&self, what: &str) -> Result<CertKey, AssetError> {
        let err = |source| AssetError::Pki {
            what: what.to_string(),
            source,
        };
        let pem = okd_pki::first_cert_of_bundle(self.cert_pem()).unwrap_or_default();
        let info = okd_pki::parse_certs(&pem).map_err(err)?;
        let info = info
            .first()
            .ok_or_else(|| AssetError::Invalid(format!("{what}: no certificate in state")))?;
        let der = pem_to_der(&pem)
            .ok_or_else(|| AssetError::Invalid(format!("{what}: certificate PEM is not base64")))?;
        let key = RsaKey::from_pem(self.key_pem()).map_err(err)?;
        Ok(CertKey {
            cert: Certificate {
                der,
                pem,
                not_before: info.not_before,
                not_after: info.not_after,
            },
            key,
        })
    }
}

fn pem_to_der(pem: &str) -> Option<Vec<u8>> {
    use base64::Engine as _;
    let body: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
    base64::engine::general_purpose::STANDARD
        .decode(body.trim())
        .ok()
}

/// A bundle of CA certificates: `{"BundleRaw": b64(PEM...), "FileList": [...]}` (`cabundle.go`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CertBundleAsset {
    /// Concatenated PEM certificates, no separator.
    #[serde(rename = "BundleRaw", with = "b64")]
    pub bundle_raw: Vec<u8>,
    /// `tls/<base>.crt`.
    #[serde(rename = "FileList")]
    pub file_list: Vec<AssetFile>,
}

impl CertBundleAsset {
    fn new(base: &str, pems: &[&str]) -> Self {
        let raw: String = pems.concat();
        CertBundleAsset {
            file_list: vec![AssetFile::new(format!("tls/{base}.crt"), raw.clone())],
            bundle_raw: raw.into_bytes(),
        }
    }

    /// The bundle PEM.
    pub fn pem(&self) -> &str {
        std::str::from_utf8(&self.bundle_raw).unwrap_or_default()
    }
}

/// Anything holding a CA certificate usable in a bundle.
pub trait CaCert {
    /// The PEM contributed to a bundle: the CA's own certificate.
    fn ca_pem(&self) -> &str;
}

impl CaCert for CertKeyAsset {
    fn ca_pem(&self) -> &str {
        self.cert_pem()
    }
}

impl CaCert for CertBundleAsset {
    fn ca_pem(&self) -> &str {
        self.pem()
    }
}

fn ca_config(cn: &str, ou: &str, validity: Duration) -> CertConfig {
    CertConfig::signer(ou, cn, validity)
}

fn leaf_config(
    cn: &str,
    orgs: &[&str],
    key_usage: KeyUsage,
    eku: &[ExtKeyUsage],
    validity: Duration,
    sans: (Vec<String>, Vec<IpAddr>),
) -> CertConfig {
    let mut subject: Vec<(NameAttr, String)> = orgs
        .iter()
        .map(|o| (NameAttr::Organization, o.to_string()))
        .collect();
    subject.push((NameAttr::CommonName, cn.to_string()));
    CertConfig {
        subject,
        dns_names: sans.0,
        ip_addresses: sans.1,
        key_usage,
        ext_key_usage: eku.to_vec(),
        validity,
        is_ca: false,
    }
}

/// Leaf key usage: digital signature and key encipherment.
const DS_KE: KeyUsage = KeyUsage {
    digital_signature: true,
    key_encipherment: true,
    cert_sign: false,
};
/// No KeyUsage extension at all (the machine-config-server certificate).
const NO_KU: KeyUsage = KeyUsage {
    digital_signature: false,
    key_encipherment: false,
    cert_sign: false,
};

fn no_sans(_: &Parents<'_>) -> (Vec<String>, Vec<IpAddr>) {
    (Vec::new(), Vec::new())
}

macro_rules! self_signed_ca {
    ($(#[$m:meta])* $ty:ident, $key:literal, $name:literal, $base:literal, $cn:literal, $ou:literal, $validity:expr) => {
        $(#[$m])*
        #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $ty(pub CertKeyAsset);

        impl Asset for $ty {
            const NAME: &'static str = $name;
            const STATE_KEY: &'static str = $key;
            const KEYS: usize = 1;
            fn dependencies() -> Vec<Dep> {
                Vec::new()
            }
            fn generate(ctx: &GenCtx, _: &Parents<'_>) -> Result<Self, AssetError> {
                let key = ctx.take_key($base)?;
                let ck = okd_pki::self_signed_with_serial(&ca_config($cn, $ou, $validity), key, ctx.now, ctx.serial())
                    .map_err(|source| AssetError::Pki { what: $base.to_string(), source })?;
                Ok($ty(CertKeyAsset::new($base, &ck, None)))
            }
        }
    };
}

macro_rules! signed_cert {
    ($(#[$m:meta])* $ty:ident, $key:literal, $name:literal, $base:literal, ca: $ca:ty, deps: [$($d:ty),*],
     cn: $cn:literal, o: [$($o:literal),*], ku: $ku:expr, eku: [$($eku:expr),*], validity: $validity:expr,
     append_parent: $append:expr, sans: $sans:expr) => {
        $(#[$m])*
        #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $ty(pub CertKeyAsset);

        impl Asset for $ty {
            const NAME: &'static str = $name;
            const STATE_KEY: &'static str = $key;
            const KEYS: usize = 1;
            fn dependencies() -> Vec<Dep> {
                vec![dep::<$ca>() $(, dep::<$d>())*]
            }
            fn generate(ctx: &GenCtx, parents: &Parents<'_>) -> Result<Self, AssetError> {
                let ca = parents.get::<$ca>().0.to_pki($base)?;
                let sans_fn: fn(&Parents<'_>) -> (Vec<String>, Vec<IpAddr>) = $sans;
                let cfg = leaf_config($cn, &[$($o),*], $ku, &[$($eku),*], $validity, sans_fn(parents));
                let key = ctx.take_key($base)?;
                let ck = okd_pki::signed_with_serial(&cfg, key, &ca, ctx.now, ctx.serial())
                    .map_err(|source| AssetError::Pki { what: $base.to_string(), source })?;
                let parent = if $append { Some(&ca.cert) } else { None };
                Ok($ty(CertKeyAsset::new($base, &ck, parent)))
            }
        }
    };
}

macro_rules! ca_bundle {
    ($(#[$m:meta])* $ty:ident, $key:literal, $name:literal, $base:literal, first_only: $first:expr, [$($src:ty),+]) => {
        $(#[$m])*
        #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $ty(pub CertBundleAsset);

        impl Asset for $ty {
            const NAME: &'static str = $name;
            const STATE_KEY: &'static str = $key;
            fn dependencies() -> Vec<Dep> {
                vec![$(dep::<$src>()),+]
            }
            fn generate(_: &GenCtx, parents: &Parents<'_>) -> Result<Self, AssetError> {
                let pems: Vec<String> = vec![$(parents.get::<$src>().0.ca_pem().to_string()),+];
                let pems: Vec<String> = if $first {
                    pems.iter().map(|p| okd_pki::first_cert_of_bundle(p).unwrap_or_default()).collect()
                } else {
                    pems
                };
                let refs: Vec<&str> = pems.iter().map(String::as_str).collect();
                Ok($ty(CertBundleAsset::new($base, &refs)))
            }
        }
    };
}

self_signed_ca!(
    /// `tls/root-ca`: CN=root-ca, OU=openshift, 10 years; signs the machine-config-server and journal-gatewayd certificates and is the CA of the pointer configs.
    RootCa, "*tls.RootCA", "Root CA", "root-ca", "root-ca", "openshift", TEN_YEARS);
self_signed_ca!(
    /// `tls/admin-kubeconfig-signer`, 10 years.
    AdminKubeConfigSigner, "*tls.AdminKubeConfigSignerCertKey", "Certificate (admin-kubeconfig-signer)", "admin-kubeconfig-signer", "admin-kubeconfig-signer", "openshift", TEN_YEARS);
signed_cert!(
    /// `tls/admin-kubeconfig-client`: CN=system:admin, O=system:masters, server+client auth, 10 years.
    AdminKubeConfigClient, "*tls.AdminKubeConfigClientCertKey", "Certificate (admin-kubeconfig-client)", "admin-kubeconfig-client",
    ca: AdminKubeConfigSigner, deps: [], cn: "system:admin", o: ["system:masters"], ku: DS_KE,
    eku: [ExtKeyUsage::ServerAuth, ExtKeyUsage::ClientAuth], validity: TEN_YEARS, append_parent: false, sans: no_sans);
ca_bundle!(
    /// `tls/admin-kubeconfig-ca-bundle.crt` = [admin-kubeconfig-signer].
    AdminKubeConfigCaBundle, "*tls.AdminKubeConfigCABundle", "Certificate (admin-kubeconfig-ca-bundle)", "admin-kubeconfig-ca-bundle", first_only: false, [AdminKubeConfigSigner]);

self_signed_ca!(
    /// `tls/aggregator-ca`: CN=aggregator, OU=bootkube, 1 day.
    AggregatorCa, "*tls.AggregatorCA", "Certificate (aggregator)", "aggregator-ca", "aggregator", "bootkube", ONE_DAY);
signed_cert!(
    /// `tls/apiserver-proxy`: CN=system:kube-apiserver-proxy, O=kube-master, client auth, 1 day, signed by aggregator-ca.
    ApiServerProxy, "*tls.APIServerProxyCertKey", "Certificate (system:kube-apiserver-proxy)", "apiserver-proxy",
    ca: AggregatorCa, deps: [], cn: "system:kube-apiserver-proxy", o: ["kube-master"], ku: DS_KE,
    eku: [ExtKeyUsage::ClientAuth], validity: ONE_DAY, append_parent: false, sans: no_sans);
self_signed_ca!(
    /// `tls/aggregator-signer`, 1 day.
    AggregatorSigner, "*tls.AggregatorSignerCertKey", "Certificate (aggregator-signer)", "aggregator-signer", "aggregator-signer", "openshift", ONE_DAY);
signed_cert!(
    /// `tls/aggregator-client`: CN=system:kube-apiserver-proxy, O=kube-master, client auth, 1 day.
    AggregatorClient, "*tls.AggregatorClientCertKey", "Certificate (system:kube-apiserver-proxy)", "aggregator-client",
    ca: AggregatorSigner, deps: [], cn: "system:kube-apiserver-proxy", o: ["kube-master"], ku: DS_KE,
    eku: [ExtKeyUsage::ClientAuth], validity: ONE_DAY, append_parent: false, sans: no_sans);
ca_bundle!(
    /// `tls/aggregator-ca-bundle.crt` = [aggregator-signer].
    AggregatorCaBundle, "*tls.AggregatorCABundle", "Certificate (aggregator-ca-bundle)", "aggregator-ca-bundle", first_only: false, [AggregatorSigner]);

self_signed_ca!(
    /// `tls/kube-apiserver-to-kubelet-signer`, 1 year.
    KubeApiServerToKubeletSigner, "*tls.KubeAPIServerToKubeletSignerCertKey", "Certificate (kube-apiserver-to-kubelet-signer)", "kube-apiserver-to-kubelet-signer", "kube-apiserver-to-kubelet-signer", "openshift", ONE_YEAR);
signed_cert!(
    /// `tls/kube-apiserver-to-kubelet-client`: CN=system:kube-apiserver, O=kube-master, client auth, 1 year.
    KubeApiServerToKubeletClient, "*tls.KubeAPIServerToKubeletClientCertKey", "Certificate (kube-apiserver-to-kubelet-client)", "kube-apiserver-to-kubelet-client",
    ca: KubeApiServerToKubeletSigner, deps: [], cn: "system:kube-apiserver", o: ["kube-master"], ku: DS_KE,
    eku: [ExtKeyUsage::ClientAuth], validity: ONE_YEAR, append_parent: false, sans: no_sans);
ca_bundle!(
    /// `tls/kube-apiserver-to-kubelet-ca-bundle.crt`.
    KubeApiServerToKubeletCaBundle, "*tls.KubeAPIServerToKubeletCABundle", "Certificate (kube-apiserver-to-kubelet-ca-bundle)", "kube-apiserver-to-kubelet-ca-bundle", first_only: false, [KubeApiServerToKubeletSigner]);

self_signed_ca!(
    /// `tls/kube-apiserver-localhost-signer`, 10 years.
    KubeApiServerLocalhostSigner, "*tls.KubeAPIServerLocalhostSignerCertKey", "Certificate (kube-apiserver-localhost-signer)", "kube-apiserver-localhost-signer", "kube-apiserver-localhost-signer", "openshift", TEN_YEARS);
signed_cert!(
    /// `tls/kube-apiserver-localhost-server`: localhost, 127.0.0.1, ::1; server auth; 1 day; chained with its signer.
    KubeApiServerLocalhostServer, "*tls.KubeAPIServerLocalhostServerCertKey", "Certificate (kube-apiserver-localhost-server)", "kube-apiserver-localhost-server",
    ca: KubeApiServerLocalhostSigner, deps: [], cn: "system:kube-apiserver", o: ["kube-master"], ku: DS_KE,
    eku: [ExtKeyUsage::ServerAuth], validity: ONE_DAY, append_parent: true,
    sans: |_| (vec!["localhost".to_string()], vec![IpAddr::from([127, 0, 0, 1]), IpAddr::from(std::net::Ipv6Addr::LOCALHOST)]));
ca_bundle!(
    /// `tls/kube-apiserver-localhost-ca-bundle.crt`.
    KubeApiServerLocalhostCaBundle, "*tls.KubeAPIServerLocalhostCABundle", "Certificate (kube-apiserver-localhost-ca-bundle)", "kube-apiserver-localhost-ca-bundle", first_only: false, [KubeApiServerLocalhostSigner]);

self_signed_ca!(
    /// `tls/kube-apiserver-service-network-signer`, 10 years.
    KubeApiServerServiceNetworkSigner, "*tls.KubeAPIServerServiceNetworkSignerCertKey", "Certificate (kube-apiserver-service-network-signer)", "kube-apiserver-service-network-signer", "kube-apiserver-service-network-signer", "openshift", TEN_YEARS);
signed_cert!(
    /// `tls/kube-apiserver-service-network-server`: the kubernetes/openshift service names and the first host of serviceNetwork[0]; 1 day; chained.
    KubeApiServerServiceNetworkServer, "*tls.KubeAPIServerServiceNetworkServerCertKey", "Certificate (kube-apiserver-service-network-server)", "kube-apiserver-service-network-server",
    ca: KubeApiServerServiceNetworkSigner, deps: [InstallConfigAsset], cn: "system:kube-apiserver", o: ["kube-master"], ku: DS_KE,
    eku: [ExtKeyUsage::ServerAuth], validity: ONE_DAY, append_parent: true, sans: service_network_sans);
ca_bundle!(
    /// `tls/kube-apiserver-service-network-ca-bundle.crt`.
    KubeApiServerServiceNetworkCaBundle, "*tls.KubeAPIServerServiceNetworkCABundle", "Certificate (kube-apiserver-service-network-ca-bundle)", "kube-apiserver-service-network-ca-bundle", first_only: false, [KubeApiServerServiceNetworkSigner]);

self_signed_ca!(
    /// `tls/kube-apiserver-lb-signer`, 10 years.
    KubeApiServerLbSigner, "*tls.KubeAPIServerLBSignerCertKey", "Certificate (kube-apiserver-lb-signer)", "kube-apiserver-lb-signer", "kube-apiserver-lb-signer", "openshift", TEN_YEARS);
signed_cert!(
    /// `tls/kube-apiserver-lb-server`: DNS `api.<cluster domain>` only; 1 day; chained.
    KubeApiServerExternalLbServer, "*tls.KubeAPIServerExternalLBServerCertKey", "Certificate (kube-apiserver-external-lb-server)", "kube-apiserver-lb-server",
    ca: KubeApiServerLbSigner, deps: [InstallConfigAsset], cn: "system:kube-apiserver", o: ["kube-master"], ku: DS_KE,
    eku: [ExtKeyUsage::ServerAuth], validity: ONE_DAY, append_parent: true,
    sans: |p| (vec![format!("api.{}", p.get::<InstallConfigAsset>().config.cluster_domain())], Vec::new()));
signed_cert!(
    /// `tls/kube-apiserver-internal-lb-server`: DNS `api-int.<cluster domain>` only; 1 day; chained.
    KubeApiServerInternalLbServer, "*tls.KubeAPIServerInternalLBServerCertKey", "Certificate (kube-apiserver-internal-lb-server)", "kube-apiserver-internal-lb-server",
    ca: KubeApiServerLbSigner, deps: [InstallConfigAsset], cn: "system:kube-apiserver", o: ["kube-master"], ku: DS_KE,
    eku: [ExtKeyUsage::ServerAuth], validity: ONE_DAY, append_parent: true,
    sans: |p| (vec![format!("api-int.{}", p.get::<InstallConfigAsset>().config.cluster_domain())], Vec::new()));
ca_bundle!(
    /// `tls/kube-apiserver-lb-ca-bundle.crt`.
    KubeApiServerLbCaBundle, "*tls.KubeAPIServerLBCABundle", "Certificate (kube-apiserver-lb-ca-bundle)", "kube-apiserver-lb-ca-bundle", first_only: false, [KubeApiServerLbSigner]);
ca_bundle!(
    /// `tls/kube-apiserver-complete-server-ca-bundle.crt` = [localhost, service-network, lb] signers.
    KubeApiServerCompleteCaBundle, "*tls.KubeAPIServerCompleteCABundle", "Certificate (kube-apiserver-complete-server-ca-bundle)", "kube-apiserver-complete-server-ca-bundle", first_only: false,
    [KubeApiServerLocalhostCaBundle, KubeApiServerServiceNetworkCaBundle, KubeApiServerLbCaBundle]);

self_signed_ca!(
    /// `tls/kube-control-plane-signer`, 1 year.
    KubeControlPlaneSigner, "*tls.KubeControlPlaneSignerCertKey", "Certificate (kube-control-plane-signer)", "kube-control-plane-signer", "kube-control-plane-signer", "openshift", ONE_YEAR);
signed_cert!(
    /// `tls/kube-control-plane-kube-controller-manager-client`: CN=system:admin, O=system:masters, client auth, 1 year.
    KubeControlPlaneKubeControllerManagerClient, "*tls.KubeControlPlaneKubeControllerManagerClientCertKey", "Certificate (kube-control-plane-kube-controller-manager-client)", "kube-control-plane-kube-controller-manager-client",
    ca: KubeControlPlaneSigner, deps: [], cn: "system:admin", o: ["system:masters"], ku: DS_KE,
    eku: [ExtKeyUsage::ClientAuth], validity: ONE_YEAR, append_parent: false, sans: no_sans);
signed_cert!(
    /// `tls/kube-control-plane-kube-scheduler-client`: CN=system:admin, O=system:masters, client auth, 1 year.
    KubeControlPlaneKubeSchedulerClient, "*tls.KubeControlPlaneKubeSchedulerClientCertKey", "Certificate (kube-control-plane-kube-scheduler-client)", "kube-control-plane-kube-scheduler-client",
    ca: KubeControlPlaneSigner, deps: [], cn: "system:admin", o: ["system:masters"], ku: DS_KE,
    eku: [ExtKeyUsage::ClientAuth], validity: ONE_YEAR, append_parent: false, sans: no_sans);
ca_bundle!(
    /// `tls/kube-control-plane-ca-bundle.crt` = [kube-control-plane, lb, localhost, service-network] signers.
    KubeControlPlaneCaBundle, "*tls.KubeControlPlaneCABundle", "Certificate (kube-control-plane-ca-bundle)", "kube-control-plane-ca-bundle", first_only: false,
    [KubeControlPlaneSigner, KubeApiServerLbSigner, KubeApiServerLocalhostSigner, KubeApiServerServiceNetworkSigner]);

self_signed_ca!(
    /// `tls/kubelet-signer`: the kubelet CSR signer, 1 day.
    KubeletCsrSigner, "*tls.KubeletCSRSignerCertKey", "Certificate (kubelet-signer)", "kubelet-signer", "kubelet-signer", "openshift", ONE_DAY);
ca_bundle!(
    /// `tls/kubelet-client-ca-bundle.crt` = [kubelet-signer].
    KubeletClientCaBundle, "*tls.KubeletClientCABundle", "Certificate (kubelet-client-ca-bundle)", "kubelet-client-ca-bundle", first_only: false, [KubeletCsrSigner]);
ca_bundle!(
    /// `tls/kubelet-serving-ca-bundle.crt` = [kubelet-signer].
    KubeletServingCaBundle, "*tls.KubeletServingCABundle", "Certificate (kubelet-serving-ca-bundle)", "kubelet-serving-ca-bundle", first_only: false, [KubeletCsrSigner]);
self_signed_ca!(
    /// `tls/kubelet-bootstrap-kubeconfig-signer`, 10 years (its key never leaves the state file).
    KubeletBootstrapCertSigner, "*tls.KubeletBootstrapCertSigner", "Certificate (kubelet-bootstrap-kubeconfig-signer)", "kubelet-bootstrap-kubeconfig-signer", "kubelet-bootstrap-kubeconfig-signer", "openshift", TEN_YEARS);
ca_bundle!(
    /// `tls/kubelet-bootstrap-kubeconfig-ca-bundle.crt`.
    KubeletBootstrapCaBundle, "*tls.KubeletBootstrapCABundle", "Certificate (kubelet-bootstrap-kubeconfig-ca-bundle)", "kubelet-bootstrap-kubeconfig-ca-bundle", first_only: false, [KubeletBootstrapCertSigner]);
signed_cert!(
    /// `tls/kubelet-client`: the node-bootstrapper service account identity, client auth, 10 years.
    KubeletClient, "*tls.KubeletClientCertKey", "Certificate (kubelet-client)", "kubelet-client",
    ca: KubeletBootstrapCertSigner, deps: [], cn: "system:serviceaccount:openshift-machine-config-operator:node-bootstrapper",
    o: ["system:serviceaccounts:openshift-machine-config-operator"], ku: DS_KE,
    eku: [ExtKeyUsage::ClientAuth], validity: TEN_YEARS, append_parent: false, sans: no_sans);
ca_bundle!(
    /// `tls/kube-apiserver-complete-client-ca-bundle.crt`: the first certificate of each of the
    /// admin-kubeconfig, kubelet-client, kube-control-plane, to-kubelet and kubelet-bootstrap
    /// bundles (an openshift/installer `pkg/asset/tls` quirk, reproduced).
    KubeApiServerCompleteClientCaBundle, "*tls.KubeAPIServerCompleteClientCABundle", "Certificate (kube-apiserver-complete-client-ca-bundle)", "kube-apiserver-complete-client-ca-bundle", first_only: true,
    [AdminKubeConfigCaBundle, KubeletClientCaBundle, KubeControlPlaneCaBundle, KubeApiServerToKubeletCaBundle, KubeletBootstrapCaBundle]);

signed_cert!(
    /// `tls/machine-config-server`: CN=system:machine-config-server, DNS api-int (plus API VIPs as
    /// IP and DNS SANs on baremetal), server auth, no KeyUsage extension, 10 years, signed by root-ca.
    McsCertKey, "*tls.MCSCertKey", "Certificate (mcs)", "machine-config-server",
    ca: RootCa, deps: [InstallConfigAsset], cn: "system:machine-config-server", o: [], ku: NO_KU,
    eku: [ExtKeyUsage::ServerAuth], validity: TEN_YEARS, append_parent: false, sans: mcs_sans);
signed_cert!(
    /// `tls/journal-gatewayd`: CN=journal-gatewayd, O=OpenShift Bootstrap, server+client auth, 10 years.
    JournalCertKey, "*tls.JournalCertKey", "Certificate (journal-gatewayd)", "journal-gatewayd",
    ca: RootCa, deps: [], cn: "journal-gatewayd", o: ["OpenShift Bootstrap"], ku: DS_KE,
    eku: [ExtKeyUsage::ServerAuth, ExtKeyUsage::ClientAuth], validity: TEN_YEARS, append_parent: false, sans: no_sans);

fn service_network_sans(p: &Parents<'_>) -> (Vec<String>, Vec<IpAddr>) {
    let names = [
        "kubernetes",
        "kubernetes.default",
        "kubernetes.default.svc",
        "kubernetes.default.svc.cluster.local",
        "openshift",
        "openshift.default",
        "openshift.default.svc",
        "openshift.default.svc.cluster.local",
    ];
    let ips = p
        .get::<InstallConfigAsset>()
        .config
        .service_networks()
        .first()
        .map(first_host)
        .into_iter()
        .collect();
    (names.iter().map(|s| s.to_string()).collect(), ips)
}

/// The first host address of a network: the network address plus one (172.30.0.0/16 → 172.30.0.1).
pub fn first_host(net: &ipnet::IpNet) -> IpAddr {
    match net.network() {
        IpAddr::V4(a) => IpAddr::V4(std::net::Ipv4Addr::from(u32::from(a).wrapping_add(1))),
        IpAddr::V6(a) => IpAddr::V6(std::net::Ipv6Addr::from(u128::from(a).wrapping_add(1))),
    }
}

fn mcs_sans(p: &Parents<'_>) -> (Vec<String>, Vec<IpAddr>) {
    let ic = &p.get::<InstallConfigAsset>().config;
    let mut dns = vec![format!("api-int.{}", ic.cluster_domain())];
    let mut ips = Vec::new();
    for vip in api_vips(ic) {
        if let Ok(ip) = vip.parse::<IpAddr>() {
            ips.push(ip);
            dns.push(vip);
        }
    }
    (dns, ips)
}

/// The API VIPs of platforms that have them (baremetal); empty for none and aws.
pub fn api_vips(ic: &okd_installconfig::InstallConfig) -> Vec<String> {
    ic.platform
        .baremetal
        .as_ref()
        .map(|b| b.api_vips.clone())
        .unwrap_or_default()
}

/// A key pair without certificate: `{"Pvt": b64, "Pub": b64, "FileList": [...]}` (`keypair.go`).
/// `Debug` shows the public key, not the private one.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyPairAsset {
    /// Private key PEM.
    #[serde(rename = "Pvt", with = "b64")]
    pub pvt: Vec<u8>,
    /// Public key PEM (PKIX body under an `RSA PUBLIC KEY` header, the openshift quirk).
    #[serde(rename = "Pub", with = "b64")]
    pub public: Vec<u8>,
    /// `tls/<base>.key`, `tls/<base>.pub`.
    #[serde(rename = "FileList")]
    pub file_list: Vec<AssetFile>,
}

impl std::fmt::Debug for KeyPairAsset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyPairAsset")
            .field("pvt", &okd_secret::REDACTED)
            .field("public", &String::from_utf8_lossy(&self.public))
            .field("file_list", &self.file_list)
            .finish()
    }
}

/// `tls/service-account.{key,pub}`: the service-account token signing key pair.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ServiceAccountKeyPair(pub KeyPairAsset);

impl Asset for ServiceAccountKeyPair {
    const NAME: &'static str = "Key Pair (service-account.pub)";
    const STATE_KEY: &'static str = "*tls.ServiceAccountKeyPair";
    const KEYS: usize = 1;
    fn dependencies() -> Vec<Dep> {
        Vec::new()
    }
    fn generate(ctx: &GenCtx, _: &Parents<'_>) -> Result<Self, AssetError> {
        let key = ctx.take_key("service-account")?;
        let pvt = key.private_pem();
        let public = key.public_pem();
        Ok(ServiceAccountKeyPair(KeyPairAsset {
            file_list: vec![
                AssetFile::new("tls/service-account.key", pvt.clone()),
                AssetFile::new("tls/service-account.pub", public.clone()),
            ],
            pvt: pvt.into_bytes(),
            public: public.into_bytes(),
        }))
    }
}

/// The bootstrap node's SSH key pair: `{"Priv": b64, "Pub": b64}`; the public key
/// (OpenSSH `ssh-rsa …\n`) is added to the core user of bootstrap.ign.
/// `Debug` shows the public key, not the private one.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BootstrapSshKeyPair {
    /// Private key PEM.
    #[serde(rename = "Priv", with = "b64")]
    pub private: Vec<u8>,
    /// Public key in authorized_keys format, with trailing newline.
    #[serde(rename = "Pub", with = "b64")]
    pub public: Vec<u8>,
}

impl std::fmt::Debug for BootstrapSshKeyPair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BootstrapSshKeyPair")
            .field("private", &okd_secret::REDACTED)
            .field("public", &String::from_utf8_lossy(&self.public))
            .finish()
    }
}

impl Asset for BootstrapSshKeyPair {
    const NAME: &'static str = "Bootstrap SSH Key Pair";
    const STATE_KEY: &'static str = "*tls.BootstrapSSHKeyPair";
    const KEYS: usize = 1;
    fn dependencies() -> Vec<Dep> {
        Vec::new()
    }
    fn generate(ctx: &GenCtx, _: &Parents<'_>) -> Result<Self, AssetError> {
        let key = ctx.take_key("bootstrap-ssh")?;
        Ok(BootstrapSshKeyPair {
            private: key.private_pem().into_bytes(),
            public: key.ssh_authorized_key().into_bytes(),
        })
    }
}

/// The TLS assets whose files go into bootstrap.ign under `/opt/openshift/`,
/// in openshift-install's order (openshift/installer
/// `pkg/asset/ignition/bootstrap/common.go`); one list gives both the files
/// and the dependencies, so they cannot drift apart.
macro_rules! bootstrap_tls {
    ($($ty:ty),* $(,)?) => {
        /// Every TLS file that goes into bootstrap.ign under `/opt/openshift/`, in
        /// openshift-install's order (openshift/installer
        /// `pkg/asset/ignition/bootstrap/common.go`). All are 0600 except
        /// `tls/root-ca.crt` (0644, added last by the caller).
        pub fn bootstrap_tls_files(p: &Parents<'_>) -> Vec<AssetFile> {
            let mut v: Vec<AssetFile> = Vec::new();
            $(v.extend(p.get::<$ty>().0.file_list.clone());)*
            v
        }

        /// The TLS parents of bootstrap.ign: those of [`bootstrap_tls_files`] plus
        /// the bootstrap SSH key pair and the root CA.
        pub fn bootstrap_tls_deps() -> Vec<Dep> {
            let mut v = vec![$(dep::<$ty>()),*];
            v.extend([dep::<BootstrapSshKeyPair>(), dep::<RootCa>()]);
            v
        }
    };
}

bootstrap_tls!(
    AdminKubeConfigCaBundle,
    AggregatorCa,
    AggregatorCaBundle,
    AggregatorClient,
    AggregatorSigner,
    ApiServerProxy,
    KubeApiServerLbCaBundle,
    KubeApiServerExternalLbServer,
    KubeApiServerInternalLbServer,
    KubeApiServerLbSigner,
    KubeApiServerLocalhostCaBundle,
    KubeApiServerLocalhostServer,
    KubeApiServerLocalhostSigner,
    KubeApiServerServiceNetworkCaBundle,
    KubeApiServerServiceNetworkServer,
    KubeApiServerServiceNetworkSigner,
    KubeApiServerCompleteCaBundle,
    KubeApiServerCompleteClientCaBundle,
    KubeApiServerToKubeletCaBundle,
    KubeApiServerToKubeletClient,
    KubeApiServerToKubeletSigner,
    KubeControlPlaneCaBundle,
    KubeControlPlaneKubeControllerManagerClient,
    KubeControlPlaneKubeSchedulerClient,
    KubeControlPlaneSigner,
    KubeletBootstrapCaBundle,
    KubeletClientCaBundle,
    KubeletClient,
    KubeletCsrSigner,
    KubeletServingCaBundle,
    McsCertKey,
    ServiceAccountKeyPair,
    JournalCertKey,
);
