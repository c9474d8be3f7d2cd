//! Benchmarks of the cluster commands against the real API server of the
//! kit (not tests: every function here is `#[ignore]`d; run them with
//! `bash bench/cluster.sh`, a release build). Figures printed:
//!
//! - approve-csr: from CSR creation to the approval seen by a watcher,
//!   p50/p99 over 500 CSRs, one at a time and as one burst, beside the
//!   bootstrap node's `approve-csr.sh` loop (every 20 s, `kubectl get csr` +
//!   `kubectl certificate approve`) on the same burst;
//! - API requests per minute while idle: approve-csr --watch beside that
//!   loop, counted in the API server's audit log by user agent;
//! - wait-for bootstrap-complete's requests per minute in the bootstrap
//!   ConfigMap stage, beside openshift-install's documented polling;
//! - the peak resident memory (VmHWM) of approve-csr --watch after 500 CSRs.
//!
//! The load generator runs inside the control plane's network namespace:
//! the test binary runs itself there (`bench_driver`), so the kubeconfigs'
//! names resolve as on a bastion.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::kube::{ControlPlane, With, in_ns};

const AUDIT_POLICY: &str = "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n  omitStages: [ResponseStarted, ResponseComplete, Panic]\n";

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

/// Runs the driver (this binary, in the namespace) in `mode`; returns its
/// latencies in milliseconds.
fn drive(cp: &ControlPlane, mode: &str, count: usize, prefix: &str) -> Vec<f64> {
    let exe = std::env::current_exe().unwrap();
    let out = in_ns(&cp.ns, &exe)
        .args([
            "bench_driver",
            "--ignored",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("OKD_BENCH_DRIVER", mode)
        .env("OKD_BENCH_COUNT", count.to_string())
        .env("OKD_BENCH_PREFIX", prefix)
        .env("OKD_BENCH_KUBECONFIG", cp.auth("kubeconfig-kubelet"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "driver: {text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = text
        .lines()
        .find_map(|l| l.split_once("LATENCIES_MS ").map(|(_, r)| r))
        .unwrap_or_else(|| panic!("no result from the driver:\n{text}"));
    let mut v: Vec<f64> = line.split(',').filter_map(|x| x.parse().ok()).collect();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v
}

/// The audit entries (RequestReceived) whose user agent starts with
/// `agent`, between `from` and `to` (RFC 3339 `requestReceivedTimestamp`).
fn audited(audit: &Path, agent: &str, from: &str, to: &str) -> Vec<serde_json::Value> {
    std::fs::read_to_string(audit)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|e| {
            e["userAgent"]
                .as_str()
                .is_some_and(|u| u.starts_with(agent))
        })
        .filter(|e| {
            let t = e["requestReceivedTimestamp"].as_str().unwrap_or("");
            t >= from && t < to
        })
        .collect()
}

/// How many requests [`audited`] finds.
fn requests(audit: &Path, agent: &str, from: &str, to: &str) -> usize {
    audited(audit, agent, from, to).len()
}

/// The requests of [`audited`] grouped by verb and path.
fn breakdown(audit: &Path, agent: &str, from: &str, to: &str) -> Vec<(String, usize)> {
    let mut m = std::collections::BTreeMap::<String, usize>::new();
    for e in audited(audit, agent, from, to) {
        let uri = e["requestURI"]
            .as_str()
            .unwrap_or("")
            .split('?')
            .next()
            .unwrap_or("")
            .to_string();
        *m.entry(format!("{} {uri}", e["verb"].as_str().unwrap_or("")))
            .or_default() += 1;
    }
    m.into_iter().collect()
}

fn now_rfc3339() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap()
}

/// The approve-csr.sh loop of the bootstrap node (openshift/installer
/// `data/data/bootstrap/files/usr/local/bin/approve-csr.sh`), with
/// kubectl for oc, every `every`.
fn peer_loop(cp: &ControlPlane, every: Duration) -> okd_test_utils::ChildGuard {
    let kc = cp.auth("kubeconfig-loopback");
    let script = format!(
        "while true; do kubectl --kubeconfig {kc} get csr --no-headers | grep Pending | awk '{{print $1}}' | xargs --no-run-if-empty kubectl --kubeconfig {kc} certificate approve >/dev/null; sleep {s}; done",
        kc = kc.display(),
        s = every.as_secs()
    );
    okd_test_utils::ChildGuard(
        in_ns(&cp.ns, "bash")
            .args(["-c", &script])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    )
}

#[test]
#[ignore = "benchmark: bash bench/cluster.sh"]
fn bench_cluster_commands() {
    let dir = common::kube::cluster_dir();
    let scratch = tempfile::tempdir().unwrap();
    let Some(mut cp) = ControlPlane::start(dir.path(), scratch.path(), With::ApiServer) else {
        return;
    };
    // Restart the API server with an audit log.
    let policy = scratch.path().join("audit-policy.yaml");
    std::fs::write(&policy, AUDIT_POLICY).unwrap();
    let audit = scratch.path().join("audit.log");
    cp.kill("kube-apiserver");
    let mut args = cp.apiserver_args();
    args.push(format!("--audit-policy-file={}", policy.display()));
    args.push(format!("--audit-log-path={}", audit.display()));
    let prog = cp.bin().join("kube-apiserver");
    cp.spawn("kube-apiserver", &prog, &args);
    cp.wait_ready();

    let approver = cp
        .okd(&["approve-csr", "--watch", "--node-name-pattern", "bench-*"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = approver.id();
    let mut approver = okd_test_utils::ChildGuard(approver);
    std::thread::sleep(Duration::from_secs(2));

    let n = std::env::var("OKD_BENCH_CSRS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(500);
    let seq = drive(&cp, "sequential", n, "bench-s");
    let burst = drive(&cp, "burst", n, "bench-b");
    let hwm = okd_test_utils::proc_status_kib(pid, "VmHWM");

    // Idle: approve-csr alone for a minute.
    let idle = Duration::from_secs(
        std::env::var("OKD_BENCH_IDLE_SECS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(60),
    );
    let from = now_rfc3339();
    std::thread::sleep(idle);
    let to = now_rfc3339();
    let ours_idle = requests(&audit, "okd-install", &from, &to);
    let _ = approver.0.kill();

    // The peer: approve-csr.sh's loop on the same burst, then idle.
    let mut peer = peer_loop(&cp, Duration::from_secs(20));
    let peer_burst = drive(&cp, "burst-any", n, "bench-p");
    let from = now_rfc3339();
    std::thread::sleep(idle);
    let to = now_rfc3339();
    let peer_idle = requests(&audit, "kubectl", &from, &to);
    let _ = peer.0.kill();

    // wait-for in the bootstrap ConfigMap stage for the same time.
    let mut wait = okd_test_utils::ChildGuard(
        cp.okd(&["wait-for", "bootstrap-complete"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    std::thread::sleep(Duration::from_secs(5));
    let from = now_rfc3339();
    std::thread::sleep(idle);
    let to = now_rfc3339();
    let wait_reqs = requests(&audit, "okd-install", &from, &to);
    let wait_breakdown = breakdown(&audit, "okd-install", &from, &to);
    let _ = wait.0.kill();

    let per_min = |n: usize| n as f64 * 60.0 / idle.as_secs_f64();
    println!(
        "approve-csr, {n} CSRs one at a time: p50 {:.1} ms, p99 {:.1} ms",
        percentile(&seq, 0.5),
        percentile(&seq, 0.99)
    );
    println!(
        "approve-csr, {n} CSRs in one burst: p50 {:.1} ms, p99 {:.1} ms; approve-csr.sh loop (20 s): p50 {:.1} ms, p99 {:.1} ms; ratio of p50s {:.0}x",
        percentile(&burst, 0.5),
        percentile(&burst, 0.99),
        percentile(&peer_burst, 0.5),
        percentile(&peer_burst, 0.99),
        percentile(&peer_burst, 0.5) / percentile(&burst, 0.5)
    );
    println!(
        "idle API requests per minute: approve-csr --watch {:.1}, approve-csr.sh loop {:.1}",
        per_min(ours_idle),
        per_min(peer_idle)
    );
    println!(
        "wait-for bootstrap-complete, ConfigMap stage: {:.1} requests per minute (openshift-install: a List+Watch, re-established every 5-10 min; in its API stage /version every 2 s = 30 per minute, its etcd stage 60 per minute)",
        per_min(wait_reqs)
    );
    for (what, n) in &wait_breakdown {
        println!("    {n:4} {what}");
    }
    println!(
        "approve-csr --watch peak memory (VmHWM) after {} CSRs: {:.1} MiB (target < 30 MiB): {}",
        2 * n,
        hwm as f64 / 1024.0,
        if hwm < 30 * 1024 { "met" } else { "NOT met" }
    );
}

/// The load generator, run by [`bench_cluster_commands`] inside the
/// namespace; does nothing when started any other way.
#[test]
#[ignore = "run by bench_cluster_commands"]
fn bench_driver() {
    let Ok(mode) = std::env::var("OKD_BENCH_DRIVER") else {
        return;
    };
    let count: usize = std::env::var("OKD_BENCH_COUNT").unwrap().parse().unwrap();
    let prefix = std::env::var("OKD_BENCH_PREFIX").unwrap();
    let kc = std::path::PathBuf::from(std::env::var("OKD_BENCH_KUBECONFIG").unwrap());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let lat = rt.block_on(driver(&mode, count, &prefix, &kc));
    let text: Vec<String> = lat.iter().map(|l| format!("{l:.3}")).collect();
    println!("LATENCIES_MS {}", text.join(","));
}

async fn driver(mode: &str, count: usize, prefix: &str, kc: &Path) -> Vec<f64> {
    use futures_util::StreamExt as _;
    use k8s_openapi::api::certificates::v1::{
        CertificateSigningRequest, CertificateSigningRequestSpec,
    };
    use kube::api::{Api, PostParams};
    use kube::runtime::watcher;
    use std::collections::HashMap;

    let cluster = okd_cluster::Cluster::from_kubeconfig(kc).await.unwrap();
    let api: Api<CertificateSigningRequest> = Api::all(cluster.client());
    // Every CSR's PEM first, so key generation is not timed.
    let pems: Vec<(String, Vec<u8>)> = (0..count)
        .map(|i| {
            let name = format!("{prefix}-{i}");
            let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
            let mut params = rcgen::CertificateParams::default();
            let mut dn = rcgen::DistinguishedName::new();
            dn.push(rcgen::DnType::OrganizationName, "system:nodes");
            dn.push(rcgen::DnType::CommonName, format!("system:node:{name}"));
            params.distinguished_name = dn;
            let csr = params.serialize_request(&key).unwrap();
            (name, csr.pem().unwrap().into_bytes())
        })
        .collect();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(String, Instant)>();
    let watch_api = api.clone();
    let pfx = prefix.to_string();
    let watch = tokio::spawn(async move {
        let mut s = std::pin::pin!(watcher::watcher(watch_api, watcher::Config::default()));
        while let Some(ev) = s.next().await {
            if let Ok(watcher::Event::Apply(c) | watcher::Event::InitApply(c)) = ev {
                let name = c.metadata.name.clone().unwrap_or_default();
                let approved = c
                    .status
                    .as_ref()
                    .and_then(|s| s.conditions.as_ref())
                    .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Approved"));
                if approved && name.starts_with(&pfx) {
                    let _ = tx.send((name, Instant::now()));
                }
            }
        }
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    let obj = |name: &str, pem: &[u8]| CertificateSigningRequest {
        metadata: kube::api::ObjectMeta {
            name: Some(name.to_string()),
            ..Default::default()
        },
        spec: CertificateSigningRequestSpec {
            request: k8s_openapi::ByteString(pem.to_vec()),
            signer_name: "kubernetes.io/kube-apiserver-client-kubelet".into(),
            usages: Some(vec!["digital signature".into(), "client auth".into()]),
            ..Default::default()
        },
        status: None,
    };
    let mut created: HashMap<String, Instant> = HashMap::new();
    let mut lat = Vec::new();
    let limit = Duration::from_secs(if mode == "burst-any" { 120 } else { 60 });
    if mode == "sequential" {
        for (name, pem) in &pems {
            let t = Instant::now();
            api.create(&PostParams::default(), &obj(name, pem))
                .await
                .unwrap();
            loop {
                let (n, at) = tokio::time::timeout(limit, rx.recv())
                    .await
                    .unwrap()
                    .unwrap();
                if &n == name {
                    lat.push((at - t).as_secs_f64() * 1000.0);
                    break;
                }
            }
        }
    } else {
        for (name, pem) in &pems {
            created.insert(name.clone(), Instant::now());
            api.create(&PostParams::default(), &obj(name, pem))
                .await
                .unwrap();
        }
        let mut seen = std::collections::HashSet::new();
        while seen.len() < pems.len() {
            let (n, at) = tokio::time::timeout(limit, rx.recv())
                .await
                .unwrap()
                .unwrap();
            if seen.insert(n.clone()) {
                lat.push((at - created[&n]).as_secs_f64() * 1000.0);
            }
        }
    }
    watch.abort();
    let _ = Command::new("true").status();
    lat
}
