//! bootkube's waits and checks: `wait-for-etcd` (etcdctl endpoint health
//! with the etcd client certificate), `resolve-api-url` /
//! `resolve-api-int-url` (`dig +short`) and `check-api-url` /
//! `check-api-int-url` (`curl https://<host>:6443/readyz`), as
//! openshift/installer `bootkube.sh.template` and
//! `bootstrap-verify-api-server-urls.sh` run them.

use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use tracing::info;

/// How often a wait asks again (bootkube.sh sleeps 5 s between tries;
/// 2 s here: etcd and the API come up within seconds, and each try is
/// one local request).
pub const RETRY: Duration = Duration::from_secs(2);

/// How long one HTTP request may take.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

fn read(path: &Path) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

/// An HTTPS client trusting only `ca` (PEM), presenting `identity` (a PEM
/// certificate and its key) when given.
///
/// # Errors
/// A message naming the file that is missing or not PEM.
pub fn client(ca: &Path, identity: Option<(&Path, &Path)>) -> Result<reqwest::Client, String> {
    let ca_pem = read(ca)?;
    let certs = reqwest::Certificate::from_pem_bundle(&ca_pem)
        .map_err(|e| format!("{}: not a PEM certificate bundle: {e}", ca.display()))?;
    let mut b = reqwest::Client::builder()
        .tls_certs_only(certs)
        .timeout(REQUEST_TIMEOUT)
        .no_proxy();
    if let Some((cert, key)) = identity {
        let mut pem = read(cert)?;
        pem.push(b'\n');
        pem.extend_from_slice(&read(key)?);
        let id = reqwest::Identity::from_pem(&pem).map_err(|e| {
            format!(
                "{} / {}: not a certificate and key: {e}",
                cert.display(),
                key.display()
            )
        })?;
        b = b.identity(id);
    }
    b.build().map_err(|e| format!("an HTTPS client: {e}"))
}

/// The full cause chain of an error, for messages.
pub fn cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut cur = e.source();
    while let Some(s) = cur {
        let t = s.to_string();
        if !out.contains(&t) {
            out.push_str(": ");
            out.push_str(&t);
        }
        cur = s.source();
    }
    out
}

/// One GET of `url`, `Ok(body)` for a 200.
///
/// # Errors
/// The status and body, or the connection's cause chain.
pub async fn get(client: &reqwest::Client, url: &str) -> Result<String, String> {
    match client.get(url).send().await {
        Ok(r) => {
            let status = r.status();
            let body = r.text().await.unwrap_or_default();
            if status.is_success() {
                Ok(body)
            } else {
                Err(format!(
                    "{url}: HTTP {status}: {}",
                    body.chars().take(200).collect::<String>()
                ))
            }
        }
        Err(e) => Err(format!("{url}: {}", cause(&e))),
    }
}

/// Asks `what` every [`RETRY`] until it succeeds or `limit` passed,
/// logging each failure with what it waits for.
///
/// # Errors
/// The last failure, with how long it waited.
pub async fn poll<F, Fut, T>(what: &str, limit: Duration, mut f: F) -> Result<T, String>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, String>>,
{
    let start = Instant::now();
    loop {
        match f().await {
            Ok(v) => return Ok(v),
            Err(e) => {
                if start.elapsed() + RETRY > limit {
                    return Err(format!(
                        "{what}: still failing after {} s: {e}",
                        start.elapsed().as_secs()
                    ));
                }
                info!("waiting for {what}: {e}");
                tokio::time::sleep(RETRY).await;
            }
        }
    }
}

/// The addresses `host` resolves to, as the node's resolver answers.
///
/// # Errors
/// The resolver's message naming the host.
pub async fn resolve(host: &str) -> Result<Vec<SocketAddr>, String> {
    let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host, 6443))
        .await
        .map_err(|e| format!("{host} does not resolve: {e}"))?
        .collect();
    if addrs.is_empty() {
        return Err(format!("{host} resolves to no address"));
    }
    Ok(addrs)
}

/// What a kubeconfig says about its cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KubeconfigServer {
    /// `clusters[0].cluster.server`.
    pub server: String,
    /// `certificate-authority-data`, decoded PEM.
    pub ca_pem: Vec<u8>,
}

/// Reads the first cluster of a kubeconfig.
///
/// # Errors
/// A message naming the file and the field.
pub fn kubeconfig_server(path: &Path) -> Result<KubeconfigServer, String> {
    use base64::Engine as _;
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let v: serde_yaml_ng::Value =
        serde_yaml_ng::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let cluster = &v["clusters"][0]["cluster"];
    let server = cluster["server"]
        .as_str()
        .ok_or_else(|| format!("{}: clusters[0].cluster.server: missing", path.display()))?
        .to_string();
    let ca = cluster["certificate-authority-data"]
        .as_str()
        .ok_or_else(|| {
            format!(
                "{}: clusters[0].cluster.certificate-authority-data: missing",
                path.display()
            )
        })?;
    let ca_pem = base64::engine::general_purpose::STANDARD
        .decode(ca.trim())
        .map_err(|e| {
            format!(
                "{}: clusters[0].cluster.certificate-authority-data: not base64: {e}",
                path.display()
            )
        })?;
    Ok(KubeconfigServer { server, ca_pem })
}

/// The host part of an `https://host:port` URL.
pub fn url_host(url: &str) -> Option<&str> {
    let rest = url.strip_prefix("https://")?;
    let hostport = rest.split('/').next()?;
    Some(hostport.rsplit_once(':').map_or(hostport, |(h, _)| h))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_host_takes_the_host() {
        assert_eq!(
            url_host("https://api-int.c.example:6443"),
            Some("api-int.c.example")
        );
        assert_eq!(url_host("https://api.c.example"), Some("api.c.example"));
        assert_eq!(url_host("http://x"), None);
    }

    #[tokio::test]
    async fn poll_gives_up_with_the_last_failure() {
        let mut n = 0;
        let r: Result<(), String> = poll("a thing", Duration::from_secs(1), || {
            n += 1;
            let m = n;
            async move { Err(format!("try {m}")) }
        })
        .await;
        assert_eq!(r.unwrap_err(), "a thing: still failing after 0 s: try 1");
    }
}
