//! Fault (issue #21): the master's control-plane program killed while it
//! writes a revision. A child process (this test binary again) applies a
//! bundle of many files; it is killed with SIGKILL once some of them are
//! written. Then: every file it wrote is whole (each is written to a
//! temporary file and renamed), the revision is not recorded, and the next
//! run writes the whole bundle, removes the killed run's temporary files,
//! records the revision, and a run after that writes nothing.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use okd_control_plane_installer::{REVISION_FILE, applied, apply};
use okd_types::control_plane::{Bundle, BundleFile};

const NODE: &str = "master-0";
const FILES: usize = 3000;
const DIR: &str = "/etc/kubernetes/static-pod-resources/okd-control-plane";

/// File `i`'s contents: 16 KiB that differ from file to file.
fn content(i: usize) -> Vec<u8> {
    (0..16 * 1024).map(|j| ((i * 7 + j) % 251) as u8).collect()
}

fn bundle() -> Bundle {
    Bundle {
        revision: 1,
        node: NODE.into(),
        files: (0..FILES)
            .map(|i| BundleFile::new(format!("{DIR}/file-{i:04}.crt"), 0o644, &content(i)))
            .collect(),
    }
}

fn dir(root: &Path) -> PathBuf {
    root.join(DIR.trim_start_matches('/'))
}

/// The files of the bundle present under `root`, and the temporary files.
fn present(root: &Path) -> (Vec<usize>, Vec<String>) {
    let mut done = Vec::new();
    let mut temps = Vec::new();
    for e in std::fs::read_dir(dir(root)).into_iter().flatten() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        if let Some(i) = name
            .strip_prefix("file-")
            .and_then(|r| r.strip_suffix(".crt"))
            .and_then(|n| n.parse().ok())
        {
            done.push(i);
        } else {
            temps.push(name);
        }
    }
    done.sort_unstable();
    (done, temps)
}

/// The child: applies the bundle under `OKD_CPI_ROOT`.
#[test]
#[ignore = "the child process of the kill test"]
fn apply_child() {
    let root = PathBuf::from(std::env::var("OKD_CPI_ROOT").expect("OKD_CPI_ROOT"));
    apply(&root, NODE, &bundle()).unwrap();
}

#[test]
fn a_run_killed_mid_apply_leaves_whole_files_and_the_next_run_finishes_the_revision() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--ignored", "--exact", "apply_child", "--test-threads=1"])
        .env("OKD_CPI_ROOT", root)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Killed once a tenth of the files are there.
    let start = Instant::now();
    loop {
        if present(root).0.len() >= FILES / 10 {
            break;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "the child ended before a tenth of its files were written"
        );
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the child wrote {} files in 60 s",
            present(root).0.len()
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    child.kill().unwrap();
    child.wait().unwrap();

    let (written, _) = present(root);
    assert!(
        written.len() < FILES,
        "killed before the end: {} of {FILES} files",
        written.len()
    );
    for i in &written {
        let data = std::fs::read(dir(root).join(format!("file-{i:04}.crt"))).unwrap();
        assert!(data == content(*i), "file {i} is whole");
    }
    assert_eq!(applied(root), 0, "the revision is recorded only at the end");
    assert!(!root.join("etc/kubernetes").join(REVISION_FILE).exists());

    // The unit starts the program again.
    assert!(apply(root, NODE, &bundle()).unwrap());
    let (written, temps) = present(root);
    assert_eq!(written.len(), FILES);
    assert!(temps.is_empty(), "temporary files left: {temps:?}");
    for i in 0..FILES {
        let data = std::fs::read(dir(root).join(format!("file-{i:04}.crt"))).unwrap();
        assert!(data == content(i), "file {i}");
    }
    assert_eq!(applied(root), 1);
    assert!(
        !apply(root, NODE, &bundle()).unwrap(),
        "the same revision again writes nothing"
    );
}
