//! Typed read access to what earlier `create` runs recorded in the state file
//! (`.openshift_install_state.json`), for commands that work on an asset
//! directory without walking the graph: `serve`, the cluster client,
//! `gather`, `mirror`, the choice of the release image. Entries are decoded
//! by each asset's [`Asset::STATE_KEY`] into the asset's own type, so no
//! caller spells a Go type name.
//!
//! [`InstallFacts`] is the one reader of an asset directory for those
//! commands: the state file, the recorded release, and the install-config
//! (the recorded copy, else `install-config.yaml` through okd-installconfig's
//! up-conversion and defaults), the way openshift-install's commands outside
//! `create` load assets from the store (openshift/installer
//! `pkg/asset/store/store.go` `Load`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use okd_installconfig::InstallConfig;
use okd_types::release::ReleaseTarget;

use crate::error::AssetError;
use crate::installconfig::{INSTALL_CONFIG_FILE, InstallConfigAsset, ReleaseImage};
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

/// What an asset directory says about its install, for commands outside the
/// graph: read once with [`InstallFacts::read`], then asked.
#[derive(Debug, Clone)]
pub struct InstallFacts {
    dir: PathBuf,
    state: Option<Recorded>,
}

impl InstallFacts {
    /// Reads `<dir>/.openshift_install_state.json` when there is one (a
    /// directory without it is not an error: nothing was recorded yet).
    ///
    /// # Errors
    /// As [`Recorded::load`]: [`AssetError::Io`] naming the state file when
    /// it exists but cannot be read, [`AssetError::State`] when it is not a
    /// JSON object.
    pub fn read(dir: &Path) -> Result<InstallFacts, AssetError> {
        Ok(InstallFacts {
            dir: dir.to_path_buf(),
            state: Recorded::load(dir)?,
        })
    }

    /// The asset directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Whether the directory has a state file.
    pub fn has_state(&self) -> bool {
        self.state.is_some()
    }

    /// The recorded value of asset `T`; `Ok(None)` when there is no state
    /// file or it holds no `T`.
    ///
    /// # Errors
    /// [`AssetError::State`] naming `T::STATE_KEY` when the entry does not
    /// decode as `T`.
    pub fn recorded<T: Asset>(&self) -> Result<Option<T>, AssetError> {
        match &self.state {
            Some(r) => r.get::<T>(),
            None => Ok(None),
        }
    }

    /// The release image the assets were made for (`*releaseimage.Image`),
    /// `Ok(None)` when none was recorded.
    ///
    /// # Errors
    /// As [`InstallFacts::recorded`].
    pub fn release(&self) -> Result<Option<ReleaseImage>, AssetError> {
        self.recorded::<ReleaseImage>()
    }

    /// The target release the assets were made for: the recorded one (a
    /// digest pull spec with `--release-version` names none), else the one
    /// the recorded pull spec's tag names; `Ok(None)` when neither tells.
    ///
    /// # Errors
    /// As [`InstallFacts::recorded`].
    pub fn target(&self) -> Result<Option<ReleaseTarget>, AssetError> {
        Ok(self.release()?.and_then(|i| {
            i.target()
                .or_else(|| ReleaseTarget::from_release_image(&i.pull_spec))
        }))
    }

    /// The install-config: the state file's copy (normalized and validated
    /// when `create` recorded it), else `<dir>/install-config.yaml` through
    /// [`okd_installconfig::normalize`] (parse, up-conversion, defaults, so
    /// the values are the ones `create` would record; validation stays with
    /// `create`); `Ok(None)` when there is neither. Parse warnings are
    /// logged at debug level (`create` logs them when it consumes the file).
    ///
    /// # Errors
    /// [`AssetError::State`] for a recorded copy that does not decode,
    /// [`AssetError::Io`] naming `install-config.yaml` when it cannot be
    /// read, [`AssetError::InstallConfig`] with the file, the field and the
    /// rule when it does not parse or up-convert.
    pub fn install_config(&self) -> Result<Option<InstallConfig>, AssetError> {
        if let Some(a) = self.recorded::<InstallConfigAsset>()? {
            return Ok(Some(a.config));
        }
        let path = self.dir.join(INSTALL_CONFIG_FILE);
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(AssetError::io("reading", path, e)),
        };
        let loaded = okd_installconfig::normalize(INSTALL_CONFIG_FILE, &bytes)
            .map_err(AssetError::InstallConfig)?;
        for line in loaded.warnings.iter().chain(&loaded.infos) {
            tracing::debug!("{line}");
        }
        Ok(Some(loaded.config))
    }

    /// [`InstallFacts::install_config`], required.
    ///
    /// # Errors
    /// As [`InstallFacts::install_config`]; [`AssetError::Invalid`] naming
    /// the directory, both files and the command to run when it has neither
    /// a state file with an install-config nor `install-config.yaml`.
    pub fn require_install_config(&self) -> Result<InstallConfig, AssetError> {
        self.install_config()?.ok_or_else(|| {
            AssetError::Invalid(format!(
                "{} has neither {STATE_FILE} nor {INSTALL_CONFIG_FILE}: run `okd-install create ignition-configs --dir {}` first",
                self.dir.display(),
                okd_fs::shell_path(&self.dir)
            ))
        })
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

    const MINIMAL: &str = "apiVersion: v1\nbaseDomain: example.com\nmetadata:\n  name: okd\nplatform:\n  none: {}\npullSecret: '{\"auths\":{}}'\n";

    #[test]
    fn facts_of_an_empty_directory() {
        let d = tempfile::tempdir().unwrap();
        let f = InstallFacts::read(d.path()).unwrap();
        assert!(!f.has_state());
        assert_eq!(f.release().unwrap(), None);
        assert_eq!(f.target().unwrap(), None);
        assert!(f.install_config().unwrap().is_none());
        let e = f.require_install_config().unwrap_err().to_string();
        assert!(
            e.contains(STATE_FILE)
                && e.contains(INSTALL_CONFIG_FILE)
                && e.contains("create ignition-configs"),
            "{e}"
        );
    }

    /// An install-config no `create` consumed yet reads with its defaults
    /// (networking, replicas) and up-converted, as `create` would record it.
    #[test]
    fn unconsumed_install_config_reads_with_defaults() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join(INSTALL_CONFIG_FILE), MINIMAL).unwrap();
        let c = InstallFacts::read(d.path())
            .unwrap()
            .require_install_config()
            .unwrap();
        assert_eq!(c.cluster_domain(), "okd.example.com");
        let nets: Vec<String> = c.machine_networks().iter().map(|n| n.to_string()).collect();
        assert_eq!(nets, ["10.0.0.0/16"]);
        assert_eq!(c.control_plane_replicas(), 3);
        assert_eq!(c.compute_replicas(), 3);
        std::fs::write(d.path().join(INSTALL_CONFIG_FILE), "metadata: [").unwrap();
        let e = crate::chain(
            &InstallFacts::read(d.path())
                .unwrap()
                .install_config()
                .unwrap_err(),
        );
        assert!(e.contains("failed to unmarshal install-config.yaml"), "{e}");
    }

    #[test]
    fn the_recorded_copy_wins_and_the_target_comes_from_the_record() {
        let d = tempfile::tempdir().unwrap();
        let state = serde_json::json!({
            "*releaseimage.Image": {"PullSpec": "quay.io/openshift/okd@sha256:00", "okdRelease": "4.5", "okdFlavour": "okd"},
            "*installconfig.InstallConfig": {
                "config": okd_installconfig::normalize("x", MINIMAL.as_bytes()).unwrap().config.to_json_value(),
                "file": {"Filename": "install-config.yaml", "Data": ""},
            },
        });
        std::fs::write(d.path().join(STATE_FILE), state.to_string()).unwrap();
        std::fs::write(
            d.path().join(INSTALL_CONFIG_FILE),
            MINIMAL.replace("name: okd", "name: other"),
        )
        .unwrap();
        let f = InstallFacts::read(d.path()).unwrap();
        assert!(f.has_state());
        assert_eq!(f.require_install_config().unwrap().metadata.name, "okd");
        let t = f.target().unwrap().unwrap();
        assert_eq!((t.minor, t.okd), (5, true));
    }
}
