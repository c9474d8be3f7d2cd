//! `okd-install mirror release | to-disk | from-disk` against two real
//! distribution registries (`docker-registry`) on loopback: the source
//! plain HTTP, the target TLS + htpasswd made by `mirror registry init`.
//! The release payload is built by `crates/mirror/tests/mkpayload.py` and
//! pushed into the source with skopeo; skopeo also checks the result.

mod common;

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{example_dir, okd, okd_ok, repo};
use okd_test_utils::{ChildGuard, free_tcp_port, start_docker_registry};
use serde_json::Value;

const VERSION: &str = "4.15.0-0.okd-test";
const PASSWORD: &str = "s3cret";

/// A daemon that is not our child (started by `mirror registry start`),
/// killed by PID when dropped.
struct PidGuard(u32);

impl Drop for PidGuard {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-KILL", &self.0.to_string()])
            .status();
    }
}

fn need(name: &str, package: &str) -> Option<PathBuf> {
    okd_test_utils::tool(name, &[], Some(package))
}

/// Source registry A (plain HTTP) holding a test payload, target registry B
/// (TLS + htpasswd from `mirror registry init`, empty).
struct Lab {
    tmp: tempfile::TempDir,
    a_port: u16,
    b_port: u16,
    _a: ChildGuard,
    b_pid: PidGuard,
    a_data: PathBuf,
    b_log: PathBuf,
    /// The asset directory holding `mirror-registry/` (B's CA and login).
    assets: PathBuf,
    /// A folder holding only B's ca.crt (skopeo `--cert-dir`).
    certs: PathBuf,
    payload: Value,
    skopeo: PathBuf,
}

impl Lab {
    fn new(components: u32, unique_kib: u32) -> Option<Lab> {
        let registry = need("docker-registry", "docker-registry")?;
        let skopeo = need("skopeo", "skopeo")?;
        let python = need("python3", "python3")?;
        let tmp = tempfile::tempdir().unwrap();
        let t = tmp.path();
        let (a_port, b_port) = (free_tcp_port(), free_tcp_port());
        let a_data = t.join("a-data");
        std::fs::create_dir_all(&a_data).unwrap();
        std::fs::write(
            t.join("a.yml"),
            format!(
                "version: 0.1\nlog: {{level: info}}\nstorage:\n  filesystem: {{rootdirectory: {}}}\n  delete: {{enabled: true}}\nhttp:\n  addr: 127.0.0.1:{a_port}\n",
                a_data.display()
            ),
        )
        .unwrap();
        let a = start_docker_registry(&registry, &t.join("a.yml"), &t.join("a.log"), a_port);

        let assets = t.join("assets");
        std::fs::create_dir_all(&assets).unwrap();
        std::fs::write(t.join("pw"), format!("{PASSWORD}\n")).unwrap();
        let port = b_port.to_string();
        let pw = t.join("pw");
        // One command sets the registry up and starts it.
        let err = okd_ok(
            &assets,
            &[
                "mirror",
                "registry",
                "init",
                "--hostname",
                "localhost",
                "--address",
                "127.0.0.1",
                "--port",
                &port,
                "--username",
                "okd",
                "--password-file",
                pw.to_str().unwrap(),
                "--start",
                "--registry-program",
                registry.to_str().unwrap(),
            ],
        );
        let reg = assets.join("mirror-registry");
        let b_log = reg.join("registry.log");
        let pid: u32 = std::fs::read_to_string(reg.join("registry.pid"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let b = PidGuard(pid);
        assert!(
            err.contains(&format!(
                "Mirror registry running on 127.0.0.1:{b_port} (PID {pid})"
            )),
            "{err}"
        );
        assert!(
            TcpStream::connect((Ipv4Addr::LOCALHOST, b_port)).is_ok(),
            "started means listening"
        );
        let again = okd_ok(
            &assets,
            &[
                "mirror",
                "registry",
                "start",
                "--registry-program",
                registry.to_str().unwrap(),
            ],
        );
        assert!(
            again.contains(&format!(
                "already running on 127.0.0.1:{b_port} (PID {pid})"
            )),
            "{again}"
        );
        let certs = t.join("certs");
        std::fs::create_dir_all(&certs).unwrap();
        std::fs::copy(reg.join("ca.crt"), certs.join("ca.crt")).unwrap();

        let out = Command::new(python)
            .arg(repo().join("crates/mirror/tests/mkpayload.py"))
            .arg(t.join("layout"))
            .args([
                "--registry",
                &format!("127.0.0.1:{a_port}"),
                "--version",
                VERSION,
            ])
            .args(["--components", &components.to_string(), "--multiarch", "1"])
            .args(["--shared-layers", "3", "--shared-kib", "256"])
            .args([
                "--unique-layers",
                "2",
                "--unique-kib",
                &unique_kib.to_string(),
            ])
            .arg("--push")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "mkpayload: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let payload: Value = serde_json::from_slice(&out.stdout).unwrap();
        Some(Lab {
            tmp,
            a_port,
            b_port,
            _a: a,
            b_pid: b,
            a_data,
            b_log,
            assets,
            certs,
            payload,
            skopeo,
        })
    }

    fn from(&self) -> String {
        format!("127.0.0.1:{}/okd/okd:{VERSION}", self.a_port)
    }

    fn b(&self, repo: &str) -> String {
        format!("localhost:{}/{repo}", self.b_port)
    }

    fn plain(&self) -> String {
        format!("127.0.0.1:{}", self.a_port)
    }

    /// Every top-level digest of the payload: release and components, by name.
    fn images(&self) -> BTreeMap<String, String> {
        let mut m = BTreeMap::new();
        m.insert(
            "release".into(),
            self.payload["release"]["digest"]
                .as_str()
                .unwrap()
                .to_string(),
        );
        for c in self.payload["components"].as_array().unwrap() {
            m.insert(
                c["name"].as_str().unwrap().into(),
                c["digest"].as_str().unwrap().into(),
            );
        }
        m
    }

    /// Per-arch children of the multi-arch components.
    fn children(&self) -> Vec<String> {
        self.payload["components"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|c| c["children"].as_array().cloned().unwrap_or_default())
            .map(|d| d.as_str().unwrap().to_string())
            .collect()
    }

    /// `okd-install mirror release` from A's release to `to`, A over plain HTTP, plus `extra`.
    fn mirror(&self, to: &str, extra: &[&str]) -> Output {
        let (from, plain) = (self.from(), self.plain());
        let mut args = vec![
            "mirror",
            "release",
            "--from",
            &from,
            "--to",
            to,
            "--plain-http",
            &plain,
        ];
        args.extend_from_slice(extra);
        okd(&self.assets, &args)
    }

    fn skopeo_b(&self, args: &[&str]) -> Output {
        let creds = format!("okd:{PASSWORD}");
        let mut cmd = Command::new(&self.skopeo);
        cmd.args(&args[..1]);
        if args[0] == "copy" {
            cmd.args([
                "--src-cert-dir",
                self.certs.to_str().unwrap(),
                "--src-creds",
                &creds,
            ]);
        } else {
            cmd.args([
                "--cert-dir",
                self.certs.to_str().unwrap(),
                "--creds",
                &creds,
            ]);
        }
        cmd.args(&args[1..]).output().unwrap()
    }

    /// sha256 of the raw manifest at `reference` in B, via skopeo.
    fn b_digest(&self, reference: &str) -> Result<String, String> {
        let out = self.skopeo_b(&["inspect", "--raw", &format!("docker://{reference}")]);
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).into_owned());
        }
        Ok(okd_mirror::oci::Digest::of(&out.stdout).to_string())
    }

    /// Blob digests B's access log shows as completed uploads into `repo`
    /// (`PUT /v2/<repo>/blobs/uploads/...?digest=` → 201), with counts.
    fn completed_blob_puts(&self, repo: &str) -> BTreeMap<String, usize> {
        let log = std::fs::read_to_string(&self.b_log).unwrap();
        let mut m = BTreeMap::new();
        let prefix = format!("\"PUT /v2/{repo}/blobs/uploads/");
        for l in log.lines() {
            if l.contains(&prefix) && l.contains("\" 201 ") {
                let d = l
                    .split("digest=sha256%3A")
                    .nth(1)
                    .map(|r| &r[..64])
                    .expect("digest in the PUT");
                *m.entry(d.to_string()).or_insert(0) += 1;
            }
        }
        m
    }
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn mirror_release_copies_every_digest_and_resumes_after_a_kill() {
    let Some(lab) = Lab::new(24, 1024) else {
        return;
    };
    let to = lab.b("mirror/okd");
    let args = [
        "mirror",
        "release",
        "--from",
        &lab.from(),
        "--to",
        &to,
        "--plain-http",
        &lab.plain(),
        "--chunk-size",
        "256Ki",
        "--sources-field",
        "imageContentSources",
    ];

    // First run, one blob at a time, killed once three uploads completed.
    let mut child = Command::new(env!("CARGO_BIN_EXE_okd-install"))
        .args(args)
        .args(["--concurrency", "1", "--dir"])
        .arg(&lab.assets)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while lab.completed_blob_puts("mirror/okd").len() < 3 {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the first run ended before it could be killed"
        );
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "no upload completed in 60 s"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let after_kill = lab.completed_blob_puts("mirror/okd");
    assert!(
        lab.b_digest(&format!("{to}:{VERSION}")).is_err(),
        "the release is not tagged after the kill"
    );

    // Second run completes.
    let out = okd(&lab.assets, &args);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    let present: usize = stderr
        .split(" already there")
        .next()
        .and_then(|s| s.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("summary line in {stderr}"));
    assert!(
        present >= after_kill.len(),
        "the blobs of the killed run were found: {stderr}"
    );

    // No blob upload was completed twice, and chunked uploads were used.
    let puts = lab.completed_blob_puts("mirror/okd");
    assert!(puts.len() > after_kill.len());
    for (d, n) in &puts {
        assert_eq!(*n, 1, "blob sha256:{d} uploaded {n} times");
    }
    let log = std::fs::read_to_string(&lab.b_log).unwrap();
    assert!(
        log.contains("\"PATCH /v2/mirror/okd/blobs/uploads/"),
        "chunked uploads in the log"
    );

    // Every image and per-arch manifest, by digest, in the target equals the source.
    let images = lab.images();
    assert_eq!(images.len(), 25);
    for (name, d) in &images {
        assert_eq!(
            lab.b_digest(&format!("{to}@{d}")).as_deref(),
            Ok(d.as_str()),
            "{name}"
        );
    }
    for d in lab.children() {
        assert_eq!(
            lab.b_digest(&format!("{to}@{d}")).as_deref(),
            Ok(d.as_str())
        );
    }
    assert_eq!(
        lab.b_digest(&format!("{to}:{VERSION}")).as_deref(),
        Ok(images["release"].as_str())
    );
    assert_eq!(
        lab.b_digest(&format!("{to}:{VERSION}-etcd")).as_deref(),
        Ok(images["etcd"].as_str())
    );
    // skopeo reads each one (config included) and copies every blob out, checking its digest.
    let oci = lab.tmp.path().join("verify");
    for (name, d) in &images {
        let out = lab.skopeo_b(&["inspect", &format!("docker://{to}@{d}")]);
        assert!(
            out.status.success(),
            "skopeo inspect {name}: {}",
            text(&out).1
        );
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["Os"], "linux", "{name}");
        let out = lab.skopeo_b(&[
            "copy",
            "--all",
            &format!("docker://{to}@{d}"),
            &format!("oci:{}:{name}", oci.display()),
        ]);
        assert!(out.status.success(), "skopeo copy {name}: {}", text(&out).1);
    }

    // The printed block, pasted into the single-master example, validates
    // and becomes the ImageContentSourcePolicy.
    let block_start = stdout
        .find("imageContentSources:\n")
        .expect("block printed");
    let block_text: String = stdout[block_start..]
        .split("\n\n")
        .next()
        .unwrap()
        .to_string();
    let block: serde_yaml_ng::Value = serde_yaml_ng::from_str(&block_text).unwrap();
    let sources = block["imageContentSources"].as_sequence().unwrap();
    assert_eq!(sources.len(), 2, "{block_text}");
    for s in sources {
        assert_eq!(s["mirrors"][0].as_str(), Some(to.as_str()));
    }
    let d = example_dir("baremetal-single-master");
    let ic_path = d.path().join("install-config.yaml");
    let mut ic: serde_yaml_ng::Value =
        serde_yaml_ng::from_str(&std::fs::read_to_string(&ic_path).unwrap()).unwrap();
    ic["imageContentSources"] = block["imageContentSources"].clone();
    std::fs::write(&ic_path, serde_yaml_ng::to_string(&ic).unwrap()).unwrap();
    okd_ok(d.path(), &["create", "manifests"]);
    let icsp = std::fs::read_to_string(d.path().join("manifests/image-content-source-policy.yaml"))
        .or_else(|_| {
            std::fs::read_to_string(
                d.path()
                    .join("manifests/image-content-source-policy-0.yaml"),
            )
        })
        .expect("ImageContentSourcePolicy manifest");
    assert!(icsp.contains("kind: ImageContentSourcePolicy"), "{icsp}");
    for src in [
        format!("127.0.0.1:{}/okd/okd\n", lab.a_port),
        format!("127.0.0.1:{}/okd/okd-content\n", lab.a_port),
    ] {
        assert!(icsp.contains(&format!("source: {src}")), "{src} in {icsp}");
    }
    assert!(icsp.contains(&format!("- {to}\n")), "{icsp}");

    // The README's four-command disconnected flow (registry init was the
    // lab's): mirror release writing its block, create install-config with
    // it, the mirror's login and CA, then create ignition-configs.
    let d = &lab.assets;
    let out_dir = d.join("mirror");
    let out = lab.mirror(&to, &["--output-dir", out_dir.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out).1);
    let reg = d.join("mirror-registry");
    okd_ok(
        d,
        &[
            "create",
            "install-config",
            "--platform",
            "none",
            "--base-domain",
            "example.com",
            "--cluster-name",
            "okd",
            "--ssh-key-file",
            "none",
            "--control-plane-replicas",
            "1",
            "--compute-replicas",
            "1",
            "--pull-secret-file",
            reg.join("pull-secret.json").to_str().unwrap(),
            "--additional-trust-bundle-file",
            reg.join("ca.crt").to_str().unwrap(),
            "--image-sources-file",
            out_dir.join("install-config-mirror.yaml").to_str().unwrap(),
        ],
    );
    let ic: serde_yaml_ng::Value =
        serde_yaml_ng::from_str(&std::fs::read_to_string(d.join("install-config.yaml")).unwrap())
            .unwrap();
    assert_eq!(
        ic["imageDigestSources"].as_sequence().map(|s| s.len()),
        Some(2),
        "{ic:?}"
    );
    okd_ok(d, &["create", "ignition-configs"]);
    let files = common::ign_files(&common::read_ign(&d.join("bootstrap.ign")));
    let conf = String::from_utf8(files["/etc/containers/registries.conf"].1.clone()).unwrap();
    assert!(conf.contains(&format!("location = \"{to}\"")), "{conf}");
    let ca = std::fs::read_to_string(reg.join("ca.crt")).unwrap();
    assert!(
        files
            .values()
            .any(|(_, data, _)| String::from_utf8_lossy(data).contains(ca.trim())),
        "the mirror CA is in bootstrap.ign"
    );
}

#[test]
fn to_disk_from_disk_and_bad_input() {
    let Some(lab) = Lab::new(20, 64) else { return };
    let images = lab.images();

    // to-disk: an OCI layout skopeo reads; a second run copies nothing.
    let archive = lab.tmp.path().join("archive");
    let arch = archive.to_str().unwrap();
    let args = [
        "mirror",
        "to-disk",
        "--from",
        &lab.from(),
        "--archive",
        arch,
        "--plain-http",
        &lab.plain(),
    ];
    let err = okd_ok(&lab.assets, &args);
    assert!(err.contains("Archived: 21 images"), "{err}");
    let out = Command::new(&lab.skopeo)
        .args(["inspect", "--raw", &format!("oci:{arch}:{VERSION}")])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out).1);
    assert_eq!(
        okd_mirror::oci::Digest::of(&out.stdout).as_str(),
        images["release"]
    );
    let err = okd_ok(&lab.assets, &args);
    assert!(
        err.contains(": 0 copied (0.0 MiB)"),
        "the re-run copies nothing: {err}"
    );

    // from-disk: into B; every digest equal; the block names the original sources.
    let to = lab.b("disk/okd");
    let out = okd(
        &lab.assets,
        &["mirror", "from-disk", "--archive", arch, "--to", &to],
    );
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    for (name, d) in &images {
        assert_eq!(
            lab.b_digest(&format!("{to}@{d}")).as_deref(),
            Ok(d.as_str()),
            "{name}"
        );
    }
    assert!(
        stdout.contains(&format!(
            "imageDigestSources:\n- mirrors:\n  - {to}\n  source: 127.0.0.1:{}/okd/okd\n",
            lab.a_port
        )),
        "{stdout}"
    );

    // Wrong password: one error naming the registry, the realm and the user.
    let wrong = lab.tmp.path().join("wrong.json");
    std::fs::write(
        &wrong,
        format!(
            r#"{{"auths":{{"localhost:{}":{{"auth":"b2tkOndyb25n"}}}}}}"#,
            lab.b_port
        ),
    )
    .unwrap();
    let out = lab.mirror(&lab.b("x/y"), &["-a", wrong.to_str().unwrap()]);
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "registry localhost:{} (auth realm \"okd-mirror\") rejected the login of user \"okd\"",
            lab.b_port
        )),
        "{stderr}"
    );
    assert_eq!(stderr.matches("level=error").count(), 1, "{stderr}");

    // Unreachable registry: one line.
    let closed = free_tcp_port();
    let out = lab.mirror(&format!("127.0.0.1:{closed}/x/y"), &[]);
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let errors: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("level=error"))
        .collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    assert!(
        errors[0].contains(&format!(
            "cannot reach registry 127.0.0.1:{closed} (https://127.0.0.1:{closed}/v2/)"
        )) && errors[0].to_lowercase().contains("refused"),
        "{stderr}"
    );

    // A corrupted layer in the source: that image is not mirrored and not
    // tagged, the others are; the bad bytes never complete an upload.
    let victim = lab.payload["components"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["children"].as_array().is_none_or(|a| a.is_empty()))
        .unwrap();
    let name = victim["name"].as_str().unwrap();
    let manifest: Value = {
        let out = Command::new(&lab.skopeo)
            .args([
                "inspect",
                "--raw",
                "--tls-verify=false",
                &format!(
                    "docker://127.0.0.1:{}/okd/okd-content@{}",
                    lab.a_port,
                    victim["digest"].as_str().unwrap()
                ),
            ])
            .output()
            .unwrap();
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let layer = manifest["layers"].as_array().unwrap().last().unwrap()["digest"]
        .as_str()
        .unwrap()
        .to_string();
    let hex = &layer["sha256:".len()..];
    let data = lab.a_data.join(format!(
        "docker/registry/v2/blobs/sha256/{}/{hex}/data",
        &hex[..2]
    ));
    let mut bytes = std::fs::read(&data).unwrap();
    for b in bytes.iter_mut().skip(100).take(16) {
        *b ^= 0xff;
    }
    std::fs::write(&data, &bytes).unwrap();
    let to = lab.b("bad/okd");
    let out = lab.mirror(&to, &[]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("image {name} not mirrored, nothing tagged"))
            && stderr.contains(&format!("expected {layer}")),
        "{stderr}"
    );
    assert!(
        stderr.contains("1 of 21 images were not mirrored"),
        "{stderr}"
    );
    assert!(
        !stdout.contains("imageDigestSources"),
        "no block after a failure: {stdout}"
    );
    assert!(
        lab.b_digest(&format!("{to}:{VERSION}-{name}")).is_err(),
        "{name} not tagged"
    );
    assert!(
        lab.b_digest(&format!("{to}@{}", victim["digest"].as_str().unwrap()))
            .is_err(),
        "{name} not pushed"
    );
    assert_eq!(
        lab.b_digest(&format!("{to}:{VERSION}")).as_deref(),
        Ok(images["release"].as_str())
    );
    assert!(
        !lab.completed_blob_puts("bad/okd").contains_key(hex),
        "the corrupt blob never completed an upload"
    );

    // `mirror registry stop` ends the registry by its PID file.
    let err = okd_ok(&lab.assets, &["mirror", "registry", "stop"]);
    assert!(
        err.contains(&format!(
            "Stopped the mirror registry (PID {})",
            lab.b_pid.0
        )),
        "{err}"
    );
    assert!(!lab.assets.join("mirror-registry/registry.pid").exists());
    let t0 = Instant::now();
    while TcpStream::connect((Ipv4Addr::LOCALHOST, lab.b_port)).is_ok() {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "registry still listening after stop"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let err = okd_ok(&lab.assets, &["mirror", "registry", "stop"]);
    assert!(err.contains("No mirror registry running"), "{err}");
}

/// A token service for the registry's `auth: token` (Docker registry token
/// spec): `GET /token?service=&scope=...` with HTTP Basic; answers a JWT
/// (RS256, `x5c` = the self-signed issuer certificate the registry trusts)
/// granting the scopes asked for, or 401 for a wrong login. Each request is
/// recorded. Stops (and is joined) when dropped.
struct TokenService {
    port: u16,
    requests: std::sync::Arc<std::sync::Mutex<Vec<(String, u16)>>>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

fn b64url(data: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(data)
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            out.push(u8::from_str_radix(&s[i + 1..i + 3], 16).unwrap());
            i += 3;
        } else {
            out.push(if b[i] == b'+' { b' ' } else { b[i] });
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

impl TokenService {
    /// Starts the service; returns it and the issuer certificate PEM.
    fn start(issuer: &str, service: &str, user: &str, password: &str) -> (TokenService, String) {
        use std::io::{Read as _, Write as _};
        let now = time::OffsetDateTime::now_utc();
        let ck = okd_pki::self_signed(
            &common::ca_config("okd-test-token-issuer", Duration::from_secs(86400)),
            okd_pki::RsaKey::generate().unwrap(),
            now,
        )
        .unwrap();
        let key = aws_lc_rs::signature::RsaKeyPair::from_der(ck.key.private_der()).unwrap();
        let x5c = {
            use base64::Engine as _;
            base64::engine::general_purpose::STANDARD.encode(&ck.cert.der)
        };
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let requests = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (reqs, stopping) = (requests.clone(), stop.clone());
        let (issuer, service) = (issuer.to_string(), service.to_string());
        let expected = {
            use base64::Engine as _;
            format!(
                "basic {}",
                base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
            )
        };
        let thread = std::thread::spawn(move || {
            while !stopping.load(std::sync::atomic::Ordering::Relaxed) {
                let (mut conn, _) = match listener.accept() {
                    Ok(c) => c,
                    Err(_) => {
                        std::thread::sleep(Duration::from_millis(5));
                        continue;
                    }
                };
                conn.set_nonblocking(false).unwrap();
                conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                    match conn.read(&mut chunk) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                let head = String::from_utf8_lossy(&buf).into_owned();
                let target = head.split(' ').nth(1).unwrap_or("").to_string();
                let authorized = head.lines().any(|l| {
                    l.to_lowercase().starts_with("authorization:")
                        && l[14..].trim().to_lowercase() == expected.to_lowercase()
                });
                let query = target.split_once('?').map(|x| x.1).unwrap_or("");
                let scopes: Vec<String> = query
                    .split('&')
                    .filter_map(|kv| kv.strip_prefix("scope="))
                    .map(percent_decode)
                    .collect();
                let (status, body) = if authorized {
                    let access: Vec<Value> = scopes
                        .iter()
                        .filter_map(|s| {
                            let mut p = s.splitn(3, ':');
                            let (t, n, a) = (p.next()?, p.next()?, p.next()?);
                            Some(serde_json::json!({"type": t, "name": n, "actions": a.split(',').collect::<Vec<_>>()}))
                        })
                        .collect();
                    let t = time::OffsetDateTime::now_utc().unix_timestamp();
                    let header = serde_json::json!({"typ": "JWT", "alg": "RS256", "x5c": [x5c]});
                    let claims = serde_json::json!({
                        "iss": issuer, "sub": "okd", "aud": service, "exp": t + 300, "nbf": t - 10,
                        "iat": t, "jti": format!("{t}-{}", reqs.lock().unwrap().len()), "access": access,
                    });
                    let input = format!(
                        "{}.{}",
                        b64url(header.to_string().as_bytes()),
                        b64url(claims.to_string().as_bytes())
                    );
                    let mut sig = vec![0u8; key.public_modulus_len()];
                    key.sign(
                        &aws_lc_rs::signature::RSA_PKCS1_SHA256,
                        &aws_lc_rs::rand::SystemRandom::new(),
                        input.as_bytes(),
                        &mut sig,
                    )
                    .unwrap();
                    let jwt = format!("{input}.{}", b64url(&sig));
                    (
                        200u16,
                        serde_json::json!({"token": jwt, "expires_in": 300}).to_string(),
                    )
                } else {
                    (
                        401,
                        r#"{"errors":[{"code":"UNAUTHORIZED","message":"wrong login"}]}"#
                            .to_string(),
                    )
                };
                reqs.lock().unwrap().push((target, status));
                let reason = if status == 200 { "OK" } else { "Unauthorized" };
                let _ = write!(
                    conn,
                    "HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        (
            TokenService {
                port,
                requests,
                stop,
                thread: Some(thread),
            },
            ck.cert.pem,
        )
    }
}

impl Drop for TokenService {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[test]
fn bearer_token_auth_against_a_token_registry() {
    let Some(lab) = Lab::new(20, 16) else { return };
    let registry = need("docker-registry", "docker-registry").unwrap();
    let t = lab.tmp.path();
    let (tokens, issuer_pem) = TokenService::start(
        "okd-test-issuer",
        "okd-test-registry",
        "robot",
        "t0ken-pass",
    );
    std::fs::write(t.join("issuer.pem"), &issuer_pem).unwrap();
    let c_port = free_tcp_port();
    let realm = format!("http://127.0.0.1:{}/token", tokens.port);
    std::fs::write(
        t.join("c.yml"),
        format!(
            "version: 0.1\nlog: {{level: info}}\nstorage:\n  filesystem: {{rootdirectory: {}}}\nauth:\n  token:\n    realm: {realm}\n    service: okd-test-registry\n    issuer: okd-test-issuer\n    rootcertbundle: {}\nhttp:\n  addr: 127.0.0.1:{c_port}\n",
            t.join("c-data").display(),
            t.join("issuer.pem").display()
        ),
    )
    .unwrap();
    let _c = start_docker_registry(&registry, &t.join("c.yml"), &t.join("c.log"), c_port);
    let c = format!("127.0.0.1:{c_port}");
    let to = format!("{c}/tok/okd");
    let good = t.join("robot.json");
    std::fs::write(
        &good,
        format!(r#"{{"auths":{{"{c}":{{"auth":"cm9ib3Q6dDBrZW4tcGFzcw=="}}}}}}"#),
    )
    .unwrap();

    let out = lab.mirror(&to, &["--plain-http", &c, "-a", good.to_str().unwrap()]);
    let (_, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    let reqs = tokens.requests.lock().unwrap().clone();
    assert!(
        reqs.iter().any(|(q, s)| *s == 200
            && q.contains("scope=repository%3Atok%2Fokd%3Apull%2Cpush")
            && q.contains("service=okd-test-registry")),
        "push token asked for with the service: {reqs:?}"
    );
    // A token is fetched once per scope, not per request.
    assert!(reqs.len() <= 3, "tokens are cached: {reqs:?}");
    // skopeo, with its own token handling, reads the release back by digest.
    let rel = lab.images()["release"].clone();
    let out = Command::new(&lab.skopeo)
        .args([
            "inspect",
            "--raw",
            "--tls-verify=false",
            "--creds",
            "robot:t0ken-pass",
            &format!("docker://{to}@{rel}"),
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out).1);
    assert_eq!(okd_mirror::oci::Digest::of(&out.stdout).to_string(), rel);

    // A wrong password: the token service says 401; one error naming the registry, realm and user.
    let bad = t.join("bad.json");
    std::fs::write(
        &bad,
        format!(r#"{{"auths":{{"{c}":{{"auth":"cm9ib3Q6d3Jvbmc="}}}}}}"#),
    )
    .unwrap();
    let out = lab.mirror(&to, &["--plain-http", &c, "-a", bad.to_str().unwrap()]);
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "registry {c} (auth realm \"{realm}\") rejected the login of user \"robot\""
        )),
        "{stderr}"
    );
    assert_eq!(stderr.matches("level=error").count(), 1, "{stderr}");
}
