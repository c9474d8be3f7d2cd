//! The install lab of the dashboard tests (`dashboard_browser`,
//! `dashboard_bench`) and how they read serve's page in the browser:
//!
//! - the bastion (192.168.120.101) runs `okd-install serve` with every
//!   service: DNS, load balancer, machine-config server, HTTP, the page;
//! - the bootstrap (192.168.120.102) runs the real control plane of the kit
//!   (etcd, kube-apiserver, kube-controller-manager) from our `bootstrap.ign`;
//!   serve's load balancer sends the API to it and serve reads the cluster
//!   through it;
//! - the master (192.168.120.103) resolves through serve's DNS;
//! - a desk (192.168.120.110) runs chromedriver and Chromium, which load the
//!   page from the bastion over the bridge, like a person's browser.
#![allow(dead_code)]

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::Value;

use super::browser::{Driver, png_size};
use super::kube::{ControlPlane, With, tail};

/// What the page shows, read in one go from the DOM: per host row its
/// stages (`{done, text}`), the hosts table's column headers, the load
/// balancer rows, the bootstrap.ign fetch rows (their text), the warnings,
/// the cluster line and the browser's clock.
pub const SNAPSHOT: &str = r#"
const rows = {};
for (const tr of document.querySelectorAll('#main section[aria-labelledby=hosts] tbody tr')) {
  rows[tr.querySelector('th').textContent.trim()] = Array.from(tr.querySelectorAll('ol.st li'))
    .map(li => ({done: li.classList.contains('done'), text: li.textContent.trim()}));
}
const lb = Array.from(document.querySelectorAll('#main section[aria-labelledby=lb] tbody tr'))
  .map(tr => ({frontend: tr.querySelector('th').textContent.trim(),
               cells: Array.from(tr.querySelectorAll('td')).map(td => ({cls: td.className, text: td.textContent.trim()}))}));
const warnings = Array.from(document.querySelectorAll('#main ul.warn li')).map(li => li.textContent.trim());
const cluster = (document.querySelector('#main section[aria-labelledby=hosts] p') || {}).textContent || '';
const columns = Array.from(document.querySelectorAll('#main section[aria-labelledby=hosts] thead th')).map(th => th.textContent.trim());
const fetches = Array.from(document.querySelectorAll('#main section[aria-labelledby=fetches] tbody tr')).map(tr => tr.textContent.trim());
return {rows, columns, lb, fetches, warnings, cluster, now: Date.now()};
"#;

pub fn unix_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// The done stages of `host` on a snapshot, as their texts.
pub fn done(snap: &Value, host: &str) -> Vec<String> {
    snap["rows"][host]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|s| s["done"] == true)
        .filter_map(|s| s["text"].as_str().map(String::from))
        .collect()
}

/// The load balancer row of backend `backend` in the frontend whose
/// header starts with `frontend`: its cells' (class, text).
pub fn lb_row(snap: &Value, frontend: &str, backend: &str) -> Option<Vec<(String, String)>> {
    snap["lb"].as_array()?.iter().find_map(|r| {
        let cells = r["cells"].as_array()?;
        (r["frontend"].as_str()?.starts_with(frontend)
            && cells.first()?["text"].as_str()?.starts_with(backend))
        .then(|| {
            cells
                .iter()
                .map(|c| {
                    (
                        c["cls"].as_str().unwrap_or("").to_string(),
                        c["text"].as_str().unwrap_or("").to_string(),
                    )
                })
                .collect()
        })
    })
}

pub struct Page<'a> {
    pub client: &'a fantoccini::Client,
    pub shots: std::path::PathBuf,
    pub n: u32,
}

impl Page<'_> {
    pub async fn snapshot(&self) -> Value {
        match self.client.execute(SNAPSHOT, vec![]).await {
            Ok(v) => v,
            Err(e) => serde_json::json!({"error": e.to_string()}),
        }
    }

    /// Polls the open page (every 50 ms, bounded by `secs`) until `f`
    /// holds; returns the snapshot and how long after `since_ms` (Unix ms)
    /// the browser saw it.
    pub async fn until(
        &self,
        what: &str,
        secs: u64,
        since_ms: i64,
        ctx: &dyn Fn() -> String,
        f: impl Fn(&Value) -> bool,
    ) -> (Value, i64) {
        let start = Instant::now();
        loop {
            let snap = self.snapshot().await;
            if f(&snap) {
                let seen = snap["now"].as_i64().unwrap_or_else(unix_ms);
                eprintln!("page: {what} after {} ms", seen - since_ms);
                return (snap, seen - since_ms);
            }
            assert!(
                start.elapsed() < Duration::from_secs(secs),
                "the page did not show {what} within {secs} s:\n{snap:#}\n{}",
                ctx()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// [`Page::until`] the stage of `host` whose text starts with `prefix` is done.
    pub async fn until_stage(
        &self,
        host: &str,
        prefix: &str,
        since_ms: i64,
        ctx: &dyn Fn() -> String,
    ) -> Value {
        let what = format!("{host}: {prefix}");
        self.until(&what, 30, since_ms, ctx, |s| {
            done(s, host).iter().any(|t| t.starts_with(prefix))
        })
        .await
        .0
    }

    /// Keeps a screenshot of the page as `<n>-<name>.png` and checks it is
    /// an image of the window's width.
    pub async fn shot(&mut self, name: &str, width: u32) {
        self.n += 1;
        let png = self.client.screenshot().await.expect("screenshot");
        let (w, h) = png_size(&png).expect("a PNG screenshot");
        assert!(w == width && h > 0, "screenshot of {w}x{h}");
        let path = self.shots.join(format!("{}-{name}.png", self.n));
        std::fs::write(&path, &png).unwrap();
        eprintln!("screenshot {} ({} bytes)", path.display(), png.len());
    }
}

/// The install of the module's description, up to the open browser:
/// control plane on the bootstrap, `serve` on the bastion, the master's
/// namespace resolving through serve's DNS, chromedriver on the desk.
pub struct InstallLab {
    // Dropped first: chromedriver and its Chromium.
    pub driver: Driver,
    pub cp: ControlPlane,
    pub bastion_ns: String,
    pub bastion: String,
    pub master_ns: String,
    pub master_ip: String,
    pub serve_log: std::path::PathBuf,
    pub okd: std::path::PathBuf,
    pub scratch: tempfile::TempDir,
    pub dir: tempfile::TempDir,
}

impl InstallLab {
    /// `None` (after a SKIPPING line) when a program is missing.
    pub fn start() -> Option<InstallLab> {
        if !super::netns::available()
            || super::tool("ignition", &[super::serve::IGNITION]).is_none()
            || super::browser::tools().is_none()
        {
            return None;
        }
        let dir = super::kube::cluster_dir();
        let scratch = tempfile::tempdir().unwrap();
        let mut cp =
            ControlPlane::start_on(dir.path(), scratch.path(), With::ControllerManager, 102)?;
        let (bastion_ns, bastion) = cp.add_node("bastion", 101);
        let (master_ns, master_ip) = cp.add_node("master", 103);
        let (desk_ns, _) = cp.add_node("desk", 110);
        // The master finds api-int through serve's DNS, as the nodes of the
        // install do (its kernel arguments name the bastion as nameserver).
        let etc = std::path::PathBuf::from("/etc/netns").join(&master_ns);
        std::fs::write(
            etc.join("resolv.conf"),
            format!("nameserver {bastion}\nsearch {}\n", cp.domain),
        )
        .unwrap();
        std::fs::write(etc.join("hosts"), "127.0.0.1 localhost\n").unwrap();

        let okd = std::path::PathBuf::from(env!("CARGO_BIN_EXE_okd-install"));
        let dir_arg = dir.path().to_string_lossy().into_owned();
        cp.spawn_in(
            &bastion_ns,
            "serve",
            &okd,
            &["serve".into(), "--dir".into(), dir_arg],
        );
        let serve_log = scratch.path().join("serve.log");
        super::serve::wait_ready(&serve_log);
        let driver = Driver::start(&desk_ns, scratch.path())?;
        Some(InstallLab {
            driver,
            cp,
            bastion_ns,
            bastion,
            master_ns,
            master_ip,
            serve_log,
            okd,
            scratch,
            dir,
        })
    }

    /// The tails of serve's and chromedriver's logs, for a failure message.
    pub fn context(&self) -> impl Fn() -> String + use<> {
        let (serve, driver) = (self.serve_log.clone(), self.driver.log.clone());
        move || {
            format!(
                "serve:\n{}\nchromedriver:\n{}",
                tail(&std::fs::read_to_string(&serve).unwrap_or_default(), 30),
                tail(&std::fs::read_to_string(&driver).unwrap_or_default(), 10)
            )
        }
    }
}
