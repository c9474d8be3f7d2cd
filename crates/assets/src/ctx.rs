//! The generation context handed to every asset: clock, release, key pool.

use okd_pki::{KeyPool, RsaKey};
use okd_types::release::{IgnitionSpec, ReleaseTarget};
use time::OffsetDateTime;

use crate::error::AssetError;

/// Everything an asset's `generate` may use besides its parents.
///
/// Generation is pure given a context: the same parents, clock and keys give the
/// same asset (keys and serial numbers are the random inputs).
pub struct GenCtx {
    /// "Now" for every certificate of this run (one clock read, so validity
    /// periods are exact multiples of hours).
    pub now: OffsetDateTime,
    /// Release image pull spec the cluster installs.
    pub release_image: String,
    /// Target release: decides the version-dependent rules.
    pub target: ReleaseTarget,
    /// Ignition spec written to bootstrap.ign, pointer configs and installer MachineConfigs.
    pub ignition_spec: IgnitionSpec,
    /// `OPENSHIFT_INSTALL_INVOKER` or "user", stored in `openshift-install-manifests.yaml`.
    pub invoker: String,
    /// The version string this installer reports (`openshift-install-manifests.yaml` data.version).
    pub installer_version: String,
    /// Whether the host runs in FIPS mode (`/proc/sys/crypto/fips_enabled`).
    pub host_fips: bool,
    /// Where `create install-config` obtains a config when the directory has
    /// none (interactive prompts or flags); `None` makes a missing
    /// `install-config.yaml` an error naming the file.
    pub install_config_source: Option<crate::installconfig::InstallConfigSource>,
    keys: Option<KeyPool>,
}

impl GenCtx {
    /// A context for `target` with the current time and no key pool (keys are
    /// generated on demand until [`GenCtx::start_key_pool`] is called).
    pub fn new(release_image: String, target: ReleaseTarget, ignition_spec: IgnitionSpec) -> Self {
        GenCtx {
            now: OffsetDateTime::now_utc()
                .replace_nanosecond(0)
                .expect("0 ns is valid"),
            release_image,
            target,
            ignition_spec,
            invoker: "user".to_string(),
            installer_version: format!("okd-install v{}", env!("CARGO_PKG_VERSION")),
            host_fips: std::fs::read_to_string("/proc/sys/crypto/fips_enabled")
                .map(|s| s.trim() == "1")
                .unwrap_or(false),
            install_config_source: None,
            keys: None,
        }
    }

    /// Starts generating `n` RSA-2048 keys in the background on `threads`
    /// threads, so certificate assets find their keys ready (installer.md §4.1:
    /// every key is RSA-2048; generation dominates the run time).
    pub fn start_key_pool(&mut self, n: usize, threads: usize) {
        if n > 0 {
            self.keys = Some(KeyPool::start(n, threads.max(1)));
        }
    }

    /// Takes a fresh RSA-2048 key: from the pool when one runs, else generated now.
    pub fn take_key(&self, what: &str) -> Result<RsaKey, AssetError> {
        let r = match &self.keys {
            Some(pool) => pool.take(),
            None => RsaKey::generate(),
        };
        r.map_err(|source| AssetError::Pki {
            what: what.to_string(),
            source,
        })
    }
}
