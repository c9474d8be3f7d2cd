//! `mirror to-disk` / `from-disk` with a Docker schema 2 (v2s2) release,
//! as quay.io serves many: the archive keeps the Docker media types and
//! bytes (digests unchanged), and `from-disk` restores every digest. What
//! Debian's skopeo 1.9 makes of such an archive is pinned down as the
//! README states it.

mod common;
mod mirror_support;

use std::io::Write as _;
use std::process::{Command, Stdio};

use common::okd_ok;
use mirror_support::{need, push_image, start_plain_registry, text};
use okd_test_utils::free_tcp_port;
use serde_json::Value;

/// A gzip tar with one file `name` holding `data` (python3's tarfile).
fn tar_gz(name: &str, data: &[u8]) -> Vec<u8> {
    let py = r#"
import gzip, io, sys, tarfile
name, data = sys.argv[1], sys.stdin.buffer.read()
buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
    ti = tarfile.TarInfo(name)
    ti.size = len(data)
    t.addfile(ti, io.BytesIO(data))
sys.stdout.buffer.write(gzip.compress(buf.getvalue(), mtime=0))
"#;
    let python = need("python3", "python3").unwrap();
    let mut child = Command::new(python)
        .args(["-c", py, name])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(data).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    out.stdout
}

#[test]
fn to_disk_and_from_disk_keep_a_docker_v2s2_release() {
    let (Some(registry), Some(skopeo)) = (
        need("docker-registry", "docker-registry"),
        need("skopeo", "skopeo"),
    ) else {
        return;
    };
    let d = tempfile::tempdir().unwrap();
    let t = d.path();
    let (_a, a) = start_plain_registry(&registry, t, free_tcp_port());
    let version = "4.15.0-0.okd-v2s2";

    // A component and a release image, both pushed as Docker schema 2.
    let comp = push_image(
        &skopeo,
        &t.join("c"),
        &tar_gz("usr/bin/cli", b"component"),
        "cli",
        &format!("{a}/okd/okd-content:cli"),
        Some("v2s2"),
    );
    let irefs = serde_json::json!({
        "kind": "ImageStream", "apiVersion": "image.openshift.io/v1",
        "metadata": {"name": version},
        "spec": {"tags": [{"name": "cli", "from": {"kind": "DockerImage", "name": format!("{a}/okd/okd-content@{comp}")}}]}
    });
    let rel = push_image(
        &skopeo,
        &t.join("r"),
        &tar_gz(
            "release-manifests/image-references",
            irefs.to_string().as_bytes(),
        ),
        "rel",
        &format!("{a}/okd/okd:{version}"),
        Some("v2s2"),
    );
    let raw = |reference: &str| {
        let out = Command::new(&skopeo)
            .args(["inspect", "--raw", "--tls-verify=false"])
            .arg(format!("docker://{reference}"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out).1);
        out.stdout
    };
    let m: Value = serde_json::from_slice(&raw(&format!("{a}/okd/okd@{rel}"))).unwrap();
    assert_eq!(
        m["mediaType"], "application/vnd.docker.distribution.manifest.v2+json",
        "the payload is v2s2"
    );

    // to-disk: the archive names the tag with the Docker media type, bytes unchanged.
    let assets = t.join("assets");
    let archive = t.join("archive");
    let arch = archive.to_str().unwrap();
    let err = okd_ok(
        &assets,
        &[
            "mirror",
            "to-disk",
            "--from",
            &format!("{a}/okd/okd:{version}"),
            "--archive",
            arch,
            "--plain-http",
            &a,
        ],
    );
    assert!(err.contains("Archived: 2 images"), "{err}");
    let index: Value =
        serde_json::from_slice(&std::fs::read(archive.join("index.json")).unwrap()).unwrap();
    let entry = index["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["annotations"]["org.opencontainers.image.ref.name"] == version)
        .unwrap();
    assert_eq!(entry["digest"], rel.as_str());
    assert_eq!(
        entry["mediaType"],
        "application/vnd.docker.distribution.manifest.v2+json"
    );

    // Debian's skopeo 1.9 `oci:` transport looks only at OCI media types in
    // index.json and does not find the tag (the README says so); should a
    // newer skopeo read it, the bytes must be the release's.
    let out = Command::new(&skopeo)
        .args(["inspect", "--raw"])
        .arg(format!("oci:{arch}:{version}"))
        .output()
        .unwrap();
    if out.status.success() {
        assert_eq!(okd_mirror::oci::Digest::of(&out.stdout).to_string(), rel);
    } else {
        let err = text(&out).1;
        assert!(
            err.contains("no descriptor found for reference") && err.contains(version),
            "{err}"
        );
    }

    // from-disk: every digest back in a registry, as it was.
    let to = format!("{a}/back/okd");
    okd_ok(
        &assets,
        &[
            "mirror",
            "from-disk",
            "--archive",
            arch,
            "--to",
            &to,
            "--plain-http",
            &a,
        ],
    );
    for d in [&rel, &comp] {
        assert_eq!(
            okd_mirror::oci::Digest::of(&raw(&format!("{to}@{d}"))).to_string(),
            *d
        );
    }
}
