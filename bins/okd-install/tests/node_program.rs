//! The okd-install program bootstrap.ign carries to the bootstrap node
//! (okd-assets `node_program`, docs/differences.md "The bootstrap node's
//! program"): a release-style build of it (this okd-install, stripped, as
//! the bootstrap end-to-end tests carry it) travels once, compressed once per
//! program, within a stated size; the state file holds no copy; the program
//! is an input of the asset graph, so a changed program makes bootstrap.ign
//! again and nothing else.

mod common;

use std::io::Read as _;
use std::path::Path;
use std::process::{Command, Output};

use common::{example_dir, tool};

const BIN: &str = env!("CARGO_BIN_EXE_okd-install");

/// bootstrap.ign apart from the program: at most this many bytes.
const REST_LIMIT: u64 = 1 << 20;
/// The state file: at most this many bytes (it holds a placeholder, not
/// the program; openshift-install's state shape keeps the whole config).
const STATE_LIMIT: u64 = 2 << 20;
/// The program's data URL (gzip level 1, base64): at most this fraction of
/// the program's size (measured 0.49 for the stripped debug build, 0.62 for
/// a release build; base64 without compression would be 1.33).
const DATA_URL_RATIO: f64 = 0.7;

fn create(dir: &Path, program: &Path, cache: &Path) -> (Output, String) {
    let out = Command::new(BIN)
        .args(["create", "ignition-configs", "--dir"])
        .arg(dir)
        .env("OKD_INSTALL_NODE_BINARY", program)
        .env("OKD_INSTALL_CACHE_DIR", cache)
        .env_remove("OPENSHIFT_INSTALL_RELEASE_IMAGE_OVERRIDE")
        .output()
        .expect("run okd-install");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "create ignition-configs: {err}");
    (out, err)
}

fn len(p: &Path) -> u64 {
    std::fs::metadata(p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .len()
}

fn blobs(cache: &Path) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(cache.join("blobs"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    v.sort();
    v
}

fn sha512_hex(data: &[u8]) -> String {
    aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA512, data)
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The program bootstrap.ign at `ign` carries, and its verification hash.
fn carried(ign: &Path) -> (Vec<u8>, String) {
    let cfg: serde_json::Value = serde_json::from_slice(&std::fs::read(ign).unwrap()).unwrap();
    let files = cfg["storage"]["files"].as_array().unwrap();
    let entries: Vec<_> = files
        .iter()
        .filter(|f| f["path"] == "/usr/local/bin/okd-install")
        .collect();
    assert_eq!(entries.len(), 1, "the program travels once");
    let c = &entries[0]["contents"];
    assert_eq!(c["compression"], "gzip");
    assert_eq!(entries[0]["mode"], 0o755);
    let gz = okd_types::dataurl::decode(c["source"].as_str().unwrap()).unwrap();
    let mut prog = Vec::new();
    flate2::read::GzDecoder::new(gz.as_slice())
        .read_to_end(&mut prog)
        .unwrap();
    let hash = c["verification"]["hash"].as_str().unwrap().to_string();
    (prog, hash)
}

#[test]
fn the_node_program_travels_once_within_its_size_and_is_an_input() {
    let Some(strip) = tool("strip", &["/usr/bin/strip"]) else {
        return;
    };
    let t = tempfile::tempdir().unwrap();
    let program = t.path().join("okd-install-node");
    let out = Command::new(strip)
        .arg("-o")
        .arg(&program)
        .arg(BIN)
        .output()
        .unwrap();
    assert!(out.status.success(), "strip: {out:?}");
    let cache = t.path().join("cache");

    // A fresh directory: the program is compressed, once.
    let a = example_dir("baremetal-ha");
    let (_, err) = create(a.path(), &program, &cache);
    assert!(
        err.contains("Compressing the okd-install program for the bootstrap node"),
        "{err}"
    );
    let stored = blobs(&cache);
    assert_eq!(stored.len(), 1, "{stored:?}");
    let (url, prog, ign) = (
        len(&stored[0]),
        len(&program),
        len(&a.path().join("bootstrap.ign")),
    );
    eprintln!(
        "program {prog} bytes, its data URL {url} bytes, bootstrap.ign {ign} bytes, state file {} bytes",
        len(&a.path().join(".openshift_install_state.json"))
    );
    assert!(
        (url as f64) <= DATA_URL_RATIO * prog as f64,
        "the data URL is {url} bytes for a {prog}-byte program"
    );
    assert!(
        ign <= url + REST_LIMIT,
        "bootstrap.ign is {ign} bytes: more than the program's {url} and {REST_LIMIT}"
    );
    assert!(len(&a.path().join(".openshift_install_state.json")) <= STATE_LIMIT);
    let (got, hash) = carried(&a.path().join("bootstrap.ign"));
    let want = std::fs::read(&program).unwrap();
    assert!(got == want, "the carried program differs from the program");
    assert_eq!(hash, format!("sha512-{}", sha512_hex(&want)));

    // Another fresh directory: the cache answers, nothing is compressed.
    let b = example_dir("baremetal-ha");
    let (_, err) = create(b.path(), &program, &cache);
    assert!(!err.contains("Compressing"), "{err}");
    assert_eq!(blobs(&cache), stored);

    // The same directory again: every file as it was, nothing discarded.
    let snapshot = |d: &Path| {
        [
            "bootstrap.ign",
            "master.ign",
            "worker.ign",
            "auth/kubeconfig",
        ]
        .map(|f| std::fs::read(d.join(f)).unwrap())
    };
    let before = snapshot(b.path());
    let (_, err) = create(b.path(), &program, &cache);
    assert!(
        !err.contains("level=warn") && !err.contains("Compressing"),
        "{err}"
    );
    assert!(snapshot(b.path()) == before, "a re-run changed a file");

    // A changed program: bootstrap.ign made again with it, nothing else.
    let program2 = t.path().join("okd-install-node-2");
    let mut bytes = want;
    bytes.extend_from_slice(b"another build");
    std::fs::write(&program2, &bytes).unwrap();
    let (_, err) = create(b.path(), &program2, &cache);
    assert!(
        err.contains("the okd-install program for the bootstrap node changed"),
        "{err}"
    );
    let after = snapshot(b.path());
    assert!(after[0] != before[0], "bootstrap.ign was not made again");
    assert!(after[1..] == before[1..], "more than bootstrap.ign changed");
    let (got, hash) = carried(&b.path().join("bootstrap.ign"));
    assert!(got == bytes);
    assert_eq!(hash, format!("sha512-{}", sha512_hex(&bytes)));

    // The cache emptied: the program is compressed again, the same file.
    std::fs::remove_dir_all(&cache).unwrap();
    let (_, err) = create(b.path(), &program2, &cache);
    assert!(err.contains("Compressing"), "{err}");
    assert!(snapshot(b.path()) == after, "{err}");
}
