//! `create cluster`, `destroy cluster` and their refusals from the command
//! line, on the repository's kcli-style example through libvirt's test
//! driver (the README's command).

use std::path::Path;
use std::process::{Command, Output};

fn okd(args: &[&str], home: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_okd-install"))
        .args(args)
        .env("HOME", home)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("okd-install runs")
}

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr)
}

fn example() -> String {
    format!(
        "{}/../../examples/kcli-libvirt/parameters.yml",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// Runs the README's test-driver `create cluster` on the example into
/// `<tmp>/c` with a fixed SSH key and `extra` arguments; the directory and
/// the output.
fn create_example(tmp: &Path, extra: &[&str]) -> (std::path::PathBuf, Output) {
    std::fs::write(
        tmp.join("id.pub"),
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOkd test\n",
    )
    .unwrap();
    let dir = tmp.join("c");
    let example = example();
    let pub_key = format!("pub_key={}/id.pub", tmp.display());
    let mut args = vec![
        "create",
        "cluster",
        "--dir",
        dir.to_str().unwrap(),
        "--paramfile",
        &example,
        "--libvirt-uri",
        "test:///default",
        "--pool",
        "default-pool",
        "-P",
        "version=upstream",
        "-P",
        &pub_key,
        "-P",
        "image=",
        "-P",
        "disk_size=10",
    ];
    args.extend(extra);
    let out = okd(&args, tmp);
    (dir, out)
}

#[test]
fn the_readme_example_makes_and_removes_its_vms() {
    if okd_test_utils::tool("virsh", &[], Some("libvirt-clients")).is_none() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let key = tmp.path().join("id");
    let st = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", ""])
        .arg("-f")
        .arg(&key)
        .status();
    if !matches!(st, Ok(s) if s.success()) {
        std::fs::write(
            tmp.path().join("id.pub"),
            "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOkd test\n",
        )
        .unwrap();
    }
    // A directory with a space: every suggested command quotes it.
    let dir = tmp.path().join("my cluster");
    let dir_s = dir.to_str().unwrap();
    let quoted = format!("--dir '{dir_s}'");
    let pub_key = format!("pub_key={}/id.pub", tmp.path().display());
    let common = [
        "--libvirt-uri",
        "test:///default",
        "--pool",
        "default-pool",
        "-P",
        "version=upstream",
        "-P",
        &pub_key,
        "-P",
        "image=",
    ];
    // A typo in an override: refused by key, exit 3, nothing made.
    let example = example();
    let mut args = vec!["create", "cluster", "--dir", dir_s, "--paramfile", &example];
    args.extend(common);
    let mut typo = args.clone();
    typo.extend(["-P", "disk_sise=10"]);
    let out = okd(&typo, tmp.path());
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert!(
        text(&out).contains("unknown key \"disk_sise\""),
        "{}",
        text(&out)
    );
    assert!(!dir.join("install-config.yaml").exists());
    // A pool that does not exist: named, exit 3, no install-config left.
    let mut nopool: Vec<&str> = args
        .iter()
        .map(|a| {
            if *a == "default-pool" {
                "nosuchpool"
            } else {
                a
            }
        })
        .collect();
    nopool.extend(["-P", "disk_size=10"]);
    let out = okd(&nopool, tmp.path());
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert!(text(&out).contains("nosuchpool"), "{}", text(&out));
    assert!(!dir.join("vm-cluster.json").exists());

    args.extend(["-P", "disk_size=10"]);
    let out = okd(&args, tmp.path());
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    for vm in [
        "testk-bootstrap",
        "testk-master-0",
        "testk-master-2",
        "testk-worker-1",
    ] {
        assert!(said.contains(vm), "{vm}: {said}");
        assert!(dir.join("vms").join(format!("{vm}.ign")).exists(), "{vm}");
    }
    assert!(said.contains("API VIP 192.168.122.253"), "{said}");
    assert!(
        said.contains(&format!("okd-install wait-for bootstrap-complete {quoted}"))
            && said.contains(&format!("okd-install destroy cluster {quoted}")),
        "{said}"
    );
    // The VMs are the install's hosts: the bootstrap approves exactly their CSRs.
    let agent = std::fs::read_to_string(dir.join("agent-config.yaml")).unwrap();
    assert!(
        agent.contains("hostname: testk-worker-1") && agent.contains("macAddress: 52:54:00:"),
        "{agent}"
    );
    let bastion = std::fs::read_to_string(dir.join("bastion-config.yaml")).unwrap();
    assert!(
        bastion.contains("apiAddress: 192.168.122.253")
            && bastion.contains("hostname: testk-bootstrap"),
        "{bastion}"
    );
    let boot = std::fs::read_to_string(dir.join("bootstrap.ign")).unwrap();
    assert!(
        boot.contains("/opt/openshift/okd-node-identities.json"),
        "bootstrap.ign names the VMs"
    );
    let ic = std::fs::read_to_string(dir.join(".openshift_install_state.json")).unwrap();
    assert!(
        ic.contains("192.168.122.0/24"),
        "the network's subnet is the machine network"
    );
    // A second create into the same directory is refused.
    let out = okd(&args, tmp.path());
    assert!(!out.status.success());
    assert!(
        text(&out).contains(&format!("destroy cluster {quoted}")),
        "{}",
        text(&out)
    );

    let out = okd(&["destroy", "cluster", "--dir", dir_s], tmp.path());
    assert!(out.status.success(), "{}", text(&out));
    assert!(!dir.join("vm-cluster.json").exists());
    assert!(!dir.join("vms").exists());
    assert!(
        dir.join("bootstrap.ign").exists(),
        "the installer's files stay"
    );
    let out = okd(&["destroy", "cluster", "--dir", dir_s], tmp.path());
    assert!(!out.status.success());
    assert!(text(&out).contains("no record"), "{}", text(&out));
}

/// Two network namespaces joined by a veth pair: the "hypervisor" (the
/// network's address 192.168.122.1) and the host holding the API VIP
/// 192.168.122.253 with a MAC the test sets. Removed on drop.
struct VipNet {
    hv: String,
    holder: String,
}

impl VipNet {
    fn new(mac: &str) -> Option<VipNet> {
        okd_test_utils::tool("ip", &["/usr/sbin/ip", "/sbin/ip"], Some("iproute2"))?;
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let id = format!(
            "{}x{}",
            std::process::id(),
            NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
        );
        let net = VipNet {
            hv: format!("okdhv{id}"),
            holder: format!("okdvh{id}"),
        };
        for ns in [&net.hv, &net.holder] {
            let st = Command::new("ip")
                .args(["netns", "add", ns])
                .status()
                .unwrap();
            if !st.success() {
                assert!(
                    std::env::var("OKD_REQUIRE_TOOLS").as_deref() != Ok("1"),
                    "cannot make network namespaces (root needed)"
                );
                eprintln!("SKIPPING part of this test: no network namespaces (root needed)");
                return None;
            }
        }
        let run = |args: &[&str]| {
            let o = Command::new("ip").args(args).output().unwrap();
            assert!(
                o.status.success(),
                "ip {args:?}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
        };
        run(&[
            "-n",
            &net.hv,
            "link",
            "add",
            "hv0",
            "type",
            "veth",
            "peer",
            "name",
            "vip0",
            "netns",
            &net.holder,
        ]);
        run(&[
            "-n",
            &net.hv,
            "addr",
            "add",
            "192.168.122.1/24",
            "dev",
            "hv0",
        ]);
        run(&["-n", &net.hv, "link", "set", "hv0", "up"]);
        run(&["-n", &net.hv, "link", "set", "lo", "up"]);
        run(&["-n", &net.holder, "link", "set", "vip0", "address", mac]);
        run(&[
            "-n",
            &net.holder,
            "addr",
            "add",
            "192.168.122.253/24",
            "dev",
            "vip0",
        ]);
        run(&["-n", &net.holder, "link", "set", "vip0", "up"]);
        Some(net)
    }

    /// The VIP moves to the host with `mac` (keepalived's gratuitous ARP
    /// is not sent here, so the hypervisor's neighbour entry is flushed).
    fn move_to(&self, mac: &str) {
        for args in [
            vec!["-n", &self.holder, "link", "set", "vip0", "down"],
            vec!["-n", &self.holder, "link", "set", "vip0", "address", mac],
            vec!["-n", &self.holder, "link", "set", "vip0", "up"],
            vec!["-n", &self.hv, "neigh", "flush", "all"],
        ] {
            assert!(
                Command::new("ip").args(&args).status().unwrap().success(),
                "{args:?}"
            );
        }
    }

    fn okd(&self, args: &[&str], home: &Path) -> Output {
        Command::new("ip")
            .args(["netns", "exec", &self.hv, env!("CARGO_BIN_EXE_okd-install")])
            .args(args)
            .env("HOME", home)
            .output()
            .expect("okd-install runs")
    }
}

impl Drop for VipNet {
    fn drop(&mut self) {
        for ns in [&self.hv, &self.holder] {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
    }
}

#[test]
fn destroy_bootstrap_waits_for_the_api_vip_on_a_master() {
    if okd_test_utils::tool("virsh", &[], Some("libvirt-clients")).is_none() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (dir, out) = create_example(tmp.path(), &["-P", "masters=1", "-P", "workers=0"]);
    let dir_s = dir.to_str().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("vm-cluster.json")).unwrap()).unwrap();
    let mac = |name: &str| {
        record["vms"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["name"] == name)
            .unwrap()["mac"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let (boot_mac, master_mac) = (mac("testk-bootstrap"), mac("testk-master-0"));
    let Some(net) = VipNet::new(&boot_mac) else {
        return;
    };
    // The VIP still on the bootstrap: refused after the wait, the VM kept.
    let args = [
        "destroy",
        "bootstrap",
        "--dir",
        dir_s,
        "--force",
        "--vip-timeout",
        "3",
    ];
    let out = net.okd(&args, tmp.path());
    let said = text(&out);
    assert!(!out.status.success(), "{said}");
    assert!(said.contains("still on testk-bootstrap"), "{said}");
    assert!(
        said.contains("waiting for the API VIP 192.168.122.253 to move"),
        "{said}"
    );
    let kept = std::fs::read_to_string(dir.join("vm-cluster.json")).unwrap();
    assert!(kept.contains("testk-bootstrap"));
    // On the master: the bootstrap VM goes, the record forgets it.
    net.move_to(&master_mac);
    let out = net.okd(&args, tmp.path());
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains("the API VIP 192.168.122.253 is on testk-master-0"),
        "{said}"
    );
    assert!(
        said.contains("removed the bootstrap VM testk-bootstrap"),
        "{said}"
    );
    let left = std::fs::read_to_string(dir.join("vm-cluster.json")).unwrap();
    assert!(!left.contains("testk-bootstrap\""), "{left}");
    assert!(!dir.join("vms/testk-bootstrap.ign").exists());
    // Again: nothing to do.
    let out = net.okd(&args, tmp.path());
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("removed already"), "{}", text(&out));
}

/// serve's status page on the hypervisor's network address lists the VMs as
/// the install's hosts (from the inventory create cluster wrote).
#[test]
fn the_dashboard_shows_the_vms_as_hosts() {
    if okd_test_utils::tool("virsh", &[], Some("libvirt-clients")).is_none()
        || okd_test_utils::tool("curl", &[], Some("curl")).is_none()
    {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (dir, out) = create_example(tmp.path(), &[]);
    let dir_s = dir.to_str().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let Some(net) = VipNet::new("52:54:00:00:00:fe") else {
        return;
    };
    let mut serve = okd_test_utils::ChildGuard(
        Command::new("ip")
            .args(["netns", "exec", &net.hv, env!("CARGO_BIN_EXE_okd-install")])
            .args(["serve", "--services", "status", "--dir", dir_s])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let mut doc = None;
    for _ in 0..50 {
        let o = Command::new("ip")
            .args(["netns", "exec", &net.hv, "curl", "-sf", "--max-time", "1"])
            .arg("http://192.168.122.1:9000/status")
            .output()
            .unwrap();
        if o.status.success() {
            doc = Some(o.stdout);
            break;
        }
        assert!(serve.0.try_wait().unwrap().is_none(), "serve exited");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let doc: okd_serve_api::StatusDocument =
        serde_json::from_slice(&doc.expect("serve's /status answers within 60 s")).unwrap();
    let names: Vec<&str> = doc.hosts.iter().map(|h| h.hostname.as_str()).collect();
    assert_eq!(
        names,
        [
            "testk-bootstrap",
            "testk-master-0",
            "testk-master-1",
            "testk-master-2",
            "testk-worker-0",
            "testk-worker-1"
        ],
        "{doc:?}"
    );
    assert_eq!(doc.hosts[1].address.to_string(), "192.168.122.3");
    assert_eq!(doc.hosts[1].fqdn, "testk-master-0.testk.karmalabs.com");
}

/// `--wait` goes on into `wait-for bootstrap-complete`; when that fails it
/// exits with wait-for's own code, and the VMs stay for another wait.
#[test]
fn wait_fails_with_wait_fors_code_and_keeps_the_vms() {
    if okd_test_utils::tool("virsh", &[], Some("libvirt-clients")).is_none() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (dir, out) = create_example(tmp.path(), &["--wait", "--timeouts", "api=1s"]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(5), "{said}");
    assert!(said.contains("Waiting up to 1s"), "{said}");
    assert!(said.contains("wait-for bootstrap-complete --dir"), "{said}");
    assert!(
        said.contains("192.168.122.253 api.testk.karmalabs.com"),
        "{said}"
    );
    assert!(dir.join("vm-cluster.json").exists());
}

/// The nodes' Corefile answers what serve's DNS answers for the same
/// install: every `hosts` entry and the `*.apps` template of the Corefile
/// create cluster wrote, asked of `okd-install serve --services dns` (the
/// resolver of bare-metal installs, built from the same records) with the
/// real `dig`, in network namespaces. CoreDNS itself is not in Debian.
#[test]
fn the_corefile_answers_what_serves_dns_answers() {
    if okd_test_utils::tool("virsh", &[], Some("libvirt-clients")).is_none()
        || okd_test_utils::tool("dig", &["/usr/bin/dig"], Some("bind9-dnsutils")).is_none()
    {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (dir, out) = create_example(tmp.path(), &["-P", "ingress_ip=192.168.122.252"]);
    let dir_s = dir.to_str().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    // The Corefile as the master's Ignition carries it.
    let ign: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("vms/testk-master-0.ign")).unwrap())
            .unwrap();
    let source = ign["storage"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == "/etc/okd-vip-layer/Corefile")
        .unwrap()["contents"]["source"]
        .as_str()
        .unwrap()
        .to_string();
    let corefile = String::from_utf8(okd_types::dataurl::decode(&source).unwrap()).unwrap();
    let mut entries: Vec<(String, String)> = Vec::new();
    let mut in_hosts = false;
    for line in corefile.lines().map(str::trim) {
        if line.starts_with("hosts {") {
            in_hosts = true;
        } else if in_hosts && line == "}" {
            in_hosts = false;
        } else if in_hosts && line.chars().next().is_some_and(|c| c.is_ascii_digit()) {
            let mut w = line.split_whitespace();
            let ip = w.next().unwrap().to_string();
            entries.extend(w.map(|n| (n.to_string(), ip.clone())));
        }
    }
    assert!(entries.len() >= 8, "{corefile}");
    let apps_ip = corefile
        .lines()
        .find_map(|l| l.trim().strip_prefix("answer \"{{ .Name }} 60 IN A "))
        .map(|r| r.trim_end_matches('"').to_string())
        .expect("the *.apps template");
    assert_eq!(apps_ip, "192.168.122.252");

    let Some(net) = VipNet::new("52:54:00:00:00:fe") else {
        return;
    };
    let mut serve = okd_test_utils::ChildGuard(
        Command::new("ip")
            .args(["netns", "exec", &net.hv, env!("CARGO_BIN_EXE_okd-install")])
            .args(["serve", "--services", "dns", "--dir", dir_s])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let dig = |args: &[&str]| -> String {
        let o = Command::new("ip")
            .args([
                "netns",
                "exec",
                &net.hv,
                "dig",
                "@192.168.122.1",
                "+short",
                "+time=1",
                "+tries=1",
            ])
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    };
    let mut up = false;
    for _ in 0..50 {
        if dig(&["api.testk.karmalabs.com"]) == "192.168.122.253" {
            up = true;
            break;
        }
        assert!(serve.0.try_wait().unwrap().is_none(), "serve exited");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    assert!(up, "serve's DNS answers within 10 s");
    for (name, ip) in &entries {
        assert_eq!(&dig(&[name, "A"]), ip, "{name}: the Corefile says {ip}");
    }
    for (name, ip) in entries.iter().filter(|(n, _)| n.starts_with("testk-")) {
        assert_eq!(dig(&["-x", ip]), format!("{name}."), "PTR of {ip}");
    }
    assert_eq!(
        dig(&["console-openshift-console.apps.testk.karmalabs.com"]),
        apps_ip
    );
}
