//! The assisted flow end to end in network namespaces (issue #24): the
//! service (`okd-install assisted serve`) on its SQLite default and on
//! Debian's PostgreSQL, four hosts as namespaces each running `okd-install
//! agent` with its own hardware (a made-up `/proc` and `/sys` whose network
//! parts are the namespace's own), one with too little memory. It becomes
//! insufficient with the memory validation's message; the service is
//! killed and started again mid-discovery and the agents carry on; given
//! more memory the host becomes known, roles are assigned (three masters,
//! one worker), the cluster is ready, and install hands every host its
//! Ignition and the install step, which each agent keeps.

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::kube::in_netns;
use common::netns::{self, Lab};
use serde_json::{Value, json};

const SERVICE: &str = "192.168.126.1";
const PS: &str = r#"{"auths":{"fake":{"auth":"aWQ6cGFzcwo="}}}"#;

/// A made-up machine at `root`: CPUs, memory, host name, DMI identity and
/// one 120 GB disk; its `proc/net` and `sys/class/net` are links to the
/// running system's, which `ip netns exec` makes the namespace's own.
///
/// Its `dev/vda` (what the installation disk speed check writes) is the
/// node of a loop device over a file in `disks`, a directory on tmpfs
/// (the agent measures only a block device its inventory reports), so
/// that the check measures memory speed, well under the 10 ms threshold,
/// whatever this machine's disk. The loop device is detached when the
/// returned [`LoopDisk`] is dropped.
fn machine(
    root: &Path,
    disks: &Path,
    hostname: &str,
    uuid: &str,
    cpus: u32,
    mem_gib: u64,
) -> LoopDisk {
    let w = |p: &str, text: String| {
        let path = root.join(p);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    let cpuinfo: String = (0..cpus)
        .map(|i| {
            format!("processor\t: {i}\nmodel name\t: Test CPU\ncpu MHz\t\t: 2400.000\nflags\t\t: fpu vmx\n\n")
        })
        .collect();
    w("proc/cpuinfo", cpuinfo);
    set_memory(root, mem_gib);
    w("proc/sys/kernel/hostname", format!("{hostname}\n"));
    w("proc/cmdline", "BOOT_IMAGE=/vmlinuz console=ttyS0\n".into());
    w("proc/mounts", String::new());
    w("sys/class/dmi/id/product_uuid", format!("{uuid}\n"));
    w("sys/class/dmi/id/sys_vendor", "QEMU\n".into());
    w(
        "sys/class/dmi/id/product_name",
        "Standard PC (Q35 + ICH9, 2009)\n".into(),
    );
    w(
        "sys/block/vda/size",
        format!("{}\n", 120_000_000_000u64 / 512),
    );
    w("sys/block/vda/queue/rotational", "1\n".into());
    w("sys/block/vda/ro", "0\n".into());
    w("sys/block/vda/removable", "0\n".into());
    let dev = disks.join(hostname);
    std::fs::create_dir_all(&dev).unwrap();
    let disk = LoopDisk::attach(&disks.join(format!("{hostname}.img")), &dev.join("vda"));
    std::os::unix::fs::symlink(&dev, root.join("dev")).unwrap();
    std::os::unix::fs::symlink("/proc/net", root.join("proc/net")).unwrap();
    std::fs::create_dir_all(root.join("sys/class")).unwrap();
    std::os::unix::fs::symlink("/sys/class/net", root.join("sys/class/net")).unwrap();
    disk
}

/// A loop device over a 22 MiB file (`losetup`), with a block device
/// node of it elsewhere (`mknod`); detached when dropped, also when the
/// test fails.
struct LoopDisk {
    dev: String,
    backing: PathBuf,
}

impl LoopDisk {
    /// Whether a loop device can be had (`losetup --find` as root).
    fn available() -> bool {
        std::process::Command::new("losetup")
            .arg("--find")
            .output()
            .is_ok_and(|o| o.status.success())
    }

    /// A loop device over a new 22 MiB file `backing`, its node at `node`.
    fn attach(backing: &Path, node: &Path) -> LoopDisk {
        std::fs::File::create(backing)
            .unwrap()
            .set_len(22 * 1024 * 1024)
            .unwrap();
        let out = std::process::Command::new("losetup")
            .args(["--find", "--show"])
            .arg(backing)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "losetup --find --show {}: {}",
            backing.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        let disk = LoopDisk {
            dev: String::from_utf8_lossy(&out.stdout).trim().to_string(),
            backing: backing.to_path_buf(),
        };
        let rdev = std::os::unix::fs::MetadataExt::rdev(&std::fs::metadata(&disk.dev).unwrap());
        // glibc's gnu_dev_major / gnu_dev_minor.
        let major = ((rdev >> 8) & 0xfff) | ((rdev >> 32) & !0xfff);
        let minor = (rdev & 0xff) | ((rdev >> 12) & !0xff);
        let st = std::process::Command::new("mknod")
            .arg(node)
            .args(["b", &major.to_string(), &minor.to_string()])
            .status()
            .unwrap();
        assert!(st.success(), "mknod {} b {major} {minor}", node.display());
        disk
    }
}

impl Drop for LoopDisk {
    fn drop(&mut self) {
        let st = std::process::Command::new("losetup")
            .arg("-d")
            .arg(&self.dev)
            .status();
        if !matches!(st, Ok(s) if s.success()) {
            eprintln!("losetup -d {}: {st:?}", self.dev);
        }
    }
}

fn set_memory(root: &Path, gib: u64) {
    let p = root.join("proc/meminfo");
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    let tmp = root.join("proc/.meminfo");
    std::fs::write(
        &tmp,
        format!(
            "MemTotal:       {} kB\nMemFree:        1024 kB\n",
            gib << 20
        ),
    )
    .unwrap();
    std::fs::rename(tmp, p).unwrap();
}

/// What a user of the service has: its admin token and its CA (both
/// generated by the service on its first start).
#[derive(Clone, Default)]
struct Creds {
    token: String,
    ca: Vec<u8>,
}

/// One request to the service from inside its namespace, over TLS checked
/// with the service's CA, with the admin token (when not empty).
fn api(ns: &str, creds: &Creds, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    let (method, url) = (
        reqwest::Method::from_bytes(method.as_bytes()).unwrap(),
        format!("https://{SERVICE}:8090/api/assisted-install/v2{path}"),
    );
    let tok = creds.token.clone();
    let ca = creds.ca.clone();
    in_netns(ns, move || async move {
        let mut b = reqwest::Client::builder();
        if !ca.is_empty() {
            b = b.tls_certs_only(reqwest::Certificate::from_pem_bundle(&ca).unwrap());
        }
        let c = b.build().unwrap();
        let mut r = c.request(method, &url).timeout(Duration::from_secs(10));
        if !tok.is_empty() {
            r = r.bearer_auth(tok);
        }
        if let Some(b) = body {
            r = r.json(&b);
        }
        match r.send().await {
            Ok(resp) => {
                let code = resp.status().as_u16();
                let text = resp.text().await.unwrap_or_default();
                (
                    code,
                    serde_json::from_str(&text).unwrap_or(Value::String(text)),
                )
            }
            Err(e) => (0, Value::String(e.to_string())),
        }
    })
}

/// Waits (at most `secs`) until `pred` holds for the cluster document.
fn wait_cluster(
    ns: &str,
    tok: &Creds,
    id: &str,
    secs: u64,
    what: &str,
    pred: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let (code, cl) = api(ns, tok, "GET", &format!("/clusters/{id}"), None);
        if code == 200 && pred(&cl) {
            return cl;
        }
        assert!(
            Instant::now() < deadline,
            "waiting {secs} s for {what}: {code} {}",
            serde_json::to_string_pretty(&cl).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// A validation's status and message in a cluster's or host's document.
fn validation(doc: &Value, id: &str) -> (String, String) {
    let v: Value =
        serde_json::from_str(doc["validations_info"].as_str().unwrap_or("")).unwrap_or_default();
    v.as_object()
        .into_iter()
        .flat_map(|o| o.values())
        .filter_map(Value::as_array)
        .flatten()
        .find(|x| x["id"] == id)
        .map(|x| {
            (
                x["status"].as_str().unwrap_or("").to_string(),
                x["message"].as_str().unwrap_or("").to_string(),
            )
        })
        .unwrap_or_default()
}

fn host_named<'a>(cl: &'a Value, name: &str) -> &'a Value {
    cl["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| {
            serde_json::from_str::<Value>(h["inventory"].as_str().unwrap_or(""))
                .is_ok_and(|i| i["hostname"] == name)
        })
        .unwrap_or_else(|| panic!("no host {name} in {cl}"))
}

/// The admin token and CA the service generated on its first start in
/// `dir` (empty until then).
fn creds(dir: &Path) -> Creds {
    let secrets = dir.join("svc/assisted-service");
    Creds {
        token: std::fs::read_to_string(secrets.join("admin-token"))
            .unwrap_or_default()
            .trim()
            .to_string(),
        ca: std::fs::read(secrets.join("ca.crt")).unwrap_or_default(),
    }
}

/// Starts `okd-install assisted serve` as a user does, with no security
/// flags (authentication and TLS on by default); returns its PID and the
/// admin token and CA it generated (the same after a restart).
fn start_service(lab: &mut Lab, dir: &Path, db_url: Option<&str>, log: &Path) -> (u32, Creds) {
    let bin = env!("CARGO_BIN_EXE_okd-install");
    let svc = dir.join("svc").display().to_string();
    let listen = format!("{SERVICE}:8090");
    let mut args = vec![
        "assisted",
        "serve",
        "--dir",
        &svc,
        "--listen",
        &listen,
        "--monitor-interval",
        "1s",
        "--next-instruction-seconds",
        "1",
        "--check-interval-seconds",
        "1",
    ];
    if let Some(u) = db_url {
        args.extend(["--db-url", u]);
    }
    let ns = lab.bastion.ns.clone();
    let pid = lab.spawn(&ns, bin, &args, log);
    let deadline = Instant::now() + Duration::from_secs(30);
    // Unauthenticated calls are refused (once the CA exists to check the
    // service with).
    while api(
        &ns,
        &Creds {
            token: String::new(),
            ..creds(dir)
        },
        "GET",
        "/clusters",
        None,
    )
    .0 != 401
    {
        let alive =
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.contains(") Z "));
        assert!(
            alive,
            "the service exited:\n{}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
        assert!(
            Instant::now() < deadline,
            "the service did not answer within 30 s:\n{}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let tok = creds(dir);
    let (code, body) = api(&ns, &tok, "GET", "/clusters", None);
    assert_eq!(code, 200, "the generated admin token opens the API: {body}");
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(dir.join("svc/assisted-service/admin-token"))
            .unwrap()
            .permissions(),
    );
    assert_eq!(mode & 0o777, 0o600, "the admin token is private");
    (pid, tok)
}

fn scenario(tag: &str, postgres: bool) {
    if !netns::available() {
        return;
    }
    if !LoopDisk::available() {
        eprintln!("SKIPPED: the assisted end-to-end test needs loop devices (losetup --find)");
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    let disks = tempfile::tempdir_in("/dev/shm").unwrap();
    // Detached before the files under `disks` go.
    let mut loops = Vec::new();
    let prefix = format!("oa{}{tag}", std::process::id() % 10000);
    let names = ["master-0", "master-1", "master-2", "worker-0"];
    let nodes: Vec<(String, String)> = (0..4)
        .map(|i| (format!("h{i}"), format!("192.168.126.1{i}")))
        .collect();
    let refs: Vec<(&str, &str)> = nodes
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let mut lab = Lab::new(&prefix, SERVICE, &refs, "example.com");
    let ns = lab.bastion.ns.clone();
    let pg = if postgres {
        match okd_test_utils::postgres::Postgres::start_in_netns(Some(&ns)) {
            Some(pg) => Some(pg),
            None => return,
        }
    } else {
        None
    };
    let db_url = pg.as_ref().map(|p| p.url.clone());
    let svc_log = dir.join("service.log");
    let (svc, tok) = start_service(&mut lab, dir, db_url.as_deref(), &svc_log);

    let (code, cl) = api(
        &ns,
        &tok,
        "POST",
        "/clusters",
        Some(json!({
            "name": "demo", "openshift_version": "4.19", "pull_secret": PS,
            "base_dns_domain": "example.com",
            "api_vips": [{"ip": "192.168.126.253"}], "ingress_vips": [{"ip": "192.168.126.254"}]
        })),
    );
    assert_eq!(code, 201, "{cl}");
    let cid = cl["id"].as_str().unwrap().to_string();
    let (code, ie) = api(
        &ns,
        &tok,
        "POST",
        "/infra-envs",
        Some(json!({
            "name": "demo-ie", "pull_secret": PS, "cluster_id": cid
        })),
    );
    assert_eq!(code, 201, "{ie}");
    let ie = ie["id"].as_str().unwrap().to_string();

    // The discovery Ignition, as a user downloads it: its agent.service
    // names this service and carries the infra-env's discovery token.
    let (code, ign) = api(
        &ns,
        &tok,
        "GET",
        &format!("/infra-envs/{ie}/downloads/files?file_name=discovery.ign"),
        None,
    );
    assert_eq!(code, 200, "{ign}");
    let unit = ign["systemd"]["units"][0]["contents"].as_str().unwrap();
    let discovery_token = unit
        .lines()
        .find_map(|l| l.strip_prefix("Environment=PULL_SECRET_TOKEN="))
        .unwrap()
        .to_string();
    assert!(!discovery_token.is_empty(), "{unit}");
    assert!(
        !unit.contains(&tok.token),
        "no admin token in the discovery Ignition"
    );
    // The agent checks the service with the CA the Ignition carries.
    assert!(
        unit.contains(&format!("--url https://{SERVICE}:8090 ")) && unit.contains("--cacert "),
        "{unit}"
    );
    let ca_file = dir.join("discovery-ca.crt");
    std::fs::write(
        &ca_file,
        okd_types::dataurl::decode(
            ign["storage"]["files"][0]["contents"]["source"]
                .as_str()
                .unwrap(),
        )
        .unwrap(),
    )
    .unwrap();
    let ca_arg = ca_file.display().to_string();

    // Four hosts, each an agent in its namespace with its own hardware;
    // worker-0 has 4 GiB.
    let bin = env!("CARGO_BIN_EXE_okd-install");
    let mut roots = Vec::new();
    let mut states = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let root = dir.join(format!("root-{name}"));
        let mem = if i == 3 { 4 } else { 16 };
        loops.push(machine(
            &root,
            disks.path(),
            name,
            &format!("5e5e5e5e-0000-4000-8000-00000000000{i}"),
            8,
            mem,
        ));
        let state = dir.join(format!("state-{name}"));
        let url = format!("https://{SERVICE}:8090");
        let (r, s) = (root.display().to_string(), state.display().to_string());
        lab.spawn_env(
            &format!("{prefix}-h{i}"),
            bin,
            &[
                "agent",
                "--url",
                &url,
                "--infra-env-id",
                &ie,
                "--root",
                &r,
                "--state-dir",
                &s,
                "--interval",
                "1s",
                "--cacert",
                &ca_arg,
            ],
            &[("PULL_SECRET_TOKEN", &discovery_token)],
            &dir.join(format!("agent-{name}.log")),
        );
        roots.push(root);
        states.push(state);
    }
    let cl = wait_cluster(
        &ns,
        &tok,
        &cid,
        60,
        "worker-0 insufficient for its memory",
        |cl| {
            cl["hosts"].as_array().is_some_and(|h| h.len() == 4)
                && cl["hosts"].as_array().unwrap().iter().any(|h| {
                    h["status"] == "insufficient"
                        && h["status_info"]
                            .as_str()
                            .unwrap_or("")
                            .contains("minimum required RAM")
                })
        },
    );
    let small = host_named(&cl, "worker-0");
    assert!(
        small["status_info"]
            .as_str()
            .unwrap()
            .contains("the minimum required RAM for any role is 8.00 GiB, found only 4.00 GiB"),
        "{small}"
    );
    let inv: Value = serde_json::from_str(small["inventory"].as_str().unwrap()).unwrap();
    let nic = &inv["interfaces"][0];
    assert_eq!(nic["name"], "eth0", "the namespace's own NIC: {inv}");
    assert_eq!(nic["ipv4_addresses"][0], "192.168.126.13/24");
    assert_eq!(inv["cpu"]["count"], 8);
    assert_eq!(inv["disks"][0]["size_bytes"], 120_000_000_000u64);
    assert_eq!(cl["status"], "insufficient");

    // The service killed mid-discovery and started again: nothing lost.
    let (_, before) = api(&ns, &tok, "GET", &format!("/events?cluster_id={cid}"), None);
    let before = before.as_array().unwrap().len();
    lab.kill(svc);
    std::thread::sleep(Duration::from_secs(2));
    let (_svc, tok2) = start_service(&mut lab, dir, db_url.as_deref(), &dir.join("service-2.log"));
    assert!(
        tok.token == tok2.token && tok.ca == tok2.ca,
        "a restarted service keeps its admin token and CA"
    );
    let (_, after) = api(&ns, &tok, "GET", &format!("/events?cluster_id={cid}"), None);
    assert!(
        after.as_array().unwrap().len() >= before,
        "events kept across the restart"
    );

    // More memory: known, roles, ready.
    set_memory(&roots[3], 16);
    let cl = wait_cluster(&ns, &tok, &cid, 60, "ready", |cl| cl["status"] == "ready");
    let hosts = cl["hosts"].as_array().unwrap();
    assert_eq!(
        hosts.len(),
        4,
        "the agents carried on after the restart: {cl}"
    );
    let masters = hosts
        .iter()
        .filter(|h| h["suggested_role"] == "master")
        .count();
    let workers = hosts
        .iter()
        .filter(|h| h["suggested_role"] == "worker")
        .count();
    assert_eq!((masters, workers), (3, 1), "{cl}");
    for h in hosts {
        assert_eq!(h["status"], "known", "{h}");
    }
    assert_eq!(cl["machine_networks"][0]["cidr"], "192.168.126.0/24");
    let (_, ev) = api(&ns, &tok, "GET", &format!("/events?cluster_id={cid}"), None);
    let msgs: Vec<&str> = ev
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["message"].as_str())
        .collect();
    assert!(
        msgs.iter()
            .any(|m| m.starts_with("Host worker-0: updated status from insufficient to known")),
        "{msgs:#?}"
    );

    // The agents checked each other (ARP and ping across the bridge).
    for h in hosts {
        let report: Value =
            serde_json::from_str(h["connectivity"].as_str().unwrap_or("")).unwrap_or_default();
        let remote = report["remote_hosts"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert_eq!(remote.len(), 3, "each host reached the three others: {h}");
        for r in &remote {
            assert_eq!(r["l2_connectivity"][0]["successful"], true, "{r}");
            assert!(
                r["l2_connectivity"][0]["remote_mac"]
                    .as_str()
                    .is_some_and(|m| m.len() == 17),
                "{r}"
            );
            assert_eq!(r["l3_connectivity"][0]["successful"], true, "{r}");
        }
        assert_eq!(validation(h, "belongs-to-majority-group").0, "success");
    }

    // The hosts' ARP scans of their network: the addresses no host heard
    // answer, which leaves out the bastion and every host (a host's own
    // address is never free in its own scan), in address order.
    let free_path = format!("/clusters/{cid}/free_addresses?network=192.168.126.0/24");
    let deadline = Instant::now() + Duration::from_secs(60);
    let free: Vec<String> = loop {
        let (code, list) = api(&ns, &tok, "GET", &free_path, None);
        let list: Vec<String> = serde_json::from_value(list.clone()).unwrap_or_default();
        if code == 200 && list.len() == 254 - 5 {
            break list;
        }
        assert!(
            Instant::now() < deadline,
            "waiting for the hosts' free-addresses scans: {code} {list:?}"
        );
        std::thread::sleep(Duration::from_millis(500));
    };
    for taken in ["192.168.126.1", "192.168.126.10", "192.168.126.13"] {
        assert!(!free.iter().any(|a| a == taken), "{taken} in {free:?}");
    }
    assert_eq!(free[0], "192.168.126.2");
    assert!(free.iter().any(|a| a == "192.168.126.253"), "{free:?}");
    let (code, some) = api(
        &ns,
        &tok,
        "GET",
        &format!("{free_path}&prefix=192.168.126.25&limit=3"),
        None,
    );
    assert_eq!(code, 200, "{some}");
    assert_eq!(
        some,
        serde_json::json!(["192.168.126.25", "192.168.126.250", "192.168.126.251"])
    );
    let (code, err) = api(
        &ns,
        &tok,
        "GET",
        &format!("/clusters/{cid}/free_addresses?network=10.9.0.0/24"),
        None,
    );
    assert_eq!(code, 404, "{err}");
    assert!(
        err["reason"]
            .as_str()
            .unwrap_or("")
            .contains("no host of the cluster has scanned 10.9.0.0/24"),
        "{err}"
    );
    let (code, err) = api(
        &ns,
        &tok,
        "GET",
        &format!("/clusters/{cid}/free_addresses?network=banana"),
        None,
    );
    assert_eq!(code, 400, "{err}");
    // The same through the client command, by the cluster's name; run with
    // the service's --dir, it finds the admin token itself.
    let out = lab
        .cmd(&ns, bin)
        .args([
            "--dir",
            &dir.join("svc").display().to_string(),
            "assisted",
            "free-addresses",
            "--url",
            &format!("https://{SERVICE}:8090"),
            "--cluster",
            "demo",
            "--network",
            "192.168.126.0/24",
            "--limit",
            "2",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "192.168.126.2\n192.168.126.3\n"
    );

    // The API VIP in use (the bastion answers ARP for it): api-vips-valid
    // fails with the address; freed, the cluster is ready again.
    netns::ip(&["-n", &ns, "addr", "add", "192.168.126.253/24", "dev", "br0"]);
    let cl = wait_cluster(&ns, &tok, &cid, 60, "the API VIP found in use", |cl| {
        validation(cl, "api-vips-valid").0 == "failure"
    });
    let (_, msg) = validation(&cl, "api-vips-valid");
    assert!(
        msg.starts_with(
            "API virtual IP 192.168.126.253 is already in use in cidr 192.168.126.0/24"
        ),
        "{msg}"
    );
    assert_ne!(cl["status"], "ready");
    netns::ip(&["-n", &ns, "addr", "del", "192.168.126.253/24", "dev", "br0"]);
    wait_cluster(&ns, &tok, &cid, 60, "ready with the VIP free", |cl| {
        cl["status"] == "ready"
    });

    // DNS through the hosts' own resolver (the bastion's dnsmasq): a
    // wildcard above the cluster's domain that also sends api elsewhere
    // fails both checks; the right records pass.
    if let Some(dnsmasq) = common::tool("dnsmasq", &["/usr/sbin/dnsmasq"]) {
        let dnsmasq = dnsmasq.display().to_string();
        let run = |lab: &mut Lab, tag: &str, records: &[&str]| {
            let pid_file = dir.join(format!("dnsmasq-{tag}.pid")).display().to_string();
            let mut args = vec![
                "-k",
                "-C",
                "/dev/null",
                "--no-resolv",
                "--no-hosts",
                "--bind-interfaces",
                "--listen-address=192.168.126.1",
                "--log-facility=-",
            ];
            let pid_arg = format!("--pid-file={pid_file}");
            args.push(&pid_arg);
            args.extend_from_slice(records);
            lab.spawn(
                &ns,
                &dnsmasq,
                &args,
                &dir.join(format!("dnsmasq-{tag}.log")),
            )
        };
        let bad = run(
            &mut lab,
            "bad",
            &["--address=/demo.example.com/192.168.126.98"],
        );
        let cl = wait_cluster(
            &ns,
            &tok,
            &cid,
            60,
            "the wildcard and the wrong api record found",
            |cl| {
                cl["hosts"].as_array().unwrap().iter().all(|h| {
                    validation(h, "dns-wildcard-not-configured").0 == "failure"
                        && validation(h, "api-domain-name-resolved-correctly").0 == "failure"
                })
            },
        );
        let h = &cl["hosts"][0];
        let (_, api_msg) = validation(h, "api-domain-name-resolved-correctly");
        assert_eq!(
            api_msg,
            "Domain name api.demo.example.com resolves to 192.168.126.98 on the host, not to the cluster's API VIP 192.168.126.253"
        );
        let (_, wild) = validation(h, "dns-wildcard-not-configured");
        assert!(
            wild.starts_with(
                "DNS wildcard configuration was detected for domain *.demo.example.com"
            ),
            "{wild}"
        );
        assert_ne!(cl["status"], "ready");
        lab.kill(bad);
        let good = run(
            &mut lab,
            "good",
            &[
                "--host-record=api.demo.example.com,192.168.126.253",
                "--host-record=api-int.demo.example.com,192.168.126.253",
                "--address=/apps.demo.example.com/192.168.126.254",
            ],
        );
        let cl = wait_cluster(&ns, &tok, &cid, 60, "ready with the right records", |cl| {
            cl["status"] == "ready"
        });
        for h in cl["hosts"].as_array().unwrap() {
            for id in [
                "api-domain-name-resolved-correctly",
                "api-int-domain-name-resolved-correctly",
                "apps-domain-name-resolved-correctly",
                "dns-wildcard-not-configured",
            ] {
                assert_eq!(validation(h, id).0, "success", "{id}: {h}");
            }
            let res: Value =
                serde_json::from_str(h["domain_name_resolutions"].as_str().unwrap()).unwrap();
            assert!(res.to_string().contains("192.168.126.254"), "{res}");
        }
        lab.kill(good);
    }

    // Install: the Ignition and the install step to every host (each
    // measured its installation disk first).
    let (code, body) = api(
        &ns,
        &tok,
        "POST",
        &format!("/clusters/{cid}/actions/install"),
        None,
    );
    assert_eq!(code, 202, "{body}");
    let cl = wait_cluster(
        &ns,
        &tok,
        &cid,
        120,
        "every host's install step accepted",
        |cl| {
            cl["status"] == "installing"
                && cl["hosts"].as_array().unwrap().iter().all(|h| {
                    h["progress"]["progress_info"]
                        .as_str()
                        .unwrap_or("")
                        .contains("install step received")
                })
        },
    );
    for (i, name) in names.iter().enumerate() {
        let h = host_named(&cl, name);
        let measured: Value =
            serde_json::from_str(h["disks_info"].as_str().unwrap_or("")).unwrap_or_default();
        let speed = &measured["/dev/vda"]["disk_speed"];
        assert_eq!(speed["tested"], true, "{h}");
        assert!(speed["speed_ms"].as_i64().is_some_and(|ms| ms <= 10), "{h}");
        // The check wrote its pattern from offset 0 of the loop device.
        let written = std::fs::read(&loops[i].backing).unwrap();
        assert_eq!(written.len(), 22 * 1024 * 1024);
        let pattern: Vec<u8> = (0..2300usize)
            .map(|b| (b as u8).wrapping_mul(31) ^ 0x5a)
            .collect();
        assert_eq!(
            &written[..2300],
            &pattern[..],
            "the check wrote {name}'s disk"
        );
        let ign: Value = serde_json::from_str(
            &std::fs::read_to_string(states[i].join("install/ignition.ign")).unwrap(),
        )
        .unwrap();
        let hn = ign["storage"]["files"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["path"] == "/etc/hostname")
            .unwrap();
        assert_eq!(hn["contents"]["source"], format!("data:,{name}%0A"));
        let req: Value = serde_json::from_str(
            &std::fs::read_to_string(states[i].join("install/install-request.json")).unwrap(),
        )
        .unwrap();
        // Equal hosts: which one the weights make the worker is the
        // cluster's order; the request says the role the service gave.
        let want = if h["bootstrap"] == true {
            "bootstrap".to_string()
        } else {
            h["role"].as_str().unwrap().to_string()
        };
        assert_eq!(req["role"], want.as_str(), "{req}");
        assert_eq!(req["boot_device"], "/dev/vda");
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(states[i].join("install/ignition.ign"))
                .unwrap()
                .permissions(),
        );
        assert_eq!(mode & 0o777, 0o600);
    }
    let boots = cl["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|h| h["bootstrap"] == true)
        .count();
    assert_eq!(boots, 1);

    // Cancelled, every agent uploads its logs (journal, inventory and
    // install request, packed by the agent); the client command fetches
    // them all.
    let (code, body) = api(
        &ns,
        &tok,
        "POST",
        &format!("/clusters/{cid}/actions/cancel"),
        None,
    );
    assert_eq!(code, 202, "{body}");
    wait_cluster(&ns, &tok, &cid, 60, "every host's logs uploaded", |cl| {
        cl["hosts"].as_array().unwrap().iter().all(|h| {
            h["status"] == "cancelled" && !h["logs_collected_at"].as_str().unwrap_or("").is_empty()
        })
    });
    let logs_dir = dir.join("logs");
    let out = lab
        .cmd(&ns, bin)
        .env("OKD_ASSISTED_TOKEN", &tok.token)
        .args([
            "--dir",
            &logs_dir.display().to_string(),
            "assisted",
            "logs",
            "--url",
            &format!("https://{SERVICE}:8090"),
            "--cacert",
            &dir.join("svc/assisted-service/ca.crt")
                .display()
                .to_string(),
            "--cluster",
            "demo",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bundle = logs_dir.join("demo_host_logs.tar");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        bundle.display().to_string()
    );
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&bundle).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600);
    let mut outer = tar::Archive::new(std::fs::File::open(&bundle).unwrap());
    let mut hosts_seen = 0;
    for e in outer.entries().unwrap() {
        let e = e.unwrap();
        let id = e.path().unwrap().display().to_string();
        let id = id.strip_suffix(".tar.gz").unwrap().to_string();
        let mut inner = tar::Archive::new(flate2::read::GzDecoder::new(e));
        let mut files = std::collections::BTreeMap::new();
        for f in inner.entries().unwrap() {
            let mut f = f.unwrap();
            let mut text = String::new();
            std::io::Read::read_to_string(&mut f, &mut text).unwrap();
            files.insert(f.path().unwrap().display().to_string(), text);
        }
        let inv: Value = serde_json::from_str(&files[&format!("{id}/inventory.json")]).unwrap();
        assert!(names.contains(&inv["hostname"].as_str().unwrap()), "{inv}");
        assert!(files[&format!("{id}/agent.txt")].contains(&format!("host id: {id}")));
        assert!(
            files[&format!("{id}/agent.txt")].contains(" install "),
            "the install step is among the last results"
        );
        assert!(files[&format!("{id}/install-request.json")].contains("boot_device"));
        assert!(
            files.contains_key(&format!("{id}/journal.log")),
            "{:?}",
            files.keys()
        );
        hosts_seen += 1;
    }
    assert_eq!(hosts_seen, 4);
    drop(lab);
    drop(pg);
}

#[test]
fn assisted_discovery_and_install_on_sqlite() {
    scenario("s", false);
}

#[test]
fn assisted_discovery_and_install_on_postgresql() {
    scenario("p", true);
}
