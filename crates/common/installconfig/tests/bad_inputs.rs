//! The broken-input corpus: every `tests/bad/NN-name.yaml` must fail to load and
//! the error text must contain the one line of `NN-name.expect`. Names containing
//! `-t413` / `-t414` are loaded for target 4.13 / 4.14 (OCP), the rest for the
//! default target. No error may echo a pull-secret credential: every case's
//! pull secret carries the auth `YWRtaW46YWRtaW4=` or the password
//! `Hunter2-S3cret`, and neither may appear in any error text.

use std::path::Path;

use okd_installconfig::{LoadOptions, load};
use okd_types::release::ReleaseTarget;

#[test]
fn every_bad_input_fails_with_its_expected_message() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/bad");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .filter_map(|e| {
            e.file_name()
                .to_str()
                .and_then(|n| n.strip_suffix(".yaml"))
                .map(String::from)
        })
        .collect();
    names.sort();
    assert!(names.len() >= 50, "only {} bad inputs", names.len());
    let mut failures = Vec::new();
    for name in &names {
        let bytes = std::fs::read(dir.join(format!("{name}.yaml"))).unwrap();
        let expect = std::fs::read_to_string(dir.join(format!("{name}.expect")))
            .unwrap_or_else(|_| panic!("{name}.expect missing"));
        let expect = expect.trim_end_matches('\n');
        let target = if name.contains("-t413") {
            ReleaseTarget::new(13, false)
        } else if name.contains("-t414") {
            ReleaseTarget::new(14, false)
        } else {
            ReleaseTarget::default_target()
        };
        let opts = LoadOptions {
            target,
            host_fips: false,
        };
        match load("install-config.yaml", &bytes, &opts) {
            Ok(_) => failures.push(format!("{name}: loaded without error")),
            Err(e) => {
                let text = e.to_string();
                eprintln!("{name}: {text}");
                if !text.contains("install-config.yaml") {
                    failures.push(format!("{name}: error does not name the file: {text}"));
                }
                for secret in ["YWRtaW46YWRtaW4=", "Hunter2-S3cret"] {
                    if text.contains(secret) {
                        failures.push(format!(
                            "{name}: error echoes the credential {secret}: {text}"
                        ));
                    }
                }
                if !text.contains(expect) {
                    failures.push(format!("{name}:\n  expected: {expect}\n  got:      {text}"));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} failed:\n{}",
        failures.len(),
        names.len(),
        failures.join("\n")
    );
}
