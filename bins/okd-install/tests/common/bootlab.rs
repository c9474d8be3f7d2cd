//! A bootstrap node in network namespaces, as the bootstrap tests need it
//! (issue #20): the bastion runs `okd-install serve` (DNS, the load
//! balancer, status) and the mirror registry (`mirror registry init` +
//! Debian's docker-registry) holding a test payload pushed with `mirror
//! from-disk`; install-config uses that mirror as a disconnected user's
//! does; `create ignition-configs` writes bootstrap.ign carrying this test
//! binary as the node program; the real Ignition lays bootstrap.ign down
//! into the bootstrap host's root; the host runs its own containerd (and
//! the kit's kubelet, or none) in its own namespaces, resolving through
//! serve's DNS. [`BootLab::release_image`] and [`BootLab::bootkube`] run
//! the units' scripts inside it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::kube::{apply_ignition, tail};
use super::netns::Lab;
use super::node::{NodeHost, write_mirror_config, write_podman_config};
use super::payload::{self, Payload};
use super::serve::{BASTION, spawn_serve, wait_ready};
use super::{example_dir, okd_ok, repo};

/// The bootstrap host's address.
pub const BOOTSTRAP: &str = "192.168.120.102";
/// A master's address.
pub const MASTER: &str = "192.168.120.103";
/// The three masters of [`BootLab::start_with`]`(…, 3, …)`: name, address,
/// MAC (the single-master example's master becomes `master0`; .104 stays
/// its worker's).
pub const HA_MASTERS: [(&str, &str, &str); 3] = [
    ("master0", "192.168.120.103", "52:54:00:12:01:03"),
    ("master1", "192.168.120.105", "52:54:00:12:01:05"),
    ("master2", "192.168.120.106", "52:54:00:12:01:06"),
];
/// The mirror registry (on the bastion).
pub const MIRROR: &str = "registry.okd.example:5000";
/// The single node's installation disk (`bootstrapInPlace.installationDisk`).
pub const INSTALLATION_DISK: &str = "/dev/vda";
/// The mirror's login.
pub const LOGIN: (&str, &str) = ("okd", "s3cret");
const BIN: &str = env!("CARGO_BIN_EXE_okd-install");

/// `okd-install bootstrap bootkube` running inside a host: `nsenter`
/// forks into the host's PID namespace, so the program itself is found
/// among nsenter's children and killed (SIGKILL, as a crash would end
/// it) when dropped, before `nsenter` is reaped.
pub struct Proc {
    child: Child,
    needle: &'static [u8],
}

impl Proc {
    /// The PIDs of the node program under this `nsenter`.
    pub fn program_pids(&self) -> Vec<u32> {
        let needle = self.needle;
        let id = self.child.id();
        let children =
            std::fs::read_to_string(format!("/proc/{id}/task/{id}/children")).unwrap_or_default();
        children
            .split_whitespace()
            .filter_map(|p| p.parse::<u32>().ok())
            .filter(|p| {
                std::fs::read(format!("/proc/{p}/cmdline"))
                    .is_ok_and(|c| c.windows(needle.len()).any(|w| w == needle))
            })
            .collect()
    }

    /// Waits up to `limit` for the program to end by itself; its exit
    /// status (`nsenter` passes it on), or `None` when it still runs.
    pub fn wait_exit(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                return Some(st);
            }
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        for p in self.program_pids() {
            let _ = Command::new("kill")
                .args(["-KILL", &p.to_string()])
                .output();
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Asserts `out` succeeded, with its stderr (and `what`) otherwise.
fn ok(out: &std::process::Output, what: &str) {
    assert!(
        out.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Kills a daemon that is not our child (the registry) by PID when dropped.
pub struct KillOnDrop(pub u32);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-KILL", &self.0.to_string()])
            .output();
    }
}

/// The whole lab; dropping it stops the host, the registry, serve and the
/// namespaces, in that order, then removes the directories.
pub struct BootLab {
    /// The bootstrap host.
    pub host: NodeHost,
    registry: KillOnDrop,
    /// The namespaces (nodes\[0\]: the bootstrap, nodes\[1\]: a master).
    pub lab: Lab,
    /// The installer's asset directory (a copy of the single-master
    /// example, made disconnected).
    pub assets: PathBuf,
    /// The bootstrap host's root folder.
    pub root: PathBuf,
    /// The payload in the mirror.
    pub payload: Payload,
    /// The program bootstrap.ign carries (this test binary, stripped).
    pub node_program: PathBuf,
    /// When the host started.
    pub started: Instant,
    /// serve's log.
    pub serve_log: PathBuf,
    ex: tempfile::TempDir,
    /// Scratch space.
    pub scratch: tempfile::TempDir,
}

/// What [`BootLab::start`] needs; `None` from [`prerequisites`] when this
/// machine cannot run it (and `OKD_REQUIRE_TOOLS` is not set).
pub struct Prereqs {
    /// The kit's `bin/` directory.
    pub kit: PathBuf,
    /// Debian's docker-registry.
    pub registry: PathBuf,
}

/// Finds the programs a bootstrap lab runs.
pub fn prerequisites() -> Option<Prereqs> {
    if !super::node::available() || !super::netns::available() {
        return None;
    }
    let kit = okd_test_utils::kube_tool("kube-apiserver")?
        .parent()
        .unwrap()
        .to_path_buf();
    let registry = okd_test_utils::tool("docker-registry", &[], Some("docker-registry"))?;
    super::tool("ignition", &[super::serve::IGNITION])?;
    Some(Prereqs { kit, registry })
}

impl BootLab {
    /// Builds everything up to a running bootstrap host: the payload from
    /// `build` (given the scratch directory) pushed into the mirror,
    /// bootstrap.ign laid down by Ignition, the host started with
    /// `kubelet` (`None`: no kubelet) and, with `podman`, podman's
    /// configuration for the mirror.
    pub fn start(
        pre: &Prereqs,
        prefix: &str,
        kubelet: Option<&Path>,
        podman: bool,
        build: impl FnOnce(&Path) -> Payload,
    ) -> BootLab {
        Self::start_with(pre, prefix, kubelet, podman, 1, build)
    }

    /// [`BootLab::start`] for `masters` control-plane replicas: 1 (the
    /// single-master example as it is; `nodes[1]` is its master), 3
    /// (the example with `controlPlane.replicas: 3` and its master
    /// replaced by [`HA_MASTERS`], `nodes[1..4]`), or 0: single node,
    /// bootstrap-in-place (the example with `bootstrapInPlace` on
    /// [`INSTALLATION_DISK`], `create single-node-ignition-config`; the host
    /// on `nodes[0]` is the example's master, named `master` at [`MASTER`],
    /// booted from `bootstrap-in-place-for-live-iso.ign`).
    pub fn start_with(
        pre: &Prereqs,
        prefix: &str,
        kubelet: Option<&Path>,
        podman: bool,
        masters: usize,
        build: impl FnOnce(&Path) -> Payload,
    ) -> BootLab {
        assert!(
            [0, 1, 3].contains(&masters),
            "0 (single node), 1 or 3 masters"
        );
        let single = masters == 0;
        let scratch = tempfile::tempdir().unwrap();
        let t = scratch.path();
        let ex = example_dir("baremetal-single-master");
        let assets = ex.path().to_path_buf();
        let exdir = repo().join("examples/baremetal-single-master");
        let agent = std::fs::read_to_string(exdir.join("agent-config.yaml")).unwrap();
        if single {
            let ic = assets.join("install-config.yaml");
            let mut text = std::fs::read_to_string(&ic).unwrap();
            text.push_str(&format!(
                "bootstrapInPlace:\n  installationDisk: {INSTALLATION_DISK}\n"
            ));
            std::fs::write(&ic, text).unwrap();
        }
        let agent = if masters <= 1 {
            agent
        } else {
            // The master's block, repeated for each of HA_MASTERS.
            let start = agent.find("  - hostname: master\n").unwrap();
            let end = agent.find("  - hostname: worker1\n").unwrap();
            let block = &agent[start..end];
            let blocks: String = HA_MASTERS
                .iter()
                .map(|(name, ip, mac)| {
                    block
                        .replace("hostname: master\n", &format!("hostname: {name}\n"))
                        .replace("52:54:00:12:01:03", mac)
                        .replace("192.168.120.103", ip)
                })
                .collect();
            let ic = assets.join("install-config.yaml");
            let text = std::fs::read_to_string(&ic).unwrap();
            assert!(text.contains("  replicas: 1 "), "{text}");
            std::fs::write(&ic, text.replacen("  replicas: 1 ", "  replicas: 3 ", 1)).unwrap();
            format!("{}{blocks}{}", &agent[..start], &agent[end..])
        };
        std::fs::write(assets.join("agent-config.yaml"), agent).unwrap();
        let bastion_cfg = std::fs::read_to_string(exdir.join("bastion-config.yaml"))
            .unwrap()
            .replace(
                "upstreamResolvers:\n  - 8.8.8.8\n",
                "upstreamResolvers: []\n",
            );
        std::fs::write(assets.join("bastion-config.yaml"), bastion_cfg).unwrap();

        let prefix = format!("{prefix}{}", std::process::id() % 100000);
        let hosts: Vec<(&str, &str)> = if single {
            vec![("m", MASTER)]
        } else if masters == 1 {
            vec![("bs", BOOTSTRAP), ("m", MASTER)]
        } else {
            vec![
                ("bs", BOOTSTRAP),
                ("m", HA_MASTERS[0].1),
                ("m1", HA_MASTERS[1].1),
                ("m2", HA_MASTERS[2].1),
            ]
        };
        let mut lab = Lab::new(&prefix, BASTION, &hosts, "okd.example");
        let bastion_etc = PathBuf::from("/etc/netns").join(&lab.bastion.ns);
        std::fs::create_dir_all(&bastion_etc).unwrap();
        std::fs::write(
            bastion_etc.join("hosts"),
            format!(
                "127.0.0.1 localhost\n{BASTION} registry.okd.example api.okd.example api-int.okd.example bastion\n"
            ),
        )
        .unwrap();

        // The mirror registry on the bastion, its CA and login in install-config.
        std::fs::write(t.join("pw"), format!("{}\n", LOGIN.1)).unwrap();
        okd_ok(
            &assets,
            &[
                "mirror",
                "registry",
                "init",
                "--hostname",
                "registry.okd.example",
                "--address",
                BASTION,
                "--username",
                LOGIN.0,
                "--password-file",
                t.join("pw").to_str().unwrap(),
            ],
        );
        let out = lab
            .cmd(&lab.bastion.ns, BIN)
            .args(["mirror", "registry", "start", "--registry-program"])
            .arg(&pre.registry)
            .arg("--dir")
            .arg(&assets)
            .output()
            .unwrap();
        ok(&out, "mirror registry start");
        let reg_pid: u32 = std::fs::read_to_string(assets.join("mirror-registry/registry.pid"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let registry = KillOnDrop(reg_pid);

        // The payload, pushed as a disconnected user pushes it.
        let p = build(t);
        let out_dir = t.join("mirror-out");
        let out = lab
            .cmd(&lab.bastion.ns, BIN)
            .args(payload::from_disk_args(&p, MIRROR, &out_dir))
            .arg("--dir")
            .arg(&assets)
            .output()
            .unwrap();
        ok(&out, "from-disk");
        payload::use_mirror(&assets, &out_dir);
        // bootstrap.ign carries the node program: this test binary, stripped
        // of its debug information (a debug build carries none by itself).
        let node_program = t.join("okd-install-node");
        let out = Command::new("strip")
            .args(["-o", node_program.to_str().unwrap(), BIN])
            .output()
            .unwrap();
        ok(&out, "strip");
        let (target, ign) = if single {
            (
                "single-node-ignition-config",
                "bootstrap-in-place-for-live-iso.ign",
            )
        } else {
            ("ignition-configs", "bootstrap.ign")
        };
        let out = Command::new(BIN)
            .args(["create", target, "--release-version", "4.15", "--dir"])
            .arg(&assets)
            .env(
                "OPENSHIFT_INSTALL_RELEASE_IMAGE_OVERRIDE",
                p.release_image(),
            )
            .env("OKD_INSTALL_NODE_BINARY", &node_program)
            // The compressed program stays in the lab, not in ~/.cache.
            .env("OKD_INSTALL_CACHE_DIR", t.join("cache"))
            .output()
            .unwrap();
        ok(&out, target);

        // serve on the bastion: DNS (api, api-int, registry) and the
        // balancer. No machine-config server of its own: 22623 goes to the
        // bootstrap.
        let (_serve_pid, serve_log) = spawn_serve(
            &mut lab,
            &assets,
            &["--services", "dns,lb,status"],
            "serve.log",
        );
        wait_ready(&serve_log);

        // The bootstrap host from bootstrap.ign, pulling through the mirror.
        let root = apply_ignition(&assets.join(ign), &t.join("bs"));
        pull_through_mirror(&root);
        if podman {
            let ca = std::fs::read(root.join("etc/pki/ca-trust/source/anchors/ca.crt")).unwrap();
            write_podman_config(&root, MIRROR, &ca);
        }
        let started = Instant::now();
        let none = PathBuf::from("none");
        let (name, ip) = if single {
            ("master", MASTER)
        } else {
            ("bootstrap", BOOTSTRAP)
        };
        let host = NodeHost::start(
            &lab.nodes[0].ns,
            name,
            ip,
            "10.128.0.0/24",
            &root,
            kubelet.unwrap_or(&none),
            &[],
        );
        host.use_nameserver(BASTION);
        BootLab {
            host,
            registry,
            lab,
            assets,
            root,
            payload: p,
            node_program,
            started,
            serve_log,
            ex,
            scratch,
        }
    }

    /// A master on `lab.nodes[node]` named `name` at `ip`, as it boots:
    /// its real Ignition runs `master.ign` (the pointer config) in its
    /// network namespace, getting its config from the bootstrap's
    /// machine-config server through serve's balancer on 22623; checks
    /// that config laid down the kubelet kubeconfig, okd-install (the
    /// bootstrap's program, fetched from the bootstrap and checked
    /// against its sha512) and `okd-control-plane.service`; adds the OS
    /// image's part (containerd pulling through the mirror, trusting its
    /// CA: CRI-O on a real master reads the MachineConfig's
    /// registries.conf); starts the host with `kubelet` joining the
    /// cluster, resolving through serve's DNS. The master's root folder is
    /// `<scratch>/<name>`. Returns the host and its root.
    pub fn master(&self, node: usize, name: &str, ip: &str, kubelet: &Path) -> (NodeHost, PathBuf) {
        let (ok, ign_log, root) = super::serve::ignite_in(
            &self.lab.nodes[node].ns,
            &self.assets.join("master.ign"),
            &self.scratch.path().join(name),
            120,
        );
        assert!(ok, "{name}'s Ignition:\n{}", tail(&ign_log, 30));
        assert!(
            root.join("etc/kubernetes/kubeconfig").exists(),
            "the master config from the bootstrap MCS lays down the kubelet kubeconfig"
        );
        assert_eq!(
            std::fs::read(root.join("usr/local/bin/okd-install")).unwrap(),
            std::fs::read(&self.node_program).unwrap(),
            "{name}'s okd-install is the bootstrap's"
        );
        let unit =
            std::fs::read_to_string(root.join("etc/systemd/system/okd-control-plane.service"))
                .unwrap();
        assert!(
            unit.contains("/usr/local/bin/okd-install node control-plane"),
            "{unit}"
        );
        let anchors = "etc/pki/ca-trust/source/anchors";
        std::fs::create_dir_all(root.join(anchors)).unwrap();
        std::fs::copy(
            self.root.join(anchors).join("ca.crt"),
            root.join(anchors).join("ca.crt"),
        )
        .unwrap();
        pull_through_mirror(&root);
        let host = Self::restart_master(&self.lab.nodes[node].ns, node, name, ip, &root, kubelet);
        (host, root)
    }

    /// Starts (again) the master host of [`BootLab::master`] from its
    /// root folder: the same certificates, etcd data and static pods, as a
    /// machine powered on again.
    pub fn restart_master(
        ns: &str,
        node: usize,
        name: &str,
        ip: &str,
        root: &Path,
        kubelet: &Path,
    ) -> NodeHost {
        let host = NodeHost::start_as(
            ns,
            name,
            ip,
            &format!("10.128.{node}.0/24"),
            root,
            kubelet,
            &[],
            super::node::Kubelet::Join,
        );
        host.use_nameserver(BASTION);
        host
    }

    /// `kubectl` on the bastion with `auth/kubeconfig`, to the API
    /// through serve's balancer.
    pub fn kubectl(&self, args: &[&str]) -> std::process::Output {
        self.lab
            .cmd(&self.lab.bastion.ns, "kubectl")
            .arg("--kubeconfig")
            .arg(self.assets.join("auth/kubeconfig"))
            .arg(format!("--server=https://{BASTION}:6443"))
            .arg("--tls-server-name=api.okd.example")
            .args(["--request-timeout=20s"])
            .args(args)
            .output()
            .unwrap()
    }

    /// The etcd members and their health as `lab.nodes[from]` sees them,
    /// asked at `endpoints` (client URLs) with the etcd client certificate
    /// (`okd_bootstrap::members`, as the handover asks).
    pub fn etcd_members(
        &self,
        from: usize,
        endpoints: Vec<String>,
    ) -> Vec<okd_bootstrap::handover::Member> {
        let tls = self.root.join("opt/openshift/tls");
        let ns = self.lab.nodes[from].ns.clone();
        super::kube::in_netns(&ns, move || async move {
            let http = okd_bootstrap::checks::client(
                &tls.join("etcd-ca-bundle.crt"),
                Some((&tls.join("etcd-client.crt"), &tls.join("etcd-client.key"))),
            )
            .unwrap();
            okd_bootstrap::members::Members::new(http, endpoints)
                .judged()
                .await
        })
        .unwrap_or_else(|e| panic!("{e}"))
        .into_iter()
        .map(|(_, j)| j)
        .collect()
    }

    /// progress.service and `wait-for bootstrap-complete` from the
    /// bastion (limits `timeouts`): asserts it exits 0 after the etcd
    /// member's removal and that progress.service ends; returns
    /// progress.service's log.
    pub fn complete(&self, timeouts: &str) -> String {
        self.complete_with(timeouts, false)
    }

    /// [`BootLab::complete`]; with `kill_after_report`, progress.service
    /// is killed (SIGKILL) as soon as it has reported the bootstrap
    /// complete, while it removes the bootstrap etcd member, and started
    /// again: it ends the same, and the member is removed at most once in
    /// its two runs. Returns both runs' logs.
    pub fn complete_with(&self, timeouts: &str, kill_after_report: bool) -> String {
        let mut first = String::new();
        if kill_after_report {
            let log = self.scratch.path().join("progress-killed.log");
            let p = self.spawn_unit(
                "/usr/local/bin/report-progress.sh",
                &["/opt/openshift/auth/kubeconfig"],
                &log,
                b"bootstrap\0report-progress",
            );
            let start = Instant::now();
            loop {
                first = std::fs::read_to_string(&log).unwrap_or_default();
                if first.contains("Bootstrap complete reported") {
                    break;
                }
                assert!(
                    start.elapsed() < Duration::from_secs(600),
                    "progress.service reported nothing in 600 s:\n{}",
                    tail(&first, 30)
                );
                std::thread::sleep(Duration::from_millis(20));
            }
            drop(p);
            first = std::fs::read_to_string(&log).unwrap_or_default();
            eprintln!(
                "progress.service killed after reporting the bootstrap complete; member removed before the kill: {}",
                first.contains("removed the bootstrap etcd member")
            );
        }
        let progress_log = self.scratch.path().join("progress.log");
        let mut progress = self.spawn_unit(
            "/usr/local/bin/report-progress.sh",
            &["/opt/openshift/auth/kubeconfig"],
            &progress_log,
            b"bootstrap\0report-progress",
        );
        let out = self
            .lab
            .cmd(&self.lab.bastion.ns, BIN)
            .args(["wait-for", "bootstrap-complete", "--dir"])
            .arg(&self.assets)
            .args(["--timeouts", timeouts])
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stderr).into_owned();
        let progress_text = || std::fs::read_to_string(&progress_log).unwrap_or_default();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{said}\nprogress:\n{}",
            tail(&progress_text(), 30)
        );
        assert!(
            said.contains("Bootstrap etcd member has been removed"),
            "{said}"
        );
        assert_eq!(
            progress
                .wait_exit(Duration::from_secs(60))
                .map(|s| s.success()),
            Some(true),
            "{}",
            progress_text()
        );
        let both = format!("{first}{}", progress_text());
        assert!(
            both.matches("removed the bootstrap etcd member").count() <= 1,
            "the bootstrap member is removed once:\n{both}"
        );
        both
    }

    /// The bootstrap switched off: the API answers through the balancer
    /// from the masters alone, and every object of the install's
    /// manifests (at least `listed`) is still there.
    pub fn without_bootstrap(&mut self, listed: usize) {
        self.host.power_off();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let out = self.kubectl(&["get", "--raw", "/readyz"]);
            if out.stdout == b"ok" {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the API without the bootstrap: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            std::thread::sleep(Duration::from_millis(500));
        }
        assert!(self.manifest_objects("gone with the bootstrap") >= listed);
    }

    /// Every object of the install's manifests (the bootstrap's
    /// `/opt/openshift/manifests`) read back through the balancer; asserts
    /// each is there (`when` says when one was lost) and returns how many.
    pub fn manifest_objects(&self, when: &str) -> usize {
        let out = self.kubectl(&[
            "get",
            "-f",
            self.root.join("opt/openshift/manifests").to_str().unwrap(),
            "-o",
            "name",
        ]);
        assert!(
            out.status.success(),
            "an object of the manifests is {when}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).lines().count()
    }

    /// `destroy bootstrap` (no `--force`) from the bastion: it asks the
    /// cluster, finds the etcd member removed and goes ahead.
    pub fn destroy_bootstrap(&self) {
        let out = self
            .lab
            .cmd(&self.lab.bastion.ns, BIN)
            .args(["destroy", "bootstrap", "--dir"])
            .arg(&self.assets)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "destroy bootstrap: {err}");
        assert!(err.contains("EtcdBootstrapMemberRemoved=True"), "{err}");
    }

    /// Runs release-image.service's script in the host; panics when it
    /// fails.
    pub fn release_image(&self) {
        let out = self
            .host
            .enter("timeout")
            .args(["120", "/usr/local/bin/release-image-download.sh"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "release-image: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Starts bootkube.service's script in the host, its output in `log`.
    pub fn bootkube(&self, log: &Path) -> Proc {
        self.spawn_unit(
            "/usr/local/bin/bootkube.sh",
            &[],
            log,
            b"bootstrap\0bootkube",
        )
    }

    /// Starts a unit's `script` (with `args`) in the host, its output in
    /// `log`; returns once the node program it runs (its command line
    /// holds `needle`) is up, or has already ended.
    pub fn spawn_unit(
        &self,
        script: &str,
        args: &[&str],
        log: &Path,
        needle: &'static [u8],
    ) -> Proc {
        spawn_in(&self.host, script, args, log, needle)
    }

    /// The mirror registry's access log.
    pub fn registry_log(&self) -> String {
        std::fs::read_to_string(self.assets.join("mirror-registry/registry.log"))
            .unwrap_or_default()
    }
}

/// Starts `script` with `args` inside `host` as its unit would, output to
/// `log`; `needle` picks the node program's PID among nsenter's children.
pub fn spawn_in(
    host: &NodeHost,
    script: &str,
    args: &[&str],
    log: &Path,
    needle: &'static [u8],
) -> Proc {
    {
        let f = std::fs::File::create(log).unwrap();
        let child = host
            .enter(script)
            .args(args)
            .stdin(Stdio::null())
            .stdout(f.try_clone().unwrap())
            .stderr(f)
            .spawn()
            .unwrap();
        let mut p = Proc { child, needle };
        let deadline = Instant::now() + Duration::from_secs(10);
        // Up once its PID shows, or already ended (a short run: the caller
        // judges its outcome).
        while p.program_pids().is_empty() && p.child.try_wait().unwrap().is_none() {
            assert!(
                Instant::now() < deadline,
                "{script} did not start in the host:\n{}",
                std::fs::read_to_string(log).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        p
    }
}

/// containerd of the host at `root` pulls `quay.io` images through the
/// mirror with its login, trusting the CA bootstrap.ign's trust bundle
/// lays down.
pub fn pull_through_mirror(root: &Path) {
    write_mirror_config(
        root,
        "quay.io",
        MIRROR,
        "/etc/pki/ca-trust/source/anchors/ca.crt",
        LOGIN,
    );
}

/// Waits up to `limit` for `what` in `log` while the host runs.
pub fn wait_for_log(log: &Path, what: &str, limit: Duration, host: &mut NodeHost) -> String {
    let start = Instant::now();
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if text.contains(what) {
            return text;
        }
        host.assert_running();
        assert!(
            start.elapsed() < limit,
            "no {what:?} in {} s\nbootkube:\n{}\nkubelet:\n{}",
            limit.as_secs(),
            tail(&text, 40),
            tail(&host.kubelet_log(), 30)
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}
