//! AWS user-provisioned infrastructure (issue #23): the documented
//! procedure (openshift/installer `docs/user/aws/install_upi.md`) and its
//! six CloudFormation stacks (`upi/aws/cloudformation/01_vpc.yaml` …
//! `06_cluster_worker_node.yaml`) done by the program.
//!
//! [`plan`] checks an install before anything is created: the
//! install-config's platform is aws with a region, the infraID and cluster
//! name fit the templates' `InfrastructureName` and `ClusterName` pattern
//! (`^([a-zA-Z][a-zA-Z0-9\-]{0,26})$`) and so the load balancers'
//! 32-character name limit (`<infraID>-ext`, `-int`), the VPC CIDR is a /16
//! to /24 (01_vpc.yaml `VpcCidr`), 1 to 3 zones; it gives the stacks in the
//! order the procedure creates them. [`templates`] writes the templates,
//! [`stacks`] their parameter files, [`generate`] both for `create
//! aws-stacks`; [`deploy`] creates, waits for and deletes them through the
//! AWS SDK ([`aws`]).

pub mod aws;
pub mod cfn;
pub mod deploy;
pub mod generate;
pub mod stacks;
pub mod templates;

use ipnet::IpNet;
use okd_installconfig::InstallConfig;

/// The longest `InfrastructureName`/`ClusterName` the templates accept.
pub const NAME_MAX: usize = 27;
/// Elastic Load Balancing's limit on a load balancer's name.
pub const LB_NAME_MAX: usize = 32;

/// Why an install cannot go to AWS; each names the file and the field.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{file}: {field}: {rule}")]
pub struct UpiError {
    /// `install-config.yaml` or `metadata.json`.
    pub file: &'static str,
    /// The field path (`platform.aws.region`, `infraID`, …).
    pub field: &'static str,
    /// The rule, with the value.
    pub rule: String,
}

/// One CloudFormation stack of the procedure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stack {
    /// Its name, `<infraID>-<part>`.
    pub name: String,
    /// The template it is made from (openshift/installer
    /// `upi/aws/cloudformation/<template>`).
    pub template: &'static str,
}

/// What the stacks are made from, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The region.
    pub region: String,
    /// metadata.json's infraID.
    pub infra_id: String,
    /// The cluster name.
    pub cluster: String,
    /// The base domain (the public hosted zone's name).
    pub base_domain: String,
    /// The VPC's CIDR (the first machine network).
    pub vpc_cidr: IpNet,
    /// Availability zones for the VPC: the control plane's replicas, 1-3.
    pub zones: u8,
    /// The user's existing subnets (`platform.aws.subnets`): no VPC stack then.
    pub existing_subnets: Vec<String>,
    /// Masters (`controlPlane.replicas`).
    pub masters: usize,
    /// Workers (`compute[].replicas`): one stack each.
    pub workers: usize,
    /// `publish: External` (the default): an internet-facing API.
    pub external: bool,
    /// The stacks, in creation order: vpc (unless existing subnets),
    /// infra, security, bootstrap, control-plane, one per worker.
    pub stacks: Vec<Stack>,
}

fn name_ok(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '-')
        && s.len() <= NAME_MAX
}

/// Checks `cfg` (a normalized install-config) and `infra_id` (metadata.json)
/// for AWS UPI and plans the stacks.
///
/// # Errors
/// [`UpiError`] for the first rule broken: platform not aws, no region or
/// one not shaped `<area>-<direction>-<n>`, an infraID or cluster name the
/// templates refuse (and so an NLB name over 32 characters), no machine
/// network or one outside /16-/24, zero replicas of the control plane.
pub fn plan(cfg: &InstallConfig, infra_id: &str) -> Result<Plan, UpiError> {
    let ic = |field: &'static str, rule: String| UpiError {
        file: "install-config.yaml",
        field,
        rule,
    };
    let Some(aws) = &cfg.platform.aws else {
        return Err(ic(
            "platform",
            "the platform is not aws: AWS stacks need `platform: aws: region: …`".into(),
        ));
    };
    if aws.region.is_empty() {
        return Err(ic("platform.aws.region", "no region given".into()));
    }
    if !region_shaped(&aws.region) {
        return Err(ic(
            "platform.aws.region",
            format!(
                "{:?} is not an AWS region name (like us-east-1)",
                aws.region
            ),
        ));
    }
    if !name_ok(infra_id) {
        return Err(UpiError {
            file: "metadata.json",
            field: "infraID",
            rule: format!(
                "{infra_id:?} does not fit the templates' InfrastructureName: a letter, then letters, digits or '-', at most {NAME_MAX} characters (which keeps `<infraID>-ext` within the load balancers' {LB_NAME_MAX}-character names)"
            ),
        });
    }
    let cluster = cfg.metadata.name.clone();
    if !name_ok(&cluster) {
        return Err(ic(
            "metadata.name",
            format!(
                "{cluster:?} does not fit the templates' ClusterName (a letter, then letters, digits or '-', at most {NAME_MAX} characters)"
            ),
        ));
    }
    let cidr = cfg
        .networking
        .as_ref()
        .and_then(|n| n.machine_network.first())
        .map(|m| m.cidr.clone())
        .ok_or_else(|| {
            ic(
                "networking.machineNetwork",
                "no machine network for the VPC".into(),
            )
        })?;
    let vpc_cidr: IpNet = cidr.parse().map_err(|e| {
        ic(
            "networking.machineNetwork[0].cidr",
            format!("{cidr:?}: {e}"),
        )
    })?;
    if !matches!(vpc_cidr, IpNet::V4(_)) || !(16..=24).contains(&vpc_cidr.prefix_len()) {
        return Err(ic(
            "networking.machineNetwork[0].cidr",
            format!("{vpc_cidr} must be an IPv4 /16 to /24 (01_vpc.yaml VpcCidr)"),
        ));
    }
    let masters = cfg
        .control_plane
        .as_ref()
        .and_then(|c| c.replicas)
        .unwrap_or(3);
    if masters < 1 {
        return Err(ic(
            "controlPlane.replicas",
            "at least one master is needed".into(),
        ));
    }
    let workers = cfg
        .compute
        .iter()
        .filter_map(|p| p.replicas)
        .sum::<i64>()
        .max(0);
    let mut stacks = Vec::new();
    let stack = |part: &str, template: &'static str| Stack {
        name: format!("{infra_id}-{part}"),
        template,
    };
    if aws.subnets.is_empty() {
        stacks.push(stack("vpc", "01_vpc.yaml"));
    }
    stacks.push(stack("infra", "02_cluster_infra.yaml"));
    stacks.push(stack("security", "03_cluster_security.yaml"));
    stacks.push(stack("bootstrap", "04_cluster_bootstrap.yaml"));
    stacks.push(stack("control-plane", "05_cluster_master_nodes.yaml"));
    for i in 0..workers {
        stacks.push(stack(&format!("worker-{i}"), "06_cluster_worker_node.yaml"));
    }
    Ok(Plan {
        region: aws.region.clone(),
        infra_id: infra_id.to_string(),
        cluster,
        base_domain: cfg.base_domain.clone(),
        vpc_cidr,
        zones: masters.clamp(1, 3) as u8,
        existing_subnets: aws.subnets.clone(),
        masters: masters as usize,
        workers: workers as usize,
        external: cfg.publish.as_deref() != Some("Internal"),
        stacks,
    })
}

/// Whether `r` is shaped like an AWS region name: `<area>[-gov|-iso…]-<direction>-<n>`
/// (`us-east-1`, `ap-southeast-2`, `us-gov-west-1`).
pub fn region_shaped(r: &str) -> bool {
    let parts: Vec<&str> = r.split('-').collect();
    parts.len() >= 3
        && parts[0].len() == 2
        && parts.iter().all(|p| {
            !p.is_empty()
                && p.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        })
        && parts
            .last()
            .is_some_and(|n| n.chars().all(|c| c.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(yaml: &str) -> InstallConfig {
        okd_installconfig::normalize("install-config.yaml", yaml.as_bytes())
            .unwrap()
            .config
    }

    const EXAMPLE: &str = include_str!("../../../../examples/aws-upi/install-config.yaml");

    #[test]
    fn the_example_plans_six_kinds_of_stack() {
        let p = plan(&cfg(EXAMPLE), "okd45-x7k2p").unwrap();
        assert_eq!(p.region, "us-east-1");
        assert_eq!(p.zones, 3);
        assert_eq!(p.vpc_cidr.to_string(), "10.0.0.0/16");
        let names: Vec<&str> = p.stacks.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "okd45-x7k2p-vpc",
                "okd45-x7k2p-infra",
                "okd45-x7k2p-security",
                "okd45-x7k2p-bootstrap",
                "okd45-x7k2p-control-plane",
                "okd45-x7k2p-worker-0",
                "okd45-x7k2p-worker-1"
            ]
        );
        assert_eq!(p.stacks[0].template, "01_vpc.yaml");
        assert!(format!("{}-ext", p.infra_id).len() <= LB_NAME_MAX);
    }

    #[test]
    fn each_parameter_file_names_exactly_its_templates_parameters() {
        let p = plan(&cfg(EXAMPLE), "okd45-x7k2p").unwrap();
        let pointer = |pool: &str| stacks::Pointer {
            source: format!("https://api-int.okd45.example.com:22623/config/{pool}"),
            ca: "data:text/plain;charset=utf-8;base64,AAAA".into(),
        };
        let inputs = stacks::Inputs {
            zones: vec![
                "us-east-1a".into(),
                "us-east-1b".into(),
                "us-east-1c".into(),
            ],
            ami: None,
            bucket: "okd45-x7k2p-bootstrap".into(),
            bootstrap_ssh_cidr: "0.0.0.0/0".into(),
            master: pointer("master"),
            worker: pointer("worker"),
            master_type: None,
            worker_type: None,
        };
        let shape = templates::Shape {
            zones: p.zones as usize,
            masters: p.masters,
            external: p.external,
            spec: okd_types::release::IgnitionSpec::V3_1,
        };
        let templates = templates::all(&shape, true);
        let specs = stacks::stack_specs(&p, &inputs);
        assert_eq!(specs.len(), 7);
        for s in &specs {
            let t = templates
                .iter()
                .find(|t| t.file == s.stack.template)
                .unwrap();
            let keys: Vec<String> = s.parameters.iter().map(|p| p.key.clone()).collect();
            assert_eq!(keys, t.parameters, "{}", s.stack.name);
        }
        // Masters spread over the zones' private subnets; workers too.
        let cp = &specs[4];
        let subnet = |k: &str| {
            cp.parameters
                .iter()
                .find(|p| p.key == k)
                .unwrap()
                .value
                .clone()
        };
        assert_eq!(
            subnet("Master2Subnet"),
            "{{stack:okd45-x7k2p-vpc:PrivateSubnetIds:2}}"
        );
        assert!(
            specs[3]
                .parameters_json()
                .contains(r#""ParameterValue": "s3://okd45-x7k2p-bootstrap/bootstrap.ign""#)
        );
        assert!(matches!(
            stacks::Placeholder::parse(&specs[3].parameters[1].value),
            Some(stacks::Placeholder::Required(_))
        ));
    }

    #[test]
    fn existing_subnets_need_no_vpc_stack() {
        let text = EXAMPLE.replace(
            "    region: us-east-1",
            "    region: us-east-1\n    subnets: [subnet-1, subnet-2]",
        );
        let p = plan(&cfg(&text), "okd45-x7k2p").unwrap();
        assert_eq!(p.stacks[0].template, "02_cluster_infra.yaml");
        assert_eq!(p.existing_subnets, ["subnet-1", "subnet-2"]);
    }

    #[test]
    fn bad_input_names_the_field() {
        let cases: Vec<(String, &str, &str)> = vec![
            (
                EXAMPLE.replace("  aws:\n    region: us-east-1", "  none: {}"),
                "okd45-x7k2p",
                "platform",
            ),
            (
                EXAMPLE.replace("region: us-east-1", "region: ''"),
                "okd45-x7k2p",
                "platform.aws.region",
            ),
            (
                EXAMPLE.replace("region: us-east-1", "region: useast1"),
                "okd45-x7k2p",
                "platform.aws.region",
            ),
            (
                EXAMPLE.to_string(),
                "a-very-long-infrastructure-name",
                "infraID",
            ),
            (EXAMPLE.to_string(), "9starts-with-digit", "infraID"),
            (
                EXAMPLE.replace("cidr: 10.0.0.0/16", "cidr: 10.0.0.0/12"),
                "okd45-x7k2p",
                "networking.machineNetwork[0].cidr",
            ),
            (
                EXAMPLE.replace("name: okd45", "name: a-cluster-name-of-thirty-chars"),
                "okd45-x7k2p",
                "metadata.name",
            ),
        ];
        for (text, infra, field) in cases {
            let e = plan(&cfg(&text), infra).unwrap_err();
            assert_eq!(e.field, field, "{e}");
        }
    }

    #[test]
    fn region_names() {
        for ok in [
            "us-east-1",
            "ap-southeast-2",
            "us-gov-west-1",
            "eu-central-2",
        ] {
            assert!(region_shaped(ok), "{ok}");
        }
        for bad in ["useast1", "us-east", "US-EAST-1", "us-east-x", "u-east-1"] {
            assert!(!region_shaped(bad), "{bad}");
        }
    }
}
