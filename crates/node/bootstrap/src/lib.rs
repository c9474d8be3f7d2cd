//! The bootstrap node's program: what `bootstrap.ign`'s units run in place
//! of openshift-install's shell scripts (openshift/installer
//! `data/data/bootstrap/files/usr/local/bin/`).
//!
//! - [`release_image`] is `release-image.service`
//!   (`release-image-download.sh`): the release pulled by digest through
//!   the mirrors, its architecture checked, image-references read into
//!   `/opt/openshift/okd-release.json` ([`release`]); retried with backoff
//!   while it fails, with the reason on the console
//!   (`/etc/issue.d/50_release-image.issue`) and in the service record
//!   `/var/log/openshift/release-image.json`.
//! - [`approve::approve_csr`] is `approve-csr.service`: the nodes of
//!   bootstrap.ign's inventory approved after the identity checks until
//!   bootkube is done (never every pending CSR).
//! - [`report::report_progress`] is `progress.service`: `.bootkube.done`,
//!   the HA wait, then ConfigMap `kube-system/bootstrap`.
//! - [`bootkube`] is `bootkube.service` (`bootkube.sh`): okd-bootkube's
//!   resumable stage machine with [`NodeStages`] doing each stage: the
//!   render stages (for a payload of upstream components by
//!   okd-bootstrap-render; for an OKD/OCP payload each operator's image
//!   by podman, [`operators`]), the bootstrap machine-config server (okd-mcs, in this process
//!   from `mco-bootstrap` until `cvo-overrides`), the DNS and readyz checks
//!   and `wait-for-etcd` ([`checks`]), and cluster-bootstrap
//!   (okd-cluster-bootstrap).
//! - On a single node (bootstrap-in-place), [`in_place`] builds the master
//!   config the node boots from after `install-to-disk`, and
//!   [`post_reboot::post_reboot`] is what that config's unit runs after the
//!   reboot, to `status: complete`.

pub mod approve;
pub mod bootstrap_member;
pub mod checks;
mod cvo;
pub mod handover;
pub mod in_place;
pub mod masters;
pub mod members;
pub mod operators;
pub mod post_reboot;
pub mod progress;
pub mod release;
pub mod report;
mod stages;

use std::time::{Duration, Instant};

use okd_service_record::Recorder;
use tracing::{info, warn};

pub use cvo::restore_cvo_overrides;
pub use release::{PullOptions, PulledRelease};
pub use stages::{
    CHECK_LIMIT, CVO_PATCH, CVO_RETRY, ETCD_LIMIT, NodeOptions, NodeStages, UPSTREAM_REQUIRED_PODS,
};

/// Checks that `work` is a bootstrap node's asset directory (bootstrap.ign
/// laid down `auth/kubeconfig-loopback` there), so that the node commands
/// never write their records, markers and console messages onto another
/// machine by mistake.
///
/// # Errors
/// A message naming the missing file and where the commands belong.
pub fn check_node(work: &std::path::Path) -> Result<(), String> {
    let marker = work.join("auth/kubeconfig-loopback");
    if marker.is_file() {
        Ok(())
    } else {
        Err(format!(
            "{} is missing: this is not a bootstrap node (the bootstrap Ignition config lays that file down); `okd-install bootstrap` commands run on the bootstrap node, from its units",
            marker.display()
        ))
    }
}

/// Runs `work`, a bootstrap unit's program that records itself as
/// `service` under `records`, until it ends or SIGTERM/SIGINT arrives
/// (`systemctl stop`, a reboot, the unit's timeout). On a signal the run is
/// recorded as killed ([`okd_service_record::record_killed`]: the open
/// stage and `service end` fail with `killed by SIGTERM`), so gather and
/// the dashboard do not read a stopped unit as one still running or done.
///
/// # Errors
/// The signal's name (`"SIGTERM"`, `"SIGINT"`) when one stopped `work`.
pub async fn until_signal<T>(
    records: &std::path::Path,
    service: &str,
    work: impl std::future::Future<Output = T>,
) -> Result<T, &'static str> {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        warn!("cannot watch for SIGTERM: a stop will not be recorded in {service}.json");
        return Ok(work.await);
    };
    let sig = tokio::select! {
        out = work => return Ok(out),
        _ = term.recv() => "SIGTERM",
        _ = int.recv() => "SIGINT",
    };
    warn!("{sig}: stopping {service}, recorded as a failure");
    if let Err(e) = okd_service_record::record_killed(records, service, sig) {
        warn!("could not record the stop of {service}: {e}");
    }
    Err(sig)
}

/// The release pull's unit in the service records (`release-image.json`).
pub const RELEASE_SERVICE: &str = "release-image";

/// The console message while the release cannot be pulled (the name
/// release-image-download.sh uses).
pub const RELEASE_ISSUE_FILE: &str = "50_release-image.issue";

/// The first wait after a failed pull; it doubles up to [`PULL_BACKOFF_MAX`].
pub const PULL_BACKOFF: Duration = Duration::from_secs(5);

/// The longest wait between two pulls.
pub const PULL_BACKOFF_MAX: Duration = Duration::from_secs(60);

/// Why the release pull stopped.
#[derive(Debug, thiserror::Error)]
pub enum ReleaseImageError {
    /// The release is for another architecture; pulling again cannot help.
    #[error("{0}")]
    Architecture(String),
    /// A local file is unusable (registries.conf, the pull secret).
    #[error("{0}")]
    Config(String),
    /// `give_up_after` passed and the release still cannot be pulled.
    #[error("{0}")]
    GaveUp(String),
    /// `okd-release.json` could not be written.
    #[error(transparent)]
    Fs(#[from] okd_fs::FsError),
}

fn record(r: Result<(), okd_fs::FsError>) {
    if let Err(e) = r {
        warn!("could not write the service record: {e}");
    }
}

fn console(dirs: &okd_bootkube::Dirs, text: Option<&str>) {
    let path = dirs.issue.join(RELEASE_ISSUE_FILE);
    match text {
        Some(t) => {
            if let Err(e) = okd_fs::write_atomic(&path, t.as_bytes(), 0o644) {
                warn!("could not write the console message: {e}");
            }
        }
        None => {
            let _ = std::fs::remove_file(&path);
        }
    }
}

/// `release-image.service`: pulls the release ([`release::pull`]) until it
/// works, waiting [`PULL_BACKOFF`] doubling to [`PULL_BACKOFF_MAX`] between
/// tries, then checks its architecture, and writes
/// `<work>/okd-release.json`. Stages `pull-release-image` and
/// `image-metadata-arches-match` go to `<records>/release-image.json`. A
/// file already written for the same release image is kept (a restart
/// pulls nothing).
///
/// # Errors
/// [`ReleaseImageError::Architecture`] and [`ReleaseImageError::Config`]
/// at once (with the console message), [`ReleaseImageError::GaveUp`] when
/// `give_up_after` passed (tests; the unit itself never gives up).
pub async fn release_image(
    opts: &PullOptions,
    dirs: &okd_bootkube::Dirs,
    give_up_after: Option<Duration>,
) -> Result<PulledRelease, ReleaseImageError> {
    if let Ok(have) = PulledRelease::load(&dirs.work)
        && have.release_image == opts.release_image
    {
        info!(
            "{} already holds {} ({}): nothing to pull",
            release::RELEASE_FILE,
            have.digest_pullspec,
            have.version
        );
        return Ok(have);
    }
    let mut rec = Recorder::new(&dirs.records, RELEASE_SERVICE);
    record(rec.service_start());
    record(rec.stage_start("pull-release-image"));
    let start = Instant::now();
    let mut wait = PULL_BACKOFF;
    let pulled = loop {
        match release::pull(opts).await {
            Ok(p) => break p,
            Err(release::PullError::Pull(msg)) => {
                console(
                    dirs,
                    Some(&format!(
                        "Unable to pull OpenShift release image {}: {msg}\nokd-install retries every {} s; `journalctl -u release-image` has every try.\n",
                        opts.release_image,
                        wait.as_secs()
                    )),
                );
                if let Some(limit) = give_up_after
                    && start.elapsed() + wait > limit
                {
                    record(rec.service_end(Some(("pull-release-image", &msg))));
                    return Err(ReleaseImageError::GaveUp(msg));
                }
                warn!("{msg}; trying again in {} s", wait.as_secs());
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(PULL_BACKOFF_MAX);
            }
            Err(release::PullError::Architecture(msg)) => {
                record(rec.stage_success());
                record(rec.stage_start("image-metadata-arches-match"));
                record(rec.service_end(Some(("image-metadata-arches-match", &msg))));
                console(dirs, Some(&format!("okd-install: {msg}\n")));
                return Err(ReleaseImageError::Architecture(msg));
            }
            Err(release::PullError::Config(msg)) => {
                record(rec.service_end(Some(("pull-release-image", &msg))));
                console(
                    dirs,
                    Some(&format!(
                        "okd-install: cannot pull the release image: {msg}\n"
                    )),
                );
                return Err(ReleaseImageError::Config(msg));
            }
        }
    };
    record(rec.stage_success());
    record(rec.stage_start("image-metadata-arches-match"));
    record(rec.stage_success());
    okd_fs::write_atomic(
        &dirs.work.join(release::RELEASE_FILE),
        format!(
            "{}\n",
            serde_json::to_string_pretty(&pulled).expect("serializable")
        )
        .as_bytes(),
        0o644,
    )?;
    console(dirs, None);
    record(rec.service_end(None));
    info!(
        "pulled the release {} (version {}, {} payload, {}) from {}",
        pulled.digest_pullspec,
        pulled.version,
        match pulled.kind {
            release::PayloadKind::Openshift => "OpenShift",
            release::PayloadKind::Upstream => "upstream",
        },
        pulled.architecture,
        pulled.pulled_from
    );
    Ok(pulled)
}

/// `bootkube.service`: runs bootkube's stages ([`okd_bootkube::run`]) with
/// [`NodeStages`], publishing the service records to the temporary API as
/// it goes ([`progress`]).
///
/// # Errors
/// [`okd_bootkube::BootkubeError`] for the stage that failed (the unit
/// fails; systemd starts it again and it resumes at that stage).
pub async fn bootkube(
    opts: NodeOptions,
) -> Result<okd_bootkube::Outcome, okd_bootkube::BootkubeError> {
    let dirs = opts.dirs.clone();
    let topology = opts.topology;
    let kubeconfig = dirs.work.join("auth/kubeconfig-loopback");
    let publisher = tokio::spawn(progress::publish(dirs.records.clone(), kubeconfig.clone()));
    let result = bootkube_stages(opts, &dirs, topology).await;
    publisher.abort();
    progress::publish_once(&dirs.records, &kubeconfig).await;
    result
}

async fn bootkube_stages(
    opts: NodeOptions,
    dirs: &okd_bootkube::Dirs,
    topology: okd_bootkube::Topology,
) -> Result<okd_bootkube::Outcome, okd_bootkube::BootkubeError> {
    let mut stages = match NodeStages::new(opts).await {
        Ok(s) => s,
        Err(f) => {
            return Err(okd_bootkube::BootkubeError::Stage {
                stage: "mco-bootstrap",
                message: f.message,
            });
        }
    };
    okd_bootkube::run(dirs, topology, &mut stages).await
}
