//! The service's limits (issue #41): hosts per infra-env, the hosts' logs
//! it stores (per host and in all), and the size of every request body.
//!
//! Every refusal names the limit: what it bounds, its value and the
//! `okd-install assisted serve` flag that changes it ([`Limit`]), so the
//! user who meets one knows what to raise or what to delete.
//!
//! - Hosts: a registration of a host the infra-env does not hold yet is
//!   refused once the infra-env holds [`Limits::max_hosts_per_infra_env`]
//!   hosts, with 409 and the swagger's `error` body, as assisted-service
//!   refuses a registration its cluster cannot accept (`v2RegisterHost`'s
//!   409: "Cluster cannot accept new agents due to its current state";
//!   `internal/bminventory` `V2RegisterHost`); a host that is there
//!   already may always register again. The count and the insert are one
//!   transaction that first locks the infra-env's row, so two
//!   registrations cannot both take the last place (two replicas on one
//!   PostgreSQL included). The refusal is also assisted-service's event
//!   `host_registration_failed` (severity `error`) on the host, its
//!   infra-env and cluster, at most one every [`REFUSAL_EVENT_EVERY_MS`]
//!   per infra-env (refused agents retry every minute).
//! - Logs: an upload that would make the host's stored logs larger than
//!   [`Limits::max_host_logs_bytes`], or all stored logs larger than
//!   [`Limits::max_logs_bytes`], is refused with 413 and nothing stored
//!   (the older archive stays). An upload replaces the host's older
//!   archive, so the older one does not count against the new one. The
//!   check and the insert are one transaction (on PostgreSQL under a
//!   transaction-scoped advisory lock, on SQLite under its one writer).
//!   Logs go when their cluster is deleted.
//! - Request bodies: every route has a limit ([`BodyLimit`]), enforced by
//!   [`enforce`] (a `Content-Length` over it refused before the handler
//!   runs, a chunked body counted as it is read; the refused body read to
//!   its end and dropped, up to [`DRAIN_MAX_BYTES`], so the client reads
//!   the refusal rather than a broken pipe) and by axum's
//!   `DefaultBodyLimit` in the extractors. JSON calls: [`Limits::max_body_bytes`]; step
//!   replies (an inventory of a host with hundreds of disks):
//!   [`Limits::max_step_reply_bytes`]; logs uploads: the per-host logs
//!   limit plus [`MULTIPART_FRAMING_BYTES`] of form framing; the web
//!   page's routes (its sign-in form): the JSON limit.
//!
//! 413 is not among the statuses the swagger lists for these operations;
//! it is what HTTP (RFC 9110 §15.5.14) names for a body too large, and
//! the body is still the swagger's `error`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::body::{Body, BodyDataStream};
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;

use crate::api::Failure;

/// Default of [`Limits::max_hosts_per_infra_env`]: 5,000 hosts, the scale
/// the service is benchmarked at (bench/assisted-agents.sh) and above
/// OpenShift's largest tested cluster (2,000 nodes).
pub const DEFAULT_MAX_HOSTS_PER_INFRA_ENV: u64 = 5000;
/// Default of [`Limits::max_host_logs_bytes`]: 64 MiB (the agent packs at
/// most 32 MiB of journal, compressed).
pub const DEFAULT_MAX_HOST_LOGS_BYTES: u64 = 64 << 20;
/// Default of [`Limits::max_logs_bytes`]: 2 GiB.
pub const DEFAULT_MAX_LOGS_BYTES: u64 = 2 << 30;
/// Default of [`Limits::max_body_bytes`]: 1 MiB.
pub const DEFAULT_MAX_BODY_BYTES: u64 = 1 << 20;
/// Default of [`Limits::max_step_reply_bytes`]: 4 MiB.
pub const DEFAULT_MAX_STEP_REPLY_BYTES: u64 = 4 << 20;
/// What a logs upload's body may hold beyond the archive: the multipart
/// boundaries and part headers, bytes (64 KiB).
pub const MULTIPART_FRAMING_BYTES: u64 = 64 << 10;
/// At most one `host_registration_refused` event per infra-env in this
/// time, ms (10 min).
pub const REFUSAL_EVENT_EVERY_MS: i64 = 10 * 60 * 1000;

/// The limits of one service ([`crate::Options::limits`]). Each is at
/// least 1; [`Limits::default`] gives the defaults above.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Hosts one infra-env holds at most (`--max-hosts-per-infra-env`,
    /// 5,000).
    pub max_hosts_per_infra_env: u64,
    /// Bytes of logs archives stored for one host at most
    /// (`--max-host-logs-bytes`, 64 MiB); also bounds a logs upload's
    /// body.
    pub max_host_logs_bytes: u64,
    /// Bytes of logs archives stored for all hosts at most
    /// (`--max-logs-bytes`, 2 GiB).
    pub max_logs_bytes: u64,
    /// Bytes of a JSON request body at most, for every call but step
    /// replies and logs uploads (`--max-body-bytes`, 1 MiB).
    pub max_body_bytes: u64,
    /// Bytes of a step reply's body at most (`--max-step-reply-bytes`,
    /// 4 MiB).
    pub max_step_reply_bytes: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_hosts_per_infra_env: DEFAULT_MAX_HOSTS_PER_INFRA_ENV,
            max_host_logs_bytes: DEFAULT_MAX_HOST_LOGS_BYTES,
            max_logs_bytes: DEFAULT_MAX_LOGS_BYTES,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            max_step_reply_bytes: DEFAULT_MAX_STEP_REPLY_BYTES,
        }
    }
}

/// One limit as a refusal names it: `what` it bounds, its `value` in
/// `unit`, and the `okd-install assisted serve` flag that sets it.
/// Displays as e.g. `the limit of hosts per infra-env, 5000 hosts
/// (okd-install assisted serve --max-hosts-per-infra-env)` or `the limit
/// of a JSON request body, 1048576 bytes = 1 MiB (okd-install assisted
/// serve --max-body-bytes)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit {
    /// What it bounds, e.g. `hosts per infra-env`.
    pub what: &'static str,
    /// Its value.
    pub value: u64,
    /// `hosts` or `bytes`.
    pub unit: &'static str,
    /// The flag, e.g. `--max-hosts-per-infra-env`.
    pub flag: &'static str,
}

impl std::fmt::Display for Limit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the limit of {}, {} {}",
            self.what, self.value, self.unit
        )?;
        if self.unit == "bytes"
            && let Some(h) = binary_size(self.value)
        {
            write!(f, " = {h}")?;
        }
        write!(f, " (okd-install assisted serve {})", self.flag)
    }
}

/// `n` bytes as a whole number of GiB, MiB or KiB, `None` when it is
/// none of these (or under 1 KiB).
fn binary_size(n: u64) -> Option<String> {
    [("GiB", 30), ("MiB", 20), ("KiB", 10)]
        .into_iter()
        .find(|&(_, shift)| n >= 1 << shift && n.is_multiple_of(1 << shift))
        .map(|(unit, shift)| format!("{} {unit}", n >> shift))
}

impl Limits {
    /// [`Limits::max_hosts_per_infra_env`] as refusals name it.
    pub fn hosts_per_infra_env(&self) -> Limit {
        Limit {
            what: "hosts per infra-env",
            value: self.max_hosts_per_infra_env,
            unit: "hosts",
            flag: "--max-hosts-per-infra-env",
        }
    }

    /// [`Limits::max_host_logs_bytes`] as refusals name it.
    pub fn host_logs(&self) -> Limit {
        Limit {
            what: "logs stored per host",
            value: self.max_host_logs_bytes,
            unit: "bytes",
            flag: "--max-host-logs-bytes",
        }
    }

    /// [`Limits::max_logs_bytes`] as refusals name it.
    pub fn all_logs(&self) -> Limit {
        Limit {
            what: "logs stored for all hosts",
            value: self.max_logs_bytes,
            unit: "bytes",
            flag: "--max-logs-bytes",
        }
    }

    /// The body limit of JSON calls ([`Limits::max_body_bytes`]).
    pub fn json_body(&self) -> BodyLimit {
        BodyLimit {
            bytes: self.max_body_bytes,
            named: Limit {
                what: "a JSON request body",
                value: self.max_body_bytes,
                unit: "bytes",
                flag: "--max-body-bytes",
            },
        }
    }

    /// The body limit of step replies ([`Limits::max_step_reply_bytes`]).
    pub fn step_reply_body(&self) -> BodyLimit {
        BodyLimit {
            bytes: self.max_step_reply_bytes,
            named: Limit {
                what: "a step reply's body",
                value: self.max_step_reply_bytes,
                unit: "bytes",
                flag: "--max-step-reply-bytes",
            },
        }
    }

    /// The body limit of logs uploads: the per-host logs limit plus
    /// [`MULTIPART_FRAMING_BYTES`]; its refusal names the per-host logs
    /// limit.
    pub fn logs_upload_body(&self) -> BodyLimit {
        BodyLimit {
            bytes: self
                .max_host_logs_bytes
                .saturating_add(MULTIPART_FRAMING_BYTES),
            named: self.host_logs(),
        }
    }
}

/// What a registration checked against [`Limits::max_hosts_per_infra_env`]
/// did ([`crate::db::Db::insert_host`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostAdmission {
    /// The host is new and stored.
    New,
    /// A host with its id is in the infra-env already; nothing changed.
    Exists,
    /// Refused: the infra-env holds `hosts` hosts, the limit or more.
    Full {
        /// The infra-env's hosts.
        hosts: u64,
    },
}

/// What a logs upload checked against the logs limits did
/// ([`crate::db::Db::put_host_logs`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogsAdmission {
    /// Stored (replacing the host's older archive of its type).
    Stored,
    /// The host is not (any more) in the cluster; nothing stored.
    NotInCluster,
    /// Refused by [`Limits::max_host_logs_bytes`]: the host's logs would
    /// be `bytes` bytes; nothing stored.
    OverHost {
        /// The host's stored logs with this upload, bytes.
        bytes: u64,
    },
    /// Refused by [`Limits::max_logs_bytes`]: all stored logs would be
    /// `bytes` bytes; nothing stored.
    OverAll {
        /// All stored logs with this upload, bytes.
        bytes: u64,
    },
}

/// A route's request body limit: at most `bytes`, refused naming `named`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BodyLimit {
    /// Bytes of body at most.
    pub bytes: u64,
    /// The limit the refusal names (for logs uploads the per-host logs
    /// limit, which `bytes` exceeds by the form's framing).
    pub named: Limit,
}

impl BodyLimit {
    /// `bytes` for axum's `DefaultBodyLimit`.
    pub fn bytes_usize(&self) -> usize {
        usize::try_from(self.bytes).unwrap_or(usize::MAX)
    }

    /// The 413 refusal (swagger `error` body) of a body of `len` bytes
    /// (`None`: unknown, a chunked body that ran over).
    pub fn refusal(&self, len: Option<u64>) -> Failure {
        let size = match len {
            Some(n) => format!("{n} bytes"),
            None => format!("over {} bytes", self.bytes),
        };
        Failure::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("request body of {size}: over {}", self.named),
        )
    }
}

/// A refused body of at most this many bytes is read to its end (and
/// dropped) before the refusal is sent, so the connection stays usable:
/// most clients send their whole body before they read an answer, and a
/// connection closed under them shows as a broken pipe instead of the
/// 413. A larger body is answered at once and its connection closed.
/// Bytes (8 MiB).
pub const DRAIN_MAX_BYTES: u64 = 8 << 20;

/// How long reading a refused body to its end may take (10 s).
pub const DRAIN_TIME: std::time::Duration = std::time::Duration::from_secs(10);

/// Reads and drops the rest of a refused body: until its end,
/// [`DRAIN_MAX_BYTES`] in all (`read` so far) or [`DRAIN_TIME`].
async fn drain(body: &mut BodyDataStream, mut read: u64) {
    let rest = async {
        while read <= DRAIN_MAX_BYTES {
            match body.next().await {
                Some(Ok(chunk)) => read = read.saturating_add(chunk.len() as u64),
                _ => return,
            }
        }
    };
    let _ = tokio::time::timeout(DRAIN_TIME, rest).await;
}

/// The middleware of a route with limit `limit` (beside axum's
/// `DefaultBodyLimit::max(limit.bytes_usize())` for the extractors): a
/// `Content-Length` over the limit is refused before the handler runs; a
/// body without one is counted as the handler reads it, and the
/// handler's answer to the first byte over the limit is replaced by the
/// refusal. Either way the refusal is [`BodyLimit::refusal`], sent once
/// the rest of the body is read and dropped ([`DRAIN_MAX_BYTES`]). A 413
/// of axum's own (plain text) is replaced by the refusal too.
pub async fn enforce(State(limit): State<BodyLimit>, req: Request, next: Next) -> Response {
    let len = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let (parts, body) = req.into_parts();
    let mut body = body.into_data_stream();
    if let Some(n) = len
        && n > limit.bytes
    {
        if n <= DRAIN_MAX_BYTES {
            drain(&mut body, 0).await;
        }
        return limit.refusal(Some(n)).into_response();
    }
    let over = Arc::new(AtomicBool::new(false));
    let counted =
        futures_util::stream::unfold(Some((body, 0u64, over.clone())), move |state| async move {
            let (mut body, read, over) = state?;
            let chunk = match body.next().await? {
                Ok(chunk) => chunk,
                Err(e) => return Some((Err(e), None)),
            };
            let read = read.saturating_add(chunk.len() as u64);
            if read > limit.bytes {
                over.store(true, Ordering::Relaxed);
                drain(&mut body, read).await;
                let e = std::io::Error::other(format!("over {}", limit.named));
                return Some((Err(axum::Error::new(e)), None));
            }
            Some((Ok(chunk), Some((body, read, over))))
        });
    let req = Request::from_parts(parts, Body::from_stream(counted));
    let resp = next.run(req).await;
    let json = HeaderValue::from_static("application/json");
    if over.load(Ordering::Relaxed)
        || (resp.status() == StatusCode::PAYLOAD_TOO_LARGE
            && resp.headers().get(header::CONTENT_TYPE) != Some(&json))
    {
        return limit.refusal(len).into_response();
    }
    resp
}

/// `router` with `limit` on each of its routes (axum's `DefaultBodyLimit`
/// and [`enforce`]). Routes added to `router` afterwards do not get it.
pub fn with_body_limit<S: Clone + Send + Sync + 'static>(
    router: axum::Router<S>,
    limit: BodyLimit,
) -> axum::Router<S> {
    router
        .layer(axum::extract::DefaultBodyLimit::max(limit.bytes_usize()))
        .layer(axum::middleware::from_fn_with_state(limit, enforce))
}

/// The refusal of a host that infra-env `infra_env_name` has no room for
/// (it holds `hosts`): 409 (swagger `v2RegisterHost`'s "cannot accept new
/// agents"; assisted-service answers a refused registration so) naming
/// [`Limits::hosts_per_infra_env`], and the event
/// `host_registration_failed` (severity `error`, as assisted-service's) on
/// the host, its infra-env and cluster, at most once every
/// [`REFUSAL_EVENT_EVERY_MS`] per infra-env.
pub(crate) async fn infra_env_full(
    s: &crate::Shared,
    scope: crate::events::Scope<'_>,
    infra_env_name: &str,
    hosts: u64,
) -> Failure {
    let limit = s.opts.limits.hosts_per_infra_env();
    let reason = format!(
        "Host {} cannot register: infra-env {infra_env_name} ({}) holds {hosts} hosts, {limit}; delete hosts it does not need or raise the limit",
        scope.host_id, scope.infra_env_id
    );
    let name = "host_registration_failed";
    let last =
        s.db.last_event_at(scope.infra_env_id, name, limit.flag)
            .await
            .unwrap_or(None);
    if last.is_none_or(|t| crate::db::now_ms() - t >= REFUSAL_EVENT_EVERY_MS) {
        let message = format!(
            "{reason} (such refusals are recorded at most once every {} minutes per infra-env)",
            REFUSAL_EVENT_EVERY_MS / 60_000
        );
        crate::events::emit(&s.db, scope, "error", name, message).await;
    } else {
        tracing::debug!(
            infra_env = scope.infra_env_id,
            host = scope.host_id,
            "{reason}"
        );
    }
    Failure::new(StatusCode::CONFLICT, reason)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_name_their_value_and_flag() {
        let l = Limits::default();
        assert_eq!(
            l.hosts_per_infra_env().to_string(),
            "the limit of hosts per infra-env, 5000 hosts (okd-install assisted serve --max-hosts-per-infra-env)"
        );
        assert_eq!(
            l.json_body().named.to_string(),
            "the limit of a JSON request body, 1048576 bytes = 1 MiB (okd-install assisted serve --max-body-bytes)"
        );
        assert_eq!(
            l.all_logs().to_string(),
            "the limit of logs stored for all hosts, 2147483648 bytes = 2 GiB (okd-install assisted serve --max-logs-bytes)"
        );
        let odd = Limit {
            value: 1500,
            ..l.host_logs()
        };
        assert_eq!(
            odd.to_string(),
            "the limit of logs stored per host, 1500 bytes (okd-install assisted serve --max-host-logs-bytes)"
        );
    }

    #[test]
    fn logs_uploads_may_carry_their_form_framing() {
        let l = Limits::default();
        assert_eq!(l.logs_upload_body().bytes, (64 << 20) + (64 << 10));
        assert_eq!(l.logs_upload_body().named, l.host_logs());
    }
}
