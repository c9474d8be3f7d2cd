//! The agent's runner against the real service (okd-assisted-service in
//! process, on 127.0.0.1 with SQLite in a temporary directory): a made-up
//! machine registers and its inventory is stored; the service stopped and
//! started again on the same database and port, the agent backs off, logs
//! once per cause and carries on; a reply whose POST found the service
//! away is kept and lands once it is back.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use okd_assisted_agent::Root;
use okd_assisted_agent::runner::{self, AgentConfig, AgentError};
use okd_assisted_api::Inventory;
use okd_assisted_api::rest::{Host, InfraEnv};
use okd_assisted_service::Options;
use serde_json::json;
use tokio::time::timeout;

const PS: &str = r#"{"auths":{"fake":{"auth":"aWQ6cGFzcwo="}}}"#;

/// Every wait of these tests is bounded by this.
const BOUND: Duration = Duration::from_secs(20);

/// The made-up machine's SMBIOS UUID, so its host id.
const HOST_ID: &str = "5b0c0e4a-4d6f-4c1e-9b3a-0e1f2a3b4c5d";

// ---- the service

struct Svc {
    addr: SocketAddr,
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
}

/// Starts the service on `addr` (port 0: any) over `<dir>/assisted.db`;
/// binding is retried for a while (the port of a service just stopped).
async fn start(dir: &Path, addr: SocketAddr) -> Svc {
    let mut opts = Options::new(okd_assisted_service::sqlite_url(dir), addr);
    opts.auth = Some(keys());
    opts.monitor_interval = Duration::from_millis(200);
    opts.next_instruction_seconds = 1;
    opts.check_interval_seconds = 1;
    let state = okd_assisted_service::open(opts).await.unwrap();
    let mut tries = 0;
    let listener = loop {
        match okd_listen::Listener::bind(addr, okd_listen::Limits::default()).await {
            Ok(l) => break l,
            Err(e) if tries < 50 => {
                tries += 1;
                tracing::debug!(error = %e, "bind again");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("bind {addr}: {e}"),
        }
    };
    let addr = listener.local_addr().unwrap();
    let (stop, rx) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(okd_assisted_service::serve(state, listener, async {
        let _ = rx.await;
    }));
    Svc { addr, stop, task }
}

/// The keys of every service of this test process (authentication on, as
/// a user gets it; a restarted service keeps its keys).
fn keys() -> Arc<okd_assisted_service::auth::Keys> {
    static KEYS: std::sync::OnceLock<Arc<okd_assisted_service::auth::Keys>> =
        std::sync::OnceLock::new();
    KEYS.get_or_init(|| Arc::new(okd_assisted_service::auth::Keys::generate(None).unwrap()))
        .clone()
}

/// A client with the admin token.
fn user_client() -> reqwest::Client {
    let mut h = reqwest::header::HeaderMap::new();
    h.insert(
        reqwest::header::AUTHORIZATION,
        format!("Bearer {}", keys().admin_token()).parse().unwrap(),
    );
    reqwest::Client::builder()
        .default_headers(h)
        .build()
        .unwrap()
}

impl Svc {
    fn base(&self) -> String {
        format!("http://{}/api/assisted-install/v2", self.addr)
    }

    async fn stop(self) {
        let _ = self.stop.send(());
        timeout(BOUND, self.task)
            .await
            .expect("the service stops")
            .unwrap();
    }
}

async fn infra_env(c: &reqwest::Client, base: &str) -> InfraEnv {
    let r = c
        .post(format!("{base}/infra-envs"))
        .json(&json!({"name": "discovery", "pull_secret": PS}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 201);
    r.json().await.unwrap()
}

/// The host as stored, `None` while unknown.
async fn host(c: &reqwest::Client, base: &str, ie: &str) -> Option<Host> {
    let r = c
        .get(format!("{base}/infra-envs/{ie}/hosts/{HOST_ID}"))
        .send()
        .await
        .ok()?;
    if !r.status().is_success() {
        return None;
    }
    r.json().await.ok()
}

/// Polls the host until `pred` holds (at most [`BOUND`]).
async fn wait_host(
    c: &reqwest::Client,
    base: &str,
    ie: &str,
    what: &str,
    pred: impl Fn(&Host) -> bool,
) -> Host {
    let waited = timeout(BOUND, async {
        loop {
            if let Some(h) = host(c, base, ie).await
                && pred(&h)
            {
                return h;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
    match waited {
        Ok(h) => h,
        Err(_) => panic!(
            "waiting for {what}: host is {:?}",
            host(c, base, ie).await.map(|h| (h.status, h.checked_in_at))
        ),
    }
}

fn stored_inventory(h: &Host) -> Option<Inventory> {
    serde_json::from_str(&h.inventory).ok()
}

fn rfc3339(s: &str) -> time::OffsetDateTime {
    time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339)
        .unwrap_or_else(|e| panic!("{s:?}: {e}"))
}

// ---- the made-up machine

/// A machine under `dir`: 4 CPUs, 16 GiB, a 120 GB disk, one NIC; its host
/// name in `/proc/sys/kernel/hostname` unless `hostname` is `None` (the
/// caller puts something else there).
fn machine(dir: &Path, hostname: Option<&str>) -> Root {
    let cpuinfo: String = (0..4)
        .map(|i| {
            format!(
                "processor\t: {i}\nmodel name\t: Made-up CPU\ncpu MHz\t\t: 2400.000\nflags\t\t: fpu vmx hypervisor\n\n"
            )
        })
        .collect();
    let mut files = vec![
        ("/proc/cpuinfo", cpuinfo),
        ("/proc/meminfo", "MemTotal:       16777216 kB\n".to_string()),
        ("/proc/cmdline", "BOOT_IMAGE=/vmlinuz ip=dhcp\n".to_string()),
        ("/sys/class/dmi/id/product_uuid", format!("{HOST_ID}\n")),
        ("/sys/class/dmi/id/sys_vendor", "Red Hat\n".to_string()),
        ("/sys/class/dmi/id/product_name", "KVM\n".to_string()),
        // 120 GB in 512-byte sectors.
        ("/sys/block/vda/size", "234375000\n".to_string()),
        ("/sys/block/vda/queue/rotational", "1\n".to_string()),
        ("/sys/block/vda/removable", "0\n".to_string()),
        ("/sys/block/vda/ro", "0\n".to_string()),
        ("/sys/class/net/ens3/device/vendor", "0x1af4\n".to_string()),
        (
            "/sys/class/net/ens3/address",
            "52:54:00:aa:00:02\n".to_string(),
        ),
        ("/sys/class/net/ens3/mtu", "1500\n".to_string()),
        ("/sys/class/net/ens3/carrier", "1\n".to_string()),
        ("/sys/class/net/ens3/flags", "0x1003\n".to_string()),
        ("/sys/class/net/ens3/operstate", "up\n".to_string()),
    ];
    if let Some(h) = hostname {
        files.push(("/proc/sys/kernel/hostname", format!("{h}\n")));
    }
    for (p, text) in files {
        let path = dir.join(p.trim_start_matches('/'));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    Root(dir.to_path_buf())
}

fn check_machine(inv: &Inventory, hostname: &str) {
    assert_eq!(inv.hostname, hostname);
    assert_eq!(inv.cpu.count, 4);
    assert_eq!(inv.memory.usable_bytes, 16 << 30);
    assert_eq!(inv.system_vendor.manufacturer, "Red Hat");
    assert_eq!(
        inv.disks
            .iter()
            .map(|d| (d.name.as_str(), d.size_bytes))
            .collect::<Vec<_>>(),
        [("vda", 120_000_000_000)]
    );
    assert_eq!(
        inv.interfaces
            .iter()
            .map(|i| (i.name.as_str(), i.mac_address.as_str()))
            .collect::<Vec<_>>(),
        [("ens3", "52:54:00:aa:00:02")]
    );
}

// ---- the agent

struct Agent {
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<Result<(), AgentError>>,
}

fn agent(svc: &Svc, ie: &str, root: Root) -> Agent {
    let mut cfg = AgentConfig::new(format!("http://{}", svc.addr), ie);
    cfg.token = Some(keys().agent_token(ie, 0));
    // The agent's own workings over plain HTTP on loopback; TLS: below
    // and in the end-to-end tests.
    cfg.allow_http = true;
    cfg.state_dir = root.0.join("var/lib/okd-assisted-agent");
    cfg.root = root;
    cfg.agent_version = "test-agent".into();
    cfg.interval = Duration::from_millis(500);
    let (stop, rx) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(runner::run(cfg, async {
        let _ = rx.await;
    }));
    Agent { stop, task }
}

impl Agent {
    async fn stop(self) {
        let _ = self.stop.send(());
        timeout(BOUND, self.task)
            .await
            .expect("the agent stops")
            .unwrap()
            .expect("the agent ends with Ok on stop");
    }
}

// ---- the agent's log lines

/// Log lines of this crate written by the tests' thread (the tests run on
/// a current-thread runtime, so the agent's and the service's tasks run
/// there too).
#[derive(Clone, Default)]
struct Logs(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Logs {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Logs {
    type Writer = Logs;
    fn make_writer(&'a self) -> Logs {
        self.clone()
    }
}

impl Logs {
    fn capture() -> (Logs, tracing::subscriber::DefaultGuard) {
        let logs = Logs::default();
        let sub = tracing_subscriber::fmt()
            .with_writer(logs.clone())
            .with_ansi(false)
            .with_env_filter(tracing_subscriber::EnvFilter::new(
                "okd_assisted_agent=debug",
            ))
            .finish();
        (logs.clone(), tracing::subscriber::set_default(sub))
    }

    /// The lines containing every one of `words`.
    fn lines(&self, words: &[&str]) -> Vec<String> {
        String::from_utf8_lossy(&self.0.lock().unwrap())
            .lines()
            .filter(|l| words.iter().all(|w| l.contains(w)))
            .map(str::to_string)
            .collect()
    }
}

/// The `cause=` field of a log line.
fn cause(line: &str) -> &str {
    line.split_once("cause=")
        .map(|(_, c)| c.split(" retry_in_s=").next().unwrap_or(c))
        .unwrap_or("")
}

// ---- the tests

#[tokio::test]
async fn a_made_up_machine_registers_and_its_inventory_is_stored() {
    let (logs, _guard) = Logs::capture();
    let dir = tempfile::tempdir().unwrap();
    let m = tempfile::tempdir().unwrap();
    let svc = start(dir.path(), "127.0.0.1:0".parse().unwrap()).await;
    let c = user_client();
    let base = svc.base();
    let ie = infra_env(&c, &base).await;
    let a = agent(&svc, &ie.id, machine(m.path(), Some("made-up-1")));

    let first = wait_host(&c, &base, &ie.id, "the inventory", |h| {
        stored_inventory(h).is_some()
    })
    .await;
    let h = first.clone();
    check_machine(&stored_inventory(&h).unwrap(), "made-up-1");
    assert_eq!(h.discovery_agent_version, "test-agent");
    assert!(!h.checked_in_at.is_empty());
    // The monitor takes the inventory: the host leaves discovering.
    let h = wait_host(&c, &base, &ie.id, "the monitor's verdict", |h| {
        h.status != "discovering-unbound"
    })
    .await;
    assert!(h.status.ends_with("-unbound"), "{}", h.status);
    assert!(logs.lines(&["WARN", "polling"]).is_empty());

    // The service forgets the host (404 on the next poll): the agent
    // registers again and reports its inventory anew.
    let r = c
        .delete(format!("{base}/infra-envs/{}/hosts/{HOST_ID}", ie.id))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 204);
    let again = wait_host(&c, &base, &ie.id, "the host registered again", |h| {
        stored_inventory(h).is_some() && h.registered_at != first.registered_at
    })
    .await;
    check_machine(&stored_inventory(&again).unwrap(), "made-up-1");

    a.stop().await;
    svc.stop().await;
    let reg = logs.lines(&["INFO", "register: registered ", HOST_ID]);
    assert_eq!(reg.len(), 2, "{reg:#?}");
    // The deleted host's token was revoked with it: the agent registered
    // again with the discovery token.
    let fallback = logs.lines(&["INFO", "host token was refused", "revoked"]);
    assert_eq!(fallback.len(), 1, "{fallback:#?}");
    assert!(reg[0].contains("status=discovering-unbound"), "{}", reg[0]);
    assert_eq!(
        logs.lines(&["WARN", "does not know this host"]).len(),
        1,
        "one 404, one registration"
    );
}

#[tokio::test]
async fn a_refused_registration_is_logged_with_the_reason_and_retried_slowly() {
    let (logs, _guard) = Logs::capture();
    let dir = tempfile::tempdir().unwrap();
    let m = tempfile::tempdir().unwrap();
    let svc = start(dir.path(), "127.0.0.1:0".parse().unwrap()).await;
    let ie = "0b5d7c1e-0000-4000-8000-000000000000";
    let a = agent(&svc, ie, machine(m.path(), Some("made-up-0")));
    timeout(BOUND, async {
        while logs.lines(&["WARN", "refuses to register"]).is_empty() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("the refusal is logged");
    // The stop signal ends the slow wait at once.
    a.stop().await;
    svc.stop().await;
    let refused = logs.lines(&["WARN", "refuses to register"]);
    assert_eq!(refused.len(), 1, "{refused:#?}");
    assert!(
        refused[0].contains(&format!("HTTP 404 Not Found: infra-env {ie} not found")),
        "{}",
        refused[0]
    );
    assert!(refused[0].contains("retry_in_s=60"), "{}", refused[0]);
}

#[tokio::test]
async fn the_service_restarted_on_the_same_database_and_port() {
    let (logs, _guard) = Logs::capture();
    let dir = tempfile::tempdir().unwrap();
    let m = tempfile::tempdir().unwrap();
    let svc = start(dir.path(), "127.0.0.1:0".parse().unwrap()).await;
    let addr = svc.addr;
    let c = user_client();
    let base = svc.base();
    let ie = infra_env(&c, &base).await;
    let a = agent(&svc, &ie.id, machine(m.path(), Some("made-up-2")));
    let before = wait_host(&c, &base, &ie.id, "the inventory", |h| {
        stored_inventory(h).is_some()
    })
    .await;

    // Mid-discovery, the service goes away for a while: polls fail and
    // are retried after 1, 2, 4 s.
    svc.stop().await;
    timeout(BOUND, async {
        while logs
            .lines(&["DEBUG", "polling for the next steps failed again"])
            .is_empty()
        {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("the agent retries its polls");
    let restarted = time::OffsetDateTime::now_utc();
    let svc = start(dir.path(), addr).await;
    assert_eq!(svc.addr, addr);

    let after = wait_host(&c, &base, &ie.id, "a poll after the restart", |h| {
        !h.checked_in_at.is_empty() && rfc3339(&h.checked_in_at) > rfc3339(&before.checked_in_at)
    })
    .await;
    assert!(rfc3339(&after.checked_in_at) >= restarted);
    check_machine(&stored_inventory(&after).unwrap(), "made-up-2");
    // The host was not registered again: its registration stands.
    assert_eq!(after.registered_at, before.registered_at);
    // Recovery is logged once.
    timeout(BOUND, async {
        while logs
            .lines(&["INFO", "polling for the next steps succeeds again"])
            .is_empty()
        {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("the recovery is logged");
    a.stop().await;
    svc.stop().await;

    let url = format!(
        "http://{addr}/api/assisted-install/v2/infra-envs/{}/hosts/{HOST_ID}/instructions",
        ie.id
    );
    let warned = logs.lines(&["WARN", "polling for the next steps failed", &url]);
    let retried = logs.lines(&["DEBUG", "polling for the next steps failed again"]);
    assert!(!warned.is_empty(), "a warning names the URL and the cause");
    assert!(
        warned
            .iter()
            .any(|l| cause(l).contains("Connection refused")),
        "{warned:#?}"
    );
    // One warning per cause in a row, not one per retry.
    for w in warned.windows(2) {
        assert_ne!(cause(&w[0]), cause(&w[1]), "{warned:#?}");
    }
    assert!(!retried.is_empty());
    assert_eq!(logs.lines(&["INFO", "registered", HOST_ID]).len(), 1);
}

/// Writes `text` into the FIFO at `path` from a thread of its own (a
/// writer's open waits for a reader; a plain thread never holds the
/// runtime's shutdown up); `true` once written.
async fn feed(path: &Path, text: &str) -> bool {
    let (path, text) = (path.to_path_buf(), text.to_string());
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let _ = tx.send(std::fs::write(path, text).is_ok());
    });
    timeout(BOUND, rx).await.is_ok_and(|r| r.unwrap_or(false))
}

#[tokio::test]
async fn a_reply_that_found_the_service_away_is_kept_and_lands() {
    let (logs, _guard) = Logs::capture();
    let dir = tempfile::tempdir().unwrap();
    let m = tempfile::tempdir().unwrap();
    // The host name is a FIFO: gathering the inventory waits in it until
    // the test writes, so the reply can be held back until the service is
    // gone.
    let root = machine(m.path(), None);
    let fifo = root.join("/proc/sys/kernel/hostname");
    std::fs::create_dir_all(fifo.parent().unwrap()).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());

    let svc = start(dir.path(), "127.0.0.1:0".parse().unwrap()).await;
    let addr = svc.addr;
    let c = user_client();
    let base = svc.base();
    let ie = infra_env(&c, &base).await;
    let a = agent(&svc, &ie.id, root);
    // The agent polled: its inventory step now waits in the FIFO.
    let polled = wait_host(&c, &base, &ie.id, "the first poll", |h| {
        !h.checked_in_at.is_empty()
    })
    .await;
    assert!(stored_inventory(&polled).is_none());
    svc.stop().await;

    // The step ends with the service away: its reply is refused a
    // connection and kept.
    assert!(
        feed(&fifo, "held-back\n").await,
        "the agent reads its host name"
    );
    timeout(BOUND, async {
        while logs
            .lines(&["WARN", "sending a step reply failed"])
            .is_empty()
        {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("the failed reply is logged");

    // Back on the same database and port: the kept reply lands. (The
    // inventory steps handed out after the restart wait in the FIFO, so
    // the stored inventory can only be the kept reply's.)
    let svc = start(dir.path(), addr).await;
    let h = wait_host(&c, &base, &ie.id, "the kept inventory", |h| {
        stored_inventory(h).is_some()
    })
    .await;
    check_machine(&stored_inventory(&h).unwrap(), "held-back");
    assert_eq!(h.registered_at, polled.registered_at, "no new registration");
    let delivered = logs.lines(&[
        "INFO",
        "step reply delivered after retries",
        "step_type=inventory",
    ]);
    assert_eq!(delivered.len(), 1, "{delivered:#?}");
    let warned = logs.lines(&["WARN", "sending a step reply failed"]);
    assert!(
        warned.iter().all(|l| cause(l).contains("connect")),
        "{warned:#?}"
    );

    // Release the inventory step handed out after the restart (its thread
    // would hold the runtime's shutdown up), and put a plain file in the
    // FIFO's place for the steps after it.
    wait_host(&c, &base, &ie.id, "a poll after the restart", |h| {
        rfc3339(&h.checked_in_at) > rfc3339(&polled.checked_in_at)
    })
    .await;
    assert!(
        feed(&fifo, "released\n").await,
        "the next inventory step reads"
    );
    let plain = m.path().join("hostname");
    std::fs::write(&plain, "released\n").unwrap();
    std::fs::rename(&plain, &fifo).unwrap();
    a.stop().await;
    svc.stop().await;
}

/// The service as a user starts it, in-process: its own CA and serving
/// certificate (`okd_assisted_service::tls`), authentication on; the
/// agent verifies it with the CA the discovery Ignition carries, and
/// refuses it without that CA, with another service's CA, and over plain
/// HTTP unless told.
#[tokio::test]
async fn over_https_with_the_service_ca() {
    let (logs, _guard) = Logs::capture();
    let dir = tempfile::tempdir().unwrap();
    let other = tempfile::tempdir().unwrap();
    let m = tempfile::tempdir().unwrap();
    let loopback = [std::net::IpAddr::from([127, 0, 0, 1])];
    let tls = okd_assisted_service::tls::Tls::load_or_create(dir.path(), &[], &loopback).unwrap();
    let ca_file = tls.ca_file.clone().unwrap();
    let other_ca = okd_assisted_service::tls::Tls::load_or_create(other.path(), &[], &loopback)
        .unwrap()
        .ca_file
        .unwrap();
    let mut opts = Options::new(
        okd_assisted_service::sqlite_url(dir.path()),
        "127.0.0.1:0".parse().unwrap(),
    );
    opts.next_instruction_seconds = 1;
    opts.check_interval_seconds = 1;
    opts.auth = Some(keys());
    opts.tls = Some(Arc::new(tls));
    let state = okd_assisted_service::open(opts).await.unwrap();
    let listener = okd_listen::Listener::bind(
        "127.0.0.1:0".parse().unwrap(),
        okd_listen::Limits::default(),
    )
    .await
    .unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, rx) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(okd_assisted_service::serve(state, listener, async {
        let _ = rx.await;
    }));
    let mut h = reqwest::header::HeaderMap::new();
    h.insert(
        reqwest::header::AUTHORIZATION,
        format!("Bearer {}", keys().admin_token()).parse().unwrap(),
    );
    let c = reqwest::Client::builder()
        .default_headers(h)
        .tls_certs_only(
            reqwest::Certificate::from_pem_bundle(&std::fs::read(&ca_file).unwrap()).unwrap(),
        )
        .build()
        .unwrap();
    let base = format!("https://{addr}/api/assisted-install/v2");
    let ie = infra_env(&c, &base).await;
    // The discovery Ignition: an https URL, the CA as a file, --cacert.
    let ign: serde_json::Value = c
        .get(format!(
            "{base}/infra-envs/{}/downloads/files?file_name=discovery.ign",
            ie.id
        ))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let unit = ign["systemd"]["units"][0]["contents"].as_str().unwrap();
    assert!(
        unit.contains(&format!("--url https://{addr} ")) && unit.contains("--cacert /etc/"),
        "{unit}"
    );
    let file = &ign["storage"]["files"][0];
    assert_eq!(file["path"], okd_assisted_service::api::DISCOVERY_CA_PATH);
    let carried = okd_types::dataurl::decode(file["contents"]["source"].as_str().unwrap()).unwrap();
    assert_eq!(
        carried,
        std::fs::read(&ca_file).unwrap(),
        "the service's CA"
    );
    let token = unit
        .lines()
        .find_map(|l| l.strip_prefix("Environment=PULL_SECRET_TOKEN="))
        .unwrap()
        .to_string();

    let root = machine(m.path(), Some("made-up-tls"));
    let start_agent = |url: String, ca: Option<&Path>| {
        let mut cfg = AgentConfig::new(url, &ie.id);
        cfg.root = root.clone();
        cfg.interval = Duration::from_millis(500);
        cfg.ca_cert = ca.map(Path::to_path_buf);
        cfg.token = Some(token.clone());
        cfg.state_dir = root.0.join("var/lib/okd-assisted-agent");
        let (stop, rx) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(runner::run(cfg, async {
            let _ = rx.await;
        }));
        Agent { stop, task }
    };
    // Plain HTTP is refused before anything is sent.
    let a = start_agent(format!("http://{addr}"), None);
    let ended = timeout(BOUND, a.task).await.unwrap().unwrap();
    assert!(
        matches!(&ended, Err(AgentError::Url { reason, .. }) if reason.contains("--insecure-http")),
        "{ended:?}"
    );
    drop(a.stop);

    // Without the CA (the system roots), and with another service's CA,
    // the service's certificate is not trusted.
    for (n, ca) in [(1, None), (2, Some(other_ca.as_path()))] {
        let a = start_agent(format!("https://{addr}"), ca);
        timeout(BOUND, async {
            while logs.lines(&["WARN", "registration failed"]).len() < n {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
        .await
        .expect("the failure is logged");
        a.stop().await;
        let failed = logs.lines(&["WARN", "registration failed"]);
        assert!(
            failed[n - 1].to_lowercase().contains("certificate"),
            "{}",
            failed[n - 1]
        );
    }
    assert!(host(&c, &base, &ie.id).await.is_none());

    // With it, the host registers and reports.
    let a = start_agent(format!("https://{addr}"), Some(&ca_file));
    let h = wait_host(&c, &base, &ie.id, "the inventory over https", |h| {
        stored_inventory(h).is_some()
    })
    .await;
    check_machine(&stored_inventory(&h).unwrap(), "made-up-tls");
    a.stop().await;
    let _ = stop.send(());
    timeout(BOUND, server).await.unwrap().unwrap();
}
