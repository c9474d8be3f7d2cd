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

/// After this long without Ignition, a host that resolved names gets a warning.
const NO_IGNITION_AFTER_SECS: i64 = 5 * 60;

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

/// Below this, the certificate expiry is a warning.
const CERT_WARN_SECS: i64 = 2 * 3600;

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

/// The cluster-side stages of a host: its client and serving CSRs and its Node.
fn cluster_stages(h: &Value, cluster: &Value) -> Vec<Value> {
    let names = names_of(h);
    let mine = |v: &Value, key: &str| {
        v[key]
            .as_str()
            .is_some_and(|n| names.contains(&n.to_lowercase()))
    };
    let csrs: Vec<&Value> = cluster["csrs"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| mine(c, "node"))
        .collect();
    let mut out = Vec::new();
    for (stage, kind) in [
        ("CSR client approved", "client"),
        ("CSR serving approved", "serving"),
    ] {
        let of_kind: Vec<&&Value> = csrs.iter().filter(|c| c["kind"] == kind).collect();
        let approved = of_kind.iter().find(|c| c["approved"] == true);
        let pending = of_kind
            .iter()
            .find(|c| c["approved"] == false && c["denied"] == false);
        out.push(json!({
            "stage": stage,
            "done": approved.is_some(),
            "time": approved.map(|c| c["time"].clone()).unwrap_or(Value::Null),
            "detail": match (approved, pending) {
                (Some(c), _) => c["name"].as_str().unwrap_or("").to_string(),
                (None, Some(c)) => format!("{} pending", c["name"].as_str().unwrap_or("")),
                (None, None) => String::new(),
            },
        }));
    }
    let node = cluster["nodes"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|n| mine(n, "name"));
    let ready = node.is_some_and(|n| n["ready"] == true);
    out.push(json!({
        "stage": "Node Ready",
        "done": ready,
        "time": node.filter(|_| ready).map(|n| n["since"].clone()).unwrap_or(Value::Null),
        "detail": match node {
            Some(_) if ready => String::new(),
            Some(_) => "registered, not Ready".to_string(),
            None => String::new(),
        },
    }));
    out
}

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

/// What the stages of a bootstrap host say while the load balancer is not ours.
const LB_NOT_RUN: &str = "load balancer not run by this serve";

/// Whether load-balancer backend `b` is host `h`: serve names backends by
/// host name (okd_lb::frontends_for); a backend at the host's address counts too.
fn is_backend_of(b: &Value, h: &Value) -> bool {
    b["name"]
        .as_str()
        .is_some_and(|n| Some(n) == h["hostname"].as_str())
        || b["addr"]
            .as_str()
            .and_then(|a| a.parse::<std::net::SocketAddr>().ok())
            .is_some_and(|a| Some(a.ip().to_string()) == h["address"].as_str().map(str::to_string))
}

/// Whether frontend `fe` serves `svc`: serve's name for it (`api`,
/// `machine-config`), or the port it has in the install guides (6443, 22623).
fn frontend_is(fe: &Value, svc: okd_lb::Service) -> bool {
    fe["name"] == svc.name()
        || fe["bind"]
            .as_str()
            .and_then(|a| a.parse::<std::net::SocketAddr>().ok())
            .is_some_and(|a| a.port() == svc.backend_port())
}

/// Host `h`'s backend in the `svc` frontend of `frontends` (the shape of
/// `loadBalancer.frontends`).
fn backend_in<'a>(frontends: &'a Value, h: &Value, svc: okd_lb::Service) -> Option<&'a Value> {
    frontends
        .as_array()
        .into_iter()
        .flatten()
        .filter(|fe| frontend_is(fe, svc))
        .flat_map(|fe| fe["backends"].as_array().into_iter().flatten())
        .find(|b| is_backend_of(b, h))
}

/// "API up on bootstrap" / "Machine-config server up on bootstrap": the
/// bootstrap's backend in the frontend of `svc` is UP or has passed a check
/// (time: since when UP, else the last passed check); after
/// `remove-bootstrap`, as it was just before.
fn lb_stage(stage: &str, h: &Value, ctx: &Value, svc: okd_lb::Service) -> Value {
    if !ctx["loadBalancer"]["frontends"].is_array() {
        return json!({"stage": stage, "done": false, "time": null, "detail": LB_NOT_RUN});
    }
    let (b, removed) = match backend_in(&ctx["loadBalancer"]["frontends"], h, svc) {
        Some(b) => (Some(b), false),
        None => (
            backend_in(&ctx["bootstrapRemoved"]["frontends"], h, svc),
            true,
        ),
    };
    let Some(b) = b else {
        return json!({"stage": stage, "done": false, "time": null,
            "detail": format!("not a backend of the {} frontend", svc.name())});
    };
    // A stage once reached stays done: a backend that passed a check and
    // is DOWN now came up and went down again (the warnings say so).
    let up = b["up"] == true;
    let came_up = up || b["last_ok_unix_ms"].is_u64();
    let check = b["last_check"]["detail"].as_str().unwrap_or("no check yet");
    let mut detail = if came_up && !up {
        format!("DOWN now: {check}")
    } else {
        check.to_string()
    };
    if removed {
        detail += " (before its removal from the load balancer)";
    }
    json!({
        "stage": stage,
        "done": came_up,
        "time": match (up, came_up) {
            (true, _) => rfc3339(from_unix_ms(&b["since_unix_ms"])),
            (false, true) => rfc3339(from_unix_ms(&b["last_ok_unix_ms"])),
            _ => Value::Null,
        },
        "detail": detail,
    })
}

/// The stages only the bootstrap host has, after "Ignition fetched": its
/// API and machine-config server UP behind the load balancer, the
/// `kube-system/bootstrap` ConfigMap its report-progress.sh creates
/// (openshift/installer data/data/bootstrap/files/usr/local/bin/report-progress.sh),
/// and its removal from the load balancer by `remove-bootstrap`.
fn bootstrap_stages(h: &Value, ctx: &Value) -> Vec<Value> {
    let mut out = vec![
        lb_stage("API up on bootstrap", h, ctx, okd_lb::Service::Api),
        lb_stage(
            "Machine-config server up on bootstrap",
            h,
            ctx,
            okd_lb::Service::MachineConfig,
        ),
    ];
    let cd = &ctx["clusterData"];
    let cm = &cd["bootstrap"];
    let complete = cm["status"] == "complete";
    out.push(json!({
        "stage": "Bootstrap complete",
        "done": complete,
        "time": if complete { cm["time"].clone() } else { Value::Null },
        "detail": match cm["status"].as_str() {
            Some(_) if complete => "ConfigMap kube-system/bootstrap".to_string(),
            Some(s) => format!("ConfigMap kube-system/bootstrap says {s:?}"),
            None if cm.is_object() => "ConfigMap kube-system/bootstrap has no status".to_string(),
            None if cd["available"] == true => "no ConfigMap kube-system/bootstrap yet".to_string(),
            None => "cluster data unavailable".to_string(),
        },
    }));
    let removal = match ctx["loadBalancer"]["frontends"].as_array() {
        None => json!({"done": false, "time": null, "detail": LB_NOT_RUN}),
        Some(fes) => {
            let still: Vec<&str> = fes
                .iter()
                .filter(|fe| {
                    fe["backends"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .any(|b| is_backend_of(b, h))
                })
                .map(|fe| fe["name"].as_str().unwrap_or(""))
                .collect();
            let time = &ctx["bootstrapRemoved"]["time"];
            if !still.is_empty() {
                json!({"done": false, "time": null,
                    "detail": format!("still a backend of {}", still.join(", "))})
            } else if time.is_string() {
                json!({"done": true, "time": time, "detail": "by `serve remove-bootstrap`"})
            } else {
                json!({"done": true, "time": null, "detail": "not a backend of any frontend"})
            }
        }
    };
    out.push(json!({
        "stage": "Removed from load balancer",
        "done": removal["done"],
        "time": removal["time"],
        "detail": removal["detail"],
    }));
    out
}

/// The stage named `name` of a stage line.
fn stage<'a>(st: &'a [Value], name: &str) -> Option<&'a Value> {
    st.iter().find(|s| s["stage"] == name)
}

/// The stage line of one host from its events; `ctx` holds the document's
/// `clusterData`, `loadBalancer` and `bootstrapRemoved`.
fn stages(h: &Value, ctx: &Value) -> Vec<Value> {
    let cluster = &ctx["clusterData"];
    let dns = events(h, "dns");
    let first_dns = dns.first();
    let bootstrap = h["role"] == "bootstrap";
    let ign = if bootstrap {
        events(h, "http").into_iter().find(|e| {
            e["status"] == 200
                && e["path"]
                    .as_str()
                    .is_some_and(|p| p.ends_with("bootstrap.ign"))
        })
    } else {
        events(h, "ignition")
            .into_iter()
            .find(|e| e["status"] == 200)
    };
    let mut out = vec![json!({
        "stage": "DNS answered",
        "done": first_dns.is_some(),
        "time": first_dns.map(|e| e["time"].clone()).unwrap_or(Value::Null),
        "detail": first_dns.map(|e| format!("{} {}", e["name"].as_str().unwrap_or(""), e["type"].as_str().unwrap_or(""))).unwrap_or_default(),
    })];
    out.push(json!({
        "stage": "Ignition fetched",
        "done": ign.is_some(),
        "time": ign.as_ref().map(|e| e["time"].clone()).unwrap_or(Value::Null),
        "detail": match &ign {
            Some(_) if bootstrap => "bootstrap.ign over HTTP".to_string(),
            Some(e) => format!("pool {}, spec {}", e["pool"].as_str().unwrap_or(""), e["spec"].as_str().unwrap_or("")),
            None => String::new(),
        },
    }));
    if bootstrap {
        out.extend(bootstrap_stages(h, ctx));
    } else {
        out.extend(cluster_stages(h, cluster));
    }
    out
}

/// After this long with bootstrap.ign fetched but its API not UP, a warning.
const NO_BOOTSTRAP_API_AFTER_SECS: i64 = 10 * 60;

/// The bootstrap host's warnings: its API not up long after it fetched
/// bootstrap.ign, or bootstrap complete while it is still a backend.
fn bootstrap_warnings(h: &Value, doc: &Value, now: OffsetDateTime, w: &mut Vec<String>) {
    if h["role"] != "bootstrap" || !doc["loadBalancer"]["frontends"].is_array() {
        return;
    }
    let name = h["hostname"].as_str().unwrap_or("?");
    let st = h["stages"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let done = |n: &str| stage(st, n).is_some_and(|s| s["done"] == true);
    let removed = done("Removed from load balancer");
    let complete = stage(st, "Bootstrap complete").filter(|s| s["done"] == true);
    if let Some(ign) = stage(st, "Ignition fetched").filter(|s| s["done"] == true)
        && let Some(t) = parse_time(&ign["time"])
        && (now - t).whole_seconds() >= NO_BOOTSTRAP_API_AFTER_SECS
        && !done("API up on bootstrap")
        && complete.is_none()
        && !removed
    {
        let check = stage(st, "API up on bootstrap")
            .and_then(|s| s["detail"].as_str())
            .unwrap_or("");
        w.push(format!(
            "{name} fetched bootstrap.ign {} but its API is not up (last check: {check}): log in to {name} and follow `journalctl -b -f -u release-image.service -u bootkube.service`",
            ago(t, now)
        ));
    }
    if let Some(c) = complete
        && !removed
    {
        let when = parse_time(&c["time"])
            .map(|t| format!(" {}", ago(t, now)))
            .unwrap_or_default();
        w.push(format!(
            "bootstrap complete{when} but {name} is still a load balancer backend: remove it with `okd-install destroy bootstrap` (or `okd-install serve remove-bootstrap`)"
        ));
    }
}

/// Warnings in plain words with the next step.
fn warnings(doc: &Value, now: OffsetDateTime) -> Vec<String> {
    let mut w = Vec::new();
    for h in doc["hosts"].as_array().into_iter().flatten() {
        let name = h["hostname"].as_str().unwrap_or("?");
        let st = h["stages"].as_array().cloned().unwrap_or_default();
        let dns_done = st.first().is_some_and(|s| s["done"] == true);
        let ign_done = st.get(1).is_some_and(|s| s["done"] == true);
        if dns_done
            && !ign_done
            && let Some(t) = parse_time(&st[0]["time"])
            && (now - t).whole_seconds() >= NO_IGNITION_AFTER_SECS
        {
            w.push(format!(
                "{name} resolved {} {} but never fetched Ignition: check the kernel arguments / boot order",
                st[0]["detail"].as_str().unwrap_or("").split(' ').next().unwrap_or(""),
                ago(t, now)
            ));
        }
        for e in events(h, "ignition") {
            if e["status"].as_u64().is_some_and(|s| s >= 400) {
                w.push(format!(
                    "{name} asked the machine-config server for pool {} and got HTTP {}",
                    e["pool"].as_str().unwrap_or(""),
                    e["status"]
                ));
                break;
            }
        }
        bootstrap_warnings(h, doc, now, &mut w);
        if h["role"] != "bootstrap" {
            for e in events(h, "http") {
                if e["status"] == 403
                    && e["path"]
                        .as_str()
                        .is_some_and(|p| p.ends_with("bootstrap.ign"))
                {
                    w.push(format!(
                        "bootstrap.ign was requested by {name} ({}), refused",
                        h["address"].as_str().unwrap_or("")
                    ));
                    break;
                }
            }
        }
    }
    if let Some(t) = parse_time(&doc["certificates"]["notAfter"])
        && (t - now).whole_seconds() < CERT_WARN_SECS
    {
        let file = doc["certificates"]["file"].as_str().unwrap_or("");
        w.push(if t <= now {
            format!("the install's 24-hour certificates expired {} (tls/{file}): nodes cannot join with this bootstrap.ign; create the Ignition configs again", ago(t, now))
        } else {
            format!("the install's 24-hour certificates expire {} (tls/{file}): boot the remaining nodes before then, or create the Ignition configs again", until(t, now))
        });
    }
    let hosts: Vec<&Value> = doc["hosts"].as_array().into_iter().flatten().collect();
    for c in doc["clusterData"]["csrs"].as_array().into_iter().flatten() {
        if c["approved"] == true || c["denied"] == true || c["kind"] == "other" {
            continue;
        }
        let name = c["name"].as_str().unwrap_or("");
        let node = c["node"].as_str().unwrap_or("?");
        let host = hosts
            .iter()
            .find(|h| names_of(h).contains(&node.to_lowercase()));
        match host {
            Some(h) => w.push(format!(
                "{} has a pending {} CSR {name}: approve it with `okd-install approve-csr`",
                h["hostname"].as_str().unwrap_or(node),
                c["kind"].as_str().unwrap_or("")
            )),
            None => w.push(format!(
                "CSR {name} asks for node {node}, which is not in the inventory: check where it comes from before approving it"
            )),
        }
    }
    for c in doc["unknownClients"].as_array().into_iter().flatten() {
        if events(c, "http").iter().any(|e| {
            e["status"] == 403
                && e["path"]
                    .as_str()
                    .is_some_and(|p| p.ends_with("bootstrap.ign"))
        }) {
            w.push(format!(
                "bootstrap.ign was requested by {}, refused (not the inventory's bootstrap host)",
                c["address"].as_str().unwrap_or("")
            ));
        }
    }
    for fe in doc["loadBalancer"]["frontends"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let backends: Vec<&Value> = fe["backends"].as_array().into_iter().flatten().collect();
        let any_up = backends.iter().any(|b| b["up"] == true);
        for b in &backends {
            // A backend that never passed a check is a host not serving
            // yet: the table shows it, the warnings keep to changes.
            if b["up"] == false && b["last_ok_unix_ms"].is_u64() {
                let since = from_unix_ms(&b["since_unix_ms"])
                    .map(|t| ago(t, now))
                    .unwrap_or_default();
                let fe_name = fe["name"].as_str().unwrap_or("");
                w.push(format!(
                    "load balancer backend {} ({}) of {fe_name} went DOWN {since}: {}; {}",
                    b["name"].as_str().unwrap_or(""),
                    b["addr"].as_str().unwrap_or(""),
                    b["last_check"]["detail"].as_str().unwrap_or("no check yet"),
                    if any_up {
                        "its traffic goes to the backends still UP".to_string()
                    } else {
                        format!("no backend of {fe_name} is UP, so its clients get no answer")
                    }
                ));
            }
        }
    }
    w
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
ol.st li.done::before{content:'● ';color:#1a7f37}ol.st li.todo{color:#666}.up{color:#1a7f37;font-weight:600}.down{color:#b42318;font-weight:600}\
ul.warn li{color:#8a4b00}time{color:#444;font-size:.9em}\
@media (max-width:40rem){table,thead,tbody,tr,th,td{display:block}thead{display:none}td{border:0;padding:.15rem 0}tr{border-bottom:1px solid #ccc;padding:.5rem 0}td[data-label]::before{content:attr(data-label) ': ';color:#555}}";

/// Keeps the page current: fetches it again every second and swaps `<main>`.
const SCRIPT: &str = "setInterval(async()=>{try{const r=await fetch(location.pathname,{cache:'no-store'});\
const d=new DOMParser().parseFromString(await r.text(),'text/html');const m=d.getElementById('main');\
if(m){document.getElementById('main').replaceWith(m);}}catch(e){}},1000);";

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
<table><thead><tr><th scope=\"col\">Host</th><th scope=\"col\">Role</th><th scope=\"col\">Address</th><th scope=\"col\">MAC</th><th scope=\"col\">Stages</th></tr></thead><tbody>";
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
            "<tr><th scope=\"row\">{}</th><td data-label=\"Role\">{}</td><td data-label=\"Address\">{}</td><td data-label=\"MAC\">{}</td><td data-label=\"Stages\">{st}</td></tr>",
            esc(h["hostname"].as_str().unwrap_or("")),
            esc(h["role"].as_str().unwrap_or("")),
            esc(h["address"].as_str().unwrap_or("")),
            esc(h["mac"].as_str().unwrap_or("—")),
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
            "<p>Cluster data from {}: {} CSRs pending, {} nodes; cluster operators {}/{} available{}.</p>",
            esc(cd["server"].as_str().unwrap_or("")),
            pending,
            cd["nodes"].as_array().map_or(0, |n| n.len()),
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
                    let up = b["up"] == true;
                    let since = match from_unix_ms(&b["since_unix_ms"]) {
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
                        if up { "up" } else { "down" },
                        if up { "UP" } else { "DOWN" },
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

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    fn doc() -> Value {
        json!({
            "cluster": "okd.example", "started": "2026-11-24T10:00:00Z",
            "hosts": [
                {"hostname": "bootstrap", "role": "bootstrap", "address": "192.168.120.102", "mac": "52:54:00:12:01:02",
                 "dns": [{"time": "2026-11-24T10:01:00Z", "name": "api-int.okd.example", "type": "A"}],
                 "ignition": [], "http": [{"time": "2026-11-24T10:01:05Z", "path": "/ignition/bootstrap.ign", "status": 200}]},
                {"hostname": "master", "role": "master", "address": "192.168.120.103", "mac": null,
                 "dns": [{"time": "2026-11-24T10:02:00Z", "name": "api-int.okd.example", "type": "A"}],
                 "ignition": [], "http": [{"time": "2026-11-24T10:02:01Z", "path": "/ignition/bootstrap.ign", "status": 403}]},
                {"hostname": "worker1", "role": "worker", "address": "192.168.120.104",
                 "dns": [], "ignition": [{"time": "2026-11-24T10:03:00Z", "pool": "worker", "spec": "3.2.0", "status": 500}], "http": []},
            ],
            "unknownClients": [{"address": "192.168.120.66", "http": [{"path": "/ignition/bootstrap.ign", "status": 403}]}],
            "loadBalancer": {"frontends": [{"name": "api", "bind": "192.168.120.101:6443", "backends": [
                // UP since 2026-11-24T10:05:00Z.
                {"name": "bootstrap", "addr": "192.168.120.102:6443", "up": true, "since_unix_ms": 1795514700000u64,
                 "last_check": {"detail": "HTTP 200"}, "active_connections": 2, "connections_total": 40, "bytes_in": 2048, "bytes_out": 3_000_000},
                {"name": "master", "addr": "192.168.120.103:6443", "up": false, "since_unix_ms": 1795999200000u64,
                 "last_ok_unix_ms": 1795999100000u64, "last_check": {"detail": "connection refused"}, "active_connections": 0, "connections_total": 0, "bytes_in": 0, "bytes_out": 0},
            ]}, {"name": "machine-config", "bind": "192.168.120.101:22623", "backends": [
                {"name": "bootstrap", "addr": "192.168.120.102:22623", "up": false, "since_unix_ms": 1795514400000u64,
                 "last_check": {"detail": "HTTP 503"}, "active_connections": 0, "connections_total": 0, "bytes_in": 0, "bytes_out": 0},
            ]}]},
            "bootstrapRemoved": null,
        })
    }

    /// The names of a host's stages.
    fn names(h: &Value) -> Vec<&str> {
        h["stages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["stage"].as_str().unwrap())
            .collect()
    }

    /// The stage `name` of the first host (the bootstrap of [`doc`]).
    fn boot_stage<'a>(d: &'a Value, name: &str) -> &'a Value {
        d["hosts"][0]["stages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["stage"] == name)
            .unwrap_or_else(|| panic!("no stage {name}: {}", d["hosts"][0]["stages"]))
    }

    fn warns(d: &Value) -> Vec<String> {
        d["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect()
    }

    const JOURNAL: &str = "`journalctl -b -f -u release-image.service -u bootkube.service`";
    const REMOVE: &str =
        "remove it with `okd-install destroy bootstrap` (or `okd-install serve remove-bootstrap`)";

    #[test]
    fn bootstrap_stage_line() {
        let now = datetime!(2026-11-24 10:10 UTC);
        let mut d = doc();
        d["clusterData"] = json!({"available": true, "csrs": [], "nodes": [], "bootstrap": null});
        annotate(&mut d, now);
        assert_eq!(
            names(&d["hosts"][0]),
            [
                "DNS answered",
                "Ignition fetched",
                "API up on bootstrap",
                "Machine-config server up on bootstrap",
                "Bootstrap complete",
                "Removed from load balancer"
            ]
        );
        let api = boot_stage(&d, "API up on bootstrap");
        assert_eq!(api["done"], true);
        assert_eq!(api["time"], "2026-11-24T10:05:00Z");
        assert_eq!(api["detail"], "HTTP 200");
        let mcs = boot_stage(&d, "Machine-config server up on bootstrap");
        assert_eq!(mcs["done"], false);
        assert_eq!(mcs["time"], Value::Null);
        assert_eq!(mcs["detail"], "HTTP 503");
        let complete = boot_stage(&d, "Bootstrap complete");
        assert_eq!(complete["done"], false);
        assert_eq!(complete["detail"], "no ConfigMap kube-system/bootstrap yet");
        let removed = boot_stage(&d, "Removed from load balancer");
        assert_eq!(removed["done"], false);
        assert_eq!(removed["detail"], "still a backend of api, machine-config");
        // Other hosts keep their line.
        assert_eq!(
            names(&d["hosts"][1]),
            [
                "DNS answered",
                "Ignition fetched",
                "CSR client approved",
                "CSR serving approved",
                "Node Ready"
            ]
        );
        // 9 minutes after bootstrap.ign: no warning about its API yet.
        assert!(
            !warns(&d).iter().any(|w| w.contains("journalctl")),
            "{:?}",
            warns(&d)
        );

        let html = page(&d, now);
        let row = html
            .split("<tr>")
            .find(|r| r.starts_with("<th scope=\"row\">bootstrap</th>"))
            .unwrap_or_else(|| panic!("no bootstrap row: {html}"));
        for li in [
            "<li class=\"done\">API up on bootstrap (HTTP 200) <time datetime=\"2026-11-24T10:05:00Z\">5 min ago</time></li>",
            "<li class=\"todo\">Machine-config server up on bootstrap (HTTP 503)</li>",
            "<li class=\"todo\">Bootstrap complete (no ConfigMap kube-system/bootstrap yet)</li>",
            "<li class=\"todo\">Removed from load balancer (still a backend of api, machine-config)</li>",
        ] {
            assert!(row.contains(li), "{li} not in {row}");
        }
    }

    #[test]
    fn bootstrap_api_not_up_warning() {
        let mut d = doc();
        d["loadBalancer"]["frontends"][0]["backends"][0]["up"] = json!(false);
        d["loadBalancer"]["frontends"][0]["backends"][0]["last_check"]["detail"] =
            json!("connection refused");
        let want = format!(
            "bootstrap fetched bootstrap.ign 10 min ago but its API is not up (last check: connection refused): log in to bootstrap and follow {JOURNAL}"
        );
        // bootstrap.ign was fetched at 10:01:05.
        let mut early = d.clone();
        annotate(&mut early, datetime!(2026-11-24 10:11 UTC));
        assert_eq!(boot_stage(&early, "API up on bootstrap")["done"], false);
        assert!(
            !warns(&early).iter().any(|w| w.contains("journalctl")),
            "{:?}",
            warns(&early)
        );
        let mut late = d.clone();
        annotate(&mut late, datetime!(2026-11-24 10:11:10 UTC));
        assert!(warns(&late).contains(&want), "{:?}", warns(&late));
        // Once the bootstrap reports completion, its API no longer matters.
        let mut done = d.clone();
        done["clusterData"] = json!({"available": true, "bootstrap": {"status": "complete", "time": "2026-11-24T10:09:00Z"}});
        annotate(&mut done, datetime!(2026-11-24 10:30 UTC));
        assert!(
            !warns(&done).iter().any(|w| w.contains("journalctl")),
            "{:?}",
            warns(&done)
        );
    }

    #[test]
    fn bootstrap_api_that_went_down_stays_reached() {
        let now = datetime!(2026-11-24 10:40 UTC);
        let mut d = doc();
        let b = &mut d["loadBalancer"]["frontends"][0]["backends"][0];
        b["up"] = json!(false);
        b["last_ok_unix_ms"] = json!(1795516800000u64); // 10:40:00Z
        b["last_check"]["detail"] = json!("connection refused");
        annotate(&mut d, now);
        let api = boot_stage(&d, "API up on bootstrap");
        assert_eq!(api["done"], true, "{api}");
        assert_eq!(api["time"], "2026-11-24T10:40:00Z");
        assert_eq!(api["detail"], "DOWN now: connection refused");
        // Never passed a check: not reached.
        let mcs = boot_stage(&d, "Machine-config server up on bootstrap");
        assert_eq!(mcs["done"], false, "{mcs}");
        assert_eq!(mcs["detail"], "HTTP 503");
    }

    #[test]
    fn bootstrap_complete_then_removed() {
        let now = datetime!(2026-11-24 10:40 UTC);
        let mut d = doc();
        d["clusterData"] = json!({"available": true, "bootstrap": {"status": "progressing", "time": "2026-11-24T10:30:00Z"}});
        let mut progressing = d.clone();
        annotate(&mut progressing, now);
        let c = boot_stage(&progressing, "Bootstrap complete");
        assert_eq!(c["done"], false);
        assert_eq!(
            c["detail"],
            "ConfigMap kube-system/bootstrap says \"progressing\""
        );

        d["clusterData"]["bootstrap"]["status"] = json!("complete");
        let mut complete = d.clone();
        annotate(&mut complete, now);
        let c = boot_stage(&complete, "Bootstrap complete");
        assert_eq!(c["done"], true);
        assert_eq!(c["time"], "2026-11-24T10:30:00Z");
        assert_eq!(c["detail"], "ConfigMap kube-system/bootstrap");
        let want = format!(
            "bootstrap complete 10 min ago but bootstrap is still a load balancer backend: {REMOVE}"
        );
        assert!(warns(&complete).contains(&want), "{:?}", warns(&complete));

        // remove-bootstrap: no bootstrap backend left, its backends as they were kept.
        let api_before = d["loadBalancer"]["frontends"][0].clone();
        for fe in d["loadBalancer"]["frontends"].as_array_mut().unwrap() {
            fe["backends"]
                .as_array_mut()
                .unwrap()
                .retain(|b| b["name"] != "bootstrap");
        }
        let mut kept = api_before;
        kept["backends"]
            .as_array_mut()
            .unwrap()
            .retain(|b| b["name"] == "bootstrap");
        d["bootstrapRemoved"] = json!({"time": "2026-11-24T10:39:00Z", "frontends": [kept]});
        annotate(&mut d, now);
        let r = boot_stage(&d, "Removed from load balancer");
        assert_eq!(r["done"], true);
        assert_eq!(r["time"], "2026-11-24T10:39:00Z");
        assert_eq!(r["detail"], "by `serve remove-bootstrap`");
        let api = boot_stage(&d, "API up on bootstrap");
        assert_eq!(api["done"], true);
        assert_eq!(
            api["detail"],
            "HTTP 200 (before its removal from the load balancer)"
        );
        let mcs = boot_stage(&d, "Machine-config server up on bootstrap");
        assert_eq!(mcs["done"], false);
        assert_eq!(
            mcs["detail"],
            "not a backend of the machine-config frontend"
        );
        assert!(
            !warns(&d).iter().any(|w| w.contains("remove it with")),
            "{:?}",
            warns(&d)
        );
        let html = page(&d, now);
        assert!(html.contains("<li class=\"done\">Removed from load balancer (by `serve remove-bootstrap`) <time datetime=\"2026-11-24T10:39:00Z\">1 min ago</time></li>"), "{html}");
        assert!(html.contains("<li class=\"done\">Bootstrap complete (ConfigMap kube-system/bootstrap) <time datetime=\"2026-11-24T10:30:00Z\">10 min ago</time></li>"), "{html}");
    }

    #[test]
    fn bootstrap_without_our_load_balancer() {
        let now = datetime!(2026-11-24 11:00 UTC);
        let mut d = doc();
        d["loadBalancer"] = Value::Null;
        d["clusterData"] = json!({"available": true, "bootstrap": {"status": "complete", "time": "2026-11-24T10:30:00Z"}});
        annotate(&mut d, now);
        for name in [
            "API up on bootstrap",
            "Machine-config server up on bootstrap",
            "Removed from load balancer",
        ] {
            let s = boot_stage(&d, name);
            assert_eq!(s["done"], false, "{name}");
            assert_eq!(s["detail"], "load balancer not run by this serve", "{name}");
        }
        assert_eq!(boot_stage(&d, "Bootstrap complete")["done"], true);
        let w = warns(&d);
        assert!(
            !w.iter()
                .any(|w| w.contains("journalctl") || w.contains("remove it with")),
            "{w:?}"
        );
    }

    #[test]
    fn bootstrap_frontends_by_name_or_port() {
        let now = datetime!(2026-11-24 10:10 UTC);
        let mut d = doc();
        // serve's names on other ports (bastion-config `ports`) …
        d["loadBalancer"]["frontends"][0]["bind"] = json!("127.0.0.1:16443");
        d["loadBalancer"]["frontends"][1]["bind"] = json!("127.0.0.1:32623");
        // … or other names on the guides' ports; the backend by address.
        let mut other = doc();
        other["loadBalancer"]["frontends"][0]["name"] = json!("kube-api");
        other["loadBalancer"]["frontends"][1]["name"] = json!("mcs");
        other["loadBalancer"]["frontends"][1]["backends"][0]["name"] = json!("boot0");
        for mut d in [d, other] {
            annotate(&mut d, now);
            assert_eq!(boot_stage(&d, "API up on bootstrap")["detail"], "HTTP 200");
            assert_eq!(
                boot_stage(&d, "Machine-config server up on bootstrap")["detail"],
                "HTTP 503"
            );
        }
        // A frontend that is neither is not taken for the API.
        let mut none = doc();
        none["loadBalancer"]["frontends"][0]["name"] = json!("ingress-https");
        none["loadBalancer"]["frontends"][0]["bind"] = json!("192.168.120.101:443");
        annotate(&mut none, now);
        assert_eq!(
            boot_stage(&none, "API up on bootstrap")["detail"],
            "not a backend of the api frontend"
        );
    }

    #[test]
    fn stages_warnings_and_page() {
        let now = datetime!(2026-11-24 10:10 UTC);
        let mut d = doc();
        d["clusterData"] = json!({"available": true, "server": "https://api.okd.example:6443",
            "csrs": [
                {"name": "csr-a", "kind": "client", "node": "master", "approved": true, "denied": false, "time": "2026-11-24T10:05:00Z"},
                {"name": "csr-b", "kind": "serving", "node": "master", "approved": false, "denied": false},
                {"name": "csr-x", "kind": "client", "node": "evil", "approved": false, "denied": false},
            ],
            "nodes": [{"name": "master", "ready": false}],
            "operators": {"available": 3, "total": 5, "degraded": ["ingress"]}});
        let down_since = (now - time::Duration::minutes(5)).unix_timestamp() * 1000;
        d["loadBalancer"]["frontends"][0]["backends"][1]["since_unix_ms"] = json!(down_since);
        d["certificates"] =
            json!({"file": "kube-apiserver-lb-server.crt", "notAfter": "2026-11-24T11:30:00Z"});
        annotate(&mut d, now);
        let h = &d["hosts"];
        assert_eq!(h[0]["stages"][1]["done"], true, "bootstrap.ign fetched");
        assert_eq!(h[1]["stages"][0]["done"], true);
        assert_eq!(h[1]["stages"][1]["done"], false);
        assert_eq!(h[1]["stages"].as_array().unwrap().len(), 5);
        assert_eq!(h[1]["stages"][2]["done"], true, "client CSR approved");
        assert_eq!(h[1]["stages"][2]["time"], "2026-11-24T10:05:00Z");
        assert_eq!(h[1]["stages"][3]["detail"], "csr-b pending");
        assert_eq!(h[1]["stages"][4]["detail"], "registered, not Ready");
        assert_eq!(h[2]["stages"][2]["done"], false);
        let w: Vec<&str> = d["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|v| v.as_str())
            .collect();
        assert!(w.contains(&"master resolved api-int.okd.example 8 min ago but never fetched Ignition: check the kernel arguments / boot order"), "{w:?}");
        assert!(
            w.contains(&"bootstrap.ign was requested by master (192.168.120.103), refused"),
            "{w:?}"
        );
        assert!(w.contains(&"bootstrap.ign was requested by 192.168.120.66, refused (not the inventory's bootstrap host)"), "{w:?}");
        assert!(
            w.contains(&"worker1 asked the machine-config server for pool worker and got HTTP 500"),
            "{w:?}"
        );
        assert!(
            w.contains(&"load balancer backend master (192.168.120.103:6443) of api went DOWN 5 min ago: connection refused; its traffic goes to the backends still UP"),
            "{w:?}"
        );
        // The bootstrap's machine-config server never passed a check: a
        // host not serving yet is in the table, not in the warnings.
        assert!(
            !w.iter().any(|x| x.contains("(192.168.120.102:22623)")),
            "{w:?}"
        );
        assert!(
            w.contains(
                &"master has a pending serving CSR csr-b: approve it with `okd-install approve-csr`"
            ),
            "{w:?}"
        );
        assert!(w.contains(&"CSR csr-x asks for node evil, which is not in the inventory: check where it comes from before approving it"), "{w:?}");
        assert!(w.contains(&"the install's 24-hour certificates expire in 1 h 20 min (tls/kube-apiserver-lb-server.crt): boot the remaining nodes before then, or create the Ignition configs again"), "{w:?}");
        let html = page(&d, now);
        assert!(html.contains("(first to expire: tls/kube-apiserver-lb-server.crt) expire <time datetime=\"2026-11-24T11:30:00Z\">in 1 h 20 min</time>"), "{html}");
        assert!(html.contains("Cluster data from https://api.okd.example:6443: 2 CSRs pending, 1 nodes; cluster operators 3/5 available, degraded: ingress."), "{html}");
        assert!(
            html.contains("<time datetime=\"2026-11-24T10:01:05Z\">8 min ago</time>"),
            "{html}"
        );
        assert!(
            html.contains("<td class=\"down\" data-label=\"State\">DOWN since 5 min ago</td>"),
            "{html}"
        );
        assert!(
            html.contains("<td class=\"down\" data-label=\"State\">DOWN, no check passed yet</td>"),
            "{html}"
        );
        assert!(html.contains("2.9 MiB"), "{html}");
        assert!(
            !html.contains("src=") && !html.contains("href=\"http") && !html.contains("@import"),
            "no external assets"
        );
        assert!(html.len() < 100 * 1024);
    }

    #[test]
    fn human_times() {
        let now = datetime!(2026-11-24 10:00 UTC);
        assert_eq!(ago(now, now), "just now");
        assert_eq!(ago(datetime!(2026-11-24 09:59:18 UTC), now), "42 s ago");
        assert_eq!(ago(datetime!(2026-11-24 09:58 UTC), now), "2 min ago");
        assert_eq!(ago(datetime!(2026-11-24 07:00 UTC), now), "3 h ago");
        assert_eq!(ago(datetime!(2026-11-22 10:00 UTC), now), "2 days ago");
    }
}
