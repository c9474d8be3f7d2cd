//! okd-fs against the real file system: atomic writes, exact modes, the
//! directory lock and the sweep of leftovers.

use std::os::unix::fs::{PermissionsExt as _, symlink};
use std::path::Path;

use okd_fs::{DirLock, FsError, LOCK_FILE, PARTIAL_PREFIX, TEMP_PREFIX};

fn mode(p: &Path) -> u32 {
    std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777
}

#[test]
fn write_atomic_replaces_the_file_and_leaves_no_temporary_behind() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("sub/dir/file");
    okd_fs::write_atomic(&p, b"one", 0o600).unwrap();
    okd_fs::write_atomic(&p, b"two", 0o640).unwrap();
    assert_eq!(std::fs::read(&p).unwrap(), b"two");
    assert_eq!(mode(&p), 0o640);
    let names: Vec<String> = std::fs::read_dir(p.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, vec!["file".to_string()]);
}

/// The streaming writer keeps the old file when the stream fails half-way
/// (no partial file, no temporary left) and gives the exact mode on success.
#[test]
fn write_atomic_with_keeps_the_old_file_when_filling_fails() {
    use std::io::Write as _;
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("bundle.tar.gz");
    okd_fs::write_atomic(&p, b"old", 0o644).unwrap();
    let e = okd_fs::write_atomic_with(&p, 0o600, |f| {
        f.write_all(b"partial").map_err(|e| FsError::Io {
            action: "writing",
            path: p.clone(),
            source: e,
        })?;
        Err(FsError::Io {
            action: "reading the stream for",
            path: p.clone(),
            source: std::io::Error::other("connection lost"),
        })
    })
    .unwrap_err();
    assert!(e.to_string().contains("reading the stream"), "{e}");
    assert_eq!(std::fs::read(&p).unwrap(), b"old");
    assert_eq!(mode(&p), 0o644);
    let names: Vec<String> = std::fs::read_dir(d.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(
        names,
        vec!["bundle.tar.gz".to_string()],
        "a temporary was left"
    );

    okd_fs::write_atomic_with(&p, 0o600, |f| {
        f.write_all(b"new").map_err(|e| FsError::Io {
            action: "writing",
            path: p.clone(),
            source: e,
        })
    })
    .unwrap();
    assert_eq!(std::fs::read(&p).unwrap(), b"new");
    assert_eq!(mode(&p), 0o600);
}

#[test]
fn write_atomic_names_the_path_when_the_directory_is_a_file() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("f"), b"").unwrap();
    let e = okd_fs::write_atomic(&d.path().join("f/x"), b"", 0o640).unwrap_err();
    assert!(matches!(e, FsError::Io { .. }), "{e:?}");
    assert!(e.to_string().contains("/f"), "{e}");
}

#[test]
fn lock_is_exclusive_names_the_holder_and_is_released_on_drop() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("assets");
    let held = DirLock::acquire(&dir).unwrap();
    assert_eq!(mode(&dir), 0o750);
    assert_eq!(
        std::fs::read_to_string(dir.join(LOCK_FILE)).unwrap().trim(),
        std::process::id().to_string()
    );
    // flock(2) treats two open(2)s independently even in one process.
    match DirLock::acquire(&dir) {
        Err(FsError::Locked { pid, dir: d2 }) => {
            assert_eq!(pid, Some(std::process::id()));
            assert_eq!(d2, dir);
        }
        other => panic!("second lock: {other:?}"),
    }
    let msg = DirLock::acquire(&dir).unwrap_err().to_string();
    assert!(
        msg.contains(&format!("process {}", std::process::id())) && msg.contains("assets"),
        "{msg}"
    );
    drop(held);
    let again = DirLock::acquire(&dir).unwrap();
    assert_eq!(again.path(), dir.join(LOCK_FILE));
}

#[test]
fn sweep_removes_only_leftover_temporaries() {
    let d = tempfile::tempdir().unwrap();
    let r = d.path();
    std::fs::create_dir_all(r.join("manifests")).unwrap();
    std::fs::create_dir_all(r.join("blobs/sha256")).unwrap();
    std::fs::create_dir_all(r.join("a/b/c")).unwrap();
    let leftovers = [
        r.join(format!("{TEMP_PREFIX}abc")),
        r.join(format!("manifests/{TEMP_PREFIX}x1")),
        r.join(format!("blobs/sha256/{PARTIAL_PREFIX}77")),
    ];
    let keep = [
        r.join("install-config.yaml"),
        r.join("manifests/cvo-overrides.yaml"),
        r.join("blobs/sha256/0123"),
        // Deeper than max_depth.
        r.join(format!("a/b/c/{TEMP_PREFIX}deep")),
    ];
    for p in leftovers.iter().chain(&keep) {
        std::fs::write(p, b"x").unwrap();
    }
    // A symlink with the prefix is not removed, nor is its target.
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("t"), b"x").unwrap();
    symlink(
        outside.path().join("t"),
        r.join(format!("{TEMP_PREFIX}link")),
    )
    .unwrap();
    let removed = okd_fs::sweep_temp_files(r, &[TEMP_PREFIX, PARTIAL_PREFIX], 2).unwrap();
    let mut want = leftovers.to_vec();
    want.sort();
    assert_eq!(removed, want);
    for p in &leftovers {
        assert!(!p.exists(), "{} still there", p.display());
    }
    for p in &keep {
        assert!(p.exists(), "{} removed", p.display());
    }
    assert!(r.join(format!("{TEMP_PREFIX}link")).is_symlink());
    assert!(outside.path().join("t").exists());
    assert!(
        okd_fs::sweep_temp_files(&r.join("missing"), &[TEMP_PREFIX], 3)
            .unwrap()
            .is_empty()
    );
}
