//! The web UI (issue #24 item 3): server-rendered pages over the same
//! documents the REST API serves, mounted at `/`.
//!
//! - `GET /`: the clusters, each with its version, status, status info and
//!   host counts, linking to its page;
//! - `GET /clusters/{id}`: one cluster: its status, its validations
//!   (failing first, with their messages), its hosts (effective host name,
//!   its id or the shortest prefix of at least 8 characters no other host
//!   of the cluster shares, the primary interface's MAC and address, the
//!   installation disk, role or the suggested one, status, CPUs, memory,
//!   the bootstrap mark, the progress stage and each host's validations in
//!   a `<details>`),
//!   host name and role editable per host, an Install button, and its
//!   events, newest first.
//!
//! Rendered with maud, which escapes every interpolated string (`&`, `<`,
//! `>`, `"`); only the constant style sheet and script go in unescaped.
//! Nothing external is loaded (the service runs disconnected): the
//! Content-Security-Policy allows the page's own nonce'd style and script
//! and requests to the service itself only.
//!
//! The actions are `fetch()` calls of the REST API from a small script
//! (`PATCH …/hosts/{id}`, `POST …/actions/install`), with
//! `Authorization: Bearer <sessionStorage 'okd-assisted-token'>` when that
//! item is set; the API's `reason` of a refusal is shown next to the
//! button. Every 5 s the script fetches the page again and swaps the
//! `[data-live]` regions, except while a host's name or role has focus or
//! holds an unsaved change, or a request is under way (the edit would be
//! lost).
//!
//! The pull secret is not in the documents and never shown.

use std::collections::BTreeMap;

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use maud::{DOCTYPE, Markup, PreEscaped, html};
use okd_assisted_api::identity::{addresses, id_prefix, primary_interface};
use okd_assisted_api::rest::{self, Cluster, Event, Host, ValidationResult};
use serde_json::Value;

use crate::db::{ClusterRow, DbError, EventFilter};
use crate::{Shared, api, model};

/// The newest events shown on a cluster's page.
pub const EVENTS_SHOWN: usize = 100;

/// Host statuses in which the name and role may change (the REST API's
/// `update_host` refuses the others with a 409).
const HOST_EDITABLE: &[&str] = &[
    "discovering",
    "known",
    "insufficient",
    "pending-for-input",
    "disconnected",
    "discovering-unbound",
    "known-unbound",
    "insufficient-unbound",
];

/// Cluster statuses in which the Install button is offered (the API
/// itself answers 409 unless `ready`, with the reason).
const INSTALLABLE: &[&str] = &["insufficient", "ready", "pending-for-input"];

/// The UI's routes: `/`, `/clusters` (to `/`) and `/clusters/{id}`, and
/// `/login`; request bodies at most the JSON limit
/// ([`crate::limits::Limits::max_body_bytes`]).
pub fn routes(state: Shared) -> Router {
    let limit = state.opts.limits.json_body();
    let pages = Router::new()
        .route("/", get(clusters_page))
        .route("/clusters", get(|| async { Redirect::to("/") }))
        .route("/clusters/{cluster_id}", get(cluster_page))
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            crate::auth::page,
        ))
        .route("/login", axum::routing::post(crate::auth::login));
    crate::limits::with_body_limit(pages, limit).with_state(state)
}

// ---- handlers

/// Why a page cannot be shown.
enum UiError {
    NotFound(String),
    Db(DbError),
}

impl From<DbError> for UiError {
    fn from(e: DbError) -> UiError {
        UiError::Db(e)
    }
}

impl IntoResponse for UiError {
    fn into_response(self) -> Response {
        let (status, what) = match self {
            UiError::NotFound(what) => (StatusCode::NOT_FOUND, what),
            UiError::Db(e) if e.unavailable() => {
                tracing::warn!(error = %e, "database unavailable");
                (
                    StatusCode::SERVICE_UNAVAILABLE,
                    format!("The service's database is unavailable, try again later ({e})."),
                )
            }
            UiError::Db(e) => {
                tracing::error!(error = %e, "database error");
                (StatusCode::INTERNAL_SERVER_ERROR, e.to_string())
            }
        };
        let nonce = nonce();
        let body = html! {
            main {
                h1 { (status.as_u16()) " " (status.canonical_reason().unwrap_or("")) }
                p id="page-error" class="error" { (what) }
                p { a href="/" { "All clusters" } }
            }
        };
        let mut r = respond(&nonce, "Assisted installer", body);
        *r.status_mut() = status;
        r
    }
}

async fn clusters_page(State(s): State<Shared>) -> Result<Response, UiError> {
    let mut clusters = Vec::new();
    for c in s.db.clusters().await? {
        clusters.push(document(&s, &c).await?);
    }
    clusters.sort_by(|a, b| a.name.cmp(&b.name).then(a.id.cmp(&b.id)));
    let nonce = nonce();
    Ok(respond(
        &nonce,
        "Clusters · Assisted installer",
        clusters_body(&clusters),
    ))
}

async fn cluster_page(
    State(s): State<Shared>,
    Path(id): Path<String>,
) -> Result<Response, UiError> {
    let row =
        s.db.cluster(&id)
            .await?
            .ok_or_else(|| UiError::NotFound(format!("Cluster {id} not found.")))?;
    let cluster = document(&s, &row).await?;
    let mut events: Vec<Event> =
        s.db.events(&EventFilter {
            cluster_id: Some(id),
            ..EventFilter::default()
        })
        .await?
        .iter()
        .map(model::event_doc)
        .collect();
    let total = events.len();
    // Newest first: by time, and among equal times the later stored first
    // (the times of events stored close together may be out of order).
    events.reverse();
    events.sort_by_key(|e| std::cmp::Reverse(event_ms(&e.event_time)));
    events.truncate(EVENTS_SHOWN);
    let nonce = nonce();
    Ok(respond(
        &nonce,
        &format!("{} · Assisted installer", cluster.name),
        cluster_body(&cluster, &events, total),
    ))
}

/// The cluster document as `GET /clusters/{id}` serves it.
async fn document(s: &Shared, c: &ClusterRow) -> Result<Cluster, DbError> {
    let hosts = s.db.hosts_of_cluster(&c.id).await?;
    let invs: Vec<okd_assisted_api::Inventory> = hosts
        .iter()
        .filter_map(|h| serde_json::from_str(&h.inventory).ok())
        .collect();
    let refs: Vec<&okd_assisted_api::Inventory> = invs.iter().collect();
    Ok(model::cluster_doc(c, &hosts, api::networks_of(c, &refs)))
}

/// A fresh nonce for the page's style and script.
fn nonce() -> String {
    format!("{:032x}", rand::random::<u128>())
}

/// The whole HTML document with its headers: no caching, no framing, no
/// sniffing, no referrer, and a policy that loads nothing from elsewhere.
fn respond(nonce: &str, title: &str, main: Markup) -> Response {
    let doc = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                link rel="icon" href="data:,";
                title { (title) }
                style nonce=(nonce) { (PreEscaped(STYLE)) }
            }
            body data-api=(rest::BASE_PATH) {
                header class="bar" {
                    a href="/" { "OKD · Assisted installer" }
                    span id="refresh-state" role="status" {}
                }
                (main)
                script nonce=(nonce) { (PreEscaped(SCRIPT)) }
            }
        }
    };
    let csp = format!(
        "default-src 'none'; style-src 'nonce-{nonce}'; script-src 'nonce-{nonce}'; \
         connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; \
         frame-ancestors 'none'"
    );
    let mut r = (StatusCode::OK, doc.into_string() + "\n").into_response();
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    if let Ok(v) = HeaderValue::from_str(&csp) {
        h.insert(header::CONTENT_SECURITY_POLICY, v);
    }
    r
}

// ---- what the documents say

/// The colour family of a status: `ok`, `bad`, `busy` or `idle`.
fn tone(status: &str) -> &'static str {
    match status {
        "ready" | "known" | "known-unbound" | "installed" | "added-to-existing-cluster" => "ok",
        "insufficient"
        | "insufficient-unbound"
        | "pending-for-input"
        | "disconnected"
        | "disconnected-unbound"
        | "error"
        | "cancelled"
        | "installing-pending-user-action"
        | "disabled" => "bad",
        "preparing-for-installation"
        | "preparing-successful"
        | "installing"
        | "installing-in-progress"
        | "finalizing"
        | "rebooting"
        | "adding-hosts"
        | "binding" => "busy",
        _ => "idle",
    }
}

fn status_badge(status: &str, id: Option<&str>) -> Markup {
    let class = format!("status tone-{}", tone(status));
    html! { span id=[id] class=(class) { (status) } }
}

/// Failing first, then errors, pending, passed, disabled.
fn rank(status: &str) -> u8 {
    match status {
        "failure" => 0,
        "error" => 1,
        "success" => 3,
        "disabled" => 4,
        _ => 2,
    }
}

/// The results of `validations_info` with their category, failing first
/// (categories in a fixed order, then by name; results in their order).
fn validations(text: &str) -> Vec<(String, ValidationResult)> {
    let by_cat: BTreeMap<String, Vec<ValidationResult>> =
        serde_json::from_str(text).unwrap_or_default();
    let order = ["hardware", "network", "configuration", "hosts-data"];
    let mut cats: Vec<&String> = by_cat.keys().collect();
    cats.sort_by_key(|c| (order.iter().position(|o| o == c).unwrap_or(order.len()), *c));
    let mut out: Vec<(String, ValidationResult)> = cats
        .into_iter()
        .flat_map(|c| by_cat[c].iter().map(move |v| (c.clone(), v.clone())))
        .collect();
    out.sort_by_key(|(_, v)| rank(&v.status));
    out
}

fn mark(status: &str) -> &'static str {
    match status {
        "failure" | "error" => "✗",
        "success" => "✓",
        "disabled" => "–",
        _ => "…",
    }
}

/// `2 failing, 1 pending, 11 passed`.
fn tally(vs: &[(String, ValidationResult)]) -> String {
    let n = |f: &dyn Fn(&str) -> bool| vs.iter().filter(|(_, v)| f(&v.status)).count();
    let failing = n(&|s| s == "failure" || s == "error");
    let pending = n(&|s| !matches!(s, "failure" | "error" | "success" | "disabled"));
    let passed = n(&|s| s == "success");
    let mut parts = Vec::new();
    if failing > 0 {
        parts.push(format!("{failing} failing"));
    }
    if pending > 0 {
        parts.push(format!("{pending} pending"));
    }
    if passed > 0 {
        parts.push(format!("{passed} passed"));
    }
    if parts.is_empty() {
        "not computed yet".to_string()
    } else {
        parts.join(", ")
    }
}

fn validation_list(vs: &[(String, ValidationResult)], id: Option<&str>) -> Markup {
    html! {
        ul id=[id] class="validations" {
            @for (cat, v) in vs {
                li class=(format!("validation {}", v.status)) data-id=(v.id) data-category=(cat) {
                    span class="mark" aria-hidden="true" { (mark(&v.status)) }
                    span class="message" { (v.message) }
                    span class="vid" { (cat) " · " (v.id) }
                }
            }
        }
    }
}

/// What a host's row shows from its inventory.
struct Facts {
    name: String,
    inventory_name: String,
    cpus: Option<u64>,
    memory: Option<u64>,
    /// The primary interface's MAC (okd-assisted-api `identity`).
    mac: Option<String>,
    /// The primary interface's first IPv4 address (else IPv6), without
    /// its prefix length.
    address: Option<String>,
}

fn facts(h: &Host) -> Facts {
    let inv: Value = serde_json::from_str(&h.inventory).unwrap_or(Value::Null);
    let inventory_name = inv["hostname"].as_str().unwrap_or("").to_string();
    let name = if h.requested_hostname.is_empty() {
        inventory_name.clone()
    } else {
        h.requested_hostname.clone()
    };
    let primary = primary_interface(&inv);
    Facts {
        name,
        inventory_name,
        cpus: inv["cpu"]["count"].as_u64(),
        memory: inv["memory"]["physical_bytes"].as_u64(),
        mac: primary
            .and_then(|i| i["mac_address"].as_str())
            .filter(|m| !m.is_empty())
            .map(str::to_ascii_lowercase),
        address: primary.and_then(|i| {
            addresses(i, "ipv4_addresses")
                .into_iter()
                .next()
                .or_else(|| addresses(i, "ipv6_addresses").into_iter().next())
        }),
    }
}

fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / f64::from(1u32 << 30))
}

/// `role`, or `auto-assign (suggested: master)`.
fn role_text(h: &Host) -> String {
    if h.role == "auto-assign" && !h.suggested_role.is_empty() {
        format!("auto-assign (suggested: {})", h.suggested_role)
    } else {
        h.role.clone()
    }
}

/// An RFC 3339 time as Unix ms (0 when unreadable).
fn event_ms(rfc3339: &str) -> i128 {
    time::OffsetDateTime::parse(rfc3339, &time::format_description::well_known::Rfc3339)
        .map(|t| t.unix_timestamp_nanos() / 1_000_000)
        .unwrap_or(0)
}

/// An RFC 3339 time as `2025-05-01 12:34:56 UTC`.
fn when(rfc3339: &str) -> String {
    use time::format_description::well_known::Rfc3339;
    match time::OffsetDateTime::parse(rfc3339, &Rfc3339) {
        Ok(t) => {
            let t = t.to_offset(time::UtcOffset::UTC);
            format!(
                "{:04}-{:02}-{:02} {:02}:{:02}:{:02} UTC",
                t.year(),
                u8::from(t.month()),
                t.day(),
                t.hour(),
                t.minute(),
                t.second()
            )
        }
        Err(_) => rfc3339.to_string(),
    }
}

fn plural(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

// ---- the pages

fn clusters_body(clusters: &[Cluster]) -> Markup {
    html! {
        main {
            h1 { "Clusters" }
            section class="card" id="clusters-live" data-live {
                @if clusters.is_empty() {
                    p id="no-clusters" {
                        "No clusters yet. Create one through the REST API: "
                        code { "POST " (rest::BASE_PATH) "/clusters" } "."
                    }
                } @else {
                    div class="table-wrap" { table id="clusters" {
                        thead { tr {
                            th scope="col" { "Name" } th scope="col" { "Version" }
                            th scope="col" { "Status" } th scope="col" { "Hosts" }
                            th scope="col" { "Created" }
                        } }
                        tbody {
                            @for c in clusters {
                                tr class="cluster" data-cluster-id=(c.id) {
                                    th scope="row" class="name" {
                                        a href=(format!("/clusters/{}", c.id)) { (c.name) }
                                        @if !c.base_dns_domain.is_empty() {
                                            div class="sub" { (c.name) "." (c.base_dns_domain) }
                                        }
                                    }
                                    td class="version" data-label="Version" { (c.openshift_version) }
                                    td data-label="Status" {
                                        (status_badge(&c.status, None))
                                        div class="status-info" { (c.status_info) }
                                    }
                                    td class="hosts" data-label="Hosts" {
                                        (plural(c.total_host_count as usize, "host"))
                                        @if c.total_host_count > 0 {
                                            ", " (c.ready_host_count) " ready"
                                        }
                                    }
                                    td data-label="Created" {
                                        time datetime=(c.created_at) { (when(&c.created_at)) }
                                    }
                                }
                            }
                        }
                    } }
                }
            }
        }
    }
}

/// One host's row; `id_shown` is its id or the unambiguous prefix of it.
fn host_row(h: &Host, id_shown: &str) -> Markup {
    let f = facts(h);
    let vs = validations(&h.validations_info);
    let failing = vs
        .iter()
        .any(|(_, v)| v.status == "failure" || v.status == "error");
    let editable = HOST_EDITABLE.contains(&h.status.as_str());
    let roles = ["auto-assign", "master", "worker"];
    let disk = if h.installation_disk_path.is_empty() {
        h.installation_disk_id.as_str()
    } else {
        h.installation_disk_path.as_str()
    };
    html! {
        tr class="host" data-host-id=(h.id) data-infra-env-id=(h.infra_env_id) {
            th scope="row" class="name" {
                @if editable {
                    input class="host-name" type="text" name="host_name" value=(f.name)
                        placeholder=(f.inventory_name) autocomplete="off" spellcheck="false"
                        maxlength="253" aria-label=(format!("Host name of host {}", h.id));
                } @else {
                    span class="host-name-text" { (f.name) }
                }
                div class="sub" title=(h.id) {
                    @if !h.requested_hostname.is_empty() && !f.inventory_name.is_empty() && f.inventory_name != f.name {
                        "was " (f.inventory_name) " · "
                    }
                    "id " code class="host-id" { (id_shown) }
                    @if id_shown.len() < h.id.len() { "…" }
                }
                div class="sub net" {
                    "MAC " code class="mac" { (f.mac.as_deref().unwrap_or("—")) }
                }
                div class="sub net" {
                    "address " span class="address" { (f.address.as_deref().unwrap_or("—")) }
                }
                @if !disk.is_empty() {
                    div class="sub disk" title="Installation disk" { "disk " code { (disk) } }
                }
            }
            td class="role" data-label="Role" {
                @if editable {
                    select class="host-role" name="host_role" aria-label=(format!("Role of host {}", h.id)) {
                        @for r in roles {
                            option value=(r) selected[h.role == r] {
                                @if r == "auto-assign" && !h.suggested_role.is_empty() {
                                    "auto-assign (suggested: " (h.suggested_role) ")"
                                } @else { (r) }
                            }
                        }
                        @if !roles.contains(&h.role.as_str()) {
                            option value=(h.role) selected { (h.role) }
                        }
                    }
                } @else {
                    span class="role-text" { (role_text(h)) }
                }
                @if h.bootstrap {
                    div { span class="bootstrap" title="Runs the bootstrap control plane during the installation" { "★ bootstrap" } }
                }
            }
            td class="state" data-label="Status" {
                (status_badge(&h.status, None))
                @if !h.status_info.is_empty() {
                    div class="status-info" { (h.status_info) }
                }
                @if !vs.is_empty() {
                    details class="host-validations" id=(format!("validations-{}", h.id)) open[failing] {
                        summary { "Validations: " (tally(&vs)) }
                        (validation_list(&vs, None))
                    }
                }
            }
            td class="cpu num" data-label="CPUs" {
                @if let Some(n) = f.cpus { (n) } @else { "—" }
            }
            td class="memory num" data-label="Memory" {
                @if let Some(b) = f.memory { (gib(b)) } @else { "—" }
            }
            td class="progress" data-label="Progress" {
                @if h.progress.current_stage.is_empty() { span class="sub" { "—" } } @else { (h.progress.current_stage) }
            }
            td class="edit" {
                @if editable {
                    button type="button" class="save" { "Save" }
                    div class="save-error error" role="alert" {}
                }
            }
        }
    }
}

fn cluster_body(c: &Cluster, events: &[Event], total_events: usize) -> Markup {
    let vs = validations(&c.validations_info);
    let (passed, open): (Vec<_>, Vec<_>) = vs
        .iter()
        .cloned()
        .partition(|(_, v)| matches!(v.status.as_str(), "success" | "disabled"));
    let mut hosts: Vec<&Host> = c.hosts.iter().collect();
    hosts.sort_by_cached_key(|h| (facts(h).name, h.id.clone()));
    let ids: Vec<&str> = hosts.iter().map(|h| h.id.as_str()).collect();
    let installable = INSTALLABLE.contains(&c.status.as_str());
    let vips = |v: &[rest::Vip]| {
        v.iter()
            .map(|v| v.ip.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    html! {
        main {
            nav class="crumbs" { a href="/" { "‹ All clusters" } }
            h1 id="cluster-name" { (c.name) }
            p class="sub" {
                "OKD " (c.openshift_version)
                @if !c.base_dns_domain.is_empty() { " · " (c.name) "." (c.base_dns_domain) }
                " · " (c.control_plane_count) " control plane nodes"
                @if !c.api_vips.is_empty() { " · API VIP " (vips(&c.api_vips)) }
                @if !c.ingress_vips.is_empty() { " · Ingress VIP " (vips(&c.ingress_vips)) }
                " · id " code { (c.id) }
            }
            section class="card overview" {
                div id="summary" data-live data-status=(c.status) data-installable=(installable) {
                    p class="state" {
                        (status_badge(&c.status, Some("cluster-status")))
                        " "
                        span id="cluster-status-info" { (c.status_info) }
                    }
                    p id="host-counts" class="sub" {
                        (plural(c.total_host_count as usize, "host"))
                        @if installable { ", " (c.ready_host_count) " ready for installation" }
                        @if !c.install_started_at.is_empty() {
                            " · installation started " (when(&c.install_started_at))
                        }
                    }
                }
                div class="actions" {
                    button type="button" id="install" data-cluster-id=(c.id)
                        class=[(c.status == "ready").then_some("primary")]
                        disabled[!installable] { "Install cluster" }
                    div id="install-note" class="note" role="status" {}
                    div id="install-error" class="error" role="alert" {}
                }
            }
            section class="card" id="validations-live" data-live aria-labelledby="validations-h" {
                h2 id="validations-h" { "Cluster validations " span class="sub" { "(" (tally(&vs)) ")" } }
                @if vs.is_empty() {
                    p class="sub" { "Not computed yet." }
                } @else {
                    div id="cluster-validations" {
                        @if !open.is_empty() {
                            (validation_list(&open, None))
                        }
                        @if !passed.is_empty() {
                            details id="cluster-passed" {
                                summary {
                                    @if open.is_empty() { "All " (passed.len()) " passed" }
                                    @else { (passed.len()) " passed" }
                                }
                                (validation_list(&passed, None))
                            }
                        }
                    }
                }
            }
            section class="card" id="hosts-live" data-live aria-labelledby="hosts-h" {
                h2 id="hosts-h" { "Hosts" }
                @if hosts.is_empty() {
                    p class="sub" { "No host has registered yet: boot the discovery image on the machines." }
                } @else {
                    div class="table-wrap" { table id="hosts" {
                        thead { tr {
                            th scope="col" { "Host" } th scope="col" { "Role" }
                            th scope="col" { "Status" } th scope="col" class="num" { "CPUs" }
                            th scope="col" class="num" { "Memory" } th scope="col" { "Progress" }
                            th scope="col" { span class="visually-hidden" { "Actions" } }
                        } }
                        tbody { @for h in &hosts { (host_row(h, &id_prefix(&h.id, &ids))) } }
                    } }
                }
            }
            section class="card" id="events-live" data-live aria-labelledby="events-h" {
                h2 id="events-h" { "Events " span class="sub" {
                    @if total_events > events.len() {
                        "(the newest " (events.len()) " of " (total_events) ")"
                    } @else {
                        "(" (total_events) ")"
                    }
                } }
                ol id="events" {
                    @for e in events {
                        li class=(format!("event sev-{}", e.severity)) {
                            time datetime=(e.event_time) { (when(&e.event_time)) }
                            span class="sev" { (e.severity) }
                            span class="message" { (e.message) }
                        }
                    }
                }
            }
        }
    }
}

const STYLE: &str = r#"
*{box-sizing:border-box}
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans",sans-serif;margin:0;color:#1b1f24;background:#f3f4f6}
header.bar{background:#1f2a37;padding:.65rem 1.25rem;display:flex;flex-wrap:wrap;justify-content:space-between;align-items:baseline;gap:.25rem 1rem}
header.bar #refresh-state{color:#c9d1d9;font-size:.82rem}
header.bar a{color:#fff;text-decoration:none;font-weight:600;letter-spacing:.01em}
main{max-width:92rem;margin:0 auto;padding:.75rem 1.25rem 2rem}
a{color:#0b57d0}
h1{font-size:1.55rem;margin:.35rem 0 .15rem}
h2{font-size:1.1rem;margin:0 0 .6rem}
h2 .sub{font-weight:400}
code{font:.85em ui-monospace,SFMono-Regular,Menlo,monospace}
.crumbs{font-size:.9rem;margin-top:.25rem}
.card{background:#fff;border:1px solid #d8dde3;border-radius:8px;padding:1rem 1.25rem;margin:1rem 0}
.sub{color:#57606a;font-size:.85rem;font-weight:400}
.overview{display:flex;flex-wrap:wrap;gap:1rem 2rem;justify-content:space-between;align-items:flex-start}
.overview #summary{flex:1 1 30rem}
.overview .state{margin:0 0 .3rem;font-size:1.05rem}
.overview #host-counts{margin:0}
.actions{flex:0 1 34rem;display:flex;flex-direction:column;align-items:flex-end;gap:.5rem}
table{border-collapse:collapse;width:100%}
th,td{padding:.55rem .6rem;border-bottom:1px solid #e3e6ea;text-align:left;vertical-align:top}
thead th{font-size:.78rem;text-transform:uppercase;letter-spacing:.04em;color:#57606a;background:#f8f9fb;font-weight:600;white-space:nowrap}
tbody th{font-weight:600}
.num{text-align:right;white-space:nowrap}
.status{display:inline-block;padding:.05rem .55rem;border-radius:999px;font-weight:600;font-size:.85rem;border:1px solid;white-space:nowrap}
.tone-ok{background:#e6f4ea;color:#0f5a26;border-color:#9fd3ae}
.tone-bad{background:#fdecea;color:#a4161a;border-color:#f1a9a7}
.tone-busy{background:#e8f0fe;color:#1a4fa0;border-color:#a9c2f1}
.tone-idle{background:#f1f3f5;color:#495057;border-color:#ced4da}
.status-info{margin-top:.3rem;color:#3d444d;font-size:.9rem;max-width:44rem;overflow-wrap:anywhere}
ul.validations{list-style:none;margin:.4rem 0 0;padding:0}
.validation{display:flex;flex-wrap:wrap;gap:0 .5rem;padding:.2rem 0;font-size:.9rem;border-top:1px solid #f0f2f4}
.validation:first-child{border-top:0}
.validation .mark{width:1rem;flex:none;text-align:center;font-weight:700}
.validation .message{flex:1 1 20rem;overflow-wrap:anywhere}
.validation .vid{font:.78rem ui-monospace,SFMono-Regular,Menlo,monospace;color:#6e7781;align-self:center}
th.name .sub{max-width:15rem;overflow-wrap:anywhere}
th.name .sub code{font-size:.95em}
.validation.failure .mark,.validation.error .mark{color:#b42318}
.validation.failure .message,.validation.error .message{color:#8c1116;font-weight:500}
.validation.success .mark{color:#1a7f37}
.validation.success .message,.validation.disabled .message{color:#57606a}
.validation.pending .mark{color:#9a6700}
details.host-validations{margin-top:.35rem;max-width:44rem}
details summary{cursor:pointer;color:#0b57d0;font-size:.88rem}
#cluster-passed{margin-top:.4rem}
input.host-name,select.host-role{font:inherit;font-size:.92rem;padding:.3rem .45rem;border:1px solid #afb8c1;border-radius:4px;background:#fff;color:inherit}
input.host-name{width:12.5rem;font-weight:600}
input.host-name:focus,select.host-role:focus{outline:2px solid #0b57d0;outline-offset:0;border-color:#0b57d0}
input.changed,select.changed{border-color:#bf8700;background:#fff8e1}
.table-wrap{overflow-x:auto}
.bootstrap{display:inline-block;margin-top:.35rem;font-size:.8rem;font-weight:600;color:#6f42c1;background:#f3edfc;border:1px solid #d8c8f3;border-radius:4px;padding:0 .4rem}
td.edit{white-space:nowrap;width:1%}
td.edit .error{white-space:normal;min-width:12rem;max-width:16rem;margin-top:.4rem;font-size:.85rem;overflow-wrap:anywhere}
td.state{min-width:18rem}
button{font:inherit;font-size:.92rem;padding:.35rem .9rem;border-radius:4px;border:1px solid #afb8c1;background:#fff;color:#1b1f24;cursor:pointer}
button:hover:not(:disabled){background:#f3f4f6}
button.primary{background:#0b57d0;border-color:#0b57d0;color:#fff}
button.primary:hover:not(:disabled){background:#0947ad}
tr.dirty button.save{background:#0b57d0;border-color:#0b57d0;color:#fff}
button:disabled{opacity:.5;cursor:not-allowed}
#install{font-weight:600;padding:.5rem 1.3rem}
.error{color:#a4161a}
.error:empty,.note:empty{display:none}
#install-error,#install-note{padding:.45rem .75rem;border-radius:4px;font-size:.9rem;max-width:34rem}
#install-error{background:#fdecea;border:1px solid #f1a9a7}
#install-note{background:#e6f4ea;border:1px solid #9fd3ae}
#page-error{font-size:1.05rem}
ol#events{list-style:none;margin:0;padding:0}
#events li{display:grid;grid-template-columns:11.5rem 4.5rem 1fr;gap:.75rem;padding:.3rem 0;border-top:1px solid #f0f2f4;font-size:.88rem}
#events li:first-child{border-top:0}
#events time{color:#57606a;font-variant-numeric:tabular-nums;white-space:nowrap}
#events .message{overflow-wrap:anywhere}
.sev{font-weight:700;text-transform:uppercase;font-size:.72rem;letter-spacing:.04em;padding-top:.15rem;color:#57606a}
.sev-warning .sev{color:#9a6700}
.sev-error .sev,.sev-critical .sev{color:#b42318}
.visually-hidden{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
@media (max-width:56rem){
 #hosts thead{display:none}
 #hosts,#hosts tbody,#hosts tr,#hosts th,#hosts td,#clusters,#clusters tbody,#clusters tr,#clusters th,#clusters td{display:block;width:auto}
 #clusters thead{display:none}
 #hosts tr,#clusters tr{border-bottom:1px solid #d8dde3;padding:.5rem 0}
 #hosts td,#hosts th,#clusters td,#clusters th{border:0;padding:.2rem 0;text-align:left}
 td[data-label]::before{content:attr(data-label) ': ';color:#57606a;font-size:.85rem}
 .actions{align-items:flex-start}
 #events li{grid-template-columns:auto 1fr;gap:0 .75rem}
 #events .message{grid-column:1/-1}
}
"#;

/// The actions and the refresh (see the module's documentation).
const SCRIPT: &str = r#"
(() => {
  'use strict';
  const API = document.body.dataset.api;
  const headers = (extra) => {
    const h = Object.assign({}, extra || {});
    const t = sessionStorage.getItem('okd-assisted-token');
    if (t) h['Authorization'] = 'Bearer ' + t;
    return h;
  };
  const call = async (method, path, body) => {
    const init = {method, cache: 'no-store',
      headers: headers(body === undefined ? {} : {'Content-Type': 'application/json'})};
    if (body !== undefined) init.body = JSON.stringify(body);
    const r = await fetch(API + path, init);
    let j = null;
    try { j = await r.json(); } catch (e) { j = null; }
    return {ok: r.ok, status: r.status, body: j};
  };
  const reason = (r) => (r.body && (r.body.reason || r.body.message)) || ('HTTP ' + r.status);
  const changes = (tr) => {
    const c = {};
    const n = tr.querySelector('input.host-name');
    const s = tr.querySelector('select.host-role');
    if (n && n.value.trim() !== n.defaultValue) c.host_name = n.value.trim();
    if (s && s.selectedIndex >= 0 && !s.options[s.selectedIndex].defaultSelected) c.host_role = s.value;
    return c;
  };
  const dirty = (tr) => Object.keys(changes(tr)).length > 0;
  let inflight = 0;
  // The lists the user opened or closed stay so across refreshes; the
  // others open as the server says (a host's list when it fails).
  const opened = {};
  document.addEventListener('click', (e) => {
    const s = e.target.closest && e.target.closest('summary');
    const d = s && s.parentElement;
    if (d && d.tagName === 'DETAILS' && d.id) opened[d.id] = !d.open;
  });
  const busy = (except) => {
    if (inflight > 0) return true;
    const a = document.activeElement;
    if (a && a.matches('[data-live] input, [data-live] select') && !(except && except.contains(a))) return true;
    for (const tr of document.querySelectorAll('tr.host')) {
      if (tr !== except && dirty(tr)) return true;
    }
    return false;
  };
  const say = (t) => {
    const e = document.getElementById('refresh-state');
    if (e) e.textContent = t;
  };
  const sync = () => {
    const s = document.getElementById('summary');
    const b = document.getElementById('install');
    if (s && b) {
      b.disabled = s.dataset.installable !== 'true';
      b.classList.toggle('primary', s.dataset.status === 'ready');
    }
  };
  let seq = 0;
  const refresh = async (except) => {
    if (busy(except)) { say('Refresh paused while you edit.'); return; }
    const mine = ++seq;
    try {
      const r = await fetch(location.pathname, {cache: 'no-store', headers: headers()});
      if (!r.ok) throw new Error('HTTP ' + r.status);
      const d = new DOMParser().parseFromString(await r.text(), 'text/html');
      if (mine !== seq) return;
      if (busy(except)) { say('Refresh paused while you edit.'); return; }
      for (const n of Array.from(d.querySelectorAll('[data-live]'))) {
        const o = document.getElementById(n.id);
        if (!o) continue;
        for (const x of n.querySelectorAll('details[id]')) if (x.id in opened) x.open = opened[x.id];
        o.replaceWith(document.adoptNode(n));
      }
      sync();
      say('Updated at ' + new Date().toLocaleTimeString() + '; the page refreshes every 5 s.');
    } catch (e) {
      if (mine === seq) say('Could not refresh: ' + e.message + '; trying again in 5 s.');
    }
  };
  const save = async (tr) => {
    const err = tr.querySelector('.save-error');
    const btn = tr.querySelector('button.save');
    err.textContent = '';
    const c = changes(tr);
    if (!Object.keys(c).length) { err.textContent = 'Nothing to save: change the host name or the role first.'; return; }
    inflight++;
    btn.disabled = true;
    let ok = false;
    try {
      const r = await call('PATCH', '/infra-envs/' + encodeURIComponent(tr.dataset.infraEnvId) +
        '/hosts/' + encodeURIComponent(tr.dataset.hostId), c);
      if (r.ok) {
        ok = true;
        const n = tr.querySelector('input.host-name');
        if (n) { n.value = n.value.trim(); n.defaultValue = n.value; }
        const s = tr.querySelector('select.host-role');
        if (s) for (const o of s.options) o.defaultSelected = o.selected;
        mark(tr);
      } else {
        err.textContent = reason(r);
      }
    } catch (e) {
      err.textContent = 'The service did not answer: ' + e.message;
    } finally {
      inflight--;
      btn.disabled = false;
    }
    if (ok) {
      if (tr.contains(document.activeElement)) document.activeElement.blur();
      await refresh(tr);
    }
  };
  const install = async () => {
    const b = document.getElementById('install');
    const err = document.getElementById('install-error');
    const note = document.getElementById('install-note');
    err.textContent = '';
    note.textContent = '';
    inflight++;
    b.disabled = true;
    try {
      const r = await call('POST', '/clusters/' + encodeURIComponent(b.dataset.clusterId) + '/actions/install');
      if (r.ok) note.textContent = 'Installation started.';
      else err.textContent = reason(r);
    } catch (e) {
      err.textContent = 'The service did not answer: ' + e.message;
    } finally {
      inflight--;
      b.disabled = false;
      sync();
    }
    await refresh();
  };
  document.addEventListener('click', (e) => {
    const b = e.target.closest('button');
    if (!b || b.disabled) return;
    if (b.id === 'install') install();
    else if (b.classList.contains('save')) save(b.closest('tr.host'));
  });
  const mark = (tr) => {
    const c = changes(tr);
    tr.classList.toggle('dirty', Object.keys(c).length > 0);
    const n = tr.querySelector('input.host-name');
    if (n) n.classList.toggle('changed', 'host_name' in c);
    const s = tr.querySelector('select.host-role');
    if (s) s.classList.toggle('changed', 'host_role' in c);
  };
  const edited = (e) => {
    const tr = e.target.closest && e.target.closest('tr.host');
    if (tr) mark(tr);
  };
  document.addEventListener('input', edited);
  document.addEventListener('change', edited);
  document.addEventListener('keydown', (e) => {
    const tr = e.target.closest && e.target.closest('tr.host');
    if (!tr || !e.target.matches('input.host-name, select.host-role')) return;
    if (e.key === 'Enter') { e.preventDefault(); save(tr); }
    if (e.key === 'Escape') {
      const n = tr.querySelector('input.host-name');
      if (n) n.value = n.defaultValue;
      const s = tr.querySelector('select.host-role');
      if (s) for (const o of s.options) o.selected = o.defaultSelected;
      tr.querySelector('.save-error').textContent = '';
      mark(tr);
      e.target.blur();
    }
  });
  sync();
  say('Updated at ' + new Date().toLocaleTimeString() + '; the page refreshes every 5 s.');
  setInterval(() => { refresh(); }, 5000);
})();
"#;

#[cfg(test)]
mod tests {
    use super::*;

    fn v(id: &str, status: &str) -> ValidationResult {
        ValidationResult {
            id: id.into(),
            status: status.into(),
            message: format!("{id} <b>{status}</b>"),
        }
    }

    #[test]
    fn failing_validations_come_first() {
        let text = serde_json::json!({
            "network": [v("connected", "success"), v("ntp-synced", "pending")],
            "hardware": [v("has-min-cpu-cores", "success"), v("has-min-memory", "failure")],
        })
        .to_string();
        let got: Vec<(String, String)> = validations(&text)
            .into_iter()
            .map(|(c, v)| (c, v.id))
            .collect();
        assert_eq!(
            got,
            [
                ("hardware".to_string(), "has-min-memory".to_string()),
                ("network".into(), "ntp-synced".into()),
                ("hardware".into(), "has-min-cpu-cores".into()),
                ("network".into(), "connected".into()),
            ]
        );
        assert_eq!(tally(&validations(&text)), "1 failing, 1 pending, 2 passed");
        assert!(validations("").is_empty());
    }

    #[test]
    fn messages_are_escaped() {
        let list = validation_list(
            &[("hardware".into(), v("x", "failure"))],
            Some("cluster-validations"),
        )
        .into_string();
        assert!(list.contains("x &lt;b&gt;failure&lt;/b&gt;"), "{list}");
        assert!(!list.contains("<b>"), "{list}");
    }

    #[test]
    fn times_and_sizes() {
        assert_eq!(when("2025-05-01T12:34:56.789Z"), "2025-05-01 12:34:56 UTC");
        assert_eq!(when("not a time"), "not a time");
        assert_eq!(gib(16 << 30), "16.0 GiB");
        assert_eq!(gib(4 << 30), "4.0 GiB");
    }
}
