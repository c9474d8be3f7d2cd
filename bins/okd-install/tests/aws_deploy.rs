//! `okd-install aws deploy | destroy` and `destroy bootstrap` against
//! moto's server (PyPI moto 5.2.1, `tests/aws/moto_server.py`) on
//! loopback (issue #23): the stacks created in order with their outputs
//! wired, the bootstrap's user data a pointer config at the S3 object in
//! the install's spec, the targets registered, a second deploy changing
//! nothing, the bootstrap's removal, and destroy leaving nothing; the
//! faults: no credentials, an AMI of another region, a zone the region
//! does not have, throttling answered by retries, a stack that rolls back.
//! What is in the account is read back with boto3 (`tests/aws/account.py`).

mod common;

use std::path::Path;
use std::process::Output;

use common::{NODE_PROGRAM_STAND_IN, OKD_45, create_carrying_a_program, example_dir, okd_ok, repo};
use okd_test_utils::moto::Moto;
use serde_json::Value;

fn run(dir: &Path, moto: &Moto, args: &[&str], extra_env: &[(&str, &str)]) -> Output {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_okd-install"));
    cmd.args(args).arg("--dir").arg(dir).envs(moto.env());
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

fn ok(dir: &Path, moto: &Moto, args: &[&str]) -> String {
    let out = run(dir, moto, args, &[]);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "okd-install {args:?}: {err}\nmoto:\n{}",
        moto.log_tail()
    );
    err
}

fn state(moto: &Moto) -> Value {
    serde_json::from_str(&moto.inspect(&["state", "us-east-1"])).unwrap()
}

fn infra_id(dir: &Path) -> String {
    let meta: Value =
        serde_json::from_slice(&std::fs::read(dir.join("metadata.json")).unwrap()).unwrap();
    meta["infraID"].as_str().unwrap().to_string()
}

/// The example with Ignition configs (bootstrap.ign carrying
/// [`create_carrying_a_program`]'s stand-in) and aws/ for `ami` (and `extra` flags of
/// create aws-stacks).
fn install(ami: &str, extra: &[&str]) -> tempfile::TempDir {
    let d = example_dir("aws-upi");
    create_carrying_a_program(d.path(), &["--release-image", OKD_45]);
    let mut args = vec!["create", "aws-stacks", "--ami", ami];
    args.extend_from_slice(extra);
    okd_ok(d.path(), &args);
    d
}

/// A moto server in `t` (with `env`) holding the public zone
/// `example.com` and an AMI in us-east-1, whose id comes along.
fn seeded_moto(t: &Path, env: &[(&str, &str)]) -> Option<(Moto, String)> {
    let moto = Moto::start(&repo(), &t.join("moto.log"), env)?;
    moto.inspect(&["seed-zone", "example.com"]);
    let ami = moto.inspect(&["register-ami", "us-east-1"]);
    Some((moto, ami))
}

fn live_stacks(s: &Value) -> Vec<String> {
    s["stacks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["status"] != "DELETE_COMPLETE")
        .map(|x| {
            format!(
                "{} {}",
                x["name"].as_str().unwrap(),
                x["status"].as_str().unwrap()
            )
        })
        .collect()
}

#[test]
fn deploy_wires_the_stacks_and_destroy_leaves_nothing() {
    let t = tempfile::tempdir().unwrap();
    let Some((moto, ami)) = seeded_moto(t.path(), &[("MOTO_ENABLE_AMI_VALIDATION", "true")]) else {
        return;
    };
    let d = install(&ami, &[]);
    let dir = d.path();
    let infra = infra_id(dir);
    let before = state(&moto);

    let err = ok(dir, &moto, &["aws", "deploy", "--poll-interval", "1s"]);
    assert!(err.contains("All 7 stacks are complete"), "{err}");
    let s = state(&moto);
    let stacks = live_stacks(&s);
    for part in [
        "vpc",
        "infra",
        "security",
        "bootstrap",
        "control-plane",
        "worker-0",
        "worker-1",
    ] {
        assert!(
            stacks.contains(&format!("{infra}-{part} CREATE_COMPLETE")),
            "{part}: {stacks:?}"
        );
    }
    let outputs = |part: &str| -> Value {
        s["stacks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| {
                x["name"] == format!("{infra}-{part}").as_str() && x["status"] != "DELETE_COMPLETE"
            })
            .unwrap()["outputs"]
            .clone()
    };
    // The bootstrap: in the VPC's first public subnet, with a public
    // address, its user data a pointer config at the S3 object in spec 3.0.0.
    let public: Vec<String> = outputs("vpc")["PublicSubnetIds"]
        .as_str()
        .unwrap()
        .split(',')
        .map(String::from)
        .collect();
    let private: Vec<String> = outputs("vpc")["PrivateSubnetIds"]
        .as_str()
        .unwrap()
        .split(',')
        .map(String::from)
        .collect();
    assert_eq!((public.len(), private.len()), (3, 3));
    let instances = s["instances"].as_array().unwrap();
    let boot_id = outputs("bootstrap")["BootstrapInstanceId"].clone();
    let boot = instances.iter().find(|i| i["id"] == boot_id).unwrap();
    assert_eq!(boot["subnet"].as_str().unwrap(), public[0]);
    assert!(boot["publicIp"].is_string(), "{boot}");
    assert_eq!(boot["image"].as_str().unwrap(), ami);
    let ud: Value = serde_json::from_str(boot["userData"].as_str().unwrap()).unwrap();
    let bucket = format!("{infra}-bootstrap");
    assert_eq!(
        ud,
        serde_json::json!({"ignition": {"config": {"replace": {"source": format!("s3://{bucket}/bootstrap.ign")}}, "version": "3.0.0"}})
    );
    assert_eq!(s["buckets"][&bucket], serde_json::json!(["bootstrap.ign"]));
    // The object is bootstrap.ign as made, node program included.
    let local = std::fs::read(dir.join("bootstrap.ign")).unwrap();
    let object: Value =
        serde_json::from_str(&moto.inspect(&["object", &format!("{bucket}/bootstrap.ign")]))
            .unwrap();
    let sha: String = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, &local)
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(
        object,
        serde_json::json!({"size": local.len(), "sha256": sha})
    );
    let ign: Value = serde_json::from_slice(&local).unwrap();
    let program = ign["storage"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == "/usr/local/bin/okd-install")
        .expect("bootstrap.ign carries the node program");
    let want: String = aws_lc_rs::digest::digest(
        &aws_lc_rs::digest::SHA512,
        &std::fs::read(dir.join(NODE_PROGRAM_STAND_IN)).unwrap(),
    )
    .as_ref()
    .iter()
    .map(|b| format!("{b:02x}"))
    .collect();
    assert_eq!(
        program["contents"]["verification"]["hash"],
        format!("sha512-{want}")
    );
    assert!(program["contents"]["source"].as_str().unwrap().len() > 2 << 20);
    // The masters: one per private subnet, no public address, master.ign as
    // user data; the workers: worker.ign.
    let master_ign: Value =
        serde_json::from_slice(&std::fs::read(dir.join("master.ign")).unwrap()).unwrap();
    let worker_ign: Value =
        serde_json::from_slice(&std::fs::read(dir.join("worker.ign")).unwrap()).unwrap();
    let masters: Vec<&Value> = instances
        .iter()
        .filter(|i| {
            i["userData"]
                .as_str()
                .and_then(|u| serde_json::from_str::<Value>(u).ok())
                == Some(master_ign.clone())
        })
        .collect();
    assert_eq!(masters.len(), 3, "{instances:?}");
    let mut subnets: Vec<&str> = masters
        .iter()
        .map(|m| m["subnet"].as_str().unwrap())
        .collect();
    subnets.sort();
    let mut want = private.iter().map(String::as_str).collect::<Vec<_>>();
    want.sort();
    assert_eq!(subnets, want);
    assert!(masters.iter().all(|m| m["publicIp"].is_null()));
    let workers = instances
        .iter()
        .filter(|i| {
            i["userData"]
                .as_str()
                .and_then(|u| serde_json::from_str::<Value>(u).ok())
                == Some(worker_ign.clone())
        })
        .count();
    assert_eq!(workers, 2);
    // Targets: the bootstrap and the masters in the three groups.
    let master_ips: Vec<String> = outputs("control-plane")["PrivateIPs"]
        .as_str()
        .unwrap()
        .split(',')
        .map(String::from)
        .collect();
    let boot_ip = outputs("bootstrap")["BootstrapPrivateIp"]
        .as_str()
        .unwrap()
        .to_string();
    for tg in s["targetGroups"].as_array().unwrap() {
        let port = tg["port"].as_i64().unwrap();
        let targets: Vec<&str> = tg["targets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_str().unwrap())
            .collect();
        assert_eq!(targets.len(), 4, "{tg}");
        for ip in master_ips.iter().chain([&boot_ip]) {
            assert!(targets.contains(&format!("{ip}:{port}").as_str()), "{tg}");
        }
    }
    assert_eq!(s["targetGroups"].as_array().unwrap().len(), 3);
    // DNS: api in the public zone, api and api-int in the private one.
    let zones = s["zones"].as_array().unwrap();
    let private_zone = zones.iter().find(|z| z["private"] == true).unwrap();
    assert_eq!(private_zone["name"], "okd45.example.com.");
    assert_eq!(
        private_zone["records"],
        serde_json::json!(["api-int.okd45.example.com. A", "api.okd45.example.com. A"])
    );
    let public_zone = zones.iter().find(|z| z["name"] == "example.com.").unwrap();
    assert_eq!(
        public_zone["records"],
        serde_json::json!(["api.okd45.example.com. A"])
    );
    // The record of what was made: 0600.
    let rec = dir.join("aws/deploy.json");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&rec).unwrap().permissions().mode() & 0o777,
        0o600
    );

    // A second deploy keeps everything.
    let err = ok(dir, &moto, &["aws", "deploy", "--poll-interval", "1s"]);
    assert!(err.contains("exists from an earlier run"), "{err}");
    assert_eq!(live_stacks(&state(&moto)), stacks);

    // The bootstrap's removal: its stack, its targets and the object.
    let err = ok(dir, &moto, &["destroy", "bootstrap", "--force"]);
    assert!(err.contains("DELETE_COMPLETE"), "{err}");
    let s = state(&moto);
    let left = live_stacks(&s);
    assert!(!left.iter().any(|x| x.contains("-bootstrap ")), "{left:?}");
    assert_eq!(left.len(), 6, "{left:?}");
    assert!(
        !s["instances"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["id"] == boot_id)
    );
    assert_eq!(s["buckets"][&bucket], serde_json::json!([]));
    for tg in s["targetGroups"].as_array().unwrap() {
        assert_eq!(tg["targets"].as_array().unwrap().len(), 3, "{tg}");
    }

    // destroy: nothing deploy made is left, and nothing else was touched.
    let err = ok(dir, &moto, &["aws", "destroy", "--poll-interval", "1s"]);
    assert!(err.contains("is deleted"), "{err}");
    let after = state(&moto);
    assert!(live_stacks(&after).is_empty(), "{:?}", live_stacks(&after));
    for key in [
        "instances",
        "targetGroups",
        "vpcs",
        "subnets",
        "securityGroups",
        "loadBalancers",
        "buckets",
    ] {
        assert_eq!(after[key], before[key], "{key} differs from before deploy");
    }
    assert_eq!(after["zones"], before["zones"]);
    assert!(!rec.exists());
    // Again: nothing to do.
    let err = ok(dir, &moto, &["aws", "destroy"]);
    assert!(err.contains("nothing was deployed"), "{err}");
}

#[test]
fn faults_are_named_and_nothing_is_made_before_the_checks_pass() {
    let t = tempfile::tempdir().unwrap();
    let Some((moto, ami)) = seeded_moto(t.path(), &[("MOTO_ENABLE_AMI_VALIDATION", "true")]) else {
        return;
    };
    let before = state(&moto);

    // No credentials at all.
    let d = install(&ami, &[]);
    let out = run(
        d.path(),
        &moto,
        &["aws", "deploy"],
        &[("AWS_ACCESS_KEY_ID", ""), ("AWS_SECRET_ACCESS_KEY", "")],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("no AWS credentials"), "{err}");

    // An AMI of another region.
    let other = moto.inspect(&["register-ami", "eu-west-1"]);
    let d = install(&other, &[]);
    let out = run(d.path(), &moto, &["aws", "deploy"], &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    // The account lacks what the inputs name: infrastructure, exit code 4.
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(
        err.contains(&format!("AMI {other}: not found in region us-east-1"))
            && err.contains("another region"),
        "{err}"
    );

    // A zone the region does not have.
    let d = install(&ami, &["--zones", "us-east-1a,us-east-1b,us-east-1z"]);
    let out = run(d.path(), &moto, &["aws", "deploy"], &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(
        err.contains("zone us-east-1z: region us-east-1 offers no such zone"),
        "{err}"
    );
    // Nothing was made by the refused runs.
    let now = state(&moto);
    for key in ["stacks", "buckets", "vpcs", "instances"] {
        assert_eq!(now[key], before[key], "{key}");
    }

    // A stack that rolls back: the control plane's first subnet edited to
    // one that does not exist.
    let d = install(&ami, &[]);
    let dir = d.path();
    let infra = infra_id(dir);
    let pfile = dir.join(format!("aws/{infra}-control-plane.parameters.json"));
    let text = std::fs::read_to_string(&pfile).unwrap();
    let edited = text.replacen(
        &format!("{{{{stack:{infra}-vpc:PrivateSubnetIds:0}}}}"),
        "subnet-0123456789abcdef0",
        1,
    );
    assert_ne!(text, edited);
    std::fs::write(&pfile, edited).unwrap();
    // The next three CloudFormation calls are throttled: retried.
    moto.throttle(3);
    let out = run(dir, &moto, &["aws", "deploy", "--poll-interval", "1s"], &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    // A stack that rolled back: infrastructure failed, exit code 4.
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(
        err.contains(&format!(
            "stack {infra}-control-plane ended ROLLBACK_COMPLETE"
        )) && err.contains("Master0 (AWS::EC2::Instance)")
            && err.contains("subnet-0123456789abcdef0"),
        "{err}"
    );
    assert!(
        err.contains("What exists now:")
            && err.contains(&format!("  stack {infra}-vpc (CREATE_COMPLETE)"))
            && err.contains("okd-install aws destroy --dir"),
        "{err}"
    );
    assert_eq!(moto.get("/okd-moto/throttled"), "3");
    // Deploying again stops at the rolled-back stack, naming the way out.
    let out = run(dir, &moto, &["aws", "deploy", "--poll-interval", "1s"], &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(
        err.contains(&format!(
            "stack {infra}-control-plane: it is ROLLBACK_COMPLETE"
        )),
        "{err}"
    );
    // destroy removes all of it, the rolled-back stack too.
    ok(dir, &moto, &["aws", "destroy", "--poll-interval", "1s"]);
    let after = state(&moto);
    assert!(live_stacks(&after).is_empty(), "{:?}", live_stacks(&after));
    for key in [
        "instances",
        "vpcs",
        "subnets",
        "securityGroups",
        "loadBalancers",
        "targetGroups",
        "buckets",
    ] {
        assert_eq!(after[key], before[key], "{key}");
    }
}

#[test]
fn deploy_into_the_users_subnets_tags_them_and_destroy_leaves_them() {
    let t = tempfile::tempdir().unwrap();
    let Some((moto, ami)) = seeded_moto(t.path(), &[]) else {
        return;
    };
    let net: Value = serde_json::from_str(&moto.inspect(&["seed-vpc", "10.0.0.0/16"])).unwrap();
    let public = net["public"][0].as_str().unwrap().to_string();
    let private: Vec<String> = net["private"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap().to_string())
        .collect();
    // The user's subnets, public and private mixed, in install-config.
    let d = example_dir("aws-upi");
    let dir = d.path();
    let ic = dir.join("install-config.yaml");
    let text = std::fs::read_to_string(&ic).unwrap().replace(
        "    region: us-east-1",
        &format!(
            "    region: us-east-1\n    subnets: [{}, {}, {}]",
            private[0], public, private[1]
        ),
    );
    std::fs::write(&ic, text).unwrap();
    okd_ok(
        dir,
        &["create", "ignition-configs", "--release-image", OKD_45],
    );
    okd_ok(dir, &["create", "aws-stacks", "--ami", &ami]);
    assert!(!dir.join("aws/01_vpc.yaml").exists());
    let before = state(&moto);
    let infra = infra_id(dir);

    let err = ok(dir, &moto, &["aws", "deploy", "--poll-interval", "1s"]);
    assert!(err.contains("All 6 stacks are complete"), "{err}");
    assert!(
        err.contains(&format!("Existing VPC {}", net["vpc"].as_str().unwrap())),
        "{err}"
    );
    let s = state(&moto);
    let instances = s["instances"].as_array().unwrap();
    let boot = instances
        .iter()
        .find(|i| i["tags"]["Name"] == format!("{infra}-bootstrap").as_str())
        .unwrap();
    assert_eq!(boot["subnet"].as_str().unwrap(), public);
    let master_subnets: Vec<&str> = instances
        .iter()
        .filter(|i| {
            i["tags"]["Name"]
                .as_str()
                .unwrap_or("")
                .contains("-master-")
        })
        .map(|i| i["subnet"].as_str().unwrap())
        .collect();
    assert_eq!(master_subnets.len(), 3);
    assert!(
        master_subnets
            .iter()
            .all(|s| private.iter().any(|p| p == s)),
        "{master_subnets:?}"
    );
    let all = format!("{public},{}", private.join(","));
    let tags: Value = serde_json::from_str(&moto.inspect(&["subnet-tags", &all])).unwrap();
    for id in all.split(',') {
        assert_eq!(
            tags[id][format!("kubernetes.io/cluster/{infra}")],
            "shared",
            "{tags}"
        );
    }

    ok(dir, &moto, &["aws", "destroy", "--poll-interval", "1s"]);
    let after = state(&moto);
    assert!(live_stacks(&after).is_empty());
    // The user's VPC and subnets stay, without the cluster's tag.
    assert_eq!(after["vpcs"], before["vpcs"]);
    assert_eq!(after["subnets"], before["subnets"]);
    let tags: Value = serde_json::from_str(&moto.inspect(&["subnet-tags", &all])).unwrap();
    for id in all.split(',') {
        assert!(
            tags[id]
                .get(format!("kubernetes.io/cluster/{infra}"))
                .is_none(),
            "{tags}"
        );
    }
    for key in [
        "instances",
        "securityGroups",
        "loadBalancers",
        "targetGroups",
        "buckets",
    ] {
        assert_eq!(after[key], before[key], "{key}");
    }
}
