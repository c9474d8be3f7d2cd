//! The render stages of an OKD/OCP payload, by contract (issue #20 item
//! 3): the bootstrap host of `common::bootlab` (serve, the mirror, the
//! real Ignition, the host's own namespaces) with a payload of contract
//! images (`common::contract`: each checks the arguments and mounts
//! bootkube's stage gives it and writes the documented outputs), run by
//! Debian's podman inside the host, pulled by digest through the mirror
//! with bootstrap.ign's registries.conf and pull secret. The host runs no
//! kubelet: the upstream path's test (`bootstrap_node.rs`) runs the static
//! pods; this one checks every render stage ran its image with bootkube's
//! arguments and that every output landed where bootkube.sh copies it. A
//! render that fails stops bootkube with the operator's message in the
//! service record, and the restart runs from that stage once its cause is
//! gone.

mod common;

use std::time::Duration;

use common::bootlab::{BootLab, prerequisites, wait_for_log};
use common::contract;
use common::kube::tail;

const VERSION: &str = "4.15.0-0.okd-contract";

/// The stages with a `.done` marker, in order (the renders from
/// `api-bootstrap` to `cco-bootstrap` run an operator image each).
const MARKED: [&str; 13] = [
    "openshift-manifests",
    "api-bootstrap",
    "auth-api-bootstrap",
    "config-bootstrap",
    "cvo-bootstrap",
    "etcd-bootstrap",
    "kube-apiserver-bootstrap",
    "kube-controller-manager-bootstrap",
    "kube-scheduler-bootstrap",
    "ingress-operator-bootstrap",
    "node-tuning-bootstrap",
    "mco-bootstrap",
    "cco-bootstrap",
];

#[test]
fn an_openshift_payload_runs_every_operator_render_with_podman_by_contract() {
    let Some(pre) = prerequisites() else {
        return;
    };
    if !contract::available() {
        return;
    }
    if okd_test_utils::tool("podman", &[], Some("podman")).is_none() {
        return;
    }
    let mut bl = BootLab::start(&pre, "okc", None, true, |t| contract::build(t, VERSION));
    let t = bl.scratch.path().to_path_buf();
    let work = bl.root.join("opt/openshift");

    bl.release_image();
    let release = bl.host.file("opt/openshift/okd-release.json");
    assert!(release.contains("\"kind\": \"openshift\""), "{release}");

    // Killed (SIGKILL) while each render runs, and started again: every
    // restart resumes at the first stage not done and repeats none. The
    // ingress operator's render fails on the way: bootkube stops there with
    // the operator's own message, in its log and its service record, and
    // the run after the cause is gone goes on from that stage.
    std::fs::create_dir_all(work.join("contract")).unwrap();
    std::fs::write(
        work.join("contract/fail-ingress-operator"),
        "the test makes this render fail",
    )
    .unwrap();
    let mut logs = Vec::new();
    // Each run is killed as soon as the stage's render shows in its log
    // (polled every 20 ms). A render can finish before the kill lands, and
    // the next one with it: a stage already done when its turn comes is
    // not run again, so it is counted as not killed.
    let mut killed = 0;
    let mut kill_during = |stage: &str, bl: &mut BootLab, logs: &mut Vec<std::path::PathBuf>| {
        if work.join(format!("{stage}.done")).exists() {
            return;
        }
        let log = t.join(format!("bootkube-{}.log", logs.len() + 1));
        let p = bl.bootkube(&log);
        let start = std::time::Instant::now();
        loop {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            if text.contains(&format!("stage {stage}: running")) {
                killed += 1;
                break;
            }
            if work.join(format!("{stage}.done")).exists() {
                break;
            }
            bl.host.assert_running();
            assert!(
                start.elapsed() < Duration::from_secs(120),
                "no {stage} render in 120 s:\n{}",
                tail(&text, 30)
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        drop(p);
        logs.push(log);
    };
    // api-bootstrap … kube-scheduler-bootstrap.
    for stage in &MARKED[1..9] {
        kill_during(stage, &mut bl, &mut logs);
    }
    let log = t.join(format!("bootkube-{}.log", logs.len() + 1));
    let mut bootkube = bl.bootkube(&log);
    let status = bootkube
        .wait_exit(Duration::from_secs(300))
        .unwrap_or_else(|| {
            panic!(
                "bootkube did not stop at the failing render:\n{}",
                tail(&std::fs::read_to_string(&log).unwrap_or_default(), 40)
            )
        });
    drop(bootkube);
    logs.push(log.clone());
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(!status.success(), "{}", tail(&text, 40));
    assert!(
        text.contains("contract ingress-operator: the test makes this render fail"),
        "{}",
        tail(&text, 40)
    );
    let record = bl.host.file("var/log/openshift/bootkube.json");
    let entries = okd_service_record::parse_entries(record.as_bytes()).unwrap();
    let failed = entries
        .iter()
        .find(|e| e.result == "failure")
        .unwrap_or_else(|| panic!("no failure in the record: {record}"));
    assert_eq!(failed.stage, "ingress-operator-bootstrap", "{record}");
    assert!(
        failed.error_message.contains("exited with code 3")
            && failed
                .error_message
                .contains("the test makes this render fail"),
        "{record}"
    );
    assert!(work.join("kube-scheduler-bootstrap.done").exists());
    assert!(!work.join("ingress-operator-bootstrap.done").exists());

    // The cause removed: the renders after it, killed in turn, then the
    // run that reaches wait-for-etcd (no etcd runs here: the host has no
    // kubelet).
    std::fs::remove_file(work.join("contract/fail-ingress-operator")).unwrap();
    // ingress-operator-bootstrap … cco-bootstrap.
    for stage in &MARKED[9..] {
        kill_during(stage, &mut bl, &mut logs);
    }
    eprintln!("killed during {killed} of 12 renders");
    assert!(killed >= 6, "killed during only {killed} of 12 renders");
    let log = t.join(format!("bootkube-{}.log", logs.len() + 1));
    let bootkube = bl.bootkube(&log);
    let text = wait_for_log(
        &log,
        "stage wait-for-etcd: starting",
        Duration::from_secs(300),
        &mut bl.host,
    );
    drop(bootkube);
    logs.push(log);

    // No run started a stage (one with a `.done` marker) an earlier run
    // had finished, and every one finished.
    let mut finished: Vec<String> = Vec::new();
    for (i, l) in logs.iter().enumerate() {
        let text = std::fs::read_to_string(l).unwrap();
        for stage in &finished {
            assert!(
                !text.contains(&format!("stage {stage}: starting")),
                "run {} repeated {stage}, done in an earlier run:\n{}",
                i + 1,
                tail(&text, 40)
            );
        }
        for stage in MARKED {
            if text.contains(&format!("stage {stage}: done"))
                && !finished.iter().any(|f| f == stage)
            {
                finished.push(stage.to_string());
            }
        }
    }
    for stage in MARKED {
        assert!(
            finished.iter().any(|f| f == stage),
            "{stage} never finished: {finished:?}"
        );
    }

    // Every contract image ran, with bootkube's arguments (each checked
    // them; the record shows what it got).
    for (name, program, _) in contract::RENDERS {
        let prog = program.rsplit('/').next().unwrap();
        let prog = if prog == "render" { *name } else { prog };
        let args = std::fs::read_to_string(work.join(format!("contract/{prog}.args")))
            .unwrap_or_else(|e| panic!("{name} never ran ({e}):\n{}", tail(&text, 60)));
        assert!(!args.trim().is_empty(), "{name}");
    }
    let cvo = std::fs::read_to_string(work.join("contract/cluster-version-operator.args")).unwrap();
    assert!(
        cvo.contains(&format!("--release-image={}", bl.payload.release_image())),
        "{cvo}"
    );
    let mco = std::fs::read_to_string(work.join("contract/machine-config-operator.args")).unwrap();
    assert!(mco.contains("uid 0"), "{mco}");

    // The outputs, where bootkube.sh copies them.
    let host_file = |path: &str| -> Vec<u8> {
        let out = bl.host.enter("cat").arg(path).output().unwrap();
        assert!(
            out.status.success(),
            "{path}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    };
    for (path, has) in [
        (
            "/etc/kubernetes/bootstrap-configs/kube-apiserver-config.yaml",
            "KubeAPIServerConfig",
        ),
        (
            "/etc/kubernetes/bootstrap-configs/kube-controller-manager-config.yaml",
            "KubeControllerManagerConfig",
        ),
        (
            "/etc/kubernetes/bootstrap-configs/cluster-policy-controller-config.yaml",
            "ClusterPolicyControllerConfig",
        ),
        (
            "/etc/kubernetes/bootstrap-configs/kube-scheduler-config.yaml",
            "KubeSchedulerConfiguration",
        ),
        (
            "/etc/kubernetes/manifests/etcd-member-pod.yaml",
            "etcd-bootstrap-member",
        ),
        (
            "/etc/kubernetes/manifests/machineconfigoperator-bootstrap-pod.yaml",
            "bootstrap-machine-config-operator",
        ),
        ("/etc/kubernetes/manifests/keepalived.yaml", "keepalived"),
        (
            "/etc/kubernetes/static-pod-resources/keepalived/keepalived.conf.tmpl",
            "vrrp_instance",
        ),
        (
            "/etc/mcc/bootstrap/machineconfigpool-master.yaml",
            "MachineConfigPool",
        ),
        ("/etc/mcc/bootstrap/cluster-config.yaml", "install-config"),
        (
            "/opt/openshift/bootstrap-manifests/kube-apiserver-pod.yaml",
            "bootstrap-kube-apiserver",
        ),
        (
            "/opt/openshift/bootstrap-manifests/cluster-version-operator-pod.yaml",
            "bootstrap-cluster-version-operator",
        ),
        (
            "/opt/openshift/bootstrap-manifests/cloud-credential-operator-pod.yaml",
            "cloud-credential-operator",
        ),
        (
            "/opt/openshift/manifests/cluster-ingress-00-namespace.yaml",
            "openshift-ingress-operator",
        ),
        (
            "/opt/openshift/manifests/authorization.openshift.io_rolebindingrestrictions.yaml",
            "rolebindingrestrictions",
        ),
        (
            "/opt/openshift/manifests/machineconfigcontroller-controllerconfig.yaml",
            "ControllerConfig",
        ),
        ("/opt/openshift/tls/service-account.pub", "contract"),
    ] {
        let got = String::from_utf8_lossy(&host_file(path)).into_owned();
        assert!(got.contains(has), "{path}: {got}");
    }
    assert!(!host_file("/etc/kubernetes/static-pod-resources/etcd-member/ca.crt").is_empty());
    assert_eq!(
        host_file("/etc/ssl/mcs/tls.crt"),
        host_file("/opt/openshift/tls/machine-config-server.crt")
    );
    assert_eq!(
        host_file("/etc/mcs/kubeconfig"),
        host_file("/opt/openshift/auth/kubeconfig-kubelet")
    );
    assert_eq!(
        host_file("/etc/kubernetes/kubeconfig"),
        host_file("/opt/openshift/auth/kubeconfig-loopback")
    );
    // An OpenShift payload's machine-config server is the MCO's static pod:
    // okd-install starts none of its own.
    assert!(
        !text.contains("the bootstrap machine-config server listens"),
        "{}",
        tail(&text, 40)
    );

    // podman pulled the images by digest through the mirror.
    let reg_log = bl.registry_log();
    for name in ["cluster-etcd-operator", "machine-config-operator"] {
        let d = &bl
            .payload
            .components
            .iter()
            .find(|(n, _)| n == name)
            .unwrap()
            .1;
        assert!(
            reg_log.contains(&format!("/v2/openshift/okd-content/manifests/{d}")),
            "{name} not pulled through the mirror:\n{}",
            tail(&reg_log, 20)
        );
    }
    drop(bl);
}
