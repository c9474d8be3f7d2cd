//! The install's stacks as the files of `create aws-stacks` in `D/aws/`:
//! each stack's template and parameter file, read for deploy.

use std::path::Path;

use super::DeployError;
use crate::Plan;
use crate::generate::AWS_DIR;
use crate::stacks::Parameter;

/// The install's stacks as files: the plan, and for each stack its
/// template text and parameters (read from `D/aws/`, so a user's edits
/// count).
pub struct Files {
    /// The plan (from install-config.yaml and metadata.json).
    pub plan: Plan,
    /// `(stack name, template file, template text, parameters)`, in order.
    pub stacks: Vec<(String, String, String, Vec<Parameter>)>,
}

impl Files {
    /// Reads `D/aws/` for the install in `D`.
    ///
    /// # Errors
    /// [`DeployError::File`] naming a missing or unreadable file (`create
    /// aws-stacks` first), or the plan's rules.
    pub fn read(dir: &Path) -> Result<Files, DeployError> {
        let facts =
            okd_assets::InstallFacts::read(dir).map_err(crate::generate::GenerateError::from)?;
        let cfg = facts
            .install_config()
            .map_err(crate::generate::GenerateError::from)?
            .ok_or_else(|| DeployError::File {
                path: dir.join("install-config.yaml"),
                rule: "missing".into(),
            })?;
        let meta_path = dir.join("metadata.json");
        let meta: serde_json::Value = std::fs::read(&meta_path)
            .ok()
            .and_then(|d| serde_json::from_slice(&d).ok())
            .ok_or_else(|| DeployError::File {
                path: meta_path.clone(),
                rule: "missing or not JSON".into(),
            })?;
        let infra = meta["infraID"].as_str().unwrap_or_default().to_string();
        let plan = crate::plan(&cfg, &infra)?;
        let aws = dir.join(AWS_DIR);
        let mut stacks = Vec::new();
        for s in &plan.stacks {
            let read = |name: &str| {
                let p = aws.join(name);
                std::fs::read_to_string(&p).map_err(|e| DeployError::File {
                    path: p,
                    rule: format!(
                        "{} (made by `okd-install create aws-stacks --dir {}`)",
                        if e.kind() == std::io::ErrorKind::NotFound {
                            "missing".to_string()
                        } else {
                            e.to_string()
                        },
                        okd_fs::shell_path(dir)
                    ),
                })
            };
            let template = read(s.template)?;
            let pfile = format!("{}.parameters.json", s.name);
            let params: Vec<Parameter> = serde_json::from_str(&read(&pfile)?).map_err(|e| DeployError::Input {
                what: aws.join(&pfile).display().to_string(),
                rule: format!("not an AWS CLI parameter file ([{{\"ParameterKey\": …, \"ParameterValue\": …}}]): {e}"),
            })?;
            stacks.push((s.name.clone(), s.template.to_string(), template, params));
        }
        Ok(Files { plan, stacks })
    }
}

pub(super) fn resource_count(template: &str) -> u64 {
    serde_yaml_ng::from_str::<serde_yaml_ng::Value>(template)
        .ok()
        .and_then(|v| {
            v.get("Resources")
                .and_then(|r| r.as_mapping())
                .map(|m| m.len() as u64)
        })
        .unwrap_or(0)
}
