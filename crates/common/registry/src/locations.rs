//! Where blobs are known to be: the repositories of each registry that held
//! a blob when a copy last saw it, kept in a JSON file across runs so that
//! mirroring into a second repository of the same registry mounts the
//! blobs (distribution spec `spec.md`, "Mounting a blob from another
//! repository") instead of sending them again. containers/image keeps the
//! same knowledge in its blob info cache (`pkg/blobinfocache`,
//! `blob-info-cache-v1.boltdb`).
//!
//! File: `{"version": 1, "registries": {"<host[:port]>": {"<digest>":
//! ["<repository>", ...]}}}`, most recent repository first, at most
//! [`REPOS_PER_BLOB`] per blob and [`BLOBS_PER_REGISTRY`] blobs per
//! registry. A stale entry costs one refused mount (the registry then
//! answers with an upload session, which is used), never a wrong blob: the
//! registry checks the digest.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::client::OciError;
use crate::oci::{Digest, Repo};

/// The file name `okd-install mirror` uses in the asset directory.
pub const FILE: &str = ".mirror-blob-locations.json";
/// Repositories remembered per blob.
pub const REPOS_PER_BLOB: usize = 4;
/// Blobs remembered per registry.
pub const BLOBS_PER_REGISTRY: usize = 200_000;

type Map = BTreeMap<String, BTreeMap<String, Vec<String>>>;

/// Known blob locations, optionally backed by a file.
#[derive(Debug, Default)]
pub struct BlobLocations {
    path: Option<PathBuf>,
    map: Mutex<Map>,
}

impl BlobLocations {
    /// Reads `path`; a missing file is empty. Errors: a file that cannot be
    /// read or is not this format (remove it to start afresh).
    pub fn load(path: &Path) -> Result<BlobLocations, OciError> {
        let map = match std::fs::read(path) {
            Ok(b) => {
                let v: serde_json::Value =
                    serde_json::from_slice(&b).map_err(|e| OciError::Format {
                        what: format!("blob location cache {}", path.display()),
                        detail: format!("{e} (remove the file to start afresh)"),
                    })?;
                serde_json::from_value::<Map>(v["registries"].clone()).unwrap_or_default()
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Map::new(),
            Err(source) => {
                return Err(OciError::Io {
                    what: format!("reading {}", path.display()),
                    source,
                });
            }
        };
        Ok(BlobLocations {
            path: Some(path.to_path_buf()),
            map: Mutex::new(map),
        })
    }

    /// A repository of `registry` other than `except` known to hold `digest`.
    pub fn find(&self, registry: &str, digest: &Digest, except: &Repo) -> Option<Repo> {
        let map = self.map.lock().expect("lock");
        map.get(registry)?
            .get(digest.as_str())?
            .iter()
            .find(|r| !(registry == except.registry && **r == except.name))
            .map(|name| Repo {
                registry: registry.to_string(),
                name: name.clone(),
            })
    }

    /// Notes that `repo` holds `digest`.
    pub fn record(&self, repo: &Repo, digest: &Digest) {
        let mut map = self.map.lock().expect("lock");
        let blobs = map.entry(repo.registry.clone()).or_default();
        if blobs.len() >= BLOBS_PER_REGISTRY && !blobs.contains_key(digest.as_str()) {
            let first = blobs.keys().next().cloned();
            if let Some(k) = first {
                blobs.remove(&k);
            }
        }
        let repos = blobs.entry(digest.to_string()).or_default();
        repos.retain(|r| *r != repo.name);
        repos.insert(0, repo.name.clone());
        repos.truncate(REPOS_PER_BLOB);
    }

    /// Writes the file (atomically), when there is one.
    pub fn save(&self) -> Result<(), OciError> {
        let Some(path) = &self.path else {
            return Ok(());
        };
        let text = {
            let map = self.map.lock().expect("lock");
            serde_json::to_vec(&serde_json::json!({"version": 1, "registries": &*map}))
                .expect("JSON")
        };
        crate::layout::write_atomic(path, &text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_across_loads() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("loc.json");
        let digest = Digest::of(b"x");
        let a = Repo::parse("r.example:5000/a/one").unwrap();
        let b = Repo::parse("r.example:5000/a/two").unwrap();
        let l = BlobLocations::load(&p).unwrap();
        assert_eq!(l.find("r.example:5000", &digest, &b), None);
        l.record(&a, &digest);
        l.save().unwrap();
        let l = BlobLocations::load(&p).unwrap();
        assert_eq!(l.find("r.example:5000", &digest, &b), Some(a.clone()));
        assert_eq!(l.find("r.example:5000", &digest, &a), None);
        assert_eq!(l.find("other:5000", &digest, &b), None);
        std::fs::write(&p, "not json").unwrap();
        assert!(BlobLocations::load(&p).is_err());
    }
}
