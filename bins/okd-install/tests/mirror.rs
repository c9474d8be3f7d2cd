//! `okd-install mirror registry init` on the single-master example: the
//! login lands in pullSecret, the CA in additionalTrustBundle, and
//! `create manifests` carries the CA into the user-ca-bundle ConfigMap.

mod common;
mod mirror_support;

use std::path::Path;

use base64::Engine as _;
use common::{example_dir, okd, okd_ok};
use mirror_support::{PidGuard, assert_fails_with, need, registry_init, registry_pid};
use serde_yaml_ng::Value as Yaml;

fn read_yaml(p: &Path) -> Yaml {
    serde_yaml_ng::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// The base64 body of a PEM certificate, without line breaks.
fn body(pem: &str) -> String {
    pem.lines()
        .map(str::trim)
        .filter(|l| !l.starts_with("-----"))
        .collect()
}

#[test]
fn init_updates_install_config_and_manifests_carry_the_ca() {
    let d = example_dir("baremetal-single-master");
    let dir = d.path();
    let original = read_yaml(&dir.join("install-config.yaml"));
    let old_bundle = original["additionalTrustBundle"]
        .as_str()
        .unwrap()
        .to_string();
    let pw = dir.join("password");
    std::fs::write(&pw, "s3cret\n").unwrap();
    let err = okd_ok(
        dir,
        &[
            &registry_init("registry.okd.example", "192.168.120.101")[..],
            &[
                "--port",
                "5000",
                "--username",
                "okd",
                "--password-file",
                pw.to_str().unwrap(),
            ],
        ]
        .concat(),
    );
    assert!(
        err.contains("level=info msg=Added registry.okd.example:5000 to pullSecret"),
        "{err}"
    );
    let reg = dir.join("mirror-registry");
    let ca = std::fs::read_to_string(reg.join("ca.crt")).unwrap();

    let text = std::fs::read_to_string(dir.join("install-config.yaml")).unwrap();
    assert!(
        text.contains("# cluster name"),
        "comments are kept:\n{text}"
    );
    let ic: Yaml = serde_yaml_ng::from_str(&text).unwrap();
    let bundle = ic["additionalTrustBundle"].as_str().unwrap();
    assert!(bundle.contains(old_bundle.trim_end()), "old CA kept");
    assert!(bundle.contains(ca.trim_end()), "new CA added");
    assert!(
        ic.get("additionalTrustBundlePolicy").is_none(),
        "policy left to its default"
    );
    let ps: serde_json::Value = serde_json::from_str(ic["pullSecret"].as_str().unwrap()).unwrap();
    assert_eq!(
        ps["auths"]["registry.okd.example:5000"]["auth"],
        base64::engine::general_purpose::STANDARD.encode("okd:s3cret")
    );
    let file_ps: serde_json::Value =
        serde_json::from_slice(&std::fs::read(reg.join("pull-secret.json")).unwrap()).unwrap();
    assert_eq!(file_ps, ps);
    for k in [
        "metadata",
        "networking",
        "imageContentSources",
        "sshKey",
        "platform",
    ] {
        assert_eq!(ic[k], original[k], "{k} unchanged");
    }

    // Running it again keeps the CA: the bundle does not grow.
    okd_ok(
        dir,
        &[
            &registry_init("registry.okd.example", "192.168.120.101")[..],
            &["--password-file", pw.to_str().unwrap()],
        ]
        .concat(),
    );
    let again = read_yaml(&dir.join("install-config.yaml"));
    assert_eq!(again["additionalTrustBundle"].as_str().unwrap(), bundle);

    okd_ok(dir, &["create", "manifests"]);
    let mut found = Vec::new();
    for sub in ["manifests", "openshift"] {
        for e in std::fs::read_dir(dir.join(sub)).unwrap() {
            let p = e.unwrap().path();
            let t = std::fs::read_to_string(&p).unwrap();
            if t.contains("name: user-ca-bundle") && t.contains("kind: ConfigMap") {
                found.push(p);
            }
        }
    }
    assert_eq!(found.len(), 1, "one user-ca-bundle ConfigMap: {found:?}");
    let cm = read_yaml(&found[0]);
    let data = cm["data"]["ca-bundle.crt"].as_str().unwrap();
    assert!(
        body(data).contains(&body(&ca)),
        "ConfigMap holds the mirror CA"
    );
    assert!(body(data).contains(&body(&old_bundle)), "and the old one");
}

#[test]
fn bad_options_fail_without_writing() {
    let d = example_dir("baremetal-single-master");
    let before = std::fs::read_to_string(d.path().join("install-config.yaml")).unwrap();
    let out = okd(
        d.path(),
        &[
            "mirror",
            "registry",
            "init",
            "--hostname",
            "bad_name",
            "--port",
            "5000",
        ],
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("level=error") && err.contains("bad_name"),
        "{err}"
    );
    let after = std::fs::read_to_string(d.path().join("install-config.yaml")).unwrap();
    assert_eq!(before, after);
    assert!(!d.path().join("mirror-registry").exists());
}

#[test]
fn install_config_that_would_not_validate_exits_3_untouched() {
    let d = example_dir("baremetal-single-master");
    let ic = d.path().join("install-config.yaml");
    let broken = std::fs::read_to_string(&ic)
        .unwrap()
        .replace("  name: okd ", "  name: NOT_A_DNS_NAME ");
    std::fs::write(&ic, &broken).unwrap();
    let out = okd(
        d.path(),
        &[
            "mirror",
            "registry",
            "init",
            "--hostname",
            "registry.okd.example",
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains("refusing to write install-config.yaml") && err.contains("metadata.name"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&ic).unwrap(), broken);
    assert!(!d.path().join("mirror-registry").exists());
}

/// `mirror registry stop` signals only the registry it started: a PID file
/// naming another process (a `sleep`, or an impostor whose command line
/// says `serve <config.yml>`) is refused with what that process is, and
/// the process lives on.
#[test]
fn registry_stop_refuses_a_pid_that_is_not_the_registry() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    okd_ok(dir, &registry_init("localhost", "127.0.0.1"));
    let reg = dir.join("mirror-registry");
    let config = reg.join("config.yml");
    let python = okd_test_utils::tool("python3", &[], Some("python3"));
    let mut impostors = vec![(
        "sleep 300".to_string(),
        std::process::Command::new("sleep")
            .arg("300")
            .spawn()
            .unwrap(),
    )];
    if let Some(py) = python {
        let child = std::process::Command::new(py)
            .args(["-c", "import time; time.sleep(300)", "serve"])
            .arg(&config)
            .spawn()
            .unwrap();
        impostors.push((format!("serve {}", config.display()), child));
    }
    for (cmdline, child) in impostors {
        let mut guard = okd_test_utils::ChildGuard(child);
        let pid = guard.0.id();
        std::fs::write(reg.join("registry.pid"), format!("{pid}\n")).unwrap();
        let out = okd(dir, &["mirror", "registry", "stop"]);
        let err = assert_fails_with(&out, &format!("refusing to stop PID {pid} of "));
        assert!(
            err.contains(&cmdline)
                && err.contains(&format!("not docker-registry serving {}", config.display())),
            "{err}"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
        assert!(
            guard.0.try_wait().unwrap().is_none(),
            "{cmdline} must survive: {err}"
        );
        assert!(reg.join("registry.pid").exists(), "the PID file is kept");
    }
}

/// The password `init` said it generated (`Generated a password for user
/// okd: it is in <pull secret> …`), read from that file (issue #42 item
/// 2): it appears in neither of `init`'s outputs.
fn generated_password(out: &std::process::Output, registry: &str) -> Option<String> {
    let (stdout, stderr) = mirror_support::text(out);
    let line = stdout
        .lines()
        .find(|l| l.starts_with("Generated a password for user okd: it is in "))?;
    let path = line
        .strip_prefix("Generated a password for user okd: it is in ")?
        .split(" (0600")
        .next()?;
    let login = login_in(&std::fs::read_to_string(path).unwrap(), registry);
    let pw = login.strip_prefix("okd:").unwrap().to_string();
    assert!(
        !stdout.contains(&pw) && !stderr.contains(&pw),
        "the password is never printed: {stdout}{stderr}"
    );
    Some(pw)
}

/// The `auth` of `registry` in a pull secret JSON text, decoded.
fn login_in(pull_secret: &str, registry: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(pull_secret).unwrap();
    let auth = v["auths"][registry]["auth"].as_str().unwrap();
    String::from_utf8(
        base64::engine::general_purpose::STANDARD
            .decode(auth)
            .unwrap(),
    )
    .unwrap()
}

/// Issue #26, 4: `mirror registry init` run again keeps the login the
/// running registry, pull-secret.json and install-config carry; only
/// `--rotate-password` replaces it, everywhere at once (the running real
/// registry takes the new htpasswd, the old login then gets 401).
#[test]
fn init_again_keeps_the_login_and_rotate_password_replaces_it() {
    let (Some(registry), Some(curl)) = (
        need("docker-registry", "docker-registry"),
        need("curl", "curl"),
    ) else {
        return;
    };
    let d = example_dir("baremetal-single-master");
    let dir = d.path();
    let port = okd_test_utils::free_tcp_port().to_string();
    let name = format!("localhost:{port}");
    let reg = dir.join("mirror-registry");
    let init = |extra: &[&str]| {
        okd(
            dir,
            &[
                &registry_init("localhost", "127.0.0.1")[..],
                &[
                    "--port",
                    &port,
                    "--registry-program",
                    registry.to_str().unwrap(),
                ],
                extra,
            ]
            .concat(),
        )
    };
    let out = init(&["--start"]);
    let (_, stderr) = mirror_support::text(&out);
    assert!(out.status.success(), "{stderr}");
    let _registry = PidGuard(registry_pid(&reg));
    let pw = generated_password(&out, &name).expect("a generated password");
    assert_eq!(
        common::mode(&reg),
        0o750,
        "mirror-registry/ as create makes folders"
    );
    let status = |password: &str| {
        let out = std::process::Command::new(&curl)
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
            .arg(reg.join("ca.crt"))
            .args(["-u", &format!("okd:{password}")])
            .arg(format!("https://{name}/v2/"))
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert_eq!(status(&pw), "200");
    let ic = || {
        read_yaml(&dir.join("install-config.yaml"))["pullSecret"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let htpasswd = std::fs::read(reg.join("htpasswd")).unwrap();

    // Again, without --rotate-password: same login everywhere, nothing printed.
    let out = init(&[]);
    let (stdout, stderr) = mirror_support::text(&out);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(generated_password(&out, &name), None, "{stdout}");
    assert!(
        stderr.contains("Kept the existing login of user okd"),
        "{stderr}"
    );
    assert!(stderr.contains("Start it with"), "{stderr}");
    assert_eq!(std::fs::read(reg.join("htpasswd")).unwrap(), htpasswd);
    assert_eq!(status(&pw), "200", "the old login still works");
    assert_eq!(login_in(&ic(), &name), format!("okd:{pw}"));
    let ps = std::fs::read_to_string(reg.join("pull-secret.json")).unwrap();
    assert_eq!(login_in(&ps, &name), format!("okd:{pw}"));

    // Another password without --rotate-password: refused, nothing changed.
    let other = dir.join("other-password");
    std::fs::write(&other, "an0ther-pass\n").unwrap();
    let before_ic = ic();
    let out = init(&["--password-file", other.to_str().unwrap()]);
    assert_fails_with(&out, "pass --rotate-password to replace it");
    assert_eq!(ic(), before_ic);
    assert_eq!(status(&pw), "200");

    // --rotate-password: a new password in htpasswd, pull-secret.json and
    // install-config; the running registry takes it, the old one is refused.
    let out = init(&["--rotate-password"]);
    let (_, stderr) = mirror_support::text(&out);
    assert!(out.status.success(), "{stderr}");
    let pw2 = generated_password(&out, &name).expect("a new generated password");
    assert_ne!(pw2, pw);
    assert_eq!(login_in(&ic(), &name), format!("okd:{pw2}"));
    let ps = std::fs::read_to_string(reg.join("pull-secret.json")).unwrap();
    assert_eq!(login_in(&ps, &name), format!("okd:{pw2}"));
    assert_eq!(status(&pw2), "200");
    assert_eq!(status(&pw), "401");
    okd_ok(
        dir,
        &[
            "mirror",
            "registry",
            "stop",
            "--registry-program",
            registry.to_str().unwrap(),
        ],
    );
}

/// Issue #26, 5: `start` says "running" only when its own registry
/// listens. A port held by another process: init --start and start fail
/// with the registry's bind error and leave nothing running.
#[test]
fn start_with_the_port_held_by_another_process_fails() {
    let Some(registry) = need("docker-registry", "docker-registry") else {
        return;
    };
    let program = registry.to_str().unwrap();
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    let holder = std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0)).unwrap();
    let port = holder.local_addr().unwrap().port().to_string();
    let reg = dir.join("mirror-registry");
    let out = okd(
        dir,
        &[
            &registry_init("localhost", "127.0.0.1")[..],
            &["--port", &port, "--start", "--registry-program", program],
        ]
        .concat(),
    );
    if out.status.success() {
        // What the bug left behind: whatever it started.
        let _ = PidGuard(registry_pid(&reg));
    }
    for out in [
        out,
        okd(
            dir,
            &["mirror", "registry", "start", "--registry-program", program],
        ),
    ] {
        let err = assert_fails_with(&out, "the registry exited");
        assert!(
            err.contains("registry.log") && err.contains("address already in use"),
            "{err}"
        );
        assert!(!err.contains("Mirror registry running"), "{err}");
        assert!(!reg.join("registry.pid").exists(), "no PID file left");
    }
    drop(holder);
}

/// Issue #26, 5 and 8: with no --address the registry listens on all
/// interfaces (`:port`); init --start reports it running as soon as it
/// listens (probed on loopback), and does not say "Start it with".
#[test]
fn start_on_a_wildcard_address_is_ready_at_once() {
    let Some(registry) = need("docker-registry", "docker-registry") else {
        return;
    };
    let program = registry.to_str().unwrap();
    let d2 = tempfile::tempdir().unwrap();
    let dir2 = d2.path();
    let port = okd_test_utils::free_tcp_port().to_string();
    let t0 = std::time::Instant::now();
    let out = okd(
        dir2,
        &[
            "mirror",
            "registry",
            "init",
            "--hostname",
            "localhost",
            "--port",
            &port,
            "--start",
            "--registry-program",
            program,
        ],
    );
    let took = t0.elapsed();
    let reg2 = dir2.join("mirror-registry");
    let guard = reg2
        .join("registry.pid")
        .exists()
        .then(|| PidGuard(registry_pid(&reg2)));
    let (_, err) = mirror_support::text(&out);
    assert!(out.status.success(), "{err}");
    let pid = guard.as_ref().expect("a PID file").0;
    assert!(
        err.contains(&format!("Mirror registry running on :{port} (PID {pid})")),
        "{err}"
    );
    assert!(took < std::time::Duration::from_secs(20), "took {took:?}");
    assert!(
        !err.contains("Start it with"),
        "init --start does not tell to start it: {err}"
    );
    assert!(std::net::TcpStream::connect(("127.0.0.1", port.parse::<u16>().unwrap())).is_ok());
    let err = okd_ok(
        dir2,
        &["mirror", "registry", "stop", "--registry-program", program],
    );
    assert!(
        err.contains(&format!("Stopped the mirror registry (PID {pid})")),
        "{err}"
    );
}

/// Issue #26, 5: a registry that never listens is stopped before `start`
/// gives up, and the error carries its log's last lines. The "registry"
/// is a script that logs a line and sleeps (the real one cannot be made
/// to hang before listening).
#[test]
fn a_registry_that_never_listens_is_stopped() {
    use std::os::unix::fs::PermissionsExt as _;
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    okd_ok(dir, &registry_init("localhost", "127.0.0.1"));
    let fake = dir.join("fake-registry");
    std::fs::write(
        &fake,
        "#!/bin/sh\necho 'fake registry: configuration loaded, never listening'\nexec sleep 120\n",
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = okd(
        dir,
        &[
            "mirror",
            "registry",
            "start",
            "--registry-program",
            fake.to_str().unwrap(),
        ],
    );
    let (_, err) = mirror_support::text(&out);
    let pid: u32 = err
        .split("the registry (PID ")
        .nth(1)
        .and_then(|r| r.split(')').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("a PID in {err}"));
    // Whatever happens below, the script goes.
    let _cleanup = PidGuard(pid);
    assert_fails_with(&out, "and was stopped; last lines of ");
    assert!(
        err.contains("fake registry: configuration loaded, never listening"),
        "{err}"
    );
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists(),
        "the registry {pid} was left running"
    );
    assert!(!dir.join("mirror-registry/registry.pid").exists());
}
