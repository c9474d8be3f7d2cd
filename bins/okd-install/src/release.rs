//! The release a command generates for: `--release-image`,
//! `--release-version`, `--ignition-spec`,
//! `OPENSHIFT_INSTALL_RELEASE_IMAGE_OVERRIDE` and what the state file
//! recorded (openshift/installer `pkg/asset/releaseimage/pullspec.go`, the
//! release image asset and its override variable, and `default.go`).

use okd_assets::GenCtx;
use okd_types::release::{DEFAULT_RELEASE_IMAGE, IgnitionSpec, ReleaseTarget};
use tracing::warn;

/// The release options, offered only by the commands that generate for a
/// release (`create install-config`, `manifests`, `ignition-configs`,
/// `single-node-ignition-config`).
#[derive(clap::Args, Debug, Clone, Default)]
pub(crate) struct ReleaseOpts {
    /// Release image to install [env: OPENSHIFT_INSTALL_RELEASE_IMAGE_OVERRIDE];
    /// its tag selects the target release (default: the one the directory's
    /// state file records, else a current OKD 4.x). A release other than the
    /// recorded one regenerates what depends on it.
    #[arg(long = "release-image")]
    release_image: Option<String>,
    /// Target release 4.<minor> when the image tag does not tell (e.g. a digest).
    #[arg(long = "release-version")]
    release_version: Option<String>,
    /// Ignition spec to write (3.0.0-3.4.0); default follows the release.
    #[arg(long = "ignition-spec")]
    ignition_spec: Option<String>,
}

/// The options of the commands that write manifests (`create manifests`,
/// `ignition-configs`, `single-node-ignition-config`): the release, and
/// whether platform aws keeps the machine API's manifests. `create
/// cluster` (libvirt VMs) has only the release.
#[derive(clap::Args, Debug, Clone, Default)]
pub(crate) struct AssetOpts {
    #[command(flatten)]
    pub(crate) release: ReleaseOpts,
    /// Platform aws: also write the machine API's Machine and MachineSet
    /// manifests (installer-provisioned style). Left out by default, as the
    /// AWS UPI procedure asks: `create aws-stacks` makes the machines.
    #[arg(long = "with-machine-api")]
    pub(crate) with_machine_api: bool,
}

impl AssetOpts {
    /// The options of a command that offers only the release ones.
    pub(crate) fn release_only(release: &ReleaseOpts) -> AssetOpts {
        AssetOpts {
            release: release.clone(),
            with_machine_api: false,
        }
    }
}

/// Decides the release image, target and Ignition spec for `dir`: flag, else
/// `OPENSHIFT_INSTALL_RELEASE_IMAGE_OVERRIDE`, else what an earlier run
/// recorded in the state file (image, target release and Ignition spec),
/// else the default. The target comes from `--release-version`, else the
/// record when the image is the recorded one, else the image's tag; the spec
/// from `--ignition-spec`, else the record when image and target are the
/// recorded ones, else the release's.
///
/// # Errors
/// An unreadable state file, a bad `--release-version`/`--ignition-spec`,
/// or an image whose tag does not tell the release (a digest) without
/// `--release-version`.
pub(crate) fn release_context(dir: &std::path::Path, opts: &ReleaseOpts) -> anyhow::Result<GenCtx> {
    let env = std::env::var("OPENSHIFT_INSTALL_RELEASE_IMAGE_OVERRIDE")
        .ok()
        .filter(|s| !s.is_empty());
    if env.is_some() && opts.release_image.is_none() {
        warn!(
            "Found override for release image ({}). Please be warned, this is not advised",
            env.as_deref().unwrap_or_default()
        );
    }
    let recorded = okd_assets::InstallFacts::read(dir)?.release()?;
    let image = opts
        .release_image
        .clone()
        .or(env)
        .or_else(|| recorded.as_ref().map(|r| r.pull_spec.clone()))
        .unwrap_or_else(|| DEFAULT_RELEASE_IMAGE.to_string());
    let recorded = recorded.filter(|r| r.pull_spec == image);
    let okd_hint = image.contains("okd");
    let target = match &opts.release_version {
        Some(v) => ReleaseTarget::parse_version(v, okd_hint)?,
        None => match recorded.as_ref().and_then(|r| r.target()) {
            Some(t) => t,
            None => ReleaseTarget::from_release_image(&image).ok_or_else(|| {
                anyhow::anyhow!(
                    "cannot tell the release version from {image:?}: add --release-version 4.<minor>"
                )
            })?,
        },
    };
    let spec = match &opts.ignition_spec {
        Some(s) => s.parse::<IgnitionSpec>()?,
        None => recorded
            .filter(|r| r.target() == Some(target))
            .and_then(|r| r.spec())
            .unwrap_or_else(|| target.ignition_spec()),
    };
    let mut ctx = GenCtx::new(image, target, spec);
    if let Ok(inv) = std::env::var("OPENSHIFT_INSTALL_INVOKER")
        && !inv.is_empty()
    {
        ctx.invoker = inv;
    }
    Ok(ctx)
}

/// The release for commands that do not generate for one (`version`,
/// `mirror`): [`release_context`] without options, and when it fails (e.g. a
/// digest in `OPENSHIFT_INSTALL_RELEASE_IMAGE_OVERRIDE`) a warning and the
/// default release, as openshift-install's `version` only warns.
pub(crate) fn release_context_lenient(dir: &std::path::Path) -> GenCtx {
    release_context(dir, &ReleaseOpts::default()).unwrap_or_else(|e| {
        let t = ReleaseTarget::default_target();
        warn!("{e:#}; this command goes on with the rules of release {t}");
        let image = std::env::var("OPENSHIFT_INSTALL_RELEASE_IMAGE_OVERRIDE")
            .ok()
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| DEFAULT_RELEASE_IMAGE.to_string());
        GenCtx::new(image, t, t.ignition_spec())
    })
}
