//! The agent's life with the service (openshift/assisted-installer-agent
//! `src/agent/agent.go`, `src/commands/step_processor.go`): register the
//! host, then poll its next steps, run them and post their replies until
//! told to stop.
//!
//! The protocol (assisted-service `swagger.yaml`, paths under
//! [`rest::BASE_PATH`]):
//!
//! 1. `POST {service}/api/assisted-install/v2/infra-envs/{ie}/hosts` with
//!    [`HostCreateParams`] `{"host_id","discovery_agent_version"}` → 201
//!    [`rest::HostRegistrationResponse`]. Network errors and 5xx are
//!    retried every [`AgentConfig::interval`]; a refusal (401, 403, 404,
//!    409, any other 4xx) is logged with the service's `reason` and
//!    retried every [`REFUSED_RETRY`] (the reference agent blocks
//!    forever; retrying picks up a fixed infra-env or cluster).
//! 2. `GET …/hosts/{id}/instructions?timestamp=<now, Unix s>` → 200
//!    [`Steps`]. Every instruction runs concurrently ([`execute`]); each
//!    reply is posted to the same path as a [`StepReply`] → 204. Then the
//!    runner sleeps `next_instruction_seconds` (at least 1 s) and polls
//!    again; `post_step_action: "exit"` ends the runner and the agent
//!    registers again, as does a 404 (the service no longer knows the
//!    host, e.g. its database was reset).
//! 3. A failed poll (network, 5xx, an answer that does not parse) is
//!    retried with exponential back-off ([`BACKOFF_FIRST`] doubling up to
//!    [`BACKOFF_MAX`]); it is logged with the URL and the cause each time
//!    the cause changes, not on every retry, and once when the service
//!    answers again.
//!
//! Replies are never lost: a reply whose POST gets no answer or a 5xx
//! (also 401, 403, 408, 429) stays queued in memory, in order, and is
//! sent again before the next poll and after the next steps ran, until
//! the service takes it (2xx), refuses it for good (400, 409 or another
//! 4xx: logged with the reason and dropped) or no longer knows the host
//! (404: dropped with every queued reply, and the agent registers again;
//! the service refuses replies to steps handed out before a
//! registration). At most [`MAX_PENDING`] replies wait; beyond that the
//! oldest is dropped with a log line.
//!
//! Unlike the reference agent (`src/commands/reply_cache.go`), identical
//! successful outputs of a step type are *not* withheld for an hour: this
//! service expects every step it hands out to be answered (a step left
//! unanswered stays outstanding until its time to live ends).
//!
//! Its parts: `config` (the configuration, what can never work, the HTTP
//! client), `register` (registration), `steps` (running one step, polling
//! and running the next steps), `replies` (the queue of replies not yet
//! taken) and `failure` (failed requests and the back-off).
//!
//! [`rest::BASE_PATH`]: okd_assisted_api::rest::BASE_PATH
//! [`HostCreateParams`]: okd_assisted_api::rest::HostCreateParams
//! [`rest::HostRegistrationResponse`]: okd_assisted_api::rest::HostRegistrationResponse
//! [`Steps`]: okd_assisted_api::rest::Steps
//! [`StepReply`]: okd_assisted_api::rest::StepReply

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

mod config;
mod failure;
mod register;
mod replies;
mod steps;

pub use config::{AgentConfig, AgentError};
pub use steps::execute;

pub use crate::ntp::{NO_CHRONYC, NtpRequest, NtpResponse, NtpSource};

use failure::Trouble;
use replies::Pending;

/// Default wait between registration attempts after a network error or a
/// 5xx (the reference agent's `--interval`, 60 s).
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(60);

/// Wait between registration attempts the service refused (401, 403,
/// 404, 409, other 4xx).
pub const REFUSED_RETRY: Duration = Duration::from_secs(60);

/// The first wait after a failed poll; it doubles with each further
/// failure up to [`BACKOFF_MAX`].
pub const BACKOFF_FIRST: Duration = Duration::from_secs(1);

/// The longest wait between failed polls.
pub const BACKOFF_MAX: Duration = Duration::from_secs(60);

/// Replies kept for sending at most; the oldest goes beyond that.
pub const MAX_PENDING: usize = 64;

/// Every request's time limit (connect, send, answer).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// The time limit of connecting to the service.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The header carrying [`AgentConfig::token`] (assisted-service's agent
/// authentication, `X-Secret-Key`).
pub const SECRET_HEADER: &str = "X-Secret-Key";

/// The exit code of a step type this agent cannot run (the reference
/// step processor's `-1`).
pub const UNSUPPORTED_EXIT_CODE: i64 = -1;

/// Runs the agent until `stop` completes: registers the host, then polls
/// and runs its steps (module docs). Returns `Ok(())` when `stop`
/// completes (steps still running are abandoned).
///
/// # Errors
/// Only what can never work: a bad service URL or id, an unreadable or
/// empty CA file, a token that is no header value. Service failures are
/// retried, never returned.
pub async fn run(cfg: AgentConfig, stop: impl Future<Output = ()>) -> Result<(), AgentError> {
    let mut agent = Agent::new(cfg)?;
    tokio::select! {
        () = stop => {
            tracing::info!(host_id = %agent.host_id, "agent stopping");
        }
        () = agent.forever() => {}
    }
    Ok(())
}

/// Unix seconds now.
fn now_s() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// What ended a runner.
#[derive(Debug, PartialEq, Eq)]
enum End {
    /// `post_step_action: exit`.
    Exit,
    /// A 404: the host is unknown.
    Unknown,
}

struct Agent {
    cfg: AgentConfig,
    /// Sends the host token once registered, the discovery token before.
    client: reqwest::Client,
    /// The service's CA certificates (`--cacert`).
    certs: Vec<reqwest::Certificate>,
    /// The host token of the last registration (or of the state file).
    host_token: Option<String>,
    /// `<state_dir>/host-token-<infra-env id>`.
    host_token_file: std::path::PathBuf,
    host_id: String,
    /// `…/infra-envs/{ie}/hosts`.
    hosts_url: String,
    /// `…/infra-envs/{ie}/hosts/{id}/instructions`.
    steps_url: String,
    pending: VecDeque<Pending>,
    replies: Trouble,
    /// The last error logged per step type (a failing step is logged when
    /// its error changes).
    step_errors: HashMap<String, String>,
    /// The host's status at the last registration.
    status: Option<String>,
    /// The last [`RECENT_RESULTS`] step results, one line each, for the
    /// logs' `agent.txt`.
    recent: VecDeque<String>,
}

/// How many step results `agent.txt` lists.
pub const RECENT_RESULTS: usize = 100;

impl Agent {
    /// Registers, runs the steps, and again, forever.
    async fn forever(&mut self) {
        loop {
            self.register().await;
            match self.runner().await {
                End::Exit => tracing::info!(
                    host_id = %self.host_id,
                    "the service ended the step runner; registering again"
                ),
                End::Unknown => tracing::warn!(
                    host_id = %self.host_id,
                    "the service does not know this host (any more); registering again"
                ),
            }
        }
    }
}
