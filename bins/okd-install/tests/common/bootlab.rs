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
/// The mirror registry (on the bastion).
pub const MIRROR: &str = "registry.okd.example:5000";
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
        let scratch = tempfile::tempdir().unwrap();
        let t = scratch.path();
        let ex = example_dir("baremetal-single-master");
        let assets = ex.path().to_path_buf();
        let exdir = repo().join("examples/baremetal-single-master");
        std::fs::copy(
            exdir.join("agent-config.yaml"),
            assets.join("agent-config.yaml"),
        )
        .unwrap();
        let bastion_cfg = std::fs::read_to_string(exdir.join("bastion-config.yaml"))
            .unwrap()
            .replace(
                "upstreamResolvers:\n  - 8.8.8.8\n",
                "upstreamResolvers: []\n",
            );
        std::fs::write(assets.join("bastion-config.yaml"), bastion_cfg).unwrap();

        let prefix = format!("{prefix}{}", std::process::id() % 100000);
        let mut lab = Lab::new(
            &prefix,
            BASTION,
            &[("bs", BOOTSTRAP), ("m", MASTER)],
            "okd.example",
        );
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
        let out = Command::new(BIN)
            .args([
                "create",
                "ignition-configs",
                "--release-version",
                "4.15",
                "--dir",
            ])
            .arg(&assets)
            .env(
                "OPENSHIFT_INSTALL_RELEASE_IMAGE_OVERRIDE",
                p.release_image(),
            )
            .env("OKD_INSTALL_NODE_BINARY", &node_program)
            .output()
            .unwrap();
        ok(&out, "create ignition-configs");

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
        let root = apply_ignition(&assets.join("bootstrap.ign"), &t.join("bs"));
        write_mirror_config(
            &root,
            "quay.io",
            MIRROR,
            "/etc/pki/ca-trust/source/anchors/ca.crt",
            LOGIN,
        );
        if podman {
            let ca = std::fs::read(root.join("etc/pki/ca-trust/source/anchors/ca.crt")).unwrap();
            write_podman_config(&root, MIRROR, &ca);
        }
        let started = Instant::now();
        let none = PathBuf::from("none");
        let host = NodeHost::start(
            &lab.nodes[0].ns,
            "bootstrap",
            BOOTSTRAP,
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
