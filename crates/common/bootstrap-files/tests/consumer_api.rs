//! Mirrors how `okd-assets` (`crates/common/assets/src/ignition.rs`) consumes this
//! crate, so a change of field names or types shows up here first.

use okd_types::ignition::{Dropin, File, Unit};

#[test]
fn consumer_shapes_compile_and_render() {
    let proxy = Some(okd_bootstrap_files::ProxyStatus {
        http_proxy: "http://proxy:3128".to_string(),
        https_proxy: String::new(),
        no_proxy: ".cluster.local".to_string(),
    });
    let data = okd_bootstrap_files::TemplateData {
        release_image: "quay.io/openshift/okd:4.13".to_string(),
        pull_secret: "{\"auths\":{}}".into(),
        ssh_key: String::new(),
        proxy,
        registries: vec![okd_bootstrap_files::Registry {
            blocked: false,
            source: "quay.io/openshift/okd".to_string(),
            mirrors: vec!["mirror.example/okd".to_string()],
        }],
        additional_trust_bundle: String::new(),
        fips: true,
        cluster_profile: std::env::var("OPENSHIFT_INSTALL_EXPERIMENTAL_CLUSTER_PROFILE").ok(),
        bootstrap_in_place: None,
        use_ipv6_for_node_ip: false,
        use_dual_for_node_ip: false,
        api_server_url: "api.c.example".to_string(),
        api_int_server_url: "api-int.c.example".to_string(),
        cluster_domain: "c.example".to_string(),
        feature_set: String::new(),
        invoker: "okd-install".to_string(),
        okd: true,
        platform: "none".to_string(),
        etcd_endpoints: (0..3i64)
            .map(|i| format!("https://etcd-{i}.c.example:2379"))
            .collect(),
        bootstrap_node_ip: None,
        control_plane_replicas: 3,
    };
    let mut files: Vec<File> = Vec::new();
    for f in okd_bootstrap_files::files(&data) {
        files.push(if f.append {
            File::append_data(&f.path, f.mode, &f.contents)
        } else {
            File::data(&f.path, f.mode, &f.contents)
        });
    }
    assert_eq!(files.len(), 21);
    let motd = files.iter().find(|f| f.path == "/etc/motd").unwrap();
    assert_eq!(motd.overwrite, Some(false));
    let mut units = Vec::new();
    for u in okd_bootstrap_files::units(&data) {
        let mut unit = Unit::new(&u.name, u.contents.clone(), u.enabled);
        unit.dropins = u
            .dropins
            .iter()
            .map(|d| Dropin {
                name: d.name.clone(),
                contents: Some(d.contents.clone()),
            })
            .collect();
        units.push(unit);
    }
    assert_eq!(units.len(), 11);
    let enabled: Vec<&str> = units
        .iter()
        .filter(|u| u.enabled == Some(true))
        .map(|u| u.name.as_str())
        .collect();
    assert_eq!(
        enabled,
        [
            "approve-csr.service",
            "chown-gatewayd-key.service",
            "kubelet.service",
            "progress.service",
            "systemd-journal-gatewayd.socket"
        ]
    );
}

#[test]
fn a_source_never_contacted_is_blocked_in_registries_conf() {
    let conf = okd_bootstrap_files::registries_conf(&[okd_bootstrap_files::Registry {
        source: "quay.io/openshift/okd".into(),
        mirrors: vec!["mirror.example/okd".into()],
        blocked: true,
    }]);
    assert_eq!(
        conf,
        "[[registry]]\n  prefix = \"\"\n  location = \"quay.io/openshift/okd\"\n  mirror-by-digest-only = true\n  blocked = true\n\n  [[registry.mirror]]\n    location = \"mirror.example/okd\"\n\n"
    );
}
