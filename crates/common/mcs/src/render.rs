//! Rendering a pool's MachineConfigs into one `rendered-<pool>-<hash>`
//! MachineConfig, following the machine-config-operator's merge rules
//! (openshift/machine-config-operator `pkg/controller/common/helpers.go`
//! `MergeMachineConfigs`; coreos/ignition `docs/operator-notes.md` for
//! `merge`/`replace`).

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::McsError;
use crate::accept::{MAX_SPEC3_MINOR, SpecVersion};

/// `apiVersion` of MachineConfig objects.
pub const MC_API_VERSION: &str = "machineconfiguration.openshift.io/v1";
/// Label naming a MachineConfig's pool (`master`, `worker`, …).
pub const ROLE_LABEL: &str = "machineconfiguration.openshift.io/role";

/// The `ignition.version` of rendered configs: the newest spec served.
pub fn internal_version() -> &'static str {
    SpecVersion::V3(MAX_SPEC3_MINOR).as_str()
}

/// True when `v` is a MachineConfig object (`kind: MachineConfig`,
/// `apiVersion: machineconfiguration.openshift.io/v1`).
pub fn is_machine_config(v: &Value) -> bool {
    v.get("kind").and_then(Value::as_str) == Some("MachineConfig")
        && v.get("apiVersion").and_then(Value::as_str) == Some(MC_API_VERSION)
}

/// The pool of a MachineConfig: its `metadata.labels` entry
/// [`ROLE_LABEL`], if any.
pub fn pool_of(mc: &Value) -> Option<&str> {
    mc.pointer("/metadata/labels")?.get(ROLE_LABEL)?.as_str()
}

fn name_of(mc: &Value) -> &str {
    mc.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// `spec.kernelType` values that win over the default (MCO `KernelTypeRealtime`,
/// `KernelType64kPages`).
const NON_DEFAULT_KERNELS: [&str; 2] = ["realtime", "64k-pages"];

/// Renders one pool the way the machine-config-operator's
/// `MergeMachineConfigs` does (`pkg/controller/common/helpers.go`):
/// `machine_configs` (any order) are ordered with the configs labelled
/// `worker` first and then the others, each group sorted by
/// `metadata.name`, and merged in that order:
/// - `spec.config` (Ignition 3.0–3.5) merged child-over-parent by
///   Ignition's own rules ([`merge_config`]); then every file without an
///   `overwrite` gets `overwrite: true` (the MCO always overwrites; files
///   without `contents.source` are left alone, since Ignition refuses
///   `overwrite: true` there);
/// - `spec.kernelArguments` concatenated in order, duplicates kept (some
///   arguments, e.g. `hugepagesz=`/`hugepages=`, must repeat);
/// - `spec.extensions` concatenated in order;
/// - `spec.fips` true if any config sets it;
/// - `spec.kernelType`: the last `realtime` or `64k-pages` of any config,
///   otherwise `default`; a non-default kernel with the `kernel-devel`
///   extension is an error;
/// - `spec.osImageURL` and `spec.baseOSExtensionsContainerImage`: the last
///   non-empty value (there is no ControllerConfig default here).
///
/// The merged config declares spec [`internal_version`]. The result is the
/// MachineConfig object named `rendered-<pool>-<first 32 hex digits of the
/// SHA-256 of the merged spec's compact JSON>`.
///
/// # Errors
/// [`McsError::MachineConfig`] when a `spec.config` is not an Ignition
/// 3.0.0–3.5.0 config, or for `kernel-devel` with a non-default kernel.
pub fn render_pool(pool: &str, machine_configs: &[Value]) -> Result<Value, McsError> {
    let mut merged = Merged::new();
    for mc in merge_order(machine_configs) {
        merged.add(mc)?;
    }
    let spec = merged.into_spec(pool)?;
    let digest = Sha256::digest(okd_types::gojson::to_string(&spec).as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    let name = format!("rendered-{pool}-{}", &hex[..32]);
    Ok(json!({
        "apiVersion": MC_API_VERSION,
        "kind": "MachineConfig",
        "metadata": {"name": name},
        "spec": spec,
    }))
}

/// `machine_configs` in merge order. Stable: worker-labelled configs first
/// (custom pools inherit the worker configs and override them), each group
/// by name.
fn merge_order(machine_configs: &[Value]) -> Vec<&Value> {
    let mut mcs: Vec<&Value> = machine_configs.iter().collect();
    mcs.sort_by(|a, b| {
        let wa = pool_of(a) != Some("worker");
        let wb = pool_of(b) != Some("worker");
        (wa, name_of(a)).cmp(&(wb, name_of(b)))
    });
    mcs
}

/// The spec of a rendered MachineConfig while its inputs are merged in
/// (the rules are listed on [`render_pool`]).
struct Merged {
    config: Map<String, Value>,
    kargs: Vec<Value>,
    extensions: Vec<Value>,
    fips: bool,
    /// The last non-default kernel type, empty for none.
    kernel_type: String,
    os_image: String,
    ext_image: String,
}

impl Merged {
    /// Nothing merged yet: an empty config of spec [`internal_version`].
    fn new() -> Self {
        let mut config = Map::new();
        config.insert("ignition".into(), json!({"version": internal_version()}));
        Merged {
            config,
            kargs: Vec::new(),
            extensions: Vec::new(),
            fips: false,
            kernel_type: String::new(),
            os_image: String::new(),
            ext_image: String::new(),
        }
    }

    /// Merges the next MachineConfig `mc` over what is merged so far.
    fn add(&mut self, mc: &Value) -> Result<(), McsError> {
        let spec = mc.get("spec").cloned().unwrap_or(Value::Null);
        self.add_config(name_of(mc), spec.get("config"))?;
        if let Some(Value::Array(k)) = spec.get("kernelArguments") {
            self.kargs.extend(k.iter().cloned());
        }
        if let Some(Value::Array(e)) = spec.get("extensions") {
            self.extensions.extend(e.iter().cloned());
        }
        self.fips |= spec.get("fips").and_then(Value::as_bool).unwrap_or(false);
        if let Some(k) = spec.get("kernelType").and_then(Value::as_str)
            && NON_DEFAULT_KERNELS.contains(&k)
        {
            self.kernel_type = k.to_string();
        }
        let last = |key: &str, slot: &mut String| {
            if let Some(s) = spec.get(key).and_then(Value::as_str)
                && !s.is_empty()
            {
                *slot = s.to_string();
            }
        };
        last("osImageURL", &mut self.os_image);
        last("baseOSExtensionsContainerImage", &mut self.ext_image);
        Ok(())
    }

    /// Merges `spec.config` of the MachineConfig `name`, if it has one.
    fn add_config(&mut self, name: &str, config: Option<&Value>) -> Result<(), McsError> {
        match config {
            None | Some(Value::Null) => Ok(()),
            Some(Value::Object(child)) => {
                let version = child
                    .get("ignition")
                    .and_then(|i| i.get("version"))
                    .and_then(Value::as_str)
                    .unwrap_or("");
                if !is_mergeable_version(version) {
                    return Err(McsError::MachineConfig {
                        name: name.to_string(),
                        reason: format!(
                            "spec.config declares Ignition version {version:?}; only 3.0.0 to {} are supported",
                            internal_version()
                        ),
                    });
                }
                merge_config(&mut self.config, child);
                Ok(())
            }
            Some(_) => Err(McsError::MachineConfig {
                name: name.to_string(),
                reason: "spec.config is not an object".into(),
            }),
        }
    }

    /// The rendered spec of pool `pool`; refuses `kernel-devel` with a
    /// non-default kernel.
    fn into_spec(self, pool: &str) -> Result<Value, McsError> {
        let Merged {
            mut config,
            kargs,
            extensions,
            fips,
            kernel_type,
            os_image,
            ext_image,
        } = self;
        let kernel_type = if kernel_type.is_empty() {
            "default".to_string()
        } else {
            kernel_type
        };
        if kernel_type != "default" && extensions.iter().any(|e| e == "kernel-devel") {
            return Err(McsError::MachineConfig {
                name: format!("rendered-{pool}"),
                reason: format!(
                    "installing kernel-devel extension is not supported with kernelType: {kernel_type}"
                ),
            });
        }
        // Always the internal version, whatever the inputs declared.
        if let Some(Value::Object(ign)) = config.get_mut("ignition") {
            ign.insert("version".into(), internal_version().into());
        }
        default_overwrite(&mut config);

        let mut spec = Map::new();
        spec.insert("osImageURL".into(), os_image.into());
        if !ext_image.is_empty() {
            spec.insert("baseOSExtensionsContainerImage".into(), ext_image.into());
        }
        spec.insert("config".into(), Value::Object(config));
        spec.insert("kernelArguments".into(), Value::Array(kargs));
        spec.insert("extensions".into(), Value::Array(extensions));
        spec.insert("fips".into(), fips.into());
        spec.insert("kernelType".into(), kernel_type.into());
        Ok(Value::Object(spec))
    }
}

/// `3.0.0` … `3.<MAX>.0`: what the MCO's `ParseCompatibleVersion` accepts.
fn is_mergeable_version(v: &str) -> bool {
    (0..=MAX_SPEC3_MINOR).any(|m| v == format!("3.{m}.0"))
}

/// MCO: "For file entries without a default overwrite, set it to true".
fn default_overwrite(config: &mut Map<String, Value>) {
    let Some(Value::Array(files)) = config.get_mut("storage").and_then(|s| s.get_mut("files"))
    else {
        return;
    };
    for f in files {
        let has_source = f.pointer("/contents/source").is_some_and(|s| !s.is_null());
        if let Value::Object(o) = f
            && has_source
            && o.get("overwrite").is_none_or(Value::is_null)
        {
            o.insert("overwrite".into(), true.into());
        }
    }
}

/// The Ignition 3.x struct a JSON object stands for: it decides how its
/// lists merge (`Key()`, `IgnoreDuplicates()`, `MergedKeys()` of the Go
/// types in `config/v3_*/types`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ty {
    Config,
    Ignition,
    IgnitionConfig,
    Security,
    Tls,
    Proxy,
    Resource,
    Header,
    Passwd,
    User,
    Group,
    Storage,
    Disk,
    Partition,
    Raid,
    Filesystem,
    File,
    Directory,
    Link,
    Luks,
    Clevis,
    Tang,
    Systemd,
    Unit,
    Dropin,
    KernelArguments,
    Other,
}

/// The type of the object (or list element) in field `field` of a `parent`.
fn field_ty(parent: Ty, field: &str) -> Ty {
    use Ty::*;
    match (parent, field) {
        (Config, "ignition") => Ignition,
        (Config, "passwd") => Passwd,
        (Config, "storage") => Storage,
        (Config, "systemd") => Systemd,
        (Config, "kernelArguments") => KernelArguments,
        (Ignition, "config") => IgnitionConfig,
        (Ignition, "security") => Security,
        (Ignition, "proxy") => Proxy,
        (IgnitionConfig, "merge" | "replace") => Resource,
        (Security, "tls") => Tls,
        (Tls, "certificateAuthorities") => Resource,
        (Resource, "httpHeaders") => Header,
        (Passwd, "users") => User,
        (Passwd, "groups") => Group,
        (Storage, "disks") => Disk,
        (Storage, "raid") => Raid,
        (Storage, "filesystems") => Filesystem,
        (Storage, "files") => File,
        (Storage, "directories") => Directory,
        (Storage, "links") => Link,
        (Storage, "luks") => Luks,
        (Disk, "partitions") => Partition,
        (File, "contents" | "append") => Resource,
        (Luks, "clevis") => Clevis,
        (Luks, "keyFile") => Resource,
        (Clevis, "tang") => Tang,
        (Systemd, "units") => Unit,
        (Unit, "dropins") => Dropin,
        _ => Other,
    }
}

/// Lists appended whole (`IgnoreDuplicates`).
fn appends(parent: Ty, field: &str) -> bool {
    use Ty::*;
    matches!(
        (parent, field),
        (File, "append")
            | (Filesystem, "options" | "mountOptions")
            | (Raid, "options")
            | (Luks, "options" | "openOptions")
    )
}

/// Lists whose keys are shared (`MergedKeys`): an entry of one removes the
/// parent's entry with the same key from the others.
fn key_group(parent: Ty, field: &str) -> &'static [&'static str] {
    const NODES: &[&str] = &["files", "directories", "links"];
    const KARGS: &[&str] = &["shouldExist", "shouldNotExist"];
    match (parent, field) {
        (Ty::Storage, "files" | "directories" | "links") => NODES,
        (Ty::KernelArguments, "shouldExist" | "shouldNotExist") => KARGS,
        _ => &[],
    }
}

/// `Key()` of a list entry of type `ty`; `None` for entries without one
/// (objects of unknown lists, which are appended).
fn key_of(ty: Ty, v: &Value) -> Option<String> {
    use Ty::*;
    let Value::Object(o) = v else {
        return Some(match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        });
    };
    let field = |k: &str| o.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    Some(match ty {
        File | Directory | Link => field("path"),
        User | Group | Unit | Dropin | Raid | Luks | Header => field("name"),
        Disk | Filesystem => field("device"),
        Resource => field("source"),
        Tang => field("url"),
        Partition => match o.get("number").and_then(Value::as_i64) {
            Some(n) if n != 0 => format!("number:{n}"),
            _ => match o.get("label").and_then(Value::as_str) {
                Some(l) => format!("label:{l}"),
                None => String::new(),
            },
        },
        _ => return None,
    })
}

/// Merges Ignition 3.x config `child` into `parent` by Ignition's
/// `config/merge` rules (what the MCO's `ign3.Merge` does):
/// - objects merge field by field; a scalar or list-less field of the child
///   replaces the parent's unless it is absent or null;
/// - lists of keyed entries (files/directories/links by `path`, units,
///   dropins, users, groups, raid, luks and HTTP headers by `name`, disks and
///   filesystems by `device`, partitions by number or label, config merges,
///   CAs and resources by `source`, Tang servers by `url`, strings by value):
///   an entry with the key of a parent entry is merged into it in place,
///   other child entries are appended;
/// - files, directories and links share one key space (so do
///   `kernelArguments.shouldExist`/`shouldNotExist`): a child entry removes
///   the parent's entry with that key from the other lists;
/// - a child HTTP header without a value deletes the parent's header;
/// - file `append`, filesystem `options`/`mountOptions`, raid and luks
///   `options` are concatenated.
pub fn merge_config(parent: &mut Map<String, Value>, child: &Map<String, Value>) {
    merge_object(parent, child, Ty::Config);
}

fn merge_object(parent: &mut Map<String, Value>, child: &Map<String, Value>, ty: Ty) {
    let mut done_groups: Vec<&'static [&'static str]> = Vec::new();
    for (key, cv) in child {
        match cv {
            Value::Null => {}
            Value::Object(co) => match parent.get_mut(key) {
                Some(Value::Object(po)) => merge_object(po, co, field_ty(ty, key)),
                _ => {
                    parent.insert(key.clone(), cv.clone());
                }
            },
            Value::Array(_) => {
                let group = key_group(ty, key);
                if group.is_empty() {
                    merge_lists(parent, child, ty, &[key.as_str()]);
                } else if !done_groups.contains(&group) {
                    done_groups.push(group);
                    merge_lists(parent, child, ty, group);
                }
            }
            _ => {
                parent.insert(key.clone(), cv.clone());
            }
        }
    }
}

/// Merges the child's lists `fields` (one key space) into the parent's.
fn merge_lists(
    parent: &mut Map<String, Value>,
    child: &Map<String, Value>,
    ty: Ty,
    fields: &[&str],
) {
    let empty = Vec::new();
    let list = |m: &Map<String, Value>, f: &str| -> Vec<Value> {
        match m.get(f) {
            Some(Value::Array(a)) => a.clone(),
            _ => Vec::new(),
        }
    };
    // key -> (field, index) of the child's entries; the last one wins, as
    // in Go's map.
    let mut child_keys: std::collections::HashMap<String, (usize, usize)> =
        std::collections::HashMap::new();
    for (fi, f) in fields.iter().enumerate() {
        if appends(ty, f) {
            continue;
        }
        let elem = field_ty(ty, f);
        let items = match child.get(*f) {
            Some(Value::Array(a)) => a,
            _ => &empty,
        };
        for (j, it) in items.iter().enumerate() {
            if let Some(k) = key_of(elem, it) {
                child_keys.insert(k, (fi, j));
            }
        }
    }
    for (fi, f) in fields.iter().enumerate() {
        let elem = field_ty(ty, f);
        let pitems = list(parent, f);
        let citems = match child.get(*f) {
            Some(Value::Array(a)) => a,
            _ => &empty,
        };
        if pitems.is_empty() && citems.is_empty() {
            continue;
        }
        let mut out: Vec<Value> = Vec::with_capacity(pitems.len() + citems.len());
        if appends(ty, f) {
            out.extend(pitems);
            out.extend(citems.iter().cloned());
        } else {
            let mut parent_keys = std::collections::HashSet::new();
            for p in pitems {
                let Some(k) = key_of(elem, &p) else {
                    out.push(p);
                    continue;
                };
                parent_keys.insert(k.clone());
                match child_keys.get(&k) {
                    Some(&(cf, cj)) if cf == fi => {
                        let c = &citems[cj];
                        match (p, c) {
                            (_, Value::Object(co))
                                if elem == Ty::Header
                                    && co.get("value").is_none_or(Value::is_null) => {}
                            (Value::Object(mut po), Value::Object(co)) => {
                                merge_object(&mut po, co, elem);
                                out.push(Value::Object(po));
                            }
                            (_, c) => out.push(c.clone()),
                        }
                    }
                    // In the child under another list of the key space:
                    // that entry replaces this one.
                    Some(_) => {}
                    None => out.push(p),
                }
            }
            for c in citems {
                match key_of(elem, c) {
                    Some(k) if parent_keys.contains(&k) => {}
                    _ => out.push(c.clone()),
                }
            }
        }
        if out.is_empty() {
            parent.remove(*f);
        } else {
            parent.insert((*f).to_string(), Value::Array(out));
        }
    }
}
