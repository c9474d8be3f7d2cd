//! Defaults (openshift/installer `pkg/types/defaults/installconfig.go`), up-conversion
//! (`pkg/types/conversion/installconfig.go`), accessors and infraID
//! (`pkg/asset/installconfig/clusterid.go`).

use okd_installconfig::{
    INFRA_ID_ALPHABET, InstallConfig, LoadError, LoadOptions, finish, infra_id, load,
};
use okd_types::release::ReleaseTarget;
use serde_json::json;

const MINIMAL: &str = r#"apiVersion: v1
baseDomain: example.com
metadata:
  name: mycluster
compute:
- name: worker
  replicas: 0
platform:
  none: {}
pullSecret: '{"auths":{"registry.example.com":{"auth":"YWFhOmJiYg=="}}}'
sshKey: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAILrvMMW3zy8P0QEcm++1urRFqirHtHjD5yhf9e47TFlk user@host
"#;

fn opts() -> LoadOptions {
    LoadOptions::default()
}

fn load_ok(text: &str, o: &LoadOptions) -> okd_installconfig::Loaded {
    load("install-config.yaml", text.as_bytes(), o).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn minimal_none_config_gets_the_documented_defaults() {
    let l = load_ok(MINIMAL, &opts());
    let c = &l.config;
    assert!(l.warnings.is_empty(), "{:?}", l.warnings);
    let n = c.networking.as_ref().unwrap();
    assert_eq!(n.network_type, "OVNKubernetes");
    assert_eq!(n.machine_network[0].cidr, "10.0.0.0/16");
    assert_eq!(n.service_network, vec!["172.30.0.0/16"]);
    assert_eq!(n.cluster_network[0].cidr, "10.128.0.0/14");
    assert_eq!(n.cluster_network[0].host_prefix, 23);
    assert_eq!(c.publish.as_deref(), Some("External"));
    assert_eq!(
        c.additional_trust_bundle_policy.as_deref(),
        Some("Proxyonly")
    );
    let cp = c.control_plane.as_ref().unwrap();
    assert_eq!(cp.name, "master");
    assert_eq!(cp.replicas, Some(3));
    assert_eq!(cp.hyperthreading.as_deref(), Some("Enabled"));
    assert!(cp.architecture.is_some());
    assert_eq!(c.compute[0].replicas, Some(0));
    assert_eq!(c.compute[0].hyperthreading.as_deref(), Some("Enabled"));
    assert_eq!(c.control_plane_replicas(), 3);
    assert_eq!(c.compute_replicas(), 0);
    assert_eq!(c.platform_name(), "none");
    assert_eq!(c.cluster_domain(), "mycluster.example.com");
    assert_eq!(
        c.cluster_networks(),
        vec![("10.128.0.0/14".parse().unwrap(), 23)]
    );
    assert_eq!(
        c.machine_networks(),
        vec!["10.0.0.0/16".parse::<ipnet::IpNet>().unwrap()]
    );
    assert_eq!(
        c.service_networks(),
        vec!["172.30.0.0/16".parse::<ipnet::IpNet>().unwrap()]
    );
    assert_eq!(n.internal_join_subnet(), None);
}

#[test]
fn normalized_json_matches_the_rendered_example() {
    let c = load_ok(MINIMAL, &opts()).config;
    let mut v = c.to_json_value();
    let arch = c
        .control_plane
        .as_ref()
        .unwrap()
        .architecture
        .clone()
        .unwrap();
    v["pullSecret"] = json!("PS");
    v["sshKey"] = json!("KEY");
    let want = json!({
        "additionalTrustBundlePolicy": "Proxyonly",
        "apiVersion": "v1",
        "baseDomain": "example.com",
        "compute": [{"architecture": arch, "hyperthreading": "Enabled", "name": "worker", "platform": {}, "replicas": 0}],
        "controlPlane": {"architecture": arch, "hyperthreading": "Enabled", "name": "master", "platform": {}, "replicas": 3},
        "metadata": {"creationTimestamp": null, "name": "mycluster"},
        "networking": {
            "clusterNetwork": [{"cidr": "10.128.0.0/14", "hostPrefix": 23}],
            "machineNetwork": [{"cidr": "10.0.0.0/16"}],
            "networkType": "OVNKubernetes",
            "serviceNetwork": ["172.30.0.0/16"]
        },
        "platform": {"none": {}},
        "publish": "External",
        "pullSecret": "PS",
        "sshKey": "KEY"
    });
    assert_eq!(v, want);
    // Round trip through serde keeps the config.
    let back: InstallConfig = serde_json::from_value(c.to_json_value()).unwrap();
    assert_eq!(back.to_json_value(), c.to_json_value());
    // Redaction blanks the pull secret but keeps the key.
    assert_eq!(c.redacted().to_json_value()["pullSecret"], json!(""));
}

#[test]
fn missing_pools_are_created() {
    let text = MINIMAL.replace("compute:\n- name: worker\n  replicas: 0\n", "");
    let c = load_ok(&text, &opts()).config;
    assert_eq!(c.compute.len(), 1);
    assert_eq!(c.compute[0].name, "worker");
    assert_eq!(c.compute[0].replicas, Some(3));
    assert_eq!(c.compute_replicas(), 3);
}

#[test]
fn unknown_field_warns_and_is_ignored() {
    let text = format!("{MINIMAL}bogusField: 1\n");
    let l = load_ok(&text, &opts());
    assert!(l.warnings[0].starts_with("failed to parse first occurrence of unknown field: failed to unmarshal install-config.yaml:"), "{:?}", l.warnings);
    assert!(l.warnings[0].contains("\"bogusField\""));
    assert_eq!(l.infos, vec!["Attempting to unmarshal while ignoring unknown keys because strict unmarshaling failed".to_string()]);
}

#[test]
fn deprecated_fields_are_up_converted() {
    let text = r#"apiVersion: v1beta4
baseDomain: example.com.
metadata:
  name: old
networking:
  type: openshiftsdn
  machineCIDR: 192.168.0.0/24
  serviceCIDR: 172.30.0.0/16
  clusterNetworks:
  - cidr: 10.128.0.0/14
    hostSubnetLength: 9
platform:
  baremetal:
    apiVIP: 192.168.0.5
    ingressVIP: 192.168.0.6
    provisioningDHCPExternal: true
pullSecret: '{"auths":{"r.example.com":{"auth":"YWFhOmJiYg=="}}}'
"#;
    let o = LoadOptions {
        target: ReleaseTarget::new(13, false),
        host_fips: false,
    };
    let c = load_ok(text, &o).config;
    assert_eq!(c.api_version, "v1");
    let n = c.networking.as_ref().unwrap();
    assert_eq!(n.network_type, "OpenShiftSDN");
    assert_eq!(n.machine_network[0].cidr, "192.168.0.0/24");
    assert_eq!(n.service_network, vec!["172.30.0.0/16"]);
    assert_eq!(n.cluster_network[0].host_prefix, 23);
    let bm = c.platform.baremetal.as_ref().unwrap();
    assert_eq!(bm.api_vips, vec!["192.168.0.5"]);
    assert_eq!(bm.ingress_vips, vec!["192.168.0.6"]);
    assert_eq!(bm.provisioning_network.as_deref(), Some("Unmanaged"));
    assert_eq!(bm.libvirt_uri.as_deref(), Some("qemu:///system"));
    assert_eq!(bm.bootstrap_provisioning_ip.as_deref(), Some("172.22.0.2"));
    assert_eq!(bm.cluster_provisioning_ip.as_deref(), Some("172.22.0.3"));
    assert_eq!(c.cluster_domain(), "old.example.com");
    let v = c.to_json_value();
    assert!(v["networking"].get("machineCIDR").is_none());
    assert!(v["platform"]["baremetal"].get("apiVIP").is_none());
    // The same file is refused for the default target (OpenShiftSDN removed in 4.15).
    let err = load("install-config.yaml", text.as_bytes(), &opts()).unwrap_err();
    assert!(
        err.to_string()
            .contains("networkType OpenShiftSDN is not supported"),
        "{err}"
    );
}

#[test]
fn docker_bridge_overlap_is_a_warning() {
    let text = format!("{MINIMAL}networking:\n  machineNetwork:\n  - cidr: 172.17.0.0/16\n");
    let l = load_ok(&text, &opts());
    assert!(
        l.warnings
            .iter()
            .any(|w| w.contains("overlaps with default Docker Bridge subnet")),
        "{:?}",
        l.warnings
    );
}

#[test]
fn mirrors_without_trust_bundle_warn_and_are_listed() {
    let text = format!(
        "{MINIMAL}imageDigestSources:\n- source: quay.io/openshift/okd\n  mirrors:\n  - mirror.example.com:5000/okd\n"
    );
    let l = load_ok(&text, &opts());
    assert!(
        l.warnings
            .iter()
            .any(|w| w.contains("additionalTrustBundle")),
        "{:?}",
        l.warnings
    );
    let s = l.config.image_sources();
    assert_eq!(s[0].source, "quay.io/openshift/okd");
    assert_eq!(s[0].mirrors, vec!["mirror.example.com:5000/okd"]);
}

#[test]
fn generated_configs_use_the_generated_wording() {
    let c: InstallConfig = serde_json::from_value(json!({
        "apiVersion": "v1", "baseDomain": "example.com", "metadata": {"name": "BAD"},
        "platform": {"none": {}}, "pullSecret": "{\"auths\":{\"a\":{\"auth\":\"x\"}}}"
    }))
    .unwrap();
    let err = finish(c, &opts()).unwrap_err();
    assert!(matches!(err, LoadError::Invalid { file: None, .. }));
    assert!(
        err.to_string()
            .starts_with("invalid install config: metadata.name: Invalid value: \"BAD\""),
        "{err}"
    );
}

#[test]
fn syntax_errors_name_the_line() {
    let err = load(
        "install-config.yaml",
        b"apiVersion: v1\nmetadata:\n  name: [x\n",
        &opts(),
    )
    .unwrap_err();
    let t = err.to_string();
    assert!(
        t.starts_with("failed to unmarshal install-config.yaml:") && t.contains("line"),
        "{t}"
    );
}

#[test]
fn infra_id_follows_section_3_3() {
    assert_eq!(
        infra_id("mycluster", "7kq2x"),
        ("mycluster-7kq2x".to_string(), None)
    );
    assert_eq!(infra_id("My.Cluster_x", "bbbbb").0, "My-Cluster-x-bbbbb");
    assert_eq!(infra_id("a..b--c", "bbbbb").0, "a-b-c-bbbbb");
    let (id, w) = infra_id("abcdefghijklmnopqrst-uvwxyz", "ccccc");
    assert_eq!(id, "abcdefghijklmnopqrst-ccccc");
    let w = w.unwrap();
    assert_eq!(
        w,
        "Length of cluster name \"abcdefghijklmnopqrst-uvwxyz\" is 27 which is greater than the max 21 allowed. The name will be truncated to \"abcdefghijklmnopqrst-\""
    );
    assert!(id.len() <= 27);
    assert_eq!(INFRA_ID_ALPHABET.len(), 27);
    assert!(!INFRA_ID_ALPHABET.contains(['a', 'e', 'i', 'o', 'u', '0', '1', '3']));
}

#[test]
fn trust_bundle_with_text_and_two_certs_loads() {
    let ex = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../../examples/baremetal-single-master/install-config.yaml"),
    )
    .unwrap();
    let start = ex.find("-----BEGIN CERTIFICATE-----").unwrap();
    let end = ex.find("-----END CERTIFICATE-----").unwrap() + "-----END CERTIFICATE-----".len();
    let cert: String = ex[start..end]
        .lines()
        .map(|l| format!("{}\n", l.trim()))
        .collect();
    let bundle = format!("# mirror CA\n{cert}{cert}");
    let indented: String = bundle.lines().map(|l| format!("  {l}\n")).collect();
    let text = format!("{MINIMAL}additionalTrustBundle: |\n{indented}");
    let l = load_ok(&text, &opts());
    assert_eq!(
        l.warnings
            .iter()
            .filter(|w| w.contains("expired on"))
            .count(),
        2,
        "{:?}",
        l.warnings
    );
}

#[test]
fn interactive_answer_checks() {
    use okd_installconfig::{
        check_base_domain, check_cluster_name, check_pull_secret, check_ssh_key,
    };
    assert!(check_cluster_name("okd", "none").is_ok());
    assert!(check_cluster_name("my.okd", "none").is_ok());
    assert_eq!(
        check_cluster_name("my.okd", "baremetal").unwrap_err(),
        "cluster name must not contain '.'"
    );
    assert!(
        check_cluster_name("Okd", "none")
            .unwrap_err()
            .starts_with("a lowercase RFC 1123 subdomain")
    );
    assert!(check_base_domain("example.com.").is_ok());
    assert!(check_base_domain("exa mple.com").is_err());
    assert!(check_pull_secret(r#"{"auths":{"r":{"auth":"eA=="}}}"#).is_ok());
    assert_eq!(
        check_pull_secret(r#"{"auths":{}}"#).unwrap_err(),
        "auths required"
    );
    assert_eq!(
        check_pull_secret(r#"{"auths":{"r":{}}}"#).unwrap_err(),
        "\"r\" requires either auth or credsStore"
    );
    assert!(
        check_ssh_key(
            "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAILrvMMW3zy8P0QEcm++1urRFqirHtHjD5yhf9e47TFlk u@h"
        )
        .is_ok()
    );
    assert_eq!(
        check_ssh_key("ssh-ed25519 AAAA").unwrap_err(),
        "ssh: no key found"
    );
}
