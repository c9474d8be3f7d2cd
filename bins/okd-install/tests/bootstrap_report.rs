//! `okd-install bootstrap report-progress` (progress.service) against the
//! kit's real API server: it waits while bootkube is not done, then for a
//! highly available API (two kube-apiservers rolled out, as the
//! kube-apiserver operator's status shows them), and only then creates
//! ConfigMap `kube-system/bootstrap` with `status: complete`, recording
//! both stages in `progress.json`.

mod common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use common::kube::{ControlPlane, With, in_ns, tail};

/// The OpenShift kinds report-progress reads, as permissive CRDs without a
/// status subresource (so a test can write `status` on create).
fn crd(group: &str, kind: &str, plural: &str) -> String {
    format!(
        "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: {plural}.{group}
spec:
  group: {group}
  scope: Cluster
  names: {{kind: {kind}, plural: {plural}, singular: {lower}, listKind: {kind}List}}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
",
        lower = kind.to_lowercase()
    )
}

fn apply(cp: &ControlPlane, scratch: &std::path::Path, name: &str, yaml: &str) {
    let f = scratch.join(format!("{name}.yaml"));
    std::fs::write(&f, yaml).unwrap();
    cp.admin(&["apply", "-f", f.to_str().unwrap()]);
}

fn phases(records: &std::path::Path) -> Vec<String> {
    let text = std::fs::read_to_string(records.join("progress.json")).unwrap_or_default();
    okd_service_record::parse_entries(text.as_bytes())
        .unwrap_or_default()
        .iter()
        .map(|e| format!("{}|{}|{}", e.phase, e.stage, e.result))
        .collect()
}

fn has_bootstrap_configmap(cp: &ControlPlane) -> bool {
    let out = cp.kubectl(
        &cp.dir.join("auth/kubeconfig"),
        &[
            "get",
            "configmap",
            "-n",
            "kube-system",
            "bootstrap",
            "-o",
            "jsonpath={.data.status}",
        ],
    );
    out.status.success() && out.stdout == b"complete"
}

#[test]
fn report_progress_waits_for_bootkube_and_a_highly_available_api() {
    let dir = common::kube::cluster_dir();
    let scratch = tempfile::tempdir().unwrap();
    let Some(cp) = ControlPlane::start(dir.path(), scratch.path(), With::ApiServer) else {
        return;
    };
    let s = scratch.path();
    // The node's asset directory as bootstrap.ign lays it down (only what
    // report-progress reads).
    let work = s.join("opt-openshift");
    std::fs::create_dir_all(work.join("auth")).unwrap();
    std::fs::copy(
        cp.dir.join("auth/kubeconfig"),
        work.join("auth/kubeconfig-loopback"),
    )
    .unwrap();
    let records = s.join("records");
    let log = s.join("report.log");
    let log_file = std::fs::File::create(&log).unwrap();
    let mut child = in_ns(&cp.ns, env!("CARGO_BIN_EXE_okd-install"))
        .args(["bootstrap", "report-progress", "--work"])
        .arg(&work)
        .arg("--records")
        .arg(&records)
        .arg("--kubeconfig")
        .arg(cp.dir.join("auth/kubeconfig"))
        .stdin(Stdio::null())
        .stdout(log_file.try_clone().unwrap())
        .stderr(log_file)
        .spawn()
        .unwrap();
    struct Kill<'a>(&'a mut std::process::Child);
    impl Drop for Kill<'_> {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let child = Kill(&mut child);
    let wait_log = |what: &str| {
        let start = Instant::now();
        loop {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            if text.contains(what) {
                return;
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "no {what:?}:\n{}",
                tail(&text, 20)
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    };

    // bootkube not done: the first stage stays open, nothing is reported.
    wait_log("Waiting for bootstrap to complete");
    std::thread::sleep(Duration::from_secs(6));
    assert_eq!(
        phases(&records),
        [
            "service start||",
            "stage start|wait-for-bootstrap-complete|"
        ]
    );
    assert!(!has_bootstrap_configmap(&cp));

    // bootkube done, the control plane highly available but only one
    // kube-apiserver rolled out: still waiting.
    std::fs::write(work.join(".bootkube.done"), "").unwrap();
    apply(
        &cp,
        s,
        "crd-infra",
        &crd("config.openshift.io", "Infrastructure", "infrastructures"),
    );
    apply(
        &cp,
        s,
        "crd-kas",
        &crd("operator.openshift.io", "KubeAPIServer", "kubeapiservers"),
    );
    std::thread::sleep(Duration::from_secs(2));
    apply(
        &cp,
        s,
        "infra",
        "apiVersion: config.openshift.io/v1\nkind: Infrastructure\nmetadata: {name: cluster}\nstatus: {controlPlaneTopology: HighlyAvailable}\n",
    );
    apply(
        &cp,
        s,
        "kas-1",
        "apiVersion: operator.openshift.io/v1\nkind: KubeAPIServer\nmetadata: {name: cluster}\nstatus:\n  nodeStatuses:\n  - {nodeName: master-0, currentRevision: 2}\n  - {nodeName: master-1, currentRevision: 0}\n",
    );
    wait_log("1 of 2 kube-apiservers rolled out");
    assert!(!has_bootstrap_configmap(&cp));

    // The second one rolled out: reported.
    apply(
        &cp,
        s,
        "kas-2",
        "apiVersion: operator.openshift.io/v1\nkind: KubeAPIServer\nmetadata: {name: cluster}\nstatus:\n  nodeStatuses:\n  - {nodeName: master-0, currentRevision: 2}\n  - {nodeName: master-1, currentRevision: 1}\n",
    );
    let start = Instant::now();
    let status = loop {
        if let Some(st) = child.0.try_wait().unwrap() {
            break st;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "report-progress did not finish:\n{}",
            tail(&std::fs::read_to_string(&log).unwrap_or_default(), 20)
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(status.success(), "{}", tail(&text, 20));
    assert!(
        text.contains("Got at least 2 nodes with successful revision rolled out"),
        "{text}"
    );
    assert!(has_bootstrap_configmap(&cp));
    assert_eq!(
        phases(&records),
        [
            "service start||",
            "stage start|wait-for-bootstrap-complete|",
            "stage end|wait-for-bootstrap-complete|success",
            "stage start|report-bootstrap-complete|",
            "stage end|report-bootstrap-complete|success",
            "service end||success",
        ]
    );
    drop(child);
}

/// bootkube's `cvo-overrides` stage against the real API: the
/// ClusterVersion's `spec.overrides` (the installer's list marking every
/// manifest unmanaged) are replaced by the install's
/// `original_cvo_overrides.patch`; before the ClusterVersion exists it
/// retries.
#[test]
fn cvo_overrides_restore_the_original_overrides() {
    let dir = common::kube::cluster_dir();
    let scratch = tempfile::tempdir().unwrap();
    let Some(cp) = ControlPlane::start(dir.path(), scratch.path(), With::ApiServer) else {
        return;
    };
    let s = scratch.path();
    apply(
        &cp,
        s,
        "crd-cv",
        &crd("config.openshift.io", "ClusterVersion", "clusterversions"),
    );
    let patch = s.join("original_cvo_overrides.patch");
    std::fs::write(
        &patch,
        r#"{"spec":{"overrides":[{"kind":"ConfigMap","group":"","namespace":"openshift-config","name":"user-kept","unmanaged":true}]}}"#,
    )
    .unwrap();
    // The loopback kubeconfig: a thread moved into the namespace does not
    // see `ip netns exec`'s /etc/hosts for api.<domain>.
    let kubeconfig = cp.auth("kubeconfig-loopback");
    let (p, k) = (patch.clone(), kubeconfig.clone());
    let restore = std::thread::spawn({
        let ns = cp.ns.clone();
        move || {
            common::kube::in_netns(&ns, move || async move {
                okd_bootstrap::restore_cvo_overrides(&p, &k, Duration::from_secs(1)).await
            })
        }
    });
    // Not there yet: it keeps trying.
    std::thread::sleep(Duration::from_secs(3));
    assert!(!restore.is_finished());
    apply(
        &cp,
        s,
        "cv",
        "apiVersion: config.openshift.io/v1\nkind: ClusterVersion\nmetadata: {name: version}\nspec:\n  clusterID: 5a5c5d5e-0000-4000-8000-000000000001\n  overrides:\n  - {kind: Secret, group: '', namespace: kube-system, name: installer-made, unmanaged: true}\n  - {kind: ConfigMap, group: '', namespace: openshift-config, name: user-kept, unmanaged: true}\n",
    );
    let start = Instant::now();
    while !restore.is_finished() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "cvo-overrides did not finish"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    restore.join().unwrap().unwrap();
    let got = cp.admin(&[
        "get",
        "clusterversion",
        "version",
        "-o",
        "jsonpath={.spec.overrides[*].name}",
    ]);
    assert_eq!(got, "user-kept");
    // No patch file: nothing to do.
    let none = s.join("missing.patch");
    let ns = cp.ns.clone();
    common::kube::in_netns(&ns, move || async move {
        okd_bootstrap::restore_cvo_overrides(&none, &kubeconfig, Duration::from_secs(1)).await
    })
    .unwrap();
}
