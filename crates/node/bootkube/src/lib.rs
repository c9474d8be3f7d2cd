//! bootkube on the bootstrap node: its stages as a resumable state machine.
//!
//! openshift-install's `bootkube.service` runs `bootkube.sh` (openshift/installer
//! `data/data/bootstrap/files/usr/local/bin/bootkube.sh.template`,
//! `data/data/bootstrap/systemd/common/units/bootkube.service`): every
//! stage is skipped when its `<stage>.done` marker exists in
//! `/opt/openshift`, each stage's start and end is appended to the service
//! record `/var/log/openshift/bootkube.json`, a failure ends the unit and
//! systemd restarts it five seconds later (`Restart=on-failure`), and
//! `.bootkube.done` ends it for good. [`run`] is that loop over
//! [`STAGES`]; what each stage does is the caller's [`Stages`]
//! implementation, so the same machine drives the real stages and the
//! tests' stand-ins.
//!
//! A failure is also written to the console (`/etc/issue.d`, as
//! `release-image-download.sh` does for a release it cannot pull), and the
//! console message is removed again when a later run gets past the stage.

mod stages;

use std::future::Future;
use std::path::{Path, PathBuf};

use okd_service_record::Recorder;
use tracing::{info, warn};

pub use stages::{BOOTKUBE_DONE, Marker, Only, STAGES, Stage, Topology, stages_for};

/// The unit's name in the service records (`bootkube.json`).
pub const SERVICE: &str = "bootkube";

/// The console message file of a failed stage, in the issue directory.
pub const ISSUE_FILE: &str = "60_okd-install-bootkube.issue";

/// The directories bootkube works in; on a node they are the defaults of
/// [`Dirs::node`], tests give their own.
#[derive(Debug, Clone)]
pub struct Dirs {
    /// The asset directory with the `.done` markers (`/opt/openshift`).
    pub work: PathBuf,
    /// Where the service records go (`/var/log/openshift`).
    pub records: PathBuf,
    /// The console's message directory (`/etc/issue.d`).
    pub issue: PathBuf,
}

impl Dirs {
    /// The bootstrap node's directories.
    pub fn node() -> Self {
        Dirs {
            work: PathBuf::from("/opt/openshift"),
            records: PathBuf::from(okd_service_record::RECORDS_DIR),
            issue: PathBuf::from("/etc/issue.d"),
        }
    }
}

/// Why a stage failed, for the record, the console and the log. It must not
/// hold a secret: it is written to world-readable places.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StageFailure {
    /// What went wrong, in words a user can act on.
    pub message: String,
    /// Whether bootkube stops here (the unit fails and systemd starts it
    /// again) or records the failure and goes on, as bootkube.sh does for
    /// its DNS and readyz checks.
    pub stops: bool,
}

impl StageFailure {
    /// A failure with `message` that stops bootkube.
    pub fn new(message: impl Into<String>) -> Self {
        StageFailure {
            message: message.into(),
            stops: true,
        }
    }

    /// A failure that is recorded (`stage end` / `failure` in the service
    /// record, a warning in the log) while bootkube goes on with the next
    /// stage (bootkube.sh's `resolve-api-url`, `check-api-url`, …).
    pub fn recorded(message: impl Into<String>) -> Self {
        StageFailure {
            message: message.into(),
            stops: false,
        }
    }
}

/// What each stage does. [`run`] calls [`Stages::run`] once per stage that
/// is not already done, in [`STAGES`] order.
pub trait Stages {
    /// Runs `stage` to its end. Waits inside a stage (etcd healthy, the API
    /// ready) retry on their own and return only when done or given up.
    fn run(&mut self, stage: &'static Stage) -> impl Future<Output = Result<(), StageFailure>>;
}

/// How a run of bootkube ended, when it did not fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Every stage ran or was already done; `.bootkube.done` was written.
    Completed,
    /// `.bootkube.done` existed: nothing ran (the unit's start condition).
    AlreadyComplete,
}

/// A run of bootkube that stopped.
#[derive(Debug, thiserror::Error)]
pub enum BootkubeError {
    /// A stage failed; systemd starts the unit again and it resumes there.
    #[error("bootkube stage {stage} failed: {message}")]
    Stage {
        /// The stage's name.
        stage: &'static str,
        /// Why, as the stage said.
        message: String,
    },
    /// A marker or the console message could not be written.
    #[error(transparent)]
    Fs(#[from] okd_fs::FsError),
}

/// Runs bootkube's stages for `topology` in order, skipping those whose
/// marker exists, recording each in `<records>/bootkube.json`.
///
/// # Errors
/// [`BootkubeError::Stage`] for the first stage that fails (its
/// `.done` marker is not written, so the next run starts there), after
/// recording the failure and writing it to the console;
/// [`BootkubeError::Fs`] when a marker cannot be written. A service record
/// that cannot be written is logged and does not stop the install.
pub async fn run<S: Stages>(
    dirs: &Dirs,
    topology: Topology,
    stages: &mut S,
) -> Result<Outcome, BootkubeError> {
    if dirs.work.join(BOOTKUBE_DONE).exists() {
        info!(
            "{BOOTKUBE_DONE} exists in {}: bootkube already completed",
            dirs.work.display()
        );
        return Ok(Outcome::AlreadyComplete);
    }
    let mut rec = Recorder::new(&dirs.records, SERVICE);
    record(rec.service_start());
    for stage in stages_for(topology) {
        if let Some(marker) = stage.marker_file()
            && dirs.work.join(&marker).exists()
        {
            info!("stage {}: skipped, {marker} exists", stage.name);
            continue;
        }
        if let Some(other) = stage.skip_if
            && dirs.work.join(other).exists()
        {
            info!("stage {}: skipped, {other} exists", stage.name);
            continue;
        }
        info!("stage {}: starting", stage.name);
        record(rec.stage_start(stage.name));
        match stages.run(stage).await {
            Ok(()) => {
                if let Some(marker) = stage.marker_file() {
                    okd_fs::write_atomic(&dirs.work.join(marker), b"", 0o644)?;
                }
                record(rec.stage_success());
                clear_console(&dirs.issue);
                info!("stage {}: done", stage.name);
            }
            Err(f) if !f.stops => {
                record(rec.stage_failure("", &f.message));
                warn!(
                    "stage {}: failed, recorded, going on: {}",
                    stage.name, f.message
                );
            }
            Err(f) => {
                record(rec.service_end(Some((stage.name, &f.message))));
                let words = okd_service_record::stage_words(stage.name).unwrap_or(stage.name);
                let console = format!(
                    "okd-install: the bootstrap is stuck {words} (bootkube stage {}): {}\n\
                     It retries every few seconds; `journalctl -u bootkube` on this host, or \
                     `okd-install gather bootstrap` from the workstation, has the details.\n",
                    stage.name, f.message
                );
                if let Err(e) =
                    okd_fs::write_atomic(&dirs.issue.join(ISSUE_FILE), console.as_bytes(), 0o644)
                {
                    warn!("could not write the console message: {e}");
                }
                return Err(BootkubeError::Stage {
                    stage: stage.name,
                    message: f.message,
                });
            }
        }
    }
    okd_fs::write_atomic(&dirs.work.join(BOOTKUBE_DONE), b"", 0o644)?;
    record(rec.service_end(None));
    clear_console(&dirs.issue);
    info!("bootkube.service complete");
    Ok(Outcome::Completed)
}

fn record(r: Result<(), okd_fs::FsError>) {
    if let Err(e) = r {
        warn!("could not write the service record: {e}");
    }
}

fn clear_console(issue: &Path) {
    match std::fs::remove_file(issue.join(ISSUE_FILE)) {
        Ok(()) => info!(
            "removed the console message {}",
            issue.join(ISSUE_FILE).display()
        ),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => warn!("could not remove the console message: {e}"),
    }
}
