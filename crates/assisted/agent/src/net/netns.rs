//! Test fixture: two network namespaces joined by a veth pair, for the
//! probes' tests between namespaces (root and `ip` needed).

use std::net::Ipv4Addr;
use std::process::Command;

/// Runs `ip <args>`, panicking with its stderr when it fails.
pub(super) fn ip(args: &[&str]) -> String {
    let out = Command::new("ip").args(args).output().expect("running ip");
    assert!(
        out.status.success(),
        "ip {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Why the namespace tests cannot run here (not root, no `ip`), `None`
/// when they can. With `OKD_REQUIRE_TOOLS=1` a reason fails the test.
pub(super) fn netns_unavailable() -> Option<String> {
    let reason = if !nix::unistd::geteuid().is_root() {
        Some("not running as root".to_string())
    } else if Command::new("ip").arg("-V").output().is_err() {
        Some("the ip tool (iproute2) is missing".to_string())
    } else {
        None
    };
    if let Some(r) = &reason {
        assert!(
            std::env::var("OKD_REQUIRE_TOOLS").as_deref() != Ok("1"),
            "OKD_REQUIRE_TOOLS=1 but {r}"
        );
        eprintln!("skipped: {r}");
    }
    reason
}

/// Two network namespaces joined by a veth pair, `10.200.<x>.1/24` on
/// `if_a` in `ns_a` and `.2/24` on `if_b` in `ns_b`, both links up;
/// removed (with the pair) on drop, when a test fails as well.
pub(super) struct VethPair {
    pub(super) ns_a: String,
    pub(super) ns_b: String,
    pub(super) if_a: String,
    pub(super) mac_b: [u8; 6],
    net: u8,
}

impl VethPair {
    pub(super) fn new(tag: &str) -> VethPair {
        let pid = std::process::id();
        let mut pair = VethPair {
            ns_a: format!("okdnet-{pid}-{tag}-a"),
            ns_b: format!("okdnet-{pid}-{tag}-b"),
            if_a: format!("okd{pid}{tag}a"),
            mac_b: [0; 6],
            net: (pid % 250) as u8,
        };
        let if_b = format!("okd{pid}{tag}b");
        assert!(if_b.len() <= 15, "interface name {if_b} too long");
        ip(&["netns", "add", &pair.ns_a]);
        // `pair` exists: a panic from here on drops it, removing both.
        ip(&["netns", "add", &pair.ns_b]);
        ip(&[
            "-n", &pair.ns_a, "link", "add", &pair.if_a, "type", "veth", "peer", "name", &if_b,
            "netns", &pair.ns_b,
        ]);
        let (a, b) = (pair.addr(1), pair.addr(2));
        ip(&[
            "-n",
            &pair.ns_a,
            "addr",
            "add",
            &format!("{a}/24"),
            "dev",
            &pair.if_a,
        ]);
        ip(&[
            "-n",
            &pair.ns_b,
            "addr",
            "add",
            &format!("{b}/24"),
            "dev",
            &if_b,
        ]);
        for (ns, ifname) in [(&pair.ns_a, &pair.if_a), (&pair.ns_b, &if_b)] {
            ip(&["-n", ns, "link", "set", "lo", "up"]);
            ip(&["-n", ns, "link", "set", ifname, "up"]);
        }
        let show = ip(&["-n", &pair.ns_b, "link", "show", &if_b]);
        let mac = show
            .split_whitespace()
            .skip_while(|w| *w != "link/ether")
            .nth(1)
            .unwrap_or_else(|| panic!("no link/ether in {show}"));
        let bytes: Vec<u8> = mac
            .split(':')
            .map(|h| u8::from_str_radix(h, 16).unwrap())
            .collect();
        pair.mac_b = bytes.try_into().unwrap();
        pair
    }

    pub(super) fn addr(&self, host: u8) -> Ipv4Addr {
        Ipv4Addr::new(10, 200, self.net, host)
    }

    /// Runs `f` on a new thread that entered `ns_a`'s network
    /// namespace (the test's other threads stay where they are).
    pub(super) fn in_ns_a<T: Send + 'static>(&self, f: impl FnOnce() -> T + Send + 'static) -> T {
        let path = format!("/run/netns/{}", self.ns_a);
        std::thread::spawn(move || {
            let ns = std::fs::File::open(&path).unwrap();
            nix::sched::setns(ns, nix::sched::CloneFlags::CLONE_NEWNET).unwrap();
            f()
        })
        .join()
        .unwrap()
    }
}

impl Drop for VethPair {
    fn drop(&mut self) {
        for ns in [&self.ns_a, &self.ns_b] {
            let _ = Command::new("ip").args(["netns", "del", ns]).output();
        }
    }
}
