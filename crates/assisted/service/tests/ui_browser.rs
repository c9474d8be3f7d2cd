//! The web UI in a real browser (issue #24 item 3): Debian's headless
//! `chromium` driven by `chromedriver` over WebDriver (fantoccini, plain
//! HTTP on loopback) against the service running in-process on
//! 127.0.0.1, as an administrator would use it:
//!
//! - the cluster list shows the cluster and links to its page;
//! - the page shows the hosts with their statuses, the small host's
//!   failing memory validation with its message, failing validations
//!   before passing ones, and the events, newest first;
//! - Install while the cluster is not ready shows the API's 409 reason;
//! - a host renamed through its input and Save reaches the API
//!   (`requested_hostname`); an invalid name shows the API's reason, and
//!   the page does not refresh the edit away meanwhile;
//! - once the small host has enough memory the cluster is ready, and
//!   Install starts the installation (preparing-for-installation, then
//!   installing), every call carrying the session's bearer token;
//! - nothing is loaded from elsewhere, and the pull secret is not in the page.
//!
//! Screenshots go to `/var/tmp/okd-ui-shots/` (their paths are printed).
//! Without chromium or chromedriver the test says SKIPPING and passes,
//! unless `OKD_REQUIRE_TOOLS=1`. chromedriver (and Chromium with it, its
//! process group) is killed on drop, also when the test fails.

mod common;

use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::*;
use fantoccini::{Client, Locator};
use reqwest::Method as M;
use serde_json::{Value, json};

/// Where the screenshots go.
const SHOTS: &str = "/var/tmp/okd-ui-shots";

/// chromedriver on a loopback port, in a process group of its own.
struct Driver {
    child: Child,
    port: u16,
    log: PathBuf,
    chromium: PathBuf,
    profile: tempfile::TempDir,
}

impl Driver {
    /// Starts chromedriver (bounded wait until it listens); `None` when
    /// chromium or chromedriver is not installed (and not required).
    fn start(scratch: &Path) -> Option<Driver> {
        let chromium = okd_test_utils::tool("chromium", &["/usr/bin/chromium"], Some("chromium"))?;
        let driver = okd_test_utils::tool(
            "chromedriver",
            &["/usr/bin/chromedriver"],
            Some("chromium-driver"),
        )?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let log = scratch.join("chromedriver.log");
        let f = std::fs::File::create(&log).unwrap();
        // Its own process group: Chromium's processes join it, and drop
        // kills the whole group.
        let child = std::process::Command::new(driver)
            .args([format!("--port={port}"), "--log-level=WARNING".into()])
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(f.try_clone().unwrap())
            .stderr(f)
            .spawn()
            .unwrap();
        let d = Driver {
            child,
            port,
            log,
            chromium,
            profile: tempfile::tempdir().unwrap(),
        };
        let start = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "chromedriver did not listen:\n{}",
                d.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        Some(d)
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// A headless Chromium session of `width`×`height` with a fresh profile
    /// and no calling home.
    async fn session(&self, width: u32, height: u32) -> Client {
        let mut caps = serde_json::Map::new();
        caps.insert(
            "goog:chromeOptions".into(),
            json!({
                "binary": self.chromium,
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
                    "--hide-scrollbars",
                    format!("--user-data-dir={}", self.profile.path().display()),
                    // The service's own certificate, pinned (as a user
                    // accepts it once; nothing else is trusted more).
                    format!(
                        "--ignore-certificate-errors-spki-list={}",
                        tls().spki_pin.clone().unwrap()
                    ),
                    format!("--window-size={width},{height}"),
                ],
            }),
        );
        let conn = hyper_util::client::legacy::connect::HttpConnector::new();
        tokio::time::timeout(
            Duration::from_secs(60),
            fantoccini::ClientBuilder::new(conn)
                .capabilities(caps)
                .connect(&format!("http://127.0.0.1:{}", self.port)),
        )
        .await
        .unwrap_or_else(|_| panic!("no WebDriver session within 60 s:\n{}", self.log()))
        .unwrap_or_else(|e| panic!("WebDriver session: {e}\n{}", self.log()))
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        // The group's id is chromedriver's PID.
        let _ = std::process::Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.child.id())])
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `script` (a function body) in the page; its error as a value.
async fn js(c: &Client, script: &str) -> Value {
    match c.execute(script, vec![]).await {
        Ok(v) => v,
        Err(e) => json!({"webdriver error": e.to_string()}),
    }
}

/// Polls `script` every 100 ms (at most `secs` s, ≤ 60) until it returns
/// something other than null, false or an empty string; returns that.
async fn until(c: &Client, what: &str, secs: u64, script: &str) -> Value {
    let start = Instant::now();
    loop {
        let v = js(c, script).await;
        if !v.is_null() && v != Value::Bool(false) && v != "" && v.get("webdriver error").is_none()
        {
            return v;
        }
        if start.elapsed() > Duration::from_secs(secs.min(60)) {
            let page = js(c, "return document.querySelector('main').innerText").await;
            panic!("the page did not show {what} within {secs} s (last: {v}):\n{page}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The text of the first element matching `css`, trimmed; `null` when none.
fn text_of(css: &str) -> String {
    format!(
        "const e = document.querySelector({}); return e ? e.textContent.trim() : null;",
        Value::String(css.into())
    )
}

/// Keeps a screenshot of the whole page (the window made as tall as it,
/// 4000 pixels at most) as `<SHOTS>/<name>.png` and prints its path.
async fn shot(c: &Client, name: &str) -> PathBuf {
    shot_at(c, name, 1440, 4000).await
}

/// [`shot`] at `width` pixels, `max_height` at most.
async fn shot_at(c: &Client, name: &str, width: u32, max_height: u64) -> PathBuf {
    let height = js(
        c,
        "window.scrollTo(0, 0); return document.documentElement.scrollHeight;",
    )
    .await
    .as_u64()
    .unwrap_or(1000)
    .clamp(600, max_height);
    // The window's frame takes some of its height, also when headless.
    c.set_window_size(width, height as u32 + 200).await.unwrap();
    let png = c.screenshot().await.expect("screenshot");
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
    std::fs::create_dir_all(SHOTS).unwrap();
    let path = Path::new(SHOTS).join(format!("{name}.png"));
    std::fs::write(&path, &png).unwrap();
    eprintln!("screenshot {} ({} bytes)", path.display(), png.len());
    path
}

/// Clicks the element matching `css`, again when the page's refresh
/// replaced it between finding and clicking (5 tries).
async fn click(c: &Client, css: &str) {
    for attempt in 1.. {
        let r = async { c.find(Locator::Css(css)).await?.click().await }.await;
        match r {
            Ok(()) => return,
            Err(e) if attempt < 5 => eprintln!("click {css}: {e}; again"),
            Err(e) => panic!("click {css}: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Types `text` into the input matching `css` in place of its value, as a
/// person does: click into it (its focus pauses the refresh), select all,
/// type. Again when the refresh replaced it before the click (5 tries).
async fn type_into(c: &Client, css: &str, text: &str) -> fantoccini::elements::Element {
    for attempt in 1.. {
        let r = async {
            let e = c.find(Locator::Css(css)).await?;
            e.click().await?;
            // Control+A, then release the modifier (the Null key).
            e.send_keys("\u{e009}a\u{e000}").await?;
            e.send_keys(text).await?;
            Ok::<_, fantoccini::error::CmdError>(e)
        }
        .await;
        match r {
            Ok(e) => {
                assert_eq!(e.prop("value").await.unwrap().as_deref(), Some(text));
                return e;
            }
            Err(e) if attempt < 5 => eprintln!("type into {css}: {e}; again"),
            Err(e) => panic!("type into {css}: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    unreachable!()
}

async fn host_doc(c: &reqwest::Client, base: &str, ie: &str, id: &str) -> Value {
    let (code, h) = send(
        c,
        M::GET,
        &format!("{base}/infra-envs/{ie}/hosts/{id}"),
        None,
    )
    .await;
    assert_eq!(code, 200, "{h}");
    h
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ui_shows_a_cluster_and_drives_its_install() {
    let scratch = tempfile::tempdir().unwrap();
    let Some(driver) = Driver::start(scratch.path()) else {
        return;
    };
    tokio::time::timeout(Duration::from_secs(240), scenario(&driver, scratch.path()))
        .await
        .unwrap_or_else(|_| panic!("the scenario took over 240 s:\n{}", driver.log()));
    drop(driver);
}

async fn scenario(driver: &Driver, scratch: &Path) {
    let svc = start(&okd_assisted_service::sqlite_url(scratch)).await;
    let base = svc.base.clone();
    let root = base
        .strip_suffix(okd_assisted_api::rest::BASE_PATH)
        .unwrap()
        .to_string();
    let c = client();

    // A cluster with three hosts; master-2 has 4 GiB, too little for any role.
    let (code, cl) = send(
        &c,
        M::POST,
        &format!("{base}/clusters"),
        Some(json!({
            "name": "ui-demo", "openshift_version": "4.19", "pull_secret": PS,
            "base_dns_domain": "example.com",
            "api_vips": [{"ip": "192.168.126.253"}], "ingress_vips": [{"ip": "192.168.126.254"}]
        })),
    )
    .await;
    assert_eq!(code, 201, "{cl}");
    let cid = cl["id"].as_str().unwrap().to_string();
    let (code, ie) = send(
        &c,
        M::POST,
        &format!("{base}/infra-envs"),
        Some(json!({"name": "ui-demo-ie", "pull_secret": PS, "cluster_id": cid})),
    )
    .await;
    assert_eq!(code, 201, "{ie}");
    let ie = ie["id"].as_str().unwrap().to_string();
    let ids: Vec<String> = (1..=3)
        .map(|i| format!("44444444-0000-0000-0000-00000000000{i}"))
        .collect();
    let mut agents = Vec::new();
    for (i, id) in ids.iter().enumerate() {
        let (code, h) = send(
            &c,
            M::POST,
            &format!("{base}/infra-envs/{ie}/hosts"),
            Some(json!({"host_id": id})),
        )
        .await;
        assert_eq!(code, 201, "{h}");
        let mem = if i == 2 { 4 } else { 16 };
        let inv = inventory(&format!("master-{i}"), &format!("192.168.126.1{i}"), 8, mem);
        poll_and_answer(&c, &base, &ie, id, &inv).await;
        agents.push(inv);
    }
    let pairs: Vec<(&str, &okd_assisted_api::Inventory)> =
        ids.iter().map(String::as_str).zip(&agents).collect();
    poll_until(
        &c,
        &base,
        (&ie, &cid),
        &pairs,
        "two known hosts and one insufficient",
        |cl| {
            let st = |i: usize| {
                cl.hosts
                    .iter()
                    .find(|h| h.id == ids[i])
                    .map(|h| h.status.as_str())
            };
            st(0) == Some("known") && st(1) == Some("known") && st(2) == Some("insufficient")
        },
    )
    .await;

    let b = driver.session(1440, 1000).await;

    // Authentication is on: the page asks for the admin token first.
    b.goto(&format!("{root}/")).await.expect("open the page");
    until(
        &b,
        "the sign-in form",
        30,
        "return document.querySelector('form[action=\"/login\"] input[name=token]') !== null;",
    )
    .await;
    shot(&b, "sign-in").await;
    b.execute(
        "document.querySelector('input[name=token]').value = arguments[0]; \
         document.querySelector('form[action=\"/login\"]').submit();",
        vec![json!(keys().admin_token())],
    )
    .await
    .unwrap();

    // The cluster list.
    let row = format!("tr.cluster[data-cluster-id='{cid}']");
    let listed = until(
        &b,
        "the cluster in the list",
        30,
        &format!(
            "const r = document.querySelector(\"{row}\"); return r && {{name: r.querySelector('th a').textContent, \
             status: r.querySelector('.status').textContent, hosts: r.querySelector('.hosts').textContent, \
             version: r.querySelector('.version').textContent}};"
        ),
    )
    .await;
    assert_eq!(
        listed,
        json!({"name": "ui-demo", "status": "insufficient", "hosts": "3 hosts, 2 ready", "version": "4.19"})
    );
    assert_eq!(b.title().await.unwrap(), "Clusters · Assisted installer");
    let shot0 = shot(&b, "clusters").await;
    click(&b, &format!("{row} th a")).await;

    // The cluster's page: the hosts and their statuses.
    until(
        &b,
        "the cluster's status",
        30,
        "const e = document.getElementById('cluster-status'); return e && e.textContent === 'insufficient';",
    )
    .await;
    assert!(b.current_url().await.unwrap().path().ends_with(&cid));
    let host = |i: usize| format!("tr.host[data-host-id='{}']", ids[i]);
    for (i, want) in [(0, "known"), (1, "known"), (2, "insufficient")] {
        let got = js(&b, &text_of(&format!("{} .status", host(i)))).await;
        assert_eq!(got, want, "host {i}");
    }
    let small = js(
        &b,
        &format!(
            "const r = document.querySelector(\"{}\"); return {{\
             name: r.querySelector('input.host-name').value, \
             cpus: r.querySelector('.cpu').textContent.trim(), \
             memory: r.querySelector('.memory').textContent.trim(), \
             open: r.querySelector('details.host-validations').open, \
             failing: Array.from(r.querySelectorAll('.validation.failure .message')).map(e => e.textContent), \
             order: Array.from(r.querySelectorAll('.validation')).map(e => e.classList[1])}};",
            host(2)
        ),
    )
    .await;
    assert_eq!(small["name"], "master-2", "{small:#}");
    assert_eq!(small["cpus"], "8", "{small:#}");
    assert_eq!(small["memory"], "4.0 GiB", "{small:#}");
    assert_eq!(
        small["open"], true,
        "a host's failing list is open: {small:#}"
    );
    assert!(
        small["failing"].as_array().unwrap().iter().any(|m| m
            .as_str()
            .unwrap()
            .ends_with("minimum required RAM for any role is 8.00 GiB, found only 4.00 GiB")),
        "{small:#}"
    );
    let rank = |s: &str| match s {
        "failure" | "error" => 0,
        "success" | "disabled" => 2,
        _ => 1,
    };
    let in_order = |v: &Value| {
        let r: Vec<i32> = v
            .as_array()
            .unwrap()
            .iter()
            .map(|s| rank(s.as_str().unwrap()))
            .collect();
        !r.is_empty() && r.windows(2).all(|w| w[0] <= w[1])
    };
    assert!(
        in_order(&small["order"]),
        "failing validations first: {small:#}"
    );
    let (first, last) = (
        small["order"][0].as_str().unwrap(),
        small["order"].as_array().unwrap().last().unwrap(),
    );
    assert_eq!((first, last.as_str().unwrap()), ("failure", "success"));
    let good = js(
        &b,
        &format!(
            "const r = document.querySelector(\"{}\"); const s = r.querySelector('select.host-role'); \
             return {{role: s.options[s.selectedIndex].textContent, value: s.value, \
             open: r.querySelector('details.host-validations').open}};",
            host(0)
        ),
    )
    .await;
    assert_eq!(good["value"], "auto-assign", "{good:#}");
    assert!(
        good["role"]
            .as_str()
            .unwrap()
            .starts_with("auto-assign (suggested: "),
        "{good:#}"
    );
    assert_eq!(good["open"], false, "a passing host's list starts closed");
    let cluster_order = js(
        &b,
        "return Array.from(document.querySelectorAll('#cluster-validations .validation')).map(e => e.classList[1]);",
    )
    .await;
    assert!(in_order(&cluster_order), "{cluster_order}");
    let events = js(
        &b,
        "return Array.from(document.querySelectorAll('#events li')).map(li => \
         ({time: Date.parse(li.querySelector('time').getAttribute('datetime')), sev: li.querySelector('.sev').textContent, \
           message: li.querySelector('.message').textContent}));",
    )
    .await;
    let events = events.as_array().unwrap();
    assert!(events.len() >= 4, "{events:?}");
    assert!(
        events
            .windows(2)
            .all(|w| w[0]["time"].as_f64() >= w[1]["time"].as_f64()),
        "newest first: {events:?}"
    );
    assert_eq!(
        events.last().unwrap()["message"],
        "Successfully registered cluster ui-demo"
    );
    assert_eq!(events.last().unwrap()["sev"], "info");

    // Install while not ready: the API's reason.
    click(&b, "#install").await;
    let refused = until(&b, "the install error", 30, &text_of("#install-error")).await;
    assert!(
        refused
            .as_str()
            .unwrap()
            .starts_with("Cluster is not ready for installation"),
        "{refused}"
    );

    // Rename master-0 through its input and Save.
    type_into(&b, &format!("{} input.host-name", host(0)), "node-a").await;
    click(&b, &format!("{} button.save", host(0))).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let h = host_doc(&c, &base, &ie, &ids[0]).await;
        if h["requested_hostname"] == "node-a" {
            break;
        }
        assert!(Instant::now() < deadline, "the rename did not arrive: {h}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    until(
        &b,
        "the new name saved on the page",
        30,
        &format!(
            "const r = document.querySelector(\"{}\"); const i = r.querySelector('input.host-name'); \
             return i.defaultValue === 'node-a' && i.value === 'node-a' && !r.classList.contains('dirty') \
             && r.querySelector('.save-error').textContent === '';",
            host(0)
        ),
    )
    .await;

    // An invalid name: the API's reason, and no refresh while it is there.
    let input = type_into(&b, &format!("{} input.host-name", host(1)), "Bad_Name").await;
    click(&b, &format!("{} button.save", host(1))).await;
    let reason = until(
        &b,
        "the rename's refusal",
        30,
        &text_of(&format!("{} .save-error", host(1))),
    )
    .await;
    assert!(
        reason
            .as_str()
            .unwrap()
            .starts_with("host_name \"Bad_Name\": must match"),
        "{reason}"
    );
    assert_eq!(
        host_doc(&c, &base, &ie, &ids[1]).await["requested_hostname"],
        ""
    );
    b.execute("document.activeElement.blur()", vec![])
        .await
        .unwrap();
    until(
        &b,
        "the refresh paused",
        30,
        "const e = document.getElementById('refresh-state'); return e.textContent === 'Refresh paused while you edit.';",
    )
    .await;
    let kept = js(
        &b,
        &format!(
            "const r = document.querySelector(\"{}\"); return [r.querySelector('input.host-name').value, \
             r.querySelector('.save-error').textContent];",
            host(1)
        ),
    )
    .await;
    assert_eq!(kept[0], "Bad_Name", "the edit survives: {kept}");
    assert_eq!(kept[1], reason, "{kept}");
    let shot1 = shot(&b, "cluster-insufficient").await;
    let fits = js(
        &b,
        "return Array.from(document.querySelectorAll('.table-wrap')).map(w => [w.scrollWidth, w.clientWidth]);",
    )
    .await;
    assert!(
        fits.as_array()
            .unwrap()
            .iter()
            .all(|w| w[0].as_u64() <= w[1].as_u64()),
        "the hosts table fits 1440 pixels: {fits}"
    );

    // Escape reverts the edit; the refresh resumes.
    input.send_keys("\u{e00c}").await.unwrap();
    until(
        &b,
        "the refresh resumed",
        30,
        "const e = document.getElementById('refresh-state'); return e.textContent.startsWith('Updated at ');",
    )
    .await;

    // master-2 gets 16 GiB: the cluster becomes ready.
    // The agents keep polling, as running agents do.
    agents[2] = inventory("master-2", "192.168.126.12", 8, 16);
    let pairs: Vec<(&str, &okd_assisted_api::Inventory)> =
        ids.iter().map(String::as_str).zip(&agents).collect();
    poll_until(&c, &base, (&ie, &cid), &pairs, "the cluster ready", |cl| {
        cl.status == "ready"
    })
    .await;
    until(
        &b,
        "the cluster ready",
        60,
        "const e = document.getElementById('cluster-status'); const i = document.getElementById('install'); \
         return e && e.textContent === 'ready' && !i.disabled && i.classList.contains('primary');",
    )
    .await;
    let st = js(&b, &text_of(&format!("{} .status", host(2)))).await;
    assert_eq!(st, "known");
    let shot2 = shot(&b, "cluster-ready").await;

    // Install: every call carries the session's token.
    b.execute(
        "sessionStorage.setItem('okd-assisted-token', arguments[0]); window.seen = []; const f = window.fetch; \
         window.fetch = (u, i) => { window.seen.push([String(u), (i && i.headers && i.headers.Authorization) || null]); \
         return f(u, i); };",
        vec![json!(keys().admin_token())],
    )
    .await
    .unwrap();
    click(&b, "#install").await;
    let status = until(
        &b,
        "the installation started",
        60,
        "const e = document.getElementById('cluster-status'); \
         return e && ['preparing-for-installation', 'installing'].includes(e.textContent) && e.textContent;",
    )
    .await;
    eprintln!("cluster status on the page after Install: {status}");
    // The preparing hosts' agents measure their installation disks.
    answer_disk_checks(&c, &base, &ie, &ids, &agents).await;
    assert_eq!(
        js(&b, &text_of("#install-note")).await,
        "Installation started."
    );
    assert_eq!(js(&b, &text_of("#install-error")).await, "");
    assert_eq!(
        js(&b, "return document.getElementById('install').disabled").await,
        true
    );
    let seen = js(&b, "return window.seen").await;
    let seen = seen.as_array().unwrap();
    assert!(
        seen.iter().any(|s| s[0]
            .as_str()
            .unwrap()
            .ends_with(&format!("/clusters/{cid}/actions/install"))),
        "{seen:?}"
    );
    assert!(
        seen.iter()
            .all(|s| s[1] == format!("Bearer {}", keys().admin_token()).as_str()),
        "every fetch carries the token: {seen:?}"
    );
    // The hosts are no longer editable; the new name stays.
    until(
        &b,
        "the renamed host's name as text",
        30,
        &format!(
            "const r = document.querySelector(\"{}\"); const t = r && r.querySelector('.host-name-text'); \
             return t && !r.querySelector('input') && t.textContent === 'node-a';",
            host(0)
        ),
    )
    .await;
    until(
        &b,
        "installing",
        60,
        "const e = document.getElementById('cluster-status'); return e && e.textContent === 'installing';",
    )
    .await;
    let shot3 = shot(&b, "cluster-installing").await;
    // At a phone's width the hosts table stacks, each cell named.
    b.set_window_size(412, 915).await.unwrap();
    let stacked = js(
        &b,
        "return [getComputedStyle(document.querySelector('#hosts thead')).display, \
         getComputedStyle(document.querySelector('#hosts td.memory'), '::before').content];",
    )
    .await;
    assert_eq!(stacked, json!(["none", "\"Memory: \""]));
    let shot4 = shot_at(&b, "cluster-phone", 412, 1400).await;

    // One document, nothing else loaded.
    let others = js(
        &b,
        "return performance.getEntriesByType('resource').filter(r => r.initiatorType !== 'fetch').map(r => r.name);",
    )
    .await;
    assert_eq!(others, json!([]), "external resources");
    b.close().await.unwrap();

    // The page over plain HTTP: its policy, and no pull secret.
    let resp = c
        .get(format!("{root}/clusters/{cid}"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let csp = resp.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(csp.starts_with("default-src 'none';"), "{csp}");
    let page = resp.text().await.unwrap();
    assert!(
        !page.contains("aWQ6cGFzcwo="),
        "the pull secret is never shown"
    );
    let resp = c
        .get(format!("{root}/clusters/no-such-cluster"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 404);
    assert!(
        resp.text()
            .await
            .unwrap()
            .contains("Cluster no-such-cluster not found.")
    );

    for p in [shot0, shot1, shot2, shot3, shot4] {
        println!("screenshot: {}", p.display());
    }
    svc.stop().await;
}
