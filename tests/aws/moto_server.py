#!/usr/bin/env python3
"""moto_server for okd-install's AWS tests: moto 5.2.1 with its CloudFormation gaps patched.

Usage (same argv as moto_server):  python3 tests/aws/moto_server.py -H 127.0.0.1 -p PORT
Refuses to start (exit 2) unless moto 5.2.1 is installed, because every patch below
replaces or wraps moto internals of exactly that version.

Environment:
  OKD_MOTO_THROTTLE=N          first N CloudFormation requests answer 400 Throttling (default 0);
                               POST /okd-moto/throttle with body N sets it while running
  MOTO_ENABLE_AMI_VALIDATION   moto's own switch; unknown ImageId -> InvalidAMIID.NotFound

Patches (each: what it does -- the moto gap it closes):
 P1  ELBv2 LoadBalancer from CFN honours Type/Scheme/Subnets/SubnetMappings/IpAddressType/
     LoadBalancerAttributes/Tags -- moto always made an "application" LB, so TCP listeners were rejected.
 P2  ELBv2 network LBs get a loadbalancer/net/ ARN, an NLB-style DNSName and the NLB canonical
     hosted zone id (also via the API) -- moto used app/ ARNs and the fake zone Z2P70J7EXAMPLE.
 P3  ELBv2 GetAtt CanonicalHostedZoneID/LoadBalancerFullName/SecurityGroups, TargetGroup
     GetAtt TargetGroupArn/Name/FullName/LoadBalancerArns, Listener GetAtt ListenerArn -- not implemented.
 P4  ELBv2 TargetGroup from CFN passes HealthCheckEnabled/ProtocolVersion/IpAddressType/Tags/Targets
     and applies TargetGroupAttributes -- moto dropped them.
 P5  EC2 Instance from CFN honours NetworkInterfaces (DeviceIndex 0: SubnetId, GroupSet,
     AssociatePublicIpAddress, PrivateIpAddress, DeleteOnTermination) and top-level SubnetId +
     SecurityGroupIds; public IP only when asked (or the subnet maps one); UserData, root volume,
     AvailabilityZone -- moto ignored NetworkInterfaces/SecurityGroupIds and made a classic instance.
 P6  Route53 HostedZone from CFN honours Name/VPCs/HostedZoneConfig/HostedZoneTags (private zone
     associated with the VPCs, tags stored) and GetAtt Id/NameServers -- moto made a public zone, no tags.
 P7  Route53 RecordSetGroup/RecordSet from CFN write through ChangeResourceRecordSets (so API
     reads/deletes see them, alias targets kept) and remember what they wrote -- moto wrote raw rrsets.
 P8  EC2 SecurityGroup/SecurityGroupIngress from CFN: ports default to -1 for non tcp/udp protocols
     (e.g. "50"), CidrIpv6/SourcePrefixListId/Description/SecurityGroupEgress, Ref = rule id -- moto
     raised on missing ports and its Ingress Ref was a Python object repr.
 P9  EC2 SubnetRouteTableAssociation from CFN really associates (Ref = rtbassoc-...), Subnet
     MapPublicIpOnLaunch, VPC EnableDnsSupport/EnableDnsHostnames, VPCEndpoint dict PolicyDocument,
     Tags on NAT/EIP/IGW/RouteTable -- moto ignored them.
 P10 IAM Role from CFN stores inline policies as JSON text and attaches ManagedPolicyArns -- moto
     stored dicts and ignored ManagedPolicyArns.
 P11 Intrinsics: Fn::GetAtt also in "Res.Attr" string form, unsupported GetAtt fails instead of
     leaking a dict, AWS::NoValue removed from lists -- moto kept None items and silently passed
     unresolved GetAtt through.
 P12 CreateStack validates like AWS before creating anything (unrecognized resource types,
     unresolved Ref/GetAtt/Sub/DependsOn targets, circular dependencies -> ValidationError).
 P13 CreateStack creates resources in real dependency order (Ref, GetAtt, Sub, DependsOn) with
     per-resource CREATE_IN_PROGRESS/CREATE_COMPLETE events carrying PhysicalResourceId -- moto only
     honoured DependsOn and logged stack-level events only.
 P14 Creation failure like AWS: CreateStack still returns the StackId, the failed resource gets a
     CREATE_FAILED event (reason = error message), created resources are deleted in reverse order,
     the stack ends ROLLBACK_COMPLETE (OnFailure=DELETE -> DELETE_COMPLETE, DO_NOTHING/DisableRollback
     -> CREATE_FAILED) with StackStatusReason naming the resource and message -- moto returned the
     error from CreateStack and left a stuck CREATE_IN_PROGRESS stack that made DescribeStacks 500.
 P15 Outputs/exports are computed once after a successful create and never re-evaluated, and the
     resource map is frozen afterwards -- moto re-evaluated outputs lazily, re-creating deleted or
     failed resources (DescribeStacks 500, resources resurrected after delete).
 P16 DeleteStack deletes every resource the stack created in reverse dependency order with
     per-resource DELETE_* events, using explicit per-type deleters (routes, associations,
     IGW detach, NAT ENI/EIP release, endpoints, SG rules, IAM role/profile cleanup, listeners,
     TGs, LBs, record sets, zones, instances); stack ends DELETE_COMPLETE (visible by stack id)
     or DELETE_FAILED naming the resource -- moto raised DependencyViolation (RouteTable) and
     leaked IGWs, NATs, EIPs, SG rules, records.
 P17 Stack deletion of a VPC (IGW still attached), Subnet (ENIs in it) or SecurityGroup (used by
     an ENI or referenced by another group's rule) fails like AWS (-> DELETE_FAILED) -- moto
     deleted them regardless and leaked the dependants.
 P18 WSGI middleware: OKD_MOTO_THROTTLE fault injection for CloudFormation actions (AWS Query
     XML Throttling error), counter at GET /okd-moto/throttled, and one lock serialising requests
     -- moto's threaded server mutates backends concurrently (stack polling during creates).
"""

import sys

REQUIRED_MOTO = "5.2.1"


def _moto_version():
    try:
        from importlib.metadata import version

        return version("moto")
    except Exception:
        try:
            import moto

            return getattr(moto, "__version__", "unknown")
        except Exception:
            return "not installed"


if _moto_version() != REQUIRED_MOTO:
    sys.stderr.write(
        f"tests/aws/moto_server.py: moto {REQUIRED_MOTO} required, found {_moto_version()}; "
        "the patches target that exact version. Install it with: pip install 'moto[server]==5.2.1'\n"
    )
    sys.exit(2)

import copy  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import re  # noqa: E402
import threading  # noqa: E402
import uuid  # noqa: E402
from collections import OrderedDict  # noqa: E402
from urllib.parse import parse_qs  # noqa: E402

import moto.server as moto_server_mod  # noqa: E402
from moto.cloudformation import models as cfn_models  # noqa: E402
from moto.cloudformation import parsing  # noqa: E402
from moto.cloudformation import responses as cfn_responses  # noqa: E402
from moto.cloudformation.exceptions import (  # noqa: E402
    AlreadyExistsException,
    UnformattedGetAttTemplateException,
    ValidationError,
)
from moto.cloudformation.utils import generate_stack_id  # noqa: E402
from moto.core.exceptions import ServiceException  # noqa: E402
from moto.core.utils import utcnow  # noqa: E402
from moto.ec2.exceptions import DependencyViolationError  # noqa: E402
from moto.ec2.models import ec2_backends  # noqa: E402
from moto.ec2.models.core import TaggedEC2Resource  # noqa: E402
from moto.ec2.models.elastic_ip_addresses import ElasticAddress  # noqa: E402
from moto.ec2.models.instances import Instance  # noqa: E402
from moto.ec2.models.internet_gateways import InternetGateway  # noqa: E402
from moto.ec2.models.nat_gateways import NatGateway  # noqa: E402
from moto.ec2.models.route_tables import RouteTable  # noqa: E402
from moto.ec2.models.security_groups import SecurityGroup, SecurityGroupIngress  # noqa: E402
from moto.ec2.models.subnets import Subnet, SubnetRouteTableAssociation  # noqa: E402
from moto.ec2.models.vpcs import VPC, VPCEndPoint  # noqa: E402
from moto.ec2.utils import parse_user_data  # noqa: E402
from moto.elbv2 import models as elbv2_models  # noqa: E402
from moto.elbv2.models import elbv2_backends  # noqa: E402
from moto.iam import models as iam_models  # noqa: E402
from moto.iam.models import iam_backends  # noqa: E402
from moto.route53 import models as r53_models  # noqa: E402
from moto.route53.models import route53_backends  # noqa: E402
from moto.utilities.utils import get_partition  # noqa: E402

PSEUDO_PARAMS = {
    "AWS::AccountId",
    "AWS::Region",
    "AWS::StackId",
    "AWS::StackName",
    "AWS::URLSuffix",
    "AWS::NoValue",
    "AWS::Partition",
    "AWS::NotificationARNs",
}

# Canonical hosted zone ids of network load balancers (Route53 alias targets), per region.
NLB_ZONE_IDS = {
    "us-east-1": "Z26RNL4JYFTOTI",
    "us-east-2": "ZLMOA37VPKANP",
    "us-west-1": "Z24FKFUX50B4VW",
    "us-west-2": "Z18D5FSROUN65G",
    "eu-west-1": "Z2IFOLAFXWLO4F",
    "eu-central-1": "Z3F0SRJ5LGBH90",
}


def _bool(value):
    """CloudFormation booleans arrive as True/False or "true"/"false"; None stays None."""
    if value is None:
        return None
    if isinstance(value, bool):
        return value
    return str(value).strip().lower() == "true"


def _int(value, default=None):
    if value is None or value == "":
        return default
    return int(value)


def _tags_list(tags):
    return [{"Key": t["Key"], "Value": t["Value"]} for t in (tags or [])]


def _error_parts(exc):
    """(code, message) of any exception a moto backend may raise."""
    if isinstance(exc, ServiceException):
        return exc.code, exc.message
    if hasattr(exc, "error_type") and hasattr(exc, "message"):
        return exc.error_type, exc.message
    message = str(exc) or repr(exc)
    return type(exc).__name__, message


# ---------------------------------------------------------------------------------------------
# P11 intrinsic functions
# ---------------------------------------------------------------------------------------------
_orig_clean_json = parsing.clean_json


def _getatt(spec, resources_map):
    if isinstance(spec, str):
        if "." not in spec:
            raise ValidationError(message=f"Template error: Fn::GetAtt {spec!r} must be 'Resource.Attribute'")
        name, attr = spec.split(".", 1)
    else:
        name = spec[0]
        attr = _clean_json(spec[1], resources_map)
    resource = resources_map.get(name)
    if resource is None:
        raise ValidationError(
            message=f"Template error: instance of Fn::GetAtt references undefined resource {name}"
        )
    try:
        value = resource.get_cfn_attribute(attr)
    except (NotImplementedError, UnformattedGetAttTemplateException, AttributeError):
        raise ValidationError(
            message=f"Template error: resource {name} does not support attribute type {attr} in Fn::GetAtt"
        )
    return value


def _clean_json(resource_json, resources_map):
    if isinstance(resource_json, dict) and len(resource_json) == 1 and "Fn::GetAtt" in resource_json:
        return _getatt(resource_json["Fn::GetAtt"], resources_map)
    if isinstance(resource_json, list):
        cleaned = [_clean_json(item, resources_map) for item in resource_json]
        return [item for item in cleaned if item is not None]
    return _orig_clean_json(resource_json, resources_map)


parsing.clean_json = _clean_json


# ---------------------------------------------------------------------------------------------
# Template analysis (P12/P13)
# ---------------------------------------------------------------------------------------------
_SUB_VAR = re.compile(r"\$\{([^}!][^}]*)\}")


def _collect_refs(node, out):
    """Adds (kind, name) for every Ref/GetAtt/Sub reference found in node."""
    if isinstance(node, dict):
        if len(node) == 1:
            key, value = next(iter(node.items()))
            if key == "Ref" and isinstance(value, str):
                out.add(("Ref", value))
                return
            if key == "Fn::GetAtt":
                if isinstance(value, str):
                    out.add(("GetAtt", value.split(".", 1)[0]))
                elif isinstance(value, list) and value:
                    out.add(("GetAtt", value[0]))
                    for item in value[1:]:
                        _collect_refs(item, out)
                return
            if key == "Fn::Sub":
                if isinstance(value, str):
                    template, variables = value, {}
                else:
                    template, variables = value[0], (value[1] if len(value) > 1 else {})
                    _collect_refs(variables, out)
                if isinstance(template, str):
                    for var in _SUB_VAR.findall(template):
                        var = var.strip()
                        if var in variables:
                            continue
                        if "." in var and not var.startswith("AWS::"):
                            out.add(("GetAtt", var.split(".", 1)[0]))
                        else:
                            out.add(("Ref", var))
                return
        for value in node.values():
            _collect_refs(value, out)
    elif isinstance(node, list):
        for item in node:
            _collect_refs(item, out)


def _analyse_template(template):
    """Returns (resource ids in dependency order, {id: set(direct deps)}); raises ValidationError."""
    resources = template.get("Resources") or {}
    params = set((template.get("Parameters") or {}).keys())
    unresolved = []
    deps = {}
    for lid, rjson in resources.items():
        refs = set()
        _collect_refs(rjson.get("Properties", {}), refs)
        _collect_refs(rjson.get("Metadata", {}), refs)
        mine = set()
        for kind, name in refs:
            if name in resources:
                mine.add(name)
            elif kind == "Ref" and (name in params or name in PSEUDO_PARAMS):
                continue
            else:
                unresolved.append(name)
        depends_on = rjson.get("DependsOn") or []
        if isinstance(depends_on, str):
            depends_on = [depends_on]
        for name in depends_on:
            if name in resources:
                mine.add(name)
            else:
                unresolved.append(name)
        mine.discard(lid)
        deps[lid] = mine
    if unresolved:
        names = ", ".join(sorted(set(unresolved)))
        raise ValidationError(
            message=f"Template format error: Unresolved resource dependencies [{names}] in the Resources block of the template"
        )
    out_refs = set()
    _collect_refs(template.get("Outputs") or {}, out_refs)
    bad = sorted(
        {n for k, n in out_refs if n not in resources and not (k == "Ref" and (n in params or n in PSEUDO_PARAMS))}
    )
    if bad:
        raise ValidationError(
            message=f"Template format error: Unresolved resource dependencies [{', '.join(bad)}] in the Outputs block of the template"
        )

    index = {lid: i for i, lid in enumerate(resources)}
    order, state = [], {}

    def visit(lid, path):
        if state.get(lid) == 2:
            return
        if state.get(lid) == 1:
            cycle = path[path.index(lid):]
            raise ValidationError(
                message=f"Circular dependency between resources: [{', '.join(sorted(set(cycle)))}]"
            )
        state[lid] = 1
        for dep in sorted(deps[lid], key=index.get):
            visit(dep, path + [dep])
        state[lid] = 2
        order.append(lid)

    for lid in resources:
        visit(lid, [lid])
    return order, deps


def _validate_types(template):
    bad = []
    for rjson in (template.get("Resources") or {}).values():
        rtype = rjson.get("Type")
        if not rtype:
            raise ValidationError(message="Template format error: [/Resources] Every Resources object must contain a Type member.")
        if rtype in parsing.NULL_MODELS or rtype.startswith("Custom::"):
            continue
        if rtype not in parsing.get_model_map():
            bad.append(rtype)
    if bad:
        raise ValidationError(
            message=f"Template format error: Unrecognized resource types: [{', '.join(sorted(set(bad)))}]"
        )


# ---------------------------------------------------------------------------------------------
# P1-P4 ELBv2
# ---------------------------------------------------------------------------------------------
_orig_create_lb = elbv2_models.ELBv2Backend.create_load_balancer


def _create_load_balancer(self, name, security_groups, subnet_ids, *args, **kwargs):
    lb = _orig_create_lb(self, name, security_groups, subnet_ids, *args, **kwargs)
    if lb.type == "network":
        old_arn = lb.arn
        new_arn = old_arn.replace(":loadbalancer/app/", ":loadbalancer/net/")
        if new_arn != old_arn:
            self.load_balancers = OrderedDict(
                (new_arn if k == old_arn else k, v) for k, v in self.load_balancers.items()
            )
            if self.tagging_service.has_tags(old_arn):
                self.tagging_service.copy_tags(old_arn, new_arn)
                self.tagging_service.delete_all_tags_for_resource(old_arn)
            lb.arn = new_arn
        lb_id = new_arn.rsplit("/", 1)[-1]
        lb.dns_name = f"{name}-{lb_id}.elb.{self.region_name}.amazonaws.com"
        lb.canonical_hosted_zone_id = NLB_ZONE_IDS.get(self.region_name, lb.canonical_hosted_zone_id)
    return lb


elbv2_models.ELBv2Backend.create_load_balancer = _create_load_balancer


def _lb_create_cfn(cls, resource_name, cloudformation_json, account_id, region_name, **kwargs):
    props = cloudformation_json["Properties"]
    backend = elbv2_backends[account_id][region_name]
    lb = backend.create_load_balancer(
        resource_name,
        props.get("SecurityGroups") or [],
        props.get("Subnets") or [],
        subnet_mappings=props.get("SubnetMappings") or [],
        scheme=props.get("Scheme", "internet-facing"),
        loadbalancer_type=props.get("Type", "application"),
        ip_address_type=props.get("IpAddressType", "ipv4"),
        tags=_tags_list(props.get("Tags")) or None,
    )
    attrs = props.get("LoadBalancerAttributes")
    if attrs:
        backend.modify_load_balancer_attributes(lb.arn, {a["Key"]: str(a["Value"]) for a in attrs})
    return lb


elbv2_models.FakeLoadBalancer.create_from_cloudformation_json = classmethod(_lb_create_cfn)

_LB_ATTRS = {
    "DNSName": lambda lb: lb.dns_name,
    "LoadBalancerName": lambda lb: lb.name,
    "CanonicalHostedZoneID": lambda lb: lb.canonical_hosted_zone_id,
    "LoadBalancerFullName": lambda lb: lb.arn.split(":loadbalancer/", 1)[1],
    "SecurityGroups": lambda lb: list(lb.security_groups or []),
    "LoadBalancerArn": lambda lb: lb.arn,
}
_TG_ATTRS = {
    "TargetGroupArn": lambda tg: tg.arn,
    "TargetGroupName": lambda tg: tg.name,
    "TargetGroupFullName": lambda tg: tg.arn.split(":")[-1],
    "LoadBalancerArns": lambda tg: list(tg.load_balancer_arns),
}
_LISTENER_ATTRS = {"ListenerArn": lambda listener: listener.arn}


def _tg_create_cfn(cls, resource_name, cloudformation_json, account_id, region_name, **kwargs):
    props = cloudformation_json["Properties"]
    backend = elbv2_backends[account_id][region_name]
    hc_enabled = props.get("HealthCheckEnabled")
    tg = backend.create_target_group(
        name=resource_name,
        vpc_id=props.get("VpcId"),
        protocol=props.get("Protocol"),
        protocol_version=props.get("ProtocolVersion"),
        port=_int(props.get("Port")),
        healthcheck_protocol=props.get("HealthCheckProtocol"),
        healthcheck_port=str(props["HealthCheckPort"]) if props.get("HealthCheckPort") is not None else None,
        healthcheck_path=props.get("HealthCheckPath"),
        healthcheck_interval_seconds=_int(props.get("HealthCheckIntervalSeconds")),
        healthcheck_timeout_seconds=_int(props.get("HealthCheckTimeoutSeconds")),
        healthcheck_enabled=None if hc_enabled is None else str(_bool(hc_enabled)).lower(),
        healthy_threshold_count=_int(props.get("HealthyThresholdCount")),
        unhealthy_threshold_count=_int(props.get("UnhealthyThresholdCount")),
        matcher=props.get("Matcher"),
        target_type=props.get("TargetType", "instance"),
        ip_address_type=props.get("IpAddressType"),
        tags=_tags_list(props.get("Tags")) or None,
    )
    attrs = props.get("TargetGroupAttributes")
    if attrs:
        backend.modify_target_group_attributes(tg.arn, {a["Key"]: str(a["Value"]) for a in attrs})
    targets = props.get("Targets")
    if targets:
        tg.register([{"Id": t["Id"], "Port": _int(t.get("Port"), tg.port)} for t in targets])
    return tg


elbv2_models.FakeTargetGroup.create_from_cloudformation_json = classmethod(_tg_create_cfn)


# ---------------------------------------------------------------------------------------------
# GetAtt extensions (P3 and friends): extra attributes layered over moto's own get_cfn_attribute
# ---------------------------------------------------------------------------------------------
def _extend_getatt(model, extra):
    orig_get = getattr(model, "get_cfn_attribute", None)
    orig_has = model.has_cfn_attr.__func__

    def get_cfn_attribute(self, attribute_name):
        if attribute_name in extra:
            return extra[attribute_name](self)
        if orig_get is None:
            raise UnformattedGetAttTemplateException()
        return orig_get(self, attribute_name)

    def has_cfn_attr(cls, attr):
        return attr in extra or orig_has(cls, attr)

    model.get_cfn_attribute = get_cfn_attribute
    model.has_cfn_attr = classmethod(has_cfn_attr)


def _subnet_vpc(subnet):
    return subnet.vpc_id


_extend_getatt(elbv2_models.FakeLoadBalancer, _LB_ATTRS)
_extend_getatt(elbv2_models.FakeTargetGroup, _TG_ATTRS)
_extend_getatt(elbv2_models.FakeListener, _LISTENER_ATTRS)
_extend_getatt(
    Subnet,
    {
        "AvailabilityZone": lambda s: s.availability_zone,
        "VpcId": _subnet_vpc,
        "CidrBlock": lambda s: s.cidr_block,
        "SubnetId": lambda s: s.id,
    },
)
_extend_getatt(SecurityGroup, {"GroupId": lambda g: g.id, "VpcId": lambda g: g.vpc_id})
_extend_getatt(
    Instance,
    {
        "InstanceId": lambda i: i.id,
        "AvailabilityZone": lambda i: i._placement.zone,
        "PrivateIp": lambda i: i.private_ip,
        "PublicIp": lambda i: i.public_ip or "",
        "PrivateDnsName": lambda i: i.private_dns_name,
        "PublicDnsName": lambda i: i.public_dns_name or "",
    },
)
_extend_getatt(ElasticAddress, {"AllocationId": lambda e: e.allocation_id, "PublicIp": lambda e: e.public_ip})
_extend_getatt(NatGateway, {"NatGatewayId": lambda n: n.id})
_extend_getatt(InternetGateway, {"InternetGatewayId": lambda g: g.id})
_extend_getatt(RouteTable, {"RouteTableId": lambda r: r.id})
_extend_getatt(VPCEndPoint, {"Id": lambda e: e.id})
_extend_getatt(
    r53_models.FakeZone,
    {
        "Id": lambda z: z.resource_id,
        "NameServers": lambda z: [] if z.private_zone else list(z.delegation_set.name_servers if z.delegation_set else []),
    },
)
_extend_getatt(iam_models.Role, {"Arn": lambda r: r.arn, "RoleId": lambda r: r.id})
_extend_getatt(iam_models.InstanceProfile, {"Arn": lambda p: p.arn})


# ---------------------------------------------------------------------------------------------
# P5 EC2 Instance
# ---------------------------------------------------------------------------------------------
def _instance_create_cfn(cls, resource_name, cloudformation_json, account_id, region_name, **kwargs):
    from moto.ec2.exceptions import InvalidParameterCombination

    props = cloudformation_json["Properties"]
    ec2 = ec2_backends[account_id][region_name]
    nic_props = props.get("NetworkInterfaces") or []
    subnet_id = props.get("SubnetId")
    sg_ids = list(props.get("SecurityGroupIds") or [])
    sg_names = list(props.get("SecurityGroups") or [])
    private_ip = props.get("PrivateIpAddress")
    associate_public_ip = None
    nics = []
    if nic_props:
        if subnet_id or sg_ids or sg_names:
            raise InvalidParameterCombination(
                "Network interfaces and an instance-level subnet ID or security groups may not be specified on the same request"
            )
        primary = [n for n in nic_props if _int(n.get("DeviceIndex"), 0) == 0]
        if not primary:
            raise InvalidParameterCombination("NetworkInterfaces must contain DeviceIndex 0")
        for nic in nic_props:
            index = _int(nic.get("DeviceIndex"), 0)
            spec = {"DeviceIndex": index}
            if nic.get("NetworkInterfaceId"):
                spec["NetworkInterfaceId"] = nic["NetworkInterfaceId"]
            if nic.get("Description"):
                spec["Description"] = nic["Description"]
            dot = _bool(nic.get("DeleteOnTermination"))
            spec["DeleteOnTermination"] = True if dot is None else dot
            if index == 0:
                subnet_id = nic.get("SubnetId")
                sg_ids = list(nic.get("GroupSet") or [])
                private_ip = nic.get("PrivateIpAddress") or private_ip
                associate_public_ip = _bool(nic.get("AssociatePublicIpAddress"))
                if subnet_id:
                    spec["SubnetId"] = subnet_id
                if associate_public_ip is not None:
                    spec["AssociatePublicIpAddress"] = associate_public_ip
            else:
                if nic.get("SubnetId"):
                    spec["SubnetId"] = nic["SubnetId"]
                if nic.get("GroupSet"):
                    spec["Groups"] = list(nic["GroupSet"])
                if nic.get("PrivateIpAddress"):
                    spec["PrivateIpAddress"] = nic["PrivateIpAddress"]
            nics.append(spec)
        nics.sort(key=lambda n: n["DeviceIndex"])
    elif subnet_id:
        nics = [{"DeviceIndex": 0, "SubnetId": subnet_id, "DeleteOnTermination": True}]

    run_kwargs = {
        "instance_type": props.get("InstanceType", "m1.small"),
        "is_instance_type_default": not props.get("InstanceType"),
        "subnet_id": subnet_id,
        "key_name": props.get("KeyName"),
        "private_ip": private_ip,
        "security_group_ids": sg_ids,
        "nics": nics,
        "associate_public_ip": associate_public_ip,
        "region_name": region_name,
        "disable_api_termination": _bool(props.get("DisableApiTermination")) or False,
    }
    if props.get("AvailabilityZone"):
        run_kwargs["placement"] = props["AvailabilityZone"]
    if props.get("BlockDeviceMappings"):
        run_kwargs["block_device_mappings"] = props["BlockDeviceMappings"]
    if props.get("Monitoring") is not None:
        run_kwargs["monitoring_state"] = "enabled" if _bool(props["Monitoring"]) else "disabled"
    user_data = props.get("UserData")
    reservation = ec2.run_instances(
        image_id=props.get("ImageId"),
        count=1,
        user_data=parse_user_data(user_data) if user_data is not None else None,
        security_group_names=sg_names,
        **run_kwargs,
    )
    instance = reservation.instances[0]
    for tag in props.get("Tags") or []:
        instance.add_tag(tag["Key"], tag["Value"])
    if props.get("IamInstanceProfile"):
        ec2.associate_iam_instance_profile(
            instance_id=instance.id, iam_instance_profile_name=props["IamInstanceProfile"]
        )
    return instance


Instance.create_from_cloudformation_json = classmethod(_instance_create_cfn)


# ---------------------------------------------------------------------------------------------
# P6/P7 Route53
# ---------------------------------------------------------------------------------------------
def _dotted(name):
    return name if name.endswith(".") else name + "."


def _zone_create_cfn(cls, resource_name, cloudformation_json, account_id, region_name, **kwargs):
    props = cloudformation_json["Properties"]
    backend = route53_backends[account_id][get_partition(region_name)]
    vpcs = props.get("VPCs") or []
    for vpc in vpcs:
        ec2_backends[account_id][vpc.get("VPCRegion") or region_name].get_vpc(vpc["VPCId"])
    comment = (props.get("HostedZoneConfig") or {}).get("Comment")
    zone = backend.create_hosted_zone(
        _dotted(props.get("Name") or resource_name),
        private_zone=bool(vpcs),
        vpcid=vpcs[0]["VPCId"] if vpcs else None,
        vpcregion=(vpcs[0].get("VPCRegion") or region_name) if vpcs else None,
        comment=comment,
    )
    for vpc in vpcs[1:]:
        zone.add_vpc(vpc["VPCId"], vpc.get("VPCRegion") or region_name)
    tags = _tags_list(props.get("HostedZoneTags"))
    if tags:
        backend.change_tags_for_resource("hostedzone", zone.resource_id, tags, [])
    return zone


r53_models.FakeZone.create_from_cloudformation_json = classmethod(_zone_create_cfn)

_RECORD_KEYS = (
    "Name", "Type", "SetIdentifier", "Weight", "Region", "GeoLocation", "Failover",
    "MultiValueAnswer", "TTL", "ResourceRecords", "AliasTarget", "HealthCheckId",
)


def _api_record(record):
    """CloudFormation record-set properties -> ChangeResourceRecordSets ResourceRecordSet."""
    out = {k: copy.deepcopy(record[k]) for k in _RECORD_KEYS if record.get(k) is not None}
    out["Name"] = _dotted(out["Name"])
    if "ResourceRecords" in out:
        out["ResourceRecords"] = [
            r if isinstance(r, dict) else {"Value": str(r)} for r in out["ResourceRecords"]
        ]
    if "TTL" in out:
        out["TTL"] = int(out["TTL"])
    if "Weight" in out:
        out["Weight"] = int(out["Weight"])
    if "AliasTarget" in out:
        alias = out["AliasTarget"]
        out["AliasTarget"] = {
            "HostedZoneId": alias["HostedZoneId"],
            "DNSName": alias["DNSName"],
            "EvaluateTargetHealth": bool(_bool(alias.get("EvaluateTargetHealth"))),
        }
    return out


def _find_zone(backend, props):
    zone = None
    if props.get("HostedZoneId"):
        zone = backend.get_hosted_zone(props["HostedZoneId"])
    elif props.get("HostedZoneName"):
        zone = backend.get_hosted_zone_by_name(_dotted(props["HostedZoneName"]))
        if zone is None:
            raise ValidationError(message=f"No hosted zone found with name {props['HostedZoneName']}")
    else:
        raise ValidationError(message="Exactly one of HostedZoneId or HostedZoneName must be specified")
    return zone


class OkdRecordSets:
    """Records one CloudFormation RecordSet/RecordSetGroup wrote into one hosted zone."""

    def __init__(self, name, zone_id, records, partition):
        self.name = name
        self.zone_id = zone_id
        self.records = records  # ResourceRecordSet dicts as sent with CREATE
        self.partition = partition

    @property
    def physical_resource_id(self):
        return self.name

    def is_created(self):
        return True


def _write_records(account_id, region_name, props, records, name):
    partition = get_partition(region_name)
    backend = route53_backends[account_id][partition]
    zone = _find_zone(backend, props)
    api_records = [_api_record(r) for r in records]
    backend.change_resource_record_sets(
        zone.resource_id, [{"Action": "CREATE", "ResourceRecordSet": copy.deepcopy(r)} for r in api_records]
    )
    return OkdRecordSets(name, zone.resource_id, api_records, partition)


def _rsg_create_cfn(cls, resource_name, cloudformation_json, account_id, region_name, **kwargs):
    props = cloudformation_json["Properties"]
    return _write_records(account_id, region_name, props, props.get("RecordSets") or [], resource_name)


def _rs_create_cfn(cls, resource_name, cloudformation_json, account_id, region_name, **kwargs):
    props = cloudformation_json["Properties"]
    return _write_records(account_id, region_name, props, [props], _dotted(props["Name"]))


r53_models.RecordSetGroup.create_from_cloudformation_json = classmethod(_rsg_create_cfn)
r53_models.RecordSet.create_from_cloudformation_json = classmethod(_rs_create_cfn)


# ---------------------------------------------------------------------------------------------
# P8 Security groups
# ---------------------------------------------------------------------------------------------
def _authorize(ec2, group_id, rule, egress):
    protocol = str(rule["IpProtocol"])
    from_port, to_port = rule.get("FromPort"), rule.get("ToPort")
    if protocol.lower() not in ("-1", "all"):
        from_port = -1 if from_port is None else int(from_port)
        to_port = -1 if to_port is None else int(to_port)
    ip_ranges = []
    description = rule.get("Description")
    if rule.get("CidrIp"):
        ip_ranges.append({"CidrIp": rule["CidrIp"], **({"Description": description} if description else {})})
    if rule.get("CidrIpv6"):
        ip_ranges.append({"CidrIpv6": rule["CidrIpv6"], **({"Description": description} if description else {})})
    source_groups = []
    peer = rule.get("DestinationSecurityGroupId") if egress else rule.get("SourceSecurityGroupId")
    if peer:
        source_groups.append({"GroupId": peer, **({"Description": description} if description else {})})
    if not egress and rule.get("SourceSecurityGroupName"):
        source_groups.append({"GroupName": rule["SourceSecurityGroupName"]})
    prefix = rule.get("DestinationPrefixListId") if egress else rule.get("SourcePrefixListId")
    prefix_list_ids = [{"PrefixListId": prefix}] if prefix else []
    if not (ip_ranges or source_groups or prefix_list_ids):
        raise ValidationError(message="Either CidrIp, CidrIpv6, a source/destination security group or a prefix list must be specified")
    authorize = ec2.authorize_security_group_egress if egress else ec2.authorize_security_group_ingress
    rules, _group = authorize(
        group_name_or_id=group_id,
        ip_protocol=protocol,
        from_port=from_port,
        to_port=to_port,
        ip_ranges=ip_ranges,
        source_groups=source_groups,
        prefix_list_ids=prefix_list_ids,
    )
    return [r.id for r in rules]


def _sg_create_cfn(cls, resource_name, cloudformation_json, account_id, region_name, **kwargs):
    props = cloudformation_json["Properties"]
    ec2 = ec2_backends[account_id][region_name]
    group = ec2.create_security_group(
        name=resource_name, description=props.get("GroupDescription"), vpc_id=props.get("VpcId")
    )
    for tag in props.get("Tags") or []:
        group.add_tag(tag["Key"], tag["Value"])
    for rule in props.get("SecurityGroupIngress") or []:
        _authorize(ec2, group.id, rule, egress=False)
    egress = props.get("SecurityGroupEgress")
    if egress:
        group.egress_rules = []
        for rule in egress:
            _authorize(ec2, group.id, rule, egress=True)
    return group


SecurityGroup.create_from_cloudformation_json = classmethod(_sg_create_cfn)


def _ingress_create_cfn(cls, resource_name, cloudformation_json, account_id, region_name, **kwargs):
    props = cloudformation_json["Properties"]
    ec2 = ec2_backends[account_id][region_name]
    group_id = props.get("GroupId")
    if not group_id and props.get("GroupName"):
        group_id = ec2.get_security_group_by_name_or_id(props["GroupName"]).id
    group = ec2.get_security_group_from_id(group_id)
    if group is None:
        from moto.ec2.exceptions import InvalidSecurityGroupNotFoundError

        raise InvalidSecurityGroupNotFoundError(group_id)
    obj = cls(group, props)
    obj.okd_group_id = group.id
    obj.okd_rule_ids = _authorize(ec2, group.id, props, egress=False)
    return obj


SecurityGroupIngress.create_from_cloudformation_json = classmethod(_ingress_create_cfn)
SecurityGroupIngress.physical_resource_id = property(
    lambda self: (getattr(self, "okd_rule_ids", None) or [""])[0]
)


# ---------------------------------------------------------------------------------------------
# P9 small EC2 fixes
# ---------------------------------------------------------------------------------------------
def _assoc_create_cfn(cls, resource_name, cloudformation_json, account_id, region_name, **kwargs):
    props = cloudformation_json["Properties"]
    ec2 = ec2_backends[account_id][region_name]
    ec2.get_subnet(props["SubnetId"])
    association_id = ec2.associate_route_table(props["RouteTableId"], subnet_id=props["SubnetId"])
    obj = ec2.create_subnet_association(route_table_id=props["RouteTableId"], subnet_id=props["SubnetId"])
    obj.okd_association_id = association_id
    return obj


SubnetRouteTableAssociation.create_from_cloudformation_json = classmethod(_assoc_create_cfn)
SubnetRouteTableAssociation.physical_resource_id = property(
    lambda self: getattr(self, "okd_association_id", None) or self.route_table_id
)

_orig_subnet_create = Subnet.create_from_cloudformation_json.__func__


def _subnet_create_cfn(cls, resource_name, cloudformation_json, account_id, region_name, **kwargs):
    subnet = _orig_subnet_create(cls, resource_name, cloudformation_json, account_id, region_name, **kwargs)
    mapping = _bool(cloudformation_json["Properties"].get("MapPublicIpOnLaunch"))
    if mapping is not None:
        subnet.map_public_ip_on_launch = mapping
    return subnet


Subnet.create_from_cloudformation_json = classmethod(_subnet_create_cfn)

_orig_vpc_create = VPC.create_from_cloudformation_json.__func__


def _vpc_create_cfn(cls, resource_name, cloudformation_json, account_id, region_name, **kwargs):
    vpc = _orig_vpc_create(cls, resource_name, cloudformation_json, account_id, region_name, **kwargs)
    props = cloudformation_json["Properties"]
    for prop, attr in (("EnableDnsSupport", "enable_dns_support"), ("EnableDnsHostnames", "enable_dns_hostnames")):
        value = _bool(props.get(prop))
        if value is not None:
            setattr(vpc, attr, value)
    return vpc


VPC.create_from_cloudformation_json = classmethod(_vpc_create_cfn)

_orig_vpce_create = VPCEndPoint.create_from_cloudformation_json.__func__


def _vpce_create_cfn(cls, resource_name, cloudformation_json, account_id, region_name, **kwargs):
    cfn = copy.deepcopy(cloudformation_json)
    policy = cfn["Properties"].get("PolicyDocument")
    if isinstance(policy, (dict, list)):
        cfn["Properties"]["PolicyDocument"] = json.dumps(policy)
    return _orig_vpce_create(cls, resource_name, cfn, account_id, region_name, **kwargs)


VPCEndPoint.create_from_cloudformation_json = classmethod(_vpce_create_cfn)


# ---------------------------------------------------------------------------------------------
# P10 IAM Role
# ---------------------------------------------------------------------------------------------
def _role_create_cfn(cls, resource_name, cloudformation_json, account_id, region_name, **kwargs):
    props = cloudformation_json["Properties"]
    iam = iam_backends[account_id][get_partition(region_name)]
    assume = props["AssumeRolePolicyDocument"]
    if not isinstance(assume, str):
        assume = json.dumps(assume)
    role = iam.create_role(
        role_name=props.get("RoleName", resource_name),
        assume_role_policy_document=assume,
        path=props.get("Path", "/"),
        permissions_boundary=props.get("PermissionsBoundary", ""),
        description=props.get("Description", ""),
        tags=_tags_list(props.get("Tags")),
        max_session_duration=_int(props.get("MaxSessionDuration"), 3600),
    )
    for policy in props.get("Policies") or []:
        document = policy["PolicyDocument"]
        if not isinstance(document, str):
            document = json.dumps(document)
        iam.put_role_policy(role.name, policy["PolicyName"], document)
    for arn in props.get("ManagedPolicyArns") or []:
        iam.attach_role_policy(arn, role.name)
    return role


iam_models.Role.create_from_cloudformation_json = classmethod(_role_create_cfn)


# ---------------------------------------------------------------------------------------------
# P16/P17 per-type deleters.  Each takes (resource object, account_id, region_name).
# ---------------------------------------------------------------------------------------------
def _enis_using_subnet(ec2, subnet_id):
    return [e.id for e in ec2.enis.values() if getattr(e.subnet, "id", e.subnet) == subnet_id]


def _del_vpc(vpc, account_id, region):
    ec2 = ec2_backends[account_id][region]
    attached = [g.id for g in ec2.internet_gateways.values() if g.vpc is not None and g.vpc.id == vpc.id]
    if attached:
        raise DependencyViolationError(f"The vpc '{vpc.id}' has dependencies and cannot be deleted.")
    ec2.delete_vpc(vpc.id)


def _del_subnet(subnet, account_id, region):
    ec2 = ec2_backends[account_id][region]
    if _enis_using_subnet(ec2, subnet.id):
        raise DependencyViolationError(f"The subnet '{subnet.id}' has dependencies and cannot be deleted.")
    ec2.delete_subnet(subnet.id)


def _del_route_table(rt, account_id, region):
    ec2_backends[account_id][region].delete_route_table(rt.id)


def _del_route(route, account_id, region):
    ec2 = ec2_backends[account_id][region]
    table = ec2.route_tables.get(route.route_table.id)
    if table is not None:
        table._routes.pop(route.id, None)


def _del_assoc(assoc, account_id, region):
    ec2 = ec2_backends[account_id][region]
    association_id = getattr(assoc, "okd_association_id", None)
    if association_id:
        try:
            ec2.disassociate_route_table(association_id)
        except Exception as exc:  # already gone
            if "InvalidAssociationID" not in _error_parts(exc)[0]:
                raise
    ec2.subnet_associations.pop(f"{assoc.route_table_id}:{assoc.subnet_id}", None)


def _del_igw(igw, account_id, region):
    ec2_backends[account_id][region].delete_internet_gateway(igw.id)


def _del_gw_attachment(att, account_id, region):
    ec2 = ec2_backends[account_id][region]
    if att.gateway_id and att.gateway_id.startswith("igw-"):
        ec2.detach_internet_gateway(att.gateway_id, att.vpc_id)
    elif att.gateway_id:
        ec2.detach_vpn_gateway(att.gateway_id, att.vpc_id)


def _del_nat(nat, account_id, region):
    ec2 = ec2_backends[account_id][region]
    for eip in list(ec2.addresses):
        if eip.eni is not None and eip.eni.id == nat._eni.id:
            ec2.disassociate_address(address=eip.public_ip)
    if nat._eni.id in ec2.enis:
        nat._eni.delete()
    nat.state = "deleted"  # AWS keeps deleted NAT gateways visible in state "deleted"


def _del_eip(eip, account_id, region):
    ec2 = ec2_backends[account_id][region]
    if eip.allocation_id:
        ec2.release_address(allocation_id=eip.allocation_id)
    else:
        ec2.release_address(address=eip.public_ip)


def _del_vpce(vpce, account_id, region):
    ec2 = ec2_backends[account_id][region]
    if (vpce.vpc_endpoint_type or "gateway").lower() == "interface":
        for eni_id in vpce.network_interface_ids or []:
            ec2.enis.pop(eni_id, None)
    elif vpce.destination_prefix_list_id:
        for rt_id in vpce.route_table_ids or []:
            table = ec2.route_tables.get(rt_id)
            if table is None:
                continue
            for key, route in list(table._routes.items()):
                if route.destination_prefix_list and route.destination_prefix_list.id == vpce.destination_prefix_list_id:
                    table._routes.pop(key)
    ec2.vpc_end_points.pop(vpce.id, None)


def _del_sg(group, account_id, region):
    ec2 = ec2_backends[account_id][region]
    for other in [g for groups in ec2.groups.values() for g in groups.values()]:
        if other.id == group.id:
            continue
        for rule in list(other.ingress_rules) + list(other.egress_rules):
            if (rule.source_group or {}).get("GroupId") == group.id:
                raise DependencyViolationError(f"resource {group.id} has a dependent object")
    for eni in ec2.enis.values():
        if any(getattr(g, "id", g) == group.id for g in (eni.group_set or [])):
            raise DependencyViolationError(f"resource {group.id} has a dependent object")
    ec2.delete_security_group(group_id=group.id)


def _del_ingress(ingress, account_id, region):
    ec2 = ec2_backends[account_id][region]
    group = ec2.get_security_group_from_id(getattr(ingress, "okd_group_id", ingress.security_group.id))
    if group is None:
        return
    doomed = set(getattr(ingress, "okd_rule_ids", []))
    group.ingress_rules = [r for r in group.ingress_rules if r.id not in doomed]


def _del_role(role, account_id, region):
    iam = iam_backends[account_id][get_partition(region)]
    for profile in iam.instance_profiles.values():
        profile.roles = [r for r in profile.roles if r.name != role.name]
    for policy_name in list(role.policies):
        iam.delete_role_policy(role.name, policy_name)
    for arn in list(role.managed_policies):
        iam.detach_role_policy(arn, role.name)
    iam.delete_role(role.name)


def _del_profile(profile, account_id, region):
    iam = iam_backends[account_id][get_partition(region)]
    profile.roles = []
    iam.delete_instance_profile(profile.name)


def _del_lb(lb, account_id, region):
    elb = elbv2_backends[account_id][region]
    for tg in elb.target_groups.values():
        tg.load_balancer_arns = [a for a in tg.load_balancer_arns if a != lb.arn]
    elb.delete_load_balancer(lb.arn)
    elb.tagging_service.delete_all_tags_for_resource(lb.arn)


def _del_listener(listener, account_id, region):
    elb = elbv2_backends[account_id][region]
    try:
        elb.delete_listener(listener.arn)
    except Exception as exc:
        if "ListenerNotFound" not in _error_parts(exc)[0]:
            raise
    lb = elb.load_balancers.get(listener.load_balancer_arn)
    still_used = set()
    if lb is not None:
        for other in lb.listeners.values():
            for action in other.default_actions:
                still_used.update(elb._get_target_group_arns_from(action_data=action.data))
    for tg in elb.target_groups.values():
        if tg.arn not in still_used:
            tg.load_balancer_arns = [a for a in tg.load_balancer_arns if a != listener.load_balancer_arn]


def _del_tg(tg, account_id, region):
    elb = elbv2_backends[account_id][region]
    elb.delete_target_group(tg.arn)
    elb.tagging_service.delete_all_tags_for_resource(tg.arn)


def _del_zone(zone, account_id, region):
    backend = route53_backends[account_id][get_partition(region)]
    if zone.resource_id not in backend.zones:
        return
    backend.delete_hosted_zone(zone.resource_id)  # HostedZoneNotEmpty if foreign records remain, as on AWS
    backend.resource_tags.pop(zone.resource_id, None)


def _del_records(recs, account_id, region):
    backend = route53_backends[account_id][recs.partition]
    zone = backend.zones.get(recs.zone_id)
    if zone is None:
        return
    for record in recs.records:
        present = [
            r for r in zone.rrsets
            if r.name == record["Name"] and r.type == record["Type"]
            and r.set_identifier == record.get("SetIdentifier")
        ]
        if present:
            backend.change_resource_record_sets(
                recs.zone_id, [{"Action": "DELETE", "ResourceRecordSet": copy.deepcopy(record)}]
            )


def _del_instance(instance, account_id, region):
    ec2 = ec2_backends[account_id][region]
    if instance.state != "terminated":
        instance.disable_api_termination = False
        ec2.terminate_instances([instance.id])
    for assoc_id, assoc in list(getattr(ec2, "iam_instance_profile_associations", {}).items()):
        if assoc_id == instance.id or getattr(assoc, "instance", None) is instance:
            ec2.iam_instance_profile_associations.pop(assoc_id, None)


DELETERS = {
    "AWS::EC2::VPC": _del_vpc,
    "AWS::EC2::Subnet": _del_subnet,
    "AWS::EC2::RouteTable": _del_route_table,
    "AWS::EC2::Route": _del_route,
    "AWS::EC2::SubnetRouteTableAssociation": _del_assoc,
    "AWS::EC2::InternetGateway": _del_igw,
    "AWS::EC2::VPCGatewayAttachment": _del_gw_attachment,
    "AWS::EC2::NatGateway": _del_nat,
    "AWS::EC2::EIP": _del_eip,
    "AWS::EC2::VPCEndpoint": _del_vpce,
    "AWS::EC2::SecurityGroup": _del_sg,
    "AWS::EC2::SecurityGroupIngress": _del_ingress,
    "AWS::EC2::Instance": _del_instance,
    "AWS::IAM::Role": _del_role,
    "AWS::IAM::InstanceProfile": _del_profile,
    "AWS::ElasticLoadBalancingV2::LoadBalancer": _del_lb,
    "AWS::ElasticLoadBalancingV2::Listener": _del_listener,
    "AWS::ElasticLoadBalancingV2::TargetGroup": _del_tg,
    "AWS::Route53::HostedZone": _del_zone,
    "AWS::Route53::RecordSetGroup": _del_records,
    "AWS::Route53::RecordSet": _del_records,
}


# ---------------------------------------------------------------------------------------------
# P13-P16 stack lifecycle
# ---------------------------------------------------------------------------------------------
_orig_rm_getitem = parsing.ResourceMap.__getitem__


def _rm_getitem(self, key):
    """Once a stack is settled, never lazily (re)create a resource just because it is read."""
    if getattr(self, "_okd_frozen", False) and key not in self._parsed_resources:
        if key in self._resource_json_map:
            return None
        raise KeyError(key)
    return _orig_rm_getitem(self, key)


parsing.ResourceMap.__getitem__ = _rm_getitem


def _physical_id(resource):
    try:
        value = getattr(resource, "physical_resource_id", None)
    except Exception:
        value = None
    return value if isinstance(value, str) else ""


def _resource_event(stack, lid, rtype, status, physical="", reason=None):
    event = cfn_models.Event(
        stack_id=stack.stack_id,
        stack_name=stack.name,
        logical_resource_id=lid,
        physical_resource_id=physical,
        resource_type=rtype,
        resource_status=status,
        resource_status_reason=reason,
        resource_properties=None,
    )
    event.sendToSns(stack.account_id, stack.region_name, stack.notification_arns)
    stack.events.append(event)


def _stack_analysis(stack):
    if getattr(stack, "_okd_order", None) is None:
        try:
            stack._okd_order, stack._okd_deps = _analyse_template(stack.template_dict or {})
        except ValidationError:
            resources = list((stack.template_dict or {}).get("Resources") or {})
            stack._okd_order, stack._okd_deps = resources, {r: set() for r in resources}
    return stack._okd_order, stack._okd_deps


def _live_resources(stack):
    rm = stack.resource_map
    order, _deps = _stack_analysis(stack)
    live = []
    for lid in order:
        res = rm._parsed_resources.get(lid)
        if res is not None and not isinstance(res, (str, dict, list)):
            live.append(lid)
    return live


def _tag_ec2_resource(stack, lid, instance, props_json):
    rm = stack.resource_map
    ec2 = ec2_backends[stack.account_id][stack.region_name]
    tags = dict(rm.tags)
    tags["aws:cloudformation:logical-id"] = lid
    resource_id = instance.allocation_id if isinstance(instance, ElasticAddress) and instance.allocation_id else _physical_id(instance)
    try:
        if resource_id:
            ec2.create_tags([resource_id], tags)
    except Exception:
        pass
    raw_tags = (props_json or {}).get("Tags")
    if isinstance(raw_tags, list) and raw_tags:
        try:
            for tag in parsing.clean_json(raw_tags, rm):
                instance.add_tag(tag["Key"], tag["Value"])
        except Exception:
            pass


def _delete_one(stack, lid, resource):
    rm = stack.resource_map
    rjson = rm._resource_json_map.get(lid, {})
    rtype = rjson.get("Type") or getattr(resource, "cf_resource_type", "")
    deleter = DELETERS.get(rtype)
    if deleter is not None:
        deleter(resource, stack.account_id, stack.region_name)
    else:
        rm._delete_resource(resource, rjson)


def _delete_resources(stack, failed_reasons):
    """Deletes live resources in reverse dependency order; returns list of logical ids that failed."""
    rm = stack.resource_map
    _order, deps = _stack_analysis(stack)
    live = _live_resources(stack)
    failed, blocked = [], set()
    for lid in reversed(live):
        rjson = rm._resource_json_map.get(lid, {})
        rtype = rjson.get("Type", "")
        resource = rm._parsed_resources.get(lid)
        physical = _physical_id(resource)
        if rjson.get("DeletionPolicy") == "Retain":
            _resource_event(stack, lid, rtype, "DELETE_SKIPPED", physical)
            rm._parsed_resources.pop(lid, None)
            continue
        if lid in blocked:
            continue
        _resource_event(stack, lid, rtype, "DELETE_IN_PROGRESS", physical)
        try:
            _delete_one(stack, lid, resource)
        except Exception as exc:
            code, message = _error_parts(exc)
            _resource_event(stack, lid, rtype, "DELETE_FAILED", physical, message)
            failed_reasons[lid] = f"{message} (Error Code: {code})"
            failed.append(lid)
            todo = list(deps.get(lid, ()))
            while todo:
                dep = todo.pop()
                if dep not in blocked:
                    blocked.add(dep)
                    todo.extend(deps.get(dep, ()))
            continue
        rm._parsed_resources.pop(lid, None)
        _resource_event(stack, lid, rtype, "DELETE_COMPLETE", physical)
    return failed


def _compute_outputs(stack):
    rm = stack.resource_map
    outputs, exports = [], []
    for key, ojson in ((stack.template_dict or {}).get("Outputs") or {}).items():
        if "Condition" in ojson and not rm.lazy_condition_map[ojson["Condition"]]:
            continue
        value = parsing.clean_json(ojson.get("Value"), rm)
        if isinstance(value, bool):
            value = str(value).lower()
        elif isinstance(value, (int, float)):
            value = str(value)
        if not isinstance(value, str):
            raise ValidationError(
                message=f"Template error: Output {key} must resolve to a String, got {type(value).__name__}"
            )
        export_name = None
        if ojson.get("Export"):
            export_name = parsing.clean_json(ojson["Export"].get("Name"), rm)
            exports.append(parsing.Export(stack.stack_id, export_name, value))
        description = ojson.get("Description")
        outputs.append(
            {"OutputKey": key, "OutputValue": value, "Description": description, "ExportName": export_name}
        )
    return outputs, exports


def _okd_create(backend, stack, on_failure):
    rm = stack.resource_map
    template = stack.template_dict
    stack.status = "CREATE_IN_PROGRESS"
    stack.status_reason = None
    rm._template = template
    rm._resource_json_map = template.get("Resources") or {}
    rm.tags.update({"aws:cloudformation:stack-name": stack.name, "aws:cloudformation:stack-id": stack.stack_id})
    order, _deps = _stack_analysis(stack)
    failure = None  # (logical id or None, message, code)
    for lid in order:
        rjson = rm._resource_json_map[lid]
        rtype = rjson["Type"]
        condition = rjson.get("Condition")
        if condition and not rm.lazy_condition_map[condition]:
            continue
        _resource_event(stack, lid, rtype, "CREATE_IN_PROGRESS")
        try:
            resource = rm[lid]
            if resource is None and rtype not in parsing.NULL_MODELS:
                raise ValidationError(message=f"Resource type {rtype} could not be created by this mock")
            if isinstance(resource, TaggedEC2Resource):
                _tag_ec2_resource(stack, lid, resource, rjson.get("Properties"))
            if resource is not None and not resource.is_created():
                raise ValidationError(message=f"Resource {lid} did not stabilise")
        except Exception as exc:
            code, message = _error_parts(exc)
            leftover = rm._parsed_resources.get(lid)
            _resource_event(stack, lid, rtype, "CREATE_FAILED", _physical_id(leftover), message)
            failure = (lid, message, code)
            break
        _resource_event(stack, lid, rtype, "CREATE_COMPLETE", _physical_id(resource))
    rm._okd_frozen = True
    if failure is None:
        try:
            outputs, exports = _compute_outputs(stack)
            taken = {e.name: e for e in backend.exports.values()}
            for export in exports:
                if export.name in taken:
                    owner = taken[export.name].exporting_stack_id
                    raise ValidationError(message=f"Export with name {export.name} is already exported by stack {owner}")
            stack._okd_outputs = outputs
            stack._okd_export_names = [e.name for e in exports]
            for export in exports:
                backend.exports[export.name] = export
        except Exception as exc:
            code, message = _error_parts(exc)
            failure = (None, message, code)
    if failure is None:
        stack.status = "CREATE_COMPLETE"
        stack._add_stack_event("CREATE_COMPLETE")
        return

    lid, message, code = failure
    stack._okd_outputs = None
    if lid:
        base = f"The following resource(s) failed to create: [{lid}]."
        detail = f"{lid}: {message} (Error Code: {code})"
    else:
        base, detail = "Stack creation failed.", f"{message} (Error Code: {code})"
    reason = f"{base} {detail}"
    if on_failure == "DO_NOTHING":
        stack.status = "CREATE_FAILED"
        stack.status_reason = reason
        stack._add_stack_event("CREATE_FAILED", resource_status_reason=reason)
        return
    stack.status = "ROLLBACK_IN_PROGRESS"
    stack.status_reason = f"{base} Rollback requested by user. {detail}"
    stack._add_stack_event("ROLLBACK_IN_PROGRESS", resource_status_reason=stack.status_reason)
    if lid:
        _resource_event(stack, lid, rm._resource_json_map[lid]["Type"], "DELETE_COMPLETE")
    failed_reasons = {}
    failed = _delete_resources(stack, failed_reasons)
    if failed:
        stack.status = "ROLLBACK_FAILED"
        stack.status_reason = (
            f"The following resource(s) failed to delete: [{', '.join(failed)}]. " + reason
        )
        stack._add_stack_event("ROLLBACK_FAILED", resource_status_reason=stack.status_reason)
        return
    stack.status = "ROLLBACK_COMPLETE"
    stack._add_stack_event("ROLLBACK_COMPLETE", resource_status_reason=None)
    if on_failure == "DELETE":
        backend.delete_stack(stack.stack_id)


_request_ctx = threading.local()


def _create_stack(
    self,
    name,
    template,
    parameters,
    notification_arns=None,
    tags=None,
    role_arn=None,
    enable_termination_protection=False,
    timeout_in_mins=None,
    stack_policy_body=None,
):
    if name in [stack.name for stack in self.stacks.values()]:
        raise AlreadyExistsException(f"Stack [{name}] already exists")
    stack_id = generate_stack_id(name, self.region_name, self.account_id)
    stack = cfn_models.Stack(
        stack_id=stack_id,
        name=name,
        template=template,
        parameters=parameters,
        account_id=self.account_id,
        region_name=self.region_name,
        notification_arns=notification_arns,
        tags=tags,
        role_arn=role_arn,
        cross_stack_resources=self.exports,
        enable_termination_protection=enable_termination_protection,
        timeout_in_mins=timeout_in_mins,
        stack_policy_body=stack_policy_body,
    )
    _validate_types(stack.template_dict or {})
    stack._okd_order, stack._okd_deps = _analyse_template(stack.template_dict or {})
    stack.status_reason = None
    self.stacks[stack_id] = stack
    stack._add_stack_event("CREATE_IN_PROGRESS", resource_status_reason="User Initiated")
    on_failure = getattr(_request_ctx, "on_failure", None) or "ROLLBACK"
    _okd_create(self, stack, on_failure)
    return stack


cfn_models.CloudFormationBackend.create_stack = _create_stack

_orig_create_stack_response = cfn_responses.CloudFormationResponse.create_stack


def _create_stack_response(self):
    on_failure = self._get_param("OnFailure")
    if on_failure is None and str(self._get_param("DisableRollback")).lower() == "true":
        on_failure = "DO_NOTHING"
    _request_ctx.on_failure = on_failure
    try:
        return _orig_create_stack_response(self)
    finally:
        _request_ctx.on_failure = None


cfn_responses.CloudFormationResponse.create_stack = _create_stack_response


def _stack_delete(self):
    """Stack.delete: used by DeleteStack (below) and by moto's stack-set code."""
    self.status = "DELETE_IN_PROGRESS"
    self.status_reason = None
    self._add_stack_event("DELETE_IN_PROGRESS", resource_status_reason="User Initiated")
    self.resource_map._okd_frozen = True
    self._okd_outputs = None
    failed_reasons = {}
    failed = _delete_resources(self, failed_reasons)
    if failed:
        details = "; ".join(f"{lid}: {failed_reasons[lid]}" for lid in failed)
        self.status = "DELETE_FAILED"
        self.status_reason = f"The following resource(s) failed to delete: [{', '.join(failed)}]. {details}"
        self._add_stack_event("DELETE_FAILED", resource_status_reason=self.status_reason)
        return False
    self.status = "DELETE_COMPLETE"
    self.deletion_time = utcnow()
    self._add_stack_event("DELETE_COMPLETE")
    return True


cfn_models.Stack.delete = _stack_delete


def _delete_stack(self, name_or_stack_id):
    stack = self.stacks.get(name_or_stack_id)
    if stack is None:
        stack = next((s for s in self.stacks.values() if s.name == name_or_stack_id), None)
    if stack is None:
        return  # AWS: deleting an unknown/deleted stack is a silent success
    export_names = getattr(stack, "_okd_export_names", None)
    if export_names is None:
        export_names = [e.name for e in self.exports.values() if e.exporting_stack_id == stack.stack_id]
    if stack.delete():
        self.stacks.pop(stack.stack_id, None)
        self.deleted_stacks[stack.stack_id] = stack
        for export_name in export_names:
            self.exports.pop(export_name, None)


cfn_models.CloudFormationBackend.delete_stack = _delete_stack

_orig_outputs = cfn_models.Stack.outputs.fget


def _stack_outputs(self):
    if hasattr(self, "_okd_outputs"):
        if self.status not in ("CREATE_COMPLETE", "UPDATE_COMPLETE", "UPDATE_ROLLBACK_COMPLETE"):
            return None
        return list(self._okd_outputs) or None
    return _orig_outputs(self)


cfn_models.Stack.outputs = property(_stack_outputs)

_orig_exports = cfn_models.Stack.exports.fget


def _stack_exports(self):
    if hasattr(self, "_okd_outputs"):
        return [e for e in self.cross_stack_resources.values() if e.exporting_stack_id == self.stack_id]
    return _orig_exports(self)


cfn_models.Stack.exports = property(_stack_exports)


def _stack_resources(self):
    rm = self.resource_map
    result = []
    for lid in rm._resource_json_map:
        res = rm._parsed_resources.get(lid)
        if res is not None and not isinstance(res, (str, dict, list)):
            result.append(res)
    return result


cfn_models.Stack.stack_resources = property(_stack_resources)

_orig_stack_update = cfn_models.Stack.update


def _stack_update(self, *args, **kwargs):
    self.resource_map._okd_frozen = False
    try:
        _orig_stack_update(self, *args, **kwargs)
    finally:
        self.resource_map._okd_frozen = True
        self._okd_order = None
        _stack_analysis(self)
    if hasattr(self, "_okd_outputs"):
        self._okd_outputs, _exports = _compute_outputs(self)


cfn_models.Stack.update = _stack_update


# ---------------------------------------------------------------------------------------------
# P18 WSGI middleware: throttling fault injection + request serialisation
# ---------------------------------------------------------------------------------------------
def _cloudformation_actions():
    try:
        import botocore.session

        return set(botocore.session.get_session().get_service_model("cloudformation").operation_names)
    except Exception:
        return {
            "CreateStack", "DeleteStack", "DescribeStacks", "DescribeStackEvents", "UpdateStack",
            "DescribeStackResources", "DescribeStackResource", "ListStacks", "ListStackResources",
            "GetTemplate", "ValidateTemplate", "ListExports", "CreateChangeSet", "ExecuteChangeSet",
            "DescribeChangeSet", "DeleteChangeSet", "ListChangeSets", "GetTemplateSummary",
        }


class OkdMiddleware:
    def __init__(self, app, throttle):
        self.app = app
        self.remaining = throttle
        self.throttled = 0
        self.counter_lock = threading.Lock()
        self.request_lock = threading.RLock()
        self.cfn_actions = _cloudformation_actions()

    def _action(self, environ):
        query = parse_qs(environ.get("QUERY_STRING", ""))
        action = (query.get("Action") or [None])[0]
        if action is None and environ.get("REQUEST_METHOD") == "POST":
            ctype = environ.get("CONTENT_TYPE", "")
            if ctype.startswith("application/x-www-form-urlencoded"):
                length = environ.get("CONTENT_LENGTH")
                stream = environ["wsgi.input"]
                if length:
                    body = stream.read(int(length))
                elif environ.get("wsgi.input_terminated"):
                    body = stream.read()
                else:
                    body = b""
                environ["wsgi.input"] = io.BytesIO(body)
                environ["CONTENT_LENGTH"] = str(len(body))
                form = parse_qs(body.decode("utf-8", "replace"))
                action = (form.get("Action") or [None])[0]
        return action

    def _is_cloudformation(self, environ, action):
        if action not in self.cfn_actions:
            return False
        auth = environ.get("HTTP_AUTHORIZATION", "")
        match = re.search(r"Credential=[^/]+/[^/]+/[^/]+/([^/]+)/", auth)
        return match is None or match.group(1) == "cloudformation"

    def __call__(self, environ, start_response):
        path = environ.get("PATH_INFO", "")
        if path == "/okd-moto/throttle" and environ.get("REQUEST_METHOD") == "POST":
            length = int(environ.get("CONTENT_LENGTH") or "0")
            text = environ["wsgi.input"].read(length).decode("utf-8", "replace").strip()
            try:
                n = int(text)
            except ValueError:
                start_response("400 Bad Request", [("Content-Type", "text/plain"), ("Content-Length", "0")])
                return [b""]
            with self.counter_lock:
                self.remaining = n
            start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "0")])
            return [b""]
        if path == "/okd-moto/throttled" and environ.get("REQUEST_METHOD") == "GET":
            with self.counter_lock:
                body = f"{self.throttled}\n".encode()
            start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
            return [body]
        if self.remaining > 0:
            action = self._action(environ)
            if self._is_cloudformation(environ, action):
                with self.counter_lock:
                    throttle = self.remaining > 0
                    if throttle:
                        self.remaining -= 1
                        self.throttled += 1
                if throttle:
                    request_id = str(uuid.uuid4())
                    body = (
                        '<?xml version="1.0" encoding="UTF-8"?>\n'
                        "<ErrorResponse><Error><Type>Sender</Type><Code>Throttling</Code>"
                        f"<Message>Rate exceeded</Message></Error><RequestId>{request_id}</RequestId>"
                        "</ErrorResponse>"
                    ).encode()
                    start_response(
                        "400 Bad Request",
                        [
                            ("Content-Type", "text/xml"),
                            ("Content-Length", str(len(body))),
                            ("x-amzn-RequestId", request_id),
                        ],
                    )
                    return [body]
        with self.request_lock:
            return list(self.app(environ, start_response))


def main(argv=None):
    try:
        throttle = int(os.environ.get("OKD_MOTO_THROTTLE", "0") or "0")
    except ValueError:
        sys.stderr.write("OKD_MOTO_THROTTLE must be an integer\n")
        sys.exit(2)
    real_run_simple = moto_server_mod.run_simple

    def run_simple(host, port, app, **kwargs):
        return real_run_simple(host, port, OkdMiddleware(app, throttle), **kwargs)

    moto_server_mod.run_simple = run_simple
    moto_server_mod.main(argv if argv is not None else sys.argv[1:])


if __name__ == "__main__":
    main()
