//! A real control plane for the cluster tests: etcd, kube-apiserver and
//! kube-controller-manager of the kit (`tests/kube`), started in a network
//! namespace of the test's own with exactly the certificates, keys and
//! kubeconfigs that okd-install's `bootstrap.ign` carries, laid down by the
//! real Ignition.
//!
//! Flags follow the bootstrap control plane that bootkube starts:
//! `bindata/bootkube/config/bootstrap-config-overrides.yaml` of
//! openshift/cluster-kube-apiserver-operator (serving certificates chosen
//! by SNI, client CA, aggregator, kubelet client, service-account keys) and
//! of openshift/cluster-kube-controller-manager-operator (kubelet-signer
//! signs node certificates, the loopback kubeconfig). etcd's certificates
//! are made here, as cluster-etcd-operator's `render` makes them on a real
//! bootstrap node (openshift/cluster-etcd-operator `pkg/cmd/render/render.go`,
//! `certs.go`).
//!
//! The namespace's `/etc/netns/<ns>/hosts` maps `api.<domain>` and
//! `api-int.<domain>` to the namespace's address, so every kubeconfig is
//! used unchanged by programs run with `ip netns exec`. Drop kills every
//! process (by PID) and removes the namespaces and their files, also when
//! the test fails.
#![allow(dead_code)]

use std::future::Future;
use std::os::fd::AsFd as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use super::netns::ip;
use super::serve::IGNITION;
use super::*;

static NEXT: AtomicU32 = AtomicU32::new(0);

/// Which control-plane programs to start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum With {
    /// etcd + kube-apiserver.
    ApiServer,
    /// etcd + kube-apiserver + kube-controller-manager.
    ControllerManager,
}

/// A running control plane in namespace `ns`.
pub struct ControlPlane {
    /// Namespace name.
    pub ns: String,
    /// The namespace's address (`api`, `api-int` resolve to it).
    pub addr: String,
    /// `<metadata.name>.<baseDomain>`.
    pub domain: String,
    /// The asset directory (`auth/kubeconfig` for `api.<domain>`).
    pub dir: PathBuf,
    /// The root Ignition wrote `bootstrap.ign` into.
    pub root: PathBuf,
    /// Scratch space (logs, etcd data).
    pub scratch: PathBuf,
    bin: PathBuf,
    children: Vec<(String, Child)>,
    extra_ns: Vec<String>,
}

/// The example's machine network: the control plane takes the address of
/// the bastion (`apiAddress` of bastion-config.yaml), nodes their inventory
/// addresses. It exists only inside the test's namespaces.
pub const NET: &str = "192.168.120";

/// Runs `f` to completion on a new thread inside network namespace `ns`
/// (threads it starts, tokio's blocking pool, are inside too).
pub fn in_netns<F, Fut, T>(ns: &str, f: F) -> T
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future<Output = T>,
    T: Send + 'static,
{
    let path = PathBuf::from("/run/netns").join(ns);
    std::thread::spawn(move || {
        let file = std::fs::File::open(&path).unwrap();
        rustix::thread::move_into_link_name_space(
            file.as_fd(),
            Some(rustix::thread::LinkNameSpaceType::Network),
        )
        .unwrap();
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(f())
    })
    .join()
    .unwrap_or_else(|e| std::panic::resume_unwind(e))
}

/// `ip netns exec ns program`.
pub fn in_ns(ns: &str, program: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut c = Command::new("ip");
    c.args(["netns", "exec", ns]).arg(program);
    c
}

/// Applies a full Ignition config (not a pointer) with the real Ignition
/// into `scratch/root`, as on a first boot; returns the root.
pub fn apply_ignition(config: &Path, scratch: &Path) -> PathBuf {
    let (root, run, stub) = ignition_root(scratch);
    let cache = run.join("ignition.json");
    let fetch = Command::new(IGNITION)
        .args(["-platform=file", "-stage=fetch", "-log-to-stdout"])
        .arg(format!("-config-cache={}", cache.display()))
        .arg(format!("-state-file={}", run.join("state").display()))
        .arg(format!("-neednet={}", run.join("neednet").display()))
        .env("IGNITION_CONFIG_FILE", config)
        .output()
        .unwrap();
    assert!(
        fetch.status.success(),
        "ignition fetch: {}",
        String::from_utf8_lossy(&fetch.stdout)
    );
    let files = super::serve::ignition_files(&root, &run, &stub);
    assert!(
        files.status.success(),
        "ignition files: {}",
        String::from_utf8_lossy(&files.stdout)
    );
    root
}

/// The programs a test needs, or `None` (the test skips; under
/// `OKD_REQUIRE_TOOLS=1` a missing one panics).
pub fn kit(with: With) -> Option<PathBuf> {
    let mut need = vec!["etcd", "kube-apiserver"];
    if with == With::ControllerManager {
        need.push("kube-controller-manager");
    }
    let mut dir = None;
    for n in need {
        dir = Some(okd_test_utils::kube_tool(n)?.parent()?.to_path_buf());
    }
    tool("ignition", &[IGNITION])?;
    tool("kubectl", &[])?;
    tool("openssl", &[])?;
    if !super::netns::available() {
        return None;
    }
    dir
}

impl ControlPlane {
    /// Starts a control plane for asset directory `dir` (after `create
    /// ignition-configs`). `None` when the kit or a tool is missing.
    pub fn start(dir: &Path, scratch: &Path, with: With) -> Option<ControlPlane> {
        Self::start_on(dir, scratch, with, 101)
    }

    /// [`ControlPlane::start`] with the control plane at `192.168.120.<host>`
    /// (102 is the inventory's bootstrap host, behind serve's load balancer
    /// on the bastion's 101).
    pub fn start_on(dir: &Path, scratch: &Path, with: With, host: u8) -> Option<ControlPlane> {
        let mut cp = Self::start_processes(dir, scratch, with, host)?;
        cp.bootstrap_rbac();
        if with == With::ControllerManager {
            cp.start_controller_manager();
        }
        Some(cp)
    }

    /// etcd + kube-apiserver only, ready, with nothing applied: for
    /// certificates the clients will refuse (expired serving certificates).
    pub fn start_unready(dir: &Path, scratch: &Path) -> Option<ControlPlane> {
        Self::start_processes(dir, scratch, With::ApiServer, 101)
    }

    fn start_processes(dir: &Path, scratch: &Path, with: With, host: u8) -> Option<ControlPlane> {
        let bin = kit(with)?;
        let root = apply_ignition(&dir.join("bootstrap.ign"), &scratch.join("ign"));
        let meta: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.join("metadata.json")).unwrap()).unwrap();
        let name = meta["clusterName"].as_str().unwrap().to_string();
        let kubeconfig = std::fs::read_to_string(dir.join("auth/kubeconfig")).unwrap();
        let domain = kubeconfig
            .lines()
            .find_map(|l| l.trim().strip_prefix("server: https://api."))
            .map(|s| s.trim_end_matches(":6443").to_string())
            .unwrap_or_else(|| format!("{name}.example"));
        let n = NEXT.fetch_add(1, Ordering::SeqCst);
        let ns = format!("okdk{}-{n}", std::process::id());
        let addr = format!("{NET}.{host}");
        let mut cp = ControlPlane {
            ns: ns.clone(),
            addr: addr.clone(),
            domain: domain.clone(),
            dir: dir.to_path_buf(),
            root,
            scratch: scratch.to_path_buf(),
            bin,
            children: Vec::new(),
            extra_ns: Vec::new(),
        };
        ip(&["netns", "add", &ns]);
        ip(&["-n", &ns, "link", "set", "lo", "up"]);
        ip(&["-n", &ns, "link", "add", "br0", "type", "bridge"]);
        ip(&[
            "-n",
            &ns,
            "addr",
            "add",
            &format!("{addr}/24"),
            "dev",
            "br0",
        ]);
        ip(&["-n", &ns, "link", "set", "br0", "up"]);
        ip(&["-n", &ns, "route", "add", "default", "dev", "br0"]);
        cp.write_hosts(&ns);
        cp.etcd_certs();
        cp.start_etcd();
        cp.start_apiserver();
        cp.wait_ready();
        Some(cp)
    }

    fn write_hosts(&self, ns: &str) {
        let etc = PathBuf::from("/etc/netns").join(ns);
        std::fs::create_dir_all(&etc).unwrap();
        std::fs::write(
            etc.join("hosts"),
            format!(
                "127.0.0.1 localhost\n::1 localhost\n{} api.{d} api-int.{d}\n",
                self.addr,
                d = self.domain
            ),
        )
        .unwrap();
        std::fs::write(etc.join("resolv.conf"), "nameserver 127.0.0.1\n").unwrap();
    }

    /// `/opt/openshift/tls/<name>` in the Ignition root.
    pub fn tls(&self, name: &str) -> PathBuf {
        self.root.join("opt/openshift/tls").join(name)
    }

    /// `/opt/openshift/auth/<name>` in the Ignition root (`kubeconfig`,
    /// `kubeconfig-kubelet`, `kubeconfig-loopback`).
    pub fn auth(&self, name: &str) -> PathBuf {
        self.root.join("opt/openshift/auth").join(name)
    }

    /// The etcd CA, server and client certificates that
    /// cluster-etcd-operator's render would make (openssl).
    fn etcd_certs(&self) {
        let d = self.scratch.join("etcd-tls");
        std::fs::create_dir_all(&d).unwrap();
        let sh = r#"set -e
openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 1 -subj "/OU=openshift/CN=etcd-signer"
openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj "/CN=system:etcd-server:etcd-bootstrap"
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n' > server.ext
openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out server.crt -days 1 -extfile server.ext
openssl req -newkey rsa:2048 -nodes -keyout client.key -out client.csr -subj "/O=etcd/CN=etcd"
printf 'extendedKeyUsage=clientAuth\n' > client.ext
openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out client.crt -days 1 -extfile client.ext
"#;
        let out = Command::new("sh")
            .arg("-c")
            .arg(sh)
            .current_dir(&d)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "etcd certs: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn etcd_tls(&self, f: &str) -> String {
        self.scratch.join("etcd-tls").join(f).display().to_string()
    }

    /// Starts `program` in the namespace with `args`; output to
    /// `scratch/<label>.log`. Killed by PID on drop.
    pub fn spawn(&mut self, label: &str, program: &Path, args: &[String]) {
        let ns = self.ns.clone();
        self.spawn_in(&ns, label, program, args);
    }

    /// Kills the process started as `label` (by PID) and waits for it.
    pub fn kill(&mut self, label: &str) {
        if let Some(i) = self.children.iter().position(|(l, _)| l == label) {
            let (_, mut c) = self.children.remove(i);
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Creates the ConfigMap `kube-system/bootstrap` with `data.status`
    /// as the bootstrap's report-progress.sh does (openshift/installer
    /// `data/data/bootstrap/files/usr/local/bin/report-progress.sh`).
    pub fn report_bootstrap(&self, status: &str) {
        self.admin(&[
            "create",
            "configmap",
            "bootstrap",
            "-n",
            "kube-system",
            &format!("--from-literal=status={status}"),
        ]);
    }

    /// The PID of the process started as `label`.
    pub fn pid(&self, label: &str) -> Option<u32> {
        self.children
            .iter()
            .find(|(l, _)| l == label)
            .map(|(_, c)| c.id())
    }

    /// The log of `label`.
    pub fn log(&self, label: &str) -> String {
        std::fs::read_to_string(self.scratch.join(format!("{label}.log"))).unwrap_or_default()
    }

    fn start_etcd(&mut self) {
        let data = self.scratch.join("etcd-data");
        let args = vec![
            "--name=etcd-bootstrap".to_string(),
            format!("--data-dir={}", data.display()),
            "--listen-client-urls=https://127.0.0.1:2379".into(),
            "--advertise-client-urls=https://127.0.0.1:2379".into(),
            "--listen-peer-urls=http://127.0.0.1:2380".into(),
            "--initial-advertise-peer-urls=http://127.0.0.1:2380".into(),
            "--initial-cluster=etcd-bootstrap=http://127.0.0.1:2380".into(),
            format!("--cert-file={}", self.etcd_tls("server.crt")),
            format!("--key-file={}", self.etcd_tls("server.key")),
            format!("--trusted-ca-file={}", self.etcd_tls("ca.crt")),
            "--client-cert-auth".into(),
            "--log-level=warn".into(),
        ];
        let etcd = self.bin.join("etcd");
        self.spawn("etcd", &etcd, &args);
    }

    /// kube-apiserver's flags: the bootstrap control plane's own
    /// (`okd_bootstrap_render::control_plane::apiserver_args`, the flags
    /// the node renders into its static pod), with the bootstrap secrets'
    /// paths pointing at the Ignition root's `tls/` and etcd's client
    /// certificates at this harness's etcd.
    pub fn apiserver_args(&self) -> Vec<String> {
        let assets = self.root.join("opt/openshift");
        let input = okd_bootstrap_render::Input {
            assets: assets.clone(),
            etc_kubernetes: self.root.join("etc/kubernetes"),
            node_ip: self.addr.parse().unwrap(),
            etcd_image: String::new(),
            hyperkube_image: String::new(),
        };
        let net = okd_bootstrap_render::Networks::read(&assets).unwrap();
        let tls = self.tls("").display().to_string();
        let tls = tls.trim_end_matches('/');
        okd_bootstrap_render::control_plane::apiserver_args(&input, &net)
            .into_iter()
            .skip(1)
            .map(|a| {
                if let Some(v) = a.strip_prefix("--etcd-cafile=") {
                    assert!(v.ends_with("etcd-ca-bundle.crt"), "{a}");
                    format!("--etcd-cafile={}", self.etcd_tls("ca.crt"))
                } else if a.starts_with("--etcd-certfile=") {
                    format!("--etcd-certfile={}", self.etcd_tls("client.crt"))
                } else if a.starts_with("--etcd-keyfile=") {
                    format!("--etcd-keyfile={}", self.etcd_tls("client.key"))
                } else {
                    a.replace(okd_bootstrap_render::BOOTSTRAP_SECRETS, tls)
                }
            })
            .collect()
    }

    /// Starts kube-apiserver with [`Self::apiserver_args`].
    pub fn start_apiserver(&mut self) {
        let args = self.apiserver_args();
        let prog = self.bin.join("kube-apiserver");
        self.spawn("kube-apiserver", &prog, &args);
    }

    /// Waits (bounded, 90 s) until `https://localhost:6443/readyz` says
    /// `ok` (anonymous, certificate not verified: the tests check the
    /// certificates themselves).
    pub fn wait_ready(&self) {
        let start = Instant::now();
        loop {
            let out = in_ns(&self.ns, "curl")
                .args(["-ks", "--max-time", "5", "https://localhost:6443/readyz"])
                .output()
                .unwrap();
            if out.status.success() && out.stdout == b"ok" {
                return;
            }
            assert!(
                start.elapsed() < Duration::from_secs(90),
                "kube-apiserver did not become ready: {}\n{}",
                String::from_utf8_lossy(&out.stderr),
                tail(&self.log("kube-apiserver"), 30)
            );
            std::thread::sleep(Duration::from_millis(300));
        }
    }

    /// What MCO's bootstrap manifests grant the kubelet's bootstrap identity
    /// (openshift/machine-config-operator
    /// `manifests/machineconfigserver/csr-bootstrap-role-binding.yaml`,
    /// `csr-renewal-role-binding.yaml`), applied as the admin.
    fn bootstrap_rbac(&self) {
        let yaml = "apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: system-bootstrap-node-bootstrapper
subjects:
- kind: ServiceAccount
  name: node-bootstrapper
  namespace: openshift-machine-config-operator
roleRef:
  kind: ClusterRole
  name: system:node-bootstrapper
  apiGroup: rbac.authorization.k8s.io
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: system-bootstrap-node-renewal
subjects:
- kind: Group
  name: system:nodes
  apiGroup: rbac.authorization.k8s.io
roleRef:
  kind: ClusterRole
  name: system:certificates.k8s.io:certificatesigningrequests:selfnodeclient
  apiGroup: rbac.authorization.k8s.io
";
        self.apply_yaml(yaml);
    }

    /// `kubectl apply -f -` of `yaml` as the admin (bounded retries while
    /// the API settles).
    pub fn apply_yaml(&self, yaml: &str) {
        let f = self.scratch.join(format!(
            "apply-{}.yaml",
            NEXT.fetch_add(1, Ordering::SeqCst)
        ));
        std::fs::write(&f, yaml).unwrap();
        let kc = self.dir.join("auth/kubeconfig");
        let mut last = String::new();
        for _ in 0..20 {
            let out = self.kubectl(&kc, &["apply", "-f", f.to_str().unwrap()]);
            if out.status.success() {
                return;
            }
            last = String::from_utf8_lossy(&out.stderr).into_owned();
            std::thread::sleep(Duration::from_millis(500));
        }
        panic!("kubectl apply failed: {last}");
    }

    /// Starts kube-controller-manager with the bootstrap flags.
    pub fn start_controller_manager(&mut self) {
        let t = |f: &str| self.tls(f).display().to_string();
        let kc = self.auth("kubeconfig-loopback").display().to_string();
        let args = vec![
            format!("--kubeconfig={kc}"),
            format!("--authentication-kubeconfig={kc}"),
            format!("--authorization-kubeconfig={kc}"),
            "--secure-port=10257".into(),
            format!(
                "--root-ca-file={}",
                t("kube-apiserver-complete-server-ca-bundle.crt")
            ),
            format!(
                "--service-account-private-key-file={}",
                t("service-account.key")
            ),
            format!("--cluster-signing-cert-file={}", t("kubelet-signer.crt")),
            format!("--cluster-signing-key-file={}", t("kubelet-signer.key")),
            "--cluster-cidr=10.128.0.0/14".into(),
            "--service-cluster-ip-range=172.30.0.0/16".into(),
            "--leader-elect=false".into(),
            "--use-service-account-credentials=true".into(),
            "--controllers=*,-nodeipam".into(),
        ];
        let prog = self.bin.join("kube-controller-manager");
        self.spawn("kube-controller-manager", &prog, &args);
    }

    /// `kubectl --kubeconfig kc args…` inside the namespace.
    pub fn kubectl(&self, kc: &Path, args: &[&str]) -> Output {
        in_ns(&self.ns, "kubectl")
            .arg("--kubeconfig")
            .arg(kc)
            .arg("--request-timeout=10s")
            .args(args)
            .output()
            .unwrap()
    }

    /// `kubectl` as the admin; asserts success and returns stdout.
    pub fn admin(&self, args: &[&str]) -> String {
        let out = self.kubectl(&self.dir.join("auth/kubeconfig"), args);
        assert!(
            out.status.success(),
            "kubectl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// `okd-install args… --dir <dir>` inside the namespace.
    pub fn okd(&self, args: &[&str]) -> Command {
        let mut c = in_ns(&self.ns, env!("CARGO_BIN_EXE_okd-install"));
        c.args(args).arg("--dir").arg(&self.dir);
        c
    }

    /// A node namespace `name` joined to the control plane's bridge with
    /// address `192.168.120.<host>`, resolving `api`/`api-int` like the
    /// control plane. Removed on drop.
    pub fn add_node(&mut self, name: &str, host: u8) -> (String, String) {
        let ns = format!("{}-{name}", self.ns);
        let addr = format!("{NET}.{host}");
        let veth = format!("vk{host}");
        super::netns::attach(&self.ns, &ns, &veth, &addr, &self.addr);
        self.write_hosts(&ns);
        self.extra_ns.push(ns.clone());
        (ns, addr)
    }

    /// Starts `program` inside another namespace of this plane.
    pub fn spawn_in(&mut self, ns: &str, label: &str, program: &Path, args: &[String]) {
        let log = std::fs::File::create(self.scratch.join(format!("{label}.log"))).unwrap();
        let child = in_ns(ns, program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        self.children.push((label.to_string(), child));
    }

    /// The kit's directory of programs.
    pub fn bin(&self) -> &Path {
        &self.bin
    }
}

impl Drop for ControlPlane {
    fn drop(&mut self) {
        for (_, c) in self.children.iter_mut().rev() {
            let _ = c.kill();
            let _ = c.wait();
        }
        for ns in self.extra_ns.iter().chain(std::iter::once(&self.ns)) {
            let _ = Command::new("ip").args(["netns", "del", ns]).output();
            let _ = std::fs::remove_dir_all(PathBuf::from("/etc/netns").join(ns));
        }
    }
}

/// The last `n` lines of `s`.
pub fn tail(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// The credentials of a test kubeconfig.
pub enum User<'a> {
    /// None (anonymous; a token may be passed to kubectl).
    Anonymous,
    /// A client certificate and key file (may be one PEM file).
    Cert(&'a Path, &'a Path),
    /// A bearer token.
    Token(&'a str),
}

impl ControlPlane {
    /// Writes a kubeconfig at `path` for `https://<host>.<domain>:6443`
    /// (`host` is `api` or `api-int`) trusting the complete server CA bundle.
    pub fn kubeconfig(&self, path: &Path, host: &str, user: User) {
        let user = match user {
            User::Anonymous => "  user: {}\n".to_string(),
            User::Cert(c, k) => format!(
                "  user:\n    client-certificate: {}\n    client-key: {}\n",
                c.display(),
                k.display()
            ),
            User::Token(t) => format!("  user:\n    token: {}\n", t.trim()),
        };
        std::fs::write(
            path,
            format!(
                "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://{host}.{}:6443\n    certificate-authority: {}\ncontexts:\n- name: c\n  context: {{cluster: c, user: u}}\ncurrent-context: c\nusers:\n- name: u\n{user}",
                self.domain,
                self.tls("kube-apiserver-complete-server-ca-bundle.crt").display(),
            ),
        )
        .unwrap();
    }
}

/// A PKCS#10 request (ECDSA P-256, openssl) for `subject` with optional
/// `subjectAltName` text; key at `dir/<label>.key`. Returns the PEM.
pub fn csr_pem(dir: &Path, label: &str, subject: &str, sans: Option<&str>) -> Vec<u8> {
    let key = dir.join(format!("{label}.key"));
    let out = dir.join(format!("{label}.csr"));
    let mut c = Command::new("openssl");
    c.args([
        "req",
        "-new",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ])
    .arg("-keyout")
    .arg(&key)
    .arg("-out")
    .arg(&out)
    .args(["-subj", subject]);
    if let Some(s) = sans {
        c.args(["-addext", &format!("subjectAltName={s}")]);
    }
    let o = c.output().unwrap();
    assert!(o.status.success(), "{o:?}");
    std::fs::read(out).unwrap()
}

/// Files CSR object `name` (PKCS#10 PEM `pem`, signer, usages) as the user
/// of kubeconfig `kc`; asserts the API server took it.
pub fn file_csr(
    cp: &ControlPlane,
    kc: &Path,
    name: &str,
    pem: &[u8],
    signer: &str,
    usages: &[&str],
) {
    use base64::Engine as _;
    let obj = serde_json::json!({
        "apiVersion": "certificates.k8s.io/v1",
        "kind": "CertificateSigningRequest",
        "metadata": {"name": name},
        "spec": {
            "request": base64::engine::general_purpose::STANDARD.encode(pem),
            "signerName": signer,
            "usages": usages,
        }
    });
    let f = cp.scratch.join(format!("{name}.json"));
    std::fs::write(&f, obj.to_string()).unwrap();
    let out = cp.kubectl(kc, &["create", "-f", f.to_str().unwrap()]);
    assert!(out.status.success(), "filing {name}: {out:?}");
}

/// Writes a CertificateSigningRequest object `node-<name>` (JSON) for a
/// kubelet client certificate of node `name` into `dir`; returns its path.
pub fn node_client_csr(dir: &Path, name: &str) -> PathBuf {
    let pem = csr_pem(
        dir,
        name,
        &format!("/O=system:nodes/CN=system:node:{name}"),
        None,
    );
    use base64::Engine as _;
    let obj = serde_json::json!({
        "apiVersion": "certificates.k8s.io/v1",
        "kind": "CertificateSigningRequest",
        "metadata": {"name": format!("node-{name}")},
        "spec": {
            "request": base64::engine::general_purpose::STANDARD.encode(&pem),
            "signerName": "kubernetes.io/kube-apiserver-client-kubelet",
            "usages": ["digital signature", "client auth"],
        }
    });
    let f = dir.join(format!("node-{name}.json"));
    std::fs::write(&f, obj.to_string()).unwrap();
    f
}

/// An asset directory with the single-master example's install-config,
/// agent-config and bastion-config, after `create ignition-configs`.
pub fn cluster_dir() -> tempfile::TempDir {
    super::serve::served_dir()
}
