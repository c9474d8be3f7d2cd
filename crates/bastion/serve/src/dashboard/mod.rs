//! The install dashboard: serve's status document turned into what a
//! person watching an install needs — per host a stage line (DNS answered
//! → Ignition fetched → CSRs approved → Node Ready; for the bootstrap host
//! its API and machine-config server up, bootstrap complete and its removal
//! from the load balancer), the load balancer as a
//! table with health, and warnings in plain words with the next step.
//!
//! [`annotate`] adds `stages` to each host and `warnings` to the document
//! (so `/status` keeps everything the page shows); [`page`] renders the
//! annotated document as one HTML page: semantic HTML, no external assets,
//! readable without JavaScript; a small script replaces the page's `<main>`
//! every second so it stays current.

use okd_serve_api::lb::{BackendStats, FrontendStats};
use okd_serve_api::status::{Certificates, HostStatus, HttpEvent, StatusDocument};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// An RFC 3339 time of the document.
fn parse_time(v: Option<&str>) -> Option<OffsetDateTime> {
    v.and_then(|s| OffsetDateTime::parse(s, &Rfc3339).ok())
}

/// "just now", "42 s ago", "2 min ago", "3 h ago", "2 days ago".
pub(crate) fn ago(t: OffsetDateTime, now: OffsetDateTime) -> String {
    let s = (now - t).whole_seconds();
    match s {
        i64::MIN..=4 => "just now".to_string(),
        5..=59 => format!("{s} s ago"),
        60..=3599 => format!("{} min ago", s / 60),
        3600..=86_399 => format!("{} h ago", s / 3600),
        _ => format!("{} days ago", s / 86_400),
    }
}

/// "in 20 h", "in 35 min" for a time ahead of `now`, else [`ago`].
pub(crate) fn until(t: OffsetDateTime, now: OffsetDateTime) -> String {
    let s = (t - now).whole_seconds();
    match s {
        i64::MIN..=0 => ago(t, now),
        1..=59 => format!("in {s} s"),
        60..=3599 => format!("in {} min", s / 60),
        3600..=86_399 => format!("in {} h {} min", s / 3600, (s % 3600) / 60),
        _ => format!("in {} days", s / 86_400),
    }
}

/// The first to expire of the short-lived (at most 25 hours) certificates
/// of `bootstrap.ign`, or `None` when the file is missing or has none.
/// Read as a stream with its large data URLs dropped unread
/// ([`okd_assets::ignition::read_small_parts`]: the node program is tens
/// of MB, certificates a few KiB).
pub(crate) fn short_lived(bootstrap_ign: &std::path::Path) -> Option<Certificates> {
    let cfg = okd_assets::ignition::read_small_parts(bootstrap_ign).ok()?;
    okd_assets::ignition::bootstrap_cert_validity(&cfg)
        .into_iter()
        .filter(|(_, nb, na)| (*na - *nb).whole_hours() <= 25)
        .min_by_key(|(_, _, na)| *na)
        .map(|(file, _, na)| Certificates {
            file,
            not_after: na.format(&Rfc3339).unwrap_or_default(),
        })
}

/// Whether an `http` event is a request for bootstrap.ign.
fn is_bootstrap_ign(e: &HttpEvent) -> bool {
    e.path.ends_with("/bootstrap.ign")
}

/// The host's names a kubelet may register as.
fn names_of(h: &HostStatus) -> [String; 2] {
    [h.hostname.to_lowercase(), h.fqdn.to_lowercase()]
}

mod page;
mod stages;
#[cfg(test)]
mod tests;
mod warnings;

pub(crate) use page::page;
pub(crate) use stages::token_stage;
use stages::{TOKEN_STAGE, stages};
use warnings::warnings;

/// A time in milliseconds since the Unix epoch (the load balancer's
/// `since_unix_ms`).
fn from_unix_ms(ms: u64) -> Option<OffsetDateTime> {
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000).ok()
}

/// RFC 3339 (as every other time of the document), `None` for none.
fn rfc3339(t: Option<OffsetDateTime>) -> Option<String> {
    t.and_then(|t| t.format(&Rfc3339).ok())
}

/// The load balancer's frontends, `None` when this serve runs none.
fn frontends(doc: &StatusDocument) -> Option<&[FrontendStats]> {
    doc.load_balancer.as_ref().map(|lb| lb.frontends.as_slice())
}

/// Whether a backend came up once: UP now, or a check passed before.
fn came_up(b: &BackendStats) -> bool {
    (b.checked && b.up) || b.last_ok_unix_ms.is_some()
}

/// Adds `hosts[].stages` and `warnings` to a status document.
pub(crate) fn annotate(doc: &mut StatusDocument, now: OffsetDateTime) {
    let st: Vec<_> = doc.hosts.iter().map(|h| stages(h, doc)).collect();
    for (h, st) in doc.hosts.iter_mut().zip(st) {
        h.stages = st;
    }
    doc.warnings = warnings(doc, now);
}
