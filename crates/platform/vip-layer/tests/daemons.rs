//! The layer's configs pass the real daemons' own checks: `keepalived -t`
//! (inside a network namespace with the NIC the pod's interface script
//! picked, run by the real `sh` and `ip`), `haproxy -c`, `nginx -t`; the
//! static pods are Pods; the merged Ignition passes `ignition-validate`.

use std::net::IpAddr;
use std::path::Path;
use std::process::Command;

use okd_test_utils::tool;
use okd_types::ignition::Config;
use okd_vip_layer::{Images, Layer, Node, Role};

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn layer(workers: usize) -> Layer {
    let mut nodes = vec![Node {
        name: "testk-bootstrap".into(),
        role: Role::Bootstrap,
        ip: ip("192.168.122.10"),
    }];
    for i in 0..3 {
        nodes.push(Node {
            name: format!("testk-master-{i}"),
            role: Role::Master,
            ip: ip(&format!("192.168.122.{}", 11 + i)),
        });
    }
    for i in 0..workers {
        nodes.push(Node {
            name: format!("testk-worker-{i}"),
            role: Role::Worker,
            ip: ip(&format!("192.168.122.{}", 20 + i)),
        });
    }
    Layer {
        cluster: "testk".into(),
        domain: "karmalabs.com".into(),
        api_vip: ip("192.168.122.253"),
        ingress_vip: ip("192.168.122.252"),
        prefix: 24,
        virtual_router_id: 42,
        auth_pass: "s3cr3tPw".into(),
        upstream_dns: vec![ip("192.168.122.1")],
        nodes,
        images: Images::default(),
    }
}

fn node<'a>(l: &'a Layer, name: &str) -> &'a Node {
    l.nodes.iter().find(|n| n.name == name).unwrap()
}

fn run_ok(cmd: &mut Command) -> String {
    let out = cmd.output().expect("program runs");
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

/// A network namespace with one NIC (a veth pair's end) on 192.168.122.0/24, removed on drop.
struct Netns(String);

impl Netns {
    fn new() -> Option<Netns> {
        let ipc = tool("ip", &["/usr/sbin/ip", "/sbin/ip"], Some("iproute2"))?;
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let name = format!(
            "okdvip{}x{}",
            std::process::id(),
            NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
        );
        let st = Command::new(&ipc)
            .args(["netns", "add", &name])
            .status()
            .ok()?;
        if !st.success() {
            if std::env::var("OKD_REQUIRE_TOOLS").as_deref() == Ok("1") {
                panic!("cannot make a network namespace (root needed)");
            }
            eprintln!("SKIPPING part of this test: no network namespaces here (root needed)");
            return None;
        }
        let ns = Netns(name);
        for args in [
            vec![
                "link", "add", "vipnic0", "type", "veth", "peer", "name", "vippeer0",
            ],
            vec!["link", "set", "vippeer0", "up"],
            vec!["addr", "add", "192.168.122.11/24", "dev", "vipnic0"],
            vec!["link", "set", "vipnic0", "up"],
            vec!["link", "set", "lo", "up"],
        ] {
            run_ok(Command::new(&ipc).args(["-n", &ns.0]).args(&args));
        }
        Some(ns)
    }

    fn exec(&self, prog: &Path) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.0]).arg(prog);
        c
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}

#[test]
fn keepalived_accepts_the_configs_the_interface_script_writes() {
    let Some(keepalived) = tool("keepalived", &["/usr/sbin/keepalived"], Some("keepalived")) else {
        return;
    };
    let Some(ns) = Netns::new() else { return };
    let l = layer(2);
    let dir = tempfile::tempdir().unwrap();
    for name in ["testk-bootstrap", "testk-master-0"] {
        let files = l.node_files(node(&l, name), &[]);
        let get = |suffix: &str| {
            files
                .iter()
                .find(|f| f.path.ends_with(suffix))
                .unwrap_or_else(|| panic!("{name}: no {suffix}"))
        };
        let tmpl = dir.path().join(format!("{name}.tmpl"));
        let script = dir.path().join(format!("{name}.sh"));
        let conf = dir.path().join(format!("{name}.conf"));
        std::fs::write(&tmpl, &get("keepalived.conf.tmpl").contents).unwrap();
        std::fs::write(&script, &get("keepalived-interface.sh").contents).unwrap();
        // The script as the pod's init container runs it, with the real sh and ip.
        let said = run_ok(
            ns.exec(Path::new("/bin/sh"))
                .arg(&script)
                .arg(&tmpl)
                .arg(&conf),
        );
        assert!(
            said.contains("interface vipnic0 for 192.168.122.253"),
            "{said}"
        );
        let text = std::fs::read_to_string(&conf).unwrap();
        assert!(text.contains("interface vipnic0"), "{text}");
        assert!(!text.contains("__OKD_INTERFACE__"), "{text}");
        assert!(text.contains("192.168.122.253/24") && text.contains("virtual_router_id 42"));
        let ingress = text.contains("192.168.122.252/24");
        assert_eq!(ingress, name.contains("master"), "{name}: {text}");
        if ingress {
            assert!(text.contains("virtual_router_id 43"), "{text}");
        }
        run_ok(ns.exec(&keepalived).args(["-t", "-f"]).arg(&conf));
    }
    // The VIP held here: the route is `local`, and the NIC is the one with the address.
    run_ok(Command::new("ip").args([
        "-n",
        &ns.0,
        "addr",
        "add",
        "192.168.122.253/24",
        "dev",
        "vipnic0",
    ]));
    let tmpl = dir.path().join("testk-master-0.tmpl");
    let conf = dir.path().join("held.conf");
    let said = run_ok(
        ns.exec(Path::new("/bin/sh"))
            .arg(dir.path().join("testk-master-0.sh"))
            .arg(&tmpl)
            .arg(&conf),
    );
    assert!(said.contains("interface vipnic0"), "{said}");
    run_ok(ns.exec(&keepalived).args(["-t", "-f"]).arg(&conf));
    // No route to the VIP: the script fails naming it, and writes nothing.
    run_ok(Command::new("ip").args(["-n", &ns.0, "addr", "flush", "dev", "vipnic0"]));
    let none = dir.path().join("none.conf");
    let out = ns
        .exec(Path::new("/bin/sh"))
        .arg(dir.path().join("testk-master-0.sh"))
        .arg(&tmpl)
        .arg(&none)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("192.168.122.253"), "{err}");
    assert!(!none.exists());
}

#[test]
fn haproxy_accepts_the_routers_config() {
    let l = layer(2);
    let master = l.node_files(node(&l, "testk-master-1"), &[]);
    let cfg = master
        .iter()
        .find(|f| f.path.ends_with("haproxy.cfg"))
        .expect("masters run HAProxy when there are workers");
    let text = String::from_utf8(cfg.contents.clone()).unwrap();
    for want in [
        "bind 192.168.122.252:80",
        "bind 192.168.122.252:443",
        "server-template worker 1-64 workers.testk.karmalabs.com:443 check inter 1s resolvers node",
        "server-template worker 1-64 workers.testk.karmalabs.com:80 check inter 1s resolvers node",
        "nameserver coredns 127.0.0.1:53",
        "balance source",
    ] {
        assert!(text.contains(want), "{want} missing:\n{text}");
    }
    assert!(
        master
            .iter()
            .any(|f| f.path.ends_with("nonlocal-bind.conf")),
        "the VIP is bound on masters that do not hold it"
    );
    // Without workers, no HAProxy anywhere; with them, never on workers or the bootstrap.
    let none = layer(0);
    for n in &none.nodes {
        assert!(
            !none
                .node_files(n, &[])
                .iter()
                .any(|f| f.path.contains("haproxy"))
        );
    }
    for name in ["testk-bootstrap", "testk-worker-0"] {
        assert!(
            !l.node_files(node(&l, name), &[])
                .iter()
                .any(|f| f.path.contains("haproxy"))
        );
    }
    let Some(haproxy) = tool("haproxy", &["/usr/sbin/haproxy"], Some("haproxy")) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("haproxy.cfg");
    std::fs::write(&path, &text).unwrap();
    run_ok(Command::new(haproxy).args(["-c", "-f"]).arg(&path));
}

#[test]
fn nginx_accepts_its_config_and_serves_only_the_bootstrap() {
    let l = layer(1);
    let served = vec![("worker.ign".to_string(), b"{\"ignition\":{}}".to_vec())];
    let boot = l.node_files(node(&l, "testk-bootstrap"), &served);
    assert!(
        boot.iter()
            .any(|f| f.path == "/etc/okd-vip-layer/www/worker.ign")
    );
    assert!(
        boot.iter()
            .any(|f| f.path == "/etc/kubernetes/manifests/okd-nginx.yaml")
    );
    let master = l.node_files(node(&l, "testk-master-0"), &served);
    assert!(
        !master
            .iter()
            .any(|f| f.path.contains("nginx") || f.path.contains("www"))
    );
    let Some(nginx) = tool(
        "nginx",
        &["/var/tmp/okd-nginx/usr/sbin/nginx", "/usr/sbin/nginx"],
        Some("nginx (or .ci/run, which unpacks it into /var/tmp/okd-nginx)"),
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("nginx.conf");
    std::fs::write(&conf, okd_vip_layer::nginx_conf()).unwrap();
    let prefix = format!("{}/", dir.path().display());
    let said = run_ok(
        Command::new(nginx)
            .args(["-t", "-e", "stderr", "-p", &prefix, "-c"])
            .arg(&conf),
    );
    assert!(said.contains("test is successful"), "{said}");
}

#[test]
fn static_pods_are_pods_that_mount_what_they_run() {
    use k8s_openapi::api::core::v1::Pod;
    let l = layer(2);
    for n in &l.nodes {
        let files = l.node_files(n, &[("master.ign".into(), b"{}".to_vec())]);
        let written: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
        let pods: Vec<_> = files
            .iter()
            .filter(|f| f.path.starts_with("/etc/kubernetes/manifests/"))
            .collect();
        let expect = match n.role {
            Role::Bootstrap => 3,
            Role::Master => 3,
            Role::Worker => 1,
        };
        assert_eq!(pods.len(), expect, "{}: {written:?}", n.name);
        for f in pods {
            let pod: Pod = serde_yaml_ng::from_slice(&f.contents).unwrap();
            let spec = pod.spec.unwrap();
            assert_eq!(spec.host_network, Some(true), "{}", f.path);
            assert_eq!(pod.metadata.namespace.as_deref(), Some("okd-vip-layer"));
            let volumes: Vec<String> = spec.volumes.unwrap().into_iter().map(|v| v.name).collect();
            for c in spec
                .containers
                .iter()
                .chain(spec.init_containers.iter().flatten())
            {
                for m in c.volume_mounts.iter().flatten() {
                    assert!(volumes.contains(&m.name), "{}: mount {}", f.path, m.name);
                }
                // Every file a container is told to read is one the layer writes.
                for arg in c.command.iter().chain(c.args.iter()).flatten() {
                    if arg.starts_with("/etc/okd-vip-layer/") {
                        assert!(written.contains(&arg.as_str()), "{}: {arg}", f.path);
                    }
                }
            }
        }
    }
}

#[test]
fn corefile_names_every_host_and_the_vips() {
    let l = layer(2);
    let text = okd_vip_layer::corefile(&l);
    assert!(text.contains("192.168.122.253 api.testk.karmalabs.com api-int.testk.karmalabs.com"));
    for n in &l.nodes {
        assert!(
            text.contains(&format!("{} {}.testk.karmalabs.com", n.ip, n.name)),
            "{text}"
        );
        let o: Vec<&str> = n.ip.to_string().leak().split('.').collect();
        let rev = format!("{}.{}.{}.{}.in-addr.arpa:53", o[3], o[2], o[1], o[0]);
        assert!(text.contains(&rev), "{rev} not a zone:\n{text}");
    }
    assert!(
        text.contains("template IN A apps.testk.karmalabs.com"),
        "{text}"
    );
    assert!(
        text.contains("answer \"{{ .Name }} 60 IN A 192.168.122.252\""),
        "{text}"
    );
    assert!(text.contains("forward . 192.168.122.1"), "{text}");
    // Balanced blocks: CoreDNS refuses a Corefile whose braces do not close.
    let mut depth = 0i32;
    for c in text.chars() {
        depth += match c {
            '{' => 1,
            '}' => -1,
            _ => 0,
        };
        assert!(depth >= 0, "{text}");
    }
    assert_eq!(depth, 0, "{text}");
    // Every node resolves through its own CoreDNS, then the VIP's, then upstream.
    let m = node(&l, "testk-master-2");
    assert!(
        l.dns_settings(m)
            .contains("servers=192.168.122.13,192.168.122.253,192.168.122.1")
    );
}

#[test]
fn merged_ignition_keeps_the_installers_files_and_validates() {
    let l = layer(1);
    let m = node(&l, "testk-master-0").clone();
    let mut config = Config::from_json(
        r#"{"ignition":{"version":"3.2.0","config":{"merge":[{"source":"https://api-int.testk.karmalabs.com:22623/config/master"}]}},
            "storage":{"files":[{"path":"/etc/okd-vip-layer/Corefile","contents":{"source":"data:,mine"},"mode":420}]}}"#,
    )
    .unwrap();
    let skipped = l.merge_into(&mut config, &m, &[]);
    assert_eq!(skipped, vec!["/etc/okd-vip-layer/Corefile".to_string()]);
    let core: Vec<_> = config
        .storage
        .files
        .iter()
        .filter(|f| f.path == "/etc/okd-vip-layer/Corefile")
        .collect();
    assert_eq!(core.len(), 1);
    assert_eq!(core[0].contents.source.as_deref(), Some("data:,mine"));
    assert!(config.storage.files.len() > 5);
    let Some(validate) = tool("ignition-validate", &[], Some("ignition")) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("master.ign");
    std::fs::write(&path, config.to_json()).unwrap();
    run_ok(Command::new(validate).arg(&path));
}

#[test]
fn refuses_what_cannot_work() {
    let good = layer(1);
    assert_eq!(good.check(), Ok(()));
    let mut l = good.clone();
    l.virtual_router_id = 254;
    assert_eq!(l.check().unwrap_err().field, "virtual_router_id");
    let mut l = good.clone();
    l.auth_pass = "ninechars".into();
    assert_eq!(l.check().unwrap_err().field, "auth_pass");
    let mut l = good.clone();
    l.nodes[2].ip = l.nodes[1].ip;
    let e = l.check().unwrap_err();
    assert!(
        e.rule.contains("testk-master-0") && e.rule.contains("testk-master-1"),
        "{e}"
    );
    let mut l = good.clone();
    l.nodes[1].ip = l.api_vip;
    assert!(l.check().unwrap_err().rule.contains("is a VIP"));
    let mut l = good.clone();
    l.ingress_vip = ip("fd00::5");
    assert_eq!(l.check().unwrap_err().field, "ingress_ip");
    let mut l = good;
    l.nodes.retain(|n| n.role != Role::Master);
    assert_eq!(l.check().unwrap_err().field, "masters");
}

/// The masters' HAProxy follows `workers.<cluster>.<domain>`: real HAProxy
/// with the layer's config and a real resolver (dnsmasq standing in for the
/// node's CoreDNS, which forwards that name to the network's resolver) in a
/// network namespace; a worker added to the name's records is balanced to
/// without touching HAProxy.
#[test]
fn haproxy_follows_the_workers_name() {
    use std::io::{Read as _, Write as _};
    let (Some(haproxy), Some(dnsmasq)) = (
        tool("haproxy", &["/usr/sbin/haproxy"], Some("haproxy")),
        tool("dnsmasq", &["/usr/sbin/dnsmasq"], Some("dnsmasq")),
    ) else {
        return;
    };
    let Some(ns) = Netns::new() else { return };
    run_ok(
        ns.exec(Path::new("/usr/sbin/sysctl"))
            .args(["-qw", "net.ipv4.ip_nonlocal_bind=1"]),
    );
    let dir = tempfile::tempdir().unwrap();
    let hosts = dir.path().join("hosts");
    let write_hosts = |ips: &[&str]| {
        let text: String = ips
            .iter()
            .map(|ip| format!("{ip} workers.testk.karmalabs.com\n"))
            .collect();
        std::fs::write(&hosts, text).unwrap();
    };
    write_hosts(&["192.168.122.20", "192.168.122.21"]);
    let pid_file = dir.path().join("dnsmasq.pid");
    let mut dns = okd_test_utils::ChildGuard(
        ns.exec(&dnsmasq)
            .args([
                "--keep-in-foreground",
                "--port=53",
                "--listen-address=127.0.0.1",
            ])
            .args([
                "--bind-interfaces",
                "--no-resolv",
                "--no-hosts",
                "--user=root",
            ])
            .arg(format!("--addn-hosts={}", hosts.display()))
            .arg(format!("--pid-file={}", pid_file.display()))
            .spawn()
            .unwrap(),
    );
    let l = layer(2);
    let cfg = okd_vip_layer::haproxy_cfg(&l).unwrap();
    let sock = dir.path().join("admin.sock");
    let cfg = cfg.replacen(
        "global\n",
        &format!(
            "global\n  stats socket {} mode 600 level admin\n",
            sock.display()
        ),
        1,
    );
    let cfg_path = dir.path().join("haproxy.cfg");
    std::fs::write(&cfg_path, cfg).unwrap();
    let _lb = okd_test_utils::ChildGuard(
        ns.exec(&haproxy)
            .arg("-db")
            .arg("-f")
            .arg(&cfg_path)
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(dir.path().join("haproxy.log")).unwrap())
            .spawn()
            .unwrap(),
    );
    let log = dir.path().join("haproxy.log");
    // The backend's slots that hold an address, from the admin socket.
    let addresses = || -> Vec<String> {
        let Ok(mut s) = std::os::unix::net::UnixStream::connect(&sock) else {
            return Vec::new();
        };
        s.write_all(b"show servers state ingress-http\n").unwrap();
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        let mut ips: Vec<String> = out
            .lines()
            .filter(|l| !l.starts_with('#') && l.split_whitespace().count() > 5)
            .map(|l| l.split_whitespace().nth(4).unwrap_or("").to_string())
            .filter(|ip| ip != "0.0.0.0" && ip != "-" && !ip.is_empty())
            .collect();
        ips.sort();
        ips
    };
    let wait_for = |want: &[&str]| {
        for _ in 0..150 {
            if addresses() == want {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        panic!(
            "HAProxy's slots hold {:?}, not {want:?}; its log:\n{}",
            addresses(),
            std::fs::read_to_string(&log).unwrap_or_default()
        );
    };
    wait_for(&["192.168.122.20", "192.168.122.21"]);
    // scale adds a worker: its record appears; dnsmasq re-reads on SIGHUP.
    write_hosts(&["192.168.122.20", "192.168.122.21", "192.168.122.22"]);
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    run_ok(Command::new("kill").args(["-HUP", pid.trim()]));
    wait_for(&["192.168.122.20", "192.168.122.21", "192.168.122.22"]);
    assert!(dns.0.try_wait().unwrap().is_none(), "dnsmasq still runs");
}
