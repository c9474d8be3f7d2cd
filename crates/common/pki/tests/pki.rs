//! Integration tests for okd-pki against openshift/installer's
//! `pkg/asset/tls/tls.go` rules, checked with the
//! real `openssl` (and `ssh-keygen` when installed).

use std::net::IpAddr;
use std::path::Path;
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use okd_pki::{
    CertConfig, CertKey, ExtKeyUsage, KeyPool, KeyUsage, NameAttr, PkiError, RsaKey,
    first_cert_of_bundle, generate_keys, parse_certs, pem_with_parent, self_signed, signed,
};
use sha1::Digest;
use time::OffsetDateTime;

const DAY: Duration = Duration::from_secs(24 * 3600);
const TEN_YEARS: Duration = Duration::from_secs(3650 * 24 * 3600);

fn keys() -> &'static Vec<RsaKey> {
    static KEYS: OnceLock<Vec<RsaKey>> = OnceLock::new();
    KEYS.get_or_init(|| generate_keys(4).expect("keygen"))
}

fn now() -> OffsetDateTime {
    OffsetDateTime::now_utc().replace_nanosecond(0).unwrap()
}

fn ca_cfg(cn: &str, validity: Duration) -> CertConfig {
    CertConfig {
        subject: vec![
            (NameAttr::OrganizationalUnit, "openshift".into()),
            (NameAttr::CommonName, cn.into()),
        ],
        dns_names: vec![],
        ip_addresses: vec![],
        key_usage: KeyUsage {
            digital_signature: true,
            key_encipherment: true,
            cert_sign: true,
        },
        ext_key_usage: vec![],
        validity,
        is_ca: true,
    }
}

fn server_cfg() -> CertConfig {
    CertConfig {
        subject: vec![
            (NameAttr::Organization, "kube-master".into()),
            (NameAttr::CommonName, "system:kube-apiserver".into()),
        ],
        dns_names: vec!["localhost".into()],
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
        validity: DAY,
        is_ca: false,
    }
}

fn ca_and_leaf() -> (CertKey, CertKey) {
    let ca = self_signed(
        &ca_cfg("kube-apiserver-localhost-signer", TEN_YEARS),
        keys()[0].clone(),
        now(),
    )
    .unwrap();
    let leaf = signed(
        &server_cfg(),
        keys()[1].clone(),
        &ca,
        now() + time::Duration::minutes(3),
    )
    .unwrap();
    (ca, leaf)
}

fn openssl(args: &[&str], stdin_file: Option<&Path>) -> (bool, String) {
    let mut cmd = Command::new("openssl");
    cmd.args(args);
    if let Some(f) = stdin_file {
        cmd.stdin(std::fs::File::open(f).unwrap());
    }
    let out = cmd.output().expect("openssl runs");
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

fn tmpfile(dir: &Path, name: &str, contents: &str) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, contents).unwrap();
    p
}

fn tmpdir(tag: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("okd-pki-test-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn text(dir: &Path, name: &str, pem: &str) -> String {
    let f = tmpfile(dir, name, pem);
    let (ok, out) = openssl(
        &[
            "x509",
            "-noout",
            "-text",
            "-nameopt",
            "RFC2253",
            "-in",
            f.to_str().unwrap(),
        ],
        None,
    );
    assert!(ok, "{out}");
    out
}

#[test]
fn openssl_verifies_leaf_against_ca() {
    let (ca, leaf) = ca_and_leaf();
    let d = tmpdir("verify");
    let caf = tmpfile(&d, "ca.crt", &ca.cert.pem);
    let lf = tmpfile(&d, "leaf.crt", &leaf.cert.pem);
    let (ok, out) = openssl(
        &[
            "verify",
            "-purpose",
            "sslserver",
            "-CAfile",
            caf.to_str().unwrap(),
            lf.to_str().unwrap(),
        ],
        None,
    );
    assert!(ok && out.contains(": OK"), "{out}");
    // The chained ("AppendParent") file parses as two certificates.
    let chain = pem_with_parent(&leaf.cert, &ca.cert);
    assert!(chain.contains("-----END CERTIFICATE-----\n\n-----BEGIN CERTIFICATE-----\n"));
    let infos = parse_certs(&chain).unwrap();
    assert_eq!(infos.len(), 2);
    assert_eq!(first_cert_of_bundle(&chain).unwrap(), leaf.cert.pem);
}

#[test]
fn openssl_text_shows_profile() {
    let (ca, leaf) = ca_and_leaf();
    let d = tmpdir("text");
    let t = text(&d, "ca.crt", &ca.cert.pem);
    assert!(
        t.contains("Subject: CN=kube-apiserver-localhost-signer,OU=openshift"),
        "{t}"
    );
    assert!(
        t.contains("Issuer: CN=kube-apiserver-localhost-signer,OU=openshift"),
        "{t}"
    );
    assert!(t.contains("Version: 3 (0x2)"), "{t}");
    assert!(t.contains("sha256WithRSAEncryption"), "{t}");
    assert!(t.contains("Public-Key: (2048 bit)"), "{t}");
    assert!(t.contains("Exponent: 65537"), "{t}");
    assert!(t.contains("X509v3 Key Usage: critical\n                Digital Signature, Key Encipherment, Certificate Sign"), "{t}");
    assert!(
        t.contains("X509v3 Basic Constraints: critical\n                CA:TRUE\n"),
        "{t}"
    );
    assert!(!t.contains("Authority Key Identifier"), "{t}");

    let t = text(&d, "leaf.crt", &leaf.cert.pem);
    assert!(
        t.contains("Subject: CN=system:kube-apiserver,O=kube-master"),
        "{t}"
    );
    assert!(
        t.contains(
            "X509v3 Key Usage: critical\n                Digital Signature, Key Encipherment\n"
        ),
        "{t}"
    );
    assert!(
        t.contains("X509v3 Extended Key Usage: \n                TLS Web Server Authentication\n"),
        "{t}"
    );
    assert!(
        t.contains("X509v3 Basic Constraints: critical\n                CA:FALSE"),
        "{t}"
    );
    assert!(
        t.contains("DNS:localhost, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1"),
        "{t}"
    );
    assert!(t.contains("X509v3 Authority Key Identifier"), "{t}");
}

#[test]
fn multi_valued_organization_and_no_key_usage() {
    let (ca, _) = ca_and_leaf();
    let cfg = CertConfig {
        subject: vec![
            (
                NameAttr::Organization,
                "system:serviceaccounts:openshift-machine-config-operator".into(),
            ),
            (NameAttr::Organization, "system:serviceaccounts".into()),
            (
                NameAttr::CommonName,
                "system:serviceaccount:openshift-machine-config-operator:node-bootstrapper".into(),
            ),
        ],
        dns_names: vec![],
        ip_addresses: vec![],
        key_usage: KeyUsage::default(),
        ext_key_usage: vec![ExtKeyUsage::ClientAuth],
        validity: TEN_YEARS,
        is_ca: false,
    };
    let c = signed(&cfg, keys()[2].clone(), &ca, now()).unwrap();
    let d = tmpdir("multi");
    let t = text(&d, "c.crt", &c.cert.pem);
    // One RDN holding both O values, DER-sorted (shorter encoding first);
    // openssl's RFC 2253 output reverses every entry, so the longer prints first.
    assert!(
        t.contains("Subject: CN=system:serviceaccount:openshift-machine-config-operator:node-bootstrapper,O=system:serviceaccounts:openshift-machine-config-operator+O=system:serviceaccounts\n"),
        "{t}"
    );
    let short = c
        .cert
        .der
        .windows(22)
        .position(|w| w == b"system:serviceaccounts")
        .unwrap();
    let long = c
        .cert
        .der
        .windows(23)
        .position(|w| w == b"system:serviceaccounts:")
        .unwrap();
    assert!(short < long, "DER SET OF sorted");
    assert!(!t.contains("X509v3 Key Usage"), "{t}");
    assert!(t.contains("TLS Web Client Authentication"), "{t}");
}

fn ext_value<'a>(
    c: &'a x509_parser::certificate::X509Certificate<'a>,
    oid: &str,
) -> Option<&'a [u8]> {
    c.extensions()
        .iter()
        .find(|e| e.oid.to_id_string() == oid)
        .map(|e| e.value)
}

#[test]
fn ski_aki_serial_and_times() {
    let t0 = now();
    let ca = self_signed(&ca_cfg("root-ca", TEN_YEARS), keys()[0].clone(), t0).unwrap();
    let later = t0 + time::Duration::minutes(5);
    let leaf = signed(&server_cfg(), keys()[1].clone(), &ca, later).unwrap();
    let (_, cac) = x509_parser::parse_x509_certificate(&ca.cert.der).unwrap();
    let (_, lc) = x509_parser::parse_x509_certificate(&leaf.cert.der).unwrap();

    let want = sha1::Sha1::digest(keys()[0].public_pkcs1_der()).to_vec();
    let ski = ext_value(&cac, "2.5.29.14").unwrap();
    assert_eq!(&ski[2..], &want[..], "SKI = SHA-1(PKCS#1 public key)");
    let want_leaf = sha1::Sha1::digest(keys()[1].public_pkcs1_der()).to_vec();
    assert_eq!(&ext_value(&lc, "2.5.29.14").unwrap()[2..], &want_leaf[..]);
    let aki = ext_value(&lc, "2.5.29.35").unwrap();
    assert_eq!(&aki[4..], &want[..], "AKI keyid = CA SKI");
    assert!(ext_value(&cac, "2.5.29.35").is_none());

    for c in [&cac, &lc] {
        let serial = c.tbs_certificate.raw_serial();
        let serial = if serial[0] == 0 { &serial[1..] } else { serial };
        assert!(
            serial.len() < 8 || (serial.len() == 8 && serial[0] < 0x80),
            "serial < 2^63: {serial:?}"
        );
    }

    assert_eq!(ca.cert.not_before, t0);
    assert_eq!(ca.cert.not_after, t0 + time::Duration::days(3650));
    assert_eq!(leaf.cert.not_before, t0, "leaf NotBefore = CA NotBefore");
    assert_eq!(leaf.cert.not_after, later + time::Duration::days(1));

    let info = &parse_certs(&ca.cert.pem).unwrap()[0];
    assert_eq!(info.subject, "CN=root-ca,OU=openshift");
    assert_eq!(info.issuer, info.subject);
    assert!(info.is_ca);
    assert_eq!(info.not_before, ca.cert.not_before);
    assert_eq!(info.not_after, ca.cert.not_after);
    let info = &parse_certs(&leaf.cert.pem).unwrap()[0];
    assert_eq!(info.issuer, "CN=root-ca,OU=openshift");
    assert_eq!(info.dns_names, vec!["localhost".to_string()]);
    assert!(!info.is_ca);
}

#[test]
fn self_signed_requires_cn_and_ou() {
    let mut cfg = ca_cfg("x", DAY);
    cfg.subject.retain(|(a, _)| *a == NameAttr::CommonName);
    let err = self_signed(&cfg, keys()[3].clone(), now()).unwrap_err();
    assert!(matches!(err, PkiError::Subject));
    assert_eq!(
        err.to_string(),
        "certification's subject is not set, or invalid"
    );
}

#[test]
fn far_future_uses_generalized_time() {
    let t = OffsetDateTime::from_unix_timestamp(2_500_000_000).unwrap(); // 2049
    let ca = self_signed(&ca_cfg("future", TEN_YEARS), keys()[3].clone(), t).unwrap();
    let d = tmpdir("future");
    let out = text(&d, "f.crt", &ca.cert.pem);
    assert!(out.contains("2059 GMT"), "{out}");
    assert_eq!(
        parse_certs(&ca.cert.pem).unwrap()[0].not_after,
        ca.cert.not_after
    );
}

#[test]
fn key_pem_round_trips() {
    let key = &keys()[0];
    assert_eq!(key.bits(), 2048);
    let pem = key.private_pem();
    assert!(pem.starts_with("-----BEGIN RSA PRIVATE KEY-----\n"));
    assert!(pem.ends_with("-----END RSA PRIVATE KEY-----\n"));
    assert!(pem.lines().all(|l| l.len() <= 64));
    let back = RsaKey::from_pem(&pem).unwrap();
    assert_eq!(back.private_der(), key.private_der());
    assert_eq!(back.public_pem(), key.public_pem());

    let d = tmpdir("keys");
    let kf = tmpfile(&d, "k.key", &pem);
    let (ok, out) = openssl(
        &["rsa", "-check", "-noout", "-in", kf.to_str().unwrap()],
        None,
    );
    assert!(ok && out.contains("RSA key ok"), "{out}");
    // PKCS#8 produced by openssl loads to the same key.
    let (ok, pkcs8) = openssl(
        &["pkcs8", "-topk8", "-nocrypt", "-in", kf.to_str().unwrap()],
        None,
    );
    assert!(ok, "{pkcs8}");
    assert!(pkcs8.contains("-----BEGIN PRIVATE KEY-----"));
    assert_eq!(
        RsaKey::from_pem(&pkcs8).unwrap().private_der(),
        key.private_der()
    );

    // Public key: "RSA PUBLIC KEY" header over a PKIX body (an openshift/installer
    // `pkg/asset/tls` quirk).
    let pubpem = key.public_pem();
    assert!(pubpem.starts_with("-----BEGIN RSA PUBLIC KEY-----\n"));
    let pkix = pubpem.replace("RSA PUBLIC KEY", "PUBLIC KEY");
    let pf = tmpfile(&d, "k.pub", &pkix);
    let (ok, a) = openssl(
        &[
            "rsa",
            "-pubin",
            "-noout",
            "-modulus",
            "-in",
            pf.to_str().unwrap(),
        ],
        None,
    );
    assert!(ok, "{a}");
    let (ok, b) = openssl(
        &["rsa", "-noout", "-modulus", "-in", kf.to_str().unwrap()],
        None,
    );
    assert!(ok, "{b}");
    assert_eq!(a, b);

    assert!(RsaKey::from_pem("nothing here").is_err());
}

#[test]
fn ssh_authorized_key_is_accepted() {
    let key = &keys()[1];
    let line = key.ssh_authorized_key();
    assert!(
        line.starts_with("ssh-rsa AAAA") && line.ends_with('\n'),
        "{line}"
    );
    let ok = Command::new("ssh-keygen").arg("-?").output().is_ok();
    if !ok {
        eprintln!("ssh-keygen not installed; skipping fingerprint check");
        return;
    }
    let d = tmpdir("ssh");
    let f = tmpfile(&d, "id.pub", &line);
    let out = Command::new("ssh-keygen")
        .args(["-l", "-f", f.to_str().unwrap()])
        .output()
        .unwrap();
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && s.starts_with("2048 ") && s.contains("(RSA)"),
        "{s}"
    );
}

#[test]
fn key_pool_hands_out_distinct_keys() {
    let pool = KeyPool::start(3, 2);
    let ks: Vec<RsaKey> = (0..4).map(|_| pool.take().unwrap()).collect(); // 4th falls back to inline
    for i in 0..ks.len() {
        for j in i + 1..ks.len() {
            assert_ne!(ks[i].private_der(), ks[j].private_der());
        }
    }
    drop(KeyPool::start(50, 2)); // dropping early must not hang
}
