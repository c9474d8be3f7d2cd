//! The periodic checks' pace (`okd_assisted_service::cadence`): a host
//! that polls far more often than the check interval is handed
//! inventory, ntp-synchronizer, domain-resolution and verify-vips once per
//! interval, except a check whose argument changed, which comes at once.

mod common;

use common::*;
use serde_json::json;

fn types(steps: &okd_assisted_api::rest::Steps) -> Vec<String> {
    steps
        .instructions
        .iter()
        .map(|s| s.step_type.clone())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn periodic_checks_once_per_interval_and_on_a_new_argument() {
    let dir = tempfile::tempdir().unwrap();
    let url = okd_assisted_service::sqlite_url(dir.path());
    // Polls every second, checks every minute.
    let svc = start_with(&url, |o| o.check_interval_seconds = 60).await;
    let base = svc.base.clone();
    let c = client();
    let (cid, ie, ids, invs) = ready_cluster(&c, &base, "paced").await;
    let paced = [
        "inventory",
        "ntp-synchronizer",
        "domain-resolution",
        "verify-vips",
    ];
    for _ in 0..3 {
        let steps = poll_and_answer(&c, &base, &ie, &ids[0], &invs[0]).await;
        let got = types(&steps);
        assert!(
            got.iter().all(|t| !paced.contains(&t.as_str())),
            "a check handed out again within the interval: {got:?}"
        );
        assert_eq!(steps.next_instruction_seconds, 1);
    }
    // A new API VIP is a new verify-vips argument: handed out at the next
    // poll, the other checks still not.
    let (code, body) = send(
        &c,
        reqwest::Method::PATCH,
        &format!("{base}/clusters/{cid}"),
        Some(json!({"api_vips": [{"ip": "192.168.126.252"}]})),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    let steps = poll_and_answer(&c, &base, &ie, &ids[0], &invs[0]).await;
    let got = types(&steps);
    assert!(got.contains(&"verify-vips".to_string()), "{got:?}");
    assert!(!got.contains(&"inventory".to_string()), "{got:?}");
    let vips = steps
        .instructions
        .iter()
        .find(|s| s.step_type == "verify-vips")
        .unwrap();
    assert!(vips.args[0].contains("192.168.126.252"), "{:?}", vips.args);
    // Another host was not handed it yet either way: its own record.
    let steps = poll_and_answer(&c, &base, &ie, &ids[1], &invs[1]).await;
    assert!(types(&steps).contains(&"verify-vips".to_string()));
    let steps = poll_and_answer(&c, &base, &ie, &ids[1], &invs[1]).await;
    assert!(!types(&steps).contains(&"verify-vips".to_string()));
    svc.stop().await;
}
