//! Converting a rendered spec 3.x config to the spec a client asked for
//! (openshift/machine-config-operator `pkg/controller/common/ignition_converter.go`;
//! coreos/ignition `docs/release-notes.md`, `docs/migrating-configs.md`).

use serde_json::{Map, Value, json};

use crate::accept::SpecVersion;

/// A config cannot be expressed in the requested spec (served as HTTP 500).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot convert Ignition config to spec {target}: {reason}")]
pub struct ConvertError {
    /// The requested spec, e.g. `2.2.0`.
    pub target: String,
    /// What stands in the way, e.g. `storage.luks needs spec 3.2.0`.
    pub reason: String,
}

fn err(target: SpecVersion, reason: impl Into<String>) -> ConvertError {
    ConvertError {
        target: target.as_str().into(),
        reason: reason.into(),
    }
}

fn nonempty(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => false,
        Some(Value::Array(a)) => !a.is_empty(),
        Some(Value::Object(o)) => !o.is_empty(),
        Some(Value::String(s)) => !s.is_empty(),
        Some(_) => true,
    }
}

fn items<'a>(v: &'a Value, ptr: &str) -> impl Iterator<Item = &'a Value> {
    v.pointer(ptr)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// Every resource object (merge/replace, CAs, file contents and appends).
fn resources(cfg: &Value) -> Vec<&Value> {
    let mut out: Vec<&Value> = items(cfg, "/ignition/config/merge").collect();
    out.extend(cfg.pointer("/ignition/config/replace"));
    out.extend(items(cfg, "/ignition/security/tls/certificateAuthorities"));
    for f in items(cfg, "/storage/files") {
        out.extend(f.get("contents"));
        out.extend(items(f, "/append"));
    }
    out
}

/// Checks that a spec 3.x config uses no field spec `3.<minor>` lacks.
fn check_fields_3(cfg: &Value, target: SpecVersion, minor: u8) -> Result<(), ConvertError> {
    let luks: Vec<&Value> = items(cfg, "/storage/luks").collect();
    if minor < 5 && luks.iter().any(|l| nonempty(l.get("cex"))) {
        return Err(err(target, "storage.luks.cex needs spec 3.5.0"));
    }
    if minor < 4 {
        for l in &luks {
            if nonempty(l.get("discard")) || nonempty(l.get("openOptions")) {
                return Err(err(
                    target,
                    "storage.luks discard/openOptions need spec 3.4.0",
                ));
            }
            if items(l, "/clevis/tang").any(|t| nonempty(t.get("advertisement"))) {
                return Err(err(target, "Tang advertisement needs spec 3.4.0"));
            }
        }
    }
    if minor < 3 {
        if nonempty(cfg.get("kernelArguments")) {
            return Err(err(target, "kernelArguments needs spec 3.3.0"));
        }
        if items(cfg, "/storage/filesystems")
            .any(|f| f.get("format").and_then(Value::as_str) == Some("none"))
        {
            return Err(err(target, "filesystem format \"none\" needs spec 3.3.0"));
        }
    }
    if minor < 2 {
        if !luks.is_empty() {
            return Err(err(target, "storage.luks needs spec 3.2.0"));
        }
        if items(cfg, "/storage/disks")
            .flat_map(|d| items(d, "/partitions"))
            .any(|p| nonempty(p.get("resize")))
        {
            return Err(err(target, "partition resize needs spec 3.2.0"));
        }
        if items(cfg, "/passwd/users")
            .chain(items(cfg, "/passwd/groups"))
            .any(|u| u.get("shouldExist").is_some_and(|v| !v.is_null()))
        {
            return Err(err(target, "shouldExist needs spec 3.2.0"));
        }
        if resources(cfg).iter().any(|r| {
            r.get("source")
                .and_then(Value::as_str)
                .is_some_and(|s| s.starts_with("gs://"))
        }) {
            return Err(err(target, "gs:// sources need spec 3.2.0"));
        }
    }
    Ok(())
}

/// Converts `cfg` (a spec 3.x config, any minor) to `target`:
/// - 3.y: the fields spec 3.y lacks are refused (kernelArguments below 3.3
///   must have been moved out by the caller), then `ignition.version` is
///   rewritten — spec 3 minors are otherwise compatible (coreos/ignition
///   `docs/release-notes.md`);
/// - 2.2: translated per coreos/ignition `docs/migrating-configs.md` (spec 2.x
///   vs 3.x) — `ignition.config.merge` becomes
///   `append`; resources keep only `source` and `verification`; files,
///   directories and links get `filesystem: "root"`; a file's `append`
///   resources become further entries for the same path with `append: true`
///   and `overwrite: false`; a file with neither contents nor appends is
///   left out (as the MCO's ign-converter does); `overwrite` is written
///   explicitly (3.x defaults to false, 2.x to true); hashes must be sha512;
///   units keep `name`, `enabled`, `mask`, `contents`, `dropins` (spec 2.2
///   has `enabled`; its deprecated `enable` is not used); users and groups
///   keep their fields except `shouldExist`.
///
/// # Errors
/// [`ConvertError`] when the config uses something the target cannot
/// express: for 2.2, `kernelArguments`, `storage.{disks,raid,filesystems,luks}`,
/// `ignition.proxy`, `httpHeaders`, `compression` on configs or CAs,
/// `shouldExist: false`, verification hashes other than sha512.
pub fn convert(cfg: &Value, target: SpecVersion) -> Result<Value, ConvertError> {
    match target {
        SpecVersion::V3(minor) => {
            check_fields_3(cfg, target, minor)?;
            let mut out = cfg.clone();
            if let Some(Value::Object(ign)) = out.get_mut("ignition") {
                ign.insert("version".into(), target.as_str().into());
            } else if let Value::Object(o) = &mut out {
                o.insert("ignition".into(), json!({"version": target.as_str()}));
            }
            Ok(out)
        }
        SpecVersion::V2_2 => to_v2_2(cfg),
    }
}

fn res2(r: &Value, what: &str, allow_compression: bool) -> Result<Value, ConvertError> {
    let t = SpecVersion::V2_2;
    if nonempty(r.get("httpHeaders")) {
        return Err(err(t, format!("{what}.httpHeaders has no spec 2.2 form")));
    }
    let mut o = Map::new();
    if let Some(c) = r.get("compression").filter(|c| nonempty(Some(c))) {
        if !allow_compression {
            return Err(err(t, format!("{what}.compression has no spec 2.2 form")));
        }
        o.insert("compression".into(), c.clone());
    }
    o.insert(
        "source".into(),
        r.get("source").cloned().unwrap_or_else(|| "".into()),
    );
    if let Some(h) = r.pointer("/verification/hash").filter(|h| !h.is_null()) {
        if !h.as_str().is_some_and(|h| h.starts_with("sha512-")) {
            return Err(err(
                t,
                format!("{what}.verification.hash: spec 2.2 knows only sha512"),
            ));
        }
        o.insert("verification".into(), json!({"hash": h}));
    }
    Ok(Value::Object(o))
}

fn copy_keys(src: &Value, dst: &mut Map<String, Value>, keys: &[&str]) {
    for k in keys {
        if let Some(v) = src.get(*k).filter(|v| !v.is_null()) {
            dst.insert((*k).into(), v.clone());
        }
    }
}

fn node_base(n: &Value) -> Map<String, Value> {
    let mut o = Map::new();
    o.insert("filesystem".into(), "root".into());
    copy_keys(n, &mut o, &["path", "user", "group"]);
    o
}

/// Spec 2.2 translation (see [`convert`]): one part per top-level section.
fn to_v2_2(cfg: &Value) -> Result<Value, ConvertError> {
    refuse_untranslated_v2_2(cfg)?;
    let mut out = Map::new();
    out.insert("ignition".into(), ignition_v2_2(cfg)?.into());
    let passwd = passwd_v2_2(cfg)?;
    if !passwd.is_empty() {
        out.insert("passwd".into(), passwd.into());
    }
    let storage = storage_v2_2(cfg)?;
    if !storage.is_empty() {
        out.insert("storage".into(), storage.into());
    }
    let units = units_v2_2(cfg);
    if !units.is_empty() {
        out.insert("systemd".into(), json!({"units": units}));
    }
    Ok(Value::Object(out))
}

/// Refuses the sections spec 2.2 cannot express or that are not translated.
fn refuse_untranslated_v2_2(cfg: &Value) -> Result<(), ConvertError> {
    let t = SpecVersion::V2_2;
    if nonempty(cfg.get("kernelArguments")) {
        return Err(err(t, "kernelArguments has no spec 2.2 form"));
    }
    for k in ["disks", "raid", "filesystems", "luks"] {
        if nonempty(cfg.pointer(&format!("/storage/{k}"))) {
            return Err(err(t, format!("storage.{k} is not translated to spec 2.2")));
        }
    }
    if nonempty(cfg.pointer("/ignition/proxy")) {
        return Err(err(t, "ignition.proxy has no spec 2.2 form"));
    }
    Ok(())
}

/// The `ignition` section: config merge → append, replace, CAs, timeouts,
/// version `2.2.0`.
fn ignition_v2_2(cfg: &Value) -> Result<Map<String, Value>, ConvertError> {
    let mut ign = Map::new();
    let mut conf = Map::new();
    let merge: Vec<Value> = items(cfg, "/ignition/config/merge")
        .map(|r| res2(r, "ignition.config.merge", false))
        .collect::<Result<_, _>>()?;
    if !merge.is_empty() {
        conf.insert("append".into(), merge.into());
    }
    if let Some(r) = cfg
        .pointer("/ignition/config/replace")
        .filter(|r| nonempty(Some(r)))
    {
        conf.insert("replace".into(), res2(r, "ignition.config.replace", false)?);
    }
    if !conf.is_empty() {
        ign.insert("config".into(), conf.into());
    }
    let cas: Vec<Value> = items(cfg, "/ignition/security/tls/certificateAuthorities")
        .map(|r| res2(r, "certificateAuthorities", false))
        .collect::<Result<_, _>>()?;
    if !cas.is_empty() {
        ign.insert(
            "security".into(),
            json!({"tls": {"certificateAuthorities": cas}}),
        );
    }
    if let Some(tm) = cfg
        .pointer("/ignition/timeouts")
        .filter(|v| nonempty(Some(v)))
    {
        ign.insert("timeouts".into(), tm.clone());
    }
    ign.insert("version".into(), SpecVersion::V2_2.as_str().into());
    Ok(ign)
}

/// The fields a spec 2.2 user keeps.
const USER_KEYS_V2_2: &[&str] = &[
    "name",
    "passwordHash",
    "sshAuthorizedKeys",
    "uid",
    "gecos",
    "homeDir",
    "noCreateHome",
    "primaryGroup",
    "groups",
    "noUserGroup",
    "noLogInit",
    "shell",
    "system",
];

/// The fields a spec 2.2 group keeps.
const GROUP_KEYS_V2_2: &[&str] = &["name", "gid", "passwordHash", "system"];

/// The `passwd` section (empty when there are no users or groups).
fn passwd_v2_2(cfg: &Value) -> Result<Map<String, Value>, ConvertError> {
    let mut passwd = Map::new();
    for (list, keys) in [("users", USER_KEYS_V2_2), ("groups", GROUP_KEYS_V2_2)] {
        let mut conv = Vec::new();
        for u in items(cfg, &format!("/passwd/{list}")) {
            if u.get("shouldExist").and_then(Value::as_bool) == Some(false) {
                return Err(err(
                    SpecVersion::V2_2,
                    "shouldExist: false has no spec 2.2 form",
                ));
            }
            let mut o = Map::new();
            copy_keys(u, &mut o, keys);
            conv.push(Value::Object(o));
        }
        if !conv.is_empty() {
            passwd.insert(list.into(), conv.into());
        }
    }
    Ok(passwd)
}

/// The `storage` section: files, directories and links (empty when there
/// are none).
fn storage_v2_2(cfg: &Value) -> Result<Map<String, Value>, ConvertError> {
    let files = files_v2_2(cfg)?;
    let dirs: Vec<Value> = items(cfg, "/storage/directories")
        .map(|d| node_v2_2(d, &["mode"]))
        .collect();
    let links: Vec<Value> = items(cfg, "/storage/links")
        .map(|l| node_v2_2(l, &["target", "hard"]))
        .collect();
    let mut storage = Map::new();
    for (k, v) in [("files", files), ("directories", dirs), ("links", links)] {
        if !v.is_empty() {
            storage.insert(k.into(), v.into());
        }
    }
    Ok(storage)
}

/// A directory or link: [`node_base`], `keys`, and `overwrite` explicit.
fn node_v2_2(n: &Value, keys: &[&str]) -> Value {
    let mut o = node_base(n);
    copy_keys(n, &mut o, keys);
    let ow = n.get("overwrite").and_then(Value::as_bool).unwrap_or(false);
    o.insert("overwrite".into(), ow.into());
    Value::Object(o)
}

/// The spec 2.2 file entries: one for the contents (if any) and one per
/// append resource.
fn files_v2_2(cfg: &Value) -> Result<Vec<Value>, ConvertError> {
    let mut files = Vec::new();
    for f in items(cfg, "/storage/files") {
        let mut base = node_base(f);
        copy_keys(f, &mut base, &["mode"]);
        let overwrite = f.get("overwrite").and_then(Value::as_bool).unwrap_or(false);
        if let Some(c) = f
            .get("contents")
            .filter(|c| c.get("source").is_some_and(|s| !s.is_null()))
        {
            let mut o = base.clone();
            o.insert("contents".into(), res2(c, "storage.files.contents", true)?);
            o.insert("overwrite".into(), overwrite.into());
            files.push(Value::Object(o));
        }
        // Each append becomes its own entry; spec 2 refuses append together
        // with overwrite.
        for a in items(f, "/append") {
            let mut o = base.clone();
            o.insert("append".into(), true.into());
            o.insert("contents".into(), res2(a, "storage.files.append", true)?);
            o.insert("overwrite".into(), false.into());
            files.push(Value::Object(o));
        }
    }
    Ok(files)
}

/// The spec 2.2 units (`name`, `enabled`, `mask`, `contents`, `dropins`).
fn units_v2_2(cfg: &Value) -> Vec<Value> {
    items(cfg, "/systemd/units")
        .map(|u| {
            let mut o = Map::new();
            copy_keys(u, &mut o, &["name", "enabled", "mask", "contents"]);
            let dropins: Vec<Value> = items(u, "/dropins")
                .map(|d| {
                    let mut o = Map::new();
                    copy_keys(d, &mut o, &["name", "contents"]);
                    Value::Object(o)
                })
                .collect();
            if !dropins.is_empty() {
                o.insert("dropins".into(), dropins.into());
            }
            Value::Object(o)
        })
        .collect()
}
