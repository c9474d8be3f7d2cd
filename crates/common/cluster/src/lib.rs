//! The cluster client side of okd-install: a Kubernetes client built from an
//! install's kubeconfig (`auth/kubeconfig`, or the bootstrap node's
//! `/opt/openshift/auth/kubeconfig*`), with errors that name the endpoint and
//! say the cause in words: unreachable, wrong CA, expired certificates (the
//! 24-hour trap of openshift/installer#1792), a kubeconfig for another
//! cluster, or the API's own refusal.
//!
//! The kubeconfig format is clientcmd v1 (openshift/installer
//! `pkg/asset/kubeconfig`); certificates and keys are embedded as
//! `*-data` fields.

mod errors;
pub mod install;
pub mod openshift;

use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::Engine as _;
use kube::config::{KubeConfigOptions, Kubeconfig};

pub use errors::{ApiCause, ClusterError};

/// A connected client plus what it was built from.
#[derive(Clone)]
pub struct Cluster {
    client: kube::Client,
    server: String,
    kubeconfig: PathBuf,
}

/// The `User-Agent` of every request: `okd-install/<version>`.
pub const USER_AGENT: &str = concat!("okd-install/", env!("CARGO_PKG_VERSION"));

/// How long a TCP connect to the API may take before the attempt counts as
/// unreachable.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

impl Cluster {
    /// Builds a client from the kubeconfig at `path` (current context).
    ///
    /// Checks before any traffic: the file parses, the current context has a
    /// cluster with a server URL, and the user's embedded client certificate
    /// (if any) has not expired.
    ///
    /// # Errors
    /// [`ClusterError::ReadKubeconfig`], [`ClusterError::BadKubeconfig`],
    /// [`ClusterError::ClientCertExpired`].
    pub async fn from_kubeconfig(path: &Path) -> Result<Cluster, ClusterError> {
        Self::build(path, None).await
    }

    /// As [`Cluster::from_kubeconfig`], but connects to `addr` instead of
    /// resolving the server's host name, still verifying the server's
    /// certificate for that name (SNI and verification use it): for
    /// `serve`, which knows the API address from the inventory and must not
    /// depend on (or leak queries to) the host's resolver.
    ///
    /// # Errors
    /// As [`Cluster::from_kubeconfig`].
    pub async fn from_kubeconfig_via(
        path: &Path,
        addr: std::net::SocketAddr,
    ) -> Result<Cluster, ClusterError> {
        Self::build(path, Some(addr)).await
    }

    async fn build(
        path: &Path,
        via: Option<std::net::SocketAddr>,
    ) -> Result<Cluster, ClusterError> {
        let kc = Kubeconfig::read_from(path).map_err(|source| ClusterError::ReadKubeconfig {
            path: path.to_path_buf(),
            source,
        })?;
        let bad = |detail: String| ClusterError::BadKubeconfig {
            path: path.to_path_buf(),
            detail,
        };
        let ctx_name = kc
            .current_context
            .clone()
            .ok_or_else(|| bad("current-context is not set".into()))?;
        let ctx = kc
            .contexts
            .iter()
            .find(|c| c.name == ctx_name)
            .and_then(|c| c.context.clone())
            .ok_or_else(|| bad(format!("context {ctx_name:?} is not defined")))?;
        let server = kc
            .clusters
            .iter()
            .find(|c| c.name == ctx.cluster)
            .and_then(|c| c.cluster.as_ref())
            .and_then(|c| c.server.clone())
            .ok_or_else(|| bad(format!("cluster {:?} has no server", ctx.cluster)))?;
        if let Some(user) = ctx.user.as_deref()
            && let Some(auth) = kc
                .auth_infos
                .iter()
                .find(|a| a.name == user)
                .and_then(|a| a.auth_info.as_ref())
            && let Some(data) = &auth.client_certificate_data
        {
            check_client_cert(path, user, data)?;
        }
        let mut config = kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
            .await
            .map_err(|e| bad(e.to_string()))?;
        config.connect_timeout = Some(CONNECT_TIMEOUT);
        if let Some(addr) = via {
            config.tls_server_name = Some(host_of(&server).to_string());
            config.cluster_url = format!("https://{addr}")
                .parse()
                .map_err(|e| bad(format!("server address {addr}: {e}")))?;
        }
        // Named in the API server's audit log and request metrics.
        config.headers.push((
            http::header::USER_AGENT,
            http::HeaderValue::from_static(USER_AGENT),
        ));
        let client = kube::Client::try_from(config).map_err(|e| bad(e.to_string()))?;
        Ok(Cluster {
            client,
            server,
            kubeconfig: path.to_path_buf(),
        })
    }

    /// The client, for typed requests (`kube::Api`).
    pub fn client(&self) -> kube::Client {
        self.client.clone()
    }

    /// The API server URL from the kubeconfig, e.g. `https://api.okd.example:6443`.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The kubeconfig this client came from.
    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// Fails with [`ClusterError::OtherCluster`] unless the server's host is
    /// `api.<domain>` or `api-int.<domain>` (or `localhost` / an IP address,
    /// as on the bootstrap node), where `domain` is
    /// `<metadata.name>.<baseDomain>` from the install-config.
    pub fn expect_cluster(&self, domain: &str) -> Result<(), ClusterError> {
        let host = host_of(&self.server);
        let ok = host == format!("api.{domain}")
            || host == format!("api-int.{domain}")
            || host == "localhost"
            || host
                .trim_matches(['[', ']'])
                .parse::<std::net::IpAddr>()
                .is_ok();
        if ok {
            Ok(())
        } else {
            Err(ClusterError::OtherCluster {
                path: self.kubeconfig.clone(),
                server: self.server.clone(),
                domain: domain.to_string(),
            })
        }
    }

    /// Wraps a request error with this cluster's endpoint and `path`
    /// (e.g. `/version`, `certificatesigningrequests`).
    pub fn api_error(&self, path: &str, source: kube::Error) -> ClusterError {
        ClusterError::Api {
            endpoint: format!("{}{}", self.server.trim_end_matches('/'), path),
            cause: ApiCause::of(&source),
            source,
        }
    }

    /// `GET /version`: the server's `gitVersion` (e.g. `v1.32.4`).
    ///
    /// # Errors
    /// [`ClusterError::Api`] naming `/version` and the cause.
    pub async fn version(&self) -> Result<String, ClusterError> {
        self.client
            .apiserver_version()
            .await
            .map(|v| v.git_version)
            .map_err(|e| self.api_error("/version", e))
    }
}

/// The host part of a URL like `https://api.x.example:6443/`.
fn host_of(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split('/').next().unwrap_or(rest);
    if authority.starts_with('[') {
        return authority.split(']').next().map_or(authority, |h| &h[1..]);
    }
    authority.rsplit_once(':').map_or(authority, |(h, _)| h)
}

/// Parses `client-certificate-data` (base64 of PEM) and refuses an expired
/// or not-yet-valid certificate.
fn check_client_cert(path: &Path, user: &str, data: &str) -> Result<(), ClusterError> {
    let bad = |detail: String| ClusterError::BadKubeconfig {
        path: path.to_path_buf(),
        detail,
    };
    let pem = base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .map_err(|e| bad(format!("users[{user}].client-certificate-data: {e}")))?;
    let (_, pem) = x509_parser::pem::parse_x509_pem(&pem)
        .map_err(|e| bad(format!("users[{user}].client-certificate-data: {e}")))?;
    let cert = pem
        .parse_x509()
        .map_err(|e| bad(format!("users[{user}].client-certificate-data: {e}")))?;
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    let validity = cert.validity();
    let fmt = |t: x509_parser::time::ASN1Time| {
        t.to_datetime()
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default()
    };
    if now > validity.not_after.timestamp() || now < validity.not_before.timestamp() {
        return Err(ClusterError::ClientCertExpired {
            path: path.to_path_buf(),
            user: user.to_string(),
            not_before: fmt(validity.not_before),
            not_after: fmt(validity.not_after),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::host_of;

    #[test]
    fn host_of_urls() {
        assert_eq!(host_of("https://api.okd.example:6443"), "api.okd.example");
        assert_eq!(host_of("https://localhost:6443/"), "localhost");
        assert_eq!(host_of("https://[::1]:6443"), "::1");
        assert_eq!(host_of("https://10.0.0.1"), "10.0.0.1");
    }
}
