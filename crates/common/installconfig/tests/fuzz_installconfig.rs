//! Fuzz target (issue #10 item 9): install-config parsing and validation.
//!
//! Inputs are the repository's example install-configs and every
//! bad-input case of `tests/bad/`, mutated field by field (values swapped
//! for edge numbers and strings, digits inside CIDRs and versions replaced,
//! keys added and removed) and sometimes byte by byte, then loaded through
//! the whole pipeline ([`okd_installconfig::load`]) for an old and the
//! default target, with and without host FIPS. Properties: no panic; an
//! error has a non-empty message (each field error non-empty); a config
//! that loads keeps its accessors total (cluster domain, networks, replica
//! counts) and loads again from its own serialization. The interactive
//! checks (`check_*`) and the infraID derivation get the mutated strings too.
//!
//! CI runs a few hundred cases; `OKD_FUZZ_CASES=<n>` runs more (README).

use std::path::Path;

use okd_installconfig::{
    LoadError, LoadOptions, check_base_domain, check_cluster_name, check_pull_secret,
    check_ssh_key, infra_id, load,
};
use okd_test_utils::fuzz;
use okd_types::release::ReleaseTarget;
use proptest::prelude::*;

/// Keys of the install-config schema worth adding where they do not belong.
const FIELDS: &[&str] = &[
    "apiVersion",
    "baseDomain",
    "metadata",
    "name",
    "networking",
    "clusterNetwork",
    "cidr",
    "hostPrefix",
    "machineNetwork",
    "machineCIDR",
    "serviceNetwork",
    "networkType",
    "clusterNetworkMTU",
    "ovnKubernetesConfig",
    "internalJoinSubnet",
    "platform",
    "none",
    "aws",
    "region",
    "baremetal",
    "apiVIPs",
    "ingressVIPs",
    "apiVIP",
    "ingressVIP",
    "vsphere",
    "external",
    "compute",
    "controlPlane",
    "arbiter",
    "replicas",
    "hyperthreading",
    "architecture",
    "fencing",
    "pullSecret",
    "sshKey",
    "fips",
    "imageContentSources",
    "imageDigestSources",
    "mirrors",
    "source",
    "sourcePolicy",
    "additionalTrustBundle",
    "additionalTrustBundlePolicy",
    "publish",
    "capabilities",
    "baselineCapabilitySet",
    "additionalEnabledCapabilities",
    "proxy",
    "httpProxy",
    "httpsProxy",
    "noProxy",
    "featureSet",
    "featureGates",
    "cpuPartitioningMode",
    "credentialsMode",
    "bootstrapInPlace",
    "installationDisk",
    "operatorPublishingStrategy",
];

/// The example install-configs and the bad-input cases, as text; the
/// valid examples repeated so that about half the cases start from a
/// config that loads.
fn seeds() -> Vec<String> {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut good = Vec::new();
    if let Ok(rd) = std::fs::read_dir(manifest.join("../../../examples")) {
        for e in rd.flatten() {
            let p = e.path().join("install-config.yaml");
            if p.is_file() {
                good.push(p);
            }
        }
    }
    good.sort();
    let mut files = Vec::new();
    if let Ok(rd) = std::fs::read_dir(manifest.join("tests/bad")) {
        for e in rd.flatten() {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "yaml") {
                files.push(p);
            }
        }
    }
    files.sort();
    assert!(!good.is_empty(), "no example install-configs found");
    let repeat = files.len().div_ceil(good.len()).max(1);
    for _ in 0..repeat {
        files.extend(good.iter().cloned());
    }
    files
        .iter()
        .map(|f| std::fs::read_to_string(f).expect("seed readable"))
        .collect()
}

/// Loads `bytes` as `install-config.yaml` for `opts` and checks the
/// properties of the module documentation.
fn check_load(bytes: &[u8], opts: &LoadOptions, tally: &fuzz::Tally) -> Result<(), TestCaseError> {
    match load("install-config.yaml", bytes, opts) {
        Ok(loaded) => {
            tally.hit("loaded");
            let c = &loaded.config;
            let _ = c.cluster_domain();
            let _ = c.platform_name();
            let _ = c.compute_replicas();
            let _ = c.control_plane_replicas();
            let _ = c.machine_networks();
            let _ = c.service_networks();
            let _ = c.cluster_networks();
            let _ = c.image_sources();
            let _ = c.api_vip_addrs();
            let _ = c.redacted();
            prop_assert!(!c.to_json_value().is_null());
            // The normalized config is itself a valid install-config.
            let again = serde_yaml_ng::to_string(c).expect("a loaded config serializes");
            if let Err(e) = load("install-config.yaml", again.as_bytes(), opts) {
                return Err(TestCaseError::fail(format!(
                    "a loaded config does not load again: {e}\n--- serialized:\n{again}"
                )));
            }
        }
        Err(e) => {
            tally.hit(match &e {
                LoadError::Parse { .. } => "parse error",
                LoadError::Convert { .. } => "convert error",
                LoadError::Invalid { .. } => "invalid",
                _ => "other error",
            });
            prop_assert!(!e.to_string().is_empty());
            if let LoadError::Invalid { errors, .. } = &e {
                prop_assert!(!errors.is_empty());
                prop_assert!(
                    errors.iter().all(|m| !m.to_string().is_empty()),
                    "{errors:?}"
                );
            }
        }
    }
    Ok(())
}

#[test]
fn fuzz_install_config_load() {
    let strategy = (
        fuzz::mutated_yaml(seeds(), FIELDS),
        any::<bool>(),
        prop::sample::select(vec![13u32, 14, 15, 16, 19]),
        any::<bool>(),
    );
    let tally = fuzz::Tally::default();
    fuzz::run(
        "installconfig load",
        300,
        strategy,
        |(bytes, fips, minor, okd)| {
            for target in [
                ReleaseTarget::new(minor, okd),
                ReleaseTarget::default_target(),
            ] {
                let opts = LoadOptions {
                    target,
                    host_fips: fips,
                };
                check_load(&bytes, &opts, &tally)?;
            }
            Ok(())
        },
    );
    tally.print("installconfig load");
}

#[test]
fn fuzz_install_config_field_checks() {
    let text = prop_oneof![
        prop::sample::select(fuzz::EDGE_STRINGS).prop_map(String::from),
        "[ -~]{0,80}",
        ".{0,40}",
        (
            prop::sample::select(fuzz::EDGE_STRINGS),
            prop::collection::vec(fuzz::byte_edit(), 1..4)
        )
            .prop_map(|(s, edits)| {
                let mut b = s.as_bytes().to_vec();
                fuzz::apply_byte_edits(&mut b, &edits);
                String::from_utf8_lossy(&b).into_owned()
            }),
    ];
    let platform = prop::sample::select(vec!["", "none", "baremetal", "aws", "vsphere", "gcp"]);
    fuzz::run(
        "installconfig field checks",
        2000,
        (text, platform),
        |(s, platform)| {
            let _ = check_cluster_name(&s, platform);
            let _ = check_base_domain(&s);
            let _ = check_pull_secret(&s);
            let _ = check_ssh_key(&s);
            let (id, warning) = infra_id(&s, "abcde");
            prop_assert!(id.ends_with("-abcde"), "{id:?}");
            prop_assert!(id.len() <= 27, "{id:?} longer than 27 octets");
            prop_assert!(
                id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'),
                "{id:?}"
            );
            // The warning is given exactly when the sanitized name was cut.
            if let Some(w) = &warning {
                prop_assert!(w.contains("will be truncated"), "{w}");
            }
            Ok(())
        },
    );
}
