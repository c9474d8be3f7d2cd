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
//! registry token spec, distribution `docs/spec/auth/token.md`), with the
//! login from a pull secret.
//!
//! Against a hostile network: the login goes to a token realm only when it
//! is https (or the registry itself is plain HTTP by `--plain-http`) and on
//! the registry's own host and port (or one allowed by
//! [`ClientOptions::allow_token_realms`]); an `Authorization` header goes
//! to an upload `Location` only on the registry's own scheme, host and port
//! (or an allowed realm host), never to another server the registry names; manifests are read up to
//! [`body::MAX_MANIFEST`], token answers and error bodies up to
//! [`body::MAX_SMALL_BODY`]; every wait for an answer or the next bytes of
//! a body is bounded by [`ClientOptions::read_timeout`]; proxies come from
//! the environment as Go's `ProxyFromEnvironment` picks them ([`crate::proxy`]).

pub mod body;
mod error;
mod upload;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use futures_util::Stream;
use okd_secret::ExposeSecret as _;
use reqwest::{Method, StatusCode, Url, header};

pub use error::OciError;
pub(crate) use error::root_cause;

use crate::auth::{Challenge, Credentials, Login};
use crate::oci::{Digest, MANIFEST_ACCEPT, Manifest, Repo, check_reference};
use crate::proxy::ProxyEnv;
use body::{MAX_MANIFEST, MAX_SMALL_BODY, error_text, idle, read_capped, sanitize};

/// Default of [`ClientOptions::read_timeout`]: 60 seconds.
pub const DEFAULT_READ_TIMEOUT: Duration = Duration::from_secs(60);

/// How to reach registries.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// Logins.
    pub credentials: Credentials,
    /// PEM files of extra CAs trusted for every registry (added to the system roots).
    pub ca_files: Vec<PathBuf>,
    /// Registries (`host[:port]`) spoken to over plain HTTP.
    pub plain_http: Vec<String>,
    /// Token realm hosts (`host` for any port, or `host:port`) the login
    /// may be sent to although they are not the registry's own host and port.
    pub allow_token_realms: Vec<String>,
    /// Blobs larger than this go up in `PATCH` chunks of this size (bytes);
    /// 0: always one monolithic `PUT`.
    pub chunk_size: u64,
    /// Longest wait for an answer, for the next bytes of a body, or for the
    /// registry to take more bytes of an upload.
    pub read_timeout: Duration,
    /// Proxies (default: none; [`ProxyEnv::from_env`] for the environment's).
    pub proxy: ProxyEnv,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            credentials: Credentials::default(),
            ca_files: Vec::new(),
            plain_http: Vec::new(),
            allow_token_realms: Vec::new(),
            chunk_size: 0,
            read_timeout: DEFAULT_READ_TIMEOUT,
            proxy: ProxyEnv::default(),
        }
    }
}

struct Session {
    registry: String,
    base: Url,
    challenge: Option<Challenge>,
    login: Option<Login>,
    /// The login's password, `user:password` and its base64: redacted from
    /// anything a registry sends back before it is shown.
    secrets: Vec<String>,
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

    /// `text` from the registry, sanitized: secrets and tokens redacted,
    /// control characters escaped, cut short.
    fn excerpt(&self, text: &str) -> String {
        let tokens: Vec<String> = self
            .tokens
            .lock()
            .expect("token cache")
            .values()
            .cloned()
            .collect();
        sanitize(
            text,
            self.secrets.iter().chain(tokens.iter()).map(String::as_str),
        )
    }
}

fn secrets_of(login: Option<&Login>) -> Vec<String> {
    let Some(l) = login else { return Vec::new() };
    let pair = format!("{}:{}", l.username, l.password.expose_secret());
    vec![
        base64::engine::general_purpose::STANDARD.encode(&pair),
        pair,
        l.password.expose_secret().to_string(),
    ]
}

/// A connection pool to any number of registries, with their sessions (auth
/// challenge and cached tokens).
pub struct Registries {
    http: reqwest::Client,
    opts: ClientOptions,
    sessions: tokio::sync::Mutex<HashMap<String, Arc<Session>>>,
}

/// What [`Registries::upload_blob`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlobOutcome {
    /// The target already had it (HEAD; reported by the copier).
    Present,
    /// Mounted from another repository of the target registry.
    Mounted,
    /// Uploaded, this many bytes.
    Uploaded(u64),
}

fn read_ca_files(files: &[PathBuf]) -> Result<Vec<reqwest::Certificate>, OciError> {
    let mut certs = Vec::new();
    for f in files {
        let pem = std::fs::read(f).map_err(|source| OciError::Io {
            what: format!("reading CA file {}", f.display()),
            source,
        })?;
        let list = reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| OciError::Format {
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
    Ok(certs)
}

/// `host[:port]` of a URL with the scheme's default port made explicit.
fn authority(u: &Url) -> (String, u16) {
    (
        u.host_str().unwrap_or_default().to_ascii_lowercase(),
        u.port_or_known_default().unwrap_or(0),
    )
}

/// Whether `a` and `b` have the same scheme, host and port (the scheme's
/// default port made explicit): the origin of RFC 6454.
fn same_origin(a: &Url, b: &Url) -> bool {
    a.scheme() == b.scheme() && authority(a) == authority(b)
}

impl Registries {
    /// Whether `url`'s host (any port) or `host:port` is one of
    /// [`ClientOptions::allow_token_realms`].
    fn realm_allowed(&self, url: &Url) -> bool {
        let (host, port) = authority(url);
        self.opts.allow_token_realms.iter().any(|a| {
            let a = a.to_ascii_lowercase();
            a == host || a == format!("{host}:{port}")
        })
    }

    /// Builds the HTTP client. Errors: a CA file that cannot be read or parsed.
    pub fn new(opts: ClientOptions) -> Result<Registries, OciError> {
        let certs = read_ca_files(&opts.ca_files)?;
        let proxy = opts.proxy.clone();
        let mut builder = reqwest::Client::builder()
            .http1_only()
            .no_proxy()
            .connect_timeout(Duration::from_secs(10))
            .pool_max_idle_per_host(32)
            .tls_certs_merge(certs)
            .user_agent(concat!("okd-install/", env!("CARGO_PKG_VERSION")));
        if proxy.any() {
            builder = builder.proxy(reqwest::Proxy::custom(move |u| proxy.for_url(u)));
        }
        let http = builder.build().map_err(|e| OciError::Format {
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
        let login = self.opts.credentials.find(&registry, &repo.name).cloned();
        let mut s = Session {
            registry: registry.clone(),
            secrets: secrets_of(login.as_ref()),
            base,
            challenge: None,
            login,
            tokens: Default::default(),
            token_fetch: Default::default(),
        };
        s.challenge = self.ping(&s).await?;
        if let Some(Challenge::Bearer { realm, .. }) = &s.challenge {
            self.check_realm(&s, realm)?;
        }
        let s = Arc::new(s);
        map.insert(registry, s.clone());
        Ok(s)
    }

    /// `GET /v2/`: the auth challenge, if any; with a Basic challenge and a
    /// login, the login is tried at once so a wrong password is one clear line.
    async fn ping(&self, s: &Session) -> Result<Option<Challenge>, OciError> {
        let ping = s.base.join("v2/").expect("static path");
        let timeout = self.opts.read_timeout;
        let get = |basic: Option<&Login>| {
            let mut req = self.http.get(ping.clone());
            if let Some(l) = basic {
                req = req.basic_auth(&l.username, Some(l.password.expose_secret()));
            }
            idle(timeout, &s.registry, || format!("GET {ping}"), req.send())
        };
        let resp = get(None)
            .await?
            .map_err(|e| Self::unreachable(s, &ping, &e))?;
        let challenge = match resp.status() {
            st if st.is_success() => None,
            StatusCode::UNAUTHORIZED => {
                let h = resp
                    .headers()
                    .get(header::WWW_AUTHENTICATE)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default();
                Some(Challenge::parse(h).ok_or_else(|| OciError::Status {
                    what: format!(
                        "GET {ping}: unsupported WWW-Authenticate \"{}\"",
                        s.excerpt(h)
                    ),
                    status: 401,
                    body: String::new(),
                })?)
            }
            st => {
                let body = error_text(resp, timeout).await;
                return Err(OciError::Status {
                    what: format!("GET {ping} (is {} an OCI registry?)", s.registry),
                    status: st.as_u16(),
                    body: s.excerpt(&body),
                });
            }
        };
        if let (Some(Challenge::Basic { realm }), Some(l)) = (&challenge, &s.login) {
            let r = get(Some(l))
                .await?
                .map_err(|e| Self::unreachable(s, &ping, &e))?;
            if r.status() == StatusCode::UNAUTHORIZED {
                let body = error_text(r, timeout).await;
                return Err(OciError::Unauthorized {
                    registry: s.registry.clone(),
                    realm: realm.clone(),
                    user: l.username.clone(),
                    origin: l.origin.clone(),
                    detail: format!("HTTP 401 {}", s.excerpt(&body)),
                });
            }
        }
        Ok(challenge)
    }

    /// The token realm rules: https unless the registry itself is plain
    /// HTTP (`--plain-http`); the registry's own host and port, or a host
    /// allowed by [`ClientOptions::allow_token_realms`] (and Docker Hub's
    /// `auth.docker.io` for `docker.io`).
    fn check_realm(&self, s: &Session, realm: &str) -> Result<(), OciError> {
        let refuse = |rule: String| OciError::TokenRealm {
            registry: s.registry.clone(),
            realm: sanitize(realm, []),
            rule,
        };
        let url = Url::parse(realm).map_err(|e| refuse(format!("not a URL ({e})")))?;
        match url.scheme() {
            "https" => {}
            "http" if s.base.scheme() == "http" => {}
            "http" => {
                return Err(refuse(format!(
                    "the realm is plain http while {} is spoken to over https (a token realm may be plain http only for a registry given with --plain-http)",
                    s.registry
                )));
            }
            other => return Err(refuse(format!("scheme {other:?} is not https"))),
        }
        let (host, port) = authority(&url);
        if (host.clone(), port) == authority(&s.base) {
            return Ok(());
        }
        let allowed = self.realm_allowed(&url)
            || (s.registry == "docker.io" && host == "auth.docker.io" && port == 443);
        if allowed {
            return Ok(());
        }
        Err(refuse(format!(
            "the realm is on {host}:{port}, not on the registry's host {} (allow it with --allow-token-realm {host}:{port})",
            s.base.host_str().unwrap_or_default()
        )))
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
                let raw = format!("{}:{}", l.username, l.password.expose_secret());
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
                let token = self
                    .fetch_token(s, realm, service.as_deref(), scopes)
                    .await?;
                s.tokens
                    .lock()
                    .expect("token cache")
                    .insert(key, token.clone());
                Ok(Some(format!("Bearer {token}")))
            }
        }
    }

    /// `GET <realm>?service=&scope=...` with the login (Basic), the realm
    /// already checked by [`Registries::check_realm`]; the answer's `token`
    /// (or `access_token`), read up to [`MAX_SMALL_BODY`].
    async fn fetch_token(
        &self,
        s: &Session,
        realm: &str,
        service: Option<&str>,
        scopes: &[String],
    ) -> Result<String, OciError> {
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
            req = req.basic_auth(&l.username, Some(l.password.expose_secret()));
        }
        let timeout = self.opts.read_timeout;
        let resp = idle(
            timeout,
            &s.registry,
            || format!("GET token from {realm}"),
            req.send(),
        )
        .await?
        .map_err(|e| OciError::Unreachable {
            registry: s.registry.clone(),
            url: realm.to_string(),
            detail: root_cause(&e),
        })?;
        let status = resp.status();
        if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
            let body = error_text(resp, timeout).await;
            return Err(match &s.login {
                Some(l) => OciError::Unauthorized {
                    registry: s.registry.clone(),
                    realm: realm.to_string(),
                    user: l.username.clone(),
                    origin: l.origin.clone(),
                    detail: format!("HTTP {} {}", status.as_u16(), s.excerpt(&body)),
                },
                None => self.no_login(s),
            });
        }
        if !status.is_success() {
            let body = error_text(resp, timeout).await;
            return Err(OciError::Status {
                what: format!("token from {realm} for {}", scopes.join(" ")),
                status: status.as_u16(),
                body: s.excerpt(&body),
            });
        }
        let what = format!("token answer of {realm}");
        let body = read_capped(resp, MAX_SMALL_BODY, timeout, &s.registry, &what).await?;
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
        v.get("token")
            .or_else(|| v.get("access_token"))
            .and_then(|t| t.as_str())
            .map(str::to_string)
            .ok_or_else(|| OciError::Format {
                what,
                detail: "no \"token\" or \"access_token\"".into(),
            })
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
        let mut detail = root_cause(e);
        // rustls reading an HTTP answer as a TLS record (issue #42 item 5).
        if url.scheme() == "https"
            && (detail.contains("InvalidContentType") || detail.contains("corrupt message"))
        {
            detail.push_str(&format!(
                " (the registry answers plain HTTP, not TLS: if it is meant to, pass --plain-http {})",
                s.registry
            ));
        }
        if e.is_connect() {
            OciError::Unreachable {
                registry: s.registry.clone(),
                url: url.to_string(),
                detail,
            }
        } else {
            OciError::Transfer {
                what: format!("{url}"),
                detail,
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
    ) -> Result<(Arc<Session>, reqwest::Response), OciError> {
        let s = self.session(repo).await?;
        let url = Self::url(&s, repo, tail);
        let resp = self
            .send(
                &s,
                &Self::scopes(repo, push, None),
                method,
                url,
                headers,
                body,
            )
            .await?;
        Ok((s, resp))
    }

    /// Sends the built request `req` (`method` `url`) once, waiting for the
    /// answer's head at most the read timeout; a request that cannot be
    /// sent is [`Self::unreachable`].
    async fn send_once(
        &self,
        s: &Session,
        method: &dyn std::fmt::Display,
        url: &Url,
        req: reqwest::RequestBuilder,
    ) -> Result<reqwest::Response, OciError> {
        idle(
            self.opts.read_timeout,
            &s.registry,
            || format!("{method} {url}"),
            req.send(),
        )
        .await?
        .map_err(|e| Self::unreachable(s, url, &e))
    }

    /// Sends a request with no body (or a small one), authorizing it and
    /// retrying once with a fresh token after a 401; waits for the answer
    /// at most the read timeout.
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
            let resp = self.send_once(s, &method, &url, req).await?;
            if resp.status() == StatusCode::UNAUTHORIZED
                && !fresh
                && matches!(s.challenge, Some(Challenge::Bearer { .. }))
            {
                fresh = true;
                continue;
            }
            if resp.status() == StatusCode::UNAUTHORIZED {
                let body = error_text(resp, self.opts.read_timeout).await;
                return Err(match (&s.login, &s.challenge) {
                    (Some(l), c) => OciError::Unauthorized {
                        registry: s.registry.clone(),
                        realm: c
                            .as_ref()
                            .map(|c| c.realm().to_string())
                            .unwrap_or_default(),
                        user: l.username.clone(),
                        origin: l.origin.clone(),
                        detail: format!("{method} {url}: HTTP 401 {}", s.excerpt(&body)),
                    },
                    (None, _) => self.no_login(s),
                });
            }
            return Ok(resp);
        }
    }

    /// An unexpected answer: its status and the start of its body (sanitized).
    async fn fail(&self, s: &Session, what: String, resp: reqwest::Response) -> OciError {
        let status = resp.status().as_u16();
        let body = error_text(resp, self.opts.read_timeout).await;
        OciError::Status {
            what,
            status,
            body: s.excerpt(&body),
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

    /// `GET` a manifest by tag or digest, at most [`MAX_MANIFEST`] bytes.
    /// When `reference` is a digest the bytes are checked against it.
    /// Errors: a reference that is neither a tag nor a digest
    /// ([`check_reference`], nothing is sent), not found, too large, bad
    /// JSON, schema 1.
    pub async fn get_manifest(&self, repo: &Repo, reference: &str) -> Result<Manifest, OciError> {
        let what = format!("manifest {repo}:{reference}");
        check_reference(reference).map_err(|e| OciError::Format {
            what: what.clone(),
            detail: e.0,
        })?;
        let (s, resp) = self
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
            return Err(self.fail(&s, format!("GET {what}"), resp).await);
        }
        let ct = resp
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let bytes = read_capped(
            resp,
            MAX_MANIFEST,
            self.opts.read_timeout,
            &s.registry,
            &what,
        )
        .await?;
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
        let (s, resp) = self
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
            st if st.is_success() => Ok(true),
            StatusCode::NOT_FOUND => Ok(false),
            _ => Err(self
                .fail(&s, format!("HEAD blob {repo}@{digest}"), resp)
                .await),
        }
    }

    /// `GET` a blob as a stream of chunks (not yet verified: the caller
    /// hashes while it forwards, see [`Registries::upload_blob`]); a pause
    /// longer than the read timeout ends the stream with
    /// [`OciError::Timeout`].
    pub async fn get_blob(
        &self,
        repo: &Repo,
        digest: &Digest,
    ) -> Result<impl Stream<Item = Result<Bytes, OciError>> + Send + Unpin + 'static, OciError>
    {
        let (s, resp) = self
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
            return Err(self
                .fail(&s, format!("GET blob {repo}@{digest}"), resp)
                .await);
        }
        let what = format!("blob {repo}@{digest}");
        let timeout = self.opts.read_timeout;
        let registry = s.registry.clone();
        Ok(Box::pin(futures_util::stream::unfold(
            Some(resp),
            move |resp| {
                let (what, registry) = (what.clone(), registry.clone());
                async move {
                    let mut resp = resp?;
                    let r = idle(
                        timeout,
                        &registry,
                        || format!("reading {what}"),
                        resp.chunk(),
                    )
                    .await
                    .and_then(|c| {
                        c.map_err(|e| OciError::Transfer {
                            what: what.clone(),
                            detail: root_cause(&e),
                        })
                    });
                    match r {
                        Ok(Some(piece)) => Some((Ok(piece), Some(resp))),
                        Ok(None) => None,
                        Err(e) => Some((Err(e), None)),
                    }
                }
            },
        )))
    }

    /// `PUT` a manifest under `reference` (tag or digest), bytes unchanged.
    /// Errors: a reference outside the tag and digest grammar
    /// ([`check_reference`]: nothing is sent), or the registry's refusal.
    pub async fn put_manifest(
        &self,
        repo: &Repo,
        reference: &str,
        m: &Manifest,
    ) -> Result<(), OciError> {
        check_reference(reference).map_err(|e| OciError::Format {
            what: format!("PUT manifest {repo}:{reference}"),
            detail: e.0,
        })?;
        let (s, resp) = self
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
            return Err(self
                .fail(
                    &s,
                    format!("PUT manifest {repo}:{reference} ({})", m.digest),
                    resp,
                )
                .await);
        }
        Ok(())
    }
}
