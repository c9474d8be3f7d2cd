//! `okd-install create aws-stacks --dir D`: the templates and parameter
//! files of the install in `D/aws/`, from what `create ignition-configs`
//! left in `D` (the install-config, `metadata.json`'s infraID, the pointer
//! configs `master.ign` and `worker.ign`: their merge source, root CA and
//! Ignition spec). Nothing is asked of AWS here; `aws deploy` checks the
//! zones, the AMI and the hosted zone against the account before it
//! creates anything.

use std::path::{Path, PathBuf};

use okd_types::ignition::Config;
use okd_types::release::IgnitionSpec;

use crate::stacks::{Inputs, Pointer, StackSpec, stack_specs};
use crate::templates::{Shape, TemplateFile, all};
use crate::{Plan, UpiError, plan};

/// The directory inside the asset directory that holds the stacks' files.
pub const AWS_DIR: &str = "aws";

/// What the user may choose (flags of `create aws-stacks`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    /// The CoreOS AMI (else `platform.aws.amiID`).
    pub ami: Option<String>,
    /// The zones (else `controlPlane.platform.aws.zones`, else
    /// `<region>a`, `b`, `c` as many as the plan's zones).
    pub zones: Vec<String>,
    /// The S3 bucket for bootstrap.ign (else `<infraID>-bootstrap`).
    pub bucket: Option<String>,
    /// Who may reach the bootstrap's SSH (else `0.0.0.0/0`, the
    /// template's default).
    pub bootstrap_ssh_cidr: Option<String>,
}

/// Why the files cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum GenerateError {
    /// A rule of the plan.
    #[error(transparent)]
    Plan(#[from] UpiError),
    /// A file `create ignition-configs` makes is missing.
    /// (The binary adds which command makes it.)
    #[error("{}: missing", path.display())]
    Missing {
        /// The file.
        path: PathBuf,
    },
    /// A file is there but not what it should be.
    #[error("{}: {field}: {rule}", path.display())]
    Bad {
        /// The file.
        path: PathBuf,
        /// The field.
        field: &'static str,
        /// What is wrong.
        rule: String,
    },
    /// A flag's value breaks a rule.
    #[error("{flag}: {rule}")]
    Flag {
        /// The flag, e.g. `--zones`.
        flag: &'static str,
        /// What is wrong.
        rule: String,
    },
    /// The asset directory cannot be read.
    #[error(transparent)]
    Asset(#[from] okd_assets::AssetError),
    /// A file cannot be written.
    #[error(transparent)]
    Fs(#[from] okd_fs::FsError),
}

/// Exit codes (okd-types `exit`): a plan rule or a flag 3 (install-config
/// errors); a file `create ignition-configs` makes missing or broken 1 (run
/// that step again).
impl okd_types::exit::ExitClass for GenerateError {
    fn exit_class(&self) -> okd_types::exit::Exit {
        use okd_types::exit::Exit;
        match self {
            GenerateError::Plan(_) | GenerateError::Flag { .. } => Exit::InstallConfig,
            GenerateError::Asset(e) => e.exit_class(),
            GenerateError::Missing { .. } | GenerateError::Bad { .. } | GenerateError::Fs(_) => {
                Exit::Failed
            }
        }
    }
}

/// What was made.
#[derive(Debug, Clone)]
pub struct Generated {
    /// The plan.
    pub plan: Plan,
    /// The stacks with their parameters, in creation order.
    pub stacks: Vec<StackSpec>,
    /// The templates written.
    pub templates: Vec<TemplateFile>,
    /// `D/aws`.
    pub out_dir: PathBuf,
}

fn read_json(dir: &Path, name: &str) -> Result<serde_json::Value, GenerateError> {
    let path = dir.join(name);
    let data = std::fs::read(&path).map_err(|_| GenerateError::Missing { path: path.clone() })?;
    serde_json::from_slice(&data).map_err(|e| GenerateError::Bad {
        path,
        field: "(file)",
        rule: format!("not JSON: {e}"),
    })
}

fn pointer(dir: &Path, name: &str) -> Result<(Pointer, IgnitionSpec), GenerateError> {
    let path = dir.join(name);
    let v = read_json(dir, name)?;
    let cfg: Config = serde_json::from_value(v).map_err(|e| GenerateError::Bad {
        path: path.clone(),
        field: "(file)",
        rule: format!("not an Ignition config: {e}"),
    })?;
    let bad = |field: &'static str, rule: &str| GenerateError::Bad {
        path: path.clone(),
        field,
        rule: rule.to_string(),
    };
    let spec: IgnitionSpec = cfg
        .ignition
        .version
        .parse()
        .map_err(|e| bad("ignition.version", &format!("{e}")))?;
    let source = cfg
        .ignition
        .config
        .merge
        .first()
        .and_then(|r| r.source.clone())
        .ok_or_else(|| {
            bad(
                "ignition.config.merge[0].source",
                "a pointer config merges one source",
            )
        })?;
    let ca = cfg
        .ignition
        .security
        .tls
        .certificate_authorities
        .first()
        .and_then(|r| r.source.clone())
        .ok_or_else(|| {
            bad(
                "ignition.security.tls.certificateAuthorities[0].source",
                "a pointer config trusts the root CA",
            )
        })?;
    Ok((Pointer { source, ca }, spec))
}

/// Reads the install in `dir`, plans, and writes `dir/aws/`: the
/// templates (0644) and one `<stack>.parameters.json` per stack (0644: no
/// secret in them; the CA is public). Existing files are replaced
/// atomically (a user's edits to parameter files are lost: run `create
/// aws-stacks` before editing them).
///
/// # Errors
/// [`GenerateError`] naming the file and field, or the flag: no install
/// (`create ignition-configs` first), a plan rule, zones outside the
/// region or not as many as the plan's, a bucket name S3 refuses, a CIDR
/// that is not one.
pub fn generate(dir: &Path, opts: &Options) -> Result<Generated, GenerateError> {
    let facts = okd_assets::InstallFacts::read(dir)?;
    let cfg = facts
        .install_config()?
        .ok_or_else(|| GenerateError::Missing {
            path: dir.join("install-config.yaml"),
        })?;
    let meta = read_json(dir, "metadata.json")?;
    let infra_id = meta
        .get("infraID")
        .and_then(|v| v.as_str())
        .ok_or_else(|| GenerateError::Bad {
            path: dir.join("metadata.json"),
            field: "infraID",
            rule: "missing".into(),
        })?
        .to_string();
    let plan = plan(&cfg, &infra_id)?;
    let (master, spec) = pointer(dir, "master.ign")?;
    let (worker, _) = pointer(dir, "worker.ign")?;
    let aws = cfg.platform.aws.clone().unwrap_or_default();
    let pool_zones: Vec<String> = cfg
        .control_plane
        .as_ref()
        .and_then(|p| p.platform.get("aws"))
        .and_then(|a| a.get("zones"))
        .and_then(|z| z.as_array())
        .map(|z| {
            z.iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    let n = plan.zones as usize;
    let zones: Vec<String> = if !opts.zones.is_empty() {
        opts.zones.clone()
    } else if !pool_zones.is_empty() {
        pool_zones.into_iter().take(n).collect()
    } else {
        ["a", "b", "c"][..n]
            .iter()
            .map(|l| format!("{}{l}", plan.region))
            .collect()
    };
    if zones.len() != n && plan.existing_subnets.is_empty() {
        return Err(GenerateError::Flag {
            flag: "--zones",
            rule: format!(
                "{} zone(s) given, the VPC spans {n} (one per master, at most 3)",
                zones.len()
            ),
        });
    }
    for z in &zones {
        let letter_ok = z.strip_prefix(&plan.region).is_some_and(|rest| {
            !rest.is_empty()
                && rest
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        });
        if !letter_ok {
            return Err(GenerateError::Flag {
                flag: "--zones",
                rule: format!(
                    "{z:?} is not a zone of region {} (like {}a)",
                    plan.region, plan.region
                ),
            });
        }
    }
    let bucket = opts
        .bucket
        .clone()
        .unwrap_or_else(|| format!("{}-bootstrap", plan.infra_id.to_ascii_lowercase()));
    if !bucket_ok(&bucket) {
        return Err(GenerateError::Flag {
            flag: "--bucket",
            rule: format!(
                "{bucket:?} is not an S3 bucket name (3-63 lower-case letters, digits, '-' and '.', starting and ending with a letter or digit)"
            ),
        });
    }
    let ssh = opts
        .bootstrap_ssh_cidr
        .clone()
        .unwrap_or_else(|| "0.0.0.0/0".to_string());
    if ssh.parse::<ipnet::Ipv4Net>().is_err() {
        return Err(GenerateError::Flag {
            flag: "--bootstrap-ssh-cidr",
            rule: format!("{ssh:?} is not an IPv4 CIDR"),
        });
    }
    let ami = opts.ami.clone().or(aws.ami_id.clone());
    if let Some(a) = &ami
        && !ami_shaped(a)
    {
        return Err(GenerateError::Flag {
            flag: "--ami",
            rule: format!("{a:?} is not an AMI id (ami- and 8 or 17 hex digits)"),
        });
    }
    let instance_type = |pool: Option<&okd_installconfig::MachinePool>| {
        pool.and_then(|p| p.platform.get("aws"))
            .and_then(|a| a.get("type"))
            .and_then(|t| t.as_str())
            .map(String::from)
    };
    let inputs = Inputs {
        zones,
        ami,
        bucket,
        bootstrap_ssh_cidr: ssh,
        master,
        worker,
        master_type: instance_type(cfg.control_plane.as_ref()),
        worker_type: instance_type(cfg.compute.iter().find(|p| p.name == "worker")),
    };
    let shape = Shape {
        zones: n,
        masters: plan.masters,
        external: plan.external,
        spec,
    };
    let templates = all(&shape, plan.existing_subnets.is_empty());
    let stacks = stack_specs(&plan, &inputs);
    let out_dir = dir.join(AWS_DIR);
    okd_fs::create_dir_all(&out_dir, 0o755)?;
    for t in &templates {
        okd_fs::write_atomic(&out_dir.join(t.file), t.text.as_bytes(), 0o644)?;
    }
    for s in &stacks {
        okd_fs::write_atomic(
            &out_dir.join(s.parameter_file()),
            s.parameters_json().as_bytes(),
            0o644,
        )?;
    }
    Ok(Generated {
        plan,
        stacks,
        templates,
        out_dir,
    })
}

/// Whether `b` is a valid S3 bucket name (the general-purpose rules:
/// 3-63 characters, lower-case letters, digits, `-` and `.`, beginning and
/// ending with a letter or digit, not shaped like an IP address).
pub fn bucket_ok(b: &str) -> bool {
    (3..=63).contains(&b.len())
        && b.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
        && b.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
        && b.chars().last().is_some_and(|c| c.is_ascii_alphanumeric())
        && b.parse::<std::net::Ipv4Addr>().is_err()
        && !b.contains("..")
}

/// Whether `a` looks like an AMI id: `ami-` and 8 or 17 hex digits.
pub fn ami_shaped(a: &str) -> bool {
    a.strip_prefix("ami-").is_some_and(|h| {
        (h.len() == 8 || h.len() == 17) && h.chars().all(|c| c.is_ascii_hexdigit())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_and_ami_shapes() {
        assert!(bucket_ok("okd45-x7k2p-bootstrap"));
        for bad in ["ab", "Upper", "-x-", "a..b", "192.168.1.1", "under_score"] {
            assert!(!bucket_ok(bad), "{bad}");
        }
        assert!(ami_shaped("ami-0123456789abcdef0") && ami_shaped("ami-1e749f67"));
        assert!(!ami_shaped("ami-xyz") && !ami_shaped("0123456789abcdef0"));
    }
}
