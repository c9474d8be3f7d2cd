//! `create bastion-configs`: the generated files pass the real daemons'
//! own checks (haproxy -c, dnsmasq --test, named-checkzone, named-checkconf,
//! keepalived -t) and carry the expected records.
//!
//! A missing checker fails the test with the Debian package to install
//! (set OKD_SKIP_MISSING_TOOLS=1 to skip instead).

mod common;

use std::path::Path;
use std::process::Command;

use okd_bastion::configs::{GeneratedFile, keepalived_conf, write_generated};
use okd_bastion::{bastion_configs, kernel_args};

fn get<'a>(files: &'a [GeneratedFile], path: &str) -> &'a str {
    &files
        .iter()
        .find(|f| f.path == path)
        .unwrap_or_else(|| panic!("{path} not generated; have {:?}", paths(files)))
        .contents
}

fn paths(files: &[GeneratedFile]) -> Vec<&str> {
    files.iter().map(|f| f.path.as_str()).collect()
}

/// Runs `prog args`, asserting success; returns false when `prog` is missing
/// and OKD_SKIP_MISSING_TOOLS is set.
fn check(prog: &str, package: &str, args: &[&str], cwd: &Path) -> bool {
    let Some(bin) = common::program(prog) else {
        if std::env::var_os("OKD_SKIP_MISSING_TOOLS").is_some() {
            eprintln!("skipping: {prog} not installed (Debian package {package})");
            return false;
        }
        panic!("{prog} not installed: apt-get install -y {package}");
    };
    let out = Command::new(&bin)
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("checker runs");
    assert!(
        out.status.success(),
        "{prog} {args:?} failed ({}):\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    true
}

#[test]
fn guide_kernel_arguments() {
    let inv = common::single_master();
    let boot = inv
        .nodes
        .iter()
        .find(|n| n.hostname == "bootstrap")
        .unwrap();
    // The guide's line with `sda` written as `/dev/sda` (current coreos-installer form).
    let guide = "ip=192.168.120.102::192.168.120.101:255.255.255.0:bootstrap.okd.example:ens787f0:none \
                 nameserver=192.168.120.101 coreos.inst.install_dev=/dev/sda \
                 coreos.inst.image_url=http://192.168.120.101:8080/install/coreos.raw.xz \
                 coreos.inst.ignition_url=http://192.168.120.101:8080/ignition/bootstrap.ign";
    assert_eq!(kernel_args(&inv, boot).join(" "), guide);
    let worker = inv.nodes.iter().find(|n| n.hostname == "worker1").unwrap();
    let w = kernel_args(&inv, worker).join(" ");
    assert!(
        w.starts_with(
            "ip=192.168.120.104::192.168.120.101:255.255.255.0:worker1.okd.example:ens786f1:none "
        ),
        "{w}"
    );
    assert!(w.ends_with("/ignition/worker.ign"), "{w}");
}

#[test]
fn ipv6_kernel_arguments_are_bracketed() {
    let mut inv = common::single_master();
    inv.listen = "2001:db8::1".parse().unwrap();
    let mut node = inv.nodes[0].clone();
    node.address = "2001:db8::66".parse().unwrap();
    node.prefix = 64;
    node.gateway = Some("2001:db8::1".parse().unwrap());
    let a = kernel_args(&inv, &node);
    assert_eq!(
        a[0],
        "ip=[2001:db8::66]::[2001:db8::1]:64:bootstrap.okd.example:ens787f0:none"
    );
    assert!(
        a.iter()
            .any(|x| x
                == "coreos.inst.ignition_url=http://[2001:db8::1]:8080/ignition/bootstrap.ign"),
        "{a:?}"
    );
}

#[test]
fn generated_files_shape() {
    let inv = common::single_master();
    let files = bastion_configs(&inv, true);
    let ha = get(&files, "haproxy/haproxy.cfg");
    for want in [
        "frontend api\n  bind *:6443",
        "frontend machine-config\n  bind *:22623",
        "frontend ingress-http\n  bind *:80",
        "frontend ingress-https\n  bind *:443",
        "option httpchk GET /readyz",
        "option httpchk GET /healthz",
        "server bootstrap 192.168.120.102:6443 check check-ssl verify none",
        "server master 192.168.120.103:22623 check check-ssl verify none",
        "server worker1 192.168.120.104:443 check",
        "monitor-uri /healthz",
        "bind 192.168.120.101:9001",
        "balance source",
        // Issue #27: the worker never goes to the bootstrap's machine-config server.
        "acl kept_hosts src 192.168.120.104\n  use_backend machine-config-kept if kept_hosts",
        "backend machine-config-kept\n  balance source\n  option httpchk GET /healthz\n  http-check expect status 200\n  server master 192.168.120.103:22623",
    ] {
        assert!(ha.contains(want), "haproxy.cfg lacks {want:?}:\n{ha}");
    }
    // Ingress goes to the worker only.
    assert!(!ha.contains("server master 192.168.120.103:443"), "{ha}");

    let dm = get(&files, "dnsmasq/dnsmasq.conf");
    for want in [
        "address=/apps.okd.example/192.168.120.101",
        "host-record=master.okd.example,etcd-0.okd.example,192.168.120.103",
        "srv-host=_etcd-server-ssl._tcp.okd.example,etcd-0.okd.example,2380,0,10",
        "ptr-record=102.120.168.192.in-addr.arpa,bootstrap.okd.example",
        "server=8.8.8.8",
        "local=/okd.example/",
    ] {
        assert!(dm.contains(want), "dnsmasq.conf lacks {want:?}:\n{dm}");
    }
    assert!(dm.contains("api.okd.example,api-int.okd.example"), "{dm}");
    let no_etcd = bastion_configs(&inv, false);
    assert!(!get(&no_etcd, "dnsmasq/dnsmasq.conf").contains("etcd"));
    assert!(!get(&no_etcd, "bind/db.okd.example").contains("etcd"));

    let z = get(&files, "bind/db.okd.example");
    for want in [
        "$TTL 60",
        "*.apps\tIN\tA\t192.168.120.101",
        "api-int\tIN\tA\t192.168.120.101",
        "etcd-0\tIN\tA\t192.168.120.103",
        "_etcd-server-ssl._tcp\tIN\tSRV\t0 10 2380 etcd-0.okd.example.",
        "registry\tIN\tA\t192.168.120.101",
    ] {
        assert!(z.contains(want), "zone lacks {want:?}:\n{z}");
    }
    let r = get(&files, "bind/db.120.168.192.in-addr.arpa");
    assert!(r.contains("103\tIN\tPTR\tmaster.okd.example."), "{r}");
    assert!(get(&files, "coredns/Corefile").contains("forward . 8.8.8.8:53"));
    assert!(get(&files, "coredns/Corefile").contains("file /etc/coredns/db.okd.example"));

    // PXE tree: same kernel arguments as kernel_args.
    let boot = inv
        .nodes
        .iter()
        .find(|n| n.hostname == "bootstrap")
        .unwrap();
    let args = kernel_args(&inv, boot).join(" ");
    for p in [
        "pxe/pxelinux.cfg/01-52-54-00-12-01-02",
        "pxe/grub.cfg-01-52-54-00-12-01-02",
        "pxe/ipxe/52:54:00:12:01:02.ipxe",
    ] {
        assert!(get(&files, p).contains(&args), "{p} lacks the kernel args");
    }
    assert!(get(&files, "pxe/ipxe/52:54:00:12:01:02.ipxe").starts_with("#!ipxe\n"));
    // Sorted, unique paths.
    let ps = paths(&files);
    let mut sorted = ps.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(ps, sorted);
}

#[test]
fn haproxy_accepts_haproxy_cfg() {
    for inv in [common::single_master(), common::with_vips()] {
        let dir = tempfile::tempdir().unwrap();
        write_generated(dir.path(), &bastion_configs(&inv, true)).unwrap();
        if !check(
            "haproxy",
            "haproxy",
            &["-c", "-f", "haproxy/haproxy.cfg"],
            dir.path(),
        ) {
            return;
        }
    }
}

#[test]
fn haproxy_accepts_masters_only() {
    let mut inv = common::single_master();
    inv.nodes.retain(|n| n.role != okd_hosts::Role::Worker);
    let files = bastion_configs(&inv, false);
    let ha = get(&files, "haproxy/haproxy.cfg");
    assert!(
        ha.contains("server master 192.168.120.103:443 check"),
        "{ha}"
    );
    let dir = tempfile::tempdir().unwrap();
    write_generated(dir.path(), &files).unwrap();
    check(
        "haproxy",
        "haproxy",
        &["-c", "-f", "haproxy/haproxy.cfg"],
        dir.path(),
    );
}

#[test]
fn dnsmasq_accepts_dnsmasq_conf() {
    for etcd in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        write_generated(dir.path(), &bastion_configs(&common::with_vips(), etcd)).unwrap();
        if !check(
            "dnsmasq",
            "dnsmasq-base",
            &["--test", "-C", "dnsmasq/dnsmasq.conf"],
            dir.path(),
        ) {
            return;
        }
    }
}

#[test]
fn named_checkzone_accepts_zones() {
    for inv in [common::single_master(), common::with_vips()] {
        let files = bastion_configs(&inv, true);
        let dir = tempfile::tempdir().unwrap();
        write_generated(dir.path(), &files).unwrap();
        let zones: Vec<String> = files
            .iter()
            .filter_map(|f| f.path.strip_prefix("bind/db."))
            .map(str::to_string)
            .collect();
        assert!(zones.len() >= 2, "{zones:?}");
        for z in &zones {
            let file = format!("bind/db.{z}");
            if !check(
                "named-checkzone",
                "bind9-utils",
                &["-k", "fail", "-n", "fail", z, &file],
                dir.path(),
            ) {
                return;
            }
        }
        check(
            "named-checkconf",
            "bind9-utils",
            &["bind/named.conf.zones"],
            dir.path(),
        );
    }
}

#[test]
fn keepalived_accepts_keepalived_conf() {
    let inv = common::with_vips();
    let generated = bastion_configs(&inv, false);
    let conf = get(&generated, "keepalived/keepalived.conf");
    assert!(
        conf.contains("192.168.120.200/24") && conf.contains("192.168.120.201/24"),
        "{conf}"
    );
    assert!(
        conf.contains("curl -ksf") && conf.contains("https://localhost:6443/readyz"),
        "{conf}"
    );
    // The generated file names a guessed bastion NIC; check the same text with
    // a NIC this machine has (keepalived -t refuses unknown and loopback ones).
    let Some(nic) = local_nic() else {
        eprintln!("skipping keepalived -t: no non-loopback interface here");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in [
        ("vips.conf", keepalived_conf(&inv, &nic)),
        (
            "novip.conf",
            keepalived_conf(&common::single_master(), &nic),
        ),
    ] {
        std::fs::write(dir.path().join(name), text).unwrap();
        if !check("keepalived", "keepalived", &["-t", "-f", name], dir.path()) {
            return;
        }
    }
}

/// A non-loopback network interface of this machine, `eth*`/`en*` first.
fn local_nic() -> Option<String> {
    let mut names: Vec<String> = std::fs::read_dir("/sys/class/net")
        .ok()?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n != "lo")
        .collect();
    names.sort_by_key(|n| (!n.starts_with('e'), n.clone()));
    names.into_iter().next()
}
