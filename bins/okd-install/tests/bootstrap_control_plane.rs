//! The bootstrap node's temporary control plane for an upstream payload,
//! for real (issue #20 items 3 and 5): the real Ignition lays
//! `bootstrap.ign` down into a host's root; okd-bootstrap-render writes
//! the etcd PKI, the etcd member's static pod and the bootstrap
//! kube-apiserver, kube-controller-manager and kube-scheduler pods; the
//! host's own containerd + kubelet run them from images built from the
//! kit's programs; the API answers `/readyz` on the bootstrap's address
//! through the install's `api` serving certificate, the controller
//! manager and scheduler take their leases, and etcd answers with the
//! client certificate the render made.
//!
//! cluster-bootstrap's first two steps (copying `tls/` and the loopback
//! kubeconfig to `/etc/kubernetes/bootstrap-secrets`, and
//! `bootstrap-manifests/` into the kubelet's manifest directory) are done
//! here by the test until the program's own cluster-bootstrap runs them.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::kube::{apply_ignition, tail};
use common::netns::Lab;
use common::node::{NodeHost, image_archive};
use common::serve::{BASTION, served_dir};
use okd_bootstrap_render::{Input, control_plane, etcd};

const BOOTSTRAP: &str = "192.168.120.102";

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        if e.file_type().unwrap().is_file() {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

#[test]
fn the_rendered_control_plane_runs_on_a_real_kubelet() {
    if !common::node::available() || !common::netns::available() {
        return;
    }
    let Some(kit) =
        okd_test_utils::kube_tool("kube-apiserver").map(|k| k.parent().unwrap().to_path_buf())
    else {
        return;
    };
    if common::tool("ignition", &[common::serve::IGNITION]).is_none() {
        return;
    }
    let dir = served_dir();
    let scratch = tempfile::tempdir().unwrap();
    let root = apply_ignition(
        &dir.path().join("bootstrap.ign"),
        &scratch.path().join("ign"),
    );
    let assets = root.join("opt/openshift");
    assert!(assets.join("tls/kube-apiserver-lb-server.crt").exists());

    let input = Input {
        assets: assets.clone(),
        etc_kubernetes: root.join("etc/kubernetes"),
        node_ip: BOOTSTRAP.parse().unwrap(),
        etcd_image: "okd.test/etcd:1".into(),
        hyperkube_image: "okd.test/hyperkube:1".into(),
    };
    etcd::render(&input).unwrap();
    control_plane::render(&input).unwrap();
    // cluster-bootstrap start, steps 1 and 2.
    let secrets = root.join("etc/kubernetes/bootstrap-secrets");
    copy_dir(&assets.join("tls"), &secrets);
    std::fs::copy(
        assets.join("auth/kubeconfig-loopback"),
        secrets.join("kubeconfig"),
    )
    .unwrap();
    copy_dir(
        &assets.join("bootstrap-manifests"),
        &root.join("etc/kubernetes/manifests"),
    );

    let images = [
        image_archive(
            &scratch.path().join("etcd.tar"),
            "okd.test/etcd:1",
            &[("/usr/bin/etcd", &kit.join("etcd"))],
            &["/usr/bin/etcd"],
        ),
        image_archive(
            &scratch.path().join("hyperkube.tar"),
            "okd.test/hyperkube:1",
            &[
                ("/usr/bin/kube-apiserver", &kit.join("kube-apiserver")),
                (
                    "/usr/bin/kube-controller-manager",
                    &kit.join("kube-controller-manager"),
                ),
                ("/usr/bin/kube-scheduler", &kit.join("kube-scheduler")),
            ],
            &["/usr/bin/kube-apiserver"],
        ),
    ];
    let prefix = format!("okc{}", std::process::id() % 100000);
    let lab = Lab::new(&prefix, BASTION, &[("bs", BOOTSTRAP)], "okd.example");
    let started = Instant::now();
    let mut host = NodeHost::start(
        &lab.nodes[0].ns,
        "bootstrap",
        BOOTSTRAP,
        "10.128.0.0/24",
        &root,
        &kit.join("kubelet"),
        &images,
    );

    // The API through the install's `api` certificate, from the bastion.
    let kubeconfig = dir.path().join("auth/kubeconfig");
    let domain = std::fs::read_to_string(&kubeconfig)
        .unwrap()
        .lines()
        .find_map(|l| {
            l.trim()
                .strip_prefix("server: https://api.")
                .map(|s| s.trim_end_matches(":6443").to_string())
        })
        .unwrap();
    let kubectl = |args: &[&str]| {
        lab.cmd(&lab.bastion.ns, "kubectl")
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .arg(format!("--server=https://{BOOTSTRAP}:6443"))
            .arg(format!("--tls-server-name=api.{domain}"))
            .args(["--request-timeout=5s"])
            .args(args)
            .output()
            .unwrap()
    };
    let deadline = Instant::now() + Duration::from_secs(240);
    loop {
        let out = kubectl(&["get", "--raw", "/readyz"]);
        if out.status.success() && out.stdout == b"ok" {
            break;
        }
        host.assert_running();
        assert!(
            Instant::now() < deadline,
            "the bootstrap API never became ready: {}\nkubelet:\n{}",
            String::from_utf8_lossy(&out.stderr),
            tail(&host.kubelet_log(), 40)
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    eprintln!(
        "bootstrap API ready {:.1} s after the host started",
        started.elapsed().as_secs_f64()
    );

    // The controller manager and the scheduler run and lead.
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let out = kubectl(&["get", "leases", "-n", "kube-system", "-o", "name"]);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        if text.contains("lease.coordination.k8s.io/kube-controller-manager")
            && text.contains("lease.coordination.k8s.io/kube-scheduler")
        {
            break;
        }
        host.assert_running();
        assert!(
            Instant::now() < deadline,
            "no controller-manager/scheduler leases: {text}\nkubelet:\n{}",
            tail(&host.kubelet_log(), 40)
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    // The service-account token controller of the controller manager works:
    // the default namespace gets its ServiceAccount.
    let deadline = Instant::now() + Duration::from_secs(60);
    while !kubectl(&["get", "serviceaccount", "default", "-n", "default"])
        .status
        .success()
    {
        assert!(Instant::now() < deadline, "no default ServiceAccount");
        std::thread::sleep(Duration::from_millis(500));
    }

    // etcd with the render's client certificate, on the bootstrap address.
    let tls = |f: &str| assets.join("tls").join(f).display().to_string();
    let out = lab
        .cmd(&lab.bastion.ns, "curl")
        .args([
            "-s",
            "--max-time",
            "5",
            "--cacert",
            &tls("etcd-ca-bundle.crt"),
        ])
        .args([
            "--cert",
            &tls("etcd-client.crt"),
            "--key",
            &tls("etcd-client.key"),
        ])
        .arg(format!("https://{BOOTSTRAP}:2379/health"))
        .output()
        .unwrap();
    let body = String::from_utf8_lossy(&out.stdout);
    assert!(
        body.contains("\"health\":\"true\""),
        "etcd: {body} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Without a client certificate etcd refuses.
    let out = lab
        .cmd(&lab.bastion.ns, "curl")
        .args([
            "-s",
            "--max-time",
            "5",
            "--cacert",
            &tls("etcd-ca-bundle.crt"),
        ])
        .arg(format!("https://{BOOTSTRAP}:2379/health"))
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&out.stdout).contains("\"health\":\"true\""));
    drop(host);
}
