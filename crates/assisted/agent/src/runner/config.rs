//! How the agent reaches the service ([`AgentConfig`]), what in that can
//! never work ([`AgentError`]) and the HTTP client built from it.

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::time::Duration;

use okd_assisted_api::rest;

use super::failure::Trouble;
use super::{Agent, CONNECT_TIMEOUT, DEFAULT_INTERVAL, REQUEST_TIMEOUT, SECRET_HEADER};
use crate::{Root, host_id};

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
    /// Whether an `http://` service URL is accepted (`--insecure-http`):
    /// tokens and steps would cross the network in clear, so it is
    /// refused unless asked for.
    pub allow_http: bool,
    /// The infra-env's discovery token: sent as the [`SECRET_HEADER`] to
    /// register. After registration the agent sends the host token the
    /// service returned instead, and keeps it in
    /// `<state_dir>/host-token-<infra-env id>` (0600) so that a restarted
    /// agent registers its host again with it.
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
            allow_http: false,
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
            .field("allow_http", &self.allow_http)
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

/// The HTTP client of the agent: `token` as the [`SECRET_HEADER`] of every
/// request (marked sensitive), the system's roots plus `certs`, the
/// agent's timeouts and version.
///
/// # Errors
/// [`AgentError::Token`] for a token that is no header value;
/// [`AgentError::Client`] when the client cannot be built.
pub(super) fn http_client(
    cfg: &AgentConfig,
    certs: &[reqwest::Certificate],
    token: Option<&str>,
) -> Result<reqwest::Client, AgentError> {
    let mut headers = reqwest::header::HeaderMap::new();
    if let Some(t) = token {
        let mut v = reqwest::header::HeaderValue::from_str(t).map_err(|_| AgentError::Token)?;
        v.set_sensitive(true);
        headers.insert(SECRET_HEADER, v);
    }
    let mut b = reqwest::Client::builder()
        .default_headers(headers)
        .user_agent(cfg.agent_version.clone())
        .timeout(REQUEST_TIMEOUT)
        .connect_timeout(CONNECT_TIMEOUT);
    if !certs.is_empty() {
        b = b.tls_certs_merge(certs.to_vec());
    }
    b.build().map_err(|e| AgentError::Client(e.to_string()))
}

impl Agent {
    pub(super) fn new(cfg: AgentConfig) -> Result<Agent, AgentError> {
        let bad = |reason: &str| AgentError::Url {
            url: cfg.service_url.clone(),
            reason: reason.to_string(),
        };
        let url = reqwest::Url::parse(&cfg.service_url).map_err(|e| bad(&e.to_string()))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(bad("the scheme must be http or https"));
        }
        if url.scheme() == "http" && !cfg.allow_http {
            return Err(bad(
                "plain HTTP: the tokens, the host's steps and its Ignition would cross the network in clear, and anyone in between could hand this host steps; use the https URL (with --cacert, as the discovery Ignition gives them), or --insecure-http",
            ));
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

        if let Some(t) = &cfg.token {
            reqwest::header::HeaderValue::from_str(t).map_err(|_| AgentError::Token)?;
        }
        let mut certs = Vec::new();
        if let Some(path) = &cfg.ca_cert {
            let pem = std::fs::read(path).map_err(|source| AgentError::CaRead {
                path: path.clone(),
                source,
            })?;
            certs = reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| AgentError::CaPem {
                path: path.clone(),
                reason: e.to_string(),
            })?;
            if certs.is_empty() {
                return Err(AgentError::CaPem {
                    path: path.clone(),
                    reason: "no PEM certificate in it".into(),
                });
            }
        }
        let host_token_file = cfg
            .state_dir
            .join(format!("host-token-{}", cfg.infra_env_id));
        let host_token = std::fs::read_to_string(&host_token_file)
            .ok()
            .map(|t| t.trim().to_string())
            .filter(|t| reqwest::header::HeaderValue::from_str(t).is_ok() && !t.is_empty());
        let client = http_client(&cfg, &certs, host_token.as_deref().or(cfg.token.as_deref()))?;
        Ok(Agent {
            cfg,
            client,
            certs,
            host_token,
            host_token_file,
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
}

#[cfg(test)]
mod tests {
    use super::*;

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
        match Agent::new(cfg.clone()) {
            Err(AgentError::Url { reason, .. }) => {
                assert!(reason.contains("--insecure-http"), "{reason}")
            }
            other => panic!("plain HTTP without --insecure-http: {:?}", other.err()),
        }
        cfg.allow_http = true;
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
}
