//! MachineConfig rendering by the machine-config-operator's rules
//! (`MergeMachineConfigs` + Ignition's `config/merge`), pool selection by
//! role label, and reading MachineConfigs from an asset directory.

mod common;

use std::path::Path;

use common::{data, inputs, mc};
use okd_mcs::{McsState, render_pool};
use serde_json::{Value, json};

fn render(mcs: &[Value]) -> Value {
    render_pool("master", mcs).expect("render")
}

fn config(rendered: &Value) -> &Value {
    rendered.pointer("/spec/config").expect("spec.config")
}

fn list<'a>(v: &'a Value, ptr: &str) -> &'a Vec<Value> {
    v.pointer(ptr)
        .and_then(Value::as_array)
        .unwrap_or_else(|| panic!("no list at {ptr} in {v:#}"))
}

fn entries_with<'a>(v: &'a Value, ptr: &str, key: &str, val: &str) -> Vec<&'a Value> {
    list(v, ptr)
        .iter()
        .filter(|e| e.get(key).and_then(Value::as_str) == Some(val))
        .collect()
}

fn one<'a>(v: &'a Value, ptr: &str, key: &str, val: &str) -> &'a Value {
    let found = entries_with(v, ptr, key, val);
    assert_eq!(found.len(), 1, "{ptr} entries with {key}={val}: {found:#?}");
    found[0]
}

fn file_config(files: Value) -> Value {
    json!({"config": {"ignition": {"version": "3.2.0"}, "storage": {"files": files}}})
}

#[test]
fn configs_apply_in_lexical_name_order_and_later_files_win() {
    // Given out of order. Lexically "00-c" < "10-a" < "9-b", so "9-b" is
    // applied last. A numeric sort would apply "10-a" last, input order
    // "00-c", and first-wins (after sorting) would keep "00-c".
    let mcs = vec![
        mc(
            "9-b",
            "master",
            file_config(json!([{"path": "/etc/x", "contents": {"source": data("nine")}}])),
        ),
        mc(
            "10-a",
            "master",
            file_config(
                json!([{"path": "/etc/x", "mode": 384, "contents": {"source": data("ten")}}]),
            ),
        ),
        mc(
            "00-c",
            "master",
            file_config(
                json!([{"path": "/etc/x", "mode": 420, "user": {"name": "core"},
                                "contents": {"source": data("zero")}}]),
            ),
        ),
    ];
    let r = render(&mcs);
    let f = one(config(&r), "/storage/files", "path", "/etc/x");
    assert_eq!(f.pointer("/contents/source"), Some(&json!(data("nine"))));
    // Ignition merges an entry with the same key field by field: "9-b" set
    // no mode, so the mode of "10-a" (applied before it) stays; the user of
    // "00-c" survives both.
    assert_eq!(f.get("mode"), Some(&json!(384)));
    assert_eq!(f.pointer("/user/name"), Some(&json!("core")));
    // The MCO sets overwrite: true on files that have none.
    assert_eq!(f.get("overwrite"), Some(&json!(true)));
    assert_eq!(
        config(&r).pointer("/ignition/version"),
        Some(&json!("3.5.0"))
    );
}

#[test]
fn files_directories_and_links_share_one_path_space() {
    let mcs = vec![
        mc(
            "00-a",
            "master",
            json!({"config": {"ignition": {"version": "3.2.0"}, "storage": {
                "files": [{"path": "/etc/localtime", "contents": {"source": data("UTC")}},
                          {"path": "/etc/keep", "contents": {"source": data("k")}}],
                "directories": [{"path": "/etc/d", "mode": 493}]
            }}}),
        ),
        mc(
            "50-b",
            "master",
            json!({"config": {"ignition": {"version": "3.2.0"}, "storage": {
                "links": [{"path": "/etc/localtime", "target": "/usr/share/zoneinfo/UTC"}],
                "files": [{"path": "/etc/d", "contents": {"source": data("now a file")}}]
            }}}),
        ),
    ];
    let r = render(&mcs);
    let c = config(&r);
    assert!(entries_with(c, "/storage/files", "path", "/etc/localtime").is_empty());
    assert_eq!(
        one(c, "/storage/links", "path", "/etc/localtime").get("target"),
        Some(&json!("/usr/share/zoneinfo/UTC"))
    );
    assert!(c.pointer("/storage/directories").is_none(), "{c:#}");
    one(c, "/storage/files", "path", "/etc/d");
    one(c, "/storage/files", "path", "/etc/keep");
    let paths: Vec<&str> = list(c, "/storage/files")
        .iter()
        .filter_map(|f| f.get("path").and_then(Value::as_str))
        .collect();
    // Parent entries keep their place, new ones are appended.
    assert_eq!(paths, ["/etc/keep", "/etc/d"]);
}

#[test]
fn overwrite_defaults_to_true_only_where_unset() {
    let r = render(&[mc(
        "00-a",
        "master",
        json!({"config": {"ignition": {"version": "3.2.0"}, "storage": {"files": [
            {"path": "/etc/unset", "contents": {"source": data("a")}},
            {"path": "/etc/false", "overwrite": false, "contents": {"source": data("b")}},
            {"path": "/etc/nosource", "append": [{"source": data("c")}]}
        ]}}}),
    )]);
    let c = config(&r);
    assert_eq!(
        one(c, "/storage/files", "path", "/etc/unset").get("overwrite"),
        Some(&json!(true))
    );
    assert_eq!(
        one(c, "/storage/files", "path", "/etc/false").get("overwrite"),
        Some(&json!(false))
    );
    // Ignition refuses overwrite: true without contents.source.
    assert_eq!(
        one(c, "/storage/files", "path", "/etc/nosource").get("overwrite"),
        None
    );
}

#[test]
fn systemd_units_and_dropins_merge_by_name() {
    let mut mcs = common::sample_configs();
    mcs.push(mc(
        "02-master-dropin",
        "master",
        json!({"config": {"ignition": {"version": "3.2.0"}, "systemd": {"units": [
            {"name": "kubelet.service", "dropins": [
                {"name": "10-mco.conf", "contents": "[Service]\nEnvironment=A=2\n"},
                {"name": "20-extra.conf", "contents": "[Service]\nEnvironment=B=1\n"}
            ]},
            {"name": "zincati.service", "mask": false}
        ]}}}),
    ));
    let r = render(&mcs);
    let c = config(&r);
    let k = one(c, "/systemd/units", "name", "kubelet.service");
    // From 00-master: kept although later configs name the unit again.
    assert!(
        k.get("contents")
            .and_then(Value::as_str)
            .is_some_and(|s| s.contains("ExecStart=/usr/bin/kubelet")),
        "{k:#}"
    );
    assert_eq!(k.get("enabled"), Some(&json!(true)));
    let dropins = list(k, "/dropins");
    assert_eq!(dropins.len(), 2, "{dropins:#?}");
    assert_eq!(dropins[0].get("name"), Some(&json!("10-mco.conf")));
    assert_eq!(
        dropins[0].get("contents"),
        Some(&json!("[Service]\nEnvironment=A=2\n"))
    );
    assert_eq!(dropins[1].get("name"), Some(&json!("20-extra.conf")));
    let z = one(c, "/systemd/units", "name", "zincati.service");
    assert_eq!(z.get("mask"), Some(&json!(false)));
    assert_eq!(list(c, "/systemd/units").len(), 2);
}

#[test]
fn users_merge_by_name_and_ssh_keys_union_in_order() {
    let r = render(&common::sample_configs()[..3]);
    let c = config(&r);
    let core = one(c, "/passwd/users", "name", "core");
    assert_eq!(
        core.get("sshAuthorizedKeys"),
        Some(&json!([
            "ssh-ed25519 AAAAone core@a",
            "ssh-ed25519 AAAAtwo core@b"
        ]))
    );
    // The same key twice stays once (keys are keyed by value).
    let again = vec![
        mc(
            "a",
            "master",
            json!({"config": {"ignition": {"version": "3.2.0"},
                "passwd": {"users": [{"name": "core", "uid": 1000, "sshAuthorizedKeys": ["k1", "k2"]}]}}}),
        ),
        mc(
            "b",
            "master",
            json!({"config": {"ignition": {"version": "3.2.0"},
                "passwd": {"users": [{"name": "core", "sshAuthorizedKeys": ["k3", "k1"]}]}}}),
        ),
    ];
    let r = render(&again);
    let core = one(config(&r), "/passwd/users", "name", "core");
    assert_eq!(
        core.get("sshAuthorizedKeys"),
        Some(&json!(["k1", "k2", "k3"]))
    );
    assert_eq!(core.get("uid"), Some(&json!(1000)));
}

#[test]
fn ignition_section_lists_merge_by_source() {
    let a = mc(
        "a",
        "master",
        json!({"config": {"ignition": {"version": "3.2.0",
            "config": {"merge": [{"source": "https://x/1", "httpHeaders": [
                {"name": "keep", "value": "1"}, {"name": "same", "value": "old"}, {"name": "drop", "value": "x"}]}]},
            "security": {"tls": {"certificateAuthorities": [{"source": data("ca1")}]}}}}}),
    );
    let b = mc(
        "b",
        "master",
        json!({"config": {"ignition": {"version": "3.1.0",
            "config": {"merge": [{"source": "https://x/1", "httpHeaders": [
                {"name": "drop"}, {"name": "same", "value": "new"}, {"name": "add", "value": "2"}]},
                {"source": "https://x/2"}]},
            "security": {"tls": {"certificateAuthorities": [{"source": data("ca1")}, {"source": data("ca2")}]}}}}}),
    );
    let r = render(&[b, a]);
    let c = config(&r);
    let merge = list(c, "/ignition/config/merge");
    assert_eq!(merge.len(), 2);
    assert_eq!(
        merge[0].get("httpHeaders"),
        Some(
            &json!([{"name": "keep", "value": "1"}, {"name": "same", "value": "new"}, {"name": "add", "value": "2"}])
        )
    );
    assert_eq!(merge[1].get("source"), Some(&json!("https://x/2")));
    assert_eq!(
        c.pointer("/ignition/security/tls/certificateAuthorities"),
        Some(&json!([{"source": data("ca1")}, {"source": data("ca2")}]))
    );
    // The rendered config declares the internal version, not the inputs'.
    assert_eq!(c.pointer("/ignition/version"), Some(&json!("3.5.0")));
}

#[test]
fn file_appends_concatenate() {
    let a = mc(
        "a",
        "master",
        file_config(
            json!([{"path": "/etc/f", "contents": {"source": data("base")},
                           "append": [{"source": data("one")}]}]),
        ),
    );
    let b = mc(
        "b",
        "master",
        file_config(
            json!([{"path": "/etc/f", "append": [{"source": data("one")}, {"source": data("two")}]}]),
        ),
    );
    let r = render(&[a, b]);
    let f = one(config(&r), "/storage/files", "path", "/etc/f");
    assert_eq!(
        f.get("append"),
        Some(&json!([{"source": data("one")}, {"source": data("one")}, {"source": data("two")}]))
    );
    assert_eq!(f.pointer("/contents/source"), Some(&json!(data("base"))));
}

#[test]
fn kernel_arguments_concatenate_in_order_keeping_duplicates() {
    let mcs = vec![
        mc(
            "99-b",
            "master",
            json!({"kernelArguments": ["hugepagesz=2M", "hugepages=1024", "nosmt"]}),
        ),
        mc(
            "05-a",
            "master",
            json!({"kernelArguments": ["nosmt", "hugepagesz=1G", "hugepages=4"]}),
        ),
        mc("50-none", "master", json!({})),
    ];
    let r = render(&mcs);
    assert_eq!(
        r.pointer("/spec/kernelArguments"),
        Some(&json!([
            "nosmt",
            "hugepagesz=1G",
            "hugepages=4",
            "hugepagesz=2M",
            "hugepages=1024",
            "nosmt"
        ]))
    );
}

#[test]
fn ignition_kernel_arguments_merge_by_value() {
    let mcs = vec![
        mc(
            "a",
            "master",
            json!({"config": {"ignition": {"version": "3.3.0"},
                "kernelArguments": {"shouldExist": ["a=1", "b"], "shouldNotExist": ["quiet"]}}}),
        ),
        mc(
            "b",
            "master",
            json!({"config": {"ignition": {"version": "3.4.0"},
                "kernelArguments": {"shouldExist": ["c", "a=1"]}}}),
        ),
    ];
    let r = render(&mcs);
    assert_eq!(
        config(&r).get("kernelArguments"),
        Some(&json!({"shouldExist": ["a=1", "b", "c"], "shouldNotExist": ["quiet"]}))
    );
}

#[test]
fn extensions_concatenate_fips_any_os_image_last_nonempty() {
    let mcs = vec![
        mc(
            "50-b",
            "master",
            json!({"extensions": ["kerberos", "usbguard"], "fips": true, "osImageURL": ""}),
        ),
        mc(
            "10-a",
            "master",
            json!({"extensions": ["usbguard"], "fips": false, "osImageURL": "quay.io/a@sha256:1"}),
        ),
        mc(
            "90-c",
            "master",
            json!({"fips": false, "osImageURL": "quay.io/c@sha256:3",
                   "baseOSExtensionsContainerImage": "quay.io/ext@sha256:9"}),
        ),
        mc("95-d", "master", json!({"osImageURL": ""})),
    ];
    let r = render(&mcs);
    // MergeMachineConfigs appends every config's extensions (no union).
    assert_eq!(
        r.pointer("/spec/extensions"),
        Some(&json!(["usbguard", "kerberos", "usbguard"]))
    );
    assert_eq!(r.pointer("/spec/fips"), Some(&json!(true)));
    assert_eq!(
        r.pointer("/spec/osImageURL"),
        Some(&json!("quay.io/c@sha256:3"))
    );
    assert_eq!(
        r.pointer("/spec/baseOSExtensionsContainerImage"),
        Some(&json!("quay.io/ext@sha256:9"))
    );
    let none = render(&[mc("a", "master", json!({"fips": false}))]);
    assert_eq!(none.pointer("/spec/fips"), Some(&json!(false)));
    assert_eq!(none.pointer("/spec/extensions"), Some(&json!([])));
}

#[test]
fn kernel_type_rules() {
    let kt = |types: &[&str]| -> Value {
        let mcs: Vec<Value> = types
            .iter()
            .enumerate()
            .map(|(i, t)| mc(&format!("{i:02}"), "master", json!({"kernelType": t})))
            .collect();
        render(&mcs)
            .pointer("/spec/kernelType")
            .cloned()
            .expect("kernelType")
    };
    assert_eq!(kt(&[]), json!("default"));
    assert_eq!(kt(&[""]), json!("default"));
    assert_eq!(
        kt(&["default", "realtime", "default", ""]),
        json!("realtime")
    );
    assert_eq!(kt(&["realtime", "64k-pages"]), json!("64k-pages"));
    assert_eq!(kt(&["64k-pages", "realtime", "default"]), json!("realtime"));
    assert_eq!(kt(&["bogus"]), json!("default"));

    let err = render_pool(
        "worker",
        &[
            mc("01", "worker", json!({"kernelType": "realtime"})),
            mc("02", "worker", json!({"extensions": ["kernel-devel"]})),
        ],
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("kernel-devel extension is not supported with kernelType: realtime"),
        "{err}"
    );
    render_pool(
        "worker",
        &[mc("02", "worker", json!({"extensions": ["kernel-devel"]}))],
    )
    .expect("kernel-devel with the default kernel");
}

#[test]
fn worker_configs_come_first_in_a_custom_pool() {
    // A custom pool renders the worker configs and its own; its own win
    // even when their names sort first.
    let mcs = vec![
        mc(
            "00-infra",
            "infra",
            file_config(json!([{"path": "/etc/role", "contents": {"source": data("infra")}}])),
        ),
        mc(
            "50-worker",
            "worker",
            file_config(json!([{"path": "/etc/role", "contents": {"source": data("worker")}}])),
        ),
    ];
    let r = render_pool("infra", &mcs).expect("render");
    let f = one(config(&r), "/storage/files", "path", "/etc/role");
    assert_eq!(f.pointer("/contents/source"), Some(&json!(data("infra"))));
    assert!(
        r.pointer("/metadata/name")
            .and_then(Value::as_str)
            .is_some_and(|n| n.starts_with("rendered-infra-"))
    );
}

#[test]
fn only_ignition_3_0_to_3_5_configs_render() {
    for ok in ["3.0.0", "3.1.0", "3.3.0", "3.5.0"] {
        render(&[mc(
            "a",
            "master",
            json!({"config": {"ignition": {"version": ok}}}),
        )]);
    }
    for bad in ["2.2.0", "3.6.0", "3.4.0-experimental", "", "4.0.0"] {
        let e = render_pool(
            "master",
            &[mc(
                "x",
                "master",
                json!({"config": {"ignition": {"version": bad}}}),
            )],
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("\"x\"") && e.contains("version"), "{bad}: {e}");
    }
}

#[test]
fn rendered_name_hashes_the_spec() {
    let a = render(&common::sample_configs()[..3]);
    let b = render(&common::sample_configs()[..3]);
    let name = a.pointer("/metadata/name").and_then(Value::as_str).unwrap();
    assert_eq!(
        Some(name),
        b.pointer("/metadata/name").and_then(Value::as_str)
    );
    let hex = name.strip_prefix("rendered-master-").expect(name);
    assert_eq!(hex.len(), 32);
    assert!(hex.bytes().all(|c| c.is_ascii_hexdigit()));
    let c = render(&common::sample_configs()[..2]);
    assert_ne!(
        Some(name),
        c.pointer("/metadata/name").and_then(Value::as_str)
    );
}

#[test]
fn pools_are_selected_by_role_label() {
    let mut objs = common::sample_configs();
    objs.push(mc(
        "50-infra",
        "infra",
        file_config(json!([{"path": "/etc/infra", "contents": {"source": data("i")}}])),
    ));
    // Not MachineConfigs or no role label: ignored.
    objs.push(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "99-master-cm", "labels": {"machineconfiguration.openshift.io/role": "master"}},
        "spec": file_config(json!([{"path": "/etc/from-configmap", "contents": {"source": data("no")}}]))
    }));
    objs.push(json!({
        "apiVersion": "machineconfiguration.openshift.io/v2", "kind": "MachineConfig",
        "metadata": {"name": "99-master-v2", "labels": {"machineconfiguration.openshift.io/role": "master"}},
        "spec": file_config(json!([{"path": "/etc/from-v2", "contents": {"source": data("no")}}]))
    }));
    objs.push(json!({
        "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
        "metadata": {"name": "99-nolabel"},
        "spec": file_config(json!([{"path": "/etc/from-nolabel", "contents": {"source": data("no")}}]))
    }));
    let st = McsState::from_parts(objs, inputs()).expect("state");
    assert_eq!(
        st.pools().collect::<Vec<_>>(),
        ["infra", "master", "worker"]
    );
    let master = st.pool("master").expect("master").machine_config.clone();
    let text = master.to_string();
    assert!(
        text.contains("AAAAone") && text.contains("AAAAtwo"),
        "{text}"
    );
    for absent in [
        "AAAAworker",
        "/etc/infra",
        "from-configmap",
        "from-v2",
        "from-nolabel",
    ] {
        assert!(!text.contains(absent), "{absent} in master: {text}");
    }
    let worker = st
        .pool("worker")
        .expect("worker")
        .machine_config
        .to_string();
    assert!(worker.contains("AAAAworker") && !worker.contains("AAAAone"));
    assert!(
        st.pool("infra")
            .unwrap()
            .machine_config
            .to_string()
            .contains("/etc/infra")
    );
    assert!(st.pool("arbiter").is_none());
    // master and worker always exist.
    let empty = McsState::from_parts(Vec::new(), inputs()).expect("empty state");
    assert_eq!(empty.pools().collect::<Vec<_>>(), ["master", "worker"]);
}

/// Writes `bootstrap.ign` into `dir` with the four files the server needs
/// and `extra` files.
fn write_bootstrap_ign(dir: &Path, extra: &[(&str, &[u8])]) {
    let i = inputs();
    let mut files = vec![
        (okd_mcs::KUBE_APISERVER_CA_PATH, i.kubelet_ca.clone()),
        (okd_mcs::KUBECONFIG_KUBELET_PATH, i.kubeconfig.clone()),
        (okd_mcs::MCS_CERT_PATH, i.tls_cert_pem.clone()),
        (okd_mcs::MCS_KEY_PATH, i.tls_key_pem.clone()),
    ];
    files.extend(extra.iter().map(|(p, d)| (*p, d.to_vec())));
    let files: Vec<Value> = files
        .iter()
        .map(|(p, d)| json!({"path": p, "mode": 420, "contents": {"source": okd_types::dataurl::encode(d)}}))
        .collect();
    let ign = json!({"ignition": {"version": "3.2.0"}, "storage": {"files": files}});
    std::fs::write(dir.join("bootstrap.ign"), ign.to_string()).expect("write bootstrap.ign");
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("read fixture dir") {
        let e = e.expect("entry");
        std::fs::copy(e.path(), to.join(e.file_name())).expect("copy fixture");
    }
}

fn fixtures() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/assets")
}

#[test]
fn asset_dir_manifests_on_disk() {
    let d = tempfile::tempdir().expect("tempdir");
    copy_dir(&fixtures().join("openshift"), &d.path().join("openshift"));
    copy_dir(&fixtures().join("manifests"), &d.path().join("manifests"));
    write_bootstrap_ign(d.path(), &[]);
    let st = McsState::from_asset_dir(d.path()).expect("from_asset_dir");
    assert_eq!(st.pools().collect::<Vec<_>>(), ["master", "worker"]);
    let m = st.pool("master").unwrap().machine_config.clone();
    let c = config(&m);
    // 99_openshift-machineconfig_99-master-ssh.yaml (installer's shape).
    let core = one(c, "/passwd/users", "name", "core");
    assert_eq!(
        core.get("sshAuthorizedKeys"),
        Some(&json!(["ssh-ed25519 AAAAC3NzaFixtureMaster fixture@okd"]))
    );
    // multi.yaml: a ConfigMap (ignored) and a MachineConfig; chrony.yml;
    // kargs.json; in manifests/: 04-master-motd.yaml.
    let chrony = one(c, "/storage/files", "path", "/etc/chrony.conf");
    assert_eq!(chrony.get("mode"), Some(&json!(420)));
    assert_eq!(
        m.pointer("/spec/kernelArguments"),
        Some(&json!(["console=ttyS0", "rd.neednet=1"]))
    );
    // 10-master-motd (openshift/multi.yaml) sorts before 20-master-motd
    // (manifests/), whatever the directory: the latter wins.
    let motd = one(c, "/storage/files", "path", "/etc/motd");
    assert_eq!(
        motd.pointer("/contents/source"),
        Some(&json!("data:,from%20manifests%0A"))
    );
    let text = m.to_string();
    for absent in ["from-configmap", "from-readme", "AAAAC3NzaFixtureWorker"] {
        assert!(!text.contains(absent), "{absent}: {text}");
    }
    let w = st.pool("worker").unwrap().machine_config.to_string();
    assert!(w.contains("AAAAC3NzaFixtureWorker"), "{w}");
    // The TLS pair and inputs come from bootstrap.ign.
    assert_eq!(st.inputs().kubeconfig, inputs().kubeconfig);
    assert_eq!(st.inputs().tls_key_pem, inputs().tls_key_pem);
}

#[test]
fn asset_dir_manifests_inside_bootstrap_ign() {
    // After `create ignition-configs` the manifests dirs are gone and the
    // MachineConfigs are only inside bootstrap.ign.
    let d = tempfile::tempdir().expect("tempdir");
    let ssh =
        std::fs::read(fixtures().join("openshift/99_openshift-machineconfig_99-master-ssh.yaml"))
            .expect("fixture");
    let multi = std::fs::read(fixtures().join("openshift/multi.yaml")).expect("fixture");
    let motd = std::fs::read(fixtures().join("manifests/04-master-motd.yaml")).expect("fixture");
    // Outside the two manifest directories: ignored.
    let elsewhere = motd.clone();
    write_bootstrap_ign(
        d.path(),
        &[
            (
                "/opt/openshift/openshift/99_openshift-machineconfig_99-master-ssh.yaml",
                &ssh[..],
            ),
            ("/opt/openshift/manifests/multi.yaml", &multi[..]),
            (
                "/opt/openshift/other/99-master-elsewhere.yaml",
                &elsewhere[..],
            ),
            ("/opt/openshift/openshift/notes.txt", b"kind: MachineConfig"),
        ],
    );
    let st = McsState::from_asset_dir(d.path()).expect("from_asset_dir");
    let m = st.pool("master").unwrap().machine_config.clone();
    let c = config(&m);
    one(c, "/passwd/users", "name", "core");
    let motd = one(c, "/storage/files", "path", "/etc/motd");
    assert_eq!(
        motd.pointer("/contents/source"),
        Some(&json!("data:,from%20openshift%0A"))
    );

    // A bootstrap.ign without the server's files is refused by name.
    let e = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        e.path().join("bootstrap.ign"),
        r#"{"ignition":{"version":"3.2.0"}}"#,
    )
    .expect("write");
    let err = McsState::from_asset_dir(e.path()).unwrap_err().to_string();
    assert!(err.contains(okd_mcs::KUBE_APISERVER_CA_PATH), "{err}");
}
