//! `okd-install mirror` against registries and networks that misbehave:
//! token realms on other hosts or plain http, hostile token services that
//! echo credentials and send terminal escapes, registries that stall or
//! send oversized bodies, a decompression bomb in a release image, an
//! HTTPS proxy from the environment, and cross-repository mounts between
//! runs. Real registries (`docker-registry`) where the behaviour is real;
//! small loopback servers written here where the misbehaviour is the point.

mod common;
mod mirror_support;

use std::io::{Read as _, Write as _};
use std::net::{Ipv4Addr, Shutdown, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine as _;
use common::okd_ok;
use mirror_support::{
    Lab, PidGuard, TokenService, assert_fails_with, assert_refused_before_login, need,
    plain_registry, push_bare_release, push_image, registry_init, registry_pid,
    start_plain_registry, text,
};
use okd_test_utils::{free_tcp_port, start_docker_registry};

/// Runs okd-install with `env`, killed after `limit` (a hang fails the test).
fn run_bounded(dir: &Path, args: &[&str], env: &[(&str, &str)], limit: Duration) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_okd-install"));
    cmd.args(args)
        .arg("--dir")
        .arg(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for v in [
        "HTTPS_PROXY",
        "https_proxy",
        "HTTP_PROXY",
        "http_proxy",
        "NO_PROXY",
        "no_proxy",
        "OKD_MIRROR_READ_TIMEOUT",
    ] {
        cmd.env_remove(v);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().unwrap();
    let t0 = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t0.elapsed() > limit {
            child.kill().unwrap();
            let out = child.wait_with_output().unwrap();
            panic!(
                "okd-install {args:?} still running after {limit:?}: {}",
                text(&out).1
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// A loopback TCP server running `handler` on a thread per connection;
/// records each request head. Handlers must end when `stop` is set.
struct Server {
    port: u16,
    heads: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

type Handler = dyn Fn(&str, TcpStream, &AtomicBool) + Send + Sync;

fn read_head(conn: &mut TcpStream) -> String {
    conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut buf = Vec::new();
    let mut b = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") && buf.len() < 65536 {
        match conn.read(&mut b) {
            Ok(1) => buf.push(b[0]),
            _ => break,
        }
    }
    String::from_utf8_lossy(&buf).into_owned()
}

impl Server {
    fn start(handler: Arc<Handler>) -> Server {
        Server::start_on(Ipv4Addr::LOCALHOST, handler)
    }

    /// [`Server::start`] on a loopback address of its own (`127.0.0.x`).
    fn start_on(ip: Ipv4Addr, handler: Arc<Handler>) -> Server {
        assert!(ip.is_loopback());
        let listener = TcpListener::bind((ip, 0)).unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let heads = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (h, s) = (heads.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            let mut workers = Vec::new();
            while !s.load(Ordering::Relaxed) {
                let Ok((mut conn, _)) = listener.accept() else {
                    std::thread::sleep(Duration::from_millis(5));
                    continue;
                };
                conn.set_nonblocking(false).unwrap();
                let (h, s, handler) = (h.clone(), s.clone(), handler.clone());
                workers.push(std::thread::spawn(move || {
                    let head = read_head(&mut conn);
                    h.lock().unwrap().push(head.clone());
                    handler(&head, conn, &s);
                }));
            }
            for w in workers {
                let _ = w.join();
            }
        });
        Server {
            port,
            heads,
            stop,
            thread: Some(thread),
        }
    }

    /// `(host:port, <addr>/okd/okd:1, <addr>/x/y)`: the server as registry,
    /// a release on it to mirror from and a repository to mirror to.
    fn endpoints(&self) -> (String, String, String) {
        let a = self.addr();
        (a.clone(), format!("{a}/okd/okd:1"), format!("{a}/x/y"))
    }

    fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Sleeps until the server stops (a stalled peer), at most 60 s.
fn stall(stop: &AtomicBool) {
    let t0 = Instant::now();
    while !stop.load(Ordering::Relaxed) && t0.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `GET /v2/` → 200; anything else → `other`.
fn registry_like(
    other: impl Fn(&str, &mut TcpStream, &AtomicBool) + Send + Sync + 'static,
) -> Server {
    Server::start(Arc::new(
        move |head: &str, mut c: TcpStream, stop: &AtomicBool| {
            if head.starts_with("GET /v2/ ") {
                let _ = c.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}",
            );
                return;
            }
            other(head, &mut c, stop);
        },
    ))
}

fn mirror_args<'a>(from: &'a str, to: &'a str, plain: &'a str) -> Vec<&'a str> {
    vec![
        "mirror",
        "release",
        "--from",
        from,
        "--to",
        to,
        "--plain-http",
        plain,
    ]
}

#[test]
fn stalls_and_oversized_bodies_end_with_clear_errors() {
    let d = tempfile::tempdir().unwrap();
    let limit = Duration::from_secs(40);

    // Accepts and never answers: the ping times out, naming registry and request.
    let silent = Server::start(Arc::new(|_: &str, _c: TcpStream, stop: &AtomicBool| {
        stall(stop)
    }));
    let (a, from, to) = silent.endpoints();
    let mut args = mirror_args(&from, &to, &a);
    args.extend(["--read-timeout", "2"]);
    let t0 = Instant::now();
    let out = run_bounded(d.path(), &args, &[], limit);
    let took = t0.elapsed();
    assert_fails_with(
        &out,
        &format!("registry {a}: GET http://{a}/v2/: no data for 2 s (read timeout"),
    );
    assert!(took < Duration::from_secs(15), "took {took:?}");

    // Answers the manifest's headers and 10 of 100000 bytes, then stalls (env timeout).
    let midway = registry_like(|_, c, stop| {
        let _ = c.write_all(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/vnd.oci.image.manifest.v1+json\r\nContent-Length: 100000\r\n\r\n{\"schemaVe",
        );
        stall(stop);
    });
    let (a, from, to) = midway.endpoints();
    let out = run_bounded(
        d.path(),
        &mirror_args(&from, &to, &a),
        &[("OKD_MIRROR_READ_TIMEOUT", "1")],
        limit,
    );
    assert_fails_with(
        &out,
        &format!("registry {a}: reading manifest {a}/okd/okd:1: no data for 1 s"),
    );

    // A manifest declared at 5 MiB is refused from its header, not read.
    let declared = registry_like(|_, c, stop| {
        let _ = c.write_all(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/vnd.oci.image.manifest.v1+json\r\nContent-Length: 5242880\r\n\r\n",
        );
        stall(stop);
    });
    // A manifest streamed without a length: refused once 4 MiB are passed,
    // before the 8 MiB the server would send.
    let streamed = registry_like(|_, c, _| {
        let _ = c.write_all(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/vnd.oci.image.manifest.v1+json\r\nTransfer-Encoding: chunked\r\n\r\n",
        );
        let chunk = [b' '; 65536];
        for _ in 0..128 {
            if c.write_all(format!("{:x}\r\n", chunk.len()).as_bytes())
                .is_err()
                || c.write_all(&chunk).is_err()
                || c.write_all(b"\r\n").is_err()
            {
                return;
            }
        }
        let _ = c.write_all(b"0\r\n\r\n");
    });
    for server in [&declared, &streamed] {
        let (a, from, to) = server.endpoints();
        let mut args = mirror_args(&from, &to, &a);
        args.extend(["--read-timeout", "30"]);
        let t0 = Instant::now();
        let out = run_bounded(d.path(), &args, &[], limit);
        let err = assert_fails_with(
            &out,
            &format!("manifest {a}/okd/okd:1: more than the limit of 4194304 bytes"),
        );
        assert!(t0.elapsed() < Duration::from_secs(20), "{err}");
    }

    // A token answer past 64 KiB is refused.
    let big_token = Server::start(Arc::new(
        move |head: &str, mut c: TcpStream, _: &AtomicBool| {
            if head.starts_with("GET /v2/ ") {
                let _ = c.write_all(format!("HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer realm=\"http://{}/token\",service=\"s\"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", c.local_addr().unwrap()).as_bytes());
            } else {
                let body = format!("{{\"token\":\"{}\"}}", "t".repeat(100_000));
                let _ = c.write_all(format!("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len()).as_bytes());
            }
            let _ = c.shutdown(Shutdown::Both);
        },
    ));
    let (a, from, to) = big_token.endpoints();
    let out = run_bounded(d.path(), &mirror_args(&from, &to, &a), &[], limit);
    assert_fails_with(
        &out,
        &format!("token answer of http://{a}/token: more than the limit of 65536 bytes"),
    );
}

/// A gzip layer whose tar holds `release-manifests/image-references` of
/// 1 GiB of zeros: about 1 MiB on the wire (concatenated gzip members of
/// 64 MiB of zeros each).
fn bomb_layer() -> Vec<u8> {
    let py = r#"
import gzip, sys, tarfile
ti = tarfile.TarInfo("release-manifests/image-references")
ti.size = 1 << 30
out = sys.stdout.buffer
out.write(gzip.compress(ti.tobuf(format=tarfile.GNU_FORMAT), 9))
zeros = gzip.compress(bytes(64 << 20), 9)
for _ in range(16):
    out.write(zeros)
out.write(gzip.compress(bytes(1024), 9))
"#;
    let python = need("python3", "python3").unwrap();
    let out = Command::new(python).args(["-c", py]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out).1);
    out.stdout
}

#[test]
fn a_decompression_bomb_in_the_release_image_is_refused_quickly() {
    let (Some(registry), Some(skopeo), Some(time)) = (
        need("docker-registry", "docker-registry"),
        need("skopeo", "skopeo"),
        okd_test_utils::tool("time", &["/usr/bin/time"], Some("time")),
    ) else {
        return;
    };
    let d = tempfile::tempdir().unwrap();
    let t = d.path();
    let (_a, a) = start_plain_registry(&registry, t, free_tcp_port());
    let layer = bomb_layer();
    assert!(layer.len() < 4 << 20, "{} bytes", layer.len());
    push_image(
        &skopeo,
        &t.join("layout"),
        &layer,
        "bomb",
        &format!("{a}/okd/okd:bomb"),
        None,
    );

    let t0 = Instant::now();
    let out = Command::new(time)
        .args(["-f", "maxrss=%M"])
        .arg(env!("CARGO_BIN_EXE_okd-install"))
        .args(["mirror", "release", "--from", &format!("{a}/okd/okd:bomb")])
        .args([
            "--to",
            &format!("{a}/mirror/okd"),
            "--plain-http",
            &a,
            "--dir",
        ])
        .arg(t)
        .output()
        .unwrap();
    let took = t0.elapsed();
    let (_, err) = text(&out);
    assert_ne!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("release-manifests/image-references in layer sha256:")
            && err.contains(
                "(1073741824 bytes by its tar header): more than the limit of 16777216 bytes"
            ),
        "{err}"
    );
    let rss_kib: u64 = err
        .rsplit("maxrss=")
        .next()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or_else(|| panic!("maxrss in {err}"));
    assert!(rss_kib < 150 * 1024, "peak RSS {rss_kib} KiB: {err}");
    assert!(took < Duration::from_secs(20), "took {took:?}");
}

/// A CONNECT proxy on loopback sending every tunnel to 127.0.0.1 at the
/// port asked for (so a name only the proxy "resolves" works through it);
/// records each request line.
fn connect_proxy() -> Server {
    Server::start(Arc::new(
        |head: &str, mut c: TcpStream, stop: &AtomicBool| {
            let line = head.lines().next().unwrap_or_default().to_string();
            let Some(target) = line
                .strip_prefix("CONNECT ")
                .and_then(|r| r.split(' ').next())
            else {
                let _ =
                    c.write_all(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n");
                return;
            };
            let port: u16 = target.rsplit(':').next().unwrap().parse().unwrap();
            let Ok(up) = TcpStream::connect((Ipv4Addr::LOCALHOST, port)) else {
                let _ = c.write_all(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n");
                return;
            };
            c.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                .unwrap();
            for s in [&c, &up] {
                s.set_read_timeout(Some(Duration::from_millis(100)))
                    .unwrap();
            }
            let pump = |mut from: TcpStream, mut to: TcpStream, stop: &AtomicBool| {
                let mut buf = vec![0u8; 65536];
                while !stop.load(Ordering::Relaxed) {
                    match from.read(&mut buf) {
                        Ok(0) => break,
                        Ok(n) => {
                            if to.write_all(&buf[..n]).is_err() {
                                break;
                            }
                        }
                        Err(e)
                            if matches!(
                                e.kind(),
                                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                            ) => {}
                        Err(_) => break,
                    }
                }
                let _ = to.shutdown(Shutdown::Write);
            };
            let (c2, up2) = (c.try_clone().unwrap(), up.try_clone().unwrap());
            std::thread::scope(|sc| {
                sc.spawn(|| pump(c2, up2, stop));
                pump(up, c, stop);
            });
        },
    ))
}

#[test]
fn realms_secrets_mounts_and_proxies() {
    let Some(lab) = Lab::new(6, 16) else { return };
    token_realm_rules_and_secrets(&lab);
    second_repository_mounts(&lab);
    https_proxy_from_the_environment(&lab);
}

/// Token realms: another host:port only with --allow-token-realm, plain
/// http only for a --plain-http registry; no request reaches a refused
/// realm. Secrets: no password, auth value or token in messages or the
/// debug log; a hostile 401 body's escapes are escaped.
fn token_realm_rules_and_secrets(lab: &Lab) {
    let registry = need("docker-registry", "docker-registry").unwrap();
    let t = lab.tmp.path();
    let (tokens, issuer_pem) = TokenService::start(
        "okd-test-issuer",
        "okd-test-registry",
        "robot",
        "t0ken-pass",
    );
    std::fs::write(t.join("issuer.pem"), &issuer_pem).unwrap();
    let realm = format!("http://127.0.0.1:{}/token", tokens.port);
    let allow = format!("127.0.0.1:{}", tokens.port);
    let token_auth = format!(
        "auth:\n  token:\n    realm: {realm}\n    service: okd-test-registry\n    issuer: okd-test-issuer\n    rootcertbundle: {}\n",
        t.join("issuer.pem").display()
    );
    // C: plain HTTP; D: TLS (B's serving certificate), both with the plain-http realm.
    let (c_port, d_port) = (free_tcp_port(), free_tcp_port());
    let reg = lab.assets.join("mirror-registry");
    for (name, port, tls) in [
        ("c", c_port, String::new()),
        (
            "d",
            d_port,
            format!(
                "  tls:\n    certificate: {}\n    key: {}\n",
                reg.join("server.crt").display(),
                reg.join("server.key").display()
            ),
        ),
    ] {
        std::fs::write(
            t.join(format!("{name}.yml")),
            format!(
                "version: 0.1\nlog: {{level: info}}\nstorage:\n  filesystem: {{rootdirectory: {}}}\n{token_auth}http:\n  addr: 127.0.0.1:{port}\n{tls}",
                t.join(format!("{name}-data")).display(),
            ),
        )
        .unwrap();
    }
    let _c = start_docker_registry(&registry, &t.join("c.yml"), &t.join("c.log"), c_port);
    let _d = start_docker_registry(&registry, &t.join("d.yml"), &t.join("d.log"), d_port);
    let c = format!("127.0.0.1:{c_port}");
    let d = format!("localhost:{d_port}");
    let good = t.join("robot.json");
    std::fs::write(
        &good,
        format!(
            r#"{{"auths":{{"{c}":{{"auth":"cm9ib3Q6dDBrZW4tcGFzcw=="}},"{d}":{{"auth":"cm9ib3Q6dDBrZW4tcGFzcw=="}}}}}}"#
        ),
    )
    .unwrap();
    let good = good.to_str().unwrap();

    // Realm on another port of the host, not allowed: refused, nothing sent to it.
    let to = format!("{c}/tok/okd");
    let out = lab.mirror(&to, &["--plain-http", &c, "-a", good]);
    assert_refused_before_login(
        &out,
        &format!(
            "registry {c}: refusing token realm \"{realm}\", no login sent to it: the realm is on {allow}, not on the registry's host 127.0.0.1 (allow it with --allow-token-realm {allow})"
        ),
        &tokens,
    );

    // A TLS registry naming a plain-http realm: refused even with the host allowed.
    let out = lab.mirror(
        &format!("{d}/tok/okd"),
        &["--allow-token-realm", &allow, "-a", good],
    );
    assert_refused_before_login(
        &out,
        &format!(
            "registry {d}: refusing token realm \"{realm}\", no login sent to it: the realm is plain http while {d} is spoken to over https"
        ),
        &tokens,
    );

    // Allowed: tokens are fetched (once per scope) and never logged, even at debug level.
    let allowed = |auth: &str| {
        lab.mirror(
            &to,
            &[
                "--plain-http",
                &c,
                "--allow-token-realm",
                &allow,
                "-a",
                auth,
                "--log-level",
                "debug",
            ],
        )
    };
    let out = allowed(good);
    let (_, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    let reqs = tokens.requests.lock().unwrap().clone();
    assert!(
        reqs.iter().any(|(q, s)| *s == 200
            && q.contains("scope=repository%3Atok%2Fokd%3Apull%2Cpush")
            && q.contains("service=okd-test-registry")),
        "push token asked for with the service: {reqs:?}"
    );
    assert!(reqs.len() <= 3, "tokens are cached: {reqs:?}");
    let log =
        std::fs::read_to_string(lab.assets.join(".openshift_install.log")).unwrap_or_default();
    let issued = tokens.issued.lock().unwrap().clone();
    assert!(!issued.is_empty());
    for secret in issued
        .iter()
        .map(String::as_str)
        .chain(["cm9ib3Q6dDBrZW4tcGFzcw==", "t0ken-pass"])
    {
        assert!(!stderr.contains(secret), "secret in stderr: {stderr}");
        assert!(!log.contains(secret), "secret in the log file");
    }
    // skopeo, with its own token handling, reads the release back by digest.
    let rel = lab.images()["release"].clone();
    let out = Command::new(&lab.skopeo)
        .args([
            "inspect",
            "--raw",
            "--tls-verify=false",
            "--creds",
            "robot:t0ken-pass",
        ])
        .arg(format!("docker://{to}@{rel}"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out).1);
    assert_eq!(okd_mirror::oci::Digest::of(&out.stdout).to_string(), rel);

    // A wrong password: the hostile token service echoes the Authorization
    // header with terminal escapes in its 401; the one error names the
    // registry, realm and user, and shows neither the secret nor raw escapes.
    let pair = "robot:N0t-the-pass";
    let b64 = base64::engine::general_purpose::STANDARD.encode(pair);
    let bad = t.join("bad.json");
    std::fs::write(&bad, format!(r#"{{"auths":{{"{c}":{{"auth":"{b64}"}}}}}}"#)).unwrap();
    let out = allowed(bad.to_str().unwrap());
    let stderr = assert_fails_with(
        &out,
        &format!("registry {c} (auth realm \"{realm}\") rejected the login of user \"robot\""),
    );
    assert!(
        stderr.contains("<redacted>"),
        "the echoed header is redacted: {stderr}"
    );
    assert!(
        stderr.contains(r"\u{1b}[2J"),
        "escapes shown escaped: {stderr}"
    );
    assert_eq!(stderr.matches("level=error").count(), 1, "{stderr}");
    let log =
        std::fs::read_to_string(lab.assets.join(".openshift_install.log")).unwrap_or_default();
    for (name, text) in [("stderr", &stderr), ("log file", &log)] {
        for secret in [b64.as_str(), pair, "N0t-the-pass"] {
            assert!(!text.contains(secret), "{secret} in {name}: {text}");
        }
        assert!(
            !text.contains(['\u{1b}', '\r', '\u{7}']),
            "raw control characters in {name}: {text:?}"
        );
    }
}

/// Mirroring into a second repository of the same registry mounts every
/// blob from the first (known from the first run), sending none again.
fn second_repository_mounts(lab: &Lab) {
    let out = lab.mirror(&lab.b("one/okd"), &[]);
    assert!(out.status.success(), "{}", text(&out).1);
    let before = std::fs::read_to_string(&lab.b_log).unwrap().len();
    let out = lab.mirror(&lab.b("two/okd"), &[]);
    let (_, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    let log = std::fs::read_to_string(&lab.b_log).unwrap();
    let second = &log[before..];
    let mounts = second
        .lines()
        .filter(|l| {
            l.contains("\"POST /v2/two/okd/blobs/uploads/?mount=sha256%3A")
                && l.contains("from=one%2Fokd")
                && l.contains("\" 201 ")
        })
        .count();
    assert!(mounts > 0, "mounts in the registry log:\n{second}");
    assert!(
        !second.contains("\"PUT /v2/two/okd/blobs/uploads/")
            && !second.contains("\"PATCH /v2/two/okd/blobs/"),
        "no blob sent again:\n{second}"
    );
    assert!(stderr.contains(&format!(" {mounts} mounted")), "{stderr}");
    assert!(stderr.contains(": 0 copied (0.0 MiB)"), "{stderr}");
}

/// HTTPS_PROXY is used for a registry only reachable through the proxy
/// (its name resolves nowhere else); loopback is never proxied; NO_PROXY
/// bypasses the proxy.
fn https_proxy_from_the_environment(lab: &Lab) {
    let registry = need("docker-registry", "docker-registry").unwrap();
    let t = lab.tmp.path().join("proxied");
    std::fs::create_dir_all(&t).unwrap();
    std::fs::write(t.join("pw"), "pr0xy-pass\n").unwrap();
    let port = free_tcp_port();
    let err = okd_ok(
        &t,
        &[
            &registry_init("mirror.okd.test", "127.0.0.1")[..],
            &[
                "--port",
                &port.to_string(),
                "--username",
                "okd",
                "--password-file",
                t.join("pw").to_str().unwrap(),
                "--start",
                "--registry-program",
                registry.to_str().unwrap(),
            ],
        ]
        .concat(),
    );
    let reg = t.join("mirror-registry");
    let _e = PidGuard(registry_pid(&reg));
    assert!(err.contains("Mirror registry running"), "{err}");
    let proxy = connect_proxy();
    let proxy_url = format!("http://{}", proxy.addr());
    let to = format!("mirror.okd.test:{port}/px/okd");
    let (from, plain) = (lab.from(), lab.plain());
    let ps = reg.join("pull-secret.json");
    let args = [
        "mirror",
        "release",
        "--from",
        &from,
        "--to",
        &to,
        "--plain-http",
        &plain,
        "-a",
        ps.to_str().unwrap(),
    ];
    let env = [
        ("HTTPS_PROXY", proxy_url.as_str()),
        ("HTTP_PROXY", proxy_url.as_str()),
    ];
    let out = run_bounded(&t, &args, &env, Duration::from_secs(120));
    let (_, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    let heads = proxy.heads.lock().unwrap().clone();
    assert!(
        heads
            .iter()
            .any(|h| h.starts_with(&format!("CONNECT mirror.okd.test:{port} "))),
        "tunnels through the proxy: {heads:?}"
    );
    assert!(
        heads.iter().all(|h| !h.contains("127.0.0.1")),
        "loopback (the source) is never proxied: {heads:?}"
    );
    let seen = heads.len();

    // NO_PROXY names the domain: no tunnel; the name resolves nowhere.
    let env = [
        ("HTTPS_PROXY", proxy_url.as_str()),
        ("NO_PROXY", "localhost,.okd.test"),
    ];
    let out = run_bounded(&t, &args, &env, Duration::from_secs(60));
    assert_fails_with(
        &out,
        &format!("cannot reach registry mirror.okd.test:{port}"),
    );
    assert_eq!(
        proxy.heads.lock().unwrap().len(),
        seen,
        "the proxy was bypassed"
    );
}

/// A registry answering the upload `POST` with a `Location` on another
/// loopback address and port (issue #18, 6): the upload goes there without
/// the `Authorization` header, which only the registry's own scheme, host
/// and port receive.
#[test]
fn credentials_never_follow_an_upload_location_to_another_host() {
    let Some(lab) = plain_registry() else {
        return;
    };
    let (skopeo, t, a) = (&lab.skopeo, lab.dir.path(), &lab.addr);
    push_bare_release(
        skopeo,
        &t.join("layout"),
        "4.15.0-0.okd-hostile",
        &format!("{a}/okd/okd:rel"),
    );
    // The foreign upload endpoint: records what it is sent, accepts nothing.
    let foreign = Server::start_on(
        Ipv4Addr::new(127, 0, 0, 2),
        Arc::new(|_: &str, mut c: TcpStream, _: &AtomicBool| {
            let _ = c.write_all(
                b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            );
            let _ = c.shutdown(Shutdown::Both);
        }),
    );
    let location = format!("http://127.0.0.2:{}/upload/1", foreign.port);
    // The hostile registry: Basic auth on /v2/, no blobs, uploads sent away.
    let hostile = Server::start(Arc::new(
        move |head: &str, mut c: TcpStream, _: &AtomicBool| {
            let authorized = head
                .lines()
                .any(|l| l.to_ascii_lowercase().starts_with("authorization: basic "));
            let answer = if head.starts_with("GET /v2/ ") && !authorized {
                "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"hostile\"\r\nContent-Length: 0\r\n".to_string()
            } else if head.starts_with("GET /v2/ ") {
                "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n".to_string()
            } else if head.starts_with("POST ") && head.contains("/blobs/uploads/") {
                format!("HTTP/1.1 202 Accepted\r\nLocation: {location}\r\nContent-Length: 0\r\n")
            } else {
                "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n".to_string()
            };
            let _ = c.write_all(format!("{answer}Connection: close\r\n\r\n").as_bytes());
            let _ = c.shutdown(Shutdown::Both);
        },
    ));
    let h = hostile.addr();
    let auth = t.join("auth.json");
    let secret = base64::engine::general_purpose::STANDARD.encode("robot:h0stile-pass");
    std::fs::write(
        &auth,
        format!(r#"{{"auths":{{"{h}":{{"auth":"{secret}"}}}}}}"#),
    )
    .unwrap();
    let (from, to) = (format!("{a}/okd/okd:rel"), format!("{h}/x/y"));
    let mut args = mirror_args(&from, &to, a);
    args.extend(["--plain-http", &h, "-a", auth.to_str().unwrap()]);
    let out = run_bounded(t, &args, &[], Duration::from_secs(60));
    assert_ne!(out.status.code(), Some(0), "{}", text(&out).1);
    assert!(
        hostile
            .heads
            .lock()
            .unwrap()
            .iter()
            .any(|h| h.to_ascii_lowercase().contains("authorization: basic")),
        "the registry itself got the login"
    );
    let sent = foreign.heads.lock().unwrap().clone();
    assert!(!sent.is_empty(), "the upload went to the Location");
    for head in &sent {
        assert!(
            !head.to_ascii_lowercase().contains("authorization"),
            "credentials sent to the foreign Location: {head}"
        );
    }
}

const TRAVERSAL: &str = "../../../other-team/app/manifests/latest";

/// For the tag traversal tests: a plain registry holding a release
/// image whose image-references names `version`, at `okd/okd:rel`, and
/// the same image in `other-team/app:v1` (so that repository holds the
/// blobs and a manifest PUT there would be accepted). Returns the temp
/// dir, the registry's guard, its address and skopeo.
fn traversal_lab(
    version: &str,
) -> Option<(
    tempfile::TempDir,
    okd_test_utils::ChildGuard,
    String,
    std::path::PathBuf,
)> {
    let (Some(registry), Some(skopeo)) = (
        need("docker-registry", "docker-registry"),
        need("skopeo", "skopeo"),
    ) else {
        return None;
    };
    let d = tempfile::tempdir().unwrap();
    let t = d.path();
    let (guard, a) = start_plain_registry(&registry, t, free_tcp_port());
    push_bare_release(
        &skopeo,
        &t.join("rel"),
        version,
        &format!("{a}/okd/okd:rel"),
    );
    let out = Command::new(&skopeo)
        .args(["copy", "--src-tls-verify=false", "--dest-tls-verify=false"])
        .arg(format!("docker://{a}/okd/okd:rel"))
        .arg(format!("docker://{a}/other-team/app:v1"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out).1);
    std::fs::create_dir_all(t.join("assets")).unwrap();
    assert!(!other_team_has_latest(&skopeo, &a));
    Some((d, guard, a, skopeo))
}

fn other_team_has_latest(skopeo: &Path, a: &str) -> bool {
    Command::new(skopeo)
        .args(["inspect", "--raw", "--tls-verify=false"])
        .arg(format!("docker://{a}/other-team/app:latest"))
        .output()
        .unwrap()
        .status
        .success()
}

/// A release version from image-references that is not an OCI tag
/// (issue #18, 7) is refused: `../../../other-team/app/manifests/latest`
/// must not write a manifest into `other-team/app`.
#[test]
fn an_image_references_version_cannot_leave_the_target_repository() {
    let Some((d, _a, a, skopeo)) = traversal_lab(TRAVERSAL) else {
        return;
    };
    let (from, to) = (format!("{a}/okd/okd:rel"), format!("{a}/mirror/okd"));
    let out = run_bounded(
        &d.path().join("assets"),
        &mirror_args(&from, &to, &a),
        &[],
        Duration::from_secs(60),
    );
    assert!(
        !other_team_has_latest(&skopeo, &a),
        "a manifest landed in other-team/app: {}",
        text(&out).1
    );
    assert_fails_with(
        &out,
        &format!(
            "metadata.name {TRAVERSAL:?} (the release version, used as a tag) must match [a-zA-Z0-9_][a-zA-Z0-9._-]{{0,127}}"
        ),
    );
}

/// The same for an archive whose `okd-release.json` was edited
/// (`from-disk`): its version, digests and repositories are checked like
/// image-references, naming the file and the field.
#[test]
fn an_archive_version_cannot_leave_the_target_repository() {
    let good = "4.15.0-0.okd-tags";
    let Some((d, _a, a, skopeo)) = traversal_lab(good) else {
        return;
    };
    let assets = d.path().join("assets");
    let archive = d.path().join("archive");
    let to = format!("{a}/mirror/okd");
    okd_ok(
        &assets,
        &[
            "mirror",
            "to-disk",
            "--from",
            &format!("{a}/okd/okd:rel"),
            "--archive",
            archive.to_str().unwrap(),
            "--plain-http",
            &a,
        ],
    );
    let meta = archive.join("okd-release.json");
    let text_before = std::fs::read_to_string(&meta).unwrap();
    assert!(text_before.contains(good), "{text_before}");
    std::fs::write(&meta, text_before.replace(good, TRAVERSAL)).unwrap();
    let from_disk = [
        "mirror",
        "from-disk",
        "--archive",
        archive.to_str().unwrap(),
        "--to",
        &to,
        "--plain-http",
        &a,
    ];
    let out = run_bounded(&assets, &from_disk, &[], Duration::from_secs(60));
    assert!(
        !other_team_has_latest(&skopeo, &a),
        "a manifest landed in other-team/app: {}",
        text(&out).1
    );
    let err = assert_fails_with(&out, &meta.display().to_string());
    assert!(
        err.contains(&format!("version {TRAVERSAL:?}"))
            && err.contains("[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}"),
        "{err}"
    );

    // A digest or source in the archive outside the grammar is refused the same way.
    for (field, bad) in [
        (
            "digest",
            text_before.replacen("\"sha256:", "\"sha256:../", 1),
        ),
        (
            "source",
            text_before.replace("/okd/okd\"", "/okd/../../okd\""),
        ),
    ] {
        assert_ne!(bad, text_before, "{field} edited");
        std::fs::write(&meta, &bad).unwrap();
        let out = run_bounded(&assets, &from_disk, &[], Duration::from_secs(60));
        let err = assert_fails_with(&out, &meta.display().to_string());
        assert!(err.contains(field), "{field}: {err}");
    }
}

/// Issue #42 item 5: a registry that speaks plain HTTP, given without
/// `--plain-http`, is named as that with the flag to pass (not only
/// rustls' "received corrupt message of type InvalidContentType").
#[test]
fn a_plain_http_registry_without_the_flag_names_it() {
    let Some(registry) = need("docker-registry", "docker-registry") else {
        return;
    };
    let d = tempfile::tempdir().unwrap();
    let (_guard, a) = start_plain_registry(&registry, d.path(), free_tcp_port());
    std::fs::create_dir_all(d.path().join("assets")).unwrap();
    let out = run_bounded(
        &d.path().join("assets"),
        &[
            "mirror",
            "release",
            "--from",
            &format!("{a}/okd/okd:4.19"),
            "--to",
            &format!("{a}/mirror/okd"),
        ],
        &[],
        Duration::from_secs(60),
    );
    let err = assert_fails_with(&out, "the registry answers plain HTTP, not TLS");
    assert!(err.contains(&format!("--plain-http {a}")), "{err}");
}
