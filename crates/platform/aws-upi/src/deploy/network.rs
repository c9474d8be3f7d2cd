//! The account's network for the stacks: the user's existing subnets
//! (VPC, public/private, the cluster tag) and the base domain's public hosted zone.

use super::DeployError;
use crate::Plan;
use crate::aws::{AwsError, Clients};

/// The user's network: the VPC of `platform.aws.subnets` and which of
/// them are public (their route table, explicit or the VPC's main one,
/// sends 0.0.0.0/0 to an internet gateway).
pub(super) struct ExistingNetwork {
    pub(super) vpc: String,
    pub(super) public: Vec<String>,
    pub(super) private: Vec<String>,
}

pub(super) async fn existing_network(
    aws: &Clients,
    plan: &Plan,
) -> Result<ExistingNetwork, DeployError> {
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
pub(super) async fn tag_subnet(
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
pub(super) async fn public_zone(aws: &Clients, domain: &str) -> Result<String, DeployError> {
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
