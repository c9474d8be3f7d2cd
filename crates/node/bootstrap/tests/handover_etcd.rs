//! The etcd handover with the kit's real etcd (issue #21 item 2): a
//! one-member cluster named as the bootstrap's (`etcd-bootstrap`), a key
//! written to it, a master added as a learner and started, promoted once
//! it caught up, the bootstrap member removed only when
//! `handover::can_remove_bootstrap` allows it, the bootstrap's etcd
//! stopped, and the key read back from the master. Loopback only, plain
//! HTTP (the TLS client is the one `wait-for-etcd` already uses).

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use base64::Engine as _;
use okd_bootstrap::handover::{BOOTSTRAP_MEMBER, Keep, can_remove_bootstrap};
use okd_bootstrap::members::Members;

struct Etcd(Child);

impl Drop for Etcd {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn start(
    bin: &Path,
    dir: &Path,
    name: &str,
    client: u16,
    peer: u16,
    cluster: &str,
    state: &str,
) -> Etcd {
    let log = std::fs::File::create(dir.join(format!("{name}.log"))).unwrap();
    Etcd(
        Command::new(bin)
            .arg(format!("--name={name}"))
            .arg(format!("--data-dir={}", dir.join(name).display()))
            .arg(format!("--listen-client-urls=http://127.0.0.1:{client}"))
            .arg(format!("--advertise-client-urls=http://127.0.0.1:{client}"))
            .arg(format!("--listen-peer-urls=http://127.0.0.1:{peer}"))
            .arg(format!(
                "--initial-advertise-peer-urls=http://127.0.0.1:{peer}"
            ))
            .arg(format!("--initial-cluster={cluster}"))
            .arg(format!("--initial-cluster-state={state}"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap(),
    )
}

/// The members as the handover rule sees them.
async fn judge(m: &Members) -> Vec<okd_bootstrap::handover::Member> {
    m.judged()
        .await
        .unwrap()
        .into_iter()
        .map(|(_, j)| j)
        .collect()
}

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

async fn kv(
    http: &reqwest::Client,
    endpoint: &str,
    path: &str,
    body: serde_json::Value,
) -> serde_json::Value {
    let r = http
        .post(format!("{endpoint}{path}"))
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    serde_json::from_slice(&r.bytes().await.unwrap()).unwrap()
}

#[tokio::test]
async fn a_master_joins_as_a_learner_and_the_bootstrap_member_goes_only_when_it_may() {
    let Some(bin) = okd_test_utils::kube_tool("etcd") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (c1, p1, c2, p2) = (free_port(), free_port(), free_port(), free_port());
    let boot_peer = format!("http://127.0.0.1:{p1}");
    let master_peer = format!("http://127.0.0.1:{p2}");
    let boot_client = format!("http://127.0.0.1:{c1}");
    let master_client = format!("http://127.0.0.1:{c2}");
    let mut boot = Some(start(
        &bin,
        d,
        BOOTSTRAP_MEMBER,
        c1,
        p1,
        &format!("{BOOTSTRAP_MEMBER}={boot_peer}"),
        "new",
    ));
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let members = Members::new(http.clone(), vec![boot_client.clone()]);
    let list = okd_bootstrap::checks::poll(
        "the bootstrap etcd answers",
        Duration::from_secs(30),
        || async { members.list().await.map_err(|e| e.to_string()) },
    )
    .await
    .unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!(list[0].name, BOOTSTRAP_MEMBER);
    let put = kv(
        &http,
        &boot_client,
        "/v3/kv/put",
        serde_json::json!({"key": b64("/registry/okd-test"), "value": b64("written on the bootstrap")}),
    )
    .await;
    assert!(put.get("header").is_some(), "{put}");

    // The master: added as a learner first; the bootstrap must stay.
    let (id, after_add) = members.add_learner(&master_peer).await.unwrap();
    assert!(after_add.iter().any(|m| m.id == id && m.is_learner));
    let judged = judge(&members).await;
    assert!(
        matches!(
            can_remove_bootstrap(&judged, 1),
            Err(Keep::LearnerPending(_))
        ),
        "{judged:?}"
    );
    let _master = start(
        &bin,
        d,
        "master",
        c2,
        p2,
        &format!("{BOOTSTRAP_MEMBER}={boot_peer},master={master_peer}"),
        "existing",
    );
    // Promoted once it has caught up (etcd refuses before that).
    okd_bootstrap::checks::poll(
        "the learner is promoted",
        Duration::from_secs(60),
        || async { members.promote(id).await.map_err(|e| e.to_string()) },
    )
    .await
    .unwrap();
    let judged = okd_bootstrap::checks::poll(
        "both members are healthy voters",
        Duration::from_secs(30),
        || async {
            let j: Vec<_> = members
                .judged()
                .await
                .map_err(|e| e.to_string())?
                .into_iter()
                .map(|(_, j)| j)
                .collect();
            can_remove_bootstrap(&j, 1)
                .map(|()| j.clone())
                .map_err(|k| k.to_string())
        },
    )
    .await
    .unwrap();
    assert_eq!(judged.len(), 2);
    // Three masters expected: one is not enough.
    assert_eq!(
        can_remove_bootstrap(&judged, 3),
        Err(Keep::MastersMissing { have: 1, want: 3 })
    );

    // The bootstrap member goes; its etcd stops; the master keeps the data.
    let boot_id = members
        .list()
        .await
        .unwrap()
        .into_iter()
        .find(|m| m.name == BOOTSTRAP_MEMBER)
        .unwrap()
        .id;
    // etcd itself refuses while the master has not been connected long
    // enough ("unhealthy cluster", its strict reconfiguration check).
    okd_bootstrap::checks::poll(
        "the bootstrap member is removed",
        Duration::from_secs(30),
        || async { members.remove(boot_id).await.map_err(|e| e.to_string()) },
    )
    .await
    .unwrap();
    drop(boot.take());
    let on_master = Members::new(http.clone(), vec![master_client.clone()]);
    let left = okd_bootstrap::checks::poll(
        "the master answers alone",
        Duration::from_secs(30),
        || async { on_master.list().await.map_err(|e| e.to_string()) },
    )
    .await
    .unwrap();
    assert_eq!(left.len(), 1, "{left:?}");
    assert_eq!(left[0].name, "master");
    assert!(!left[0].is_learner);
    let got = okd_bootstrap::checks::poll(
        "the key is read from the master",
        Duration::from_secs(30),
        || async {
            let v = kv(
                &http,
                &master_client,
                "/v3/kv/range",
                serde_json::json!({"key": b64("/registry/okd-test")}),
            )
            .await;
            v.pointer("/kvs/0/value")
                .and_then(|x| x.as_str())
                .map(str::to_string)
                .ok_or_else(|| v.to_string())
        },
    )
    .await
    .unwrap();
    assert_eq!(got, b64("written on the bootstrap"));
    let judged = judge(&on_master).await;
    assert_eq!(can_remove_bootstrap(&judged, 1), Err(Keep::AlreadyRemoved));
}
