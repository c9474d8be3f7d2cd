//! Loading `<asset-dir>/manifests/`: every regular file below it
//! (recursively), in the byte order of its path relative to the directory,
//! as openshift/library-go `pkg/assets/create/creater.go` (`load`, via
//! `pkg/assets/assets.go` `LoadFilesRecursively`) reads them for
//! openshift/cluster-bootstrap `pkg/start/start.go`. Unlike library-go,
//! a file may hold several YAML (or JSON) documents separated by `---`;
//! each is one object, in document order; empty documents are skipped.

use std::fmt;
use std::path::Path;

use kube::api::{DynamicObject, GroupVersionKind};

use crate::Error;

/// One object of a manifest file.
///
/// Its [`fmt::Debug`] names the file and the object, never its content: a
/// manifest may be a Secret.
#[derive(Clone)]
pub struct Manifest {
    /// The file's path relative to the manifests directory
    /// (`99_openshift-cluster-api_master-user-data-secret.yaml`).
    pub file: String,
    /// The document's index in the file, from 0.
    pub doc: usize,
    /// How many non-empty documents the file holds.
    pub docs_in_file: usize,
    /// The object, as read.
    pub object: DynamicObject,
    /// Its group, version and kind, from `apiVersion` and `kind`.
    pub gvk: GroupVersionKind,
}

impl fmt::Debug for Manifest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Manifest({}: {})", self.label(), self.kind_name())
    }
}

impl Manifest {
    /// The file, plus `(document n of m)` (from 1) when it holds several.
    pub fn label(&self) -> String {
        if self.docs_in_file > 1 {
            format!(
                "{} (document {} of {})",
                self.file,
                self.doc + 1,
                self.docs_in_file
            )
        } else {
            self.file.clone()
        }
    }

    /// `metadata.name`.
    pub fn name(&self) -> &str {
        self.object.metadata.name.as_deref().unwrap_or_default()
    }

    /// `metadata.namespace`, when set.
    pub fn namespace(&self) -> Option<&str> {
        self.object
            .metadata
            .namespace
            .as_deref()
            .filter(|n| !n.is_empty())
    }

    /// `Kind namespace/name` (`Kind name` when it has no namespace).
    pub fn kind_name(&self) -> String {
        match self.namespace() {
            Some(ns) => format!("{} {ns}/{}", self.gvk.kind, self.name()),
            None => format!("{} {}", self.gvk.kind, self.name()),
        }
    }

    /// Whether it is a `CustomResourceDefinition` of `apiextensions.k8s.io`.
    pub fn is_crd(&self) -> bool {
        self.gvk.group == "apiextensions.k8s.io" && self.gvk.kind == "CustomResourceDefinition"
    }

    /// For a CRD: the `(spec.group, spec.names.kind)` of the objects it
    /// defines.
    pub fn crd_defines(&self) -> Option<(String, String)> {
        if !self.is_crd() {
            return None;
        }
        let spec = self.object.data.get("spec")?;
        let group = spec.get("group")?.as_str()?;
        let kind = spec.get("names")?.get("kind")?.as_str()?;
        Some((group.to_string(), kind.to_string()))
    }
}

/// Reads every manifest below `dir`, files in path order, documents in
/// file order.
///
/// # Errors
/// [`Error::Manifest`] naming the file (and document) that cannot be read
/// or is not an object with `apiVersion`, `kind` and `metadata.name`;
/// the file's content is never part of the message.
pub fn load(dir: &Path) -> Result<Vec<Manifest>, Error> {
    let mut files = Vec::new();
    walk(dir, dir, &mut files)?;
    // Go's sort.Strings on the relative paths: byte order.
    files.sort();
    let mut out = Vec::new();
    for rel in files {
        let path = dir.join(&rel);
        let text = std::fs::read_to_string(&path).map_err(|e| Error::Manifest {
            file: rel.clone(),
            message: format!("reading {}: {e}", path.display()),
        })?;
        let objects = parse(&rel, &text)?;
        let n = objects.len();
        for (doc, (object, gvk)) in objects.into_iter().enumerate() {
            out.push(Manifest {
                file: rel.clone(),
                doc,
                docs_in_file: n,
                object,
                gvk,
            });
        }
    }
    Ok(out)
}

/// Reads document `doc` of `file` (relative to `dir`) again, after the
/// file changed (a manifest the API refused, fixed by the user).
///
/// # Errors
/// [`Error::Manifest`] naming the file when it cannot be read, does not
/// parse, or no longer has that document.
pub fn reload(dir: &Path, file: &str, doc: usize) -> Result<Manifest, Error> {
    let path = dir.join(file);
    let text = std::fs::read_to_string(&path).map_err(|e| Error::Manifest {
        file: file.to_string(),
        message: format!("reading {}: {e}", path.display()),
    })?;
    let objects = parse(file, &text)?;
    let n = objects.len();
    let (object, gvk) = objects
        .into_iter()
        .nth(doc)
        .ok_or_else(|| Error::Manifest {
            file: file.to_string(),
            message: format!("document {} is gone", doc + 1),
        })?;
    Ok(Manifest {
        file: file.to_string(),
        doc,
        docs_in_file: n,
        object,
        gvk,
    })
}

fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) -> Result<(), Error> {
    let rel = dir.strip_prefix(root).unwrap_or(dir).display().to_string();
    let err = |e: std::io::Error| Error::Manifest {
        file: if rel.is_empty() {
            ".".into()
        } else {
            rel.clone()
        },
        message: format!("reading directory {}: {e}", dir.display()),
    };
    for entry in std::fs::read_dir(dir).map_err(err)? {
        let path = entry.map_err(err)?.path();
        // Follows symbolic links, as Go's filepath.Walk does for files.
        let meta = std::fs::metadata(&path).map_err(err)?;
        if meta.is_dir() {
            walk(root, &path, out)?;
        } else if meta.is_file() {
            let rel = path.strip_prefix(root).unwrap_or(&path);
            out.push(rel.to_string_lossy().into_owned());
        }
    }
    Ok(())
}

/// The objects of one file's text: each non-empty YAML document.
fn parse(file: &str, text: &str) -> Result<Vec<(DynamicObject, GroupVersionKind)>, Error> {
    use serde::Deserialize as _;
    let mut out = Vec::new();
    let bad = |doc: usize, message: String| Error::Manifest {
        file: format!("{file} (document {})", doc + 1),
        message,
    };
    for (i, de) in serde_yaml_ng::Deserializer::from_str(text).enumerate() {
        let value = serde_json::Value::deserialize(de).map_err(|e| {
            // serde_yaml_ng's messages name a line and column, not content.
            bad(i, format!("not YAML: {e}"))
        })?;
        if value.is_null() {
            continue;
        }
        if !value.is_object() {
            return Err(bad(i, "not an object (a mapping)".into()));
        }
        let field = |k: &str| value.get(k).and_then(|v| v.as_str()).unwrap_or_default();
        let (api_version, kind) = (field("apiVersion").to_string(), field("kind").to_string());
        if api_version.is_empty() || kind.is_empty() {
            return Err(bad(i, "apiVersion and kind are required".into()));
        }
        let object: DynamicObject = serde_json::from_value(value).map_err(|e| {
            bad(
                i,
                format!("{kind}: not a Kubernetes object: {}", e.classify_str()),
            )
        })?;
        if object
            .metadata
            .name
            .as_deref()
            .unwrap_or_default()
            .is_empty()
        {
            return Err(bad(i, format!("{kind}: metadata.name is required")));
        }
        let (group, version) = match api_version.split_once('/') {
            Some((g, v)) => (g.to_string(), v.to_string()),
            None => (String::new(), api_version.clone()),
        };
        let gvk = GroupVersionKind::gvk(&group, &version, &kind);
        out.push((object, gvk));
    }
    Ok(out)
}

/// serde_json's error category only: its full text may quote a value.
trait Classify {
    fn classify_str(&self) -> &'static str;
}

impl Classify for serde_json::Error {
    fn classify_str(&self) -> &'static str {
        match self.classify() {
            serde_json::error::Category::Io => "I/O error",
            serde_json::error::Category::Syntax => "syntax error",
            serde_json::error::Category::Data => "a field has the wrong type (metadata?)",
            serde_json::error::Category::Eof => "unexpected end",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_in_byte_order_documents_in_file_order() {
        let d = tempfile::tempdir().unwrap();
        let m = d.path();
        std::fs::create_dir(m.join("sub")).unwrap();
        std::fs::write(
            m.join("b.yaml"),
            "---\napiVersion: v1\nkind: Namespace\nmetadata: {name: x}\n---\n\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: x}\ndata: {a: b}\n",
        )
        .unwrap();
        std::fs::write(
            m.join("a-z.yaml"),
            "apiVersion: example.io/v1\nkind: W\nmetadata: {name: w}\n",
        )
        .unwrap();
        std::fs::write(
            m.join("sub/c.json"),
            r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s","namespace":"x"}}"#,
        )
        .unwrap();
        let all = load(m).unwrap();
        let labels: Vec<String> = all.iter().map(|m| m.label()).collect();
        assert_eq!(
            labels,
            [
                "a-z.yaml",
                "b.yaml (document 1 of 2)",
                "b.yaml (document 2 of 2)",
                "sub/c.json"
            ]
        );
        assert_eq!(all[0].gvk.group, "example.io");
        assert_eq!(all[2].kind_name(), "ConfigMap x/c");
        assert_eq!(all[1].kind_name(), "Namespace x");
        assert_eq!(format!("{:?}", all[3]), "Manifest(sub/c.json: Secret x/s)");
    }

    #[test]
    fn bad_documents_are_named_without_content() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(
            d.path().join("s.yaml"),
            "apiVersion: v1\nkind: Secret\nmetadata: {namespace: x}\nstringData: {password: hunter2}\n",
        )
        .unwrap();
        let e = load(d.path()).unwrap_err().to_string();
        assert!(e.contains("s.yaml (document 1)"), "{e}");
        assert!(e.contains("metadata.name is required"), "{e}");
        assert!(!e.contains("hunter2"), "{e}");
        let e = load(&d.path().join("nothing")).unwrap_err().to_string();
        assert!(e.starts_with("manifest .: reading directory "), "{e}");
        std::fs::write(d.path().join("s.yaml"), "- a\n").unwrap();
        let e = load(d.path()).unwrap_err().to_string();
        assert!(e.contains("not an object"), "{e}");
    }

    #[test]
    fn crd_names_what_it_defines() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(
            d.path().join("crd.yaml"),
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: widgets.example.io}\nspec:\n  group: example.io\n  names: {kind: Widget, plural: widgets}\n",
        )
        .unwrap();
        let all = load(d.path()).unwrap();
        assert!(all[0].is_crd());
        assert_eq!(
            all[0].crd_defines(),
            Some(("example.io".into(), "Widget".into()))
        );
    }
}
