//! Registration with the service (`POST …/infra-envs/{ie}/hosts`), tried
//! again until the service takes the host.

use okd_assisted_api::rest::{HostCreateParams, HostRegistrationResponse};
use reqwest::StatusCode;

use super::failure::{Failure, failure_of, transport_cause};
use super::{Agent, REFUSED_RETRY};

impl Agent {
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
}
