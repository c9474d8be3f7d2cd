//! `okd-install create aws-stacks` (and, to come, `aws deploy|destroy`):
//! command-line types and one call each into okd-aws-upi.

use std::path::Path;

use tracing::info;

use crate::Failure;

/// Flags of `create aws-stacks`.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct AwsStacksOpts {
    /// The CoreOS AMI of the region for every node (default:
    /// install-config `platform.aws.amiID`).
    #[arg(long)]
    ami: Option<String>,
    /// The VPC's availability zones, comma-separated (default:
    /// `controlPlane.platform.aws.zones`, else `<region>a,b,c`, one per
    /// master up to three).
    #[arg(long, value_delimiter = ',')]
    zones: Vec<String>,
    /// The S3 bucket that receives bootstrap.ign (default:
    /// `<infraID>-bootstrap`).
    #[arg(long)]
    bucket: Option<String>,
    /// Who may reach the bootstrap's SSH and journal gateway (default
    /// `0.0.0.0/0`, as the template's).
    #[arg(long = "bootstrap-ssh-cidr")]
    bootstrap_ssh_cidr: Option<String>,
}

/// `okd-install create aws-stacks`: writes `D/aws/` (exit 3 when an input
/// breaks a rule).
pub(crate) fn create_aws_stacks(dir: &Path, o: &AwsStacksOpts) -> Result<(), Failure> {
    let opts = okd_aws_upi::generate::Options {
        ami: o.ami.clone(),
        zones: o.zones.clone(),
        bucket: o.bucket.clone(),
        bootstrap_ssh_cidr: o.bootstrap_ssh_cidr.clone(),
    };
    let g = okd_aws_upi::generate::generate(dir, &opts).map_err(|e| {
        use okd_aws_upi::generate::GenerateError as E;
        let code = match &e {
            E::Fs(_) | E::Asset(_) => 1,
            _ => 3,
        };
        (anyhow::Error::new(e), code)
    })?;
    for t in &g.templates {
        info!("Wrote {}", g.out_dir.join(t.file).display());
    }
    for s in &g.stacks {
        info!(
            "Stack {} from {}: parameters in {}",
            s.stack.name,
            s.stack.template,
            g.out_dir.join(s.parameter_file()).display()
        );
    }
    if g.stacks.iter().any(|s| {
        s.parameters.iter().any(|p| {
            matches!(
                okd_aws_upi::stacks::Placeholder::parse(&p.value),
                Some(okd_aws_upi::stacks::Placeholder::Required(_))
            )
        })
    }) {
        tracing::warn!(
            "No CoreOS AMI given: the bootstrap, control-plane and worker stacks need one (--ami, or platform.aws.amiID in install-config.yaml)"
        );
    }
    info!(
        "Values from earlier stacks are {{{{stack:<name>:<output>}}}} placeholders: `okd-install aws deploy --dir {}` fills them and creates the stacks in order",
        dir.display()
    );
    Ok(())
}
