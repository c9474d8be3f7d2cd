//! The stage line of each host: nodes from DNS answered to Node Ready,
//! the bootstrap host from Ignition fetched to its removal from the load
//! balancer.

use serde_json::{Value, json};

use super::*;

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
    // Before its first check nothing is claimed.
    let checked = b["checked"] != false;
    let up = checked && b["up"] == true;
    let came_up = up || b["last_ok_unix_ms"].is_u64();
    let check = b["last_check"]["detail"].as_str().unwrap_or("no check yet");
    let mut detail = if !checked {
        okd_lb::NOT_CHECKED.to_string()
    } else if came_up && !up {
        format!("DOWN now: {check}")
    } else if let (false, Some(step)) = (came_up, next_step(h)) {
        format!("{check}; {step}")
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

/// What to do about a bootstrap host whose API or machine-config server
/// never passed a check and which has not fetched bootstrap.ign: boot it.
/// `None` once it fetched it (the warnings say what to follow then).
fn next_step(h: &Value) -> Option<String> {
    let fetched = events(h, "http").iter().any(|e| {
        e["status"] == 200
            && e["path"]
                .as_str()
                .is_some_and(|p| p.ends_with("bootstrap.ign"))
    });
    let name = h["hostname"].as_str().unwrap_or("the bootstrap host");
    (!fetched).then(|| format!("boot {name}: it has not fetched bootstrap.ign yet"))
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
pub(super) fn stage<'a>(st: &'a [Value], name: &str) -> Option<&'a Value> {
    st.iter().find(|s| s["stage"] == name)
}

/// The stage line of one host from its events; `ctx` holds the document's
/// `clusterData`, `loadBalancer` and `bootstrapRemoved`.
pub(super) fn stages(h: &Value, ctx: &Value) -> Vec<Value> {
    let cluster = &ctx["clusterData"];
    let dns = events(h, "dns");
    let first_dns = dns.first();
    let bootstrap = h["role"] == "bootstrap";
    // A bootstrap.ign fetch counts once its whole body went out.
    let fetches: Vec<Value> = if bootstrap {
        events(h, "http")
            .into_iter()
            .filter(|e| is_bootstrap_ign(e) && (e["status"] == 200 || e["status"] == 206))
            .collect()
    } else {
        Vec::new()
    };
    let ign = if bootstrap {
        fetches
            .iter()
            .find(|e| e["status"] == 200 && e["complete"] == true)
            .cloned()
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
            None => match fetches.last() {
                Some(e) => format!(
                    "{} fetch(es) of bootstrap.ign, none complete; the last sent {} of {}",
                    fetches.len(),
                    e["bytes"].as_u64().unwrap_or(0),
                    e["size"].as_u64().map_or("?".to_string(), |n| n.to_string()),
                ) + " bytes",
                None => String::new(),
            },
        },
    }));
    if bootstrap {
        out.extend(bootstrap_stages(h, ctx));
    } else {
        out.extend(cluster_stages(h, cluster));
    }
    out
}
