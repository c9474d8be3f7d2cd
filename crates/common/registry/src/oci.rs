//! OCI distribution vocabulary: image references, digests, media types and
//! the parts of manifests and indexes a mirror has to follow.
//!
//! Follows the OCI image spec v1.1 (`image-manifest.md`, `image-index.md`,
//! `descriptor.md`) and the distribution spec v1.1 reference grammar
//! (`<registry>/<repository>[:<tag>][@<digest>]`); Docker schema 2 manifests
//! and manifest lists are read the same way (same field names).

use std::fmt;

use bytes::Bytes;

/// OCI image manifest (`application/vnd.oci.image.manifest.v1+json`).
pub const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
/// OCI image index (`application/vnd.oci.image.index.v1+json`).
pub const OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";
/// Docker image manifest, schema 2.
pub const DOCKER_MANIFEST: &str = "application/vnd.docker.distribution.manifest.v2+json";
/// Docker manifest list (multi-arch), schema 2.
pub const DOCKER_LIST: &str = "application/vnd.docker.distribution.manifest.list.v2+json";
/// The `Accept` header for manifest requests: every type above.
pub const MANIFEST_ACCEPT: &str = "application/vnd.oci.image.index.v1+json, application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.list.v2+json, application/vnd.docker.distribution.manifest.v2+json";

/// Why an image reference, digest or manifest is not acceptable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct FormatError(pub String);

/// A content digest `sha256:<64 lowercase hex>` (OCI image spec
/// `descriptor.md#digests`; only sha256 is supported, as by every registry
/// OpenShift uses).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Digest(String);

impl Digest {
    /// Parses `sha256:<hex>`. Errors: another algorithm, or not 64 lowercase hex digits.
    pub fn parse(s: &str) -> Result<Digest, FormatError> {
        let Some(hex) = s.strip_prefix("sha256:") else {
            return Err(FormatError(format!(
                "digest {s:?}: only sha256:<64 hex digits> is supported"
            )));
        };
        if hex.len() != 64
            || !hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        {
            return Err(FormatError(format!(
                "digest {s:?}: sha256 needs 64 lowercase hex digits"
            )));
        }
        Ok(Digest(s.to_string()))
    }

    /// The digest of `data`.
    pub fn of(data: &[u8]) -> Digest {
        let mut h = Hasher::new();
        h.update(data);
        h.finish()
    }

    /// The 64 hex digits.
    pub fn hex(&self) -> &str {
        &self.0["sha256:".len()..]
    }

    /// `sha256:<hex>`.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Incremental SHA-256 (aws-lc-rs) producing a [`Digest`].
pub struct Hasher(aws_lc_rs::digest::Context);

impl Hasher {
    /// A fresh SHA-256 state.
    pub fn new() -> Self {
        Hasher(aws_lc_rs::digest::Context::new(&aws_lc_rs::digest::SHA256))
    }
    /// Adds bytes.
    pub fn update(&mut self, data: &[u8]) {
        self.0.update(data);
    }
    /// The digest of everything added.
    pub fn finish(self) -> Digest {
        let d = self.0.finish();
        use std::fmt::Write as _;
        let mut s = String::with_capacity(71);
        s.push_str("sha256:");
        for b in d.as_ref() {
            let _ = write!(s, "{b:02x}");
        }
        Digest(s)
    }
}

impl Default for Hasher {
    fn default() -> Self {
        Self::new()
    }
}

/// A repository on a registry: `registry` is `host[:port]` as written by the
/// user (`docker.io` for Docker Hub), `name` the repository path.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Repo {
    /// `host[:port]`.
    pub registry: String,
    /// Repository path, e.g. `openshift/okd`.
    pub name: String,
}

impl fmt::Display for Repo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.registry, self.name)
    }
}

/// An image reference `registry/repository[:tag][@digest]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    /// Where the image lives.
    pub repo: Repo,
    /// The tag, if given.
    pub tag: Option<String>,
    /// The digest, if given (it wins over the tag).
    pub digest: Option<Digest>,
}

fn valid_path_component(c: &str) -> bool {
    // [a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*
    if c.is_empty() {
        return false;
    }
    let b = c.as_bytes();
    let alnum = |x: u8| x.is_ascii_lowercase() || x.is_ascii_digit();
    if !alnum(b[0]) || !alnum(b[b.len() - 1]) {
        return false;
    }
    let mut i = 0;
    while i < b.len() {
        if alnum(b[i]) {
            i += 1;
            continue;
        }
        let sep_start = i;
        while i < b.len() && !alnum(b[i]) {
            i += 1;
        }
        let sep = &c[sep_start..i];
        if !(sep == "." || sep == "_" || sep == "__" || sep.bytes().all(|x| x == b'-')) {
            return false;
        }
    }
    true
}

/// The tag grammar of the OCI distribution spec (`spec.md`, "Pulling
/// manifests"), as the spec writes it.
pub const TAG_GRAMMAR: &str = "[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}";

/// Checks a tag against [`TAG_GRAMMAR`]: 1 to 128 characters, no `/`, no
/// leading `.` or `-`, so a tag can never become another path of a URL or
/// of a layout. Errors: `tag "<t>" must match <grammar>`.
pub fn check_tag(t: &str) -> Result<(), FormatError> {
    if valid_tag(t) {
        Ok(())
    } else {
        Err(FormatError(format!("tag {t:?} must match {TAG_GRAMMAR}")))
    }
}

/// Checks a manifest reference: a tag ([`check_tag`]) or a digest
/// ([`Digest::parse`]); what goes into `/v2/<name>/manifests/<reference>`.
pub fn check_reference(r: &str) -> Result<(), FormatError> {
    if r.contains(':') {
        Digest::parse(r).map(|_| ())
    } else {
        check_tag(r)
    }
}

fn valid_tag(t: &str) -> bool {
    let b = t.as_bytes();
    !b.is_empty()
        && b.len() <= 128
        && (b[0].is_ascii_alphanumeric() || b[0] == b'_')
        && b.iter()
            .all(|&x| x.is_ascii_alphanumeric() || x == b'_' || x == b'.' || x == b'-')
}

fn looks_like_registry(first: &str) -> bool {
    first.contains('.') || first.contains(':') || first == "localhost"
}

impl Reference {
    /// Parses an image reference. A first path component with a `.` or `:`
    /// or equal to `localhost` is the registry, otherwise the registry is
    /// `docker.io` (and a one-component name gets `library/`), as in the
    /// distribution reference grammar. Errors name the part that breaks it.
    pub fn parse(s: &str) -> Result<Reference, FormatError> {
        let err = |why: &str| FormatError(format!("image reference {s:?}: {why}"));
        let (name_tag, digest) = match s.split_once('@') {
            Some((n, d)) => (n, Some(Digest::parse(d).map_err(|e| err(&e.0))?)),
            None => (s, None),
        };
        let slash = name_tag.rfind('/').map_or(0, |i| i + 1);
        let (name, tag) = match name_tag[slash..].rfind(':') {
            Some(i) => (&name_tag[..slash + i], Some(&name_tag[slash + i + 1..])),
            None => (name_tag, None),
        };
        if let Some(t) = tag {
            check_tag(t).map_err(|e| err(&e.0))?;
        }
        let repo = Repo::parse(name).map_err(|e| err(&e.0))?;
        Ok(Reference {
            repo,
            tag: tag.map(str::to_string),
            digest,
        })
    }

    /// What to ask the registry for: the digest if known, else the tag, else `latest`.
    pub fn reference(&self) -> String {
        match (&self.digest, &self.tag) {
            (Some(d), _) => d.to_string(),
            (None, Some(t)) => t.clone(),
            (None, None) => "latest".into(),
        }
    }
}

impl fmt::Display for Reference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.repo)?;
        if let Some(t) = &self.tag {
            write!(f, ":{t}")?;
        }
        if let Some(d) = &self.digest {
            write!(f, "@{d}")?;
        }
        Ok(())
    }
}

impl Repo {
    /// Parses `registry/path` (no tag, no digest), with the defaults of [`Reference::parse`].
    pub fn parse(s: &str) -> Result<Repo, FormatError> {
        if s.contains('@') {
            return Err(FormatError(format!(
                "{s:?} must be a repository, not a reference with a digest"
            )));
        }
        let (registry, path) = match s.split_once('/') {
            Some((first, rest)) if looks_like_registry(first) => {
                (first.to_string(), rest.to_string())
            }
            _ => ("docker.io".to_string(), s.to_string()),
        };
        let path = if registry == "docker.io" && !path.contains('/') {
            format!("library/{path}")
        } else {
            path
        };
        if registry.is_empty()
            || !registry
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b".-:[]".contains(&b))
        {
            return Err(FormatError(format!(
                "{s:?}: bad registry host {registry:?}"
            )));
        }
        if let Some(c) = path.split('/').find(|c| !valid_path_component(c)) {
            return Err(FormatError(format!(
                "{s:?}: repository component {c:?} must be lowercase letters and digits separated by '.', '_', '__' or '-'"
            )));
        }
        Ok(Repo {
            registry,
            name: path,
        })
    }
}

/// A content descriptor (`descriptor.md`): what a manifest points at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Descriptor {
    /// The media type the manifest gives.
    pub media_type: String,
    /// The content's digest.
    pub digest: Digest,
    /// The content's size in bytes.
    pub size: u64,
    /// `platform.architecture` of an index entry, if any.
    pub architecture: Option<String>,
    /// `platform.os` of an index entry, if any.
    pub os: Option<String>,
}

/// A manifest or index exactly as the registry sent it: the bytes are kept
/// untouched, since the digest is over them.
#[derive(Debug, Clone)]
pub struct Manifest {
    /// The raw JSON.
    pub bytes: Bytes,
    /// Its media type (`Content-Type`, else the `mediaType` field).
    pub media_type: String,
    /// sha256 of `bytes`.
    pub digest: Digest,
}

/// What a manifest refers to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed {
    /// An index / manifest list: child manifests.
    Index(Vec<Descriptor>),
    /// An image manifest: the config, then the layers (the blobs to copy).
    Image {
        /// The config blob.
        config: Descriptor,
        /// Layers, in order. Foreign layers (with `urls`) are left out.
        layers: Vec<Descriptor>,
    },
}

fn descriptor(v: &serde_json::Value, at: &str) -> Result<Descriptor, FormatError> {
    let s = |k: &str| v.get(k).and_then(|x| x.as_str());
    let digest = s("digest").ok_or_else(|| FormatError(format!("{at}: no digest")))?;
    let size = v
        .get("size")
        .and_then(|x| x.as_u64())
        .ok_or_else(|| FormatError(format!("{at}: no size")))?;
    // descriptor.md: `size` is an int64; larger values are refused so that
    // sums and offsets over sizes cannot overflow.
    if size > i64::MAX as u64 {
        return Err(FormatError(format!(
            "{at}: size {size} is larger than an int64 (descriptor.md)"
        )));
    }
    let platform = v.get("platform");
    let p = |k: &str| {
        platform
            .and_then(|p| p.get(k))
            .and_then(|x| x.as_str())
            .map(str::to_string)
    };
    Ok(Descriptor {
        media_type: s("mediaType").unwrap_or_default().to_string(),
        digest: Digest::parse(digest).map_err(|e| FormatError(format!("{at}: {}", e.0)))?,
        size,
        architecture: p("architecture"),
        os: p("os"),
    })
}

impl Manifest {
    /// Wraps raw bytes; the media type is `content_type` unless empty or
    /// generic, else the document's `mediaType`. Errors: not JSON, or
    /// Docker schema 1 (not supported by OpenShift 4 mirrors either).
    pub fn new(bytes: Bytes, content_type: Option<&str>) -> Result<Manifest, FormatError> {
        let v: serde_json::Value = serde_json::from_slice(&bytes)
            .map_err(|e| FormatError(format!("manifest is not JSON: {e}")))?;
        if v.get("schemaVersion").and_then(|x| x.as_u64()) == Some(1) {
            return Err(FormatError(
                "Docker schema 1 manifests are not supported".into(),
            ));
        }
        let declared = v.get("mediaType").and_then(|x| x.as_str());
        let ct = content_type
            .map(|c| c.split(';').next().unwrap_or("").trim())
            .filter(|c| {
                !c.is_empty() && *c != "application/json" && *c != "application/octet-stream"
            });
        let media_type = match (ct, declared) {
            (Some(c), _) => c.to_string(),
            (None, Some(d)) => d.to_string(),
            (None, None) if v.get("manifests").is_some() => OCI_INDEX.to_string(),
            (None, None) => OCI_MANIFEST.to_string(),
        };
        let digest = Digest::of(&bytes);
        Ok(Manifest {
            bytes,
            media_type,
            digest,
        })
    }

    /// The children (index) or the blobs (image) of this manifest.
    pub fn parse(&self) -> Result<Parsed, FormatError> {
        let v: serde_json::Value = serde_json::from_slice(&self.bytes)
            .map_err(|e| FormatError(format!("manifest {} is not JSON: {e}", self.digest)))?;
        let at = self.digest.to_string();
        if let Some(ms) = v.get("manifests").and_then(|x| x.as_array()) {
            let children = ms
                .iter()
                .enumerate()
                .map(|(i, m)| descriptor(m, &format!("{at} manifests[{i}]")))
                .collect::<Result<_, _>>()?;
            return Ok(Parsed::Index(children));
        }
        let config = v
            .get("config")
            .ok_or_else(|| FormatError(format!("manifest {at} has neither manifests nor config")))
            .and_then(|c| descriptor(c, &format!("{at} config")))?;
        let mut layers = Vec::new();
        for (i, l) in v
            .get("layers")
            .and_then(|x| x.as_array())
            .into_iter()
            .flatten()
            .enumerate()
        {
            if l.get("urls").is_some() {
                continue;
            }
            layers.push(descriptor(l, &format!("{at} layers[{i}]"))?);
        }
        Ok(Parsed::Image { config, layers })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references() {
        let r = Reference::parse("quay.io/openshift/okd:4.5.0-0.okd-2020-08-12-020541").unwrap();
        assert_eq!(r.repo.registry, "quay.io");
        assert_eq!(r.repo.name, "openshift/okd");
        assert_eq!(r.tag.as_deref(), Some("4.5.0-0.okd-2020-08-12-020541"));
        let d = format!("sha256:{}", "a".repeat(64));
        let r = Reference::parse(&format!("127.0.0.1:5000/okd/okd-content@{d}")).unwrap();
        assert_eq!(r.repo.registry, "127.0.0.1:5000");
        assert_eq!(r.reference(), d);
        let r = Reference::parse("busybox").unwrap();
        assert_eq!(r.repo.to_string(), "docker.io/library/busybox");
        assert_eq!(r.reference(), "latest");
        assert!(Reference::parse("quay.io/Openshift/okd:1").is_err());
        assert!(Reference::parse("quay.io/openshift/okd@sha256:xyz").is_err());
        assert!(Reference::parse("quay.io/openshift/okd:-bad").is_err());
        for bad in ["", "..", ".x", "-x", "a/b", "a:b", &"x".repeat(129)] {
            assert!(check_tag(bad).is_err(), "{bad:?}");
            assert!(check_reference(bad).is_err(), "{bad:?}");
        }
        for good in [
            "latest",
            "_x",
            "4.15.0-0.okd-2024-01-01-000000",
            &"x".repeat(128),
        ] {
            assert!(check_tag(good).is_ok(), "{good:?}");
        }
        assert!(check_reference(&d).is_ok());
        assert!(check_reference("sha256:../../x").is_err());
        assert!(Repo::parse("registry.okd.example:5000/openshift/okd").is_ok());
    }

    #[test]
    fn digests() {
        assert_eq!(
            Digest::of(b"").as_str(),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert!(Digest::parse("sha512:00").is_err());
    }

    #[test]
    fn manifests() {
        let m = Manifest::new(
            Bytes::from_static(br#"{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855","size":2,"platform":{"architecture":"arm64","os":"linux"}}]}"#),
            None,
        )
        .unwrap();
        assert_eq!(m.media_type, OCI_INDEX);
        let Parsed::Index(c) = m.parse().unwrap() else {
            panic!()
        };
        assert_eq!(c[0].architecture.as_deref(), Some("arm64"));
        assert!(Manifest::new(Bytes::from_static(br#"{"schemaVersion":1}"#), None).is_err());
        // Sizes past int64 are refused, not summed into an overflow.
        let huge = Manifest::new(
            Bytes::from(format!(
                r#"{{"schemaVersion":2,"config":{{"digest":"{}","size":2}},"layers":[{{"digest":"{}","size":18446744073709551615}}]}}"#,
                Digest::of(b"c"),
                Digest::of(b"l")
            )),
            None,
        )
        .unwrap();
        let e = huge.parse().unwrap_err().0;
        assert!(e.contains("layers[0]: size 18446744073709551615"), "{e}");
    }
}
