//! okd-cluster-bootstrap (`crates/node/cluster-bootstrap`, issue #20
//! item 4) against the real etcd and kube-apiserver of the kit
//! (`tests/kube`), with the PKI of okd-install's `bootstrap.ign` laid down
//! by the real Ignition: the asset directory holds that Ignition's `tls/`
//! and `auth/kubeconfig-loopback`, and manifests written here.
//!
//! `start` runs on a thread of its own inside the control plane's network
//! namespace (setns(2), a current-thread runtime), so it reaches
//! `https://localhost:6443` as on the bootstrap node. The harness has no
//! kubelet or scheduler: the required pods are created directly and their
//! status written through the status subresource, as a kubelet would.

mod common;

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::time::Duration;

use common::kube::{ControlPlane, With, cluster_dir, in_netns};
use okd_cluster_bootstrap::{Connect, Error, Options, PodState, RequiredPod, Step};

/// A log that keeps what the current thread's `tracing` events say.
#[derive(Clone, Default)]
struct Captured(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
    /// A subscriber writing into this log at level `debug` and above.
    fn subscriber(&self) -> impl tracing::Subscriber + Send + Sync {
        let me = self.clone();
        tracing_subscriber::fmt()
            .with_env_filter("okd_cluster_bootstrap=debug")
            .with_ansi(false)
            .with_writer(move || me.clone())
            .finish()
    }
}

fn logging() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter("okd_cluster_bootstrap=info")
        .with_test_writer()
        .try_init();
}

/// An asset directory below `scratch` with the Ignition's `tls/` and
/// `auth/kubeconfig-loopback`, a static pod manifest, and `manifests`
/// (name → text); plus options pointing the node's directories into
/// `scratch/etc-kubernetes`.
fn assets(cp: &ControlPlane, scratch: &Path, manifests: &[(&str, &str)]) -> Options {
    let a = scratch.join("assets");
    std::fs::create_dir_all(a.join("tls")).unwrap();
    for e in std::fs::read_dir(cp.root.join("opt/openshift/tls")).unwrap() {
        let p = e.unwrap().path();
        if p.is_file() {
            std::fs::copy(&p, a.join("tls").join(p.file_name().unwrap())).unwrap();
        }
    }
    std::fs::create_dir_all(a.join("auth")).unwrap();
    std::fs::copy(
        cp.auth("kubeconfig-loopback"),
        a.join("auth/kubeconfig-loopback"),
    )
    .unwrap();
    std::fs::create_dir_all(a.join("bootstrap-manifests")).unwrap();
    std::fs::write(
        a.join("bootstrap-manifests/kube-apiserver-pod.yaml"),
        "apiVersion: v1\nkind: Pod\nmetadata: {name: bootstrap-kube-apiserver, namespace: kube-system}\n",
    )
    .unwrap();
    std::fs::create_dir_all(a.join("manifests")).unwrap();
    for (name, text) in manifests {
        std::fs::write(a.join("manifests").join(name), text).unwrap();
    }
    let mut o = Options::new(&a);
    let etc = scratch.join("etc-kubernetes");
    o.pod_manifest_dir = etc.join("manifests");
    o.bootstrap_secrets_dir = etc.join("bootstrap-secrets");
    o.required_pods = Vec::new();
    o
}

const CRD: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.okd.io
spec:
  group: example.okd.io
  scope: Namespaced
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
          status:
            type: object
            properties:
              phase: {type: string}
";

/// The first test's manifests: the custom resources sort before their
/// CRD, the namespace and its ConfigMap share a file.
const MANIFESTS: &[(&str, &str)] = &[
    (
        "00-widget.yaml",
        "apiVersion: example.okd.io/v1\nkind: Widget\nmetadata: {name: early, namespace: cb-test}\nspec: {size: 3}\n",
    ),
    (
        "01-widget-with-status.yaml",
        "apiVersion: example.okd.io/v1\nkind: Widget\nmetadata: {name: reported, namespace: cb-test}\nspec: {size: 1}\nstatus: {phase: Ready}\n",
    ),
    ("10-crd.yaml", CRD),
    (
        "20-namespace-and-configmap.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: cb-test}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: cb-test}\ndata: {mode: bootstrap}\n",
    ),
    (
        "30-secret.yaml",
        "apiVersion: v1\nkind: Secret\nmetadata: {name: credentials, namespace: cb-test}\ntype: Opaque\nstringData: {password: not-logged-anywhere}\n",
    ),
    (
        "40-existing.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: already-there, namespace: default}\ndata: {owner: manifest}\n",
    ),
    // `status` on a kind without a status subresource: the write gets 404,
    // which library-go accepts.
    (
        "50-no-status-subresource.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: with-status, namespace: default}\ndata: {a: b}\nstatus: {phase: Ready}\n",
    ),
];

/// `kind/name` in `ns` ("" for cluster scope) as kubectl names them, and
/// a jsonpath of it.
fn get(cp: &ControlPlane, ns: &str, what: &str, path: &str) -> String {
    let mut args = vec!["get", what, "-o"];
    let jp = format!("jsonpath={path}");
    args.push(&jp);
    if !ns.is_empty() {
        args.extend(["-n", ns]);
    }
    cp.admin(&args)
}

/// Every object of [`MANIFESTS`] and the events, with its resourceVersion.
fn versions(cp: &ControlPlane) -> Vec<(String, String)> {
    [
        ("cb-test", "widgets.example.okd.io/early"),
        ("cb-test", "widgets.example.okd.io/reported"),
        (
            "",
            "customresourcedefinitions.apiextensions.k8s.io/widgets.example.okd.io",
        ),
        ("", "namespace/cb-test"),
        ("cb-test", "configmap/settings"),
        ("cb-test", "secret/credentials"),
        ("default", "configmap/already-there"),
        ("default", "configmap/with-status"),
        ("kube-system", "event/bootstrap-success"),
        ("kube-system", "event/bootstrap-finished"),
    ]
    .iter()
    .map(|(ns, w)| (w.to_string(), get(cp, ns, w, "{.metadata.resourceVersion}")))
    .collect()
}

/// Writes the status of pod `kube-system/<name>` as a kubelet would.
async fn set_pod_status(client: kube::Client, name: &str, phase: &str, ready: bool) {
    use k8s_openapi::api::core::v1::Pod;
    use kube::api::{Api, Patch, PatchParams};
    let api: Api<Pod> = Api::namespaced(client, "kube-system");
    let status = serde_json::json!({"status": {
        "phase": phase,
        "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}],
    }});
    api.patch_status(name, &PatchParams::default(), &Patch::Merge(&status))
        .await
        .unwrap();
}

/// A pod in `kube-system` (no scheduler, no kubelet: it stays Pending
/// until its status is written).
fn create_pod(cp: &ControlPlane, name: &str) {
    cp.apply_yaml(&format!(
        "apiVersion: v1\nkind: ServiceAccount\nmetadata: {{name: default, namespace: kube-system}}\n---\n\
         apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: kube-system}}\n\
         spec:\n  automountServiceAccountToken: false\n  containers:\n  - {{name: c, image: example.invalid/c:1}}\n"
    ));
}

#[test]
fn creates_every_manifest_then_resumes_changing_nothing() {
    logging();
    let dir = cluster_dir();
    let scratch = tempfile::tempdir().unwrap();
    let Some(cp) = ControlPlane::start(dir.path(), scratch.path(), With::ApiServer) else {
        return;
    };
    let mut opts = assets(&cp, scratch.path(), MANIFESTS);
    cp.admin(&[
        "create",
        "configmap",
        "already-there",
        "-n",
        "default",
        "--from-literal=owner=test",
    ]);
    // The required pod exists, Pending; it becomes Running and Ready while
    // start waits. Both clause forms.
    create_pod(&cp, "kube-apiserver-bootstrap-node");
    create_pod(&cp, "kube-scheduler-bootstrap-node");
    opts.required_pods = RequiredPod::parse(&[
        "kube-system/kube-apiserver",
        "scheduler:kube-system/openshift-kube-scheduler|kube-system/kube-scheduler",
    ])
    .unwrap();
    opts.pods_timeout = Duration::from_secs(60);
    opts.assets_timeout = Duration::from_secs(120);
    let kc = cp.auth("kubeconfig-loopback");
    let o = opts.clone();
    let log = Captured::default();
    let sub = log.subscriber();
    let secrets_dir = opts.bootstrap_secrets_dir.clone();
    let pod_file = opts.pod_manifest_dir.join("kube-apiserver-pod.yaml");
    let (report, seen) = in_netns(&cp.ns, move || async move {
        // The runtime is this thread's: every task of start logs here.
        let _log = tracing::subscriber::set_default(sub);
        let client = okd_cluster::Cluster::from_kubeconfig(&kc)
            .await
            .unwrap()
            .client();
        let kubelet = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(2)).await;
            // The node's files while the temporary control plane runs
            // (the teardown removes them at the end).
            let kc = secrets_dir.join("kubeconfig");
            let seen = (
                std::fs::read(&kc).ok(),
                std::fs::metadata(&kc)
                    .map(|m| m.permissions().mode() & 0o777)
                    .ok(),
                secrets_dir.join("service-account.key").is_file(),
                pod_file.is_file(),
            );
            set_pod_status(
                client.clone(),
                "kube-apiserver-bootstrap-node",
                "Running",
                false,
            )
            .await;
            tokio::time::sleep(Duration::from_secs(2)).await;
            set_pod_status(
                client.clone(),
                "kube-apiserver-bootstrap-node",
                "Running",
                true,
            )
            .await;
            set_pod_status(client, "kube-scheduler-bootstrap-node", "Running", true).await;
            seen
        });
        let r = okd_cluster_bootstrap::start(&o).await;
        let seen = kubelet.await.unwrap();
        r.map(|r| (r, seen))
    })
    .unwrap_or_else(|e| panic!("{e}"));

    assert_eq!(
        report.steps,
        [
            Step::LayDown,
            Step::WaitApi,
            Step::CreateManifests,
            Step::WaitPods,
            Step::BootstrapSuccess,
            Step::WaitManifests,
            Step::BootstrapFinished,
            Step::Teardown
        ]
    );
    assert_eq!(
        report.pods,
        [
            ("kube-system/kube-apiserver".to_string(), PodState::Ready),
            ("scheduler".to_string(), PodState::Ready)
        ]
    );
    let m = &report.manifests;
    assert_eq!(m.existed, ["40-existing.yaml"], "{m:?}");
    assert_eq!(m.created.len(), 7, "{m:?}");
    let at = |l: &str| m.created.iter().position(|c| c == l).unwrap();
    // The CRD first, its objects once it was Established; the namespace
    // before what lives in it.
    assert_eq!(at("10-crd.yaml"), 0, "{m:?}");
    assert!(at("00-widget.yaml") > at("10-crd.yaml"));
    assert!(at("30-secret.yaml") > at("20-namespace-and-configmap.yaml (document 1 of 2)"));
    assert_eq!(m.status_written, ["01-widget-with-status.yaml"], "{m:?}");
    assert!(m.failures.is_empty() && m.remaining == 0, "{m:?}");
    assert_eq!(
        report.events,
        [("bootstrap-success", false), ("bootstrap-finished", false)]
    );

    // The log says what cluster-bootstrap's says, and no secret.
    let text = log.text();
    eprintln!("{text}");
    for line in [
        "Pod Status:kube-system/kube-apiserver\tPending",
        "Pod Status:kube-system/kube-apiserver\tRunningNotReady",
        "Pod Status:kube-system/kube-apiserver\tReady",
        "Pod Status:               scheduler\tReady",
        "Created \"10-crd.yaml\" CustomResourceDefinition widgets.example.okd.io",
        "00-widget.yaml: Widget cb-test/early: crd failed: waiting for CustomResourceDefinition widgets.example.okd.io to be Established",
        "Skipped \"40-existing.yaml\" ConfigMap default/already-there as it already exists",
        "Updated status for \"01-widget-with-status.yaml\" Widget cb-test/reported",
        "Sending bootstrap-success event.",
        "Sending bootstrap-finished event.",
        "ConfigMap default/with-status has no status subresource; its status is not written",
    ] {
        assert!(text.contains(line), "{line:?} not in the log");
    }
    for secret in [
        "not-logged-anywhere",
        "bm90LWxvZ2dlZC1hbnl3aGVyZQ",
        "BEGIN RSA PRIVATE KEY",
        "client-key-data",
    ] {
        assert!(!text.contains(secret), "{secret:?} in the log");
    }

    // Everything is in the API as written.
    assert_eq!(get(&cp, "cb-test", "widget/early", "{.spec.size}"), "3");
    assert_eq!(
        get(&cp, "cb-test", "widget/reported", "{.status.phase}"),
        "Ready"
    );
    assert_eq!(
        get(&cp, "cb-test", "configmap/settings", "{.data.mode}"),
        "bootstrap"
    );
    assert_eq!(
        get(&cp, "cb-test", "secret/credentials", "{.data.password}"),
        "bm90LWxvZ2dlZC1hbnl3aGVyZQ=="
    );
    assert_eq!(
        get(&cp, "default", "configmap/already-there", "{.data.owner}"),
        "test"
    );
    for e in ["bootstrap-success", "bootstrap-finished"] {
        assert_eq!(
            get(&cp, "kube-system", &format!("event/{e}"), "{.message}"),
            "Required control plane pods have been created"
        );
    }
    // The node's files while it ran, and the teardown at the end.
    let (kc, mode, sa_key, pod) = seen;
    assert_eq!(
        kc,
        Some(std::fs::read(cp.auth("kubeconfig-loopback")).unwrap())
    );
    assert_eq!(mode, Some(0o600));
    assert!(
        sa_key && pod,
        "the secrets and the static pod were laid down"
    );
    assert_eq!(
        report.laid_down.static_pods,
        [opts.pod_manifest_dir.join("kube-apiserver-pod.yaml")]
    );
    assert!(
        !opts.bootstrap_secrets_dir.exists(),
        "the teardown removes the secrets"
    );
    assert!(
        !opts
            .pod_manifest_dir
            .join("kube-apiserver-pod.yaml")
            .exists(),
        "the teardown removes the laid-down static pods"
    );

    // A second run (bootkube restarted): nothing changes.
    let before = versions(&cp);
    let o = opts.clone();
    let again = in_netns(&cp.ns, move || async move {
        okd_cluster_bootstrap::start(&o).await
    })
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(versions(&cp), before);
    let m = &again.manifests;
    assert!(m.created.is_empty() && m.status_written.is_empty(), "{m:?}");
    assert_eq!(m.existed.len(), 8, "{m:?}");
    assert_eq!(
        again.events,
        [("bootstrap-success", true), ("bootstrap-finished", true)]
    );
    assert_eq!(again.laid_down, report.laid_down);
}

#[test]
fn refused_manifests_and_missing_pods_are_named() {
    logging();
    let dir = cluster_dir();
    let scratch = tempfile::tempdir().unwrap();
    let Some(cp) = ControlPlane::start(dir.path(), scratch.path(), With::ApiServer) else {
        return;
    };
    let mut opts = assets(
        &cp,
        scratch.path(),
        &[
            (
                "10-good.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: good, namespace: default}\n",
            ),
            (
                "20-bad.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: Bad_Name, namespace: default}\n",
            ),
            (
                "30-unserved.yaml",
                "apiVersion: example.okd.io/v1\nkind: Gadget\nmetadata: {name: g, namespace: default}\n",
            ),
        ],
    );

    // A required pod that never appears.
    opts.required_pods = RequiredPod::parse(&["kube-system/no-such-pod"]).unwrap();
    opts.pods_timeout = Duration::from_secs(3);
    let o = opts.clone();
    let err = in_netns(&cp.ns, move || async move {
        okd_cluster_bootstrap::start(&o).await
    })
    .unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, Error::PodsTimeout { .. }), "{text}");
    assert_eq!(
        text,
        "timed out after 3s waiting for the required pods to be Running and Ready: \
         kube-system/no-such-pod DoesNotExist"
    );

    // No pods required: the manifests time out, each named with the API's
    // message; the good one is created, bootstrap-finished is not sent.
    opts.required_pods = Vec::new();
    opts.assets_timeout = Duration::from_secs(5);
    let mut o = opts.clone();
    let kc = cp.auth("kubeconfig-loopback");
    // This time with a client of the caller's.
    let err = in_netns(&cp.ns, move || async move {
        let c = okd_cluster::Cluster::from_kubeconfig(&kc).await.unwrap();
        o.connect = Connect::Client(c.client());
        okd_cluster_bootstrap::start(&o).await
    })
    .unwrap_err();
    let text = err.to_string();
    eprintln!("{text}");
    let Error::AssetsTimeout {
        remaining,
        failures,
        ..
    } = &err
    else {
        panic!("{text}");
    };
    assert_eq!(*remaining, 2, "{text}");
    assert_eq!(failures.len(), 2, "{text}");
    let bad = &failures[0];
    assert_eq!(
        (
            bad.file.as_str(),
            bad.object.as_str(),
            bad.step,
            bad.invalid
        ),
        ("20-bad.yaml", "ConfigMap default/Bad_Name", "create", true)
    );
    assert!(
        bad.message
            .starts_with("HTTP 422 Invalid: ConfigMap \"Bad_Name\" is invalid: metadata.name"),
        "{text}"
    );
    assert!(text.contains("a lowercase RFC 1123 subdomain"), "{text}");
    assert!(
        text.starts_with("timed out after 5s creating the manifests; 2 not created:\n  20-bad.yaml: ConfigMap default/Bad_Name: create failed: HTTP 422 Invalid:"),
        "{text}"
    );
    let unserved = &failures[1];
    assert_eq!(
        (unserved.file.as_str(), unserved.step),
        ("30-unserved.yaml", "discovery")
    );
    assert!(
        unserved.message.contains("example.okd.io/v1, Kind=Gadget"),
        "{text}"
    );
    assert_eq!(
        get(&cp, "default", "configmap/good", "{.metadata.name}"),
        "good"
    );
    get(
        &cp,
        "kube-system",
        "event/bootstrap-success",
        "{.metadata.name}",
    );
    let out = cp.kubectl(
        &cp.dir.join("auth/kubeconfig"),
        &["get", "event", "-n", "kube-system", "bootstrap-finished"],
    );
    assert!(!out.status.success(), "bootstrap-finished was sent");
}

/// Step 6 on an HA install ([CB] `ha_checker.go`): cluster-bootstrap
/// waits until the kube-apiserver, scheduler and controller-manager
/// operators each report two masters at a revision, then for the teardown
/// delay; one master short, it times out naming the condition.
#[test]
fn ha_checks_wait_for_two_masters_of_each_component() {
    use okd_cluster_bootstrap::ha;
    let dir = cluster_dir();
    let scratch = tempfile::tempdir().unwrap();
    let Some(cp) = ControlPlane::start(dir.path(), scratch.path(), With::ApiServer) else {
        return;
    };
    let crd = |c: &ha::Component| {
        format!(
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {{name: {p}.operator.openshift.io}}\nspec:\n  group: operator.openshift.io\n  scope: Cluster\n  names: {{kind: {k}, plural: {p}, singular: {s}, listKind: {k}List}}\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema: {{type: object, x-kubernetes-preserve-unknown-fields: true}}\n",
            p = c.plural,
            k = c.kind,
            s = c.kind.to_lowercase()
        )
    };
    let object = |c: &ha::Component, second: i64| {
        format!(
            "apiVersion: operator.openshift.io/v1\nkind: {}\nmetadata: {{name: cluster}}\nstatus:\n  nodeStatuses:\n  - {{nodeName: master-0, currentRevision: 1, targetRevision: 1}}\n  - {{nodeName: master-1, currentRevision: {second}, targetRevision: 1}}\n",
            c.kind
        )
    };
    let mut files: Vec<(String, String)> = Vec::new();
    for c in &ha::COMPONENTS {
        files.push((format!("10-{}-crd.yaml", c.plural), crd(c)));
        // The scheduler runs on one master only.
        let second = i64::from(c.plural != "kubeschedulers");
        files.push((format!("20-{}.yaml", c.plural), object(c, second)));
    }
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let mut opts = assets(&cp, scratch.path(), &refs);
    opts.ha = Some(ha::Source::Operators);
    opts.ha_timeout = Duration::from_secs(12);
    opts.teardown_delay = Duration::from_secs(1);
    opts.assets_timeout = Duration::from_secs(60);
    let o = opts.clone();
    let err = in_netns(&cp.ns, move || async move {
        okd_cluster_bootstrap::start(&o).await
    })
    .unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, Error::HaTimeout(_)), "{text}");
    assert!(
        text.contains("scheduler should be available on at least two master nodes")
            && !text.contains("API should be available"),
        "{text}"
    );

    // The second master's scheduler rolled out: the checks pass.
    let fixed = scratch.path().join("kubeschedulers.yaml");
    std::fs::write(&fixed, object(&ha::COMPONENTS[1], 1)).unwrap();
    cp.admin(&["apply", "-f", fixed.to_str().unwrap()]);
    let o = opts.clone();
    let report = in_netns(&cp.ns, move || async move {
        okd_cluster_bootstrap::start(&o).await
    })
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        report.steps,
        [
            Step::LayDown,
            Step::WaitApi,
            Step::CreateManifests,
            Step::WaitPods,
            Step::HaChecks,
            Step::BootstrapSuccess,
            Step::WaitManifests,
            Step::BootstrapFinished,
            Step::Teardown
        ]
    );
}
