//! The asset directory (`--dir`): reading user inputs, atomic writes, purging.
//!
//! Layout and modes follow openshift-install (openshift/installer
//! `pkg/asset/store/store.go` and `pkg/asset/asset.go` `PersistToFile`): directories 0750, files
//! 0640, the state file `.openshift_install_state.json` 0640, exact whatever the umask. Every write
//! goes through [`okd_fs::write_atomic`] (temporary file in the same directory,
//! fsync, rename, directory fsync), so an interrupted run never leaves a
//! half-written asset; the temporaries such a run leaves are swept by
//! [`AssetDir::lock`]'s caller at the start of the next one.

use std::fs;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use serde::{Deserialize, Serialize};

use crate::error::AssetError;

/// Mode of every file written to the asset directory (openshift-install's 0640).
pub const FILE_MODE: u32 = 0o640;
/// Mode of every directory created in the asset directory.
pub const DIR_MODE: u32 = okd_fs::DIR_MODE;

/// One file of a writable asset: a path relative to the asset directory and its bytes.
///
/// Serialized as in openshift-install's state file: `{"Filename": "...", "Data": "<base64>"}`
/// (`pkg/asset/asset.go` File).
///
/// `Debug` shows the name and the length, never the contents: many files hold
/// keys, passwords or the pull secret.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AssetFile {
    /// Path relative to the asset directory, `/`-separated, e.g. `manifests/cvo-overrides.yaml`.
    #[serde(rename = "Filename")]
    pub filename: String,
    /// File contents.
    #[serde(rename = "Data", with = "b64")]
    pub data: Vec<u8>,
}

impl std::fmt::Debug for AssetFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AssetFile")
            .field("filename", &self.filename)
            .field("data", &format_args!("<{} bytes>", self.data.len()))
            .finish()
    }
}

impl AssetFile {
    /// A file with the given relative name and contents.
    pub fn new(filename: impl Into<String>, data: impl Into<Vec<u8>>) -> Self {
        AssetFile {
            filename: filename.into(),
            data: data.into(),
        }
    }
}

/// serde helper: `Vec<u8>` as standard base64, like Go's encoding/json for `[]byte`.
pub(crate) mod b64 {
    use base64::Engine as _;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(crate) fn serialize<S: Serializer>(v: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(v))
    }
    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let s = Option::<String>::deserialize(d)?.unwrap_or_default();
        base64::engine::general_purpose::STANDARD
            .decode(s.as_bytes())
            .map_err(serde::de::Error::custom)
    }
}

/// Encodes bytes as standard base64 (used for Secret data and kubeconfig fields).
pub fn base64_std(data: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(data)
}

/// The directory an install is generated in.
#[derive(Debug, Clone)]
pub struct AssetDir {
    root: PathBuf,
}

impl AssetDir {
    /// Wraps `root`; it need not exist yet (it is created 0750 on first write).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        AssetDir { root: root.into() }
    }

    /// The directory itself.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Absolute-or-relative path of `rel` inside the directory.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    /// Reads `rel`; `Ok(None)` if it does not exist.
    pub fn read(&self, rel: &str) -> Result<Option<Vec<u8>>, AssetError> {
        let p = self.path(rel);
        match fs::read(&p) {
            Ok(b) => Ok(Some(b)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(AssetError::io("reading", p, e)),
        }
    }

    /// Every regular file directly in directory `sub` (e.g. `manifests`) whose
    /// name ends in one of `exts`, sorted by name, as [`AssetFile`]s with
    /// `sub/name` file names. Empty if `sub` does not exist.
    pub fn read_dir_files(&self, sub: &str, exts: &[&str]) -> Result<Vec<AssetFile>, AssetError> {
        let d = self.path(sub);
        let rd = match fs::read_dir(&d) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(AssetError::io("listing", d, e)),
        };
        let mut names = Vec::new();
        for ent in rd {
            let ent = ent.map_err(|e| AssetError::io("listing", &d, e))?;
            let name = ent.file_name().to_string_lossy().into_owned();
            let ft = ent
                .file_type()
                .map_err(|e| AssetError::io("listing", &d, e))?;
            if ft.is_file() && (exts.is_empty() || exts.iter().any(|x| name.ends_with(x))) {
                names.push(name);
            }
        }
        names.sort();
        let mut out = Vec::with_capacity(names.len());
        for n in names {
            let rel = format!("{sub}/{n}");
            let data = fs::read(self.path(&rel))
                .map_err(|e| AssetError::io("reading", self.path(&rel), e))?;
            out.push(AssetFile::new(rel, data));
        }
        Ok(out)
    }

    /// Writes `data` to `rel` atomically with `mode`, creating parent directories 0750.
    pub fn write(&self, rel: &str, data: &[u8], mode: u32) -> Result<(), AssetError> {
        write_atomic(&self.path(rel), data, mode)
    }

    /// Locks the directory for one run ([`okd_fs::DirLock`] on
    /// `.openshift_install.lock`), creating it 0750 if missing, then removes
    /// the temporary files an interrupted run left (`.okd-install-*`, in the
    /// directory and up to two levels below). Hold the returned lock until the
    /// run's last write.
    ///
    /// # Errors
    /// [`AssetError::Fs`]: [`okd_fs::FsError::Locked`] naming the PID of the
    /// run that holds the directory, or the I/O step that failed.
    pub fn lock(&self) -> Result<okd_fs::DirLock, AssetError> {
        let lock = okd_fs::DirLock::acquire(&self.root)?;
        for p in okd_fs::sweep_temp_files(&self.root, &[okd_fs::TEMP_PREFIX], 2)? {
            tracing::debug!("Removed {} left by an interrupted run", p.display());
        }
        Ok(lock)
    }

    /// Deletes `rel` (consumed input); then removes its parent directories inside
    /// the asset directory that became empty. Missing files are not an error.
    pub fn remove(&self, rel: &str) -> Result<(), AssetError> {
        let p = self.path(rel);
        match fs::remove_file(&p) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(AssetError::io("removing", p, e)),
        }
        let mut parent = Path::new(rel).parent();
        while let Some(par) = parent {
            if par.as_os_str().is_empty() {
                break;
            }
            // Only succeeds when empty; anything else (user files) keeps the directory.
            if fs::remove_dir(self.root.join(par)).is_err() {
                break;
            }
            parent = par.parent();
        }
        Ok(())
    }
}

/// Creates `dir` and missing parents with exactly [`DIR_MODE`] (umask-independent).
///
/// # Errors
/// [`AssetError::Fs`] naming the directory.
pub fn create_dir_all(dir: &Path) -> Result<(), AssetError> {
    Ok(okd_fs::create_dir_all(dir, DIR_MODE)?)
}

/// Writes a file atomically with exactly `mode` through the workspace's one
/// writer ([`okd_fs::write_atomic`]): temporary file in the same directory,
/// fsync, rename over `path`, fsync of the directory.
///
/// # Errors
/// [`AssetError::Fs`] naming the step and the path.
pub fn write_atomic(path: &Path, data: &[u8], mode: u32) -> Result<(), AssetError> {
    Ok(okd_fs::write_atomic(path, data, mode)?)
}
