//! Authentication, on by default (issue #41; assisted-service `pkg/auth`,
//! whose `AUTH_TYPE=local` is the model, the reference's §1.2).
//!
//! The service's secrets are in [`keys`]: the admin token (users, the web
//! page) and the agent-signing key (ES256 agent tokens). Without them
//! (`--insecure-no-auth`, loopback only) every call passes.
//!
//! - user calls: `Authorization: Bearer <admin token>` (or the web page's
//!   session cookie);
//! - agent calls: `X-Secret-Key: <agent token>`:
//!   - the infra-env's **discovery token** (`PULL_SECRET_TOKEN` of its
//!     discovery Ignition) registers hosts of that infra-env, and nothing
//!     else;
//!   - the **host token** the registration returns
//!     (`host_registration_response.host_token`, an okd-install
//!     extension) acts for that one host: its steps, replies, progress,
//!     Ignition and logs. A call for another host id is refused with 403
//!     and a warning event; a token from before the host's last
//!     registration is refused with 401 "revoked".
//!
//!   A token of another infra-env is refused with 403; one of an older
//!   signing generation (`POST /v2/infra-envs/{id}/regenerate-signing-key`)
//!   with 401 "revoked". The admin token is accepted on agent calls too.
//!
//! Failures use the swagger's `infra_error` body `{"code":401,"message":…}`;
//! tokens never appear in logs or bodies.

pub mod keys;

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use okd_assisted_api::rest::InfraError;

pub use keys::{AgentClaims, AuthError, Keys};

use crate::Shared;

/// A refused call: the status and the swagger's `infra_error` body with
/// words (also [`crate::guard`]'s refusals).
pub(crate) fn refuse(code: StatusCode, message: impl Into<String>) -> Response {
    let body = InfraError {
        code: code.as_u16(),
        message: message.into(),
    };
    (code, axum::Json(body)).into_response()
}

/// Who made an agent call, as [`agent`] established it (a request
/// extension the handlers read).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Caller {
    /// The service runs without authentication.
    Open,
    /// The admin token.
    Admin,
    /// An infra-env's discovery token: registration only.
    Discovery,
    /// A host token of this host id.
    Host(String),
}

/// The name of the web page's session cookie (HttpOnly, SameSite=Strict).
pub const COOKIE: &str = "okd-assisted-token";

/// The user token of a request: `Authorization: Bearer <t>`, else the web
/// page's cookie.
fn bearer(req: &Request) -> Option<&str> {
    let h = req.headers();
    if let Some(t) = h
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
    {
        return Some(t);
    }
    h.get_all(axum::http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|kv| kv.trim().strip_prefix(COOKIE)?.strip_prefix('='))
}

/// The sign-in page shown instead of the web page while the service
/// requires a token and the browser has none (no script: a form posting
/// to `/login`).
fn sign_in(message: &str) -> Response {
    let page = maud::html! {
        (maud::DOCTYPE)
        html lang="en" {
            head { meta charset="utf-8"; title { "Assisted installer: sign in" } }
            body style="font-family: sans-serif; max-width: 28em; margin: 4em auto" {
                h1 { "Assisted installer" }
                p { "This service requires its admin token: the file " code { "assisted-service/admin-token" } " in the directory the service runs in (okd-install --dir), or the --auth-token it was started with." }
                @if !message.is_empty() { p #login-error style="color: #a00" { (message) } }
                form method="post" action="/login" {
                    label { "Token " input type="password" name="token" autofocus; }
                    " " button type="submit" { "Sign in" }
                }
            }
        }
    };
    (
        StatusCode::UNAUTHORIZED,
        [
            (axum::http::header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (
                axum::http::header::CONTENT_SECURITY_POLICY,
                "default-src 'none'; form-action 'self'; style-src 'unsafe-inline'",
            ),
        ],
        page.into_string(),
    )
        .into_response()
}

/// Middleware of the web page: with authentication on, the session cookie
/// must carry the admin token, else the sign-in page.
pub async fn page(State(s): State<Shared>, req: Request, next: Next) -> Response {
    let Some(keys) = s.opts.auth.as_deref() else {
        return next.run(req).await;
    };
    match bearer(&req) {
        Some(t) if keys.is_admin(t) => next.run(req).await,
        _ => sign_in(""),
    }
}

/// The sign-in form's field.
#[derive(Debug, serde::Deserialize)]
pub struct Login {
    token: String,
}

/// `POST /login`: the right token sets the session cookie (HttpOnly,
/// SameSite=Strict, so other sites' pages cannot use it; Secure when the
/// service speaks TLS) and goes to the clusters; a wrong one shows the form
/// again. At most [`SignIns::MAX_FAILURES`] wrong tokens a minute per
/// client address; beyond that 429 with `Retry-After`.
pub async fn login(
    State(s): State<Shared>,
    axum::extract::ConnectInfo(peer): axum::extract::ConnectInfo<std::net::SocketAddr>,
    axum::Form(f): axum::Form<Login>,
) -> Response {
    let Some(keys) = s.opts.auth.as_deref() else {
        return (StatusCode::SEE_OTHER, [(axum::http::header::LOCATION, "/")]).into_response();
    };
    if let Some(wait) = s.sign_ins.blocked(peer.ip()) {
        return (
            StatusCode::TOO_MANY_REQUESTS,
            [(
                axum::http::header::RETRY_AFTER,
                wait.as_secs().max(1).to_string(),
            )],
            format!(
                "too many wrong tokens from {}: at most {} a minute; try again in {} s",
                peer.ip(),
                SignIns::MAX_FAILURES,
                wait.as_secs().max(1)
            ),
        )
            .into_response();
    }
    if !keys.is_admin(&f.token) {
        s.sign_ins.failed(peer.ip());
        return sign_in("That is not this service's token.");
    }
    s.sign_ins.succeeded(peer.ip());
    let secure = if s.opts.tls_enabled() { "; Secure" } else { "" };
    let cookie = format!(
        "{COOKIE}={}; Path=/; HttpOnly; SameSite=Strict{secure}",
        f.token
    );
    (
        StatusCode::SEE_OTHER,
        [
            (axum::http::header::SET_COOKIE, cookie),
            (axum::http::header::LOCATION, "/".to_string()),
        ],
    )
        .into_response()
}

/// Wrong sign-ins per client address in the current minute (bounded:
/// [`SignIns::MAX_CLIENTS`] addresses; when that many have failed within
/// the minute, new addresses are refused too until one's minute ends).
#[derive(Debug, Default)]
pub struct SignIns(
    std::sync::Mutex<std::collections::HashMap<std::net::IpAddr, (std::time::Instant, u32)>>,
);

impl SignIns {
    /// Wrong tokens a client address may send a minute.
    pub const MAX_FAILURES: u32 = 10;
    /// Client addresses remembered at most.
    pub const MAX_CLIENTS: usize = 4096;
    const WINDOW: std::time::Duration = std::time::Duration::from_secs(60);

    fn lock(
        &self,
    ) -> std::sync::MutexGuard<
        '_,
        std::collections::HashMap<std::net::IpAddr, (std::time::Instant, u32)>,
    > {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// How long `ip` must wait before it may try again; `None`: it may.
    pub fn blocked(&self, ip: std::net::IpAddr) -> Option<std::time::Duration> {
        let now = std::time::Instant::now();
        let mut m = self.lock();
        m.retain(|_, (start, _)| now.duration_since(*start) < Self::WINDOW);
        match m.get(&ip) {
            Some((start, n)) if *n >= Self::MAX_FAILURES => {
                Some(Self::WINDOW.saturating_sub(now.duration_since(*start)))
            }
            Some(_) => None,
            None if m.len() >= Self::MAX_CLIENTS => {
                let oldest = m.values().map(|(t, _)| *t).min().unwrap_or(now);
                Some(Self::WINDOW.saturating_sub(now.duration_since(oldest)))
            }
            None => None,
        }
    }

    /// Counts a wrong token from `ip`.
    pub fn failed(&self, ip: std::net::IpAddr) {
        let now = std::time::Instant::now();
        let mut m = self.lock();
        let e = m.entry(ip).or_insert((now, 0));
        e.1 += 1;
    }

    /// Forgets `ip`'s failures.
    pub fn succeeded(&self, ip: std::net::IpAddr) {
        self.lock().remove(&ip);
    }
}

/// Middleware of user routes: the admin token, unless the service runs
/// without authentication.
pub async fn user(State(s): State<Shared>, req: Request, next: Next) -> Response {
    let Some(keys) = s.opts.auth.as_deref() else {
        return next.run(req).await;
    };
    match bearer(&req) {
        Some(t) if keys.is_admin(t) => next.run(req).await,
        Some(_) => refuse(
            StatusCode::UNAUTHORIZED,
            "the Authorization token is not this service's admin token",
        ),
        None => refuse(
            StatusCode::UNAUTHORIZED,
            "this service requires its admin token: send Authorization: Bearer <token> (the file assisted-service/admin-token in the service's directory; okd-install assisted … reads it from there, or --token / OKD_ASSISTED_TOKEN)",
        ),
    }
}

/// The value of path segment `name`'s successor (`…/<name>/<value>/…`).
fn segment_after<'a>(path: &'a str, names: &[&str]) -> Option<&'a str> {
    let mut parts = path.split('/');
    if parts.any(|p| names.contains(&p)) {
        return parts.next().filter(|p| !p.is_empty());
    }
    None
}

/// The value of query parameter `key`, when given exactly once and
/// unencoded (the handler reads the same value); `None` otherwise.
fn query_once<'a>(uri: &'a axum::http::Uri, key: &str) -> Option<&'a str> {
    let mut given = uri
        .query()?
        .split('&')
        .filter(|kv| {
            kv.split('=')
                .next()
                .is_some_and(|k| k.contains(key) || k.contains('%'))
        })
        .map(|kv| kv.strip_prefix(key).and_then(|v| v.strip_prefix('=')));
    let first = given.next()??;
    let once = given.next().is_none();
    (once && !first.is_empty() && !first.contains(['%', '+'])).then_some(first)
}

/// The infra-env an agent call is for: the path segment after
/// `infra-envs/` (or the swagger's singular `infra-env/`), else the
/// `infra_env_id` query parameter (the logs upload), which must then be
/// given once, unencoded.
fn infra_env_of(uri: &axum::http::Uri) -> Option<&str> {
    segment_after(uri.path(), &["infra-envs", "infra-env"])
        .or_else(|| query_once(uri, "infra_env_id"))
}

/// The host an agent call is for: the path segment after `hosts/`, else
/// the `host_id` query parameter (the logs upload); `None` for the
/// registration (`POST …/hosts`, whose body names the host).
fn host_of(uri: &axum::http::Uri) -> Option<&str> {
    segment_after(uri.path(), &["hosts"]).or_else(|| query_once(uri, "host_id"))
}

/// Whether the call is a host registration (`POST …/infra-envs/{id}/hosts`).
fn is_registration(req: &Request) -> bool {
    req.method() == axum::http::Method::POST
        && req
            .uri()
            .path()
            .trim_end_matches('/')
            .rsplit('/')
            .nth(2)
            .is_some_and(|p| p == "infra-envs")
        && req.uri().path().trim_end_matches('/').ends_with("/hosts")
}

/// Middleware of agent routes (module docs): sets the [`Caller`]
/// extension, or refuses.
pub async fn agent(State(s): State<Shared>, mut req: Request, next: Next) -> Response {
    let Some(keys) = s.opts.auth.as_deref() else {
        req.extensions_mut().insert(Caller::Open);
        return next.run(req).await;
    };
    if bearer(&req).is_some_and(|t| keys.is_admin(t)) {
        req.extensions_mut().insert(Caller::Admin);
        return next.run(req).await;
    }
    let Some(given) = req
        .headers()
        .get("x-secret-key")
        .and_then(|v| v.to_str().ok())
    else {
        return refuse(
            StatusCode::UNAUTHORIZED,
            "agent calls need a token in X-Secret-Key: the infra-env's discovery token (PULL_SECRET_TOKEN of the discovery Ignition) to register, then the host token the registration returned",
        );
    };
    let Some(claim) = keys.verify(given) else {
        return refuse(
            StatusCode::UNAUTHORIZED,
            "the agent token is not valid for this service (not signed by its agent-signing key)",
        );
    };
    let Some(ie) = infra_env_of(req.uri()).map(str::to_string) else {
        return refuse(
            StatusCode::FORBIDDEN,
            "agent tokens are only for infra-env calls",
        );
    };
    if claim.infra_env_id != ie {
        return refuse(
            StatusCode::FORBIDDEN,
            format!(
                "the agent token is for infra-env {}, not {ie}",
                claim.infra_env_id
            ),
        );
    }
    let caller = match &claim.host_id {
        None if is_registration(&req) => Caller::Discovery,
        None => {
            return refuse(
                StatusCode::FORBIDDEN,
                "the discovery token only registers hosts: use the host token the registration returned",
            );
        }
        Some(h) => {
            if let Some(target) = host_of(req.uri())
                && target != h
            {
                let target = target.to_string();
                return cross_host(&s, &ie, h, &target).await;
            }
            Caller::Host(h.clone())
        }
    };
    let state = match s.db.token_state(&ie, claim.host_id.as_deref()).await {
        Ok(Some(st)) => st,
        Ok(None) => {
            return refuse(StatusCode::NOT_FOUND, format!("infra-env {ie} not found"));
        }
        Err(e) => return crate::api::Failure::from(e).into_response(),
    };
    if state.0 != claim.generation {
        return refuse(
            StatusCode::UNAUTHORIZED,
            "the agent token was revoked (the infra-env's signing key was regenerated): use its new discovery Ignition",
        );
    }
    if claim.host_id.is_some() && state.1 != claim.registered_at {
        return refuse(
            StatusCode::UNAUTHORIZED,
            "the host token was revoked (the host registered again since, or was deleted): register with the discovery token",
        );
    }
    req.extensions_mut().insert(caller);
    next.run(req).await
}

/// A host token used for another host: 403, and a warning event on the
/// token's host (at most one a minute per pair, so refused calls cannot
/// flood the events).
async fn cross_host(s: &Shared, ie: &str, from: &str, to: &str) -> Response {
    if s.refusals.first_in_a_while(&format!("{ie}/{from}/{to}")) {
        let cluster = match s.db.infra_env(ie).await {
            Ok(Some(e)) => e.cluster_id,
            _ => String::new(),
        };
        crate::events::emit(
            &s.db,
            crate::events::Scope {
                cluster_id: &cluster,
                infra_env_id: ie,
                host_id: from,
            },
            "warning",
            "host_token_misused",
            format!(
                "Host {from}: its token was used for host {to}, refused (a host acts only for itself; a host that sends this is compromised or misconfigured)"
            ),
        )
        .await;
    }
    refuse(
        StatusCode::FORBIDDEN,
        format!("this host token is for host {from}, not {to}"),
    )
}

/// Which refusals were recently made an event of (key → when), so a
/// repeated refusal is an event at most once a minute. Bounded: at most
/// [`Refusals::MAX`] keys, the oldest forgotten first.
#[derive(Debug, Default)]
pub struct Refusals(std::sync::Mutex<std::collections::HashMap<String, std::time::Instant>>);

impl Refusals {
    /// Keys remembered at most.
    pub const MAX: usize = 4096;
    /// How long a refusal is not made an event again.
    pub const QUIET: std::time::Duration = std::time::Duration::from_secs(60);

    /// Whether `key` was not noted within [`Refusals::QUIET`]; notes it.
    pub fn first_in_a_while(&self, key: &str) -> bool {
        let now = std::time::Instant::now();
        let mut m = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if m.get(key)
            .is_some_and(|t| now.duration_since(*t) < Self::QUIET)
        {
            return false;
        }
        if m.len() >= Self::MAX {
            m.retain(|_, t| now.duration_since(*t) < Self::QUIET);
            if m.len() >= Self::MAX
                && let Some(oldest) = m.iter().min_by_key(|(_, t)| **t).map(|(k, _)| k.clone())
            {
                m.remove(&oldest);
            }
        }
        m.insert(key.to_string(), now);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_name_their_infra_env_and_host() {
        let ie =
            |u: &'static str| infra_env_of(&axum::http::Uri::from_static(u)).map(str::to_string);
        let host = |u: &'static str| host_of(&axum::http::Uri::from_static(u)).map(str::to_string);
        assert_eq!(
            ie("/api/assisted-install/v2/infra-envs/abc/hosts").as_deref(),
            Some("abc")
        );
        assert_eq!(host("/api/assisted-install/v2/infra-envs/abc/hosts"), None);
        assert_eq!(
            ie("/api/assisted-install/v2/infra-env/abc/hosts/x/downloads/ignition").as_deref(),
            Some("abc")
        );
        assert_eq!(
            host("/api/assisted-install/v2/infra-env/abc/hosts/x/downloads/ignition").as_deref(),
            Some("x")
        );
        let logs = "/api/assisted-install/v2/clusters/c/logs";
        assert_eq!(ie(logs), None);
        let q =
            "/api/assisted-install/v2/clusters/c/logs?logs_type=host&infra_env_id=abc&host_id=h";
        assert_eq!(ie(q).as_deref(), Some("abc"));
        assert_eq!(host(q).as_deref(), Some("h"));
        // Given twice, or encoded, the handler might read another one.
        for twice in [
            "/api/assisted-install/v2/clusters/c/logs?infra_env_id=abc&infra_env_id=xyz",
            "/api/assisted-install/v2/clusters/c/logs?infra_env_id=abc&infra%5Fenv%5Fid=xyz",
            "/api/assisted-install/v2/clusters/c/logs?infra_env_id=a%62c",
        ] {
            assert_eq!(ie(twice), None, "{twice}");
        }
        assert_eq!(
            host("/api/assisted-install/v2/clusters/c/logs?infra_env_id=a&host_id=h&host_id=g"),
            None
        );
    }

    #[test]
    fn registration_is_a_post_of_an_infra_envs_hosts() {
        let req = |m: &str, u: &str| {
            axum::http::Request::builder()
                .method(m)
                .uri(u)
                .body(axum::body::Body::empty())
                .unwrap()
        };
        assert!(is_registration(&req(
            "POST",
            "/api/assisted-install/v2/infra-envs/a/hosts"
        )));
        assert!(!is_registration(&req(
            "GET",
            "/api/assisted-install/v2/infra-envs/a/hosts"
        )));
        assert!(!is_registration(&req(
            "POST",
            "/api/assisted-install/v2/infra-envs/a/hosts/h/instructions"
        )));
        assert!(!is_registration(&req(
            "POST",
            "/api/assisted-install/v2/clusters/c/logs?x=/infra-envs/a/hosts"
        )));
    }

    #[test]
    fn sign_ins_are_limited_per_address() {
        let s = SignIns::default();
        let (a, b): (std::net::IpAddr, std::net::IpAddr) =
            ("192.0.2.1".parse().unwrap(), "192.0.2.2".parse().unwrap());
        for _ in 0..SignIns::MAX_FAILURES {
            assert_eq!(s.blocked(a), None);
            s.failed(a);
        }
        let wait = s.blocked(a).expect("blocked after ten failures");
        assert!(wait <= std::time::Duration::from_secs(60));
        assert_eq!(s.blocked(b), None, "another address is not");
        s.succeeded(a);
        assert_eq!(s.blocked(a), None);
    }

    #[test]
    fn refusals_are_events_once_a_minute() {
        let r = Refusals::default();
        assert!(r.first_in_a_while("a"));
        assert!(!r.first_in_a_while("a"));
        assert!(r.first_in_a_while("b"));
        for i in 0..Refusals::MAX + 10 {
            r.first_in_a_while(&i.to_string());
        }
        assert!(r.0.lock().unwrap().len() <= Refusals::MAX);
    }
}
