//! Bad input and faults of the cluster commands against the real API
//! server of the kit (issue #11, "Bad input and faults"): API unreachable,
//! wrong CA, expired certificates (the 24-hour trap: assets made two days
//! ago), a kubeconfig for another cluster, a CSR API error. Each is a clear
//! error naming the endpoint (or kubeconfig) and the cause, and
//! approve-csr approves nothing while it cannot check identity.

mod common;

use std::path::Path;
use std::time::Duration;

use base64::Engine as _;
use common::kube::{ControlPlane, With, in_ns};
use okd_assets::{AssetDir, GenCtx, Target};
use okd_types::release::{DEFAULT_RELEASE_IMAGE, ReleaseTarget};

/// `okd-install approve-csr` with `args` in namespace `ns` for `dir`.
fn approve(ns: &str, dir: &Path, args: &[&str]) -> (i32, String) {
    let out = in_ns(ns, env!("CARGO_BIN_EXE_okd-install"))
        .arg("approve-csr")
        .args(args)
        .arg("--dir")
        .arg(dir)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The single-master example's assets (with its hosts files) generated
/// as if `age` ago.
fn aged_dir(age: Duration) -> tempfile::TempDir {
    let d = common::kube::cluster_dir();
    for f in std::fs::read_dir(d.path()).unwrap() {
        let p = f.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if name != "agent-config.yaml" && name != "bastion-config.yaml" {
            if p.is_dir() {
                std::fs::remove_dir_all(&p).unwrap();
            } else {
                std::fs::remove_file(&p).unwrap();
            }
        }
    }
    std::fs::copy(
        common::repo().join("examples/baremetal-single-master/install-config.yaml"),
        d.path().join("install-config.yaml"),
    )
    .unwrap();
    let target = ReleaseTarget::from_release_image(DEFAULT_RELEASE_IMAGE).unwrap();
    let mut ctx = GenCtx::new(
        DEFAULT_RELEASE_IMAGE.to_string(),
        target,
        target.ignition_spec(),
    );
    ctx.now = time::OffsetDateTime::now_utc() - age;
    okd_assets::create(
        &AssetDir::new(d.path()),
        &mut ctx,
        Target::IgnitionConfigs,
        2,
    )
    .unwrap();
    d
}

/// A kubeconfig for `server` with CA `ca_pem` and client cert/key files.
fn kubeconfig(path: &Path, server: &str, ca_pem: &[u8], cert: &Path, key: &Path) {
    let b = base64::engine::general_purpose::STANDARD;
    std::fs::write(
        path,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {server}\n    certificate-authority-data: {}\ncontexts:\n- name: c\n  context: {{cluster: c, user: u}}\ncurrent-context: c\nusers:\n- name: u\n  user:\n    client-certificate-data: {}\n    client-key-data: {}\n",
            b.encode(ca_pem),
            b.encode(std::fs::read(cert).unwrap()),
            b.encode(std::fs::read(key).unwrap()),
        ),
    )
    .unwrap();
}

#[test]
fn wrong_ca_other_cluster_api_errors_unreachable_and_no_identities() {
    let dir = common::kube::cluster_dir();
    let scratch = tempfile::tempdir().unwrap();
    let Some(mut cp) = ControlPlane::start(dir.path(), scratch.path(), With::ApiServer) else {
        return;
    };
    let ns = cp.ns.clone();
    let domain = cp.domain.clone();

    // Wrong CA: the kubeconfig of another `create ignition-configs` run.
    let other = common::kube::cluster_dir();
    let other_kc = other.path().join("auth/kubeconfig");
    let (code, log) = approve(
        &ns,
        dir.path(),
        &["--kubeconfig", other_kc.to_str().unwrap()],
    );
    assert_eq!(code, 1, "{log}");
    assert!(
        log.contains(&format!(
            "https://api.{domain}:6443/version: the server's certificate is not signed by the CA in the kubeconfig"
        )),
        "{log}"
    );

    // A kubeconfig for another cluster: refused before any request.
    let foreign = scratch.path().join("foreign-kubeconfig");
    std::fs::write(
        &foreign,
        std::fs::read_to_string(dir.path().join("auth/kubeconfig"))
            .unwrap()
            .replace(&format!("api.{domain}"), "api.prod.example.com"),
    )
    .unwrap();
    let (code, log) = approve(
        &ns,
        dir.path(),
        &["--kubeconfig", foreign.to_str().unwrap()],
    );
    assert_eq!(code, 1, "{log}");
    assert!(
        log.contains(
            "is for https://api.prod.example.com:6443, not for this install's cluster okd.example"
        ),
        "{log}"
    );

    // An API error: the kubelet bootstrap identity may list CSRs but may
    // neither read Nodes nor approve. The first request it is refused (the
    // Node lookup that tells whether the node has joined already, issue #18)
    // is named with its endpoint, and the CSR stays pending.
    let csr = common::kube::node_client_csr(scratch.path(), "master");
    let kubelet_kc = cp.auth("kubeconfig-kubelet");
    let out = cp.kubectl(&kubelet_kc, &["create", "-f", csr.to_str().unwrap()]);
    assert!(out.status.success(), "{out:?}");
    let (code, log) = approve(
        &ns,
        dir.path(),
        &["--kubeconfig", kubelet_kc.to_str().unwrap()],
    );
    assert_eq!(code, 0, "{log}");
    assert!(
        log.contains(&format!(
            "cannot tell whether the node has joined, so its client CSR waits: https://api-int.{domain}:6443/api/v1/nodes/master: 403 Forbidden"
        )),
        "{log}"
    );
    let cond = cp.admin(&[
        "get",
        "csr",
        "node-master",
        "-o",
        "jsonpath={.status.conditions}",
    ]);
    assert!(cond.is_empty(), "approved despite the error: {cond}");

    // No inventory and no pattern: nothing could be checked, so approve-csr
    // refuses to start.
    std::fs::rename(
        dir.path().join("agent-config.yaml"),
        scratch.path().join("agent-config.yaml"),
    )
    .unwrap();
    std::fs::rename(
        dir.path().join("bastion-config.yaml"),
        scratch.path().join("bastion-config.yaml"),
    )
    .unwrap();
    let (code, log) = approve(&ns, dir.path(), &[]);
    assert_eq!(code, 1, "{log}");
    assert!(log.contains("no node is known in"), "{log}");
    // With a pattern it approves the matching node.
    let (code, log) = approve(&ns, dir.path(), &["--node-name-pattern", "mast*"]);
    assert_eq!(code, 0, "{log}");
    assert!(
        log.contains("Approved client CSR node-master for node master"),
        "{log}"
    );
    // A bad pattern is named.
    let (code, log) = approve(&ns, dir.path(), &["--node-name-pattern", "[x"]);
    assert_eq!(code, 1, "{log}");
    assert!(
        log.contains("--node-name-pattern \"[x\": not a valid glob pattern"),
        "{log}"
    );

    // Unreachable: nothing listens behind api.<domain> in this namespace.
    let (void_ns, void_ip) = cp.add_node("void", 60);
    std::fs::write(
        std::path::PathBuf::from("/etc/netns")
            .join(&void_ns)
            .join("hosts"),
        format!("127.0.0.1 localhost\n{void_ip} api.{domain} api-int.{domain}\n"),
    )
    .unwrap();
    let (code, log) = approve(&void_ns, dir.path(), &["--node-name-pattern", "*"]);
    assert_eq!(code, 1, "{log}");
    assert!(
        log.contains(&format!(
            "https://api.{domain}:6443/version: the API server is unreachable:"
        )),
        "{log}"
    );
}

#[test]
fn certificates_of_two_days_ago_are_named_as_expired() {
    let Some(_) = common::kube::kit(With::ApiServer) else {
        return;
    };
    let dir = aged_dir(Duration::from_secs(50 * 3600));
    let scratch = tempfile::tempdir().unwrap();
    let Some(cp) = ControlPlane::start_unready(dir.path(), scratch.path()) else {
        return;
    };
    let ns = cp.ns.clone();
    // The API server runs, but its 24-hour serving certificates expired.
    let (code, log) = approve(&ns, dir.path(), &[]);
    assert_eq!(code, 1, "{log}");
    assert!(
        log.contains(&format!(
            "https://api.{}:6443/version: the server's certificate has expired or is not yet valid",
            cp.domain
        )),
        "{log}"
    );
    // A kubeconfig whose client certificate expired (aggregator-client
    // lasts one day) is refused before any request, naming the file.
    let kc = scratch.path().join("expired-client");
    kubeconfig(
        &kc,
        &format!("https://api.{}:6443", cp.domain),
        &std::fs::read(cp.tls("kube-apiserver-complete-server-ca-bundle.crt")).unwrap(),
        &cp.tls("aggregator-client.crt"),
        &cp.tls("aggregator-client.key"),
    );
    let (code, log) = approve(&ns, dir.path(), &["--kubeconfig", kc.to_str().unwrap()]);
    assert_eq!(code, 1, "{log}");
    assert!(
        log.contains(&format!(
            "kubeconfig {}: the client certificate of user \"u\" is valid from",
            kc.display()
        )),
        "{log}"
    );
    assert!(
        log.contains("the install's certificates expire 24 hours after `create ignition-configs`"),
        "{log}"
    );
}
