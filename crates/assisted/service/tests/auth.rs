//! Authentication, on by default: user calls need the admin token; agents
//! register with their infra-env's discovery token (from the discovery
//! Ignition), which is refused for another infra-env (403) and after the
//! infra-env's signing key is regenerated (401), and then act with the
//! host token the registration returned, for that host only.

mod common;

use common::*;
use reqwest::StatusCode;
use serde_json::{Value, json};

fn token() -> String {
    keys().admin_token().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn user_and_agent_tokens() {
    let dir = tempfile::tempdir().unwrap();
    let svc = start(&okd_assisted_service::sqlite_url(dir.path())).await;
    let base = svc.base.clone();
    let c = anonymous();
    let cluster = json!({"name": "demo", "openshift_version": "4.19", "pull_secret": PS});

    let r = c
        .post(format!("{base}/clusters"))
        .json(&cluster)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["code"], 401, "the swagger's infra_error shape: {body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("Authorization: Bearer")
    );
    let r = c
        .get(format!("{base}/clusters"))
        .bearer_auth("wrong")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    let r = c
        .post(format!("{base}/clusters"))
        .bearer_auth(token())
        .json(&cluster)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::CREATED);
    let cl: Value = r.json().await.unwrap();

    let mut ies = Vec::new();
    for n in ["one", "two"] {
        let r = c
            .post(format!("{base}/infra-envs"))
            .bearer_auth(token())
            .json(&json!({"name": n, "pull_secret": PS, "cluster_id": cl["id"], "ssh_authorized_key": "ssh-ed25519 AAAA test"}))
            .send()
            .await
            .unwrap();
        let code = r.status();
        let body: Value = r.json().await.unwrap();
        assert_eq!(code, StatusCode::CREATED, "{body}");
        ies.push(body["id"].as_str().unwrap().to_string());
    }
    let discovery = |ie: String| {
        let (c, base) = (c.clone(), base.clone());
        async move {
            let r = c
                .get(format!(
                    "{base}/infra-envs/{ie}/downloads/files?file_name=discovery.ign"
                ))
                .bearer_auth(token())
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), StatusCode::OK);
            let ign: Value = serde_json::from_str(&r.text().await.unwrap()).unwrap();
            assert_eq!(ign["ignition"]["version"], "3.1.0");
            assert_eq!(
                ign["passwd"]["users"][0]["sshAuthorizedKeys"][0],
                "ssh-ed25519 AAAA test"
            );
            let unit = ign["systemd"]["units"][0]["contents"]
                .as_str()
                .unwrap()
                .to_string();
            assert!(unit.contains(&format!("--infra-env-id {ie}")), "{unit}");
            assert!(
                unit.contains(&format!(
                    "--url https://{} ",
                    base.split('/').nth(2).unwrap()
                )) && unit.contains("--cacert /etc/okd-assisted/service-ca.crt"),
                "{unit}"
            );
            unit.lines()
                .find_map(|l| l.strip_prefix("Environment=PULL_SECRET_TOKEN="))
                .unwrap()
                .to_string()
        }
    };
    let t1 = discovery(ies[0].clone()).await;
    let t2 = discovery(ies[1].clone()).await;
    assert!(
        !t1.contains(&token()),
        "the admin token is not in the discovery Ignition"
    );
    // The discovery token is signed by the service's own key, not derived
    // from the admin token: keys with the very same admin token but
    // another signing key cannot verify it, so it tells nothing of the
    // admin token (no offline guessing).
    let same_admin = okd_assisted_service::auth::Keys::generate(Some(&token())).unwrap();
    assert_eq!(same_admin.verify(&t1), None);
    let claims = keys().verify(&t1).expect("the service's key verifies it");
    assert_eq!(
        (claims.infra_env_id.as_str(), claims.host_id),
        (ies[0].as_str(), None)
    );
    const H1: &str = "44444444-0000-0000-0000-000000000001";
    const H2: &str = "44444444-0000-0000-0000-000000000002";
    let register_as = |ie: String, host: &'static str, token: Option<String>| {
        let (c, base) = (c.clone(), base.clone());
        async move {
            let mut r = c
                .post(format!("{base}/infra-envs/{ie}/hosts"))
                .json(&json!({"host_id": host}));
            if let Some(t) = token {
                r = r.header("X-Secret-Key", t);
            }
            let r = r.send().await.unwrap();
            let code = r.status();
            (code, r.text().await.unwrap())
        }
    };
    let register = |ie: String, token: Option<String>| register_as(ie, H1, token);
    let steps = |host: &'static str, token: String| {
        let (c, base, ie) = (c.clone(), base.clone(), ies[0].clone());
        async move {
            let r = c
                .get(format!(
                    "{base}/infra-envs/{ie}/hosts/{host}/instructions?timestamp=1"
                ))
                .header("X-Secret-Key", token)
                .send()
                .await
                .unwrap();
            let code = r.status();
            (code, r.text().await.unwrap())
        }
    };
    let (code, body) = register(ies[0].clone(), None).await;
    assert_eq!(code, StatusCode::UNAUTHORIZED, "{body}");
    assert!(body.contains("X-Secret-Key"), "{body}");
    let (code, body) = register(ies[0].clone(), Some(t2.clone())).await;
    assert_eq!(
        code,
        StatusCode::FORBIDDEN,
        "another infra-env's token: {body}"
    );
    let (code, body) = register(ies[0].clone(), Some(format!("{t1}0"))).await;
    assert_eq!(code, StatusCode::UNAUTHORIZED, "a damaged token: {body}");
    let (code, body) = register(ies[0].clone(), Some(t1.clone())).await;
    assert_eq!(code, StatusCode::CREATED, "{body}");
    let reg: Value = serde_json::from_str(&body).unwrap();
    let host1 = reg["host_token"]
        .as_str()
        .expect("a host token")
        .to_string();
    assert_eq!(keys().verify(&host1).unwrap().host_id.as_deref(), Some(H1));
    // The discovery token registers, nothing else; the host token acts.
    let (code, body) = steps(H1, t1.clone()).await;
    assert_eq!(code, StatusCode::FORBIDDEN, "{body}");
    assert!(body.contains("only registers hosts"), "{body}");
    let (code, body) = steps(H1, host1.clone()).await;
    assert_eq!(code, StatusCode::OK, "{body}");
    // A host cannot act for another host of its infra-env.
    let (code, body) = register_as(ies[0].clone(), H2, Some(t1.clone())).await;
    assert_eq!(code, StatusCode::CREATED, "{body}");
    let (code, body) = steps(H2, host1.clone()).await;
    assert_eq!(code, StatusCode::FORBIDDEN, "{body}");
    assert!(body.contains(&format!("not {H2}")), "{body}");
    let (code, body) = register_as(ies[0].clone(), H2, Some(host1.clone())).await;
    assert_eq!(
        code,
        StatusCode::FORBIDDEN,
        "registering another host id: {body}"
    );
    let events: Value = c
        .get(format!("{base}/events?infra_env_id={}", ies[0]))
        .bearer_auth(token())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let misused: Vec<&Value> = events
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"] == "host_token_misused")
        .collect();
    assert_eq!(misused.len(), 1, "one warning event: {events}");
    assert_eq!(misused[0]["host_id"], H1, "{events}");
    assert_eq!(misused[0]["severity"], "warning", "{events}");
    // A live host is not taken over with the discovery token ...
    let (code, body) = register(ies[0].clone(), Some(t1.clone())).await;
    assert_eq!(code, StatusCode::CONFLICT, "{body}");
    assert!(body.contains("needs its host token"), "{body}");
    // ... its own token registers it again, which revokes the old token.
    let (code, body) = register(ies[0].clone(), Some(host1.clone())).await;
    assert_eq!(code, StatusCode::CREATED, "{body}");
    let reg: Value = serde_json::from_str(&body).unwrap();
    let host1b = reg["host_token"].as_str().unwrap().to_string();
    assert_ne!(host1, host1b);
    let (code, body) = steps(H1, host1.clone()).await;
    assert_eq!(code, StatusCode::UNAUTHORIZED, "{body}");
    assert!(body.contains("revoked"), "{body}");
    let (code, body) = steps(H1, host1b.clone()).await;
    assert_eq!(code, StatusCode::OK, "{body}");
    // Agent tokens open agent calls only.
    let r = c
        .get(format!("{base}/clusters"))
        .header("X-Secret-Key", &t1)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);

    // Revoked: the signing key regenerated.
    let r = c
        .post(format!(
            "{base}/infra-envs/{}/regenerate-signing-key",
            ies[0]
        ))
        .bearer_auth(token())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    let (code, body) = register(ies[0].clone(), Some(t1.clone())).await;
    assert_eq!(code, StatusCode::UNAUTHORIZED, "{body}");
    assert!(body.contains("revoked"), "{body}");
    let t1b = discovery(ies[0].clone()).await;
    assert_ne!(t1, t1b);
    let (code, body) = register_as(
        ies[0].clone(),
        "44444444-0000-0000-0000-000000000003",
        Some(t1b),
    )
    .await;
    assert_eq!(code, StatusCode::CREATED, "{body}");
    svc.stop().await;
}

/// The web page with a token: the sign-in form, a wrong token refused,
/// the right one as an HttpOnly, SameSite=Strict cookie that opens the
/// pages and the API calls the page makes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_asks_for_the_token() {
    let dir = tempfile::tempdir().unwrap();
    let svc = start(&okd_assisted_service::sqlite_url(dir.path())).await;
    let root = svc
        .base
        .trim_end_matches("/api/assisted-install/v2")
        .to_string();
    let c = anonymous_builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let r = c.get(format!("{root}/")).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    let page = r.text().await.unwrap();
    assert!(page.contains("action=\"/login\""), "{page}");
    let r = c
        .post(format!("{root}/login"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body("token=nope")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    assert!(r.text().await.unwrap().contains("not this service's token"));
    let r = c
        .post(format!("{root}/login"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("token={}", token()))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let cookie = r.headers()["set-cookie"].to_str().unwrap().to_string();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    let pair = cookie.split(';').next().unwrap().to_string();
    let r = c
        .get(format!("{root}/"))
        .header("cookie", &pair)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let r = c
        .get(format!("{}/clusters", svc.base))
        .header("cookie", &pair)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    svc.stop().await;
}

/// What a web page of another site could make the admin's browser send,
/// against a service without authentication on loopback (the worst
/// case): a JSON body as text/plain, a foreign Origin, a rebound Host
/// name; each refused with the rule, nothing created. And wrong sign-ins
/// are limited per client address.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cross_site_requests_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let svc = start_with(&okd_assisted_service::sqlite_url(dir.path()), |o| {
        o.auth = None;
    })
    .await;
    let base = svc.base.clone();
    let c = anonymous();
    let cluster = json!({"name": "demo", "openshift_version": "4.19", "pull_secret": PS});

    // A form or fetch() of another site may send text/plain without a
    // preflight.
    let r = c
        .post(format!("{base}/clusters"))
        .header("content-type", "text/plain")
        .body(cluster.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let body: Value = r.json().await.unwrap();
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("application/json"),
        "{body}"
    );
    // A foreign Origin, and a browser's own cross-site mark.
    for (k, v) in [
        ("origin", "http://evil.example"),
        ("sec-fetch-site", "cross-site"),
    ] {
        let r = c
            .post(format!("{base}/clusters"))
            .header(k, v)
            .json(&cluster)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::FORBIDDEN, "{k}: {v}");
        let body: Value = r.json().await.unwrap();
        assert!(
            body["message"]
                .as_str()
                .unwrap()
                .contains("other sites' pages"),
            "{body}"
        );
    }
    // DNS rebinding: a name that resolves to the service but is not its.
    let r = c
        .get(format!("{base}/clusters"))
        .header("host", "evil.example:8090")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::MISDIRECTED_REQUEST);
    assert!(r.text().await.unwrap().contains("--service-name"));
    let list: Value = c
        .get(format!("{base}/clusters"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(list, json!([]), "nothing was created");
    // The same request from the service's own page (same origin) passes.
    let origin = format!("https://{}", base.split('/').nth(2).unwrap());
    let r = c
        .post(format!("{base}/clusters"))
        .header("origin", origin)
        .header("sec-fetch-site", "same-origin")
        .json(&cluster)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::CREATED);
    svc.stop().await;

    // Wrong sign-ins: ten a minute per address, then 429.
    let svc = start(&okd_assisted_service::sqlite_url(dir.path())).await;
    let root = svc
        .base
        .trim_end_matches("/api/assisted-install/v2")
        .to_string();
    let login = |t: String| {
        let (c, root) = (c.clone(), root.clone());
        async move {
            c.post(format!("{root}/login"))
                .header("content-type", "application/x-www-form-urlencoded")
                .body(format!("token={t}"))
                .send()
                .await
                .unwrap()
        }
    };
    for _ in 0..10 {
        assert_eq!(
            login("guess".into()).await.status(),
            StatusCode::UNAUTHORIZED
        );
    }
    let r = login(token()).await;
    assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(r.headers().contains_key("retry-after"));
    svc.stop().await;
}
