//! The API types and namespaces an upstream payload lacks.
//!
//! On an OpenShift bootstrap node, bootkube's `api-bootstrap` stage runs
//! the cluster-config-api image's `render`, which writes the
//! CustomResourceDefinitions of `config.openshift.io` into `manifests/`,
//! and the operators' renders (`cvo-bootstrap`, `mco-bootstrap`, …) add
//! more CRDs and the `openshift-*` namespaces (openshift/installer
//! `bootkube.sh.template`; openshift/api `config/v1/zz_generated.crd-manifests`).
//! Without them cluster-bootstrap retries the install's manifests forever
//! ("the API server does not serve config.openshift.io/v1, Kind=…").
//! A payload of upstream components has no such image, so for it
//! [`render_crds`] writes one CRD per OpenShift kind the manifests use and
//! no manifest defines, and [`render_namespaces`] one Namespace per
//! namespace the manifests use and none creates.
//!
//! The CRDs are permissive on purpose: `x-kubernetes-preserve-unknown-fields`
//! instead of OpenShift's full schemas (which live in the operators'
//! images, not here), a `status` subresource as OpenShift's config types
//! have, cluster scope for the groups whose kinds are all cluster-scoped
//! in OpenShift (`config.openshift.io`, `operator.openshift.io`,
//! `machineconfiguration.openshift.io`), namespaced otherwise.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::RenderError;

/// The file-name prefix of what this module writes into `manifests/`.
pub const PREFIX: &str = "0000_00_okd-upstream-";

/// The API groups whose kinds are all cluster-scoped in OpenShift.
pub const CLUSTER_SCOPED_GROUPS: [&str; 3] = [
    "config.openshift.io",
    "operator.openshift.io",
    "machineconfiguration.openshift.io",
];

/// One object of a manifest file: enough to know its type and place.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Object {
    api_version: String,
    kind: String,
    namespace: Option<String>,
    name: String,
}

fn manifest_files(dir: &Path) -> Result<Vec<PathBuf>, RenderError> {
    let rd = std::fs::read_dir(dir).map_err(|source| RenderError::Read {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut files: Vec<PathBuf> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension()
                .is_some_and(|e| e == "yaml" || e == "yml" || e == "json")
        })
        .collect();
    files.sort();
    Ok(files)
}

/// Every object of every manifest in `dir` (multi-document YAML allowed;
/// empty documents skipped).
fn objects(dir: &Path) -> Result<Vec<(PathBuf, serde_yaml_ng::Value)>, RenderError> {
    use serde::Deserialize as _;
    let mut out = Vec::new();
    for p in manifest_files(dir)? {
        let text = std::fs::read_to_string(&p).map_err(|source| RenderError::Read {
            path: p.clone(),
            source,
        })?;
        for doc in serde_yaml_ng::Deserializer::from_str(&text) {
            let v = serde_yaml_ng::Value::deserialize(doc).map_err(|e| RenderError::Manifest {
                path: p.clone(),
                field: "(document)",
                rule: e.to_string(),
            })?;
            if !v.is_null() {
                out.push((p.clone(), v));
            }
        }
    }
    Ok(out)
}

fn object(v: &serde_yaml_ng::Value) -> Option<Object> {
    Some(Object {
        api_version: v["apiVersion"].as_str()?.to_string(),
        kind: v["kind"].as_str()?.to_string(),
        namespace: v["metadata"]["namespace"].as_str().map(str::to_string),
        name: v["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
    })
}

/// The plural resource name Kubernetes derives from a kind (lower case,
/// `-es` after s, x, z, ch, sh; `-ies` for a consonant and y): `DNS` →
/// `dnses`, `Proxy` → `proxies`, `Ingress` → `ingresses`.
pub fn plural(kind: &str) -> String {
    let k = kind.to_ascii_lowercase();
    if k.ends_with('s')
        || k.ends_with('x')
        || k.ends_with('z')
        || k.ends_with("ch")
        || k.ends_with("sh")
    {
        format!("{k}es")
    } else if k.ends_with('y') && !k[..k.len() - 1].ends_with(['a', 'e', 'i', 'o', 'u']) {
        format!("{}ies", &k[..k.len() - 1])
    } else {
        format!("{k}s")
    }
}

fn crd(group: &str, version: &str, kind: &str) -> serde_json::Value {
    let plural = plural(kind);
    let scope = if CLUSTER_SCOPED_GROUPS.contains(&group) {
        "Cluster"
    } else {
        "Namespaced"
    };
    serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": format!("{plural}.{group}"),
            "annotations": {
                "okd-install/rendered-for": "a payload of upstream components (no OpenShift API render)"
            }
        },
        "spec": {
            "group": group,
            "names": {
                "kind": kind,
                "listKind": format!("{kind}List"),
                "plural": plural,
                "singular": kind.to_ascii_lowercase(),
            },
            "scope": scope,
            "versions": [{
                "name": version,
                "served": true,
                "storage": true,
                "subresources": { "status": {} },
                "schema": { "openAPIV3Schema": {
                    "type": "object",
                    "x-kubernetes-preserve-unknown-fields": true
                }}
            }]
        }
    })
}

fn write(path: &Path, v: &serde_json::Value) -> Result<(), RenderError> {
    let yaml = serde_yaml_ng::to_string(v).expect("serializes");
    okd_fs::write_atomic(path, yaml.as_bytes(), 0o644)?;
    Ok(())
}

/// Writes `<manifests>/0000_00_okd-upstream-crd-<plural>.<group>.yaml` for
/// each kind of an `*.openshift.io` group that an object in `manifests`
/// uses and no CustomResourceDefinition there defines. Returns the files
/// written, in name order.
///
/// # Errors
/// [`RenderError::Read`] / [`RenderError::Manifest`] for an unreadable or
/// malformed manifest; [`RenderError::Fs`] when a CRD cannot be written.
pub fn render_crds(manifests: &Path) -> Result<Vec<PathBuf>, RenderError> {
    let objs = objects(manifests)?;
    let mut defined = BTreeSet::new();
    let mut used: BTreeMap<(String, String), String> = BTreeMap::new();
    for (_, v) in &objs {
        let Some(o) = object(v) else { continue };
        if o.kind == "CustomResourceDefinition" {
            if let (Some(g), Some(k)) = (
                v["spec"]["group"].as_str(),
                v["spec"]["names"]["kind"].as_str(),
            ) {
                defined.insert((g.to_string(), k.to_string()));
            }
            continue;
        }
        let Some((group, version)) = o.api_version.split_once('/') else {
            continue;
        };
        if group.ends_with(".openshift.io") {
            used.entry((group.to_string(), o.kind.clone()))
                .or_insert_with(|| version.to_string());
        }
    }
    let mut written = Vec::new();
    for ((group, kind), version) in used {
        if defined.contains(&(group.clone(), kind.clone())) {
            continue;
        }
        let p = manifests.join(format!("{PREFIX}crd-{}.{group}.yaml", plural(&kind)));
        write(&p, &crd(&group, &version, &kind))?;
        written.push(p);
    }
    Ok(written)
}

/// Writes `<manifests>/0000_00_okd-upstream-namespace-<ns>.yaml` for each
/// namespace an object of a namespaced type in `manifests` lives in that no
/// Namespace manifest creates and Kubernetes does not create itself
/// (`default`, `kube-system`, `kube-public`, `kube-node-lease`). Objects of
/// [`CLUSTER_SCOPED_GROUPS`] are cluster-scoped: their
/// `metadata.namespace` is ignored, as the API server ignores it. Returns
/// the files written.
///
/// # Errors
/// As [`render_crds`].
pub fn render_namespaces(manifests: &Path) -> Result<Vec<PathBuf>, RenderError> {
    const BUILT_IN: [&str; 4] = ["default", "kube-system", "kube-public", "kube-node-lease"];
    let objs = objects(manifests)?;
    let mut created = BTreeSet::new();
    let mut used = BTreeSet::new();
    for (_, v) in &objs {
        let Some(o) = object(v) else { continue };
        if o.kind == "Namespace" && o.api_version == "v1" {
            created.insert(o.name.clone());
            continue;
        }
        let group = o.api_version.split_once('/').map_or("", |(g, _)| g);
        if CLUSTER_SCOPED_GROUPS.contains(&group) {
            continue;
        }
        if let Some(ns) = o.namespace {
            used.insert(ns);
        }
    }
    let mut written = Vec::new();
    for ns in used {
        if created.contains(&ns) || BUILT_IN.contains(&ns.as_str()) {
            continue;
        }
        let p = manifests.join(format!("{PREFIX}namespace-{ns}.yaml"));
        write(
            &p,
            &serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
        )?;
        written.push(p);
    }
    Ok(written)
}

/// Writes what the machine-config operator's manifests grant the
/// kubelet's bootstrap identity, which an upstream payload lacks
/// (openshift/machine-config-operator
/// `manifests/machineconfigserver/csr-bootstrap-role-binding.yaml` and
/// `csr-renewal-role-binding.yaml`): the `node-bootstrapper` service
/// account of `openshift-machine-config-operator` (the identity of
/// `auth/kubeconfig-kubelet`) may file node CSRs, and nodes may renew
/// their client certificates. Returns the files written.
///
/// # Errors
/// As [`render_crds`].
pub fn render_node_bootstrap_rbac(manifests: &Path) -> Result<Vec<PathBuf>, RenderError> {
    let bindings = [
        (
            "system-bootstrap-node-bootstrapper",
            serde_json::json!({"kind": "ServiceAccount", "name": "node-bootstrapper", "namespace": "openshift-machine-config-operator"}),
            "system:node-bootstrapper",
        ),
        (
            "system-bootstrap-node-renewal",
            serde_json::json!({"kind": "Group", "name": "system:nodes", "apiGroup": "rbac.authorization.k8s.io"}),
            "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
        ),
    ];
    let mut written = Vec::new();
    for (name, subject, role) in bindings {
        let p = manifests.join(format!("{PREFIX}rbac-{name}.yaml"));
        write(
            &p,
            &serde_json::json!({
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": name},
                "subjects": [subject],
                "roleRef": {"kind": "ClusterRole", "name": role, "apiGroup": "rbac.authorization.k8s.io"},
            }),
        )?;
        written.push(p);
    }
    Ok(written)
}

/// The file [`render_etcd_operator_cr`] writes, under `manifests/`.
pub const ETCD_CR_FILE: &str = "0000_00_okd-upstream-etcd-cluster.yaml";

/// Writes `manifests/0000_00_okd-upstream-etcd-cluster.yaml`: the
/// `etcds.operator.openshift.io/cluster` object that the etcd operator's
/// own manifests create on OpenShift (openshift/cluster-etcd-operator
/// `manifests/0000_12_etcd-operator_06_operator_cr.yaml`), so that with an
/// upstream payload the bootstrap has somewhere to publish the
/// `EtcdBootstrapMemberRemoved` condition that `wait-for
/// bootstrap-complete` and `destroy bootstrap` read. Written before
/// [`render_crds`], which then defines its kind.
///
/// # Errors
/// [`RenderError::Fs`] when it cannot be written.
pub fn render_etcd_operator_cr(manifests: &Path) -> Result<PathBuf, RenderError> {
    let p = manifests.join(ETCD_CR_FILE);
    write(
        &p,
        &serde_json::json!({
            "apiVersion": "operator.openshift.io/v1",
            "kind": "Etcd",
            "metadata": {"name": "cluster"},
            "spec": {"managementState": "Managed"},
        }),
    )?;
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plurals_follow_kubernetes() {
        assert_eq!(plural("DNS"), "dnses");
        assert_eq!(plural("Proxy"), "proxies");
        assert_eq!(plural("Ingress"), "ingresses");
        assert_eq!(plural("FeatureGate"), "featuregates");
        assert_eq!(plural("Gateway"), "gateways");
        assert_eq!(plural("MachineConfig"), "machineconfigs");
    }

    #[test]
    fn missing_crds_and_namespaces_are_written_once() {
        let d = tempfile::tempdir().unwrap();
        let m = d.path();
        std::fs::write(
            m.join("a.yaml"),
            "apiVersion: config.openshift.io/v1\nkind: DNS\nmetadata:\n  name: cluster\n  namespace: ignored\n---\n\
             apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n  namespace: openshift-config\n---\n\
             apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: kube-system\n",
        )
        .unwrap();
        std::fs::write(
            m.join("b.yml"),
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: networks.config.openshift.io\n\
             spec:\n  group: config.openshift.io\n  names:\n    kind: Network\n---\n\
             apiVersion: config.openshift.io/v1\nkind: Network\nmetadata:\n  name: cluster\n---\n\
             apiVersion: v1\nkind: Namespace\nmetadata:\n  name: openshift-made\n---\n\
             apiVersion: v1\nkind: Secret\nmetadata:\n  name: t\n  namespace: openshift-made\n",
        )
        .unwrap();
        let crds = render_crds(m).unwrap();
        assert_eq!(
            crds,
            vec![m.join("0000_00_okd-upstream-crd-dnses.config.openshift.io.yaml")]
        );
        let crd: serde_yaml_ng::Value =
            serde_yaml_ng::from_str(&std::fs::read_to_string(&crds[0]).unwrap()).unwrap();
        assert_eq!(crd["spec"]["scope"].as_str(), Some("Cluster"));
        assert_eq!(crd["spec"]["names"]["plural"].as_str(), Some("dnses"));
        assert_eq!(crd["spec"]["versions"][0]["name"].as_str(), Some("v1"));
        let ns = render_namespaces(m).unwrap();
        assert_eq!(
            ns,
            vec![m.join("0000_00_okd-upstream-namespace-openshift-config.yaml")]
        );
        // A second run finds its own files and writes nothing new.
        assert_eq!(render_crds(m).unwrap(), Vec::<PathBuf>::new());
        assert_eq!(render_namespaces(m).unwrap(), Vec::<PathBuf>::new());
    }

    #[test]
    fn a_malformed_manifest_is_named() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("bad.yaml"), "kind: [\n").unwrap();
        let e = render_crds(d.path()).unwrap_err().to_string();
        assert!(e.contains("bad.yaml"), "{e}");
    }
}
