//! Issue #42 item 4: `serve --bootstrap-token` with hosts as network
//! namespaces on a bridge. The bootstrap reads 200 bytes of bootstrap.ign
//! and drops the connection after serve handed the whole file to the kernel
//! (before: serve counted that as delivered and spent the token, and the
//! retry got 403 until serve restarted); the retry from the bootstrap's
//! address gets the whole file, byte for byte. Once a machine-config server
//! on the bootstrap's address passes the load balancer's check, the token is
//! spent: a fetch is refused (403) and the dashboard and `/status` say what
//! spent it.

mod common;

use std::io::{BufRead as _, Write as _};
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::netns::Lab;
use common::serve::*;
use common::*;
use okd_serve_api::StatusDocument;
use okd_serve_api::status::{HostStatus, Stage};

/// The stage of the bootstrap host that says what became of the token.
const TOKEN_STAGE: &str = "bootstrap.ign token spent";

/// A client that asks for `path` on the bastion's port 8080, reads the
/// first 200 bytes of the answer, prints its status line, and drops the
/// connection (unread data: the kernel resets it) when a line arrives on
/// stdin. Its receive buffer is large, so serve can hand the whole file to
/// the kernel meanwhile, as with the bootstrap of the issue.
const READ_200_AND_DROP: &str = r#"
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
s.settimeout(20)
s.connect((sys.argv[1], 8080))
s.sendall(b"GET " + sys.argv[2].encode() + b" HTTP/1.1\r\nHost: x\r\n\r\n")
got = b""
while len(got) < 200:
    c = s.recv(200 - len(got))
    if not c:
        break
    got += c
print(got.split(b"\r\n")[0].decode(), len(got), flush=True)
sys.stdin.readline()
s.close()
"#;

/// A TLS server answering every `GET` with 200: the bootstrap's
/// machine-config server as the balancer's `GET /healthz` check sees it.
const HEALTHY_TLS: &str = r#"
import http.server, ssl, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", "3")
        self.end_headers()
        self.wfile.write(b"ok\n")
    def log_message(self, *a):
        pass
srv = http.server.HTTPServer((sys.argv[1], int(sys.argv[2])), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(sys.argv[3], sys.argv[4])
srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
srv.serve_forever()
"#;

/// The bootstrap host of a status document.
fn bootstrap_host(doc: &StatusDocument) -> &HostStatus {
    doc.hosts
        .iter()
        .find(|h| h.role == okd_hosts::Role::Bootstrap)
        .expect("a bootstrap host in /status")
}

/// `/status` asked from the bastion's namespace.
fn status(lab: &Lab) -> Option<StatusDocument> {
    let (_, body) = curl_in(
        lab,
        &lab.bastion.ns,
        &format!("http://{BASTION}:9000/status"),
    );
    serde_json::from_str(&body).ok()
}

/// Polls `/status` until `pred` holds for it or `secs` passed; returns the
/// last document read and whether `pred` held.
fn wait_status(
    lab: &Lab,
    secs: u64,
    pred: impl Fn(&StatusDocument) -> bool,
) -> (StatusDocument, bool) {
    let start = Instant::now();
    loop {
        let doc = status(lab);
        if let Some(d) = &doc
            && pred(d)
        {
            return (doc.unwrap(), true);
        }
        if start.elapsed() > Duration::from_secs(secs) {
            return (doc.expect("/status answers"), false);
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// The bootstrap's token stage in `doc`.
fn token_stage(doc: &StatusDocument) -> Option<&Stage> {
    bootstrap_host(doc)
        .stages
        .iter()
        .find(|s| s.stage == TOKEN_STAGE)
}

/// `curl` inside `ns` writing the body to `out`: the HTTP status.
fn curl_to(lab: &Lab, ns: &str, url: &str, out: &std::path::Path) -> u16 {
    let o = lab
        .cmd(ns, "curl")
        .args(["-s", "--max-time", "20", "-o"])
        .arg(out)
        .args(["-w", "%{http_code}", url])
        .output()
        .unwrap();
    String::from_utf8_lossy(&o.stdout)
        .trim()
        .parse()
        .unwrap_or(0)
}

#[test]
fn token_survives_a_cut_read_and_is_spent_once_the_bootstrap_runs() {
    if !common::netns::available()
        || tool("curl", &["/usr/bin/curl"]).is_none()
        || tool("python3", &["/usr/bin/python3"]).is_none()
        || tool("openssl", &["/usr/bin/openssl"]).is_none()
    {
        return;
    }
    let d = served_dir();
    let want = std::fs::read(d.path().join("bootstrap.ign")).unwrap();
    let (mut lab, _pid, serve_log) = lab_with_serve(d.path(), "tk", &["--bootstrap-token"]);
    let (boot, master) = (lab.nodes[0].ns.clone(), lab.nodes[1].ns.clone());
    let (boot_addr, _) = BOOTSTRAP_AND_MASTER[0];
    let url = std::fs::read_to_string(d.path().join("auth/bootstrap-ignition-url"))
        .unwrap()
        .trim()
        .to_string();
    let token = url.split("token=").nth(1).unwrap().to_string();
    let path = url.split_once(":8080").unwrap().1.to_string();

    // The bootstrap reads 200 bytes; serve hands the rest to the kernel.
    let mut client = okd_test_utils::ChildGuard(
        lab.cmd(&boot, "timeout")
            .args(["60", "python3", "-c", READ_200_AND_DROP, BASTION, &path])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap(),
    );
    let mut line = String::new();
    std::io::BufReader::new(client.0.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "HTTP/1.1 200 OK 200", "the cut read");
    let is_fetch = |doc: &StatusDocument| {
        bootstrap_host(doc)
            .http
            .iter()
            .any(|e| e.path == "/ignition/bootstrap.ign" && e.status == 200)
    };
    let (doc, ended) = wait_status(&lab, 15, is_fetch);
    // The case of the issue: the body ended on serve's side (the whole file
    // handed to the connection) while the host read 200 bytes of it.
    let fetch = bootstrap_host(&doc).http.iter().find(|e| e.status == 200);
    assert!(
        ended && fetch.is_some_and(|e| e.complete && e.bytes == want.len() as u64),
        "serve did not hand the whole file ({} bytes) to the kernel while the client held 200 bytes: {fetch:?}",
        want.len()
    );
    client.0.stdin.take().unwrap().write_all(b"\n").unwrap();
    let _ = client.0.wait();
    drop(client);

    // The retry from the bootstrap's address gets the whole file.
    let scratch = tempfile::tempdir().unwrap();
    let body = scratch.path().join("retry");
    assert_eq!(
        curl_to(&lab, &boot, &url, &body),
        200,
        "the bootstrap's retry after a read cut at 200 bytes: {}",
        std::fs::read_to_string(&body).unwrap_or_default()
    );
    assert!(
        std::fs::read(&body).unwrap() == want,
        "the retry's body differs from bootstrap.ign"
    );
    // Other hosts still get nothing.
    assert_eq!(curl_to(&lab, &master, &url, &body), 403, "the master");
    let (doc, _) = wait_status(&lab, 0, |_| true);
    let st = token_stage(&doc).expect("the token's stage on the dashboard");
    assert!(
        !st.done
            && st
                .detail
                .contains("valid for retries from the bootstrap's address"),
        "{st:?}"
    );

    // The bootstrap's machine-config server comes up and passes the
    // balancer's check: the token is spent.
    let (cert, key) = (
        scratch.path().join("mcs.crt"),
        scratch.path().join("mcs.key"),
    );
    let out = std::process::Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
        ])
        .args(["-subj", "/CN=bootstrap-mcs", "-keyout"])
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (cert, key) = (cert.to_string_lossy(), key.to_string_lossy());
    let mcs_log = d.path().join("bootstrap-mcs.log");
    lab.spawn(
        &boot,
        "python3",
        &["-c", HEALTHY_TLS, boot_addr, "22623", &cert, &key],
        &mcs_log,
    );
    let (doc, spent) = wait_status(&lab, 45, |doc| token_stage(doc).is_some_and(|s| s.done));
    let st = token_stage(&doc).unwrap();
    assert!(
        spent
            && st
                .detail
                .contains("the bootstrap's machine-config server passed the load balancer's check")
            && st.time.is_some(),
        "{st:?}\n{}",
        std::fs::read_to_string(&mcs_log).unwrap_or_default()
    );
    let (code, refusal) = curl_in(&lab, &boot, &url);
    assert_eq!(
        code, 403,
        "a fetch after the bootstrap's machine-config server is up"
    );
    assert!(
        refusal.contains("the bootstrap was seen running"),
        "{refusal}"
    );
    let (_, page) = curl_in(&lab, &lab.bastion.ns, &format!("http://{BASTION}:9000/"));
    assert!(
        page.contains("One-time token spent: the bootstrap's machine-config server passed the load balancer's check at "),
        "{page}"
    );

    let log = std::fs::read_to_string(&serve_log).unwrap();
    assert!(
        log.contains("the one-time token of bootstrap.ign is spent: the bootstrap's machine-config server passed the load balancer's check"),
        "{log}"
    );
    assert!(!log.contains(&token), "the token is in the log");
    assert!(!page.contains(&token), "the token is on the page");
}
