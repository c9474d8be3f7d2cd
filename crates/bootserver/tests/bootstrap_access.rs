//! Who gets `bootstrap.ign` (every private key of the cluster, the admin
//! kubeconfig, the pull secret): only the inventory's bootstrap address, never
//! after `remove_bootstrap`, with a one-time token when one is set; and the
//! image routes never answer dotfiles or Ignition configs. The client is the
//! real curl, its source address chosen with `--interface` on 127.0.0.0/8.

mod common;

use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use okd_bootserver::{HttpState, bind, router, serve};

/// The bootstrap host's address in these tests.
const BOOTSTRAP: &str = "127.0.0.2";
/// Another host of the install network.
const OTHER: &str = "127.0.0.3";
const SECRET: &[u8] = br#"{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"/opt/openshift/tls/root-ca.key"}]}}"#;

/// A server on 127.0.0.1 for an asset directory with bootstrap.ign, on its
/// own runtime thread; dropped with the runtime.
struct Server {
    addr: SocketAddr,
    state: Arc<HttpState>,
    _rt: tokio::runtime::Runtime,
    _dir: tempfile::TempDir,
}

fn start(token: Option<&str>) -> Server {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(root.join("bootstrap.ign"), SECRET).unwrap();
    std::fs::write(
        root.join("master.ign"),
        br#"{"ignition":{"version":"3.2.0"}}"#,
    )
    .unwrap();
    std::fs::create_dir(root.join("images")).unwrap();
    for f in [".hidden", "stolen.ign", "coreos.raw.xz"] {
        std::fs::write(root.join("images").join(f), b"bytes").unwrap();
    }
    let mut inv = common::single_master();
    for n in &mut inv.nodes {
        if n.role == okd_hosts::Role::Bootstrap {
            n.address = BOOTSTRAP.parse().unwrap();
        }
    }
    let mut state = HttpState::new(root, inv);
    if let Some(t) = token {
        state = state.with_bootstrap_token(t);
    }
    let state = Arc::new(state);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let listener = rt.block_on(bind("127.0.0.1:0".parse().unwrap())).unwrap();
    let addr = listener.local_addr().unwrap();
    let app = router(state.clone(), None);
    rt.spawn(serve(listener, app, std::future::pending()));
    Server {
        addr,
        state,
        _rt: rt,
        _dir: dir,
    }
}

/// `curl` from source address `from`: (status, body).
fn curl(curl: &Path, from: &str, url: &str, head: bool) -> (u16, Vec<u8>) {
    let out_dir = tempfile::tempdir().unwrap();
    let body = out_dir.path().join("body");
    let mut c = Command::new(curl);
    c.args(["-s", "--max-time", "10", "--interface", from, "-o"])
        .arg(&body)
        .args(["-w", "%{http_code}"]);
    if head {
        c.arg("-I");
    }
    let out = c.arg(url).output().unwrap();
    let code = String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or(0);
    (code, std::fs::read(&body).unwrap_or_default())
}

#[test]
fn bootstrap_ign_only_to_the_bootstrap_host_until_removed() {
    let Some(curl_bin) = okd_test_utils::tool("curl", &[], Some("curl")) else {
        return;
    };
    let logs = common::Logs::default();
    let sub = logs.subscriber();
    // The server's runtime threads log through the global subscriber (only this test sets it).
    tracing::subscriber::set_global_default(sub).unwrap();
    let srv = start(None);
    let url = |p: &str| format!("http://{}{p}", srv.addr);

    let (code, body) = curl(&curl_bin, OTHER, &url("/ignition/bootstrap.ign"), false);
    assert_eq!(code, 403, "another host got bootstrap.ign");
    assert!(
        !body.windows(8).any(|w| w == b"root-ca."),
        "secret in the 403 body"
    );
    let (code, body) = curl(&curl_bin, BOOTSTRAP, &url("/ignition/bootstrap.ign"), false);
    assert_eq!((code, body.as_slice()), (200, SECRET));
    // master.ign and worker.ign are for everyone.
    assert_eq!(
        curl(&curl_bin, OTHER, &url("/ignition/master.ign"), false).0,
        200
    );

    assert!(
        srv.state.remove_bootstrap(),
        "first removal reports it was served"
    );
    assert!(!srv.state.remove_bootstrap());
    let (code, _) = curl(&curl_bin, BOOTSTRAP, &url("/ignition/bootstrap.ign"), false);
    assert_eq!(code, 403, "bootstrap.ign served after remove-bootstrap");

    let log = logs.text();
    assert!(
        log.contains(&format!("bootstrap.ign was requested by {OTHER}, refused"))
            && log.contains("not the bootstrap host")
            && log.contains("the bootstrap was removed"),
        "{log}"
    );
}

#[test]
fn one_time_token() {
    let Some(curl_bin) = okd_test_utils::tool("curl", &[], Some("curl")) else {
        return;
    };
    let token = "0123456789abcdef0123456789abcdef";
    let srv = start(Some(token));
    let url = |p: &str| format!("http://{}{p}", srv.addr);
    let ign = |q: &str| url(&format!("/ignition/bootstrap.ign{q}"));

    assert_eq!(
        curl(&curl_bin, BOOTSTRAP, &ign(""), false).0,
        403,
        "no token"
    );
    assert_eq!(
        curl(&curl_bin, BOOTSTRAP, &ign("?token=0123"), false).0,
        403,
        "short token"
    );
    let wrong = format!("?token={}", token.replace('0', "1"));
    assert_eq!(
        curl(&curl_bin, BOOTSTRAP, &ign(&wrong), false).0,
        403,
        "wrong token"
    );
    let good = format!("?token={token}");
    assert_eq!(
        curl(&curl_bin, OTHER, &ign(&good), false).0,
        403,
        "token from another host"
    );

    // The bootstrap host's PXE script carries the token while it is unused;
    // the master's never does.
    let bootstrap_mac = "52:54:00:12:01:02";
    let (code, script) = curl(
        &curl_bin,
        OTHER,
        &url(&format!("/pxe/ipxe?mac={bootstrap_mac}")),
        false,
    );
    assert_eq!(code, 200);
    let script = String::from_utf8(script).unwrap();
    assert!(
        script.contains(&format!("/ignition/bootstrap.ign?token={token}")),
        "{script}"
    );

    // HEAD does not use it up; the first complete GET does.
    assert_eq!(curl(&curl_bin, BOOTSTRAP, &ign(&good), true).0, 200);
    let (code, body) = curl(&curl_bin, BOOTSTRAP, &ign(&good), false);
    assert_eq!((code, body.as_slice()), (200, SECRET));
    let (code, body) = curl(&curl_bin, BOOTSTRAP, &ign(&good), false);
    assert_eq!(code, 403, "the one-time token worked twice");
    assert!(String::from_utf8_lossy(&body).contains("already used"));
    let (_, script) = curl(
        &curl_bin,
        OTHER,
        &url(&format!("/pxe/ipxe?mac={bootstrap_mac}")),
        false,
    );
    assert!(!String::from_utf8_lossy(&script).contains("token="));
}

#[test]
fn image_routes_never_answer_dotfiles_or_ignition() {
    let Some(curl_bin) = okd_test_utils::tool("curl", &[], Some("curl")) else {
        return;
    };
    let srv = start(None);
    let url = |p: &str| format!("http://{}{p}", srv.addr);
    for p in [
        "/images/.hidden",
        "/images/stolen.ign",
        "/install/stolen.ign",
        "/images/stolen.ign.sha256",
        "/images/.hidden.sha256",
    ] {
        assert_eq!(curl(&curl_bin, OTHER, &url(p), false).0, 404, "{p}");
    }
    assert_eq!(
        curl(&curl_bin, OTHER, &url("/images/coreos.raw.xz"), false).0,
        200
    );
    assert_eq!(
        curl(
            &curl_bin,
            OTHER,
            &url("/images/coreos.raw.xz.sha256"),
            false
        )
        .0,
        200
    );
}
