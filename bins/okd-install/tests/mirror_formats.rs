//! `mirror to-disk` / `from-disk` with a Docker schema 2 (v2s2) release,
//! as quay.io serves many: the archive keeps the Docker media types and
//! bytes (digests unchanged), and `from-disk` restores every digest. What
//! Debian's skopeo 1.9 makes of such an archive is pinned down as the
//! README states it.

mod common;
mod mirror_support;

use std::process::Command;

use common::okd_ok;
use mirror_support::{plain_registry, push_bare_release, push_image, tar_gz, text};
use serde_json::Value;

#[test]
fn to_disk_and_from_disk_keep_a_docker_v2s2_release() {
    let Some(lab) = plain_registry() else {
        return;
    };
    let (skopeo, t, a) = (&lab.skopeo, lab.dir.path(), &lab.addr);
    let version = "4.15.0-0.okd-v2s2";

    // A component and a release image, both pushed as Docker schema 2.
    let comp = push_image(
        skopeo,
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
        skopeo,
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
        let out = Command::new(skopeo)
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
            a,
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
    let out = Command::new(skopeo)
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
            a,
        ],
    );
    for d in [&rel, &comp] {
        assert_eq!(
            okd_mirror::oci::Digest::of(&raw(&format!("{to}@{d}"))).to_string(),
            *d
        );
    }
}

/// Issue #26, 6: a second `to-disk` into the same archive keeps the first
/// release: okd-release.json lists both, and `from-disk` pushes both
/// (each tagged with its version). The archive's folders are 0750.
#[test]
fn to_disk_twice_keeps_both_releases_and_from_disk_pushes_both() {
    let Some(lab) = plain_registry() else {
        return;
    };
    let (skopeo, t, a) = (&lab.skopeo, lab.dir.path(), &lab.addr);
    let versions = ["4.15.0-0.okd-first", "4.16.0-0.okd-second"];
    let mut digests = Vec::new();
    for (i, v) in versions.iter().enumerate() {
        digests.push(push_bare_release(
            skopeo,
            &t.join(format!("rel{i}")),
            v,
            &format!("{a}/okd/okd:{v}"),
        ));
    }
    let assets = t.join("assets");
    std::fs::create_dir_all(&assets).unwrap();
    let archive = t.join("archive");
    let arch = archive.to_str().unwrap();
    for v in versions {
        okd_ok(
            &assets,
            &[
                "mirror",
                "to-disk",
                "--from",
                &format!("{a}/okd/okd:{v}"),
                "--archive",
                arch,
                "--plain-http",
                a,
            ],
        );
    }
    let meta = std::fs::read_to_string(archive.join("okd-release.json")).unwrap();
    for v in versions {
        assert!(meta.contains(&format!("\"{v}\"")), "{v} in {meta}");
    }
    for p in [
        archive.clone(),
        archive.join("blobs"),
        archive.join("blobs/sha256"),
    ] {
        assert_eq!(common::mode(&p), 0o750, "{}", p.display());
    }
    let to = format!("{a}/mirror/okd");
    // One release tag cannot name two releases.
    let rel_image = format!("{a}/mirror/release:one");
    let out = common::okd(
        &assets,
        &[
            "mirror",
            "from-disk",
            "--archive",
            arch,
            "--to",
            &to,
            "--plain-http",
            a,
            "--to-release-image",
            &rel_image,
        ],
    );
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("holds 2 releases, one tag cannot name them all"),
        "{stderr}"
    );
    let out = common::okd(
        &assets,
        &[
            "mirror",
            "from-disk",
            "--archive",
            arch,
            "--to",
            &to,
            "--plain-http",
            a,
        ],
    );
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    for (v, digest) in versions.iter().zip(&digests) {
        let out = Command::new(skopeo)
            .args(["inspect", "--raw", "--tls-verify=false"])
            .arg(format!("docker://{to}:{v}"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{v} pushed: {}", text(&out).1);
        assert_eq!(
            &okd_mirror::oci::Digest::of(&out.stdout).to_string(),
            digest
        );
        assert!(
            stdout.contains(&format!("Update image:  {to}:{v}\n")),
            "{stdout}"
        );
    }
}
