//! A real browser for the page tests: Debian's `chromedriver` and
//! headless `chromium`, both started inside a network namespace of the
//! test's own (a desk on the install network), driven over WebDriver
//! (W3C WebDriver, https://www.w3.org/TR/webdriver2/) with fantoccini.
//!
//! chromedriver listens on the namespace's loopback only. The test process
//! stays in its own namespace; [`NsConnector`] makes each of its WebDriver
//! connections with a socket created inside the desk namespace (a thread
//! enters the namespace with setns(2), connects, and hands the socket
//! back), so no address outside the test's namespaces is involved.
//! Chromium runs with the flags that keep it from calling home (no
//! background networking, component updates, sync or QUIC) in a fresh
//! profile; the namespace has no route outside the test's bridge anyway.
//! Drop kills chromedriver's process group, Chromium's processes with it,
//! also when the test fails mid-session.
#![allow(dead_code)]

use std::future::Future;
use std::net::SocketAddr;
use std::os::fd::AsFd as _;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::process::{Child, Stdio};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use hyper_util::rt::TokioIo;

/// Opens TCP connections from inside network namespace `ns`.
#[derive(Clone, Debug)]
pub struct NsConnector {
    ns: String,
}

impl NsConnector {
    /// Connections from inside `ns` (a name under `/run/netns`).
    pub fn new(ns: &str) -> NsConnector {
        NsConnector { ns: ns.to_string() }
    }
}

/// A blocking connect to `addr` from inside `ns` on a thread of its own.
fn connect_in(ns: &str, addr: SocketAddr) -> std::io::Result<std::net::TcpStream> {
    let path = PathBuf::from("/run/netns").join(ns);
    std::thread::spawn(move || {
        let f = std::fs::File::open(&path)?;
        rustix::thread::move_into_link_name_space(
            f.as_fd(),
            Some(rustix::thread::LinkNameSpaceType::Network),
        )?;
        let s = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(10))?;
        s.set_nonblocking(true)?;
        Ok(s)
    })
    .join()
    .map_err(|_| std::io::Error::other("namespace connect thread panicked"))?
}

impl tower_service::Service<http::Uri> for NsConnector {
    type Response = TokioIo<tokio::net::TcpStream>;
    type Error = std::io::Error;
    type Future =
        Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send + 'static>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: http::Uri) -> Self::Future {
        let ns = self.ns.clone();
        Box::pin(async move {
            let host = uri.host().unwrap_or("127.0.0.1").to_string();
            let port = uri.port_u16().unwrap_or(80);
            let ip: std::net::IpAddr = host
                .trim_matches(['[', ']'])
                .parse()
                .map_err(|_| std::io::Error::other(format!("not an address: {host}")))?;
            let s = tokio::task::spawn_blocking(move || connect_in(&ns, SocketAddr::new(ip, port)))
                .await
                .map_err(std::io::Error::other)??;
            Ok(TokioIo::new(tokio::net::TcpStream::from_std(s)?))
        })
    }
}

/// chromedriver in a namespace, with its log.
pub struct Driver {
    child: Child,
    /// The namespace it runs in.
    pub ns: String,
    /// Its port on the namespace's loopback.
    pub port: u16,
    /// Its log file (chromedriver's and Chromium's output).
    pub log: PathBuf,
    profile: tempfile::TempDir,
    sessions: std::sync::atomic::AtomicU32,
}

/// `chromium` and `chromedriver` if installed (Debian packages `chromium`
/// and `chromium-driver`); under `OKD_REQUIRE_TOOLS=1` their absence fails.
pub fn tools() -> Option<(PathBuf, PathBuf)> {
    let chromium = okd_test_utils::tool("chromium", &["/usr/bin/chromium"], Some("chromium"))?;
    let driver = okd_test_utils::tool(
        "chromedriver",
        &["/usr/bin/chromedriver"],
        Some("chromium-driver"),
    )?;
    Some((chromium, driver))
}

impl Driver {
    /// Starts chromedriver inside `ns` on port 9515, logging to
    /// `scratch/chromedriver.log`, and waits (bounded) until it answers.
    pub fn start(ns: &str, scratch: &Path) -> Option<Driver> {
        let (_, driver) = tools()?;
        let log = scratch.join("chromedriver.log");
        let f = std::fs::File::create(&log).unwrap();
        // A process group of its own: Chromium's processes are in it too,
        // and drop kills the whole group (killing chromedriver alone would
        // leave the browser running).
        let child = super::kube::in_ns(ns, &driver)
            .args(["--port=9515", "--log-level=WARNING"])
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(f.try_clone().unwrap())
            .stderr(f)
            .spawn()
            .unwrap();
        let d = Driver {
            child,
            ns: ns.to_string(),
            port: 9515,
            log,
            profile: tempfile::tempdir().unwrap(),
            sessions: std::sync::atomic::AtomicU32::new(0),
        };
        let start = Instant::now();
        while connect_in(ns, SocketAddr::from(([127, 0, 0, 1], d.port))).is_err() {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "chromedriver did not listen:\n{}",
                std::fs::read_to_string(&d.log).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        Some(d)
    }

    /// A new headless Chromium session of `width`×`height` pixels, with a
    /// fresh profile of its own.
    pub async fn session(&self, width: u32, height: u32) -> fantoccini::Client {
        let (chromium, _) = tools().expect("chromium");
        let n = self
            .sessions
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let profile = self.profile.path().join(format!("session-{n}"));
        let mut caps = serde_json::Map::new();
        caps.insert(
            "goog:chromeOptions".into(),
            serde_json::json!({
                "binary": chromium,
                "args": [
                    "--headless",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--disable-dev-shm-usage",
                    "--disable-quic",
                    "--no-first-run",
                    "--disable-background-networking",
                    "--disable-component-update",
                    "--disable-sync",
                    "--disable-extensions",
                    "--disable-crash-reporter",
                    "--disable-breakpad",
                    format!("--user-data-dir={}", profile.display()),
                    format!("--window-size={width},{height}"),
                ],
            }),
        );
        fantoccini::ClientBuilder::new(NsConnector::new(&self.ns))
            .capabilities(caps)
            .connect(&format!("http://127.0.0.1:{}", self.port))
            .await
            .unwrap_or_else(|e| {
                panic!(
                    "WebDriver session: {e}\n{}",
                    std::fs::read_to_string(&self.log).unwrap_or_default()
                )
            })
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        // The group's ID is chromedriver's PID (`ip netns exec` execs it).
        let _ = std::process::Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.child.id())])
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Width and height of a PNG image from its IHDR chunk (PNG spec §11.2.2),
/// or `None` when `png` is not a PNG.
pub fn png_size(png: &[u8]) -> Option<(u32, u32)> {
    if png.len() < 24 || &png[..8] != b"\x89PNG\r\n\x1a\n" || &png[12..16] != b"IHDR" {
        return None;
    }
    let w = u32::from_be_bytes(png[16..20].try_into().ok()?);
    let h = u32::from_be_bytes(png[20..24].try_into().ok()?);
    Some((w, h))
}

/// Where screenshots are kept: `$OKD_ARTIFACTS/<test>` (CI sets it outside
/// the clone), else `<temp>/okd-install-artifacts/<test>`; emptied of the
/// previous run's screenshots.
pub fn artifacts(test: &str) -> PathBuf {
    let base = std::env::var_os("OKD_ARTIFACTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("okd-install-artifacts"));
    let d = base.join(test);
    std::fs::create_dir_all(&d).unwrap();
    for e in std::fs::read_dir(&d).unwrap().flatten() {
        if e.path().extension().is_some_and(|x| x == "png") {
            let _ = std::fs::remove_file(e.path());
        }
    }
    d
}
