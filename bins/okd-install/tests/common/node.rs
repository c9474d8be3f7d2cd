//! A node host for the tests: a network namespace with a mount, PID and UTS
//! namespace of its own, running Debian's containerd + runc and the kit's
//! kubelet (`tests/kube`), which runs static pods from the host's
//! `/etc/kubernetes/manifests` with pod networking from Debian's
//! containernetworking-plugins (bridge + host-local).
//!
//! The host's directories are those of a root folder (for a bootstrap host,
//! the root the real Ignition wrote `bootstrap.ign` into), bind-mounted
//! inside the host's mount namespace over `/etc/kubernetes`,
//! `/var/lib/kubelet`, `/var/lib/containerd`, `/opt/openshift`, … so two
//! hosts never share state. `/etc`, `/var`, `/usr` and `/opt` are writable
//! overlays of the machine's inside the host (upper layers in the root
//! folder), so mount points and stray writes never reach the machine.
//! `/run` is a private tmpfs.
//! The kubelet rewrites a few machine-wide sysctls; inside the host those
//! files are private copies bind-mounted over `/proc/sys`.
//!
//! What the machine needs, measured on this machine kind: containerd's CRI
//! plugin with `restrict_oom_score_adj = true` (root here lacks
//! CAP_SYS_RESOURCE), runc without systemd cgroups, the kubelet with
//! `cgroupDriver: cgroupfs` under a cgroup root of the host's own, the
//! sandbox image imported locally, and `nsenter --net` rather than `ip
//! netns exec` (which remounts /sys and hides the cgroup hierarchies).
//!
//! Images are Docker archives built here from static binaries (the kit's
//! programs, and `tests/data/pause.c` built with `gcc -static` as the
//! sandbox image) and loaded with `ctr images import`. Drop kills the
//! host's PID 1 (so every process of the host ends with it), waits, and
//! removes its cgroups, also when the test fails.
#![allow(dead_code)]

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use super::repo;

static NEXT: AtomicU32 = AtomicU32::new(0);

/// The tag of the sandbox image every host imports.
pub const PAUSE_IMAGE: &str = "okd.test/pause:1";

/// The host directories that come from the host's root folder.
pub const HOST_DIRS: &[&str] = &[
    "/etc/kubernetes",
    "/etc/containerd",
    "/etc/cni/net.d",
    "/etc/issue.d",
    "/var/lib/kubelet",
    "/var/lib/containerd",
    "/var/lib/containers",
    "/var/lib/cni",
    // etcd's data: never the machine's own /var/lib/etcd (Debian's
    // etcd-server keeps one there) through the /var overlay.
    "/var/lib/etcd",
    "/var/log/pods",
    "/var/log/containers",
    "/var/log/openshift",
    "/usr/libexec/kubernetes",
    "/opt/openshift",
    // What bootstrap.ign writes for the release pull and the node program.
    "/etc/containers",
    "/etc/pki/ca-trust/source/anchors",
    "/root/.docker",
    "/usr/local/bin",
];

/// The machine's directories the host sees through a writable overlay of
/// its own (the lower layer is the machine's, never written).
const OVERLAY_TOPS: &[&str] = &["/etc", "/var", "/usr", "/opt", "/root"];

/// The sysctls the kubelet sets that are not per network namespace.
const PRIVATE_SYSCTLS: &[&str] = &[
    "vm/overcommit_memory",
    "vm/panic_on_oom",
    "kernel/panic",
    "kernel/panic_on_oops",
    "kernel/keys/root_maxkeys",
    "kernel/keys/root_maxbytes",
];

/// The host's PID 1: makes the mounts, starts containerd, imports the
/// images, starts the kubelet, and ends (ending the host) when either
/// daemon ends. Arguments: root, hostname, node IP, kubelet, images….
const INIT: &str = r#"#!/bin/bash
set -eu
root=$1; name=$2; ip=$3; kubelet=$4; shift 4
# Writable overlays of the top directories, so the mount points below (and
# whatever a daemon writes outside them, e.g. containerd's /opt/containerd)
# land in the host's root folder and never on the machine.
for top in $OVERLAY_TOPS; do
    mkdir -p "$root/.overlay$top/upper" "$root/.overlay$top/work"
    mount -t overlay overlay \
        -o "lowerdir=$top,upperdir=$root/.overlay$top/upper,workdir=$root/.overlay$top/work" "$top"
done
for p in $HOST_DIRS; do
    mkdir -p "$root$p" "$p"
    mount --bind "$root$p" "$p"
done
mount -t tmpfs -o mode=0755 tmpfs /run
mkdir -p "$root/.sysctl"
for f in $PRIVATE_SYSCTLS; do
    copy="$root/.sysctl/${f//\//_}"
    cat "/proc/sys/$f" >"$copy"
    mount --bind "$copy" "/proc/sys/$f"
done
echo 1 >/proc/sys/net/ipv4/ip_forward
hostname "$name"
containerd --config /etc/containerd/config.toml >"$root/.containerd.log" 2>&1 &
for _ in $(seq 200); do
    [ -S /run/containerd/containerd.sock ] && break
    sleep 0.05
done
for image in "$@"; do
    ctr -n k8s.io images import --all-platforms "$image" >>"$root/.images.log" 2>&1
done
echo images-imported >"$root/.init-state"
if [ "$kubelet" = none ]; then
    echo "this host runs no kubelet" >"$root/.kubelet.log"
    sleep infinity &
else
    # shellcheck disable=SC2086
    "$kubelet" --config /etc/kubernetes/kubelet-host.yaml --hostname-override "$name" \
        --node-ip "$ip" --v=2 $OKD_KUBELET_JOIN >"$root/.kubelet.log" 2>&1 &
fi
wait -n
echo "a daemon of host $name ended" >&2
exit 1
"#;

/// How a host's kubelet runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kubelet {
    /// No API server: static pods only (the bootstrap).
    Standalone,
    /// Joins the cluster through `/etc/kubernetes/kubeconfig`.
    Join,
}

/// A Docker archive (`docker save` format, which `ctr images import`
/// reads) of one layer holding `files` (path in the image, file on this
/// machine, copied with its mode) and running `entrypoint`.
pub fn image_archive(
    out: &Path,
    tag: &str,
    files: &[(&str, &Path)],
    entrypoint: &[&str],
) -> PathBuf {
    let mut layer = tar::Builder::new(Vec::new());
    for (dst, src) in files {
        let mut h = tar::Header::new_gnu();
        let meta = std::fs::metadata(src).unwrap_or_else(|e| panic!("{}: {e}", src.display()));
        h.set_metadata(&meta);
        h.set_uid(0);
        h.set_gid(0);
        let data = std::fs::read(src).unwrap();
        layer
            .append_data(&mut h, dst.trim_start_matches('/'), data.as_slice())
            .unwrap();
    }
    let layer = layer.into_inner().unwrap();
    let sha = |b: &[u8]| {
        aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, b)
            .as_ref()
            .iter()
            .map(|x| format!("{x:02x}"))
            .collect::<String>()
    };
    let config = serde_json::to_vec(&serde_json::json!({
        "architecture": "amd64",
        "os": "linux",
        "config": { "Entrypoint": entrypoint },
        "rootfs": { "type": "layers", "diff_ids": [format!("sha256:{}", sha(&layer))] },
    }))
    .unwrap();
    let manifest = serde_json::to_vec(&serde_json::json!([{
        "Config": "config.json", "RepoTags": [tag], "Layers": ["layer.tar"],
    }]))
    .unwrap();
    let f = std::fs::File::create(out).unwrap();
    let mut ar = tar::Builder::new(f);
    for (name, data) in [
        ("layer.tar", &layer),
        ("config.json", &config),
        ("manifest.json", &manifest),
    ] {
        let mut h = tar::Header::new_gnu();
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        ar.append_data(&mut h, name, data.as_slice()).unwrap();
    }
    ar.into_inner().unwrap().flush().unwrap();
    out.to_path_buf()
}

/// The sandbox image: `tests/data/pause.c` built static, as an archive in
/// `scratch`.
pub fn pause_image(scratch: &Path) -> PathBuf {
    let bin = scratch.join("pause");
    let out = Command::new("gcc")
        .args(["-static", "-O2", "-o"])
        .arg(&bin)
        .arg(repo().join("bins/okd-install/tests/data/pause.c"))
        .output()
        .expect("run gcc");
    assert!(
        out.status.success(),
        "gcc -static pause.c: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    image_archive(
        &scratch.join("pause.tar"),
        PAUSE_IMAGE,
        &[("/pause", &bin)],
        &["/pause"],
    )
}

/// Whether this machine can run node hosts (containerd, runc, the CNI
/// plugins, gcc); prints why not, and fails under `OKD_REQUIRE_TOOLS=1`.
pub fn available() -> bool {
    let missing: Vec<&str> = [
        ("containerd", "/usr/bin/containerd"),
        ("ctr", "/usr/bin/ctr"),
        ("runc", "/usr/sbin/runc"),
        ("bridge CNI plugin", "/usr/lib/cni/bridge"),
        ("nsenter", "/usr/bin/nsenter"),
        ("gcc", "/usr/bin/gcc"),
    ]
    .into_iter()
    .filter(|(_, p)| !Path::new(p).exists())
    .map(|(n, _)| n)
    .collect();
    if missing.is_empty() {
        return true;
    }
    if std::env::var("OKD_REQUIRE_TOOLS").as_deref() == Ok("1") {
        panic!("node hosts need {missing:?} (.ci/run installs them)");
    }
    eprintln!("SKIPPING: node hosts need {missing:?}");
    false
}

/// A running node host.
pub struct NodeHost {
    /// Host name (the kubelet's node name).
    pub name: String,
    /// The network namespace it runs in.
    pub ns: String,
    /// Its address in that namespace.
    pub ip: String,
    /// Its root folder (what its `/etc/kubernetes`, `/opt/openshift`, …
    /// are).
    pub root: PathBuf,
    /// The cgroup (under every hierarchy) its kubelet puts pods in.
    pub cgroup: String,
    init: Child,
}

impl NodeHost {
    /// Starts host `name` with address `ip` in network namespace `ns`
    /// (made by the test), with `root` as its directories, the kit's
    /// `kubelet`, and `images` (Docker archives; the sandbox image is added
    /// here) loaded. Writes containerd's config, a bridge CNI network
    /// `pod_cidr` and the kubelet's config unless `root` already has them.
    /// `kubelet` `none`: the host runs no kubelet (its static pod
    /// manifests are only files).
    /// Returns once the images are imported (the kubelet is starting).
    pub fn start(
        ns: &str,
        name: &str,
        ip: &str,
        pod_cidr: &str,
        root: &Path,
        kubelet: &Path,
        images: &[PathBuf],
    ) -> NodeHost {
        Self::start_as(
            ns,
            name,
            ip,
            pod_cidr,
            root,
            kubelet,
            images,
            Kubelet::Standalone,
        )
    }

    /// [`NodeHost::start`] with the kubelet as `mode` says: standalone
    /// (the bootstrap's `kubelet.sh`), or joining the cluster through the
    /// bootstrap kubeconfig its Ignition laid down
    /// (`/etc/kubernetes/kubeconfig`, as a master's or worker's
    /// `kubelet.service` does): TLS bootstrap of its client certificate,
    /// serving certificates by CSR.
    #[allow(clippy::too_many_arguments)]
    pub fn start_as(
        ns: &str,
        name: &str,
        ip: &str,
        pod_cidr: &str,
        root: &Path,
        kubelet: &Path,
        images: &[PathBuf],
        mode: Kubelet,
    ) -> NodeHost {
        let cgroup = format!(
            "okdn{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::SeqCst)
        );
        write_default(
            &root.join("etc/containerd/config.toml"),
            &containerd_config(),
        );
        write_default(
            &root.join("etc/cni/net.d/10-okd-test.conflist"),
            &cni_config(pod_cidr),
        );
        let mut kcfg = kubelet_config(&cgroup, ip);
        if mode == Kubelet::Join {
            kcfg.push_str("serverTLSBootstrap: true\nrotateCertificates: true\n");
        }
        // This start's cgroup: written on every start (a host started
        // again gets a new one).
        std::fs::create_dir_all(root.join("etc/kubernetes")).unwrap();
        std::fs::write(root.join("etc/kubernetes/kubelet-host.yaml"), &kcfg).unwrap();
        std::fs::create_dir_all(root.join("etc/kubernetes/manifests")).unwrap();
        for d in cgroup_dirs(&cgroup) {
            std::fs::create_dir_all(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display()));
        }
        let init_path = root.join(".init.sh");
        std::fs::write(
            &init_path,
            INIT.replace("$HOST_DIRS", &HOST_DIRS.join(" "))
                .replace("$OVERLAY_TOPS", &OVERLAY_TOPS.join(" "))
                .replace("$PRIVATE_SYSCTLS", &PRIVATE_SYSCTLS.join(" ")),
        )
        .unwrap();
        let pause = pause_image(root);
        // A host started again from its root folder (a machine powered on
        // again) is up only once this start says so.
        let _ = std::fs::remove_file(root.join(".init-state"));
        let log = std::fs::File::create(root.join(".init.log")).unwrap();
        let init = Command::new("nsenter")
            .arg(format!("--net=/run/netns/{ns}"))
            .args([
                "unshare",
                "--mount",
                "--uts",
                "--pid",
                "--fork",
                "--kill-child",
                "--mount-proc",
                "--propagation",
                "private",
                "bash",
            ])
            .arg(&init_path)
            .arg(root)
            .args([name, ip])
            .arg(kubelet)
            .arg(&pause)
            .args(images)
            .env(
                "OKD_KUBELET_JOIN",
                if mode == Kubelet::Join {
                    "--bootstrap-kubeconfig=/etc/kubernetes/kubeconfig --kubeconfig=/var/lib/kubelet/kubeconfig --cert-dir=/var/lib/kubelet/pki"
                } else {
                    ""
                },
            )
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("start the node host");
        let mut host = NodeHost {
            name: name.into(),
            ns: ns.into(),
            ip: ip.into(),
            root: root.into(),
            cgroup,
            init,
        };
        let deadline = Instant::now() + Duration::from_secs(120);
        while !root.join(".init-state").exists() {
            if let Some(st) = host.init.try_wait().unwrap() {
                panic!(
                    "node host {name} ended ({st}) while starting:\n{}\ncontainerd:\n{}",
                    host.file(".init.log"),
                    super::kube::tail(&host.file(".containerd.log"), 20)
                );
            }
            assert!(
                Instant::now() < deadline,
                "node host {name}: images not imported in 120 s"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        host
    }

    /// A file of the root folder as text (empty when missing).
    pub fn file(&self, rel: &str) -> String {
        std::fs::read_to_string(self.root.join(rel)).unwrap_or_default()
    }

    /// The kubelet's log.
    pub fn kubelet_log(&self) -> String {
        self.file(".kubelet.log")
    }

    /// Whether the host is still running; panics with its logs if not.
    pub fn assert_running(&mut self) {
        if let Some(st) = self.init.try_wait().unwrap() {
            panic!(
                "node host {} ended ({st}):\n{}\nkubelet:\n{}",
                self.name,
                self.file(".init.log"),
                super::kube::tail(&self.kubelet_log(), 30)
            );
        }
    }

    /// Writes a static pod manifest into the host's
    /// `/etc/kubernetes/manifests`.
    pub fn add_static_pod(&self, file: &str, yaml: &str) {
        let p = self.root.join("etc/kubernetes/manifests").join(file);
        std::fs::write(p, yaml).unwrap();
    }

    /// Removes a static pod manifest; the kubelet stops the pod.
    pub fn remove_static_pod(&self, file: &str) {
        std::fs::remove_file(self.root.join("etc/kubernetes/manifests").join(file)).unwrap();
    }

    /// Points the host's resolver at `ip` (serve's DNS on the bastion) with
    /// search domain `okd.example`, as a node's DHCP or nmstate would.
    pub fn use_nameserver(&self, ip: &str) {
        let out = self
            .enter("sh")
            .args([
                "-c",
                &format!("rm -f /etc/resolv.conf && printf 'nameserver {ip}\\nsearch okd.example\\n' >/etc/resolv.conf"),
            ])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "resolv.conf: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// A command run inside the host (its network, mount, UTS and PID
    /// namespaces), as `nsenter` into its PID 1.
    pub fn enter(&self, program: &str) -> Command {
        let mut c = Command::new("nsenter");
        c.args([
            "-t",
            &self.pid1().to_string(),
            "-n",
            "-m",
            "-u",
            "-p",
            program,
        ]);
        c
    }

    /// The host's PID 1 (the init script), as the machine numbers it.
    fn pid1(&self) -> u32 {
        let children = std::fs::read_to_string(format!(
            "/proc/{}/task/{}/children",
            self.init.id(),
            self.init.id()
        ))
        .unwrap_or_default();
        children
            .split_whitespace()
            .next()
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("node host {} has no PID 1", self.name))
    }

    /// Every process of the host: its PID 1 and all descendants (the
    /// daemons, the shims and the pods' processes), by the machine's PIDs.
    pub fn pids(&self) -> Vec<u32> {
        let ppid = |pid: u32| -> Option<u32> {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            // `pid (comm) state ppid …`; comm may hold spaces and parens.
            stat.rsplit_once(')')?
                .1
                .split_whitespace()
                .nth(1)?
                .parse()
                .ok()
        };
        let all: Vec<(u32, u32)> = std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| e.file_name().to_string_lossy().parse::<u32>().ok())
            .filter_map(|p| Some((p, ppid(p)?)))
            .collect();
        let mut tree = vec![self.pid1()];
        let mut i = 0;
        while i < tree.len() {
            let parent = tree[i];
            tree.extend(all.iter().filter(|(_, pp)| *pp == parent).map(|(p, _)| *p));
            i += 1;
        }
        tree
    }

    /// The pod IPs host-local gave out on this host.
    pub fn pod_ips(&self) -> Vec<String> {
        let dir = self.root.join("var/lib/cni/networks/okd-test");
        let mut ips: Vec<String> = std::fs::read_dir(dir)
            .map(|rd| {
                rd.filter_map(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| n.parse::<std::net::Ipv4Addr>().is_ok())
                    .collect()
            })
            .unwrap_or_default();
        ips.sort();
        ips
    }
}

impl Drop for NodeHost {
    fn drop(&mut self) {
        self.power_off();
    }
}

impl NodeHost {
    /// Kills the host at once, as a machine switched off: every process
    /// of it (by its PID namespace's PID 1), then its cgroups. Its root
    /// folder stays. Called again (or on drop) it does nothing more.
    pub fn power_off(&mut self) {
        // unshare --kill-child: SIGKILL to the host's PID 1 ends every
        // process of its PID namespace (containerd, the shims, the pods).
        let pid1 = std::fs::read_to_string(format!(
            "/proc/{}/task/{}/children",
            self.init.id(),
            self.init.id()
        ))
        .ok()
        .and_then(|c| c.split_whitespace().next().map(str::to_string));
        if let Some(p) = pid1 {
            let _ = Command::new("kill").args(["-KILL", &p]).output();
        }
        // unshare ends once it reaped PID 1, and PID 1 is reaped only after
        // every process of its namespace is gone.
        let deadline = Instant::now() + Duration::from_secs(20);
        while self.init.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.init.kill();
        let _ = self.init.wait();
        let deadline = Instant::now() + Duration::from_secs(10);
        for d in cgroup_dirs(&self.cgroup) {
            while d.exists() && Instant::now() < deadline {
                remove_cgroup_tree(&d);
                if d.exists() {
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        }
    }
}

/// Removes a cgroup directory and its children, deepest first (cgroup
/// directories go with rmdir, not unlink).
fn remove_cgroup_tree(dir: &Path) {
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                remove_cgroup_tree(&e.path());
            }
        }
    }
    let _ = std::fs::remove_dir(dir);
}

/// The host's cgroup under every mounted hierarchy.
fn cgroup_dirs(cgroup: &str) -> Vec<PathBuf> {
    std::fs::read_dir("/sys/fs/cgroup")
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .map(|e| e.path().join(cgroup))
                .collect()
        })
        .unwrap_or_default()
}

fn write_default(path: &Path, text: &str) {
    if !path.exists() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}

/// containerd 1.6's CRI plugin as this machine needs it.
fn containerd_config() -> String {
    format!(
        r#"version = 2
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{PAUSE_IMAGE}"
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
      SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "/etc/cni/net.d"
"#
    )
}

/// Writes the host's containerd configuration for pulls through a mirror:
/// containerd's CRI reads `certs.d/<registry>/hosts.toml` (containerd
/// `docs/hosts.md`) where CRI-O on a real node reads bootstrap.ign's
/// registries.conf. Every image of `source_registry` (e.g. `quay.io`) is
/// pulled from `mirror` (`host:port`, which holds the same repository
/// paths, as `mirror from-disk` lays them out), trusting `ca` (a path
/// inside the host), with the mirror's login; `server` is the mirror
/// itself, so the source is never contacted.
pub fn write_mirror_config(
    root: &Path,
    source_registry: &str,
    mirror: &str,
    ca: &str,
    login: (&str, &str),
) {
    let base = containerd_config();
    let cfg = format!(
        r#"{base}  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "/etc/containerd/certs.d"
    [plugins."io.containerd.grpc.v1.cri".registry.configs."{mirror}".auth]
      username = "{}"
      password = "{}"
"#,
        login.0, login.1
    );
    let p = root.join("etc/containerd/config.toml");
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, cfg).unwrap();
    let hosts = root.join("etc/containerd/certs.d").join(source_registry);
    std::fs::create_dir_all(&hosts).unwrap();
    std::fs::write(
        hosts.join("hosts.toml"),
        format!(
            "server = \"https://{mirror}\"\n\n[host.\"https://{mirror}\"]\n  capabilities = [\"pull\", \"resolve\"]\n  ca = \"{ca}\"\n"
        ),
    )
    .unwrap();
}

/// Writes the host's podman configuration (what the OS image has on a
/// real node; bootstrap.ign adds registries.conf and the pull secret):
/// `containers.conf` for this machine (cgroupfs, runc, file events, and
/// rlimits under the machine's hard limits, without which runc cannot
/// start a container here), storage under the host's own
/// `/var/lib/containers`, Debian's default `policy.json`, and the mirror's
/// CA in `certs.d/<mirror>/ca.crt` (on a real node `update-ca-trust` adds
/// bootstrap.ign's trust bundle to the system roots).
pub fn write_podman_config(root: &Path, mirror: &str, ca_pem: &[u8]) {
    let c = root.join("etc/containers");
    std::fs::create_dir_all(c.join("certs.d").join(mirror)).unwrap();
    std::fs::write(
        c.join("containers.conf"),
        r#"[containers]
default_ulimits = ["nofile=1024:20000", "nproc=1024:2048"]
log_driver = "k8s-file"
[engine]
cgroup_manager = "cgroupfs"
events_logger = "file"
runtime = "runc"
"#,
    )
    .unwrap();
    std::fs::write(
        c.join("storage.conf"),
        "[storage]\ndriver = \"overlay\"\nrunroot = \"/run/containers/storage\"\ngraphroot = \"/var/lib/containers/storage\"\n",
    )
    .unwrap();
    std::fs::write(
        c.join("policy.json"),
        r#"{"default": [{"type": "insecureAcceptAnything"}]}"#,
    )
    .unwrap();
    std::fs::write(c.join("certs.d").join(mirror).join("ca.crt"), ca_pem).unwrap();
}

/// A bridge network with host-local addresses from `pod_cidr`.
fn cni_config(pod_cidr: &str) -> String {
    serde_json::json!({
        "cniVersion": "1.0.0",
        "name": "okd-test",
        "plugins": [
            {
                "type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false,
                "ipam": { "type": "host-local", "ranges": [[{ "subnet": pod_cidr }]],
                          "routes": [{ "dst": "0.0.0.0/0" }] }
            },
            { "type": "portmap", "capabilities": { "portMappings": true } }
        ]
    })
    .to_string()
}

/// A standalone kubelet (no API server), as bootkube's `kubelet.sh` runs
/// it, on cgroupfs under the host's own cgroup root; image garbage
/// collection and eviction off (the test images are imported, not pulled).
fn kubelet_config(cgroup: &str, ip: &str) -> String {
    format!(
        "apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
cgroupRoot: /{cgroup}
staticPodPath: /etc/kubernetes/manifests
containerRuntimeEndpoint: unix:///run/containerd/containerd.sock
authentication:
  anonymous: {{enabled: false}}
  webhook: {{enabled: false}}
authorization: {{mode: AlwaysAllow}}
failSwapOn: false
readOnlyPort: 0
address: {ip}
evictionHard: {{}}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
"
    )
}
