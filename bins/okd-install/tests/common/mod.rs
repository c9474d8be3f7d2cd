//! Shared harness for the binary-level tests: run `okd-install` in a temporary
//! copy of an example, find the real programs, decode Ignition configs.
#![allow(dead_code)]

pub mod bootlab;
pub mod browser;
pub mod contract;
pub mod dashboard;
pub mod guest;
pub mod kube;
pub mod manifests;
pub mod netns;
pub mod node;
pub mod payload;
pub mod preflight;
pub mod serve;
pub mod stage_times;

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use base64::Engine as _;
use serde_json::Value;

/// Repository root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// OCP 4.13, the release the reference data was measured on.
pub const OCP_413: &str = "quay.io/openshift-release-dev/ocp-release:4.13.0-x86_64";
/// OCP 4.14, the first release with imageDigestSources.
pub const OCP_414: &str = "quay.io/openshift-release-dev/ocp-release:4.14.0-x86_64";
/// The OKD 4.5 release of the examples' guides (Ignition spec 3.0.0).
pub const OKD_45: &str = "quay.io/openshift/okd:4.5.0-0.okd-2020-08-12-020541";

/// A fresh temp dir holding `examples/<name>/install-config.yaml`.
pub fn example_dir(name: &str) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    std::fs::copy(
        repo()
            .join("examples")
            .join(name)
            .join("install-config.yaml"),
        d.path().join("install-config.yaml"),
    )
    .unwrap();
    d
}

/// A stand-in for the node program bootstrap.ign carries: an ELF header
/// and 1.5 MiB that gzip cannot shrink, so its data URL is over the 1 MiB
/// that okd-install keeps out of memory and streams into the file.
pub fn node_program_stand_in(path: &Path) {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut bytes = b"\x7fELF".to_vec();
    bytes.extend((0..3 << 19).map(|_| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x as u8
    }));
    std::fs::write(path, bytes).unwrap();
}

/// Where [`create_carrying_a_program`] keeps the stand-in program, under
/// the asset directory (its cache is beside it).
pub const NODE_PROGRAM_STAND_IN: &str = ".node-program-test/okd-install";

/// `okd-install create ignition-configs` (plus `args`) in `dir`, with
/// bootstrap.ign carrying [`node_program_stand_in`] as a release build
/// carries itself (streamed in from a cache), so what reads bootstrap.ign
/// reads a file with a data URL over 1 MiB.
pub fn create_carrying_a_program(dir: &Path, args: &[&str]) {
    let program = dir.join(NODE_PROGRAM_STAND_IN);
    std::fs::create_dir_all(program.parent().unwrap()).unwrap();
    node_program_stand_in(&program);
    let out = Command::new(env!("CARGO_BIN_EXE_okd-install"))
        .args(["create", "ignition-configs"])
        .args(args)
        .arg("--dir")
        .arg(dir)
        .env("OKD_INSTALL_NODE_BINARY", &program)
        .env("OKD_INSTALL_CACHE_DIR", program.with_file_name("cache"))
        .env_remove("OPENSHIFT_INSTALL_RELEASE_IMAGE_OVERRIDE")
        .output()
        .expect("run okd-install");
    assert!(
        out.status.success(),
        "create ignition-configs: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Runs okd-install with `args` plus `--dir dir`.
pub fn okd(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_okd-install"))
        .args(args)
        .arg("--dir")
        .arg(dir)
        .env_remove("OPENSHIFT_INSTALL_RELEASE_IMAGE_OVERRIDE")
        .output()
        .expect("run okd-install")
}

/// Runs okd-install and asserts success, returning stderr.
pub fn okd_ok(dir: &Path, args: &[&str]) -> String {
    let out = okd(dir, args);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "okd-install {args:?} failed: {err}");
    err
}

/// Finds a program; `None` (after a loud message) when missing, unless
/// `OKD_REQUIRE_TOOLS=1` (CI), where a missing tool fails the test.
pub fn tool(name: &str, paths: &[&str]) -> Option<PathBuf> {
    okd_test_utils::tool(name, paths, None)
}

/// Reads and parses an Ignition config file.
pub fn read_ign(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// Decodes a `data:` URL (base64 or percent-encoded).
pub fn decode_data_url(src: &str) -> Vec<u8> {
    let (meta, data) = src.strip_prefix("data:").unwrap().split_once(',').unwrap();
    if meta.ends_with(";base64") {
        base64::engine::general_purpose::STANDARD
            .decode(data)
            .unwrap()
    } else {
        let b = data.as_bytes();
        let mut out = Vec::new();
        let mut i = 0;
        while i < b.len() {
            if b[i] == b'%' {
                out.push(
                    u8::from_str_radix(std::str::from_utf8(&b[i + 1..i + 3]).unwrap(), 16).unwrap(),
                );
                i += 3;
            } else {
                out.push(b[i]);
                i += 1;
            }
        }
        out
    }
}

/// The storage files of an Ignition config: path → (mode, contents, append?).
pub fn ign_files(ign: &Value) -> BTreeMap<String, (u32, Vec<u8>, bool)> {
    let mut m = BTreeMap::new();
    for f in ign
        .pointer("/storage/files")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
    {
        let path = f["path"].as_str().unwrap().to_string();
        let mode = f["mode"].as_u64().unwrap_or(0) as u32;
        if let Some(src) = f.pointer("/contents/source").and_then(Value::as_str) {
            m.insert(path, (mode, decode_data_url(src), false));
        } else if let Some(app) = f.get("append").and_then(Value::as_array) {
            let data = app
                .iter()
                .filter_map(|a| a["source"].as_str())
                .flat_map(decode_data_url)
                .collect();
            m.insert(path, (mode, data, true));
        } else {
            m.insert(path, (mode, Vec::new(), false));
        }
    }
    m
}

/// Mode bits of a path.
pub fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
}

/// Every file and directory below `dir`, relative, sorted (directories end in `/`).
pub fn tree(dir: &Path) -> Vec<String> {
    fn walk(base: &Path, d: &Path, out: &mut Vec<String>) {
        let mut ents: Vec<_> = std::fs::read_dir(d)
            .unwrap()
            .filter_map(|e| e.ok())
            .collect();
        ents.sort_by_key(|e| e.file_name());
        for e in ents {
            let rel = e.path().strip_prefix(base).unwrap().display().to_string();
            if e.file_type().unwrap().is_dir() {
                out.push(format!("{rel}/"));
                walk(base, &e.path(), out);
            } else {
                out.push(rel);
            }
        }
    }
    let mut v = Vec::new();
    walk(dir, dir, &mut v);
    v
}

/// Reads a reference TSV from tests-data/reference (header row skipped, `#` lines skipped).
pub fn reference_rows(file: &str) -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(repo().join("tests-data/reference").join(file)).unwrap();
    let mut lines = text.lines().filter(|l| !l.starts_with('#'));
    if file != "ignition-index.tsv" {
        lines.next();
    }
    lines
        .map(|l| l.split('\t').map(String::from).collect())
        .collect()
}

/// A minimal root that Ignition's files stage accepts (passwd, group, shadow,
/// gshadow, SELinux disabled) plus a directory with a stub `setfiles`
/// (what coreos/ignition's `-platform=file` run needs, as measured with Debian's
/// `ignition` 2.14). Returns (root, run dir for cache/state, stub bin dir).
pub fn ignition_root(base: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let (root, run, stub) = (base.join("root"), base.join("run"), base.join("stubbin"));
    for d in [
        root.join("etc/selinux"),
        root.join("home"),
        run.clone(),
        stub.clone(),
    ] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::write(root.join("etc/passwd"), "root:x:0:0:root:/root:/bin/bash\n").unwrap();
    std::fs::write(root.join("etc/group"), "root:x:0:\n").unwrap();
    std::fs::write(root.join("etc/shadow"), "root:*:19000:0:99999:7:::\n").unwrap();
    std::fs::write(root.join("etc/gshadow"), "root:*::\n").unwrap();
    std::fs::write(
        root.join("etc/selinux/config"),
        "SELINUX=disabled\nSELINUXTYPE=targeted\n",
    )
    .unwrap();
    std::fs::write(stub.join("setfiles"), "#!/bin/sh\ncat >/dev/null\nexit 0\n").unwrap();
    std::fs::set_permissions(
        stub.join("setfiles"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    (root, run, stub)
}

/// A signer profile (OU openshift, CN `cn`, cert-sign) valid for `validity`.
pub fn ca_config(cn: &str, validity: std::time::Duration) -> okd_pki::CertConfig {
    okd_pki::CertConfig::signer("openshift", cn, validity)
}
