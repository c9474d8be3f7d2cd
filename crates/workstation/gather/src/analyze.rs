//! The analysis of a bundle's service records (openshift/installer
//! `data/data/bootstrap/files/usr/local/bin/bootstrap-service-record.sh`,
//! `pkg/gather/service/analyze.go`): what each
//! bootstrap service did, and for those that failed, in plain words, which
//! stage failed and the last lines of its journal.
//!
//! A record file (`bootstrap/services/<service>.json`) is a JSON array of
//! entries `{timestamp, preCommand, postCommand, stage, phase, result,
//! errorLine, errorMessage}` (empty fields left out), or the same entries one
//! per line (what `bootstrap-service-record.sh` appends on the host). The
//! verdict per service follows openshift-install: it ran if it has a
//! `service start`; it succeeded if its last entry is a successful `service
//! end` or `post-command end`; the failing stage is the stage of the last
//! failure, kept from a failed `stage end` when the service's own failure
//! follows it; the error is the last failure's message.

use serde::Deserialize;

/// One entry of a service-record file.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", default)]
pub struct Entry {
    /// UTC, `%Y-%m-%dT%H:%M:%SZ`.
    pub timestamp: String,
    /// The pre-command's name, for its phases.
    pub pre_command: String,
    /// The post-command's name, for its phases.
    pub post_command: String,
    /// The stage, for stage phases.
    pub stage: String,
    /// `service start`, `service end`, `stage start`, `stage end`,
    /// `pre-command start|end`, `post-command start|end`.
    pub phase: String,
    /// `success` or `failure` (end phases).
    pub result: String,
    /// Where the script failed.
    pub error_line: String,
    /// The last journal lines of the unit when it failed.
    pub error_message: String,
}

/// Parses a record file: a JSON array of [`Entry`], or one entry per line.
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
    /// The last failure's message (the unit's last journal lines).
    pub last_error: String,
    /// Whether any entry recorded a failure.
    pub failed_ever: bool,
}

/// Judges a service from its entries.
pub fn judge(entries: &[Entry]) -> ServiceVerdict {
    let mut v = ServiceVerdict::default();
    let mut last: Option<&Entry> = None;
    for e in entries {
        if e.phase == "service start" {
            v.starts += 1;
        }
        v.successful =
            e.result == "success" && (e.phase == "service end" || e.phase == "post-command end");
        if e.result == "failure" {
            v.failed_ever = true;
            let keep_stage = last.is_some_and(|l| l.phase == "stage end" && l.result == "failure");
            if !keep_stage {
                v.failing_stage = e.stage.clone();
            }
            v.last_error = e.error_message.clone();
        }
        last = Some(e);
    }
    v
}

/// A bootstrap stage in plain words (the stages of openshift/installer
/// `data/data/bootstrap/files/usr/local/bin/bootkube.sh.template` and
/// okd-install's own), `None` for one this table does not know.
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

/// How serious a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// A failure.
    Error,
    /// Detail (the error lines).
    Info,
}

/// The findings for a bundle's record files, `(service, contents)` in bundle
/// order, as log lines: openshift-install's checks first (release-image,
/// then bootkube, each only when the one before succeeded), then every other
/// service that failed, each with its stage in plain words and the last
/// error lines. An empty list: nothing failed.
pub fn findings(records: &[(String, Vec<u8>)]) -> Vec<(Level, String)> {
    let mut out = Vec::new();
    if records.is_empty() {
        out.push((
            Level::Error,
            "Invalid log bundle or the bootstrap machine could not be reached and bootstrap logs were not collected".to_string(),
        ));
        return out;
    }
    let mut verdicts: Vec<(String, ServiceVerdict)> = Vec::new();
    for (name, data) in records {
        match parse_entries(data) {
            Ok(entries) => verdicts.push((name.clone(), judge(&entries))),
            Err(e) => out.push((
                Level::Info,
                format!("Could not analyze the {name}.service: {e}"),
            )),
        }
    }
    let get = |n: &str| verdicts.iter().find(|(name, _)| name == n).map(|(_, v)| v);
    let mut reported: Vec<&str> = Vec::new();
    for name in ["release-image", "bootkube"] {
        reported.push(name);
        let Some(v) = get(name).filter(|v| v.starts > 0) else {
            out.push((
                Level::Error,
                format!("The bootstrap machine did not execute the {name}.service systemd unit"),
            ));
            break;
        };
        if v.successful {
            continue;
        }
        if name == "release-image" {
            out.push((
                Level::Error,
                "The bootstrap machine failed to download the release image".to_string(),
            ));
            error_lines(&mut out, v);
            break;
        }
        out.push((Level::Error, failed_line(name, v)));
        error_lines(&mut out, v);
    }
    for (name, v) in &verdicts {
        if reported.contains(&name.as_str()) || v.successful || !v.failed_ever {
            continue;
        }
        out.push((Level::Error, failed_line(name, v)));
        error_lines(&mut out, v);
    }
    out
}

fn failed_line(name: &str, v: &ServiceVerdict) -> String {
    let mut s = if v.failing_stage.is_empty() {
        format!("The {name} service failed")
    } else {
        format!("The {name} service failed at stage {:?}", v.failing_stage)
    };
    if let Some(words) = stage_words(&v.failing_stage) {
        s += &format!(" ({words})");
    }
    if v.starts > 1 {
        s += &format!(", after {} starts", v.starts);
    }
    s
}

fn error_lines(out: &mut Vec<(Level, String)>, v: &ServiceVerdict) {
    for l in v.last_error.lines().filter(|l| !l.trim().is_empty()) {
        out.push((Level::Info, l.to_string()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(name: &str, text: &str) -> (String, Vec<u8>) {
        (name.to_string(), text.as_bytes().to_vec())
    }

    const RELEASE_OK: &str = r#"[{"phase":"service start"},{"phase":"stage start","stage":"pull-release-image"},{"phase":"stage end","stage":"pull-release-image","result":"success"},{"phase":"service end","result":"success"}]"#;

    #[test]
    fn a_failed_stage_is_named_in_plain_words_with_its_error_lines() {
        let bootkube = concat!(
            r#"{"timestamp":"2024-01-01T00:00:00Z","phase":"service start"}"#,
            "\n",
            r#"{"phase":"stage start","stage":"wait-for-etcd"}"#,
            "\n",
            r#"{"phase":"stage end","stage":"wait-for-etcd","result":"failure","errorLine":"12","errorMessage":"etcd not healthy\nconnection refused"}"#,
            "\n",
            r#"{"phase":"service end","result":"failure","errorMessage":"exit 1"}"#,
            "\n"
        );
        let f = findings(&[rec("release-image", RELEASE_OK), rec("bootkube", bootkube)]);
        assert_eq!(
            f[0],
            (
                Level::Error,
                "The bootkube service failed at stage \"wait-for-etcd\" (waiting for the bootstrap etcd to become healthy)".to_string()
            ),
            "{f:?}"
        );
        assert_eq!(f[1], (Level::Info, "exit 1".to_string()));
        assert_eq!(f.len(), 2, "{f:?}");
    }

    #[test]
    fn release_image_failure_stops_the_checks_like_upstream() {
        let release = r#"[{"phase":"service start"},{"phase":"stage start","stage":"pull-release-image"},{"phase":"stage end","stage":"pull-release-image","result":"failure","errorMessage":"unauthorized"},{"phase":"service end","result":"failure","errorMessage":"unauthorized"}]"#;
        let f = findings(&[rec("release-image", release)]);
        assert_eq!(
            f,
            vec![
                (
                    Level::Error,
                    "The bootstrap machine failed to download the release image".into()
                ),
                (Level::Info, "unauthorized".into())
            ]
        );
    }

    #[test]
    fn missing_services_and_other_failures() {
        assert_eq!(findings(&[])[0].0, Level::Error);
        let f = findings(&[rec("release-image", RELEASE_OK)]);
        assert_eq!(
            f,
            vec![(
                Level::Error,
                "The bootstrap machine did not execute the bootkube.service systemd unit".into()
            )]
        );
        let progress = r#"[{"phase":"service start"},{"phase":"service end","result":"failure"},{"phase":"service start"},{"phase":"stage start","stage":"report-bootstrap-complete"},{"phase":"stage end","stage":"report-bootstrap-complete","result":"failure","errorMessage":"forbidden"}]"#;
        let bootkube_ok =
            r#"[{"phase":"service start"},{"phase":"service end","result":"success"}]"#;
        let f = findings(&[
            rec("release-image", RELEASE_OK),
            rec("bootkube", bootkube_ok),
            rec("progress", progress),
            rec("broken", "{not json"),
        ]);
        assert!(
            f.contains(&(
                Level::Error,
                "The progress service failed at stage \"report-bootstrap-complete\" (creating the kube-system/bootstrap ConfigMap that wait-for bootstrap-complete waits for), after 2 starts".into()
            )),
            "{f:?}"
        );
        assert!(f.contains(&(Level::Info, "forbidden".into())), "{f:?}");
        assert!(
            f.iter()
                .any(|(_, l)| l.starts_with("Could not analyze the broken.service")),
            "{f:?}"
        );
    }

    #[test]
    fn success_is_only_a_final_successful_end() {
        let e = |phase: &str, result: &str| Entry {
            phase: phase.into(),
            result: result.into(),
            ..Entry::default()
        };
        assert!(judge(&[e("service start", ""), e("service end", "success")]).successful);
        assert!(!judge(&[e("service start", ""), e("stage end", "success")]).successful);
        assert!(
            judge(&[
                e("service start", ""),
                e("service end", "success"),
                e("post-command start", ""),
                e("post-command end", "success")
            ])
            .successful
        );
    }
}
