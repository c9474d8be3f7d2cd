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
/// breaks a rule, 1 when a file of `create ignition-configs` is missing).
pub(crate) fn create_aws_stacks(dir: &Path, o: &AwsStacksOpts) -> Result<(), Failure> {
    let opts = okd_aws_upi::generate::Options {
        ami: o.ami.clone(),
        zones: o.zones.clone(),
        bucket: o.bucket.clone(),
        bootstrap_ssh_cidr: o.bootstrap_ssh_cidr.clone(),
    };
    let g = okd_aws_upi::generate::generate(dir, &opts).map_err(crate::classified)?;
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
        okd_fs::shell_path(dir)
    );
    Ok(())
}

/// `okd-install aws …`: the stacks of `create aws-stacks` against an AWS
/// account (credentials and endpoint from the standard AWS configuration:
/// environment, `~/.aws`, SSO, instance role; `AWS_ENDPOINT_URL`).
#[derive(Debug, clap::Subcommand)]
pub(crate) enum AwsCmd {
    /// Checks the account (zones, AMI, hosted zone, earlier stacks),
    /// uploads bootstrap.ign to S3, creates the stacks in order with each
    /// one's outputs fed to the next, and registers the bootstrap and
    /// masters with the load balancers.
    Deploy(WaitArgs),
    /// Deletes everything `aws deploy` made (aws/deploy.json), in reverse
    /// order, and nothing else.
    Destroy(WaitArgs),
}

/// How `aws deploy|destroy` wait.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct WaitArgs {
    /// How long one stack may take (e.g. 30m).
    #[arg(long = "stack-timeout", default_value = "30m", value_parser = crate::node::parse_duration)]
    stack_timeout: std::time::Duration,
    /// How often a stack's status and events are read.
    #[arg(long = "poll-interval", default_value = "5s", value_parser = crate::node::parse_duration)]
    poll_interval: std::time::Duration,
}

impl WaitArgs {
    fn options(&self) -> okd_aws_upi::deploy::WaitOptions {
        okd_aws_upi::deploy::WaitOptions {
            stack_timeout: self.stack_timeout,
            poll: self.poll_interval,
        }
    }
}

fn stopped(dir: &Path, s: okd_aws_upi::deploy::Stopped) -> Failure {
    let code = okd_types::exit::ExitClass::exit_class(&s.error).code();
    let mut text = s.error.to_string();
    if !s.made.is_empty() {
        tracing::warn!("What exists now:");
        for m in &s.made {
            tracing::warn!("  {m}");
        }
        text.push_str(&format!(
            ". What exists is listed above: delete it with `okd-install aws destroy --dir {}`, or fix the cause and run `okd-install aws deploy --dir {}` again (complete stacks are kept)",
            okd_fs::shell_path(dir),
            okd_fs::shell_path(dir)
        ));
    }
    (anyhow::anyhow!(text), code)
}

/// Runs `okd-install aws …`.
pub(crate) fn run(dir: &Path, cmd: &AwsCmd) -> Result<(), Failure> {
    let rt = crate::runtime().map_err(crate::fail)?;
    match cmd {
        AwsCmd::Deploy(w) => rt
            .block_on(okd_aws_upi::deploy::deploy(dir, w.options()))
            .map(|_| ())
            .map_err(|s| stopped(dir, s)),
        AwsCmd::Destroy(w) => rt
            .block_on(okd_aws_upi::deploy::destroy(dir, w.options()))
            .map_err(|s| stopped(dir, s)),
    }
}

/// `destroy bootstrap` for an install deployed with `aws deploy`.
pub(crate) fn destroy_bootstrap(dir: &Path) -> Result<(), Failure> {
    let rt = crate::runtime().map_err(crate::fail)?;
    rt.block_on(okd_aws_upi::deploy::destroy_bootstrap(
        dir,
        okd_aws_upi::deploy::WaitOptions::default(),
    ))
    .map_err(|s| stopped(dir, s))
}
