//! `registry::init` against the real programs: openssl checks the chain and
//! SANs, the real distribution registry (`docker-registry serve config.yml`)
//! runs on loopback with the generated TLS + htpasswd, and curl logs in.

use std::net::{IpAddr, Ipv4Addr};
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use okd_mirror_registry::registry::{self, InitOptions, files};
use okd_secret::ExposeSecret as _;
use okd_test_utils::{free_tcp_port, start_docker_registry};

/// Finds a program or, when missing, fails (OKD_REQUIRE_TOOLS=1) or skips
/// loudly, naming the Debian package.
fn tool(name: &str, package: &str) -> Option<PathBuf> {
    okd_test_utils::tool(name, &[], Some(package))
}

fn opts(dir: &Path, port: u16) -> InitOptions {
    InitOptions {
        dir: dir.to_path_buf(),
        output_dir: None,
        hostnames: vec!["localhost".into()],
        addresses: vec![IpAddr::V4(Ipv4Addr::LOCALHOST)],
        port,
        username: "okd".into(),
        password: Some("s3cret:with colon".into()),
        rotate_password: false,
        load_options: Default::default(),
    }
}

fn run(cmd: &mut Command) -> (bool, String) {
    let out = cmd.output().expect("run program");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

#[test]
fn files_modes_and_pull_secret_without_install_config() {
    let d = tempfile::tempdir().unwrap();
    let out = registry::init(&opts(d.path(), 5000)).unwrap();
    let reg = d.path().join(registry::DEFAULT_OUTPUT_DIR);
    assert_eq!(out.output_dir, reg);
    assert_eq!(out.registry, "localhost:5000");
    assert!(out.install_config.is_none() && !out.password_generated && !out.ca_reused);
    for (f, m) in [
        (files::CA_CERT, 0o644),
        (files::CA_KEY, 0o600),
        (files::SERVER_CERT, 0o644),
        (files::SERVER_KEY, 0o600),
        (files::HTPASSWD, 0o600),
        (files::CONFIG, 0o644),
        (files::PULL_SECRET, 0o600),
        (files::DATA_DIR, 0o700),
        ("", 0o750),
    ] {
        assert_eq!(mode(&reg.join(f)), m, "{f}");
    }
    let ps: serde_json::Value =
        serde_json::from_slice(&std::fs::read(reg.join(files::PULL_SECRET)).unwrap()).unwrap();
    assert_eq!(
        ps["auths"]["localhost:5000"]["auth"],
        "b2tkOnMzY3JldDp3aXRoIGNvbG9u" // base64("okd:s3cret:with colon")
    );
    // No stray temporary files.
    let names: Vec<String> = std::fs::read_dir(&reg)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().all(|n| !n.starts_with('.')), "{names:?}");

    // A re-run keeps the CA (so the cluster's trust stays valid) and renews the rest.
    let ca1 = std::fs::read_to_string(reg.join(files::CA_CERT)).unwrap();
    let srv1 = std::fs::read_to_string(reg.join(files::SERVER_CERT)).unwrap();
    let mut o = opts(d.path(), 5000);
    o.password = None;
    let htpasswd = std::fs::read(reg.join(files::HTPASSWD)).unwrap();
    let again = registry::init(&o).unwrap();
    assert!(again.ca_reused && again.login_kept && !again.password_generated);
    assert_eq!(
        again.password.expose_secret(),
        "s3cret:with colon",
        "the login is kept"
    );
    assert_eq!(std::fs::read(reg.join(files::HTPASSWD)).unwrap(), htpasswd);
    // A password other than the registry's needs --rotate-password.
    o.password = Some("other".into());
    let e = registry::init(&o).unwrap_err().to_string();
    assert!(e.contains("pass --rotate-password"), "{e}");
    o.password = None;
    o.rotate_password = true;
    let rotated = registry::init(&o).unwrap();
    assert!(rotated.password_generated && !rotated.login_kept);
    assert_eq!(
        rotated.password.expose_secret().len(),
        registry::GENERATED_PASSWORD_LEN
    );
    assert_ne!(std::fs::read(reg.join(files::HTPASSWD)).unwrap(), htpasswd);
    assert_eq!(
        std::fs::read_to_string(reg.join(files::CA_CERT)).unwrap(),
        ca1
    );
    assert_ne!(
        std::fs::read_to_string(reg.join(files::SERVER_CERT)).unwrap(),
        srv1
    );
}

#[test]
fn invalid_install_config_is_left_untouched() {
    let d = tempfile::tempdir().unwrap();
    let ic = "apiVersion: v1\nmetadata:\n  name: BAD_NAME\nbaseDomain: example.com\nplatform:\n  none: {}\npullSecret: '{\"auths\":{}}'\n";
    std::fs::write(d.path().join("install-config.yaml"), ic).unwrap();
    let err = registry::init(&opts(d.path(), 5000)).unwrap_err();
    assert!(
        err.to_string()
            .contains("refusing to write install-config.yaml"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(d.path().join("install-config.yaml")).unwrap(),
        ic
    );
    assert!(!d.path().join(registry::DEFAULT_OUTPUT_DIR).exists());
}

#[test]
fn real_registry_serves_tls_and_htpasswd() {
    let Some(openssl) = tool("openssl", "openssl") else {
        return;
    };
    let Some(curl) = tool("curl", "curl") else {
        return;
    };
    let registry_bin = tool("docker-registry", "docker-registry");

    let d = tempfile::tempdir().unwrap();
    let port = free_tcp_port();
    let out = registry::init(&opts(d.path(), port)).unwrap();
    let reg = out.output_dir.clone();
    let ca = reg.join(files::CA_CERT);
    let crt = reg.join(files::SERVER_CERT);

    let (ok, text) = run(Command::new(&openssl)
        .arg("verify")
        .arg("-CAfile")
        .arg(&ca)
        .arg(&crt));
    assert!(ok && text.contains(": OK"), "openssl verify: {text}");
    let (ok, text) = run(Command::new(&openssl)
        .args([
            "x509",
            "-noout",
            "-ext",
            "subjectAltName,extendedKeyUsage",
            "-in",
        ])
        .arg(&crt));
    assert!(ok, "{text}");
    assert!(
        text.contains("DNS:localhost") && text.contains("IP Address:127.0.0.1"),
        "{text}"
    );
    assert!(text.contains("TLS Web Server Authentication"), "{text}");
    let (ok, text) = run(Command::new(&openssl)
        .args(["x509", "-noout", "-ext", "basicConstraints", "-in"])
        .arg(&ca));
    assert!(ok && text.contains("CA:TRUE"), "{text}");

    let Some(registry_bin) = registry_bin else {
        return;
    };
    let registry = start_docker_registry(
        &registry_bin,
        &out.config,
        &d.path().join("registry.log"),
        port,
    );

    let url = format!("https://localhost:{port}/v2/");
    let code = |url: &str, extra: &[&str]| {
        let (_, text) = run(Command::new(&curl)
            .args([
                "-sS",
                "-o",
                "/dev/null",
                "-w",
                "%{http_code}",
                "--max-time",
                "10",
            ])
            .arg("--cacert")
            .arg(&ca)
            .args(extra)
            .arg(url));
        text
    };
    assert_eq!(code(&url, &[]), "401");
    assert_eq!(code(&url, &["-u", "okd:wrong"]), "401");
    assert_eq!(code(&url, &["-u", "okd:s3cret:with colon"]), "200");
    // By IP address too (IP SAN).
    let by_ip = format!("https://127.0.0.1:{port}/v2/");
    assert_eq!(code(&by_ip, &["-u", "okd:s3cret:with colon"]), "200");
    // Without the CA the client refuses the certificate.
    let (ok, text) = run(Command::new(&curl)
        .args(["-sS", "-o", "/dev/null", "--max-time", "10"])
        .arg(&url));
    assert!(!ok, "curl without --cacert must fail: {text}");
    drop(registry);
}
