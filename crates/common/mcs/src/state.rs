//! The server's state: rendered pools, bootstrap inputs and the served
//! bodies for every spec version (openshift/machine-config-operator
//! `pkg/server/bootstrap_server.go`).

use std::collections::BTreeMap;
use std::path::Path;

use axum::body::Bytes;
use serde_json::{Map, Value, json};

use crate::McsError;
use crate::accept::SpecVersion;
use crate::convert::convert;
use crate::render::{internal_version, is_machine_config, pool_of, render_pool};

/// Where `bootstrap.ign` keeps the kubelet bootstrap kubeconfig.
pub const KUBECONFIG_KUBELET_PATH: &str = "/opt/openshift/auth/kubeconfig-kubelet";
/// Where `bootstrap.ign` keeps the kube-apiserver CA bundle served as
/// `/etc/kubernetes/kubelet-ca.crt`.
pub const KUBE_APISERVER_CA_PATH: &str =
    "/opt/openshift/tls/kube-apiserver-complete-server-ca-bundle.crt";
/// The machine-config-server certificate inside `bootstrap.ign`.
pub const MCS_CERT_PATH: &str = "/opt/openshift/tls/machine-config-server.crt";
/// The machine-config-server key inside `bootstrap.ign`.
pub const MCS_KEY_PATH: &str = "/opt/openshift/tls/machine-config-server.key";
/// Directories of `bootstrap.ign` holding manifests with MachineConfigs.
pub const BOOTSTRAP_MANIFEST_DIRS: [&str; 2] =
    ["/opt/openshift/openshift/", "/opt/openshift/manifests/"];

/// The inputs of a served config that do not come from MachineConfigs.
/// `Debug` shows the sizes, not the kubeconfig (a client key) nor the key.
#[derive(Clone, Default)]
pub struct BootstrapInputs {
    /// PEM bundle written to `/etc/kubernetes/kubelet-ca.crt`.
    pub kubelet_ca: Vec<u8>,
    /// Kubeconfig written to `/etc/kubernetes/kubeconfig`.
    pub kubeconfig: Vec<u8>,
    /// PEM certificate chain the TLS listener presents.
    pub tls_cert_pem: Vec<u8>,
    /// PEM private key (PKCS#1, PKCS#8 or SEC1) of `tls_cert_pem`.
    pub tls_key_pem: Vec<u8>,
}

impl std::fmt::Debug for BootstrapInputs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let len = |b: &Vec<u8>| format!("<{} bytes>", b.len());
        f.debug_struct("BootstrapInputs")
            .field("kubelet_ca", &len(&self.kubelet_ca))
            .field("kubeconfig", &len(&self.kubeconfig))
            .field("tls_cert_pem", &len(&self.tls_cert_pem))
            .field("tls_key_pem", &len(&self.tls_key_pem))
            .finish()
    }
}

/// One rendered pool and its served bodies.
#[derive(Debug, Clone)]
pub struct RenderedPool {
    /// The rendered MachineConfig object (`rendered-<pool>-<hash>`).
    pub machine_config: Value,
    /// Body (compact JSON, shared by every response) or conversion error
    /// message, per spec version.
    bodies: BTreeMap<SpecVersion, Result<Bytes, String>>,
}

impl RenderedPool {
    /// `metadata.name` of the rendered MachineConfig.
    pub fn name(&self) -> &str {
        self.machine_config
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("")
    }
}

/// Everything the machine-config server serves. Built once; immutable.
#[derive(Debug, Clone)]
pub struct McsState {
    pools: BTreeMap<String, RenderedPool>,
    inputs: BootstrapInputs,
    node_program: Option<std::path::PathBuf>,
}

/// Percent-escapes like Go's `dataurl.Escape`: letters, digits and
/// `-_.~$&+,/:;=?@` are kept, every other byte becomes `%XX`.
pub fn escape_data_url(data: &[u8]) -> String {
    let mut out = String::with_capacity(6 + data.len() * 2);
    out.push_str("data:,");
    for &b in data {
        let keep = b.is_ascii_alphanumeric() || b"-_.~$&+,/:;=?@".contains(&b);
        if keep {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn bootstrap_file(path: &str, contents: &[u8]) -> Value {
    json!({
        "path": path,
        "contents": {"source": escape_data_url(contents)},
        "mode": 420,
        "overwrite": true,
    })
}

fn push_file(cfg: &mut Value, file: Value) {
    let Value::Object(root) = cfg else { return };
    let storage = root.entry("storage").or_insert_with(|| json!({}));
    let Value::Object(storage) = storage else {
        return;
    };
    let files = storage.entry("files").or_insert_with(|| json!([]));
    if let Value::Array(files) = files {
        files.retain(|f| f.get("path") != file.get("path"));
        files.push(file);
    }
}

/// Builds the body served for `spec` from a rendered MachineConfig
/// (openshift/machine-config-operator `pkg/server/bootstrap_server.go`,
/// `pkg/server/api.go`): below spec 3.3 the config's
/// `kernelArguments.shouldExist` move into the MachineConfig's
/// `spec.kernelArguments` (and `shouldNotExist` is an error); then the five
/// bootstrap files are appended (mode 420, overwrite true, `data:,` URLs):
/// `/etc/kubernetes/kubelet-ca.crt`,
/// `/etc/machine-config-daemon/node-annotations.json`,
/// `/etc/kubernetes/kubeconfig`, `/etc/mcs-machine-config-content.json`
/// (the MachineConfig, 4-space indented) and
/// `/etc/ignition-machine-config-encapsulated.json` (the MachineConfig with
/// an empty config, compact); finally the config is converted to `spec`.
///
/// # Errors
/// A message naming the field that the spec cannot express.
pub fn served_config(
    rendered: &Value,
    inputs: &BootstrapInputs,
    spec: SpecVersion,
) -> Result<Value, String> {
    let mut mc = rendered.clone();
    let name = rendered
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let below_3_3 = spec.minor3().is_none_or(|m| m < 3);
    if below_3_3
        && let Some(Value::Object(cfg)) = mc.pointer_mut("/spec/config")
        && let Some(k) = cfg.remove("kernelArguments")
    {
        {
            if k.get("shouldNotExist")
                .and_then(Value::as_array)
                .is_some_and(|a| !a.is_empty())
            {
                return Err(format!(
                    "kernelArguments.shouldNotExist cannot be served with Ignition spec {spec}"
                ));
            }
            let add: Vec<Value> = k
                .get("shouldExist")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            if let Some(Value::Array(kargs)) = mc.pointer_mut("/spec/kernelArguments") {
                for a in add {
                    if !kargs.contains(&a) {
                        kargs.push(a);
                    }
                }
            }
        }
    }
    let mut cfg = mc.pointer("/spec/config").cloned().unwrap_or(json!({}));

    let mut ann = Map::new();
    for k in ["currentConfig", "desiredConfig", "firstPivotConfig"] {
        ann.insert(
            format!("machineconfiguration.openshift.io/{k}"),
            name.clone().into(),
        );
    }
    ann.insert(
        "machineconfiguration.openshift.io/state".into(),
        "Done".into(),
    );
    let mut encapsulated = mc.clone();
    let empty_version = match spec {
        SpecVersion::V2_2 => "2.2.0",
        SpecVersion::V3(_) => internal_version(),
    };
    if let Some(c) = encapsulated.pointer_mut("/spec/config") {
        *c = json!({"ignition": {"version": empty_version}});
    }
    let files = [
        ("/etc/kubernetes/kubelet-ca.crt", inputs.kubelet_ca.clone()),
        (
            "/etc/machine-config-daemon/node-annotations.json",
            okd_types::gojson::to_string(&ann).into_bytes(),
        ),
        ("/etc/kubernetes/kubeconfig", inputs.kubeconfig.clone()),
        (
            "/etc/mcs-machine-config-content.json",
            okd_types::gojson::to_string_pretty(&mc, "    ").into_bytes(),
        ),
        (
            "/etc/ignition-machine-config-encapsulated.json",
            okd_types::gojson::to_string(&encapsulated).into_bytes(),
        ),
    ];
    for (path, data) in files {
        push_file(&mut cfg, bootstrap_file(path, &data));
    }
    convert(&cfg, spec).map_err(|e| e.to_string())
}

impl McsState {
    /// Builds the state from MachineConfig objects (any order; objects that
    /// are not MachineConfigs or carry no role label are skipped) and the
    /// bootstrap inputs. Pools `master` and `worker` always exist (empty
    /// when no MachineConfig names them). Bodies for every
    /// [`SpecVersion::all`] are built here, so serving is a lookup.
    ///
    /// # Errors
    /// [`McsError::MachineConfig`] when a config cannot be rendered.
    pub fn from_parts(
        machine_configs: Vec<Value>,
        inputs: BootstrapInputs,
    ) -> Result<McsState, McsError> {
        let mut by_pool: BTreeMap<String, Vec<Value>> = BTreeMap::new();
        by_pool.entry("master".into()).or_default();
        by_pool.entry("worker".into()).or_default();
        for mc in machine_configs {
            if !is_machine_config(&mc) {
                continue;
            }
            if let Some(p) = pool_of(&mc).map(str::to_string) {
                by_pool.entry(p).or_default().push(mc);
            }
        }
        let mut pools = BTreeMap::new();
        for (pool, mcs) in by_pool {
            let rendered = render_pool(&pool, &mcs)?;
            let mut bodies = BTreeMap::new();
            for spec in SpecVersion::all() {
                let body = served_config(&rendered, &inputs, spec)
                    .map(|v| Bytes::from(okd_types::gojson::to_string(&v).into_bytes()));
                bodies.insert(spec, body);
            }
            pools.insert(
                pool,
                RenderedPool {
                    machine_config: rendered,
                    bodies,
                },
            );
        }
        Ok(McsState {
            pools,
            inputs,
            node_program: None,
        })
    }

    /// Reads an openshift-install asset directory after
    /// `create ignition-configs`: `bootstrap.ign` is required; MachineConfigs
    /// come from `openshift/*.yaml` and `manifests/*.yaml` (`.yml`, `.json`
    /// too, multi-document YAML allowed) when either directory exists,
    /// otherwise from `bootstrap.ign`'s files under
    /// [`BOOTSTRAP_MANIFEST_DIRS`]. `bootstrap.ign` also gives
    /// [`KUBECONFIG_KUBELET_PATH`], [`KUBE_APISERVER_CA_PATH`],
    /// [`MCS_CERT_PATH`] and [`MCS_KEY_PATH`].
    ///
    /// # Errors
    /// [`McsError::Read`] / [`McsError::Parse`] for unreadable or malformed
    /// files, [`McsError::MissingFile`] when `bootstrap.ign` lacks one of the
    /// four files, [`McsError::MachineConfig`] from rendering.
    pub fn from_asset_dir(dir: &Path) -> Result<McsState, McsError> {
        use okd_types::large_strings::{ReadJsonError, read_json_dropping_data_urls};
        let ign_path = dir.join("bootstrap.ign");
        // As a stream, its data URLs over 4 MiB dropped unread: the node
        // program it carries is tens of MB; what is read here is a few KiB.
        let ign: Value = read_json_dropping_data_urls(&ign_path, 4 << 20).map_err(|e| match e {
            ReadJsonError::Open(source) => McsError::Read {
                path: ign_path.clone(),
                source,
            },
            ReadJsonError::Json(e) => McsError::Parse {
                path: ign_path.clone(),
                reason: e.to_string(),
            },
        })?;
        let mut files: BTreeMap<String, Vec<u8>> = BTreeMap::new();
        for f in ign
            .pointer("/storage/files")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let (Some(p), Some(src)) = (
                f.get("path").and_then(Value::as_str),
                f.pointer("/contents/source").and_then(Value::as_str),
            ) else {
                continue;
            };
            let data = okd_types::dataurl::decode(src).map_err(|e| McsError::Parse {
                path: ign_path.join(p),
                reason: e.to_string(),
            })?;
            files.insert(p.to_string(), data);
        }
        let need = |p: &str| {
            files.get(p).cloned().ok_or_else(|| McsError::MissingFile {
                ignition: ign_path.clone(),
                path: p.to_string(),
            })
        };
        let inputs = BootstrapInputs {
            kubelet_ca: need(KUBE_APISERVER_CA_PATH)?,
            kubeconfig: need(KUBECONFIG_KUBELET_PATH)?,
            tls_cert_pem: need(MCS_CERT_PATH)?,
            tls_key_pem: need(MCS_KEY_PATH)?,
        };

        let mut mcs = Vec::new();
        let disk_dirs = [dir.join("openshift"), dir.join("manifests")];
        if disk_dirs.iter().any(|d| d.is_dir()) {
            mcs = read_manifest_dirs(&disk_dirs)?;
        } else {
            for (p, data) in &files {
                if BOOTSTRAP_MANIFEST_DIRS.iter().any(|d| p.starts_with(d)) && is_manifest_name(p) {
                    mcs.extend(parse_manifests(&ign_path.join(p), data)?);
                }
            }
        }
        McsState::from_parts(mcs, inputs)
    }

    /// Reads the bootstrap node's asset directory `work` (`/opt/openshift`,
    /// as `bootstrap.ign` laid it down): MachineConfigs from
    /// `openshift/` and `manifests/`, and the four inputs from the files
    /// [`KUBE_APISERVER_CA_PATH`], [`KUBECONFIG_KUBELET_PATH`],
    /// [`MCS_CERT_PATH`] and [`MCS_KEY_PATH`] name, under `work`. This is
    /// what the bootstrap's own machine-config server serves
    /// (openshift/machine-config-operator `cmd/machine-config-server`
    /// `bootstrap`, started by bootkube's `mco-bootstrap` stage).
    ///
    /// # Errors
    /// [`McsError::Read`] for a missing or unreadable file,
    /// [`McsError::Parse`] for a malformed manifest,
    /// [`McsError::MachineConfig`] from rendering.
    pub fn from_bootstrap_node(work: &Path) -> Result<McsState, McsError> {
        Self::from_bootstrap_node_with(work, Vec::new())
    }

    /// [`McsState::from_bootstrap_node`] with `extra` MachineConfigs
    /// rendered into the pools as if they were among the manifests (and
    /// never written to disk, so never created in the cluster).
    ///
    /// # Errors
    /// As [`McsState::from_bootstrap_node`].
    pub fn from_bootstrap_node_with(work: &Path, extra: Vec<Value>) -> Result<McsState, McsError> {
        let read = |abs: &str| {
            let p = work.join(abs.trim_start_matches("/opt/openshift/"));
            std::fs::read(&p).map_err(|source| McsError::Read { path: p, source })
        };
        let inputs = BootstrapInputs {
            kubelet_ca: read(KUBE_APISERVER_CA_PATH)?,
            kubeconfig: read(KUBECONFIG_KUBELET_PATH)?,
            tls_cert_pem: read(MCS_CERT_PATH)?,
            tls_key_pem: read(MCS_KEY_PATH)?,
        };
        let dirs = [work.join("openshift"), work.join("manifests")];
        let mut mcs = read_manifest_dirs(&dirs)?;
        mcs.extend(extra);
        McsState::from_parts(mcs, inputs)
    }

    /// Pool names, sorted.
    pub fn pools(&self) -> impl Iterator<Item = &str> {
        self.pools.keys().map(String::as_str)
    }

    /// The rendered pool `pool`, if served.
    pub fn pool(&self, pool: &str) -> Option<&RenderedPool> {
        self.pools.get(pool)
    }

    /// The body served for `pool` in `spec`: `None` for an unknown pool,
    /// `Some(Err(message))` when the config cannot be expressed in `spec`.
    pub fn body(&self, pool: &str, spec: SpecVersion) -> Option<Result<&[u8], &str>> {
        Some(match self.shared_body(pool, spec)? {
            Ok(v) => Ok(v.as_ref()),
            Err(e) => Err(e),
        })
    }

    /// [`McsState::body`] as the shared buffer the server sends (cloning it
    /// copies nothing).
    pub(crate) fn shared_body(
        &self,
        pool: &str,
        spec: SpecVersion,
    ) -> Option<Result<&Bytes, &str>> {
        let b = self.pools.get(pool)?.bodies.get(&spec)?;
        Some(match b {
            Ok(v) => Ok(v),
            Err(e) => Err(e.as_str()),
        })
    }

    /// Serves the file `path` at [`crate::NODE_PROGRAM_ROUTE`] (the
    /// bootstrap node's okd-install program, which a master's config
    /// fetches from there when the payload has no operators).
    pub fn set_node_program(&mut self, path: std::path::PathBuf) {
        self.node_program = Some(path);
    }

    /// The file served at [`crate::NODE_PROGRAM_ROUTE`], if any.
    pub fn node_program(&self) -> Option<&Path> {
        self.node_program.as_deref()
    }

    /// The bootstrap inputs (CA, kubeconfig, TLS pair).
    pub fn inputs(&self) -> &BootstrapInputs {
        &self.inputs
    }

    /// Replaces the TLS pair presented by [`crate::serve_tls`] (PEM).
    pub fn set_tls_pair(&mut self, cert_pem: Vec<u8>, key_pem: Vec<u8>) {
        self.inputs.tls_cert_pem = cert_pem;
        self.inputs.tls_key_pem = key_pem;
    }
}

fn is_manifest_name(p: &str) -> bool {
    p.ends_with(".yaml") || p.ends_with(".yml") || p.ends_with(".json")
}

fn parse_manifests(path: &Path, data: &[u8]) -> Result<Vec<Value>, McsError> {
    use serde::Deserialize;
    let text = String::from_utf8_lossy(data);
    let mut out = Vec::new();
    for doc in serde_yaml_ng::Deserializer::from_str(&text) {
        let v = Value::deserialize(doc).map_err(|e| McsError::Parse {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;
        if is_machine_config(&v) {
            out.push(v);
        }
    }
    Ok(out)
}

/// The MachineConfigs of the manifest files (`.yaml`, `.yml`, `.json`,
/// multi-document YAML allowed) in each existing directory of `dirs`, in
/// name order.
fn read_manifest_dirs(dirs: &[std::path::PathBuf]) -> Result<Vec<Value>, McsError> {
    let mut mcs = Vec::new();
    for d in dirs.iter().filter(|d| d.is_dir()) {
        let rd = std::fs::read_dir(d).map_err(|source| McsError::Read {
            path: d.clone(),
            source,
        })?;
        let mut paths: Vec<_> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
        paths.sort();
        for p in paths {
            if !is_manifest_name(&p.to_string_lossy()) {
                continue;
            }
            let data = std::fs::read(&p).map_err(|source| McsError::Read {
                path: p.clone(),
                source,
            })?;
            mcs.extend(parse_manifests(&p, &data)?);
        }
    }
    Ok(mcs)
}
