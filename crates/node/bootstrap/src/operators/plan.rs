//! What each render stage runs ([`plan`]): bootkube.sh's image, arguments
//! and copies per stage.

use std::path::Path;

use super::{
    ASSETS, CLUSTER_PROFILE, Copy, CopyKind, Dest, IMAGE_REFERENCES, MCO_BOOTSTRAP_POD,
    MCO_PLATFORMS, RELEASE_COMPONENT, Render,
};
use crate::release::PulledRelease;

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

pub(super) fn args(list: &[&str]) -> Vec<String> {
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
