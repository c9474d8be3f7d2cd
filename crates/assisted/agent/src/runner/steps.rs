//! The steps: [`execute`] runs one as this agent does; the runner polls
//! the next steps, runs them concurrently and queues each reply.

use std::collections::HashMap;
use std::time::Duration;

use okd_assisted_api::rest::{Step, StepReply, Steps};
use reqwest::StatusCode;

use super::failure::{Failure, Trouble, failure_of, transport_cause};
use super::replies::Flush;
use super::{Agent, End, RECENT_RESULTS, UNSUPPORTED_EXIT_CODE, now_s};
use crate::ntp::{ntp_synchronizer, which};
use crate::{Root, inventory};

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
    pub(super) async fn runner(&mut self) -> End {
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
                Err(f) if f.status() == Some(StatusCode::UNAUTHORIZED) => {
                    // The host token was revoked (the host registered
                    // again elsewhere, the infra-env's key regenerated).
                    tracing::warn!(url = %self.steps_url, cause = %f, "poll: the token was refused; registering again");
                    self.drop_pending("the service refused the host's token");
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
                let (client, url, dir, root) = (
                    self.client.clone(),
                    self.ignition_url(),
                    self.cfg.state_dir.clone(),
                    self.cfg.root.clone(),
                );
                set.spawn(async move {
                    let (exit_code, output, error) =
                        crate::install::run(&st.args, &client, &url, &dir, &root).await;
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
}
