//! Shared harness of the okd-dns tests: the example inventory, our server on
//! 127.0.0.1 in its own tokio runtime, `dig` with its output parsed, and a
//! real dnsmasq on loopback killed by PID on drop.
#![allow(dead_code)]

use std::net::{SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use okd_dns::{DnsObserver, DnsServer};
use okd_hosts::Inventory;

/// The repository's single-master example directory.
pub fn example_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../examples/baremetal-single-master")
}

/// The single-master guide's inventory (cluster `okd`, base domain
/// `example`, cluster domain `okd.example`), without upstream resolvers.
pub fn single_master() -> Inventory {
    let mut inv = Inventory::load(&example_dir(), "okd", "example").expect("example inventory");
    inv.upstreams.clear();
    inv
}

/// Finds a program; `None` (after a loud message) when missing, unless
/// `OKD_REQUIRE_TOOLS=1` (CI), where a missing tool fails the test naming
/// the Debian package to install.
pub fn tool(name: &str, paths: &[&str], package: &str) -> Option<PathBuf> {
    okd_test_utils::tool(name, paths, Some(package))
}

/// `dig` (Debian package `bind9-dnsutils`).
pub fn dig_program() -> Option<PathBuf> {
    tool("dig", &["/usr/bin/dig"], "bind9-dnsutils")
}

/// `dnsmasq` (Debian package `dnsmasq-base`).
pub fn dnsmasq_program() -> Option<PathBuf> {
    tool("dnsmasq", &["/usr/sbin/dnsmasq"], "dnsmasq-base")
}

/// `named-checkzone` (Debian package `bind9-utils`).
pub fn named_checkzone_program() -> Option<PathBuf> {
    tool(
        "named-checkzone",
        &["/usr/bin/named-checkzone", "/usr/sbin/named-checkzone"],
        "bind9-utils",
    )
}

/// One query as the observer saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    /// The client.
    pub client: SocketAddr,
    /// The name asked.
    pub name: String,
    /// The type asked.
    pub qtype: String,
    /// The answers' data.
    pub answers: Vec<String>,
}

/// Records every report.
#[derive(Default)]
pub struct Recorder(pub Mutex<Vec<Seen>>);

impl DnsObserver for Recorder {
    fn answered(&self, client: SocketAddr, name: &str, qtype: &str, answers: &[String]) {
        self.0.lock().unwrap().push(Seen {
            client,
            name: name.to_string(),
            qtype: qtype.to_string(),
            answers: answers.to_vec(),
        });
    }
}

impl Recorder {
    /// Waits (at most 3 s) for a report of `name`, `qtype`.
    pub fn wait_for(&self, name: &str, qtype: &str) -> Seen {
        let deadline = Instant::now() + Duration::from_secs(3);
        loop {
            if let Some(s) = self
                .0
                .lock()
                .unwrap()
                .iter()
                .find(|s| s.name == name && s.qtype == qtype)
            {
                return s.clone();
            }
            assert!(
                Instant::now() < deadline,
                "observer never saw {name} {qtype}: {:?}",
                self.0.lock().unwrap()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Our server running on 127.0.0.1 in a runtime of its own, so tests can
/// block on `dig`.
pub struct Running {
    /// The runtime the server's tasks run on.
    pub rt: tokio::runtime::Runtime,
    server: Option<DnsServer>,
    /// Where it listens (UDP and TCP).
    pub addr: SocketAddr,
    /// Every query it reported.
    pub seen: Arc<Recorder>,
}

impl Running {
    /// Starts the server for `inv` on 127.0.0.1 with a kernel-chosen port.
    pub fn start(inv: &Inventory, etcd: bool) -> Running {
        Running::start_with(inv, etcd, okd_dns::DnsOptions::default())
    }

    /// [`Running::start`] with `options`.
    pub fn start_with(inv: &Inventory, etcd: bool, options: okd_dns::DnsOptions) -> Running {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let seen = Arc::new(Recorder::default());
        let obs: Arc<dyn DnsObserver> = seen.clone();
        let server = rt
            .block_on(DnsServer::start_with(
                inv,
                "127.0.0.1:0".parse().unwrap(),
                etcd,
                Some(obs),
                options,
            ))
            .expect("server starts");
        let addr = server.local_addr();
        Running {
            rt,
            server: Some(server),
            addr,
            seen,
        }
    }

    /// Stops the server and waits until its sockets are closed.
    pub fn stop(mut self) -> SocketAddr {
        if let Some(s) = self.server.take() {
            self.rt.block_on(s.shutdown());
        }
        self.addr
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(s) = self.server.take() {
            self.rt.block_on(s.shutdown());
        }
    }
}

/// One resource record as dig prints it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rr {
    /// Owner, lower case.
    pub name: String,
    /// TTL in seconds.
    pub ttl: u32,
    /// Type mnemonic.
    pub rtype: String,
    /// Data, fields joined by one space.
    pub data: String,
}

/// dig's reading of a response.
#[derive(Debug, Clone, Default)]
pub struct Dig {
    /// `NOERROR`, `NXDOMAIN`, `REFUSED`, … (empty when no answer came).
    pub status: String,
    /// Header flags (`qr`, `aa`, `rd`, `ra`, `tc`).
    pub flags: Vec<String>,
    /// Answer section.
    pub answer: Vec<Rr>,
    /// Authority section.
    pub authority: Vec<Rr>,
    /// Additional section (without OPT).
    pub additional: Vec<Rr>,
    /// dig's whole output.
    pub raw: String,
}

impl Dig {
    /// The answers' data, sorted.
    pub fn data(&self) -> Vec<String> {
        let mut v: Vec<String> = self.answer.iter().map(|r| r.data.clone()).collect();
        v.sort();
        v
    }

    /// Whether the AA flag is set.
    pub fn aa(&self) -> bool {
        self.flags.iter().any(|f| f == "aa")
    }
}

/// Runs `dig @<server ip> -p <port> +time=2 +tries=1 <args>` and parses it.
pub fn dig(dig: &Path, server: SocketAddr, args: &[&str]) -> Dig {
    let out = Command::new(dig)
        .arg(format!("@{}", server.ip()))
        .arg("-p")
        .arg(server.port().to_string())
        .args(["+time=2", "+tries=1"])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run dig");
    let raw = String::from_utf8_lossy(&out.stdout).to_string();
    let mut d = Dig {
        raw: raw.clone(),
        ..Dig::default()
    };
    let mut section = "";
    for line in raw.lines() {
        if let Some(rest) = line.split("status: ").nth(1) {
            d.status = rest.split(',').next().unwrap_or("").to_string();
        }
        if let Some(rest) = line.strip_prefix(";; flags: ") {
            d.flags = rest
                .split(';')
                .next()
                .unwrap_or("")
                .split_whitespace()
                .map(String::from)
                .collect();
        }
        if line.starts_with(";; ") && line.ends_with("SECTION:") {
            section = if line.contains("ANSWER") {
                "answer"
            } else if line.contains("AUTHORITY") {
                "authority"
            } else if line.contains("ADDITIONAL") {
                "additional"
            } else {
                ""
            };
            continue;
        }
        if line.trim().is_empty() {
            section = "";
            continue;
        }
        if line.starts_with(';') || section.is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 5 {
            continue;
        }
        let rr = Rr {
            name: f[0].to_ascii_lowercase(),
            ttl: f[1].parse().unwrap_or(0),
            rtype: f[3].to_string(),
            data: f[4..].join(" "),
        };
        match section {
            "answer" => d.answer.push(rr),
            "authority" => d.authority.push(rr),
            _ => d.additional.push(rr),
        }
    }
    d
}

/// A dnsmasq on 127.0.0.1 killed (by PID) and reaped on drop.
pub struct Dnsmasq {
    child: Child,
    /// Its UDP/TCP address.
    pub addr: SocketAddr,
    _dir: tempfile::TempDir,
}

impl Dnsmasq {
    /// Starts `dnsmasq -k` with `conf` plus `port=`, `listen-address=127.0.0.1`
    /// and `bind-interfaces`, on a free port; waits (at most 5 s) until it
    /// answers. `conf` must not set `port`, `listen-address` or `interface`.
    pub fn start(program: &Path, conf: &str) -> Dnsmasq {
        let dir = tempfile::tempdir().expect("tempdir");
        let port = free_port();
        let path = dir.path().join("dnsmasq.conf");
        std::fs::write(
            &path,
            format!("{conf}\nport={port}\nlisten-address=127.0.0.1\nbind-interfaces\n"),
        )
        .expect("write conf");
        let child = Command::new(program)
            .arg("-k")
            .arg("-C")
            .arg(&path)
            .arg(format!("--pid-file={}", dir.path().join("pid").display()))
            .arg(format!(
                "--log-facility={}",
                dir.path().join("log").display()
            ))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start dnsmasq");
        let addr: SocketAddr = ([127, 0, 0, 1], port).into();
        let mut d = Dnsmasq {
            child,
            addr,
            _dir: dir,
        };
        d.wait_ready();
        d
    }

    fn wait_ready(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(5);
        let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
        sock.set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        // A query for "." type SOA: any response means dnsmasq is serving.
        let q = [0xab, 0xcd, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 6, 0, 1];
        let mut buf = [0u8; 512];
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("dnsmasq exited at start: {status}");
            }
            let _ = sock.send_to(&q, self.addr);
            if let Ok((n, _)) = sock.recv_from(&mut buf)
                && n >= 2
                && buf[..2] == q[..2]
            {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "dnsmasq did not answer on {} within 5 s",
                self.addr
            );
        }
    }
}

impl Drop for Dnsmasq {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A port free for UDP and TCP on 127.0.0.1 right now.
pub fn free_port() -> u16 {
    for _ in 0..50 {
        let u = UdpSocket::bind("127.0.0.1:0").unwrap();
        let port = u.local_addr().unwrap().port();
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free port on 127.0.0.1");
}
