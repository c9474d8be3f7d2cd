#!/usr/bin/env python3
"""The peer of okd-install's AWS benchmark (bins/okd-install/benches/aws_stacks.rs):
the same work done the way a scripted AWS UPI procedure does it, with PyYAML
and boto3.

  peer.py render DIR RUNS   parse DIR/aws/*.yaml and *.parameters.json and write
                            them again (PyYAML safe_dump, json.dump) into a
                            scratch directory, RUNS times; prints the median
                            milliseconds of one run
  peer.py deploy DIR POLL   bootstrap.ign to S3, then every stack of DIR/aws in
                            order with boto3 (placeholders filled from earlier
                            stacks' outputs, as okd-install does), each polled
                            every POLL seconds (first look at once) until
                            complete, then the bootstrap's and masters' targets
                            registered; prints the seconds taken
(AWS_ENDPOINT_URL and credentials from the environment.)
"""
import glob
import json
import os
import statistics
import sys
import tempfile
import time

import boto3
import yaml


def render(d, runs):
    times = []
    for _ in range(int(runs)):
        start = time.perf_counter()
        with tempfile.TemporaryDirectory() as out:
            for path in sorted(glob.glob(os.path.join(d, "aws", "*.yaml"))):
                with open(path) as f:
                    data = yaml.safe_load(f)
                with open(os.path.join(out, os.path.basename(path)), "w") as f:
                    yaml.safe_dump(data, f, sort_keys=False)
            for path in sorted(glob.glob(os.path.join(d, "aws", "*.parameters.json"))):
                with open(path) as f:
                    data = json.load(f)
                with open(os.path.join(out, os.path.basename(path)), "w") as f:
                    json.dump(data, f, indent=2)
        times.append((time.perf_counter() - start) * 1000)
    print(f"{statistics.median(times):.3f}")


def order(d):
    meta = json.load(open(os.path.join(d, "metadata.json")))
    infra = meta["infraID"]
    parts = ["vpc", "infra", "security", "bootstrap", "control-plane"]
    workers = sorted(
        os.path.basename(p)[len(infra) + 1:-len(".parameters.json")]
        for p in glob.glob(os.path.join(d, "aws", f"{infra}-worker-*.parameters.json"))
    )
    templates = {"vpc": "01_vpc.yaml", "infra": "02_cluster_infra.yaml",
                 "security": "03_cluster_security.yaml", "bootstrap": "04_cluster_bootstrap.yaml",
                 "control-plane": "05_cluster_master_nodes.yaml"}
    out = []
    for p in parts + workers:
        pfile = os.path.join(d, "aws", f"{infra}-{p}.parameters.json")
        if os.path.exists(pfile):
            out.append((f"{infra}-{p}", templates.get(p, "06_cluster_worker_node.yaml"), pfile))
    return infra, out


def deploy(d, poll):
    poll = float(poll)
    region = "us-east-1"
    kw = {"region_name": region, "endpoint_url": os.environ["AWS_ENDPOINT_URL"]}
    cfn, s3, elb, r53 = (boto3.client(s, **kw) for s in ("cloudformation", "s3", "elbv2", "route53"))
    infra, stacks = order(d)
    start = time.perf_counter()
    outputs = {}
    zone = None
    for name, template, pfile in stacks:
        params = json.load(open(pfile))
        filled = []
        for p in params:
            v = p["ParameterValue"]
            if v.startswith("{{stack:"):
                parts = v[2:-2].split(":")
                v = outputs[parts[1]][parts[2]]
                if len(parts) > 3:
                    items = v.split(",")
                    v = items[int(parts[3]) % len(items)]
            elif v.startswith("{{hosted-zone:"):
                if zone is None:
                    want = v[len("{{hosted-zone:"):-2] + "."
                    zs = r53.list_hosted_zones_by_name(DNSName=want)["HostedZones"]
                    zone = [z for z in zs if z["Name"] == want][0]["Id"].split("/")[-1]
                v = zone
            elif p["ParameterKey"] == "BootstrapIgnitionLocation":
                bucket, key = v[len("s3://"):].split("/", 1)
                s3.create_bucket(Bucket=bucket)
                with open(os.path.join(d, "bootstrap.ign"), "rb") as f:
                    s3.put_object(Bucket=bucket, Key=key, Body=f.read(), ServerSideEncryption="AES256")
            filled.append({"ParameterKey": p["ParameterKey"], "ParameterValue": v})
        with open(os.path.join(d, "aws", template)) as f:
            body = f.read()
        cfn.create_stack(StackName=name, TemplateBody=body, Parameters=filled,
                         Capabilities=["CAPABILITY_IAM"],
                         Tags=[{"Key": "okd-install/infraID", "Value": infra}])
        while True:
            s = cfn.describe_stacks(StackName=name)["Stacks"][0]
            if not s["StackStatus"].endswith("_IN_PROGRESS"):
                break
            time.sleep(poll)
        if s["StackStatus"] != "CREATE_COMPLETE":
            sys.exit(f"{name}: {s['StackStatus']}")
        outputs[name] = {o["OutputKey"]: o["OutputValue"] for o in s.get("Outputs", [])}
        ips = []
        if template == "04_cluster_bootstrap.yaml":
            ips = [outputs[name]["BootstrapPrivateIp"]]
        elif template == "05_cluster_master_nodes.yaml":
            ips = outputs[name]["PrivateIPs"].split(",")
        groups = outputs.get(f"{infra}-infra", {})
        for ip in ips:
            for k, port in (("ExternalApiTargetGroupArn", 6443), ("InternalApiTargetGroupArn", 6443),
                            ("InternalServiceTargetGroupArn", 22623)):
                if k in groups:
                    elb.register_targets(TargetGroupArn=groups[k], Targets=[{"Id": ip, "Port": port}])
    print(f"{time.perf_counter() - start:.3f}")


def main():
    {"render": render, "deploy": deploy}[sys.argv[1]](sys.argv[2], sys.argv[3])


if __name__ == "__main__":
    main()
