//! Waiting for a stack: its resources' events shown once with a progress
//! bar, the timeout, and the failed resources' reasons.

use std::time::Instant;

use aws_sdk_cloudformation::types::StackStatus;
use tracing::{info, warn};

use super::{DeployError, WaitOptions};
use crate::aws::{AwsError, Clients};

/// Waits until stack `id` is no longer in progress, showing each resource
/// event once (a progress bar of `total` resources, and a log line per
/// event). Returns the final status and the stack (`None` once deleted).
pub(super) async fn wait_stack(
    aws: &Clients,
    name: &str,
    id: &str,
    total: u64,
    wait: WaitOptions,
    creating: bool,
) -> Result<(StackStatus, Option<aws_sdk_cloudformation::types::Stack>), DeployError> {
    let bar = indicatif::ProgressBar::new(total.max(1));
    bar.set_style(
        indicatif::ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} resources {msg}")
            .expect("a valid template")
            .progress_chars("=> "),
    );
    bar.set_prefix(name.to_string());
    let start = Instant::now();
    let mut seen = std::collections::HashSet::new();
    let mut done = 0u64;
    let mut logged_wait = false;
    loop {
        // Events, oldest first, each shown once.
        if let Ok(ev) = aws.cfn.describe_stack_events().stack_name(id).send().await {
            let mut events: Vec<_> = ev.stack_events().to_vec();
            events.reverse();
            for e in events {
                let key = e.event_id().unwrap_or_default().to_string();
                if !seen.insert(key) {
                    continue;
                }
                let res = e.logical_resource_id().unwrap_or_default();
                let status = e.resource_status().map(|s| s.as_str()).unwrap_or_default();
                if res == name {
                    continue;
                }
                let reason = e
                    .resource_status_reason()
                    .map(|r| format!(": {r}"))
                    .unwrap_or_default();
                if status.ends_with("_COMPLETE") {
                    done += 1;
                    bar.set_position(done.min(total));
                }
                bar.set_message(format!("{res} {status}"));
                if status.ends_with("_FAILED") {
                    warn!(
                        "stack {name}: {res} ({}) {status}{reason}",
                        e.resource_type().unwrap_or_default()
                    );
                } else {
                    tracing::debug!(
                        "stack {name}: {res} ({}) {status}{reason}",
                        e.resource_type().unwrap_or_default()
                    );
                }
            }
        }
        let stack = match aws.cfn.describe_stacks().stack_name(id).send().await {
            Ok(o) => o.stacks().first().cloned(),
            Err(e) => {
                let err =
                    AwsError::of("CloudFormation DescribeStacks", format!("stack {name}"), &e);
                if !creating && err.not_found() {
                    bar.finish_and_clear();
                    return Ok((StackStatus::DeleteComplete, None));
                }
                return Err(err.into());
            }
        };
        let status = stack
            .as_ref()
            .and_then(|s| s.stack_status().cloned())
            .unwrap_or(StackStatus::DeleteComplete);
        if !status.as_str().ends_with("_IN_PROGRESS") {
            bar.finish_and_clear();
            return Ok((status, stack));
        }
        if start.elapsed() > wait.stack_timeout {
            bar.finish_and_clear();
            return Err(DeployError::Timeout {
                stack: name.to_string(),
                status: status.as_str().to_string(),
                secs: wait.stack_timeout.as_secs(),
            });
        }
        if !logged_wait {
            info!(
                "Waiting for stack {name} ({}): {total} resources",
                status.as_str()
            );
            logged_wait = true;
        }
        tokio::time::sleep(wait.poll).await;
    }
}

/// `Resource (Type): reason` for each failed resource event of the stack,
/// else the stack's own reason.
pub(super) async fn failed_reasons(
    aws: &Clients,
    id: &str,
    stack: Option<&aws_sdk_cloudformation::types::Stack>,
) -> Vec<String> {
    let mut out = Vec::new();
    if let Ok(ev) = aws.cfn.describe_stack_events().stack_name(id).send().await {
        for e in ev.stack_events() {
            let status = e.resource_status().map(|s| s.as_str()).unwrap_or_default();
            if status.ends_with("_FAILED") && e.physical_resource_id() != Some(id) {
                let line = format!(
                    "{} ({}): {}",
                    e.logical_resource_id().unwrap_or_default(),
                    e.resource_type().unwrap_or_default(),
                    e.resource_status_reason().unwrap_or("no reason given")
                );
                if !out.contains(&line) {
                    out.push(line);
                }
            }
        }
    }
    if out.is_empty() {
        out.push(
            stack
                .and_then(|s| s.stack_status_reason())
                .unwrap_or("no reason given")
                .to_string(),
        );
    }
    out
}
