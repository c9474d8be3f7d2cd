//! Warnings in plain words with the next step, from the annotated status
//! document.

use serde_json::Value;
use time::OffsetDateTime;

use super::stages::stage;
use super::*;

/// After this long without Ignition, a host that resolved names gets a warning.
const NO_IGNITION_AFTER_SECS: i64 = 5 * 60;

/// Below this, the certificate expiry is a warning.
const CERT_WARN_SECS: i64 = 2 * 3600;

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
pub(super) fn warnings(doc: &Value, now: OffsetDateTime) -> Vec<String> {
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
