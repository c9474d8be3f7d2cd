//! The generated templates checked by PyPI's `cfn-lint` (AWS's resource
//! specification: types, properties, intrinsic functions, references),
//! for the shapes an install can take: 1-3 zones, 1 or 3 masters, External
//! and Internal publishing, each Ignition spec.

use okd_aws_upi::templates::{Shape, all};
use okd_types::release::IgnitionSpec;

#[test]
fn every_shape_of_template_is_cfn_lint_clean() {
    let Some(lint) = okd_test_utils::py_tool("cfn-lint") else {
        return;
    };
    let d = tempfile::tempdir().unwrap();
    let shapes = [
        (3, 3, true, IgnitionSpec::V3_2),
        (1, 1, false, IgnitionSpec::V3_0),
        (2, 3, true, IgnitionSpec::V3_1),
        (3, 5, false, IgnitionSpec::V3_4),
    ];
    let mut files = Vec::new();
    for (i, (zones, masters, external, spec)) in shapes.into_iter().enumerate() {
        let shape = Shape {
            zones,
            masters,
            external,
            spec,
        };
        let sub = d.path().join(format!("shape-{i}"));
        std::fs::create_dir(&sub).unwrap();
        let templates = all(&shape, true);
        assert_eq!(templates.len(), 6);
        for t in templates {
            let p = sub.join(t.file);
            std::fs::write(&p, &t.text).unwrap();
            files.push(p);
        }
    }
    let out = std::process::Command::new(&lint)
        .args(["--regions", "us-east-1", "eu-west-1", "--"])
        .args(&files)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "cfn-lint exit {:?}:\n{}{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_broken_template_is_caught_by_the_same_check() {
    // The check can fail: a template with a reference to nothing.
    let Some(lint) = okd_test_utils::py_tool("cfn-lint") else {
        return;
    };
    let d = tempfile::tempdir().unwrap();
    let shape = Shape {
        zones: 1,
        masters: 1,
        external: true,
        spec: IgnitionSpec::V3_2,
    };
    let t = all(&shape, true).remove(0);
    let broken = t.text.replace("Ref: PublicRouteTable", "Ref: NoSuchTable");
    assert_ne!(broken, t.text);
    let p = d.path().join(t.file);
    std::fs::write(&p, broken).unwrap();
    let out = std::process::Command::new(&lint)
        .arg("--")
        .arg(&p)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        !out.status.success() && text.contains("NoSuchTable"),
        "{text}"
    );
}
