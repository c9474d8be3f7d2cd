//! The S3 bucket holding `bootstrap.ign`: made when missing, its objects
//! deleted by destroy.

use tracing::info;

use super::{DeployError, State};
use crate::aws::{AwsError, Clients};

pub(super) async fn ensure_bucket(
    aws: &Clients,
    bucket: &str,
    state: &mut State,
) -> Result<(), DeployError> {
    match aws.s3.head_bucket().bucket(bucket).send().await {
        Ok(_) => {
            info!("S3 bucket {bucket} exists: using it");
            Ok(())
        }
        Err(e) => {
            let status = e.raw_response().map(|r| r.status().as_u16());
            if status == Some(403) {
                return Err(DeployError::Check {
                    what: format!("S3 bucket {bucket}"),
                    rule: "exists and this account may not use it (bucket names are global): give another with `create aws-stacks --bucket`".into(),
                });
            }
            if status != Some(404) {
                return Err(AwsError::of("S3 HeadBucket", format!("bucket {bucket}"), &e).into());
            }
            let mut req = aws.s3.create_bucket().bucket(bucket);
            if aws.region != "us-east-1" {
                req = req.create_bucket_configuration(
                    aws_sdk_s3::types::CreateBucketConfiguration::builder()
                        .location_constraint(aws_sdk_s3::types::BucketLocationConstraint::from(
                            aws.region.as_str(),
                        ))
                        .build(),
                );
            }
            req.send()
                .await
                .map_err(|e| AwsError::of("S3 CreateBucket", format!("bucket {bucket}"), &e))?;
            state.bucket_created = true;
            info!("Created S3 bucket {bucket}");
            Ok(())
        }
    }
}

pub(super) async fn delete_object(
    aws: &Clients,
    bucket: &str,
    key: &str,
) -> Result<(), DeployError> {
    aws.s3
        .delete_object()
        .bucket(bucket)
        .key(key)
        .send()
        .await
        .map_err(|e| AwsError::of("S3 DeleteObject", format!("s3://{bucket}/{key}"), &e))?;
    info!("Deleted s3://{bucket}/{key}");
    Ok(())
}
