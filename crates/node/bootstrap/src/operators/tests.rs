use super::plan::args;
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
    assert!(
        mco.command.contains(
            &"--cloud-config-file=/assets/config-bootstrap/cloud-provider-config-generated.yaml"
                .to_string()
        )
    );
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
