//! The generation context handed to every asset: clock, release, key pool,
//! random generator, and where a missing install-config comes from.
//!
//! The bottom of the crate's module graph beside `error` and `dir`: it
//! imports no asset module (`store`, `installconfig`, ...), which all import
//! it, so the modules depend one way.

use std::collections::VecDeque;
use std::sync::Mutex;

use okd_pki::{KeyPool, RsaKey};
use okd_types::release::{IgnitionSpec, ReleaseTarget};
use rand::rngs::StdRng;
use rand::{Rng as _, SeedableRng as _};
use time::OffsetDateTime;

use crate::error::AssetError;

/// How `create install-config` obtains a config when the directory has none:
/// the binary puts interactive prompts or flag answers into
/// [`GenCtx::install_config_source`]; the install-config asset runs it, then
/// up-converts, defaults and validates the result (openshift/installer
/// `pkg/asset/installconfig/installconfig.go`, the survey of
/// `pkg/asset/installconfig/basedomain.go` and its siblings).
///
/// # Errors
/// Whatever the source reports (e.g. no terminal to ask on), as [`AssetError`].
pub type InstallConfigSource =
    Box<dyn Fn() -> Result<okd_installconfig::InstallConfig, AssetError> + Send + Sync>;

/// Everything an asset's `generate` may use besides its parents.
///
/// Generation is pure given a context: the same parents, clock, keys and
/// random generator give the same asset. Every random draw of an asset
/// (cluster UUID and infraID suffix, kubeadmin password and its bcrypt
/// salt, certificate serial numbers) comes from the context's generator,
/// seeded from the OS unless [`GenCtx::seed`] pins it; RSA keys come from
/// the key pool, or from [`GenCtx::use_keys`].
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
    pub install_config_source: Option<InstallConfigSource>,
    /// The nodes whose CSRs the bootstrap node may approve (from the
    /// install's inventory, read by the command that creates the Ignition
    /// configs); `Some`: bootstrap.ign carries them as
    /// `/opt/openshift/okd-node-identities.json`. Enters the graph as
    /// [`crate::node_identities::NodeIdentitiesAsset`], so a change makes
    /// bootstrap.ign again.
    pub node_identities: Option<okd_types::node_identities::NodeIdentities>,
    /// The okd-install program bootstrap.ign carries. `None`: not decided
    /// yet, [`crate::create`] prepares it for the targets that write a
    /// bootstrap config ([`crate::node_program::prepare`]). Enters the graph
    /// as [`crate::node_program::NodeProgramAsset`], so a changed program
    /// makes bootstrap.ign again.
    pub node_program: Option<crate::node_program::NodeProgramAsset>,
    /// The cache of the large files Ignition configs embed
    /// ([`crate::blobs`]); `None`: the default one
    /// ([`crate::blobs::cache_dir`]). Tests give their own.
    pub cache_dir: Option<std::path::PathBuf>,
    /// Platform aws: write the machine API's Machine, MachineSet and
    /// ControlPlaneMachineSet manifests (openshift-install's IPI output).
    /// `false` (the default) leaves them out, as the AWS UPI procedure asks
    /// (openshift/installer `docs/user/aws/install_upi.md`, "Remove Machines
    /// and MachineSets"): the CloudFormation stacks make the machines.
    pub aws_machine_api: bool,
    /// Fault injection for tests: generating the asset with this display
    /// name (e.g. `Root CA`) fails with [`AssetError::Invalid`], so a test can
    /// make every asset of a command fail in turn. `None` in normal runs.
    #[doc(hidden)]
    pub fail_generating: Option<String>,
    keys: Option<KeyPool>,
    given_keys: Mutex<VecDeque<RsaKey>>,
    rng: Mutex<StdRng>,
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
            node_identities: None,
            node_program: None,
            cache_dir: None,
            aws_machine_api: false,
            fail_generating: None,
            keys: None,
            given_keys: Mutex::new(VecDeque::new()),
            rng: Mutex::new(StdRng::from_os_rng()),
        }
    }

    /// Replaces the random generator by one seeded with `seed` (ChaCha12,
    /// `rand::rngs::StdRng`): two runs with the same seed, clock and keys
    /// write the same bytes.
    pub fn seed(&mut self, seed: u64) {
        self.rng = Mutex::new(StdRng::seed_from_u64(seed));
    }

    /// Runs `f` with the context's random generator.
    pub fn with_rng<T>(&self, f: impl FnOnce(&mut StdRng) -> T) -> T {
        let mut rng = self.rng.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut rng)
    }

    /// A certificate serial number, uniform below [`okd_pki::SERIAL_LIMIT`].
    pub fn serial(&self) -> u64 {
        self.with_rng(|r| r.random_range(0..okd_pki::SERIAL_LIMIT))
    }

    /// Hands out `keys`, in order, before any pooled or generated key
    /// (tests pin the key material this way; the pool then plans only for
    /// what is still missing).
    pub fn use_keys(&mut self, keys: Vec<RsaKey>) {
        self.given_keys = Mutex::new(keys.into());
    }

    /// Starts generating `n` RSA-2048 keys in the background on `threads`
    /// threads, so certificate assets find their keys ready (openshift/installer
    /// `pkg/asset/tls/tls.go`:
    /// every key is RSA-2048; generation dominates the run time).
    pub fn start_key_pool(&mut self, n: usize, threads: usize) {
        let given = self
            .given_keys
            .get_mut()
            .map(|k| k.len())
            .unwrap_or_else(|e| e.into_inner().len());
        let n = n.saturating_sub(given);
        if n > 0 {
            self.keys = Some(KeyPool::start(n, threads.max(1)));
        }
    }

    /// Takes a fresh RSA-2048 key: from the pool when one runs, else generated now.
    pub fn take_key(&self, what: &str) -> Result<RsaKey, AssetError> {
        let given = self
            .given_keys
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop_front();
        if let Some(k) = given {
            return Ok(k);
        }
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
