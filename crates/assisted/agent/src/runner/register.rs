//! Registration with the service (`POST …/infra-envs/{ie}/hosts`), tried
//! again until the service takes the host.
//!
//! The agent registers with its host token when it has one (from an
//! earlier registration, kept in the state directory), else with the
//! infra-env's discovery token; a host token the service refuses (401,
//! 403: revoked, or of another service) is dropped and the discovery
//! token used at once. The token a registration returns is used from then
//! on and kept (0600), so a restarted agent can register its live host
//! again (the service refuses the discovery token for a host whose agent
//! polled within the last two intervals).

use okd_assisted_api::rest::{HostCreateParams, HostRegistrationResponse};
use reqwest::StatusCode;

use super::config::http_client;
use super::failure::{Failure, failure_of, transport_cause};
use super::{Agent, REFUSED_RETRY};

impl Agent {
    /// Sends `token` from now on (the discovery token when `None`).
    fn use_token(&mut self, token: Option<String>) {
        let send = token.as_deref().or(self.cfg.token.as_deref());
        match http_client(&self.cfg, &self.certs, send) {
            Ok(c) => self.client = c,
            // The same settings built a client at start; a token the
            // service sent that is no header value is not used.
            Err(e) => {
                tracing::warn!(error = %e, "keeping the previous token");
                return;
            }
        }
        self.host_token = token;
    }

    /// Takes the host token a registration returned: sends it from now
    /// on and keeps it for a restart.
    fn took(&mut self, token: Option<String>) {
        let Some(t) = token else { return };
        if self.host_token.as_deref() == Some(t.as_str()) {
            return;
        }
        self.use_token(Some(t.clone()));
        if self.host_token.as_deref() == Some(t.as_str())
            && let Err(e) = okd_fs::create_dir_all(&self.cfg.state_dir, 0o700).and_then(|()| {
                okd_fs::write_atomic(&self.host_token_file, format!("{t}\n").as_bytes(), 0o600)
            })
        {
            tracing::warn!(
                path = %self.host_token_file.display(),
                error = %e,
                "cannot keep the host token: a restarted agent registers with the discovery token"
            );
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
    pub(super) async fn register(&mut self) {
        let mut last: Option<String> = None;
        let mut failures = 0u32;
        loop {
            match self.try_register().await {
                Err(f)
                    if self.host_token.is_some()
                        && matches!(
                            f.status(),
                            Some(StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN)
                        ) =>
                {
                    tracing::info!(
                        host_id = %self.host_id,
                        cause = %f,
                        "the host token was refused; registering with the discovery token"
                    );
                    self.use_token(None);
                    let _ = std::fs::remove_file(&self.host_token_file);
                }
                Ok(r) => {
                    self.took(r.host_token.clone());
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
}
