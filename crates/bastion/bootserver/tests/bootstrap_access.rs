//! Who gets `bootstrap.ign` (every private key of the cluster, the admin
//! kubeconfig, the pull secret): only the inventory's bootstrap address, never
//! after `remove_bootstrap`, with a one-time token when one is set (valid for
//! retries until the bootstrap is seen running or its time limit passed); and the
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
    recorder: Arc<common::Recorder>,
    _rt: tokio::runtime::Runtime,
    _dir: tempfile::TempDir,
}

fn start(token: Option<&str>) -> Server {
    start_with(token, SECRET)
}

/// [`start`] with `bootstrap` as the content of bootstrap.ign.
fn start_with(token: Option<&str>, bootstrap: &[u8]) -> Server {
    start_limited(token, bootstrap, None)
}

/// [`start_with`] with the token's time limit set to `limit`.
fn start_limited(
    token: Option<&str>,
    bootstrap: &[u8],
    limit: Option<std::time::Duration>,
) -> Server {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(root.join("bootstrap.ign"), bootstrap).unwrap();
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
    if let Some(l) = limit {
        state = state.with_bootstrap_token_limit(l);
    }
    let state = Arc::new(state);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let listener = rt.block_on(bind("127.0.0.1:0".parse().unwrap())).unwrap();
    let addr = listener.local_addr().unwrap();
    let recorder = Arc::new(common::Recorder::default());
    let app = router(
        state.clone(),
        Some(recorder.clone() as Arc<dyn okd_bootserver::HttpObserver>),
    );
    rt.spawn(serve(listener, app, std::future::pending()));
    Server {
        addr,
        state,
        recorder,
        _rt: rt,
        _dir: dir,
    }
}

/// `curl` from source address `from`: (status, body).
fn curl(curl: &Path, from: &str, url: &str, head: bool) -> (u16, Vec<u8>) {
    curl_args(curl, from, url, if head { &["-I"] } else { &[] })
}

/// `curl` from source address `from` with extra `args`: (status, body).
fn curl_args(curl: &Path, from: &str, url: &str, args: &[&str]) -> (u16, Vec<u8>) {
    let out_dir = tempfile::tempdir().unwrap();
    let body = out_dir.path().join("body");
    let mut c = Command::new(curl);
    c.args(["-s", "--max-time", "30", "--interface", from, "-o"])
        .arg(&body)
        .args(["-w", "%{http_code}"])
        .args(args);
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

    // The bootstrap host's PXE scripts carry the token while it is unused,
    // but only in answers to the bootstrap's own address: anyone naming its
    // MAC from elsewhere gets the script without it.
    let bootstrap_mac = "52:54:00:12:01:02";
    for p in [
        format!("/pxe/ipxe?mac={bootstrap_mac}"),
        format!("/pxe/grub?mac={bootstrap_mac}"),
        "/pxe/pxelinux.cfg/01-52-54-00-12-01-02".to_string(),
    ] {
        let (code, script) = curl(&curl_bin, OTHER, &url(&p), false);
        assert_eq!(code, 200, "{p}");
        let script = String::from_utf8(script).unwrap();
        assert!(
            script.contains("/ignition/bootstrap.ign") && !script.contains("token="),
            "{p} from another host carries the token:\n{script}"
        );
        let (code, script) = curl(&curl_bin, BOOTSTRAP, &url(&p), false);
        assert_eq!(code, 200, "{p}");
        let script = String::from_utf8(script).unwrap();
        assert!(
            script.contains(&format!("/ignition/bootstrap.ign?token={token}")),
            "{p} from the bootstrap:\n{script}"
        );
    }

    // HEAD is no fetch; complete GETs spend nothing (serve cannot know the
    // host got them): the token works until the bootstrap is seen running.
    assert_eq!(curl(&curl_bin, BOOTSTRAP, &ign(&good), true).0, 200);
    assert_eq!(srv.state.bootstrap_token().unwrap().first_fetch, None);
    for _ in 0..2 {
        let (code, body) = curl(&curl_bin, BOOTSTRAP, &ign(&good), false);
        assert_eq!((code, body.as_slice()), (200, SECRET));
    }
    srv.recorder.wait_for_blocking(|(_, p, s, _, done)| {
        p == "/ignition/bootstrap.ign" && *s == 200 && *done
    });
    assert!(
        !srv.state.bootstrap_token_used(),
        "a complete body spent it"
    );
    assert!(srv.state.bootstrap_seen_running("machine-config server"));
    assert!(!srv.state.bootstrap_seen_running("API"), "spent once");
    let t = srv.state.bootstrap_token().unwrap();
    assert!(t.first_fetch.is_some());
    assert!(
        matches!(&t.spent, Some((_, okd_bootserver::SpentBy::SeenRunning(w))) if w == "machine-config server"),
        "{t:?}"
    );
    let (code, body) = curl(&curl_bin, BOOTSTRAP, &ign(&good), false);
    assert_eq!(
        code, 403,
        "the token worked after the bootstrap was seen running"
    );
    assert!(
        String::from_utf8_lossy(&body).contains("the bootstrap was seen running"),
        "{}",
        String::from_utf8_lossy(&body)
    );
    let (_, script) = curl(
        &curl_bin,
        BOOTSTRAP,
        &url(&format!("/pxe/ipxe?mac={bootstrap_mac}")),
        false,
    );
    assert!(!String::from_utf8_lossy(&script).contains("token="));
}

/// Ranges and whole files spend nothing: a range, the whole file, then
/// ranges covering the file again are all answered; the token is spent
/// only by the bootstrap seen running.
#[test]
fn ranges_and_whole_files_leave_the_token_valid() {
    let Some(curl_bin) = okd_test_utils::tool("curl", &[], Some("curl")) else {
        return;
    };
    let token = "0123456789abcdef0123456789abcdef";
    let ign = |srv: &Server| format!("http://{}/ignition/bootstrap.ign?token={token}", srv.addr);

    let srv = start(Some(token));
    let (code, body) = curl_args(&curl_bin, BOOTSTRAP, &ign(&srv), &["--range", "0-9"]);
    assert_eq!((code, body.as_slice()), (206, &SECRET[..10]));
    let (code, body) = curl(&curl_bin, BOOTSTRAP, &ign(&srv), false);
    assert_eq!(
        (code, body.as_slice()),
        (200, SECRET),
        "the whole file after a range"
    );
    srv.recorder.wait_for_blocking(|(_, p, s, n, done)| {
        p == "/ignition/bootstrap.ign" && *s == 200 && *n == SECRET.len() as u64 && *done
    });
    let (code, body) = curl_args(&curl_bin, BOOTSTRAP, &ign(&srv), &["--range", "50-"]);
    assert_eq!((code, body.as_slice()), (206, &SECRET[50..]));
    assert_eq!(
        curl_args(&curl_bin, BOOTSTRAP, &ign(&srv), &["--range", "0-60"]).0,
        206
    );
    assert!(!srv.state.bootstrap_token_used());
    assert!(srv.state.bootstrap_seen_running("API"));
    assert_eq!(
        curl_args(&curl_bin, BOOTSTRAP, &ign(&srv), &["--range", "0-9"]).0,
        403
    );
}

/// Without the bootstrap seen running, the token is spent once its time
/// limit passed after the first `GET` (a `HEAD` starts nothing), at the
/// first fetch's time plus the limit; the refusal says so.
#[test]
fn the_time_limit_after_the_first_fetch_spends_the_token() {
    let Some(curl_bin) = okd_test_utils::tool("curl", &[], Some("curl")) else {
        return;
    };
    let token = "0123456789abcdef0123456789abcdef";
    let limit = std::time::Duration::from_secs(2);
    let srv = start_limited(Some(token), SECRET, Some(limit));
    let url = format!("http://{}/ignition/bootstrap.ign?token={token}", srv.addr);
    assert_eq!(curl(&curl_bin, BOOTSTRAP, &url, true).0, 200);
    std::thread::sleep(limit + std::time::Duration::from_millis(500));
    assert!(!srv.state.bootstrap_token_used(), "HEAD started the limit");
    assert_eq!(curl(&curl_bin, BOOTSTRAP, &url, false).0, 200);
    assert_eq!(curl(&curl_bin, BOOTSTRAP, &url, false).0, 200, "a retry");
    std::thread::sleep(limit + std::time::Duration::from_millis(500));
    let (code, body) = curl(&curl_bin, BOOTSTRAP, &url, false);
    assert_eq!(code, 403, "valid past its time limit");
    assert!(
        String::from_utf8_lossy(&body).contains("time limit"),
        "{}",
        String::from_utf8_lossy(&body)
    );
    let t = srv.state.bootstrap_token().unwrap();
    let first = t.first_fetch.expect("first fetch");
    assert_eq!(
        t.spent,
        Some((first + limit, okd_bootserver::SpentBy::TimeLimit))
    );
    assert!(!srv.state.bootstrap_seen_running("API"), "already spent");
}

/// A client that reads a few bytes and drops the connection spends
/// nothing: the bootstrap's retry gets the whole file, and the observer is told
/// of the broken transfer (octets sent of the size). bootstrap.ign is made
/// larger than the socket buffers (32 MiB) so the server cannot hand it all
/// to the kernel before the client goes away.
#[test]
fn a_dropped_transfer_leaves_the_token_for_the_retry() {
    let Some(curl_bin) = okd_test_utils::tool("curl", &[], Some("curl")) else {
        return;
    };
    let token = "0123456789abcdef0123456789abcdef";
    let mut big = SECRET.to_vec();
    big.resize(32 << 20, b' ');
    let srv = start_with(Some(token), &big);
    let path = format!("/ignition/bootstrap.ign?token={token}");

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let head = rt.block_on(async {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        let sock = tokio::net::TcpSocket::new_v4().unwrap();
        sock.bind(format!("{BOOTSTRAP}:0").parse().unwrap())
            .unwrap();
        let mut s = sock.connect(srv.addr).await.unwrap();
        s.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
            .await
            .unwrap();
        let mut buf = [0u8; 180];
        s.read_exact(&mut buf).await.unwrap();
        buf
    });
    assert!(
        head.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&head)
    );
    srv.recorder.wait_for_blocking(|(_, p, s, n, done)| {
        p == "/ignition/bootstrap.ign" && *s == 200 && *n < big.len() as u64 && !*done
    });
    assert!(
        !srv.state.bootstrap_token_used(),
        "the dropped transfer spent the token"
    );

    let url = format!("http://{}{path}", srv.addr);
    let (code, body) = curl(&curl_bin, BOOTSTRAP, &url, false);
    assert_eq!(code, 200, "the retry after a dropped transfer");
    assert!(
        body == big,
        "the retry got {} of {} bytes",
        body.len(),
        big.len()
    );
    srv.recorder
        .wait_for_blocking(|(_, _, s, n, done)| *s == 200 && *n == big.len() as u64 && *done);
    assert!(
        !srv.state.bootstrap_token_used(),
        "a complete body spent it"
    );
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
