//! Typed read access to what earlier `create` runs recorded in the state file
//! (`.openshift_install_state.json`), for commands that work on an asset
//! directory without walking the graph: `serve`, `mirror`, the choice of the
//! release image. Entries are decoded by each asset's [`Asset::STATE_KEY`]
//! into the asset's own type, so no caller spells a Go type name.

use std::collections::BTreeMap;
use std::path::Path;

use crate::error::AssetError;
use crate::store::{Asset, STATE_FILE};

/// The entries of a state file, undecoded until asked for.
#[derive(Debug, Clone, Default)]
pub struct Recorded {
    entries: BTreeMap<String, serde_json::Value>,
}

impl Recorded {
    /// Reads `<dir>/.openshift_install_state.json`; `Ok(None)` when there is none.
    ///
    /// # Errors
    /// [`AssetError::Io`] when the file exists but cannot be read,
    /// [`AssetError::State`] (key `STATE_FILE`) when it is not a JSON object.
    pub fn load(dir: &Path) -> Result<Option<Recorded>, AssetError> {
        let path = dir.join(STATE_FILE);
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(AssetError::io("reading", &path, e)),
        };
        let entries = serde_json::from_slice(&bytes).map_err(|source| AssetError::State {
            key: STATE_FILE.to_string(),
            source,
        })?;
        Ok(Some(Recorded { entries }))
    }

    /// The recorded value of asset `T`, or `Ok(None)` when none was recorded.
    ///
    /// # Errors
    /// [`AssetError::State`] naming `T::STATE_KEY` when the entry does not
    /// decode as `T`.
    pub fn get<T: Asset>(&self) -> Result<Option<T>, AssetError> {
        self.entries
            .get(T::STATE_KEY)
            .map(|v| {
                serde_json::from_value(v.clone()).map_err(|source| AssetError::State {
                    key: T::STATE_KEY.to_string(),
                    source,
                })
            })
            .transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::installconfig::ReleaseImage;

    #[test]
    fn absent_bad_and_typed() {
        let d = tempfile::tempdir().unwrap();
        assert!(Recorded::load(d.path()).unwrap().is_none());
        std::fs::write(d.path().join(STATE_FILE), b"[1]").unwrap();
        assert!(Recorded::load(d.path()).is_err());
        std::fs::write(
            d.path().join(STATE_FILE),
            br#"{"*releaseimage.Image":{"PullSpec":"quay.io/openshift/okd:4.5.0"},"*installconfig.ClusterID":{"UUID":1}}"#,
        )
        .unwrap();
        let r = Recorded::load(d.path()).unwrap().unwrap();
        assert_eq!(
            r.get::<ReleaseImage>().unwrap().unwrap().pull_spec,
            "quay.io/openshift/okd:4.5.0"
        );
        let e = r.get::<crate::installconfig::ClusterId>().unwrap_err();
        assert!(e.to_string().contains("*installconfig.ClusterID"), "{e}");
    }
}
