use super::*;
use time::macros::datetime;

fn doc() -> Value {
    json!({
        "cluster": "okd.example", "started": "2026-11-24T10:00:00Z",
        "hosts": [
            {"hostname": "bootstrap", "role": "bootstrap", "address": "192.168.120.102",
             "dns": [{"time": "2026-11-24T10:01:00Z", "name": "api-int.okd.example", "type": "A"}],
             "ignition": [], "http": [{"time": "2026-11-24T10:01:05Z", "path": "/ignition/bootstrap.ign", "status": 200, "bytes": 300_000, "size": 300_000, "complete": true}]},
            {"hostname": "master", "role": "master", "address": "192.168.120.103",
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

/// Issue #18 finding 9: before a check of the bootstrap's backends nothing
/// is claimed about its API or machine-config server, the page says "not
/// checked yet"; a bootstrap that never answered and never fetched
/// bootstrap.ign gets the next step.
#[test]
fn bootstrap_not_checked_claims_nothing() {
    let now = datetime!(2026-11-24 10:10 UTC);
    let mut d = doc();
    d["hosts"][0]["http"] = json!([]);
    for fe in 0..2 {
        let b = &mut d["loadBalancer"]["frontends"][fe]["backends"][0];
        b["up"] = json!(false);
        b["checked"] = json!(false);
        b["state"] = json!("not checked yet");
        b["last_check"] = Value::Null;
        b.as_object_mut().unwrap().remove("last_ok_unix_ms");
    }
    let mut fresh = d.clone();
    annotate(&mut fresh, now);
    for stage in [
        "API up on bootstrap",
        "Machine-config server up on bootstrap",
    ] {
        let st = boot_stage(&fresh, stage);
        assert_eq!(st["done"], false, "{st}");
        assert_eq!(st["detail"], "not checked yet", "{st}");
    }
    let html = page(&fresh, now);
    assert!(
        html.contains("<li class=\"todo\">API up on bootstrap (not checked yet)</li>"),
        "{html}"
    );
    assert!(
        html.contains("data-label=\"State\">not checked yet</td>"),
        "{html}"
    );
    assert!(!html.contains(">UP"), "{html}");
    // Checked, refused, never fetched bootstrap.ign: boot it.
    let b = &mut d["loadBalancer"]["frontends"][0]["backends"][0];
    b["checked"] = json!(true);
    b["state"] = json!("DOWN");
    b["last_check"] = json!({"detail": "connection refused"});
    annotate(&mut d, now);
    assert_eq!(
        boot_stage(&d, "API up on bootstrap")["detail"],
        "connection refused; boot bootstrap: it has not fetched bootstrap.ign yet"
    );
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
    assert!(html.contains("Cluster data from https://api.okd.example:6443: 2 CSRs pending, 1 node; cluster operators 3/5 available, degraded: ingress."), "{html}");
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

/// Every bootstrap.ign request is on the page with the bytes sent of the
/// size; a transfer that broke off does not count as "Ignition fetched";
/// the page has no MAC column.
#[test]
fn bootstrap_ign_fetches() {
    let now = datetime!(2026-11-24 10:10 UTC);
    let mut d = doc();
    d["hosts"][0]["http"] = json!([
        {"time": "2026-11-24T10:01:00Z", "path": "/ignition/bootstrap.ign", "status": 200, "bytes": 180, "size": 300_000, "complete": false},
    ]);
    annotate(&mut d, now);
    let ign = boot_stage(&d, "Ignition fetched");
    assert_eq!(ign["done"], false, "{ign}");
    assert_eq!(
        ign["detail"],
        "1 fetch(es) of bootstrap.ign, none complete; the last sent 180 of 300000 bytes"
    );
    let html = page(&d, now);
    for want in [
        "<h2 id=\"fetches\">bootstrap.ign fetches</h2>",
        "<th scope=\"row\">bootstrap</th><td data-label=\"Address\">192.168.120.102</td><td data-label=\"HTTP\">200</td><td data-label=\"Sent\">180 B of 293.0 KiB, broke off</td>",
        "<th scope=\"row\">master</th><td data-label=\"Address\">192.168.120.103</td><td data-label=\"HTTP\">403</td><td data-label=\"Sent\">refused</td>",
        "<th scope=\"row\">not in the inventory</th><td data-label=\"Address\">192.168.120.66</td>",
    ] {
        assert!(html.contains(want), "{want} not in {html}");
    }
    assert!(
        !html.contains(">MAC<") && !html.contains("data-label=\"MAC\""),
        "{html}"
    );

    let mut d = doc();
    d["hosts"][0]["http"]
        .as_array_mut()
        .unwrap()
        .insert(0, json!({"time": "2026-11-24T10:01:00Z", "path": "/ignition/bootstrap.ign", "status": 200, "bytes": 180, "size": 300_000, "complete": false}));
    annotate(&mut d, now);
    let ign = boot_stage(&d, "Ignition fetched");
    assert_eq!(ign["done"], true, "{ign}");
    assert_eq!(
        ign["time"], "2026-11-24T10:01:05Z",
        "the complete fetch counts"
    );
    assert!(page(&d, now).contains("293.0 KiB of 293.0 KiB, complete"));
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
