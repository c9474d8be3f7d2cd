//! The OpenAPI document: served, every listed operation answers on its
//! route with its method (no router 404 or 405), and every `$ref` names a
//! schema of the document.

mod common;

use common::*;
use serde_json::Value;

fn refs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                if k == "$ref" {
                    out.push(x.as_str().unwrap_or_default().to_string());
                } else {
                    refs(x, out);
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| refs(x, out)),
        _ => {}
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_documented_operation_is_served() {
    let dir = tempfile::tempdir().unwrap();
    let svc = start(&okd_assisted_service::sqlite_url(dir.path())).await;
    let base = svc.base.clone();
    let c = client();
    let doc: Value = c
        .get(format!("{base}/openapi.json"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(doc["openapi"], "3.0.3");
    assert_eq!(doc["servers"][0]["url"], "/api/assisted-install/v2");
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    for s in [
        "Cluster",
        "Host",
        "Inventory",
        "Steps",
        "StepReply",
        "ClusterCreateParams",
    ] {
        assert!(schemas.contains_key(s), "schema {s}");
    }
    let mut all = Vec::new();
    refs(&doc, &mut all);
    for r in &all {
        let name = r
            .strip_prefix("#/components/schemas/")
            .unwrap_or_else(|| panic!("{r}"));
        assert!(schemas.contains_key(name), "{r} names no schema");
    }
    let paths = doc["paths"].as_object().unwrap();
    let mut n = 0;
    for (path, ops) in paths {
        for (method, op) in ops.as_object().unwrap() {
            n += 1;
            let url = format!(
                "{base}{}",
                path.replace("{cluster_id}", "00000000-0000-0000-0000-000000000000")
                    .replace("{infra_env_id}", "00000000-0000-0000-0000-000000000000")
                    .replace("{host_id}", "00000000-0000-0000-0000-000000000000")
            );
            let m = reqwest::Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
            let mut req = c.request(m, &url);
            if op.get("requestBody").is_some() {
                req = req.header("content-type", "application/json").body("{}");
            }
            let resp = req.send().await.unwrap();
            let code = resp.status().as_u16();
            let body = resp.text().await.unwrap();
            assert_ne!(code, 405, "{method} {path}: not routed for this method");
            assert!(
                !(code == 404 && body.is_empty()),
                "{method} {path}: the router does not know it"
            );
            assert!(op["operationId"].is_string());
        }
    }
    assert_eq!(n, okd_assisted_service::openapi::OPERATIONS.len());
    svc.stop().await;
}
