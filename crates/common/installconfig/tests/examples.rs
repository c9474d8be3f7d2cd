//! Every example install-config of the repository and of the reference inputs loads.

use std::path::{Path, PathBuf};

use okd_installconfig::{LoadOptions, load};
use okd_types::release::ReleaseTarget;

fn example_files() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../..");
    let mut out = Vec::new();
    for dir in ["examples"] {
        if let Ok(rd) = std::fs::read_dir(root.join(dir)) {
            for e in rd.flatten() {
                let p = e.path().join("install-config.yaml");
                if p.exists() {
                    out.push(p);
                }
            }
        }
    }
    // The inputs of the measured openshift-install 4.13 runs, kept in the
    // repository.
    let refdir = root.join("tests-data/reference");
    if let Ok(rd) = std::fs::read_dir(&refdir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("install-config") && n.ends_with(".yaml"))
            {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn examples_load_without_errors() {
    let files = example_files();
    assert!(!files.is_empty());
    for f in files {
        let bytes = std::fs::read(&f).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        // OpenShiftSDN examples predate 4.15: load them for 4.13 (OCP), the rest for the default target too.
        let mut targets = vec![ReleaseTarget::new(13, false)];
        if !text.contains("OpenShiftSDN") {
            targets.push(ReleaseTarget::default_target());
        }
        for target in targets {
            let opts = LoadOptions {
                target,
                host_fips: false,
            };
            match load("install-config.yaml", &bytes, &opts) {
                Ok(l) => eprintln!("{} ({target}): warnings {:?}", f.display(), l.warnings),
                Err(e) => panic!("{} ({target}) failed: {e}", f.display()),
            }
        }
    }
}

#[test]
fn expired_trust_bundle_cert_is_a_warning() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../examples/baremetal-single-master/install-config.yaml");
    let bytes = std::fs::read(root).unwrap();
    let l = load("install-config.yaml", &bytes, &LoadOptions::default()).unwrap();
    assert!(
        l.warnings
            .iter()
            .any(|w| w.contains("expired") && w.contains("registry.okd")),
        "{:?}",
        l.warnings
    );
    assert!(
        l.warnings
            .iter()
            .any(|w| w.contains("imageContentSources is deprecated")),
        "{:?}",
        l.warnings
    );
}

/// `{:?}` of a loaded install-config (which `tracing` and error messages use)
/// shows neither the pull secret nor any of its `auth` strings, while the
/// serialized document (what is written to files) still holds it verbatim.
#[test]
fn debug_of_an_install_config_does_not_show_the_pull_secret() {
    use okd_installconfig::ExposeSecret as _;
    let files = example_files();
    assert!(!files.is_empty());
    for f in files {
        let bytes = std::fs::read(&f).unwrap();
        let opts = LoadOptions {
            target: ReleaseTarget::default_target(),
            host_fips: false,
        };
        let Ok(l) = load("install-config.yaml", &bytes, &opts) else {
            continue;
        };
        let ic = &l.config;
        let ps = ic.pull_secret.expose_secret().to_string();
        assert!(!ps.is_empty(), "{}: no pull secret", f.display());
        let auths: Vec<String> = serde_json::from_str::<serde_json::Value>(&ps).unwrap()["auths"]
            .as_object()
            .unwrap()
            .values()
            .filter_map(|e| e.get("auth").and_then(|a| a.as_str()))
            .map(str::to_string)
            .collect();
        assert!(!auths.is_empty(), "{}: no auth strings", f.display());
        for shown in [format!("{ic:?}"), format!("{ic:#?}"), format!("{l:?}")] {
            assert!(shown.contains(&ic.metadata.name), "{}", f.display());
            assert!(shown.contains("[REDACTED]"), "{}", f.display());
            assert!(
                !shown.contains(&ps),
                "{}: pull secret in Debug",
                f.display()
            );
            for a in &auths {
                assert!(
                    !shown.contains(a.as_str()),
                    "{}: auth in Debug",
                    f.display()
                );
            }
        }
        let written = serde_json::to_string(&ic.to_json_value()).unwrap();
        assert!(
            written.contains(&serde_json::to_string(&ps).unwrap()),
            "{}: the serialized config lost the pull secret",
            f.display()
        );
    }
}

/// Credentials passed through in other fields are hidden from `Debug` too:
/// a baremetal host's BMC password, a vSphere password, a proxy URL's password.
#[test]
fn debug_of_an_install_config_does_not_show_credentials() {
    use okd_installconfig::{BaremetalPlatform, InstallConfig, Platform, Proxy};
    let ic = InstallConfig {
        platform: Platform {
            baremetal: Some(BaremetalPlatform {
                hosts: vec![serde_json::json!({"name": "m0", "bmc": {
                    "address": "redfish://10.0.0.1/x", "username": "root", "password": "bmc-Pa55word"}})],
                ..Default::default()
            }),
            vsphere: Some(
                serde_json::json!({"vcenters": [{"server": "vc", "password": "vc-Pa55word"}]}),
            ),
            ..Default::default()
        },
        proxy: Some(Proxy {
            http_proxy: Some("http://proxyuser:proxy-Pa55word@proxy:3128".into()),
            https_proxy: Some("https://proxy:3129/path@x".into()),
            no_proxy: None,
        }),
        pull_secret: "{\"auths\":{\"r\":{\"auth\":\"cHVsbC1QYTU1d29yZA==\"}}}".into(),
        ..Default::default()
    };
    let shown = format!("{ic:?} {ic:#?}");
    for secret in ["Pa55word", "cHVsbC1QYTU1d29yZA=="] {
        assert!(!shown.contains(secret), "{secret} in {shown}");
    }
    for kept in [
        "redfish://10.0.0.1/x",
        "root",
        "http://proxyuser:[REDACTED]@proxy:3128",
        "https://proxy:3129/path@x",
    ] {
        assert!(shown.contains(kept), "{kept} not in {shown}");
    }
}
