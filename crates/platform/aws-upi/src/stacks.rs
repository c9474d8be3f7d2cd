//! Each stack's parameters, as the AWS CLI's `--parameters file://…` JSON
//! (`[{"ParameterKey": …, "ParameterValue": …}]`, the files the documented
//! procedure writes by hand), with the values that only exist once an
//! earlier stack does written as placeholders that `okd-install aws
//! deploy` fills from that stack's outputs:
//!
//! - `{{stack:<name>:<output>}}`: the output `<output>` of stack `<name>`;
//! - `{{stack:<name>:<output>:<i>}}`: item `i` of a comma-joined output
//!   (a subnet of `PrivateSubnetIds`);
//! - `{{hosted-zone:<domain>}}`: the id of the public Route53 zone named
//!   `<domain>` (looked up by name);
//! - `{{required:<what>}}`: a value the user has to give (the CoreOS AMI).
//!
//! A value the user edits in a parameter file is kept by `deploy`; only
//! placeholders are filled.

use serde::{Deserialize, Serialize};

use crate::templates::subnet_cidrs;
use crate::{Plan, Stack};

/// A pointer config's two values: where it merges from (`IgnitionLocation`)
/// and the root CA it trusts as a `data:` URL (`CertificateAuthorities`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pointer {
    /// `https://api-int.<cluster domain>:22623/config/<pool>`.
    pub source: String,
    /// `data:text/plain;charset=utf-8;base64,…`.
    pub ca: String,
}

/// What the parameter files are made from, besides the [`Plan`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inputs {
    /// The zones of the VPC, in order (as many as [`Plan::zones`]).
    pub zones: Vec<String>,
    /// The CoreOS AMI in the plan's region; `None` leaves a
    /// `{{required:…}}` placeholder.
    pub ami: Option<String>,
    /// The S3 bucket that holds bootstrap.ign.
    pub bucket: String,
    /// Who may reach the bootstrap's SSH and journal gateway.
    pub bootstrap_ssh_cidr: String,
    /// master.ign's merge source and CA.
    pub master: Pointer,
    /// worker.ign's merge source and CA.
    pub worker: Pointer,
    /// Instance types (`controlPlane`/`compute` `platform.aws.type`), or
    /// the templates' defaults.
    pub master_type: Option<String>,
    /// The workers' instance type.
    pub worker_type: Option<String>,
}

/// One parameter: `{"ParameterKey": …, "ParameterValue": …}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Parameter {
    /// The template's parameter name.
    #[serde(rename = "ParameterKey")]
    pub key: String,
    /// Its value, or a placeholder (module docs).
    #[serde(rename = "ParameterValue")]
    pub value: String,
}

/// A stack with its parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StackSpec {
    /// The stack of the plan (name, template).
    pub stack: Stack,
    /// Its parameters, in the template's order.
    pub parameters: Vec<Parameter>,
}

impl StackSpec {
    /// The parameter file's name: `<stack name>.parameters.json`.
    pub fn parameter_file(&self) -> String {
        format!("{}.parameters.json", self.stack.name)
    }

    /// The parameter file's text (pretty JSON, a trailing newline).
    pub fn parameters_json(&self) -> String {
        let mut t = serde_json::to_string_pretty(&self.parameters).expect("strings serialize");
        t.push('\n');
        t
    }
}

/// A value to be filled in by `deploy`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Placeholder {
    /// An output (or one item of a comma-joined output) of an earlier stack.
    Output {
        /// The stack's name.
        stack: String,
        /// The output's key.
        output: String,
        /// Item of a comma-joined output.
        index: Option<usize>,
    },
    /// The id of the public hosted zone named so.
    HostedZone(String),
    /// A value only the user can give.
    Required(String),
}

impl Placeholder {
    /// The placeholder a parameter value is, if it is one.
    pub fn parse(value: &str) -> Option<Placeholder> {
        let inner = value.strip_prefix("{{")?.strip_suffix("}}")?;
        let mut parts = inner.split(':');
        match parts.next()? {
            "stack" => {
                let stack = parts.next()?.to_string();
                let output = parts.next()?.to_string();
                let index = match parts.next() {
                    Some(i) => Some(i.parse().ok()?),
                    None => None,
                };
                Some(Placeholder::Output {
                    stack,
                    output,
                    index,
                })
            }
            "hosted-zone" => Some(Placeholder::HostedZone(parts.next()?.to_string())),
            "required" => Some(Placeholder::Required(
                inner.trim_start_matches("required:").to_string(),
            )),
            _ => None,
        }
    }
}

fn out(stack: &str, output: &str) -> String {
    format!("{{{{stack:{stack}:{output}}}}}")
}

fn item(stack: &str, output: &str, i: usize) -> String {
    format!("{{{{stack:{stack}:{output}:{i}}}}}")
}

/// Every stack of `plan` with its parameters (module docs). Existing
/// subnets (`platform.aws.subnets`) have no VPC stack; their VPC and which
/// are public are looked up by `deploy`, so those values are placeholders
/// of the form `{{stack:<infraID>-vpc:…}}` answered from the subnets
/// instead.
pub fn stack_specs(plan: &Plan, inputs: &Inputs) -> Vec<StackSpec> {
    let vpc = format!("{}-vpc", plan.infra_id);
    let security = format!("{}-security", plan.infra_id);
    let p = |k: &str, v: String| Parameter {
        key: k.to_string(),
        value: v,
    };
    let ami = inputs.ami.clone().unwrap_or_else(|| {
        "{{required:the CoreOS AMI of the region (--ami or platform.aws.amiID)}}".to_string()
    });
    let zones = plan.zones as usize;
    let mut specs = Vec::new();
    for stack in &plan.stacks {
        let infra = p("InfrastructureName", plan.infra_id.clone());
        let parameters = match stack.template {
            "01_vpc.yaml" => {
                let v4 = crate::templates::ipv4(plan.vpc_cidr).expect("plan checked IPv4");
                let (public, private) = subnet_cidrs(v4, zones);
                vec![
                    p("VpcCidr", plan.vpc_cidr.to_string()),
                    p("AvailabilityZones", inputs.zones.join(",")),
                    p("PublicSubnetCidrs", public.join(",")),
                    p("PrivateSubnetCidrs", private.join(",")),
                    infra,
                ]
            }
            "02_cluster_infra.yaml" => {
                let mut v = vec![p("ClusterName", plan.cluster.clone()), infra];
                if plan.external {
                    v.push(p(
                        "HostedZoneId",
                        format!("{{{{hosted-zone:{}}}}}", plan.base_domain),
                    ));
                }
                v.push(p("HostedZoneName", plan.base_domain.clone()));
                if plan.external {
                    v.push(p("PublicSubnets", out(&vpc, "PublicSubnetIds")));
                }
                v.push(p("PrivateSubnets", out(&vpc, "PrivateSubnetIds")));
                v.push(p("VpcId", out(&vpc, "VpcId")));
                v
            }
            "03_cluster_security.yaml" => vec![
                infra,
                p("VpcCidr", plan.vpc_cidr.to_string()),
                p("VpcId", out(&vpc, "VpcId")),
            ],
            "04_cluster_bootstrap.yaml" => vec![
                infra,
                p("RhcosAmi", ami.clone()),
                p("AllowedBootstrapSshCidr", inputs.bootstrap_ssh_cidr.clone()),
                p("PublicSubnet", item(&vpc, "PublicSubnetIds", 0)),
                p(
                    "MasterSecurityGroupId",
                    out(&security, "MasterSecurityGroupId"),
                ),
                p("VpcId", out(&vpc, "VpcId")),
                p(
                    "BootstrapIgnitionLocation",
                    format!("s3://{}/bootstrap.ign", inputs.bucket),
                ),
                p("BootstrapInstanceType", "i3.large".to_string()),
            ],
            "05_cluster_master_nodes.yaml" => {
                let mut v = vec![infra, p("RhcosAmi", ami.clone())];
                for i in 0..plan.masters {
                    v.push(p(
                        &format!("Master{i}Subnet"),
                        item(&vpc, "PrivateSubnetIds", i % zones),
                    ));
                }
                v.push(p(
                    "MasterSecurityGroupId",
                    out(&security, "MasterSecurityGroupId"),
                ));
                v.push(p("IgnitionLocation", inputs.master.source.clone()));
                v.push(p("CertificateAuthorities", inputs.master.ca.clone()));
                v.push(p(
                    "MasterInstanceProfileName",
                    out(&security, "MasterInstanceProfile"),
                ));
                v.push(p(
                    "MasterInstanceType",
                    inputs
                        .master_type
                        .clone()
                        .unwrap_or_else(|| "m5.xlarge".into()),
                ));
                v
            }
            _ => {
                let i: usize = stack
                    .name
                    .rsplit('-')
                    .next()
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(0);
                vec![
                    infra,
                    p("RhcosAmi", ami.clone()),
                    p("Subnet", item(&vpc, "PrivateSubnetIds", i % zones)),
                    p(
                        "WorkerSecurityGroupId",
                        out(&security, "WorkerSecurityGroupId"),
                    ),
                    p("IgnitionLocation", inputs.worker.source.clone()),
                    p("CertificateAuthorities", inputs.worker.ca.clone()),
                    p(
                        "WorkerInstanceProfileName",
                        out(&security, "WorkerInstanceProfile"),
                    ),
                    p(
                        "WorkerInstanceType",
                        inputs
                            .worker_type
                            .clone()
                            .unwrap_or_else(|| "m5.large".into()),
                    ),
                ]
            }
        };
        specs.push(StackSpec {
            stack: stack.clone(),
            parameters,
        });
    }
    specs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_parse_and_plain_values_do_not() {
        assert_eq!(
            Placeholder::parse("{{stack:x-vpc:PrivateSubnetIds:2}}"),
            Some(Placeholder::Output {
                stack: "x-vpc".into(),
                output: "PrivateSubnetIds".into(),
                index: Some(2)
            })
        );
        assert_eq!(
            Placeholder::parse("{{hosted-zone:example.com}}"),
            Some(Placeholder::HostedZone("example.com".into()))
        );
        assert_eq!(
            Placeholder::parse("{{required:the AMI (--ami)}}"),
            Some(Placeholder::Required("the AMI (--ami)".into()))
        );
        for plain in [
            "vpc-123",
            "{{stack:x}}",
            "{{other:x}}",
            "s3://b/bootstrap.ign",
        ] {
            assert_eq!(Placeholder::parse(plain), None, "{plain}");
        }
    }
}
