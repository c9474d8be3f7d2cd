//! The six CloudFormation templates of the documented AWS UPI procedure
//! (openshift/installer `docs/user/aws/install_upi.md`; what each stack
//! holds follows `upi/aws/cloudformation/01_vpc.yaml` …
//! `06_cluster_worker_node.yaml`: the same logical resource names,
//! parameters and outputs, so a user of the guide recognises them).
//! Written here from the documented resources, for one install:
//!
//! - the zone count, the masters and the `publish` strategy shape the
//!   templates (one subnet pair per zone, one instance per master, the
//!   external load balancer and the public record only for `External`),
//!   where the upstream templates carry conditions;
//! - the subnets' CIDRs and zones are parameters the parameter files fill
//!   (upstream computes them with `Fn::Cidr` and `Fn::GetAZs`), so they are
//!   visible and checked before a stack is created;
//! - the instances' user data is a pointer config in the install's own
//!   Ignition spec version (upstream hard-codes 3.1.0, the mismatch the AWS
//!   UPI seed hit), rendered by the same code as `master.ign`;
//! - no Lambda functions: the load balancer targets are registered and the
//!   user's subnets tagged by `okd-install aws deploy` through the ELBv2 and
//!   EC2 APIs (upstream's `Custom::NLBRegister`/`Custom::SubnetRegister`).
//!
//! docs/differences.md lists each difference.

use ipnet::{IpNet, Ipv4Net};
use okd_types::ignition::{Config, Resource};
use okd_types::release::IgnitionSpec;
use serde_yaml_ng::Value;

use crate::cfn::{
    Template, base64, get_att, join, list, map, map_of, n, output, param, r, resource, s, select,
    sub, tag,
};

/// What shapes the templates (all known before anything is created).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shape {
    /// Availability zones of the VPC (and so subnet pairs), 1-3.
    pub zones: usize,
    /// Masters (instances of the control-plane stack), ≥ 1.
    pub masters: usize,
    /// `publish: External` (an internet-facing API load balancer and the
    /// public `api` record) or `Internal`.
    pub external: bool,
    /// The Ignition spec of the install's configs (the pointer configs'
    /// `ignition.version`).
    pub spec: IgnitionSpec,
}

/// One generated template: its file name and text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateFile {
    /// `01_vpc.yaml` … `06_cluster_worker_node.yaml`.
    pub file: &'static str,
    /// The YAML text.
    pub text: String,
    /// The names of its parameters, in order.
    pub parameters: Vec<String>,
}

const NAME_PATTERN: &str = "^([a-zA-Z][a-zA-Z0-9\\-]{0,26})$";
const CIDR_PATTERN: &str = "^(([0-9]|[1-9][0-9]|1[0-9]{2}|2[0-4][0-9]|25[0-5])\\.){3}([0-9]|[1-9][0-9]|1[0-9]{2}|2[0-4][0-9]|25[0-5])(\\/([0-9]|[1-2][0-9]|3[0-2]))$";

fn infra_param(t: &mut Template) {
    t.param(
        "InfrastructureName",
        param(
            "String",
            "A short, unique cluster ID used to tag cloud resources and identify items owned by or used by the cluster (metadata.json infraID).",
            vec![
                ("AllowedPattern", s(NAME_PATTERN)),
                ("MinLength", n(1)),
                ("MaxLength", n(27)),
                (
                    "ConstraintDescription",
                    s("Infrastructure name must be alphanumeric, start with a letter, and have a maximum of 27 characters."),
                ),
            ],
        ),
    );
}

fn cluster_tag(value: &str) -> Value {
    tag(sub("kubernetes.io/cluster/${InfrastructureName}"), s(value))
}

fn name_tag(suffix: &str) -> Value {
    tag(s("Name"), sub(&format!("${{InfrastructureName}}{suffix}")))
}

fn zone(i: usize) -> Value {
    select(i, r("AvailabilityZones"))
}

/// The subnet CIDRs for `vpc` as upstream's `Fn::Cidr(VpcCidr, 6,
/// SubnetBits)` with `SubnetBits` 12 (a /20 in a /16), made smaller when the
/// VPC is (six subnets must fit: at least three bits): indexes 0-2 public,
/// 3-5 private. Returns `(public, private)`, `zones` of each.
pub fn subnet_cidrs(vpc: Ipv4Net, zones: usize) -> (Vec<String>, Vec<String>) {
    let prefix = (32 - 12).max(vpc.prefix_len() + 3);
    let all: Vec<String> = vpc
        .subnets(prefix)
        .expect("prefix is longer than the VPC's")
        .take(6)
        .map(|n| n.to_string())
        .collect();
    (all[..zones].to_vec(), all[3..3 + zones].to_vec())
}

/// `01_vpc.yaml`: a VPC with a public and a private subnet in each of
/// `shape.zones` zones, an internet gateway, a NAT gateway per zone, and an
/// S3 gateway endpoint. Parameters `VpcCidr`, `AvailabilityZones`,
/// `PublicSubnetCidrs`, `PrivateSubnetCidrs`, `InfrastructureName`;
/// outputs `VpcId`, `PublicSubnetIds`, `PrivateSubnetIds` (comma-joined),
/// `PublicRouteTableId`, `PrivateRouteTableIds`.
pub fn vpc(shape: &Shape) -> Template {
    let z = shape.zones;
    let mut t = Template::new(format!(
        "Template for Best Practice VPC with {z} AZ{} (okd-install, after openshift/installer upi/aws/cloudformation/01_vpc.yaml)",
        if z == 1 { "" } else { "s" }
    ));
    t.param(
        "VpcCidr",
        param(
            "String",
            "CIDR block for VPC.",
            vec![
                ("AllowedPattern", s(CIDR_PATTERN)),
                (
                    "ConstraintDescription",
                    s("CIDR block parameter must be in the form x.x.x.x/16-24."),
                ),
                ("Default", s("10.0.0.0/16")),
            ],
        ),
    );
    t.param(
        "AvailabilityZones",
        param(
            "CommaDelimitedList",
            &format!("The {z} availability zone(s) of the VPC, in order."),
            vec![],
        ),
    );
    t.param(
        "PublicSubnetCidrs",
        param(
            "CommaDelimitedList",
            "The public subnets' CIDR blocks, one per zone.",
            vec![],
        ),
    );
    t.param(
        "PrivateSubnetCidrs",
        param(
            "CommaDelimitedList",
            "The private subnets' CIDR blocks, one per zone.",
            vec![],
        ),
    );
    infra_param(&mut t);
    t.res(
        "VPC",
        resource(
            "AWS::EC2::VPC",
            map([
                ("EnableDnsSupport", s("true")),
                ("EnableDnsHostnames", s("true")),
                ("CidrBlock", r("VpcCidr")),
                ("Tags", list(vec![name_tag("-vpc")])),
            ]),
            &[],
        ),
    );
    let suffix = |i: usize| {
        if i == 0 {
            String::new()
        } else {
            (i + 1).to_string()
        }
    };
    for (kind, cidrs, role) in [
        ("Public", "PublicSubnetCidrs", "kubernetes.io/role/elb"),
        (
            "Private",
            "PrivateSubnetCidrs",
            "kubernetes.io/role/internal-elb",
        ),
    ] {
        for i in 0..z {
            t.res(
                format!("{kind}Subnet{}", suffix(i)),
                resource(
                    "AWS::EC2::Subnet",
                    map([
                        ("VpcId", r("VPC")),
                        ("CidrBlock", select(i, r(cidrs))),
                        ("AvailabilityZone", zone(i)),
                        (
                            "Tags",
                            list(vec![
                                name_tag(&format!("-{}-{}", kind.to_lowercase(), i + 1)),
                                cluster_tag("shared"),
                                tag(s(role), s("1")),
                            ]),
                        ),
                    ]),
                    &[],
                ),
            );
        }
    }
    t.res(
        "InternetGateway",
        resource(
            "AWS::EC2::InternetGateway",
            map([("Tags", list(vec![name_tag("-igw")]))]),
            &[],
        ),
    );
    t.res(
        "GatewayToInternet",
        resource(
            "AWS::EC2::VPCGatewayAttachment",
            map([
                ("VpcId", r("VPC")),
                ("InternetGatewayId", r("InternetGateway")),
            ]),
            &[],
        ),
    );
    t.res(
        "PublicRouteTable",
        resource(
            "AWS::EC2::RouteTable",
            map([
                ("VpcId", r("VPC")),
                ("Tags", list(vec![name_tag("-public")])),
            ]),
            &[],
        ),
    );
    t.res(
        "PublicRoute",
        resource(
            "AWS::EC2::Route",
            map([
                ("RouteTableId", r("PublicRouteTable")),
                ("DestinationCidrBlock", s("0.0.0.0/0")),
                ("GatewayId", r("InternetGateway")),
            ]),
            &["GatewayToInternet"],
        ),
    );
    for i in 0..z {
        t.res(
            format!("PublicSubnetRouteTableAssociation{}", suffix(i)),
            resource(
                "AWS::EC2::SubnetRouteTableAssociation",
                map([
                    ("SubnetId", r(&format!("PublicSubnet{}", suffix(i)))),
                    ("RouteTableId", r("PublicRouteTable")),
                ]),
                &[],
            ),
        );
    }
    for i in 0..z {
        let k = suffix(i);
        t.res(
            format!("NAT{k}"),
            resource(
                "AWS::EC2::NatGateway",
                map([
                    ("AllocationId", get_att(&format!("EIP{k}"), "AllocationId")),
                    ("SubnetId", r(&format!("PublicSubnet{k}"))),
                    ("Tags", list(vec![name_tag(&format!("-nat-{}", i + 1))])),
                ]),
                &["GatewayToInternet"],
            ),
        );
        t.res(
            format!("EIP{k}"),
            resource(
                "AWS::EC2::EIP",
                map([
                    ("Domain", s("vpc")),
                    ("Tags", list(vec![name_tag(&format!("-eip-{}", i + 1))])),
                ]),
                &["GatewayToInternet"],
            ),
        );
        t.res(
            format!("PrivateRouteTable{k}"),
            resource(
                "AWS::EC2::RouteTable",
                map([
                    ("VpcId", r("VPC")),
                    ("Tags", list(vec![name_tag(&format!("-private-{}", i + 1))])),
                ]),
                &[],
            ),
        );
        t.res(
            format!("PrivateRoute{k}"),
            resource(
                "AWS::EC2::Route",
                map([
                    ("RouteTableId", r(&format!("PrivateRouteTable{k}"))),
                    ("DestinationCidrBlock", s("0.0.0.0/0")),
                    ("NatGatewayId", r(&format!("NAT{k}"))),
                ]),
                &[],
            ),
        );
        t.res(
            format!("PrivateSubnetRouteTableAssociation{k}"),
            resource(
                "AWS::EC2::SubnetRouteTableAssociation",
                map([
                    ("SubnetId", r(&format!("PrivateSubnet{k}"))),
                    ("RouteTableId", r(&format!("PrivateRouteTable{k}"))),
                ]),
                &[],
            ),
        );
    }
    let mut tables = vec![r("PublicRouteTable")];
    tables.extend((0..z).map(|i| r(&format!("PrivateRouteTable{}", suffix(i)))));
    t.res(
        "S3Endpoint",
        resource(
            "AWS::EC2::VPCEndpoint",
            map([
                (
                    "PolicyDocument",
                    map([
                        ("Version", s("2012-10-17")),
                        (
                            "Statement",
                            list(vec![map([
                                ("Effect", s("Allow")),
                                ("Principal", s("*")),
                                ("Action", list(vec![s("*")])),
                                ("Resource", list(vec![s("*")])),
                            ])]),
                        ),
                    ]),
                ),
                ("RouteTableIds", list(tables)),
                ("ServiceName", sub("com.amazonaws.${AWS::Region}.s3")),
                ("VpcId", r("VPC")),
            ]),
            &[],
        ),
    );
    t.out("VpcId", output("ID of the new VPC.", r("VPC")));
    t.out(
        "PublicSubnetIds",
        output(
            "Subnet IDs of the public subnets.",
            join(
                ",",
                (0..z)
                    .map(|i| r(&format!("PublicSubnet{}", suffix(i))))
                    .collect(),
            ),
        ),
    );
    t.out(
        "PrivateSubnetIds",
        output(
            "Subnet IDs of the private subnets.",
            join(
                ",",
                (0..z)
                    .map(|i| r(&format!("PrivateSubnet{}", suffix(i))))
                    .collect(),
            ),
        ),
    );
    t.out(
        "PublicRouteTableId",
        output("Public Route table ID", r("PublicRouteTable")),
    );
    t.out(
        "PrivateRouteTableIds",
        output(
            "Private Route table IDs",
            join(
                ",",
                (0..z)
                    .map(|i| {
                        map([(
                            "Fn::Sub",
                            list(vec![
                                s(format!("${{Zone}}=${{PrivateRouteTable{}}}", suffix(i))),
                                map([("Zone", zone(i))]),
                            ]),
                        )])
                    })
                    .collect(),
            ),
        ),
    );
    t
}

fn target_group(port: i64, path: &str) -> Value {
    resource(
        "AWS::ElasticLoadBalancingV2::TargetGroup",
        map([
            ("HealthCheckIntervalSeconds", n(10)),
            ("HealthCheckPath", s(path)),
            ("HealthCheckPort", s(port.to_string())),
            ("HealthCheckProtocol", s("HTTPS")),
            ("HealthyThresholdCount", n(2)),
            ("UnhealthyThresholdCount", n(2)),
            ("Port", n(port)),
            ("Protocol", s("TCP")),
            ("TargetType", s("ip")),
            ("VpcId", r("VpcId")),
            (
                "TargetGroupAttributes",
                list(vec![map([
                    ("Key", s("deregistration_delay.timeout_seconds")),
                    ("Value", s("60")),
                ])]),
            ),
        ]),
        &[],
    )
}

fn listener(lb: &str, tg: &str, port: i64) -> Value {
    resource(
        "AWS::ElasticLoadBalancingV2::Listener",
        map([
            (
                "DefaultActions",
                list(vec![map([
                    ("Type", s("forward")),
                    ("TargetGroupArn", r(tg)),
                ])]),
            ),
            ("LoadBalancerArn", r(lb)),
            ("Port", n(port)),
            ("Protocol", s("TCP")),
        ]),
        &[],
    )
}

fn alias(record: &str, lb: &str) -> Value {
    map([
        ("Name", sub(record)),
        ("Type", s("A")),
        (
            "AliasTarget",
            map([
                ("HostedZoneId", get_att(lb, "CanonicalHostedZoneID")),
                ("DNSName", get_att(lb, "DNSName")),
            ]),
        ),
    ])
}

/// `02_cluster_infra.yaml`: the network load balancers (`<infraID>-ext`
/// when external, `<infraID>-int`), their target groups with the documented
/// health checks (HTTPS `/readyz` on 6443, `/healthz` on 22623, 10 s,
/// thresholds 2/2, deregistration delay 60 s) and listeners, the private
/// hosted zone `<cluster>.<base domain>` on the VPC with `api` and `api-int`,
/// and `api` in the public zone. Outputs as upstream, without the Lambda's.
pub fn cluster_infra(shape: &Shape) -> Template {
    let mut t = Template::new(
        "Template for OpenShift Cluster Network Elements (Route53 & LBs) (okd-install, after openshift/installer upi/aws/cloudformation/02_cluster_infra.yaml)",
    );
    t.param(
        "ClusterName",
        param(
            "String",
            "A short, representative cluster name to use for host names and other identifying names.",
            vec![
                ("AllowedPattern", s(NAME_PATTERN)),
                ("MinLength", n(1)),
                ("MaxLength", n(27)),
                (
                    "ConstraintDescription",
                    s("Cluster name must be alphanumeric, start with a letter, and have a maximum of 27 characters."),
                ),
            ],
        ),
    );
    infra_param(&mut t);
    if shape.external {
        t.param(
            "HostedZoneId",
            param(
                "String",
                "The Route53 public zone ID to register the targets with, such as Z21IXYZABCZ2A4.",
                vec![],
            ),
        );
    }
    t.param(
        "HostedZoneName",
        param(
            "String",
            "The Route53 zone to register the targets with, such as example.com. Omit the trailing period.",
            vec![("Default", s("example.com"))],
        ),
    );
    if shape.external {
        t.param(
            "PublicSubnets",
            param(
                "List<AWS::EC2::Subnet::Id>",
                "The internet-facing subnets.",
                vec![],
            ),
        );
    }
    t.param(
        "PrivateSubnets",
        param(
            "List<AWS::EC2::Subnet::Id>",
            "The internal subnets.",
            vec![],
        ),
    );
    t.param(
        "VpcId",
        param(
            "AWS::EC2::VPC::Id",
            "The VPC-scoped resources will belong to this VPC.",
            vec![],
        ),
    );
    if shape.external {
        t.res(
            "ExtApiElb",
            resource(
                "AWS::ElasticLoadBalancingV2::LoadBalancer",
                map([
                    ("Name", sub("${InfrastructureName}-ext")),
                    ("IpAddressType", s("ipv4")),
                    ("Subnets", r("PublicSubnets")),
                    ("Type", s("network")),
                ]),
                &[],
            ),
        );
    }
    t.res(
        "IntApiElb",
        resource(
            "AWS::ElasticLoadBalancingV2::LoadBalancer",
            map([
                ("Name", sub("${InfrastructureName}-int")),
                ("Scheme", s("internal")),
                ("IpAddressType", s("ipv4")),
                ("Subnets", r("PrivateSubnets")),
                ("Type", s("network")),
            ]),
            &[],
        ),
    );
    t.res(
        "IntDns",
        resource(
            "AWS::Route53::HostedZone",
            map([
                (
                    "HostedZoneConfig",
                    map([("Comment", s("Managed by CloudFormation"))]),
                ),
                ("Name", sub("${ClusterName}.${HostedZoneName}")),
                (
                    "HostedZoneTags",
                    list(vec![name_tag("-int"), cluster_tag("owned")]),
                ),
                (
                    "VPCs",
                    list(vec![map([
                        ("VPCId", r("VpcId")),
                        ("VPCRegion", r("AWS::Region")),
                    ])]),
                ),
            ]),
            &[],
        ),
    );
    if shape.external {
        t.res(
            "ExternalApiServerRecord",
            resource(
                "AWS::Route53::RecordSetGroup",
                map([
                    ("Comment", s("Alias record for the API server")),
                    ("HostedZoneId", r("HostedZoneId")),
                    (
                        "RecordSets",
                        list(vec![alias(
                            "api.${ClusterName}.${HostedZoneName}.",
                            "ExtApiElb",
                        )]),
                    ),
                ]),
                &[],
            ),
        );
    }
    t.res(
        "InternalApiServerRecord",
        resource(
            "AWS::Route53::RecordSetGroup",
            map([
                ("Comment", s("Alias record for the API server")),
                ("HostedZoneId", r("IntDns")),
                (
                    "RecordSets",
                    list(vec![
                        alias("api.${ClusterName}.${HostedZoneName}.", "IntApiElb"),
                        alias("api-int.${ClusterName}.${HostedZoneName}.", "IntApiElb"),
                    ]),
                ),
            ]),
            &[],
        ),
    );
    if shape.external {
        t.res(
            "ExternalApiListener",
            listener("ExtApiElb", "ExternalApiTargetGroup", 6443),
        );
        t.res("ExternalApiTargetGroup", target_group(6443, "/readyz"));
    }
    t.res(
        "InternalApiListener",
        listener("IntApiElb", "InternalApiTargetGroup", 6443),
    );
    t.res("InternalApiTargetGroup", target_group(6443, "/readyz"));
    t.res(
        "InternalServiceInternalListener",
        listener("IntApiElb", "InternalServiceTargetGroup", 22623),
    );
    t.res(
        "InternalServiceTargetGroup",
        target_group(22623, "/healthz"),
    );
    t.out(
        "PrivateHostedZoneId",
        output(
            "Hosted zone ID for the private DNS, which is required for private records.",
            r("IntDns"),
        ),
    );
    if shape.external {
        t.out(
            "ExternalApiLoadBalancerName",
            output(
                "Full name of the external API load balancer.",
                get_att("ExtApiElb", "LoadBalancerFullName"),
            ),
        );
    }
    t.out(
        "InternalApiLoadBalancerName",
        output(
            "Full name of the internal API load balancer.",
            get_att("IntApiElb", "LoadBalancerFullName"),
        ),
    );
    t.out(
        "ApiServerDnsName",
        output(
            "Full hostname of the API server, which is required for the Ignition config files.",
            sub("api-int.${ClusterName}.${HostedZoneName}"),
        ),
    );
    if shape.external {
        t.out(
            "ExternalApiTargetGroupArn",
            output(
                "ARN of the external API target group.",
                r("ExternalApiTargetGroup"),
            ),
        );
    }
    t.out(
        "InternalApiTargetGroupArn",
        output(
            "ARN of the internal API target group.",
            r("InternalApiTargetGroup"),
        ),
    );
    t.out(
        "InternalServiceTargetGroupArn",
        output(
            "ARN of the internal service target group.",
            r("InternalServiceTargetGroup"),
        ),
    );
    t
}

/// One group of rules between the two security groups: a name, the
/// protocol, the port range, and whether workers take part (etcd and the
/// masters' 10250-10259 are masters only).
struct Rule {
    name: &'static str,
    protocol: &'static str,
    from: i64,
    to: i64,
    description: &'static str,
}

const BOTH_WAYS: &[Rule] = &[
    Rule {
        name: "Vxlan",
        protocol: "udp",
        from: 4789,
        to: 4789,
        description: "Vxlan packets",
    },
    Rule {
        name: "Geneve",
        protocol: "udp",
        from: 6081,
        to: 6081,
        description: "Geneve packets",
    },
    Rule {
        name: "IpsecIke",
        protocol: "udp",
        from: 500,
        to: 500,
        description: "IPsec IKE packets",
    },
    Rule {
        name: "IpsecNat",
        protocol: "udp",
        from: 4500,
        to: 4500,
        description: "IPsec NAT-T packets",
    },
    // ESP has no ports (`from`/`to` unused).
    Rule {
        name: "IpsecEsp",
        protocol: "50",
        from: 0,
        to: 0,
        description: "IPsec ESP packets",
    },
    Rule {
        name: "InternalTcp",
        protocol: "tcp",
        from: 9000,
        to: 9999,
        description: "Internal cluster communication",
    },
    Rule {
        name: "InternalUdp",
        protocol: "udp",
        from: 9000,
        to: 9999,
        description: "Internal cluster communication",
    },
    Rule {
        name: "IngressServicesTcp",
        protocol: "tcp",
        from: 30000,
        to: 32767,
        description: "Kubernetes ingress services",
    },
    Rule {
        name: "IngressServicesUdp",
        protocol: "udp",
        from: 30000,
        to: 32767,
        description: "Kubernetes ingress services",
    },
];

fn ingress(group: &str, source: &str, rule: &Rule) -> Value {
    let mut props = vec![
        ("GroupId".to_string(), get_att(group, "GroupId")),
        (
            "SourceSecurityGroupId".to_string(),
            get_att(source, "GroupId"),
        ),
        ("Description".to_string(), s(rule.description)),
    ];
    // Ports only for TCP and UDP: EC2 ignores them for other protocols
    // (cfn-lint W3687).
    if matches!(rule.protocol, "tcp" | "udp") {
        props.push(("FromPort".to_string(), n(rule.from)));
        props.push(("ToPort".to_string(), n(rule.to)));
    }
    props.push(("IpProtocol".to_string(), s(rule.protocol)));
    resource("AWS::EC2::SecurityGroupIngress", map_of(props), &[])
}

fn cidr_rule(protocol: &str, from: i64, to: i64) -> Value {
    map([
        ("IpProtocol", s(protocol)),
        ("FromPort", n(from)),
        ("ToPort", n(to)),
        ("CidrIp", r("VpcCidr")),
    ])
}

fn role(service: &str, policy: &str, actions: &[&str]) -> Value {
    resource(
        "AWS::IAM::Role",
        map([
            (
                "AssumeRolePolicyDocument",
                map([
                    ("Version", s("2012-10-17")),
                    (
                        "Statement",
                        list(vec![map([
                            ("Effect", s("Allow")),
                            ("Principal", map([("Service", list(vec![s(service)]))])),
                            ("Action", list(vec![s("sts:AssumeRole")])),
                        ])]),
                    ),
                ]),
            ),
            (
                "Policies",
                list(vec![map([
                    (
                        "PolicyName",
                        sub(&format!("${{InfrastructureName}}-{policy}-policy")),
                    ),
                    (
                        "PolicyDocument",
                        map([
                            ("Version", s("2012-10-17")),
                            (
                                "Statement",
                                list(vec![map([
                                    ("Effect", s("Allow")),
                                    ("Action", list(actions.iter().map(|a| s(*a)).collect())),
                                    ("Resource", s("*")),
                                ])]),
                            ),
                        ]),
                    ),
                ])]),
            ),
        ]),
        &[],
    )
}

const MASTER_ACTIONS: &[&str] = &[
    "ec2:AttachVolume",
    "ec2:AuthorizeSecurityGroupIngress",
    "ec2:CreateSecurityGroup",
    "ec2:CreateTags",
    "ec2:CreateVolume",
    "ec2:DeleteSecurityGroup",
    "ec2:DeleteVolume",
    "ec2:Describe*",
    "ec2:DetachVolume",
    "ec2:ModifyInstanceAttribute",
    "ec2:ModifyVolume",
    "ec2:RevokeSecurityGroupIngress",
    "elasticloadbalancing:AddTags",
    "elasticloadbalancing:AttachLoadBalancerToSubnets",
    "elasticloadbalancing:ApplySecurityGroupsToLoadBalancer",
    "elasticloadbalancing:CreateListener",
    "elasticloadbalancing:CreateLoadBalancer",
    "elasticloadbalancing:CreateLoadBalancerPolicy",
    "elasticloadbalancing:CreateLoadBalancerListeners",
    "elasticloadbalancing:CreateTargetGroup",
    "elasticloadbalancing:ConfigureHealthCheck",
    "elasticloadbalancing:DeleteListener",
    "elasticloadbalancing:DeleteLoadBalancer",
    "elasticloadbalancing:DeleteLoadBalancerListeners",
    "elasticloadbalancing:DeleteTargetGroup",
    "elasticloadbalancing:DeregisterInstancesFromLoadBalancer",
    "elasticloadbalancing:DeregisterTargets",
    "elasticloadbalancing:Describe*",
    "elasticloadbalancing:DetachLoadBalancerFromSubnets",
    "elasticloadbalancing:ModifyListener",
    "elasticloadbalancing:ModifyLoadBalancerAttributes",
    "elasticloadbalancing:ModifyTargetGroup",
    "elasticloadbalancing:ModifyTargetGroupAttributes",
    "elasticloadbalancing:RegisterInstancesWithLoadBalancer",
    "elasticloadbalancing:RegisterTargets",
    "elasticloadbalancing:SetLoadBalancerPoliciesForBackendServer",
    "elasticloadbalancing:SetLoadBalancerPoliciesOfListener",
    "kms:DescribeKey",
];

/// `03_cluster_security.yaml`: the master and worker security groups (from
/// the VPC: ICMP, SSH; masters also 6443 and 22623) and the rules between
/// them (etcd 2379-2380 and 10250-10259 on masters; VXLAN, Geneve, IPsec,
/// 9000-9999, 10250, NodePorts both ways), the IAM roles and instance
/// profiles. Outputs `MasterSecurityGroupId`, `WorkerSecurityGroupId`,
/// `MasterInstanceProfile`, `WorkerInstanceProfile`.
pub fn cluster_security() -> Template {
    let mut t = Template::new(
        "Template for OpenShift Cluster Security Elements (Security Groups & IAM) (okd-install, after openshift/installer upi/aws/cloudformation/03_cluster_security.yaml)",
    );
    infra_param(&mut t);
    t.param(
        "VpcCidr",
        param(
            "String",
            "CIDR block for VPC.",
            vec![
                ("AllowedPattern", s(CIDR_PATTERN)),
                (
                    "ConstraintDescription",
                    s("CIDR block parameter must be in the form x.x.x.x/16-24."),
                ),
                ("Default", s("10.0.0.0/16")),
            ],
        ),
    );
    t.param(
        "VpcId",
        param(
            "AWS::EC2::VPC::Id",
            "The VPC-scoped resources will belong to this VPC.",
            vec![],
        ),
    );
    t.res(
        "MasterSecurityGroup",
        resource(
            "AWS::EC2::SecurityGroup",
            map([
                ("GroupDescription", s("Cluster Master Security Group")),
                (
                    "SecurityGroupIngress",
                    list(vec![
                        cidr_rule("icmp", -1, -1),
                        cidr_rule("tcp", 22, 22),
                        cidr_rule("tcp", 6443, 6443),
                        cidr_rule("tcp", 22623, 22623),
                    ]),
                ),
                ("VpcId", r("VpcId")),
                ("Tags", list(vec![name_tag("-master-sg")])),
            ]),
            &[],
        ),
    );
    t.res(
        "WorkerSecurityGroup",
        resource(
            "AWS::EC2::SecurityGroup",
            map([
                ("GroupDescription", s("Cluster Worker Security Group")),
                (
                    "SecurityGroupIngress",
                    list(vec![cidr_rule("icmp", -1, -1), cidr_rule("tcp", 22, 22)]),
                ),
                ("VpcId", r("VpcId")),
                ("Tags", list(vec![name_tag("-worker-sg")])),
            ]),
            &[],
        ),
    );
    let g = [
        ("Master", "MasterSecurityGroup"),
        ("Worker", "WorkerSecurityGroup"),
    ];
    t.res(
        "MasterIngressEtcd",
        ingress(
            "MasterSecurityGroup",
            "MasterSecurityGroup",
            &Rule {
                name: "Etcd",
                protocol: "tcp",
                from: 2379,
                to: 2380,
                description: "etcd",
            },
        ),
    );
    for rule in BOTH_WAYS {
        for (to_name, to_group) in g {
            for (from_name, from_group) in g {
                let from_part = if from_name == to_name {
                    String::new()
                } else {
                    format!("From{from_name}")
                };
                t.res(
                    format!("{to_name}Ingress{from_part}{}", rule.name),
                    ingress(to_group, from_group, rule),
                );
            }
        }
    }
    let kube_masters = Rule {
        name: "Kube",
        protocol: "tcp",
        from: 10250,
        to: 10259,
        description: "Kubernetes kubelet, scheduler and controller manager",
    };
    let kubelet = Rule {
        name: "Kube",
        protocol: "tcp",
        from: 10250,
        to: 10250,
        description: "Kubernetes secure kubelet port",
    };
    t.res(
        "MasterIngressKube",
        ingress("MasterSecurityGroup", "MasterSecurityGroup", &kube_masters),
    );
    t.res(
        "MasterIngressWorkerKube",
        ingress("MasterSecurityGroup", "WorkerSecurityGroup", &kube_masters),
    );
    t.res(
        "WorkerIngressKube",
        ingress("WorkerSecurityGroup", "WorkerSecurityGroup", &kubelet),
    );
    t.res(
        "WorkerIngressWorkerKube",
        ingress("WorkerSecurityGroup", "MasterSecurityGroup", &kubelet),
    );
    t.res(
        "MasterIamRole",
        role("ec2.amazonaws.com", "master", MASTER_ACTIONS),
    );
    t.res(
        "MasterInstanceProfile",
        resource(
            "AWS::IAM::InstanceProfile",
            map([("Roles", list(vec![r("MasterIamRole")]))]),
            &[],
        ),
    );
    t.res(
        "WorkerIamRole",
        role(
            "ec2.amazonaws.com",
            "worker",
            &["ec2:DescribeInstances", "ec2:DescribeRegions"],
        ),
    );
    t.res(
        "WorkerInstanceProfile",
        resource(
            "AWS::IAM::InstanceProfile",
            map([("Roles", list(vec![r("WorkerIamRole")]))]),
            &[],
        ),
    );
    t.out(
        "MasterSecurityGroupId",
        output(
            "Master Security Group ID",
            get_att("MasterSecurityGroup", "GroupId"),
        ),
    );
    t.out(
        "WorkerSecurityGroupId",
        output(
            "Worker Security Group ID",
            get_att("WorkerSecurityGroup", "GroupId"),
        ),
    );
    t.out(
        "MasterInstanceProfile",
        output("Master IAM Instance Profile", r("MasterInstanceProfile")),
    );
    t.out(
        "WorkerInstanceProfile",
        output("Worker IAM Instance Profile", r("WorkerInstanceProfile")),
    );
    t
}

/// The bootstrap's user data: a pointer config in `spec` that replaces
/// itself with the config at `${BootstrapIgnitionLocation}` (an `s3://`
/// URL Ignition fetches with the instance role), as `Fn::Sub` text.
pub fn bootstrap_user_data(spec: IgnitionSpec) -> String {
    let mut c = Config::new(spec);
    c.ignition.config.replace = Some(Resource {
        source: Some("${BootstrapIgnitionLocation}".into()),
        ..Default::default()
    });
    c.to_json()
}

/// A master's or worker's user data: the install's pointer config
/// (`master.ign`, `worker.ign`) with `${IgnitionLocation}` and
/// `${CertificateAuthorities}`, as `Fn::Sub` text.
pub fn node_user_data(spec: IgnitionSpec) -> String {
    let mut c = Config::new(spec);
    c.ignition.config.merge.push(Resource {
        source: Some("${IgnitionLocation}".into()),
        ..Default::default()
    });
    c.ignition
        .security
        .tls
        .certificate_authorities
        .push(Resource {
            source: Some("${CertificateAuthorities}".into()),
            ..Default::default()
        });
    c.to_json()
}

fn ami_param(t: &mut Template) {
    t.param(
        "RhcosAmi",
        param(
            "AWS::EC2::Image::Id",
            "Current CoreOS AMI to use for the nodes.",
            vec![],
        ),
    );
}

fn instance_type(t: &mut Template, name: &str, default: &str) {
    t.param(
        name,
        param(
            "String",
            "The instance type.",
            vec![("Default", s(default))],
        ),
    );
}

/// `04_cluster_bootstrap.yaml`: the bootstrap instance in a public subnet
/// with its role (`s3:GetObject` on the bucket of its Ignition config
/// only), instance profile and security group (SSH and the journal
/// gateway's 19531 from `AllowedBootstrapSshCidr`). User data:
/// [`bootstrap_user_data`]. Outputs `BootstrapInstanceId`,
/// `BootstrapPublicIp`, `BootstrapPrivateIp`.
pub fn cluster_bootstrap(shape: &Shape) -> Template {
    let mut t = Template::new(
        "Template for OpenShift Cluster Bootstrap (EC2 Instance, Security Groups and IAM) (okd-install, after openshift/installer upi/aws/cloudformation/04_cluster_bootstrap.yaml)",
    );
    infra_param(&mut t);
    ami_param(&mut t);
    t.param(
        "AllowedBootstrapSshCidr",
        param(
            "String",
            "CIDR block to allow SSH access to the bootstrap node (and its journal gateway on 19531, which gather bootstrap reads).",
            vec![
                ("AllowedPattern", s(CIDR_PATTERN)),
                (
                    "ConstraintDescription",
                    s("CIDR block parameter must be in the form x.x.x.x/0-32."),
                ),
                ("Default", s("0.0.0.0/0")),
            ],
        ),
    );
    t.param(
        "PublicSubnet",
        param(
            "AWS::EC2::Subnet::Id",
            "The public subnet to launch the bootstrap node into.",
            vec![],
        ),
    );
    t.param(
        "MasterSecurityGroupId",
        param(
            "AWS::EC2::SecurityGroup::Id",
            "The master security group ID for registering temporary rules.",
            vec![],
        ),
    );
    t.param(
        "VpcId",
        param(
            "AWS::EC2::VPC::Id",
            "The VPC-scoped resources will belong to this VPC.",
            vec![],
        ),
    );
    t.param(
        "BootstrapIgnitionLocation",
        param(
            "String",
            "Ignition config file location (s3://<bucket>/<key>).",
            vec![(
                "AllowedPattern",
                s("^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]/.+$"),
            )],
        ),
    );
    instance_type(&mut t, "BootstrapInstanceType", "i3.large");
    t.res(
        "BootstrapIamRole",
        resource(
            "AWS::IAM::Role",
            map([
                (
                    "AssumeRolePolicyDocument",
                    map([
                        ("Version", s("2012-10-17")),
                        (
                            "Statement",
                            list(vec![map([
                                ("Effect", s("Allow")),
                                ("Principal", map([("Service", list(vec![s("ec2.amazonaws.com")]))])),
                                ("Action", list(vec![s("sts:AssumeRole")])),
                            ])]),
                        ),
                    ]),
                ),
                ("Path", s("/")),
                (
                    "Policies",
                    list(vec![map([
                        ("PolicyName", sub("${InfrastructureName}-bootstrap-policy")),
                        (
                            "PolicyDocument",
                            map([
                                ("Version", s("2012-10-17")),
                                (
                                    "Statement",
                                    list(vec![
                                        map([
                                            ("Effect", s("Allow")),
                                            (
                                                "Action",
                                                list(vec![
                                                    s("ec2:Describe*"),
                                                    s("ec2:AttachVolume"),
                                                    s("ec2:DetachVolume"),
                                                ]),
                                            ),
                                            ("Resource", s("*")),
                                        ]),
                                        map([
                                            ("Effect", s("Allow")),
                                            ("Action", list(vec![s("s3:GetObject")])),
                                            (
                                                "Resource",
                                                map([(
                                                    "Fn::Sub",
                                                    list(vec![
                                                        s("arn:${AWS::Partition}:s3:::${Bucket}/*"),
                                                        map([(
                                                            "Bucket",
                                                            select(
                                                                2,
                                                                map([(
                                                                    "Fn::Split",
                                                                    list(vec![
                                                                        s("/"),
                                                                        r("BootstrapIgnitionLocation"),
                                                                    ]),
                                                                )]),
                                                            ),
                                                        )]),
                                                    ]),
                                                )]),
                                            ),
                                        ]),
                                    ]),
                                ),
                            ]),
                        ),
                    ])]),
                ),
            ]),
            &[],
        ),
    );
    t.res(
        "BootstrapInstanceProfile",
        resource(
            "AWS::IAM::InstanceProfile",
            map([
                ("Path", s("/")),
                ("Roles", list(vec![r("BootstrapIamRole")])),
            ]),
            &[],
        ),
    );
    t.res(
        "BootstrapSecurityGroup",
        resource(
            "AWS::EC2::SecurityGroup",
            map([
                ("GroupDescription", s("Cluster Bootstrap Security Group")),
                (
                    "SecurityGroupIngress",
                    list(vec![
                        map([
                            ("IpProtocol", s("tcp")),
                            ("FromPort", n(22)),
                            ("ToPort", n(22)),
                            ("CidrIp", r("AllowedBootstrapSshCidr")),
                        ]),
                        map([
                            ("IpProtocol", s("tcp")),
                            ("FromPort", n(19531)),
                            ("ToPort", n(19531)),
                            ("CidrIp", r("AllowedBootstrapSshCidr")),
                        ]),
                    ]),
                ),
                ("VpcId", r("VpcId")),
                ("Tags", list(vec![name_tag("-bootstrap-sg")])),
            ]),
            &[],
        ),
    );
    t.res(
        "BootstrapInstance",
        resource(
            "AWS::EC2::Instance",
            map([
                ("ImageId", r("RhcosAmi")),
                ("IamInstanceProfile", r("BootstrapInstanceProfile")),
                ("InstanceType", r("BootstrapInstanceType")),
                (
                    "NetworkInterfaces",
                    list(vec![map([
                        ("AssociatePublicIpAddress", s("true")),
                        ("DeviceIndex", s("0")),
                        (
                            "GroupSet",
                            list(vec![
                                r("BootstrapSecurityGroup"),
                                r("MasterSecurityGroupId"),
                            ]),
                        ),
                        ("SubnetId", r("PublicSubnet")),
                    ])]),
                ),
                ("UserData", base64(sub(&bootstrap_user_data(shape.spec)))),
                (
                    "Tags",
                    list(vec![name_tag("-bootstrap"), cluster_tag("owned")]),
                ),
            ]),
            &[],
        ),
    );
    t.out(
        "BootstrapInstanceId",
        output("Bootstrap Instance ID.", r("BootstrapInstance")),
    );
    t.out(
        "BootstrapPublicIp",
        output(
            "The bootstrap node public IP address.",
            get_att("BootstrapInstance", "PublicIp"),
        ),
    );
    t.out(
        "BootstrapPrivateIp",
        output(
            "The bootstrap node private IP address.",
            get_att("BootstrapInstance", "PrivateIp"),
        ),
    );
    t
}

fn node_params(t: &mut Template, pool: &str) {
    t.param(
        &format!("{pool}SecurityGroupId"),
        param(
            "AWS::EC2::SecurityGroup::Id",
            &format!("The {} security group ID.", pool.to_lowercase()),
            vec![],
        ),
    );
    t.param(
        "IgnitionLocation",
        param(
            "String",
            "Ignition config file location (the machine-config server's pool URL).",
            vec![(
                "Default",
                s(format!(
                    "https://api-int.$CLUSTER_NAME.$DOMAIN:22623/config/{}",
                    pool.to_lowercase()
                )),
            )],
        ),
    );
    t.param(
        "CertificateAuthorities",
        param(
            "String",
            "Base64 encoded certificate authority string to use (a data: URL of the root CA from the pointer config).",
            vec![("Default", s("data:text/plain;charset=utf-8;base64,ABC...xYz=="))],
        ),
    );
    t.param(
        &format!("{pool}InstanceProfileName"),
        param(
            "String",
            &format!(
                "IAM profile to associate with {} nodes.",
                pool.to_lowercase()
            ),
            vec![],
        ),
    );
}

fn node_instance(pool: &str, subnet: &str, spec: IgnitionSpec, name: &str) -> Value {
    resource(
        "AWS::EC2::Instance",
        map([
            ("ImageId", r("RhcosAmi")),
            (
                "BlockDeviceMappings",
                list(vec![map([
                    ("DeviceName", s("/dev/xvda")),
                    (
                        "Ebs",
                        map([("VolumeSize", s("120")), ("VolumeType", s("gp3"))]),
                    ),
                ])]),
            ),
            (
                "IamInstanceProfile",
                r(&format!("{pool}InstanceProfileName")),
            ),
            ("InstanceType", r(&format!("{pool}InstanceType"))),
            (
                "NetworkInterfaces",
                list(vec![map([
                    ("AssociatePublicIpAddress", s("false")),
                    ("DeviceIndex", s("0")),
                    ("GroupSet", list(vec![r(&format!("{pool}SecurityGroupId"))])),
                    ("SubnetId", r(subnet)),
                ])]),
            ),
            ("UserData", base64(sub(&node_user_data(spec)))),
            (
                "Tags",
                list(vec![name_tag(&format!("-{name}")), cluster_tag("shared")]),
            ),
        ]),
        &[],
    )
}

/// `05_cluster_master_nodes.yaml`: `shape.masters` instances (`Master0`…),
/// each in its own subnet parameter (`Master0Subnet`…), 120 GB root, the
/// pointer config as user data ([`node_user_data`]). Output `PrivateIPs`
/// (comma-joined).
pub fn cluster_masters(shape: &Shape) -> Template {
    let mut t = Template::new(
        "Template for OpenShift Cluster Node Launch (EC2 master instances) (okd-install, after openshift/installer upi/aws/cloudformation/05_cluster_master_nodes.yaml)",
    );
    infra_param(&mut t);
    ami_param(&mut t);
    for i in 0..shape.masters {
        t.param(
            &format!("Master{i}Subnet"),
            param(
                "AWS::EC2::Subnet::Id",
                &format!("The subnet, private, for master {i}."),
                vec![],
            ),
        );
    }
    node_params(&mut t, "Master");
    instance_type(&mut t, "MasterInstanceType", "m5.xlarge");
    for i in 0..shape.masters {
        t.res(
            format!("Master{i}"),
            node_instance(
                "Master",
                &format!("Master{i}Subnet"),
                shape.spec,
                &format!("master-{i}"),
            ),
        );
    }
    t.out(
        "PrivateIPs",
        output(
            "The control-plane node private IP addresses.",
            join(
                ",",
                (0..shape.masters)
                    .map(|i| get_att(&format!("Master{i}"), "PrivateIp"))
                    .collect(),
            ),
        ),
    );
    t
}

/// `06_cluster_worker_node.yaml`: one worker instance (`Worker0`) in
/// `Subnet`, made once per worker stack. Output `PrivateIP`.
pub fn cluster_worker(shape: &Shape) -> Template {
    let mut t = Template::new(
        "Template for OpenShift Cluster Node Launch (EC2 worker instance) (okd-install, after openshift/installer upi/aws/cloudformation/06_cluster_worker_node.yaml)",
    );
    infra_param(&mut t);
    ami_param(&mut t);
    t.param(
        "Subnet",
        param(
            "AWS::EC2::Subnet::Id",
            "The subnet to launch the worker node into.",
            vec![],
        ),
    );
    node_params(&mut t, "Worker");
    instance_type(&mut t, "WorkerInstanceType", "m5.large");
    t.res(
        "Worker0",
        node_instance("Worker", "Subnet", shape.spec, "worker"),
    );
    t.out(
        "PrivateIP",
        output(
            "The compute node private IP address.",
            get_att("Worker0", "PrivateIp"),
        ),
    );
    t
}

/// The templates for `shape`, in the procedure's order (`01_vpc.yaml`
/// only when `with_vpc`), each with a header naming its source.
pub fn all(shape: &Shape, with_vpc: bool) -> Vec<TemplateFile> {
    let mut out = Vec::new();
    let header = |file: &str| {
        format!(
            "{file}, generated by okd-install for this install (see docs/differences.md).\nThe resources follow openshift/installer upi/aws/cloudformation/{file}."
        )
    };
    let mut push = |file: &'static str, t: Template| {
        out.push(TemplateFile {
            file,
            text: t.to_yaml(&header(file)),
            parameters: t.parameter_names(),
        });
    };
    if with_vpc {
        push("01_vpc.yaml", vpc(shape));
    }
    push("02_cluster_infra.yaml", cluster_infra(shape));
    push("03_cluster_security.yaml", cluster_security());
    push("04_cluster_bootstrap.yaml", cluster_bootstrap(shape));
    push("05_cluster_master_nodes.yaml", cluster_masters(shape));
    push("06_cluster_worker_node.yaml", cluster_worker(shape));
    out
}

/// Whether `net` is an IPv4 network (the templates' VPC is IPv4 only).
pub fn ipv4(net: IpNet) -> Option<Ipv4Net> {
    match net {
        IpNet::V4(v) => Some(v),
        IpNet::V6(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape() -> Shape {
        Shape {
            zones: 3,
            masters: 3,
            external: true,
            spec: IgnitionSpec::V3_2,
        }
    }

    #[test]
    fn subnets_as_upstreams_cidr_function_cuts_them() {
        let (public, private) = subnet_cidrs("10.0.0.0/16".parse().unwrap(), 3);
        assert_eq!(public, ["10.0.0.0/20", "10.0.16.0/20", "10.0.32.0/20"]);
        assert_eq!(private, ["10.0.48.0/20", "10.0.64.0/20", "10.0.80.0/20"]);
        let (public, private) = subnet_cidrs("192.168.10.0/24".parse().unwrap(), 1);
        assert_eq!(public, ["192.168.10.0/27"]);
        assert_eq!(private, ["192.168.10.96/27"]);
    }

    #[test]
    fn user_data_is_the_installs_pointer_config() {
        assert_eq!(
            bootstrap_user_data(IgnitionSpec::V3_1),
            r#"{"ignition":{"config":{"replace":{"source":"${BootstrapIgnitionLocation}"}},"version":"3.1.0"}}"#
        );
        let node = node_user_data(IgnitionSpec::V3_2);
        assert_eq!(
            node,
            r#"{"ignition":{"config":{"merge":[{"source":"${IgnitionLocation}"}]},"security":{"tls":{"certificateAuthorities":[{"source":"${CertificateAuthorities}"}]}},"version":"3.2.0"}}"#
        );
    }

    #[test]
    fn internal_publishing_has_no_external_load_balancer() {
        let mut sh = shape();
        sh.external = false;
        let y = cluster_infra(&sh).to_yaml("x");
        assert!(
            !y.contains("ExtApiElb") && !y.contains("HostedZoneId:\n    Type"),
            "{y}"
        );
        assert!(y.contains("IntApiElb"));
        let y = cluster_infra(&shape()).to_yaml("x");
        assert!(y.contains("ExtApiElb") && y.contains("ExternalApiTargetGroupArn"));
    }

    #[test]
    fn one_subnet_pair_and_nat_per_zone_and_one_instance_per_master() {
        let mut sh = shape();
        sh.zones = 2;
        sh.masters = 1;
        let v = vpc(&sh);
        let names: Vec<&str> = v.resources.iter().map(|(k, _)| k.as_str()).collect();
        for want in [
            "PublicSubnet",
            "PublicSubnet2",
            "PrivateSubnet2",
            "NAT2",
            "EIP2",
        ] {
            assert!(names.contains(&want), "{names:?}");
        }
        assert!(!names.contains(&"PublicSubnet3"));
        let m = cluster_masters(&sh);
        assert_eq!(m.resources.len(), 1);
        assert_eq!(
            m.parameter_names()
                .iter()
                .filter(|p| p.ends_with("Subnet"))
                .count(),
            1
        );
    }
}
