//! The real `bootstrap-service-record.sh` under real bash: a unit stopped
//! by a signal is recorded as a failure (issue #27 item 4; bash runs the
//! EXIT trap with `$? = 0` after an untrapped SIGTERM, which used to write
//! `service end` / `success`), and a normal end still as success. The
//! records are judged by okd-service-record, gather's reader.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use okd_service_record::{judge, parse_entries};

const SCRIPT: &str = include_str!("../src/scripts/bootstrap-service-record.sh");

/// Runs `body` after sourcing the recorder as unit `service`, recording
/// into `records`; with `signal`, sends it once the stage has started and
/// returns the exit status.
fn run(
    records: &Path,
    service: &str,
    body: &str,
    signal: Option<&str>,
) -> std::process::ExitStatus {
    let lib = records.join("recorder.sh");
    std::fs::write(&lib, SCRIPT).unwrap();
    let script = format!(". {}\n{body}\n", lib.display());
    // systemd starts a unit with every signal at its default; a test run
    // from a background job or nohup inherits SIGINT or SIGHUP ignored,
    // and bash cannot trap a signal ignored at its start.
    let mut child = Command::new("env")
        .args(["--default-signal=INT,HUP,TERM", "bash", "-c", &script])
        .env("SERVICE_RECORDS_DIR", records)
        .env("SERVICE_NAME", service)
        .stdin(Stdio::null())
        .spawn()
        .expect("bash runs");
    let file = records.join(format!("{service}.json"));
    if let Some(sig) = signal {
        let start = Instant::now();
        while !std::fs::read_to_string(&file).is_ok_and(|s| s.contains("stage start")) {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "the stage never started"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let ok = Command::new("kill")
            .args([&format!("-{sig}"), &child.id().to_string()])
            .status()
            .unwrap();
        assert!(ok.success());
    }
    let start = Instant::now();
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return st;
        }
        if start.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            panic!("the script did not end");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_killed_unit_is_recorded_as_failed() {
    for (sig, code) in [("TERM", 143), ("INT", 130), ("HUP", 129)] {
        let d = tempfile::tempdir().unwrap();
        let st = run(
            d.path(),
            "bootkube",
            "record_service_stage_start wait-for-etcd\nwhile true; do sleep 0.1; done",
            Some(sig),
        );
        assert_eq!(
            st.code(),
            Some(code),
            "SIG{sig}: the exit status stays the shell's"
        );
        let text = std::fs::read(d.path().join("bootkube.json")).unwrap();
        let entries = parse_entries(&text).unwrap();
        let v = judge(&entries);
        assert!(!v.successful, "SIG{sig} recorded as success: {entries:?}");
        assert_eq!(v.failing_stage, "wait-for-etcd", "{entries:?}");
        assert!(
            v.last_error.contains(&format!("killed by SIG{sig}")),
            "{entries:?}"
        );
        let last = entries.last().unwrap();
        assert_eq!(
            (last.phase.as_str(), last.result.as_str()),
            ("service end", "failure")
        );
    }
}

#[test]
fn a_unit_that_ends_well_is_recorded_as_success() {
    let d = tempfile::tempdir().unwrap();
    let st = run(
        d.path(),
        "release-image",
        "record_service_stage_start pull-release-image\nrecord_service_stage_success",
        None,
    );
    assert!(st.success());
    let entries =
        parse_entries(&std::fs::read(d.path().join("release-image.json")).unwrap()).unwrap();
    assert!(judge(&entries).successful, "{entries:?}");

    let d = tempfile::tempdir().unwrap();
    let st = run(
        d.path(),
        "crio-configure",
        "record_service_stage_start x\nfalse",
        None,
    );
    assert_eq!(st.code(), Some(1));
    let entries =
        parse_entries(&std::fs::read(d.path().join("crio-configure.json")).unwrap()).unwrap();
    let v = judge(&entries);
    assert!(!v.successful && v.failing_stage == "x", "{entries:?}");
}
