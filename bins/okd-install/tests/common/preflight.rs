//! `okd-install preflight` run as a user runs it, and its report checked
//! one check at a time (the preflight tests).
#![allow(dead_code)]

use std::path::Path;

use super::netns::Lab;
use okd_serve_api::preflight::{Check, Outcome, Report};

/// Runs `okd-install preflight --output json` with `args` in the bastion
/// namespace; the report and the exit status.
pub fn preflight(lab: &Lab, dir: &Path, args: &[&str]) -> (Report, Option<i32>) {
    let out = lab
        .cmd(&lab.bastion.ns, env!("CARGO_BIN_EXE_okd-install"))
        .args(["preflight", "--output", "json", "--dir"])
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    let report: Report = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "preflight printed no report ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (report, out.status.code())
}

/// Check `id` of `r`; panics with the report when there is none.
pub fn check<'a>(r: &'a Report, id: &str) -> &'a Check {
    r.checks
        .iter()
        .find(|c| c.id == id)
        .unwrap_or_else(|| panic!("no check {id}: {r:#?}"))
}

/// The report as its text lines, for messages.
pub fn lines(r: &Report) -> String {
    r.checks
        .iter()
        .map(|c| c.line())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Asserts that check `id` of `r` came out as `outcome`, that its cause
/// holds each of `cause` and its fix each of `fix`; the check, for more.
pub fn expect<'a>(
    r: &'a Report,
    id: &str,
    outcome: Outcome,
    cause: &[&str],
    fix: &[&str],
) -> &'a Check {
    let c = check(r, id);
    assert_eq!(c.result, outcome, "{id}:\n{}", lines(r));
    for part in cause {
        assert!(
            c.cause.contains(part),
            "{id}: no {part:?} in the cause {:?}",
            c.cause
        );
    }
    let given = c.fix.as_deref().unwrap_or_default();
    for part in fix {
        assert!(
            given.contains(part),
            "{id}: no {part:?} in the fix {given:?}"
        );
    }
    c
}
