//! okd-install's PKI against a real kube-apiserver and
//! kube-controller-manager (the kit of `tests/kube`), started with exactly
//! the certificates, keys and kubeconfigs that `bootstrap.ign` carries
//! (laid down by the real Ignition) and the bootstrap control plane's flags.
//! Issue #11 item 2; openshift/installer `pkg/asset/tls/`.

mod common;

use std::path::Path;
use std::process::Command;

use base64::Engine as _;
use common::kube::{ControlPlane, User, With, in_ns};

fn b64url(data: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(data)
}

/// `openssl s_client` to the API with SNI `name` (or none), verifying the
/// chain against the complete server CA bundle and the name (or IP).
/// Returns (verified, issuer line).
fn handshake(cp: &ControlPlane, name: Option<&str>, verify_ip: Option<&str>) -> (bool, String) {
    let ca = cp.tls("kube-apiserver-complete-server-ca-bundle.crt");
    let mut c = in_ns(&cp.ns, "openssl");
    c.args(["s_client", "-connect", &format!("{}:6443", cp.addr)])
        .arg("-CAfile")
        .arg(&ca)
        .args(["-verify_return_error", "-brief"]);
    match name {
        Some(n) => c.args(["-servername", n, "-verify_hostname", n]),
        None => c.arg("-noservername"),
    };
    if let Some(ip) = verify_ip {
        c.args(["-verify_ip", ip]);
    }
    let out = c
        .stdin(std::process::Stdio::null())
        .output()
        .expect("openssl s_client");
    let text =
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    let ok = text.contains("Verification: OK");
    let issuer = text
        .lines()
        .find(|l| l.starts_with("Peer certificate:"))
        .unwrap_or("")
        .to_string();
    // The issuer is read from the chain the server sent.
    let mut c = in_ns(&cp.ns, "sh");
    let sni = match name {
        Some(n) => format!("-servername {n}"),
        None => "-noservername".into(),
    };
    c.arg("-c").arg(format!(
        "openssl s_client -connect {}:6443 {sni} </dev/null 2>/dev/null | openssl x509 -noout -issuer",
        cp.addr
    ));
    let iss = String::from_utf8_lossy(&c.output().unwrap().stdout).into_owned();
    (ok, format!("{issuer} {iss}"))
}

/// A service-account token as the API server's own TokenRequest would
/// issue it, signed here with `key` (PKCS#1 PEM) by openssl.
fn sa_token(key: &Path, ns: &str, sa: &str, uid: &str) -> String {
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    let header = b64url(br#"{"alg":"RS256","typ":"JWT"}"#);
    let claims = serde_json::json!({
        "iss": "https://kubernetes.default.svc",
        "aud": ["https://kubernetes.default.svc"],
        "sub": format!("system:serviceaccount:{ns}:{sa}"),
        "iat": now, "nbf": now - 5, "exp": now + 600,
        "kubernetes.io": {"namespace": ns, "serviceaccount": {"name": sa, "uid": uid}},
    });
    let payload = b64url(claims.to_string().as_bytes());
    let input = format!("{header}.{payload}");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("in"), &input).unwrap();
    let out = Command::new("openssl")
        .args(["dgst", "-sha256", "-sign"])
        .arg(key)
        .arg(dir.path().join("in"))
        .output()
        .unwrap();
    assert!(out.status.success(), "openssl dgst: {out:?}");
    format!("{input}.{}", b64url(&out.stdout))
}

fn whoami(cp: &ControlPlane, kc: &Path, extra: &[&str]) -> (bool, String) {
    let mut args = vec![
        "auth",
        "whoami",
        "-o",
        "jsonpath={.status.userInfo.username} {.status.userInfo.groups}",
    ];
    args.extend_from_slice(extra);
    let out = cp.kubectl(kc, &args);
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text)
}

#[test]
fn bootstrap_pki_meets_the_real_api_server() {
    let dir = common::kube::cluster_dir();
    let scratch = tempfile::tempdir().unwrap();
    let Some(mut cp) = ControlPlane::start(dir.path(), scratch.path(), With::ControllerManager)
    else {
        return;
    };
    let domain = cp.domain.clone();

    // Every kubeconfig authenticates as the identity its certificate names,
    // through the server name it points at.
    let admin = dir.path().join("auth/kubeconfig");
    let (ok, who) = whoami(&cp, &admin, &[]);
    assert!(
        ok && who.starts_with("system:admin ") && who.contains("system:masters"),
        "{who}"
    );
    for kc in ["kubeconfig", "kubeconfig-loopback"] {
        let (ok, who) = whoami(&cp, &cp.auth(kc), &[]);
        assert!(ok && who.starts_with("system:admin "), "{kc}: {who}");
    }
    let (ok, who) = whoami(&cp, &cp.auth("kubeconfig-kubelet"), &[]);
    assert!(
        ok && who.starts_with(
            "system:serviceaccount:openshift-machine-config-operator:node-bootstrapper "
        ),
        "{who}"
    );

    // Serving certificates are chosen by SNI and each verifies for its name
    // against the complete server CA bundle the kubeconfigs carry.
    for (name, signer) in [
        (format!("api.{domain}"), "kube-apiserver-lb-signer"),
        (format!("api-int.{domain}"), "kube-apiserver-lb-signer"),
        ("localhost".to_string(), "kube-apiserver-localhost-signer"),
        (
            "kubernetes.default.svc".to_string(),
            "kube-apiserver-service-network-signer",
        ),
    ] {
        let (ok, issuer) = handshake(&cp, Some(&name), None);
        assert!(ok, "TLS to {name} did not verify: {issuer}");
        assert!(issuer.contains(signer), "{name}: {issuer}");
    }
    // Without SNI (a client dialing the service IP) the service-network
    // certificate answers and holds the service IP.
    let (ok, issuer) = handshake(&cp, None, Some("172.30.0.1"));
    assert!(ok, "no-SNI TLS did not verify for 172.30.0.1: {issuer}");
    assert!(
        issuer.contains("kube-apiserver-service-network-signer"),
        "{issuer}"
    );
    // A name no certificate holds does not verify (the check can fail).
    let (ok, _) = handshake(&cp, Some("api.other.example"), None);
    assert!(!ok, "a foreign name verified");

    // The aggregator client (front proxy) is trusted for request headers.
    let curl = |cert: Option<&str>| {
        let mut c = in_ns(&cp.ns, "curl");
        c.args([
            "-s",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            "--max-time",
            "10",
        ])
        .arg("--cacert")
        .arg(cp.tls("kube-apiserver-complete-server-ca-bundle.crt"));
        if let Some(base) = cert {
            c.arg("--cert")
                .arg(cp.tls(&format!("{base}.crt")))
                .arg("--key")
                .arg(cp.tls(&format!("{base}.key")));
        }
        c.args([
            "-H",
            "X-Remote-User: front-proxy-user",
            "-H",
            "X-Remote-Group: system:masters",
        ])
        .arg(format!("https://api.{domain}:6443/api/v1/namespaces"));
        String::from_utf8_lossy(&c.output().unwrap().stdout).into_owned()
    };
    assert_eq!(curl(Some("aggregator-client")), "200");
    // The same headers from a client certificate of another signer are not
    // taken as a proxied identity: kube-apiserver-to-kubelet-client is
    // system:kube-apiserver, which may not list namespaces.
    assert_eq!(curl(Some("kube-apiserver-to-kubelet-client")), "403");
    // Without a certificate the headers count for nothing: the request is
    // anonymous and refused.
    assert_eq!(curl(None), "403");

    // The service-account key pair: a token signed with service-account.key
    // is accepted; one signed with another key is not.
    cp.admin(&["create", "serviceaccount", "okd-test", "-n", "default"]);
    let uid = cp.admin(&[
        "get",
        "serviceaccount",
        "okd-test",
        "-n",
        "default",
        "-o",
        "jsonpath={.metadata.uid}",
    ]);
    let token = sa_token(&cp.tls("service-account.key"), "default", "okd-test", &uid);
    let anon = scratch.path().join("anon-kubeconfig");
    cp.kubeconfig(&anon, "api", User::Anonymous);
    let (ok, who) = whoami(&cp, &anon, &["--token", &token]);
    assert!(
        ok && who.starts_with("system:serviceaccount:default:okd-test "),
        "{who}"
    );
    let forged = sa_token(&cp.tls("kubelet-signer.key"), "default", "okd-test", &uid);
    let (ok, who) = whoami(&cp, &anon, &["--token", &forged]);
    assert!(
        !ok && who.contains("Unauthorized"),
        "a token of another key: {who}"
    );

    // kube-controller-manager signs node certificates with kubelet-signer:
    // a client CSR filed with the kubelet bootstrap kubeconfig, approved by
    // okd-install approve-csr, comes back signed by kubelet-signer.
    let key = scratch.path().join("node.key");
    let csr = common::kube::csr_pem(
        scratch.path(),
        "node",
        "/O=system:nodes/CN=system:node:master",
        None,
    );
    let obj = format!(
        "apiVersion: certificates.k8s.io/v1\nkind: CertificateSigningRequest\nmetadata:\n  name: node-master\nspec:\n  request: {}\n  signerName: kubernetes.io/kube-apiserver-client-kubelet\n  usages: [digital signature, client auth]\n",
        base64::engine::general_purpose::STANDARD.encode(&csr)
    );
    let f = scratch.path().join("csr.yaml");
    std::fs::write(&f, obj).unwrap();
    let out = cp.kubectl(
        &cp.auth("kubeconfig-kubelet"),
        &["create", "-f", f.to_str().unwrap()],
    );
    assert!(out.status.success(), "{out:?}");
    let out = cp.okd(&["approve-csr"]).output().unwrap();
    let log = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "approve-csr: {log}");
    assert!(
        log.contains("Approved client CSR node-master for node master"),
        "{log}"
    );
    let mut pem = String::new();
    for _ in 0..100 {
        let b64 = cp.admin(&[
            "get",
            "csr",
            "node-master",
            "-o",
            "jsonpath={.status.certificate}",
        ]);
        if !b64.is_empty() {
            pem = String::from_utf8(
                base64::engine::general_purpose::STANDARD
                    .decode(b64)
                    .unwrap(),
            )
            .unwrap();
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    assert!(
        !pem.is_empty(),
        "kube-controller-manager did not sign: {}",
        common::kube::tail(&cp.log("kube-controller-manager"), 20)
    );
    let cert = scratch.path().join("node.crt");
    std::fs::write(&cert, &pem).unwrap();
    let out = Command::new("openssl")
        .arg("verify")
        .arg("-CAfile")
        .arg(cp.tls("kubelet-signer.crt"))
        .arg(&cert)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "not signed by kubelet-signer: {out:?}"
    );
    // … and the API server (client CA bundle) accepts it as the node.
    let kc = scratch.path().join("node-kubeconfig");
    cp.kubeconfig(&kc, "api-int", User::Cert(&cert, &key));
    let (ok, who) = whoami(&cp, &kc, &[]);
    assert!(
        ok && who.starts_with("system:node:master ") && who.contains("system:nodes"),
        "{who}"
    );

    // The bundle's API objects: bootstrap.ign's bootstrap-cluster-gather.sh
    // against this API server with the bootstrap's admin kubeconfig.
    let gather = scratch.path().join("gather");
    let out = in_ns(&cp.ns, "bash")
        .arg(cp.root.join("usr/local/bin/bootstrap-cluster-gather.sh"))
        .arg(&gather)
        .env("GATHER_KUBECONFIG", cp.auth("kubeconfig"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let res = gather.join("resources");
    assert!(
        !res.join("not-gathered.txt").exists(),
        "{:?}",
        std::fs::read_to_string(res.join("not-gathered.txt"))
    );
    let csrs = std::fs::read_to_string(res.join("csr.json")).unwrap();
    assert!(csrs.contains("\"name\": \"node-master\""), "{csrs}");
    let nss = std::fs::read_to_string(res.join("namespaces.json")).unwrap();
    assert!(nss.contains("\"name\": \"kube-system\""), "{nss}");
    let secrets = std::fs::read_to_string(res.join("secrets-names.txt")).unwrap_or_default();
    assert!(!secrets.contains("BEGIN"), "secret data in the bundle");
    cp.kill("kube-controller-manager");
}
