//! The installation disk (the disk that will be wiped) is chosen and
//! shown as soon as a host's inventory arrives (issue #42 item 8), by
//! assisted-service's rule (`internal/host/host.go` `updateInventory`:
//! `hostutil.DetermineInstallationDisk` over the hardware validator's
//! `ListEligibleDisks`): the host's current disk while it stays
//! eligible, else the first eligible disk in the validator's order
//! (bootable first, non-NVMe before NVMe, drive type name, smallest,
//! HCTL); `installation_disk_id` is the disk's id (its by-id path when
//! it has one), `installation_disk_path` its device path.
//!
//! `data/inventory-eligible-disk-not-first.json` is an inventory in the
//! agent's shape (assisted-service `swagger.yaml` `inventory`) whose
//! eligible disk is not the first: the live ISO's `sr0` (mounted, so
//! ineligible by the agent), a 21 GB `vda` (too small for the 100 GB a
//! host needs), a 200 GB NVMe and a 150 GB `sdb` (non-NVMe first: the
//! one chosen).

mod common;

use std::time::{Duration, Instant};

use common::{PS, now_s, ready_cluster, send, wait_for};
use okd_assisted_api::Inventory;
use okd_assisted_api::rest::{Host, Step, Steps};
use reqwest::Method as M;
use serde_json::{Value, json};

const SDB: &str = "/dev/disk/by-id/wwn-0x5000c500a1b2c301";
const NVME: &str = "/dev/disk/by-id/nvme-eui.0025385b71b07e2f";

fn held_back() -> Inventory {
    serde_json::from_str(include_str!("data/inventory-eligible-disk-not-first.json")).unwrap()
}

/// The service on loopback over SQLite in `dir`, without authentication
/// or TLS (this test is about the installation disk).
async fn serve(dir: &std::path::Path) -> common::Svc {
    common::start_with(&okd_assisted_service::sqlite_url(dir), |o| {
        o.auth = None;
        o.tls = None;
    })
    .await
}

/// Polls host `id` until it is handed a step of `step_type` (30 s at
/// most).
async fn step_of(c: &reqwest::Client, base: &str, ie: &str, id: &str, step_type: &str) -> Step {
    let url = format!("{base}/infra-envs/{ie}/hosts/{id}/instructions");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (code, steps) = send(c, M::GET, &format!("{url}?timestamp={}", now_s()), None).await;
        assert_eq!(code, 200, "{steps}");
        let steps: Steps = serde_json::from_value(steps).unwrap();
        if let Some(st) = steps
            .instructions
            .into_iter()
            .find(|s| s.step_type == step_type)
        {
            return st;
        }
        assert!(Instant::now() < deadline, "no {step_type} step for {id}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Waits for host `id`'s next inventory step and answers it with `inv`.
async fn send_inventory(c: &reqwest::Client, base: &str, (ie, id): (&str, &str), inv: &Inventory) {
    let st = step_of(c, base, ie, id, "inventory").await;
    let (code, body) = send(
        c,
        M::POST,
        &format!("{base}/infra-envs/{ie}/hosts/{id}/instructions"),
        Some(json!({
            "step_type": "inventory", "step_id": st.step_id, "exit_code": 0,
            "output": serde_json::to_string(inv).unwrap()
        })),
    )
    .await;
    assert_eq!(code, 204, "{body}");
}

/// Host `id`'s document.
async fn host(c: &reqwest::Client, base: &str, ie: &str, id: &str) -> Host {
    let (code, h) = send(
        c,
        M::GET,
        &format!("{base}/infra-envs/{ie}/hosts/{id}"),
        None,
    )
    .await;
    assert_eq!(code, 200, "{h}");
    serde_json::from_value(h).unwrap()
}

fn disk_of(h: &Host) -> (&str, &str) {
    (&h.installation_disk_id, &h.installation_disk_path)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_installation_disk_is_chosen_when_the_inventory_arrives_and_a_choice_kept() {
    let dir = tempfile::tempdir().unwrap();
    let svc = serve(dir.path()).await;
    let (c, base) = (reqwest::Client::new(), svc.base.clone());
    let (code, ie) = send(
        &c,
        M::POST,
        &format!("{base}/infra-envs"),
        Some(json!({"name": "disks", "pull_secret": PS})),
    )
    .await;
    assert_eq!(code, 201, "{ie}");
    let ie = ie["id"].as_str().unwrap().to_string();
    let id = "55555555-0000-0000-0000-000000000001";
    let (code, body) = send(
        &c,
        M::POST,
        &format!("{base}/infra-envs/{ie}/hosts"),
        Some(json!({"host_id": id})),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    let h = host(&c, &base, &ie, id).await;
    assert_eq!(disk_of(&h), ("", ""), "no inventory, no disk");

    // The inventory arrives: the first eligible disk in the validator's
    // order is chosen at once (not sr0, ineligible; not vda, too small;
    // sdb before the NVMe disk), in the host's document and the list.
    let inv = held_back();
    send_inventory(&c, &base, (&ie, id), &inv).await;
    let h = host(&c, &base, &ie, id).await;
    println!("after the inventory: {:?}", disk_of(&h));
    assert_eq!(disk_of(&h), (SDB, "/dev/sdb"), "{h:?}");
    let (_, list) = send(&c, M::GET, &format!("{base}/infra-envs/{ie}/hosts"), None).await;
    assert_eq!(list[0]["installation_disk_id"], SDB, "{list}");
    assert_eq!(list[0]["installation_disk_path"], "/dev/sdb", "{list}");

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
    // A disk the agent calls eligible but too small is refused, with
    // the service's reason.
    let (code, body) = patch(json!([{"id": inv.disks[1].id, "role": "install"}])).await;
    assert_eq!(code, 400, "{body}");
    assert!(
        body["reason"]
            .as_str()
            .unwrap()
            .contains("Disk is too small (disk only has 21.47 GB, but 100 GB are required)"),
        "{body}"
    );
    // The user's choice is taken, and kept by the next inventory.
    let (code, body) = patch(json!([{"id": NVME, "role": "install"}])).await;
    assert_eq!(code, 201, "{body}");
    assert_eq!(body["installation_disk_id"], NVME, "{body}");
    assert_eq!(body["installation_disk_path"], "/dev/nvme0n1", "{body}");
    send_inventory(&c, &base, (&ie, id), &inv).await;
    let h = host(&c, &base, &ie, id).await;
    assert_eq!(disk_of(&h), (NVME, "/dev/nvme0n1"), "the choice is kept");

    // The chosen disk leaves the inventory: the rule picks again.
    let mut without = inv.clone();
    without.disks.retain(|d| d.id != NVME);
    send_inventory(&c, &base, (&ie, id), &without).await;
    let h = host(&c, &base, &ie, id).await;
    assert_eq!(disk_of(&h), (SDB, "/dev/sdb"), "re-picked");
    // Declining the only eligible disk is refused.
    let (code, body) = patch(json!([{"id": SDB, "role": "none"}])).await;
    assert_eq!(code, 400, "{body}");
    assert!(
        body["reason"]
            .as_str()
            .unwrap()
            .contains("would have no installation disk"),
        "{body}"
    );
    // The NVMe disk comes back: the current disk, still eligible, stays.
    send_inventory(&c, &base, (&ie, id), &inv).await;
    let h = host(&c, &base, &ie, id).await;
    assert_eq!(disk_of(&h), (SDB, "/dev/sdb"), "still eligible: kept");
    // Declining it gives the next eligible disk.
    let (code, body) = patch(json!([{"id": SDB, "role": "none"}])).await;
    assert_eq!(code, 201, "{body}");
    assert_eq!(body["installation_disk_id"], NVME, "{body}");
    assert_eq!(body["installation_disk_path"], "/dev/nvme0n1", "{body}");
    // An inventory where no disk is eligible: none.
    let mut none = inv.clone();
    none.disks.truncate(2);
    send_inventory(&c, &base, (&ie, id), &none).await;
    let h = host(&c, &base, &ie, id).await;
    assert_eq!(disk_of(&h), ("", ""), "no eligible disk");
    svc.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disk_gone_from_the_inventory_is_picked_again_and_shown_while_preparing() {
    let dir = tempfile::tempdir().unwrap();
    let svc = serve(dir.path()).await;
    let (c, base) = (reqwest::Client::new(), svc.base.clone());
    let (cid, ie, ids, invs) = ready_cluster(&c, &base, "gone").await;
    for (id, inv) in ids.iter().zip(&invs) {
        let h = host(&c, &base, &ie, id).await;
        assert_eq!(
            disk_of(&h),
            (inv.disks[0].id.as_str(), "/dev/vda"),
            "chosen at discovery"
        );
    }
    let selected = invs[0].disks[0].id.clone();
    let (code, body) = send(
        &c,
        M::PATCH,
        &format!("{base}/infra-envs/{ie}/hosts/{}", ids[0]),
        Some(json!({"disks_selected_config": [{"id": selected, "role": "install"}]})),
    )
    .await;
    assert_eq!(code, 201, "{body}");

    // Host 0 then reports its disk under another id (the old one gone):
    // its installation disk is picked again from the new inventory.
    let moved_id = "/dev/disk/by-id/wwn-0x5000c500a1b2c3d4";
    let mut moved = invs[0].clone();
    moved.disks[0].id = moved_id.into();
    moved.disks[0].by_id = moved_id.into();
    let mut now: Vec<Inventory> = invs.clone();
    now[0] = moved;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        for (id, inv) in ids.iter().zip(&now) {
            common::poll_and_answer(&c, &base, &ie, id, inv).await;
        }
        let h = host(&c, &base, &ie, &ids[0]).await;
        if h.inventory.contains(moved_id) && h.status == "known" {
            assert_eq!(disk_of(&h), (moved_id, "/dev/vda"), "picked again");
            break;
        }
        assert!(Instant::now() < deadline, "the new inventory: {h:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    wait_for(&c, &base, &cid, "ready again", |cl| cl.status == "ready").await;

    let (code, body) = send(
        &c,
        M::POST,
        &format!("{base}/clusters/{cid}/actions/install"),
        None,
    )
    .await;
    assert_eq!(code, 202, "{body}");
    // Preparing: the disk is shown, and the one measured is it.
    let st = step_of(&c, &base, &ie, &ids[0], "installation-disk-speed-check").await;
    let h = host(&c, &base, &ie, &ids[0]).await;
    assert_eq!(h.status, "preparing-for-installation", "{h:?}");
    assert_eq!(disk_of(&h), (moved_id, "/dev/vda"), "{h:?}");
    let arg: Value = serde_json::from_str(&st.args[0]).unwrap();
    assert_eq!(arg["path"], moved_id, "{st:?}");
    svc.stop().await;
}
