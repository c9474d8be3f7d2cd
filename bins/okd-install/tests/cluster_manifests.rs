//! okd-install's `manifests/` and `openshift/` in a real kube-apiserver
//! (the kit of `tests/kube`): with the openshift/api CRDs of the default
//! target's release (`tests/data/openshift-crds`) Established and the
//! namespaces made, every generated file is created as cluster-bootstrap
//! creates it, `status` goes through the status subresource, and every
//! object reads back with each generated field as generated. Issue #11
//! item 2; openshift/installer `pkg/asset/manifests`.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::kube::{ControlPlane, With};
use common::manifests::{self, Outcome};
use common::*;

/// The single-master example as `serve` uses it (see `serve::served_dir`),
/// before any `create`.
fn single_master_dir() -> tempfile::TempDir {
    let d = example_dir("baremetal-single-master");
    let ex = repo().join("examples/baremetal-single-master");
    std::fs::copy(
        ex.join("agent-config.yaml"),
        d.path().join("agent-config.yaml"),
    )
    .unwrap();
    let bastion = std::fs::read_to_string(ex.join("bastion-config.yaml"))
        .unwrap()
        .replace("  - 8.8.8.8\n", "")
        .replace("upstreamResolvers:\n", "upstreamResolvers: []\n");
    std::fs::write(d.path().join("bastion-config.yaml"), bastion).unwrap();
    d
}

/// Fields openshift-install itself writes that the API server drops as
/// unknown to the Default feature set's CRD (with a warning; the object is
/// created): upstream quirks, each with its source. okd-install writes the
/// same bytes as openshift-install, so they show here too: (file, field,
/// why).
const UPSTREAM_UNKNOWN: &[(&str, &str, &str)] = &[(
    "manifests/cluster-scheduler-02-config.yml",
    "spec.profileCustomizations",
    "openshift/api release-4.19 config/v1/types_scheduling.go: \
     ProfileCustomizations is `json:\"profileCustomizations\"` (no omitempty) and \
     `+openshift:enable:FeatureGate=DynamicResourceAllocation`, so it is in the \
     TechPreview/DevPreview/CustomNoUpgrade schedulers CRDs only; \
     openshift/installer pkg/asset/manifests/scheduler.go marshals the whole \
     configv1.Scheduler, writing `profileCustomizations: {dynamicResourceAllocation: \"\"}` \
     (4.16+) that the Default CRD prunes",
)];

/// Every regular file below `dir`: relative name → bytes.
fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut m = BTreeMap::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_file() {
            m.insert(
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read(&p).unwrap(),
            );
        }
    }
    m
}

/// Asserts two snapshots hold the same files with the same bytes, naming
/// the first that differs.
fn same_files(a: &BTreeMap<String, Vec<u8>>, b: &BTreeMap<String, Vec<u8>>, what: &str) {
    assert_eq!(
        a.keys().collect::<Vec<_>>(),
        b.keys().collect::<Vec<_>>(),
        "{what}"
    );
    for (name, bytes) in a {
        assert!(&b[name] == bytes, "{what}/{name} differs");
    }
}

/// Starts a control plane for `dir` (after `create ignition-configs`),
/// creates the CRDs, the namespaces and every manifest the Ignition root
/// holds under `/opt/openshift/{manifests,openshift}` (what bootkube hands
/// cluster-bootstrap), and asserts each was accepted. Returns the outcomes
/// and more, or `None` when the kit is missing.
fn apply_bootstrap_manifests(dir: &Path, scratch: &Path) -> Option<Applied> {
    let cp = ControlPlane::start(dir, scratch, With::ApiServer)?;
    let crds = manifests::install_crds(&cp);
    assert_eq!(crds.len(), 12, "{crds:?}");
    let res = manifests::resources(&cp);
    let root = cp.root.join("opt/openshift");
    let all = manifests::load(&[&root.join("manifests"), &root.join("openshift")]);
    assert!(!all.is_empty());
    let ns = manifests::create_namespaces(&cp, &all, &res);
    assert!(ns.contains("openshift-config"), "{ns:?}");
    let outcomes = manifests::create_all(&cp, &all, &res);
    for (f, o) in &outcomes {
        eprintln!("{f}: {o:?}");
    }
    let refused: Vec<String> = outcomes
        .iter()
        .filter(|(_, o)| matches!(o, Outcome::Refused { .. }))
        .map(|(f, o)| format!("{f}: {o:?}"))
        .collect();
    assert!(
        refused.is_empty(),
        "the API server refused generated manifests:\n{}",
        refused.join("\n")
    );
    // Every field dropped as unknown is a documented upstream quirk.
    for (f, o) in &outcomes {
        let Outcome::Accepted { unknown, .. } = o else {
            unreachable!()
        };
        for u in unknown {
            assert!(
                UPSTREAM_UNKNOWN
                    .iter()
                    .any(|(qf, qu, _)| qf == f && qu == u),
                "{f}: the API server dropped unknown field {u}"
            );
        }
    }
    Some(Applied {
        outcomes,
        all,
        root,
        res,
        cp,
    })
}

/// What [`apply_bootstrap_manifests`] did.
struct Applied {
    /// Each file's outcome.
    outcomes: Vec<(String, Outcome)>,
    /// The manifests.
    all: Vec<manifests::Manifest>,
    /// `/opt/openshift` in the Ignition root.
    root: PathBuf,
    /// The API server's resources.
    res: BTreeMap<(String, String), manifests::Resource>,
    /// The control plane, still running.
    cp: ControlPlane,
}

/// The files whose `status` went through the status subresource.
fn with_status(outcomes: &[(String, Outcome)]) -> Vec<&str> {
    outcomes
        .iter()
        .filter(|(_, o)| {
            matches!(
                o,
                Outcome::Accepted {
                    status_written: true,
                    ..
                }
            )
        })
        .map(|(f, _)| f.as_str())
        .collect()
}

#[test]
fn single_master_manifests_are_accepted_by_the_api_server() {
    let dir = single_master_dir();
    okd_ok(dir.path(), &["create", "manifests"]);
    let generated_manifests = snapshot(&dir.path().join("manifests"));
    let generated_openshift = snapshot(&dir.path().join("openshift"));
    okd_ok(dir.path(), &["create", "ignition-configs"]);
    let scratch = tempfile::tempdir().unwrap();
    let Some(Applied {
        outcomes,
        all,
        root,
        res,
        ..
    }) = apply_bootstrap_manifests(dir.path(), scratch.path())
    else {
        return;
    };
    // bootstrap.ign carries exactly what `create manifests` wrote, but for
    // cvo-overrides.yaml, which gains `spec.overrides` (openshift/installer
    // `pkg/asset/ignition/bootstrap/cvoignore.go`).
    let mut in_ign = snapshot(&root.join("manifests"));
    let mut generated = generated_manifests;
    let cvo = in_ign.remove("cvo-overrides.yaml").unwrap();
    let cvo_generated = generated.remove("cvo-overrides.yaml").unwrap();
    let mut cvo: serde_json::Value = serde_yaml_ng::from_slice(&cvo).unwrap();
    let overrides = cvo["spec"]
        .as_object_mut()
        .unwrap()
        .remove("overrides")
        .unwrap();
    let cvo_generated: serde_json::Value = serde_yaml_ng::from_slice(&cvo_generated).unwrap();
    assert_eq!(cvo, cvo_generated);
    same_files(&in_ign, &generated, "manifests");
    same_files(
        &snapshot(&root.join("openshift")),
        &generated_openshift,
        "openshift",
    );
    // Every other object created is one the CVO leaves alone while the
    // bootstrap control plane runs: an `unmanaged` override names it.
    let mut named: Vec<String> = overrides
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            assert_eq!(o["unmanaged"], true, "{o}");
            format!(
                "{}/{}/{}/{}",
                o["group"].as_str().unwrap(),
                o["kind"].as_str().unwrap(),
                o["namespace"].as_str().unwrap(),
                o["name"].as_str().unwrap()
            )
        })
        .collect();
    named.sort();
    let mut created: Vec<String> = all
        .iter()
        .filter(|m| m.kind() != "ClusterVersion")
        .map(|m| {
            let group = m.api_version().rsplit_once('/').map_or("", |(g, _)| g);
            let ns = if res[&(m.api_version().to_string(), m.kind().to_string())].namespaced {
                m.namespace()
            } else {
                ""
            };
            format!("{group}/{}/{ns}/{}", m.kind(), m.name())
        })
        .collect();
    created.sort();
    assert_eq!(named, created);
    let status = with_status(&outcomes);
    for f in [
        "manifests/cluster-infrastructure-02-config.yml",
        "manifests/cluster-ingress-02-config.yml",
        "openshift/99_feature-gate.yaml",
    ] {
        assert!(
            status.contains(&f),
            "{f} not written through /status: {status:?}"
        );
    }
    assert_eq!(outcomes.len(), 23, "{outcomes:?}");
    // The one upstream quirk of this target shows (the check can fail).
    assert!(
        outcomes.iter().any(|(f, o)| f == UPSTREAM_UNKNOWN[0].0
            && matches!(o, Outcome::Accepted { unknown, .. } if unknown == &[UPSTREAM_UNKNOWN[0].1])),
        "{outcomes:?}"
    );
}

#[test]
fn ha_example_manifests_are_accepted_by_the_api_server() {
    let dir = example_dir("baremetal-ha");
    okd_ok(dir.path(), &["create", "ignition-configs"]);
    let scratch = tempfile::tempdir().unwrap();
    let Some(a) = apply_bootstrap_manifests(dir.path(), scratch.path()) else {
        return;
    };
    let files: Vec<&str> = a.outcomes.iter().map(|(f, _)| f.as_str()).collect();
    // No mirrors, no trust bundle: no ICSP, no user-ca-bundle.
    assert!(
        !files.iter().any(|f| f.contains("image-content-source")),
        "{files:?}"
    );
    assert_eq!(a.outcomes.len(), 21, "{files:?}");
    let status = with_status(&a.outcomes);
    assert!(
        status.contains(&"manifests/cluster-infrastructure-02-config.yml"),
        "{status:?}"
    );

    // The same path refuses what the schemas refuse: a status outside the
    // enum, an unknown field (dropped, reported), a kind not served.
    let bad = scratch.path().join("bad");
    std::fs::create_dir(&bad).unwrap();
    let ingress = std::fs::read_to_string(a.root.join("manifests/cluster-ingress-02-config.yml"))
        .unwrap()
        .replace("name: cluster", "name: other")
        .replace("defaultPlacement: Workers", "defaultPlacement: Nowhere");
    std::fs::write(bad.join("a-ingress.yaml"), ingress).unwrap();
    let dns = std::fs::read_to_string(a.root.join("manifests/cluster-dns-02-config.yml"))
        .unwrap()
        .replace("name: cluster", "name: other")
        .replace("spec:\n", "spec:\n  bogus: 1\n");
    std::fs::write(bad.join("b-dns.yaml"), dns).unwrap();
    std::fs::write(
        bad.join("c-unserved.yaml"),
        "apiVersion: example.openshift.io/v1\nkind: Nothing\nmetadata:\n  name: x\n",
    )
    .unwrap();
    let got = manifests::create_all(&a.cp, &manifests::load(&[&bad]), &a.res);
    assert!(
        matches!(&got[0].1, Outcome::Refused { step: "status", message } if message.contains("Nowhere")),
        "{got:?}"
    );
    assert!(
        matches!(&got[1].1, Outcome::Accepted { unknown, .. } if unknown == &["spec.bogus"]),
        "{got:?}"
    );
    assert!(
        matches!(
            &got[2].1,
            Outcome::Refused {
                step: "discovery",
                ..
            }
        ),
        "{got:?}"
    );
}

/// An OCP 4.19 install-config on platform baremetal that sets what the
/// examples leave out: imageDigestSources (an ImageDigestMirrorSet), a
/// proxy with a trust bundle for it (Proxy status, user-ca-bundle), an OVN
/// join subnet (the operator Network), capabilities (ClusterVersion) and
/// API/ingress VIPs (Infrastructure's BareMetal status).
fn ocp_baremetal_dir() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    let example: serde_yaml_ng::Value = serde_yaml_ng::from_str(
        &std::fs::read_to_string(repo().join("examples/baremetal-ha/install-config.yaml")).unwrap(),
    )
    .unwrap();
    let trust: serde_yaml_ng::Value = serde_yaml_ng::from_str(
        &std::fs::read_to_string(
            repo().join("examples/baremetal-single-master/install-config.yaml"),
        )
        .unwrap(),
    )
    .unwrap();
    let ssh = example["sshKey"].as_str().unwrap();
    let pull = example["pullSecret"].as_str().unwrap();
    let bundle = trust["additionalTrustBundle"].as_str().unwrap();
    let mut ic = format!(
        "apiVersion: v1
baseDomain: lab.example
metadata:
  name: bm
additionalTrustBundlePolicy: Always
capabilities:
  baselineCapabilitySet: None
  additionalEnabledCapabilities: [baremetal, Ingress, MachineAPI, Console]
compute:
- name: worker
  replicas: 2
controlPlane:
  name: master
  replicas: 3
networking:
  clusterNetwork:
  - cidr: 10.128.0.0/14
    hostPrefix: 23
  machineNetwork:
  - cidr: 192.168.130.0/24
  networkType: OVNKubernetes
  serviceNetwork:
  - 172.30.0.0/16
  ovnKubernetesConfig:
    ipv4:
      internalJoinSubnet: 100.65.0.0/16
platform:
  baremetal:
    apiVIPs: [192.168.130.5]
    ingressVIPs: [192.168.130.6]
proxy:
  httpProxy: http://proxy.lab.example:3128
  httpsProxy: http://proxy.lab.example:3128
  noProxy: .lab.example,192.168.130.0/24
imageDigestSources:
- mirrors: [registry.lab.example:5000/ocp/release]
  source: quay.io/openshift-release-dev/ocp-release
- mirrors: [registry.lab.example:5000/ocp/release]
  source: quay.io/openshift-release-dev/ocp-v4.0-art-dev
pullSecret: '{pull}'
sshKey: '{ssh}'
additionalTrustBundle: |
"
    );
    for line in bundle.lines() {
        ic.push_str("  ");
        ic.push_str(line);
        ic.push('\n');
    }
    std::fs::write(d.path().join("install-config.yaml"), ic).unwrap();
    d
}

/// OCP 4.19: the release of the CRDs kept as test data.
const OCP_419: &str = "quay.io/openshift-release-dev/ocp-release:4.19.0-x86_64";

#[test]
fn ocp_baremetal_proxy_mirror_manifests_are_accepted_by_the_api_server() {
    let dir = ocp_baremetal_dir();
    okd_ok(
        dir.path(),
        &["create", "ignition-configs", "--release-image", OCP_419],
    );
    let scratch = tempfile::tempdir().unwrap();
    let Some(a) = apply_bootstrap_manifests(dir.path(), scratch.path()) else {
        return;
    };
    let status = with_status(&a.outcomes);
    for f in [
        "manifests/cluster-infrastructure-02-config.yml",
        "manifests/cluster-proxy-01-config.yaml",
        "manifests/image-digest-mirror-set.yaml",
        "manifests/cluster-network-03-config.yml",
    ] {
        assert!(
            status.contains(&f),
            "{f} not written through /status: {status:?}"
        );
    }
    let kinds: Vec<(&str, &str)> = a.all.iter().map(|m| (m.api_version(), m.kind())).collect();
    for k in [
        ("config.openshift.io/v1", "ImageDigestMirrorSet"),
        ("operator.openshift.io/v1", "Network"),
        ("v1", "ConfigMap"),
    ] {
        assert!(kinds.contains(&k), "{k:?} not generated: {kinds:?}");
    }
}

/// The CRDs kept as test data are the files the README names, byte for
/// byte (SHA-256), and nothing else.
#[test]
fn crd_test_data_matches_its_readme() {
    let dir = manifests::crd_dir();
    let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
    let mut listed = BTreeMap::new();
    for line in readme.lines().filter(|l| l.starts_with("| `0000_")) {
        let cols: Vec<&str> = line
            .split('|')
            .map(|c| c.trim().trim_matches('`'))
            .collect();
        listed.insert(cols[1].to_string(), cols[4].to_string());
    }
    let mut found = BTreeMap::new();
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if name == "README.md" {
            continue;
        }
        let d = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, &std::fs::read(&p).unwrap());
        let hex: String = d.as_ref().iter().map(|b| format!("{b:02x}")).collect();
        found.insert(name, hex);
    }
    assert_eq!(found, listed);
    assert_eq!(found.len(), 12);
}
