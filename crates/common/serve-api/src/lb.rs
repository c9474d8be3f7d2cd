//! The load balancer's snapshot as `/status` carries it (`loadBalancer`,
//! and `bootstrapRemoved.frontends`): [`Stats`] of every frontend and
//! backend, with the health check and balancing each frontend uses. The
//! embedded balancer (okd-lb) fills and re-exports these types; the
//! dashboard, `wait-for` and the tests read them. Field names are the JSON
//! keys (snake case, as the balancer always wrote them); times are
//! milliseconds since the Unix epoch, durations serde's `{secs, nanos}`.

use std::net::SocketAddr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// What a health check does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "type")]
pub enum CheckKind {
    /// No check: the backend is always UP.
    None,
    /// A TCP connect must succeed (HAProxy plain `check`).
    Tcp,
    /// `GET <path>` over TLS without certificate verification (HAProxy
    /// `option httpchk GET <path>` + `check-ssl verify none`); the status must
    /// be 2xx or 3xx.
    HttpsGet {
        /// Request path, e.g. `/readyz`.
        path: String,
    },
    /// `GET <path>` over plain HTTP; the status must be 2xx or 3xx.
    HttpGet {
        /// Request path, e.g. `/healthz`.
        path: String,
    },
}

/// A health check with HAProxy's timing (`inter 2s rise 2 fall 3`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HealthCheck {
    /// What is checked.
    pub kind: CheckKind,
    /// Time between the starts of two checks (HAProxy `inter`, default 2 s).
    pub interval: Duration,
    /// Limit for one check including connect and TLS (default 2 s).
    pub timeout: Duration,
    /// Consecutive good checks that bring a DOWN backend UP (default 2).
    pub rise: u32,
    /// Consecutive failed checks that take an UP backend DOWN (default 3).
    pub fall: u32,
}

impl HealthCheck {
    fn with_kind(kind: CheckKind) -> HealthCheck {
        HealthCheck {
            kind,
            interval: Duration::from_secs(2),
            timeout: Duration::from_secs(2),
            rise: 2,
            fall: 3,
        }
    }

    /// No check; backends are always UP.
    pub fn none() -> HealthCheck {
        HealthCheck::with_kind(CheckKind::None)
    }

    /// TCP connect check with default timing.
    pub fn tcp() -> HealthCheck {
        HealthCheck::with_kind(CheckKind::Tcp)
    }

    /// `GET path` over TLS (no verification) with default timing.
    pub fn https_get(path: impl Into<String>) -> HealthCheck {
        HealthCheck::with_kind(CheckKind::HttpsGet { path: path.into() })
    }

    /// `GET path` over plain HTTP with default timing.
    pub fn http_get(path: impl Into<String>) -> HealthCheck {
        HealthCheck::with_kind(CheckKind::HttpGet { path: path.into() })
    }

    /// The same check every `interval`, each limited to `timeout` (at most `interval`).
    pub fn every(mut self, interval: Duration, timeout: Duration) -> HealthCheck {
        self.interval = interval;
        self.timeout = timeout.min(interval);
        self
    }

    /// The same check with other `rise`/`fall` counts (each at least 1).
    pub fn rise_fall(mut self, rise: u32, fall: u32) -> HealthCheck {
        self.rise = rise.max(1);
        self.fall = fall.max(1);
        self
    }
}

impl Default for HealthCheck {
    fn default() -> Self {
        HealthCheck::tcp()
    }
}

/// How a frontend picks a backend among the healthy ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Balance {
    /// Hash of the client IP modulo the number of healthy backends (HAProxy
    /// `balance source`): a client sticks to one backend while the healthy set
    /// is unchanged.
    #[default]
    Source,
    /// Each new connection goes to the next healthy backend.
    RoundRobin,
}

/// The outcome of one health check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckResult {
    /// Whether the check passed.
    pub ok: bool,
    /// `HTTP 200`, `connected`, or the failure (`connection refused`, `HTTP 500`, `timeout after 2s`).
    pub detail: String,
    /// When the check finished, milliseconds since the Unix epoch.
    pub at_unix_ms: u64,
    /// How long it took, in milliseconds.
    pub duration_ms: u64,
}

/// Counters and state of one backend, as the balancer's snapshot (`okd_lb::LoadBalancer::snapshot`) reports them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackendStats {
    /// Backend name.
    pub name: String,
    /// Backend address.
    pub addr: SocketAddr,
    /// Whether it is UP (false while not checked yet).
    pub up: bool,
    /// Whether a health check has finished (always true without a check).
    pub checked: bool,
    /// `UP`, `DOWN` or `not checked yet` (see [`BackendStats::state_text`]).
    pub state: String,
    /// Since when it is up (or down): the last change, or when it was
    /// added; milliseconds since the Unix epoch.
    pub since_unix_ms: u64,
    /// The last health check, `None` before the first one (or with [`CheckKind::None`]).
    pub last_check: Option<CheckResult>,
    /// When a health check last passed, milliseconds since the Unix epoch;
    /// `None` if none has (a backend DOWN with a passed check has gone
    /// down, one without never came up).
    pub last_ok_unix_ms: Option<u64>,
    /// Connections proxied right now.
    pub active_connections: u64,
    /// Connections proxied since start.
    pub connections_total: u64,
    /// Connection attempts to this backend that failed (another backend was then tried).
    pub connect_failures: u64,
    /// Bytes from clients to this backend.
    pub bytes_in: u64,
    /// Bytes from this backend to clients.
    pub bytes_out: u64,
}

impl BackendStats {
    /// What a backend's state reads as: `UP`, `DOWN`, or `not checked yet`
    /// before its first health check finished.
    pub fn state_text(up: bool, checked: bool) -> &'static str {
        match (checked, up) {
            (false, _) => NOT_CHECKED,
            (true, true) => "UP",
            (true, false) => "DOWN",
        }
    }
}

/// The state of a backend before its first health check finished.
pub const NOT_CHECKED: &str = "not checked yet";

/// Counters of one frontend.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FrontendStats {
    /// Frontend name.
    pub name: String,
    /// The bound address (the real port when 0 was configured).
    pub bind: SocketAddr,
    /// The balancing algorithm.
    pub balance: Balance,
    /// The health check.
    pub check: HealthCheck,
    /// Connections accepted since start.
    pub connections_total: u64,
    /// Connections open right now.
    pub active_connections: u64,
    /// Connections closed because no backend was UP or reachable.
    pub rejected_total: u64,
    /// The current backends (removed ones are gone).
    pub backends: Vec<BackendStats>,
}

/// A point-in-time view of every frontend (serialised as the status JSON).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stats {
    /// Frontends in configuration order.
    pub frontends: Vec<FrontendStats>,
}
