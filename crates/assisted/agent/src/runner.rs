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

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use okd_assisted_api::rest::{
    self, ApiError, HostCreateParams, HostRegistrationResponse, InfraError, Step, StepReply, Steps,
};
use reqwest::StatusCode;

use crate::ntp::{ntp_synchronizer, which};
use crate::{Root, host_id, inventory};

pub use crate::ntp::{NO_CHRONYC, NtpRequest, NtpResponse, NtpSource};

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

/// How the agent reaches the service and describes its host (the
/// reference agent's command line: `--url`, `--infra-env-id`,
/// `--host-id`, `--agent-version`, `--interval`, `--cacert`, and the
/// `PULL_SECRET_TOKEN` it sends as `X-Secret-Key`).
#[derive(Clone)]
pub struct AgentConfig {
    /// The service's base URL, `http(s)://host[:port][/prefix]`, e.g.
    /// `http://127.0.0.1:6000`; [`rest::BASE_PATH`] is appended.
    pub service_url: String,
    /// The infra-env the host registers with (UUID).
    pub infra_env_id: String,
    /// The host's id; `None`: [`host_id`] of [`AgentConfig::root`].
    pub host_id: Option<String>,
    /// The machine whose inventory is reported.
    pub root: Root,
    /// Sent as `discovery_agent_version`.
    pub agent_version: String,
    /// Wait between registration attempts after network errors and 5xx
    /// ([`DEFAULT_INTERVAL`]).
    pub interval: Duration,
    /// A PEM file of CA certificates added to the system's roots for an
    /// `https` service.
    pub ca_cert: Option<PathBuf>,
    /// Sent as the [`SECRET_HEADER`] on every request.
    pub token: Option<String>,
    /// Where the `install` step keeps the host's Ignition and request
    /// ([`crate::install`]; default `/var/lib/okd-assisted-agent`).
    pub state_dir: PathBuf,
}

impl AgentConfig {
    /// The defaults for `service_url` and `infra_env_id`: the host id from
    /// `/`, this crate's version, [`DEFAULT_INTERVAL`], the system's CA
    /// roots, no token.
    pub fn new(service_url: impl Into<String>, infra_env_id: impl Into<String>) -> AgentConfig {
        AgentConfig {
            service_url: service_url.into(),
            infra_env_id: infra_env_id.into(),
            host_id: None,
            root: Root::default(),
            agent_version: concat!("okd-assisted-agent/", env!("CARGO_PKG_VERSION")).to_string(),
            interval: DEFAULT_INTERVAL,
            ca_cert: None,
            token: None,
            state_dir: PathBuf::from("/var/lib/okd-assisted-agent"),
        }
    }
}

impl std::fmt::Debug for AgentConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentConfig")
            .field("service_url", &self.service_url)
            .field("infra_env_id", &self.infra_env_id)
            .field("host_id", &self.host_id)
            .field("root", &self.root)
            .field("agent_version", &self.agent_version)
            .field("interval", &self.interval)
            .field("ca_cert", &self.ca_cert)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("state_dir", &self.state_dir)
            .finish()
    }
}

/// What can never work, whatever the service does (everything else is
/// retried).
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// The service URL does not parse or is not `http(s)://host…`.
    #[error("service URL {url:?}: {reason}")]
    Url {
        /// As given.
        url: String,
        /// Why.
        reason: String,
    },
    /// An id that cannot be a path segment.
    #[error("{what} {value:?}: {reason}")]
    Id {
        /// `infra-env id` or `host id`.
        what: &'static str,
        /// As given.
        value: String,
        /// Why.
        reason: String,
    },
    /// The CA file cannot be read.
    #[error("CA certificate file {}: {source}", path.display())]
    CaRead {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The CA file holds no usable PEM certificate.
    #[error("CA certificate file {}: {reason}", path.display())]
    CaPem {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The token cannot be an HTTP header value.
    #[error("token: not a valid {SECRET_HEADER} header value (control characters?)")]
    Token,
    /// The HTTP client cannot be built.
    #[error("HTTP client: {0}")]
    Client(String),
}

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

/// Runs one step as this agent does and answers it: `inventory` →
/// [`inventory::gather`] of `root` as JSON, exit 0; `ntp-synchronizer` →
/// [`ntp_synchronizer`] with the `chronyc` found on `PATH`;
/// `connectivity-check`, `domain-resolution`, `verify-vips`,
/// `free-network-addresses` and `installation-disk-speed-check` →
/// [`crate::checks`]; any other
/// type → exit [`UNSUPPORTED_EXIT_CODE`] with the error `step type <t> is
/// not supported by this agent`.
pub async fn execute(step: Step, root: Root) -> StepReply {
    let (exit_code, output, error) = match step.step_type.as_str() {
        "inventory" => {
            match tokio::task::spawn_blocking(move || {
                serde_json::to_string(&inventory::gather(&root))
            })
            .await
            {
                Ok(Ok(json)) => (0, json, String::new()),
                Ok(Err(e)) => (-1, String::new(), format!("inventory as JSON: {e}")),
                Err(e) => (-1, String::new(), format!("gathering the inventory: {e}")),
            }
        }
        "ntp-synchronizer" => {
            let chronyc = which("chronyc", std::env::var_os("PATH").as_deref());
            ntp_synchronizer(&step.args, chronyc.as_deref()).await
        }
        "connectivity-check" => crate::checks::connectivity_check(&step.args, &root).await,
        "domain-resolution" => crate::checks::domain_resolution(&step.args).await,
        "verify-vips" => crate::checks::verify_vips(&step.args, &root).await,
        "free-network-addresses" => crate::checks::free_addresses(&step.args, &root).await,
        "installation-disk-speed-check" => crate::checks::disk_speed_check(&step.args, &root).await,
        t => (
            UNSUPPORTED_EXIT_CODE,
            String::new(),
            format!("step type {t} is not supported by this agent"),
        ),
    };
    StepReply {
        step_type: step.step_type,
        step_id: step.step_id,
        exit_code,
        output,
        error,
    }
}

/// Unix seconds now.
fn now_s() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// A request that did not succeed.
#[derive(Debug)]
enum Failure {
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
    fn status(&self) -> Option<StatusCode> {
        match self {
            Failure::Status { code, .. } => Some(*code),
            Failure::Transport(_) => None,
        }
    }
}

/// Whether a refusal may go away by itself (the request is kept): 5xx,
/// 401, 403 (credentials the service may come to accept), 408, 429.
fn transient(code: StatusCode) -> bool {
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
fn transport_cause(e: &reqwest::Error) -> String {
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
async fn failure_of(resp: reqwest::Response) -> Failure {
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
struct Trouble {
    what: &'static str,
    cause: Option<String>,
    failures: u32,
    delay: Duration,
}

impl Trouble {
    fn new(what: &'static str) -> Trouble {
        Trouble {
            what,
            cause: None,
            failures: 0,
            delay: Duration::ZERO,
        }
    }

    /// Records a failure; returns the wait before the next attempt.
    fn failed(&mut self, url: &str, f: &Failure) -> Duration {
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
    fn ok(&mut self, url: &str) {
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

/// A reply not yet taken by the service.
#[derive(Debug)]
struct Pending {
    reply: StepReply,
    attempts: u32,
}

/// What sending the queued replies came to.
#[derive(Debug, PartialEq, Eq)]
enum Flush {
    /// Every queued reply was taken or refused for good.
    Done,
    /// A reply got no answer or a transient refusal; it and those after it
    /// stay queued.
    Stuck,
    /// 404: the service does not know the host (register again).
    Unknown,
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
    client: reqwest::Client,
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

fn check_id(what: &'static str, value: &str) -> Result<(), AgentError> {
    let ok = !value.is_empty()
        && value != "."
        && value != ".."
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err(AgentError::Id {
            what,
            value: value.to_string(),
            reason: "must be letters, digits, '-', '_' or '.' (a UUID)".into(),
        })
    }
}

impl Agent {
    /// `…/infra-env/{ie}/hosts/{id}/downloads/ignition` (the swagger's
    /// singular `infra-env` in this one path).
    fn ignition_url(&self) -> String {
        let base = self.hosts_url.trim_end_matches("/hosts");
        let (head, ie) = base.rsplit_once("/infra-envs/").unwrap_or((base, ""));
        format!(
            "{head}/infra-env/{ie}/hosts/{}/downloads/ignition",
            self.host_id
        )
    }

    fn new(cfg: AgentConfig) -> Result<Agent, AgentError> {
        let bad = |reason: &str| AgentError::Url {
            url: cfg.service_url.clone(),
            reason: reason.to_string(),
        };
        let url = reqwest::Url::parse(&cfg.service_url).map_err(|e| bad(&e.to_string()))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(bad("the scheme must be http or https"));
        }
        if url.host_str().is_none_or(str::is_empty) {
            return Err(bad("no host"));
        }
        if url.query().is_some() || url.fragment().is_some() {
            return Err(bad("no query or fragment allowed"));
        }
        check_id("infra-env id", &cfg.infra_env_id)?;
        let host_id = cfg.host_id.clone().unwrap_or_else(|| host_id(&cfg.root));
        check_id("host id", &host_id)?;
        if host_id == crate::FAILURE_ID {
            tracing::warn!(
                host_id,
                "nothing identifies this host (no board serial, system UUID or MAC); registering with the failure id"
            );
        }
        let base = format!("{}{}", url.as_str().trim_end_matches('/'), rest::BASE_PATH);
        let hosts_url = format!("{base}/infra-envs/{}/hosts", cfg.infra_env_id);
        let steps_url = format!("{hosts_url}/{host_id}/instructions");

        let mut headers = reqwest::header::HeaderMap::new();
        if let Some(t) = &cfg.token {
            let mut v = reqwest::header::HeaderValue::from_str(t).map_err(|_| AgentError::Token)?;
            v.set_sensitive(true);
            headers.insert(SECRET_HEADER, v);
        }
        let mut b = reqwest::Client::builder()
            .default_headers(headers)
            .user_agent(cfg.agent_version.clone())
            .timeout(REQUEST_TIMEOUT)
            .connect_timeout(CONNECT_TIMEOUT);
        if let Some(path) = &cfg.ca_cert {
            let pem = std::fs::read(path).map_err(|source| AgentError::CaRead {
                path: path.clone(),
                source,
            })?;
            let certs =
                reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| AgentError::CaPem {
                    path: path.clone(),
                    reason: e.to_string(),
                })?;
            if certs.is_empty() {
                return Err(AgentError::CaPem {
                    path: path.clone(),
                    reason: "no PEM certificate in it".into(),
                });
            }
            b = b.tls_certs_merge(certs);
        }
        let client = b.build().map_err(|e| AgentError::Client(e.to_string()))?;
        Ok(Agent {
            cfg,
            client,
            host_id,
            hosts_url,
            steps_url,
            pending: VecDeque::new(),
            replies: Trouble::new("sending a step reply"),
            step_errors: HashMap::new(),
            status: None,
            recent: VecDeque::new(),
        })
    }

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

    /// One registration attempt.
    async fn try_register(&self) -> Result<HostRegistrationResponse, Failure> {
        let params = HostCreateParams {
            host_id: self.host_id.clone(),
            discovery_agent_version: self.cfg.agent_version.clone(),
        };
        let resp = self
            .client
            .post(&self.hosts_url)
            .json(&params)
            .send()
            .await
            .map_err(|e| Failure::Transport(transport_cause(&e)))?;
        if !resp.status().is_success() {
            return Err(failure_of(resp).await);
        }
        resp.json::<HostRegistrationResponse>().await.map_err(|e| {
            Failure::Transport(format!(
                "the answer is not a host registration: {}",
                transport_cause(&e)
            ))
        })
    }

    /// Registers until the service takes the host.
    async fn register(&mut self) {
        let mut last: Option<String> = None;
        let mut failures = 0u32;
        loop {
            match self.try_register().await {
                Ok(r) => {
                    let h = &r.host;
                    match &self.status {
                        Some(old) if *old != h.status => tracing::info!(
                            host_id = %self.host_id,
                            from = %old,
                            status = %h.status,
                            status_info = %h.status_info,
                            "registered; the host's status changed"
                        ),
                        _ => tracing::info!(
                            host_id = %self.host_id,
                            infra_env_id = %h.infra_env_id,
                            cluster_id = %h.cluster_id,
                            status = %h.status,
                            status_info = %h.status_info,
                            attempts = failures + 1,
                            "registered"
                        ),
                    }
                    self.status = Some(h.status.clone());
                    return;
                }
                Err(f) => {
                    failures += 1;
                    let refused = f.status().is_some_and(|c| {
                        c.is_client_error()
                            && !matches!(
                                c,
                                StatusCode::REQUEST_TIMEOUT | StatusCode::TOO_MANY_REQUESTS
                            )
                    });
                    let wait = if refused {
                        REFUSED_RETRY
                    } else {
                        self.cfg.interval
                    };
                    let cause = f.to_string();
                    if last.as_deref() != Some(cause.as_str()) {
                        if refused {
                            tracing::warn!(
                                url = %self.hosts_url,
                                host_id = %self.host_id,
                                cause = %cause,
                                retry_in_s = wait.as_secs(),
                                "the service refuses to register this host; retrying slowly (logged again when the reason changes)"
                            );
                        } else {
                            tracing::warn!(
                                url = %self.hosts_url,
                                host_id = %self.host_id,
                                cause = %cause,
                                retry_in_s = wait.as_secs(),
                                "registration failed; retrying (logged again when the cause changes)"
                            );
                        }
                        last = Some(cause);
                    } else {
                        tracing::debug!(url = %self.hosts_url, failures, "registration failed again");
                    }
                    tokio::time::sleep(wait).await;
                }
            }
        }
    }

    /// One poll.
    async fn poll(&self) -> Result<Steps, Failure> {
        let resp = self
            .client
            .get(format!("{}?timestamp={}", self.steps_url, now_s()))
            .send()
            .await
            .map_err(|e| Failure::Transport(transport_cause(&e)))?;
        if resp.status() != StatusCode::OK {
            return Err(failure_of(resp).await);
        }
        resp.json::<Steps>().await.map_err(|e| {
            Failure::Transport(format!("the answer is not steps: {}", transport_cause(&e)))
        })
    }

    /// Polls and runs steps until the service says exit or forgets the
    /// host.
    async fn runner(&mut self) -> End {
        let mut polls = Trouble::new("polling for the next steps");
        loop {
            if self.flush().await == Flush::Unknown {
                return End::Unknown;
            }
            let steps = match self.poll().await {
                Ok(s) => {
                    polls.ok(&self.steps_url);
                    s
                }
                Err(f) if f.status() == Some(StatusCode::NOT_FOUND) => {
                    tracing::warn!(url = %self.steps_url, cause = %f, "poll: the host is unknown");
                    self.drop_pending("the host is unknown to the service");
                    return End::Unknown;
                }
                Err(f) => {
                    let wait = polls.failed(&self.steps_url, &f);
                    tokio::time::sleep(wait).await;
                    continue;
                }
            };
            if self.run_steps(steps.instructions).await == Flush::Unknown {
                return End::Unknown;
            }
            let wait = Duration::from_secs(steps.next_instruction_seconds.max(1));
            tokio::time::sleep(wait).await;
            if steps.post_step_action == "exit" {
                return End::Exit;
            }
        }
    }

    /// Runs `steps` concurrently, queueing and sending each reply as its
    /// step ends.
    async fn run_steps(&mut self, steps: Vec<Step>) -> Flush {
        let mut set = tokio::task::JoinSet::new();
        let mut ids = HashMap::new();
        for st in steps {
            tracing::debug!(step_type = %st.step_type, step_id = %st.step_id, "running step");
            let key = (st.step_type.clone(), st.step_id.clone());
            let h = if st.step_type == "logs-gather" {
                let ctx = crate::logs::Context {
                    client: self.client.clone(),
                    api_base: self
                        .hosts_url
                        .rsplit_once("/infra-envs/")
                        .map(|(b, _)| b.to_string())
                        .unwrap_or_default(),
                    host_id: self.host_id.clone(),
                    infra_env_id: self.cfg.infra_env_id.clone(),
                    state_dir: self.cfg.state_dir.clone(),
                    root: self.cfg.root.clone(),
                    agent_txt: self.agent_txt(),
                };
                set.spawn(async move {
                    let (exit_code, output, error) = crate::logs::run(&st.args, ctx).await;
                    StepReply {
                        step_type: st.step_type,
                        step_id: st.step_id,
                        exit_code,
                        output,
                        error,
                    }
                })
            } else if st.step_type == "install" {
                let (client, url, dir) = (
                    self.client.clone(),
                    self.ignition_url(),
                    self.cfg.state_dir.clone(),
                );
                set.spawn(async move {
                    let (exit_code, output, error) =
                        crate::install::run(&st.args, &client, &url, &dir).await;
                    StepReply {
                        step_type: st.step_type,
                        step_id: st.step_id,
                        exit_code,
                        output,
                        error,
                    }
                })
            } else {
                set.spawn(execute(st, self.cfg.root.clone()))
            };
            ids.insert(h.id(), key);
        }
        let mut stuck = false;
        while let Some(res) = set.join_next_with_id().await {
            let reply = match res {
                Ok((_, r)) => r,
                Err(e) => {
                    let (step_type, step_id) = ids.remove(&e.id()).unwrap_or_default();
                    StepReply {
                        step_type,
                        step_id,
                        exit_code: -1,
                        output: String::new(),
                        error: format!("the step's task ended abnormally: {e}"),
                    }
                }
            };
            self.note_result(&reply);
            self.enqueue(reply);
            if !stuck {
                match self.flush().await {
                    Flush::Done => {}
                    Flush::Stuck => stuck = true,
                    Flush::Unknown => return Flush::Unknown,
                }
            }
        }
        if stuck { Flush::Stuck } else { Flush::Done }
    }

    /// The logs' `agent.txt`: version, ids, service, status and the last
    /// step results (no token).
    fn agent_txt(&self) -> String {
        let mut t = format!(
            "agent version: {}\nhost id: {}\ninfra-env id: {}\nservice: {}\nstatus at registration: {}\nroot: {}\nstate directory: {}\n\nlast step results (Unix s, type, id, exit code, error):\n",
            self.cfg.agent_version,
            self.host_id,
            self.cfg.infra_env_id,
            self.cfg.service_url,
            self.status.as_deref().unwrap_or("unknown"),
            self.cfg.root.0.display(),
            self.cfg.state_dir.display(),
        );
        for line in &self.recent {
            t.push_str(line);
            t.push('\n');
        }
        t
    }

    /// Logs a failing step when its error changes (not on every poll).
    fn note_result(&mut self, r: &StepReply) {
        if self.recent.len() == RECENT_RESULTS {
            self.recent.pop_front();
        }
        self.recent.push_back(format!(
            "{} {} {} {} {}",
            now_s(),
            r.step_type,
            r.step_id,
            r.exit_code,
            r.error.replace('\n', " ")
        ));
        if r.exit_code == 0 {
            if self.step_errors.remove(&r.step_type).is_some() {
                tracing::info!(step_type = %r.step_type, "step succeeds again");
            }
            return;
        }
        if self.step_errors.get(&r.step_type) != Some(&r.error) {
            tracing::warn!(
                step_type = %r.step_type,
                step_id = %r.step_id,
                exit_code = r.exit_code,
                error = %r.error,
                "step failed; its reply says so (logged again when the error changes)"
            );
            self.step_errors
                .insert(r.step_type.clone(), r.error.clone());
        }
    }

    fn enqueue(&mut self, reply: StepReply) {
        if self.pending.len() >= MAX_PENDING
            && let Some(old) = self.pending.pop_front()
        {
            tracing::warn!(
                step_type = %old.reply.step_type,
                step_id = %old.reply.step_id,
                attempts = old.attempts,
                "{MAX_PENDING} replies wait for the service; dropping the oldest"
            );
        }
        self.pending.push_back(Pending { reply, attempts: 0 });
    }

    fn drop_pending(&mut self, why: &str) {
        if !self.pending.is_empty() {
            tracing::warn!(
                replies = self.pending.len(),
                "dropping the unsent replies: {why}"
            );
            self.pending.clear();
        }
    }

    /// Sends the queued replies in order (module docs).
    async fn flush(&mut self) -> Flush {
        while let Some(p) = self.pending.front_mut() {
            p.attempts += 1;
            let sent = self
                .client
                .post(&self.steps_url)
                .json(&p.reply)
                .send()
                .await;
            let failure = match sent {
                Ok(resp) if resp.status().is_success() => None,
                Ok(resp) => Some(failure_of(resp).await),
                Err(e) => Some(Failure::Transport(transport_cause(&e))),
            };
            match failure {
                None => {
                    if p.attempts > 1 {
                        tracing::info!(
                            step_type = %p.reply.step_type,
                            step_id = %p.reply.step_id,
                            attempts = p.attempts,
                            "step reply delivered after retries"
                        );
                    }
                    self.replies.ok(&self.steps_url);
                    self.pending.pop_front();
                }
                Some(f) if f.status() == Some(StatusCode::NOT_FOUND) => {
                    tracing::warn!(url = %self.steps_url, cause = %f, "step reply: the host is unknown");
                    self.drop_pending("the host is unknown to the service");
                    return Flush::Unknown;
                }
                Some(f) if f.status().is_some_and(|c| !transient(c)) => {
                    tracing::warn!(
                        url = %self.steps_url,
                        step_type = %p.reply.step_type,
                        step_id = %p.reply.step_id,
                        cause = %f,
                        "the service refuses the step reply; dropping it"
                    );
                    self.pending.pop_front();
                }
                Some(f) => {
                    self.replies.failed(&self.steps_url, &f);
                    return Flush::Stuck;
                }
            }
        }
        Flush::Done
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn unknown_step_types_are_answered_as_unsupported() {
        let r = execute(
            Step {
                step_type: "tang-connectivity-check".into(),
                step_id: "tang-connectivity-check-0000abcd".into(),
                args: vec![],
            },
            Root::default(),
        )
        .await;
        assert_eq!(r.exit_code, UNSUPPORTED_EXIT_CODE);
        assert_eq!(r.step_id, "tang-connectivity-check-0000abcd");
        assert_eq!(
            r.error,
            "step type tang-connectivity-check is not supported by this agent"
        );
        assert!(r.output.is_empty());
    }

    #[tokio::test]
    async fn the_inventory_step_answers_the_machines_inventory() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("proc/sys/kernel")).unwrap();
        std::fs::write(d.path().join("proc/sys/kernel/hostname"), "node-7\n").unwrap();
        let r = execute(
            Step {
                step_type: "inventory".into(),
                step_id: "inventory-00000001".into(),
                args: vec!["x".into()],
            },
            Root(d.path().to_path_buf()),
        )
        .await;
        assert_eq!((r.exit_code, r.error.as_str()), (0, ""));
        let inv: okd_assisted_api::Inventory = serde_json::from_str(&r.output).unwrap();
        assert_eq!(inv.hostname, "node-7");
    }

    #[test]
    fn what_can_never_work_is_an_error() {
        let mut cfg = AgentConfig::new("ftp://example", "ie");
        cfg.host_id = Some("h".into());
        assert!(matches!(
            Agent::new(cfg.clone()),
            Err(AgentError::Url { .. })
        ));
        cfg.service_url = "not a url".into();
        assert!(matches!(
            Agent::new(cfg.clone()),
            Err(AgentError::Url { .. })
        ));
        cfg.service_url = "http://127.0.0.1:1/prefix/".into();
        let a = Agent::new(cfg.clone()).unwrap();
        assert_eq!(
            a.steps_url,
            "http://127.0.0.1:1/prefix/api/assisted-install/v2/infra-envs/ie/hosts/h/instructions"
        );
        cfg.infra_env_id = "../x".into();
        assert!(matches!(
            Agent::new(cfg.clone()),
            Err(AgentError::Id { .. })
        ));
        cfg.infra_env_id = "ie".into();
        cfg.token = Some("a\nb".into());
        assert!(matches!(Agent::new(cfg.clone()), Err(AgentError::Token)));
        cfg.token = Some("secret".into());
        assert!(!format!("{cfg:?}").contains("secret"));
        let d = tempfile::tempdir().unwrap();
        cfg.ca_cert = Some(d.path().join("missing.pem"));
        assert!(matches!(
            Agent::new(cfg.clone()),
            Err(AgentError::CaRead { .. })
        ));
        std::fs::write(d.path().join("empty.pem"), "nothing here\n").unwrap();
        cfg.ca_cert = Some(d.path().join("empty.pem"));
        assert!(matches!(
            Agent::new(cfg.clone()),
            Err(AgentError::CaPem { .. })
        ));
    }

    #[test]
    fn at_most_max_pending_replies_wait_and_the_oldest_goes() {
        let mut cfg = AgentConfig::new("http://127.0.0.1:1", "ie");
        cfg.host_id = Some("h".into());
        let mut a = Agent::new(cfg).unwrap();
        for i in 0..=MAX_PENDING {
            a.enqueue(StepReply {
                step_type: "inventory".into(),
                step_id: format!("inventory-{i:08x}"),
                exit_code: 0,
                output: String::new(),
                error: String::new(),
            });
        }
        assert_eq!(a.pending.len(), MAX_PENDING);
        assert_eq!(a.pending[0].reply.step_id, "inventory-00000001");
    }

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
