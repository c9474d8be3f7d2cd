//! Faults of the served layer, on loopback: a machine-config server backend
//! dies during a run of fetches; a port is already in use.

mod common;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use okd_lb::{Backend, Balance, Frontend, HealthCheck, LoadBalancer};

/// Counts the fetches one machine-config server answered.
#[derive(Default)]
struct Count(Mutex<u32>);

impl okd_mcs::FetchObserver for Count {
    fn fetched(&self, _peer: SocketAddr, _pool: &str, _spec: &str, status: u16) {
        if status == 200 {
            *self.0.lock().unwrap() += 1;
        }
    }
}

/// The root CA of a pointer config, written to `out`.
fn root_ca(pointer: &Path, out: &Path) {
    let ign = read_ign(pointer);
    let src = ign["ignition"]["security"]["tls"]["certificateAuthorities"][0]["source"]
        .as_str()
        .unwrap();
    std::fs::write(out, decode_data_url(src)).unwrap();
}

/// One fetch of `/config/master` as a node does it: name api-int, TLS
/// verified with the root CA, through the balancer. Returns the HTTP status
/// (0 when the transfer failed).
fn fetch(curl: &Path, ca: &Path, lb: SocketAddr) -> u16 {
    let out = std::process::Command::new(curl)
        .args([
            "-s",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            "--max-time",
            "5",
        ])
        .arg("--cacert")
        .arg(ca)
        .arg("--resolve")
        .arg(format!("api-int.okd.example:{}:127.0.0.1", lb.port()))
        .arg(format!(
            "https://api-int.okd.example:{}/config/master",
            lb.port()
        ))
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_machine_config_server_loses_no_fetch() {
    let Some(curl) = tool("curl", &["/usr/bin/curl"]) else {
        return;
    };
    let d = example_dir("baremetal-single-master");
    okd_ok(d.path(), &["create", "ignition-configs"]);
    let ca = d.path().join("root-ca.crt");
    root_ca(&d.path().join("master.ign"), &ca);
    let state = Arc::new(okd_mcs::McsState::from_asset_dir(d.path()).unwrap());

    // Two machine-config servers behind one balancer, checked like the
    // guides' HAProxy (`GET /healthz` over TLS), every 300 ms, DOWN after 2.
    let interval = Duration::from_millis(300);
    let mut servers = Vec::new();
    let mut backends = Vec::new();
    for name in ["mcs-a", "mcs-b"] {
        let l = okd_mcs::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let addr = l.local_addr().unwrap();
        let count = Arc::new(Count::default());
        let task = tokio::spawn(okd_mcs::serve_tls(
            l,
            state.clone(),
            Some(count.clone()),
            std::future::pending(),
        ));
        servers.push((name, Some(task), count));
        backends.push(Backend::new(name, addr));
    }
    let fe = Frontend {
        name: "machine-config".into(),
        bind: "127.0.0.1:0".parse().unwrap(),
        backends,
        check: HealthCheck::https_get("/healthz")
            .every(interval, interval)
            .rise_fall(1, 2),
        balance: Balance::RoundRobin,
        limits: okd_lb::Limits::default(),
    };
    let lb = LoadBalancer::start(vec![fe]).await.unwrap();
    let addr = lb.local_addr("machine-config").unwrap();

    let run = |n: usize| {
        let (curl, ca) = (curl.clone(), ca.clone());
        tokio::task::spawn_blocking(move || {
            (0..n).map(|_| fetch(&curl, &ca, addr)).collect::<Vec<_>>()
        })
    };
    let before = run(20).await.unwrap();
    assert!(before.iter().all(|s| *s == 200), "{before:?}");
    assert!(
        servers.iter().all(|(_, _, c)| *c.0.lock().unwrap() > 0),
        "round robin reached both servers"
    );

    // Kill mcs-a (its listener and connections go away at once) while fetching.
    let victim = servers[0].1.take().unwrap();
    victim.abort();
    let _ = victim.await;
    let killed = Instant::now();
    let victim_count = *servers[0].2.0.lock().unwrap();
    let during = run(10).await.unwrap();
    while killed.elapsed() < 2 * interval {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let after = run(40).await.unwrap();
    let failed: Vec<_> = during.iter().chain(&after).filter(|s| **s != 200).collect();
    assert!(
        failed.is_empty(),
        "fetches lost: {failed:?} (during {during:?}, after {after:?})"
    );
    assert_eq!(
        *servers[0].2.0.lock().unwrap(),
        victim_count,
        "the dead server answered"
    );
    assert_eq!(lb.is_up("machine-config", "mcs-a"), Some(false));
    assert_eq!(lb.is_up("machine-config", "mcs-b"), Some(true));
    lb.shutdown().await;
}

/// A serve whose HTTP port is taken stops at start with an error naming the
/// address and port, and leaves no control socket behind.
#[test]
fn port_in_use_is_named() {
    let d = example_dir("baremetal-single-master");
    okd_ok(d.path(), &["create", "ignition-configs"]);
    let ex = repo().join("examples/baremetal-single-master");
    std::fs::copy(
        ex.join("agent-config.yaml"),
        d.path().join("agent-config.yaml"),
    )
    .unwrap();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    // The bastion on loopback, every other port free (0 = any).
    let bastion = std::fs::read_to_string(ex.join("bastion-config.yaml"))
        .unwrap()
        .replace("listenAddress: 192.168.120.101", "listenAddress: 127.0.0.1")
        .replace("  - 8.8.8.8\n", "")
        .replace("upstreamResolvers:\n", "upstreamResolvers: []\n")
        + &format!(
            "ports:\n  api: 0\n  machineConfig: 0\n  http: {port}\n  ingressHttp: 0\n  ingressHttps: 0\n  dns: 0\n  status: 0\n  machineConfigServer: 0\n"
        );
    std::fs::write(d.path().join("bastion-config.yaml"), bastion).unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_okd-install"))
        .args(["serve", "--dir"])
        .arg(d.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if start.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("serve kept running with its HTTP port taken");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert!(!status.success(), "serve started on a taken port: {err}");
    assert!(
        err.contains(&format!("127.0.0.1:{port}")) && err.contains("address already in use"),
        "{err}"
    );
    assert!(!d.path().join(".okd-serve.sock").exists());
    drop(taken);
}
