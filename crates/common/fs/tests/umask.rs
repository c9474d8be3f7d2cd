//! Modes are exact whatever the umask: this test binary sets the process umask
//! (one test only, so no other test sees it).

use std::io::Write as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

use rustix::fs::Mode;

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
}

#[test]
fn modes_are_exact_under_umask_000_and_077() {
    let d = tempfile::tempdir().unwrap();
    for (i, umask) in [0o000, 0o077].into_iter().enumerate() {
        rustix::process::umask(Mode::from_raw_mode(umask));
        let root = d.path().join(format!("u{i}"));
        let dir = root.join("new/deeper");
        okd_fs::create_dir_all(&dir, 0o750).unwrap();
        assert_eq!(mode(&root), 0o750, "umask {umask:o}");
        assert_eq!(mode(&dir), 0o750, "umask {umask:o}");
        let f = root.join("auth/kubeconfig");
        okd_fs::write_atomic(&f, b"secret", 0o640).unwrap();
        assert_eq!(mode(&f), 0o640, "umask {umask:o}");
        assert_eq!(mode(&root.join("auth")), 0o750, "umask {umask:o}");
        let log = root.join(".openshift_install.log");
        let mut l = okd_fs::open_append(&log, 0o640).unwrap();
        writeln!(l, "line").unwrap();
        assert_eq!(mode(&log), 0o640, "umask {umask:o}");
        // A log left 0644 by an older version is narrowed before the next write.
        std::fs::set_permissions(&log, std::fs::Permissions::from_mode(0o644)).unwrap();
        drop(okd_fs::open_append(&log, 0o640).unwrap());
        assert_eq!(mode(&log), 0o640, "umask {umask:o}");
    }
    rustix::process::umask(Mode::from_raw_mode(0o022));
}
