//! [`Client`]: the REST API v2's operations the commands use (assisted-service
//! `swagger.yaml`, paths under [`BASE_PATH`]; the calls of its
//! `docs/user-guide/rest-api-getting-started.md`).

use std::time::Duration;

use okd_assisted_api::rest::{
    ApiError, BASE_PATH, Cluster, ClusterCreateParams, Event, Host, HostUpdateParams, InfraEnv,
    InfraEnvCreateParams, InfraError,
};
use reqwest::{Method, Url};
use serde::de::DeserializeOwned;

use crate::Error;

/// Longest wait for one answer (a cluster listing with its hosts included).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// Longest wait for a connection.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Where `okd-install assisted serve` listens by default.
pub const DEFAULT_URL: &str = "https://127.0.0.1:8090";

/// The admin token a service with the same `--dir` generated
/// (`<dir>/assisted-service/admin-token`, trimmed); `None` when that file
/// does not exist.
///
/// # Errors
/// [`Error::TokenFile`] when it exists but cannot be read.
pub fn stored_token(dir: &std::path::Path) -> Result<Option<String>, Error> {
    let path = dir
        .join(okd_assisted_api::SERVICE_SECRETS_DIR)
        .join(okd_assisted_api::ADMIN_TOKEN_FILE);
    match std::fs::read_to_string(&path) {
        Ok(t) => Ok(Some(t.trim().to_string()).filter(|t| !t.is_empty())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::TokenFile {
            path,
            cause: e.to_string(),
        }),
    }
}

/// The CA certificate of a service with the same `--dir`
/// (`<dir>/assisted-service/ca.crt`); `None` when that file does not
/// exist.
///
/// # Errors
/// [`Error::TokenFile`] when it exists but cannot be read.
pub fn stored_ca(dir: &std::path::Path) -> Result<Option<Vec<u8>>, Error> {
    let path = dir
        .join(okd_assisted_api::SERVICE_SECRETS_DIR)
        .join(okd_assisted_api::CA_CERT_FILE);
    match std::fs::read(&path) {
        Ok(pem) => Ok(Some(pem)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::TokenFile {
            path,
            cause: e.to_string(),
        }),
    }
}

/// What a download is (`GET /v2/clusters/{id}/downloads/<kind>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DownloadKind {
    /// `downloads/files`: `bootstrap.ign`, `master.ign`, `worker.ign`,
    /// `metadata.json`, `install-config.yaml`.
    Files,
    /// `downloads/credentials`: `kubeadmin-password`, `kubeconfig`,
    /// `kubeconfig-noingress`.
    Credentials,
}

impl DownloadKind {
    fn segment(self) -> &'static str {
        match self {
            DownloadKind::Files => "files",
            DownloadKind::Credentials => "credentials",
        }
    }
}

/// A client of one assisted service.
///
/// `base` is the service's root (`http://127.0.0.1:8090`; a trailing
/// [`BASE_PATH`] is accepted too); `token`, when given, goes as
/// `Authorization: Bearer <token>` with every request (assisted-service's
/// user authentication) and is never shown by `Debug` or in errors.
#[derive(Clone)]
pub struct Client {
    base: String,
    api: String,
    token: Option<String>,
    http: reqwest::Client,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("base", &self.base)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .finish_non_exhaustive()
    }
}

impl Client {
    /// A client of the service at `base` ([`Client`]).
    ///
    /// # Errors
    /// [`Error::Url`] when `base` does not parse, is not `http(s)://host…`
    /// or has a query; [`Error::Token`] when the token cannot be a header
    /// value; [`Error::Client`] when the HTTP client cannot be built.
    pub fn new(base: &str, token: Option<String>) -> Result<Client, Error> {
        Client::with_ca(base, token, None)
    }

    /// [`Client::new`] trusting the CA certificates of `ca_pem` (PEM)
    /// besides the system's roots (the service's own CA,
    /// `<dir>/assisted-service/ca.crt`). The admin token is never sent over
    /// plain HTTP to an address other than loopback.
    ///
    /// # Errors
    /// As [`Client::new`]; [`Error::Ca`] for a PEM text without a
    /// certificate.
    pub fn with_ca(
        base: &str,
        token: Option<String>,
        ca_pem: Option<&[u8]>,
    ) -> Result<Client, Error> {
        let bad = |reason: &str| Error::Url {
            url: base.to_string(),
            reason: reason.to_string(),
        };
        let url = Url::parse(base).map_err(|e| bad(&e.to_string()))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(bad("the scheme must be http or https"));
        }
        if url.host_str().is_none_or(str::is_empty) {
            return Err(bad("no host"));
        }
        if url.query().is_some() || url.fragment().is_some() {
            return Err(bad("no query or fragment allowed"));
        }
        let host = url.host_str().unwrap_or("");
        let loopback = host.eq_ignore_ascii_case("localhost")
            || host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback());
        if url.scheme() == "http" && token.is_some() && !loopback {
            return Err(bad(
                "plain HTTP to an address other than loopback would send the admin token in clear: use https:// (the service speaks TLS by default)",
            ));
        }
        let root = url.as_str().trim_end_matches('/');
        let root = root.strip_suffix(BASE_PATH).unwrap_or(root).to_string();
        let mut headers = reqwest::header::HeaderMap::new();
        if let Some(t) = &token {
            let mut v = reqwest::header::HeaderValue::from_str(&format!("Bearer {t}"))
                .map_err(|_| Error::Token)?;
            v.set_sensitive(true);
            headers.insert(reqwest::header::AUTHORIZATION, v);
        }
        let mut b = reqwest::Client::builder()
            .default_headers(headers)
            .user_agent(concat!("okd-install/", env!("CARGO_PKG_VERSION")))
            .timeout(REQUEST_TIMEOUT)
            .connect_timeout(CONNECT_TIMEOUT);
        if let Some(pem) = ca_pem {
            let certs =
                reqwest::Certificate::from_pem_bundle(pem).map_err(|e| Error::Ca(e.to_string()))?;
            if certs.is_empty() {
                return Err(Error::Ca("no PEM certificate in it".into()));
            }
            b = b.tls_certs_merge(certs);
        }
        let http = b.build().map_err(|e| Error::Client(e.to_string()))?;
        Ok(Client {
            api: format!("{root}{BASE_PATH}"),
            base: root,
            token,
            http,
        })
    }

    /// The service's root URL, as the errors name it.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// `<base>/api/assisted-install/v2<path>` with the query pairs.
    fn url(&self, path: &str, query: &[(&str, &str)]) -> Result<Url, Error> {
        let text = format!("{}{path}", self.api);
        let mut url = Url::parse(&text).map_err(|e| Error::Url {
            url: text.clone(),
            reason: e.to_string(),
        })?;
        if !query.is_empty() {
            url.query_pairs_mut().extend_pairs(query);
        }
        Ok(url)
    }

    /// One request; a 2xx answer's response, else the error.
    async fn send(
        &self,
        doing: &str,
        method: Method,
        path: &str,
        query: &[(&str, &str)],
        body: Option<&(impl serde::Serialize + ?Sized)>,
    ) -> Result<reqwest::Response, Error> {
        let url = self.url(path, query)?;
        let mut req = self.http.request(method.clone(), url.clone());
        if let Some(b) = body {
            req = req.json(b);
        }
        let resp = req.send().await.map_err(|e| {
            let cause = chain(&e);
            if cause.contains("invalid peer certificate") {
                Error::Untrusted {
                    url: self.base.clone(),
                    cause,
                }
            } else if e.is_connect() {
                Error::Unreachable {
                    url: self.base.clone(),
                    cause: chain(&e),
                }
            } else {
                Error::Transport {
                    doing: doing.to_string(),
                    method: method.to_string(),
                    url: url.to_string(),
                    cause: chain(&e),
                }
            }
        })?;
        let status = resp.status();
        if status.is_success() {
            return Ok(resp);
        }
        let text = resp.text().await.unwrap_or_default();
        let reason = if let Ok(e) = serde_json::from_str::<ApiError>(&text) {
            e.reason
        } else if let Ok(e) = serde_json::from_str::<InfraError>(&text) {
            e.message
        } else if text.trim().is_empty() {
            status
                .canonical_reason()
                .unwrap_or("no reason given")
                .to_string()
        } else {
            text.trim().chars().take(300).collect()
        };
        Err(Error::Status {
            doing: doing.to_string(),
            method: method.to_string(),
            url: url.to_string(),
            status: status.as_u16(),
            reason,
        })
    }

    /// A request whose 2xx answer is a JSON document `T`.
    async fn json<T: DeserializeOwned>(
        &self,
        doing: &str,
        method: Method,
        path: &str,
        query: &[(&str, &str)],
        body: Option<&(impl serde::Serialize + ?Sized)>,
    ) -> Result<T, Error> {
        let resp = self.send(doing, method.clone(), path, query, body).await?;
        let url = resp.url().to_string();
        let bytes = resp.bytes().await.map_err(|e| Error::Transport {
            doing: doing.to_string(),
            method: method.to_string(),
            url: url.clone(),
            cause: chain(&e),
        })?;
        serde_json::from_slice(&bytes).map_err(|e| Error::Decode {
            doing: doing.to_string(),
            method: method.to_string(),
            url,
            reason: e.to_string(),
        })
    }

    /// `POST /v2/clusters` → 201 [`Cluster`].
    ///
    /// # Errors
    /// [`Error::Status`] with the service's reason (400: a field it
    /// refuses), and the transport errors of [`Error`].
    pub async fn create_cluster(&self, p: &ClusterCreateParams) -> Result<Cluster, Error> {
        self.json(
            &format!("registering cluster {}", p.name),
            Method::POST,
            "/clusters",
            &[],
            Some(p),
        )
        .await
    }

    /// `POST /v2/infra-envs` → 201 [`InfraEnv`].
    ///
    /// # Errors
    /// As [`Client::create_cluster`].
    pub async fn create_infra_env(&self, p: &InfraEnvCreateParams) -> Result<InfraEnv, Error> {
        self.json(
            &format!("registering infra-env {}", p.name),
            Method::POST,
            "/infra-envs",
            &[],
            Some(p),
        )
        .await
    }

    /// `GET /v2/clusters`: every cluster, hosts included.
    ///
    /// # Errors
    /// As [`Client::create_cluster`].
    pub async fn clusters(&self) -> Result<Vec<Cluster>, Error> {
        self.json(
            "listing the clusters",
            Method::GET,
            "/clusters",
            &[],
            None::<&()>,
        )
        .await
    }

    /// `GET /v2/clusters/{id}`.
    ///
    /// # Errors
    /// [`Error::Status`] 404 for an unknown id; as [`Client::create_cluster`].
    pub async fn cluster(&self, id: &str) -> Result<Cluster, Error> {
        self.json(
            &format!("reading cluster {id}"),
            Method::GET,
            &format!("/clusters/{}", segment(id)?),
            &[],
            None::<&()>,
        )
        .await
    }

    /// `DELETE /v2/clusters/{id}` → 204.
    ///
    /// # Errors
    /// As [`Client::cluster`].
    pub async fn delete_cluster(&self, id: &str) -> Result<(), Error> {
        self.send(
            &format!("deleting cluster {id}"),
            Method::DELETE,
            &format!("/clusters/{}", segment(id)?),
            &[],
            None::<&()>,
        )
        .await
        .map(drop)
    }

    /// The cluster whose id is `name_or_id`, else the one named so.
    ///
    /// # Errors
    /// [`Error::NoCluster`] listing the clusters there are;
    /// [`Error::Ambiguous`] listing the ids when several have the name; as
    /// [`Client::clusters`].
    pub async fn find_cluster(&self, name_or_id: &str) -> Result<Cluster, Error> {
        let all = self.clusters().await?;
        if let Some(c) = all.iter().find(|c| c.id == name_or_id) {
            return Ok(c.clone());
        }
        let mut named: Vec<Cluster> = all
            .iter()
            .filter(|c| c.name == name_or_id)
            .cloned()
            .collect();
        match named.len() {
            1 => Ok(named.remove(0)),
            0 => Err(Error::NoCluster {
                wanted: name_or_id.to_string(),
                known: all
                    .iter()
                    .map(|c| format!("{} ({})", c.name, c.id))
                    .collect(),
            }),
            _ => Err(Error::Ambiguous {
                name: name_or_id.to_string(),
                ids: named.into_iter().map(|c| c.id).collect(),
            }),
        }
    }

    /// `GET /v2/infra-envs/{infra_env_id}/hosts`.
    ///
    /// # Errors
    /// [`Error::Status`] 404 for an unknown infra-env; as
    /// [`Client::create_cluster`].
    pub async fn hosts(&self, infra_env_id: &str) -> Result<Vec<Host>, Error> {
        self.json(
            &format!("listing the hosts of infra-env {infra_env_id}"),
            Method::GET,
            &format!("/infra-envs/{}/hosts", segment(infra_env_id)?),
            &[],
            None::<&()>,
        )
        .await
    }

    /// `GET /v2/infra-envs`.
    ///
    /// # Errors
    /// As [`Client::create_cluster`].
    pub async fn infra_envs(&self) -> Result<Vec<InfraEnv>, Error> {
        self.json(
            "listing the infra-envs",
            Method::GET,
            "/infra-envs",
            &[],
            None::<&()>,
        )
        .await
    }

    /// `POST /v2/clusters/{id}/actions/install` → 202 [`Cluster`]
    /// (`preparing-for-installation`).
    ///
    /// # Errors
    /// [`Error::Status`] 409 with the reason when the cluster is not ready
    /// ("Cluster is not ready for installation: …"); as [`Client::cluster`].
    pub async fn install(&self, id: &str) -> Result<Cluster, Error> {
        self.json(
            &format!("starting the installation of cluster {id}"),
            Method::POST,
            &format!("/clusters/{}/actions/install", segment(id)?),
            &[],
            None::<&()>,
        )
        .await
    }

    /// `GET /v2/clusters/{id}/downloads/<kind>?file_name=<file_name>`: the
    /// file's bytes.
    ///
    /// # Errors
    /// [`Error::Status`] 400 for a file name the kind does not have, 409
    /// before the installation generated the file; as [`Client::cluster`].
    pub async fn download(
        &self,
        id: &str,
        kind: DownloadKind,
        file_name: &str,
    ) -> Result<Vec<u8>, Error> {
        self.get_bytes(
            &format!("downloading {file_name} of cluster {id}"),
            &format!("/clusters/{}/downloads/{}", segment(id)?, kind.segment()),
            &[("file_name", file_name)],
        )
        .await
    }

    /// A GET whose 2xx answer's bytes are returned.
    async fn get_bytes(
        &self,
        doing: &str,
        path: &str,
        query: &[(&str, &str)],
    ) -> Result<Vec<u8>, Error> {
        let resp = self
            .send(doing, Method::GET, path, query, None::<&()>)
            .await?;
        let url = resp.url().to_string();
        resp.bytes()
            .await
            .map(|b| b.to_vec())
            .map_err(|e| Error::Transport {
                doing: doing.to_string(),
                method: "GET".into(),
                url,
                cause: chain(&e),
            })
    }

    /// `GET /v2/clusters/{id}/logs?logs_type=host`: a tar of every host's
    /// uploaded logs archive (`<host id>.tar.gz` each).
    ///
    /// # Errors
    /// [`Error::Status`] 404 when no host uploaded logs; as
    /// [`Client::cluster`].
    pub async fn host_logs(&self, id: &str) -> Result<Vec<u8>, Error> {
        self.get_bytes(
            &format!("downloading the hosts' logs of cluster {id}"),
            &format!("/clusters/{}/logs", segment(id)?),
            &[("logs_type", "host")],
        )
        .await
    }

    /// `GET /v2/clusters/{id}/free_addresses?network=<cidr>[&limit=<n>]`:
    /// the addresses of `network` that every host which scanned it found
    /// free, in address order.
    ///
    /// # Errors
    /// As [`Client::create_cluster`] (404 when no host scanned `network`).
    pub async fn free_addresses(
        &self,
        cluster_id: &str,
        network: &str,
        limit: Option<usize>,
    ) -> Result<Vec<String>, Error> {
        let path = format!("/clusters/{}/free_addresses", segment(cluster_id)?);
        let limit = limit.map(|l| l.to_string());
        let mut q = vec![("network", network)];
        if let Some(l) = &limit {
            q.push(("limit", l.as_str()));
        }
        self.json(
            &format!("listing the free addresses of {network} for cluster {cluster_id}"),
            Method::GET,
            &path,
            &q,
            None::<&()>,
        )
        .await
    }

    /// `PATCH /v2/infra-envs/{infra_env_id}/hosts/{host_id}` → 201 [`Host`]:
    /// the host's name and role (assisted-service's `V2UpdateHost`).
    ///
    /// # Errors
    /// [`Error::Status`] 400 for a name or role the service refuses, 409
    /// when the host's status does not allow a change; as
    /// [`Client::create_cluster`].
    pub async fn update_host(
        &self,
        infra_env_id: &str,
        host_id: &str,
        p: &HostUpdateParams,
    ) -> Result<Host, Error> {
        self.json(
            &format!("updating host {host_id}"),
            Method::PATCH,
            &format!(
                "/infra-envs/{}/hosts/{}",
                segment(infra_env_id)?,
                segment(host_id)?
            ),
            &[],
            Some(p),
        )
        .await
    }

    /// `GET /v2/events?cluster_id=<id>`: the cluster's events, oldest first.
    ///
    /// # Errors
    /// As [`Client::create_cluster`].
    pub async fn events(&self, cluster_id: &str) -> Result<Vec<Event>, Error> {
        self.json(
            &format!("listing the events of cluster {cluster_id}"),
            Method::GET,
            "/events",
            &[("cluster_id", cluster_id)],
            None::<&()>,
        )
        .await
    }
}

/// An id as one path segment (ids are UUIDs; anything with a separator
/// would address another resource).
fn segment(id: &str) -> Result<&str, Error> {
    if id.is_empty()
        || !id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return Err(Error::Id { id: id.to_string() });
    }
    Ok(id)
}

/// An error and its causes, `: `-joined.
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts = vec![e.to_string()];
    let mut src = e.source();
    while let Some(s) = src {
        let t = s.to_string();
        if !parts.iter().any(|p| p.contains(&t)) {
            parts.push(t);
        }
        src = s.source();
    }
    parts.join(": ")
}
