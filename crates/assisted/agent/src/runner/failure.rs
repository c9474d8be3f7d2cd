//! Failed requests ([`Failure`]: no usable answer, or a refusal and its
//! reason) and failures in a row ([`Trouble`]: back-off and log lines).

use std::time::Duration;

use okd_assisted_api::rest::{ApiError, InfraError};
use reqwest::StatusCode;

use super::{BACKOFF_FIRST, BACKOFF_MAX};

/// A request that did not succeed.
#[derive(Debug)]
pub(super) enum Failure {
    /// No (usable) answer: network, timeout, a body that does not parse.
    Transport(String),
    /// An answer with this status and the service's reason.
    Status { code: StatusCode, reason: String },
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Transport(c) => f.write_str(c),
            Failure::Status { code, reason } => write!(f, "HTTP {code}: {reason}"),
        }
    }
}

impl Failure {
    pub(super) fn status(&self) -> Option<StatusCode> {
        match self {
            Failure::Status { code, .. } => Some(*code),
            Failure::Transport(_) => None,
        }
    }
}

/// Whether a refusal may go away by itself (the request is kept): 5xx,
/// 401, 403 (credentials the service may come to accept), 408, 429.
pub(super) fn transient(code: StatusCode) -> bool {
    code.is_server_error()
        || matches!(
            code,
            StatusCode::UNAUTHORIZED
                | StatusCode::FORBIDDEN
                | StatusCode::REQUEST_TIMEOUT
                | StatusCode::TOO_MANY_REQUESTS
        )
}

/// A transport error in words, without the URL (which the log names) so
/// that the same cause reads the same on every retry.
pub(super) fn transport_cause(e: &reqwest::Error) -> String {
    let kind = if e.is_timeout() {
        "no answer in time"
    } else if e.is_connect() {
        "cannot connect"
    } else if e.is_body() || e.is_decode() {
        "reading the answer failed"
    } else {
        "the request failed"
    };
    let mut parts = vec![kind.to_string()];
    let mut src = std::error::Error::source(e);
    while let Some(s) = src {
        parts.push(s.to_string());
        src = s.source();
    }
    parts.join(": ")
}

/// The reason of a failed answer: the swagger `error`'s `reason`, the
/// `infra_error`'s `message`, else the body's start.
pub(super) async fn failure_of(resp: reqwest::Response) -> Failure {
    let code = resp.status();
    let text = resp.text().await.unwrap_or_default();
    let reason = if let Ok(e) = serde_json::from_str::<ApiError>(&text) {
        e.reason
    } else if let Ok(e) = serde_json::from_str::<InfraError>(&text) {
        e.message
    } else if text.trim().is_empty() {
        code.canonical_reason()
            .unwrap_or("no reason given")
            .to_string()
    } else {
        text.trim().chars().take(200).collect()
    };
    Failure::Status { code, reason }
}

/// Failures of one kind of request in a row: the back-off and the log
/// lines (one per distinct cause, one on recovery).
#[derive(Debug)]
pub(super) struct Trouble {
    what: &'static str,
    cause: Option<String>,
    failures: u32,
    delay: Duration,
}

impl Trouble {
    pub(super) fn new(what: &'static str) -> Trouble {
        Trouble {
            what,
            cause: None,
            failures: 0,
            delay: Duration::ZERO,
        }
    }

    /// Records a failure; returns the wait before the next attempt.
    pub(super) fn failed(&mut self, url: &str, f: &Failure) -> Duration {
        self.failures += 1;
        self.delay = if self.failures == 1 {
            BACKOFF_FIRST
        } else {
            (self.delay * 2).min(BACKOFF_MAX)
        };
        let cause = f.to_string();
        if self.cause.as_deref() != Some(cause.as_str()) {
            tracing::warn!(
                url,
                cause = %cause,
                retry_in_s = self.delay.as_secs(),
                "{} failed; retrying with back-off (logged again when the cause changes)",
                self.what
            );
            self.cause = Some(cause);
        } else {
            tracing::debug!(
                url,
                failures = self.failures,
                retry_in_s = self.delay.as_secs(),
                "{} failed again",
                self.what
            );
        }
        self.delay
    }

    /// Records a success.
    pub(super) fn ok(&mut self, url: &str) {
        if self.failures > 0 {
            tracing::info!(
                url,
                failures = self.failures,
                "{} succeeds again",
                self.what
            );
        }
        self.failures = 0;
        self.cause = None;
        self.delay = Duration::ZERO;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn back_off_doubles_to_a_minute_and_resets() {
        let mut t = Trouble::new("polling");
        let f = Failure::Transport("cannot connect".into());
        let waits: Vec<u64> = (0..9).map(|_| t.failed("u", &f).as_secs()).collect();
        assert_eq!(waits, [1, 2, 4, 8, 16, 32, 60, 60, 60]);
        t.ok("u");
        assert_eq!(t.failed("u", &f), BACKOFF_FIRST);
    }
}
