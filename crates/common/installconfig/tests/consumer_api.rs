//! Compile-time check of the API shapes the okd-assets crate and the binary use.

use okd_installconfig::{ImageSource, InstallConfig, LoadOptions, Loaded, MachinePool};
use serde_json::{Value, json};

fn uses(ic: &InstallConfig, l: &Loaded) -> Value {
    let _: &Vec<String> = &l.warnings;
    let _: &Vec<String> = &l.infos;
    let _: Option<String> = ic.platform.aws.as_ref().and_then(|a| a.hosted_zone.clone());
    let _: String = ic
        .platform
        .aws
        .as_ref()
        .map(|a| a.region.clone())
        .unwrap_or_default();
    let _: Option<String> = ic.platform.aws.as_ref().and_then(|a| a.ami_id.clone());
    if let Some(user) = ic.platform.aws.as_ref().map(|a| &a.user_tags) {
        for (k, v) in user {
            let _ = json!({"name": k, "value": v});
        }
    }
    let _: Vec<String> = ic
        .platform
        .baremetal
        .as_ref()
        .map(|b| b.api_vips.clone())
        .unwrap_or_default();
    let _: Vec<String> = ic
        .platform
        .baremetal
        .as_ref()
        .map(|b| b.ingress_vips.clone())
        .unwrap_or_default();
    let _: String = ic
        .networking
        .as_ref()
        .map(|n| n.network_type.clone())
        .unwrap_or_default();
    let _ = ic
        .networking
        .as_ref()
        .and_then(|n| n.internal_join_subnet())
        .map(|j| json!({"internalJoinSubnet": j}));
    let _: bool = ic.image_digest_sources.is_empty();
    let srcs: Vec<ImageSource> = ic.image_sources();
    let _ = srcs
        .iter()
        .map(|s| json!({"mirrors": s.mirrors, "source": s.source}))
        .count();
    let _: &[u8] = okd_installconfig::ExposeSecret::expose_secret(&ic.pull_secret).as_bytes();
    let _: Option<&str> = ic.additional_trust_bundle.as_deref();
    let _: Option<&str> = ic.additional_trust_bundle_policy.as_deref();
    let _: Option<&str> = ic.cpu_partitioning_mode.as_deref();
    if let Some(p) = &ic.proxy {
        let _: (&Option<String>, &Option<String>, &Option<String>) =
            (&p.http_proxy, &p.https_proxy, &p.no_proxy);
    }
    if let Some(caps) = &ic.capabilities {
        let _ = serde_json::to_value(caps);
    }
    let _: String = ic.feature_set.clone().unwrap_or_default();
    let _: &Vec<String> = &ic.feature_gates;
    let _: Option<&str> = ic.ssh_key.as_deref();
    let _: bool = ic.fips;
    let pool: Option<&MachinePool> = ic.control_plane.as_ref();
    let _: Option<&str> = pool.and_then(|p| p.hyperthreading.as_deref());
    let _: Option<&Value> = pool
        .and_then(|p| p.platform.get("aws"))
        .and_then(|a| a.get("zones"));
    let _: Option<i64> = ic.control_plane.as_ref().and_then(|c| c.replicas);
    for p in ic.compute.iter().filter(|p| p.name == "worker") {
        let _ = p.replicas.unwrap_or(0).max(0) as usize;
    }
    let _: Option<String> = ic
        .bootstrap_in_place
        .as_ref()
        .map(|b| b.installation_disk.clone());
    let _: &str = &ic.metadata.name;
    let _: i64 = ic.control_plane_replicas();
    let _: i64 = ic.compute_replicas();
    let _: &str = ic.platform_name();
    let _: String = ic.cluster_domain();
    let _: Vec<(ipnet::IpNet, u8)> = ic.cluster_networks();
    let _: bool = ic
        .service_networks()
        .first()
        .is_some_and(|n| matches!(n, ipnet::IpNet::V6(_)));
    let _: Vec<String> = ic
        .machine_networks()
        .iter()
        .map(|n| n.to_string())
        .collect();
    ic.redacted().to_json_value()
}

#[test]
fn consumer_shapes_compile() {
    let c: InstallConfig = serde_json::from_value(json!({
        "apiVersion": "v1", "baseDomain": "example.com", "metadata": {"name": "x"},
        "platform": {"none": {}}, "pullSecret": "{\"auths\":{\"a\":{\"auth\":\"x\"}}}",
        "controlPlane": {"name": "master", "replicas": 3}, "compute": [{"name": "worker", "replicas": 3}]
    }))
    .unwrap();
    let l = okd_installconfig::finish(c, &LoadOptions::default()).unwrap();
    let v = uses(&l.config, &l);
    assert_eq!(v["pullSecret"], json!(""));
    let e = okd_installconfig::LoadError::Invalid {
        file: Some("install-config.yaml".into()),
        errors: vec![
            okd_installconfig::FieldError::required("a", "a is required"),
            okd_installconfig::FieldError::invalid("b", "x", "must be y"),
        ],
    };
    assert_eq!(
        e.to_string(),
        "invalid \"install-config.yaml\" file: [a: Required value: a is required, b: Invalid value: \"x\": must be y]"
    );
}

/// Validation errors are typed: a caller can tell the field, the rule and the
/// value apart without parsing text, and a secret's value is never kept.
#[test]
fn validation_errors_are_typed_field_errors() {
    use okd_installconfig::{ErrorKind, FieldValue, LoadError};
    let yaml = br#"apiVersion: v1
baseDomain: example.com
metadata: {name: x}
platform: {aws: {}}
pullSecret: '{"auths":{}, "x":"Hunter2-S3cret"}'
controlPlane: {name: master, replicas: -1}
"#;
    let Err(LoadError::Invalid { file, errors }) =
        okd_installconfig::load("install-config.yaml", yaml, &LoadOptions::default())
    else {
        panic!("must fail validation");
    };
    assert_eq!(file.as_deref(), Some("install-config.yaml"));
    let region = errors
        .iter()
        .find(|e| e.path == "platform.aws.region")
        .expect("region error");
    assert_eq!(region.kind, ErrorKind::Required);
    assert_eq!(region.value, FieldValue::Omitted);
    assert_eq!(region.detail, "region must be specified");
    let ps = errors
        .iter()
        .find(|e| e.path == "pullSecret")
        .expect("pull secret error");
    assert_eq!(
        (ps.kind, &ps.value, ps.detail.as_str()),
        (ErrorKind::Invalid, &FieldValue::Omitted, "auths required")
    );
    let replicas = errors
        .iter()
        .find(|e| e.path == "controlPlane.replicas")
        .expect("replicas error");
    assert_eq!(
        (replicas.kind, &replicas.value),
        (ErrorKind::Invalid, &FieldValue::Int(-1))
    );
    let Err(LoadError::Convert { error, .. }) = okd_installconfig::load(
        "install-config.yaml",
        b"apiVersion: v2\n",
        &LoadOptions::default(),
    ) else {
        panic!("apiVersion v2 must fail up-conversion");
    };
    assert_eq!(
        (error.path.as_str(), error.kind, error.value),
        (
            "apiVersion",
            ErrorKind::Invalid,
            FieldValue::Str("v2".into())
        )
    );
}

/// The platform enum and the install-config keys are the same set: each key
/// parses back to its platform, and a config's platform reads as both.
#[test]
fn platform_names_round_trip() {
    use okd_installconfig::PlatformName;
    let keys = [
        "aws",
        "azure",
        "baremetal",
        "external",
        "gcp",
        "ibmcloud",
        "none",
        "nutanix",
        "openstack",
        "powervs",
        "vsphere",
    ];
    for k in keys {
        let p = PlatformName::from_key(k).expect(k);
        assert_eq!(p.as_str(), k);
        let c: InstallConfig = serde_json::from_value(json!({"platform": {k: {}}})).unwrap();
        assert_eq!(c.platform_kind(), Some(p));
        assert_eq!(c.platform_name(), k);
        assert_eq!(c.platform.names(), vec![k]);
    }
    assert_eq!(PlatformName::from_key("ovirt"), None);
    assert_eq!(InstallConfig::default().platform_name(), "");
}
