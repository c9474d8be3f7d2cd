//! The analysis of a bundle's service records (openshift/installer
//! `pkg/gather/service/analyze.go`): what each bootstrap service did, and
//! for those that failed, in plain words, which stage failed and the last
//! lines of its journal. The record format, its parser and the verdict per
//! service are `okd-service-record`'s, shared with the bootstrap node's
//! program that writes them.

pub use okd_service_record::{Entry, ServiceVerdict, judge, parse_entries, stage_words};

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
