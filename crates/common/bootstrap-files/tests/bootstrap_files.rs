//! Tests of the bootstrap files and units against the measured 4.13 index
//! (`tests/data/ignition-index-4.13-bootstrap-files.tsv`, rows copied from
//! the reference `ignition-index.tsv`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use okd_bootstrap_files::{BootstrapFile, ProxyStatus, Registry, TemplateData, files, units};

const INDEX: &str = include_str!("data/ignition-index-4.13-bootstrap-files.tsv");

const CA: &str =
    "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUY2E=\n-----END CERTIFICATE-----\n";
const PULL_SECRET: &str =
    r#"{"auths":{"registry.okd.example:5000":{"auth":"dXNlcjpwYXNzd29yZA=="}}}"#;

/// Template data shaped like the reference `sno` scenario (mirrors, trust
/// bundle, no proxy), with the flavour and bootstrap-in-place switches.
fn data(okd: bool, bip: bool, mirrors: bool) -> TemplateData {
    TemplateData {
        release_image: "quay.io/openshift/okd:4.13.0-0.okd-2023-06-04-080300".into(),
        pull_secret: PULL_SECRET.into(),
        ssh_key: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIA test".into(),
        proxy: None,
        registries: if mirrors {
            vec![
                Registry {
                    blocked: false,
                    source: "quay.io/openshift/okd".into(),
                    mirrors: vec!["registry.okd.example:5000/okd".into()],
                },
                Registry {
                    blocked: false,
                    source: "quay.io/openshift/okd-content".into(),
                    mirrors: vec![
                        "registry.okd.example:5000/okd".into(),
                        "mirror2.example/okd-content".into(),
                    ],
                },
            ]
        } else {
            Vec::new()
        },
        additional_trust_bundle: if mirrors { CA.into() } else { String::new() },
        fips: false,
        cluster_profile: None,
        bootstrap_in_place: bip.then(|| "/dev/sda".to_string()),
        use_ipv6_for_node_ip: false,
        use_dual_for_node_ip: false,
        api_server_url: "api.okd.example".into(),
        api_int_server_url: "api-int.okd.example".into(),
        cluster_domain: "okd.example".into(),
        feature_set: String::new(),
        invoker: "okd-install".into(),
        okd,
        platform: "none".into(),
        etcd_endpoints: vec!["https://etcd-0.okd.example:2379".into()],
        bootstrap_node_ip: None,
        control_plane_replicas: if bip { 1 } else { 3 },
    }
}

/// Measured attributes of one file row.
#[derive(Debug)]
struct FileRow {
    mode: u32,
    append: bool,
    decoded_bytes: Option<usize>,
}

/// Measured attributes of one unit row.
#[derive(Debug, PartialEq)]
struct UnitRow {
    enabled: Option<bool>,
    contents_bytes: Option<usize>,
    dropins: Vec<String>,
}

fn attr<'a>(fields: &[&'a str], key: &str) -> &'a str {
    fields
        .iter()
        .find_map(|f| f.strip_prefix(key).and_then(|r| r.strip_prefix('=')))
        .unwrap_or("")
}

fn index(scenario: &str) -> (BTreeMap<String, FileRow>, BTreeMap<String, UnitRow>) {
    let mut f = BTreeMap::new();
    let mut u = BTreeMap::new();
    for line in INDEX.lines().filter(|l| !l.starts_with('#')) {
        let fields: Vec<&str> = line.split('\t').collect();
        let Some(sc) = fields[0].split('/').next() else {
            continue;
        };
        if sc != scenario {
            continue;
        }
        match fields[1] {
            "file" => {
                let mode = u32::from_str_radix(attr(&fields, "mode"), 8).unwrap();
                let append = !attr(&fields, "append").is_empty();
                let decoded_bytes = attr(&fields, "decoded_bytes").parse().ok();
                assert!(
                    f.insert(
                        fields[2].to_string(),
                        FileRow {
                            mode,
                            append,
                            decoded_bytes
                        }
                    )
                    .is_none()
                );
            }
            "unit" => {
                let enabled = match attr(&fields, "enabled") {
                    "True" => Some(true),
                    "False" => Some(false),
                    _ => None,
                };
                let contents_bytes = attr(&fields, "contents_bytes").parse().ok();
                let dropins = attr(&fields, "dropins")
                    .split(',')
                    .filter(|d| !d.is_empty())
                    .map(String::from)
                    .collect();
                u.insert(
                    fields[2].to_string(),
                    UnitRow {
                        enabled,
                        contents_bytes,
                        dropins,
                    },
                );
            }
            _ => {}
        }
    }
    (f, u)
}

fn compare(scenario: &str, d: &TemplateData) {
    let (want_files, want_units) = index(scenario);
    assert!(!want_files.is_empty(), "no rows for {scenario}");
    let got = files(d);
    let got_paths: BTreeSet<&str> = got.iter().map(|f| f.path.as_str()).collect();
    let want_paths: BTreeSet<&str> = want_files.keys().map(String::as_str).collect();
    assert_eq!(got_paths, want_paths, "{scenario}: file paths");
    for f in &got {
        let w = &want_files[&f.path];
        assert_eq!(f.mode, w.mode, "{scenario}: mode of {}", f.path);
        assert_eq!(f.append, w.append, "{scenario}: append of {}", f.path);
        if let Some(n) = w.decoded_bytes {
            // Emptiness must match the measured run (e.g. OCP's empty bootstrap-pivot.sh).
            assert_eq!(
                f.contents.is_empty(),
                n == 0,
                "{scenario}: emptiness of {} (measured {n} bytes)",
                f.path
            );
        }
    }
    let got_units = units(d);
    let got_names: Vec<&str> = got_units.iter().map(|u| u.name.as_str()).collect();
    let want_names: Vec<&str> = want_units.keys().map(String::as_str).collect();
    let mut sorted = got_names.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, want_names, "{scenario}: unit names");
    for u in &got_units {
        let w = &want_units[&u.name];
        assert_eq!(u.enabled, w.enabled, "{scenario}: enabled of {}", u.name);
        assert_eq!(
            u.contents.as_ref().map(|c| c.is_empty()),
            w.contents_bytes.map(|n| n == 0),
            "{scenario}: contents of {}",
            u.name
        );
        let dropins: Vec<String> = u.dropins.iter().map(|d| d.name.clone()).collect();
        assert_eq!(dropins, w.dropins, "{scenario}: dropins of {}", u.name);
    }
}

#[test]
fn matches_reference_sno() {
    compare("sno", &data(false, false, true));
}

#[test]
fn matches_reference_okd_sno() {
    compare("okd-sno", &data(true, false, true));
}

#[test]
fn matches_reference_bootstrap_in_place() {
    compare("bip", &data(false, true, true));
    compare("okd-bip", &data(true, true, true));
}

#[test]
fn matches_reference_without_mirrors() {
    compare("exha", &data(false, false, false));
}

#[test]
fn measured_sizes_of_static_files() {
    let got = files(&data(false, false, true));
    let get = |p: &str| got.iter().find(|f| f.path == p).unwrap();
    assert_eq!(
        get("/etc/systemd/system.conf.d/10-default-env.conf").contents,
        b"[Manager]\n"
    );
    let mc = &get("/etc/ignition-machine-config-encapsulated.json").contents;
    assert_eq!(mc.len(), 193, "{}", String::from_utf8_lossy(mc));
    assert!(String::from_utf8_lossy(mc).contains("\"fips\": false"));
    assert_eq!(
        get("/root/.docker/config.json").contents,
        PULL_SECRET.as_bytes()
    );
    assert_eq!(
        get("/etc/pki/ca-trust/source/anchors/ca.crt").contents,
        CA.as_bytes()
    );
}

#[test]
fn paths_absolute_and_unique() {
    for (okd, bip) in [(false, false), (true, false), (false, true), (true, true)] {
        let got = files(&data(okd, bip, true));
        let mut seen = BTreeSet::new();
        for f in &got {
            assert!(f.path.starts_with('/'), "{} is not absolute", f.path);
            assert!(
                !f.path.contains("//") && !f.path.ends_with('/'),
                "{}",
                f.path
            );
            assert!(seen.insert(f.path.clone()), "duplicate {}", f.path);
        }
        let mut names = BTreeSet::new();
        for u in units(&data(okd, bip, true)) {
            assert!(names.insert(u.name.clone()), "duplicate unit {}", u.name);
        }
        assert_eq!(got.len(), if bip { 25 } else { 21 });
    }
}

fn have(cmd: &str) -> bool {
    Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {cmd}"))
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

fn is_shell(f: &BootstrapFile) -> bool {
    f.path.ends_with(".sh") && !f.contents.is_empty()
}

fn tmpdir(name: &str) -> std::path::PathBuf {
    let dir =
        std::env::temp_dir().join(format!("okd-bootstrap-files-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn shell_scripts_parse() {
    let dir = tmpdir("bash-n");
    let mut proxy = data(true, true, true);
    proxy.proxy = Some(ProxyStatus {
        http_proxy: "http://user:p%40ss@proxy.example:3128".into(),
        https_proxy: "http://proxy.example:3128".into(),
        no_proxy: ".cluster.local,10.0.0.0/16,it's".into(),
    });
    proxy.bootstrap_node_ip = Some("192.0.2.10".into());
    let mut count = 0;
    for d in [data(false, false, true), proxy] {
        for f in files(&d).iter().filter(|f| is_shell(f)) {
            let p = dir.join(f.path.trim_start_matches('/').replace('/', "_"));
            std::fs::write(&p, &f.contents).unwrap();
            let out = Command::new("bash")
                .arg("-n")
                .arg(&p)
                .output()
                .expect("bash");
            assert!(
                out.status.success(),
                "bash -n {}: {}",
                f.path,
                String::from_utf8_lossy(&out.stderr)
            );
            if f.path.starts_with("/usr/local/bin/") {
                assert!(
                    f.contents.starts_with(b"#!/usr/bin/env bash\n"),
                    "{} lacks a shebang",
                    f.path
                );
            }
            count += 1;
        }
    }
    assert!(count >= 30);
    let _ = std::fs::remove_dir_all(&dir);
}

fn script(d: &TemplateData, path: &str) -> Vec<u8> {
    files(d)
        .into_iter()
        .find(|f| f.path == path)
        .unwrap()
        .contents
}

/// A stand-in for `/usr/local/bin/okd-install` that prints its arguments.
fn fake_program(dir: &Path) -> PathBuf {
    let p = dir.join("okd-install");
    std::fs::write(&p, "#!/bin/sh\necho \"args: $*\"\n").unwrap();
    std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    p
}

#[test]
fn bootkube_hands_over_to_the_node_program_or_fails_loudly() {
    let dir = tmpdir("bootkube");
    let prog = fake_program(&dir);
    let run = |d: &TemplateData, program: &Path| {
        let p = dir.join("bootkube.sh");
        std::fs::write(&p, script(d, "/usr/local/bin/bootkube.sh")).unwrap();
        Command::new("bash")
            .arg(&p)
            .env("OKD_INSTALL_NODE_PROGRAM", program)
            .output()
            .unwrap()
    };
    let out = run(&data(false, false, true), &prog);
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "args: bootstrap bootkube\n"
    );
    let mut d = data(false, true, true);
    d.bootstrap_node_ip = Some("192.0.2.7".into());
    let out = run(&d, &prog);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "args: bootstrap bootkube --single-node --node-ip 192.0.2.7\n"
    );
    let out = run(&data(false, false, true), &dir.join("missing"));
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("this bootstrap.ign carries no okd-install program")
            && err.contains("release build"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn release_image_download_hands_over_to_the_node_program() {
    let dir = tmpdir("release-image-download");
    let bin = install_bin(&dir, &data(false, false, true));
    let prog = fake_program(&dir);
    let out = Command::new("bash")
        .arg(bin.join("release-image-download.sh"))
        .env("BOOTSTRAP_BIN_DIR", &bin)
        .env("OKD_INSTALL_NODE_PROGRAM", &prog)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "args: bootstrap release-image --release-image quay.io/openshift/okd:4.13.0-0.okd-2023-06-04-080300\n"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bootkube_service_runs_bootkube() {
    let u = units(&data(false, false, true))
        .into_iter()
        .find(|u| u.name == "bootkube.service")
        .unwrap();
    let c = u.contents.unwrap();
    assert!(c.contains("ExecStart=/usr/local/bin/bootkube.sh\n"));
    assert!(c.contains("ConditionPathExists=!/opt/openshift/.bootkube.done"));
    assert!(c.contains("WorkingDirectory=/opt/openshift"));
    assert!(c.contains("Requires=crio-configure.service"));
}

#[test]
fn release_image_prints_release() {
    let dir = tmpdir("release");
    let mut d = data(false, false, true);
    d.release_image = "quay.io/x/y@sha256:abc'quote".into();
    let p = dir.join("release-image.sh");
    std::fs::write(&p, script(&d, "/usr/local/bin/release-image.sh")).unwrap();
    let out = Command::new("bash").arg(&p).output().unwrap();
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "quay.io/x/y@sha256:abc'quote\n"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn approve_csr_runs_the_identity_checked_node_program_never_approve_all() {
    let dir = tmpdir("approve");
    let program = fake_program(&dir);
    let text = script(&data(false, false, true), "/usr/local/bin/approve-csr.sh");
    let shown = String::from_utf8_lossy(&text).into_owned();
    assert!(!shown.contains("certificate approve"), "{shown}");
    let p = dir.join("approve-csr.sh");
    std::fs::write(&p, &text).unwrap();
    let run = |program: &Path| {
        Command::new("bash")
            .arg(&p)
            .arg("/tmp/kubeconfig-loopback")
            .env("OKD_INSTALL_NODE_PROGRAM", program)
            .output()
            .unwrap()
    };
    let out = run(&program);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "args: bootstrap approve-csr --kubeconfig /tmp/kubeconfig-loopback\n"
    );
    // Without the program nothing is approved, and the message says where
    // to approve from.
    let out = run(&dir.join("missing"));
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("okd-install approve-csr --watch"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A checker for the TOML subset registries.conf uses: tables of arrays,
/// `key = "string"`, `key = true|false`, comments and blank lines. Returns
/// the (table path, key, value) triples.
fn parse_toml_subset(text: &str) -> Vec<(String, String, String)> {
    let mut table = String::new();
    let mut out = Vec::new();
    for (n, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(name) = line.strip_prefix("[[").and_then(|l| l.strip_suffix("]]")) {
            assert!(
                name.split('.').all(|s| !s.is_empty()
                    && s.chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')),
                "line {n}: bad table {name}"
            );
            if name.contains('.') {
                assert!(
                    name.starts_with(&format!("{table}."))
                        || table.starts_with(name.split('.').next().unwrap()),
                    "line {n}: sub-table {name} outside its parent"
                );
            }
            table = name.to_string();
            continue;
        }
        let (key, value) = line
            .split_once(" = ")
            .unwrap_or_else(|| panic!("line {n}: not key = value: {line}"));
        assert!(
            key.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'),
            "line {n}: bad key {key}"
        );
        let value = if value == "true" || value == "false" {
            value.to_string()
        } else {
            let inner = value
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .unwrap_or_else(|| panic!("line {n}: bad value {value}"));
            assert!(
                !inner.replace("\\\"", "").contains('"'),
                "line {n}: unescaped quote"
            );
            inner.replace("\\\"", "\"").replace("\\\\", "\\")
        };
        assert!(!table.is_empty(), "line {n}: key outside a table");
        out.push((table.clone(), key.to_string(), value));
    }
    out
}

#[test]
fn registries_conf_lists_every_mirror() {
    let d = data(false, false, true);
    let conf = String::from_utf8(script(&d, "/etc/containers/registries.conf")).unwrap();
    let kv = parse_toml_subset(&conf);
    for r in &d.registries {
        assert!(
            kv.iter()
                .any(|(t, k, v)| t == "registry" && k == "location" && v == &r.source),
            "{conf}"
        );
        for m in &r.mirrors {
            assert!(
                kv.iter()
                    .any(|(t, k, v)| t == "registry.mirror" && k == "location" && v == m),
                "{conf}"
            );
        }
    }
    let by_digest = kv
        .iter()
        .filter(|(t, k, v)| t == "registry" && k == "mirror-by-digest-only" && v == "true")
        .count();
    assert_eq!(by_digest, d.registries.len());
    assert!(
        script(
            &data(false, false, false),
            "/etc/containers/registries.conf"
        )
        .is_empty()
    );
}

#[test]
fn proxy_files() {
    let mut d = data(false, false, true);
    d.proxy = Some(ProxyStatus {
        http_proxy: "http://u:p%40ss@proxy:3128".into(),
        https_proxy: "http://proxy:3128".into(),
        no_proxy: ".cluster.local,api-int.okd.example".into(),
    });
    let env =
        String::from_utf8(script(&d, "/etc/systemd/system.conf.d/10-default-env.conf")).unwrap();
    assert!(
        env.starts_with("[Manager]\nDefaultEnvironment=HTTP_PROXY=\"http://u:p%%40ss@proxy:3128\""),
        "{env}"
    );
    assert!(env.contains("NO_PROXY=\".cluster.local,api-int.okd.example\""));
    let sh = String::from_utf8(script(&d, "/etc/profile.d/proxy.sh")).unwrap();
    let out = Command::new("bash")
        .arg("-c")
        .arg(format!("{sh}\necho \"$HTTP_PROXY|$HTTPS_PROXY|$NO_PROXY\""))
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "http://u:p%40ss@proxy:3128|http://proxy:3128|.cluster.local,api-int.okd.example\n"
    );
}

#[test]
fn systemd_units_verify() {
    if !have("systemd-analyze") {
        eprintln!("systemd-analyze not installed; skipping");
        return;
    }
    let dir = tmpdir("units");
    let mut paths = Vec::new();
    for u in units(&data(true, true, true)) {
        if let Some(c) = u.contents.as_ref().filter(|c| !c.is_empty()) {
            let p = dir.join(&u.name);
            std::fs::write(&p, c).unwrap();
            paths.push(p);
        }
        for d in &u.dropins {
            assert!(d.contents.starts_with('['), "{} {}", u.name, d.name);
            // Checked on its own for syntax (key and section names).
            let (base, kind) = u.name.rsplit_once('.').unwrap();
            let p = dir.join(format!(
                "{base}-{}.{kind}",
                d.name.trim_end_matches(".conf")
            ));
            std::fs::write(&p, &d.contents).unwrap();
            paths.push(p);
        }
    }
    let out = Command::new("systemd-analyze")
        .arg("verify")
        .args(&paths)
        .output()
        .unwrap();
    if std::env::var_os("SHOW_VERIFY").is_some() {
        eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    }
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // Missing binaries and dependencies are expected off the bootstrap node;
    // syntax problems are not.
    for line in text.lines() {
        let l = line.to_ascii_lowercase();
        assert!(
            !(l.contains("unknown key")
                || l.contains("unknown section")
                || l.contains("invalid")
                || l.contains("failed to parse")),
            "{text}"
        );
    }
    let _ = std::fs::remove_dir_all(Path::new(&dir));
}

/// Writes every `/usr/local/bin` script of `d` into `dir/bin` (executable)
/// and returns that directory.
fn install_bin(dir: &Path, d: &TemplateData) -> std::path::PathBuf {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    for f in files(d) {
        if let Some(name) = f.path.strip_prefix("/usr/local/bin/") {
            std::fs::write(bin.join(name), &f.contents).unwrap();
        }
    }
    Command::new("chmod")
        .arg("-R")
        .arg("+x")
        .arg(&bin)
        .status()
        .unwrap();
    bin
}

#[test]
fn report_progress_runs_the_node_program() {
    let dir = tmpdir("progress");
    let bin = install_bin(&dir, &data(false, false, true));
    let out = Command::new("bash")
        .arg(bin.join("report-progress.sh"))
        .arg("/opt/openshift/auth/kubeconfig")
        .env("OKD_INSTALL_NODE_PROGRAM", fake_program(&dir))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "args: bootstrap report-progress --kubeconfig /opt/openshift/auth/kubeconfig\n"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn install_to_disk_uses_the_installation_disk() {
    let d = data(false, true, true);
    let s = String::from_utf8(script(&d, "/usr/local/bin/install-to-disk.sh")).unwrap();
    assert!(s.contains("INSTALLATION_DISK='/dev/sda'"), "{s}");
    assert!(s.contains(
        "\"${COREOS_INSTALLER}\" install -n -i /opt/openshift/master.ign \"${EXTRA_ARGS[@]}\" \"${INSTALLATION_DISK}\""
    ), "{s}");
    // Without the hooks: coreos-installer from PATH and shutdown's reboot,
    // as openshift/installer's install-to-disk.sh.
    assert!(s.contains("COREOS_INSTALLER=\"${OKD_INSTALL_COREOS_INSTALLER:-coreos-installer}\""));
    assert!(s.contains("shutdown -r +1 \"Bootstrap completed, server is going to reboot.\""));
}

/// bootstrap-cluster-gather.sh leaves a note saying why it gathered no API
/// objects: no client on PATH; a kubeconfig that is missing; an API (real
/// kubectl, a closed port on 127.0.0.1) that does not answer.
#[test]
fn cluster_gather_writes_a_note_when_it_cannot_reach_the_api() {
    let dir = tmpdir("cluster-gather");
    let bin = install_bin(&dir, &data(false, false, true));
    let script = bin.join("bootstrap-cluster-gather.sh");
    let run = |out: &Path, path: &str, kubeconfig: &Path| {
        let o = Command::new("/bin/bash")
            .arg(&script)
            .arg(out)
            .env("PATH", path)
            .env("GATHER_KUBECONFIG", kubeconfig)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        std::fs::read_to_string(out.join("resources/not-gathered.txt")).unwrap_or_default()
    };
    // No oc, no kubectl: only the basic tools on PATH.
    let tools = dir.join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    for t in ["mkdir", "cat", "rm", "tail", "tr", "gzip", "grep", "mktemp"] {
        if let Some(p) = ["/usr/bin", "/bin"]
            .iter()
            .map(|d| Path::new(d).join(t))
            .find(|p| p.exists())
        {
            std::os::unix::fs::symlink(p, tools.join(t)).unwrap();
        }
    }
    let note = run(
        &dir.join("a"),
        tools.to_str().unwrap(),
        &dir.join("kubeconfig"),
    );
    assert!(note.contains("neither oc nor kubectl"), "{note}");

    let Some(kubectl) =
        okd_test_utils::tool("kubectl", &["/usr/bin/kubectl"], Some("kubernetes-client"))
    else {
        return;
    };
    std::os::unix::fs::symlink(&kubectl, tools.join("kubectl")).unwrap();
    let note = run(&dir.join("b"), tools.to_str().unwrap(), &dir.join("absent"));
    assert!(note.contains("no kubeconfig at"), "{note}");

    let port = okd_test_utils::free_tcp_port();
    let kubeconfig = dir.join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:{port}\n    insecure-skip-tls-verify: true\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\ncurrent-context: c\nusers:\n- name: u\n  user:\n    token: t\n"
        ),
    )
    .unwrap();
    let start = std::time::Instant::now();
    let note = run(&dir.join("c"), tools.to_str().unwrap(), &kubeconfig);
    assert!(
        note.contains(&format!(
            "the API at https://127.0.0.1:{port} did not answer"
        )),
        "{note}"
    );
    assert!(note.contains("kubectl with"), "{note}");
    assert!(start.elapsed() < std::time::Duration::from_secs(30));
    let objects: Vec<_> = std::fs::read_dir(dir.join("c/resources"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(objects, ["not-gathered.txt"], "nothing else is left");
    let _ = std::fs::remove_dir_all(&dir);
}
