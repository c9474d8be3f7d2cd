//! The result of `okd-install preflight` (crate okd-preflight): one line
//! per check with an id, a result, the cause and the fix. Here, in the
//! common group, because serve's status document carries the checks it
//! ran at start (`StatusDocument::preflight`) and `wait-for` reads that
//! document.

use serde::{Deserialize, Serialize};

/// A check's result, worst last (the order [`Report::worst`] uses).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// The check held.
    Pass,
    /// The check could not run (its input is missing, or what it asks is
    /// not up yet); the cause says why.
    Skip,
    /// Something is likely to go wrong, or was not verified.
    Warn,
    /// The install will fail this way; the fix says what to change.
    Fail,
}

impl Outcome {
    /// `PASS`, `SKIP`, `WARN`, `FAIL`: the first column of the text report.
    pub fn label(self) -> &'static str {
        match self {
            Outcome::Pass => "PASS",
            Outcome::Skip => "SKIP",
            Outcome::Warn => "WARN",
            Outcome::Fail => "FAIL",
        }
    }
}

/// One check: `id` names what was checked (`dns.192.168.120.101.api-int`,
/// `lb.config.api.health`, `disk.master`), `cause` says what was found,
/// `fix` what to change (none for a pass).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Check {
    /// Dotted id: family, then subject.
    pub id: String,
    /// The result.
    pub result: Outcome,
    /// What was found, in one line.
    pub cause: String,
    /// What to change, in one line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

impl Check {
    /// A passed check.
    pub fn pass(id: impl Into<String>, cause: impl Into<String>) -> Check {
        Check {
            id: id.into(),
            result: Outcome::Pass,
            cause: cause.into(),
            fix: None,
        }
    }

    /// A check that could not run, and why.
    pub fn skip(id: impl Into<String>, cause: impl Into<String>) -> Check {
        Check {
            id: id.into(),
            result: Outcome::Skip,
            cause: cause.into(),
            fix: None,
        }
    }

    /// A warning with its fix.
    pub fn warn(id: impl Into<String>, cause: impl Into<String>, fix: impl Into<String>) -> Check {
        Check {
            id: id.into(),
            result: Outcome::Warn,
            cause: cause.into(),
            fix: Some(fix.into()),
        }
    }

    /// A failure with its fix.
    pub fn fail(id: impl Into<String>, cause: impl Into<String>, fix: impl Into<String>) -> Check {
        Check {
            id: id.into(),
            result: Outcome::Fail,
            cause: cause.into(),
            fix: Some(fix.into()),
        }
    }

    /// The check as one line: `FAIL  <id>: <cause> → fix: <fix>`.
    pub fn line(&self) -> String {
        match &self.fix {
            Some(fix) => format!(
                "{}  {}: {} → fix: {fix}",
                self.result.label(),
                self.id,
                self.cause
            ),
            None => format!("{}  {}: {}", self.result.label(), self.id, self.cause),
        }
    }
}

/// Every check of one run, in the order they ran.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Report {
    /// When the run ended (RFC 3339).
    pub time: String,
    /// The checks.
    pub checks: Vec<Check>,
}

impl Report {
    /// How many checks ended with `o`.
    pub fn count(&self, o: Outcome) -> usize {
        self.checks.iter().filter(|c| c.result == o).count()
    }

    /// The worst result (`Pass` for an empty report).
    pub fn worst(&self) -> Outcome {
        self.checks
            .iter()
            .map(|c| c.result)
            .max()
            .unwrap_or(Outcome::Pass)
    }

    /// The summary line: `12 passed, 1 warning, 2 failed, 3 skipped`.
    pub fn summary(&self) -> String {
        let n = |o| self.count(o);
        let plural =
            |k: usize, one: &str, many: &str| format!("{k} {}", if k == 1 { one } else { many });
        format!(
            "{} passed, {}, {} failed, {} skipped",
            n(Outcome::Pass),
            plural(n(Outcome::Warn), "warning", "warnings"),
            n(Outcome::Fail),
            n(Outcome::Skip)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_summary_and_json() {
        let r = Report {
            time: "2026-11-27T10:00:00Z".into(),
            checks: vec![
                Check::pass(
                    "dns.192.168.120.101.api",
                    "api.okd.example is 192.168.120.101",
                ),
                Check::fail(
                    "lb.config.api.health",
                    "backend api checks GET /",
                    "option httpchk GET /readyz",
                ),
                Check::warn(
                    "disk.master",
                    "no deviceName",
                    "set rootDeviceHints.deviceName",
                ),
            ],
        };
        assert_eq!(r.worst(), Outcome::Fail);
        assert_eq!(r.summary(), "1 passed, 1 warning, 1 failed, 0 skipped");
        assert_eq!(
            r.checks[1].line(),
            "FAIL  lb.config.api.health: backend api checks GET / → fix: option httpchk GET /readyz"
        );
        assert_eq!(
            r.checks[0].line(),
            "PASS  dns.192.168.120.101.api: api.okd.example is 192.168.120.101"
        );
        let j = serde_json::to_value(&r).unwrap();
        assert_eq!(j["checks"][1]["result"], "fail");
        assert!(j["checks"][0].get("fix").is_none());
        let back: Report = serde_json::from_value(j).unwrap();
        assert_eq!(back, r);
        assert_eq!(Report::default().worst(), Outcome::Pass);
    }
}
