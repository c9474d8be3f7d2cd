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

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use aws_sdk_cloudformation::types::{Capability, Parameter as CfnParameter, StackStatus, Tag};
use serde::{Deserialize, Serialize};
use tracing::{info, warn};

use crate::aws::{AwsError, Clients, ConnectError};
use crate::generate::AWS_DIR;
use crate::stacks::{Parameter, Placeholder};
use crate::{Plan, UpiError};

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

    fn write(&self, dir: &Path) -> Result<(), DeployError> {
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

fn state_path(dir: &Path) -> PathBuf {
    dir.join(AWS_DIR).join(STATE_FILE)
}

/// Why deploy or destroy stopped.
#[derive(Debug, thiserror::Error)]
pub enum DeployError {
    /// No credentials.
    #[error(transparent)]
    Connect(#[from] ConnectError),
    /// A failed AWS call.
    #[error(transparent)]
    Aws(#[from] AwsError),
    /// A check before anything is created.
    #[error("{what}: {rule}")]
    Check {
        /// What was checked (`zone us-east-1d`, `AMI ami-…`, a parameter).
        what: String,
        /// The rule broken.
        rule: String,
    },
    /// A stack ended in a failed state.
    #[error("stack {stack} ended {status}: {}", reasons.join("; "))]
    StackFailed {
        /// The stack.
        stack: String,
        /// Its status.
        status: String,
        /// `Resource (Type): reason` for each failed resource, else the
        /// stack's reason.
        reasons: Vec<String>,
    },
    /// A stack took longer than allowed.
    #[error("stack {stack} still {status} after {secs} s (--stack-timeout)")]
    Timeout {
        /// The stack.
        stack: String,
        /// Its status then.
        status: String,
        /// The limit.
        secs: u64,
    },
    /// A file of `create aws-stacks` or `create ignition-configs`.
    #[error("{}: {rule}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        rule: String,
    },
    /// The install's files.
    #[error(transparent)]
    Generate(#[from] crate::generate::GenerateError),
    /// The plan.
    #[error(transparent)]
    Plan(#[from] UpiError),
    /// Writing the state.
    #[error(transparent)]
    Fs(#[from] okd_fs::FsError),
}

/// A deploy that stopped: why, and what exists by then.
#[derive(Debug, thiserror::Error)]
#[error("{error}")]
pub struct Stopped {
    /// Why.
    pub error: DeployError,
    /// What exists ([`State::summary`]); empty when nothing was made.
    pub made: Vec<String>,
}

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
                        dir.display()
                    ),
                })
            };
            let template = read(s.template)?;
            let pfile = format!("{}.parameters.json", s.name);
            let params: Vec<Parameter> = serde_json::from_str(&read(&pfile)?).map_err(|e| DeployError::File {
                path: aws.join(&pfile),
                rule: format!("not an AWS CLI parameter file ([{{\"ParameterKey\": …, \"ParameterValue\": …}}]): {e}"),
            })?;
            stacks.push((s.name.clone(), s.template.to_string(), template, params));
        }
        Ok(Files { plan, stacks })
    }
}

fn resource_count(template: &str) -> u64 {
    serde_yaml_ng::from_str::<serde_yaml_ng::Value>(template)
        .ok()
        .and_then(|v| {
            v.get("Resources")
                .and_then(|r| r.as_mapping())
                .map(|m| m.len() as u64)
        })
        .unwrap_or(0)
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
        .ok_or_else(|| DeployError::Check {
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
                    return Err(DeployError::Check {
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
                        .ok_or_else(|| DeployError::Check {
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
                                .ok_or_else(|| DeployError::Check {
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
        dir.display()
    );
    Ok(())
}

async fn precheck(aws: &Clients, files: &Files) -> Result<(), DeployError> {
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
            return Err(DeployError::Check {
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

/// The user's network: the VPC of `platform.aws.subnets` and which of
/// them are public (their route table, explicit or the VPC's main one,
/// sends 0.0.0.0/0 to an internet gateway).
struct ExistingNetwork {
    vpc: String,
    public: Vec<String>,
    private: Vec<String>,
}

async fn existing_network(aws: &Clients, plan: &Plan) -> Result<ExistingNetwork, DeployError> {
    let field = "install-config.yaml: platform.aws.subnets";
    let out = aws
        .ec2
        .describe_subnets()
        .set_subnet_ids(Some(plan.existing_subnets.clone()))
        .send()
        .await
        .map_err(|e| AwsError::of("EC2 DescribeSubnets", plan.existing_subnets.join(","), &e))
        .map_err(|e| {
            if e.not_found() {
                DeployError::Check {
                    what: field.into(),
                    rule: format!("{} (a subnet of another region or account?)", e.detail),
                }
            } else {
                e.into()
            }
        })?;
    let subnets = out.subnets();
    let vpcs: std::collections::BTreeSet<&str> =
        subnets.iter().filter_map(|s| s.vpc_id()).collect();
    if vpcs.len() != 1 {
        return Err(DeployError::Check {
            what: field.into(),
            rule: format!(
                "the subnets must be of one VPC; they are of {}",
                vpcs.into_iter().collect::<Vec<_>>().join(", ")
            ),
        });
    }
    let vpc = vpcs.into_iter().next().unwrap_or_default().to_string();
    let vpc_cidr = aws
        .ec2
        .describe_vpcs()
        .vpc_ids(&vpc)
        .send()
        .await
        .map_err(|e| AwsError::of("EC2 DescribeVpcs", vpc.clone(), &e))?
        .vpcs()
        .first()
        .and_then(|v| v.cidr_block().map(String::from))
        .unwrap_or_default();
    if vpc_cidr != plan.vpc_cidr.to_string() {
        return Err(DeployError::Check {
            what: "install-config.yaml: networking.machineNetwork[0].cidr".into(),
            rule: format!(
                "{} is not the CIDR of the subnets' VPC {vpc} ({vpc_cidr}); the security groups open the cluster's ports to it",
                plan.vpc_cidr
            ),
        });
    }
    let tables = aws
        .ec2
        .describe_route_tables()
        .filters(
            aws_sdk_ec2::types::Filter::builder()
                .name("vpc-id")
                .values(&vpc)
                .build(),
        )
        .send()
        .await
        .map_err(|e| AwsError::of("EC2 DescribeRouteTables", vpc.clone(), &e))?;
    let to_igw = |t: &aws_sdk_ec2::types::RouteTable| {
        t.routes().iter().any(|r| {
            r.destination_cidr_block() == Some("0.0.0.0/0")
                && r.gateway_id().is_some_and(|g| g.starts_with("igw-"))
        })
    };
    let main = tables
        .route_tables()
        .iter()
        .find(|t| t.associations().iter().any(|a| a.main() == Some(true)));
    let mut public = Vec::new();
    let mut private = Vec::new();
    for id in &plan.existing_subnets {
        let table = tables
            .route_tables()
            .iter()
            .find(|t| {
                t.associations()
                    .iter()
                    .any(|a| a.subnet_id() == Some(id.as_str()))
            })
            .or(main);
        if table.is_some_and(to_igw) {
            public.push(id.clone());
        } else {
            private.push(id.clone());
        }
    }
    if private.is_empty() {
        return Err(DeployError::Check {
            what: field.into(),
            rule: "no private subnet (one whose route table has no 0.0.0.0/0 route to an internet gateway): the masters and the internal load balancer go there".into(),
        });
    }
    if plan.external && public.is_empty() {
        return Err(DeployError::Check {
            what: field.into(),
            rule: "no public subnet (0.0.0.0/0 to an internet gateway), which publish: External needs for the API's load balancer and the bootstrap".into(),
        });
    }
    Ok(ExistingNetwork {
        vpc,
        public,
        private,
    })
}

/// Adds (`add`) or removes the tag `kubernetes.io/cluster/<infraID>=shared`
/// on a user's subnet, as upstream's `Custom::SubnetRegister` does.
async fn tag_subnet(
    aws: &Clients,
    subnet: &str,
    infra_id: &str,
    add: bool,
) -> Result<(), DeployError> {
    let tag = aws_sdk_ec2::types::Tag::builder()
        .key(format!("kubernetes.io/cluster/{infra_id}"))
        .value("shared")
        .build();
    if add {
        aws.ec2
            .create_tags()
            .resources(subnet)
            .tags(tag)
            .send()
            .await
            .map_err(|e| AwsError::of("EC2 CreateTags", format!("subnet {subnet}"), &e))?;
    } else {
        let r = aws
            .ec2
            .delete_tags()
            .resources(subnet)
            .tags(tag)
            .send()
            .await;
        if let Err(e) = r {
            let err = AwsError::of("EC2 DeleteTags", format!("subnet {subnet}"), &e);
            if !err.not_found() {
                return Err(err.into());
            }
        }
    }
    Ok(())
}

/// The id (`Z…`, without `/hostedzone/`) of the public hosted zone named
/// `domain`.
async fn public_zone(aws: &Clients, domain: &str) -> Result<String, DeployError> {
    let want = format!("{}.", domain.trim_end_matches('.'));
    let out = aws
        .route53
        .list_hosted_zones_by_name()
        .dns_name(&want)
        .send()
        .await
        .map_err(|e| {
            AwsError::of(
                "Route53 ListHostedZonesByName",
                format!("zone {domain}"),
                &e,
            )
        })?;
    out.hosted_zones()
        .iter()
        .find(|z| z.name() == want && !z.config().is_some_and(|c| c.private_zone()))
        .map(|z| z.id().trim_start_matches("/hostedzone/").to_string())
        .ok_or_else(|| DeployError::Check {
            what: format!("hosted zone {domain}"),
            rule: "the account has no public Route53 zone of the base domain, which publish: External needs for api.<cluster>.<domain> (create it, or use publish: Internal)".into(),
        })
}

async fn ensure_bucket(aws: &Clients, bucket: &str, state: &mut State) -> Result<(), DeployError> {
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

/// A stack's status and owner tag, `None` when there is no such stack.
async fn stack_status(
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
async fn create_stack(
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

/// Waits until stack `id` is no longer in progress, showing each resource
/// event once (a progress bar of `total` resources, and a log line per
/// event). Returns the final status and the stack (`None` once deleted).
async fn wait_stack(
    aws: &Clients,
    name: &str,
    id: &str,
    total: u64,
    wait: WaitOptions,
    creating: bool,
) -> Result<(StackStatus, Option<aws_sdk_cloudformation::types::Stack>), DeployError> {
    let bar = indicatif::ProgressBar::new(total.max(1));
    bar.set_style(
        indicatif::ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} resources {msg}")
            .expect("a valid template")
            .progress_chars("=> "),
    );
    bar.set_prefix(name.to_string());
    let start = Instant::now();
    let mut seen = std::collections::HashSet::new();
    let mut done = 0u64;
    let mut logged_wait = false;
    loop {
        // Events, oldest first, each shown once.
        if let Ok(ev) = aws.cfn.describe_stack_events().stack_name(id).send().await {
            let mut events: Vec<_> = ev.stack_events().to_vec();
            events.reverse();
            for e in events {
                let key = e.event_id().unwrap_or_default().to_string();
                if !seen.insert(key) {
                    continue;
                }
                let res = e.logical_resource_id().unwrap_or_default();
                let status = e.resource_status().map(|s| s.as_str()).unwrap_or_default();
                if res == name {
                    continue;
                }
                let reason = e
                    .resource_status_reason()
                    .map(|r| format!(": {r}"))
                    .unwrap_or_default();
                if status.ends_with("_COMPLETE") {
                    done += 1;
                    bar.set_position(done.min(total));
                }
                bar.set_message(format!("{res} {status}"));
                if status.ends_with("_FAILED") {
                    warn!(
                        "stack {name}: {res} ({}) {status}{reason}",
                        e.resource_type().unwrap_or_default()
                    );
                } else {
                    tracing::debug!(
                        "stack {name}: {res} ({}) {status}{reason}",
                        e.resource_type().unwrap_or_default()
                    );
                }
            }
        }
        let stack = match aws.cfn.describe_stacks().stack_name(id).send().await {
            Ok(o) => o.stacks().first().cloned(),
            Err(e) => {
                let err =
                    AwsError::of("CloudFormation DescribeStacks", format!("stack {name}"), &e);
                if !creating && err.not_found() {
                    bar.finish_and_clear();
                    return Ok((StackStatus::DeleteComplete, None));
                }
                return Err(err.into());
            }
        };
        let status = stack
            .as_ref()
            .and_then(|s| s.stack_status().cloned())
            .unwrap_or(StackStatus::DeleteComplete);
        if !status.as_str().ends_with("_IN_PROGRESS") {
            bar.finish_and_clear();
            return Ok((status, stack));
        }
        if start.elapsed() > wait.stack_timeout {
            bar.finish_and_clear();
            return Err(DeployError::Timeout {
                stack: name.to_string(),
                status: status.as_str().to_string(),
                secs: wait.stack_timeout.as_secs(),
            });
        }
        if !logged_wait {
            info!(
                "Waiting for stack {name} ({}): {total} resources",
                status.as_str()
            );
            logged_wait = true;
        }
        tokio::time::sleep(wait.poll).await;
    }
}

/// `Resource (Type): reason` for each failed resource event of the stack,
/// else the stack's own reason.
async fn failed_reasons(
    aws: &Clients,
    id: &str,
    stack: Option<&aws_sdk_cloudformation::types::Stack>,
) -> Vec<String> {
    let mut out = Vec::new();
    if let Ok(ev) = aws.cfn.describe_stack_events().stack_name(id).send().await {
        for e in ev.stack_events() {
            let status = e.resource_status().map(|s| s.as_str()).unwrap_or_default();
            if status.ends_with("_FAILED") && e.physical_resource_id() != Some(id) {
                let line = format!(
                    "{} ({}): {}",
                    e.logical_resource_id().unwrap_or_default(),
                    e.resource_type().unwrap_or_default(),
                    e.resource_status_reason().unwrap_or("no reason given")
                );
                if !out.contains(&line) {
                    out.push(line);
                }
            }
        }
    }
    if out.is_empty() {
        out.push(
            stack
                .and_then(|s| s.stack_status_reason())
                .unwrap_or("no reason given")
                .to_string(),
        );
    }
    out
}

async fn register(aws: &Clients, arn: &str, ip: &str, port: i32) -> Result<(), DeployError> {
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

async fn deregister(aws: &Clients, t: &Target) -> Result<(), DeployError> {
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

async fn delete_stack(
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

async fn delete_object(aws: &Clients, bucket: &str, key: &str) -> Result<(), DeployError> {
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

/// `okd-install aws destroy`: everything [`State`] records, in reverse
/// order: the targets, the stacks (each waited for), the objects, the
/// bucket when deploy made it. Nothing else is touched. The record is
/// rewritten after each step, so an interrupted destroy carries on.
///
/// # Errors
/// [`Stopped`] with what still exists.
pub async fn destroy(dir: &Path, wait: WaitOptions) -> Result<(), Stopped> {
    let Some(mut state) = State::read(dir).map_err(|e| Stopped {
        error: e,
        made: vec![],
    })?
    else {
        info!(
            "No {} in {}: nothing was deployed from this directory",
            STATE_FILE,
            dir.join(AWS_DIR).display()
        );
        return Ok(());
    };
    let r = destroy_inner(dir, wait, &mut state).await;
    r.map_err(|error| Stopped {
        error,
        made: state.summary(),
    })
}

async fn destroy_inner(
    dir: &Path,
    wait: WaitOptions,
    state: &mut State,
) -> Result<(), DeployError> {
    let aws = Clients::connect(&state.region).await?;
    while let Some(t) = state.targets.last().cloned() {
        deregister(&aws, &t).await?;
        state.targets.pop();
        state.write(dir)?;
    }
    while let Some(rec) = state.stacks.last().cloned() {
        delete_stack(&aws, &rec, wait).await?;
        state.stacks.pop();
        state.write(dir)?;
    }
    while let Some(o) = state.objects.last().cloned() {
        delete_object(&aws, &state.bucket, &o).await?;
        state.objects.pop();
        state.write(dir)?;
    }
    while let Some(subnet) = state.tagged_subnets.last().cloned() {
        tag_subnet(&aws, &subnet, &state.infra_id, false).await?;
        state.tagged_subnets.pop();
        state.write(dir)?;
    }
    if state.bucket_created {
        aws.s3
            .delete_bucket()
            .bucket(&state.bucket)
            .send()
            .await
            .map_err(|e| AwsError::of("S3 DeleteBucket", format!("bucket {}", state.bucket), &e))?;
        info!("Deleted S3 bucket {}", state.bucket);
        state.bucket_created = false;
    }
    std::fs::remove_file(state_path(dir)).map_err(|e| DeployError::File {
        path: state_path(dir),
        rule: e.to_string(),
    })?;
    info!(
        "Everything `okd-install aws deploy` made for {} is deleted",
        state.infra_id
    );
    Ok(())
}

/// The bootstrap's removal on AWS (after bootstrap-complete, as the
/// procedure's "delete the bootstrap stack"): its targets deregistered, the
/// bootstrap stack deleted and waited for, bootstrap.ign deleted from S3.
///
/// # Errors
/// [`Stopped`] with what still exists; [`DeployError::Check`] when no
/// bootstrap stack is recorded.
pub async fn destroy_bootstrap(dir: &Path, wait: WaitOptions) -> Result<(), Stopped> {
    let mut state = State::read(dir)
        .map_err(|e| Stopped { error: e, made: vec![] })?
        .ok_or_else(|| Stopped {
            error: DeployError::File {
                path: state_path(dir),
                rule: "missing: nothing was deployed with `okd-install aws deploy` from this directory".into(),
            },
            made: vec![],
        })?;
    let r = async {
        let aws = Clients::connect(&state.region).await?;
        let boot: Vec<Target> = state
            .targets
            .iter()
            .filter(|t| t.node == "bootstrap")
            .cloned()
            .collect();
        for t in &boot {
            deregister(&aws, t).await?;
            state.targets.retain(|x| x != t);
            state.write(dir)?;
        }
        if let Some(rec) = state
            .stacks
            .iter()
            .find(|s| s.name.ends_with("-bootstrap"))
            .cloned()
        {
            delete_stack(&aws, &rec, wait).await?;
            state.stacks.retain(|s| s.name != rec.name);
            state.write(dir)?;
        } else {
            info!("No bootstrap stack recorded: already deleted");
        }
        let objects = state.objects.clone();
        for o in objects {
            delete_object(&aws, &state.bucket, &o).await?;
            state.objects.retain(|x| *x != o);
            state.write(dir)?;
        }
        Ok::<(), DeployError>(())
    }
    .await;
    r.map_err(|error| Stopped {
        error,
        made: state.summary(),
    })
}
