//! The render stages of an OpenShift/OKD payload: each runs its operator's
//! image with podman, with the arguments and mounts bootkube.sh gives it,
//! and copies the outputs where bootkube.sh copies them (openshift/installer
//! `data/data/bootstrap/files/usr/local/bin/bootkube.sh.template`; the
//! 4.14+ stage list and flags of the installer reference, §8 "bootkube.sh").
//!
//! [`plan`] says what a stage runs (pure: the arguments, mounts and copies,
//! checked by unit tests); [`run`] runs it with `podman run --quiet
//! --net=host --rm` and then [`apply_copies`]. The operators themselves
//! cannot be built or fetched where okd-install is tested, so this path is
//! verified by contract: the tests run small images that check the
//! arguments and mounts they get and write the documented outputs
//! (`bins/okd-install/tests/bootstrap_contract.rs`).

use std::path::{Path, PathBuf};

use tracing::info;

use crate::release::PulledRelease;

/// The name of the release image itself in a [`Render`] (the
/// cluster-version-operator's `render` runs from it).
pub const RELEASE_COMPONENT: &str = "release";

/// bootkube.sh's `--cluster-profile` for the API renders.
pub const CLUSTER_PROFILE: &str = "self-managed-high-availability";

/// Where bootkube.sh mounts the asset directory in every render container.
pub const ASSETS: &str = "/assets";

/// The platforms whose static pods mco-bootstrap copies when the MCO
/// rendered them (`copy_static_resources_for`).
pub const MCO_PLATFORMS: &[&str] = &[
    "baremetal",
    "openstack",
    "ovirt",
    "vsphere",
    "nutanix",
    "gcp",
    "aws",
];

/// Where a copy lands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dest {
    /// Relative to the asset directory (`/opt/openshift`).
    Work(String),
    /// Relative to the kubelet's root (`/etc/kubernetes`).
    EtcKubernetes(String),
    /// Relative to `/etc` (`mcc/bootstrap`, `mcs`, `ssl/mcs`).
    Etc(String),
}

/// One `cp` of bootkube.sh after a render.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Copy {
    /// The source, relative to the asset directory.
    pub from: String,
    /// A directory's files (`cp from/* to/`), a directory tree
    /// (`cp --recursive from/* to/`) or one file (`cp from to`).
    pub kind: CopyKind,
    /// Where it goes.
    pub to: Dest,
    /// `false`: skipped when the source is missing or empty (bootkube.sh's
    /// `if [ -d … ]` / `if [ -f … ]` guards); `true`: the stage fails.
    pub required: bool,
}

/// What a [`Copy`] copies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopyKind {
    /// The regular files directly in a directory, into a directory.
    Files,
    /// Everything under a directory, into a directory.
    Tree,
    /// One file to a file path.
    File,
}

/// One render as bootkube.sh runs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Render {
    /// The bootkube stage.
    pub stage: &'static str,
    /// The image-references name of the image, or [`RELEASE_COMPONENT`].
    pub component: &'static str,
    /// podman's `--name` (bootkube.sh's container names).
    pub name: &'static str,
    /// The command after the image (the entrypoint's arguments, or a
    /// program path and its arguments).
    pub command: Vec<String>,
    /// `--user 0` (mco and cco renders).
    pub root: bool,
    /// Mount `/etc/kubernetes` too (cluster-bootstrap, wait-for-ceo).
    pub etc_kubernetes: bool,
    /// The output directory, relative to the asset directory, removed
    /// before the run (`rm --recursive --force`), so a rerun after a kill
    /// starts clean.
    pub output: Option<&'static str>,
    /// The copies after a successful run, in order.
    pub copies: Vec<Copy>,
}

mod plan;

use plan::args;
pub use plan::plan;

/// The file mco-bootstrap's `--image-references` reads: the release's
/// image-references (written by [`write_image_references`]).
pub const IMAGE_REFERENCES: &str = "image-references";

/// The bootstrap machine-config server's static pod, which `cvo-overrides`
/// removes (bootkube.sh's `rm --force
/// /etc/kubernetes/manifests/machineconfigoperator-bootstrap-pod.yaml`).
pub const MCO_BOOTSTRAP_POD: &str = "machineconfigoperator-bootstrap-pod.yaml";

/// Writes `<work>/image-references`: an ImageStream (`image.openshift.io/v1`)
/// named for the release's version, one tag per component pointing at its
/// pull spec by digest, as `release-manifests/image-references` has them.
///
/// # Errors
/// The file cannot be written.
pub fn write_image_references(release: &PulledRelease, work: &Path) -> Result<(), String> {
    let tags: Vec<serde_json::Value> = release
        .images
        .iter()
        .map(|(name, spec)| {
            serde_json::json!({"name": name, "from": {"kind": "DockerImage", "name": spec}})
        })
        .collect();
    let stream = serde_json::json!({
        "kind": "ImageStream",
        "apiVersion": "image.openshift.io/v1",
        "metadata": {"name": release.version},
        "spec": {"tags": tags},
    });
    let text = serde_json::to_string_pretty(&stream).expect("serializable");
    okd_fs::write_atomic(&work.join(IMAGE_REFERENCES), text.as_bytes(), 0o644)
        .map_err(|e| e.to_string())
}

/// Where the node keeps what a render's copies touch.
#[derive(Debug, Clone)]
pub struct Roots {
    /// The asset directory (`/opt/openshift`).
    pub work: PathBuf,
    /// The kubelet's root (`/etc/kubernetes`).
    pub etc_kubernetes: PathBuf,
    /// `/etc`.
    pub etc: PathBuf,
}

impl Roots {
    fn dest(&self, d: &Dest) -> PathBuf {
        let (base, rel) = match d {
            Dest::Work(r) => (&self.work, r),
            Dest::EtcKubernetes(r) => (&self.etc_kubernetes, r),
            Dest::Etc(r) => (&self.etc, r),
        };
        if rel.is_empty() {
            base.clone()
        } else {
            base.join(rel)
        }
    }
}

/// The `podman run` arguments for `r` (after `podman`): `run --quiet
/// --net=host --rm --replace --name N [--user 0] --volume
/// <work>:/assets:z [--volume <etc/kubernetes>:/etc/kubernetes:z] IMAGE
/// COMMAND…`. `--replace` removes a container of the same name that a
/// killed run left behind.
pub fn podman_args(r: &Render, image: &str, roots: &Roots) -> Vec<String> {
    let mut a = args(&["run", "--quiet", "--net=host", "--rm", "--replace"]);
    a.push(format!("--name={}", r.name));
    if r.root {
        a.push("--user=0".into());
    }
    a.push(format!("--volume={}:{ASSETS}:z", roots.work.display()));
    if r.etc_kubernetes {
        a.push(format!(
            "--volume={}:/etc/kubernetes:z",
            roots.etc_kubernetes.display()
        ));
    }
    a.push(image.to_string());
    a.extend(r.command.iter().cloned());
    a
}

/// Runs `r` with `podman` (a program name or path): removes a container of
/// the same name a killed run left (`podman rm --force --ignore`) and the
/// output directory, runs the container, then [`apply_copies`].
///
/// # Errors
/// podman cannot start, the container exits non-zero (the message has
/// its exit code and the last lines of its output), or a required output
/// is missing.
pub async fn run(
    podman: &Path,
    r: &Render,
    release: &PulledRelease,
    roots: &Roots,
) -> Result<(), String> {
    let image = if r.component == RELEASE_COMPONENT {
        release.digest_pullspec.clone()
    } else {
        release.image_for(r.component)?.to_string()
    };
    // A container a killed run left behind would go on writing into the
    // output directory: it goes first.
    remove_container(podman, r.name).await;
    if let Some(out) = r.output {
        let p = roots.work.join(out);
        match std::fs::remove_dir_all(&p) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(format!("cannot remove {}: {e}", p.display())),
        }
    }
    let argv = podman_args(r, &image, roots);
    info!(
        "stage {}: running {}'s render: {} {}",
        r.stage,
        r.component,
        podman.display(),
        argv.join(" ")
    );
    let mut attempt = 1;
    let out = loop {
        let out = tokio::process::Command::new(podman)
            .args(&argv)
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true)
            .output()
            .await
            .map_err(|e| {
                format!(
                    "cannot run {}: {e} (bootkube runs the OpenShift operators' renders with podman)",
                    podman.display()
                )
            })?;
        // The podman of a run killed a moment ago may still be creating
        // its container under this name: remove it and try again.
        if !out.status.success()
            && String::from_utf8_lossy(&out.stderr).contains("is already in use")
            && attempt < NAME_IN_USE_TRIES
        {
            info!(
                "the container name {} is still in use (a killed run's podman); removing it and trying again",
                r.name
            );
            attempt += 1;
            tokio::time::sleep(std::time::Duration::from_secs(1)).await;
            remove_container(podman, r.name).await;
            continue;
        }
        break out;
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    for line in stdout.lines().chain(stderr.lines()) {
        info!("{}: {line}", r.name);
    }
    if !out.status.success() {
        let tail: Vec<&str> = stderr
            .lines()
            .chain(stdout.lines())
            .filter(|l| !l.trim().is_empty())
            .collect();
        let tail = tail[tail.len().saturating_sub(3)..].join(" | ");
        return Err(format!(
            "{}'s {} ({image}) exited with {}: {tail}",
            r.component,
            r.command
                .iter()
                .find(|a| !a.starts_with('/'))
                .map_or("command", String::as_str),
            out.status
                .code()
                .map_or_else(|| "a signal".to_string(), |c| format!("code {c}")),
        ));
    }
    let n = apply_copies(&r.copies, roots)?;
    info!("stage {}: copied {n} files from the render", r.stage);
    Ok(())
}

/// How often a render is tried while its container name is still taken.
pub const NAME_IN_USE_TRIES: u32 = 10;

/// `podman rm --force --ignore NAME`, then `podman rm --storage NAME` for a
/// container whose creation was cut off (known to the storage library
/// only); failures are logged, never fatal.
async fn remove_container(podman: &Path, name: &str) {
    for args in [
        vec!["rm", "--force", "--ignore", name],
        vec!["rm", "--storage", name],
    ] {
        match tokio::process::Command::new(podman)
            .args(&args)
            .stdin(std::process::Stdio::null())
            .output()
            .await
        {
            Ok(o) if o.status.success() => {}
            Ok(o) => tracing::debug!(
                "podman {}: {}",
                args.join(" "),
                String::from_utf8_lossy(&o.stderr).trim()
            ),
            Err(e) => tracing::debug!("podman {}: {e}", args.join(" ")),
        }
    }
}

/// Does `copies` in order; returns the number of files copied.
///
/// # Errors
/// A required source is missing or has no files (bootkube.sh's `cp` of an
/// unmatched glob fails the stage), or a file cannot be read or written.
pub fn apply_copies(copies: &[Copy], roots: &Roots) -> Result<usize, String> {
    let mut n = 0;
    for c in copies {
        let from = roots.work.join(&c.from);
        let to = roots.dest(&c.to);
        let copied = match c.kind {
            CopyKind::File => {
                if from.is_file() {
                    copy_file(&from, &to)?;
                    1
                } else {
                    0
                }
            }
            CopyKind::Files => copy_dir(&from, &to, false)?,
            CopyKind::Tree => copy_dir(&from, &to, true)?,
        };
        if copied == 0 && c.required {
            return Err(format!(
                "the render wrote nothing at {} (bootkube copies it to {})",
                from.display(),
                to.display()
            ));
        }
        n += copied;
    }
    Ok(n)
}

fn copy_file(from: &Path, to: &Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt as _;
    let data = std::fs::read(from).map_err(|e| format!("cannot read {}: {e}", from.display()))?;
    let mode = std::fs::metadata(from)
        .map(|m| m.permissions().mode() & 0o777)
        .unwrap_or(0o644);
    if let Some(parent) = to.parent() {
        okd_fs::create_dir_all(parent, 0o755).map_err(|e| e.to_string())?;
    }
    okd_fs::write_atomic(to, &data, mode).map_err(|e| e.to_string())
}

/// Copies the regular files of `from` (and, `recursive`, its
/// directories) into `to`, keeping modes, each file written atomically;
/// a missing `from` copies nothing. Returns the number of files.
///
/// # Errors
/// A message naming the file that cannot be read or written.
pub(crate) fn copy_dir(from: &Path, to: &Path, recursive: bool) -> Result<usize, String> {
    let rd = match std::fs::read_dir(from) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(format!("cannot read {}: {e}", from.display())),
    };
    let mut n = 0;
    for e in rd {
        let e = e.map_err(|e| format!("cannot read {}: {e}", from.display()))?;
        let t = e
            .file_type()
            .map_err(|err| format!("{}: {err}", e.path().display()))?;
        if t.is_file() {
            copy_file(&e.path(), &to.join(e.file_name()))?;
            n += 1;
        } else if t.is_dir() && recursive {
            n += copy_dir(&e.path(), &to.join(e.file_name()), true)?;
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests;
