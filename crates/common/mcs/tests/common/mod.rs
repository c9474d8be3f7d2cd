//! Shared harness of the okd-mcs tests: a CA and server certificate from
//! okd-pki, MachineConfig builders, a server on 127.0.0.1:0, and real
//! programs run with a bounded wait and killed by PID on drop.
#![allow(dead_code)]

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use okd_mcs::{BootstrapInputs, FetchObserver, McsState};
use okd_pki::{CertConfig, CertKey, ExtKeyUsage, KeyUsage, NameAttr, RsaKey};
use serde_json::{Value, json};

/// Finds a program; `None` (after a loud message) when missing, unless
/// `OKD_REQUIRE_TOOLS=1` (CI), where a missing tool fails the test.
pub fn tool(name: &str, paths: &[&str]) -> Option<PathBuf> {
    okd_test_utils::tool(name, paths, None)
}

/// `ignition-validate` (Debian package `ignition`).
pub fn ignition_validate() -> Option<PathBuf> {
    tool("ignition-validate", &["/usr/bin/ignition-validate"])
}

/// The `ignition` binary (Debian package `ignition`, not on PATH).
pub fn ignition() -> Option<PathBuf> {
    tool(
        "ignition",
        &["/usr/lib/dracut/modules.d/30ignition/ignition"],
    )
}

/// A CA and a server certificate for 127.0.0.1 / localhost.
#[derive(Clone)]
pub struct Pki {
    /// The CA certificate (PEM).
    pub ca_pem: String,
    /// The server certificate chain (leaf, then CA).
    pub cert_pem: String,
    /// The server key (PKCS#1 PEM).
    pub key_pem: String,
}

fn ca(cn: &str) -> CertKey {
    let cfg = CertConfig::signer("openshift", cn, Duration::from_secs(86_400));
    okd_pki::self_signed(
        &cfg,
        RsaKey::generate().expect("CA key"),
        time::OffsetDateTime::now_utc(),
    )
    .expect("CA certificate")
}

fn make_pki() -> Pki {
    let root = ca("root-ca");
    let cfg = CertConfig {
        subject: vec![(NameAttr::CommonName, "system:machine-config-server".into())],
        dns_names: vec!["localhost".into(), "api-int.okd.example".into()],
        ip_addresses: vec![IpAddr::V4(Ipv4Addr::LOCALHOST)],
        key_usage: KeyUsage {
            digital_signature: true,
            key_encipherment: true,
            ..KeyUsage::default()
        },
        ext_key_usage: vec![ExtKeyUsage::ServerAuth],
        validity: Duration::from_secs(86_400),
        is_ca: false,
    };
    let leaf = okd_pki::signed(
        &cfg,
        RsaKey::generate().expect("server key"),
        &root,
        time::OffsetDateTime::now_utc(),
    )
    .expect("server certificate");
    Pki {
        ca_pem: root.cert.pem.clone(),
        cert_pem: okd_pki::pem_with_parent(&leaf.cert, &root.cert),
        key_pem: leaf.key.private_pem(),
    }
}

/// One PKI per test binary (RSA key generation is the slow part).
pub fn pki() -> Pki {
    static PKI: OnceLock<Pki> = OnceLock::new();
    PKI.get_or_init(make_pki).clone()
}

/// Another CA, which signed nothing the server presents.
pub fn other_ca_pem() -> String {
    static OTHER: OnceLock<String> = OnceLock::new();
    OTHER.get_or_init(|| ca("other-ca").cert.pem).clone()
}

/// Bootstrap inputs with recognizable CA and kubeconfig bytes and the
/// test PKI's TLS pair.
pub fn inputs() -> BootstrapInputs {
    let p = pki();
    BootstrapInputs {
        kubelet_ca: p.ca_pem.clone().into_bytes(),
        kubeconfig: b"apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n    server: https://api-int.okd.example:6443\n  name: local\n# \"quotes\" & <angles> !\n".to_vec(),
        tls_cert_pem: p.cert_pem.into_bytes(),
        tls_key_pem: p.key_pem.into_bytes(),
    }
}

/// A MachineConfig named `name` for pool `role` with `spec`.
pub fn mc(name: &str, role: &str, spec: Value) -> Value {
    json!({
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineConfig",
        "metadata": {"name": name, "labels": {"machineconfiguration.openshift.io/role": role}},
        "spec": spec,
    })
}

/// `data:,` + percent-escaped text.
pub fn data(text: &str) -> String {
    okd_mcs::escape_data_url(text.as_bytes())
}

/// A representative set of master and worker MachineConfigs: files, a
/// directory, a link, units with dropins, the core user's SSH keys, an
/// appended file, kernel arguments.
pub fn sample_configs() -> Vec<Value> {
    vec![
        mc(
            "00-master",
            "master",
            json!({
                "config": {
                    "ignition": {"version": "3.2.0"},
                    "passwd": {"users": [{"name": "core", "sshAuthorizedKeys": ["ssh-ed25519 AAAAone core@a"]}]},
                    "storage": {
                        "files": [
                            {"path": "/etc/hostname", "mode": 420, "contents": {"source": data("master-0\n")}},
                            {"path": "/usr/local/bin/bootkube.sh", "mode": 493, "overwrite": true,
                             "contents": {"source": data("#!/bin/bash\necho hi\n")}},
                            {"path": "/etc/motd", "mode": 420, "contents": {"source": data("hello\n")},
                             "append": [{"source": data("more\n")}]}
                        ],
                        "directories": [{"path": "/etc/kubernetes/manifests", "mode": 493}],
                        "links": [{"path": "/etc/localtime", "target": "/usr/share/zoneinfo/UTC"}]
                    },
                    "systemd": {"units": [
                        {"name": "kubelet.service", "enabled": true,
                         "contents": "[Unit]\nDescription=Kubelet\n[Service]\nExecStart=/usr/bin/kubelet\n[Install]\nWantedBy=multi-user.target\n"},
                        {"name": "zincati.service", "mask": true}
                    ]}
                },
                "kernelArguments": ["systemd.unified_cgroup_hierarchy=1"]
            }),
        ),
        mc(
            "01-master-kubelet",
            "master",
            json!({
                "config": {
                    "ignition": {"version": "3.1.0"},
                    "systemd": {"units": [{"name": "kubelet.service",
                        "dropins": [{"name": "10-mco.conf", "contents": "[Service]\nEnvironment=A=1\n"}]}]}
                }
            }),
        ),
        mc(
            "99-master-ssh",
            "master",
            json!({
                "config": {
                    "ignition": {"version": "3.2.0"},
                    "passwd": {"users": [{"name": "core", "sshAuthorizedKeys": ["ssh-ed25519 AAAAtwo core@b"]}]}
                }
            }),
        ),
        mc(
            "99-worker-ssh",
            "worker",
            json!({
                "config": {
                    "ignition": {"version": "3.2.0"},
                    "passwd": {"users": [{"name": "core", "sshAuthorizedKeys": ["ssh-ed25519 AAAAworker core@w"]}]}
                }
            }),
        ),
    ]
}

/// The state of [`sample_configs`] with [`inputs`].
pub fn sample_state() -> McsState {
    McsState::from_parts(sample_configs(), inputs()).expect("render sample configs")
}

/// Kills and reaps a child process by its PID when dropped (also when a
/// test panics).
pub struct ChildGuard {
    child: Option<Child>,
    what: String,
}

impl ChildGuard {
    /// Spawns `cmd`, with stdout and stderr going to files in `log_dir`.
    pub fn spawn(mut cmd: Command, what: &str, log_dir: &Path) -> ChildGuard {
        let out = std::fs::File::create(log_dir.join(format!("{what}.out"))).expect("log file");
        let err = std::fs::File::create(log_dir.join(format!("{what}.err"))).expect("log file");
        let child = cmd
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .unwrap_or_else(|e| panic!("start {what}: {e}"));
        ChildGuard {
            child: Some(child),
            what: what.to_string(),
        }
    }

    /// The child's PID.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// Waits at most `limit` for the child to exit (polling); kills it
    /// when the limit passes. Returns the exit code, `None` when killed or
    /// ended by a signal.
    pub fn wait_bounded(&mut self, limit: Duration) -> Option<i32> {
        let deadline = Instant::now() + limit;
        let child = self.child.as_mut()?;
        loop {
            match child.try_wait() {
                Ok(Some(st)) => {
                    self.child = None;
                    return st.code();
                }
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                _ => {
                    eprintln!(
                        "{} (pid {}) ran past {limit:?}: killing it",
                        self.what,
                        child.id()
                    );
                    let _ = child.kill();
                    let _ = child.wait();
                    self.child = None;
                    return None;
                }
            }
        }
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if let Some(c) = self.child.as_mut() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The result of a bounded run of a real program.
pub struct Ran {
    /// Exit code; `None` when it was killed at the time limit.
    pub code: Option<i32>,
    /// Standard output.
    pub stdout: Vec<u8>,
    /// Standard error.
    pub stderr: String,
}

/// Runs `cmd` to completion, at most `limit`; blocking (call it through
/// `spawn_blocking` from async tests, so the server keeps running).
pub fn run_bounded(cmd: Command, what: &str, limit: Duration) -> Ran {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut g = ChildGuard::spawn(cmd, what, dir.path());
    let code = g.wait_bounded(limit);
    drop(g);
    Ran {
        code,
        stdout: std::fs::read(dir.path().join(format!("{what}.out"))).unwrap_or_default(),
        stderr: String::from_utf8_lossy(
            &std::fs::read(dir.path().join(format!("{what}.err"))).unwrap_or_default(),
        )
        .into_owned(),
    }
}

/// Runs `ignition-validate` on `config`; `Ok(stderr)` on rc 0 (warnings
/// may be printed), `Err(stderr)` otherwise.
pub fn validate(bin: &Path, config: &[u8]) -> Result<String, String> {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = dir.path().join("config.ign");
    std::fs::write(&f, config).expect("write config");
    let mut cmd = Command::new(bin);
    cmd.arg(&f);
    let r = run_bounded(cmd, "ignition-validate", Duration::from_secs(30));
    let text = format!("{}{}", String::from_utf8_lossy(&r.stdout), r.stderr);
    if r.code == Some(0) {
        Ok(text)
    } else {
        Err(text)
    }
}

/// What a [`Recorder`] saw: peer, pool, spec, status.
pub type Fetch = (SocketAddr, String, String, u16);

/// A FetchObserver that records every call.
#[derive(Default)]
pub struct Recorder(pub Mutex<Vec<Fetch>>);

impl FetchObserver for Recorder {
    fn fetched(&self, peer: SocketAddr, pool: &str, spec: &str, status: u16) {
        self.0.lock().expect("recorder lock").push((
            peer,
            pool.to_string(),
            spec.to_string(),
            status,
        ));
    }
}

impl Recorder {
    /// A copy of the calls so far.
    pub fn calls(&self) -> Vec<Fetch> {
        self.0.lock().expect("recorder lock").clone()
    }
}

/// A running server; stopped (gracefully) on drop.
pub struct Server {
    /// Where it listens.
    pub addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<Result<(), okd_mcs::McsError>>,
}

impl Server {
    /// Starts [`okd_mcs::serve`] over TLS (or plain HTTP) on 127.0.0.1:0.
    pub fn start(state: McsState, observer: Option<Arc<dyn FetchObserver>>, tls: bool) -> Server {
        Server::start_with(state, observer, tls, okd_listen::Limits::default())
    }

    /// [`Server::start`] with connection `limits`.
    pub fn start_with(
        state: McsState,
        observer: Option<Arc<dyn FetchObserver>>,
        tls: bool,
        limits: okd_listen::Limits,
    ) -> Server {
        let listener = okd_mcs::bind("127.0.0.1:0".parse().expect("addr")).expect("bind");
        listener.set_nonblocking(true).expect("nonblocking");
        let addr = listener.local_addr().expect("local addr");
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let shutdown = async move {
            let _ = rx.await;
        };
        let state = Arc::new(state);
        let transport = if tls {
            okd_mcs::Transport::Tls
        } else {
            okd_mcs::Transport::Plain
        };
        let task = tokio::spawn(okd_mcs::serve(
            listener, state, observer, transport, limits, shutdown,
        ));
        Server {
            addr,
            stop: Some(tx),
            task,
        }
    }

    /// Stops it and waits (at most 10 s) for the serve call to return.
    pub async fn stop(mut self) -> Result<(), okd_mcs::McsError> {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        let task = std::mem::replace(&mut self.task, tokio::spawn(async { Ok(()) }));
        tokio::time::timeout(Duration::from_secs(10), task)
            .await
            .expect("server stops within 10 s")
            .expect("server task")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        self.task.abort();
    }
}

/// Splits a raw HTTP/1.1 response into status, headers (lower-case names)
/// and body.
pub fn parse_response(raw: &[u8]) -> (u16, Vec<(String, String)>, Vec<u8>) {
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("end of headers");
    let head = String::from_utf8_lossy(&raw[..end]).into_owned();
    let mut lines = head.split("\r\n");
    let status: u16 = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .expect("status line");
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    (status, headers, raw[end + 4..].to_vec())
}

/// The value of header `name` (lower-case).
pub fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// An asset directory after `create ignition-configs` for
/// `examples/<example>/install-config.yaml`, made with the okd-assets
/// library (what `okd-install create ignition-configs --dir` runs).
pub fn real_asset_dir(example: &str) -> tempfile::TempDir {
    use okd_types::release::{DEFAULT_RELEASE_IMAGE, ReleaseTarget};
    let d = tempfile::tempdir().expect("tempdir");
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../..");
    std::fs::copy(
        repo.join("examples")
            .join(example)
            .join("install-config.yaml"),
        d.path().join("install-config.yaml"),
    )
    .expect("copy install-config.yaml");
    let target = ReleaseTarget::from_release_image(DEFAULT_RELEASE_IMAGE).expect("release target");
    let mut ctx = okd_assets::GenCtx::new(
        DEFAULT_RELEASE_IMAGE.to_string(),
        target,
        target.ignition_spec(),
    );
    okd_assets::create(
        &okd_assets::AssetDir::new(d.path()),
        &mut ctx,
        okd_assets::Target::IgnitionConfigs,
        2,
    )
    .expect("create ignition-configs");
    d
}
