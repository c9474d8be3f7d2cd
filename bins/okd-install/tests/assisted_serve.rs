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

/// `okd-install --dir <dir> assisted <args>`: (success, stdout, stderr).
fn assisted(dir: &Path, args: &[&str]) -> (bool, String, String) {
    let out = okd()
        .args(["--dir", &dir.display().to_string(), "assisted"])
        .args(args)
        .env_remove("OKD_ASSISTED_TOKEN")
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Plays a discovery agent once for host `id`: polls its steps and
/// answers them (its inventory and the checks) as a healthy host would.
async fn agent_once(
    http: &reqwest::Client,
    api: &str,
    ie: &str,
    id: &str,
    inv: &serde_json::Value,
) {
    let url = format!("{api}/infra-envs/{ie}/hosts/{id}/instructions");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let r = http
        .get(format!("{url}?timestamp={now}"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let steps: serde_json::Value = serde_json::from_str(&r.text().await.unwrap()).unwrap();
    for st in steps["instructions"].as_array().unwrap() {
        let args: Vec<String> = st["args"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        let Some(output) = okd_test_utils::assisted::healthy_output(
            st["step_type"].as_str().unwrap(),
            &args,
            &inv.to_string(),
        ) else {
            continue;
        };
        let body = serde_json::json!({
            "step_type": st["step_type"], "step_id": st["step_id"], "exit_code": 0, "output": output
        });
        let r = http
            .post(&url)
            .header("Content-Type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 204);
    }
}

/// Issue #42 items 1 and 7 through the command line: five agents that all
/// report host name `vm` are five distinct lines of `assisted hosts` (id,
/// MAC, address) and five sections of `assisted validations --failing`;
/// `assisted host set` picks one by MAC and sets its name and role, and
/// refuses the shared name listing the hosts; `assisted credentials`
/// before the install says so in words first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hosts_with_one_name_are_told_apart_and_set_from_the_cli() {
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
        .args([
            "--monitor-interval",
            "1s",
            "--next-instruction-seconds",
            "1",
        ])
        .args(["--check-interval-seconds", "1"])
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&log).unwrap())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let _svc = Service(child);
    let https = format!("https://{listen}");
    let api = format!("{https}/api/assisted-install/v2");
    let ca = svc_dir.join("assisted-service/ca.crt");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !ca.exists()
        || status(
            &format!("{api}/clusters"),
            &["--cacert", &ca.display().to_string()],
        ) == 0
    {
        assert!(
            Instant::now() < deadline,
            "the service did not answer:\n{}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let url = ["--url", https.as_str()];
    let config = dir.path().join("install-config.yaml");
    std::fs::write(
        &config,
        "apiVersion: v1
baseDomain: example.com
metadata:
  name: same
controlPlane:
  name: master
  replicas: 3
compute:
- name: worker
  replicas: 0
networking:
  clusterNetwork:
  - cidr: 10.128.0.0/14
    hostPrefix: 23
  serviceNetwork:
  - 172.30.0.0/16
  machineNetwork:
  - cidr: 192.168.126.0/24
  networkType: OVNKubernetes
platform:
  baremetal:
    apiVIPs:
    - 192.168.126.253
    ingressVIPs:
    - 192.168.126.254
pullSecret: '{\"auths\":{\"registry.example\":{\"auth\":\"aWQ6cGFzcwo=\"}}}'
sshKey: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOkd test@example
",
    )
    .unwrap();
    let (ok, out, err) = assisted(
        &svc_dir,
        &[
            "create-cluster",
            url[0],
            url[1],
            "--config",
            &config.display().to_string(),
        ],
    );
    assert!(ok, "{err}");
    let ie = out
        .split("infra-env same-infra-env created: id ")
        .nth(1)
        .and_then(|r| r.split(';').next())
        .unwrap_or_else(|| panic!("no infra-env id in {out}"))
        .to_string();

    // Item 7: the credentials before the install, in words first.
    let (ok, _, err) = assisted(
        &svc_dir,
        &["credentials", url[0], url[1], "--cluster", "same"],
    );
    assert!(!ok);
    let words = err
        .find("the credentials of cluster same exist only once its installation has started (cluster status: ")
        .unwrap_or_else(|| panic!("not in words: {err}"));
    // The suggested command carries the --dir it was run with.
    assert!(
        err.contains(&format!(
            "`okd-install --dir {} assisted install --cluster same`",
            svc_dir.display()
        )),
        "{err}"
    );
    let at = err.find(&https).unwrap_or_else(|| panic!("no URL: {err}"));
    assert!(
        words < at && err.contains("HTTP 409)"),
        "the URL after: {err}"
    );
    assert!(!err.contains("noingress"), "{err}");

    // Five agents, all `vm`.
    let token = std::fs::read_to_string(svc_dir.join("assisted-service/admin-token"))
        .unwrap()
        .trim()
        .to_string();
    let mut h = reqwest::header::HeaderMap::new();
    h.insert(
        reqwest::header::AUTHORIZATION,
        format!("Bearer {token}").parse().unwrap(),
    );
    let http = reqwest::Client::builder()
        .default_headers(h)
        .tls_certs_only(
            reqwest::Certificate::from_pem_bundle(&std::fs::read(&ca).unwrap()).unwrap(),
        )
        .build()
        .unwrap();
    let ids: Vec<String> = (1..=5)
        .map(|i| format!("5a{i}b0c0d-0000-4000-8000-00000000000{i}"))
        .collect();
    let mac = |i: usize| format!("52:54:00:42:00:0{i}");
    let ip = |i: usize| format!("192.168.126.2{i}");
    let mut invs = Vec::new();
    for (i, id) in ids.iter().enumerate() {
        let r = http
            .post(format!("{api}/infra-envs/{ie}/hosts"))
            .header("Content-Type", "application/json")
            .body(serde_json::json!({"host_id": id}).to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 201);
        invs.push(serde_json::json!({
            "hostname": "vm",
            "cpu": {"count": 8, "frequency": 2400.0, "model_name": "test", "architecture": "x86_64", "flags": []},
            "memory": {"physical_bytes": 16u64 << 30, "usable_bytes": 16u64 << 30, "physical_bytes_method": "dmidecode"},
            "boot": {"current_boot_mode": "bios"},
            "system_vendor": {"manufacturer": "QEMU", "product_name": "Standard PC", "serial_number": format!("S{i}"), "virtual": true},
            "tpm_version": "none",
            "disks": [{"id": "/dev/disk/by-path/pci-0000:00:04.0", "name": "vda", "path": "/dev/vda",
                       "drive_type": "HDD", "size_bytes": 120_000_000_000u64, "bootable": false, "removable": false,
                       "installation_eligibility": {"eligible": true, "not_eligible_reasons": []}}],
            "interfaces": [{"name": "ens3", "mac_address": mac(i), "ipv4_addresses": [format!("{}/24", ip(i))],
                            "mtu": 1500, "has_carrier": true, "type": "physical"}],
            "routes": []
        }));
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    let failing = loop {
        for (id, inv) in ids.iter().zip(&invs) {
            agent_once(&http, &api, &ie, id, inv).await;
        }
        let (ok, out, err) = assisted(
            &svc_dir,
            &[
                "validations",
                url[0],
                url[1],
                "--cluster",
                "same",
                "--failing",
            ],
        );
        assert!(ok, "{err}");
        if out.matches("Hostname vm is not unique").count() == 5 {
            break out;
        }
        assert!(
            Instant::now() < deadline,
            "no five non-unique hosts:\n{out}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    let titles: Vec<&str> = failing.lines().filter(|l| l.starts_with("host ")).collect();
    assert_eq!(titles.len(), 5, "{failing}");
    for (i, id) in ids.iter().enumerate() {
        let short = &id[..8];
        assert_eq!(
            titles
                .iter()
                .filter(|t| t.starts_with("host vm (")
                    && t.contains(&format!("id {short},"))
                    && t.contains(&mac(i))
                    && t.contains(&ip(i)))
                .count(),
            1,
            "host {id} by id, MAC and address:\n{failing}"
        );
    }

    // `assisted hosts`: five distinct lines.
    let (ok, out, err) = assisted(&svc_dir, &["hosts", url[0], url[1], "--cluster", "same"]);
    assert!(ok, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 6, "{out}");
    for (i, id) in ids.iter().enumerate() {
        assert_eq!(
            lines
                .iter()
                .filter(|l| l.starts_with("vm ")
                    && l.contains(&format!(" {} ", &id[..8]))
                    && l.contains(&format!(" {} ", mac(i)))
                    && l.contains(&format!(" {} ", ip(i))))
                .count(),
            1,
            "{out}"
        );
    }

    // `assisted host set` by the shared name: refused, listing the five.
    let (ok, _, err) = assisted(
        &svc_dir,
        &["host", "set", url[0], url[1], "vm", "--name", "x"],
    );
    assert!(!ok);
    assert!(err.contains("5 hosts match \"vm\""), "{err}");
    for id in &ids {
        assert!(err.contains(id.as_str()), "{err}");
    }
    // Nothing to set: refused by the command line.
    let (ok, _, err) = assisted(&svc_dir, &["host", "set", url[0], url[1], &mac(2)]);
    assert!(!ok && err.contains("--name"), "{err}");
    // By MAC: renamed and made a master.
    let (ok, out, err) = assisted(
        &svc_dir,
        &[
            "host",
            "set",
            url[0],
            url[1],
            &mac(2),
            "--name",
            "master-2",
            "--role",
            "master",
        ],
    );
    assert!(ok, "{err}");
    assert_eq!(
        out,
        format!(
            "host {} (MAC {}, address {}): name vm → master-2, role auto-assign → master\n",
            ids[2],
            mac(2),
            ip(2)
        )
    );
    let (ok, out, err) = assisted(&svc_dir, &["hosts", url[0], url[1], "--cluster", "same"]);
    assert!(ok, "{err}");
    assert!(
        out.lines()
            .any(|l| l.starts_with("master-2 ") && l.contains(&mac(2)) && l.contains(" master ")),
        "{out}"
    );
    assert_eq!(
        out.lines().filter(|l| l.starts_with("vm ")).count(),
        4,
        "{out}"
    );
}
