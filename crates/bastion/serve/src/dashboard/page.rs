//! The page: the annotated status document as one HTML document (semantic
//! HTML, no external assets, readable without JavaScript; a small script
//! fetches it again every second and swaps `<main>`). Rendered with maud,
//! which escapes every interpolated string by default (`&`, `<`, `>`,
//! `"`); only the constant style sheet and script go in unescaped.

use maud::{Markup, PreEscaped, html};
use okd_serve_api::lb::BackendStats;
use okd_serve_api::status::{ClusterData, HostStatus, StatusDocument};
use time::OffsetDateTime;

use super::*;

/// `<time datetime="…">42 s ago</time>` for an RFC 3339 time, nothing for
/// none or an unreadable one.
fn time_cell(v: Option<&str>, now: OffsetDateTime) -> Markup {
    html! {
        @if let (Some(s), Some(t)) = (v, parse_time(v)) {
            time datetime=(s) { (ago(t, now)) }
        }
    }
}

fn bytes(n: u64) -> String {
    match n {
        0..=1023 => format!("{n} B"),
        1024..=1_048_575 => format!("{:.1} KiB", n as f64 / 1024.0),
        1_048_576..=1_073_741_823 => format!("{:.1} MiB", n as f64 / 1_048_576.0),
        _ => format!("{:.2} GiB", n as f64 / 1_073_741_824.0),
    }
}

const STYLE: &str = "body{font:15px/1.4 system-ui,sans-serif;margin:0 auto;max-width:80rem;padding:0 1rem;color:#1b1b1b;background:#fff}\
h1{font-size:1.4rem}h2{font-size:1.15rem;margin-top:1.5rem}table{border-collapse:collapse;width:100%}\
th,td{border-bottom:1px solid #ccc;padding:.35rem .5rem;text-align:left;vertical-align:top}th{background:#f0f0f0}\
ol.st{list-style:none;margin:0;padding:0;display:flex;flex-wrap:wrap;gap:.25rem .75rem}ol.st li::before{content:'○ '}\
ol.st li.done::before{content:'● ';color:#1a7f37}ol.st li.todo{color:#666}.up{color:#1a7f37;font-weight:600}.down{color:#b42318;font-weight:600}.unchecked{color:#666}\
ul.warn li{color:#8a4b00}time{color:#444;font-size:.9em}\
@media (max-width:40rem){table,thead,tbody,tr,th,td{display:block}thead{display:none}td{border:0;padding:.15rem 0}tr{border-bottom:1px solid #ccc;padding:.5rem 0}td[data-label]::before{content:attr(data-label) ': ';color:#555}}";

/// Keeps the page current: fetches it again every second and swaps `<main>`.
const SCRIPT: &str = "setInterval(async()=>{try{const r=await fetch(location.pathname,{cache:'no-store'});\
const d=new DOMParser().parseFromString(await r.text(),'text/html');const m=d.getElementById('main');\
if(m){document.getElementById('main').replaceWith(m);}}catch(e){}},1000);";

/// Every request for bootstrap.ign (from inventory hosts and other
/// clients), with the octets that went out of those announced: a fetch
/// that broke off shows as such.
fn fetches_section(doc: &StatusDocument, now: OffsetDateTime) -> Markup {
    let mut rows: Vec<(&str, String, &HttpEvent)> = Vec::new();
    for h in &doc.hosts {
        for e in h.http.iter().filter(|e| is_bootstrap_ign(e)) {
            rows.push((h.hostname.as_str(), h.address.to_string(), e));
        }
    }
    for c in &doc.unknown_clients {
        for e in c.http.iter().filter(|e| is_bootstrap_ign(e)) {
            rows.push(("not in the inventory", c.address.to_string(), e));
        }
    }
    rows.sort_by(|a, b| a.2.time.cmp(&b.2.time));
    let what = |e: &HttpEvent| match (e.status, e.size) {
        (200 | 206, Some(size)) => format!(
            "{} of {}{}",
            bytes(e.bytes),
            bytes(size),
            if e.complete {
                ", complete"
            } else {
                ", broke off"
            }
        ),
        (403, _) => "refused".to_string(),
        _ => bytes(e.bytes),
    };
    // What became of the one-time token (serve --bootstrap-token).
    let token = doc
        .hosts
        .iter()
        .flat_map(|h| &h.stages)
        .find(|s| s.stage == TOKEN_STAGE);
    html! {
        section aria-labelledby="fetches" {
            h2 id="fetches" { "bootstrap.ign fetches" }
            @if let Some(t) = token {
                p {
                    @if t.done { "One-time token spent: " (t.detail) } @else { "One-time token " (t.detail) }
                }
            }
            @if rows.is_empty() {
                p { "None yet." }
            } @else {
                table {
                    thead { tr {
                        th scope="col" { "Client" } th scope="col" { "Address" }
                        th scope="col" { "HTTP" } th scope="col" { "Sent" } th scope="col" { "When" }
                    } }
                    tbody {
                        @for (name, addr, e) in &rows {
                            tr {
                                th scope="row" { (name) }
                                td data-label="Address" { (addr) }
                                td data-label="HTTP" { (e.status) }
                                td data-label="Sent" { (what(e)) }
                                td data-label="When" { (time_cell(Some(&e.time), now)) }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// One host's row: its names and its stage line.
fn host_row(h: &HostStatus, now: OffsetDateTime) -> Markup {
    html! {
        tr {
            th scope="row" { (h.hostname) }
            td data-label="Role" { (h.role.as_str()) }
            td data-label="Address" { (h.address) }
            td data-label="Stages" {
                ol class="st" {
                    @for s in &h.stages {
                        li class=(if s.done { "done" } else { "todo" }) {
                            (s.stage)
                            @if !s.detail.is_empty() { " (" (s.detail) ")" }
                            @if s.done { " " (time_cell(s.time.as_deref(), now)) }
                        }
                    }
                }
            }
        }
    }
}

/// The line under the hosts: what the cluster says, or why it is unknown.
fn cluster_line(cd: &ClusterData) -> Markup {
    match (cd.available, &cd.view) {
        (true, Some(v)) => {
            let pending = v.csrs.iter().filter(|c| !c.approved && !c.denied).count();
            let ops = &v.operators;
            html! {
                p {
                    "Cluster data from " (v.server) ": " (counted(pending, "CSR")) " pending, "
                    (counted(v.nodes.len(), "node")) "; cluster operators "
                    (ops.available) "/" (ops.total) " available"
                    @if !ops.degraded.is_empty() { ", degraded: " (ops.degraded.join(", ")) }
                    "."
                }
            }
        }
        _ => html! {
            p {
                "Cluster data unavailable: "
                (cd.error.as_deref().unwrap_or("serve does not read the cluster")) "."
            }
        },
    }
}

/// One backend's row of the load balancer table.
fn backend_row(fe: &FrontendStats, b: &BackendStats, now: OffsetDateTime) -> Markup {
    let up = b.checked && b.up;
    let since = if !b.checked {
        String::new()
    } else if !up && b.last_ok_unix_ms.is_none() {
        ", no check passed yet".to_string()
    } else {
        from_unix_ms(b.since_unix_ms)
            .map(|t| format!(" since {}", ago(t, now)))
            .unwrap_or_default()
    };
    let class = match (b.checked, up) {
        (false, _) => "unchecked",
        (true, true) => "up",
        (true, false) => "down",
    };
    html! {
        tr {
            th scope="row" { (fe.name) " " small { (fe.bind) } }
            td data-label="Backend" { (b.name) " " small { (b.addr) } }
            td class=(class) data-label="State" { (BackendStats::state_text(up, b.checked)) (since) }
            td data-label="Last check" { (b.last_check.as_ref().map_or("—", |c| c.detail.as_str())) }
            td data-label="Connections (now / total)" { (b.active_connections) " / " (b.connections_total) }
            td data-label="Bytes in / out" { (bytes(b.bytes_in)) " / " (bytes(b.bytes_out)) }
        }
    }
}

/// The page of an annotated status document.
pub(crate) fn page(doc: &StatusDocument, now: OffsetDateTime) -> String {
    let cluster = &doc.cluster;
    let certs = doc
        .certificates
        .as_ref()
        .and_then(|c| parse_time(Some(&c.not_after)).map(|t| (c, t)));
    let main = html! {
        section aria-labelledby="warnings" {
            h2 id="warnings" { "Warnings" }
            @if doc.warnings.is_empty() {
                p { "None." }
            } @else {
                ul class="warn" { @for w in &doc.warnings { li { (w) } } }
            }
        }
        section aria-labelledby="hosts" {
            h2 id="hosts" { "Hosts" }
            table {
                thead { tr {
                    th scope="col" { "Host" } th scope="col" { "Role" }
                    th scope="col" { "Address" } th scope="col" { "Stages" }
                } }
                tbody { @for h in &doc.hosts { (host_row(h, now)) } }
            }
            (cluster_line(&doc.cluster_data))
        }
        (fetches_section(doc, now))
        section aria-labelledby="certs" {
            h2 id="certs" { "Certificates" }
            @if let Some((c, t)) = certs {
                p {
                    "The install's 24-hour certificates (first to expire: tls/" (c.file) ") "
                    (if t <= now { "expired" } else { "expire" }) " "
                    time datetime=(c.not_after) { (until(t, now)) } "."
                }
            } @else {
                p { "No bootstrap.ign in the asset directory." }
            }
        }
        section aria-labelledby="lb" {
            h2 id="lb" { "Load balancer" }
            @if let Some(fes) = frontends(doc) {
                table {
                    thead { tr {
                        th scope="col" { "Frontend" } th scope="col" { "Backend" }
                        th scope="col" { "State" } th scope="col" { "Last check" }
                        th scope="col" { "Connections (now / total)" } th scope="col" { "Bytes in / out" }
                    } }
                    tbody {
                        @for fe in fes { @for b in &fe.backends { (backend_row(fe, b, now)) } }
                    }
                }
            } @else {
                p { "Not run by this serve." }
            }
        }
    };
    let page = html! {
        (PreEscaped("<!doctype html>"))
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                link rel="icon" href="data:,";
                title { (cluster) ": install status" }
                style { (PreEscaped(STYLE)) }
            }
            body {
                header {
                    h1 { (cluster) ": install status" }
                    p {
                        "serve running since " (time_cell(Some(&doc.started), now))
                        " · " a href="/status" { "JSON" } " · " a href="/metrics" { "metrics" }
                    }
                }
                main id="main" { (main) }
                script { (PreEscaped(SCRIPT)) }
            }
        }
    };
    page.into_string() + "\n"
}

/// `n` and `noun`, plural unless `n` is 1: `1 CSR`, `0 CSRs`, `2 nodes`.
pub(super) fn counted(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}
