//! `okd-install mirror release | to-disk | from-disk` against two real
//! distribution registries (`docker-registry`) on loopback: the source
//! plain HTTP, the target TLS + htpasswd made by `mirror registry init`.
//! The release payload is built by `crates/workstation/mirror/tests/mkpayload.py` and
//! pushed into the source with skopeo; skopeo also checks the result.

mod common;
mod mirror_support;

use std::net::{Ipv4Addr, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{example_dir, okd, okd_ok};
use mirror_support::{Lab, VERSION, assert_fails_with, text};
use okd_test_utils::free_tcp_port;
use serde_json::Value;

#[test]
fn mirror_release_copies_every_digest_and_resumes_after_a_kill() {
    let Some(lab) = Lab::new(24, 1024) else {
        return;
    };
    let to = lab.b("mirror/okd");
    let args = [
        "mirror",
        "release",
        "--from",
        &lab.from(),
        "--to",
        &to,
        "--plain-http",
        &lab.plain(),
        "--chunk-size",
        "256Ki",
        "--sources-field",
        "imageContentSources",
    ];

    // First run, one blob at a time, killed once three uploads completed.
    let mut child = Command::new(env!("CARGO_BIN_EXE_okd-install"))
        .args(args)
        .args(["--concurrency", "1", "--dir"])
        .arg(&lab.assets)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while lab.completed_blob_puts("mirror/okd").len() < 3 {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the first run ended before it could be killed"
        );
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "no upload completed in 60 s"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let after_kill = lab.completed_blob_puts("mirror/okd");
    assert!(
        lab.b_digest(&format!("{to}:{VERSION}")).is_err(),
        "the release is not tagged after the kill"
    );

    // Second run completes.
    let out = okd(&lab.assets, &args);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    let present: usize = stderr
        .split(" already there")
        .next()
        .and_then(|s| s.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("summary line in {stderr}"));
    assert!(
        present >= after_kill.len(),
        "the blobs of the killed run were found: {stderr}"
    );

    // No blob upload was completed twice, and chunked uploads were used.
    let puts = lab.completed_blob_puts("mirror/okd");
    assert!(puts.len() > after_kill.len());
    for (d, n) in &puts {
        assert_eq!(*n, 1, "blob sha256:{d} uploaded {n} times");
    }
    let log = std::fs::read_to_string(&lab.b_log).unwrap();
    assert!(
        log.contains("\"PATCH /v2/mirror/okd/blobs/uploads/"),
        "chunked uploads in the log"
    );

    // Every image and per-arch manifest, by digest, in the target equals the source.
    let images = lab.images();
    assert_eq!(images.len(), 25);
    for (name, d) in &images {
        assert_eq!(
            lab.b_digest(&format!("{to}@{d}")).as_deref(),
            Ok(d.as_str()),
            "{name}"
        );
    }
    for d in lab.children() {
        assert_eq!(
            lab.b_digest(&format!("{to}@{d}")).as_deref(),
            Ok(d.as_str())
        );
    }
    assert_eq!(
        lab.b_digest(&format!("{to}:{VERSION}")).as_deref(),
        Ok(images["release"].as_str())
    );
    assert_eq!(
        lab.b_digest(&format!("{to}:{VERSION}-etcd")).as_deref(),
        Ok(images["etcd"].as_str())
    );
    // skopeo reads each one (config included) and copies every blob out, checking its digest.
    let oci = lab.tmp.path().join("verify");
    for (name, d) in &images {
        let out = lab.skopeo_b(&["inspect", &format!("docker://{to}@{d}")]);
        assert!(
            out.status.success(),
            "skopeo inspect {name}: {}",
            text(&out).1
        );
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["Os"], "linux", "{name}");
        let out = lab.skopeo_b(&[
            "copy",
            "--all",
            &format!("docker://{to}@{d}"),
            &format!("oci:{}:{name}", oci.display()),
        ]);
        assert!(out.status.success(), "skopeo copy {name}: {}", text(&out).1);
    }

    // The printed block, pasted into the single-master example, validates
    // and becomes the ImageContentSourcePolicy.
    let block_start = stdout
        .find("imageContentSources:\n")
        .expect("block printed");
    let block_text: String = stdout[block_start..]
        .split("\n\n")
        .next()
        .unwrap()
        .to_string();
    let block: serde_yaml_ng::Value = serde_yaml_ng::from_str(&block_text).unwrap();
    let sources = block["imageContentSources"].as_sequence().unwrap();
    assert_eq!(sources.len(), 2, "{block_text}");
    for s in sources {
        assert_eq!(s["mirrors"][0].as_str(), Some(to.as_str()));
    }
    let d = example_dir("baremetal-single-master");
    let ic_path = d.path().join("install-config.yaml");
    let mut ic: serde_yaml_ng::Value =
        serde_yaml_ng::from_str(&std::fs::read_to_string(&ic_path).unwrap()).unwrap();
    ic["imageContentSources"] = block["imageContentSources"].clone();
    std::fs::write(&ic_path, serde_yaml_ng::to_string(&ic).unwrap()).unwrap();
    okd_ok(d.path(), &["create", "manifests"]);
    let icsp = std::fs::read_to_string(d.path().join("manifests/image-content-source-policy.yaml"))
        .or_else(|_| {
            std::fs::read_to_string(
                d.path()
                    .join("manifests/image-content-source-policy-0.yaml"),
            )
        })
        .expect("ImageContentSourcePolicy manifest");
    assert!(icsp.contains("kind: ImageContentSourcePolicy"), "{icsp}");
    for src in [
        format!("127.0.0.1:{}/okd/okd\n", lab.a_port),
        format!("127.0.0.1:{}/okd/okd-content\n", lab.a_port),
    ] {
        assert!(icsp.contains(&format!("source: {src}")), "{src} in {icsp}");
    }
    assert!(icsp.contains(&format!("- {to}\n")), "{icsp}");

    // The README's four-command disconnected flow (registry init was the
    // lab's): mirror release writing its block, create install-config with
    // it, the mirror's login and CA, then create ignition-configs.
    let d = &lab.assets;
    let out_dir = d.join("mirror");
    let out = lab.mirror(&to, &["--output-dir", out_dir.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out).1);
    let reg = d.join("mirror-registry");
    okd_ok(
        d,
        &[
            "create",
            "install-config",
            "--platform",
            "none",
            "--base-domain",
            "example.com",
            "--cluster-name",
            "okd",
            "--ssh-key-file",
            "none",
            "--control-plane-replicas",
            "1",
            "--compute-replicas",
            "1",
            "--pull-secret-file",
            reg.join("pull-secret.json").to_str().unwrap(),
            "--additional-trust-bundle-file",
            reg.join("ca.crt").to_str().unwrap(),
            "--image-sources-file",
            out_dir.join("install-config-mirror.yaml").to_str().unwrap(),
            "--release-image",
            &lab.from(),
        ],
    );
    let ic: serde_yaml_ng::Value =
        serde_yaml_ng::from_str(&std::fs::read_to_string(d.join("install-config.yaml")).unwrap())
            .unwrap();
    assert_eq!(
        ic["imageDigestSources"].as_sequence().map(|s| s.len()),
        Some(2),
        "{ic:?}"
    );
    let err = okd_ok(
        d,
        &["create", "ignition-configs", "--release-image", &lab.from()],
    );
    // The release the flow mirrored is the one installed, so its mirrors
    // cover it (issue #25 item 3).
    assert!(!err.contains("is not covered by any"), "{err}");
    let files = common::ign_files(&common::read_ign(&d.join("bootstrap.ign")));
    let script = String::from_utf8_lossy(&files["/usr/local/bin/release-image.sh"].1).into_owned();
    assert!(script.contains(&lab.from()), "{script}");
    let conf = String::from_utf8(files["/etc/containers/registries.conf"].1.clone()).unwrap();
    assert!(conf.contains(&format!("location = \"{to}\"")), "{conf}");
    let ca = std::fs::read_to_string(reg.join("ca.crt")).unwrap();
    assert!(
        files
            .values()
            .any(|(_, data, _)| String::from_utf8_lossy(data).contains(ca.trim())),
        "the mirror CA is in bootstrap.ign"
    );
}

#[test]
fn to_disk_from_disk_and_bad_input() {
    let Some(lab) = Lab::new(20, 64) else { return };
    let images = lab.images();

    // to-disk: an OCI layout skopeo reads; a second run copies nothing.
    let archive = lab.tmp.path().join("archive");
    let arch = archive.to_str().unwrap();
    let args = [
        "mirror",
        "to-disk",
        "--from",
        &lab.from(),
        "--archive",
        arch,
        "--plain-http",
        &lab.plain(),
    ];
    let err = okd_ok(&lab.assets, &args);
    assert!(err.contains("Archived: 21 images"), "{err}");
    let out = Command::new(&lab.skopeo)
        .args(["inspect", "--raw", &format!("oci:{arch}:{VERSION}")])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out).1);
    assert_eq!(
        okd_mirror::oci::Digest::of(&out.stdout).as_str(),
        images["release"]
    );
    let err = okd_ok(&lab.assets, &args);
    assert!(
        err.contains(": 0 copied (0.0 MiB)"),
        "the re-run copies nothing: {err}"
    );

    // from-disk: into B; every digest equal; the block names the original sources.
    let to = lab.b("disk/okd");
    let out = okd(
        &lab.assets,
        &["mirror", "from-disk", "--archive", arch, "--to", &to],
    );
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    for (name, d) in &images {
        assert_eq!(
            lab.b_digest(&format!("{to}@{d}")).as_deref(),
            Ok(d.as_str()),
            "{name}"
        );
    }
    assert!(
        stdout.contains(&format!(
            "imageDigestSources:\n- mirrors:\n  - {to}\n  source: 127.0.0.1:{}/okd/okd\n",
            lab.a_port
        )),
        "{stdout}"
    );

    // Wrong password: one error naming the registry, the realm and the user.
    let wrong = lab.tmp.path().join("wrong.json");
    std::fs::write(
        &wrong,
        format!(
            r#"{{"auths":{{"localhost:{}":{{"auth":"b2tkOndyb25n"}}}}}}"#,
            lab.b_port
        ),
    )
    .unwrap();
    let out = lab.mirror(&lab.b("x/y"), &["-a", wrong.to_str().unwrap()]);
    let stderr = assert_fails_with(
        &out,
        &format!(
            "registry localhost:{} (auth realm \"okd-mirror\") rejected the login of user \"okd\"",
            lab.b_port
        ),
    );
    assert_eq!(stderr.matches("level=error").count(), 1, "{stderr}");

    // Unreachable registry: one line.
    let closed = free_tcp_port();
    let out = lab.mirror(&format!("127.0.0.1:{closed}/x/y"), &[]);
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let errors: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("level=error"))
        .collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    assert!(
        errors[0].contains(&format!(
            "cannot reach registry 127.0.0.1:{closed} (https://127.0.0.1:{closed}/v2/)"
        )) && errors[0].to_lowercase().contains("refused"),
        "{stderr}"
    );

    // A corrupted layer in the source: that image is not mirrored and not
    // tagged, the others are; the bad bytes never complete an upload.
    let victim = lab.payload["components"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["children"].as_array().is_none_or(|a| a.is_empty()))
        .unwrap();
    let name = victim["name"].as_str().unwrap();
    let manifest: Value = {
        let out = Command::new(&lab.skopeo)
            .args([
                "inspect",
                "--raw",
                "--tls-verify=false",
                &format!(
                    "docker://127.0.0.1:{}/okd/okd-content@{}",
                    lab.a_port,
                    victim["digest"].as_str().unwrap()
                ),
            ])
            .output()
            .unwrap();
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let layer = manifest["layers"].as_array().unwrap().last().unwrap()["digest"]
        .as_str()
        .unwrap()
        .to_string();
    let hex = &layer["sha256:".len()..];
    let data = lab.a_data.join(format!(
        "docker/registry/v2/blobs/sha256/{}/{hex}/data",
        &hex[..2]
    ));
    let mut bytes = std::fs::read(&data).unwrap();
    for b in bytes.iter_mut().skip(100).take(16) {
        *b ^= 0xff;
    }
    std::fs::write(&data, &bytes).unwrap();
    // B holds every blob already (from-disk above), so a run that knows
    // that mounts them and never reads the source; forget it, so the
    // bytes come from the corrupted source.
    std::fs::remove_file(lab.assets.join(okd_mirror::locations::FILE)).unwrap();
    let to = lab.b("bad/okd");
    let out = lab.mirror(&to, &[]);
    let stderr = assert_fails_with(&out, &format!("image {name} not mirrored, nothing tagged"));
    assert!(stderr.contains(&format!("expected {layer}")), "{stderr}");
    let (stdout, _) = text(&out);
    assert!(
        stderr.contains("1 of 21 images were not mirrored"),
        "{stderr}"
    );
    assert!(
        !stdout.contains("imageDigestSources"),
        "no block after a failure: {stdout}"
    );
    assert!(
        lab.b_digest(&format!("{to}:{VERSION}-{name}")).is_err(),
        "{name} not tagged"
    );
    assert!(
        lab.b_digest(&format!("{to}@{}", victim["digest"].as_str().unwrap()))
            .is_err(),
        "{name} not pushed"
    );
    assert_eq!(
        lab.b_digest(&format!("{to}:{VERSION}")).as_deref(),
        Ok(images["release"].as_str())
    );
    assert!(
        !lab.completed_blob_puts("bad/okd").contains_key(hex),
        "the corrupt blob never completed an upload"
    );

    // `mirror registry stop` ends the registry by its PID file.
    let err = okd_ok(&lab.assets, &["mirror", "registry", "stop"]);
    assert!(
        err.contains(&format!(
            "Stopped the mirror registry (PID {})",
            lab.b_pid.0
        )),
        "{err}"
    );
    assert!(!lab.assets.join("mirror-registry/registry.pid").exists());
    let t0 = Instant::now();
    while TcpStream::connect((Ipv4Addr::LOCALHOST, lab.b_port)).is_ok() {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "registry still listening after stop"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let err = okd_ok(&lab.assets, &["mirror", "registry", "stop"]);
    assert!(err.contains("No mirror registry running"), "{err}");
}
