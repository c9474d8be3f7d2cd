//! Rendering a pool's MachineConfigs into one `rendered-<pool>-<hash>`
//! MachineConfig, following the machine-config-operator's merge rules
//! (`pkg/controller/common/helpers.go` `MergeMachineConfigs`, installer.md §6,
//! infra-tools.md F.4).

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

/// Renders one pool: `machine_configs` (MachineConfig objects, any order)
/// are sorted by `metadata.name` and merged in that order:
/// - `spec.config` Ignition 3.x configs merged child-over-parent: files,
///   directories and links with the same path replace the earlier node of
///   any kind; units with the same name replace the earlier unit; passwd users
///   with the same name are merged field by field with `sshAuthorizedKeys`
///   appended (duplicates dropped); groups, disks, raid, filesystems and luks
///   entries with the same key replace; `ignition.config.merge`, CAs and
///   Ignition kernel arguments are appended;
/// - `spec.kernelArguments` concatenated in order; `spec.extensions` unioned
///   in first-seen order; `spec.fips` true if any is; `spec.kernelType`,
///   `spec.osImageURL` and `spec.baseOSExtensionsContainerImage`: the last
///   non-empty value wins.
///
/// The merged config declares spec [`internal_version`]. The result is the
/// MachineConfig object named `rendered-<pool>-<first 32 hex digits of the
/// SHA-256 of the merged spec's compact JSON>`.
///
/// # Errors
/// [`McsError::MachineConfig`] when a `spec.config` is not a spec 3.x config.
pub fn render_pool(pool: &str, machine_configs: &[Value]) -> Result<Value, McsError> {
    let mut mcs: Vec<&Value> = machine_configs.iter().collect();
    mcs.sort_by(|a, b| name_of(a).cmp(name_of(b)));

    let mut config = Map::new();
    config.insert("ignition".into(), json!({"version": internal_version()}));
    let mut kargs: Vec<Value> = Vec::new();
    let mut extensions: Vec<Value> = Vec::new();
    let mut fips = false;
    let mut kernel_type = String::new();
    let mut os_image = String::new();
    let mut ext_image = String::new();

    for mc in mcs {
        let name = name_of(mc).to_string();
        let spec = mc.get("spec").cloned().unwrap_or(Value::Null);
        match spec.get("config") {
            None | Some(Value::Null) => {}
            Some(Value::Object(child)) => {
                let version = child
                    .get("ignition")
                    .and_then(|i| i.get("version"))
                    .and_then(Value::as_str)
                    .unwrap_or("");
                if !version.starts_with("3.") {
                    return Err(McsError::MachineConfig {
                        name,
                        reason: format!(
                            "spec.config declares Ignition version {version:?}; only 3.x is supported"
                        ),
                    });
                }
                merge_config(&mut config, child);
            }
            Some(_) => {
                return Err(McsError::MachineConfig {
                    name,
                    reason: "spec.config is not an object".into(),
                });
            }
        }
        if let Some(Value::Array(k)) = spec.get("kernelArguments") {
            kargs.extend(k.iter().cloned());
        }
        if let Some(Value::Array(e)) = spec.get("extensions") {
            for x in e {
                if !extensions.contains(x) {
                    extensions.push(x.clone());
                }
            }
        }
        fips |= spec.get("fips").and_then(Value::as_bool).unwrap_or(false);
        let last = |key: &str, slot: &mut String| {
            if let Some(s) = spec.get(key).and_then(Value::as_str)
                && !s.is_empty()
            {
                *slot = s.to_string();
            }
        };
        last("kernelType", &mut kernel_type);
        last("osImageURL", &mut os_image);
        last("baseOSExtensionsContainerImage", &mut ext_image);
    }
    // Always the internal version, whatever the inputs declared.
    if let Some(Value::Object(ign)) = config.get_mut("ignition") {
        ign.insert("version".into(), internal_version().into());
    }

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
    let spec = Value::Object(spec);

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

/// Merges Ignition 3.x config `child` into `parent` (see [`render_pool`]).
pub fn merge_config(parent: &mut Map<String, Value>, child: &Map<String, Value>) {
    for (key, cv) in child {
        match key.as_str() {
            "ignition" => merge_ignition_section(parent, cv),
            "kernelArguments" => {
                let pk = obj_entry(parent, "kernelArguments");
                for list in ["shouldExist", "shouldNotExist"] {
                    append_unique(pk, list, cv.get(list));
                }
            }
            "passwd" => {
                let pp = obj_entry(parent, "passwd");
                if let Some(Value::Array(users)) = cv.get("users") {
                    let pu = arr_entry(pp, "users");
                    for u in users {
                        merge_user(pu, u);
                    }
                }
                if let Some(Value::Array(groups)) = cv.get("groups") {
                    let pg = arr_entry(pp, "groups");
                    for g in groups {
                        replace_keyed(pg, g, "name");
                    }
                }
            }
            "storage" => {
                let ps = obj_entry(parent, "storage");
                merge_nodes(ps, cv);
                for (list, k) in [
                    ("disks", "device"),
                    ("raid", "name"),
                    ("filesystems", "device"),
                    ("luks", "name"),
                ] {
                    if let Some(Value::Array(items)) = cv.get(list) {
                        let pl = arr_entry(ps, list);
                        for it in items {
                            replace_keyed(pl, it, k);
                        }
                    }
                }
            }
            "systemd" => {
                if let Some(Value::Array(units)) = cv.get("units") {
                    let pu = arr_entry(obj_entry(parent, "systemd"), "units");
                    for u in units {
                        replace_keyed(pu, u, "name");
                    }
                }
            }
            _ => {
                parent.insert(key.clone(), cv.clone());
            }
        }
    }
}

fn merge_ignition_section(parent: &mut Map<String, Value>, cv: &Value) {
    let Value::Object(c) = cv else { return };
    let pi = obj_entry(parent, "ignition");
    for (k, v) in c {
        match k.as_str() {
            "version" => {}
            "config" => {
                let pc = obj_entry(pi, "config");
                append_unique(pc, "merge", v.get("merge"));
                if let Some(r) = v.get("replace")
                    && !r.is_null()
                {
                    pc.insert("replace".into(), r.clone());
                }
            }
            "security" => {
                let tls = obj_entry(obj_entry(pi, "security"), "tls");
                append_unique(
                    tls,
                    "certificateAuthorities",
                    v.pointer("/tls/certificateAuthorities"),
                );
            }
            _ => deep_override(obj_entry(pi, k), v),
        }
    }
}

/// Object fields of `child` override those of `parent`, recursively; arrays
/// and scalars replace.
fn deep_override(parent: &mut Map<String, Value>, child: &Value) {
    let Value::Object(c) = child else { return };
    for (k, v) in c {
        match (parent.get_mut(k), v) {
            (Some(Value::Object(p)), Value::Object(_)) => deep_override(p, v),
            _ => {
                parent.insert(k.clone(), v.clone());
            }
        }
    }
}

fn obj_entry<'a>(m: &'a mut Map<String, Value>, key: &str) -> &'a mut Map<String, Value> {
    let slot = m.entry(key.to_string()).or_insert_with(|| json!({}));
    if !slot.is_object() {
        *slot = json!({});
    }
    match slot {
        Value::Object(o) => o,
        _ => unreachable!("just made an object"),
    }
}

fn arr_entry<'a>(m: &'a mut Map<String, Value>, key: &str) -> &'a mut Vec<Value> {
    let slot = m.entry(key.to_string()).or_insert_with(|| json!([]));
    if !slot.is_array() {
        *slot = json!([]);
    }
    match slot {
        Value::Array(a) => a,
        _ => unreachable!("just made an array"),
    }
}

fn append_unique(m: &mut Map<String, Value>, key: &str, items: Option<&Value>) {
    let Some(Value::Array(items)) = items else {
        return;
    };
    let list = arr_entry(m, key);
    for it in items {
        if !list.contains(it) {
            list.push(it.clone());
        }
    }
}

fn replace_keyed(list: &mut Vec<Value>, item: &Value, key: &str) {
    let k = item.get(key);
    match list.iter_mut().find(|e| k.is_some() && e.get(key) == k) {
        Some(slot) => *slot = item.clone(),
        None => list.push(item.clone()),
    }
}

fn merge_user(users: &mut Vec<Value>, user: &Value) {
    let name = user.get("name");
    let Some(existing) = users
        .iter_mut()
        .find(|u| name.is_some() && u.get("name") == name)
    else {
        users.push(user.clone());
        return;
    };
    let (Value::Object(p), Value::Object(c)) = (existing, user) else {
        return;
    };
    for (k, v) in c {
        if k == "sshAuthorizedKeys" {
            append_unique(p, k, Some(v));
        } else {
            p.insert(k.clone(), v.clone());
        }
    }
}

/// Files, directories and links share one path namespace: a later node
/// replaces an earlier one with the same path (in place when of the same
/// kind, otherwise the earlier is removed and the later appended).
fn merge_nodes(storage: &mut Map<String, Value>, child: &Value) {
    for kind in ["files", "directories", "links"] {
        let Some(Value::Array(items)) = child.get(kind) else {
            continue;
        };
        for it in items {
            let path = it.get("path").cloned();
            for other in ["files", "directories", "links"] {
                if other != kind
                    && let Some(Value::Array(l)) = storage.get_mut(other)
                {
                    l.retain(|e| path.is_none() || e.get("path") != path.as_ref());
                }
            }
            replace_keyed(arr_entry(storage, kind), it, "path");
        }
    }
}
