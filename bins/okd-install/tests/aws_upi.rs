//! `okd-install create aws-stacks` on the AWS UPI example (issue #23): the
//! templates and parameter files in `aws/`, checked by cfn-lint, the
//! bootstrap's user data in the install's Ignition spec, and bad input
//! refused with exit 3 naming the file or flag before anything is written.

mod common;

use common::{OKD_45, example_dir, okd, okd_ok};

fn ignition_configs(d: &std::path::Path) {
    okd_ok(
        d,
        &["create", "ignition-configs", "--release-image", OKD_45],
    );
}

#[test]
fn aws_stacks_from_the_example_are_lint_clean_and_wired() {
    let d = example_dir("aws-upi");
    ignition_configs(d.path());
    let err = okd_ok(
        d.path(),
        &["create", "aws-stacks", "--ami", "ami-0123456789abcdef0"],
    );
    let meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.path().join("metadata.json")).unwrap()).unwrap();
    let infra = meta["infraID"].as_str().unwrap().to_string();
    let aws = d.path().join("aws");
    let mut names: Vec<String> = std::fs::read_dir(&aws)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut want: Vec<String> = [
        "01_vpc.yaml",
        "02_cluster_infra.yaml",
        "03_cluster_security.yaml",
        "04_cluster_bootstrap.yaml",
        "05_cluster_master_nodes.yaml",
        "06_cluster_worker_node.yaml",
    ]
    .map(String::from)
    .to_vec();
    for part in [
        "vpc",
        "infra",
        "security",
        "bootstrap",
        "control-plane",
        "worker-0",
        "worker-1",
    ] {
        want.push(format!("{infra}-{part}.parameters.json"));
    }
    want.sort();
    assert_eq!(names, want, "{err}");
    // The user data's spec is the install's: OKD 4.5 wrote 3.0.0.
    let master: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.path().join("master.ign")).unwrap()).unwrap();
    let version = master["ignition"]["version"].as_str().unwrap();
    assert_eq!(version, "3.0.0");
    let boot = std::fs::read_to_string(aws.join("04_cluster_bootstrap.yaml")).unwrap();
    assert!(
        boot.contains(&format!(r#""version":"{version}""#)),
        "{boot}"
    );
    // The masters' parameters carry master.ign's merge source and CA.
    let cp: serde_json::Value = serde_json::from_slice(
        &std::fs::read(aws.join(format!("{infra}-control-plane.parameters.json"))).unwrap(),
    )
    .unwrap();
    let value = |k: &str| {
        cp.as_array()
            .unwrap()
            .iter()
            .find(|p| p["ParameterKey"] == k)
            .unwrap()["ParameterValue"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(
        value("IgnitionLocation"),
        master["ignition"]["config"]["merge"][0]["source"]
    );
    assert_eq!(
        value("CertificateAuthorities"),
        master["ignition"]["security"]["tls"]["certificateAuthorities"][0]["source"]
    );
    assert_eq!(value("RhcosAmi"), "ami-0123456789abcdef0");
    assert_eq!(
        value("Master1Subnet"),
        format!("{{{{stack:{infra}-vpc:PrivateSubnetIds:1}}}}")
    );
    if let Some(lint) = okd_test_utils::py_tool("cfn-lint") {
        let out = std::process::Command::new(lint)
            .arg("--")
            .args(
                want.iter()
                    .filter(|f| f.ends_with(".yaml"))
                    .map(|f| aws.join(f)),
            )
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
}

#[test]
fn bad_input_is_refused_naming_the_file_or_flag_and_nothing_is_written() {
    // Before create ignition-configs: which command makes what is missing.
    let d = example_dir("aws-upi");
    // A missing earlier step is exit code 1 (README "Exit codes"), not
    // an install-config error.
    let out = okd(d.path(), &["create", "aws-stacks"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("metadata.json: missing")
            && err.contains("okd-install create ignition-configs"),
        "{err}"
    );
    ignition_configs(d.path());
    // `aws deploy` before `create aws-stacks`: the same class, 1, and the
    // step named (it stops before any AWS call: no endpoint is needed).
    let out = okd(d.path(), &["aws", "deploy"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("okd-install create aws-stacks"), "{err}");
    let cases: [(&[&str], &str); 4] = [
        (
            &["--zones", "us-east-1a"],
            "--zones: 1 zone(s) given, the VPC spans 3",
        ),
        (
            &["--zones", "us-east-1a,us-east-1b,eu-west-1a"],
            "\"eu-west-1a\" is not a zone of region us-east-1",
        ),
        (
            &["--ami", "ami-nothex"],
            "--ami: \"ami-nothex\" is not an AMI id",
        ),
        (
            &["--bucket", "Upper_Case"],
            "--bucket: \"Upper_Case\" is not an S3 bucket name",
        ),
    ];
    for (args, want) in cases {
        let mut a = vec!["create", "aws-stacks"];
        a.extend_from_slice(args);
        let out = okd(d.path(), &a);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(!d.path().join("aws").exists(), "{args:?} wrote aws/");
    }
    // A platform other than aws: the field named.
    let d = example_dir("baremetal-single-master");
    okd_ok(d.path(), &["create", "ignition-configs"]);
    let out = okd(d.path(), &["create", "aws-stacks"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains("install-config.yaml: platform: the platform is not aws"),
        "{err}"
    );
}
