//! The bootstrap node's release pull (`okd-install bootstrap
//! release-image`, issue #20 item 2) against a real mirror: the test
//! payload (tests/common/payload.rs) is pushed into the mirror registry
//! of `mirror registry init` with `mirror from-disk`, as a disconnected
//! user does; install-config gets the printed imageDigestSources (with
//! `sourcePolicy: NeverContactSource`, so no pull ever leaves for
//! quay.io) and `create ignition-configs` writes bootstrap.ign; the node's
//! registries.conf, mirror CA and pull secret are taken from that
//! bootstrap.ign. Each failure (mirror CA missing, mirror down, a
//! release for another architecture) shows its message on the console
//! and in the service record, and the pull recovers when the cause is
//! removed.

mod common;
mod mirror_support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::{example_dir, ign_files, okd, okd_ok, payload, read_ign};
use mirror_support::{PidGuard, need, registry_init, registry_pid};
use okd_bootstrap::{PullOptions, ReleaseImageError};
use okd_test_utils::free_tcp_port;

const VERSION: &str = "4.15.0-0.okd-upstream-test";

/// The node's files as bootstrap.ign lays them down, under `root`.
fn lay_down(bootstrap_ign: &Path, root: &Path) {
    let files = ign_files(&read_ign(bootstrap_ign));
    for p in [
        "/etc/containers/registries.conf",
        "/etc/pki/ca-trust/source/anchors/ca.crt",
        "/root/.docker/config.json",
    ] {
        let (_, data, _) = files
            .get(p)
            .unwrap_or_else(|| panic!("bootstrap.ign has no {p}"));
        let dst = root.join(p.trim_start_matches('/'));
        std::fs::create_dir_all(dst.parent().unwrap()).unwrap();
        std::fs::write(dst, data).unwrap();
    }
}

fn opts(root: &Path, release: &str) -> PullOptions {
    PullOptions {
        release_image: release.into(),
        registries_conf: root.join("etc/containers/registries.conf"),
        auth_file: root.join("root/.docker/config.json"),
        ca_file: root.join("etc/pki/ca-trust/source/anchors/ca.crt"),
        architecture: "amd64".into(),
        plain_http: Vec::new(),
    }
}

fn dirs(root: &Path) -> okd_bootkube::Dirs {
    let d = okd_bootkube::Dirs {
        work: root.join("opt/openshift"),
        records: root.join("var/log/openshift"),
        issue: root.join("etc/issue.d"),
    };
    for p in [&d.work, &d.records, &d.issue] {
        std::fs::create_dir_all(p).unwrap();
    }
    d
}

fn console(root: &Path) -> String {
    std::fs::read_to_string(
        root.join("etc/issue.d")
            .join(okd_bootstrap::RELEASE_ISSUE_FILE),
    )
    .unwrap_or_default()
}

fn records(root: &Path) -> Vec<okd_service_record::Entry> {
    let data = std::fs::read(root.join("var/log/openshift/release-image.json")).unwrap();
    okd_service_record::parse_entries(&data).unwrap()
}

fn tiny(name: &str) -> Vec<(&'static str, Vec<u8>, u32)> {
    vec![(
        "/usr/bin/x",
        format!("#!/bin/sh\necho {name}\n").into_bytes(),
        0o755,
    )]
}

/// Pushes `p` into the mirror with `mirror from-disk`; returns the
/// folder it wrote the install-config block to.
fn from_disk(assets: &Path, p: &payload::Payload, port: u16) -> PathBuf {
    let out_dir = assets.join(format!("mirror-out-{}", p.version));
    let args = payload::from_disk_args(p, &format!("localhost:{port}"), &out_dir);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = okd(assets, &args);
    assert!(
        out.status.success(),
        "mirror from-disk: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out_dir
}

#[test]
fn the_release_is_pulled_by_digest_through_the_mirror_and_each_fault_recovers() {
    let Some(registry) = need("docker-registry", "docker-registry") else {
        return;
    };
    let t = tempfile::tempdir().unwrap();
    let ex = example_dir("baremetal-single-master");
    let assets = ex.path();
    // The mirror registry, its CA and login added to install-config.yaml.
    let port = free_tcp_port();
    std::fs::write(t.path().join("pw"), "s3cret\n").unwrap();
    let pw = t.path().join("pw");
    let port_s = port.to_string();
    okd_ok(
        assets,
        &[
            &registry_init("localhost", "127.0.0.1")[..],
            &[
                "--port",
                &port_s,
                "--username",
                "okd",
                "--password-file",
                pw.to_str().unwrap(),
                "--start",
                "--registry-program",
                registry.to_str().unwrap(),
            ],
        ]
        .concat(),
    );
    let reg = assets.join("mirror-registry");
    let _b = PidGuard(registry_pid(&reg));

    // The payload, pushed as a disconnected user pushes it.
    let p = payload::build_with(
        t.path(),
        VERSION,
        "amd64",
        &tiny("etcd"),
        &tiny("hyperkube"),
    );
    let out_dir = from_disk(assets, &p, port);
    payload::use_mirror(assets, &out_dir);
    let out = Command::new(env!("CARGO_BIN_EXE_okd-install"))
        .args([
            "create",
            "ignition-configs",
            "--release-version",
            "4.15",
            "--dir",
        ])
        .arg(assets)
        .env(
            "OPENSHIFT_INSTALL_RELEASE_IMAGE_OVERRIDE",
            p.release_image(),
        )
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "create ignition-configs: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let root = t.path().join("root");
    lay_down(&assets.join("bootstrap.ign"), &root);
    let conf = std::fs::read_to_string(root.join("etc/containers/registries.conf")).unwrap();
    assert!(conf.contains("blocked = true"), "{conf}");
    let d = dirs(&root);
    let rt = tokio::runtime::Runtime::new().unwrap();

    // 1. The mirror's CA missing: the x509 reason, on the console and in
    // the record.
    let mut no_ca = opts(&root, &p.release_image());
    no_ca.ca_file = root.join("nonexistent.crt");
    let e = rt
        .block_on(okd_bootstrap::release_image(
            &no_ca,
            &d,
            Some(Duration::from_secs(3)),
        ))
        .unwrap_err();
    let text = e.to_string();
    assert!(matches!(e, ReleaseImageError::GaveUp(_)), "{text}");
    assert!(
        text.contains(&format!(
            "localhost:{port}/openshift/okd@{}",
            p.release_digest
        )) && (text.contains("certificate") || text.contains("UnknownIssuer")),
        "{text}"
    );
    assert_eq!(
        text.matches("cannot reach registry").count(),
        1,
        "only the mirror is tried, the source is blocked: {text}"
    );
    assert!(text.contains("additionalTrustBundle"), "{text}");
    let c = console(&root);
    assert!(
        c.starts_with("Unable to pull OpenShift release image"),
        "{c}"
    );
    assert!(
        c.contains("certificate") || c.contains("UnknownIssuer"),
        "{c}"
    );
    let rec = records(&root);
    let (stage_end, service_end) = (&rec[rec.len() - 2], &rec[rec.len() - 1]);
    assert_eq!(
        (service_end.phase.as_str(), service_end.result.as_str()),
        ("service end", "failure")
    );
    assert_eq!(
        (
            stage_end.stage.as_str(),
            stage_end.phase.as_str(),
            stage_end.result.as_str()
        ),
        ("pull-release-image", "stage end", "failure")
    );
    assert!(
        stage_end.error_message.contains("UnknownIssuer"),
        "{stage_end:?}"
    );

    // 2. With the CA from bootstrap.ign: pulled, the console message gone.
    let pulled = rt
        .block_on(okd_bootstrap::release_image(
            &opts(&root, &p.release_image()),
            &d,
            Some(Duration::from_secs(30)),
        ))
        .unwrap();
    assert_eq!(pulled.kind, okd_bootstrap::release::PayloadKind::Upstream);
    assert_eq!(pulled.version, VERSION);
    assert_eq!(pulled.architecture, "amd64");
    assert_eq!(
        pulled.pulled_from,
        format!("localhost:{port}/openshift/okd@{}", p.release_digest)
    );
    assert_eq!(pulled.image_for("etcd").unwrap(), p.image("etcd"));
    assert_eq!(pulled.image_for("hyperkube").unwrap(), p.image("hyperkube"));
    assert!(pulled.image_for("machine-config-operator").is_err());
    assert_eq!(console(&root), "");
    let saved = okd_bootstrap::PulledRelease::load(&d.work).unwrap();
    assert_eq!(saved, pulled);
    let stages: Vec<(String, String, String)> = records(&root)
        .into_iter()
        .map(|e| (e.stage, e.phase, e.result))
        .collect();
    for want in ["pull-release-image", "image-metadata-arches-match"] {
        assert!(
            stages.contains(&(want.into(), "stage end".into(), "success".into())),
            "{stages:?}"
        );
    }

    // 3. The mirror down: retried with the reason on the console, and
    // pulled once the mirror is back.
    std::fs::remove_file(d.work.join(okd_bootstrap::release::RELEASE_FILE)).unwrap();
    okd_ok(assets, &["mirror", "registry", "stop"]);
    let root2 = root.clone();
    let assets2: PathBuf = assets.to_path_buf();
    let registry2 = registry.clone();
    let restarter = std::thread::spawn(move || {
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while !console(&root2).contains("Unable to pull") {
            assert!(std::time::Instant::now() < deadline, "no console message");
            std::thread::sleep(Duration::from_millis(100));
        }
        let seen = console(&root2);
        okd_ok(
            &assets2,
            &[
                "mirror",
                "registry",
                "start",
                "--registry-program",
                registry2.to_str().unwrap(),
            ],
        );
        seen
    });
    let pulled = rt
        .block_on(okd_bootstrap::release_image(
            &opts(&root, &p.release_image()),
            &d,
            Some(Duration::from_secs(90)),
        ))
        .unwrap();
    let seen = restarter.join().unwrap();
    let _b2 = PidGuard(registry_pid(&reg));
    assert!(
        seen.contains("onnect"),
        "the console named the connection failure: {seen}"
    );
    assert_eq!(pulled.version, VERSION);
    assert_eq!(console(&root), "");

    // 4. A release for another architecture: refused at once, not retried.
    let arm = payload::build_with(
        t.path(),
        "4.15.0-0.okd-arm",
        "arm64",
        &tiny("etcd"),
        &tiny("hyperkube"),
    );
    from_disk(assets, &arm, port);
    let before = std::time::Instant::now();
    let e = rt
        .block_on(okd_bootstrap::release_image(
            &opts(&root, &arm.release_image()),
            &d,
            Some(Duration::from_secs(60)),
        ))
        .unwrap_err();
    assert!(matches!(e, ReleaseImageError::Architecture(_)), "{e}");
    assert!(before.elapsed() < Duration::from_secs(20));
    assert!(
        e.to_string()
            .contains("is for architecture arm64, this host is amd64"),
        "{e}"
    );
    assert!(console(&root).contains("arm64"), "{}", console(&root));
    let rec = records(&root);
    let stage_end = &rec[rec.len() - 2];
    assert_eq!(
        (stage_end.stage.as_str(), stage_end.result.as_str()),
        ("image-metadata-arches-match", "failure")
    );
    // The pulled release of before is kept.
    assert_eq!(
        okd_bootstrap::PulledRelease::load(&d.work).unwrap().version,
        VERSION
    );
}

/// Run by mistake on a workstation, the node commands refuse before they
/// write anything (their records, markers and console files are the
/// node's paths).
#[test]
fn the_node_commands_refuse_to_run_off_a_bootstrap_node() {
    let d = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_okd-install"))
        .args(["bootstrap", "bootkube", "--work"])
        .arg(d.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("auth/kubeconfig-loopback is missing: this is not a bootstrap node"),
        "{err}"
    );
    assert!(!err.contains("is made by"), "no workstation hint: {err}");
    assert_eq!(
        std::fs::read_dir(d.path()).unwrap().count(),
        0,
        "nothing written"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_okd-install"))
        .args(["bootstrap", "release-image"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "clap's usage error");
}
