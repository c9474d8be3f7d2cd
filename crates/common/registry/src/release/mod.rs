//! Mirroring a release payload: what `oc adm release mirror` does.
//!
//! A release image carries `release-manifests/image-references` in one of
//! its layers: an ImageStream (`image.openshift.io/v1`) whose
//! `spec.tags[].from.name` are the component images by digest, and whose
//! `metadata.name` is the release version. The mirror copies the release
//! image and every component by digest into one target repository, tagged
//! `<version>` (release) and `<version>-<component>` (as oc does), and
//! gives the `imageContentSources` / `imageDigestSources` block that sends
//! the cluster to the mirror: one entry per source repository (the release
//! repository and the components' repository), all mirrored to the target.

use std::path::Path;

use futures_util::StreamExt as _;

use crate::client::OciError;
use crate::copy::Endpoint;
use crate::oci::{Digest, Manifest, Parsed, Reference, Repo, TAG_GRAMMAR, check_tag};

mod plan;

pub use plan::{
    SourcesField, Target, component_tag, image_content_source_policy, image_digest_mirror_set,
    install_config_block, jobs, mapping, mirror_map,
};
#[cfg(test)]
use std::io::Read as _;

/// Path of the ImageStream inside the release image.
pub const IMAGE_REFERENCES: &str = "release-manifests/image-references";
/// The file `mirror to-disk` writes next to the layout, for `from-disk`.
pub const ARCHIVE_METADATA: &str = "okd-release.json";

/// One component of a release.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Component {
    /// The ImageStream tag name (`cli`, `machine-config-operator`, ...).
    pub name: String,
    /// Source repository (`quay.io/openshift/okd-content`).
    pub source: String,
    /// Manifest (or index) digest.
    pub digest: String,
}

/// A release payload: the release image and its components.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Release {
    /// Version (`metadata.name` of image-references).
    pub version: String,
    /// Source repository of the release image.
    pub source: String,
    /// Digest of the release image (index or manifest).
    pub digest: String,
    /// Components, in image-references order.
    pub components: Vec<Component>,
}

impl Release {
    /// Checks every field against the grammar it has in the mirror, as
    /// image-references is checked ([`parse_image_references`]): `version`
    /// and each component `name` the OCI tag grammar ([`TAG_GRAMMAR`]),
    /// `source` a repository and `digest` a sha256 digest (distribution
    /// spec `spec.md`). Errors name the field (`<at>version`,
    /// `<at>components[i].digest`, ...) and the rule.
    pub fn validate(&self, at: &str) -> Result<(), String> {
        let tag = |field: String, t: &str| {
            check_tag(t)
                .map_err(|_| format!("{field} {t:?} (used as a tag) must match {TAG_GRAMMAR}"))
        };
        let repo = |field: String, r: &str| {
            Repo::parse(r)
                .map(|_| ())
                .map_err(|e| format!("{field}: {}", e.0))
        };
        let digest = |field: String, d: &str| {
            Digest::parse(d)
                .map(|_| ())
                .map_err(|e| format!("{field}: {}", e.0))
        };
        tag(format!("{at}version"), &self.version)?;
        repo(format!("{at}source"), &self.source)?;
        digest(format!("{at}digest"), &self.digest)?;
        for (i, c) in self.components.iter().enumerate() {
            let f = |k: &str| format!("{at}components[{i}].{k}");
            tag(f("name"), &c.name)?;
            repo(f("source"), &c.source)?;
            digest(f("digest"), &c.digest)?;
        }
        Ok(())
    }
}

fn format_err(what: &str, detail: impl Into<String>) -> OciError {
    OciError::Format {
        what: what.to_string(),
        detail: detail.into(),
    }
}

/// Parses an image-references ImageStream. Errors name the tag at fault:
/// a `from.name` that is not `repo@sha256:...`, duplicate tag names.
pub fn parse_image_references(
    text: &[u8],
    what: &str,
) -> Result<(String, Vec<Component>), OciError> {
    let v: serde_json::Value =
        serde_json::from_slice(text).map_err(|e| format_err(what, format!("not JSON: {e}")))?;
    if v.get("kind").and_then(|k| k.as_str()) != Some("ImageStream") {
        return Err(format_err(what, "kind must be ImageStream"));
    }
    let version = v
        .pointer("/metadata/name")
        .and_then(|x| x.as_str())
        .filter(|s| !s.is_empty())
        .ok_or_else(|| format_err(what, "metadata.name (the release version) is missing"))?
        .to_string();
    // The version is the release's tag in the mirror: the OCI tag grammar,
    // so it can name no other path (and carries no control characters).
    if check_tag(&version).is_err() {
        return Err(format_err(
            what,
            format!(
                "metadata.name {version:?} (the release version, used as a tag) must match {TAG_GRAMMAR}"
            ),
        ));
    }
    let tags = v
        .pointer("/spec/tags")
        .and_then(|x| x.as_array())
        .ok_or_else(|| format_err(what, "spec.tags is missing"))?;
    let mut seen = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    for (i, t) in tags.iter().enumerate() {
        let name = t
            .get("name")
            .and_then(|x| x.as_str())
            .ok_or_else(|| format_err(what, format!("spec.tags[{i}].name is missing")))?;
        if name.chars().any(char::is_control) {
            return Err(format_err(
                what,
                format!("spec.tags[{i}].name {name:?} has control characters"),
            ));
        }
        if check_tag(name).is_err() {
            return Err(format_err(
                what,
                format!("spec.tags[{i}].name {name:?} (part of a tag) must match {TAG_GRAMMAR}"),
            ));
        }
        if !seen.insert(name.to_string()) {
            return Err(format_err(
                what,
                format!("spec.tags[{i}]: tag {name:?} appears twice"),
            ));
        }
        let from = t
            .pointer("/from/name")
            .and_then(|x| x.as_str())
            .ok_or_else(|| {
                format_err(
                    what,
                    format!("spec.tags[{i}] ({name}): from.name is missing"),
                )
            })?;
        let r = Reference::parse(from)
            .map_err(|e| format_err(what, format!("spec.tags[{i}] ({name}): {}", e.0)))?;
        let digest = r.digest.ok_or_else(|| {
            format_err(
                what,
                format!("spec.tags[{i}] ({name}): {from:?} must be pinned by digest (@sha256:...)"),
            )
        })?;
        out.push(Component {
            name: name.to_string(),
            source: r.repo.to_string(),
            digest: digest.to_string(),
        });
    }
    Ok((version, out))
}

/// Largest `image-references` accepted, bytes (16 MiB; a real one is
/// about 100 KiB).
pub const MAX_IMAGE_REFERENCES: u64 = 16 << 20;
/// Most bytes a release image layer may unpack to while it is searched for
/// `image-references` (1 GiB): a decompression bomb stops here.
pub const MAX_LAYER_UNPACKED: u64 = 1 << 30;

/// Why a layer could not be searched.
#[derive(Debug)]
enum ScanError {
    /// Not a (gzip) tar archive, or it broke off.
    Io(std::io::Error),
    /// `image-references` is larger than the limit (its size in the tar header).
    EntryTooLarge(u64),
    /// The layer unpacks to more than the limit.
    LayerTooLarge(u64),
}

/// Counts the bytes read through it and fails past `limit`.
struct Limited<R> {
    inner: R,
    read: u64,
    limit: u64,
    exceeded: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl<R: std::io::Read> std::io::Read for Limited<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read = self.read.saturating_add(n as u64);
        if self.read > self.limit {
            self.exceeded
                .store(true, std::sync::atomic::Ordering::Relaxed);
            return Err(std::io::Error::other("layer unpacks past the limit"));
        }
        Ok(n)
    }
}

/// Finds `release-manifests/image-references` in a (gzip or plain) tar
/// layer, reading at most `max_unpacked` bytes of the unpacked tar and
/// refusing an entry larger than `max_entry`; stops at the entry.
fn find_in_layer(
    reader: impl std::io::Read,
    max_entry: u64,
    max_unpacked: u64,
) -> Result<Option<Vec<u8>>, ScanError> {
    let mut buf = std::io::BufReader::with_capacity(256 * 1024, reader);
    let head = std::io::BufRead::fill_buf(&mut buf).map_err(ScanError::Io)?;
    let gz = head.starts_with(&[0x1f, 0x8b]);
    let inner: Box<dyn std::io::Read> = if gz {
        Box::new(flate2::read::MultiGzDecoder::new(buf))
    } else {
        Box::new(buf)
    };
    let exceeded = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let limited = Limited {
        inner,
        read: 0,
        limit: max_unpacked,
        exceeded: exceeded.clone(),
    };
    let io = |e: std::io::Error| {
        if exceeded.load(std::sync::atomic::Ordering::Relaxed) {
            ScanError::LayerTooLarge(max_unpacked)
        } else {
            ScanError::Io(e)
        }
    };
    let mut ar = tar::Archive::new(limited);
    for e in ar.entries().map_err(io)? {
        let mut e = e.map_err(io)?;
        let p = e.path().map_err(io)?;
        if p.to_string_lossy().trim_start_matches("./") != IMAGE_REFERENCES {
            continue;
        }
        let size = e.header().size().map_err(io)?;
        if size > max_entry {
            return Err(ScanError::EntryTooLarge(size));
        }
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut std::io::Read::take(&mut e, max_entry), &mut v)
            .map_err(io)?;
        return Ok(Some(v));
    }
    Ok(None)
}

/// Reads one layer of the release image and searches it for
/// `image-references`, verifying the bytes read against the layer digest
/// (all of them, also after the entry was found). A layer that is no tar
/// archive or too large unpacked is refused as soon as that is clear.
async fn scan_layer(
    src: &Endpoint,
    repo: &Repo,
    layer: &crate::oci::Descriptor,
    what: &str,
) -> Result<Option<Vec<u8>>, OciError> {
    let lwhat = format!("layer {} of {what}", layer.digest);
    let mut stream = src.blob(repo, &layer.digest).await?;
    // Hash every byte while a blocking thread untars what arrives.
    let (tx, rx) = tokio::sync::mpsc::channel::<bytes::Bytes>(16);
    let reader = ChannelReader {
        rx,
        cur: bytes::Bytes::new(),
    };
    let mut scan = Some(tokio::task::spawn_blocking(move || {
        find_in_layer(reader, MAX_IMAGE_REFERENCES, MAX_LAYER_UNPACKED)
    }));
    let mut found = None;
    let mut h = crate::oci::Hasher::new();
    let mut n = 0u64;
    let mut tx = Some(tx);
    while let Some(piece) = stream.next().await {
        let piece = piece?;
        h.update(&piece);
        n = n.saturating_add(piece.len() as u64);
        if let Some(t) = &tx
            && t.send(piece).await.is_err()
        {
            // The scanner is done: refused now, or found (then keep hashing).
            tx = None;
            if let Some(task) = scan.take() {
                found = Some(scan_result(task.await, &lwhat)?);
            }
        }
    }
    drop(tx);
    let actual = h.finish();
    if actual != layer.digest {
        return Err(OciError::Digest {
            what: lwhat,
            expected: layer.digest.clone(),
            actual,
            size: n,
        });
    }
    match (found, scan) {
        (Some(f), _) => Ok(f),
        (None, Some(task)) => scan_result(task.await, &lwhat),
        (None, None) => Ok(None),
    }
}

fn scan_result(
    joined: Result<Result<Option<Vec<u8>>, ScanError>, tokio::task::JoinError>,
    lwhat: &str,
) -> Result<Option<Vec<u8>>, OciError> {
    match joined.map_err(|e| format_err(lwhat, e.to_string()))? {
        Ok(found) => Ok(found),
        Err(ScanError::Io(e)) => Err(format_err(lwhat, format!("not a tar archive: {e}"))),
        Err(ScanError::EntryTooLarge(size)) => Err(OciError::TooLarge {
            what: format!("{IMAGE_REFERENCES} in {lwhat} ({size} bytes by its tar header)"),
            limit: MAX_IMAGE_REFERENCES,
        }),
        Err(ScanError::LayerTooLarge(limit)) => Err(OciError::TooLarge {
            what: format!("{lwhat} unpacked (a decompression bomb?)"),
            limit,
        }),
    }
}

/// Reads the release at `from`: resolves the tag, picks the `arch` image
/// of a multi-arch release, and reads image-references from its layers
/// (last layer first), verifying each layer read against its digest.
pub async fn read_release(
    src: &Endpoint,
    from: &Reference,
    arch: &str,
) -> Result<Release, OciError> {
    read_release_image(src, from, arch).await.map(|(r, _)| r)
}

/// [`read_release`], also giving the config descriptor of the image it
/// read (the image's architecture and OS are in that blob), so a caller
/// reads no manifest twice.
pub async fn read_release_image(
    src: &Endpoint,
    from: &Reference,
    arch: &str,
) -> Result<(Release, crate::oci::Descriptor), OciError> {
    let top = src.manifest(&from.repo, &from.reference()).await?;
    let what = format!("release image {from}");
    let image: Manifest = match top.parse().map_err(|e| format_err(&what, e.0))? {
        Parsed::Index(children) => {
            let c = children
                .iter()
                .find(|c| {
                    c.architecture.as_deref() == Some(arch)
                        && c.os.as_deref().unwrap_or("linux") == "linux"
                })
                .ok_or_else(|| format_err(&what, format!("the index has no linux/{arch} image")))?;
            src.manifest(&from.repo, c.digest.as_str()).await?
        }
        Parsed::Image { .. } => top.clone(),
    };
    let Parsed::Image { config, layers } = image.parse().map_err(|e| format_err(&what, e.0))?
    else {
        return Err(format_err(&what, "an index inside an index"));
    };
    for layer in layers.iter().rev() {
        if let Some(text) = scan_layer(src, &from.repo, layer, &what).await? {
            let (version, components) =
                parse_image_references(&text, &format!("{IMAGE_REFERENCES} in {what}"))?;
            return Ok((
                Release {
                    version,
                    source: from.repo.to_string(),
                    digest: top.digest.to_string(),
                    components,
                },
                config,
            ));
        }
    }
    Err(format_err(
        &what,
        format!("no layer holds {IMAGE_REFERENCES}: is this a release image?"),
    ))
}

/// A blocking reader over chunks sent from async code.
struct ChannelReader {
    rx: tokio::sync::mpsc::Receiver<bytes::Bytes>,
    cur: bytes::Bytes,
}

impl std::io::Read for ChannelReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.cur.is_empty() {
            match self.rx.blocking_recv() {
                Some(b) => self.cur = b,
                None => return Ok(0),
            }
        }
        let n = buf.len().min(self.cur.len());
        buf[..n].copy_from_slice(&self.cur[..n]);
        self.cur = self.cur.slice(n..);
        Ok(n)
    }
}

/// Writes the archive metadata next to a layout (atomically):
/// `{"releases": [<Release>, ...]}`, every release the archive holds.
pub fn write_archive_metadata(dir: &Path, releases: &[Release]) -> Result<(), OciError> {
    let text =
        serde_json::to_vec_pretty(&serde_json::json!({ "releases": releases })).expect("JSON");
    crate::layout::write_atomic(&dir.join(ARCHIVE_METADATA), &text)
}

/// Reads the archive metadata of `mirror to-disk`: the releases of
/// `{"releases": [...]}`, or the one release of the single-release form
/// written before; every release checked with [`Release::validate`].
/// Errors name the file, the field and the rule.
pub fn read_archive_metadata(dir: &Path) -> Result<Vec<Release>, OciError> {
    let p = dir.join(ARCHIVE_METADATA);
    let text = std::fs::read(&p).map_err(|source| OciError::Io {
        what: format!(
            "reading {} (is {} an archive of mirror to-disk?)",
            p.display(),
            dir.display()
        ),
        source,
    })?;
    let what = p.display().to_string();
    let v: serde_json::Value =
        serde_json::from_slice(&text).map_err(|e| format_err(&what, e.to_string()))?;
    let (releases, many) = match v.get("releases") {
        Some(list) => (
            serde_json::from_value::<Vec<Release>>(list.clone())
                .map_err(|e| format_err(&what, format!("releases: {e}")))?,
            true,
        ),
        None => (
            vec![
                serde_json::from_value::<Release>(v)
                    .map_err(|e| format_err(&what, e.to_string()))?,
            ],
            false,
        ),
    };
    if releases.is_empty() {
        return Err(format_err(&what, "releases is empty"));
    }
    for (i, r) in releases.iter().enumerate() {
        let at = if many {
            format!("releases[{i}].")
        } else {
            String::new()
        };
        r.validate(&at).map_err(|e| format_err(&what, e))?;
    }
    Ok(releases)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_references() {
        let d = format!("sha256:{}", "b".repeat(64));
        let text = format!(
            r#"{{"kind":"ImageStream","apiVersion":"image.openshift.io/v1","metadata":{{"name":"4.5.0-0.okd-2020-08-12-020541"}},"spec":{{"tags":[{{"name":"cli","from":{{"kind":"DockerImage","name":"quay.io/openshift/okd-content@{d}"}}}}]}}}}"#
        );
        let (v, c) = parse_image_references(text.as_bytes(), "x").unwrap();
        assert_eq!(v, "4.5.0-0.okd-2020-08-12-020541");
        assert_eq!(c[0].source, "quay.io/openshift/okd-content");
        let bad = text.replace(&format!("@{d}"), ":latest");
        let e = parse_image_references(bad.as_bytes(), "x")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("spec.tags[0] (cli)") && e.contains("pinned by digest"),
            "{e}"
        );
        let up = text.replace("4.5.0-0.okd-2020-08-12-020541", "../../../t/a/manifests/x");
        let e = parse_image_references(up.as_bytes(), "x")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(r#"metadata.name "../../../t/a/manifests/x" (the release version, used as a tag) must match"#),
            "{e}"
        );
        let slash = text.replace(r#""name":"cli""#, r#""name":"a/b""#);
        let e = parse_image_references(slash.as_bytes(), "x")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(r#"spec.tags[0].name "a/b" (part of a tag)"#),
            "{e}"
        );
        let esc = text.replace(r#""name":"cli""#, r#""name":"cli\u001b[2J""#);
        let e = parse_image_references(esc.as_bytes(), "x")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(r#"spec.tags[0].name "cli\u{1b}[2J" has control characters"#),
            "{e}"
        );
    }

    #[test]
    fn archive_metadata_lists_releases_and_is_validated() {
        let d = tempfile::tempdir().unwrap();
        let rel = |v: &str| Release {
            version: v.into(),
            source: "quay.io/openshift/okd".into(),
            digest: format!("sha256:{}", "c".repeat(64)),
            components: vec![],
        };
        write_archive_metadata(d.path(), &[rel("4.15.0-a"), rel("4.16.0-b")]).unwrap();
        let got = read_archive_metadata(d.path()).unwrap();
        assert_eq!(got, vec![rel("4.15.0-a"), rel("4.16.0-b")]);
        // The single-release form of earlier versions still reads.
        let p = d.path().join(ARCHIVE_METADATA);
        std::fs::write(&p, serde_json::to_vec(&rel("4.14.0-c")).unwrap()).unwrap();
        assert_eq!(
            read_archive_metadata(d.path()).unwrap(),
            vec![rel("4.14.0-c")]
        );
        let mut bad = rel("../x");
        write_archive_metadata(d.path(), &[rel("4.15.0-a"), bad.clone()]).unwrap();
        let e = read_archive_metadata(d.path()).unwrap_err().to_string();
        assert!(
            e.contains(ARCHIVE_METADATA)
                && e.contains(r#"releases[1].version "../x" (used as a tag) must match"#),
            "{e}"
        );
        bad.version = "4.15.0".into();
        bad.components.push(Component {
            name: "cli".into(),
            source: "quay.io/openshift/okd-content".into(),
            digest: "sha256:../../x".into(),
        });
        let e = bad.validate("").unwrap_err();
        assert!(e.starts_with("components[0].digest: "), "{e}");
        assert!(
            jobs(
                &bad,
                &Target {
                    to: Repo::parse("r.example/a/b").unwrap(),
                    release: None
                }
            )
            .is_err()
        );
    }

    /// A tar with one entry `name` of `size` zero bytes, gzipped.
    fn layer(name: &str, size: usize) -> Vec<u8> {
        let mut b = tar::Builder::new(Vec::new());
        let mut h = tar::Header::new_gnu();
        h.set_size(size as u64);
        h.set_mode(0o644);
        h.set_cksum();
        b.append_data(&mut h, name, std::io::repeat(0).take(size as u64))
            .unwrap();
        let tar = b.into_inner().unwrap();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        std::io::Write::write_all(&mut gz, &tar).unwrap();
        gz.finish().unwrap()
    }

    #[test]
    fn layer_limits() {
        let ok = layer(IMAGE_REFERENCES, 100);
        assert_eq!(
            find_in_layer(&ok[..], 1000, 1 << 20)
                .unwrap()
                .unwrap()
                .len(),
            100
        );
        // The entry is too large: refused by its header.
        let big = layer(IMAGE_REFERENCES, 4 << 20);
        assert!(matches!(
            find_in_layer(&big[..], 1 << 20, 1 << 30),
            Err(ScanError::EntryTooLarge(n)) if n == 4 << 20
        ));
        // Another file unpacks past the layer limit: refused at the limit.
        let bomb = layer("filler", 8 << 20);
        assert!(bomb.len() < 64 << 10, "{}", bomb.len());
        assert!(matches!(
            find_in_layer(&bomb[..], 1 << 20, 1 << 20),
            Err(ScanError::LayerTooLarge(n)) if n == 1 << 20
        ));
        assert!(matches!(
            find_in_layer(&bomb[..], 1 << 20, 16 << 20),
            Ok(None)
        ));
    }

    #[test]
    fn blocks() {
        let rel = Release {
            version: "4.5.0-0.okd-2020-08-12-020541".into(),
            source: "quay.io/openshift/okd".into(),
            digest: format!("sha256:{}", "c".repeat(64)),
            components: vec![Component {
                name: "cli".into(),
                source: "quay.io/openshift/okd-content".into(),
                digest: format!("sha256:{}", "d".repeat(64)),
            }],
        };
        let target = Target {
            to: Repo::parse("registry.okd.example:5000/openshift/okd").unwrap(),
            release: None,
        };
        let m = mirror_map(&rel, &target);
        assert_eq!(
            install_config_block(&m, SourcesField::for_version(&rel.version)),
            "imageContentSources:\n- mirrors:\n  - registry.okd.example:5000/openshift/okd\n  source: quay.io/openshift/okd\n- mirrors:\n  - registry.okd.example:5000/openshift/okd\n  source: quay.io/openshift/okd-content\n"
        );
        assert_eq!(
            SourcesField::for_version("4.15.0-0.okd-test"),
            SourcesField::ImageDigestSources
        );
        assert_eq!(
            component_tag("4.5.0", "machine-config-operator"),
            "4.5.0-machine-config-operator"
        );
        let j = jobs(&rel, &target).unwrap();
        assert_eq!(
            j[1].tag.as_deref(),
            Some("4.5.0-0.okd-2020-08-12-020541-cli")
        );
    }
}
