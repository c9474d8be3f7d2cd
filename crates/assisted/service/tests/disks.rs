//! The disk paths the service takes and hands back: a posted inventory
//! whose disk paths leave `/dev` (`..`, a control character, not under
//! `/dev/`) is refused with 400 naming the host, the field and the rule,
//! and nothing of it is stored; the installation disk can be selected
//! only among the host's reported, eligible disks (and is chosen among
//! them when the inventory arrives: `installation_disk.rs`); and a
//! preparing host whose stored installation disk is not in its
//! inventory (a row written before the disk was chosen with each
//! inventory) is not asked to measure it (the preparation stops with the
//! reason).

mod common;

use std::time::Duration;

use common::{PS, inventory, now_s, ready_cluster, send, wait_for};
use okd_assisted_api::rest::Steps;
use okd_assisted_api::{Disk, Eligibility, Inventory};
use okd_assisted_service::Options;
use reqwest::Method as M;
use serde_json::{Value, json};

/// The service on loopback over SQLite in `dir`, without authentication
/// (this test is about disk paths): its API base, its stop, and its
/// state.
async fn serve(
    dir: &std::path::Path,
) -> (
    String,
    tokio::sync::oneshot::Sender<()>,
    okd_assisted_service::Shared,
) {
    let mut opts = Options::new(
        okd_assisted_service::sqlite_url(dir),
        "127.0.0.1:0".parse().unwrap(),
    );
    opts.monitor_interval = Duration::from_millis(200);
    opts.next_instruction_seconds = 1;
    opts.check_interval_seconds = 1;
    let state = okd_assisted_service::open(opts).await.unwrap();
    let listener = okd_listen::Listener::bind(
        "127.0.0.1:0".parse().unwrap(),
        okd_listen::Limits::default(),
    )
    .await
    .unwrap();
    let base = format!(
        "http://{}/api/assisted-install/v2",
        listener.local_addr().unwrap()
    );
    let (stop, rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(okd_assisted_service::serve(
        state.clone(),
        listener,
        async {
            let _ = rx.await;
        },
    ));
    (base, stop, state)
}

/// Polls host `id` once; the step of `step_type` it was given, if any.
async fn poll_for(
    c: &reqwest::Client,
    base: &str,
    ie: &str,
    id: &str,
    step_type: &str,
) -> Option<okd_assisted_api::rest::Step> {
    let url = format!("{base}/infra-envs/{ie}/hosts/{id}/instructions");
    let (code, steps) = send(c, M::GET, &format!("{url}?timestamp={}", now_s()), None).await;
    assert_eq!(code, 200, "{steps}");
    let steps: Steps = serde_json::from_value(steps).unwrap();
    steps
        .instructions
        .into_iter()
        .find(|s| s.step_type == step_type)
}

/// Posts `inv` as the reply to inventory step `step_id` of host `id`.
async fn reply_inventory(
    c: &reqwest::Client,
    base: &str,
    (ie, id): (&str, &str),
    step_id: &str,
    inv: &Inventory,
) -> (u16, Value) {
    send(
        c,
        M::POST,
        &format!("{base}/infra-envs/{ie}/hosts/{id}/instructions"),
        Some(json!({
            "step_type": "inventory", "step_id": step_id, "exit_code": 0,
            "output": serde_json::to_string(inv).unwrap()
        })),
    )
    .await
}

fn disk(id: &str, path: &str, eligible: bool) -> Disk {
    Disk {
        id: id.into(),
        name: path.trim_start_matches("/dev/").into(),
        path: path.into(),
        drive_type: "HDD".into(),
        size_bytes: 120_000_000_000,
        installation_eligibility: Eligibility {
            eligible,
            not_eligible_reasons: if eligible {
                vec![]
            } else {
                vec!["Disk is mounted: vdc1 at /".into()]
            },
        },
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_inventory_whose_disk_paths_leave_dev_is_refused_and_the_disk_chosen_among_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let (base, stop, _) = serve(dir.path()).await;
    let c = reqwest::Client::new();
    let (code, ie) = send(
        &c,
        M::POST,
        &format!("{base}/infra-envs"),
        Some(json!({"name": "disks", "pull_secret": PS})),
    )
    .await;
    assert_eq!(code, 201, "{ie}");
    let ie = ie["id"].as_str().unwrap().to_string();
    let id = "44444444-0000-0000-0000-000000000001";
    let (code, body) = send(
        &c,
        M::POST,
        &format!("{base}/infra-envs/{ie}/hosts"),
        Some(json!({"host_id": id})),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    let st = poll_for(&c, &base, &ie, id, "inventory")
        .await
        .expect("a discovering host is asked its inventory");
    let good = inventory("node-1", "192.168.126.10", 8, 16);

    // Each bad disk path: 400 naming the host, the field and the rule.
    let rule = okd_assisted_api::DISK_PATH_RULE;
    for (field, bad, problem) in [
        ("path", "/dev/../etc/shadow", "has a \"..\" component"),
        ("id", "/etc/shadow", "does not start with /dev/"),
        (
            "by_id",
            "/dev/disk/by-id/x\u{0}y",
            "has a NUL or other control character",
        ),
    ] {
        let mut inv = good.clone();
        match field {
            "path" => inv.disks[0].path = bad.into(),
            "id" => inv.disks[0].id = bad.into(),
            _ => inv.disks[0].by_id = bad.into(),
        }
        let (code, body) = reply_inventory(&c, &base, (&ie, id), &st.step_id, &inv).await;
        println!("{field} {bad:?}: {code} {body}");
        assert_eq!(code, 400, "{body}");
        let want = format!(
            "step-reply {}: inventory of host {id}: disks[0].{field} {bad:?}: {problem} (the rule: {rule})",
            st.step_id
        );
        assert_eq!(body["reason"].as_str(), Some(want.as_str()), "{body}");
    }
    // Nothing of them was stored; the step is still open for a good one.
    let (_, h) = send(
        &c,
        M::GET,
        &format!("{base}/infra-envs/{ie}/hosts/{id}"),
        None,
    )
    .await;
    assert_eq!(h["inventory"], "", "{h}");
    let mut inv = good.clone();
    inv.disks.push(disk("/dev/vdc", "/dev/vdc", false));
    let (code, body) = reply_inventory(&c, &base, (&ie, id), &st.step_id, &inv).await;
    assert_eq!(code, 204, "{body}");

    // The installation disk: one of the host's reported, eligible disks.
    let patch = |sel: Value| {
        let (c, url) = (c.clone(), format!("{base}/infra-envs/{ie}/hosts/{id}"));
        async move {
            send(
                &c,
                M::PATCH,
                &url,
                Some(json!({ "disks_selected_config": sel })),
            )
            .await
        }
    };
    let own = inv.disks[0].id.clone();
    for (sel, want) in [
        (
            json!([{"id": "/dev/sdb", "role": "install"}]),
            format!(
                "disks_selected_config[0].id \"/dev/sdb\": not a disk of host {id}'s inventory (the rule: the installation disk is a disk of the host's inventory, by its id, eligible for installation)"
            ),
        ),
        (
            json!([{"id": "/dev/../etc/shadow", "role": "install"}]),
            format!(
                "disks_selected_config[0].id \"/dev/../etc/shadow\" of host {id}: has a \"..\" component (the rule: {rule})"
            ),
        ),
        (
            json!([{"id": "/dev/vdc", "role": "install"}]),
            format!(
                "disks_selected_config[0].id \"/dev/vdc\": not eligible for installation on host {id} (Disk is mounted: vdc1 at /; the rule: the installation disk is a disk of the host's inventory, by its id, eligible for installation)"
            ),
        ),
    ] {
        let (code, body) = patch(sel.clone()).await;
        println!("{sel}: {code} {body}");
        assert_eq!(code, 400, "{body}");
        assert_eq!(body["reason"].as_str(), Some(want.as_str()), "{body}");
    }
    let (_, h) = send(
        &c,
        M::GET,
        &format!("{base}/infra-envs/{ie}/hosts/{id}"),
        None,
    )
    .await;
    // Nothing selected: the inventory's eligible disk was chosen.
    assert_eq!(h["installation_disk_id"], own.as_str(), "{h}");
    assert_eq!(h["installation_disk_path"], "/dev/vda", "{h}");
    let (code, body) = patch(json!([{"id": own, "role": "install"}])).await;
    assert_eq!(code, 201, "{body}");
    assert_eq!(body["installation_disk_id"], own.as_str());
    let _ = stop.send(());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stored_disk_gone_from_the_inventory_is_not_measured() {
    let dir = tempfile::tempdir().unwrap();
    let (base, stop, state) = serve(dir.path()).await;
    let c = reqwest::Client::new();
    let (cid, ie, ids, invs) = ready_cluster(&c, &base, "gone").await;
    // Host 0's row names a disk its inventory does not report, as a row
    // written before the installation disk was chosen with each
    // inventory can (a selection, then an inventory without the disk);
    // each inventory now picks the disk again (`installation_disk.rs`),
    // so only the store can say this.
    let h = state.db.host(&ie, &ids[0]).await.unwrap().unwrap();
    assert_eq!(h.installation_disk_id, invs[0].disks[0].id);
    let selected = "/dev/disk/by-id/wwn-0x5000c500a1b2c3d4";
    assert!(
        state
            .db
            .update_host_settings(
                &ie,
                &ids[0],
                &h.requested_hostname,
                &h.role,
                (selected, "/dev/sdz")
            )
            .await
            .unwrap()
    );

    let (code, body) = send(
        &c,
        M::POST,
        &format!("{base}/clusters/{cid}/actions/install"),
        None,
    )
    .await;
    assert_eq!(code, 202, "{body}");
    // Host 0 is not asked to measure a disk it does not report; the
    // preparation stops with the reason.
    let st = poll_for(&c, &base, &ie, &ids[0], "installation-disk-speed-check").await;
    assert!(st.is_none(), "{st:?}");
    wait_for(&c, &base, &cid, "the preparation stopped", |cl| {
        cl.status != "preparing-for-installation"
    })
    .await;
    // The reason is read from the cluster's event: the cluster's
    // status_info is replaced by the monitor's next validation pass
    // ("Cluster ready to be installed") moments later.
    let (_, ev) = send(&c, M::GET, &format!("{base}/events?cluster_id={cid}"), None).await;
    let failed: Vec<&str> = ev
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"] == "cluster_prepare_installation_failed")
        .filter_map(|e| e["message"].as_str())
        .collect();
    assert!(
        failed.iter().any(|m| m.contains(&format!(
            "host master-0: the installation disk speed check failed: installation disk {selected:?} is not one of the host's reported, eligible disks"
        ))),
        "{ev}"
    );
    let _ = stop.send(());
}
