//! The replies not yet taken by the service ([`MAX_PENDING`] at most):
//! queued in order, sent until taken, refused for good or the host unknown.

use okd_assisted_api::rest::StepReply;
use reqwest::StatusCode;

use super::failure::{Failure, failure_of, transient, transport_cause};
use super::{Agent, MAX_PENDING};

/// A reply not yet taken by the service.
#[derive(Debug)]
pub(super) struct Pending {
    reply: StepReply,
    attempts: u32,
}

/// What sending the queued replies came to.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Flush {
    /// Every queued reply was taken or refused for good.
    Done,
    /// A reply got no answer or a transient refusal; it and those after it
    /// stay queued.
    Stuck,
    /// 404: the service does not know the host (register again).
    Unknown,
}

impl Agent {
    pub(super) fn enqueue(&mut self, reply: StepReply) {
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

    pub(super) fn drop_pending(&mut self, why: &str) {
        if !self.pending.is_empty() {
            tracing::warn!(
                replies = self.pending.len(),
                "dropping the unsent replies: {why}"
            );
            self.pending.clear();
        }
    }

    /// Sends the queued replies in order (module docs).
    pub(super) async fn flush(&mut self) -> Flush {
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
    use crate::runner::AgentConfig;

    #[test]
    fn at_most_max_pending_replies_wait_and_the_oldest_goes() {
        let mut cfg = AgentConfig::new("http://127.0.0.1:1", "ie");
        cfg.host_id = Some("h".into());
        cfg.allow_http = true;
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
}
