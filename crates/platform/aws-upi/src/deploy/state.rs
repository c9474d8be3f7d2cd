//! The deploy record `D/aws/deploy.json`: the bucket, objects, stacks
//! (with their parameters and outputs), subnet tags and targets made.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{DeployError, STATE_FILE};
use crate::generate::AWS_DIR;
use crate::stacks::Parameter;

/// One load balancer target registered by deploy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Target {
    /// The target group's ARN.
    pub target_group_arn: String,
    /// The node's private address.
    pub ip: String,
    /// The port.
    pub port: i32,
    /// `bootstrap`, `master-0`, …
    pub node: String,
}

/// One stack as deploy left it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StackRecord {
    /// Its name.
    pub name: String,
    /// Its id (ARN).
    pub id: String,
    /// The last status seen.
    pub status: String,
    /// Its outputs.
    #[serde(default)]
    pub outputs: BTreeMap<String, String>,
    /// The parameters it was created with (placeholders filled).
    #[serde(default)]
    pub parameters: Vec<Parameter>,
}

/// What deploy made, in the order it made it (`D/aws/deploy.json`, 0600).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct State {
    /// The region.
    pub region: String,
    /// The infraID.
    #[serde(rename = "infraID")]
    pub infra_id: String,
    /// The bucket holding bootstrap.ign.
    pub bucket: String,
    /// Whether deploy made the bucket (destroy then deletes it).
    pub bucket_created: bool,
    /// Objects deploy put in the bucket.
    #[serde(default)]
    pub objects: Vec<String>,
    /// The stacks, in creation order.
    #[serde(default)]
    pub stacks: Vec<StackRecord>,
    /// The targets registered.
    #[serde(default)]
    pub targets: Vec<Target>,
    /// The user's subnets deploy tagged `kubernetes.io/cluster/<infraID>`
    /// (existing subnets; destroy removes the tag).
    #[serde(default)]
    pub tagged_subnets: Vec<String>,
}

impl State {
    /// Reads `D/aws/deploy.json`; `Ok(None)` when there is none.
    ///
    /// # Errors
    /// The file exists but cannot be read or parsed.
    pub fn read(dir: &Path) -> Result<Option<State>, DeployError> {
        let path = state_path(dir);
        match std::fs::read(&path) {
            Ok(data) => serde_json::from_slice(&data)
                .map(Some)
                .map_err(|e| DeployError::File {
                    path,
                    rule: format!("not a deploy record: {e}"),
                }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(DeployError::File {
                path,
                rule: e.to_string(),
            }),
        }
    }

    pub(super) fn write(&self, dir: &Path) -> Result<(), DeployError> {
        let mut text = serde_json::to_string_pretty(self).expect("state serializes");
        text.push('\n');
        okd_fs::write_atomic(&state_path(dir), text.as_bytes(), 0o600)?;
        Ok(())
    }

    /// What exists, one line each, for a failure's message.
    pub fn summary(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.bucket_created {
            out.push(format!("S3 bucket {}", self.bucket));
        }
        for o in &self.objects {
            out.push(format!("S3 object s3://{}/{o}", self.bucket));
        }
        for s in &self.stacks {
            out.push(format!("stack {} ({})", s.name, s.status));
        }
        for t in &self.tagged_subnets {
            out.push(format!(
                "tag kubernetes.io/cluster/{} on subnet {t}",
                self.infra_id
            ));
        }
        for t in &self.targets {
            out.push(format!(
                "target {}:{} ({}) in {}",
                t.ip, t.port, t.node, t.target_group_arn
            ));
        }
        out
    }
}
pub(super) fn state_path(dir: &Path) -> PathBuf {
    dir.join(AWS_DIR).join(STATE_FILE)
}
