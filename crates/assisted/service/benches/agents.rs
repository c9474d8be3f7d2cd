//! Benchmark (issue #24): 5,000 simulated discovery agents polling their
//! next steps every 10 s against one assisted service on this machine,
//! on SQLite and on PostgreSQL, beside a peer run in the same run.
//!
//! - the service runs as a separate process (this binary re-executed with
//!   `OKD_BENCH_AGENTS_CHILD=service`: `okd_assisted_service::open` and
//!   `serve` on 127.0.0.1, `next_instruction_seconds` 10, the default
//!   check interval (60 s: the periodic checks once a minute per host,
//!   `okd_assisted_service::cadence`) and 8 s monitor interval, a two-worker runtime as `okd-install`'s), so its CPU
//!   time and memory are read from `/proc/<pid>/stat` and `status`; as
//!   `okd-install assisted serve` runs with no flags (issue #41): TLS with
//!   the service's own CA and authentication on (the secrets made once by
//!   this process in a temporary directory, `OKD_BENCH_AGENTS_SECRETS`);
//!   every agent registers with the discovery token and then polls and
//!   replies with its own host token, which the service checks on every
//!   call;
//! - setup: one cluster (3 masters, API and ingress VIPs, base domain) and
//!   an infra-env bound to it; the agents' hosts registered, then each
//!   answers its first inventory step (a ~3 KB inventory: 8 CPUs, 16 GiB,
//!   two disks, two interfaces, routes), so the monitor works on real
//!   inventories (validations and role suggestion over every host); the
//!   setup waits until the hosts are `known`;
//! - load: every agent polls `GET …/hosts/{id}/instructions` and answers
//!   every step it is handed (`inventory`, `ntp-synchronizer`,
//!   `domain-resolution`, `verify-vips`; a cluster of 5,000 hosts is over
//!   the connectivity-check limit, `network::MAX_CONNECTIVITY_HOSTS`) with
//!   `POST …/instructions`, then waits the `next_instruction_seconds` the
//!   service gave, as the agent does; first polls spread evenly over the
//!   first 10 s; a warm-up, then the measured steady window. Tokio tasks
//!   (one thread; 48 per source address 127.0.0.10, .11, …) share a
//!   reqwest client per address (keep-alive pool): each takes the agent
//!   due next. Poll latency counts from when the poll was
//!   due, as an agent on its own connection sees it: a wait for a free
//!   connection (every task busy while the service stalls) is counted,
//!   not hidden; "lag" is that wait, "sent p99" the latency from sending.
//!   Reply latency counts from sending;
//! - the peer ("HTTP floor"): there is no assisted-service (Go) here, so
//!   the peer is a bare axum server in the same child mode
//!   (`OKD_BENCH_AGENTS_CHILD=peer`) on the same HTTP stack
//!   (`okd_listen::serve_router`, over the same TLS) answering the same two routes with a
//!   fixed steps document (an inventory and an ntp-synchronizer step) and
//!   204: no database, no logic — what HTTP and JSON cost on this machine,
//!   under the same load from the same generator. Each row's p99 is also
//!   given as a multiple of the floor's.
//!
//! After each database run the monitor pass over every host is timed in a
//! fresh child process (`OKD_BENCH_AGENTS_CHILD=monitor`) on the same
//! database with the service stopped, with that process's memory, and
//! split into reading the hosts, parsing their inventories, the lists of
//! the other hosts' names and the validations, to show where the time and
//! memory go.
//!
//! Run: `bench/assisted-agents.sh` (or `cargo bench -p okd-assisted-service
//! --bench agents`). Environment: `OKD_BENCH_AGENTS` (agents, 5000),
//! `OKD_BENCH_AGENTS_SECS` (steady window, 60), `OKD_BENCH_AGENTS_WARMUP`
//! (s, 20), `OKD_BENCH_AGENTS_CONNS` (generator tasks = connections at
//! most, 192: 48 from each of the source addresses 127.0.0.10, .11, …,
//! under the service's 64 connections per client address),
//! `OKD_BENCH_AGENTS_SERVICE_WORKERS` (the service's tokio workers, 2 as
//! `okd-install`'s runtime).
//! PostgreSQL: Debian's `postgresql` (skipped with the reason when
//! missing). Traffic only to 127.0.0.1; every child is killed by PID when
//! the run ends, also on a panic, and exits by itself when this process
//! goes (its stdin closes).

use std::collections::BinaryHeap;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use okd_assisted_api::rest::{Step, Steps};
use okd_assisted_api::{Boot, Cpu, Disk, Eligibility, Interface, Inventory, Memory, Route};
use okd_assisted_service::validate::{self, HostContext, HostFacts};
use serde_json::{Value, json};

const CHILD_ENV: &str = "OKD_BENCH_AGENTS_CHILD";
const DB_ENV: &str = "OKD_BENCH_AGENTS_DB";
/// The directory of the service's secrets (admin token, agent-signing key,
/// CA), made by the parent, read by every child.
const SECRETS_ENV: &str = "OKD_BENCH_AGENTS_SECRETS";

/// What the generator knows as a user and as the agents do: the admin
/// token, the agent-signing keys (to make the discovery token the
/// discovery Ignition carries) and the service's CA.
struct Creds {
    keys: okd_assisted_service::auth::Keys,
    ca: Vec<u8>,
    /// The secrets directory (the children's `OKD_BENCH_AGENTS_SECRETS`).
    dir: std::path::PathBuf,
}

static CREDS: std::sync::OnceLock<Creds> = std::sync::OnceLock::new();

fn creds() -> &'static Creds {
    CREDS.get().expect("the parent's credentials")
}

/// The service's keys and TLS from the secrets directory, as
/// `okd-install assisted serve` makes them with no flags.
fn secrets(
    dir: &std::path::Path,
) -> (
    okd_assisted_service::auth::Keys,
    okd_assisted_service::tls::Tls,
) {
    let keys = okd_assisted_service::auth::Keys::load_or_create(dir, None).expect("the keys");
    let tls =
        okd_assisted_service::tls::Tls::load_or_create(dir, &[], &["127.0.0.1".parse().unwrap()])
            .expect("the TLS");
    (keys, tls)
}

/// The credentials a request carries.
#[derive(Clone, Copy)]
enum As<'a> {
    /// The admin token (`Authorization: Bearer`).
    Admin,
    /// An agent token (`X-Secret-Key`).
    Agent(&'a str),
}
const PS: &str = r#"{"auths":{"fake":{"auth":"aWQ6cGFzcwo="}}}"#;
const BASE: &str = okd_assisted_api::rest::BASE_PATH;
const INTERVAL_S: u64 = 10;
/// The goals of the issue.
const GOAL_P99_MS: f64 = 50.0;
const GOAL_MIB: f64 = 100.0;

fn env_num(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    match std::env::var(CHILD_ENV).as_deref() {
        Ok("service") => child(false),
        Ok("peer") => child(true),
        Ok("monitor") => monitor_child(),
        _ => parent(),
    }
}

// ---- the child: the service or the peer, alone in its process

fn child(peer: bool) {
    // The parent holds our stdin: when it goes (ends, panics, is killed),
    // so do we.
    std::thread::spawn(|| {
        let mut buf = [0u8; 64];
        while matches!(std::io::stdin().read(&mut buf), Ok(n) if n > 0) {}
        std::process::exit(0);
    });
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(env_num("OKD_BENCH_AGENTS_SERVICE_WORKERS", 2).max(1) as usize)
        .enable_all()
        .build()
        .expect("runtime");
    let dir = std::path::PathBuf::from(std::env::var(SECRETS_ENV).expect("the secrets directory"));
    let (keys, tls) = secrets(&dir);
    rt.block_on(async move {
        let listener = okd_listen::Listener::bind(
            "127.0.0.1:0".parse().unwrap(),
            okd_listen::Limits::default(),
        )
        .await
        .expect("bind 127.0.0.1:0");
        let port = listener.local_addr().unwrap().port();
        if peer {
            println!("port {port}");
            std::io::stdout().flush().unwrap();
            okd_listen::serve_router(
                listener,
                peer_routes(),
                Some(tls.server.clone()),
                std::future::pending(),
            )
            .await;
        } else {
            let url = std::env::var(DB_ENV).expect("the database URL");
            let mut opts = okd_assisted_service::Options::new(url, listener.local_addr().unwrap());
            opts.next_instruction_seconds = INTERVAL_S;
            // As `okd-install assisted serve` runs with no flags.
            opts.auth = Some(Arc::new(keys));
            opts.tls = Some(Arc::new(tls));
            let state = okd_assisted_service::open(opts).await.expect("open");
            println!("port {port}");
            std::io::stdout().flush().unwrap();
            okd_assisted_service::serve(state, listener, std::future::pending()).await;
        }
    });
}

/// The HTTP floor: the two next-step routes, a fixed steps document and
/// 204, nothing else.
fn peer_routes() -> axum::Router {
    use axum::body::Bytes;
    use axum::http::{StatusCode, header};
    use axum::routing::get;
    let steps = Steps {
        next_instruction_seconds: INTERVAL_S,
        post_step_action: "continue".into(),
        instructions: vec![
            Step {
                step_type: "inventory".into(),
                step_id: "inventory-0badcafe".into(),
                args: vec!["00000000-0000-4000-8000-000000000000".into()],
            },
            Step {
                step_type: "ntp-synchronizer".into(),
                step_id: "ntp-synchronizer-0badcafe".into(),
                args: vec![json!({ "ntp_source": "" }).to_string()],
            },
        ],
    };
    let doc = Bytes::from(serde_json::to_vec(&steps).unwrap());
    axum::Router::new().route(
        &format!("{BASE}/infra-envs/{{ie}}/hosts/{{id}}/instructions"),
        get(move || {
            let doc = doc.clone();
            async move { ([(header::CONTENT_TYPE, "application/json")], doc) }
        })
        .post(|_body: Bytes| async { StatusCode::NO_CONTENT }),
    )
}

/// A child process, killed by PID when dropped.
struct ChildGuard {
    child: Child,
    pid: u32,
    port: u16,
}

impl ChildGuard {
    fn spawn(mode: &str, db: Option<&str>) -> ChildGuard {
        let mut cmd = Command::new(std::env::current_exe().expect("this binary"));
        cmd.env(CHILD_ENV, mode)
            .env(SECRETS_ENV, &creds().dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        if let Some(db) = db {
            cmd.env(DB_ENV, db);
        }
        let mut child = cmd.spawn().expect("start the child");
        let pid = child.id();
        let mut line = String::new();
        let read = BufReader::new(child.stdout.take().unwrap()).read_line(&mut line);
        let port = line
            .trim()
            .strip_prefix("port ")
            .and_then(|p| p.parse().ok());
        let mut g = ChildGuard {
            child,
            pid,
            port: 0,
        };
        match (read, port) {
            (Ok(_), Some(p)) => g.port = p,
            _ => panic!("the {mode} child did not print its port (got {line:?})"),
        }
        g
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// ---- /proc

fn clk_tck() -> f64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
        .unwrap_or(100.0)
}

/// Fields after the command name of `/proc/<pid>/stat` (index 0: state).
fn stat_fields(pid: &str) -> Option<Vec<u64>> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &s[s.rfind(')')? + 2..];
    Some(
        rest.split_whitespace()
            .map(|f| f.parse().unwrap_or(0))
            .collect(),
    )
}

/// utime + stime of a process, clock ticks.
fn cpu_ticks(pid: &str) -> u64 {
    stat_fields(pid).map(|f| f[11] + f[12]).unwrap_or(0)
}

/// A `VmRSS`-style line of `/proc/<pid>/status`, MiB.
fn status_mib(pid: u32, key: &str) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map(|kb| kb / 1024.0)
        .unwrap_or(f64::NAN)
}

/// Resets the peak RSS (`VmHWM`) of `pid` to its current RSS.
fn reset_peak(pid: u32) {
    let _ = std::fs::write(format!("/proc/{pid}/clear_refs"), "5");
}

/// The PostgreSQL server listening on `port`: the postmaster and its
/// children's CPU, ticks (reaped children included through cutime).
fn postgres_ticks(port: u16) -> u64 {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return 0;
    };
    let pids: Vec<String> = dir
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|p| p.bytes().all(|b| b.is_ascii_digit()))
        .collect();
    let needle = format!("\0-p\0{port}\0");
    let Some(master) = pids.iter().find(|p| {
        std::fs::read(format!("/proc/{p}/cmdline"))
            .map(|c| String::from_utf8_lossy(&c).contains(&needle))
            .unwrap_or(false)
            && std::fs::read_to_string(format!("/proc/{p}/comm"))
                .is_ok_and(|c| c.trim() == "postgres")
    }) else {
        return 0;
    };
    let mpid: u64 = master.parse().unwrap_or(0);
    let mut total = stat_fields(master)
        .map(|f| f[11] + f[12] + f[13] + f[14])
        .unwrap_or(0);
    for p in &pids {
        if let Some(f) = stat_fields(p)
            && f[1] == mpid
        {
            total += f[11] + f[12];
        }
    }
    total
}

// ---- the simulated hosts

fn host_id(i: usize) -> String {
    format!("00000000-0000-4000-8000-{i:012x}")
}

/// Host `i`: 8 CPUs, 16 GiB, a 120 GB and a 500 GB disk, two interfaces
/// (10.0.0.0/16 and a second network), routes: about 3 KB of JSON.
fn inventory(i: usize) -> Inventory {
    let mac = |n: usize| {
        format!(
            "52:54:{n:02x}:{:02x}:{:02x}:{:02x}",
            i >> 16,
            (i >> 8) & 255,
            i & 255
        )
    };
    let flags = "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr sse sse2 ss syscall nx pdpe1gb rdtscp lm constant_tsc arch_perfmon rep_good nopl xtopology cpuid tsc_known_freq pni pclmulqdq vmx ssse3 fma cx16 pdcm pcid sse4_1 sse4_2 x2apic movbe popcnt tsc_deadline_timer aes xsave avx f16c rdrand hypervisor lahf_lm abm 3dnowprefetch cpuid_fault invpcid_single ssbd ibrs ibpb stibp ibrs_enhanced tpr_shadow vnmi flexpriority ept vpid ept_ad fsgsbase tsc_adjust bmi1 avx2 smep bmi2 erms invpcid mpx avx512f avx512dq rdseed adx smap clflushopt clwb avx512cd avx512bw avx512vl xsaveopt xsavec xgetbv1 xsaves arat umip pku ospke md_clear arch_capabilities";
    let disk = |n: usize, name: &str, size: u64, bootable: bool| Disk {
        id: format!("/dev/disk/by-path/pci-0000:00:0{n}.0"),
        name: name.into(),
        path: format!("/dev/{name}"),
        by_id: format!("/dev/disk/by-id/virtio-bench{i:05}{n}"),
        by_path: format!("/dev/disk/by-path/pci-0000:00:0{n}.0"),
        drive_type: "HDD".into(),
        size_bytes: size,
        bootable,
        model: "QEMU HARDDISK".into(),
        vendor: "0x1af4".into(),
        serial: format!("bench{i:05}{n}"),
        installation_eligibility: Eligibility {
            eligible: true,
            not_eligible_reasons: vec![],
        },
        ..Default::default()
    };
    Inventory {
        hostname: format!("host-{i:05}"),
        cpu: Cpu {
            count: 8,
            frequency: 2400.0,
            model_name: "Intel Xeon Processor (Icelake)".into(),
            architecture: "x86_64".into(),
            flags: flags.split(' ').map(str::to_string).collect(),
        },
        memory: Memory {
            physical_bytes: 16 << 30,
            usable_bytes: (16 << 30) - (300 << 20),
            physical_bytes_method: "dmidecode".into(),
        },
        boot: Boot {
            current_boot_mode: "uefi".into(),
            command_line: "BOOT_IMAGE=(hd0,gpt3)/ostree/fedora-coreos/vmlinuz rw ignition.platform.id=metal console=ttyS0".into(),
            pxe_interface: String::new(),
        },
        system_vendor: okd_assisted_api::SystemVendor {
            manufacturer: "QEMU".into(),
            product_name: "Standard PC (Q35 + ICH9, 2009)".into(),
            serial_number: format!("bench-{i:05}"),
            r#virtual: true,
        },
        tpm_version: "none".into(),
        disks: vec![
            disk(4, "vda", 120_000_000_000, true),
            disk(5, "vdb", 500_000_000_000, false),
        ],
        interfaces: vec![
            Interface {
                name: "ens3".into(),
                mac_address: mac(0),
                ipv4_addresses: vec![format!("10.0.{}.{}/16", i / 250, i % 250 + 1)],
                mtu: 1500,
                speed_mbps: 10000,
                has_carrier: true,
                kind: "physical".into(),
                vendor: "0x1af4".into(),
                product: "0x0001".into(),
                flags: vec!["up".into(), "broadcast".into(), "multicast".into()],
                ..Default::default()
            },
            Interface {
                name: "ens4".into(),
                mac_address: mac(1),
                ipv4_addresses: vec![format!("172.16.{}.{}/16", i / 250, i % 250 + 1)],
                mtu: 9000,
                speed_mbps: 25000,
                has_carrier: true,
                kind: "physical".into(),
                vendor: "0x1af4".into(),
                product: "0x0001".into(),
                flags: vec!["up".into(), "broadcast".into(), "multicast".into()],
                ..Default::default()
            },
        ],
        routes: vec![
            Route {
                interface: "ens3".into(),
                gateway: "10.0.255.1".into(),
                destination: "0.0.0.0".into(),
                family: 2,
                metric: 100,
            },
            Route {
                interface: "ens3".into(),
                gateway: String::new(),
                destination: "10.0.0.0".into(),
                family: 2,
                metric: 100,
            },
            Route {
                interface: "ens4".into(),
                gateway: String::new(),
                destination: "172.16.0.0".into(),
                family: 2,
                metric: 101,
            },
        ],
    }
}

/// One agent: its instructions URL, its inventory as the JSON string
/// literal a reply's `output` carries, and its host token.
struct Agent {
    url: String,
    inventory_literal: String,
    token: String,
}

/// The agents of `ie`, with the host tokens their registrations returned
/// (`tokens[i]`; empty for the floor, which checks none).
fn agents(base: &str, ie: &str, tokens: &[String]) -> Vec<Agent> {
    tokens
        .iter()
        .enumerate()
        .map(|(i, token)| {
            let inv = serde_json::to_string(&inventory(i)).unwrap();
            Agent {
                url: format!("{base}/infra-envs/{ie}/hosts/{}/instructions", host_id(i)),
                inventory_literal: serde_json::to_string(&inv).unwrap(),
                token: token.clone(),
            }
        })
        .collect()
}

fn reply_body(a: &Agent, st: &Step) -> Option<String> {
    let output = match st.step_type.as_str() {
        "inventory" => a.inventory_literal.clone(),
        t => serde_json::to_string(&okd_test_utils::assisted::healthy_output(t, &st.args, "")?)
            .unwrap(),
    };
    Some(format!(
        r#"{{"step_type":{},"step_id":{},"exit_code":0,"output":{output}}}"#,
        serde_json::to_string(&st.step_type).unwrap(),
        serde_json::to_string(&st.step_id).unwrap(),
    ))
}

fn now_s() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// Generator connections per source address: under the service's 64
/// connections per client address (okd-listen's `max_per_client`).
const CONNS_PER_ADDRESS: usize = 48;

/// The generator's client for worker `k` of `conns`: workers are spread
/// over source addresses 127.0.0.10, .11, … ([`CONNS_PER_ADDRESS`] each),
/// as agents come from many hosts.
fn clients(conns: usize) -> Vec<reqwest::Client> {
    (0..conns.div_ceil(CONNS_PER_ADDRESS))
        .map(|k| {
            let from = std::net::Ipv4Addr::new(127, 0, 0, 10 + k as u8);
            client_from(CONNS_PER_ADDRESS, Some(from.into()))
        })
        .collect()
}

fn client(conns: usize) -> reqwest::Client {
    client_from(conns, None)
}

fn client_from(conns: usize, from: Option<std::net::IpAddr>) -> reqwest::Client {
    reqwest::Client::builder()
        .tls_certs_only(reqwest::Certificate::from_pem_bundle(&creds().ca).expect("the CA"))
        .local_address(from)
        .no_proxy()
        .tcp_nodelay(true)
        .pool_max_idle_per_host(conns)
        // Under the service's keep-alive limit (okd-listen's header_read,
        // 10 s), so an idle connection is never reused as the service
        // closes it.
        .pool_idle_timeout(Duration::from_secs(5))
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap()
}

/// One request: the status and the body (`Err` on a transport failure).
async fn call(
    c: &reqwest::Client,
    who: As<'_>,
    method: reqwest::Method,
    url: &str,
    body: Option<String>,
) -> Result<(u16, Body), String> {
    let mut r = c.request(method, url);
    r = match who {
        As::Admin => r.bearer_auth(creds().keys.admin_token()),
        As::Agent(t) => r.header("X-Secret-Key", t),
    };
    if let Some(b) = body {
        r = r
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(b);
    }
    let resp = r.send().await.map_err(|e| chain(&e))?;
    let code = resp.status().as_u16();
    let b = resp.bytes().await.map_err(|e| chain(&e))?;
    Ok((code, Body(b.to_vec())))
}

/// An error with its causes.
fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(&format!(": {c}"));
        cur = c.source();
    }
    s
}

/// A response body.
struct Body(Vec<u8>);

impl Body {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.0).unwrap_or_else(|_| Value::String(self.text()))
    }
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0).into_owned()
    }
}

/// Runs `f(i)` for `0..n` on `par` tasks, with a progress bar.
async fn each<F, Fut>(what: &str, n: usize, par: usize, f: F)
where
    F: Fn(usize) -> Fut + Clone + 'static,
    Fut: std::future::Future<Output = ()>,
{
    let bar = indicatif::ProgressBar::new(n as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{prefix:>24} [{bar:30}] {pos}/{len} {per_sec} eta {eta}",
        )
        .unwrap()
        .progress_chars("=> "),
    );
    bar.set_prefix(what.to_string());
    let next = Arc::new(AtomicUsize::new(0));
    let local = tokio::task::LocalSet::new();
    for _ in 0..par {
        let (next, bar, f) = (next.clone(), bar.clone(), f.clone());
        local.spawn_local(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    break;
                }
                f(i).await;
                bar.inc(1);
            }
        });
    }
    local.await;
    bar.finish_and_clear();
}

/// The service's setup: cluster, infra-env, `n` hosts registered, each
/// answering its first inventory step, until they are `known`. Returns
/// the infra-env and cluster ids.
async fn setup(base: &str, n: usize) -> (String, String, Vec<String>) {
    let c = client(16);
    let (code, cl) = call(
        &c,
        As::Admin,
        reqwest::Method::POST,
        &format!("{base}/clusters"),
        Some(
            json!({
                "name": "bench", "openshift_version": "4.19", "pull_secret": PS,
                "base_dns_domain": "example.com", "control_plane_count": 3,
                "api_vips": [{"ip": "10.0.255.253"}], "ingress_vips": [{"ip": "10.0.255.254"}]
            })
            .to_string(),
        ),
    )
    .await
    .expect("register the cluster");
    assert_eq!(code, 201, "{}", cl.text());
    let cid = cl.json()["id"].as_str().unwrap().to_string();
    let (code, ie) = call(
        &c,
        As::Admin,
        reqwest::Method::POST,
        &format!("{base}/infra-envs"),
        Some(json!({"name": "bench-ie", "pull_secret": PS, "cluster_id": cid}).to_string()),
    )
    .await
    .expect("register the infra-env");
    assert_eq!(code, 201, "{}", ie.text());
    let ie = ie.json()["id"].as_str().unwrap().to_string();

    let start = Instant::now();
    // Each agent registers with the discovery token its discovery
    // Ignition carries and keeps the host token the service returns.
    let discovery = creds().keys.agent_token(&ie, 0);
    let tokens = Arc::new(Mutex::new(vec![String::new(); n]));
    let reg = {
        let (c, base, ie, tokens) = (c.clone(), base.to_string(), ie.clone(), tokens.clone());
        move |i: usize| {
            let (c, base, ie, tokens, discovery) = (
                c.clone(),
                base.clone(),
                ie.clone(),
                tokens.clone(),
                discovery.clone(),
            );
            async move {
                let (code, b) = call(
                    &c,
                    As::Agent(&discovery),
                    reqwest::Method::POST,
                    &format!("{base}/infra-envs/{ie}/hosts"),
                    Some(json!({"host_id": host_id(i)}).to_string()),
                )
                .await
                .expect("register a host");
                assert_eq!(code, 201, "register host {i}: {}", b.text());
                tokens.lock().unwrap()[i] = b.json()["host_token"]
                    .as_str()
                    .expect("a host token")
                    .to_string();
            }
        }
    };
    each("register hosts", n, 8, reg).await;
    let t_reg = start.elapsed();
    let start = Instant::now();
    let tokens = std::mem::take(&mut *tokens.lock().unwrap());
    let all = Arc::new(agents(base, &ie, &tokens));
    let inv = {
        let (c, all) = (c.clone(), all.clone());
        move |i: usize| {
            let (c, all) = (c.clone(), all.clone());
            async move {
                let a = &all[i];
                let (code, b) = call(
                    &c,
                    As::Agent(&a.token),
                    reqwest::Method::GET,
                    &format!("{}?timestamp={}", a.url, now_s()),
                    None,
                )
                .await
                .expect("poll");
                assert_eq!(code, 200, "poll host {i}: {}", b.text());
                let steps: Steps = serde_json::from_slice(&b.0).expect("steps");
                for st in &steps.instructions {
                    if let Some(body) = reply_body(a, st) {
                        let (code, b) = call(
                            &c,
                            As::Agent(&a.token),
                            reqwest::Method::POST,
                            &a.url,
                            Some(body),
                        )
                        .await
                        .expect("reply");
                        assert_eq!(code, 204, "reply of host {i}: {}", b.text());
                    }
                }
            }
        }
    };
    each("first inventories", n, 8, inv.clone()).await;
    let t_inv = start.elapsed();
    // The monitor's pass with every inventory in suggests the roles; the
    // hosts answer the checks their next polls bring (domain resolution,
    // VIPs), which makes them known.
    let start = Instant::now();
    let deadline = start + Duration::from_secs(240);
    let samples = [0, n / 2, n - 1];
    let mut last = String::new();
    loop {
        let mut known = true;
        for &i in &samples {
            let (_, b) = call(
                &c,
                As::Admin,
                reqwest::Method::GET,
                &format!("{base}/infra-envs/{ie}/hosts/{}", host_id(i)),
                None,
            )
            .await
            .expect("get a host");
            let h = b.json();
            if h["status"] != "known" {
                known = false;
                last = format!("host {i}: {} ({})", h["status"], h["status_info"]);
            }
        }
        if known {
            break;
        }
        if Instant::now() > deadline {
            println!("  hosts not all known after 240 s ({last}); measuring anyway");
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        each("the checks' answers", n, 8, inv.clone()).await;
    }
    println!(
        "  setup: {n} hosts registered in {:.0} s, first inventories answered in {:.0} s, known {:.0} s later",
        t_reg.as_secs_f64(),
        t_inv.as_secs_f64(),
        start.elapsed().as_secs_f64()
    );
    (ie, cid, tokens)
}

// ---- the load

#[derive(Default)]
struct Rec {
    /// Polls, from when they were due (the agent's view).
    get: Vec<u32>,
    /// Polls, from when they were sent.
    get_sent: Vec<u32>,
    post: Vec<u32>,
    lag: Vec<u32>,
    get_err: u64,
    post_err: u64,
    first_errors: Vec<String>,
}

impl Rec {
    fn merge(&mut self, o: Rec) {
        self.get.extend(o.get);
        self.get_sent.extend(o.get_sent);
        self.post.extend(o.post);
        self.lag.extend(o.lag);
        self.get_err += o.get_err;
        self.post_err += o.post_err;
        for e in o.first_errors {
            if self.first_errors.len() < 5 {
                self.first_errors.push(e);
            }
        }
    }
    fn error(&mut self, what: String) {
        if self.first_errors.len() < 5 {
            self.first_errors.push(what);
        }
    }
}

fn us(d: Duration) -> u32 {
    u32::try_from(d.as_micros()).unwrap_or(u32::MAX)
}

/// Nearest-rank percentile of sorted micros, ms.
fn pct(v: &[u32], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let k = ((p / 100.0 * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1;
    f64::from(v[k]) / 1000.0
}

struct Lat {
    count: usize,
    err: u64,
    p50: f64,
    p99: f64,
    max: f64,
}

fn lat(mut v: Vec<u32>, err: u64) -> Lat {
    v.sort_unstable();
    Lat {
        count: v.len(),
        err,
        p50: pct(&v, 50.0),
        p99: pct(&v, 99.0),
        max: v.last().map(|m| f64::from(*m) / 1000.0).unwrap_or(f64::NAN),
    }
}

struct Outcome {
    name: String,
    get: Lat,
    post: Lat,
    get_sent_p99: f64,
    lag_p99: f64,
    lag_max: f64,
    svc_cpu: f64,
    db_cpu: Option<f64>,
    gen_cpu: f64,
    rss_end: f64,
    hwm_window: f64,
    hwm_setup: f64,
    per_second: Vec<f64>,
    rss_per_second: Vec<f64>,
    errors: Vec<String>,
    diag: Vec<String>,
}

struct LoadCfg {
    n: usize,
    conns: usize,
    warmup: Duration,
    window: Duration,
    tck: f64,
}

/// 5,000 agents against `base`; the service is `pid`, its database server
/// (PostgreSQL) on `pg_port`.
async fn load(
    cfg: &LoadCfg,
    name: &str,
    base: &str,
    (ie, tokens): (&str, &[String]),
    pid: u32,
    pg_port: Option<u16>,
) -> Outcome {
    let n = cfg.n;
    let all = Arc::new(agents(base, ie, tokens));
    let cs = clients(cfg.conns);
    let t0 = Instant::now() + Duration::from_millis(200);
    let steady = t0 + cfg.warmup;
    let end = steady + cfg.window;
    let heap: BinaryHeap<std::cmp::Reverse<(Instant, usize)>> = (0..n)
        .map(|i| {
            std::cmp::Reverse((
                t0 + Duration::from_secs(INTERVAL_S).mul_f64(i as f64 / n as f64),
                i,
            ))
        })
        .collect();
    let heap = Arc::new(Mutex::new(heap));
    let local = tokio::task::LocalSet::new();
    let mut workers = Vec::new();
    for k in 0..cfg.conns {
        let c = cs[k / CONNS_PER_ADDRESS].clone();
        let (heap, all) = (heap.clone(), all.clone());
        workers.push(local.spawn_local(async move {
            let mut rec = Rec::default();
            loop {
                let Some(std::cmp::Reverse((due, i))) = heap.lock().unwrap().pop() else {
                    break;
                };
                if due >= end {
                    break;
                }
                tokio::time::sleep_until(due.into()).await;
                let a = &all[i];
                let sent = Instant::now();
                let counted = due >= steady;
                let r = call(
                    &c,
                    As::Agent(&a.token),
                    reqwest::Method::GET,
                    &format!("{}?timestamp={}", a.url, now_s()),
                    None,
                )
                .await;
                let done = Instant::now();
                let mut wait = Duration::from_secs(INTERVAL_S);
                let steps = match r {
                    Ok((200, b)) => match serde_json::from_slice::<Steps>(&b.0) {
                        Ok(s) => Some(s),
                        Err(e) => {
                            rec.error(format!("poll: {e}: {}", b.text()));
                            None
                        }
                    },
                    Ok((code, b)) => {
                        rec.error(format!("poll: {code} {}", b.text()));
                        None
                    }
                    Err(e) => {
                        rec.error(format!("poll: {e}"));
                        None
                    }
                };
                if counted {
                    rec.get.push(us(done - due));
                    rec.get_sent.push(us(done - sent));
                    rec.lag.push(us(sent - due));
                    if steps.is_none() {
                        rec.get_err += 1;
                    }
                }
                if let Some(steps) = steps {
                    wait = Duration::from_secs(steps.next_instruction_seconds);
                    for st in &steps.instructions {
                        let Some(body) = reply_body(a, st) else {
                            continue;
                        };
                        let s = Instant::now();
                        let r = call(
                            &c,
                            As::Agent(&a.token),
                            reqwest::Method::POST,
                            &a.url,
                            Some(body),
                        )
                        .await;
                        let ok = match r {
                            Ok((204, _)) => true,
                            Ok((code, b)) => {
                                rec.error(format!("reply: {code} {}", b.text()));
                                false
                            }
                            Err(e) => {
                                rec.error(format!("reply: {e}"));
                                false
                            }
                        };
                        if s >= steady {
                            rec.post.push(us(s.elapsed()));
                            if !ok {
                                rec.post_err += 1;
                            }
                        }
                    }
                }
                heap.lock()
                    .unwrap()
                    .push(std::cmp::Reverse((Instant::now() + wait, i)));
            }
            rec
        }));
    }
    // The CPU and memory over the steady window, sampled every second.
    let tck = cfg.tck;
    let sampler = local.spawn_local(async move {
        let spid = pid.to_string();
        let me = std::process::id().to_string();
        tokio::time::sleep_until(steady.into()).await;
        let hwm_before = status_mib(pid, "VmHWM");
        reset_peak(pid);
        let start = Instant::now();
        let (s0, g0, d0) = (
            cpu_ticks(&spid),
            cpu_ticks(&me),
            pg_port.map(postgres_ticks),
        );
        let mut per_second = Vec::new();
        let mut rss_per_second = Vec::new();
        let (mut prev, mut prev_t) = (s0, start);
        while Instant::now() + Duration::from_millis(500) < end {
            tokio::time::sleep(Duration::from_secs(1)).await;
            let (now, t) = (cpu_ticks(&spid), Instant::now());
            per_second
                .push((now - prev) as f64 / tck / (t - prev_t).as_secs_f64().max(1e-3) * 100.0);
            (prev, prev_t) = (now, t);
            rss_per_second.push(status_mib(pid, "VmRSS"));
        }
        tokio::time::sleep_until(end.into()).await;
        let secs = start.elapsed().as_secs_f64();
        let pcent = |a: u64, b: u64| (b.saturating_sub(a)) as f64 / tck / secs * 100.0;
        let svc = pcent(s0, cpu_ticks(&spid));
        let generator = pcent(g0, cpu_ticks(&me));
        let db = d0.map(|d0| pcent(d0, pg_port.map(postgres_ticks).unwrap_or(0)));
        let rss = status_mib(pid, "VmRSS");
        let hwm = status_mib(pid, "VmHWM");
        (
            svc,
            generator,
            db,
            rss,
            hwm,
            hwm_before,
            per_second,
            rss_per_second,
        )
    });
    let bar = indicatif::ProgressBar::new((end - Instant::now()).as_secs());
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{prefix:>24} [{bar:30}] {pos}/{len} s (warm-up {msg} s)",
        )
        .unwrap()
        .progress_chars("=> "),
    );
    bar.set_prefix(format!("{name}: load"));
    bar.set_message(cfg.warmup.as_secs().to_string());
    let ticker = {
        let bar = bar.clone();
        local.spawn_local(async move {
            loop {
                tokio::time::sleep(Duration::from_secs(1)).await;
                bar.inc(1);
            }
        })
    };
    let (recs, sampled) = local
        .run_until(async move {
            let mut recs = Rec::default();
            for w in workers {
                recs.merge(w.await.expect("a load task"));
            }
            (recs, sampler.await.expect("the sampler"))
        })
        .await;
    ticker.abort();
    bar.finish_and_clear();
    let (svc_cpu, gen_cpu, db_cpu, rss_end, hwm_window, hwm_setup, per_second, rss_per_second) =
        sampled;
    let mut lags = recs.lag;
    lags.sort_unstable();
    let mut sent = recs.get_sent;
    sent.sort_unstable();
    Outcome {
        name: name.to_string(),
        get: lat(recs.get, recs.get_err),
        post: lat(recs.post, recs.post_err),
        get_sent_p99: pct(&sent, 99.0),
        lag_p99: pct(&lags, 99.0),
        lag_max: lags
            .last()
            .map(|m| f64::from(*m) / 1000.0)
            .unwrap_or(f64::NAN),
        svc_cpu,
        db_cpu,
        gen_cpu,
        rss_end,
        hwm_window,
        hwm_setup,
        per_second,
        rss_per_second,
        errors: recs.first_errors,
        diag: vec![],
    }
}

/// After a run, the state the service left: the cluster's status, its
/// hosts' statuses and roles (from the cluster document).
async fn cluster_summary(base: &str, cid: &str) -> String {
    let c = client(1);
    let t = Instant::now();
    if let Ok((200, b)) = call(
        &c,
        As::Admin,
        reqwest::Method::GET,
        &format!("{base}/clusters/{cid}"),
        None,
    )
    .await
    {
        let cl = b.json();
        let mut by: std::collections::BTreeMap<String, usize> = Default::default();
        let mut roles: std::collections::BTreeMap<String, usize> = Default::default();
        for h in cl["hosts"].as_array().into_iter().flatten() {
            *by.entry(h["status"].as_str().unwrap_or("?").to_string())
                .or_default() += 1;
            let r = match h["role"].as_str() {
                Some("auto-assign") | None => h["suggested_role"].as_str().unwrap_or("?"),
                Some(r) => r,
            };
            *roles.entry(r.to_string()).or_default() += 1;
        }
        return format!(
            "cluster {} ({}); hosts {by:?}; roles {roles:?}; the cluster document: {:.1} MB in {:.0} ms",
            cl["status"].as_str().unwrap_or("?"),
            cl["status_info"].as_str().unwrap_or(""),
            b.0.len() as f64 / 1e6,
            t.elapsed().as_secs_f64() * 1000.0
        );
    }
    "the cluster document could not be read".into()
}

/// The monitor timing child: [`monitor_timing`] on the database given,
/// printed.
fn monitor_child() {
    let url = std::env::var(DB_ENV).expect("the database URL");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    println!("{}", rt.block_on(monitor_timing(&url)));
}

/// The monitor pass over every host, timed in a fresh process with the
/// service stopped (its memory too), and its parts.
async fn monitor_timing(db_url: &str) -> String {
    let db = match okd_assisted_service::db::Db::open(db_url, 16).await {
        Ok(db) => db,
        Err(e) => return format!("monitor timing: {e}"),
    };
    let mut passes = Vec::new();
    let mut updated = Vec::new();
    let me = std::process::id();
    let opened = status_mib(me, "VmRSS");
    let peers = okd_assisted_service::network::PeerCache::default();
    let scans = okd_assisted_service::free_addresses::ScanCache::default();
    let args = okd_assisted_service::network::ClusterArgsCache::default();
    for _ in 0..3 {
        let t = Instant::now();
        match okd_assisted_service::monitor::pass(&db, &peers, &scans, &args).await {
            Ok(s) => updated.push(s.updated),
            Err(e) => return format!("monitor pass: {e}"),
        }
        passes.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    let (after, peak) = (status_mib(me, "VmRSS"), status_mib(me, "VmHWM"));
    let Ok(clusters) = db.clusters().await else {
        return "monitor timing: no clusters".into();
    };
    let Some(c) = clusters.first() else {
        return "monitor timing: no clusters".into();
    };
    let t = Instant::now();
    let hosts = db.hosts_of_cluster(&c.id).await.unwrap_or_default();
    let t_read = t.elapsed();
    let bytes: usize = hosts
        .iter()
        .map(|h| h.inventory.len() + h.validations_info.len() + h.steps.len() + h.ntp_sources.len())
        .sum();
    let t = Instant::now();
    let invs: Vec<Option<Inventory>> = hosts
        .iter()
        .map(|h| serde_json::from_str(&h.inventory).ok())
        .collect();
    let t_parse = t.elapsed();
    let params = okd_assisted_service::model::cluster_params(c);
    let present: Vec<&Inventory> = invs.iter().flatten().collect();
    let nets = validate::machine_networks(&params, &present);
    let names: Vec<String> = hosts
        .iter()
        .zip(&invs)
        .map(|(h, i)| validate::hostname(&h.requested_hostname, i.as_ref()))
        .collect();
    // As the monitor does: the host names counted once, then each host's
    // validations.
    let t = Instant::now();
    let mut counts: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for n in names.iter().filter(|n| !n.is_empty()) {
        *counts.entry(n.clone()).or_default() += 1;
    }
    let others_total = counts.len();
    let t_others = t.elapsed();
    let t = Instant::now();
    let now = okd_assisted_service::db::now_ms();
    let majority = okd_assisted_service::network::Majority::Disabled(String::new());
    let roles: std::collections::HashMap<&str, &str> = hosts
        .iter()
        .map(|h| (h.id.as_str(), h.suggested_role.as_str()))
        .collect();
    let mut vjson = 0usize;
    for (i, h) in hosts.iter().enumerate() {
        let ctx = HostContext {
            cluster: &params,
            machine_networks: &nets,
            hostname_counts: &counts,
            cluster_name: &c.name,
            majority: &majority,
            roles: &roles,
            now_ms: now,
        };
        let facts = HostFacts {
            id: &h.id,
            inventory: invs[i].as_ref(),
            role: if h.suggested_role.is_empty() {
                "worker"
            } else {
                &h.suggested_role
            },
            requested_hostname: &h.requested_hostname,
            checked_in_at: h.checked_in_at,
            host_timestamp: h.host_timestamp,
            ntp_sources: &h.ntp_sources,
            domain_resolutions: &h.domain_name_resolutions,
            disk_speed: &h.disk_speed,
            connectivity: &h.connectivity,
        };
        vjson += validate::host_validations(&facts, &ctx).to_json().len();
    }
    let t_valid = t.elapsed();
    db.close().await;
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    format!(
        "monitor pass over {} hosts (service stopped; a fresh process, two tokio workers): {:.0} / {:.0} / {:.0} ms, hosts updated {:?}; RSS {:.0} MiB with the database open, {:.0} MiB after three passes (peak {:.0} MiB); of which reading the hosts {:.0} ms ({:.1} MB of inventories, validations, steps), parsing the inventories {:.0} ms, counting the host names ({} distinct) {:.0} ms, the validations {:.0} ms ({:.1} MB of validations JSON)",
        hosts.len(),
        passes[0],
        passes[1],
        passes[2],
        updated,
        opened,
        after,
        peak,
        ms(t_read),
        bytes as f64 / 1e6,
        ms(t_parse),
        others_total,
        ms(t_others),
        ms(t_valid),
        vjson as f64 / 1e6,
    )
}

// ---- the run

fn run_one(
    rt: &tokio::runtime::Runtime,
    cfg: &LoadCfg,
    name: &str,
    db_url: Option<&str>,
    pg_port: Option<u16>,
) -> Outcome {
    let mode = if db_url.is_some() { "service" } else { "peer" };
    let child = ChildGuard::spawn(mode, db_url);
    let base = format!("https://127.0.0.1:{}{BASE}", child.port);
    println!(
        "{name}: child PID {} on 127.0.0.1:{}",
        child.pid, child.port
    );
    let (ie, cid, tokens) = match db_url {
        Some(_) => rt.block_on(setup(&base, cfg.n)),
        None => (
            "00000000-0000-4000-8000-0000000000ee".into(),
            String::new(),
            vec![String::new(); cfg.n],
        ),
    };
    let mut o = rt.block_on(load(cfg, name, &base, (&ie, &tokens), child.pid, pg_port));
    if let Some(url) = db_url {
        o.diag.push(rt.block_on(cluster_summary(&base, &cid)));
        // The monitor pass timed with the service gone.
        drop(child);
        let out = Command::new(std::env::current_exe().expect("this binary"))
            .env(CHILD_ENV, "monitor")
            .env(DB_ENV, url)
            .stdin(Stdio::null())
            .stderr(Stdio::inherit())
            .output()
            .expect("run the monitor timing");
        o.diag
            .push(String::from_utf8_lossy(&out.stdout).trim().to_string());
    }
    o
}

fn parent() {
    let cfg = LoadCfg {
        n: env_num("OKD_BENCH_AGENTS", 5000).max(3) as usize,
        conns: env_num("OKD_BENCH_AGENTS_CONNS", 192).max(1) as usize,
        warmup: Duration::from_secs(env_num("OKD_BENCH_AGENTS_WARMUP", 20)),
        window: Duration::from_secs(env_num("OKD_BENCH_AGENTS_SECS", 60).max(1)),
        tck: clk_tck(),
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    println!(
        "assisted service under {} agents polling every {INTERVAL_S} s ({} cores here); warm-up {} s, steady window {} s; generator: one thread, {} tasks/connections",
        cfg.n,
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        cfg.warmup.as_secs(),
        cfg.window.as_secs(),
        cfg.conns
    );
    // The service's secrets, as `okd-install assisted serve` makes them on
    // its first start; every child reads them.
    let secrets_dir = tempfile::tempdir().expect("temporary directory");
    let (keys, tls) = secrets(secrets_dir.path());
    let ca = tls.ca_pem.clone().expect("the service's CA").into_bytes();
    let dir = secrets_dir.path().to_path_buf();
    if CREDS.set(Creds { keys, ca, dir }).is_err() {
        unreachable!("set once");
    }
    let started = Instant::now();
    let mut rows = Vec::new();
    rows.push(run_one(&rt, &cfg, "HTTP floor (peer)", None, None));
    let dir = tempfile::tempdir().expect("temporary directory");
    let url = okd_assisted_service::sqlite_url(dir.path());
    rows.push(run_one(&rt, &cfg, "SQLite", Some(&url), None));
    let mut skipped = None;
    match okd_test_utils::postgres::Postgres::start() {
        Some(pg) => {
            rows.push(run_one(
                &rt,
                &cfg,
                "PostgreSQL",
                Some(&pg.url),
                Some(pg.port),
            ));
            drop(pg);
        }
        None => {
            skipped = Some(
                "PostgreSQL row skipped: Debian's postgresql is not installed (/usr/lib/postgresql/<version>/bin)",
            );
        }
    }
    drop(dir);
    print_table(&cfg, &rows, skipped);
    println!("(the whole run: {:.0} s)", started.elapsed().as_secs_f64());
}

fn print_table(cfg: &LoadCfg, rows: &[Outcome], skipped: Option<&str>) {
    let floor = &rows[0];
    println!();
    println!(
        "Assisted service, next-step protocol: {} agents polling every {INTERVAL_S} s, {} s steady window after {} s warm-up, service and load generator on the same {} cores",
        cfg.n,
        cfg.window.as_secs(),
        cfg.warmup.as_secs(),
        std::thread::available_parallelism().map_or(0, |n| n.get()),
    );
    println!(
        "Peer = \"HTTP floor\": a bare axum server on the same HTTP stack (okd-listen) answering the same two routes with a fixed steps document and 204 (no database, no logic), in its own process under the same load; there is no assisted-service (Go) here to compare with. \"x floor\" = the row's p99 / the floor's p99."
    );
    println!(
        "Polls: from when the poll was due to the last byte of the response, as an agent on its own connection sees it (the wait for a free generator connection or the timer included: \"lag\"; \"sent p99\": from sending). Replies: from sending."
    );
    println!();
    println!(
        "{:<18} | {:>39} | {:>39} | {:>25}",
        "", "polls: GET …/instructions", "replies: POST …/instructions", "polls: detail"
    );
    println!(
        "{:<18} | {:>6} {:>4} {:>6} {:>6} {:>6} {:>7} | {:>6} {:>4} {:>6} {:>6} {:>6} {:>7} | {:>8} {:>7} {:>8}",
        "run",
        "count",
        "err",
        "p50",
        "p99",
        "max",
        "x floor",
        "count",
        "err",
        "p50",
        "p99",
        "max",
        "x floor",
        "sent p99",
        "lag p99",
        "lag max"
    );
    for r in rows {
        println!(
            "{:<18} | {:>6} {:>4} {:>6.2} {:>6.2} {:>6.0} {:>6.1}x | {:>6} {:>4} {:>6.2} {:>6.2} {:>6.0} {:>6.1}x | {:>8.2} {:>7.2} {:>8.0}",
            r.name,
            r.get.count,
            r.get.err,
            r.get.p50,
            r.get.p99,
            r.get.max,
            r.get.p99 / floor.get.p99,
            r.post.count,
            r.post.err,
            r.post.p50,
            r.post.p99,
            r.post.max,
            r.post.p99 / floor.post.p99,
            r.get_sent_p99,
            r.lag_p99,
            r.lag_max,
        );
    }
    println!("(latencies in ms)");
    println!();
    println!(
        "{:<18} | {:>12} {:>12} {:>14} | {:>9} {:>12} {:>12}",
        "run",
        "service CPU",
        "DB srv CPU",
        "generator CPU",
        "RSS end",
        "peak window",
        "peak before"
    );
    for r in rows {
        println!(
            "{:<18} | {:>11.1}% {:>12} {:>13.1}% | {:>5.1} MiB {:>8.1} MiB {:>8.1} MiB",
            r.name,
            r.svc_cpu,
            r.db_cpu.map_or("-".to_string(), |d| format!("{d:.1}%")),
            r.gen_cpu,
            r.rss_end,
            r.hwm_window,
            r.hwm_setup,
        );
    }
    println!(
        "(CPU: % of one core over the steady window, user + system; DB srv: the PostgreSQL server's processes; RSS of the service process; peak = VmHWM over the steady window, and before it: setup + warm-up)"
    );
    println!();
    for r in rows {
        let mx = r.per_second.iter().copied().fold(0.0, f64::max);
        println!(
            "{}: service CPU per second (% of a core, max {mx:.0}): {}",
            r.name,
            r.per_second
                .iter()
                .map(|p| format!("{p:.0}"))
                .collect::<Vec<_>>()
                .join(" ")
        );
        println!(
            "{}: service RSS per second (MiB): {}",
            r.name,
            r.rss_per_second
                .iter()
                .map(|p| format!("{p:.0}"))
                .collect::<Vec<_>>()
                .join(" ")
        );
        for d in &r.diag {
            println!("{}: {d}", r.name);
        }
        for e in &r.errors {
            println!("{}: error: {e}", r.name);
        }
    }
    if let Some(s) = skipped {
        println!("{s}");
    }
    println!();
    for r in &rows[1..] {
        let p99 = r.get.p99.max(r.post.p99);
        let mib = r.hwm_window.max(r.rss_end);
        println!(
            "goal {}: p99 < {GOAL_P99_MS} ms: {} (polls {:.2} ms, replies {:.2} ms); service memory < {GOAL_MIB} MiB: {} (RSS {:.1} MiB, peak in the window {:.1} MiB, peak before it {:.1} MiB)",
            r.name,
            if p99 < GOAL_P99_MS { "met" } else { "NOT met" },
            r.get.p99,
            r.post.p99,
            if mib < GOAL_MIB { "met" } else { "NOT met" },
            r.rss_end,
            r.hwm_window,
            r.hwm_setup,
        );
    }
}
