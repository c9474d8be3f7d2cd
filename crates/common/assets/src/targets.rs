//! Targets: the asset lists each `create` command fetches and persists
//! (openshift/installer `pkg/asset/targets/targets.go`).

use std::collections::BTreeSet;

use tracing::info;

use crate::ctx::GenCtx;
use crate::dir::AssetDir;
use crate::error::AssetError;
use crate::ignition::{BootstrapIgnition, SingleNodeBootstrapInPlace};
use crate::installconfig::{InstallConfigAsset, ReleaseImage};
use crate::kubeconfig::AdminClient;
use crate::machines::{MasterMachines, OpenshiftInstallManifests, WorkerMachines};
use crate::manifests::{CommonManifests, OpenshiftManifests};
use crate::metadata::ClusterMetadata;
use crate::password::KubeadminPassword;
use crate::pointer::{MasterIgnition, WorkerIgnition};
use crate::store::{Dep, Store, dep};

/// A `create` sub-command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// `create install-config`: writes the normalized `install-config.yaml`.
    InstallConfig,
    /// `create manifests`: `manifests/` and `openshift/`.
    Manifests,
    /// `create ignition-configs`: bootstrap/master/worker `.ign`, `auth/`, `metadata.json`.
    IgnitionConfigs,
    /// `create single-node-ignition-config`: `bootstrap-in-place-for-live-iso.ign` and friends.
    SingleNodeIgnitionConfig,
}

impl Target {
    /// The assets fetched, in order.
    pub fn assets(self) -> Vec<Dep> {
        match self {
            // The release is recorded too, so later commands on the
            // directory generate for the release given here.
            Target::InstallConfig => vec![dep::<InstallConfigAsset>(), dep::<ReleaseImage>()],
            Target::Manifests => vec![
                dep::<MasterMachines>(),
                dep::<WorkerMachines>(),
                dep::<CommonManifests>(),
                dep::<OpenshiftManifests>(),
                dep::<OpenshiftInstallManifests>(),
            ],
            Target::IgnitionConfigs => vec![
                dep::<AdminClient>(),
                dep::<KubeadminPassword>(),
                dep::<MasterIgnition>(),
                dep::<WorkerIgnition>(),
                dep::<BootstrapIgnition>(),
                dep::<ClusterMetadata>(),
            ],
            Target::SingleNodeIgnitionConfig => vec![
                dep::<AdminClient>(),
                dep::<KubeadminPassword>(),
                dep::<WorkerIgnition>(),
                dep::<SingleNodeBootstrapInPlace>(),
                dep::<ClusterMetadata>(),
            ],
        }
    }

    /// The CLI word, e.g. `ignition-configs`.
    pub fn command(self) -> &'static str {
        match self {
            Target::InstallConfig => "install-config",
            Target::Manifests => "manifests",
            Target::IgnitionConfigs => "ignition-configs",
            Target::SingleNodeIgnitionConfig => "single-node-ignition-config",
        }
    }

    /// The title used in the final log line: `Ignition-Configs`.
    pub fn title(self) -> String {
        self.command()
            .split('-')
            .map(|w| {
                let mut c = w.chars();
                c.next()
                    .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
                    .unwrap_or_default()
            })
            .collect::<Vec<_>>()
            .join("-")
    }
}

/// Runs one `create` target on `dir`: locks the directory and sweeps the
/// temporaries of an interrupted run ([`AssetDir::lock`]), sizes the key pool,
/// fetches every target asset, then saves the state and consumes the inputs
/// (nothing is written when a fetch fails), writes the
/// target files, and logs `<Title> created in: <dirs>`. Returns the files
/// written (relative paths).
///
/// # Errors
/// [`AssetError::Fs`] with [`okd_fs::FsError::Locked`] at once when another
/// run holds the directory; otherwise the first failing step.
pub fn create(
    dir: &AssetDir,
    ctx: &mut GenCtx,
    target: Target,
    key_threads: usize,
) -> Result<Vec<String>, AssetError> {
    let _lock = dir.lock()?;
    let targets = target.assets();
    {
        let probe = Store::open(dir.clone(), ctx)?;
        let n = probe.keys_needed(&targets);
        ctx.start_key_pool(n, key_threads);
    }
    // While the key pool generates the keys: the first run of a build
    // compresses the node program here, once.
    if matches!(
        target,
        Target::IgnitionConfigs | Target::SingleNodeIgnitionConfig
    ) && ctx.node_program.is_none()
    {
        ctx.node_program = Some(crate::node_program::prepare(ctx.cache_dir.as_deref())?);
    }
    let mut store = Store::open(dir.clone(), ctx)?;
    let mut written = Vec::new();
    for t in &targets {
        store.fetch(*t)?;
    }
    store.save_and_purge(&targets)?;
    for t in &targets {
        written.extend(store.persist(*t)?);
    }
    info!(
        "{} created in: {}",
        target.title(),
        created_in(dir, &written)
    );
    Ok(written)
}

/// Formats the directories of `files` the way openshift-install's
/// `logging.LogCreatedFiles` does: `W`, `W and W/auth`, `W/manifests and W/openshift`.
pub fn created_in(dir: &AssetDir, files: &[String]) -> String {
    let base = dir.root().display().to_string();
    let tops: BTreeSet<String> = files
        .iter()
        .map(|f| match f.split_once('/') {
            Some((top, _)) => format!("{base}/{top}"),
            None => base.clone(),
        })
        .collect();
    let v: Vec<String> = tops.into_iter().collect();
    match v.len() {
        0 | 1 => v.first().cloned().unwrap_or(base),
        2 | 3 => format!("{} and {}", v[..v.len() - 1].join(", "), v[v.len() - 1]),
        _ => base,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_match_openshift_install() {
        assert_eq!(Target::IgnitionConfigs.title(), "Ignition-Configs");
        assert_eq!(
            Target::SingleNodeIgnitionConfig.title(),
            "Single-Node-Ignition-Config"
        );
        let d = AssetDir::new("W");
        assert_eq!(
            created_in(&d, &["bootstrap.ign".into(), "auth/kubeconfig".into()]),
            "W and W/auth"
        );
        assert_eq!(
            created_in(&d, &["manifests/a".into(), "openshift/b".into()]),
            "W/manifests and W/openshift"
        );
    }
}
