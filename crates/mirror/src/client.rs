//! A client for the OCI distribution API (distribution spec v1.1,
//! `spec.md`): manifests and blobs moved as raw bytes so that every digest
//! stays what the source registry said.
//!
//! Endpoints used: `GET /v2/` (ping, auth challenge), `GET|HEAD
//! /v2/<name>/manifests/<ref>`, `PUT /v2/<name>/manifests/<ref>`, `GET|HEAD
//! /v2/<name>/blobs/<digest>`, `POST /v2/<name>/blobs/uploads/` (optionally
//! `?mount=<digest>&from=<repo>`, cross-repository mount), `PATCH <location>`
//! with `Content-Range` (chunked upload) and `PUT <location>?digest=`
//! (monolithic upload, or closing a chunked one). Authentication: HTTP Basic,
//! or Bearer tokens from the realm of the registry's challenge (Docker
//! registry token spec), with the login from a pull secret.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use futures_util::{Stream, StreamExt as _};
use reqwest::{Method, StatusCode, Url, header};
use tokio::sync::mpsc;

use crate::auth::{Challenge, Credentials, Login};
use crate::oci::{Digest, Hasher, MANIFEST_ACCEPT, Manifest, Repo};

/// Why a registry or archive operation failed. Every message names the
/// registry (or file) and the object.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OciError {
    /// No TCP/TLS connection to the registry (one line, no retries).
    #[error("cannot reach registry {registry} ({url}): {detail}")]
    Unreachable {
        /// `host[:port]`.
        registry: String,
        /// The URL tried.
        url: String,
        /// The root cause (connection refused, certificate not trusted, ...).
        detail: String,
    },
    /// The registry or its token service rejected the login.
    #[error(
        "registry {registry} (auth realm {realm:?}) rejected the login of user {user:?} from {origin}: {detail}"
    )]
    Unauthorized {
        /// `host[:port]`.
        registry: String,
        /// The realm of the challenge.
        realm: String,
        /// The user that was tried.
        user: String,
        /// Where the login came from.
        origin: String,
        /// Status and body.
        detail: String,
    },
    /// The registry wants a login and none is configured for it.
    #[error(
        "registry {registry} requires a login (auth realm {realm:?}) and none of [{sources}] has one for it; pass --registry-config"
    )]
    NoCredentials {
        /// `host[:port]`.
        registry: String,
        /// The realm of the challenge.
        realm: String,
        /// The credential files consulted.
        sources: String,
    },
    /// An unexpected HTTP status.
    #[error("{what}: HTTP {status} {body}")]
    Status {
        /// The request (`GET manifest ... from ...`).
        what: String,
        /// The status code.
        status: u16,
        /// The start of the response body (registry error codes).
        body: String,
    },
    /// Content does not match its digest.
    #[error("{what}: content has digest {actual} ({size} bytes), expected {expected}")]
    Digest {
        /// The object.
        what: String,
        /// The digest asked for.
        expected: Digest,
        /// The digest of the bytes received.
        actual: Digest,
        /// Bytes received.
        size: u64,
    },
    /// Content size differs from the descriptor.
    #[error("{what}: {actual} bytes, the manifest says {expected}")]
    Size {
        /// The object.
        what: String,
        /// Size from the descriptor.
        expected: u64,
        /// Bytes received.
        actual: u64,
    },
    /// A manifest, release image or archive is malformed.
    #[error("{what}: {detail}")]
    Format {
        /// The object.
        what: String,
        /// The rule it breaks.
        detail: String,
    },
    /// A transfer broke off.
    #[error("{what}: {detail}")]
    Transfer {
        /// The object.
        what: String,
        /// The root cause.
        detail: String,
    },
    /// Local file I/O (archives, CA files).
    #[error("{what}: {source}")]
    Io {
        /// The file and action.
        what: String,
        /// The error.
        source: std::io::Error,
    },
}

impl OciError {
    /// Whether the error is about the registry rather than one image
    /// (unreachable, login refused or missing): the copy stops at once
    /// instead of failing image after image.
    pub fn stops_everything(&self) -> bool {
        matches!(
            self,
            OciError::Unreachable { .. }
                | OciError::Unauthorized { .. }
                | OciError::NoCredentials { .. }
        )
    }
}

/// The innermost cause of an error, lower-cased first letter kept.
pub(crate) fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cur: &(dyn std::error::Error + 'static) = e;
    let mut last = cur.to_string();
    while let Some(s) = cur.source() {
        last = s.to_string();
        cur = s;
    }
    last
}

/// How to reach registries.
#[derive(Debug, Clone, Default)]
pub struct ClientOptions {
    /// Logins.
    pub credentials: Credentials,
    /// PEM files of extra CAs trusted for every registry (added to the system roots).
    pub ca_files: Vec<PathBuf>,
    /// Registries (`host[:port]`) spoken to over plain HTTP.
    pub plain_http: Vec<String>,
    /// Blobs larger than this go up in `PATCH` chunks of this size (bytes);
    /// 0: always one monolithic `PUT`.
    pub chunk_size: u64,
}

struct Session {
    registry: String,
    base: Url,
    challenge: Option<Challenge>,
    login: Option<Login>,
    tokens: std::sync::Mutex<HashMap<String, String>>,
    /// Held while a token is fetched, so concurrent requests wait for it
    /// instead of each asking the token service.
    token_fetch: tokio::sync::Mutex<()>,
}

impl Session {
    /// A cached token for `key`; a `pull,push` token also serves `pull` alone.
    fn cached(&self, key: &str) -> Option<String> {
        let tokens = self.tokens.lock().expect("token cache");
        tokens.get(key).cloned().or_else(|| {
            key.strip_suffix(":pull")
                .filter(|k| !k.contains(' '))
                .and_then(|k| tokens.get(&format!("{k}:pull,push")).cloned())
        })
    }
}

/// A connection pool to any number of registries, with their sessions (auth
/// challenge and cached tokens).
pub struct Registries {
    http: reqwest::Client,
    opts: ClientOptions,
    sessions: tokio::sync::Mutex<HashMap<String, Arc<Session>>>,
}

/// What [`Registries::put_blob`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlobOutcome {
    /// The target already had it (HEAD; reported by the copier).
    Present,
    /// Mounted from another repository of the target registry.
    Mounted,
    /// Uploaded, this many bytes.
    Uploaded(u64),
}

fn body_excerpt(b: &str) -> String {
    let t: String = b.trim().chars().take(300).collect();
    t.replace('\n', " ")
}

impl Registries {
    /// Builds the HTTP client. Errors: a CA file that cannot be read or parsed.
    pub fn new(opts: ClientOptions) -> Result<Registries, OciError> {
        let mut certs = Vec::new();
        for f in &opts.ca_files {
            let pem = std::fs::read(f).map_err(|source| OciError::Io {
                what: format!("reading CA file {}", f.display()),
                source,
            })?;
            let list =
                reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| OciError::Format {
                    what: format!("CA file {}", f.display()),
                    detail: root_cause(&e),
                })?;
            if list.is_empty() {
                return Err(OciError::Format {
                    what: format!("CA file {}", f.display()),
                    detail: "no PEM certificate in it".into(),
                });
            }
            certs.extend(list);
        }
        let http = reqwest::Client::builder()
            .http1_only()
            .no_proxy()
            .connect_timeout(Duration::from_secs(10))
            .pool_max_idle_per_host(32)
            .tls_certs_merge(certs)
            .user_agent(concat!("okd-install/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| OciError::Format {
                what: "HTTP client".into(),
                detail: root_cause(&e),
            })?;
        Ok(Registries {
            http,
            opts,
            sessions: Default::default(),
        })
    }

    fn api_host(registry: &str) -> &str {
        if registry == "docker.io" {
            "registry-1.docker.io"
        } else {
            registry
        }
    }

    async fn session(&self, repo: &Repo) -> Result<Arc<Session>, OciError> {
        let mut map = self.sessions.lock().await;
        if let Some(s) = map.get(&repo.registry) {
            return Ok(s.clone());
        }
        let registry = repo.registry.clone();
        let scheme = if self.opts.plain_http.contains(&registry) {
            "http"
        } else {
            "https"
        };
        let base =
            Url::parse(&format!("{scheme}://{}/", Self::api_host(&registry))).map_err(|e| {
                OciError::Format {
                    what: format!("registry {registry}"),
                    detail: e.to_string(),
                }
            })?;
        let ping = base.join("v2/").expect("static path");
        let unreachable = |e: reqwest::Error| OciError::Unreachable {
            registry: registry.clone(),
            url: ping.to_string(),
            detail: root_cause(&e),
        };
        let resp = self
            .http
            .get(ping.clone())
            .send()
            .await
            .map_err(unreachable)?;
        let login = self.opts.credentials.find(&registry, &repo.name).cloned();
        let challenge = match resp.status() {
            s if s.is_success() => None,
            StatusCode::UNAUTHORIZED => {
                let h = resp
                    .headers()
                    .get(header::WWW_AUTHENTICATE)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default();
                Some(Challenge::parse(h).ok_or_else(|| OciError::Status {
                    what: format!("GET {ping}: unsupported WWW-Authenticate {h:?}"),
                    status: 401,
                    body: String::new(),
                })?)
            }
            s => {
                let body = resp.text().await.unwrap_or_default();
                return Err(OciError::Status {
                    what: format!("GET {ping} (is {registry} an OCI registry?)"),
                    status: s.as_u16(),
                    body: body_excerpt(&body),
                });
            }
        };
        // Check a Basic login at once, so a wrong password is one clear line.
        if let (Some(Challenge::Basic { realm }), Some(l)) = (&challenge, &login) {
            let r = self
                .http
                .get(ping.clone())
                .basic_auth(&l.username, Some(&l.password))
                .send()
                .await
                .map_err(unreachable)?;
            if r.status() == StatusCode::UNAUTHORIZED {
                let body = r.text().await.unwrap_or_default();
                return Err(OciError::Unauthorized {
                    registry,
                    realm: realm.clone(),
                    user: l.username.clone(),
                    origin: l.origin.clone(),
                    detail: format!("HTTP 401 {}", body_excerpt(&body)),
                });
            }
        }
        let s = Arc::new(Session {
            registry: registry.clone(),
            base,
            challenge,
            login,
            tokens: Default::default(),
            token_fetch: Default::default(),
        });
        map.insert(registry, s.clone());
        Ok(s)
    }

    fn no_login(&self, s: &Session) -> OciError {
        OciError::NoCredentials {
            registry: s.registry.clone(),
            realm: s
                .challenge
                .as_ref()
                .map(|c| c.realm().to_string())
                .unwrap_or_default(),
            sources: self.opts.credentials.sources.join(", "),
        }
    }

    /// The `Authorization` value for `scopes` (`repository:<name>:pull[,push]`).
    async fn authorization(
        &self,
        s: &Session,
        scopes: &[String],
        fresh: bool,
    ) -> Result<Option<String>, OciError> {
        match &s.challenge {
            None => Ok(None),
            Some(Challenge::Basic { .. }) => {
                let l = s.login.as_ref().ok_or_else(|| self.no_login(s))?;
                let raw = format!("{}:{}", l.username, l.password);
                Ok(Some(format!(
                    "Basic {}",
                    base64::engine::general_purpose::STANDARD.encode(raw)
                )))
            }
            Some(Challenge::Bearer { realm, service }) => {
                let key = scopes.join(" ");
                if !fresh && let Some(t) = s.cached(&key) {
                    return Ok(Some(format!("Bearer {t}")));
                }
                let _one_at_a_time = s.token_fetch.lock().await;
                if !fresh && let Some(t) = s.cached(&key) {
                    return Ok(Some(format!("Bearer {t}")));
                }
                let mut url = Url::parse(realm).map_err(|e| OciError::Format {
                    what: format!("token realm {realm:?} of {}", s.registry),
                    detail: e.to_string(),
                })?;
                {
                    let mut q = url.query_pairs_mut();
                    if let Some(sv) = service {
                        q.append_pair("service", sv);
                    }
                    for sc in scopes {
                        q.append_pair("scope", sc);
                    }
                }
                let mut req = self.http.get(url.clone());
                if let Some(l) = &s.login {
                    req = req.basic_auth(&l.username, Some(&l.password));
                }
                let resp = req.send().await.map_err(|e| OciError::Unreachable {
                    registry: s.registry.clone(),
                    url: realm.clone(),
                    detail: root_cause(&e),
                })?;
                let status = resp.status();
                let body = resp.text().await.unwrap_or_default();
                if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
                    return Err(match &s.login {
                        Some(l) => OciError::Unauthorized {
                            registry: s.registry.clone(),
                            realm: realm.clone(),
                            user: l.username.clone(),
                            origin: l.origin.clone(),
                            detail: format!("HTTP {} {}", status.as_u16(), body_excerpt(&body)),
                        },
                        None => self.no_login(s),
                    });
                }
                if !status.is_success() {
                    return Err(OciError::Status {
                        what: format!("token from {realm} for {key}"),
                        status: status.as_u16(),
                        body: body_excerpt(&body),
                    });
                }
                let v: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
                let token = v
                    .get("token")
                    .or_else(|| v.get("access_token"))
                    .and_then(|t| t.as_str())
                    .ok_or_else(|| OciError::Format {
                        what: format!("token response of {realm}"),
                        detail: "no \"token\" or \"access_token\"".into(),
                    })?
                    .to_string();
                s.tokens
                    .lock()
                    .expect("token cache")
                    .insert(key, token.clone());
                Ok(Some(format!("Bearer {token}")))
            }
        }
    }

    fn scopes(repo: &Repo, push: bool, also_pull: Option<&Repo>) -> Vec<String> {
        let mut v = vec![format!(
            "repository:{}:{}",
            repo.name,
            if push { "pull,push" } else { "pull" }
        )];
        if let Some(o) = also_pull {
            v.push(format!("repository:{}:pull", o.name));
        }
        v
    }

    fn unreachable(s: &Session, url: &Url, e: &reqwest::Error) -> OciError {
        if e.is_connect() {
            OciError::Unreachable {
                registry: s.registry.clone(),
                url: url.to_string(),
                detail: root_cause(e),
            }
        } else {
            OciError::Transfer {
                what: format!("{url}"),
                detail: root_cause(e),
            }
        }
    }

    /// `method` on `/v2/<repo>/<tail>` with a pull (or pull+push) token:
    /// the session, URL and scope of every small request in one place.
    async fn call(
        &self,
        repo: &Repo,
        push: bool,
        method: Method,
        tail: &str,
        headers: &[(header::HeaderName, String)],
        body: Option<Bytes>,
    ) -> Result<reqwest::Response, OciError> {
        let s = self.session(repo).await?;
        let url = Self::url(&s, repo, tail);
        self.send(
            &s,
            &Self::scopes(repo, push, None),
            method,
            url,
            headers,
            body,
        )
        .await
    }

    /// Sends a request with no body (or a small one), authorizing it and
    /// retrying once with a fresh token after a 401.
    async fn send(
        &self,
        s: &Session,
        scopes: &[String],
        method: Method,
        url: Url,
        headers: &[(header::HeaderName, String)],
        body: Option<Bytes>,
    ) -> Result<reqwest::Response, OciError> {
        let mut fresh = false;
        loop {
            let mut req = self.http.request(method.clone(), url.clone());
            if let Some(a) = self.authorization(s, scopes, fresh).await? {
                req = req.header(header::AUTHORIZATION, a);
            }
            for (k, v) in headers {
                req = req.header(k, v);
            }
            if let Some(b) = &body {
                req = req.body(b.clone());
            }
            let resp = req
                .send()
                .await
                .map_err(|e| Self::unreachable(s, &url, &e))?;
            if resp.status() == StatusCode::UNAUTHORIZED
                && !fresh
                && matches!(s.challenge, Some(Challenge::Bearer { .. }))
            {
                fresh = true;
                continue;
            }
            if resp.status() == StatusCode::UNAUTHORIZED {
                let body = resp.text().await.unwrap_or_default();
                return Err(match (&s.login, &s.challenge) {
                    (Some(l), c) => OciError::Unauthorized {
                        registry: s.registry.clone(),
                        realm: c
                            .as_ref()
                            .map(|c| c.realm().to_string())
                            .unwrap_or_default(),
                        user: l.username.clone(),
                        origin: l.origin.clone(),
                        detail: format!("{method} {url}: HTTP 401 {}", body_excerpt(&body)),
                    },
                    (None, _) => self.no_login(s),
                });
            }
            return Ok(resp);
        }
    }

    async fn fail(what: String, resp: reqwest::Response) -> OciError {
        let status = resp.status().as_u16();
        let body = resp.text().await.unwrap_or_default();
        OciError::Status {
            what,
            status,
            body: body_excerpt(&body),
        }
    }

    fn url(s: &Session, repo: &Repo, tail: &str) -> Url {
        s.base
            .join(&format!("v2/{}/{tail}", repo.name))
            .expect("repository names are URL-safe")
    }

    /// Checks that `repo`'s registry answers and the login works for it
    /// (pull, or pull+push), before any copying starts.
    pub async fn check(&self, repo: &Repo, push: bool) -> Result<(), OciError> {
        let s = self.session(repo).await?;
        self.authorization(&s, &Self::scopes(repo, push, None), false)
            .await?;
        Ok(())
    }

    /// `GET` a manifest by tag or digest. When `reference` is a digest the
    /// bytes are checked against it. Errors: not found, bad JSON, schema 1.
    pub async fn get_manifest(&self, repo: &Repo, reference: &str) -> Result<Manifest, OciError> {
        let what = format!("manifest {repo}:{reference}");
        let resp = self
            .call(
                repo,
                false,
                Method::GET,
                &format!("manifests/{reference}"),
                &[(header::ACCEPT, MANIFEST_ACCEPT.into())],
                None,
            )
            .await?;
        if !resp.status().is_success() {
            return Err(Self::fail(format!("GET {what}"), resp).await);
        }
        let ct = resp
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let bytes = resp.bytes().await.map_err(|e| OciError::Transfer {
            what: what.clone(),
            detail: root_cause(&e),
        })?;
        let m = Manifest::new(bytes, ct.as_deref()).map_err(|e| OciError::Format {
            what: what.clone(),
            detail: e.0,
        })?;
        if let Ok(d) = Digest::parse(reference)
            && d != m.digest
        {
            return Err(OciError::Digest {
                what,
                expected: d,
                actual: m.digest.clone(),
                size: m.bytes.len() as u64,
            });
        }
        Ok(m)
    }

    /// `HEAD` a blob: whether `repo` has it.
    pub async fn has_blob(&self, repo: &Repo, digest: &Digest) -> Result<bool, OciError> {
        let resp = self
            .call(
                repo,
                false,
                Method::HEAD,
                &format!("blobs/{digest}"),
                &[],
                None,
            )
            .await?;
        match resp.status() {
            s if s.is_success() => Ok(true),
            StatusCode::NOT_FOUND => Ok(false),
            _ => Err(Self::fail(format!("HEAD blob {repo}@{digest}"), resp).await),
        }
    }

    /// `GET` a blob as a stream of chunks (not yet verified: the caller
    /// hashes while it forwards, see [`Registries::upload_blob`]).
    pub async fn get_blob(
        &self,
        repo: &Repo,
        digest: &Digest,
    ) -> Result<impl Stream<Item = Result<Bytes, OciError>> + Send + Unpin + 'static, OciError>
    {
        let resp = self
            .call(
                repo,
                false,
                Method::GET,
                &format!("blobs/{digest}"),
                &[],
                None,
            )
            .await?;
        if !resp.status().is_success() {
            return Err(Self::fail(format!("GET blob {repo}@{digest}"), resp).await);
        }
        let what = format!("blob {repo}@{digest}");
        Ok(resp.bytes_stream().map(move |r| {
            r.map_err(|e| OciError::Transfer {
                what: what.clone(),
                detail: root_cause(&e),
            })
        }))
    }

    /// `PUT` a manifest under `reference` (tag or digest), bytes unchanged.
    pub async fn put_manifest(
        &self,
        repo: &Repo,
        reference: &str,
        m: &Manifest,
    ) -> Result<(), OciError> {
        let resp = self
            .call(
                repo,
                true,
                Method::PUT,
                &format!("manifests/{reference}"),
                &[(header::CONTENT_TYPE, m.media_type.clone())],
                Some(m.bytes.clone()),
            )
            .await?;
        if !resp.status().is_success() {
            return Err(Self::fail(
                format!("PUT manifest {repo}:{reference} ({})", m.digest),
                resp,
            )
            .await);
        }
        Ok(())
    }

    fn location(s: &Session, resp: &reqwest::Response, what: &str) -> Result<Url, OciError> {
        let loc = resp
            .headers()
            .get(header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .ok_or_else(|| OciError::Format {
                what: what.to_string(),
                detail: format!("HTTP {} without a Location header", resp.status().as_u16()),
            })?;
        s.base.join(loc).map_err(|e| OciError::Format {
            what: what.to_string(),
            detail: format!("bad Location {loc:?}: {e}"),
        })
    }

    /// Puts blob `digest` (`size` bytes), which the caller found missing
    /// (`HEAD`, [`Registries::has_blob`]), into `repo`: a cross-repository
    /// mount from `mount_from` (same registry) when given and accepted;
    /// otherwise an upload of `source` (opened only then), monolithic or in `PATCH` chunks of
    /// [`ClientOptions::chunk_size`]. Every byte is hashed on the way: when
    /// the content does not match `digest` (or `size`) the upload is aborted
    /// before it completes, so the target never holds the blob, and the
    /// error is [`OciError::Digest`] / [`OciError::Size`].
    pub async fn upload_blob<S, F, Fut>(
        &self,
        repo: &Repo,
        digest: &Digest,
        size: u64,
        mount_from: Option<&Repo>,
        source: F,
        progress: &(dyn Fn(u64) + Send + Sync),
    ) -> Result<BlobOutcome, OciError>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<S, OciError>>,
        S: Stream<Item = Result<Bytes, OciError>> + Unpin,
    {
        let s = self.session(repo).await?;
        let what = format!("blob {digest} to {repo}");
        let mount_from = mount_from.filter(|m| m.registry == repo.registry && m.name != repo.name);
        let mut url = Self::url(&s, repo, "blobs/uploads/");
        if let Some(m) = mount_from {
            url.query_pairs_mut()
                .append_pair("mount", digest.as_str())
                .append_pair("from", &m.name);
        }
        let scopes = Self::scopes(repo, true, mount_from);
        let resp = self
            .send(
                &s,
                &scopes,
                Method::POST,
                url,
                &[(header::CONTENT_LENGTH, "0".into())],
                None,
            )
            .await?;
        match resp.status() {
            StatusCode::CREATED if mount_from.is_some() => return Ok(BlobOutcome::Mounted),
            StatusCode::ACCEPTED => {}
            _ => return Err(Self::fail(format!("POST upload of {what}"), resp).await),
        }
        let mut location = Self::location(&s, &resp, &what)?;
        let auth = self.authorization(&s, &scopes, false).await?;
        let mut source = source().await?;
        let chunk = if self.opts.chunk_size == 0 || size <= self.opts.chunk_size {
            size.max(1)
        } else {
            self.opts.chunk_size
        };
        let mut hasher = Hasher::new();
        let mut sent: u64 = 0;
        let mut carry: Option<Bytes> = None;
        let mut source_done = false;
        loop {
            // One request: PUT (all of it, monolithic) or PATCH (one chunk).
            let monolithic = sent == 0 && chunk >= size;
            let seg_len = if monolithic {
                size
            } else {
                chunk.min(size - sent)
            };
            let (tx, rx) = mpsc::channel::<Result<Bytes, std::io::Error>>(8);
            let body =
                reqwest::Body::wrap_stream(futures_util::stream::unfold(rx, |mut rx| async move {
                    rx.recv().await.map(|x| (x, rx))
                }));
            let mut url = location.clone();
            let method = if monolithic {
                url.query_pairs_mut().append_pair("digest", digest.as_str());
                Method::PUT
            } else {
                Method::PATCH
            };
            let mut req = self
                .http
                .request(method.clone(), url.clone())
                .header(header::CONTENT_TYPE, "application/octet-stream")
                .header(header::CONTENT_LENGTH, seg_len.to_string())
                .body(body);
            if !monolithic {
                req = req.header(
                    "Content-Range",
                    format!("{}-{}", sent, sent + seg_len.max(1) - 1),
                );
            }
            if let Some(a) = &auth {
                req = req.header(header::AUTHORIZATION, a);
            }
            let request = tokio::spawn(req.send());
            let mut seg_sent = 0u64;
            let mut failure: Option<OciError> = None;
            while seg_sent < seg_len {
                let piece = match carry.take() {
                    Some(p) => p,
                    None if source_done => break,
                    None => match source.next().await {
                        Some(Ok(p)) => p,
                        Some(Err(e)) => {
                            failure = Some(e);
                            break;
                        }
                        None => {
                            source_done = true;
                            break;
                        }
                    },
                };
                let room = (seg_len - seg_sent) as usize;
                let piece = if piece.len() > room {
                    carry = Some(piece.slice(room..));
                    piece.slice(..room)
                } else {
                    piece
                };
                hasher.update(&piece);
                seg_sent += piece.len() as u64;
                progress(piece.len() as u64);
                if tx.send(Ok(piece)).await.is_err() {
                    break; // the request ended early; its result says why
                }
            }
            sent += seg_sent;
            if failure.is_none() && sent == size {
                // The last bytes are in hand: check them before the request may complete.
                let extra = match carry.take() {
                    Some(p) => Some(p),
                    None if source_done => None,
                    None => match source.next().await {
                        Some(Ok(p)) if !p.is_empty() => Some(p),
                        Some(Err(e)) => {
                            failure = Some(e);
                            None
                        }
                        _ => None,
                    },
                };
                if let Some(p) = extra {
                    failure = Some(OciError::Size {
                        what: what.clone(),
                        expected: size,
                        actual: size + p.len() as u64,
                    });
                } else if failure.is_none() {
                    let actual = std::mem::take(&mut hasher).finish();
                    if &actual != digest {
                        failure = Some(OciError::Digest {
                            what: what.clone(),
                            expected: digest.clone(),
                            actual,
                            size,
                        });
                    }
                }
            } else if failure.is_none() && seg_sent < seg_len {
                failure = Some(OciError::Size {
                    what: what.clone(),
                    expected: size,
                    actual: sent,
                });
            }
            if let Some(f) = failure {
                let _ = tx
                    .send(Err(std::io::Error::other("content rejected")))
                    .await;
                drop(tx);
                request.abort();
                let _ = self.cancel(&location, &auth).await;
                return Err(f);
            }
            drop(tx);
            let resp = request
                .await
                .map_err(|e| OciError::Transfer {
                    what: what.clone(),
                    detail: e.to_string(),
                })?
                .map_err(|e| Self::unreachable(&s, &url, &e))?;
            if monolithic {
                if resp.status() != StatusCode::CREATED {
                    return Err(Self::fail(format!("PUT {what}"), resp).await);
                }
                return Ok(BlobOutcome::Uploaded(size));
            }
            if resp.status() != StatusCode::ACCEPTED {
                return Err(Self::fail(format!("PATCH {what} ({sent}/{size} bytes)"), resp).await);
            }
            location = Self::location(&s, &resp, &what)?;
            if sent == size {
                let mut url = location.clone();
                url.query_pairs_mut().append_pair("digest", digest.as_str());
                let mut req = self
                    .http
                    .put(url.clone())
                    .header(header::CONTENT_LENGTH, "0")
                    .header(header::CONTENT_TYPE, "application/octet-stream");
                if let Some(a) = &auth {
                    req = req.header(header::AUTHORIZATION, a);
                }
                let resp = req
                    .send()
                    .await
                    .map_err(|e| Self::unreachable(&s, &url, &e))?;
                if resp.status() != StatusCode::CREATED {
                    return Err(Self::fail(format!("PUT (close) {what}"), resp).await);
                }
                return Ok(BlobOutcome::Uploaded(size));
            }
        }
    }

    /// Ends an upload session that will not complete (`DELETE <location>`).
    async fn cancel(&self, location: &Url, auth: &Option<String>) -> Result<(), reqwest::Error> {
        let mut req = self.http.delete(location.clone());
        if let Some(a) = auth {
            req = req.header(header::AUTHORIZATION, a);
        }
        req.send().await.map(|_| ())
    }
}
