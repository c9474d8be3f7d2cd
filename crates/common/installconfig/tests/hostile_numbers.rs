//! Numbers at the edges of their types never panic, overflow or allocate
//! without bound: each case loads to a field error naming the path (or, where
//! the value is legal, to a config whose accessors saturate).

use std::time::{Duration, Instant};

use okd_installconfig::{LoadOptions, load};
use okd_types::release::ReleaseTarget;

const HEAD: &str = r#"apiVersion: v1
baseDomain: example.com
metadata:
  name: mycluster
pullSecret: '{"auths":{"registry.example.com":{"auth":"YWFhOmJiYg=="}}}'
"#;

fn load_text(body: &str, o: &LoadOptions) -> Result<okd_installconfig::Loaded, String> {
    let text = format!("{HEAD}{body}");
    load("install-config.yaml", text.as_bytes(), o).map_err(|e| e.to_string())
}

fn err(body: &str) -> String {
    match load_text(body, &LoadOptions::default()) {
        Ok(_) => panic!("accepted:\n{body}"),
        Err(e) => e,
    }
}

const MIN: i64 = i64::MIN;
const MAX: i64 = i64::MAX;

#[test]
fn extreme_host_subnet_lengths_are_field_errors() {
    for len in [MIN, -1, 33, MAX] {
        let e = err(&format!(
            "platform:\n  none: {{}}\nnetworking:\n  clusterNetwork:\n  - cidr: 10.128.0.0/14\n    hostSubnetLength: {len}\n"
        ));
        assert!(
            e.contains(&format!(
                "networking.clusterNetwork[0].hostSubnetLength: Invalid value: {len}: must be between 0 and 32"
            )),
            "{len}: {e}"
        );
    }
}

#[test]
fn extreme_host_prefixes_with_a_join_subnet_are_field_errors() {
    for hp in [MIN, -1, 200, MAX] {
        let e = err(&format!(
            "platform:\n  none: {{}}\nnetworking:\n  networkType: OVNKubernetes\n  clusterNetwork:\n  - cidr: 10.128.0.0/14\n    hostPrefix: {hp}\n  ovnKubernetesConfig:\n    ipv4:\n      internalJoinSubnet: 100.65.0.0/16\n"
        ));
        assert!(
            e.contains("networking.clusterNetwork[0].hostPrefix: Invalid value: "),
            "{hp}: {e}"
        );
    }
}

#[test]
fn huge_control_plane_is_a_field_error() {
    for r in [101, 1_000_000_000_000, MAX] {
        let e = err(&format!(
            "platform:\n  none: {{}}\ncontrolPlane:\n  name: master\n  replicas: {r}\n"
        ));
        assert!(
            e.contains(&format!(
                "controlPlane.replicas: Invalid value: {r}: number of control plane replicas must be at most 100"
            )),
            "{r}: {e}"
        );
    }
}

#[test]
fn compute_replicas_saturate() {
    let l = load_text(
        &format!(
            "platform:\n  aws:\n    region: us-east-1\ncompute:\n- name: worker\n  replicas: {MAX}\n- name: edge\n  replicas: {MAX}\n"
        ),
        &LoadOptions::default(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(l.config.compute_replicas(), MAX);
}

#[test]
fn a_huge_target_minor_does_not_enumerate_capability_sets() {
    let o = LoadOptions {
        target: ReleaseTarget::new(u32::MAX, false),
        host_fips: false,
    };
    let t0 = Instant::now();
    let e = load_text(
        "platform:\n  none: {}\ncapabilities:\n  baselineCapabilitySet: v4.99999999999\n",
        &o,
    )
    .unwrap_err();
    assert!(
        e.contains("capabilities.baselineCapabilitySet: Unsupported value: \"v4.99999999999\""),
        "{e}"
    );
    let ok = load_text(
        "platform:\n  none: {}\ncapabilities:\n  baselineCapabilitySet: v4.4000000000\n  additionalEnabledCapabilities: [baremetal, Ingress]\n",
        &o,
    );
    assert!(ok.is_ok(), "{ok:?}");
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
}

#[test]
fn a_short_ssh_key_blob_is_an_error_not_a_panic() {
    // Length prefix 0xffffffff, then nothing.
    let e = err("platform:\n  none: {}\nsshKey: ssh-ed25519 /////w==\n");
    assert!(e.contains("sshKey: Invalid value: "), "{e}");
}
