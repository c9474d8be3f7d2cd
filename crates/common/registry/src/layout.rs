//! An OCI image layout directory (OCI image spec v1.1 `image-layout.md`):
//! `oci-layout`, `index.json` and `blobs/sha256/<hex>`; the archive of
//! `mirror to-disk` / `from-disk`. skopeo reads it as `oci:<dir>:<tag>`.
//!
//! Blobs are written to a temporary file in `blobs/sha256/`, hashed on the
//! way and renamed into place only when the digest matches, so a blob file
//! that exists is always complete and correct (a killed run resumes by
//! skipping them).

use std::path::{Path, PathBuf};

use bytes::Bytes;
use futures_util::{Stream, StreamExt as _};
use tokio::io::AsyncWriteExt as _;

use crate::client::OciError;
use crate::client::body::MAX_MANIFEST;
use crate::oci::{Digest, Hasher, Manifest, OCI_INDEX, check_tag};

/// The annotation naming a tag in `index.json`.
pub const REF_NAME: &str = "org.opencontainers.image.ref.name";

/// An OCI image layout on disk.
pub struct Layout {
    dir: PathBuf,
    index: tokio::sync::Mutex<serde_json::Value>,
    /// Held while a layout is written, so two runs cannot interleave.
    _lock: Option<okd_fs::DirLock>,
}

fn io(what: String) -> impl FnOnce(std::io::Error) -> OciError {
    move |source| OciError::Io { what, source }
}

/// Writes `data` to `path` via a temporary file in the same folder and a
/// rename (mode 0644: nothing secret goes through here).
pub fn write_file(path: &Path, data: &[u8]) -> Result<(), OciError> {
    Ok(okd_fs::write_atomic(path, data, 0o644)?)
}

/// Writes `data` to `path` atomically, mode 0600 ([`okd_fs::write_atomic`]).
pub(crate) fn write_atomic(path: &Path, data: &[u8]) -> Result<(), OciError> {
    Ok(okd_fs::write_atomic(path, data, 0o600)?)
}

/// Creates `path` and its missing parents with mode 0750 (as `create`
/// makes the asset directory); existing folders are left as they are.
pub fn mkdir(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt as _;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o750)
        .create(path)
}

impl Layout {
    /// Opens `dir`, creating an empty layout when `create` and it has none
    /// (folders 0750).
    /// Errors: no `oci-layout` / `index.json` (when not creating), bad JSON.
    pub fn open(dir: &Path, create: bool) -> Result<Layout, OciError> {
        let marker = dir.join("oci-layout");
        let index_path = dir.join("index.json");
        if !marker.is_file() {
            if !create {
                return Err(OciError::Format {
                    what: format!("archive {}", dir.display()),
                    detail: "not an OCI image layout (no oci-layout file)".into(),
                });
            }
            mkdir(&dir.join("blobs/sha256")).map_err(io(format!("creating {}", dir.display())))?;
            write_atomic(&marker, br#"{"imageLayoutVersion":"1.0.0"}"#)?;
        }
        mkdir(&dir.join("blobs/sha256"))
            .map_err(io(format!("creating {}/blobs/sha256", dir.display())))?;
        // A layout being written is locked, and blobs a killed run left
        // half-written (`.partial-*`) are removed before anything is reused.
        let lock = if create {
            let lock = okd_fs::DirLock::acquire(dir)?;
            for p in
                okd_fs::sweep_temp_files(dir, &[okd_fs::PARTIAL_PREFIX, okd_fs::TEMP_PREFIX], 2)?
            {
                tracing::info!("removed {} left by an interrupted run", p.display());
            }
            Some(lock)
        } else {
            None
        };
        let index = if index_path.is_file() {
            let text = std::fs::read(&index_path)
                .map_err(io(format!("reading {}", index_path.display())))?;
            serde_json::from_slice(&text).map_err(|e| OciError::Format {
                what: index_path.display().to_string(),
                detail: e.to_string(),
            })?
        } else {
            serde_json::json!({"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": []})
        };
        Ok(Layout {
            dir: dir.to_path_buf(),
            index: tokio::sync::Mutex::new(index),
            _lock: lock,
        })
    }

    fn blob_path(&self, d: &Digest) -> PathBuf {
        self.dir.join("blobs/sha256").join(d.hex())
    }

    /// Whether the blob (or manifest) file exists.
    pub fn has(&self, d: &Digest) -> bool {
        self.blob_path(d).is_file()
    }

    /// The digest a tag (ref name) points at, from `index.json`.
    pub async fn resolve(&self, tag: &str) -> Option<(Digest, String)> {
        let idx = self.index.lock().await;
        idx.get("manifests")?.as_array()?.iter().find_map(|m| {
            let name = m.get("annotations")?.get(REF_NAME)?.as_str()?;
            (name == tag).then(|| {
                Some((
                    Digest::parse(m.get("digest")?.as_str()?).ok()?,
                    m.get("mediaType")?.as_str()?.to_string(),
                ))
            })?
        })
    }

    /// Reads a manifest by digest or tag, checking its digest.
    pub async fn get_manifest(&self, reference: &str) -> Result<Manifest, OciError> {
        let (d, mt) = match Digest::parse(reference) {
            Ok(d) => (d, None),
            Err(_) => {
                let (d, mt) = self
                    .resolve(reference)
                    .await
                    .ok_or_else(|| OciError::Format {
                        what: format!("archive {}", self.dir.display()),
                        detail: format!("no image tagged {reference:?} in index.json"),
                    })?;
                (d, Some(mt))
            }
        };
        let p = self.blob_path(&d);
        // An archive comes from elsewhere: a manifest file is read only up
        // to the registry limit.
        let len = tokio::fs::metadata(&p)
            .await
            .map_err(io(format!("reading manifest {}", p.display())))?
            .len();
        if len > MAX_MANIFEST {
            return Err(OciError::TooLarge {
                what: format!("manifest {}", p.display()),
                limit: MAX_MANIFEST,
            });
        }
        let bytes = tokio::fs::read(&p)
            .await
            .map_err(io(format!("reading manifest {}", p.display())))?;
        let m = Manifest::new(Bytes::from(bytes), mt.as_deref()).map_err(|e| OciError::Format {
            what: p.display().to_string(),
            detail: e.0,
        })?;
        if m.digest != d {
            return Err(OciError::Digest {
                what: format!("manifest {}", p.display()),
                expected: d,
                actual: m.digest.clone(),
                size: m.bytes.len() as u64,
            });
        }
        Ok(m)
    }

    /// A blob's bytes as a stream (verified by whoever consumes it).
    pub async fn get_blob(
        &self,
        d: &Digest,
    ) -> Result<impl Stream<Item = Result<Bytes, OciError>> + Send + Unpin + 'static, OciError>
    {
        let p = self.blob_path(d);
        let f = tokio::fs::File::open(&p)
            .await
            .map_err(io(format!("opening blob {}", p.display())))?;
        let what = format!("reading blob {}", p.display());
        Ok(
            tokio_util::io::ReaderStream::with_capacity(f, 256 * 1024).map(move |r| {
                r.map_err(|source| OciError::Io {
                    what: what.clone(),
                    source,
                })
            }),
        )
    }

    /// Writes a blob from `source`, verifying size and digest before the
    /// rename; returns the bytes written (0 if it was there already).
    pub async fn put_blob<S>(
        &self,
        d: &Digest,
        size: u64,
        source: S,
        progress: &(dyn Fn(u64) + Send + Sync),
    ) -> Result<u64, OciError>
    where
        S: Stream<Item = Result<Bytes, OciError>> + Unpin,
    {
        let path = self.blob_path(d);
        if path.is_file() {
            return Ok(0);
        }
        let tmp = tempfile::Builder::new()
            .prefix(okd_fs::PARTIAL_PREFIX)
            .tempfile_in(self.dir.join("blobs/sha256"))
            .map_err(io(format!("creating a file in {}", self.dir.display())))?;
        let (std_file, tmp_path) = tmp.into_parts();
        let mut f = tokio::fs::File::from_std(std_file);
        let mut h = Hasher::new();
        let mut n = 0u64;
        let mut source = source;
        let what = format!("blob {d} into {}", self.dir.display());
        while let Some(piece) = source.next().await {
            let piece = piece?;
            n += piece.len() as u64;
            if n > size {
                return Err(OciError::Size {
                    what,
                    expected: size,
                    actual: n,
                });
            }
            h.update(&piece);
            f.write_all(&piece)
                .await
                .map_err(io(format!("writing {}", tmp_path.display())))?;
            progress(piece.len() as u64);
        }
        if n != size {
            return Err(OciError::Size {
                what,
                expected: size,
                actual: n,
            });
        }
        let actual = h.finish();
        if &actual != d {
            return Err(OciError::Digest {
                what,
                expected: d.clone(),
                actual,
                size: n,
            });
        }
        f.sync_all()
            .await
            .map_err(io(format!("writing {}", tmp_path.display())))?;
        drop(f);
        tmp_path
            .persist(&path)
            .map_err(|e| e.error)
            .map_err(io(format!("renaming into {}", path.display())))?;
        Ok(n)
    }

    /// Stores a manifest blob and, with `tag`, names it in `index.json`
    /// (written atomically; an older entry with the same name is replaced).
    /// Errors: a tag outside the OCI tag grammar ([`check_tag`]).
    pub async fn put_manifest(
        &self,
        tag: Option<&str>,
        m: &Manifest,
        annotations: &[(&str, &str)],
    ) -> Result<(), OciError> {
        let p = self.blob_path(&m.digest);
        if !p.is_file() {
            write_atomic(&p, &m.bytes)?;
        }
        let Some(tag) = tag else { return Ok(()) };
        check_tag(tag).map_err(|e| OciError::Format {
            what: format!("{}/index.json", self.dir.display()),
            detail: e.0,
        })?;
        let mut idx = self.index.lock().await;
        let list = idx
            .get_mut("manifests")
            .and_then(|x| x.as_array_mut())
            .ok_or_else(|| OciError::Format {
                what: format!("{}/index.json", self.dir.display()),
                detail: "no manifests array".into(),
            })?;
        list.retain(|e| {
            e.pointer("/annotations/org.opencontainers.image.ref.name")
                .and_then(|x| x.as_str())
                != Some(tag)
        });
        let mut ann = serde_json::Map::new();
        ann.insert(REF_NAME.into(), tag.into());
        for (k, v) in annotations {
            ann.insert((*k).into(), (*v).into());
        }
        list.push(serde_json::json!({
            "mediaType": m.media_type,
            "digest": m.digest.as_str(),
            "size": m.bytes.len(),
            "annotations": ann,
        }));
        let text = serde_json::to_vec_pretty(&*idx).expect("JSON");
        write_atomic(&self.dir.join("index.json"), &text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn oversized_manifest_file_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let l = Layout::open(d.path(), true).unwrap();
        let big = vec![b' '; (MAX_MANIFEST + 1) as usize];
        let digest = Digest::of(&big);
        std::fs::write(d.path().join("blobs/sha256").join(digest.hex()), &big).unwrap();
        let e = l
            .get_manifest(digest.as_str())
            .await
            .unwrap_err()
            .to_string();
        assert!(e.contains("more than the limit of 4194304 bytes"), "{e}");
    }

    #[test]
    fn writing_locks_the_layout_and_sweeps_partial_blobs() {
        let d = tempfile::tempdir().unwrap();
        let first = Layout::open(d.path(), true).unwrap();
        let partial = d.path().join("blobs/sha256/.partial-abc123");
        std::fs::write(&partial, b"half a blob").unwrap();
        let e = match Layout::open(d.path(), true) {
            Ok(_) => panic!("a second writer opened a locked layout"),
            Err(e) => e.to_string(),
        };
        assert!(e.contains("in use by another run"), "{e}");
        assert!(partial.exists(), "swept while another run held the lock");
        // Reading needs no lock.
        Layout::open(d.path(), false).unwrap();
        drop(first);
        let _second = Layout::open(d.path(), true).unwrap();
        assert!(
            !partial.exists(),
            "the interrupted run's partial blob stayed"
        );
    }
}
