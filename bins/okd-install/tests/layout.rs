//! The workspace layout rule of ARCHITECTURE.md ("Where code runs"): every
//! crate lives in the folder of the place it runs (`crates/<group>/<crate>`),
//! and a crate depends only on crates of the groups its own group may use.
//!
//! The check reads `cargo metadata --no-deps` (the workspace's own packages
//! and their declared dependencies, every kind: normal, build and dev), so a
//! forbidden `[dependencies]` line fails CI before anything links it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Groups of `crates/`, and which groups each may depend on (its own and
/// `common`). The binary (`bins/`) may depend on every group.
const RULES: &[(&str, &[&str])] = &[
    ("common", &["common"]),
    ("workstation", &["workstation", "common"]),
    ("bastion", &["bastion", "common"]),
    ("node", &["node", "common"]),
    ("platform", &["platform", "common"]),
    ("assisted", &["assisted", "common"]),
];

/// Where a package lives: a group of `crates/`, the binary, or a path that
/// breaks the layout.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Place {
    Group(String),
    Bin,
    Stray(String),
}

fn place(root: &Path, manifest: &Path) -> Place {
    let rel = manifest.strip_prefix(root).unwrap_or(manifest);
    let parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    match parts.as_slice() {
        [b, _, m] if b == "bins" && m == "Cargo.toml" => Place::Bin,
        [c, g, _, m] if c == "crates" && m == "Cargo.toml" => {
            if RULES.iter().any(|(name, _)| name == g) {
                Place::Group(g.clone())
            } else {
                Place::Stray(rel.display().to_string())
            }
        }
        _ => Place::Stray(rel.display().to_string()),
    }
}

/// Every breach of the layout in a `cargo metadata` document, one sentence
/// each, naming the crate, its group, the dependency and the rule.
fn violations(root: &Path, metadata: &serde_json::Value) -> Vec<String> {
    let packages = metadata["packages"].as_array().expect("packages");
    let mut where_: BTreeMap<String, Place> = BTreeMap::new();
    for p in packages {
        let name = p["name"].as_str().expect("name").to_string();
        let manifest = PathBuf::from(p["manifest_path"].as_str().expect("manifest_path"));
        where_.insert(name, place(root, &manifest));
    }
    let mut out = Vec::new();
    for p in packages {
        let name = p["name"].as_str().expect("name");
        let from = &where_[name];
        let allowed: &[&str] = match from {
            Place::Bin => continue,
            Place::Stray(path) => {
                out.push(format!(
                    "{name} ({path}) is not in crates/<group>/<crate> for a group of {:?}",
                    RULES.iter().map(|r| r.0).collect::<Vec<_>>()
                ));
                continue;
            }
            Place::Group(g) => RULES.iter().find(|r| r.0 == g).map(|r| r.1).unwrap_or(&[]),
        };
        let Place::Group(from_group) = from else {
            unreachable!()
        };
        for d in p["dependencies"].as_array().expect("dependencies") {
            let dep = d["name"].as_str().expect("dependency name");
            let Some(to) = where_.get(dep) else { continue };
            let ok = match to {
                Place::Group(g) => allowed.contains(&g.as_str()),
                Place::Bin | Place::Stray(_) => false,
            };
            if !ok {
                let kind = d["kind"].as_str().unwrap_or("normal");
                let to_desc = match to {
                    Place::Group(g) => format!("group {g}"),
                    Place::Bin => "the binary".into(),
                    Place::Stray(p) => p.clone(),
                };
                out.push(format!(
                    "{name} (group {from_group}) depends on {dep} ({to_desc}, {kind} dependency): \
                     group {from_group} may depend only on {allowed:?}"
                ));
            }
        }
    }
    out
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

#[test]
fn workspace_follows_the_layout_rule() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = std::process::Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(root())
        .output()
        .expect("run cargo metadata");
    assert!(
        out.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let root = PathBuf::from(meta["workspace_root"].as_str().unwrap());
    let n = meta["packages"].as_array().unwrap().len();
    assert!(n > 20, "cargo metadata listed only {n} packages");
    let v = violations(&root, &meta);
    assert!(
        v.is_empty(),
        "the layout rule of ARCHITECTURE.md is broken:\n{}",
        v.join("\n")
    );
}

/// A scratch workspace document: the check must name a forbidden edge
/// (workstation → bastion), a crate outside any group and a crate that
/// depends on the binary, and accept the allowed edges.
#[test]
fn the_check_fails_on_a_forbidden_dependency() {
    let pkg = |name: &str, path: &str, deps: &[(&str, &str)]| {
        serde_json::json!({
            "name": name,
            "manifest_path": format!("/w/{path}/Cargo.toml"),
            "dependencies": deps.iter().map(|(d, k)| serde_json::json!({
                "name": d, "kind": if k.is_empty() { serde_json::Value::Null } else { (*k).into() }
            })).collect::<Vec<_>>(),
        })
    };
    let meta = serde_json::json!({ "packages": [
        pkg("okd-types", "crates/common/types", &[("serde", "")]),
        pkg("okd-serve", "crates/bastion/serve", &[("okd-types", "")]),
        pkg("okd-wait-for", "crates/workstation/wait-for", &[("okd-types", ""), ("okd-serve", "")]),
        pkg("okd-gather", "crates/workstation/gather", &[("okd-serve", "dev")]),
        pkg("okd-loose", "crates/loose", &[]),
        pkg("okd-node", "crates/node/bootstrap", &[("okd-install", "")]),
        pkg("okd-install", "bins/okd-install", &[("okd-serve", ""), ("okd-wait-for", "")]),
    ]});
    let v = violations(Path::new("/w"), &meta);
    assert_eq!(v.len(), 4, "{v:#?}");
    assert!(
        v[0].starts_with(
            "okd-wait-for (group workstation) depends on okd-serve (group bastion, normal"
        ),
        "{}",
        v[0]
    );
    assert!(
        v[1].contains("okd-serve (group bastion, dev dependency)"),
        "{}",
        v[1]
    );
    assert!(
        v[2].starts_with("okd-loose (crates/loose/Cargo.toml) is not in crates/<group>/<crate>"),
        "{}",
        v[2]
    );
    assert!(
        v[3].contains("okd-node (group node) depends on okd-install (the binary"),
        "{}",
        v[3]
    );
}
