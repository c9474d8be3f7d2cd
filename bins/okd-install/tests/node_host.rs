//! The node host of `common::node` for real: Debian's containerd + runc and
//! the kit's kubelet in a host namespace of their own run static pods from
//! the host's manifest directory, on the host network and on the pod
//! network (bridge + host-local), reachable from another host; removing
//! the manifest stops the pod; dropping the host leaves no process and no
//! cgroup behind. The bootstrap node's program runs its temporary control
//! plane on such a host (issue #20 item 5).

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::netns::Lab;
use common::node::{NodeHost, image_archive};

const BASTION: &str = "192.168.121.1";
const NODE: &str = "192.168.121.10";

/// Polls `url` from namespace `ns` with curl until it answers 200 or
/// `secs` pass; returns the body, or `None`.
fn get(lab: &Lab, ns: &str, url: &str, secs: u64) -> Option<String> {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let out = lab
            .cmd(ns, "curl")
            .args(["-sf", "--max-time", "2", url])
            .output()
            .unwrap();
        if out.status.success() {
            return Some(String::from_utf8_lossy(&out.stdout).into_owned());
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

fn etcd_pod(name: &str, host_network: bool, listen: &str, advertise: &str) -> String {
    format!(
        "apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: kube-system}}
spec:
  hostNetwork: {host_network}
  containers:
  - name: etcd
    image: okd.test/etcd:1
    imagePullPolicy: Never
    command: [/usr/local/bin/etcd, --name={name}, --data-dir=/tmp/{name},
              --listen-client-urls=http://{listen}:2379, --advertise-client-urls=http://{advertise}:2379,
              --listen-peer-urls=http://127.0.0.1:2380, --initial-advertise-peer-urls=http://127.0.0.1:2380,
              --initial-cluster={name}=http://127.0.0.1:2380]
"
    )
}

#[test]
fn a_kubelet_runs_static_pods_on_the_host_and_pod_networks() {
    if !common::node::available() || !common::netns::available() {
        return;
    }
    let Some(kit) = okd_test_utils::kube_tool("kubelet").map(|k| k.parent().unwrap().to_path_buf())
    else {
        return;
    };
    // What the host makes must stay in its root folder.
    const WATCHED: [&str; 5] = [
        "/etc/kubernetes",
        "/var/lib/kubelet",
        "/var/log/pods",
        "/opt/containerd",
        "/etc/cni/net.d",
    ];
    let before: Vec<bool> = WATCHED.iter().map(|p| Path::new(p).exists()).collect();
    let scratch = tempfile::tempdir().unwrap();
    let prefix = format!("okh{}", std::process::id() % 100000);
    let lab = Lab::new(&prefix, BASTION, &[("n0", NODE)], "okd.example");
    let etcd = image_archive(
        &scratch.path().join("etcd.tar"),
        "okd.test/etcd:1",
        &[("/usr/local/bin/etcd", &kit.join("etcd"))],
        &["/usr/local/bin/etcd"],
    );
    let root = scratch.path().join("root");
    let mut host = NodeHost::start(
        &lab.nodes[0].ns,
        "node0",
        NODE,
        "10.128.0.0/24",
        &root,
        &kit.join("kubelet"),
        &[etcd],
    );
    let cgroup = host.cgroup.clone();

    host.add_static_pod("etcd-host.yaml", &etcd_pod("etcd-host", true, NODE, NODE));
    host.add_static_pod(
        "etcd-pod.yaml",
        &etcd_pod("etcd-pod", false, "0.0.0.0", "127.0.0.1"),
    );
    let health = get(
        &lab,
        &lab.bastion.ns,
        &format!("http://{NODE}:2379/health"),
        90,
    );
    host.assert_running();
    assert!(
        health
            .as_deref()
            .is_some_and(|h| h.contains("\"health\":\"true\"")),
        "the host-network etcd never answered from the bastion: {health:?}\nkubelet:\n{}",
        common::kube::tail(&host.kubelet_log(), 30)
    );
    // The pod-network pod: its address comes from host-local, reached
    // through the host's bridge.
    let deadline = Instant::now() + Duration::from_secs(60);
    let ip = loop {
        if let Some(ip) = host.pod_ips().into_iter().next() {
            break ip;
        }
        assert!(Instant::now() < deadline, "no pod address given out");
        std::thread::sleep(Duration::from_millis(250));
    };
    assert!(ip.starts_with("10.128.0."), "{ip}");
    let health = get(
        &lab,
        &lab.nodes[0].ns,
        &format!("http://{ip}:2379/health"),
        60,
    );
    assert!(
        health.is_some_and(|h| h.contains("\"health\":\"true\"")),
        "the pod-network etcd at {ip} never answered\nkubelet:\n{}",
        common::kube::tail(&host.kubelet_log(), 30)
    );
    // The pods' logs are the host's own.
    assert!(
        std::fs::read_dir(root.join("var/log/pods"))
            .unwrap()
            .flatten()
            .any(|e| e
                .file_name()
                .to_string_lossy()
                .starts_with("kube-system_etcd-host-node0_")),
        "no pod log directory in the host's /var/log/pods"
    );
    // The machine's sysctls are untouched: the kubelet wrote the host's copies.
    let copy = std::fs::read_to_string(root.join(".sysctl/vm_overcommit_memory")).unwrap();
    assert_eq!(
        copy.trim(),
        "1",
        "the kubelet did not set the host's vm.overcommit_memory"
    );

    // The kubelet stops a pod whose manifest goes.
    host.remove_static_pod("etcd-host.yaml");
    let deadline = Instant::now() + Duration::from_secs(60);
    while get(
        &lab,
        &lab.bastion.ns,
        &format!("http://{NODE}:2379/health"),
        0,
    )
    .is_some()
    {
        assert!(
            Instant::now() < deadline,
            "etcd-host still answers after its manifest went"
        );
        std::thread::sleep(Duration::from_millis(500));
    }

    // Dropping the host ends all its processes and removes its cgroups.
    let hostname = host.enter("hostname").output().unwrap();
    assert_eq!(String::from_utf8_lossy(&hostname.stdout).trim(), "node0");
    let pids = host.pids();
    // init, containerd, the kubelet, a shim, pause and etcd for the pod.
    assert!(pids.len() >= 6, "the host runs only {pids:?}");
    drop(host);
    let alive: Vec<u32> = pids
        .iter()
        .copied()
        .filter(|p| Path::new(&format!("/proc/{p}")).exists())
        .collect();
    assert!(alive.is_empty(), "processes of the host left: {alive:?}");
    for d in std::fs::read_dir("/sys/fs/cgroup").unwrap().flatten() {
        let p = d.path().join(&cgroup);
        assert!(!p.exists(), "{} left behind", p.display());
    }
    let after: Vec<bool> = WATCHED.iter().map(|p| Path::new(p).exists()).collect();
    assert_eq!(
        before, after,
        "the host made some of {WATCHED:?} on the machine"
    );
}
