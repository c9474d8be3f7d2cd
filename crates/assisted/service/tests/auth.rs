//! Authentication with `--auth-token`: user calls need the bearer token;
//! agents use their infra-env's token from the discovery Ignition, which
//! is refused for another infra-env (403) and after the infra-env's
//! signing key is regenerated (401).

mod common;

use common::*;
use reqwest::StatusCode;
use serde_json::{Value, json};

const TOKEN: &str = "s3cret-user-token";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn user_and_agent_tokens() {
    let dir = tempfile::tempdir().unwrap();
    let svc = start_with(&okd_assisted_service::sqlite_url(dir.path()), |o| {
        o.auth_token = Some(TOKEN.into());
    })
    .await;
    let base = svc.base.clone();
    let c = reqwest::Client::new();
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
        .bearer_auth(TOKEN)
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
            .bearer_auth(TOKEN)
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
                .bearer_auth(TOKEN)
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
                unit.contains(&format!("--url http://{}", base.split('/').nth(2).unwrap())),
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
        !t1.contains(TOKEN),
        "the user token is not in the discovery Ignition"
    );
    let register = |ie: String, token: Option<String>| {
        let (c, base) = (c.clone(), base.clone());
        async move {
            let mut r = c
                .post(format!("{base}/infra-envs/{ie}/hosts"))
                .json(&json!({"host_id": "44444444-0000-0000-0000-000000000001"}));
            if let Some(t) = token {
                r = r.header("X-Secret-Key", t);
            }
            let r = r.send().await.unwrap();
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
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    let (code, body) = register(ies[0].clone(), Some(t1.clone())).await;
    assert_eq!(code, StatusCode::UNAUTHORIZED, "{body}");
    assert!(body.contains("revoked"), "{body}");
    let t1b = discovery(ies[0].clone()).await;
    assert_ne!(t1, t1b);
    let (code, body) = register(ies[0].clone(), Some(t1b)).await;
    assert_eq!(code, StatusCode::CREATED, "{body}");
    svc.stop().await;
}

/// The web page with a token: the sign-in form, a wrong token refused,
/// the right one as an HttpOnly, SameSite=Strict cookie that opens the
/// pages and the API calls the page makes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_asks_for_the_token() {
    let dir = tempfile::tempdir().unwrap();
    let svc = start_with(&okd_assisted_service::sqlite_url(dir.path()), |o| {
        o.auth_token = Some(TOKEN.into());
    })
    .await;
    let root = svc
        .base
        .trim_end_matches("/api/assisted-install/v2")
        .to_string();
    let c = reqwest::Client::builder()
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
        .body(format!("token={TOKEN}"))
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
