//! The server over real TLS (okd-pki certificates): the real `curl`, a
//! tokio-rustls client, the FetchObserver, and the real Ignition fetch and
//! files stages against `/config/master`.

mod common;

use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use common::{Recorder, Server, header, parse_response, pki};
use okd_mcs::{FetchObserver, McsState, SpecVersion};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

const IGN33: &str = "application/vnd.coreos.ignition+json;version=3.3.0, */*;q=0.1";

fn client_config(ca_pem: &str, alpn: &[&[u8]]) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots.add(c.expect("CA PEM")).expect("add CA");
    }
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut cfg = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("protocol versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    cfg.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Arc::new(cfg)
}

async fn connect(
    addr: SocketAddr,
    cfg: Arc<rustls::ClientConfig>,
) -> std::io::Result<TlsStream<TcpStream>> {
    let tcp = TcpStream::connect(addr).await?;
    let name = ServerName::try_from("127.0.0.1").expect("server name");
    tokio::time::timeout(
        Duration::from_secs(10),
        tokio_rustls::TlsConnector::from(cfg).connect(name, tcp),
    )
    .await
    .expect("handshake within 10 s")
}

/// Sends one request on a kept-alive connection and reads exactly one
/// response (its body by Content-Length; none for HEAD).
async fn request(
    s: &mut TlsStream<TcpStream>,
    method: &str,
    path: &str,
    accept: Option<&str>,
) -> (u16, Vec<(String, String)>, Vec<u8>) {
    let mut req =
        format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: okd-mcs-test\r\n");
    if let Some(a) = accept {
        req.push_str(&format!("Accept: {a}\r\n"));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes()).await.expect("send request");
    let mut raw = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    let read = async {
        loop {
            if let Some(end) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
                let (status, headers, _) = parse_response(&raw[..end + 4]);
                let len: usize = if method == "HEAD" {
                    0
                } else {
                    header(&headers, "content-length")
                        .map(|l| l.parse().expect("content-length"))
                        .unwrap_or(0)
                };
                if raw.len() >= end + 4 + len {
                    // Nothing may follow the response on this connection.
                    assert_eq!(raw.len(), end + 4 + len, "extra bytes after the response");
                    return (status, headers, raw[end + 4..].to_vec());
                }
            }
            let n = s.read(&mut buf).await.expect("read response");
            assert!(
                n > 0,
                "connection closed mid-response: {:?}",
                String::from_utf8_lossy(&raw)
            );
            raw.extend_from_slice(&buf[..n]);
        }
    };
    tokio::time::timeout(Duration::from_secs(10), read)
        .await
        .expect("response within 10 s")
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f).await.expect("blocking task")
}

fn write(dir: &Path, name: &str, data: &[u8]) -> String {
    let p = dir.join(name);
    std::fs::write(&p, data).expect("write file");
    p.display().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curl_over_tls() {
    let Some(curl) = common::tool("curl", &["/usr/bin/curl"]) else {
        return;
    };
    let state = common::sample_state();
    let want33 = state
        .body("master", SpecVersion::V3(3))
        .unwrap()
        .unwrap()
        .to_vec();
    let want22 = state
        .body("master", SpecVersion::V2_2)
        .unwrap()
        .unwrap()
        .to_vec();
    let srv = Server::start(state, None, true);
    let dir = tempfile::tempdir().expect("tempdir");
    let ca = write(dir.path(), "ca.pem", pki().ca_pem.as_bytes());
    let other = write(dir.path(), "other.pem", common::other_ca_pem().as_bytes());
    let base = format!("https://127.0.0.1:{}", srv.addr.port());

    // Returns (curl exit code, "<status> <http version>", headers, body).
    let run = |args: Vec<String>| {
        let curl = curl.clone();
        blocking(move || {
            let d = tempfile::tempdir().expect("tempdir");
            let (h, b) = (d.path().join("h"), d.path().join("b"));
            let mut c = Command::new(curl);
            c.args(["-sS", "--max-time", "20", "-D"])
                .arg(&h)
                .arg("-o")
                .arg(&b)
                .args(["-w", "%{http_code} %{http_version}"])
                .args(&args);
            let r = common::run_bounded(c, "curl", Duration::from_secs(30));
            let headers = std::fs::read(&h).unwrap_or_default();
            let headers = if headers.is_empty() {
                Vec::new()
            } else {
                parse_response(&headers).1
            };
            (
                r.code,
                String::from_utf8_lossy(&r.stdout).into_owned(),
                headers,
                std::fs::read(&b).unwrap_or_default(),
            )
        })
    };
    let args = |extra: &[&str]| -> Vec<String> {
        let mut v = vec!["--cacert".to_string(), ca.clone()];
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };

    let url = format!("{base}/config/master");
    let (code, w, h, b) = run(args(&["-H", &format!("Accept: {IGN33}"), &url])).await;
    assert_eq!((code, w.as_str()), (Some(0), "200 1.1"));
    assert_eq!(b, want33);
    assert_eq!(header(&h, "content-type"), Some("application/json"));
    assert_eq!(
        header(&h, "content-length"),
        Some(want33.len().to_string().as_str())
    );

    // curl's own Accept (*/*): spec 2.2; HTTP/2 asked for, HTTP/1.1 served.
    let (code, w, _, b) = run(args(&["--http2", &url])).await;
    assert_eq!((code, w.as_str()), (Some(0), "200 1.1"));
    assert_eq!(b, want22);

    // HEAD: the GET's headers, no body.
    let (code, w, h, b) = run(args(&["-I", "-H", &format!("Accept: {IGN33}"), &url])).await;
    assert_eq!((code, w.as_str()), (Some(0), "200 1.1"));
    assert_eq!(
        header(&h, "content-length"),
        Some(want33.len().to_string().as_str())
    );
    assert_eq!(header(&h, "content-type"), Some("application/json"));
    // curl -I writes the header block to -o; nothing may follow it.
    let (_, _, after) = parse_response(&b);
    assert!(after.is_empty(), "HEAD body: {} bytes", after.len());

    let (code, w, h, b) = run(args(&[&format!("{base}/healthz")])).await;
    assert_eq!((code, w.as_str()), (Some(0), "200 1.1"));
    assert_eq!(header(&h, "content-length"), Some("0"));
    assert!(b.is_empty());

    let (_, w, _, _) = run(args(&[&format!("{base}/config/nope")])).await;
    assert_eq!(w, "404 1.1");
    let (_, w, _, _) = run(args(&[&format!("{base}/elsewhere")])).await;
    assert_eq!(w, "404 1.1");
    let (_, w, h, _) = run(args(&["-X", "POST", &url])).await;
    assert_eq!(w, "405 1.1");
    assert_eq!(header(&h, "content-length"), Some("0"));
    let (_, w, _, b) = run(args(&[
        "-H",
        "Accept: application/vnd.coreos.ignition+json;version=3.0.0",
        &url,
    ]))
    .await;
    assert_eq!(w, "400 1.1");
    assert!(String::from_utf8_lossy(&b).contains("unsupported Ignition version"));

    // A CA that did not sign the server's certificate: curl refuses (60).
    let (code, w, _, _) = run(vec!["--cacert".into(), other, url.clone()]).await;
    assert_eq!(code, Some(60), "{w}");
    assert_eq!(w, "000 0");

    let addr = srv.addr;
    srv.stop().await.expect("clean stop");
    // Stopped: nothing listens any more.
    assert!(TcpStream::connect(addr).await.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rustls_client_keepalive_head_and_wrong_ca() {
    let state = common::sample_state();
    let want32 = state
        .body("master", SpecVersion::V3(2))
        .unwrap()
        .unwrap()
        .to_vec();
    let want_w = state
        .body("worker", SpecVersion::V3(5))
        .unwrap()
        .unwrap()
        .to_vec();
    let rec = Arc::new(Recorder::default());
    let srv = Server::start(state, Some(rec.clone() as Arc<dyn FetchObserver>), true);

    // Offering h2 too: the server picks http/1.1.
    let mut s = connect(
        srv.addr,
        client_config(&pki().ca_pem, &[b"h2", b"http/1.1"]),
    )
    .await
    .expect("TLS connection");
    assert_eq!(s.get_ref().1.alpn_protocol(), Some(&b"http/1.1"[..]));
    let local = s.get_ref().0.local_addr().expect("local addr");

    let v32 = "application/vnd.coreos.ignition+json;version=3.2.0";
    // Several requests on one connection (keep-alive): HEAD first, then the
    // GETs must still parse, so HEAD sent no body.
    let (st, h, b) = request(&mut s, "HEAD", "/config/master", Some(v32)).await;
    assert_eq!(st, 200);
    assert!(b.is_empty());
    assert_eq!(
        header(&h, "content-length"),
        Some(want32.len().to_string().as_str())
    );
    let (st, _, b) = request(&mut s, "GET", "/config/master", Some(v32)).await;
    assert_eq!(st, 200);
    assert_eq!(b, want32);
    let (st, _, b) = request(
        &mut s,
        "GET",
        "/config/worker",
        Some("application/vnd.coreos.ignition+json;version=3.7.0"),
    )
    .await;
    assert_eq!(st, 200);
    assert_eq!(b, want_w);
    // Like Go's path.Base: the last element, trailing slash ignored.
    let (st, _, b) = request(&mut s, "GET", "/config/anything/master/", Some(v32)).await;
    assert_eq!(st, 200);
    assert_eq!(b, want32);
    let (st, _, _) = request(&mut s, "GET", "/config/infra", Some(v32)).await;
    assert_eq!(st, 404);
    let (st, _, _) = request(
        &mut s,
        "GET",
        "/config/master",
        Some("application/vnd.coreos.ignition+json;version=2.1.0"),
    )
    .await;
    assert_eq!(st, 400);
    let (st, h, b) = request(&mut s, "HEAD", "/healthz", None).await;
    assert_eq!(
        (st, header(&h, "content-length"), b.len()),
        (200, Some("0"), 0)
    );
    let (st, _, _) = request(&mut s, "DELETE", "/healthz", None).await;
    assert_eq!(st, 405);

    // The observer saw each /config request: peer, pool, spec, status.
    let calls = rec.calls();
    let want: Vec<(SocketAddr, &str, &str, u16)> = vec![
        (local, "master", "3.2.0", 200),
        (local, "master", "3.2.0", 200),
        (local, "worker", "3.5.0", 200),
        (local, "master", "3.2.0", 200),
        (local, "infra", "", 404),
        (local, "master", "", 400),
    ];
    let got: Vec<(SocketAddr, &str, &str, u16)> = calls
        .iter()
        .map(|(p, pool, spec, st)| (*p, pool.as_str(), spec.as_str(), *st))
        .collect();
    assert_eq!(got, want);

    // TLS 1.2 works too (the server offers 1.2 and 1.3).
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_slice_iter(pki().ca_pem.as_bytes()) {
        roots.add(c.unwrap()).unwrap();
    }
    let tls12 = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS12])
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let mut s12 = connect(srv.addr, Arc::new(tls12)).await.expect("TLS 1.2");
    assert_eq!(
        s12.get_ref().1.protocol_version(),
        Some(rustls::ProtocolVersion::TLSv1_2)
    );
    let (st, _, b) = request(&mut s12, "GET", "/config/master", Some(v32)).await;
    assert_eq!((st, b == want32), (200, true));

    // A client trusting another CA fails the handshake.
    let err = connect(srv.addr, client_config(&common::other_ca_pem(), &[]))
        .await
        .expect_err("handshake with the wrong CA");
    assert!(
        err.to_string().contains("UnknownIssuer") || err.to_string().contains("unknown issuer"),
        "{err}"
    );
    srv.stop().await.expect("clean stop");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_http_listener() {
    let state = common::sample_state();
    let want = state
        .body("worker", SpecVersion::V2_2)
        .unwrap()
        .unwrap()
        .to_vec();
    let rec = Arc::new(Recorder::default());
    let srv = Server::start(state, Some(rec.clone() as Arc<dyn FetchObserver>), false);
    let mut s = TcpStream::connect(srv.addr).await.expect("connect");
    s.write_all(b"GET /config/worker HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .expect("send");
    let mut raw = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut raw))
        .await
        .expect("response within 10 s")
        .expect("read");
    let (st, _, body) = parse_response(&raw);
    assert_eq!(st, 200);
    assert_eq!(body, want);
    let calls = rec.calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(
        (calls[0].1.as_str(), calls[0].2.as_str(), calls[0].3),
        ("worker", "2.2.0", 200)
    );
    assert_eq!(calls[0].0.ip(), std::net::Ipv4Addr::LOCALHOST);
    srv.stop().await.expect("clean stop");
}

#[test]
fn bad_tls_pair_is_refused() {
    let e = okd_mcs::tls_config(b"not pem", pki().key_pem.as_bytes())
        .unwrap_err()
        .to_string();
    assert!(e.contains("no certificate"), "{e}");
    let e = okd_mcs::tls_config(pki().cert_pem.as_bytes(), b"")
        .unwrap_err()
        .to_string();
    assert!(e.contains("key"), "{e}");
    okd_mcs::tls_config(pki().cert_pem.as_bytes(), pki().key_pem.as_bytes()).expect("good pair");
}

/// A target root that Ignition's files stage accepts (coreos/ignition run with
/// `-platform=file`, as measured with Debian's `ignition` 2.14).
fn make_root(root: &Path) {
    std::fs::create_dir_all(root.join("etc/selinux")).unwrap();
    std::fs::create_dir_all(root.join("home")).unwrap();
    for (f, text) in [
        ("etc/passwd", "root:x:0:0:root:/root:/bin/bash\n"),
        ("etc/group", "root:x:0:\n"),
        ("etc/shadow", "root:*:19000:0:99999:7:::\n"),
        ("etc/gshadow", "root:*::\n"),
        (
            "etc/selinux/config",
            "SELINUX=disabled\nSELINUXTYPE=targeted\n",
        ),
    ] {
        std::fs::write(root.join(f), text).unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_ignition_fetches_and_applies_the_master_config() {
    let Some(ignition) = common::ignition() else {
        return;
    };
    // The real rendered master pool of the single-master example, served
    // with a certificate for 127.0.0.1.
    let assets = common::real_asset_dir("baremetal-single-master");
    let mut state = McsState::from_asset_dir(assets.path()).expect("from_asset_dir");
    let p = pki();
    state.set_tls_pair(
        p.cert_pem.clone().into_bytes(),
        p.key_pem.clone().into_bytes(),
    );
    let served: Value =
        serde_json::from_slice(state.body("master", SpecVersion::V3(3)).unwrap().unwrap()).unwrap();
    let rec = Arc::new(Recorder::default());
    let srv = Server::start(state, Some(rec.clone() as Arc<dyn FetchObserver>), true);

    // The installer's master.ign pointer, aimed at this server and its CA.
    let mut pointer: Value =
        serde_json::from_slice(&std::fs::read(assets.path().join("master.ign")).unwrap()).unwrap();
    let src = pointer
        .pointer("/ignition/config/merge/0/source")
        .and_then(Value::as_str)
        .unwrap();
    assert!(src.ends_with(":22623/config/master"), "{src}");
    pointer["ignition"]["config"]["merge"][0]["source"] = json!(format!(
        "https://127.0.0.1:{}/config/master",
        srv.addr.port()
    ));
    pointer["ignition"]["security"]["tls"]["certificateAuthorities"] =
        json!([{"source": okd_types::dataurl::encode(p.ca_pem.as_bytes())}]);

    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path().to_path_buf();
    std::fs::create_dir_all(d.join("run")).unwrap();
    write(&d, "pointer.ign", pointer.to_string().as_bytes());
    let cache = d.join("run/ignition.json");
    let ign = ignition.clone();
    let dd = d.clone();
    let fetch = blocking(move || {
        let mut c = Command::new(ign);
        c.env("IGNITION_CONFIG_FILE", dd.join("pointer.ign"))
            .args(["-platform=file", "-stage=fetch", "-log-to-stdout"])
            .arg(format!(
                "-config-cache={}",
                dd.join("run/ignition.json").display()
            ))
            .arg(format!("-state-file={}", dd.join("run/state").display()))
            .arg(format!("-neednet={}", dd.join("run/neednet").display()));
        // Ignition retries failed fetches forever: bounded here.
        common::run_bounded(c, "ignition-fetch", Duration::from_secs(90))
    })
    .await;
    let log = format!("{}{}", String::from_utf8_lossy(&fetch.stdout), fetch.stderr);
    assert_eq!(fetch.code, Some(0), "ignition fetch failed:\n{log}");
    assert!(log.contains("GET result: OK"), "{log}");

    // The server saw Ignition 2.14 ask for spec 3.3.0.
    let calls = rec.calls();
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(
        (calls[0].1.as_str(), calls[0].2.as_str(), calls[0].3),
        ("master", "3.3.0", 200)
    );
    assert_eq!(calls[0].0.ip(), std::net::Ipv4Addr::LOCALHOST);

    // The config cache holds the served config merged into the pointer:
    // every served file with its contents, the user and its SSH key.
    let cached: Value = serde_json::from_slice(&std::fs::read(&cache).expect("config cache"))
        .expect("cache is JSON");
    let files = |v: &Value| -> Vec<(String, Value)> {
        v.pointer("/storage/files")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|f| {
                (
                    f.get("path")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                    f.pointer("/contents/source")
                        .cloned()
                        .unwrap_or(Value::Null),
                )
            })
            .collect()
    };
    let served_files = files(&served);
    assert_eq!(served_files.len(), 5, "{served_files:?}");
    assert_eq!(files(&cached), served_files);
    assert_eq!(
        cached.pointer("/passwd/users/0/sshAuthorizedKeys"),
        served.pointer("/passwd/users/0/sshAuthorizedKeys")
    );
    assert!(
        served
            .pointer("/passwd/users/0/sshAuthorizedKeys/0")
            .is_some()
    );

    // The files stage writes them into a test root.
    let root = d.join("root");
    make_root(&root);
    std::fs::create_dir_all(d.join("stub")).unwrap();
    let stub = write(&d, "stub/setfiles", b"#!/bin/sh\ncat >/dev/null\nexit 0\n");
    std::fs::set_permissions(&stub, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        d.join("stub").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let dd = d.clone();
    let files_stage = blocking(move || {
        let mut c = Command::new(ignition);
        c.env("PATH", path)
            .args(["-platform=file", "-stage=files", "-log-to-stdout"])
            .arg(format!("-root={}", dd.join("root").display()))
            .arg(format!(
                "-config-cache={}",
                dd.join("run/ignition.json").display()
            ))
            .arg(format!("-state-file={}", dd.join("run/state").display()));
        common::run_bounded(c, "ignition-files", Duration::from_secs(90))
    })
    .await;
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&files_stage.stdout),
        files_stage.stderr
    );
    assert_eq!(files_stage.code, Some(0), "ignition files failed:\n{log}");
    let written =
        std::fs::read(root.join("etc/kubernetes/kubeconfig")).expect("kubeconfig written");
    let ign: Value =
        serde_json::from_slice(&std::fs::read(assets.path().join("bootstrap.ign")).unwrap())
            .unwrap();
    let kubelet_kubeconfig = ign
        .pointer("/storage/files")
        .and_then(Value::as_array)
        .unwrap()
        .iter()
        .find(|f| f.get("path").and_then(Value::as_str) == Some(okd_mcs::KUBECONFIG_KUBELET_PATH))
        .and_then(|f| f.pointer("/contents/source").and_then(Value::as_str))
        .map(|s| okd_types::dataurl::decode(s).unwrap())
        .unwrap();
    assert_eq!(written, kubelet_kubeconfig);
    let ann: Value = serde_json::from_slice(
        &std::fs::read(root.join("etc/machine-config-daemon/node-annotations.json")).unwrap(),
    )
    .unwrap();
    let name = served_name(&served);
    assert_eq!(
        ann.get("machineconfiguration.openshift.io/currentConfig"),
        Some(&json!(name))
    );
    let keys = std::fs::read_to_string(root.join("home/core/.ssh/authorized_keys.d/ignition"))
        .expect("core's authorized keys");
    assert!(keys.starts_with("ssh-"), "{keys}");
    srv.stop().await.expect("clean stop");
}

/// The rendered name inside the served node-annotations file.
fn served_name(served: &Value) -> String {
    let f = served
        .pointer("/storage/files")
        .and_then(Value::as_array)
        .unwrap()
        .iter()
        .find(|f| {
            f.get("path").and_then(Value::as_str)
                == Some("/etc/machine-config-daemon/node-annotations.json")
        })
        .unwrap();
    let ann: Value = serde_json::from_slice(
        &okd_types::dataurl::decode(
            f.pointer("/contents/source")
                .and_then(Value::as_str)
                .unwrap(),
        )
        .unwrap(),
    )
    .unwrap();
    ann["machineconfiguration.openshift.io/currentConfig"]
        .as_str()
        .unwrap()
        .to_string()
}
