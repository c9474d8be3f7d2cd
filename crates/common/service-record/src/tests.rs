use super::*;

fn read(r: &Recorder) -> (String, Vec<Entry>) {
    let text = std::fs::read_to_string(r.path()).unwrap();
    let entries = parse_entries(text.as_bytes()).unwrap();
    (text, entries)
}

#[test]
fn a_run_reads_back_as_the_shell_recorder_writes_it() {
    let d = tempfile::tempdir().unwrap();
    let mut r = Recorder::new(&d.path().join("var/log/openshift"), "bootkube");
    r.service_start().unwrap();
    r.stage_start("openshift-manifests").unwrap();
    r.stage_success().unwrap();
    r.stage_start("wait-for-etcd").unwrap();
    r.service_end(Some(("bootkube.rs:12", "etcd: connection refused")))
        .unwrap();
    let (text, e) = read(&r);
    assert_eq!(r.path(), d.path().join("var/log/openshift/bootkube.json"));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 6, "{text}");
    // Field order and omission as bootstrap-service-record.sh writes them.
    let first: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
    assert_eq!(first.as_object().unwrap().len(), 2, "{}", lines[0]);
    assert!(lines[1].starts_with("{\"timestamp\":\""), "{}", lines[1]);
    assert!(
        lines[1].ends_with(",\"stage\":\"openshift-manifests\",\"phase\":\"stage start\"}"),
        "{}",
        lines[1]
    );
    let ts = &e[0].timestamp;
    assert_eq!(ts.len(), 20, "{ts}");
    assert!(
        time::PrimitiveDateTime::parse(
            ts.trim_end_matches('Z'),
            &time::format_description::well_known::Iso8601::DEFAULT
        )
        .is_ok()
    );
    // The stage left open is closed as failed before the service's end.
    assert_eq!(e[4].phase, STAGE_END);
    assert_eq!(e[4].result, FAILURE);
    assert_eq!(e[4].stage, "wait-for-etcd");
    assert_eq!(e[4].error_line, "bootkube.rs:12");
    assert_eq!(e[5].phase, SERVICE_END);
    assert_eq!(e[5].result, FAILURE);
    let v = judge(&e);
    assert_eq!(v.starts, 1);
    assert!(!v.successful);
    assert_eq!(v.failing_stage, "wait-for-etcd");
    assert_eq!(v.last_error, "etcd: connection refused");
    assert_eq!(r.open_stage(), None);
}

#[test]
fn a_retry_that_succeeds_is_judged_successful() {
    let d = tempfile::tempdir().unwrap();
    let mut r = Recorder::new(d.path(), "release-image");
    r.service_start().unwrap();
    r.stage_start("pull-release-image").unwrap();
    r.stage_failure("", "x509: certificate signed by unknown authority")
        .unwrap();
    r.service_end(Some(("", "x509: certificate signed by unknown authority")))
        .unwrap();
    let mut r = Recorder::new(d.path(), "release-image");
    r.service_start().unwrap();
    r.stage_start("pull-release-image").unwrap();
    r.stage_success().unwrap();
    r.service_end(None).unwrap();
    let (_, e) = read(&r);
    let v = judge(&e);
    assert_eq!(v.starts, 2);
    assert!(v.successful);
    assert!(v.failed_ever);
    assert_eq!(v.failing_stage, "pull-release-image");
}

#[test]
fn the_file_is_appended_not_replaced_and_is_not_secret() {
    use std::os::unix::fs::PermissionsExt;
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("x.json"),
        "{\"timestamp\":\"t\",\"phase\":\"service start\"}\n",
    )
    .unwrap();
    let mut r = Recorder::new(d.path(), "x");
    r.service_start().unwrap();
    let (_, e) = read(&r);
    assert_eq!(e.len(), 2);
    assert_eq!(e[0].timestamp, "t");
    let fresh = Recorder::new(d.path(), "fresh");
    fresh.append(Entry::default()).unwrap();
    let mode = std::fs::metadata(fresh.path())
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o644);
}

#[test]
fn a_stage_end_without_a_start_writes_nothing() {
    let d = tempfile::tempdir().unwrap();
    let mut r = Recorder::new(d.path(), "y");
    r.stage_success().unwrap();
    r.stage_failure("1", "m").unwrap();
    assert!(!r.path().exists());
}

#[test]
fn a_gathered_array_parses_like_lines() {
    let arr = br#"[{"timestamp":"t","phase":"service start"},{"timestamp":"t","phase":"service end","result":"success"}]"#;
    let e = parse_entries(arr).unwrap();
    assert!(judge(&e).successful);
    let err = parse_entries(b"{\"phase\":1}\n").unwrap_err();
    assert!(err.starts_with("line 1:"), "{err}");
}

#[test]
fn every_bootkube_stage_has_words() {
    for s in [
        "openshift-manifests",
        "cvo-bootstrap",
        "etcd-bootstrap",
        "mco-bootstrap",
        "wait-for-etcd",
        "cb-bootstrap",
        "wait-for-ceo",
    ] {
        assert!(stage_words(s).is_some(), "{s}");
    }
    assert_eq!(stage_words("no-such-stage"), None);
}

#[test]
fn progress_follows_runs_failures_and_the_end() {
    let d = tempfile::tempdir().unwrap();
    let mut r = Recorder::new(d.path(), "bootkube");
    r.service_start().unwrap();
    r.stage_start("etcd-bootstrap").unwrap();
    r.stage_success().unwrap();
    r.stage_start("wait-for-etcd").unwrap();
    let (_, e) = read(&r);
    let p = progress(&e);
    assert_eq!(p.done, vec!["etcd-bootstrap"]);
    assert_eq!(p.running.as_deref(), Some("wait-for-etcd"));
    assert_eq!((p.complete, p.starts, p.failure.clone()), (false, 1, None));
    r.service_end(Some(("wait-for-etcd", "etcd unhealthy")))
        .unwrap();
    let p = progress(&read(&r).1);
    assert_eq!(p.running, None);
    assert_eq!(
        p.failure,
        Some(("wait-for-etcd".to_string(), "etcd unhealthy".to_string()))
    );
    // The restart: the failure stays shown until the next stage starts.
    r.service_start().unwrap();
    assert!(progress(&read(&r).1).failure.is_some());
    r.stage_start("wait-for-etcd").unwrap();
    r.stage_success().unwrap();
    r.service_end(None).unwrap();
    let p = progress(&read(&r).1);
    assert_eq!(p.done, vec!["etcd-bootstrap", "wait-for-etcd"]);
    assert_eq!((p.complete, p.starts, p.failure), (true, 2, None));
    assert!(!p.last_time.is_empty());
}

#[test]
fn a_killed_run_ends_as_failed_once() {
    let d = tempfile::tempdir().unwrap();
    let mut r = Recorder::new(d.path(), "bootkube");
    r.service_start().unwrap();
    r.stage_start("etcd-bootstrap").unwrap();
    r.stage_success().unwrap();
    r.stage_start("wait-for-etcd").unwrap();
    record_killed(d.path(), "bootkube", "SIGTERM").unwrap();
    let (_, entries) = read(&r);
    let v = judge(&entries);
    assert!(!v.successful);
    assert_eq!(v.failing_stage, "wait-for-etcd");
    assert_eq!(v.last_error, "killed by SIGTERM");
    let n = entries.len();
    // A second signal after the end adds nothing.
    record_killed(d.path(), "bootkube", "SIGINT").unwrap();
    assert_eq!(read(&r).1.len(), n);
    // A unit that never wrote a record gets none.
    record_killed(d.path(), "progress", "SIGTERM").unwrap();
    assert!(!d.path().join("progress.json").exists());
    // Killed between stages: only the service end.
    let mut r2 = Recorder::new(d.path(), "release-image");
    r2.service_start().unwrap();
    r2.stage_start("pull-release-image").unwrap();
    r2.stage_success().unwrap();
    record_killed(d.path(), "release-image", "SIGTERM").unwrap();
    let (_, e2) = read(&r2);
    assert_eq!(e2.len(), 4);
    assert_eq!(
        (e2[3].phase.as_str(), e2[3].result.as_str()),
        (SERVICE_END, FAILURE)
    );
    assert_eq!(judge(&e2).failing_stage, "");
}
