//! Single node, bootstrap-in-place (openshift/installer
//! `data/data/bootstrap/bootstrap-in-place/`, installer reference §9):
//! after cluster-bootstrap the node stops the bootstrap's etcd (stage
//! `stop-etcd`) and builds the master Ignition config it will boot from
//! after `install-to-disk` (stage `master-ignition`): the master config of
//! its own machine-config server with the bootstrap's etcd data, etcd
//! member certificates, the control plane and what the post-reboot step
//! needs embedded (openshift/cluster-bootstrap `bootstrap-in-place`, from
//! `master-update.fcc`).
//!
//! For a payload of upstream components the control plane embedded is the
//! one a master runs ([`okd_bootstrap_render::control_plane::master_pods`],
//! secrets under `/etc/kubernetes/static-pod-resources/okd-control-plane`,
//! kube-apiserver on the node's own etcd at localhost), and the etcd
//! member keeps its name and data: the node is the cluster's one member.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use okd_bootstrap_render::control_plane::{self, MASTER_SECRETS, Placement};
use okd_bootstrap_render::{Networks, etcd};
use okd_types::ignition::{Config, File, Unit};
use tracing::info;

/// `master-ignition`'s output under the asset directory: what
/// `install-to-disk` writes to the installation disk.
pub const MASTER_IGN: &str = "master.ign";

/// The master config as the node's machine-config server served it.
pub const ORIGINAL_MASTER_IGN: &str = "original-master.ign";

/// Where `stop-etcd` moves the etcd static pod, under `/etc/kubernetes`.
pub const STOPPED_DIR: &str = "manifests-stopped";

/// The unit the master config gets for the post-reboot step (a oneshot
/// `bootkube.service`, as `master-update.fcc` embeds one).
pub const POST_REBOOT_UNIT: &str = "bootkube.service";

/// What the assets directory keeps for the post-reboot step (copied into
/// master.ign at the same paths).
pub const KEPT_ASSETS: &[&str] = &[
    "auth/kubeconfig-loopback",
    "auth/kubeconfig",
    "original_cvo_overrides.patch",
    okd_types::node_identities::NODE_IDENTITIES_FILE,
    "okd-release.json",
];

/// Stage `stop-etcd`, first half: moves
/// `<etc_kubernetes>/manifests/etcd-member-pod.yaml` to
/// `<etc_kubernetes>/manifests-stopped/` (the kubelet stops the pod).
/// Returns whether it was still there (false on a repeated run).
///
/// # Errors
/// The file cannot be moved.
pub fn stop_etcd_pod(etc_kubernetes: &Path) -> Result<bool, String> {
    let from = etc_kubernetes.join(etcd::POD_FILE);
    let dir = etc_kubernetes.join(STOPPED_DIR);
    okd_fs::create_dir_all(&dir, 0o755).map_err(|e| e.to_string())?;
    match std::fs::rename(&from, dir.join("etcd-member-pod.yaml")) {
        Ok(()) => {
            info!("moved {} to {}", from.display(), dir.display());
            Ok(true)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(format!("cannot move {}: {e}", from.display())),
    }
}

/// Stage `stop-etcd`, second half: waits up to `limit` until nothing
/// answers etcd's client port on `url` (bootstrap-in-place.sh waits until
/// no etcd container runs), so its data directory is at rest.
///
/// # Errors
/// etcd still answers after `limit`.
pub async fn wait_etcd_stopped(
    client: &reqwest::Client,
    url: &str,
    limit: Duration,
) -> Result<(), String> {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if crate::checks::get(client, url).await.is_err() {
            info!("etcd stopped ({url} does not answer)");
            // The process may still be flushing after closing its port.
            tokio::time::sleep(Duration::from_secs(1)).await;
            return Ok(());
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(format!(
                "etcd still answers on {url} {} s after its static pod was moved away",
                limit.as_secs()
            ));
        }
        info!("waiting for etcd to stop ({url} still answers)");
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}

/// A file of `data`, gzip-compressed in its data URL (Ignition spec 3.1+
/// `contents.compression`).
fn gz_file(path: &str, mode: u32, data: &[u8]) -> File {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(6));
    gz.write_all(data).expect("writing to memory");
    let mut f = File::data(path, mode, &gz.finish().expect("writing to memory"));
    f.contents.compression = Some("gzip".into());
    f
}

/// Every regular file under `dir`, recursively, in path order.
fn files_under(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let rd = std::fs::read_dir(&d).map_err(|e| format!("{}: {e}", d.display()))?;
        for e in rd {
            let e = e.map_err(|e| format!("{}: {e}", d.display()))?;
            let t = e
                .file_type()
                .map_err(|err| format!("{}: {err}", e.path().display()))?;
            if t.is_dir() {
                stack.push(e.path());
            } else if t.is_file() {
                out.push(e.path());
            }
        }
    }
    out.sort();
    Ok(out)
}

fn mode_of(p: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(p)
        .map(|m| m.permissions().mode() & 0o777)
        .unwrap_or(0o600)
}

/// Where [`master_ignition`] reads.
#[derive(Debug, Clone)]
pub struct InPlace {
    /// The asset directory (`/opt/openshift`).
    pub work: PathBuf,
    /// The kubelet's configuration root (`/etc/kubernetes`).
    pub etc_kubernetes: PathBuf,
    /// etcd's data directory on this node (`/var/lib/etcd`); files land
    /// at [`etcd::DATA_DIR`] in master.ign.
    pub etcd_data: PathBuf,
    /// This node's address (the API's advertise address).
    pub node_ip: std::net::IpAddr,
    /// The release's image with kube-apiserver and friends.
    pub hyperkube_image: String,
    /// The okd-install program the post-reboot unit runs (this one), if
    /// any.
    pub program: Option<PathBuf>,
}

/// Stage `master-ignition`'s config: `original` (the master config of the
/// node's machine-config server, spec 3.x JSON) plus, as files:
/// the etcd data (every file of `etcd_data`, gzip, 0600), the etcd
/// member's certificates (`static-pod-resources/etcd-member/`), its static
/// pod (from [`STOPPED_DIR`]), the master control plane (its secrets under
/// [`MASTER_SECRETS`] from `<work>/tls` and the loopback kubeconfig, its
/// three static pods), [`KEPT_ASSETS`] under `/opt/openshift`, the
/// okd-install program and [`POST_REBOOT_UNIT`] running `okd-install
/// bootstrap post-reboot`.
///
/// # Errors
/// `original` is not an Ignition config, or an input is missing; the
/// message names it.
pub fn master_ignition(p: &InPlace, original: &[u8]) -> Result<Config, String> {
    let text = std::str::from_utf8(original)
        .map_err(|e| format!("the master config is not UTF-8: {e}"))?;
    let mut cfg = Config::from_json(text)
        .map_err(|e| format!("the master config is not an Ignition config: {e}"))?;
    let read = |path: &Path| std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()));
    let files = &mut cfg.storage.files;
    // The paths this adds replace any the master config has.
    let mut add = |f: File| {
        files.retain(|g| g.path != f.path);
        files.push(f);
    };

    // etcd: data, certificates, the member pod as it ran.
    for f in files_under(&p.etcd_data)? {
        let rel = f.strip_prefix(&p.etcd_data).expect("under the directory");
        let dest = format!("{}/{}", etcd::DATA_DIR, rel.display());
        add(gz_file(&dest, 0o600, &read(&f)?));
    }
    let res = p.etc_kubernetes.join(etcd::RESOURCES);
    for f in files_under(&res)? {
        let rel = f
            .strip_prefix(&p.etc_kubernetes)
            .expect("under the directory");
        add(File::data(
            &format!("/etc/kubernetes/{}", rel.display()),
            mode_of(&f),
            &read(&f)?,
        ));
    }
    let pod = p
        .etc_kubernetes
        .join(STOPPED_DIR)
        .join("etcd-member-pod.yaml");
    add(File::data(
        &format!("/etc/kubernetes/{}", etcd::POD_FILE),
        0o644,
        &read(&pod)?,
    ));

    // The control plane a master runs, on the node's own etcd.
    let placement = Placement {
        secrets_dir: MASTER_SECRETS.to_string(),
        etcd_servers: vec![format!("https://localhost:{}", etcd::CLIENT_PORT)],
        advertise: p.node_ip,
    };
    let networks = Networks::read(&p.work).map_err(|e| e.to_string())?;
    let (pods, secret_files) =
        control_plane::master_pods(&p.hyperkube_image, &placement, &networks);
    for f in secret_files {
        let src = if f == "kubeconfig" {
            p.work.join("auth/kubeconfig-loopback")
        } else {
            p.work.join("tls").join(&f)
        };
        let secret = f.ends_with(".key") || f == "kubeconfig";
        add(File::data(
            &format!("{MASTER_SECRETS}/{f}"),
            if secret { 0o600 } else { 0o644 },
            &read(&src)?,
        ));
    }
    for (file, pod) in pods {
        let yaml = serde_yaml_ng::to_string(&pod).map_err(|e| e.to_string())?;
        add(File::data(
            &format!("/etc/kubernetes/manifests/{file}"),
            0o644,
            yaml.as_bytes(),
        ));
    }

    // What the post-reboot step reads, and the step itself.
    for a in KEPT_ASSETS {
        let src = p.work.join(a);
        if src.exists() {
            add(File::data(
                &format!("/opt/openshift/{a}"),
                mode_of(&src),
                &read(&src)?,
            ));
        }
    }
    if let Some(prog) = &p.program {
        let mut f = gz_file(
            okd_types::control_plane::NODE_PROGRAM_PATH,
            0o755,
            &read(prog)?,
        );
        f.contents.verification.hash = None;
        add(f);
    }
    let unit = format!(
        "[Unit]\nDescription=okd-install: single node, after the reboot: report the bootstrap complete, approve this node's CSRs, clean up\nWants=kubelet.service\nAfter=kubelet.service\nConditionPathExists=!/opt/openshift/.post-reboot.done\n\n[Service]\nType=oneshot\nRemainAfterExit=true\nExecStart={} bootstrap post-reboot\nRestart=on-failure\nRestartSec=10\n\n[Install]\nWantedBy=multi-user.target\n",
        okd_types::control_plane::NODE_PROGRAM_PATH
    );
    cfg.systemd.units.retain(|u| u.name != POST_REBOOT_UNIT);
    cfg.systemd
        .units
        .push(Unit::new(POST_REBOOT_UNIT, Some(unit), Some(true)));
    Ok(cfg)
}

/// The machine-config server's master config for an OKD/OCP payload:
/// `GET http://localhost:22624/config/master` with `Accept:
/// application/vnd.coreos.ignition+json;version=3.2.0` (the MCO's bootstrap
/// pod; bootstrap-in-place.sh's `curl`), retried up to `limit`.
///
/// # Errors
/// No answer with status 2xx within `limit` (the last reason).
pub async fn fetch_master_config(limit: Duration) -> Result<Vec<u8>, String> {
    let client = reqwest::Client::builder()
        .timeout(crate::checks::REQUEST_TIMEOUT)
        .build()
        .map_err(|e| e.to_string())?;
    let url = "http://localhost:22624/config/master";
    crate::checks::poll(&format!("the master config ({url})"), limit, || {
        let client = client.clone();
        async move {
            let r = client
                .get(url)
                .header(
                    "Accept",
                    "application/vnd.coreos.ignition+json;version=3.2.0",
                )
                .send()
                .await
                .map_err(|e| crate::checks::cause(&e))?;
            if !r.status().is_success() {
                return Err(format!("{url}: HTTP {}", r.status()));
            }
            r.bytes()
                .await
                .map(|b| b.to_vec())
                .map_err(|e| crate::checks::cause(&e))
        }
    })
    .await
}

/// Stage `master-ignition`'s output: `original` kept as
/// `<work>/`[`ORIGINAL_MASTER_IGN`] and [`master_ignition`]'s config as
/// `<work>/`[`MASTER_IGN`], both 0600 (they hold keys), atomically.
///
/// # Errors
/// [`master_ignition`]'s, or a file cannot be written.
pub fn write_master_ign(p: &InPlace, original: &[u8]) -> Result<(), String> {
    okd_fs::write_atomic(&p.work.join(ORIGINAL_MASTER_IGN), original, 0o600)
        .map_err(|e| e.to_string())?;
    let cfg = master_ignition(p, original)?;
    let json = cfg.to_json();
    let out = p.work.join(MASTER_IGN);
    okd_fs::write_atomic(&out, json.as_bytes(), 0o600).map_err(|e| e.to_string())?;
    info!(
        "wrote {} ({} files, {} units, {} bytes) for install-to-disk",
        out.display(),
        cfg.storage.files.len(),
        cfg.systemd.units.len(),
        json.len()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_etcd_moves_the_pod_once() {
        let d = tempfile::tempdir().unwrap();
        let ek = d.path();
        std::fs::create_dir_all(ek.join("manifests")).unwrap();
        std::fs::write(ek.join(etcd::POD_FILE), "pod").unwrap();
        assert!(stop_etcd_pod(ek).unwrap());
        assert!(!ek.join(etcd::POD_FILE).exists());
        assert_eq!(
            std::fs::read_to_string(ek.join(STOPPED_DIR).join("etcd-member-pod.yaml")).unwrap(),
            "pod"
        );
        assert!(!stop_etcd_pod(ek).unwrap(), "a repeated run finds it moved");
    }

    #[test]
    fn a_master_config_that_is_not_ignition_is_refused_by_name() {
        let d = tempfile::tempdir().unwrap();
        let p = InPlace {
            work: d.path().into(),
            etc_kubernetes: d.path().into(),
            etcd_data: d.path().into(),
            node_ip: "10.0.0.2".parse().unwrap(),
            hyperkube_image: "x".into(),
            program: None,
        };
        let e = master_ignition(&p, b"<html>").unwrap_err();
        assert!(e.contains("not an Ignition config"), "{e}");
    }
}
