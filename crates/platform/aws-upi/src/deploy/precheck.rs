//! The checks before anything is created: no placeholder left to fill, the
//! zones and the AMI in the region, no stack of the same name in the way.

use aws_sdk_cloudformation::types::StackStatus;

use super::stack::stack_status;
use super::{DeployError, Files};
use crate::aws::{AwsError, Clients};
use crate::stacks::Placeholder;

pub(super) async fn precheck(aws: &Clients, files: &Files) -> Result<(), DeployError> {
    let param = |key: &str| {
        files
            .stacks
            .iter()
            .flat_map(|s| s.3.iter())
            .find(|p| p.key == key)
            .map(|p| p.value.clone())
    };
    for (name, _, _, params) in &files.stacks {
        if let Some((key, what)) = params
            .iter()
            .find_map(|p| match Placeholder::parse(&p.value) {
                Some(Placeholder::Required(what)) => Some((&p.key, what)),
                _ => None,
            })
        {
            return Err(DeployError::Input {
                what: format!("aws/{name}.parameters.json: {key}"),
                rule: format!(
                    "{what} is needed: run `okd-install create aws-stacks --ami ami-…` again, or put it in the file"
                ),
            });
        }
    }
    if let Some(zones) = param("AvailabilityZones") {
        let offered = aws
            .ec2
            .describe_availability_zones()
            .send()
            .await
            .map_err(|e| {
                AwsError::of(
                    "EC2 DescribeAvailabilityZones",
                    format!("region {}", aws.region),
                    &e,
                )
            })?;
        let names: Vec<&str> = offered
            .availability_zones()
            .iter()
            .filter_map(|z| z.zone_name())
            .collect();
        for z in zones.split(',') {
            if !names.contains(&z) {
                return Err(DeployError::Check {
                    what: format!("zone {z}"),
                    rule: format!(
                        "region {} offers no such zone (it has {})",
                        aws.region,
                        names.join(", ")
                    ),
                });
            }
        }
    }
    if let Some(ami) = param("RhcosAmi") {
        let found = aws.ec2.describe_images().image_ids(&ami).send().await;
        let exists = match found {
            Ok(o) => !o.images().is_empty(),
            Err(e) => {
                let err = AwsError::of("EC2 DescribeImages", format!("AMI {ami}"), &e);
                if !err
                    .code
                    .as_deref()
                    .is_some_and(|c| c.starts_with("InvalidAMIID"))
                {
                    return Err(err.into());
                }
                false
            }
        };
        if !exists {
            return Err(DeployError::Check {
                what: format!("AMI {ami}"),
                rule: format!(
                    "not found in region {}: an AMI belongs to one region (an AMI of another region?); give the CoreOS AMI of {} with `create aws-stacks --ami`",
                    aws.region, aws.region
                ),
            });
        }
    }
    // A stack of the same name: this install's and complete is kept;
    // anything else stops here.
    for (name, _, _, _) in &files.stacks {
        if let Some((status, owner)) = stack_status(aws, name).await? {
            if owner.as_deref() != Some(files.plan.infra_id.as_str()) {
                return Err(DeployError::Check {
                    what: format!("stack {name}"),
                    rule: "a stack of this name exists and is not this install's (no okd-install/infraID tag with its infraID)".into(),
                });
            }
            if status != StackStatus::CreateComplete && status != StackStatus::CreateInProgress {
                return Err(DeployError::Check {
                    what: format!("stack {name}"),
                    rule: format!(
                        "it is {} from an earlier run: delete it (`okd-install aws destroy --dir D`, or `aws cloudformation delete-stack --stack-name {name}`), then deploy again",
                        status.as_str()
                    ),
                });
            }
        }
    }
    Ok(())
}
