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
    /// The validity (notBefore, notAfter) of the kubeconfig's client
    /// certificate, when it has one.
    client_cert: Option<(time::OffsetDateTime, time::OffsetDateTime)>,
}

/// A clock difference below this is not worth naming (the API server
/// accepts certificates issued a moment ago by a clock slightly ahead).
pub const CLOCK_SKEW_NAMED: Duration = Duration::from_secs(120);

/// Why a 401 happened, from the clocks, or `None` when they do not explain
/// it: `server` is the API server's `Date`, `local` this machine's time
/// when it answered, `cert` the client certificate's validity. The API
/// server answers a client certificate that is not valid *by its clock*
/// with a plain 401, like any unknown credential.
pub fn explain_clocks(
    server: time::OffsetDateTime,
    local: time::OffsetDateTime,
    cert: Option<(time::OffsetDateTime, time::OffsetDateTime)>,
) -> Option<String> {
    let fmt = |t: time::OffsetDateTime| {
        t.format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default()
    };
    let skew = local - server;
    let words = |d: time::Duration| {
        let s = d.whole_seconds().unsigned_abs();
        match s {
            0..=119 => format!("{s} s"),
            120..=7199 => format!("{} min", s / 60),
            7200..=172_799 => format!("{} h", s / 3600),
            _ => format!("{} days", s / 86_400),
        }
    };
    let fix =
        "set the clocks right: NTP on the nodes (chrony, `chronyc tracking`) and on this machine";
    if let Some((nb, na)) = cert {
        if server < nb {
            return Some(format!(
                "the client certificate is not yet valid by the API server's clock: the server's Date is {}, the certificate is valid from {} (this machine's clock says {}; the server is {} {}): {fix}",
                fmt(server),
                fmt(nb),
                fmt(local),
                words(skew),
                if skew.is_positive() {
                    "behind"
                } else {
                    "ahead"
                }
            ));
        }
        if server > na {
            return Some(format!(
                "the client certificate has expired by the API server's clock: the server's Date is {}, the certificate was valid until {} (this machine's clock says {}): {fix}, or create the Ignition configs again if it really expired",
                fmt(server),
                fmt(na),
                fmt(local)
            ));
        }
    }
    let named = time::Duration::try_from(CLOCK_SKEW_NAMED).unwrap_or(time::Duration::ZERO);
    if skew.abs() > named {
        return Some(format!(
            "the API server's clock ({}) is {} {} this machine's ({}): certificates are judged by its clock; {fix}",
            fmt(server),
            words(skew),
            if skew.is_positive() {
                "behind"
            } else {
                "ahead of"
            },
            fmt(local)
        ));
    }
    None
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
        let mut client_cert = None;
        if let Some(user) = ctx.user.as_deref()
            && let Some(auth) = kc
                .auth_infos
                .iter()
                .find(|a| a.name == user)
                .and_then(|a| a.auth_info.as_ref())
            && let Some(data) = &auth.client_certificate_data
        {
            client_cert = Some(check_client_cert(path, user, data)?);
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
            client_cert,
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
        match self.client.apiserver_version().await {
            Ok(v) => Ok(v.git_version),
            Err(e) => {
                let mut err = self.api_error("/version", e);
                if let ClusterError::Api { cause, .. } = &mut err
                    && *cause == ApiCause::Unauthorized
                    && let Some(c) = self.explain_unauthorized().await
                {
                    *cause = c;
                }
                Err(err)
            }
        }
    }

    /// The API server's clock: the `Date` header of its answer to `GET
    /// /version` (any status: a 401 carries it too), with this machine's
    /// time when the answer came.
    ///
    /// # Errors
    /// The request failed, or the answer has no `Date` in the HTTP form
    /// (`Fri, 27 Nov 2026 10:00:00 GMT`); the text says which.
    pub async fn server_date(
        &self,
    ) -> Result<(time::OffsetDateTime, time::OffsetDateTime), String> {
        let req = http::Request::get("/version")
            .body(Vec::new())
            .map_err(|e| e.to_string())?;
        let resp = self
            .client
            .send(req.map(kube::client::Body::from))
            .await
            .map_err(|e| ApiCause::of(&e).to_string())?;
        let local = time::OffsetDateTime::now_utc();
        let date = resp
            .headers()
            .get(http::header::DATE)
            .and_then(|v| v.to_str().ok())
            .ok_or("the answer has no Date header")?;
        let server =
            time::OffsetDateTime::parse(date, &time::format_description::well_known::Rfc2822)
                .map_err(|e| format!("Date {date:?}: {e}"))?;
        Ok((server, local))
    }

    /// Why the API server answered 401, when the clocks say so
    /// ([`explain_clocks`] of [`Cluster::server_date`] and the client
    /// certificate): [`ApiCause::ClockSkew`]; `None` otherwise.
    pub async fn explain_unauthorized(&self) -> Option<ApiCause> {
        let (server, local) = self.server_date().await.ok()?;
        explain_clocks(server, local, self.client_cert).map(ApiCause::ClockSkew)
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
fn check_client_cert(
    path: &Path,
    user: &str,
    data: &str,
) -> Result<(time::OffsetDateTime, time::OffsetDateTime), ClusterError> {
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
    Ok((
        validity.not_before.to_datetime(),
        validity.not_after.to_datetime(),
    ))
}

#[cfg(test)]
mod tests {
    use super::host_of;

    /// Issue #27: a node clock two days behind made the API answer 401,
    /// which read as "a kubeconfig for another cluster?".
    #[test]
    fn clocks_explain_a_401() {
        use time::macros::datetime;
        let local = datetime!(2026-11-27 10:00 UTC);
        let cert = Some((
            datetime!(2026-11-27 09:50 UTC),
            datetime!(2026-11-28 09:50 UTC),
        ));
        let behind = super::explain_clocks(datetime!(2026-11-25 10:00 UTC), local, cert).unwrap();
        assert!(
            behind.starts_with("the client certificate is not yet valid by the API server's clock: the server's Date is 2026-11-25T10:00:00Z, the certificate is valid from 2026-11-27T09:50:00Z")
                && behind.contains("the server is 2 days behind")
                && behind.contains("NTP on the nodes"),
            "{behind}"
        );
        let expired = super::explain_clocks(datetime!(2026-11-29 10:00 UTC), local, cert).unwrap();
        assert!(
            expired.starts_with("the client certificate has expired by the API server's clock"),
            "{expired}"
        );
        // Clocks that agree explain nothing: a plain 401 stays one.
        assert_eq!(super::explain_clocks(local, local, cert), None);
        assert_eq!(
            super::explain_clocks(datetime!(2026-11-27 09:59 UTC), local, cert),
            None
        );
        // Without a client certificate a large skew is still named.
        let skew = super::explain_clocks(datetime!(2026-11-27 07:00 UTC), local, None).unwrap();
        assert!(skew.contains("is 3 h behind this machine's"), "{skew}");
        // The Date header's form parses.
        let d = time::OffsetDateTime::parse(
            "Fri, 27 Nov 2026 10:00:00 GMT",
            &time::format_description::well_known::Rfc2822,
        )
        .unwrap();
        assert_eq!(d, local);
    }

    #[test]
    fn host_of_urls() {
        assert_eq!(host_of("https://api.okd.example:6443"), "api.okd.example");
        assert_eq!(host_of("https://localhost:6443/"), "localhost");
        assert_eq!(host_of("https://[::1]:6443"), "::1");
        assert_eq!(host_of("https://10.0.0.1"), "10.0.0.1");
    }
}
