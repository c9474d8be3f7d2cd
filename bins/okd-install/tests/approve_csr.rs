//! `okd-install approve-csr` against the real control plane of the kit and
//! the real kubelet's TLS bootstrap (issue #11 item 3).
//!
//! A kubelet in the master's network namespace starts with the bootstrap
//! kubeconfig from our Ignition (`/opt/openshift/auth/kubeconfig-kubelet`,
//! the node-bootstrapper identity) and files its client CSR;
//! `approve-csr --watch` approves it; kube-controller-manager signs it with
//! kubelet-signer; the kubelet writes its client certificate. This machine
//! has no container runtime, so the kubelet stops right after that (it
//! cannot reach CRI) and its Node does not register: the test checks the
//! kubelet's log says so. The serving CSR is then filed with the kubelet's
//! own new client certificate, as the kubelet would once running. Forged
//! CSRs are filed beside it and must all stay pending with a Warning event
//! naming the rule — among them (issue #18) a serving CSR whose second
//! extensionRequest attribute carries the API's name and the bastion's
//! address, and a second client CSR for the master; a one-shot
//! `approve-csr` run afterwards (a restart) refuses the latter too.

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use base64::Engine as _;
use common::kube::{ControlPlane, NET, User, With, csr_pem, file_csr, tail};

/// `Approved`, `Pending` (no condition) or other, per CSR name.
fn condition(cp: &ControlPlane, name: &str) -> String {
    let c = cp.admin(&[
        "get",
        "csr",
        name,
        "-o",
        "jsonpath={.status.conditions[*].type}",
    ]);
    if c.is_empty() { "Pending".into() } else { c }
}

fn wait_until(what: &str, secs: u64, mut f: impl FnMut() -> bool, ctx: impl Fn() -> String) {
    let start = Instant::now();
    while !f() {
        assert!(
            start.elapsed() < Duration::from_secs(secs),
            "timed out after {secs} s waiting for {what}\n{}",
            ctx()
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

const CLIENT: &str = "kubernetes.io/kube-apiserver-client-kubelet";
const SERVING: &str = "kubernetes.io/kubelet-serving";

#[test]
fn real_kubelet_bootstrap_is_approved_and_forgeries_are_not() {
    let dir = common::kube::cluster_dir();
    let scratch = tempfile::tempdir().unwrap();
    let Some(mut cp) = ControlPlane::start(dir.path(), scratch.path(), With::ControllerManager)
    else {
        return;
    };
    let Some(kubelet) = okd_test_utils::kube_tool("kubelet") else {
        return;
    };
    let (master_ns, master_ip) = cp.add_node("master", 103);
    assert_eq!(master_ip, format!("{NET}.103"));

    // serve's status page beside it, reading the cluster (dashboard).
    let serve_log = scratch.path().join("serve.log");
    let mut serve = okd_test_utils::ChildGuard(
        cp.okd(&["serve", "--services", "status"])
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(&serve_log).unwrap())
            .spawn()
            .unwrap(),
    );
    common::serve::wait_ready(&serve_log);

    // approve-csr --watch, as the bastion would run it, in the control
    // plane's namespace with the admin kubeconfig of the asset directory.
    let watch_log = scratch.path().join("approve-csr.log");
    let mut watch = okd_test_utils::ChildGuard(
        cp.okd(&["approve-csr", "--watch"])
            .stdout(std::fs::File::create(&watch_log).unwrap())
            .stderr(std::fs::File::create(scratch.path().join("approve-csr.err")).unwrap())
            .spawn()
            .unwrap(),
    );
    let watch_text =
        || std::fs::read_to_string(scratch.path().join("approve-csr.err")).unwrap_or_default();
    wait_until(
        "approve-csr to watch",
        30,
        || watch_text().contains("Watching CSRs"),
        watch_text,
    );

    // The real kubelet's TLS bootstrap with our Ignition's kubeconfig.
    // rotateCertificates is off (OpenShift turns it on) because with it on
    // the kubelet bootstraps in the background and, with no container
    // runtime here, exits before filing its CSR; off, it bootstraps first.
    let kroot = scratch.path().join("kubelet");
    let cert_dir = kroot.join("pki");
    std::fs::create_dir_all(&cert_dir).unwrap();
    let config = kroot.join("config.yaml");
    std::fs::write(
        &config,
        format!(
            "apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
authentication:
  anonymous: {{enabled: false}}
  x509: {{clientCAFile: {ca}}}
serverTLSBootstrap: true
rotateCertificates: false
failSwapOn: false
cgroupsPerQOS: false
enforceNodeAllocatable: []
containerRuntimeEndpoint: unix://{sock}
",
            ca = cp.tls("kube-apiserver-to-kubelet-ca-bundle.crt").display(),
            sock = kroot.join("no-runtime.sock").display()
        ),
    )
    .unwrap();
    let args = vec![
        format!("--config={}", config.display()),
        format!(
            "--bootstrap-kubeconfig={}",
            cp.auth("kubeconfig-kubelet").display()
        ),
        format!("--kubeconfig={}", kroot.join("kubeconfig").display()),
        format!("--cert-dir={}", cert_dir.display()),
        format!("--root-dir={}", kroot.join("root").display()),
        "--hostname-override=master".into(),
        format!("--node-ip={master_ip}"),
        "--v=2".into(),
    ];
    cp.spawn_in(&master_ns, "kubelet", &kubelet, &args);
    let client_pem = cert_dir.join("kubelet-client-current.pem");
    wait_until(
        "the kubelet's client certificate",
        90,
        || client_pem.exists(),
        || {
            format!(
                "kubelet:\n{}\napprove-csr:\n{}\nkcm:\n{}",
                cp.log("kubelet")
                    .lines()
                    .filter(|l| !l.contains("flags.go"))
                    .take(60)
                    .collect::<Vec<_>>()
                    .join("\n"),
                watch_text(),
                tail(&cp.log("kube-controller-manager"), 10)
            )
        },
    );
    let text = watch_text();
    assert!(
        text.contains("Approved client CSR") && text.contains("for node master"),
        "{text}"
    );
    // Signed by kubelet-signer for system:node:master.
    let out = Command::new("openssl")
        .args(["x509", "-noout", "-subject", "-issuer", "-in"])
        .arg(&client_pem)
        .output()
        .unwrap();
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(
        s.contains("CN = system:node:master") && s.contains("CN = kubelet-signer"),
        "{s}"
    );

    // Where this machine stops the kubelet: no container runtime.
    wait_until(
        "the kubelet to report the missing runtime",
        60,
        || {
            let l = cp.log("kubelet");
            l.contains("no-runtime.sock") && (l.contains("CRI") || l.contains("runtime"))
        },
        || tail(&cp.log("kubelet"), 30),
    );
    eprintln!(
        "NOTE: the kubelet stopped after its client certificate: this machine has no container runtime, so its Node does not register"
    );

    // The node's own serving CSR, filed with the kubelet's new client
    // certificate, for its name and its inventory address.
    let node_kc = scratch.path().join("node-kubeconfig");
    cp.kubeconfig(&node_kc, "api-int", User::Cert(&client_pem, &client_pem));
    let bootstrapper = cp.auth("kubeconfig-kubelet");
    let node_subj = "/O=system:nodes/CN=system:node:master";
    let d = scratch.path();
    let serving = csr_pem(
        d,
        "serving",
        node_subj,
        Some(&format!("DNS:master,IP:{master_ip}")),
    );
    file_csr(
        &cp,
        &node_kc,
        "serving-master",
        &serving,
        SERVING,
        &["digital signature", "server auth"],
    );

    // The forgeries, each breaking one rule.
    let forged: Vec<(&str, &str)> = vec![
        ("forged-unknown-name", "UnknownNode"),
        ("forged-client-san", "ClientSANs"),
        ("forged-serving-extra-san", "SANNotOwned"),
        ("forged-wrong-signer", "UnknownSigner"),
        ("forged-wrong-requester", "WrongRequester"),
        ("forged-other-address", "SANNotOwned"),
        ("forged-extra-usages", "BadUsages"),
        ("forged-serving-by-bootstrapper", "WrongRequester"),
        ("forged-serving-second-attribute", "BadExtensions"),
        ("forged-second-client", "ClientAlreadyIssued"),
    ];
    let p = csr_pem(d, "f1", "/O=system:nodes/CN=system:node:evil", None);
    file_csr(
        &cp,
        &bootstrapper,
        forged[0].0,
        &p,
        CLIENT,
        &["digital signature", "client auth"],
    );
    let p = csr_pem(d, "f2", node_subj, Some("DNS:master"));
    file_csr(
        &cp,
        &bootstrapper,
        forged[1].0,
        &p,
        CLIENT,
        &["digital signature", "client auth"],
    );
    let p = csr_pem(
        d,
        "f3",
        node_subj,
        Some(&format!("DNS:master,DNS:api.{},IP:{master_ip}", cp.domain)),
    );
    file_csr(
        &cp,
        &node_kc,
        forged[2].0,
        &p,
        SERVING,
        &["digital signature", "server auth"],
    );
    let p = csr_pem(d, "f4", node_subj, None);
    file_csr(
        &cp,
        &bootstrapper,
        forged[3].0,
        &p,
        "kubernetes.io/kube-apiserver-client",
        &["digital signature", "client auth"],
    );
    // Another identity allowed to file CSRs (a service account bound to
    // system:node-bootstrapper). The admin would not do: kube-controller-
    // manager's own approver approves node client CSRs of anyone allowed
    // the `nodeclient` subresource, as system:masters is.
    cp.admin(&["create", "serviceaccount", "impostor", "-n", "default"]);
    cp.admin(&[
        "create",
        "clusterrolebinding",
        "impostor-csr",
        "--clusterrole=system:node-bootstrapper",
        "--serviceaccount=default:impostor",
    ]);
    let token = cp.admin(&["create", "token", "impostor", "-n", "default"]);
    let impostor = scratch.path().join("impostor-kubeconfig");
    cp.kubeconfig(&impostor, "api", User::Token(&token));
    let p = csr_pem(d, "f5", node_subj, None);
    file_csr(
        &cp,
        &impostor,
        forged[4].0,
        &p,
        CLIENT,
        &["digital signature", "client auth"],
    );
    let p = csr_pem(
        d,
        "f6",
        node_subj,
        Some(&format!("DNS:master,IP:{NET}.104")),
    );
    file_csr(
        &cp,
        &node_kc,
        forged[5].0,
        &p,
        SERVING,
        &["digital signature", "server auth"],
    );
    let p = csr_pem(d, "f7", node_subj, None);
    file_csr(
        &cp,
        &bootstrapper,
        forged[6].0,
        &p,
        CLIENT,
        &["digital signature", "client auth", "server auth"],
    );
    let p = csr_pem(
        d,
        "f8",
        node_subj,
        Some(&format!("DNS:master,IP:{master_ip}")),
    );
    file_csr(
        &cp,
        &bootstrapper,
        forged[7].0,
        &p,
        SERVING,
        &["digital signature", "server auth"],
    );

    // Go's parser (the API server's, the signer's) merges every
    // extensionRequest attribute: SANs the node does not own, in a second
    // one. Written by hand (okd_test_utils::pkcs10); rcgen/openssl cannot.
    use okd_test_utils::pkcs10::{Extension, request_pem};
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    let api = format!("api.{}", cp.domain);
    let p = request_pem(
        &key,
        "system:node:master",
        "system:nodes",
        &[
            vec![vec![Extension::key_usage_digital_signature()]],
            vec![vec![Extension::san(&[
                "master", &api, &master_ip, &cp.addr,
            ])]],
        ],
    );
    file_csr(
        &cp,
        &node_kc,
        forged[8].0,
        &p,
        SERVING,
        &["digital signature", "server auth"],
    );
    // A second client certificate for the master, after its kubelet's.
    let p = csr_pem(d, "f10", node_subj, None);
    file_csr(
        &cp,
        &bootstrapper,
        forged[9].0,
        &p,
        CLIENT,
        &["digital signature", "client auth"],
    );

    wait_until(
        "the serving CSR to be approved and issued",
        60,
        || {
            !cp.admin(&[
                "get",
                "csr",
                "serving-master",
                "-o",
                "jsonpath={.status.certificate}",
            ])
            .is_empty()
        },
        watch_text,
    );
    // Every forgery has been looked at (its event exists) and stays pending.
    wait_until(
        "a refusal event for every forged CSR",
        30,
        || {
            let ev = cp.admin(&[
                "get",
                "events",
                "-n",
                "default",
                "-o",
                "jsonpath={range .items[*]}{.involvedObject.name}={.reason}{\"\\n\"}{end}",
            ]);
            forged.iter().all(|(n, _)| ev.contains(&format!("{n}=")))
        },
        watch_text,
    );
    let ev = cp.admin(&[
        "get",
        "events",
        "-n",
        "default",
        "-o",
        "jsonpath={range .items[*]}{.involvedObject.name}={.reason}{\"\\n\"}{end}",
    ]);
    for (name, reason) in &forged {
        assert_eq!(condition(&cp, name), "Pending", "{name} was acted on");
        assert!(
            ev.contains(&format!("{name}={reason}")),
            "{name}: expected {reason} in\n{ev}"
        );
    }
    let text = watch_text();
    for (name, _) in &forged {
        assert!(
            text.contains(&format!("Not approving CSR {name} ")),
            "no log line for {name}:\n{text}"
        );
    }
    assert_eq!(condition(&cp, "serving-master"), "Approved");
    // The events name the node and the rule.
    let messages = cp.admin(&[
        "get",
        "events",
        "-n",
        "default",
        "-o",
        "jsonpath={range .items[*]}{.involvedObject.name}|{.type}|{.message}{\"\\n\"}{end}",
    ]);
    let message = |csr: &str| {
        messages
            .lines()
            .find(|l| l.starts_with(&format!("{csr}|")))
            .unwrap_or_default()
            .to_string()
    };
    let m = message("forged-second-client");
    assert!(
        m.contains("|Warning|")
            && m.contains("node \"master\" already has a bootstrap client certificate"),
        "{messages}"
    );
    let m = message("forged-serving-second-attribute");
    assert!(
        m.contains("|Warning|") && m.contains("2 extensionRequest attributes"),
        "{messages}"
    );
    // A restart: a one-shot run knows the first client CSR only from the API.
    let once = cp.okd(&["approve-csr"]).output().unwrap();
    let err = String::from_utf8_lossy(&once.stderr);
    assert!(once.status.success(), "{err}");
    assert!(
        err.contains("Not approving CSR forged-second-client ")
            && err.contains("already has a bootstrap client certificate"),
        "{err}"
    );
    assert_eq!(condition(&cp, "forged-second-client"), "Pending");

    // The dashboard's data: the master's CSR stages done, the forged
    // unknown node named (read by serve through the inventory's API address).
    let status = || -> Option<okd_serve_api::StatusDocument> {
        let out = cp.okd(&["serve", "status"]).output().unwrap();
        serde_json::from_slice(&out.stdout).ok()
    };
    wait_until(
        "serve's status to show the master's CSRs",
        20,
        || {
            let doc = status();
            let master = doc
                .iter()
                .flat_map(|d| &d.hosts)
                .find(|h| h.hostname == "master");
            master.is_some_and(|m| {
                m.stage("CSR client approved").is_some_and(|s| s.done)
                    && m.stage("CSR serving approved").is_some_and(|s| s.done)
            })
        },
        || {
            format!(
                "{:#?}\n{}",
                status(),
                std::fs::read_to_string(&serve_log).unwrap_or_default()
            )
        },
    );
    let doc = status().expect("serve's status");
    assert!(doc.cluster_data.available, "{doc:#?}");
    // The first of bootstrap.ign's 24-hour certificates to expire, about a
    // day from its creation a moment ago.
    let certs = doc
        .certificates
        .as_ref()
        .expect("bootstrap.ign's certificates");
    let not_after = time::OffsetDateTime::parse(
        &certs.not_after,
        &time::format_description::well_known::Rfc3339,
    )
    .unwrap_or_else(|_| panic!("{certs:#?}"));
    let left = not_after - time::OffsetDateTime::now_utc();
    assert!(
        left > time::Duration::hours(23) && left <= time::Duration::hours(24),
        "{left}"
    );
    assert!(certs.file.ends_with(".crt"), "{certs:?}");
    let warnings = doc.warnings.join("\n");
    assert!(
        warnings
            .contains("CSR forged-unknown-name asks for node evil, which is not in the inventory"),
        "{warnings}"
    );
    let page = common::kube::in_ns(&cp.ns, "curl")
        .args([
            "-s",
            "--max-time",
            "10",
            &format!("http://{}:9000/", cp.addr),
        ])
        .output()
        .unwrap();
    let page = String::from_utf8_lossy(&page.stdout);
    assert!(page.contains("CSR client approved (node-"), "{page}");
    assert!(
        page.contains("Cluster data from https://api.okd.example:6443"),
        "{page}"
    );
    let _ = serve.0.kill();
    let _ = watch.0.kill();
}

/// A node allowed by `--node-name-pattern` has no inventory addresses: its
/// serving CSR waits (pending, `NodeAddressesUnknown`) until its Node object
/// says its addresses, then is approved without a new CSR.
#[test]
fn pattern_matched_serving_csr_waits_for_the_node_object() {
    let dir = common::kube::cluster_dir();
    let scratch = tempfile::tempdir().unwrap();
    let Some(cp) = ControlPlane::start(dir.path(), scratch.path(), With::ControllerManager) else {
        return;
    };
    let err = scratch.path().join("approve-csr.err");
    let mut watch = okd_test_utils::ChildGuard(
        cp.okd(&["approve-csr", "--watch", "--node-name-pattern", "worker-*"])
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(&err).unwrap())
            .spawn()
            .unwrap(),
    );
    let text = || std::fs::read_to_string(&err).unwrap_or_default();
    wait_until(
        "approve-csr to watch",
        30,
        || text().contains("Watching CSRs"),
        text,
    );
    // worker-5's client certificate, the way a kubelet gets it.
    let d = scratch.path();
    let client = csr_pem(d, "w5", "/O=system:nodes/CN=system:node:worker-5", None);
    file_csr(
        &cp,
        &cp.auth("kubeconfig-kubelet"),
        "client-worker-5",
        &client,
        CLIENT,
        &["digital signature", "client auth"],
    );
    let mut cert = String::new();
    wait_until(
        "worker-5's client certificate",
        60,
        || {
            cert = cp.admin(&[
                "get",
                "csr",
                "client-worker-5",
                "-o",
                "jsonpath={.status.certificate}",
            ]);
            !cert.is_empty()
        },
        text,
    );
    let crt = d.join("w5.crt");
    std::fs::write(
        &crt,
        base64::engine::general_purpose::STANDARD
            .decode(cert.trim())
            .unwrap(),
    )
    .unwrap();
    let kc = d.join("w5-kubeconfig");
    cp.kubeconfig(&kc, "api-int", User::Cert(&crt, &d.join("w5.key")));
    let serving = csr_pem(
        d,
        "w5s",
        "/O=system:nodes/CN=system:node:worker-5",
        Some(&format!("DNS:worker-5,IP:{NET}.150")),
    );
    file_csr(
        &cp,
        &kc,
        "serving-worker-5",
        &serving,
        SERVING,
        &["digital signature", "server auth"],
    );
    wait_until(
        "the refusal for the missing Node",
        30,
        || text().contains("Not approving CSR serving-worker-5 "),
        text,
    );
    assert!(
        text().contains("the node's addresses are unknown"),
        "{}",
        text()
    );
    assert_eq!(condition(&cp, "serving-worker-5"), "Pending");
    // The Node registers (as its kubelet would) with its address.
    let node =
        serde_json::json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "worker-5"}});
    let f = d.join("node.json");
    std::fs::write(&f, node.to_string()).unwrap();
    cp.admin(&["create", "-f", f.to_str().unwrap()]);
    let status = serde_json::json!({"status": {"addresses": [{"type": "InternalIP", "address": format!("{NET}.150")}, {"type": "Hostname", "address": "worker-5"}]}}).to_string();
    cp.admin(&[
        "patch",
        "node",
        "worker-5",
        "--subresource=status",
        "--type=merge",
        "-p",
        &status,
    ]);
    wait_until(
        "the retried approval",
        70,
        || condition(&cp, "serving-worker-5") == "Approved",
        text,
    );
    // A client CSR for a node whose Node object exists (and which never
    // had one approved here): it has joined, so none is approved.
    let node6 =
        serde_json::json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "worker-6"}});
    std::fs::write(&f, node6.to_string()).unwrap();
    cp.admin(&["create", "-f", f.to_str().unwrap()]);
    let p = csr_pem(d, "w6", "/O=system:nodes/CN=system:node:worker-6", None);
    file_csr(
        &cp,
        &cp.auth("kubeconfig-kubelet"),
        "client-worker-6",
        &p,
        CLIENT,
        &["digital signature", "client auth"],
    );
    wait_until(
        "the refusal for the joined node",
        30,
        || text().contains("Not approving CSR client-worker-6 "),
        text,
    );
    assert!(
        text().contains("node \"worker-6\" has joined already"),
        "{}",
        text()
    );
    assert_eq!(condition(&cp, "client-worker-6"), "Pending");
    assert!(
        text().contains("Approved serving CSR serving-worker-5 for node worker-5"),
        "{}",
        text()
    );
    let _ = watch.0.kill();
}
