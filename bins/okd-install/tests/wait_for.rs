//! `okd-install wait-for bootstrap-complete` / `install-complete` against
//! the real kube-apiserver of the kit (issue #11 item 4): the tests create
//! what the cluster would (the `kube-system/bootstrap` ConfigMap, the Etcd
//! `EtcdBootstrapMemberRemoved` condition, ClusterVersion and
//! ClusterOperator status) and check openshift-install's messages and exit
//! codes (openshift/installer `cmd/openshift-install/waitfor.go`), the timeouts (shortened with
//! `--timeouts`), and that a wait survives an API server restart without a false success.
//!
//! The CustomResourceDefinitions here declare only the kinds, scopes and
//! the status subresource of openshift/api's ClusterVersion,
//! ClusterOperator (config.openshift.io/v1) and Etcd (operator.openshift.io/v1),
//! with open schemas: the waits read `status.conditions` only.

mod common;

use std::io::Read as _;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::kube::{ControlPlane, With, in_ns, tail};

/// An open-schema CRD with a status subresource for a cluster-scoped kind.
fn crd(group: &str, kind: &str, plural: &str) -> String {
    format!(
        "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {{name: {plural}.{group}}}
spec:
  group: {group}
  scope: Cluster
  names: {{kind: {kind}, plural: {plural}, singular: {singular}, listKind: {kind}List}}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {{status: {{}}}}
    schema: {{openAPIV3Schema: {{type: object, x-kubernetes-preserve-unknown-fields: true}}}}
---
",
        singular = kind.to_lowercase()
    )
}

/// The three kinds, and the namespace of the router CA.
fn crds() -> String {
    crd("config.openshift.io", "ClusterVersion", "clusterversions")
        + &crd("config.openshift.io", "ClusterOperator", "clusteroperators")
        + &crd("operator.openshift.io", "Etcd", "etcds")
        + "apiVersion: v1\nkind: Namespace\nmetadata: {name: openshift-config-managed}\n"
}

fn rfc3339(ago: Duration) -> String {
    (time::OffsetDateTime::now_utc() - ago)
        .replace_nanosecond(0)
        .unwrap()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap()
}

/// Creates (or replaces) a cluster-scoped object and writes its status
/// through the status subresource.
fn put_status(cp: &ControlPlane, kind: &str, api: &str, name: &str, conditions: serde_json::Value) {
    let obj = serde_json::json!({"apiVersion": api, "kind": kind, "metadata": {"name": name}, "spec": {}});
    let f = cp.scratch.join(format!("{kind}-{name}.json"));
    std::fs::write(&f, obj.to_string()).unwrap();
    let kc = cp.dir.join("auth/kubeconfig");
    let _ = cp.kubectl(&kc, &["create", "-f", f.to_str().unwrap()]);
    let patch = serde_json::json!({"status": {"conditions": conditions}}).to_string();
    let resource = format!("{}/{name}", kind.to_lowercase());
    cp.admin(&[
        "patch",
        &resource,
        "--subresource=status",
        "--type=merge",
        "-p",
        &patch,
    ]);
}

fn cond(t: &str, s: &str, reason: &str, msg: &str, ago: Duration) -> serde_json::Value {
    serde_json::json!({"type": t, "status": s, "reason": reason, "message": msg, "lastTransitionTime": rfc3339(ago)})
}

/// Runs `okd-install wait-for <what>` in namespace `ns` to the end.
fn wait_for(cp: &ControlPlane, ns: &str, what: &str, timeouts: &str) -> (i32, String) {
    let out = in_ns(ns, env!("CARGO_BIN_EXE_okd-install"))
        .args([
            "wait-for",
            what,
            "--log-level",
            "debug",
            "--timeouts",
            timeouts,
            "--dir",
        ])
        .arg(&cp.dir)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Starts `okd-install wait-for <what>` in the background; its stderr goes
/// to a file read by [`LogFile::text`].
fn start_wait(
    cp: &ControlPlane,
    what: &str,
    timeouts: &str,
) -> (okd_test_utils::ChildGuard, std::path::PathBuf) {
    let log = cp.scratch.join(format!("wait-{what}.log"));
    let child: Child = cp
        .okd(&[
            "wait-for",
            what,
            "--log-level",
            "debug",
            "--timeouts",
            timeouts,
        ])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    (okd_test_utils::ChildGuard(child), log)
}

fn read(p: &std::path::Path) -> String {
    let mut s = String::new();
    if let Ok(mut f) = std::fs::File::open(p) {
        let _ = f.read_to_string(&mut s);
    }
    s
}

fn wait_text(p: &std::path::Path, needle: &str, secs: u64) {
    let start = Instant::now();
    while !read(p).contains(needle) {
        assert!(
            start.elapsed() < Duration::from_secs(secs),
            "no {needle:?} after {secs} s:\n{}",
            read(p)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn bootstrap_complete_messages_timeouts_and_an_api_restart() {
    let dir = common::kube::cluster_dir();
    let scratch = tempfile::tempdir().unwrap();
    let Some(mut cp) = ControlPlane::start(dir.path(), scratch.path(), With::ApiServer) else {
        return;
    };
    cp.apply_yaml(&crds());

    // No API behind api.<domain>: the API wait times out (exit 5).
    let (void_ns, void_ip) = cp.add_node("void", 50);
    std::fs::write(
        std::path::PathBuf::from("/etc/netns")
            .join(&void_ns)
            .join("hosts"),
        format!(
            "127.0.0.1 localhost\n{void_ip} api.{d} api-int.{d}\n",
            d = cp.domain
        ),
    )
    .unwrap();
    let (code, log) = wait_for(&cp, &void_ns, "bootstrap-complete", "api=5s");
    assert_eq!(code, 5, "{log}");
    assert!(log.to_lowercase().contains("connection refused"), "{log}");
    assert!(
        !log.contains("level=error msg=failed with error"),
        "client noise:\n{log}"
    );
    for needle in [
        &"Waiting up to 5s (until ".to_string(),
        &format!("for the Kubernetes API at https://api.{}:6443...", cp.domain),
        &"Still waiting for the Kubernetes API: ".to_string(),
        &"Failed waiting for Kubernetes API. This error usually happens when there is a problem on the bootstrap host that prevents creating a temporary control plane.".to_string(),
        &"Use the following commands to gather logs from the cluster".to_string(),
        &"Bootstrap failed to complete: timed out waiting for the condition".to_string(),
    ] {
        assert!(log.contains(needle.as_str()), "missing {needle:?} in\n{log}");
    }

    // API up, no bootstrap ConfigMap: the bootstrap wait times out (exit 5)
    // after logging the ClusterOperator conditions.
    put_status(
        &cp,
        "ClusterOperator",
        "config.openshift.io/v1",
        "kube-apiserver",
        serde_json::json!([
            cond(
                "Degraded",
                "True",
                "StaticPodsDegraded",
                "pod kube-apiserver is not ready",
                Duration::from_secs(60)
            ),
            cond(
                "Available",
                "False",
                "StaticPodsAvailable",
                "0 nodes are active",
                Duration::from_secs(60)
            ),
            cond(
                "Progressing",
                "True",
                "NodeInstaller",
                "3 nodes are at revision 0",
                Duration::from_secs(60)
            ),
            cond(
                "Upgradeable",
                "True",
                "AsExpected",
                "",
                Duration::from_secs(60)
            ),
        ]),
    );
    let ns = cp.ns.clone();
    let (code, log) = wait_for(&cp, &ns, "bootstrap-complete", "bootstrap=4s");
    assert_eq!(code, 5, "{log}");
    for needle in [
        "level=info msg=API v1.32.4 up",
        "Waiting up to 4s (until ",
        "for bootstrapping to complete...",
        "Failed to wait for bootstrapping to complete. This error usually happens when there is a problem with control plane hosts that prevents the control plane operators from creating the control plane.",
        "level=error msg=Cluster operator kube-apiserver Degraded is True with StaticPodsDegraded: pod kube-apiserver is not ready",
        "level=error msg=Cluster operator kube-apiserver Available is False with StaticPodsAvailable: 0 nodes are active",
        "level=info msg=Cluster operator kube-apiserver Progressing is True with NodeInstaller: 3 nodes are at revision 0",
    ] {
        assert!(log.contains(needle), "missing {needle:?} in\n{log}");
    }
    assert!(
        !log.contains("Upgradeable"),
        "Upgradeable is not logged:\n{log}"
    );

    // serve beside it (machine-config server and status only): the master
    // fetches its config, and the progress says so.
    let serve_log = cp.scratch.join("serve.log");
    let mut serve = okd_test_utils::ChildGuard(
        cp.okd(&["serve", "--services", "mcs,status"])
            .stdout(std::fs::File::create(cp.scratch.join("serve.out")).unwrap())
            .stderr(std::fs::File::create(&serve_log).unwrap())
            .spawn()
            .unwrap(),
    );
    common::serve::wait_ready(&serve_log);
    let (master_ns, _) = cp.add_node("master", 103);
    let out = in_ns(&master_ns, "curl")
        .args([
            "-ksf",
            "--max-time",
            "10",
            "-o",
            "/dev/null",
            "-H",
            "Accept: application/vnd.coreos.ignition+json;version=3.2.0",
        ])
        .arg(format!("https://{}:22625/config/master", cp.addr))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "MCS fetch: {out:?}\n{}",
        read(&serve_log)
    );

    // The whole wait, across an API server restart.
    let (mut child, log) = start_wait(
        &cp,
        "bootstrap-complete",
        "bootstrap=3m,etcd=3m,progress=1s",
    );
    wait_text(&log, "for bootstrapping to complete...", 30);
    cp.report_bootstrap("progressing");
    wait_text(&log, "Bootstrap status: progressing", 30);
    cp.kill("kube-apiserver");
    std::thread::sleep(Duration::from_secs(3));
    cp.start_apiserver();
    cp.wait_ready();
    // The restart is no success.
    std::thread::sleep(Duration::from_secs(3));
    assert!(
        child.0.try_wait().unwrap().is_none(),
        "wait-for ended on a restart:\n{}",
        read(&log)
    );
    assert!(
        !read(&log).contains("Bootstrap etcd member"),
        "{}",
        read(&log)
    );
    cp.admin(&[
        "patch",
        "configmap",
        "bootstrap",
        "-n",
        "kube-system",
        "--type=merge",
        "-p",
        r#"{"data":{"status":"complete"}}"#,
    ]);
    wait_text(&log, "Bootstrap status: complete", 60);
    wait_text(
        &log,
        "Waiting for the bootstrap etcd member to be removed...",
        30,
    );
    put_status(
        &cp,
        "Etcd",
        "operator.openshift.io/v1",
        "cluster",
        serde_json::json!([
            cond(
                "EtcdBootstrapMemberRemoved",
                "False",
                "BootstrapMemberStillPresent",
                "",
                Duration::from_secs(1)
            ),
            cond(
                "EtcdMembersAvailable",
                "True",
                "AsExpected",
                "2 of 2 members are available, master is healthy",
                Duration::from_secs(1)
            ),
        ]),
    );
    wait_text(&log, "Progress: etcd: 2 of 2 members are available", 30);
    assert!(
        child.0.try_wait().unwrap().is_none(),
        "ended before the member was removed:\n{}",
        read(&log)
    );
    put_status(
        &cp,
        "Etcd",
        "operator.openshift.io/v1",
        "cluster",
        serde_json::json!([cond(
            "EtcdBootstrapMemberRemoved",
            "True",
            "BootstrapMemberRemoved",
            "",
            Duration::from_secs(1)
        ),]),
    );
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.0.try_wait().unwrap() {
            break s;
        }
        assert!(start.elapsed() < Duration::from_secs(30), "{}", read(&log));
        std::thread::sleep(Duration::from_millis(200));
    };
    let text = read(&log);
    assert!(status.success(), "{text}");
    let _ = serve.0.kill();
    for needle in [
        "Progress: hosts: bootstrap: nothing seen yet; master: Ignition served (master)",
        "worker1: nothing seen yet",
        "Bootstrap etcd member has been removed",
        "It is now safe to remove the bootstrap resources",
        "Time elapsed per stage:",
        "level=info msg=Time elapsed: ",
        "Progress: CSRs: 0 pending, 0 approved",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in\n{text}");
    }
    let _ = tail;
}

#[test]
fn install_complete_messages_exit_codes_and_router_ca() {
    let dir = common::kube::cluster_dir();
    let scratch = tempfile::tempdir().unwrap();
    let Some(cp) = ControlPlane::start(dir.path(), scratch.path(), With::ApiServer) else {
        return;
    };
    cp.apply_yaml(&crds());
    let ns = cp.ns.clone();

    // Still progressing: exit 6 with the last message.
    put_status(
        &cp,
        "ClusterVersion",
        "config.openshift.io/v1",
        "version",
        serde_json::json!([
            cond("Available", "False", "", "", Duration::from_secs(5)),
            cond("Failing", "False", "", "", Duration::from_secs(5)),
            cond(
                "Progressing",
                "True",
                "",
                "Working towards 4.19.0: 512 of 890 done (57% complete)",
                Duration::from_secs(5)
            ),
        ]),
    );
    let (code, log) = wait_for(&cp, &ns, "install-complete", "install=4s");
    assert_eq!(code, 6, "{log}");
    for needle in [
        &"Waiting up to 4s (until ".to_string(),
        &format!("for the cluster at https://api.{}:6443 to initialize...", cp.domain),
        &"Still waiting for the cluster to initialize: Working towards 4.19.0: 512 of 890 done (57% complete)".to_string(),
        &"Cluster initialization failed because one or more operators are not functioning properly.".to_string(),
        &"The 'wait-for install-complete' subcommand can then be used to continue the installation".to_string(),
        &"failed to initialize the cluster: Working towards 4.19.0: 512 of 890 done (57% complete)".to_string(),
    ] {
        assert!(log.contains(needle.as_str()), "missing {needle:?} in\n{log}");
    }

    // Initialized, but an operator keeps progressing: exit 7.
    put_status(
        &cp,
        "ClusterVersion",
        "config.openshift.io/v1",
        "version",
        serde_json::json!([
            cond(
                "Available",
                "True",
                "",
                "Done applying 4.19.0",
                Duration::from_secs(5)
            ),
            cond("Failing", "False", "", "", Duration::from_secs(5)),
            cond(
                "Progressing",
                "False",
                "",
                "Cluster version is 4.19.0",
                Duration::from_secs(5)
            ),
        ]),
    );
    let ca_dir = scratch.path().join("ingress-ca");
    std::fs::create_dir_all(&ca_dir).unwrap();
    let out = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=ingress-operator@1",
        ])
        .arg("-keyout")
        .arg(ca_dir.join("ca.key"))
        .arg("-out")
        .arg(ca_dir.join("ca.crt"))
        .output()
        .unwrap();
    assert!(out.status.success());
    cp.admin(&[
        "create",
        "configmap",
        "default-ingress-cert",
        "-n",
        "openshift-config-managed",
        &format!(
            "--from-file=ca-bundle.crt={}",
            ca_dir.join("ca.crt").display()
        ),
    ]);
    put_status(
        &cp,
        "ClusterOperator",
        "config.openshift.io/v1",
        "authentication",
        serde_json::json!([
            cond(
                "Progressing",
                "False",
                "AsExpected",
                "",
                Duration::from_secs(120)
            ),
            cond(
                "Available",
                "True",
                "AsExpected",
                "",
                Duration::from_secs(120)
            ),
        ]),
    );
    put_status(
        &cp,
        "ClusterOperator",
        "config.openshift.io/v1",
        "ingress",
        serde_json::json!([
            cond(
                "Progressing",
                "True",
                "Reconciling",
                "ingresscontroller default is progressing",
                Duration::from_secs(5)
            ),
            cond(
                "Available",
                "True",
                "AsExpected",
                "",
                Duration::from_secs(120)
            ),
        ]),
    );
    let (code, log) = wait_for(&cp, &ns, "install-complete", "operators=3s,stable=2s");
    assert_eq!(code, 7, "{log}");
    assert!(
        log.contains("to ensure each cluster operator has finished progressing..."),
        "{log}"
    );
    assert!(
        log.contains("These cluster operators were not stable: [ingress]"),
        "{log}"
    );

    // Every operator settled: success, the router CA merged into the
    // kubeconfig, no console (no route API: a warning), and the kubeadmin
    // password never in the log.
    put_status(
        &cp,
        "ClusterOperator",
        "config.openshift.io/v1",
        "ingress",
        serde_json::json!([
            cond(
                "Progressing",
                "False",
                "AsExpected",
                "",
                Duration::from_secs(60)
            ),
            cond(
                "Available",
                "True",
                "AsExpected",
                "",
                Duration::from_secs(120)
            ),
        ]),
    );
    let (code, log) = wait_for(
        &cp,
        &ns,
        "install-complete",
        "operators=20s,stable=2s,console=4s",
    );
    assert_eq!(code, 0, "{log}");
    for needle in [
        "All cluster operators have completed progressing",
        "Checking to see if there is a route at openshift-console/console...",
        "Cluster does not have a console available",
        "Install complete!",
        "To access the cluster as the system:admin user when using 'oc', run",
        "    export KUBECONFIG=",
        "Login to the console with user: \"kubeadmin\"",
        "Time elapsed: ",
    ] {
        assert!(log.contains(needle), "missing {needle:?} in\n{log}");
    }
    let password = std::fs::read_to_string(dir.path().join("auth/kubeadmin-password")).unwrap();
    assert!(
        !log.contains(password.trim()),
        "the kubeadmin password was logged"
    );
    let kc: serde_yaml_ng::Value = serde_yaml_ng::from_str(
        &std::fs::read_to_string(dir.path().join("auth/kubeconfig")).unwrap(),
    )
    .unwrap();
    assert_eq!(kc["kind"].as_str(), Some("Config"));
    assert_eq!(kc["apiVersion"].as_str(), Some("v1"));
    use base64::Engine as _;
    let ca = base64::engine::general_purpose::STANDARD
        .decode(
            kc["clusters"][0]["cluster"]["certificate-authority-data"]
                .as_str()
                .unwrap(),
        )
        .unwrap();
    let ingress = std::fs::read(ca_dir.join("ca.crt")).unwrap();
    assert!(ca.starts_with(&ingress), "the router CA is not first");
    // The rewritten kubeconfig still reaches the API, and a second run
    // does not add the CA again.
    let (code, log) = wait_for(
        &cp,
        &ns,
        "install-complete",
        "operators=20s,stable=2s,console=2s",
    );
    assert_eq!(code, 0, "{log}");
    let kc2 = std::fs::read_to_string(dir.path().join("auth/kubeconfig")).unwrap();
    let kc2: serde_yaml_ng::Value = serde_yaml_ng::from_str(&kc2).unwrap();
    assert_eq!(kc2, kc);
    assert_eq!(
        std::fs::metadata(dir.path().join("auth/kubeconfig"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o600
    );
}

use std::os::unix::fs::PermissionsExt as _;

/// bastion-configs' haproxy.cfg for a run in a test namespace (stats
/// socket in `scratch`, logs to stdout), with `edit` applied.
fn user_haproxy_cfg(
    dir: &std::path::Path,
    scratch: &std::path::Path,
    edit: fn(String) -> String,
) -> std::path::PathBuf {
    let cfg = std::fs::read_to_string(dir.join("bastion/haproxy/haproxy.cfg"))
        .unwrap()
        .replace(
            "/run/haproxy/admin.sock",
            &scratch.join("admin.sock").to_string_lossy(),
        )
        .replace("log /dev/log local0", "log stdout format raw local0")
        .replace("maxconn 20000", "maxconn 2000");
    let path = scratch.join("haproxy.cfg");
    std::fs::write(&path, edit(cfg)).unwrap();
    path
}

/// The user's HAProxy (bastion-configs' file with the API checked by
/// `GET /`, which a kube-apiserver refuses with 403) in front of the real
/// kube-apiserver on the bootstrap's address: every server stays DOWN and
/// the balancer hangs up on each client. wait-for names the balancer and
/// the health check with the fix (openshift-install says only "EOF"); with
/// the generated file unchanged the API comes up through the same
/// balancer and nothing of the kind is said.
#[test]
fn a_balancer_checking_get_slash_is_named_while_the_bootstrap_is_ready() {
    let Some(haproxy) = common::tool("haproxy", &["/usr/sbin/haproxy"]) else {
        return;
    };
    let dir = common::kube::cluster_dir();
    common::okd_ok(dir.path(), &["create", "bastion-configs"]);
    let scratch = tempfile::tempdir().unwrap();
    let Some(mut cp) = ControlPlane::start_on(dir.path(), scratch.path(), With::ApiServer, 102)
    else {
        return;
    };
    let (lb_ns, lb_ip) = cp.add_node("lb", 101);
    // In the balancer's namespace api.<domain> is the balancer.
    std::fs::write(
        std::path::PathBuf::from("/etc/netns")
            .join(&lb_ns)
            .join("hosts"),
        format!(
            "127.0.0.1 localhost\n{lb_ip} api.{d} api-int.{d}\n",
            d = cp.domain
        ),
    )
    .unwrap();
    let slash = user_haproxy_cfg(dir.path(), scratch.path(), |c| {
        c.replacen("option httpchk GET /readyz", "option httpchk GET /", 1)
    });
    cp.spawn_in(
        &lb_ns,
        "haproxy-slash",
        &haproxy,
        &[
            "-db".into(),
            "-f".into(),
            slash.to_string_lossy().into_owned(),
        ],
    );
    // HAProxy's own check gets the API's 403 for `/`.
    let down = Instant::now();
    while !cp.log("haproxy-slash").contains("api/bootstrap is DOWN") {
        assert!(
            down.elapsed() < Duration::from_secs(30),
            "HAProxy never took the bootstrap DOWN:\n{}",
            tail(&cp.log("haproxy-slash"), 20)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(
        cp.log("haproxy-slash").contains("403"),
        "{}",
        cp.log("haproxy-slash")
    );
    let (code, log) = wait_for(&cp, &lb_ns, "bootstrap-complete", "api=45s");
    assert_eq!(code, 5, "{log}");
    let named = format!(
        "The bootstrap's own API at {}:6443 answers /readyz with 200, but the load balancer at {lb_ip}:6443 passes nothing on",
        cp.addr
    );
    let lines: Vec<&str> = log.lines().filter(|l| l.contains(&named)).collect();
    assert!(
        lines.iter().any(|l| l.contains("level=warning")),
        "not warned while waiting:\n{log}\nhaproxy:\n{}",
        tail(&cp.log("haproxy-slash"), 20)
    );
    assert!(
        lines.iter().any(|l| l.contains("level=error")),
        "not named when the wait failed:\n{log}"
    );
    for fix in [
        "`option httpchk GET /readyz`",
        "not `GET /`, which the API refuses with 403",
    ] {
        assert!(lines[0].contains(fix), "no {fix:?} in {:?}", lines[0]);
    }
    assert!(
        log.contains("the peer closed the connection during the TLS handshake"),
        "{log}"
    );

    // The generated file unchanged: the API answers through the balancer.
    cp.kill("haproxy-slash");
    let readyz = user_haproxy_cfg(dir.path(), scratch.path(), |c| c);
    cp.spawn_in(
        &lb_ns,
        "haproxy-readyz",
        &haproxy,
        &[
            "-db".into(),
            "-f".into(),
            readyz.to_string_lossy().into_owned(),
        ],
    );
    let (code, log) = wait_for(&cp, &lb_ns, "bootstrap-complete", "api=60s,bootstrap=2s");
    assert_eq!(code, 5, "{log}");
    assert!(log.contains("level=info msg=API v"), "{log}");
    // A balancer that has just started may still try the master it has
    // not checked yet: at most a debug line, no warning.
    assert!(
        !log.lines()
            .any(|l| l.contains("passes nothing on") && !l.contains("level=debug")),
        "{log}"
    );
}
