#!/usr/bin/env python3
"""Seeds and reads the moto server of okd-install's AWS tests with boto3
(a second client, so the tests check what okd-install made through an
implementation other than its own).

Usage (AWS_ENDPOINT_URL and credentials from the environment):
  account.py seed-zone DOMAIN          a public hosted zone; prints its id
  account.py register-ami REGION       a registered image; prints its id
  account.py seed-vpc CIDR             a user's VPC in us-east-1: an internet gateway,
                                       one public subnet (routed to it) and two private
                                       ones; prints {"vpc", "public", "private"}
  account.py subnet-tags ID,ID         JSON: each subnet's tags
  account.py state REGION              JSON: stacks, instances (with user
                                       data), target groups and their targets,
                                       buckets and objects, VPCs, subnets,
                                       zones and records
  account.py object BUCKET/KEY         JSON: the object's size and SHA-256
"""
import base64
import hashlib
import json
import os
import sys

import boto3


def client(service, region="us-east-1"):
    return boto3.client(service, region_name=region, endpoint_url=os.environ["AWS_ENDPOINT_URL"])


def seed_zone(domain):
    r53 = client("route53")
    z = r53.create_hosted_zone(Name=domain, CallerReference="okd-install-test-" + domain)
    print(z["HostedZone"]["Id"].split("/")[-1])


def register_ami(region):
    ec2 = client("ec2", region)
    img = ec2.register_image(Name="fedora-coreos-test", RootDeviceName="/dev/xvda",
                             Architecture="x86_64", VirtualizationType="hvm")
    print(img["ImageId"])


def seed_vpc(cidr):
    import ipaddress
    ec2 = client("ec2")
    vpc = ec2.create_vpc(CidrBlock=cidr)["Vpc"]["VpcId"]
    nets = list(ipaddress.ip_network(cidr).subnets(new_prefix=ipaddress.ip_network(cidr).prefixlen + 4))
    igw = ec2.create_internet_gateway()["InternetGateway"]["InternetGatewayId"]
    ec2.attach_internet_gateway(InternetGatewayId=igw, VpcId=vpc)
    public = ec2.create_subnet(VpcId=vpc, CidrBlock=str(nets[0]), AvailabilityZone="us-east-1a")["Subnet"]["SubnetId"]
    rt = ec2.create_route_table(VpcId=vpc)["RouteTable"]["RouteTableId"]
    ec2.create_route(RouteTableId=rt, DestinationCidrBlock="0.0.0.0/0", GatewayId=igw)
    ec2.associate_route_table(RouteTableId=rt, SubnetId=public)
    private = [ec2.create_subnet(VpcId=vpc, CidrBlock=str(nets[i]), AvailabilityZone=z)["Subnet"]["SubnetId"]
               for i, z in ((1, "us-east-1a"), (2, "us-east-1b"))]
    print(json.dumps({"vpc": vpc, "public": [public], "private": private}))


def subnet_tags(ids):
    ec2 = client("ec2")
    out = {}
    for s in ec2.describe_subnets(SubnetIds=ids.split(","))["Subnets"]:
        out[s["SubnetId"]] = {t["Key"]: t["Value"] for t in s.get("Tags", [])}
    print(json.dumps(out, sort_keys=True))


def state(region):
    cfn = client("cloudformation", region)
    ec2 = client("ec2", region)
    elb = client("elbv2", region)
    s3 = client("s3", region)
    r53 = client("route53", region)
    out = {"stacks": [], "instances": [], "targetGroups": [], "buckets": {}, "vpcs": [],
           "subnets": [], "zones": [], "securityGroups": [], "loadBalancers": []}
    for s in cfn.list_stacks()["StackSummaries"]:
        entry = {"name": s["StackName"], "status": s["StackStatus"], "outputs": {}}
        if s["StackStatus"] != "DELETE_COMPLETE":
            d = cfn.describe_stacks(StackName=s["StackId"])["Stacks"][0]
            entry["outputs"] = {o["OutputKey"]: o["OutputValue"] for o in d.get("Outputs", [])}
            entry["tags"] = {t["Key"]: t["Value"] for t in d.get("Tags", [])}
        out["stacks"].append(entry)
    for r in ec2.describe_instances()["Reservations"]:
        for i in r["Instances"]:
            if i["State"]["Name"] in ("terminated", "shutting-down"):
                continue
            ud = ec2.describe_instance_attribute(InstanceId=i["InstanceId"], Attribute="userData")
            data = ud.get("UserData", {}).get("Value")
            out["instances"].append({
                "id": i["InstanceId"],
                "subnet": i.get("SubnetId"),
                "privateIp": i.get("PrivateIpAddress"),
                "publicIp": i.get("PublicIpAddress"),
                "image": i.get("ImageId"),
                "groups": sorted(g["GroupId"] for g in i.get("SecurityGroups", [])),
                "tags": {t["Key"]: t["Value"] for t in i.get("Tags", [])},
                "userData": base64.b64decode(data).decode() if data else None,
            })
    for tg in elb.describe_target_groups()["TargetGroups"]:
        health = elb.describe_target_health(TargetGroupArn=tg["TargetGroupArn"])
        out["targetGroups"].append({
            "arn": tg["TargetGroupArn"], "port": tg["Port"], "healthPath": tg.get("HealthCheckPath"),
            "targets": sorted(t["Target"]["Id"] + ":" + str(t["Target"]["Port"])
                              for t in health["TargetHealthDescriptions"]),
        })
    for lb in elb.describe_load_balancers()["LoadBalancers"]:
        out["loadBalancers"].append({"name": lb["LoadBalancerName"], "type": lb["Type"], "scheme": lb["Scheme"]})
    for b in s3.list_buckets().get("Buckets", []):
        objs = s3.list_objects_v2(Bucket=b["Name"]).get("Contents", [])
        out["buckets"][b["Name"]] = sorted(o["Key"] for o in objs)
    out["vpcs"] = [v["VpcId"] for v in ec2.describe_vpcs()["Vpcs"] if not v.get("IsDefault")]
    out["subnets"] = [{"id": s["SubnetId"], "vpc": s["VpcId"], "cidr": s["CidrBlock"], "zone": s["AvailabilityZone"]}
                      for s in ec2.describe_subnets()["Subnets"] if not s.get("DefaultForAz")]
    out["securityGroups"] = [g["GroupId"] for g in ec2.describe_security_groups()["SecurityGroups"]
                             if g["GroupName"] != "default"]
    for z in r53.list_hosted_zones()["HostedZones"]:
        recs = r53.list_resource_record_sets(HostedZoneId=z["Id"])["ResourceRecordSets"]
        out["zones"].append({"name": z["Name"], "private": z["Config"]["PrivateZone"],
                             "records": sorted(r["Name"] + " " + r["Type"] for r in recs
                                               if r["Type"] not in ("NS", "SOA"))})
    print(json.dumps(out, indent=1, sort_keys=True))


def s3_object(path):
    bucket, key = path.split("/", 1)
    h, size = hashlib.sha256(), 0
    for chunk in client("s3").get_object(Bucket=bucket, Key=key)["Body"].iter_chunks(1 << 20):
        h.update(chunk)
        size += len(chunk)
    print(json.dumps({"size": size, "sha256": h.hexdigest()}))


def main():
    cmd, arg = sys.argv[1], sys.argv[2]
    {"seed-zone": seed_zone, "register-ami": register_ami, "seed-vpc": seed_vpc,
     "subnet-tags": subnet_tags, "state": state, "object": s3_object}[cmd](arg)


if __name__ == "__main__":
    main()
