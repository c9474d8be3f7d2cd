//! `okd-install aws deploy | destroy --dir D` and the bootstrap's removal:
//! the documented AWS UPI procedure (openshift/installer
//! `docs/user/aws/install_upi.md`) done by the program, with the files of
//! `create aws-stacks`:
//!
//! 1. checks before anything is created: credentials, every zone of the
//!    VPC offered by the region, the AMI present in the region, the public
//!    hosted zone of the base domain (publish External), no placeholder
//!    the user must fill, no stack of the same name that is not this
//!    install's or that failed before;
//! 2. the S3 bucket (made when missing) and `bootstrap.ign` in it
//!    (server-side encrypted, private: the bootstrap's instance role reads
//!    it);
//! 3. each stack in order (`CreateStack` with the template and the
//!    parameter file, placeholders filled from earlier stacks' outputs,
//!    tagged with the infraID), waited for with its resources' events
//!    shown, its outputs recorded;
//! 4. the load balancers' targets: the bootstrap's and each master's
//!    private address in the API (6443) and machine-config (22623) target
//!    groups (upstream's Lambda-backed `Custom::NLBRegister`).
//!
//! Everything made is recorded as it is made in `D/aws/deploy.json`
//! ([`State`]), so `destroy` deletes exactly that, in reverse order, and a
//! failure half-way can say what exists.

mod bucket;
mod destroy;
mod error;
mod files;
mod network;
mod precheck;
mod stack;
mod state;
mod targets;
mod wait;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use tracing::info;

use crate::aws::{AwsError, Clients};
use crate::stacks::{Parameter, Placeholder};

use bucket::ensure_bucket;
use network::{existing_network, public_zone, tag_subnet};
use precheck::precheck;
use stack::create_stack;
use targets::register;

pub use destroy::{destroy, destroy_bootstrap};
pub use error::{DeployError, Stopped};
pub use files::Files;
pub use state::{StackRecord, State, Target};

/// The tag every stack carries: its value is the infraID (also the
/// templates' `kubernetes.io/cluster/<infraID>` tags on resources).
pub const OWNER_TAG: &str = "okd-install/infraID";

/// The state file in `D/aws/`.
pub const STATE_FILE: &str = "deploy.json";

/// How deploy and destroy wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaitOptions {
    /// How long one stack may take to create or delete.
    pub stack_timeout: Duration,
    /// How often a stack's status and events are read.
    pub poll: Duration,
}

impl Default for WaitOptions {
    fn default() -> Self {
        WaitOptions {
            stack_timeout: Duration::from_secs(30 * 60),
            poll: Duration::from_secs(5),
        }
    }
}

/// `okd-install aws deploy`: the checks, the bucket and object, the stacks
/// in order, the targets (module docs). Stacks that exist already as this
/// install's and complete are kept (a second run carries on).
///
/// # Errors
/// [`Stopped`]: the first error, with what exists by then.
pub async fn deploy(dir: &Path, wait: WaitOptions) -> Result<State, Stopped> {
    let mut state = State::read(dir)
        .map_err(|e| Stopped {
            error: e,
            made: vec![],
        })?
        .unwrap_or_default();
    let r = deploy_inner(dir, wait, &mut state).await;
    match r {
        Ok(()) => Ok(state),
        Err(error) => Err(Stopped {
            error,
            made: state.summary(),
        }),
    }
}

async fn deploy_inner(dir: &Path, wait: WaitOptions, state: &mut State) -> Result<(), DeployError> {
    let files = Files::read(dir)?;
    let plan = &files.plan;
    let bootstrap_ign = dir.join("bootstrap.ign");
    let ign = std::fs::read(&bootstrap_ign).map_err(|e| DeployError::File {
        path: bootstrap_ign.clone(),
        rule: e.to_string(),
    })?;
    let aws = Clients::connect(&plan.region).await?;
    info!(
        "AWS region {}: checking the account before anything is created",
        plan.region
    );
    precheck(&aws, &files).await?;
    // Existing subnets stand in for the VPC stack's outputs.
    let existing = if plan.existing_subnets.is_empty() {
        None
    } else {
        Some(existing_network(&aws, plan).await?)
    };
    let hosted_zone = if plan.external {
        Some(public_zone(&aws, &plan.base_domain).await?)
    } else {
        None
    };
    state.region = plan.region.clone();
    state.infra_id = plan.infra_id.clone();
    // The bucket and bootstrap.ign.
    let location = files
        .stacks
        .iter()
        .flat_map(|s| s.3.iter())
        .find(|p| p.key == "BootstrapIgnitionLocation")
        .map(|p| p.value.clone())
        .unwrap_or_default();
    let (bucket, key) = location
        .strip_prefix("s3://")
        .and_then(|r| r.split_once('/'))
        .ok_or_else(|| DeployError::Input {
            what: "BootstrapIgnitionLocation".into(),
            rule: format!("{location:?} is not s3://<bucket>/<key>"),
        })?;
    state.bucket = bucket.to_string();
    ensure_bucket(&aws, bucket, state).await?;
    state.write(dir)?;
    aws.s3
        .put_object()
        .bucket(bucket)
        .key(key)
        .server_side_encryption(aws_sdk_s3::types::ServerSideEncryption::Aes256)
        .body(aws_sdk_s3::primitives::ByteStream::from(ign))
        .send()
        .await
        .map_err(|e| AwsError::of("S3 PutObject", format!("s3://{bucket}/{key}"), &e))?;
    if !state.objects.iter().any(|o| o == key) {
        state.objects.push(key.to_string());
    }
    state.write(dir)?;
    info!("Uploaded bootstrap.ign to s3://{bucket}/{key}");
    // The stacks.
    let mut outputs: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    if let Some(net) = existing {
        for subnet in net.public.iter().chain(&net.private) {
            if !state.tagged_subnets.contains(subnet) {
                tag_subnet(&aws, subnet, &plan.infra_id, true).await?;
                state.tagged_subnets.push(subnet.clone());
                state.write(dir)?;
            }
        }
        info!(
            "Existing VPC {}: public subnets {}, private subnets {} (tagged kubernetes.io/cluster/{}=shared)",
            net.vpc,
            net.public.join(","),
            net.private.join(","),
            plan.infra_id
        );
        outputs.insert(
            format!("{}-vpc", plan.infra_id),
            BTreeMap::from([
                ("VpcId".to_string(), net.vpc.clone()),
                ("PublicSubnetIds".to_string(), net.public.join(",")),
                ("PrivateSubnetIds".to_string(), net.private.join(",")),
            ]),
        );
    }
    for (name, template_file, template, params) in &files.stacks {
        let mut filled = Vec::new();
        for p in params {
            let value = match Placeholder::parse(&p.value) {
                None => p.value.clone(),
                Some(Placeholder::HostedZone(_)) => hosted_zone.clone().unwrap_or_default(),
                Some(Placeholder::Required(what)) => {
                    return Err(DeployError::Input {
                        what: format!("{name}.parameters.json: {}", p.key),
                        rule: format!("{what} is needed"),
                    });
                }
                Some(Placeholder::Output {
                    stack,
                    output,
                    index,
                }) => {
                    let v = outputs
                        .get(&stack)
                        .and_then(|o| o.get(&output))
                        .ok_or_else(|| DeployError::Input {
                            what: format!("{name}.parameters.json: {}", p.key),
                            rule: format!("stack {stack} has no output {output} (is it created before {name}?)"),
                        })?;
                    match index {
                        None => v.clone(),
                        // Modulo: existing subnets may be fewer than the
                        // masters' zones.
                        Some(i) => {
                            let items: Vec<&str> = v.split(',').filter(|x| !x.is_empty()).collect();
                            items
                                .get(i % items.len().max(1))
                                .map(|x| x.to_string())
                                .ok_or_else(|| DeployError::Input {
                                    what: format!("{name}.parameters.json: {}", p.key),
                                    rule: format!(
                                        "output {output} of {stack} ({v}) has no item {i}"
                                    ),
                                })?
                        }
                    }
                }
            };
            filled.push(Parameter {
                key: p.key.clone(),
                value,
            });
        }
        let rec = create_stack(
            &aws,
            name,
            template_file,
            template,
            &filled,
            &plan.infra_id,
            wait,
            state,
            dir,
        )
        .await?;
        outputs.insert(name.clone(), rec.outputs.clone());
        // The targets upstream's Custom::NLBRegister resources register.
        let infra_out = outputs
            .get(&format!("{}-infra", plan.infra_id))
            .cloned()
            .unwrap_or_default();
        let groups: Vec<(&str, i32)> = [
            ("ExternalApiTargetGroupArn", 6443),
            ("InternalApiTargetGroupArn", 6443),
            ("InternalServiceTargetGroupArn", 22623),
        ]
        .into_iter()
        .filter(|(k, _)| infra_out.contains_key(*k))
        .collect();
        if template_file == "04_cluster_bootstrap.yaml" {
            let o = &rec.outputs;
            info!(
                "Bootstrap instance {}: public address {}, private address {} (for `okd-install gather bootstrap --bootstrap {}` if the install fails)",
                o.get("BootstrapInstanceId").map_or("?", String::as_str),
                o.get("BootstrapPublicIp").map_or("?", String::as_str),
                o.get("BootstrapPrivateIp").map_or("?", String::as_str),
                o.get("BootstrapPublicIp").map_or("?", String::as_str),
            );
        }
        let nodes: Vec<(String, String)> = if template_file == "04_cluster_bootstrap.yaml" {
            rec.outputs
                .get("BootstrapPrivateIp")
                .map(|ip| vec![("bootstrap".to_string(), ip.clone())])
                .unwrap_or_default()
        } else if template_file == "05_cluster_master_nodes.yaml" {
            rec.outputs
                .get("PrivateIPs")
                .map(|ips| {
                    ips.split(',')
                        .enumerate()
                        .map(|(i, ip)| (format!("master-{i}"), ip.to_string()))
                        .collect()
                })
                .unwrap_or_default()
        } else {
            vec![]
        };
        for (node, ip) in nodes {
            for (k, port) in &groups {
                let arn = infra_out[*k].clone();
                register(&aws, &arn, &ip, *port).await?;
                let t = Target {
                    target_group_arn: arn,
                    ip: ip.clone(),
                    port: *port,
                    node: node.clone(),
                };
                if !state.targets.contains(&t) {
                    state.targets.push(t);
                }
                state.write(dir)?;
            }
            info!("Registered {node} ({ip}) with the API and machine-config target groups");
        }
    }
    info!(
        "All {} stacks are complete: go on with `okd-install wait-for bootstrap-complete --dir {}` and approve-csr, as on bare metal",
        files.stacks.len(),
        okd_fs::shell_path(dir)
    );
    Ok(())
}
