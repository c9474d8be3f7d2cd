//! Creating okd-install's `manifests/` and `openshift/` in a real
//! kube-apiserver the way the bootstrap node does: cluster-bootstrap
//! (openshift/cluster-bootstrap `pkg/start`, which calls
//! openshift/library-go `pkg/assets/create/creater.go`
//! `EnsureManifestsCreated`) creates every file as one object, and for a
//! file that carries `status` and whose created object has none, writes it
//! through the status subresource (`UpdateStatus`).
//!
//! Before that, the CustomResourceDefinitions of those objects (kept in
//! `tests/data/openshift-crds`, see its README for their source) are created
//! and waited for until `Established`, and the namespaces the objects live
//! in are created: on a real bootstrap node both come from the release
//! payload's manifests, which bootkube renders into the same directory.
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::kube::ControlPlane;

/// The directory of the openshift/api CRDs kept as test data.
pub fn crd_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/openshift-crds")
}

/// One manifest file and the object it holds.
#[derive(Debug, Clone)]
pub struct Manifest {
    /// The file.
    pub path: PathBuf,
    /// Its object, as JSON.
    pub obj: Value,
}

impl Manifest {
    /// `apiVersion`.
    pub fn api_version(&self) -> &str {
        self.obj["apiVersion"].as_str().unwrap_or_default()
    }
    /// `kind`.
    pub fn kind(&self) -> &str {
        self.obj["kind"].as_str().unwrap_or_default()
    }
    /// `metadata.name`.
    pub fn name(&self) -> &str {
        self.obj["metadata"]["name"].as_str().unwrap_or_default()
    }
    /// `metadata.namespace` (empty when absent).
    pub fn namespace(&self) -> &str {
        self.obj["metadata"]["namespace"]
            .as_str()
            .unwrap_or_default()
    }
    /// `dir/file` for messages.
    pub fn label(&self) -> String {
        let parent = self
            .path
            .parent()
            .and_then(Path::file_name)
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let file = self
            .path
            .file_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        format!("{parent}/{file}")
    }
}

/// Every file below `dirs` (all of them, as library-go's `load` reads
/// every file), each parsed as one YAML document, sorted by path like
/// cluster-bootstrap.
pub fn load(dirs: &[&Path]) -> Vec<Manifest> {
    let mut out = Vec::new();
    for d in dirs {
        let mut ents: Vec<PathBuf> = std::fs::read_dir(d)
            .unwrap_or_else(|e| panic!("{}: {e}", d.display()))
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_file())
            .collect();
        ents.sort();
        out.extend(ents.into_iter().map(load_file));
    }
    out
}

/// One manifest file holding one YAML document.
pub fn load_file(path: PathBuf) -> Manifest {
    let text = std::fs::read_to_string(&path).unwrap();
    let docs = text.split("\n---").filter(|d| !d.trim().is_empty()).count();
    assert_eq!(
        docs,
        1,
        "{}: cluster-bootstrap reads one object per file",
        path.display()
    );
    let obj: Value =
        serde_yaml_ng::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    Manifest { path, obj }
}

/// A resource the API server serves: its plural and whether it is
/// namespaced.
#[derive(Debug, Clone)]
pub struct Resource {
    /// Plural (`infrastructures`).
    pub plural: String,
    /// `group/version` (`v1` for the core group).
    pub api_version: String,
    /// Namespaced or cluster-scoped.
    pub namespaced: bool,
}

impl Resource {
    /// `plural.version.group`, the fully qualified name kubectl takes.
    pub fn qualified(&self) -> String {
        match self.api_version.split_once('/') {
            Some((g, v)) => format!("{}.{v}.{g}", self.plural),
            None => self.plural.clone(),
        }
    }
}

/// `(apiVersion, kind)` → resource, from `kubectl api-resources`
/// (discovery, as cluster-bootstrap's REST mapper).
pub fn resources(cp: &ControlPlane) -> BTreeMap<(String, String), Resource> {
    let text = cp.admin(&["api-resources", "--no-headers"]);
    let mut m = BTreeMap::new();
    for line in text.lines() {
        let cols: Vec<&str> = line.split_whitespace().collect();
        if cols.len() < 4 {
            continue;
        }
        let n = cols.len();
        let (plural, api_version, namespaced, kind) =
            (cols[0], cols[n - 3], cols[n - 2], cols[n - 1]);
        m.insert(
            (api_version.to_string(), kind.to_string()),
            Resource {
                plural: plural.to_string(),
                api_version: api_version.to_string(),
                namespaced: namespaced == "true",
            },
        );
    }
    m
}

/// Creates every CRD (`*.crd.yaml`) of [`crd_dir`] and waits (bounded, 60 s) until each is
/// `Established`. Returns the CRD names.
pub fn install_crds(cp: &ControlPlane) -> Vec<String> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(crd_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".crd.yaml"))
        .collect();
    files.sort();
    let mut names = Vec::new();
    for m in files.into_iter().map(load_file) {
        assert_eq!(m.kind(), "CustomResourceDefinition", "{}", m.label());
        let f = m.path.to_str().unwrap();
        cp.admin(&["create", "--validate=strict", "-f", f]);
        names.push(format!("crd/{}", m.name()));
    }
    let mut args = vec!["wait", "--for=condition=Established", "--timeout=60s"];
    args.extend(names.iter().map(String::as_str));
    cp.admin(&args);
    names
}

/// The namespaces the namespaced objects of `manifests` live in, less the
/// ones Kubernetes makes itself; created first, as cluster-bootstrap
/// creates `Namespace` manifests before the rest. Returns them.
pub fn create_namespaces(
    cp: &ControlPlane,
    manifests: &[Manifest],
    res: &BTreeMap<(String, String), Resource>,
) -> BTreeSet<String> {
    let builtin = ["default", "kube-system", "kube-public", "kube-node-lease"];
    let mut set = BTreeSet::new();
    for m in manifests {
        let r = resource_of(m, res);
        if r.is_some_and(|r| r.namespaced) && !builtin.contains(&m.namespace()) {
            assert!(!m.namespace().is_empty(), "{}: no namespace", m.label());
            set.insert(m.namespace().to_string());
        }
    }
    for ns in &set {
        cp.admin(&["create", "namespace", ns]);
    }
    set
}

fn resource_of<'a>(
    m: &Manifest,
    res: &'a BTreeMap<(String, String), Resource>,
) -> Option<&'a Resource> {
    res.get(&(m.api_version().to_string(), m.kind().to_string()))
}

/// What the API server did with one manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Created, status (if any) written, read back with every generated
    /// field but the `unknown` ones.
    Accepted {
        /// Whether `status` went through the status subresource.
        status_written: bool,
        /// Fields the API server warned of as unknown to the schema and
        /// dropped (`spec.x`, as its `Warning: unknown field` names them).
        unknown: Vec<String>,
    },
    /// Refused or changed at `step` (`discovery`, `create`, `status`,
    /// `read`, `compare`) with the API server's message.
    Refused {
        /// The step.
        step: &'static str,
        /// The message.
        message: String,
    },
}

/// Creates every manifest as cluster-bootstrap does (create, then status
/// through the status subresource when the created object has none), then
/// reads each back and checks that every generated field is there as
/// generated. Returns each file's outcome, in order.
pub fn create_all(
    cp: &ControlPlane,
    manifests: &[Manifest],
    res: &BTreeMap<(String, String), Resource>,
) -> Vec<(String, Outcome)> {
    let mut out = Vec::new();
    for m in manifests {
        out.push((m.label(), create_one(cp, m, res)));
    }
    out
}

fn refused(step: &'static str, message: impl Into<String>) -> Outcome {
    Outcome::Refused {
        step,
        message: message.into(),
    }
}

fn create_one(
    cp: &ControlPlane,
    m: &Manifest,
    res: &BTreeMap<(String, String), Resource>,
) -> Outcome {
    let Some(r) = resource_of(m, res) else {
        return refused(
            "discovery",
            format!("the API server serves no {} {}", m.api_version(), m.kind()),
        );
    };
    let kc = cp.dir.join("auth/kubeconfig");
    let file = m.path.to_str().unwrap();
    // Field validation `Warn`, the API server's default for a client that
    // sets none (cluster-bootstrap's dynamic client): an unknown field is
    // dropped with a warning, which is collected here.
    let mut unknown = Vec::new();
    let out = cp.kubectl(&kc, &["create", "--validate=warn", "-f", file]);
    if !out.status.success() {
        return refused("create", String::from_utf8_lossy(&out.stderr));
    }
    unknown_fields(&out.stderr, &mut unknown);
    let read = |cp: &ControlPlane| -> Result<Value, String> {
        let mut args = vec![
            "get".to_string(),
            r.qualified(),
            m.name().to_string(),
            "-o".into(),
            "json".into(),
        ];
        if r.namespaced {
            args.extend(["-n".to_string(), m.namespace().to_string()]);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = cp.kubectl(&kc, &args);
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).into_owned());
        }
        serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())
    };
    let mut obj = match read(cp) {
        Ok(o) => o,
        Err(e) => return refused("read", e),
    };
    let mut status_written = false;
    if let Some(status) = m.obj.get("status")
        && obj.get("status").is_none()
    {
        obj["status"] = status.clone();
        let f = cp.scratch.join(format!(
            "status-{}-{}.json",
            m.kind().to_lowercase(),
            m.name()
        ));
        std::fs::write(&f, serde_json::to_vec(&obj).unwrap()).unwrap();
        let out = cp.kubectl(
            &kc,
            &[
                "replace",
                "--validate=warn",
                "--subresource=status",
                "-f",
                f.to_str().unwrap(),
            ],
        );
        if !out.status.success() {
            return refused("status", String::from_utf8_lossy(&out.stderr));
        }
        unknown_fields(&out.stderr, &mut unknown);
        status_written = true;
        obj = match read(cp) {
            Ok(o) => o,
            Err(e) => return refused("read", e),
        };
    }
    let mut expected = m.obj.clone();
    let meta = expected["metadata"].as_object_mut().unwrap();
    meta.remove("creationTimestamp");
    if !r.namespaced {
        // cluster-bootstrap posts cluster-scoped objects without a
        // namespace in the path; the API server clears the field.
        meta.remove("namespace");
    }
    let mut diffs = Vec::new();
    subset(&expected, &obj, "", &mut diffs);
    // A dropped unknown field is reported as such, not again as missing.
    diffs.retain(|d| {
        !unknown
            .iter()
            .any(|u| d.starts_with(&format!(".{u}:")) || d.starts_with(&format!(".{u}.")))
    });
    if diffs.is_empty() {
        Outcome::Accepted {
            status_written,
            unknown,
        }
    } else {
        refused("compare", diffs.join("; "))
    }
}

/// The fields of kubectl's `Warning: unknown field "x"` lines.
fn unknown_fields(stderr: &[u8], out: &mut Vec<String>) {
    for line in String::from_utf8_lossy(stderr).lines() {
        if let Some(rest) = line.strip_prefix("Warning: unknown field \"") {
            out.push(rest.trim_end_matches('"').to_string());
        }
    }
}

/// Pushes onto `diffs` every place where `actual` lacks or differs from a
/// non-null value of `expected` (a null in `expected` may be absent).
pub fn subset(expected: &Value, actual: &Value, path: &str, diffs: &mut Vec<String>) {
    match (expected, actual) {
        (Value::Null, _) => {}
        (Value::Object(e), Value::Object(a)) => {
            for (k, v) in e {
                let p = format!("{path}.{k}");
                match a.get(k) {
                    Some(av) => subset(v, av, &p, diffs),
                    None if v.is_null() => {}
                    None => diffs.push(format!("{p}: missing (generated {v})")),
                }
            }
        }
        (Value::Array(e), Value::Array(a)) if e.len() == a.len() => {
            for (i, (ev, av)) in e.iter().zip(a).enumerate() {
                subset(ev, av, &format!("{path}[{i}]"), diffs);
            }
        }
        (e, a) if e == a => {}
        (e, a) => diffs.push(format!("{path}: generated {e}, stored {a}")),
    }
}
