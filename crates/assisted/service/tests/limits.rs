//! The service's limits (issue #41): hosts per infra-env, stored logs
//! per host and in all, request bodies per route. Each refusal names the
//! limit, its value and its flag.

mod common;

use common::*;
use reqwest::Method as M;
use serde_json::{Value, json};

/// A cluster and its infra-env on `base`: (cluster id, infra-env id).
async fn cluster_and_infra_env(c: &reqwest::Client, base: &str, name: &str) -> (String, String) {
    let (code, cl) = send(
        c,
        M::POST,
        &format!("{base}/clusters"),
        Some(json!({
            "name": name, "openshift_version": "4.19", "pull_secret": PS,
            "base_dns_domain": "example.com"
        })),
    )
    .await;
    assert_eq!(code, 201, "{cl}");
    let cid = cl["id"].as_str().unwrap().to_string();
    let (code, ie) = send(
        c,
        M::POST,
        &format!("{base}/infra-envs"),
        Some(json!({"name": format!("{name}-ie"), "pull_secret": PS, "cluster_id": cid})),
    )
    .await;
    assert_eq!(code, 201, "{ie}");
    (cid, ie["id"].as_str().unwrap().to_string())
}

fn host_id(i: usize) -> String {
    format!("44444444-0000-0000-0000-{i:012}")
}

async fn register(c: &reqwest::Client, base: &str, ie: &str, id: &str) -> (u16, Value) {
    send(
        c,
        M::POST,
        &format!("{base}/infra-envs/{ie}/hosts"),
        Some(json!({"host_id": id})),
    )
    .await
}

fn reason(body: &Value) -> &str {
    body["reason"].as_str().unwrap_or_default()
}

/// Host N+1 of an infra-env limited to N is refused (409, the limit
/// named, one event); hosts already there register again; a deleted
/// host makes room.
async fn hosts_scenario(url: &str) {
    let svc = start_with(url, |o| o.limits.max_hosts_per_infra_env = 2).await;
    let base = svc.base.clone();
    let c = client();
    let (cid, ie) = cluster_and_infra_env(&c, &base, "full").await;
    for i in 0..2 {
        let (code, body) = register(&c, &base, &ie, &host_id(i)).await;
        assert_eq!(code, 201, "host {i}: {body}");
    }
    let (code, body) = register(&c, &base, &ie, &host_id(2)).await;
    assert_eq!(code, 409, "{body}");
    assert_eq!(body["code"], "409", "the swagger's error body: {body}");
    let r = reason(&body);
    for part in [
        &host_id(2),
        "infra-env full-ie",
        "holds 2 hosts",
        "the limit of hosts per infra-env, 2 hosts",
        "okd-install assisted serve --max-hosts-per-infra-env",
    ] {
        assert!(r.contains(part), "{part:?} in {r:?}");
    }
    // Refused again (agents retry every minute): no second event.
    let (code, _) = register(&c, &base, &ie, &host_id(3)).await;
    assert_eq!(code, 409);
    let (code, body) = register(&c, &base, &ie, &host_id(0)).await;
    assert_eq!(code, 201, "a host already there registers again: {body}");

    let (_, events) = send(
        &c,
        M::GET,
        &format!("{base}/events?infra_env_id={ie}"),
        None,
    )
    .await;
    let refused: Vec<&Value> = events
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"] == "host_registration_failed")
        .collect();
    assert_eq!(refused.len(), 1, "one event for the run: {events}");
    let e = refused[0];
    assert_eq!(e["severity"], "error", "{e}");
    assert_eq!(e["cluster_id"], cid.as_str(), "{e}");
    assert_eq!(e["host_id"], host_id(2).as_str(), "{e}");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("--max-hosts-per-infra-env"),
        "{e}"
    );

    let (code, body) = send(
        &c,
        M::DELETE,
        &format!("{base}/infra-envs/{ie}/hosts/{}", host_id(1)),
        None,
    )
    .await;
    assert_eq!(code, 204, "{body}");
    let (code, body) = register(&c, &base, &ie, &host_id(2)).await;
    assert_eq!(code, 201, "room again after a delete: {body}");

    // Registrations at the same moment never take more places than
    // there are.
    let (_, ie2) = cluster_and_infra_env(&c, &base, "race").await;
    let tries = (10..22).map(|i| {
        let (c, base, ie2) = (c.clone(), base.clone(), ie2.clone());
        tokio::spawn(async move { register(&c, &base, &ie2, &host_id(i)).await.0 })
    });
    let mut codes = Vec::new();
    for t in tries {
        codes.push(t.await.unwrap());
    }
    codes.sort();
    assert_eq!(
        codes,
        [201, 201, 409, 409, 409, 409, 409, 409, 409, 409, 409, 409]
    );
    svc.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_over_the_infra_env_limit_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    hosts_scenario(&okd_assisted_service::sqlite_url(dir.path())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_over_the_infra_env_limit_is_refused_on_postgresql() {
    let Some(pg) = okd_test_utils::postgres::Postgres::start() else {
        return;
    };
    hosts_scenario(&pg.url).await;
    drop(pg);
}

/// Uploads `archive` as host `host`'s logs: (status, body; status 0 when
/// the service closed the connection before the client read an answer).
async fn upload(
    c: &reqwest::Client,
    base: &str,
    (cid, ie, host): (&str, &str, &str),
    archive: Vec<u8>,
) -> (u16, Value) {
    let part = reqwest::multipart::Part::bytes(archive).file_name("logs.tar.gz");
    let sent = c
        .post(format!(
            "{base}/clusters/{cid}/logs?logs_type=host&infra_env_id={ie}&host_id={host}"
        ))
        .multipart(reqwest::multipart::Form::new().part("upfile", part))
        .send()
        .await;
    match sent {
        Ok(resp) => {
            let code = resp.status().as_u16();
            let text = resp.text().await.unwrap_or_default();
            (
                code,
                serde_json::from_str(&text).unwrap_or(Value::String(text)),
            )
        }
        Err(e) => (0, Value::String(e.to_string())),
    }
}

async fn stored_logs(c: &reqwest::Client, base: &str, cid: &str, host: &str) -> Option<Vec<u8>> {
    let resp = c
        .get(format!(
            "{base}/clusters/{cid}/logs?logs_type=host&host_id={host}"
        ))
        .send()
        .await
        .unwrap();
    match resp.status().as_u16() {
        200 => Some(resp.bytes().await.unwrap().to_vec()),
        404 => None,
        code => panic!("downloading the logs of {host}: {code}"),
    }
}

/// `n` bytes of a pattern seeded by `seed`.
fn archive(n: usize, seed: u8) -> Vec<u8> {
    (0..n).map(|i| (i as u8).wrapping_mul(31) ^ seed).collect()
}

async fn logs_scenario(url: &str) {
    let svc = start_with(url, |o| {
        o.limits.max_host_logs_bytes = 8 << 10;
        o.limits.max_logs_bytes = 20 << 10;
    })
    .await;
    let base = svc.base.clone();
    let c = client();
    let (cid, ie) = cluster_and_infra_env(&c, &base, "logs").await;
    let hosts: Vec<String> = (0..3).map(host_id).collect();
    for h in &hosts {
        let (code, body) = register(&c, &base, &ie, h).await;
        assert_eq!(code, 201, "{body}");
    }
    let at = |i: usize| (cid.as_str(), ie.as_str(), hosts[i].as_str());

    let first = archive(4 << 10, 1);
    let (code, body) = upload(&c, &base, at(0), first.clone()).await;
    assert_eq!(code, 204, "{body}");

    // Over the per-host limit: refused, the stored archive unchanged.
    let (code, body) = upload(&c, &base, at(0), archive((8 << 10) + 1, 2)).await;
    assert_eq!(code, 413, "{body}");
    let r = reason(&body);
    for part in [
        "the logs of host 44444444-0000-0000-0000-000000000000 (8193 bytes)",
        "the host's stored logs would be 8193 bytes",
        "the limit of logs stored per host, 8192 bytes = 8 KiB",
        "okd-install assisted serve --max-host-logs-bytes",
        "nothing was stored",
    ] {
        assert!(r.contains(part), "{part:?} in {r:?}");
    }
    assert_eq!(
        stored_logs(&c, &base, &cid, &hosts[0]).await.as_deref(),
        Some(&first[..]),
        "the refused upload left the stored logs as they were"
    );

    // A body past the per-host limit and the form's framing is refused
    // before it is read (its own client: the service closes that
    // connection, which must not poison the shared pool).
    let (code, body) = upload(&client(), &base, at(0), archive(200 << 10, 3)).await;
    assert_eq!(code, 413, "{body}");
    assert!(
        reason(&body).starts_with(
            "request body of 205"
        ) && reason(&body).ends_with(
            "bytes: over the limit of logs stored per host, 8192 bytes = 8 KiB (okd-install assisted serve --max-host-logs-bytes)"
        ),
        "{body}"
    );
    assert_eq!(
        stored_logs(&c, &base, &cid, &hosts[0]).await.as_deref(),
        Some(&first[..])
    );

    // An upload replaces the host's older archive, which does not count.
    let (code, body) = upload(&c, &base, at(0), archive(8 << 10, 4)).await;
    assert_eq!(code, 204, "{body}");
    let (code, body) = upload(&c, &base, at(1), archive(8 << 10, 5)).await;
    assert_eq!(code, 204, "{body}");

    // 8 + 8 + 8 KiB is over the total of 20 KiB.
    let (code, body) = upload(&c, &base, at(2), archive(8 << 10, 6)).await;
    assert_eq!(code, 413, "{body}");
    let r = reason(&body);
    for part in [
        "all hosts' stored logs would be 24576 bytes",
        "the limit of logs stored for all hosts, 20480 bytes = 20 KiB",
        "okd-install assisted serve --max-logs-bytes",
        "nothing was stored",
    ] {
        assert!(r.contains(part), "{part:?} in {r:?}");
    }
    assert_eq!(stored_logs(&c, &base, &cid, &hosts[2]).await, None);
    let (code, body) = upload(&c, &base, at(2), archive(4 << 10, 7)).await;
    assert_eq!(code, 204, "exactly at the total: {body}");
    svc.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logs_over_the_per_host_or_total_limit_are_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    logs_scenario(&okd_assisted_service::sqlite_url(dir.path())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logs_limits_on_postgresql() {
    let Some(pg) = okd_test_utils::postgres::Postgres::start() else {
        return;
    };
    logs_scenario(&pg.url).await;
    drop(pg);
}

/// POSTs `body` (`chunked`: without a length) to `url` with its own
/// client (the service may close the connection after refusing).
async fn post_raw(url: &str, body: Vec<u8>, chunked: bool) -> (u16, Option<String>, Value) {
    let req = client()
        .post(url)
        .header("content-type", "application/json");
    let req = if chunked {
        let chunks: Vec<Result<Vec<u8>, std::io::Error>> =
            body.chunks(1024).map(|c| Ok(c.to_vec())).collect();
        req.body(reqwest::Body::wrap_stream(futures_util::stream::iter(
            chunks,
        )))
    } else {
        req.body(body)
    };
    let resp = req.send().await.unwrap();
    let code = resp.status().as_u16();
    let ctype = resp
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_string());
    let text = resp.text().await.unwrap();
    (
        code,
        ctype,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// A JSON document of about `n` bytes: a cluster whose name is long.
fn big_cluster(n: usize) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "name": "x".repeat(n), "openshift_version": "4.19", "pull_secret": PS
    }))
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_over_their_route_limit_are_refused_with_413_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let svc = start_with(&okd_assisted_service::sqlite_url(dir.path()), |o| {
        o.limits.max_body_bytes = 4096;
        o.limits.max_step_reply_bytes = 16384;
    })
    .await;
    let base = svc.base.clone();
    let c = client();

    // A JSON call: its declared length is refused before the body is read.
    let doc = big_cluster(5000);
    let len = doc.len();
    let (code, ctype, body) = post_raw(&format!("{base}/clusters"), doc.clone(), false).await;
    assert_eq!(code, 413, "{body}");
    assert_eq!(ctype.as_deref(), Some("application/json"));
    assert_eq!(body["code"], "413", "the swagger's error body: {body}");
    assert_eq!(
        reason(&body),
        format!(
            "request body of {len} bytes: over the limit of a JSON request body, 4096 bytes = 4 KiB (okd-install assisted serve --max-body-bytes)"
        )
    );
    // Without a length, it is refused once it runs over.
    let (code, ctype, body) = post_raw(&format!("{base}/clusters"), doc, true).await;
    assert_eq!(code, 413, "{body}");
    assert_eq!(ctype.as_deref(), Some("application/json"));
    assert!(
        reason(&body).starts_with(
            "request body of over 4096 bytes: over the limit of a JSON request body, 4096 bytes"
        ),
        "{body}"
    );
    // The refused body is read to its end: the connection serves the
    // next call.
    for _ in 0..2 {
        let resp = c
            .post(format!("{base}/clusters"))
            .header("content-type", "application/json")
            .body(big_cluster(5000))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status().as_u16(), 413);
    }
    let (_, list) = send(&c, M::GET, &format!("{base}/clusters"), None).await;
    assert_eq!(list, json!([]), "nothing stored");
    // The web page's sign-in form has the JSON limit too.
    let (code, _, body) = post_raw(
        &base.replace("/api/assisted-install/v2", "/login"),
        vec![b'a'; 5000],
        false,
    )
    .await;
    assert_eq!(code, 413, "{body}");
    assert!(reason(&body).contains("--max-body-bytes"), "{body}");

    // A step reply may be larger than a JSON call, up to its own limit.
    let (_, ie) = cluster_and_infra_env(&c, &base, "bodies").await;
    let id = host_id(0);
    let (code, body) = register(&c, &base, &ie, &id).await;
    assert_eq!(code, 201, "{body}");
    let steps = format!("{base}/infra-envs/{ie}/hosts/{id}/instructions");
    let reply = |n: usize| {
        serde_json::to_vec(&json!({
            "step_type": "inventory", "step_id": "not-handed-out", "exit_code": 0,
            "output": "x".repeat(n)
        }))
        .unwrap()
    };
    let (code, _, body) = post_raw(&steps, reply(8000), false).await;
    assert!(
        code != 413 && (400..500).contains(&code),
        "8 KB is within the step replies' limit (refused for its unknown step): {code} {body}"
    );
    let big = reply(20000);
    let len = big.len();
    let (code, _, body) = post_raw(&steps, big, false).await;
    assert_eq!(code, 413, "{body}");
    assert_eq!(
        reason(&body),
        format!(
            "request body of {len} bytes: over the limit of a step reply's body, 16384 bytes = 16 KiB (okd-install assisted serve --max-step-reply-bytes)"
        )
    );
    svc.stop().await;

    // The defaults: 1 MiB for JSON calls.
    let dir = tempfile::tempdir().unwrap();
    let svc = start(&okd_assisted_service::sqlite_url(dir.path())).await;
    let doc = big_cluster(1 << 20);
    let (code, _, body) = post_raw(&format!("{}/clusters", svc.base), doc, false).await;
    assert_eq!(code, 413, "{body}");
    assert!(
        reason(&body).contains(
            "the limit of a JSON request body, 1048576 bytes = 1 MiB (okd-install assisted serve --max-body-bytes)"
        ),
        "{body}"
    );
    svc.stop().await;
}
