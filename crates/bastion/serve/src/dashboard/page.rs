//! The page: the annotated status document as one HTML document (semantic
//! HTML, no external assets, readable without JavaScript; a small script
//! fetches it again every second and swaps `<main>`).

use serde_json::Value;
use time::OffsetDateTime;

use super::*;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn time_cell(v: &Value, now: OffsetDateTime) -> String {
    match parse_time(v) {
        Some(t) => format!(
            "<time datetime=\"{}\">{}</time>",
            esc(v.as_str().unwrap_or("")),
            ago(t, now)
        ),
        None => String::new(),
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
fn fetches_section(doc: &Value, now: OffsetDateTime) -> String {
    let mut rows: Vec<(String, String, Value)> = Vec::new();
    for h in doc["hosts"].as_array().into_iter().flatten() {
        for e in events(h, "http").into_iter().filter(is_bootstrap_ign) {
            rows.push((
                h["hostname"].as_str().unwrap_or("").to_string(),
                h["address"].as_str().unwrap_or("").to_string(),
                e,
            ));
        }
    }
    for c in doc["unknownClients"].as_array().into_iter().flatten() {
        for e in events(c, "http").into_iter().filter(is_bootstrap_ign) {
            let addr = c["address"].as_str().unwrap_or("").to_string();
            rows.push(("not in the inventory".to_string(), addr, e));
        }
    }
    rows.sort_by(|a, b| a.2["time"].as_str().cmp(&b.2["time"].as_str()));
    let mut out = String::from(
        "<section aria-labelledby=\"fetches\"><h2 id=\"fetches\">bootstrap.ign fetches</h2>",
    );
    if rows.is_empty() {
        out += "<p>None yet.</p></section>";
        return out;
    }
    out += "<table><thead><tr><th scope=\"col\">Client</th><th scope=\"col\">Address</th><th scope=\"col\">HTTP</th><th scope=\"col\">Sent</th><th scope=\"col\">When</th></tr></thead><tbody>";
    for (name, addr, e) in rows {
        let sent = e["bytes"].as_u64().unwrap_or(0);
        let what = match (e["status"].as_u64(), e["size"].as_u64()) {
            (Some(200 | 206), Some(size)) => format!(
                "{} of {}{}",
                bytes(sent),
                bytes(size),
                if e["complete"] == true {
                    ", complete"
                } else {
                    ", broke off"
                }
            ),
            (Some(403), _) => "refused".to_string(),
            _ => bytes(sent),
        };
        out += &format!(
            "<tr><th scope=\"row\">{}</th><td data-label=\"Address\">{}</td><td data-label=\"HTTP\">{}</td><td data-label=\"Sent\">{}</td><td data-label=\"When\">{}</td></tr>",
            esc(&name),
            esc(&addr),
            e["status"],
            esc(&what),
            time_cell(&e["time"], now)
        );
    }
    out += "</tbody></table></section>";
    out
}

/// The page of an annotated status document.
pub(crate) fn page(doc: &Value, now: OffsetDateTime) -> String {
    let cluster = esc(doc["cluster"].as_str().unwrap_or(""));
    let mut main = String::new();
    let warns = doc["warnings"].as_array().cloned().unwrap_or_default();
    main += "<section aria-labelledby=\"warnings\"><h2 id=\"warnings\">Warnings</h2>";
    if warns.is_empty() {
        main += "<p>None.</p>";
    } else {
        main += "<ul class=\"warn\">";
        for w in &warns {
            main += &format!("<li>{}</li>", esc(w.as_str().unwrap_or("")));
        }
        main += "</ul>";
    }
    main += "</section><section aria-labelledby=\"hosts\"><h2 id=\"hosts\">Hosts</h2>\
<table><thead><tr><th scope=\"col\">Host</th><th scope=\"col\">Role</th><th scope=\"col\">Address</th><th scope=\"col\">Stages</th></tr></thead><tbody>";
    for h in doc["hosts"].as_array().into_iter().flatten() {
        let mut st = String::from("<ol class=\"st\">");
        for s in h["stages"].as_array().into_iter().flatten() {
            let done = s["done"] == true;
            let detail = s["detail"].as_str().unwrap_or("");
            st += &format!(
                "<li class=\"{}\">{}{}{}</li>",
                if done { "done" } else { "todo" },
                esc(s["stage"].as_str().unwrap_or("")),
                if detail.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", esc(detail))
                },
                if done {
                    format!(" {}", time_cell(&s["time"], now))
                } else {
                    String::new()
                }
            );
        }
        st += "</ol>";
        main += &format!(
            "<tr><th scope=\"row\">{}</th><td data-label=\"Role\">{}</td><td data-label=\"Address\">{}</td><td data-label=\"Stages\">{st}</td></tr>",
            esc(h["hostname"].as_str().unwrap_or("")),
            esc(h["role"].as_str().unwrap_or("")),
            esc(h["address"].as_str().unwrap_or("")),
        );
    }
    let cd = &doc["clusterData"];
    main += "</tbody></table>";
    if cd["available"] == true {
        let ops = &cd["operators"];
        let pending = cd["csrs"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|c| c["approved"] == false && c["denied"] == false)
            .count();
        main += &format!(
            "<p>Cluster data from {}: {} pending, {}; cluster operators {}/{} available{}.</p>",
            esc(cd["server"].as_str().unwrap_or("")),
            counted(pending, "CSR"),
            counted(cd["nodes"].as_array().map_or(0, |n| n.len()), "node"),
            ops["available"],
            ops["total"],
            match ops["degraded"].as_array() {
                Some(d) if !d.is_empty() => format!(
                    ", degraded: {}",
                    esc(&d
                        .iter()
                        .filter_map(|v| v.as_str())
                        .collect::<Vec<_>>()
                        .join(", "))
                ),
                _ => String::new(),
            }
        );
    } else {
        main += &format!(
            "<p>Cluster data unavailable: {}.</p>",
            esc(cd["error"]
                .as_str()
                .unwrap_or("serve does not read the cluster"))
        );
    }
    main += "</section>";
    main += &fetches_section(doc, now);
    main += "<section aria-labelledby=\"certs\"><h2 id=\"certs\">Certificates</h2>";
    match parse_time(&doc["certificates"]["notAfter"]) {
        Some(t) => {
            main += &format!(
                "<p>The install's 24-hour certificates (first to expire: tls/{}) {} <time datetime=\"{}\">{}</time>.</p>",
                esc(doc["certificates"]["file"].as_str().unwrap_or("")),
                if t <= now { "expired" } else { "expire" },
                esc(doc["certificates"]["notAfter"].as_str().unwrap_or("")),
                until(t, now)
            );
        }
        None => main += "<p>No bootstrap.ign in the asset directory.</p>",
    }
    main += "</section>";
    main += "<section aria-labelledby=\"lb\"><h2 id=\"lb\">Load balancer</h2>";
    match doc["loadBalancer"]["frontends"].as_array() {
        None => main += "<p>Not run by this serve.</p>",
        Some(fes) => {
            main += "<table><thead><tr><th scope=\"col\">Frontend</th><th scope=\"col\">Backend</th><th scope=\"col\">State</th><th scope=\"col\">Last check</th><th scope=\"col\">Connections (now / total)</th><th scope=\"col\">Bytes in / out</th></tr></thead><tbody>";
            for fe in fes {
                for b in fe["backends"].as_array().into_iter().flatten() {
                    let checked = b["checked"] != false;
                    let up = checked && b["up"] == true;
                    let since = match from_unix_ms(&b["since_unix_ms"]) {
                        _ if !checked => String::new(),
                        _ if !up && !b["last_ok_unix_ms"].is_u64() => {
                            ", no check passed yet".to_string()
                        }
                        Some(t) => format!(" since {}", ago(t, now)),
                        None => String::new(),
                    };
                    main += &format!(
                        "<tr><th scope=\"row\">{} <small>{}</small></th><td data-label=\"Backend\">{} <small>{}</small></td><td class=\"{}\" data-label=\"State\">{}{since}</td><td data-label=\"Last check\">{}</td><td data-label=\"Connections (now / total)\">{} / {}</td><td data-label=\"Bytes in / out\">{} / {}</td></tr>",
                        esc(fe["name"].as_str().unwrap_or("")),
                        esc(fe["bind"].as_str().unwrap_or("")),
                        esc(b["name"].as_str().unwrap_or("")),
                        esc(b["addr"].as_str().unwrap_or("")),
                        match (checked, up) {
                            (false, _) => "unchecked",
                            (true, true) => "up",
                            (true, false) => "down",
                        },
                        okd_lb::BackendStats::state_text(up, checked),
                        esc(b["last_check"]["detail"].as_str().unwrap_or("—")),
                        b["active_connections"],
                        b["connections_total"],
                        bytes(b["bytes_in"].as_u64().unwrap_or(0)),
                        bytes(b["bytes_out"].as_u64().unwrap_or(0)),
                    );
                }
            }
            main += "</tbody></table>";
        }
    }
    main += "</section>";
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><link rel=\"icon\" href=\"data:,\">\
<title>{cluster}: install status</title><style>{STYLE}</style></head><body><header><h1>{cluster}: install status</h1>\
<p>serve running since {} · <a href=\"/status\">JSON</a> · <a href=\"/metrics\">metrics</a></p></header>\
<main id=\"main\">{main}</main><script>{SCRIPT}</script></body></html>\n",
        time_cell(&doc["started"], now)
    )
}

/// `n` and `noun`, plural unless `n` is 1: `1 CSR`, `0 CSRs`, `2 nodes`.
pub(super) fn counted(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}
