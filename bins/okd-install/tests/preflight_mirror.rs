//! The mirror registry for real (issue #27: "the mirror's CA missing or
//! wrong"): `okd-install mirror registry init` and Debian's
//! docker-registry on the bastion, its name served by Debian's dnsmasq
//! with bastion-configs' dnsmasq.conf. With the CA that init put into
//! additionalTrustBundle, preflight's TLS and login checks pass; with
//! another CA in its place, preflight fails the TLS check with the fix, a
//! real client on the bootstrap's address with the nodes' trust (skopeo,
//! Go's x509 as CRI-O and podman use it) is refused the same way, and
//! gather quotes that client's x509 reason from the release-image journal.

mod common;

use std::time::{Duration, Instant};

use common::bootlab::KillOnDrop;
use common::netns::Lab;
use common::preflight::{expect, preflight, self_signed};
use common::*;
use okd_serve_api::preflight::Outcome;

const BASTION: &str = "192.168.120.101";
const REGISTRY: &str = "registry.okd.example:5000";

#[test]
fn the_mirror_registry_with_its_ca_and_with_another() {
    if !common::netns::available() {
        return;
    }
    let (Some(dnsmasq), Some(openssl), Some(skopeo), Some(registry)) = (
        tool("dnsmasq", &["/usr/sbin/dnsmasq"]),
        tool("openssl", &["/usr/bin/openssl"]),
        tool("skopeo", &["/usr/bin/skopeo"]),
        okd_test_utils::tool("docker-registry", &[], Some("docker-registry")),
    ) else {
        return;
    };
    // An install that was not created yet: preflight reads install-config.yaml.
    let d = example_dir("baremetal-single-master");
    let ex = repo().join("examples/baremetal-single-master");
    for f in ["agent-config.yaml", "bastion-config.yaml"] {
        std::fs::copy(ex.join(f), d.path().join(f)).unwrap();
    }
    okd_ok(d.path(), &["create", "bastion-configs"]);
    let scratch = tempfile::tempdir().unwrap();
    std::fs::write(scratch.path().join("pw"), "s3cret\n").unwrap();
    okd_ok(
        d.path(),
        &[
            "mirror",
            "registry",
            "init",
            "--hostname",
            "registry.okd.example",
            "--address",
            BASTION,
            "--username",
            "okd",
            "--password-file",
            scratch.path().join("pw").to_str().unwrap(),
        ],
    );

    let prefix = format!("pm{}", std::process::id() % 100000);
    let mut lab = Lab::new(
        &prefix,
        BASTION,
        &[("bootstrap", "192.168.120.102")],
        "okd.example",
    );
    let bastion = lab.bastion.ns.clone();
    let conf = d.path().join("bastion/dnsmasq/dnsmasq.conf");
    assert!(
        std::fs::read_to_string(&conf)
            .unwrap()
            .contains("registry.okd.example"),
        "bastion-configs names the registry"
    );
    lab.spawn(
        &bastion,
        &dnsmasq.to_string_lossy(),
        &[
            "--keep-in-foreground",
            "--log-facility=-",
            &format!("--conf-file={}", conf.display()),
            &format!(
                "--pid-file={}",
                scratch.path().join("dnsmasq.pid").display()
            ),
        ],
        &scratch.path().join("dnsmasq.log"),
    );
    let out = lab
        .cmd(&bastion, env!("CARGO_BIN_EXE_okd-install"))
        .args(["mirror", "registry", "start", "--registry-program"])
        .arg(&registry)
        .arg("--dir")
        .arg(d.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "mirror registry start: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let pid: u32 = std::fs::read_to_string(d.path().join("mirror-registry/registry.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let _registry = KillOnDrop(pid);

    // With init's CA: verified, and a login for the registry.
    let tls = format!("mirror.{REGISTRY}.tls");
    let start = Instant::now();
    let report = loop {
        let (r, _) = preflight(&lab, d.path(), &[]);
        let ok = r
            .checks
            .iter()
            .any(|c| c.id == tls && c.result == Outcome::Pass);
        if ok || start.elapsed() > Duration::from_secs(20) {
            break r;
        }
        std::thread::sleep(Duration::from_millis(300));
    };
    expect(
        &report,
        &tls,
        Outcome::Pass,
        &[&format!("{REGISTRY} ({BASTION}:5000) verified with")],
        &[],
    );
    expect(
        &report,
        &format!("mirror.{REGISTRY}.login"),
        Outcome::Pass,
        &[],
        &[],
    );

    // Another CA in additionalTrustBundle (the registry's left out).
    let other = scratch.path().join("other-ca");
    std::fs::create_dir_all(&other).unwrap();
    self_signed(&openssl, &other, "ca", "some-other-ca", None);
    let other_pem = std::fs::read_to_string(other.join("ca.crt")).unwrap();
    let path = d.path().join("install-config.yaml");
    let mut config: serde_yaml_ng::Value =
        serde_yaml_ng::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    config["additionalTrustBundle"] = serde_yaml_ng::Value::String(other_pem);
    std::fs::write(&path, serde_yaml_ng::to_string(&config).unwrap()).unwrap();
    let (report, code) = preflight(&lab, d.path(), &[]);
    assert_eq!(code, Some(1));
    expect(
        &report,
        &tls,
        Outcome::Fail,
        &["is not trusted with", "1 of additionalTrustBundle"],
        &["additionalTrustBundle", "create the Ignition configs again"],
    );

    // A real client on the bootstrap's address, trusting what the nodes
    // would (the system roots plus that bundle), is refused as well.
    std::fs::remove_file(other.join("ca.key")).unwrap();
    std::fs::remove_file(other.join("ca.pem")).unwrap();
    let boot = lab.nodes[0].ns.clone();
    let out = lab
        .cmd(&boot, &skopeo.to_string_lossy())
        .args([
            "inspect",
            "--retry-times",
            "0",
            "--creds",
            "okd:s3cret",
            "--cert-dir",
        ])
        .arg(&other)
        .arg(format!("docker://{REGISTRY}/openshift/okd:4.5"))
        .output()
        .unwrap();
    let pulled = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "{pulled}");
    assert!(pulled.contains("x509: "), "{pulled}");

    // gather: a release-image service that failed that way.
    let record = r#"[{"timestamp":"2026-11-27T10:00:00Z","phase":"service start"},{"timestamp":"2026-11-27T10:00:09Z","phase":"service end","result":"failure","errorLine":"release-image-download.sh:30","errorMessage":"Pull failed. Retrying quay.io/openshift/okd..."}]"#;
    let findings = okd_gather::analyze::findings_with_journals(
        &[("release-image".into(), record.as_bytes().to_vec())],
        &[("release-image".into(), pulled.clone())],
    );
    let lines: Vec<&str> = findings.iter().map(|(_, l)| l.as_str()).collect();
    assert_eq!(
        lines[0], "The bootstrap machine failed to download the release image",
        "{lines:#?}"
    );
    let reason = okd_gather::analyze::tls_reason(&pulled).unwrap();
    assert!(reason.starts_with("x509: "), "{reason}");
    assert!(
        lines[1].starts_with(&format!(
            "The registry's certificate is not trusted by the bootstrap machine: {reason}"
        )) && lines[1].contains("additionalTrustBundle"),
        "{lines:#?}"
    );
    drop(lab);
}
