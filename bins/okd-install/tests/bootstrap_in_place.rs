//! Single node, bootstrap-in-place (issue #21 item 4), the stages
//! `stop-etcd` and `master-ignition` with real programs: bootstrap.ign
//! laid down by the real Ignition; the bootstrap etcd member rendered by
//! `etcd-bootstrap` and run as the kit's etcd with its certificates; a
//! key written; `stop-etcd` moves the member pod away and waits until etcd
//! no longer answers; `master-ignition` builds master.ign from the node's
//! own machine-config server's master config; the real Ignition lays
//! master.ign down into a new root (as the disk boots after the reboot);
//! the kit's etcd started on that root's data and certificates answers with
//! the key, and the control plane, the post-reboot unit and its inputs are
//! in place.

mod common;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use common::kube::apply_ignition;
use common::{example_dir, okd_ok};
use okd_bootstrap::in_place::{self, InPlace};
use okd_bootstrap_render::etcd;

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The kit's etcd as the member pod runs it, with `root`'s certificates
/// and data, on loopback ports `client`/`peer`.
fn etcd_in(bin: &std::path::Path, root: &std::path::Path, client: u16, peer: u16) -> Killed {
    let res = root.join("etc/kubernetes").join(etcd::RESOURCES);
    let log = std::fs::File::create(root.join("etcd.log")).unwrap();
    Killed(
        Command::new(bin)
            .arg(format!("--name={}", etcd::MEMBER))
            .arg(format!(
                "--data-dir={}",
                root.join("var/lib/etcd").display()
            ))
            .arg(format!("--listen-client-urls=https://127.0.0.1:{client}"))
            .arg(format!(
                "--advertise-client-urls=https://127.0.0.1:{client}"
            ))
            .arg(format!("--listen-peer-urls=https://127.0.0.1:{peer}"))
            .arg(format!(
                "--initial-advertise-peer-urls=https://127.0.0.1:{peer}"
            ))
            .arg(format!(
                "--initial-cluster={}=https://127.0.0.1:{peer}",
                etcd::MEMBER
            ))
            .arg("--initial-cluster-state=new")
            .arg(format!(
                "--cert-file={}",
                res.join("etcd-serving.crt").display()
            ))
            .arg(format!(
                "--key-file={}",
                res.join("etcd-serving.key").display()
            ))
            .arg(format!(
                "--trusted-ca-file={}",
                res.join("ca.crt").display()
            ))
            .arg("--client-cert-auth=true")
            .arg(format!(
                "--peer-cert-file={}",
                res.join("etcd-peer.crt").display()
            ))
            .arg(format!(
                "--peer-key-file={}",
                res.join("etcd-peer.key").display()
            ))
            .arg(format!(
                "--peer-trusted-ca-file={}",
                res.join("ca.crt").display()
            ))
            .arg("--peer-client-cert-auth=true")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap(),
    )
}

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

/// A v3 JSON gateway call, retried until it answers (up to 30 s).
async fn kv(http: &reqwest::Client, url: &str, body: serde_json::Value) -> serde_json::Value {
    let start = Instant::now();
    loop {
        match http.post(url).body(body.to_string()).send().await {
            Ok(r) => return serde_json::from_slice(&r.bytes().await.unwrap()).unwrap(),
            Err(e) => {
                assert!(start.elapsed() < Duration::from_secs(30), "{url}: {e}");
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn master_ign_carries_the_bootstrap_etcd_data_and_control_plane_through_the_real_ignition() {
    let Some(bin) = okd_test_utils::kube_tool("etcd") else {
        return;
    };
    if common::tool("ignition", &[common::serve::IGNITION]).is_none() {
        return;
    }
    let scratch = tempfile::tempdir().unwrap();
    let s = scratch.path();
    let ex = example_dir("baremetal-single-master");
    okd_ok(ex.path(), &["create", "ignition-configs"]);
    let root = apply_ignition(&ex.path().join("bootstrap.ign"), &s.join("node"));
    let work = root.join("opt/openshift");
    let ek = root.join("etc/kubernetes");
    std::fs::create_dir_all(ek.join("manifests")).unwrap();
    let input = okd_bootstrap_render::Input {
        assets: work.clone(),
        etc_kubernetes: ek.clone(),
        node_ip: "127.0.0.1".parse().unwrap(),
        etcd_image: "quay.io/openshift/okd-content@sha256:e7cd".into(),
        hyperkube_image: "quay.io/openshift/okd-content@sha256:4b1d".into(),
    };
    etcd::render(&input).unwrap();

    // The bootstrap member with a key in it.
    let (client, peer) = (
        okd_test_utils::free_tcp_port(),
        okd_test_utils::free_tcp_port(),
    );
    let running = etcd_in(&bin, &root, client, peer);
    let tls = work.join("tls");
    let http = okd_bootstrap::checks::client(
        &tls.join("etcd-ca-bundle.crt"),
        Some((&tls.join("etcd-client.crt"), &tls.join("etcd-client.key"))),
    )
    .unwrap();
    let base = format!("https://127.0.0.1:{client}");
    let put = kv(
        &http,
        &format!("{base}/v3/kv/put"),
        serde_json::json!({"key": b64("/registry/okd/kept"), "value": b64("across the reboot")}),
    )
    .await;
    assert!(put.get("header").is_some(), "{put}");

    // stop-etcd: the pod moved away; the kubelet (here: the test) stops it.
    assert!(in_place::stop_etcd_pod(&ek).unwrap());
    assert!(!ek.join(etcd::POD_FILE).exists());
    let health = format!("{base}/health");
    let e = in_place::wait_etcd_stopped(&http, &health, Duration::from_secs(2))
        .await
        .unwrap_err();
    assert!(e.contains("still answers"), "{e}");
    drop(running);
    in_place::wait_etcd_stopped(&http, &health, Duration::from_secs(30))
        .await
        .unwrap();

    // master-ignition from the node's own machine-config server.
    let state = okd_mcs::McsState::from_bootstrap_node(&work).unwrap();
    let original = state
        .body("master", okd_mcs::SpecVersion::V3(2))
        .unwrap()
        .unwrap()
        .to_vec();
    let program = s.join("okd-install-program");
    std::fs::write(&program, b"\x7fELF not really a program").unwrap();
    let p = InPlace {
        work: work.clone(),
        etc_kubernetes: ek.clone(),
        etcd_data: root.join("var/lib/etcd"),
        node_ip: "127.0.0.1".parse().unwrap(),
        hyperkube_image: input.hyperkube_image.clone(),
        program: Some(program.clone()),
    };
    let cfg = in_place::master_ignition(&p, &original).unwrap();
    let master_ign = s.join("master.ign");
    std::fs::write(&master_ign, cfg.to_json()).unwrap();

    // The disk after the reboot: the real Ignition lays master.ign down.
    let new = apply_ignition(&master_ign, &s.join("rebooted"));
    // What the master config had is still there.
    assert!(new.join("etc/kubernetes/kubeconfig").exists());
    for pod in [
        "etcd-member-pod.yaml",
        "kube-apiserver-pod.yaml",
        "kube-controller-manager-pod.yaml",
        "kube-scheduler-pod.yaml",
    ] {
        assert!(
            new.join("etc/kubernetes/manifests").join(pod).exists(),
            "{pod}"
        );
    }
    let api = std::fs::read_to_string(new.join("etc/kubernetes/manifests/kube-apiserver-pod.yaml"))
        .unwrap();
    assert!(
        api.contains("--etcd-servers=https://localhost:2379"),
        "{api}"
    );
    assert!(api.contains(&input.hyperkube_image), "{api}");
    {
        use std::os::unix::fs::PermissionsExt as _;
        let kc = new.join("etc/kubernetes/static-pod-resources/okd-control-plane/kubeconfig");
        assert_eq!(
            std::fs::metadata(&kc).unwrap().permissions().mode() & 0o777,
            0o600
        );
        let key = new.join("etc/kubernetes/static-pod-resources/etcd-member/etcd-peer.key");
        assert_eq!(
            std::fs::metadata(&key).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
    assert_eq!(
        std::fs::read(new.join("usr/local/bin/okd-install")).unwrap(),
        std::fs::read(&program).unwrap()
    );
    let unit = std::fs::read_to_string(new.join("etc/systemd/system/bootkube.service")).unwrap();
    assert!(unit.contains("okd-install bootstrap post-reboot"), "{unit}");
    for a in ["auth/kubeconfig-loopback", "original_cvo_overrides.patch"] {
        assert!(new.join("opt/openshift").join(a).exists(), "{a}");
    }

    // The rebooted node's etcd: the same member, the key still there.
    let (client, peer) = (
        okd_test_utils::free_tcp_port(),
        okd_test_utils::free_tcp_port(),
    );
    let _rebooted = etcd_in(&bin, &new, client, peer);
    let got = kv(
        &http,
        &format!("https://127.0.0.1:{client}/v3/kv/range"),
        serde_json::json!({"key": b64("/registry/okd/kept")}),
    )
    .await;
    assert_eq!(
        got.pointer("/kvs/0/value").and_then(|v| v.as_str()),
        Some(b64("across the reboot").as_str()),
        "{got}"
    );
}
