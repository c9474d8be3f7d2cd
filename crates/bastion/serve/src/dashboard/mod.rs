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

use serde_json::{Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

fn parse_time(v: &Value) -> Option<OffsetDateTime> {
    v.as_str()
        .and_then(|s| OffsetDateTime::parse(s, &Rfc3339).ok())
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
/// of `bootstrap.ign`: `{"file", "notAfter"}` (RFC 3339), or null when the
/// file is missing or has none.
pub(crate) fn short_lived(bootstrap_ign: &std::path::Path) -> Value {
    let Ok(cfg) = std::fs::read(bootstrap_ign)
        .map_err(|_| ())
        .and_then(|b| serde_json::from_slice::<Value>(&b).map_err(|_| ()))
    else {
        return Value::Null;
    };
    okd_assets::ignition::bootstrap_cert_validity(&cfg)
        .into_iter()
        .filter(|(_, nb, na)| (*na - *nb).whole_hours() <= 25)
        .min_by_key(|(_, _, na)| *na)
        .map(|(file, _, na)| {
            json!({"file": file, "notAfter": na.format(&Rfc3339).unwrap_or_default()})
        })
        .unwrap_or(Value::Null)
}

/// Whether an `http` event is a request for bootstrap.ign.
fn is_bootstrap_ign(e: &Value) -> bool {
    e["path"]
        .as_str()
        .is_some_and(|p| p.ends_with("/bootstrap.ign"))
}

fn events(h: &Value, kind: &str) -> Vec<Value> {
    h[kind].as_array().cloned().unwrap_or_default()
}

/// The host's names a kubelet may register as.
fn names_of(h: &Value) -> Vec<String> {
    ["hostname", "fqdn"]
        .iter()
        .filter_map(|k| h[*k].as_str().map(str::to_lowercase))
        .collect()
}

mod page;
mod stages;
#[cfg(test)]
mod tests;
mod warnings;

pub(crate) use page::page;
use stages::stages;
use warnings::warnings;

/// A time in milliseconds since the Unix epoch (the load balancer's
/// `since_unix_ms`).
fn from_unix_ms(v: &Value) -> Option<OffsetDateTime> {
    v.as_i64()
        .and_then(|ms| OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000).ok())
}

/// RFC 3339 (as every other time of the document), null for none.
fn rfc3339(t: Option<OffsetDateTime>) -> Value {
    t.and_then(|t| t.format(&Rfc3339).ok())
        .map_or(Value::Null, Value::String)
}

/// Adds `hosts[].stages` and `warnings` to a status document.
pub(crate) fn annotate(doc: &mut Value, now: OffsetDateTime) {
    let ctx = json!({
        "clusterData": doc["clusterData"],
        "loadBalancer": doc["loadBalancer"],
        "bootstrapRemoved": doc["bootstrapRemoved"],
    });
    if let Some(hosts) = doc["hosts"].as_array_mut() {
        for h in hosts {
            let st = stages(h, &ctx);
            h["stages"] = Value::Array(st);
        }
    }
    let w = warnings(doc, now);
    doc["warnings"] = json!(w);
}
