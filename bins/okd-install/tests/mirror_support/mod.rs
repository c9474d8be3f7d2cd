//! Shared by the mirror tests: the lab of two real registries (source A
//! plain HTTP with a synthetic payload, target B from `mirror registry
//! init --start`) and a token service for registries with `auth: token`.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use crate::common::{self, okd, okd_ok, repo};
use okd_test_utils::{ChildGuard, free_tcp_port, start_docker_registry};
use serde_json::Value;

pub const VERSION: &str = "4.15.0-0.okd-test";
pub const PASSWORD: &str = "s3cret";

/// A daemon that is not our child (started by `mirror registry start`),
/// killed by PID when dropped.
pub struct PidGuard(pub u32);

impl Drop for PidGuard {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-KILL", &self.0.to_string()])
            .stderr(std::process::Stdio::null())
            .status();
    }
}

pub fn need(name: &str, package: &str) -> Option<PathBuf> {
    okd_test_utils::tool(name, &[], Some(package))
}

/// Source registry A (plain HTTP) holding a test payload, target registry B
/// (TLS + htpasswd from `mirror registry init`, empty).
pub struct Lab {
    pub tmp: tempfile::TempDir,
    pub a_port: u16,
    pub b_port: u16,
    pub _a: ChildGuard,
    pub b_pid: PidGuard,
    pub a_data: PathBuf,
    pub b_log: PathBuf,
    /// The asset directory holding `mirror-registry/` (B's CA and login).
    pub assets: PathBuf,
    /// A folder holding only B's ca.crt (skopeo `--cert-dir`).
    pub certs: PathBuf,
    pub payload: Value,
    pub skopeo: PathBuf,
}

impl Lab {
    pub fn new(components: u32, unique_kib: u32) -> Option<Lab> {
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
                &registry_init("localhost", "127.0.0.1")[..],
                &[
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
            ]
            .concat(),
        );
        let reg = assets.join("mirror-registry");
        let b_log = reg.join("registry.log");
        let pid = registry_pid(&reg);
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
            .arg(repo().join("crates/workstation/mirror/tests/mkpayload.py"))
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

    pub fn from(&self) -> String {
        format!("127.0.0.1:{}/okd/okd:{VERSION}", self.a_port)
    }

    pub fn b(&self, repo: &str) -> String {
        format!("localhost:{}/{repo}", self.b_port)
    }

    pub fn plain(&self) -> String {
        format!("127.0.0.1:{}", self.a_port)
    }

    /// Every top-level digest of the payload: release and components, by name.
    pub fn images(&self) -> BTreeMap<String, String> {
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
    pub fn children(&self) -> Vec<String> {
        self.payload["components"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|c| c["children"].as_array().cloned().unwrap_or_default())
            .map(|d| d.as_str().unwrap().to_string())
            .collect()
    }

    /// `okd-install mirror release` from A's release to `to`, A over plain HTTP, plus `extra`.
    pub fn mirror(&self, to: &str, extra: &[&str]) -> Output {
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

    pub fn skopeo_b(&self, args: &[&str]) -> Output {
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
    pub fn b_digest(&self, reference: &str) -> Result<String, String> {
        let out = self.skopeo_b(&["inspect", "--raw", &format!("docker://{reference}")]);
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).into_owned());
        }
        Ok(okd_mirror::oci::Digest::of(&out.stdout).to_string())
    }

    /// Blob digests B's access log shows as completed uploads into `repo`
    /// (`PUT /v2/<repo>/blobs/uploads/...?digest=` → 201), with counts.
    pub fn completed_blob_puts(&self, repo: &str) -> BTreeMap<String, usize> {
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

pub fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Asserts that the run `out` failed with exit code 1 and that its stderr
/// contains `message`; returns stderr.
pub fn assert_fails_with(out: &Output, message: &str) -> String {
    let (_, stderr) = text(out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(message), "no {message:?} in: {stderr}");
    stderr
}

/// Asserts that a mirror run was refused with `message` before any login:
/// exit code 1, the message on stderr, and `tokens` saw no request.
pub fn assert_refused_before_login(out: &Output, message: &str, tokens: &TokenService) {
    assert_fails_with(out, message);
    assert_eq!(
        tokens.requests.lock().unwrap().len(),
        0,
        "no request to a refused realm"
    );
}

/// The leading arguments of `mirror registry init --hostname <hostname>
/// --address <address>`.
pub fn registry_init<'a>(hostname: &'a str, address: &'a str) -> Vec<&'a str> {
    vec![
        "mirror",
        "registry",
        "init",
        "--hostname",
        hostname,
        "--address",
        address,
    ]
}

/// The PID in `<reg>/registry.pid` (written by `mirror registry start`).
pub fn registry_pid(reg: &Path) -> u32 {
    std::fs::read_to_string(reg.join("registry.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// Starts a plain-HTTP `docker-registry` (`registry`) on 127.0.0.1:`port`
/// with its config, log and storage under `dir` (`a.yml`, `a.log`, `data`);
/// returns its guard and `127.0.0.1:<port>`.
pub fn start_plain_registry(registry: &Path, dir: &Path, port: u16) -> (ChildGuard, String) {
    std::fs::write(
        dir.join("a.yml"),
        format!(
            "version: 0.1\nlog: {{level: info}}\nstorage:\n  filesystem: {{rootdirectory: {}}}\nhttp:\n  addr: 127.0.0.1:{port}\n",
            dir.join("data").display()
        ),
    )
    .unwrap();
    let guard = start_docker_registry(registry, &dir.join("a.yml"), &dir.join("a.log"), port);
    (guard, format!("127.0.0.1:{port}"))
}

/// A token service for the registry's `auth: token` (Docker registry token
/// spec): `GET /token?service=&scope=...` with HTTP Basic; answers a JWT
/// (RS256, `x5c` = the self-signed issuer certificate the registry trusts)
/// granting the scopes asked for, or 401 for a wrong login. Each request is
/// recorded, and each token issued. Hostile on purpose: a 401 body echoes
/// the request's Authorization header and carries terminal control
/// characters (ESC, CR), which must never reach a message or log unescaped.
/// Stops (and is joined) when dropped.
pub struct TokenService {
    pub port: u16,
    pub requests: std::sync::Arc<std::sync::Mutex<Vec<(String, u16)>>>,
    /// Every token handed out.
    pub issued: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    pub stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    pub thread: Option<std::thread::JoinHandle<()>>,
}

pub fn b64url(data: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(data)
}

pub fn percent_decode(s: &str) -> String {
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
    pub fn start(
        issuer: &str,
        service: &str,
        user: &str,
        password: &str,
    ) -> (TokenService, String) {
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
        let issued = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let (reqs, stopping, tokens) = (requests.clone(), stop.clone(), issued.clone());
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
                    tokens.lock().unwrap().push(jwt.clone());
                    (
                        200u16,
                        serde_json::json!({"token": jwt, "expires_in": 300}).to_string(),
                    )
                } else {
                    let sent = head
                        .lines()
                        .find(|l| l.to_lowercase().starts_with("authorization:"))
                        .map(|l| l[14..].trim().to_string())
                        .unwrap_or_default();
                    (
                        401,
                        format!(
                            "{{\"errors\":[{{\"code\":\"UNAUTHORIZED\",\"message\":\"wrong login\u{1b}[2J\r{sent}\"}}]}}\r\n\u{1b}]0;owned\u{7}"
                        ),
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
                issued,
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

/// Writes an OCI layout holding one image whose only layer is `layer`
/// (gzip), tagged `tag`, and pushes it with skopeo to `dest` (plain HTTP),
/// converted to `format` (`v2s2`: Docker schema 2) when given. Returns the
/// pushed manifest's digest.
pub fn push_image(
    skopeo: &Path,
    dir: &Path,
    layer: &[u8],
    tag: &str,
    dest: &str,
    format: Option<&str>,
) -> String {
    let blobs = dir.join("blobs/sha256");
    std::fs::create_dir_all(&blobs).unwrap();
    let put = |data: &[u8]| {
        let d = okd_mirror::oci::Digest::of(data);
        std::fs::write(blobs.join(d.hex()), data).unwrap();
        (d.to_string(), data.len())
    };
    let config = serde_json::json!({
        "architecture": "amd64", "os": "linux",
        "rootfs": {"type": "layers", "diff_ids": [okd_mirror::oci::Digest::of(b"unchecked").to_string()]},
        "config": {"Labels": {"io.openshift.release": "4.15.0-0.okd-bomb"}}
    })
    .to_string();
    let (cd, cs) = put(config.as_bytes());
    let (ld, ls) = put(layer);
    let manifest = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": cd, "size": cs},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": ld, "size": ls}]
    })
    .to_string();
    let (md, ms) = put(manifest.as_bytes());
    std::fs::write(dir.join("oci-layout"), r#"{"imageLayoutVersion":"1.0.0"}"#).unwrap();
    std::fs::write(
        dir.join("index.json"),
        serde_json::json!({"schemaVersion": 2, "manifests": [{
            "mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": md, "size": ms,
            "annotations": {"org.opencontainers.image.ref.name": tag}}]})
        .to_string(),
    )
    .unwrap();
    let digest_file = dir.join(format!("{tag}.digest"));
    let mut cmd = Command::new(skopeo);
    cmd.args(["copy", "--dest-tls-verify=false", "--digestfile"])
        .arg(&digest_file);
    match format {
        Some(f) => cmd.args(["--format", f]),
        None => cmd.arg("--preserve-digests"),
    };
    let out = cmd
        .arg(format!("oci:{}:{tag}", dir.display()))
        .arg(format!("docker://{dest}"))
        .output()
        .unwrap();
    assert!(out.status.success(), "skopeo copy: {}", text(&out).1);
    std::fs::read_to_string(&digest_file)
        .unwrap()
        .trim()
        .to_string()
}

/// A gzip tar with one file `name` holding `data` (python3's tarfile).
pub fn tar_gz(name: &str, data: &[u8]) -> Vec<u8> {
    use std::io::Write as _;
    let py = r#"
import gzip, io, sys, tarfile
name, data = sys.argv[1], sys.stdin.buffer.read()
buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
    ti = tarfile.TarInfo(name)
    ti.size = len(data)
    t.addfile(ti, io.BytesIO(data))
sys.stdout.buffer.write(gzip.compress(buf.getvalue(), mtime=0))
"#;
    let python = need("python3", "python3").unwrap();
    let mut child = Command::new(python)
        .args(["-c", py, name])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(data).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    out.stdout
}

/// Pushes a release image with no components whose image-references
/// names the release `version` (taken as is, hostile or not) to `dest`
/// (plain HTTP) via a layout in `dir`; returns its digest.
pub fn push_bare_release(skopeo: &Path, dir: &Path, version: &str, dest: &str) -> String {
    let irefs = serde_json::json!({
        "kind": "ImageStream", "apiVersion": "image.openshift.io/v1",
        "metadata": {"name": version}, "spec": {"tags": []}
    });
    push_image(
        skopeo,
        dir,
        &tar_gz(
            "release-manifests/image-references",
            irefs.to_string().as_bytes(),
        ),
        "rel",
        dest,
        None,
    )
}

/// A plain-HTTP docker-registry on a free loopback port, in a temporary
/// directory of its own, and skopeo: the start of the archive and hostile
/// tests. Fields drop in order, so the registry stops before its directory
/// goes.
pub struct PlainRegistry {
    /// The running registry.
    pub _guard: ChildGuard,
    /// `127.0.0.1:<port>`.
    pub addr: String,
    /// The skopeo binary.
    pub skopeo: PathBuf,
    /// Scratch directory (the registry's config, data and log in it).
    pub dir: tempfile::TempDir,
}

/// [`PlainRegistry`], or `None` when docker-registry or skopeo is missing
/// (outside CI, after a message).
pub fn plain_registry() -> Option<PlainRegistry> {
    let (Some(registry), Some(skopeo)) = (
        need("docker-registry", "docker-registry"),
        need("skopeo", "skopeo"),
    ) else {
        return None;
    };
    let dir = tempfile::tempdir().unwrap();
    let (_guard, addr) = start_plain_registry(&registry, dir.path(), free_tcp_port());
    Some(PlainRegistry {
        _guard,
        addr,
        skopeo,
        dir,
    })
}
