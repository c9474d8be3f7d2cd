//! Certificates and keys checked by the real `openssl` and `ssh-keygen`.

use std::net::IpAddr;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use okd_pki::*;

fn have(tool: &str) -> bool {
    let ok = Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {tool}"))
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        if std::env::var("OKD_REQUIRE_TOOLS").as_deref() == Ok("1") {
            panic!("{tool} is required");
        }
        eprintln!("SKIPPING: {tool} not installed");
    }
    ok
}

fn run(args: &[&str], dir: &Path) -> String {
    let out = Command::new(args[0])
        .args(&args[1..])
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn ca_cfg() -> CertConfig {
    CertConfig {
        subject: vec![
            (NameAttr::OrganizationalUnit, "openshift".into()),
            (NameAttr::CommonName, "root-ca".into()),
        ],
        dns_names: vec![],
        ip_addresses: vec![],
        key_usage: KeyUsage {
            digital_signature: true,
            key_encipherment: true,
            cert_sign: true,
        },
        ext_key_usage: vec![],
        validity: Duration::from_secs(3650 * 24 * 3600),
        is_ca: true,
    }
}

#[test]
fn ca_and_leaf_verify_with_openssl() {
    let now = time::OffsetDateTime::now_utc()
        .replace_nanosecond(0)
        .unwrap();
    let ca = self_signed(&ca_cfg(), RsaKey::generate().unwrap(), now).unwrap();
    let leaf_cfg = CertConfig {
        subject: vec![
            (NameAttr::Organization, "kube-master".into()),
            (NameAttr::CommonName, "system:kube-apiserver".into()),
        ],
        dns_names: vec!["api-int.okd.example".into(), "localhost".into()],
        ip_addresses: vec![
            "127.0.0.1".parse::<IpAddr>().unwrap(),
            "::1".parse().unwrap(),
        ],
        key_usage: KeyUsage {
            digital_signature: true,
            key_encipherment: true,
            cert_sign: false,
        },
        ext_key_usage: vec![ExtKeyUsage::ServerAuth],
        validity: Duration::from_secs(24 * 3600),
        is_ca: false,
    };
    let later = now + time::Duration::seconds(5);
    let leaf = signed(&leaf_cfg, RsaKey::generate().unwrap(), &ca, later).unwrap();
    assert_eq!(
        leaf.cert.not_before, ca.cert.not_before,
        "leaf NotBefore = CA NotBefore"
    );
    assert_eq!(leaf.cert.not_after, later + time::Duration::hours(24));

    let info = parse_certs(&pem_with_parent(&leaf.cert, &ca.cert)).unwrap();
    assert_eq!(info.len(), 2);
    assert_eq!(info[0].subject, "CN=system:kube-apiserver,O=kube-master");
    assert_eq!(info[0].issuer, "CN=root-ca,OU=openshift");
    assert_eq!(info[0].dns_names, vec!["api-int.okd.example", "localhost"]);
    assert!(!info[0].is_ca && info[1].is_ca);
    assert!(
        pem_with_parent(&leaf.cert, &ca.cert)
            .contains("-----END CERTIFICATE-----\n\n-----BEGIN CERTIFICATE-----")
    );
    assert_eq!(
        first_cert_of_bundle(&pem_with_parent(&leaf.cert, &ca.cert)).unwrap(),
        leaf.cert.pem
    );

    if !have("openssl") {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("ca.crt"), &ca.cert.pem).unwrap();
    std::fs::write(d.path().join("leaf.crt"), &leaf.cert.pem).unwrap();
    std::fs::write(d.path().join("leaf.key"), leaf.key.private_pem()).unwrap();
    let v = run(
        &["openssl", "verify", "-CAfile", "ca.crt", "leaf.crt"],
        d.path(),
    );
    assert_eq!(v.trim(), "leaf.crt: OK");
    let text = run(
        &["openssl", "x509", "-noout", "-text", "-in", "leaf.crt"],
        d.path(),
    );
    for want in [
        "X509v3 Key Usage: critical",
        "Digital Signature, Key Encipherment",
        "TLS Web Server Authentication",
        "X509v3 Basic Constraints: critical",
        "CA:FALSE",
        "DNS:api-int.okd.example, DNS:localhost, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1",
        "X509v3 Authority Key Identifier",
        "sha256WithRSAEncryption",
        "Public-Key: (2048 bit)",
    ] {
        assert!(text.contains(want), "missing {want:?} in\n{text}");
    }
    let ca_text = run(
        &["openssl", "x509", "-noout", "-text", "-in", "ca.crt"],
        d.path(),
    );
    assert!(
        ca_text.contains("CA:TRUE") && ca_text.contains("Certificate Sign"),
        "{ca_text}"
    );
    assert!(
        !ca_text.contains("Authority Key Identifier"),
        "self-signed CA has no AKI:\n{ca_text}"
    );
    // SKI = SHA-1 over the PKCS#1 public key.
    let ski_hex: String = ca
        .key
        .subject_key_id()
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect::<Vec<_>>()
        .join(":");
    assert!(
        ca_text.contains(&ski_hex),
        "SKI {ski_hex} not in\n{ca_text}"
    );
    // Serial below 2^63.
    let serial = run(
        &["openssl", "x509", "-noout", "-serial", "-in", "leaf.crt"],
        d.path(),
    );
    let hex = serial.trim().trim_start_matches("serial=");
    assert!(
        hex.len() <= 16 && u64::from_str_radix(hex, 16).unwrap() < (1u64 << 63),
        "{serial}"
    );
    // The key matches the certificate.
    let m1 = run(
        &["openssl", "x509", "-noout", "-modulus", "-in", "leaf.crt"],
        d.path(),
    );
    let m2 = run(
        &["openssl", "rsa", "-noout", "-modulus", "-in", "leaf.key"],
        d.path(),
    );
    assert_eq!(m1, m2);
}

#[test]
fn keys_round_trip_and_quirky_public_pem() {
    let k = RsaKey::generate().unwrap();
    assert_eq!(k.bits(), 2048);
    let pem = k.private_pem();
    assert!(pem.starts_with("-----BEGIN RSA PRIVATE KEY-----\n"));
    assert!(pem.lines().all(|l| l.len() <= 64));
    let back = RsaKey::from_pem(&pem).unwrap();
    assert_eq!(back.private_der(), k.private_der());
    let public = k.public_pem();
    assert!(public.starts_with("-----BEGIN RSA PUBLIC KEY-----\n"));
    // The body is PKIX, not PKCS#1: openssl reads it as a SubjectPublicKeyInfo.
    if have("openssl") {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("pub.der"), k.public_spki_der()).unwrap();
        let text = run(
            &[
                "openssl", "pkey", "-pubin", "-inform", "DER", "-in", "pub.der", "-noout", "-text",
            ],
            d.path(),
        );
        assert!(text.contains("Public-Key: (2048 bit)"), "{text}");
        // PKCS#8 input is accepted too.
        std::fs::write(d.path().join("k.pem"), &pem).unwrap();
        let p8 = run(
            &["openssl", "pkcs8", "-topk8", "-nocrypt", "-in", "k.pem"],
            d.path(),
        );
        assert_eq!(
            RsaKey::from_pem(&p8).unwrap().private_der(),
            k.private_der()
        );
    }
    assert!(matches!(
        RsaKey::from_pem("nothing"),
        Err(PkiError::NoPem(_))
    ));
}

#[test]
fn ssh_key_is_accepted_by_ssh_keygen() {
    let k = RsaKey::generate().unwrap();
    let line = k.ssh_authorized_key();
    assert!(line.starts_with("ssh-rsa AAAA") && line.ends_with('\n'));
    if !have("ssh-keygen") {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("k.pub"), &line).unwrap();
    let out = run(&["ssh-keygen", "-l", "-f", "k.pub"], d.path());
    assert!(
        out.starts_with("2048 SHA256:") && out.contains("(RSA)"),
        "{out}"
    );
}

#[test]
fn ca_subject_needs_cn_and_ou() {
    let mut cfg = ca_cfg();
    cfg.subject.retain(|(a, _)| *a == NameAttr::CommonName);
    let err = self_signed(
        &cfg,
        RsaKey::generate().unwrap(),
        time::OffsetDateTime::now_utc(),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "certification's subject is not set, or invalid"
    );
}

#[test]
fn key_pool_and_parallel_generation() {
    let pool = KeyPool::start(3, 2);
    let keys: Vec<RsaKey> = (0..4).map(|_| pool.take().unwrap()).collect();
    let mut ders: Vec<&[u8]> = keys.iter().map(|k| k.private_der()).collect();
    ders.sort();
    ders.dedup();
    assert_eq!(
        ders.len(),
        4,
        "every key is distinct, including the one made after the pool ran dry"
    );
    assert_eq!(generate_keys(3).unwrap().len(), 3);
}
