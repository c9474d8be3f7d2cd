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
    findings_with_journals(records, &[])
}

/// The TLS reason of a failed pull in `text` (a record's error message or
/// a unit's journal): the last line naming a certificate problem (Go's
/// `x509: …`, rustls' `UnknownIssuer` / `invalid peer certificate`,
/// `certificate signed by unknown authority`), from the reason on, at
/// most 300 characters.
pub fn tls_reason(text: &str) -> Option<String> {
    const MARKS: [&str; 4] = [
        "x509:",
        "invalid peer certificate",
        "UnknownIssuer",
        "certificate signed by unknown authority",
    ];
    text.lines().rev().find_map(|l| {
        let at = MARKS.iter().filter_map(|m| l.find(m)).min()?;
        Some(l[at..].trim().chars().take(300).collect())
    })
}

/// [`findings`] with the journals the bundle holds (unit, text): a failed
/// release pull's TLS reason is quoted from its record or its journal,
/// with the fix (openshift-install only says the download failed).
pub fn findings_with_journals(
    records: &[(String, Vec<u8>)],
    journals: &[(String, String)],
) -> Vec<(Level, String)> {
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
            let journal = journals
                .iter()
                .find(|(u, _)| u == name)
                .map(|(_, t)| t.as_str());
            if let Some(reason) = tls_reason(&v.last_error).or_else(|| journal.and_then(tls_reason))
            {
                out.push((
                    Level::Error,
                    format!(
                        "The registry's certificate is not trusted by the bootstrap machine: {reason}; add the mirror registry's CA to additionalTrustBundle in install-config.yaml (and name the mirror in imageContentSources or imageDigestSources), then create the Ignition configs again"
                    ),
                ));
            }
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
    for (key, text) in journals {
        let host = match key.strip_suffix("/kubelet") {
            Some(h) => h,
            None if key == "kubelet" => "the bootstrap machine",
            None => continue,
        };
        if let Some(f) = lookup_failure(text) {
            out.push((Level::Error, f.finding(host)));
        }
    }
    out
}

/// A name lookup that failed, as Go's resolver words it in a client's
/// error (`dial tcp: lookup api-int.<domain> on 192.168.1.1:53: no such
/// host`, `… : i/o timeout`, `… : server misbehaving`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LookupFailure {
    /// The name asked for.
    pub name: String,
    /// The nameserver asked (`address:port`).
    pub nameserver: String,
    /// The resolver's reason (`no such host`, `i/o timeout`, …).
    pub reason: String,
}

impl LookupFailure {
    /// The finding for `host`'s kubelet: the name, the nameserver, its
    /// answer and the fix.
    pub fn finding(&self, host: &str) -> String {
        let LookupFailure {
            name,
            nameserver,
            reason,
        } = self;
        let fix = if reason.contains("no such host") {
            format!(
                "give {name} an A record with the API address in that nameserver (okd-install serve's DNS has one; bastion-config.yaml for a DNS of your own), or point the host at serve's DNS"
            )
        } else {
            format!(
                "make the nameserver {nameserver} answer the host, or point the host at one that resolves {name} (okd-install serve's DNS)"
            )
        };
        format!(
            "The kubelet on {host} cannot resolve {name}: its nameserver {nameserver} answers \"{reason}\", so it cannot reach the API to join the cluster; {fix}. `okd-install preflight` asks every node's nameserver before the nodes boot"
        )
    }
}

/// The last failed lookup of an API name (`api.` or `api-int.`) in a
/// kubelet journal ([`LookupFailure`]); `None` when there is none.
pub fn lookup_failure(text: &str) -> Option<LookupFailure> {
    text.lines().rev().find_map(|line| {
        let mut rest = line;
        while let Some(at) = rest.find("lookup ") {
            rest = &rest[at + "lookup ".len()..];
            let Some((name, after)) = rest.split_once(" on ") else {
                continue;
            };
            if name.contains(char::is_whitespace)
                || !(name.starts_with("api.") || name.starts_with("api-int."))
            {
                continue;
            }
            let Some((nameserver, reason)) = after.split_once(": ") else {
                continue;
            };
            let reason: String = reason
                .chars()
                .take_while(|c| !matches!(c, '"' | '\\'))
                .collect();
            return Some(LookupFailure {
                name: name.to_string(),
                nameserver: nameserver.to_string(),
                reason: reason.trim().to_string(),
            });
        }
        None
    })
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

    #[test]
    fn failed_api_lookups_are_found_in_a_kubelet_journal() {
        let journal = r#"Nov 27 13:00:01 master0 kubelet[812]: I1127 13:00:01.1 812 server.go:520] "Kubelet version" kubeletVersion="v1.32.4"
Nov 27 13:00:02 master0 kubelet[812]: E1127 13:00:02.2 812 certificate_manager.go:562] "Unhandled Error" err="kubernetes.io/kube-apiserver-client-kubelet: Failed while requesting a signed certificate from the control plane: cannot create certificate signing request: Post \"https://api-int.okd.example:6443/apis/certificates.k8s.io/v1/certificatesigningrequests\": dial tcp: lookup api-int.okd.example on 192.168.120.1:53: no such host" logger="UnhandledError"
"#;
        let f = lookup_failure(journal).unwrap();
        assert_eq!(f.name, "api-int.okd.example");
        assert_eq!(f.nameserver, "192.168.120.1:53");
        assert_eq!(f.reason, "no such host");
        let line = f.finding("192.168.120.103");
        assert!(line.starts_with("The kubelet on 192.168.120.103 cannot resolve api-int.okd.example: its nameserver 192.168.120.1:53 answers \"no such host\""), "{line}");
        assert!(line.contains("A record"), "{line}");
        let timeout = "dial tcp: lookup api.okd.example on 10.0.0.9:53: read udp 10.0.0.5:40000->10.0.0.9:53: i/o timeout";
        let f = lookup_failure(timeout).unwrap();
        assert_eq!(
            f.reason,
            "read udp 10.0.0.5:40000->10.0.0.9:53: i/o timeout"
        );
        assert!(
            f.finding("h")
                .contains("make the nameserver 10.0.0.9:53 answer")
        );
        // Other names (a registry, an NTP server) are not the API's.
        assert_eq!(
            lookup_failure("dial tcp: lookup quay.io on 10.0.0.9:53: no such host"),
            None
        );
        assert_eq!(lookup_failure("all is well"), None);
    }

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

    /// Issue #27: the x509 reason of a failed pull, which sits in the
    /// bundle, is quoted with its fix.
    #[test]
    fn a_tls_failure_of_the_release_pull_is_named() {
        let release = r#"[{"phase":"service start"},{"phase":"stage start","stage":"pull-release-image"},{"phase":"stage end","stage":"pull-release-image","result":"failure","errorMessage":"exit status 125"},{"phase":"service end","result":"failure","errorMessage":"exit status 125"}]"#;
        let journal = "Nov 27 10:00:01 bootstrap release-image-download.sh[1234]: Pulling quay.io/openshift/okd@sha256:abc...
            Nov 27 10:00:02 bootstrap release-image-download.sh[1234]: Error: initializing source docker://registry.okd.example:5000/okd@sha256:abc: pinging container registry registry.okd.example:5000: Get \"https://registry.okd.example:5000/v2/\": tls: failed to verify certificate: x509: certificate signed by unknown authority
            Nov 27 10:00:03 bootstrap systemd[1]: release-image.service: Main process exited, code=exited, status=125/n/a
";
        let f = findings_with_journals(
            &[rec("release-image", release)],
            &[("release-image".to_string(), journal.to_string())],
        );
        assert_eq!(
            f[0].1,
            "The bootstrap machine failed to download the release image"
        );
        assert_eq!(
            f[1],
            (
                Level::Error,
                "The registry's certificate is not trusted by the bootstrap machine: x509: certificate signed by unknown authority; add the mirror registry's CA to additionalTrustBundle in install-config.yaml (and name the mirror in imageContentSources or imageDigestSources), then create the Ignition configs again".to_string()
            )
        );
        // okd-install's own pull names rustls' reason in the record itself.
        let ours = r#"[{"phase":"service start"},{"phase":"service end","result":"failure","errorMessage":"unable to pull the release image q/okd:4: registry.okd.example:5000/okd: error sending request: invalid peer certificate: UnknownIssuer (the mirror's CA belongs in install-config's additionalTrustBundle)"}]"#;
        let f = findings(&[rec("release-image", ours)]);
        assert!(
            f[1].1
                .contains(": invalid peer certificate: UnknownIssuer (the mirror"),
            "{f:?}"
        );
        assert_eq!(tls_reason("no certificate words here"), None);
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
