//! The service records of the bootstrap node: what each bootstrap unit did,
//! stage by stage, as JSON entries appended to
//! `/var/log/openshift/<unit>.json`.
//!
//! The format is openshift-install's
//! (openshift/installer `data/data/bootstrap/files/usr/local/bin/bootstrap-service-record.sh`,
//! read back by `pkg/gather/service/analyze.go`): one JSON object per event,
//! `{timestamp, preCommand, postCommand, stage, phase, result, errorLine,
//! errorMessage}` with empty fields left out, the timestamp in UTC as
//! `%Y-%m-%dT%H:%M:%SZ`. Phases: `service start|end`, `stage start|end`,
//! `pre-command start|end`, `post-command start|end`; results `success` or
//! `failure` on end phases.
//!
//! One crate for the three sides of the format: [`Recorder`] writes it (the
//! bootstrap node's program), [`parse_entries`] and [`judge`] read it
//! (`gather bootstrap`'s analysis, the install dashboard), and
//! [`stage_words`] names every stage in plain words for all of them.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Where the bootstrap node keeps its records (openshift/installer
/// `bootstrap-service-record.sh`, `SERVICE_RECORDS_DIR`).
pub const RECORDS_DIR: &str = "/var/log/openshift";

/// `phase` of the first entry of a unit's run.
pub const SERVICE_START: &str = "service start";
/// `phase` of the last entry of a unit's run.
pub const SERVICE_END: &str = "service end";
/// `phase` when a stage begins.
pub const STAGE_START: &str = "stage start";
/// `phase` when a stage ends, with a result.
pub const STAGE_END: &str = "stage end";
/// `result` of an end phase that succeeded.
pub const SUCCESS: &str = "success";
/// `result` of an end phase that failed.
pub const FAILURE: &str = "failure";

fn is_empty(s: &str) -> bool {
    s.is_empty()
}

/// One entry of a service-record file. Empty fields are left out when
/// written and default to empty when read.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", default)]
pub struct Entry {
    /// UTC, `%Y-%m-%dT%H:%M:%SZ`.
    pub timestamp: String,
    /// The pre-command's name, for its phases.
    #[serde(skip_serializing_if = "is_empty")]
    pub pre_command: String,
    /// The post-command's name, for its phases.
    #[serde(skip_serializing_if = "is_empty")]
    pub post_command: String,
    /// The stage, for stage phases.
    #[serde(skip_serializing_if = "is_empty")]
    pub stage: String,
    /// `service start`, `service end`, `stage start`, `stage end`,
    /// `pre-command start|end`, `post-command start|end`.
    #[serde(skip_serializing_if = "is_empty")]
    pub phase: String,
    /// `success` or `failure` (end phases).
    #[serde(skip_serializing_if = "is_empty")]
    pub result: String,
    /// Where the program failed (a script line, or a source location).
    #[serde(skip_serializing_if = "is_empty")]
    pub error_line: String,
    /// The last lines of the unit's output when it failed.
    #[serde(skip_serializing_if = "is_empty")]
    pub error_message: String,
}

/// Parses a record file: a JSON array of [`Entry`] (what a gathered bundle
/// holds), or one entry per line (what the host appends).
///
/// # Errors
/// The position and reason when neither form parses.
pub fn parse_entries(data: &[u8]) -> Result<Vec<Entry>, String> {
    let text = String::from_utf8_lossy(data);
    let trimmed = text.trim_start();
    if trimmed.starts_with('[') {
        return serde_json::from_str(trimmed).map_err(|e| e.to_string());
    }
    trimmed
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| serde_json::from_str(l).map_err(|e| format!("line {}: {e}", i + 1)))
        .collect()
}

/// What one service did, by openshift-install's rules.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServiceVerdict {
    /// How many times it started.
    pub starts: usize,
    /// Whether its last run ended in success.
    pub successful: bool,
    /// The stage its last failure happened in (empty: outside any stage).
    pub failing_stage: String,
    /// The last failure's message (the unit's last output lines).
    pub last_error: String,
    /// Whether any entry recorded a failure.
    pub failed_ever: bool,
}

/// Judges a service from its entries (openshift/installer
/// `pkg/gather/service/analyze.go`): it ran if it has a `service start`; it
/// succeeded if its last entry is a successful `service end` or
/// `post-command end`; the failing stage is the stage of the last failure,
/// kept from a failed `stage end` when the service's own failure follows
/// it; the error is the last failure's message.
pub fn judge(entries: &[Entry]) -> ServiceVerdict {
    let mut v = ServiceVerdict::default();
    let mut last: Option<&Entry> = None;
    for e in entries {
        if e.phase == SERVICE_START {
            v.starts += 1;
        }
        v.successful =
            e.result == SUCCESS && (e.phase == SERVICE_END || e.phase == "post-command end");
        if e.result == FAILURE {
            v.failed_ever = true;
            let keep_stage = last.is_some_and(|l| l.phase == STAGE_END && l.result == FAILURE);
            if !keep_stage {
                v.failing_stage = e.stage.clone();
            }
            v.last_error = e.error_message.clone();
        }
        last = Some(e);
    }
    v
}

/// Where a service stands by its entries, for live displays (serve's
/// dashboard, `wait-for bootstrap-complete`).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Progress {
    /// Stages that ended in success, in the order they did (a stage that
    /// succeeded in an earlier run of the service counts once).
    pub done: Vec<String>,
    /// The stage started and not ended yet in the last run.
    pub running: Option<String>,
    /// The last failure of the last run: stage (empty outside any stage)
    /// and message; `None` once a later stage started or the run ended well.
    pub failure: Option<(String, String)>,
    /// Whether the last run ended in success (`service end` / `success`).
    pub complete: bool,
    /// How many times the service started.
    pub starts: usize,
    /// The time of the last entry.
    pub last_time: String,
}

/// Namespace and name of the ConfigMap in which the bootstrap node
/// publishes its service records while it runs (data `<service>.json`:
/// the record's last lines), for serve's dashboard and `wait-for`
/// (written by okd-bootstrap `progress`).
pub const PROGRESS_CONFIGMAP: (&str, &str) = ("kube-system", "okd-install-bootstrap-progress");

/// [`progress`] of a record's text (JSON lines); `None` when it does not
/// parse.
pub fn progress_of(record: &str) -> Option<Progress> {
    parse_entries(record.as_bytes()).ok().map(|e| progress(&e))
}

/// Summarises `entries` (one service's record, oldest first) into a
/// [`Progress`].
pub fn progress(entries: &[Entry]) -> Progress {
    let mut p = Progress::default();
    for e in entries {
        p.last_time = e.timestamp.clone();
        match (e.phase.as_str(), e.result.as_str()) {
            (SERVICE_START, _) => {
                p.starts += 1;
                p.running = None;
                p.complete = false;
            }
            (STAGE_START, _) => {
                p.running = Some(e.stage.clone());
                p.failure = None;
            }
            (STAGE_END, SUCCESS) => {
                p.running = None;
                if !p.done.contains(&e.stage) {
                    p.done.push(e.stage.clone());
                }
            }
            (STAGE_END, FAILURE) => {
                p.running = None;
                p.failure = Some((e.stage.clone(), e.error_message.clone()));
            }
            (SERVICE_END, SUCCESS) => {
                p.running = None;
                p.failure = None;
                p.complete = true;
            }
            (SERVICE_END, FAILURE) => {
                p.running = None;
                if p.failure.is_none() {
                    p.failure = Some((String::new(), e.error_message.clone()));
                }
            }
            _ => {}
        }
    }
    p
}

/// A bootstrap stage in plain words (the stages of openshift/installer
/// `data/data/bootstrap/files/usr/local/bin/bootkube.sh.template`,
/// `release-image-download.sh`, `report-progress.sh`,
/// `bootstrap-in-place.sh` and okd-install's own), `None` for one this
/// table does not know.
pub fn stage_words(stage: &str) -> Option<&'static str> {
    Some(match stage {
        "pull-release-image" => "pulling the release image",
        "image-metadata-arches-match" => {
            "checking that the release image is for this host's architecture"
        }
        "crio-configure" => "configuring CRI-O with the release's pause image",
        "openshift-manifests" => "copying the openshift/ manifests",
        "api-bootstrap" | "auth-api-bootstrap" => "rendering the API's custom resource definitions",
        "config-bootstrap" => "rendering the cluster config operator's manifests",
        "cvo-bootstrap" => "rendering the cluster-version operator",
        "etcd-bootstrap" => "rendering the bootstrap etcd",
        "kube-apiserver-bootstrap" => "rendering the bootstrap kube-apiserver",
        "kube-controller-manager-bootstrap" => "rendering the bootstrap kube-controller-manager",
        "kube-scheduler-bootstrap" => "rendering the bootstrap kube-scheduler",
        "ingress-operator-bootstrap" => "rendering the ingress operator's manifests",
        "node-tuning-bootstrap" => "rendering the node tuning operator's manifests",
        "cmdbootline-nto-bootstrap" => "rendering the single node's kernel command line",
        "mco-bootstrap" => "rendering the machine-config operator and its bootstrap server",
        "cco-bootstrap" => "rendering the cloud credential operator",
        "resolve-api-url" | "resolve-api-int-url" => "resolving the API's DNS names",
        "check-api-url" | "check-api-int-url" => "reaching the API through the load balancer",
        "wait-for-etcd" => "waiting for the bootstrap etcd to become healthy",
        "cb-bootstrap" => {
            "cluster-bootstrap: starting the bootstrap control plane and creating the manifests"
        }
        "cvo-overrides" => "restoring the cluster-version operator's overrides",
        "wait-for-ceo" => "waiting for the cluster-etcd-operator to take over etcd",
        "wait-for-bootstrap-complete" => "waiting for bootkube to finish",
        "report-bootstrap-complete" => {
            "creating the kube-system/bootstrap ConfigMap that wait-for bootstrap-complete waits for"
        }
        "pivot" => "rebooting into the release's OS image",
        "wait-for-bootkube" | "coreos-installer" | "reboot" => "installing the single node to disk",
        "stop-etcd" | "master-ignition" => "preparing the single node's master Ignition",
        _ => return None,
    })
}

/// The current time as a record's timestamp: UTC, `%Y-%m-%dT%H:%M:%SZ`.
pub fn timestamp_now() -> String {
    let t = time::OffsetDateTime::now_utc();
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    )
}

/// Records that unit `service`'s run was stopped by `signal` (`"SIGTERM"`,
/// `"SIGINT"`): the stage its last run left open, if any, ends as failed,
/// then `service end` / `failure`, both with the message `killed by
/// <signal>`, as `bootstrap-service-record.sh`'s signal traps write it.
/// Nothing is written when the last run already ended (its last entry is a
/// `service end`) or the record does not exist.
///
/// # Errors
/// [`okd_fs::FsError`] when the record cannot be read or appended to.
pub fn record_killed(dir: &Path, service: &str, signal: &str) -> Result<(), okd_fs::FsError> {
    let rec = Recorder::new(dir, service);
    let data = match std::fs::read(rec.path()) {
        Ok(d) => d,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(source) => {
            return Err(okd_fs::FsError::Io {
                action: "reading the service record",
                path: rec.path().to_path_buf(),
                source,
            });
        }
    };
    // A record that does not parse still gets its end: it is appended.
    let entries = parse_entries(&data).unwrap_or_default();
    let run = entries
        .iter()
        .rposition(|e| e.phase == SERVICE_START)
        .map_or(&entries[..], |i| &entries[i..]);
    if run.last().is_some_and(|e| e.phase == SERVICE_END) {
        return Ok(());
    }
    let mut open: Option<&str> = None;
    for e in run {
        if e.phase == STAGE_START {
            open = Some(&e.stage);
        } else if e.phase == STAGE_END && open == Some(e.stage.as_str()) {
            open = None;
        }
    }
    let message = format!("killed by {signal}");
    let mut rec = rec;
    if let Some(stage) = open {
        rec.open_stage = Some(stage.to_string());
        rec.stage_failure("", &message)?;
    }
    rec.append(Entry {
        phase: SERVICE_END.into(),
        result: FAILURE.into(),
        error_message: message,
        ..Entry::default()
    })
}

/// Appends a unit's entries to `<dir>/<service>.json`, one JSON object per
/// line, as `bootstrap-service-record.sh` does. Each entry is one `write`
/// on a file opened for appending, so entries of concurrent writers never
/// interleave; the directory is made when missing (0755) and the file is
/// created 0644 (records hold stage names and error lines, never secrets:
/// callers must not put one in an error message).
///
/// The recorder remembers the stage that is open, so
/// [`Recorder::stage_success`] and [`Recorder::stage_failure`] close it and
/// [`Recorder::service_end`] closes one left open as failed.
#[derive(Debug, Clone)]
pub struct Recorder {
    file: PathBuf,
    open_stage: Option<String>,
}

impl Recorder {
    /// A recorder for unit `service` (without `.service`) in `dir`
    /// (normally [`RECORDS_DIR`]).
    pub fn new(dir: &Path, service: &str) -> Self {
        Recorder {
            file: dir.join(format!("{service}.json")),
            open_stage: None,
        }
    }

    /// The record file, `<dir>/<service>.json`.
    pub fn path(&self) -> &Path {
        &self.file
    }

    /// The stage started and not yet ended, if any.
    pub fn open_stage(&self) -> Option<&str> {
        self.open_stage.as_deref()
    }

    /// Appends one entry, stamped now.
    ///
    /// # Errors
    /// [`okd_fs::FsError`] naming the directory or file that could not be made
    /// or written.
    pub fn append(&self, mut entry: Entry) -> Result<(), okd_fs::FsError> {
        if entry.timestamp.is_empty() {
            entry.timestamp = timestamp_now();
        }
        let mut line = serde_json::to_vec(&entry).expect("an Entry always serializes");
        line.push(b'\n');
        if let Some(dir) = self.file.parent() {
            okd_fs::create_dir_all(dir, 0o755)?;
        }
        let mut f = okd_fs::open_append(&self.file, 0o644)?;
        f.write_all(&line).map_err(|e| okd_fs::FsError::Io {
            action: "appending a service record to",
            path: self.file.clone(),
            source: e,
        })
    }

    /// `service start`.
    ///
    /// # Errors
    /// As [`Recorder::append`].
    pub fn service_start(&mut self) -> Result<(), okd_fs::FsError> {
        self.append(Entry {
            phase: SERVICE_START.into(),
            ..Entry::default()
        })
    }

    /// `service end`: success, or failure with where and why. A stage left
    /// open is ended as failed first (with the same error), as the shell
    /// recorder's exit trap does.
    ///
    /// # Errors
    /// As [`Recorder::append`].
    pub fn service_end(&mut self, failure: Option<(&str, &str)>) -> Result<(), okd_fs::FsError> {
        if let Some((line, message)) = failure {
            if self.open_stage.is_some() {
                self.stage_failure(line, message)?;
            }
            self.append(Entry {
                phase: SERVICE_END.into(),
                result: FAILURE.into(),
                error_line: line.into(),
                error_message: message.into(),
                ..Entry::default()
            })
        } else {
            self.append(Entry {
                phase: SERVICE_END.into(),
                result: SUCCESS.into(),
                ..Entry::default()
            })
        }
    }

    /// `stage start` of `stage`, which becomes the open stage.
    ///
    /// # Errors
    /// As [`Recorder::append`].
    pub fn stage_start(&mut self, stage: &str) -> Result<(), okd_fs::FsError> {
        self.open_stage = Some(stage.to_string());
        self.append(Entry {
            stage: stage.into(),
            phase: STAGE_START.into(),
            ..Entry::default()
        })
    }

    /// `stage end` / `success` of the open stage (no entry when none is open).
    ///
    /// # Errors
    /// As [`Recorder::append`].
    pub fn stage_success(&mut self) -> Result<(), okd_fs::FsError> {
        let Some(stage) = self.open_stage.take() else {
            return Ok(());
        };
        self.append(Entry {
            stage,
            phase: STAGE_END.into(),
            result: SUCCESS.into(),
            ..Entry::default()
        })
    }

    /// `stage end` / `failure` of the open stage, with where it failed and
    /// the message (no entry when none is open).
    ///
    /// # Errors
    /// As [`Recorder::append`].
    pub fn stage_failure(
        &mut self,
        error_line: &str,
        message: &str,
    ) -> Result<(), okd_fs::FsError> {
        let Some(stage) = self.open_stage.take() else {
            return Ok(());
        };
        self.append(Entry {
            stage,
            phase: STAGE_END.into(),
            result: FAILURE.into(),
            error_line: error_line.into(),
            error_message: message.into(),
            ..Entry::default()
        })
    }
}

#[cfg(test)]
mod tests;
