//! The crate's modules depend one way: no module reaches, through `crate::`
//! paths in its non-test code, a module that reaches back to it. The asset
//! graph's own cycles are refused at run time by the store (`find_cycle`);
//! this test guards the source.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The module a `crate::<name>` path lands in: `<name>` itself, or for a
/// name `lib.rs` re-exports (`pub use dir::AssetDir;`) the module it comes
/// from.
fn resolve(
    name: &str,
    reexports: &BTreeMap<String, String>,
    modules: &BTreeSet<String>,
) -> Option<String> {
    if modules.contains(name) {
        return Some(name.to_string());
    }
    reexports.get(name).cloned()
}

/// The text of `src` before its `#[cfg(test)]` module, without `//` comments.
fn code(src: &str) -> String {
    let end = src.find("#[cfg(test)]").unwrap_or(src.len());
    src[..end]
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every identifier after `crate::` in `text`, and the names inside a
/// `crate::{a, b::c}` group.
fn crate_paths(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("crate::") {
        rest = &rest[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let close = group.find('}').unwrap_or(group.len());
            for item in group[..close].split(',') {
                let head: String = item
                    .trim()
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !head.is_empty() {
                    out.push(head);
                }
            }
            continue;
        }
        let head: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if !head.is_empty() {
            out.push(head);
        }
    }
    out
}

#[test]
fn modules_depend_one_way() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    let mut modules = BTreeSet::new();
    let mut reexports = BTreeMap::new();
    for line in lib.lines().map(str::trim) {
        let line = line.trim_start_matches("pub ");
        if let Some(m) = line.strip_prefix("mod ") {
            modules.insert(m.trim_end_matches(';').to_string());
        } else if let Some(u) = line.strip_prefix("use ") {
            let (module, names) = u.trim_end_matches(';').split_once("::").unwrap();
            for n in names.trim_matches(|c| c == '{' || c == '}').split(',') {
                reexports.insert(n.trim().to_string(), module.to_string());
            }
        }
    }
    assert!(
        modules.contains("store") && modules.contains("ctx"),
        "{modules:?}"
    );
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for m in &modules {
        let text = std::fs::read_to_string(src.join(format!("{m}.rs")))
            .unwrap_or_else(|e| panic!("src/{m}.rs: {e}"));
        let deps = crate_paths(&code(&text))
            .iter()
            .filter_map(|n| resolve(n, &reexports, &modules))
            .filter(|d| d != m)
            .collect();
        edges.insert(m.clone(), deps);
    }
    // Depth-first search with colours; a grey node reached again closes a cycle.
    fn visit<'a>(
        m: &'a str,
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<&'a str, bool>,
        path: &mut Vec<&'a str>,
    ) -> Option<Vec<String>> {
        match state.get(m) {
            Some(true) => return None,
            Some(false) => {
                let start = path.iter().position(|p| *p == m).unwrap();
                let mut cycle: Vec<String> = path[start..].iter().map(|s| s.to_string()).collect();
                cycle.push(m.to_string());
                return Some(cycle);
            }
            None => {}
        }
        state.insert(m, false);
        path.push(m);
        for d in edges.get(m).into_iter().flatten() {
            if let Some(c) = visit(d, edges, state, path) {
                return Some(c);
            }
        }
        path.pop();
        state.insert(m, true);
        None
    }
    let mut state = BTreeMap::new();
    for m in edges.keys() {
        if let Some(cycle) = visit(m, &edges, &mut state, &mut Vec::new()) {
            panic!(
                "crates/common/assets/src: the modules import each other in a circle: {}",
                cycle.join(" -> ")
            );
        }
    }
    for base in ["ctx", "error", "dir"] {
        for m in ["store", "installconfig", "recorded"] {
            assert!(
                !edges[base].contains(m),
                "src/{base}.rs imports {m}: the context, errors and directory stay below the assets"
            );
        }
    }
}
