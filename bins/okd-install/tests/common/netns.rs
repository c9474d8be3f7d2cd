//! Hosts as network namespaces on a bridge (iproute2 `ip-netns(8)`): a bastion namespace
//! owning the bridge and node namespaces joined by veth pairs, each with its
//! own `/etc/netns/<name>/resolv.conf`. Every address lives inside namespaces
//! this test made; [`Lab`] removes them, their files and the processes it
//! started (by PID) when dropped, also when the test fails.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

/// One host: namespace name and address.
#[derive(Debug, Clone)]
pub struct Host {
    /// Namespace name (short, unique per run).
    pub ns: String,
    /// IPv4 address inside the namespace.
    pub addr: String,
}

/// A bridge in the bastion namespace plus node namespaces.
pub struct Lab {
    /// The bastion (owns the bridge address).
    pub bastion: Host,
    /// The nodes.
    pub nodes: Vec<Host>,
    children: Vec<Child>,
}

/// Runs `ip args…`; asserts it succeeded.
pub fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().expect("run ip");
    assert!(
        out.status.success(),
        "ip {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Makes namespace `ns` a host on the bridge `br0` of `bridge_ns`: a veth
/// pair (`veth` in `bridge_ns`, `eth0` in `ns`), address `addr/24`, loopback
/// up, default route via `gateway`.
pub fn attach(bridge_ns: &str, ns: &str, veth: &str, addr: &str, gateway: &str) {
    ip(&["netns", "add", ns]);
    ip(&[
        "link", "add", veth, "netns", bridge_ns, "type", "veth", "peer", "name", "eth0", "netns",
        ns,
    ]);
    ip(&["-n", bridge_ns, "link", "set", veth, "master", "br0", "up"]);
    ip(&[
        "-n",
        ns,
        "addr",
        "add",
        &format!("{addr}/24"),
        "dev",
        "eth0",
    ]);
    ip(&["-n", ns, "link", "set", "eth0", "up"]);
    ip(&["-n", ns, "link", "set", "lo", "up"]);
    ip(&["-n", ns, "route", "add", "default", "via", gateway]);
}

/// Whether namespaces can be made here (root and iproute2); prints why not.
pub fn available() -> bool {
    let ok = Command::new("ip")
        .args(["netns", "list"])
        .output()
        .is_ok_and(|o| o.status.success())
        && std::fs::metadata("/etc").is_ok()
        && nix_is_root();
    if !ok {
        if std::env::var("OKD_REQUIRE_TOOLS").as_deref() == Ok("1") {
            panic!("network namespaces are required (root + iproute2)");
        }
        eprintln!("SKIPPING: network namespaces unavailable (need root and iproute2)");
    }
    ok
}

fn nix_is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

impl Lab {
    /// Creates `<prefix>-b` with bridge address `bastion_addr/24` and one
    /// namespace per `(suffix, addr)`, default route and resolver = the bastion.
    pub fn new(prefix: &str, bastion_addr: &str, nodes: &[(&str, &str)], search: &str) -> Lab {
        let bastion = Host {
            ns: format!("{prefix}-b"),
            addr: bastion_addr.to_string(),
        };
        let mut lab = Lab {
            bastion: bastion.clone(),
            nodes: Vec::new(),
            children: Vec::new(),
        };
        ip(&["netns", "add", &bastion.ns]);
        ip(&["-n", &bastion.ns, "link", "add", "br0", "type", "bridge"]);
        ip(&[
            "-n",
            &bastion.ns,
            "addr",
            "add",
            &format!("{bastion_addr}/24"),
            "dev",
            "br0",
        ]);
        ip(&["-n", &bastion.ns, "link", "set", "br0", "up"]);
        ip(&["-n", &bastion.ns, "link", "set", "lo", "up"]);
        for (i, (suffix, addr)) in nodes.iter().enumerate() {
            let ns = format!("{prefix}-{suffix}");
            lab.nodes.push(Host {
                ns: ns.clone(),
                addr: addr.to_string(),
            });
            let veth = format!("v{}{i}", &prefix[prefix.len().saturating_sub(6)..]);
            attach(&bastion.ns, &ns, &veth, addr, bastion_addr);
            let etc = PathBuf::from("/etc/netns").join(&ns);
            std::fs::create_dir_all(&etc).unwrap();
            std::fs::write(
                etc.join("resolv.conf"),
                format!("nameserver {bastion_addr}\nsearch {search}\n"),
            )
            .unwrap();
            std::fs::write(
                etc.join("hosts"),
                format!("127.0.0.1 localhost\n{addr} {suffix}\n"),
            )
            .unwrap();
        }
        lab
    }

    /// A command that runs inside namespace `ns`.
    pub fn cmd(&self, ns: &str, program: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", ns, program]);
        c
    }

    /// Starts a long-running process in `ns`; it is killed (by PID) on drop.
    pub fn spawn(&mut self, ns: &str, program: &str, args: &[&str], log: &std::path::Path) -> u32 {
        self.spawn_env(ns, program, args, &[], log)
    }

    /// [`Lab::spawn`] with environment variables `env` added.
    pub fn spawn_env(
        &mut self,
        ns: &str,
        program: &str,
        args: &[&str],
        env: &[(&str, &str)],
        log: &std::path::Path,
    ) -> u32 {
        let f = std::fs::File::create(log).unwrap();
        let child = self
            .cmd(ns, program)
            .args(args)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(f.try_clone().unwrap())
            .stderr(f)
            .spawn()
            .expect("spawn in namespace");
        let pid = child.id();
        self.children.push(child);
        pid
    }

    /// Kills one started process by PID and waits for it.
    pub fn kill(&mut self, pid: u32) {
        if let Some(i) = self.children.iter().position(|c| c.id() == pid) {
            let mut c = self.children.remove(i);
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        for h in self.nodes.iter().chain(std::iter::once(&self.bastion)) {
            let _ = Command::new("ip").args(["netns", "del", &h.ns]).output();
            let _ = std::fs::remove_dir_all(PathBuf::from("/etc/netns").join(&h.ns));
        }
    }
}
