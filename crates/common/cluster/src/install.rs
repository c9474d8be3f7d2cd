//! What the cluster-side commands need to know about an install from its
//! asset directory: the cluster's name, domain and platform (from the state
//! file, else `install-config.yaml`) and the hosts (agent-config.yaml +
//! bastion-config.yaml, when present).

use std::path::{Path, PathBuf};

use okd_installconfig::{InstallConfig, PlatformName};

/// The install of an asset directory.
#[derive(Debug, Clone)]
pub struct Install {
    /// The asset directory.
    pub dir: PathBuf,
    /// The install-config as recorded.
    pub config: InstallConfig,
}

/// Why the install could not be read.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    /// Neither the state file nor install-config.yaml names the cluster.
    #[error(
        "{} has neither .openshift_install_state.json nor install-config.yaml: \
         run `okd-install create ignition-configs --dir {}` first"
    , dir.display(), okd_fs::shell_path(dir))]
    Missing {
        /// The asset directory.
        dir: PathBuf,
    },
    /// The state file could not be read.
    #[error("reading the install state in {}", dir.display())]
    State {
        /// The asset directory.
        dir: PathBuf,
        /// The cause.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// install-config.yaml could not be parsed.
    #[error("{}: {detail}", path.display())]
    Config {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        detail: String,
    },
}

impl Install {
    /// Reads `dir/.openshift_install_state.json`, else `dir/install-config.yaml`.
    ///
    /// # Errors
    /// [`InstallError`] naming the directory or file.
    pub fn load(dir: &Path) -> Result<Install, InstallError> {
        use okd_assets::installconfig::InstallConfigAsset;
        let state_err = |e: okd_assets::AssetError| InstallError::State {
            dir: dir.to_path_buf(),
            source: Box::new(e),
        };
        let recorded = okd_assets::recorded::Recorded::load(dir).map_err(state_err)?;
        if let Some(r) = recorded
            && let Some(a) = r.get::<InstallConfigAsset>().map_err(state_err)?
        {
            return Ok(Install {
                dir: dir.to_path_buf(),
                config: a.config,
            });
        }
        let path = dir.join("install-config.yaml");
        let text = std::fs::read_to_string(&path).map_err(|_| InstallError::Missing {
            dir: dir.to_path_buf(),
        })?;
        let config: InstallConfig =
            serde_yaml_ng::from_str(&text).map_err(|e| InstallError::Config {
                path: path.clone(),
                detail: e.to_string(),
            })?;
        Ok(Install {
            dir: dir.to_path_buf(),
            config,
        })
    }

    /// `<metadata.name>.<baseDomain>`.
    pub fn domain(&self) -> String {
        self.config.cluster_domain()
    }

    /// The platform, `None` when install-config sets none.
    pub fn platform(&self) -> Option<PlatformName> {
        self.config.platform_kind()
    }

    /// `<dir>/auth/kubeconfig`, the admin kubeconfig for `api.<domain>`.
    pub fn admin_kubeconfig(&self) -> PathBuf {
        self.dir.join("auth/kubeconfig")
    }

    /// The hosts of agent-config.yaml + bastion-config.yaml; `Ok(None)` when
    /// neither file exists.
    ///
    /// # Errors
    /// [`okd_hosts::HostsError`] naming the file and field.
    pub fn inventory(&self) -> Result<Option<okd_hosts::Inventory>, okd_hosts::HostsError> {
        if !self.dir.join("agent-config.yaml").exists()
            && !self.dir.join("bastion-config.yaml").exists()
        {
            return Ok(None);
        }
        okd_hosts::Inventory::load(
            &self.dir,
            &self.config.metadata.name,
            &self.config.base_domain,
        )
        .map(Some)
    }
}
