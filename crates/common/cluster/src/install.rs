//! What the cluster-side commands need to know about an install from its
//! asset directory: the cluster's name, domain and platform (read through
//! [`okd_assets::InstallFacts`]: the state file's install-config, else
//! `install-config.yaml` up-converted and defaulted) and the hosts
//! (agent-config.yaml + bastion-config.yaml, when present).

use std::path::{Path, PathBuf};

use okd_installconfig::{InstallConfig, PlatformName};

/// The install of an asset directory.
#[derive(Debug, Clone)]
pub struct Install {
    /// The asset directory.
    pub dir: PathBuf,
    /// The install-config as recorded, or as `create` would record it
    /// (up-converted, defaults explicit).
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
    /// install-config.yaml could not be parsed or up-converted.
    #[error("{}: {detail}", path.display())]
    Config {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        detail: String,
    },
}

impl Install {
    /// Reads the install-config of `dir` through
    /// [`okd_assets::InstallFacts::install_config`]: the state file's copy,
    /// else `install-config.yaml` up-converted and with its defaults.
    ///
    /// # Errors
    /// [`InstallError::Missing`] when the directory has neither,
    /// [`InstallError::Config`] naming `install-config.yaml` and the field
    /// when it does not parse or up-convert, [`InstallError::State`] for an
    /// unreadable state file.
    pub fn load(dir: &Path) -> Result<Install, InstallError> {
        let config = okd_assets::InstallFacts::read(dir)
            .and_then(|f| f.install_config())
            .map_err(|e| match e {
                okd_assets::AssetError::InstallConfig(load) => InstallError::Config {
                    path: dir.join("install-config.yaml"),
                    detail: load.to_string(),
                },
                e => InstallError::State {
                    dir: dir.to_path_buf(),
                    source: Box::new(e),
                },
            })?
            .ok_or_else(|| InstallError::Missing {
                dir: dir.to_path_buf(),
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

/// The node identities bootstrap.ign carries for the bootstrap's
/// approve-csr: the inventory of `dir` (agent-config.yaml together with
/// bastion-config.yaml) when it has one. `None` when it has none, when
/// install-config cannot be read yet (the asset graph reports that
/// itself), or when the inventory does not load: then a warning names
/// the file and the reason, and the bootstrap approves no CSR (the
/// Ignition configs are still made: agent-config.yaml is not an input of
/// openshift-install's `create ignition-configs`).
pub fn node_identities(dir: &Path) -> Option<okd_types::node_identities::NodeIdentities> {
    let install = Install::load(dir).ok()?;
    match install.inventory() {
        Ok(inv) => inv.map(|inv| inv.node_identities()),
        Err(e) => {
            let mut msg = e.to_string();
            let mut src = std::error::Error::source(&e);
            while let Some(s) = src {
                msg.push_str(&format!(": {s}"));
                src = s.source();
            }
            tracing::warn!(
                "bootstrap.ign carries no node identities, so the bootstrap node approves no CSR (approve them with `okd-install approve-csr`): {msg}"
            );
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An install-config no `create` consumed yet is read with its
    /// defaults: the machine network, the replicas and the network type
    /// left out of the file are the ones `create` would record (a raw YAML
    /// parse saw none of them).
    #[test]
    fn sees_defaulted_values() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(
            d.path().join("install-config.yaml"),
            "apiVersion: v1\nbaseDomain: example.com\nmetadata:\n  name: okd\nplatform:\n  none: {}\npullSecret: '{\"auths\":{}}'\n",
        )
        .unwrap();
        let i = Install::load(d.path()).unwrap();
        assert_eq!(i.domain(), "okd.example.com");
        assert_eq!(i.platform(), Some(PlatformName::None));
        let nets: Vec<String> = i
            .config
            .machine_networks()
            .iter()
            .map(|n| n.to_string())
            .collect();
        assert_eq!(nets, ["10.0.0.0/16"]);
        assert_eq!(i.config.compute_replicas(), 3);
        let networking = i.config.networking.as_ref().expect("networking defaulted");
        assert!(
            !networking.network_type.is_empty(),
            "networkType defaulted: {networking:?}"
        );
    }

    #[test]
    fn errors_name_the_directory_or_the_file() {
        let d = tempfile::tempdir().unwrap();
        let e = Install::load(d.path()).unwrap_err();
        assert!(matches!(e, InstallError::Missing { .. }), "{e}");
        std::fs::write(d.path().join("install-config.yaml"), "metadata: [").unwrap();
        let e = Install::load(d.path()).unwrap_err().to_string();
        assert!(
            e.contains("install-config.yaml: failed to unmarshal install-config.yaml"),
            "{e}"
        );
    }
}
