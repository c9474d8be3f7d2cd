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

fn files(from: &str, to: Dest) -> Copy {
    Copy {
        from: from.into(),
        kind: CopyKind::Files,
        to,
        required: true,
    }
}

fn file(from: &str, to: Dest) -> Copy {
    Copy {
        from: from.into(),
        kind: CopyKind::File,
        to,
        required: true,
    }
}

fn optional(c: Copy) -> Copy {
    Copy {
        required: false,
        ..c
    }
}

fn work(p: &str) -> Dest {
    Dest::Work(p.into())
}

fn kube(p: &str) -> Dest {
    Dest::EtcKubernetes(p.into())
}

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// What `stage` runs for the OpenShift payload `release`, with the asset
/// directory `assets_dir` (read only to pick the optional flags bootkube.sh adds
/// when a file exists). `None`: the stage runs no operator image.
///
/// # Errors
/// A message naming the image the release lacks.
pub fn plan(
    stage: &str,
    release: &PulledRelease,
    assets_dir: &Path,
) -> Result<Option<Render>, String> {
    let v = format!("--payload-version={}", release.version);
    let img = |n: &str| release.image_for(n).map(str::to_string);
    let api_render = |out: &'static str| {
        vec![
            format!("--asset-output-dir=/assets/{out}"),
            "--rendered-manifest-dir=/assets/manifests".to_string(),
            format!("--cluster-profile={CLUSTER_PROFILE}"),
            v.clone(),
        ]
    };
    let r = match stage {
        "api-bootstrap" => Render {
            stage: "api-bootstrap",
            component: "cluster-config-api",
            name: "api-render",
            command: [
                vec!["/usr/bin/render".to_string()],
                api_render("api-bootstrap"),
            ]
            .concat(),
            root: false,
            etc_kubernetes: false,
            output: Some("api-bootstrap"),
            copies: vec![files("api-bootstrap", work("manifests"))],
        },
        "auth-api-bootstrap" => Render {
            stage: "auth-api-bootstrap",
            component: "cluster-authentication-operator",
            name: "auth-api-render",
            command: [
                args(&["/usr/bin/authentication-operator", "render"]),
                api_render("auth-api-bootstrap"),
            ]
            .concat(),
            root: false,
            etc_kubernetes: false,
            output: Some("auth-api-bootstrap"),
            copies: vec![files("auth-api-bootstrap", work("manifests"))],
        },
        "config-bootstrap" => {
            let mut command = args(&[
                "/usr/bin/cluster-config-operator",
                "render",
                "--cluster-infrastructure-input-file=/assets/manifests/cluster-infrastructure-02-config.yml",
                "--cloud-provider-config-output-file=/assets/config-bootstrap/cloud-provider-config-generated.yaml",
                "--config-output-file=/assets/config-bootstrap/config",
                "--asset-input-dir=/assets/tls",
                "--asset-output-dir=/assets/config-bootstrap",
                "--skip-api-rendering",
                "--rendered-manifest-files=/assets/manifests",
            ]);
            command.push(v.clone());
            if assets_dir
                .join("manifests/cloud-provider-config.yaml")
                .exists()
            {
                command.push(
                    "--cloud-provider-config-input-file=/assets/manifests/cloud-provider-config.yaml"
                        .into(),
                );
            }
            Render {
                stage: "config-bootstrap",
                component: "cluster-config-operator",
                name: "config-render",
                command,
                root: false,
                etc_kubernetes: false,
                output: Some("config-bootstrap"),
                copies: vec![files("config-bootstrap/manifests", work("manifests"))],
            }
        }
        "cvo-bootstrap" => Render {
            stage: "cvo-bootstrap",
            component: RELEASE_COMPONENT,
            name: "cvo-render",
            command: vec![
                "render".into(),
                "--output-dir=/assets/cvo-bootstrap".into(),
                format!("--release-image={}", release.digest_pullspec),
                "--feature-gate-manifest-path=/assets/manifests/99_feature-gate.yaml".into(),
            ],
            root: false,
            etc_kubernetes: false,
            output: Some("cvo-bootstrap"),
            copies: vec![
                files("cvo-bootstrap/bootstrap", work("bootstrap-manifests")),
                files("cvo-bootstrap/manifests", work("manifests")),
            ],
        },
        "etcd-bootstrap" => Render {
            stage: "etcd-bootstrap",
            component: "cluster-etcd-operator",
            name: "etcd-render",
            command: vec![
                "/usr/bin/cluster-etcd-operator".into(),
                "render".into(),
                "--asset-output-dir=/assets/etcd-bootstrap".into(),
                "--cluster-configmap-file=/assets/manifests/cluster-config.yaml".into(),
                format!("--etcd-image={}", img("etcd")?),
                "--infra-config-file=/assets/manifests/cluster-infrastructure-02-config.yml".into(),
                "--network-config-file=/assets/manifests/cluster-network-02-config.yml".into(),
            ],
            root: false,
            etc_kubernetes: false,
            output: Some("etcd-bootstrap"),
            copies: vec![
                Copy {
                    kind: CopyKind::Tree,
                    ..files("etcd-bootstrap/etc-kubernetes", kube(""))
                },
                files("etcd-bootstrap/manifests", work("manifests")),
                files("etcd-bootstrap/tls", work("tls")),
            ],
        },
        "kube-apiserver-bootstrap" => Render {
            stage: "kube-apiserver-bootstrap",
            component: "cluster-kube-apiserver-operator",
            name: "kube-apiserver-render",
            command: vec![
                "/usr/bin/cluster-kube-apiserver-operator".into(),
                "render".into(),
                "--manifest-etcd-serving-ca=etcd-ca-bundle.crt".into(),
                "--manifest-etcd-server-urls=https://localhost:2379".into(),
                format!("--manifest-image={}", img("hyperkube")?),
                format!(
                    "--manifest-operator-image={}",
                    img("cluster-kube-apiserver-operator")?
                ),
                "--asset-input-dir=/assets/tls".into(),
                "--asset-output-dir=/assets/kube-apiserver-bootstrap".into(),
                "--config-output-file=/assets/kube-apiserver-bootstrap/config".into(),
                "--cluster-config-file=/assets/manifests/cluster-network-02-config.yml".into(),
                "--cluster-auth-file=/assets/manifests/cluster-authentication-02-config.yaml"
                    .into(),
                "--infra-config-file=/assets/manifests/cluster-infrastructure-02-config.yml".into(),
                "--rendered-manifest-files=/assets/manifests".into(),
                v.clone(),
            ],
            root: false,
            etc_kubernetes: false,
            output: Some("kube-apiserver-bootstrap"),
            copies: vec![
                file(
                    "kube-apiserver-bootstrap/config",
                    kube("bootstrap-configs/kube-apiserver-config.yaml"),
                ),
                files(
                    "kube-apiserver-bootstrap/bootstrap-manifests",
                    work("bootstrap-manifests"),
                ),
                files("kube-apiserver-bootstrap/manifests", work("manifests")),
            ],
        },
        "kube-controller-manager-bootstrap" => Render {
            stage: "kube-controller-manager-bootstrap",
            component: "cluster-kube-controller-manager-operator",
            name: "kube-controller-render",
            command: vec![
                "/usr/bin/cluster-kube-controller-manager-operator".into(),
                "render".into(),
                format!(
                    "--cluster-policy-controller-image={}",
                    img("cluster-policy-controller")?
                ),
                format!("--manifest-image={}", img("hyperkube")?),
                "--asset-input-dir=/assets/tls".into(),
                "--asset-output-dir=/assets/kube-controller-manager-bootstrap".into(),
                "--config-output-file=/assets/kube-controller-manager-bootstrap/config".into(),
                "--cpc-config-output-file=/assets/kube-controller-manager-bootstrap/cpc-config"
                    .into(),
                "--cluster-config-file=/assets/manifests/cluster-network-02-config.yml".into(),
                "--rendered-manifest-files=/assets/manifests".into(),
                v.clone(),
            ],
            root: false,
            etc_kubernetes: false,
            output: Some("kube-controller-manager-bootstrap"),
            copies: vec![
                file(
                    "kube-controller-manager-bootstrap/config",
                    kube("bootstrap-configs/kube-controller-manager-config.yaml"),
                ),
                file(
                    "kube-controller-manager-bootstrap/cpc-config",
                    kube("bootstrap-configs/cluster-policy-controller-config.yaml"),
                ),
                files(
                    "kube-controller-manager-bootstrap/bootstrap-manifests",
                    work("bootstrap-manifests"),
                ),
                files(
                    "kube-controller-manager-bootstrap/manifests",
                    work("manifests"),
                ),
                // The service-account signing key pair, when the operator
                // renders it.
                optional(files("kube-controller-manager-bootstrap/tls", work("tls"))),
            ],
        },
        "kube-scheduler-bootstrap" => Render {
            stage: "kube-scheduler-bootstrap",
            component: "cluster-kube-scheduler-operator",
            name: "kube-scheduler-render",
            command: vec![
                "/usr/bin/cluster-kube-scheduler-operator".into(),
                "render".into(),
                format!("--manifest-image={}", img("hyperkube")?),
                "--asset-input-dir=/assets/tls".into(),
                "--asset-output-dir=/assets/kube-scheduler-bootstrap".into(),
                "--config-output-file=/assets/kube-scheduler-bootstrap/config".into(),
                "--rendered-manifest-files=/assets/manifests".into(),
                v.clone(),
            ],
            root: false,
            etc_kubernetes: false,
            output: Some("kube-scheduler-bootstrap"),
            copies: vec![
                file(
                    "kube-scheduler-bootstrap/config",
                    kube("bootstrap-configs/kube-scheduler-config.yaml"),
                ),
                files(
                    "kube-scheduler-bootstrap/bootstrap-manifests",
                    work("bootstrap-manifests"),
                ),
                files("kube-scheduler-bootstrap/manifests", work("manifests")),
            ],
        },
        "ingress-operator-bootstrap" => Render {
            stage: "ingress-operator-bootstrap",
            component: "cluster-ingress-operator",
            name: "ingress-render",
            command: args(&[
                "render",
                "--prefix=cluster-ingress-",
                "--output-dir=/assets/ingress-operator-manifests",
            ]),
            root: false,
            etc_kubernetes: false,
            output: Some("ingress-operator-manifests"),
            copies: vec![files("ingress-operator-manifests", work("manifests"))],
        },
        "node-tuning-bootstrap" => Render {
            stage: "node-tuning-bootstrap",
            component: "cluster-node-tuning-operator",
            name: "nto-render",
            command: args(&[
                "/usr/bin/cluster-node-tuning-operator",
                "render",
                "--asset-input-dir=/assets/manifests",
                "--asset-output-dir=/assets/node-tuning-bootstrap",
            ]),
            root: false,
            etc_kubernetes: false,
            output: Some("node-tuning-bootstrap"),
            // NTO renders only for PerformanceProfiles in the manifests;
            // most installs have none.
            copies: vec![optional(files("node-tuning-bootstrap", work("manifests")))],
        },
        "mco-bootstrap" => {
            let mut command = vec![
                "bootstrap".to_string(),
                "--root-ca=/assets/tls/root-ca.crt".into(),
                "--kube-ca=/assets/tls/kube-apiserver-complete-client-ca-bundle.crt".into(),
                "--config-file=/assets/manifests/cluster-config.yaml".into(),
                "--dest-dir=/assets/mco-bootstrap".into(),
                "--pull-secret=/assets/manifests/openshift-config-secret-pull-secret.yaml".into(),
                format!("--release-image={}", release.digest_pullspec),
                format!("--image-references={ASSETS}/{IMAGE_REFERENCES}"),
                v.clone(),
            ];
            if assets_dir.join("tls/cloud-ca-cert.pem").exists() {
                command.push("--cloud-provider-ca-file=/assets/tls/cloud-ca-cert.pem".into());
            }
            if assets_dir
                .join("manifests/cloud-provider-config.yaml")
                .exists()
            {
                command.push(
                    "--cloud-config-file=/assets/config-bootstrap/cloud-provider-config-generated.yaml"
                        .into(),
                );
            }
            let mut copies = vec![
                files(
                    "mco-bootstrap/bootstrap/manifests",
                    Dest::Etc("mcc/bootstrap".into()),
                ),
                files("openshift", Dest::Etc("mcc/bootstrap".into())),
                files("manifests", Dest::Etc("mcc/bootstrap".into())),
                file(
                    "auth/kubeconfig-kubelet",
                    Dest::Etc("mcs/kubeconfig".into()),
                ),
                file(
                    "mco-bootstrap/bootstrap/machineconfigoperator-bootstrap-pod.yaml",
                    kube(&format!("manifests/{MCO_BOOTSTRAP_POD}")),
                ),
            ];
            for p in MCO_PLATFORMS {
                copies.push(optional(files(
                    &format!("mco-bootstrap/{p}/manifests"),
                    kube("manifests"),
                )));
                copies.push(optional(Copy {
                    kind: CopyKind::Tree,
                    ..files(
                        &format!("mco-bootstrap/{p}/static-pod-resources"),
                        kube("static-pod-resources"),
                    )
                }));
            }
            copies.push(files("mco-bootstrap/manifests", work("manifests")));
            copies.push(file(
                "tls/machine-config-server.crt",
                Dest::Etc("ssl/mcs/tls.crt".into()),
            ));
            copies.push(file(
                "tls/machine-config-server.key",
                Dest::Etc("ssl/mcs/tls.key".into()),
            ));
            Render {
                stage: "mco-bootstrap",
                component: "machine-config-operator",
                name: "mco-render",
                command,
                root: true,
                etc_kubernetes: false,
                output: Some("mco-bootstrap"),
                copies,
            }
        }
        "cco-bootstrap" => Render {
            stage: "cco-bootstrap",
            component: "cloud-credential-operator",
            name: "cco-render",
            command: vec![
                "render".into(),
                "--dest-dir=/assets/cco-bootstrap".into(),
                "--manifests-dir=/assets/manifests".into(),
                format!(
                    "--cloud-credential-operator-image={}",
                    img("cloud-credential-operator")?
                ),
            ],
            root: true,
            etc_kubernetes: false,
            output: Some("cco-bootstrap"),
            copies: vec![
                files("cco-bootstrap/manifests", work("manifests")),
                // Only when the capability is on and the operator rendered
                // its static pod.
                optional(files(
                    "cco-bootstrap/bootstrap-manifests",
                    work("bootstrap-manifests"),
                )),
            ],
        },
        "wait-for-ceo" => Render {
            stage: "wait-for-ceo",
            component: "cluster-etcd-operator",
            name: "wait-for-ceo",
            command: args(&[
                "/usr/bin/cluster-etcd-operator",
                "wait-for-ceo",
                "--kubeconfig",
                "/assets/auth/kubeconfig",
            ]),
            root: false,
            etc_kubernetes: false,
            output: None,
            copies: Vec::new(),
        },
        _ => return Ok(None),
    };
    // The image must exist before anything runs.
    if r.component != RELEASE_COMPONENT {
        img(r.component)?;
    }
    Ok(Some(r))
}

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

fn copy_dir(from: &Path, to: &Path, recursive: bool) -> Result<usize, String> {
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
mod tests {
    use super::*;
    use crate::release::PayloadKind;
    use std::collections::BTreeMap;

    fn release() -> PulledRelease {
        let mut images = BTreeMap::new();
        for n in [
            "cluster-config-api",
            "cluster-authentication-operator",
            "cluster-config-operator",
            "cluster-etcd-operator",
            "cluster-kube-apiserver-operator",
            "cluster-kube-controller-manager-operator",
            "cluster-kube-scheduler-operator",
            "cluster-ingress-operator",
            "cluster-node-tuning-operator",
            "machine-config-operator",
            "cloud-credential-operator",
            "etcd",
            "hyperkube",
            "cluster-policy-controller",
        ] {
            images.insert(n.to_string(), format!("quay.io/o/c@sha256:{n}"));
        }
        PulledRelease {
            release_image: "quay.io/o/r:4.15".into(),
            digest_pullspec: "quay.io/o/r@sha256:abc".into(),
            pulled_from: "m/o/r@sha256:abc".into(),
            version: "4.15.0".into(),
            architecture: "amd64".into(),
            kind: PayloadKind::Openshift,
            images,
        }
    }

    #[test]
    fn every_render_stage_has_a_plan_and_the_checks_have_none() {
        let d = tempfile::tempdir().unwrap();
        let r = release();
        for s in okd_bootkube::STAGES {
            let p = plan(s.name, &r, d.path()).unwrap();
            let renders = s.name.ends_with("-bootstrap")
                && s.name != "cb-bootstrap"
                && s.name != "cmdbootline-nto-bootstrap"
                || s.name == "wait-for-ceo";
            assert_eq!(p.is_some(), renders, "{}", s.name);
            if let Some(p) = p {
                assert_eq!(p.stage, s.name);
            }
        }
    }

    #[test]
    fn the_arguments_are_bootkubes() {
        let d = tempfile::tempdir().unwrap();
        let r = release();
        let etcd = plan("etcd-bootstrap", &r, d.path()).unwrap().unwrap();
        assert!(
            etcd.command
                .contains(&"--etcd-image=quay.io/o/c@sha256:etcd".to_string())
        );
        let cvo = plan("cvo-bootstrap", &r, d.path()).unwrap().unwrap();
        assert_eq!(cvo.component, RELEASE_COMPONENT);
        assert!(
            cvo.command
                .contains(&"--release-image=quay.io/o/r@sha256:abc".to_string())
        );
        let roots = Roots {
            work: "/opt/openshift".into(),
            etc_kubernetes: "/etc/kubernetes".into(),
            etc: "/etc".into(),
        };
        let mco = plan("mco-bootstrap", &r, d.path()).unwrap().unwrap();
        let a = podman_args(&mco, "img", &roots);
        assert_eq!(
            &a[..8],
            &args(&[
                "run",
                "--quiet",
                "--net=host",
                "--rm",
                "--replace",
                "--name=mco-render",
                "--user=0",
                "--volume=/opt/openshift:/assets:z"
            ])[..]
        );
        assert_eq!(a[8], "img");
        assert_eq!(a[9], "bootstrap");
        assert!(!mco.command.iter().any(|a| a.contains("cloud")));
        // The optional flags follow the files bootkube.sh tests for.
        std::fs::create_dir_all(d.path().join("manifests")).unwrap();
        std::fs::write(d.path().join("manifests/cloud-provider-config.yaml"), "x").unwrap();
        let mco = plan("mco-bootstrap", &r, d.path()).unwrap().unwrap();
        assert!(mco
            .command
            .contains(&"--cloud-config-file=/assets/config-bootstrap/cloud-provider-config-generated.yaml".to_string()));
        let cfg = plan("config-bootstrap", &r, d.path()).unwrap().unwrap();
        assert!(
            cfg.command
                .iter()
                .any(|a| a.starts_with("--cloud-provider-config-input-file="))
        );
    }

    #[test]
    fn a_missing_image_is_named() {
        let d = tempfile::tempdir().unwrap();
        let mut r = release();
        r.images.remove("cluster-ingress-operator");
        let e = plan("ingress-operator-bootstrap", &r, d.path()).unwrap_err();
        assert!(e.contains("cluster-ingress-operator"), "{e}");
    }

    #[test]
    fn copies_land_where_bootkube_puts_them_and_a_missing_output_fails() {
        let d = tempfile::tempdir().unwrap();
        let roots = Roots {
            work: d.path().join("opt"),
            etc_kubernetes: d.path().join("etc/kubernetes"),
            etc: d.path().join("etc"),
        };
        let r = release();
        let p = plan("etcd-bootstrap", &r, &roots.work).unwrap().unwrap();
        let e = apply_copies(&p.copies, &roots).unwrap_err();
        assert!(e.contains("etcd-bootstrap/etc-kubernetes"), "{e}");
        let o = roots.work.join("etcd-bootstrap");
        std::fs::create_dir_all(o.join("etc-kubernetes/manifests")).unwrap();
        std::fs::write(
            o.join("etc-kubernetes/manifests/etcd-member-pod.yaml"),
            "pod",
        )
        .unwrap();
        std::fs::create_dir_all(o.join("manifests")).unwrap();
        std::fs::write(o.join("manifests/etcd-ns.yaml"), "ns").unwrap();
        std::fs::create_dir_all(o.join("tls")).unwrap();
        std::fs::write(o.join("tls/etcd-ca-bundle.crt"), "ca").unwrap();
        assert_eq!(apply_copies(&p.copies, &roots).unwrap(), 3);
        assert_eq!(
            std::fs::read_to_string(roots.etc_kubernetes.join("manifests/etcd-member-pod.yaml"))
                .unwrap(),
            "pod"
        );
        assert!(roots.work.join("manifests/etcd-ns.yaml").exists());
        assert!(roots.work.join("tls/etcd-ca-bundle.crt").exists());
    }
}
