//! The web page tells hosts with one name apart (issue #42 item 1): five
//! freshly booted machines all reporting host name `vm` each get a row
//! with its id (whole, or the shortest prefix of at least eight characters
//! no other host of the cluster shares), its primary interface's MAC and
//! address, and its installation disk once one is set.

mod common;

use common::*;
use serde_json::json;

/// The `<tr>` of host `id` in the page.
fn row<'a>(page: &'a str, id: &str) -> &'a str {
    let start = page
        .find(&format!("data-host-id=\"{id}\""))
        .unwrap_or_else(|| panic!("no row of host {id}:\n{page}"));
    let end = page[start..].find("</tr>").unwrap() + start;
    &page[start..end]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hosts_with_one_name_show_their_id_mac_address_and_disk() {
    use reqwest::Method as M;
    let dir = tempfile::tempdir().unwrap();
    let svc = start(&okd_assisted_service::sqlite_url(dir.path())).await;
    let base = svc.base.clone();
    let root = base.trim_end_matches(okd_assisted_api::rest::BASE_PATH);
    let c = client();
    let (code, cl) = send(
        &c,
        M::POST,
        &format!("{base}/clusters"),
        Some(json!({
            "name": "same", "openshift_version": "4.19", "pull_secret": PS,
            "base_dns_domain": "example.com",
            "api_vips": [{"ip": "192.168.126.253"}], "ingress_vips": [{"ip": "192.168.126.254"}]
        })),
    )
    .await;
    assert_eq!(code, 201, "{cl}");
    let cid = cl["id"].as_str().unwrap().to_string();
    let (code, ie) = send(
        &c,
        M::POST,
        &format!("{base}/infra-envs"),
        Some(json!({"name": "same-ie", "pull_secret": PS, "cluster_id": cid})),
    )
    .await;
    assert_eq!(code, 201, "{ie}");
    let ie = ie["id"].as_str().unwrap().to_string();
    let ids = [
        "0f1e2d3c-aaaa-4000-8000-000000000001",
        "0f1e2d3c-bbbb-4000-8000-000000000002",
        "71c2a9e4-0000-4000-8000-000000000003",
        "a83b11f0-0000-4000-8000-000000000004",
        "d4e5f6a7-0000-4000-8000-000000000005",
    ];
    let shown = [
        "0f1e2d3c-a",
        "0f1e2d3c-b",
        "71c2a9e4",
        "a83b11f0",
        "d4e5f6a7",
    ];
    let mac = |i: usize| format!("52:54:00:42:00:0{i}");
    let ip = |i: usize| format!("192.168.126.2{i}");
    for (i, id) in ids.iter().enumerate() {
        let (code, body) = send(
            &c,
            M::POST,
            &format!("{base}/infra-envs/{ie}/hosts"),
            Some(json!({"host_id": id})),
        )
        .await;
        assert_eq!(code, 201, "{body}");
        let mut inv = inventory("vm", &ip(i), 8, 16);
        inv.interfaces[0].mac_address = mac(i);
        poll_and_answer(&c, &base, &ie, id, &inv).await;
    }
    // One host's installation disk chosen by the user.
    let (code, body) = send(
        &c,
        M::PATCH,
        &format!("{base}/infra-envs/{ie}/hosts/{}", ids[4]),
        Some(json!({"disks_selected_config": [
            {"id": "/dev/disk/by-path/pci-0000:00:04.0", "role": "install"}
        ]})),
    )
    .await;
    assert_eq!(code, 201, "{body}");

    let page = c
        .get(format!("{root}/clusters/{cid}"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for (i, id) in ids.iter().enumerate() {
        let r = row(&page, id);
        assert!(
            r.contains(&format!("<code class=\"host-id\">{}</code>", shown[i])),
            "host {id} shown by the shortest unambiguous prefix {}:\n{r}",
            shown[i]
        );
        assert!(
            r.contains(&format!("<code class=\"mac\">{}</code>", mac(i))),
            "MAC of {id}:\n{r}"
        );
        assert!(r.contains(&format!(">{}<", ip(i))), "address of {id}:\n{r}");
    }
    let (_, h4) = send(
        &c,
        M::GET,
        &format!("{base}/infra-envs/{ie}/hosts/{}", ids[4]),
        None,
    )
    .await;
    let disk = [
        h4["installation_disk_path"].as_str(),
        h4["installation_disk_id"].as_str(),
    ]
    .into_iter()
    .flatten()
    .find(|d| !d.is_empty())
    .expect("the chosen disk in the host's document")
    .to_string();
    assert!(
        row(&page, ids[4]).contains(&format!("<code>{disk}</code>")),
        "the installation disk {disk}:\n{}",
        row(&page, ids[4])
    );
    svc.stop().await;
}
