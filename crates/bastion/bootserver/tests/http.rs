//! The boot server (HTTP) on 127.0.0.1 (ephemeral ports): Ignition, images with HEAD,
//! Range and .sha256, traversal refused, per-MAC PXE scripts, unknown MACs,
//! bind errors, the observer, and a real `curl -C -` resume.

mod common;

use std::io::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use okd_bastion::kernel_args;
use okd_bootserver::{HttpObserver, HttpState, bind, router, serve};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const IMAGE_BYTES: usize = 3 * 1024 * 1024;

/// Deterministic pseudo-random bytes (xorshift), so ranges are distinguishable.
fn image_bytes() -> Vec<u8> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..IMAGE_BYTES)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

use common::Recorder;

struct Server {
    addr: SocketAddr,
    _dir: tempfile::TempDir,
    dir: PathBuf,
    image: Vec<u8>,
    recorder: Arc<Recorder>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
}

impl Server {
    async fn start() -> Server {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        std::fs::write(
            root.join("master.ign"),
            br#"{"ignition":{"version":"3.2.0"}}"#,
        )
        .unwrap();
        std::fs::create_dir(root.join("images")).unwrap();
        let image = image_bytes();
        std::fs::write(root.join("images/coreos.raw.xz"), &image).unwrap();
        std::fs::write(root.join("secret.txt"), b"outside the images dir").unwrap();
        let inv = common::single_master();
        let state = Arc::new(HttpState::new(&root, inv));
        let recorder = Arc::new(Recorder::default());
        let app = router(state, Some(recorder.clone() as Arc<dyn HttpObserver>));
        let listener = bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(serve(listener, app, async {
            let _ = rx.await;
        }));
        Server {
            addr,
            _dir: dir,
            dir: root,
            image,
            recorder,
            stop: Some(tx),
            task: Some(task),
        }
    }

    async fn stop(mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.task.take() {
            tokio::time::timeout(Duration::from_secs(10), t)
                .await
                .expect("server stops")
                .unwrap()
                .unwrap();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(t) = &self.task {
            t.abort();
        }
    }
}

struct Resp {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Resp {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// One HTTP/1.1 request with `Connection: close`, raw target (no normalisation).
async fn request(addr: SocketAddr, method: &str, target: &str, extra: &[(&str, &str)]) -> Resp {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut req = format!("{method} {target} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (k, v) in extra {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), s.read_to_end(&mut raw))
        .await
        .expect("response within 30 s")
        .unwrap();
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("header end");
    let head = String::from_utf8(raw[..split].to_vec()).unwrap();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    let mut body = raw[split + 4..].to_vec();
    if headers
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"))
    {
        body = dechunk(&body);
    }
    Resp {
        status,
        headers,
        body,
    }
}

fn dechunk(mut b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let nl = b.windows(2).position(|w| w == b"\r\n").unwrap();
        let n = usize::from_str_radix(std::str::from_utf8(&b[..nl]).unwrap().trim(), 16).unwrap();
        b = &b[nl + 2..];
        if n == 0 {
            return out;
        }
        out.extend_from_slice(&b[..n]);
        b = &b[n + 2..];
    }
}

#[tokio::test]
async fn images_head_range_and_sha256() {
    let srv = Server::start().await;
    let len = srv.image.len();

    let head = request(srv.addr, "HEAD", "/images/coreos.raw.xz", &[]).await;
    assert_eq!(head.status, 200);
    assert_eq!(
        head.header("content-length"),
        Some(len.to_string().as_str())
    );
    assert_eq!(head.header("accept-ranges"), Some("bytes"));
    assert!(head.header("last-modified").unwrap().ends_with(" GMT"));
    assert!(head.body.is_empty());

    let full = request(srv.addr, "GET", "/install/coreos.raw.xz", &[]).await;
    assert_eq!(full.status, 200);
    assert!(full.body == srv.image, "full body differs");

    for (range, start, end) in [
        ("bytes=100-199", 100, 199),
        ("bytes=1048576-", 1_048_576, len - 1),
        ("bytes=-10", len - 10, len - 1),
        ("bytes=3000000-9999999", 3_000_000, len - 1),
    ] {
        let r = request(
            srv.addr,
            "GET",
            "/images/coreos.raw.xz",
            &[("Range", range)],
        )
        .await;
        assert_eq!(r.status, 206, "{range}");
        assert_eq!(
            r.header("content-range"),
            Some(format!("bytes {start}-{end}/{len}").as_str()),
            "{range}"
        );
        assert_eq!(
            r.header("content-length"),
            Some((end - start + 1).to_string().as_str())
        );
        assert!(r.body == srv.image[start..=end], "{range}: body differs");
    }
    let head_range = request(
        srv.addr,
        "HEAD",
        "/images/coreos.raw.xz",
        &[("Range", "bytes=0-9")],
    )
    .await;
    assert_eq!(head_range.status, 206);
    assert_eq!(head_range.header("content-length"), Some("10"));

    let bad = request(
        srv.addr,
        "GET",
        "/images/coreos.raw.xz",
        &[("Range", &format!("bytes={len}-"))],
    )
    .await;
    assert_eq!(bad.status, 416);
    assert_eq!(
        bad.header("content-range"),
        Some(format!("bytes */{len}").as_str())
    );

    let want = format!("{:x}  coreos.raw.xz\n", Sha256::digest(&srv.image));
    for _ in 0..2 {
        let sum = request(srv.addr, "GET", "/images/coreos.raw.xz.sha256", &[]).await;
        assert_eq!(sum.status, 200);
        assert_eq!(String::from_utf8(sum.body).unwrap(), want);
    }
    assert_eq!(
        request(srv.addr, "GET", "/images/nothing.sha256", &[])
            .await
            .status,
        404
    );
    assert_eq!(
        request(srv.addr, "GET", "/images/missing.img", &[])
            .await
            .status,
        404
    );

    srv.recorder
        .wait_for(|(peer, p, s, b, done)| {
            peer.ip().is_loopback()
                && p == "/install/coreos.raw.xz"
                && *s == 200
                && *b == len as u64
                && *done
        })
        .await;
    // Text answers are counted by their body (issue #26: 0 bytes before).
    let pxe = request(srv.addr, "GET", "/pxe/ipxe?mac=52:54:00:12:01:02", &[]).await;
    assert_eq!(pxe.status, 200);
    for (path, want) in [
        ("/images/coreos.raw.xz.sha256", want.len() as u64),
        ("/pxe/ipxe", pxe.body.len() as u64),
    ] {
        srv.recorder
            .wait_for(|(_, p, s, b, done)| p == path && *s == 200 && *b == want && *done)
            .await;
    }
    srv.stop().await;
}

#[tokio::test]
async fn ignition_files_and_traversal() {
    let srv = Server::start().await;
    let m = request(srv.addr, "GET", "/ignition/master.ign", &[]).await;
    assert_eq!(m.status, 200);
    assert_eq!(m.body, br#"{"ignition":{"version":"3.2.0"}}"#);
    assert_eq!(
        request(srv.addr, "HEAD", "/ignition/master.ign", &[])
            .await
            .status,
        200
    );
    assert_eq!(
        request(srv.addr, "GET", "/ignition/bootstrap.ign", &[])
            .await
            .status,
        403
    );
    assert_eq!(
        request(srv.addr, "GET", "/ignition/secret.txt", &[])
            .await
            .status,
        404
    );
    for target in [
        "/images/../secret.txt",
        "/images/..",
        "/images/%2e%2e%2fsecret.txt",
        "/images/..%2fsecret.txt",
        "/install/..%2f..%2fetc%2fpasswd",
        "/images/%2e%2e",
        "/ignition/..%2fsecret.txt",
        "/images/..%5csecret.txt",
        "/images/.%2e/secret.txt",
    ] {
        let r = request(srv.addr, "GET", target, &[]).await;
        assert!(r.status == 404 || r.status == 400, "{target}: {}", r.status);
        assert!(
            !String::from_utf8_lossy(&r.body).contains("outside"),
            "{target}"
        );
    }
    srv.stop().await;
}

#[tokio::test]
async fn pxe_scripts_per_mac() {
    let logs = common::Logs::default();
    let sub = logs.subscriber();
    let _guard = tracing::subscriber::set_default(sub);

    let srv = Server::start().await;
    let inv = common::single_master();
    let boot = inv
        .nodes
        .iter()
        .find(|n| n.hostname == "bootstrap")
        .unwrap();
    let args = kernel_args(&inv, boot).join(" ");
    for target in [
        "/pxe/ipxe?mac=52:54:00:12:01:02",
        "/pxe/ipxe?mac=52-54-00-12-01-02",
        "/pxe/52:54:00:12:01:02.ipxe",
    ] {
        let r = request(srv.addr, "GET", target, &[]).await;
        assert_eq!(r.status, 200, "{target}");
        let t = String::from_utf8(r.body).unwrap();
        assert!(t.starts_with("#!ipxe\n"), "{t}");
        assert!(t.contains(&args), "{target}: {t}");
        assert!(
            t.contains("\nkernel http://192.168.120.101:8080/images/kernel initrd=initramfs.img "),
            "{t}"
        );
        assert!(
            t.contains("\ninitrd http://192.168.120.101:8080/images/initramfs.img\nboot\n"),
            "{t}"
        );
        assert!(
            t.contains("coreos.live.rootfs_url=http://192.168.120.101:8080/images/rootfs.img"),
            "{t}"
        );
    }
    for target in [
        "/pxe/grub.cfg-01-52-54-00-12-01-02",
        "/pxe/grub?mac=52:54:00:12:01:02",
        "/pxe/pxelinux.cfg/01-52-54-00-12-01-02",
    ] {
        let r = request(srv.addr, "GET", target, &[]).await;
        assert_eq!(r.status, 200, "{target}");
        assert!(
            String::from_utf8(r.body).unwrap().contains(&args),
            "{target}"
        );
    }
    let chain = request(srv.addr, "GET", "/pxe/boot.ipxe", &[]).await;
    assert_eq!(chain.status, 200);
    let chain = String::from_utf8(chain.body).unwrap();
    assert!(
        chain.starts_with("#!ipxe\n") && chain.contains("/pxe/ipxe?mac=${net0/mac}"),
        "{chain}"
    );

    let unknown = request(srv.addr, "GET", "/pxe/ipxe?mac=aa:bb:cc:dd:ee:ff", &[]).await;
    assert_eq!(unknown.status, 404);
    assert_eq!(
        request(
            srv.addr,
            "GET",
            "/pxe/pxelinux.cfg/01-aa-bb-cc-dd-ee-f0",
            &[]
        )
        .await
        .status,
        404
    );
    assert_eq!(
        request(srv.addr, "GET", "/pxe/ipxe?mac=nonsense", &[])
            .await
            .status,
        400
    );
    srv.stop().await;
    let text = logs.text();
    assert!(
        text.contains(
            "no host with MAC aa:bb:cc:dd:ee:ff in agent-config.yaml/bastion-config.yaml"
        ),
        "log: {text}"
    );
    assert!(text.contains("WARN"), "log: {text}");
}

#[tokio::test]
async fn port_in_use_names_address_and_port() {
    let first = bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let addr = first.local_addr().unwrap();
    let err = bind(addr).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("cannot listen on {addr}: address already in use")
    );
}

/// Kills a child process by PID when dropped (also on test failure).
struct ChildGuard(std::process::Child);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn run_bounded(mut cmd: std::process::Command, limit: Duration) -> std::process::ExitStatus {
    let mut child = ChildGuard(cmd.spawn().expect("spawn"));
    let start = Instant::now();
    while start.elapsed() < limit {
        if let Some(st) = child.0.try_wait().unwrap() {
            return st;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("process did not finish within {limit:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curl_resumes_a_download() {
    let Some(curl) = okd_test_utils::tool("curl", &[], Some("curl")) else {
        return;
    };
    let srv = Server::start().await;
    let out = srv.dir.join("download.part");
    let half = srv.image.len() / 2 + 12_345;
    std::fs::File::create(&out)
        .unwrap()
        .write_all(&srv.image[..half])
        .unwrap();
    let url = format!("http://{}/images/coreos.raw.xz", srv.addr);
    let mut cmd = std::process::Command::new(curl);
    cmd.args(["-sS", "-f", "--max-time", "30", "-C", "-", "-o"])
        .arg(&out)
        .arg(&url);
    let status = tokio::task::spawn_blocking(move || run_bounded(cmd, Duration::from_secs(40)))
        .await
        .unwrap();
    assert!(status.success(), "curl failed: {status}");
    assert!(
        std::fs::read(&out).unwrap() == srv.image,
        "resumed file differs"
    );
    let resumed = (srv.image.len() - half) as u64;
    srv.recorder
        .wait_for(|(_, p, s, b, done)| {
            p == "/images/coreos.raw.xz" && *s == 206 && *b == resumed && *done
        })
        .await;
    assert!(Path::new(&out).exists());
    srv.stop().await;
}
