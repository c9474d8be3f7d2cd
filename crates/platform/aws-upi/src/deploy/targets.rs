//! The load balancers' targets (upstream's `Custom::NLBRegister`): the
//! bootstrap's and masters' addresses registered in and deregistered from the target groups.

use super::{DeployError, Target};
use crate::aws::{AwsError, Clients};

pub(super) async fn register(
    aws: &Clients,
    arn: &str,
    ip: &str,
    port: i32,
) -> Result<(), DeployError> {
    aws.elb
        .register_targets()
        .target_group_arn(arn)
        .targets(
            aws_sdk_elasticloadbalancingv2::types::TargetDescription::builder()
                .id(ip)
                .port(port)
                .build(),
        )
        .send()
        .await
        .map_err(|e| AwsError::of("ELBv2 RegisterTargets", format!("{ip}:{port} in {arn}"), &e))?;
    Ok(())
}

pub(super) async fn deregister(aws: &Clients, t: &Target) -> Result<(), DeployError> {
    let r = aws
        .elb
        .deregister_targets()
        .target_group_arn(&t.target_group_arn)
        .targets(
            aws_sdk_elasticloadbalancingv2::types::TargetDescription::builder()
                .id(&t.ip)
                .port(t.port)
                .build(),
        )
        .send()
        .await;
    match r {
        Ok(_) => Ok(()),
        Err(e) => {
            let err = AwsError::of(
                "ELBv2 DeregisterTargets",
                format!("{}:{} in {}", t.ip, t.port, t.target_group_arn),
                &e,
            );
            // The group or the target already gone is what was wanted.
            if err.not_found() || err.code.as_deref() == Some("InvalidTarget") {
                Ok(())
            } else {
                Err(err.into())
            }
        }
    }
}
