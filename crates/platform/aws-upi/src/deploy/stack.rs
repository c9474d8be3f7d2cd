//! The CloudFormation stack operations: a stack's status and owner tag,
//! `CreateStack` (tagged with the infraID) with its outputs recorded, `DeleteStack`.

use std::collections::BTreeMap;
use std::path::Path;

use aws_sdk_cloudformation::types::{Capability, Parameter as CfnParameter, StackStatus, Tag};
use tracing::info;

use super::files::resource_count;
use super::wait::{failed_reasons, wait_stack};
use super::{DeployError, OWNER_TAG, StackRecord, State, WaitOptions};
use crate::aws::{AwsError, Clients};
use crate::stacks::Parameter;

/// A stack's status and owner tag, `None` when there is no such stack.
pub(super) async fn stack_status(
    aws: &Clients,
    name: &str,
) -> Result<Option<(StackStatus, Option<String>)>, DeployError> {
    match aws.cfn.describe_stacks().stack_name(name).send().await {
        Ok(o) => Ok(o.stacks().first().map(|s| {
            (
                s.stack_status()
                    .cloned()
                    .unwrap_or(StackStatus::from("UNKNOWN")),
                s.tags()
                    .iter()
                    .find(|t| t.key() == Some(OWNER_TAG))
                    .and_then(|t| t.value().map(String::from)),
            )
        })),
        Err(e) => {
            let err = AwsError::of("CloudFormation DescribeStacks", format!("stack {name}"), &e);
            if err.not_found() {
                Ok(None)
            } else {
                Err(err.into())
            }
        }
    }
}

#[allow(clippy::too_many_arguments)]
pub(super) async fn create_stack(
    aws: &Clients,
    name: &str,
    template_file: &str,
    template: &str,
    params: &[Parameter],
    infra_id: &str,
    wait: WaitOptions,
    state: &mut State,
    dir: &Path,
) -> Result<StackRecord, DeployError> {
    let existing = stack_status(aws, name).await?;
    let id = match existing {
        Some((StackStatus::CreateComplete, _)) | Some((StackStatus::CreateInProgress, _)) => {
            info!("Stack {name} exists from an earlier run: waiting for it / reusing it");
            name.to_string()
        }
        _ => {
            info!("Creating stack {name} from {template_file}");
            let out = aws
                .cfn
                .create_stack()
                .stack_name(name)
                .template_body(template)
                .set_parameters(Some(
                    params
                        .iter()
                        .map(|p| {
                            CfnParameter::builder()
                                .parameter_key(&p.key)
                                .parameter_value(&p.value)
                                .build()
                        })
                        .collect(),
                ))
                .capabilities(Capability::CapabilityIam)
                .tags(Tag::builder().key(OWNER_TAG).value(infra_id).build())
                .tags(
                    Tag::builder()
                        .key(format!("kubernetes.io/cluster/{infra_id}"))
                        .value("owned")
                        .build(),
                )
                .send()
                .await
                .map_err(|e| {
                    AwsError::of("CloudFormation CreateStack", format!("stack {name}"), &e)
                })?;
            out.stack_id().unwrap_or(name).to_string()
        }
    };
    upsert(
        state,
        StackRecord {
            name: name.to_string(),
            id: id.clone(),
            status: "CREATE_IN_PROGRESS".into(),
            outputs: BTreeMap::new(),
            parameters: params.to_vec(),
        },
    );
    state.write(dir)?;
    let total = resource_count(template);
    let (status, stack) = wait_stack(aws, name, &id, total, wait, true).await?;
    let outputs: BTreeMap<String, String> = stack
        .as_ref()
        .map(|s| {
            s.outputs()
                .iter()
                .filter_map(|o| Some((o.output_key()?.to_string(), o.output_value()?.to_string())))
                .collect()
        })
        .unwrap_or_default();
    let rec = StackRecord {
        name: name.to_string(),
        id: stack
            .as_ref()
            .and_then(|s| s.stack_id())
            .unwrap_or(&id)
            .to_string(),
        status: status.as_str().to_string(),
        outputs,
        parameters: params.to_vec(),
    };
    upsert(state, rec.clone());
    state.write(dir)?;
    if status != StackStatus::CreateComplete {
        let reasons = failed_reasons(aws, &rec.id, stack.as_ref()).await;
        return Err(DeployError::StackFailed {
            stack: name.to_string(),
            status: status.as_str().to_string(),
            reasons,
        });
    }
    info!(
        "Stack {name}: CREATE_COMPLETE ({} outputs)",
        rec.outputs.len()
    );
    Ok(rec)
}

fn upsert(state: &mut State, rec: StackRecord) {
    match state.stacks.iter_mut().find(|s| s.name == rec.name) {
        Some(s) => *s = rec,
        None => state.stacks.push(rec),
    }
}

pub(super) async fn delete_stack(
    aws: &Clients,
    rec: &StackRecord,
    wait: WaitOptions,
) -> Result<(), DeployError> {
    info!("Deleting stack {}", rec.name);
    aws.cfn
        .delete_stack()
        .stack_name(&rec.id)
        .send()
        .await
        .map_err(|e| {
            AwsError::of(
                "CloudFormation DeleteStack",
                format!("stack {}", rec.name),
                &e,
            )
        })?;
    let (status, stack) = wait_stack(aws, &rec.name, &rec.id, 0, wait, false).await?;
    if status != StackStatus::DeleteComplete {
        let reasons = failed_reasons(aws, &rec.id, stack.as_ref()).await;
        return Err(DeployError::StackFailed {
            stack: rec.name.clone(),
            status: status.as_str().to_string(),
            reasons,
        });
    }
    info!("Stack {}: DELETE_COMPLETE", rec.name);
    Ok(())
}
