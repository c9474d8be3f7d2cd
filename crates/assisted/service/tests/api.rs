//! The service over HTTP on loopback with its SQLite default and on
//! PostgreSQL: a cluster, an infra-env, hosts that register, poll and
//! answer their steps as the agent does, the monitor's states,
//! validations and role suggestions, bad input, replayed steps and a
//! restart that loses nothing.

mod common;

use std::time::{Duration, Instant};

use common::*;
use okd_assisted_api::rest::{Cluster, Event, InfraEnv, Steps};
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discovery_validations_roles_and_restart_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    scenario(
        &okd_assisted_service::sqlite_url(dir.path()),
        Some(dir.path()),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discovery_validations_roles_and_restart_on_postgresql() {
    let Some(pg) = okd_test_utils::postgres::Postgres::start() else {
        return;
    };
    scenario(&pg.url, None).await;
    drop(pg);
}

/// The whole discovery on the database at `url`; `dir` holds the SQLite
/// file (its mode is checked).
async fn scenario(url: &str, dir: Option<&std::path::Path>) {
    let svc = start(url).await;
    let base = svc.base.clone();
    let c = client();
    use reqwest::Method as M;

    // Bad input: each a 400 naming the field; nothing stored.
    let (code, body) = send(
        &c,
        M::POST,
        &format!("{base}/clusters"),
        Some(json!({
            "name": "demo", "openshift_version": "4.19", "pull_secret": PS, "base_dns_domian": "x"
        })),
    )
    .await;
    assert_eq!(code, 400);
    assert!(
        body["reason"]
            .as_str()
            .unwrap()
            .contains("unknown field `base_dns_domian`"),
        "{body}"
    );
    let (code, body) = send(&c, M::POST, &format!("{base}/clusters"), Some(json!({
        "name": "demo", "openshift_version": "4.19", "pull_secret": PS, "control_plane_count": "three"
    }))).await;
    assert_eq!(code, 400);
    // The field and the rule, both.
    let reason = body["reason"].as_str().unwrap();
    assert!(
        reason.contains("field control_plane_count: invalid type"),
        "{body}"
    );
    let (code, body) = send(
        &c,
        M::POST,
        &format!("{base}/clusters"),
        Some(json!({
            "name": "demo", "openshift_version": "4.19", "pull_secret": "nope"
        })),
    )
    .await;
    assert_eq!(code, 400);
    assert!(
        body["reason"].as_str().unwrap().starts_with("pull_secret:"),
        "{body}"
    );
    let (code, body) = send(&c, M::POST, &format!("{base}/clusters"), Some(json!({
        "name": "demo", "openshift_version": "4.19", "pull_secret": PS, "api_vips": [{"ip": "192.168.126.300"}]
    }))).await;
    assert_eq!(code, 400);
    assert!(
        body["reason"].as_str().unwrap().contains("api_vips[0].ip"),
        "{body}"
    );
    let resp = c
        .post(format!("{base}/clusters"))
        .header("content-type", "application/json")
        .body("{\"name\":")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 400);
    let big = "x".repeat(3 * 1024 * 1024);
    // Its own client: the server answers 413 and closes the connection
    // without reading the rest, which must not poison the shared pool.
    let resp = client()
        .post(format!("{base}/clusters"))
        .header("content-type", "application/json")
        .body(big)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 413);
    let (_, list) = send(&c, M::GET, &format!("{base}/clusters"), None).await;
    assert_eq!(
        list.as_array().unwrap().len(),
        0,
        "nothing stored by bad requests"
    );

    // The cluster and its infra-env.
    let (code, cl) = send(
        &c,
        M::POST,
        &format!("{base}/clusters"),
        Some(json!({
            "name": "demo", "openshift_version": "4.19", "pull_secret": PS,
            "base_dns_domain": "example.com",
            "api_vips": [{"ip": "192.168.126.253"}], "ingress_vips": [{"ip": "192.168.126.254"}]
        })),
    )
    .await;
    assert_eq!(code, 201, "{cl}");
    let cl: Cluster = serde_json::from_value(cl).unwrap();
    assert_eq!(cl.status, "insufficient");
    assert!(cl.pull_secret_set);
    let text = serde_json::to_string(&cl).unwrap();
    assert!(
        !text.contains("aWQ6cGFzcwo="),
        "the pull secret is never returned"
    );
    let (code, ie) = send(
        &c,
        M::POST,
        &format!("{base}/infra-envs"),
        Some(json!({
            "name": "demo-ie", "pull_secret": PS, "cluster_id": cl.id
        })),
    )
    .await;
    assert_eq!(code, 201, "{ie}");
    let ie: InfraEnv = serde_json::from_value(ie).unwrap();

    // Three hosts register and send inventories; one has too little memory.
    let ids = [
        "11111111-0000-0000-0000-000000000001",
        "11111111-0000-0000-0000-000000000002",
        "11111111-0000-0000-0000-000000000003",
    ];
    let mut invs = vec![
        inventory("master-0", "192.168.126.10", 8, 16),
        inventory("master-1", "192.168.126.11", 8, 16),
        inventory("master-2", "192.168.126.12", 8, 4),
    ];
    for id in ids {
        let (code, h) = send(
            &c,
            M::POST,
            &format!("{base}/infra-envs/{}/hosts", ie.id),
            Some(json!({
                "host_id": id, "discovery_agent_version": "test"
            })),
        )
        .await;
        assert_eq!(code, 201, "{h}");
        assert_eq!(h["status"], "discovering");
        assert!(
            h["next_step_runner_command"]["args"][0]
                .as_str()
                .unwrap()
                .contains(id)
        );
    }
    let (code, body) = send(
        &c,
        M::POST,
        &format!("{base}/infra-envs/{}/hosts", ie.id),
        Some(json!({"host_id": "not-a-uuid"})),
    )
    .await;
    assert_eq!(code, 400, "{body}");

    let mut replayed = None;
    for (id, inv) in ids.iter().zip(&invs) {
        let steps = poll_and_answer(&c, &base, &ie.id, id, inv).await;
        assert_eq!(steps.instructions[0].step_type, "inventory");
        replayed.get_or_insert((id.to_string(), steps.instructions[0].clone(), inv.clone()));
    }
    // A replayed (already answered) step is refused.
    let (rid, rstep, rinv) = replayed.unwrap();
    let (code, body) = send(&c, M::POST, &format!("{base}/infra-envs/{}/hosts/{rid}/instructions", ie.id), Some(json!({
        "step_type": "inventory", "step_id": rstep.step_id, "exit_code": 0, "output": serde_json::to_string(&rinv).unwrap()
    }))).await;
    assert_eq!(code, 409, "{body}");
    assert!(
        body["reason"]
            .as_str()
            .unwrap()
            .contains("answered already"),
        "{body}"
    );
    // A reply that is not an inventory is refused with serde's reason.
    let steps: Steps = c
        .get(format!(
            "{base}/infra-envs/{}/hosts/{rid}/instructions",
            ie.id
        ))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let (code, body) = send(&c, M::POST, &format!("{base}/infra-envs/{}/hosts/{rid}/instructions", ie.id), Some(json!({
        "step_type": "inventory", "step_id": steps.instructions[0].step_id, "exit_code": 0, "output": "{\"cpu\": 3}"
    }))).await;
    assert_eq!(code, 400, "{body}");

    let cl = wait_for(&c, &base, &cl.id, "the small host insufficient", |cl| {
        // The cluster's status follows its hosts' in the same monitor pass.
        cl.status == "insufficient"
            && host(cl, ids[2]).status == "insufficient"
            && host(cl, ids[2]).status_info.contains("minimum hardware")
    })
    .await;
    let small = host(&cl, ids[2]);
    assert!(
        small
            .status_info
            .contains("the minimum required RAM for any role is 8.00 GiB, found only 4.00 GiB"),
        "{}",
        small.status_info
    );
    let v: Value = serde_json::from_str(&small.validations_info).unwrap();
    let mem = v["hardware"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["id"] == "has-min-memory")
        .unwrap();
    assert_eq!(mem["status"], "failure");
    assert_eq!(cl.status, "insufficient");

    // More memory: its next inventory brings it to known, and the cluster to ready.
    invs[2] = inventory("master-2", "192.168.126.12", 8, 16);
    let pairs: Vec<(&str, &okd_assisted_api::Inventory)> = ids.iter().copied().zip(&invs).collect();
    let cl = poll_until(&c, &base, (&ie.id, &cl.id), &pairs, "ready", |cl| {
        cl.status == "ready"
    })
    .await;
    for h in &cl.hosts {
        assert_eq!(h.status, "known", "{}", h.status_info);
        assert_eq!(h.status_info, "Host is ready to be installed");
        assert_eq!(h.suggested_role, "master");
    }
    assert_eq!(
        cl.machine_networks[0].cidr, "192.168.126.0/24",
        "taken from the API VIP's network"
    );
    assert_eq!(cl.ready_host_count, 3);

    // A duplicate host name makes both insufficient with the message.
    let (code, _) = send(
        &c,
        M::PATCH,
        &format!("{base}/infra-envs/{}/hosts/{}", ie.id, ids[1]),
        Some(json!({"host_name": "master-0"})),
    )
    .await;
    assert_eq!(code, 201);
    let cl2 = wait_for(&c, &base, &cl.id, "a duplicate name", |cl| {
        host(cl, ids[1]).status == "insufficient"
    })
    .await;
    assert!(
        host(&cl2, ids[1])
            .status_info
            .contains("Hostname master-0 is not unique in cluster")
    );
    let (code, body) = send(
        &c,
        M::PATCH,
        &format!("{base}/infra-envs/{}/hosts/{}", ie.id, ids[1]),
        Some(json!({"host_name": "Master_1"})),
    )
    .await;
    assert_eq!(code, 400, "{body}");
    send(
        &c,
        M::PATCH,
        &format!("{base}/infra-envs/{}/hosts/{}", ie.id, ids[1]),
        Some(json!({"host_name": "master-1"})),
    )
    .await;
    wait_for(&c, &base, &cl.id, "ready again", |cl| cl.status == "ready").await;

    // Events for every transition.
    let (_, ev) = send(
        &c,
        M::GET,
        &format!("{base}/events?cluster_id={}", cl.id),
        None,
    )
    .await;
    let ev: Vec<Event> = serde_json::from_value(ev).unwrap();
    let msgs: Vec<&str> = ev.iter().map(|e| e.message.as_str()).collect();
    assert!(
        msgs.iter().any(
            |m| m.starts_with("Host master-2: updated status from discovering to insufficient")
        ),
        "{msgs:#?}"
    );
    assert!(
        msgs.iter()
            .any(|m| m.starts_with("Host master-2: updated status from insufficient to known")),
        "{msgs:#?}"
    );
    assert!(
        msgs.iter()
            .any(|m| m.starts_with("Updated status of the cluster to ready")),
        "{msgs:#?}"
    );
    let before = ev.len();

    // Restart on the same file: nothing lost, agents carry on.
    svc.stop().await;
    if let Some(dir) = dir {
        use std::os::unix::fs::PermissionsExt;
        for f in ["assisted.db", "assisted.db-wal", "assisted.db-shm"] {
            if let Ok(m) = std::fs::metadata(dir.join(f)) {
                assert_eq!(
                    m.permissions().mode() & 0o777,
                    0o600,
                    "{f} holds pull secrets"
                );
            }
        }
    }
    let svc = start(url).await;
    let base = svc.base.clone();
    let cl = wait_for(&c, &base, &cl.id, "ready after restart", |cl| {
        cl.status == "ready"
    })
    .await;
    assert_eq!(cl.hosts.len(), 3);
    let (_, ev) = send(
        &c,
        M::GET,
        &format!("{base}/events?cluster_id={}", cl.id),
        None,
    )
    .await;
    assert!(ev.as_array().unwrap().len() >= before);
    for (id, inv) in ids.iter().zip(&invs) {
        poll_and_answer(&c, &base, &ie.id, id, inv).await;
    }
    // A stale reply after the host registers again (its steps reset).
    // Once the check interval (1 s here, and its random part of up to
    // half of it, cadence::SPREAD) has passed, the poll hands out the
    // periodic checks again.
    tokio::time::sleep(std::time::Duration::from_millis(1600)).await;
    let steps: Steps = c
        .get(format!(
            "{base}/infra-envs/{}/hosts/{}/instructions",
            ie.id, ids[0]
        ))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    // The monitor may move the host between the service's read and its
    // write: that registration is refused with 409 "retry", as an agent
    // retries it.
    let mut registered = 0;
    for _ in 0..5 {
        let (code, body) = send(
            &c,
            M::POST,
            &format!("{base}/infra-envs/{}/hosts", ie.id),
            Some(json!({"host_id": ids[0]})),
        )
        .await;
        registered = code;
        if code != 409 {
            break;
        }
        assert!(body.to_string().contains("retry"), "{body}");
    }
    assert_eq!(registered, 201, "registered again");
    let (code, body) = send(&c, M::POST, &format!("{base}/infra-envs/{}/hosts/{}/instructions", ie.id, ids[0]), Some(json!({
        "step_type": "inventory", "step_id": steps.instructions[0].step_id, "exit_code": 0, "output": serde_json::to_string(&invs[0]).unwrap()
    }))).await;
    assert_eq!(code, 409, "{body}");
    let (_, ev) = send(
        &c,
        M::GET,
        &format!("{base}/events?host_id={}", ids[0]),
        None,
    )
    .await;
    assert!(
        ev.as_array().unwrap().iter().any(|e| e["message"]
            .as_str()
            .unwrap()
            .contains("registered again while its agent was polling")),
        "{ev}"
    );
    svc.stop().await;
}

/// The database away: requests get 503 naming it, the monitor waits, and
/// everything works again when it returns; two replicas of the service on
/// one PostgreSQL move each host once (one event per transition).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgresql_away_and_two_replicas() {
    let Some(mut pg) = okd_test_utils::postgres::Postgres::start() else {
        return;
    };
    let a = start(&pg.url).await;
    let b = start(&pg.url).await;
    let c = client();
    use reqwest::Method as M;
    let (code, cl) = send(
        &c,
        M::POST,
        &format!("{}/clusters", a.base),
        Some(json!({
            "name": "two", "openshift_version": "4.19", "pull_secret": PS,
            "base_dns_domain": "example.com",
            "api_vips": [{"ip": "192.168.126.253"}], "ingress_vips": [{"ip": "192.168.126.254"}]
        })),
    )
    .await;
    assert_eq!(code, 201, "{cl}");
    let cid = cl["id"].as_str().unwrap().to_string();
    let (_, ie) = send(
        &c,
        M::POST,
        &format!("{}/infra-envs", b.base),
        Some(json!({
            "name": "two-ie", "pull_secret": PS, "cluster_id": cid
        })),
    )
    .await;
    let ie = ie["id"].as_str().unwrap().to_string();
    let ids: Vec<String> = (1..=3)
        .map(|i| format!("22222222-0000-0000-0000-00000000000{i}"))
        .collect();
    for (i, id) in ids.iter().enumerate() {
        // Hosts alternate between the replicas, as behind a load balancer.
        let base = if i % 2 == 0 { &a.base } else { &b.base };
        let (code, _) = send(
            &c,
            M::POST,
            &format!("{base}/infra-envs/{ie}/hosts"),
            Some(json!({"host_id": id})),
        )
        .await;
        assert_eq!(code, 201);
        let inv = inventory(&format!("master-{i}"), &format!("192.168.126.1{i}"), 8, 16);
        poll_and_answer(&c, base, &ie, id, &inv).await;
    }
    // The agents keep polling, each through its replica, until the checks
    // that need the other hosts' inventories (connectivity) are answered.
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        for (i, id) in ids.iter().enumerate() {
            let base = if i % 2 == 0 { &a.base } else { &b.base };
            let inv = inventory(&format!("master-{i}"), &format!("192.168.126.1{i}"), 8, 16);
            poll_and_answer(&c, base, &ie, id, &inv).await;
        }
        let (_, cl) = send(&c, M::GET, &format!("{}/clusters/{cid}", a.base), None).await;
        if cl["status"] == "ready" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    wait_for(&c, &a.base, &cid, "ready through replica a", |cl| {
        cl.status == "ready"
    })
    .await;
    wait_for(&c, &b.base, &cid, "ready through replica b", |cl| {
        cl.status == "ready"
    })
    .await;
    // Let both monitors run a few more passes over the settled state.
    tokio::time::sleep(Duration::from_millis(800)).await;
    let (_, ev) = send(
        &c,
        M::GET,
        &format!("{}/events?cluster_id={cid}", a.base),
        None,
    )
    .await;
    let msgs: Vec<String> = ev
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["message"].as_str().unwrap().to_string())
        .collect();
    for m in &msgs {
        if m.contains("updated status") || m.starts_with("Updated status") {
            assert_eq!(
                msgs.iter().filter(|x| *x == m).count(),
                1,
                "one event per transition: {msgs:#?}"
            );
        }
    }
    assert_eq!(
        msgs.iter()
            .filter(|m| m.starts_with("Updated status of the cluster to ready"))
            .count(),
        1,
        "{msgs:#?}"
    );

    // The database away: a 503 that says so.
    pg.stop();
    let (code, body) = send(&c, M::GET, &format!("{}/clusters/{cid}", a.base), None).await;
    assert_eq!(code, 503, "{body}");
    assert!(
        body["reason"]
            .as_str()
            .unwrap()
            .contains("database is unavailable"),
        "{body}"
    );
    let (code, _) = send(
        &c,
        M::GET,
        &format!("{}/infra-envs/{ie}/hosts/{}/instructions", b.base, ids[0]),
        None,
    )
    .await;
    assert_eq!(code, 503);
    // Back: the same requests work, nothing lost.
    pg.resume();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (code, body) = send(&c, M::GET, &format!("{}/clusters/{cid}", a.base), None).await;
        if code == 200 {
            assert_eq!(body["hosts"].as_array().unwrap().len(), 3);
            break;
        }
        assert!(Instant::now() < deadline, "not recovered: {code} {body}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let inv = inventory("master-0", "192.168.126.10", 8, 16);
    poll_and_answer(&c, &b.base, &ie, &ids[0], &inv).await;
    a.stop().await;
    b.stop().await;
    drop(pg);
}
