//! Requests a browser could be made to send (issue #41, "browser
//! safety"): a web page the admin visits must not drive this service,
//! even one bound to loopback and even without authentication.
//!
//! - **Host** (DNS rebinding, where an attacker's name resolves to the
//!   service's address): the `Host` header must be an IP address literal,
//!   `localhost`, or one of the service's names (`--service-name`, the
//!   names its certificate carries); otherwise 421 Misdirected Request.
//!   An IP literal cannot be rebound.
//! - **Origin** (cross-site requests, the Fetch standard's `Origin` and
//!   `Sec-Fetch-Site` headers): a state-changing request (any method but
//!   GET, HEAD, OPTIONS) with `Sec-Fetch-Site` other than `same-origin` or
//!   `none`, or with an `Origin` whose host and port are not the `Host`,
//!   is refused with 403. Programs (agents, the client commands) send
//!   neither header.
//! - **Content-Type**: a state-changing request with a body must say
//!   `application/json`, except the logs upload (`multipart/form-data`)
//!   and the sign-in form (`application/x-www-form-urlencoded`); a
//!   `text/plain` body (which a cross-site form or `fetch()` may send
//!   without a CORS preflight) is refused with 415.
//!
//! Refusals use the swagger's `infra_error` body and name the rule.

use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;

use crate::Shared;
use crate::auth::refuse;

/// The host part of a `host[:port]` authority (brackets of an IPv6
/// literal kept off), lower-cased.
fn host_part(authority: &str) -> String {
    let a = authority.trim();
    let host = if let Some(rest) = a.strip_prefix('[') {
        rest.split(']').next().unwrap_or("")
    } else {
        a.rsplit_once(':')
            .filter(|(_, port)| port.chars().all(|c| c.is_ascii_digit()))
            .map_or(a, |(h, _)| h)
    };
    host.to_ascii_lowercase()
}

/// Whether `authority` (a `Host` header) names this service: an IP
/// literal, `localhost`, or one of `names` (case-insensitive).
pub fn host_allowed(authority: &str, names: &[String]) -> bool {
    let host = host_part(authority);
    if host.is_empty() {
        return false;
    }
    host.parse::<std::net::IpAddr>().is_ok()
        || host == "localhost"
        || names.iter().any(|n| n.eq_ignore_ascii_case(&host))
}

/// Why a state-changing request looks cross-site; `None` when it does not.
fn cross_site(headers: &HeaderMap, host: &str) -> Option<String> {
    if let Some(site) = headers.get("sec-fetch-site").and_then(|v| v.to_str().ok())
        && !matches!(site, "same-origin" | "none")
    {
        return Some(format!(
            "Sec-Fetch-Site: {site}: state-changing requests from other sites' pages are refused"
        ));
    }
    let origin = headers.get(header::ORIGIN)?;
    let origin = origin.to_str().unwrap_or("null");
    let authority = origin
        .split_once("://")
        .map(|(_, rest)| rest.split('/').next().unwrap_or(""));
    match authority {
        Some(a) if a.eq_ignore_ascii_case(host) => None,
        _ => Some(format!(
            "Origin {origin:?} is not this service ({host}): state-changing requests from other sites' pages are refused"
        )),
    }
}

/// Whether the request carries a body.
fn has_body(headers: &HeaderMap) -> bool {
    headers.contains_key(header::TRANSFER_ENCODING)
        || headers
            .get(header::CONTENT_LENGTH)
            .is_some_and(|v| v.to_str().map_or(true, |v| v.trim() != "0"))
}

/// The media type the path takes besides JSON.
fn other_media_type(path: &str) -> Option<&'static str> {
    if path == "/login" {
        Some("application/x-www-form-urlencoded")
    } else if path.ends_with("/logs") {
        Some("multipart/form-data")
    } else {
        None
    }
}

/// The middleware of every route (module docs).
pub async fn request(State(s): State<Shared>, req: Request, next: Next) -> Response {
    let headers = req.headers();
    let Some(host) = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .or_else(|| req.uri().authority().map(|a| a.as_str()))
        .map(str::to_string)
    else {
        return refuse(
            StatusCode::BAD_REQUEST,
            "no Host header (HTTP/1.1 requires one)",
        );
    };
    if !host_allowed(&host, &s.opts.service_names) {
        return refuse(
            StatusCode::MISDIRECTED_REQUEST,
            format!(
                "Host {host:?} is not a name of this service: use its address, or start it with --service-name {} (names other than IP addresses and localhost are refused, against DNS rebinding)",
                host_part(&host)
            ),
        );
    }
    if matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS) {
        return next.run(req).await;
    }
    if let Some(why) = cross_site(headers, &host) {
        return refuse(StatusCode::FORBIDDEN, why);
    }
    if has_body(headers) {
        let given = headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        let media = given
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        let other = other_media_type(req.uri().path());
        if media != "application/json" && Some(media.as_str()) != other {
            let want = match other {
                Some(o) => format!("application/json or {o}"),
                None => "application/json".to_string(),
            };
            return refuse(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                format!(
                    "Content-Type {given:?}: this request's body must be {want} (other types are refused: a page of another site can send them)"
                ),
            );
        }
    }
    next.run(req).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_that_cannot_be_rebound() {
        let names = vec!["assisted.example.com".to_string()];
        for ok in [
            "127.0.0.1:8090",
            "192.168.126.1",
            "[::1]:8090",
            "localhost:8090",
            "Assisted.Example.com:8090",
        ] {
            assert!(host_allowed(ok, &names), "{ok}");
        }
        for bad in ["attacker.example:8090", "", "127.0.0.1.nip.io:8090"] {
            assert!(!host_allowed(bad, &names), "{bad}");
        }
    }

    #[test]
    fn cross_site_requests() {
        let h = |pairs: &[(&'static str, &'static str)]| {
            let mut m = HeaderMap::new();
            for (k, v) in pairs {
                m.insert(*k, v.parse().unwrap());
            }
            m
        };
        assert_eq!(cross_site(&h(&[]), "127.0.0.1:8090"), None);
        assert_eq!(
            cross_site(&h(&[("origin", "http://127.0.0.1:8090")]), "127.0.0.1:8090"),
            None
        );
        assert!(cross_site(&h(&[("origin", "http://evil.example")]), "127.0.0.1:8090").is_some());
        assert!(cross_site(&h(&[("origin", "null")]), "127.0.0.1:8090").is_some());
        assert!(cross_site(&h(&[("sec-fetch-site", "cross-site")]), "127.0.0.1:8090").is_some());
        assert_eq!(
            cross_site(&h(&[("sec-fetch-site", "same-origin")]), "127.0.0.1:8090"),
            None
        );
        assert!(has_body(&h(&[("content-length", "5")])));
        assert!(!has_body(&h(&[("content-length", "0")])));
        assert!(!has_body(&h(&[])));
        assert!(has_body(&h(&[("transfer-encoding", "chunked")])));
    }
}
