//! `okd-install assisted serve` as a user starts it, with no security
//! flags (issue #41): authentication is on, its secrets are private files,
//! the client commands find the admin token, unauthenticated calls are
//! refused; the unsafe or weak choices are refused with the rule.

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn okd() -> Command {
    Command::new(env!("CARGO_BIN_EXE_okd-install"))
}

/// The HTTP status of `GET url` by curl, with `args` added (0: no answer).
fn status(url: &str, args: &[&str]) -> u16 {
    let out = Command::new("curl")
        .args([
            "-s",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            "--max-time",
            "5",
        ])
        .args(args)
        .arg(url)
        .output()
        .expect("curl");
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or(0)
}

struct Service(Child);

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `okd-install --dir <dir> assisted clusters --url <url> <args>` with
/// `OKD_ASSISTED_TOKEN` set to `token` or unset: its output.
fn clusters(dir: &Path, url: &str, args: &[&str], token: Option<&str>) -> std::process::Output {
    let mut c = okd();
    c.args(["--dir", &dir.display().to_string()])
        .args(["assisted", "clusters", "--url", url])
        .args(args)
        .env_remove("OKD_ASSISTED_TOKEN");
    if let Some(t) = token {
        c.env("OKD_ASSISTED_TOKEN", t);
    }
    c.output().unwrap()
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

#[test]
fn a_default_start_requires_the_generated_token() {
    if Command::new("curl").arg("--version").output().is_err() {
        assert!(
            std::env::var_os("OKD_REQUIRE_TOOLS").is_none(),
            "curl is required"
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let svc_dir = dir.path().join("svc");
    let log = dir.path().join("service.log");
    let port = okd_test_utils::free_tcp_port();
    let listen = format!("127.0.0.1:{port}");
    let child = okd()
        .args(["--dir", &svc_dir.display().to_string()])
        .args(["assisted", "serve", "--listen", &listen])
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&log).unwrap())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let _svc = Service(child);
    let url = format!("https://{listen}/api/assisted-install/v2/clusters");
    let secrets = svc_dir.join("assisted-service");
    let ca = secrets.join("ca.crt");
    let ca_arg = ca.display().to_string();
    let deadline = Instant::now() + Duration::from_secs(30);
    while status(&url, &["--cacert", &ca_arg]) == 0 {
        assert!(
            Instant::now() < deadline,
            "the service did not answer:\n{}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    // TLS: checked with the service's CA only; plain HTTP gets no answer.
    assert_eq!(status(&url, &[]), 0, "not trusted by the system's roots");
    assert_eq!(
        status(
            &format!("http://{listen}/api/assisted-install/v2/clusters"),
            &[]
        ),
        0
    );
    let ca_only = ["--cacert", ca_arg.as_str()];
    // Unauthenticated, a wrong token: refused.
    assert_eq!(status(&url, &ca_only), 401);
    assert_eq!(
        status(
            &url,
            &["--cacert", &ca_arg, "-H", "Authorization: Bearer guess"]
        ),
        401
    );
    // The generated secrets: private files in a private directory.
    assert_eq!(mode(&secrets), 0o700);
    assert_eq!(mode(&secrets.join("ca.key")), 0o600);
    let token_file = secrets.join("admin-token");
    assert_eq!(mode(&token_file), 0o600);
    assert_eq!(mode(&secrets.join("agent-signing-key.pem")), 0o600);
    let token = std::fs::read_to_string(&token_file)
        .unwrap()
        .trim()
        .to_string();
    assert!(token.len() >= 43, "256 bits: {} characters", token.len());
    assert_eq!(
        status(
            &url,
            &[
                "--cacert",
                &ca_arg,
                "-H",
                &format!("Authorization: Bearer {token}")
            ]
        ),
        200
    );
    // The log says where the token is, never what it is.
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains(&token_file.display().to_string()), "{text}");
    assert!(!text.contains(&token), "the token is not logged");

    // The client commands with the service's --dir find the token ...
    let https = format!("https://{listen}");
    let out = clusters(&svc_dir, &https, &[], None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // ... elsewhere they are refused, with what to do.
    let out = clusters(dir.path(), &https, &["--cacert", &ca_arg], None);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("401") && err.contains("admin-token"), "{err}");
    let out = clusters(dir.path(), &https, &[], Some(&token));
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("does not trust") && err.contains("--cacert"),
        "{err}"
    );
    let out = clusters(dir.path(), &https, &["--cacert", &ca_arg], Some(&token));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `okd-install --dir <dir> assisted serve <args>` that must fail at once:
/// its exit code and standard error.
fn serve_refused(dir: &str, args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String) {
    let out = okd()
        .args(["--dir", dir, "assisted", "serve"])
        .args(args)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn unsafe_and_weak_choices_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    // No authentication, or no TLS, off loopback.
    for flag in ["--insecure-no-auth", "--insecure-http"] {
        let (code, err) = serve_refused(&d, &[flag, "--listen", "0.0.0.0:0"], &[]);
        assert_eq!(code, Some(1), "{err}");
        assert!(
            err.contains(&format!("{flag} on 0.0.0.0:0")) && err.contains("loopback only"),
            "{err}"
        );
    }
    // A guessable token.
    let (code, err) = serve_refused(
        &d,
        &["--listen", "127.0.0.1:0"],
        &[("OKD_ASSISTED_AUTH_TOKEN", "letmein")],
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("OKD_ASSISTED_AUTH_TOKEN") && err.contains("at least 128 bits"),
        "{err}"
    );
    assert!(!err.contains("letmein"), "the token is not echoed: {err}");
    // Both at once makes no sense.
    let (code, err) = serve_refused(
        &d,
        &[
            "--insecure-no-auth",
            "--auth-token",
            "0123456789abcdef0123456789abcdef",
        ],
        &[],
    );
    assert_ne!(code, Some(0));
    assert!(err.contains("cannot be used with"), "{err}");
}
