//! The golden files' format: what a step of an example wrote, as a byte-exact
//! index plus readable views, and the diff that names the first differing
//! line of each view (for Ignition configs the embedded file or unit).
//!
//! A step's golden directory (`tests-data/golden/<example>/<step>/`) holds:
//! * `INDEX`: one line per file the step wrote, `<sha256> <mode> <size>
//!   <path>`, and `removed <path>` per input it consumed: the byte-exact check;
//! * `<path>.d/` for an Ignition config (`*.ign`): `config.json` (the config
//!   pretty-printed, sorted, each `data:` URL and unit body replaced by
//!   `<size, sha256, where>`), `files/<Ignition path>` (each embedded
//!   storage file, decoded), `units/<name>` and `units/<name>.d/<dropin>`,
//!   `data/<JSON pointer>` (other data URLs, e.g. the pointer configs' CA);
//! * `<path>.assets` for the state file: one line per asset, `<sha256>
//!   <size> <Go type name>` of its JSON value (the values are in the other
//!   files);
//! * `<path>` for every other file, as written.
//!
//! Decoded files that are binary or above [`MAX_TEXT`] are in the index or
//! placeholder by hash only.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

use serde_json::Value;

/// Decoded files larger than this are kept by hash only.
pub const MAX_TEXT: usize = 256 * 1024;

/// The state file, whose view lists its assets.
pub const STATE_FILE: &str = ".openshift_install_state.json";

/// One file on disk: mode bits and bytes.
#[derive(Clone, PartialEq, Eq)]
pub struct Written {
    /// Permission bits (`0o640`).
    pub mode: u32,
    /// Contents.
    pub bytes: Vec<u8>,
}

/// Every file below `root` (relative path → mode and bytes), except the
/// directory lock.
pub fn snapshot(root: &Path) -> BTreeMap<String, Written> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read_dir").flatten() {
            let p = e.path();
            let meta = std::fs::symlink_metadata(&p).expect("metadata");
            if meta.is_dir() {
                stack.push(p);
                continue;
            }
            let rel = p
                .strip_prefix(root)
                .expect("under root")
                .display()
                .to_string();
            if rel == ".openshift_install.lock" {
                continue;
            }
            let written = Written {
                mode: meta.permissions().mode() & 0o7777,
                bytes: std::fs::read(&p).expect("read"),
            };
            out.insert(rel, written);
        }
    }
    out
}

/// Lowercase hex SHA-256 of `data`.
pub fn sha256(data: &[u8]) -> String {
    let d = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, data);
    d.as_ref().iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// The views of one step: what changed between `before` and `after`
/// (relative path of the view → bytes), `INDEX` included.
pub fn step_views(
    before: &BTreeMap<String, Written>,
    after: &BTreeMap<String, Written>,
) -> BTreeMap<String, Vec<u8>> {
    let mut views = BTreeMap::new();
    let mut index = String::new();
    for (path, w) in after {
        if before.get(path) == Some(w) {
            continue;
        }
        let _ = writeln!(
            index,
            "{} {:04o} {} {path}",
            sha256(&w.bytes),
            w.mode,
            w.bytes.len()
        );
        views.extend(file_views(path, &w.bytes));
    }
    for path in before.keys().filter(|p| !after.contains_key(*p)) {
        let _ = writeln!(index, "removed {path}");
    }
    views.insert("INDEX".to_string(), index.into_bytes());
    views
}

/// The views of one written file (see the module docs).
pub fn file_views(path: &str, bytes: &[u8]) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    if path.ends_with(".ign")
        && let Ok(config) = serde_json::from_slice::<Value>(bytes)
    {
        let mut config = config;
        let mut parts = BTreeMap::new();
        extract(&mut config, "", &mut parts);
        let mut text = serde_json::to_string_pretty(&config).expect("JSON");
        text.push('\n');
        out.insert(format!("{path}.d/config.json"), text.into_bytes());
        for (name, data) in parts {
            out.insert(format!("{path}.d/{name}"), data);
        }
    } else if path == STATE_FILE
        && let Ok(Value::Object(assets)) = serde_json::from_slice::<Value>(bytes)
    {
        let mut text = String::new();
        for (key, value) in &assets {
            let v = serde_json::to_vec(value).expect("JSON");
            let _ = writeln!(text, "{} {} {key}", sha256(&v), v.len());
        }
        out.insert(format!("{path}.assets"), text.into_bytes());
    } else {
        out.insert(path.to_string(), bytes.to_vec());
    }
    out
}

/// Whether `data` is kept as a view of its own: UTF-8 text without NULs,
/// at most [`MAX_TEXT`] bytes.
fn is_text(data: &[u8]) -> bool {
    data.len() <= MAX_TEXT && !data.contains(&0) && std::str::from_utf8(data).is_ok()
}

/// Replaces, below `v` (at JSON pointer `at`), every `data:` URL and every
/// unit or dropin body by a placeholder naming its size, hash and view,
/// and puts the decoded text in `parts` under that view's name.
fn extract(v: &mut Value, at: &str, parts: &mut BTreeMap<String, Vec<u8>>) {
    let segs: Vec<&str> = at.split('/').collect();
    match v {
        Value::Object(m) if matches!(segs.as_slice(), ["", "systemd", "units", _]) => {
            extract_unit(m, parts);
        }
        Value::Object(m) => {
            for (k, child) in m.iter_mut() {
                extract(child, &format!("{at}/{k}"), parts);
            }
            if matches!(segs.as_slice(), ["", "storage", "files", _])
                && let Some(path) = m.get("path").and_then(Value::as_str).map(str::to_string)
            {
                name_storage_file(m, &path, parts);
            }
        }
        Value::Array(a) => {
            for (i, child) in a.iter_mut().enumerate() {
                extract(child, &format!("{at}/{i}"), parts);
            }
        }
        Value::String(s) if s.starts_with("data:") => {
            let data = okd_types::dataurl::decode(s).unwrap_or_else(|_| s.clone().into_bytes());
            let name = format!("data{at}");
            *s = placeholder(&name, &data);
            if is_text(&data) {
                parts.insert(name, data);
            }
        }
        _ => {}
    }
}

/// A systemd unit's body as `units/<name>`, each dropin's as
/// `units/<name>.d/<dropin>`, placeholders in their place.
fn extract_unit(m: &mut serde_json::Map<String, Value>, parts: &mut BTreeMap<String, Vec<u8>>) {
    let unit = m
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("unnamed")
        .to_string();
    let mut take = |body: &mut Value, view: String| {
        if let Value::String(text) = body {
            let data = std::mem::take(text).into_bytes();
            *text = placeholder(&view, &data);
            if is_text(&data) {
                parts.insert(view, data);
            }
        }
    };
    if let Some(body) = m.get_mut("contents") {
        take(body, format!("units/{unit}"));
    }
    if let Some(Value::Array(dropins)) = m.get_mut("dropins") {
        for d in dropins {
            let name = d
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("unnamed")
                .to_string();
            if let Some(body) = d.get_mut("contents") {
                take(body, format!("units/{unit}.d/{name}"));
            }
        }
    }
}

/// Renames the data-URL views of a storage file (`data/storage/files/<i>/
/// contents/source`, `.../append/<j>/source`) after its Ignition path
/// (`files/<path>`, `files/<path>.append-<j>`), placeholders included.
fn name_storage_file(
    m: &mut serde_json::Map<String, Value>,
    path: &str,
    parts: &mut BTreeMap<String, Vec<u8>>,
) {
    let mut rename = |v: &mut Value, to: String| {
        if let Value::String(s) = v
            && let Some(old) = placeholder_view(s)
        {
            if let Some(data) = parts.remove(&old) {
                parts.insert(to.clone(), data);
            }
            *s = s.replace(&format!("view {old}"), &format!("view {to}"));
        }
    };
    if let Some(src) = m.get_mut("contents").and_then(|c| c.get_mut("source")) {
        rename(src, format!("files{path}"));
    }
    if let Some(Value::Array(app)) = m.get_mut("append") {
        for (j, a) in app.iter_mut().enumerate() {
            if let Some(src) = a.get_mut("source") {
                rename(src, format!("files{path}.append-{j}"));
            }
        }
    }
}

/// `<N bytes, sha256 H, view V>` (text) or `<N bytes, sha256 H, binary>`.
fn placeholder(view: &str, data: &[u8]) -> String {
    let kind = if is_text(data) {
        format!("view {view}")
    } else {
        "binary or large: by hash only".to_string()
    };
    format!("<{} bytes, sha256 {}, {kind}>", data.len(), sha256(data))
}

/// The view a placeholder names, if any.
fn placeholder_view(s: &str) -> Option<String> {
    let rest = s.strip_prefix('<')?.strip_suffix('>')?;
    rest.split(", view ").nth(1).map(str::to_string)
}

/// Every file below `root` (relative path → bytes): a step's golden views;
/// none when `root` does not exist yet.
pub fn read_tree(root: &Path) -> BTreeMap<String, Vec<u8>> {
    if !root.exists() {
        return BTreeMap::new();
    }
    snapshot(root)
        .into_iter()
        .map(|(p, w)| (p, w.bytes))
        .collect()
}

/// Writes `views` as the golden directory `root`, replacing what was there.
pub fn write_tree(root: &Path, views: &BTreeMap<String, Vec<u8>>) {
    if root.exists() {
        std::fs::remove_dir_all(root).expect("remove old golden files");
    }
    for (rel, data) in views {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("create golden directory");
        std::fs::write(&p, data).expect("write golden file");
    }
}

/// A view's path in words: `bootstrap.ign: Ignition file /opt/x`.
pub fn describe(view: &str) -> String {
    if let Some((stem, inner)) = view.split_once(".ign.d/") {
        let file = format!("{stem}.ign");
        return match inner.split_once('/') {
            Some(("files", p)) => format!("{file}: Ignition file /{p}"),
            Some(("units", u)) => format!("{file}: systemd unit {u}"),
            Some(("data", ptr)) => format!("{file}: data URL at /{ptr}"),
            _ if inner == "config.json" => {
                format!("{file}: the config (data URLs and unit bodies as placeholders)")
            }
            _ => format!("{file}: {inner}"),
        };
    }
    if let Some(file) = view.strip_suffix(".assets") {
        return format!("{file}: its assets (sha256, size, Go type)");
    }
    if view == "INDEX" {
        return "INDEX (sha256, mode, size of every file written)".to_string();
    }
    view.to_string()
}

/// Reporting order: embedded files and plain files first, then Ignition
/// configs' skeletons and asset lists, the index last.
fn rank(view: &str) -> u8 {
    if view == "INDEX" {
        3
    } else if view.ends_with(".d/config.json") || view.ends_with(".assets") {
        2
    } else {
        1
    }
}

/// The first difference between two texts: line number, both lines, and
/// how many lines differ position by position.
fn first_difference(golden: &[u8], actual: &[u8]) -> String {
    let (Ok(g), Ok(a)) = (std::str::from_utf8(golden), std::str::from_utf8(actual)) else {
        let at = golden
            .iter()
            .zip(actual)
            .position(|(x, y)| x != y)
            .unwrap_or(golden.len().min(actual.len()));
        return format!(
            "bytes differ from offset {at} ({} bytes golden, {} actual)",
            golden.len(),
            actual.len()
        );
    };
    let gl: Vec<&str> = g.lines().collect();
    let al: Vec<&str> = a.lines().collect();
    let n = gl.len().max(al.len());
    let differing: Vec<usize> = (0..n).filter(|i| gl.get(*i) != al.get(*i)).collect();
    let Some(&first) = differing.first() else {
        return "only the final newline differs".to_string();
    };
    let show = |l: Option<&&str>| match l {
        None => "(no such line)".to_string(),
        Some(l) if l.chars().count() > 240 => {
            format!("{}…", l.chars().take(240).collect::<String>())
        }
        Some(l) => l.to_string(),
    };
    format!(
        "first difference at line {}:\n      golden: {}\n      actual: {}\n    ({} of {} lines differ in place)",
        first + 1,
        show(gl.get(first)),
        show(al.get(first)),
        differing.len(),
        n
    )
}

/// What differs between the `golden` and `actual` views of one step, one
/// entry per view, most specific first; empty when they are equal.
pub fn differences(
    label: &str,
    golden: &BTreeMap<String, Vec<u8>>,
    actual: &BTreeMap<String, Vec<u8>>,
) -> Vec<String> {
    let mut out: Vec<(u8, String)> = Vec::new();
    for (view, a) in actual {
        let entry = match golden.get(view) {
            None => format!("{label}/{view}: new ({})", describe(view)),
            Some(g) if g == a => continue,
            Some(g) => format!(
                "{label}/{view}: {}\n    {}",
                describe(view),
                first_difference(g, a)
            ),
        };
        out.push((rank(view), entry));
    }
    for view in golden.keys().filter(|v| !actual.contains_key(*v)) {
        out.push((
            rank(view),
            format!("{label}/{view}: no longer written ({})", describe(view)),
        ));
    }
    out.sort_by_key(|(r, _)| *r);
    out.into_iter().map(|(_, e)| e).collect()
}
