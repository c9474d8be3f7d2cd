//! Step 1, laying down the temporary control plane, after
//! openshift/cluster-bootstrap `pkg/start/bootstrap.go`
//! (`bootstrapControlPlane.Start`, `copyDirectory`, `copyFile`):
//! `<asset-dir>/tls/` replaces the bootstrap secrets directory (files
//! 0600, directories 0700), `<asset-dir>/auth/kubeconfig-loopback` becomes
//! its `kubeconfig`, and `<asset-dir>/bootstrap-manifests/` goes into the
//! kubelet's static pod directory.
//!
//! Unlike upstream, which refuses a static pod manifest that is already
//! there (`O_EXCL`), a manifest with the same bytes is left alone and one
//! with other bytes is replaced atomically, so a run restarted after a
//! crash (no teardown ran) goes on. Every file is written through
//! `okd_fs::write_atomic`, so the kubelet never sees half a manifest.
//! Contents are never logged.

use std::path::{Path, PathBuf};

use tracing::info;

use crate::{Error, Options};

/// What step 1 wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LaidDown {
    /// Every file written below the bootstrap secrets directory.
    pub secrets: Vec<PathBuf>,
    /// Every static pod manifest in the kubelet's directory that came from
    /// `bootstrap-manifests/`: the files a teardown removes (upstream's
    /// `ownedManifests`).
    pub static_pods: Vec<PathBuf>,
}

/// The teardown: removes the bootstrap secrets directory and every static
/// pod of `laid`; missing files are no error (it may run again).
///
/// # Errors
/// [`Error::Io`] naming the path that could not be removed.
pub(crate) fn tear_down(opts: &Options, laid: &LaidDown) -> Result<(), Error> {
    info!("Tearing down temporary bootstrap control plane...");
    match std::fs::remove_dir_all(&opts.bootstrap_secrets_dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(Error::io("removing", &opts.bootstrap_secrets_dir, e)),
    }
    for p in &laid.static_pods {
        match std::fs::remove_file(p) {
            Ok(()) => info!("removed {}", p.display()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io("removing", p, e)),
        }
    }
    Ok(())
}

/// Runs step 1 for `opts`.
///
/// # Errors
/// [`Error::Io`] or [`Error::Fs`] naming the file or directory.
pub(crate) fn lay_down(opts: &Options) -> Result<LaidDown, Error> {
    info!("Starting temporary bootstrap control plane...");
    let secrets_dir = &opts.bootstrap_secrets_dir;
    match std::fs::remove_dir_all(secrets_dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(Error::io("removing", secrets_dir, e)),
    }
    let mut out = LaidDown::default();
    copy_tree(
        &opts.asset_dir.join(ASSET_TLS),
        secrets_dir,
        &mut out.secrets,
        true,
    )?;
    let kc = opts.asset_dir.join(ASSET_KUBECONFIG);
    let bytes = std::fs::read(&kc).map_err(|e| Error::io("reading", &kc, e))?;
    let dst = secrets_dir.join("kubeconfig");
    okd_fs::write_atomic(&dst, &bytes, 0o600)?;
    out.secrets.push(dst);
    info!(
        "Copied {} files to {}",
        out.secrets.len(),
        secrets_dir.display()
    );
    let manifests = opts.asset_dir.join(ASSET_BOOTSTRAP_MANIFESTS);
    info!(
        "Copying static manifests from: {} to: {}",
        manifests.display(),
        opts.pod_manifest_dir.display()
    );
    copy_tree(
        &manifests,
        &opts.pod_manifest_dir,
        &mut out.static_pods,
        false,
    )?;
    info!(
        "Successfully copied static pod manifests: {:?}",
        out.static_pods
    );
    Ok(out)
}

/// `<asset-dir>/tls`.
pub const ASSET_TLS: &str = "tls";
/// `<asset-dir>/auth/kubeconfig-loopback` (upstream's
/// `assetPathAdminKubeConfig`, `pkg/start/asset.go`).
pub const ASSET_KUBECONFIG: &str = "auth/kubeconfig-loopback";
/// `<asset-dir>/bootstrap-manifests`.
pub const ASSET_BOOTSTRAP_MANIFESTS: &str = "bootstrap-manifests";
/// `<asset-dir>/manifests`.
pub const ASSET_MANIFESTS: &str = "manifests";

/// Copies every file below `src` to the same place below `dst`, creating
/// directories 0700; `always` rewrites files whose bytes are the same.
fn copy_tree(src: &Path, dst: &Path, out: &mut Vec<PathBuf>, always: bool) -> Result<(), Error> {
    okd_fs::create_dir_all(dst, 0o700)?;
    let mut entries: Vec<PathBuf> = std::fs::read_dir(src)
        .map_err(|e| Error::io("reading directory", src, e))?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()
        .map_err(|e| Error::io("reading directory", src, e))?;
    entries.sort();
    for from in entries {
        let Some(name) = from.file_name() else {
            continue;
        };
        let to = dst.join(name);
        let meta = std::fs::metadata(&from).map_err(|e| Error::io("reading", &from, e))?;
        if meta.is_dir() {
            copy_tree(&from, &to, out, always)?;
            continue;
        }
        let bytes = std::fs::read(&from).map_err(|e| Error::io("reading", &from, e))?;
        let same = !always && std::fs::read(&to).is_ok_and(|b| b == bytes);
        if !same {
            okd_fs::write_atomic(&to, &bytes, 0o600)?;
        }
        out.push(to);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    #[test]
    fn lays_down_secrets_kubeconfig_and_static_pods() {
        let t = tempfile::tempdir().unwrap();
        let assets = t.path().join("assets");
        std::fs::create_dir_all(assets.join("tls/sub")).unwrap();
        std::fs::create_dir_all(assets.join("auth")).unwrap();
        std::fs::create_dir_all(assets.join("bootstrap-manifests")).unwrap();
        std::fs::write(assets.join("tls/a.key"), "k").unwrap();
        std::fs::write(assets.join("tls/sub/b.crt"), "c").unwrap();
        std::fs::write(assets.join("auth/kubeconfig-loopback"), "kc").unwrap();
        std::fs::write(assets.join("bootstrap-manifests/pod.yaml"), "p").unwrap();
        let mut opts = Options::new(&assets);
        opts.bootstrap_secrets_dir = t.path().join("secrets");
        opts.pod_manifest_dir = t.path().join("manifests");
        // A stale secret from an earlier run goes away.
        std::fs::create_dir_all(&opts.bootstrap_secrets_dir).unwrap();
        std::fs::write(opts.bootstrap_secrets_dir.join("old"), "x").unwrap();
        let done = lay_down(&opts).unwrap();
        let s = &opts.bootstrap_secrets_dir;
        assert_eq!(
            done.secrets,
            [s.join("a.key"), s.join("sub/b.crt"), s.join("kubeconfig")]
        );
        assert!(!s.join("old").exists());
        assert_eq!(std::fs::read(s.join("kubeconfig")).unwrap(), b"kc");
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode(&s.join("a.key")), 0o600);
        assert_eq!(mode(&s.join("sub")), 0o700);
        let pod = opts.pod_manifest_dir.join("pod.yaml");
        assert_eq!(done.static_pods, std::slice::from_ref(&pod));
        assert_eq!(std::fs::read(&pod).unwrap(), b"p");
        // Again (a restart): same result, the static pod file untouched.
        let ino = |p: &Path| std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(p).unwrap());
        let before = ino(&pod);
        assert_eq!(lay_down(&opts).unwrap(), done);
        assert_eq!(ino(&pod), before);
        // Changed bytes are replaced.
        std::fs::write(assets.join("bootstrap-manifests/pod.yaml"), "p2").unwrap();
        lay_down(&opts).unwrap();
        assert_eq!(std::fs::read(&pod).unwrap(), b"p2");
    }

    #[test]
    fn missing_tls_is_named() {
        let t = tempfile::tempdir().unwrap();
        let mut opts = Options::new(t.path());
        opts.bootstrap_secrets_dir = t.path().join("secrets");
        opts.pod_manifest_dir = t.path().join("manifests");
        let e = lay_down(&opts).unwrap_err().to_string();
        assert!(e.contains("tls"), "{e}");
    }
}
