//! `release-image.service`: the release payload pulled by digest through
//! the mirrors, its architecture checked, its image-references read.
//!
//! openshift/installer `data/data/bootstrap/files/usr/local/bin/release-image-download.sh`
//! pulls the release with podman (stage `pull-release-image`, retried until
//! it works, with `/etc/issue.d/50_release-image.issue` on the console
//! while it fails) and compares the image's architecture with the host's
//! (stage `image-metadata-arches-match`); bootkube.sh then resolves each
//! component with `image_for <name>` from the release's
//! `release-manifests/image-references`. Here both come from one read of
//! the release over the OCI distribution API: the mirrors of
//! `/etc/containers/registries.conf` (containers-registries.conf(5) v2,
//! `mirror-by-digest-only`) are tried in order before the source, with the
//! pull secret of `/root/.docker/config.json` and the install's
//! additional trust bundle. The result is kept in
//! `<work>/okd-release.json` for bootkube's stages.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use okd_registry::auth::Credentials;
use okd_registry::client::{ClientOptions, Registries};
use okd_registry::copy::Endpoint;
use okd_registry::oci::Reference;
use serde::{Deserialize, Serialize};
use tracing::{info, warn};

/// The file in the work directory that holds the pulled release.
pub const RELEASE_FILE: &str = "okd-release.json";

/// The components an upstream payload must name (etcd and the image with
/// kube-apiserver, kube-controller-manager and kube-scheduler).
pub const UPSTREAM_COMPONENTS: [&str; 2] = ["etcd", "hyperkube"];

/// A component only OpenShift payloads carry: its presence makes the
/// payload an OpenShift one, whose render stages run the operators' images.
pub const OPENSHIFT_MARKER: &str = "cluster-kube-apiserver-operator";

/// Which render path a payload takes (issue #20 item 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PayloadKind {
    /// An OKD/OCP payload: the operators render (bootkube.sh's stages).
    Openshift,
    /// Upstream components only: okd-install renders the static pods.
    Upstream,
}

/// The release as the node pulled it (`<work>/okd-release.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PulledRelease {
    /// The release image as the install names it (`releaseImage`).
    pub release_image: String,
    /// The release by digest in its source repository
    /// (`quay.io/openshift/okd@sha256:…`, bootkube's `RELEASE_IMAGE_DIGEST`).
    pub digest_pullspec: String,
    /// Where it was read from (a mirror, or the source itself).
    pub pulled_from: String,
    /// The payload's version (image-references `metadata.name`).
    pub version: String,
    /// The image's architecture (OCI `architecture`: amd64, arm64, …).
    pub architecture: String,
    /// The render path.
    pub kind: PayloadKind,
    /// Component name → pull spec by digest in the source repository
    /// (the node's container runtime maps it to the mirror).
    pub images: BTreeMap<String, String>,
}

impl PulledRelease {
    /// The pull spec of component `name` (bootkube.sh's `image_for`).
    ///
    /// # Errors
    /// A message naming the component and the release when it is missing.
    pub fn image_for(&self, name: &str) -> Result<&str, String> {
        self.images.get(name).map(String::as_str).ok_or_else(|| {
            format!(
                "the release {} names no `{name}` image in release-manifests/image-references",
                self.digest_pullspec
            )
        })
    }

    /// Reads `<work>/okd-release.json`.
    ///
    /// # Errors
    /// A message naming the file: missing (release-image.service has not
    /// pulled the release yet) or malformed.
    pub fn load(work: &Path) -> Result<PulledRelease, String> {
        let p = work.join(RELEASE_FILE);
        let text = std::fs::read_to_string(&p).map_err(|e| {
            format!(
                "cannot read {}: {e} (release-image.service, `okd-install bootstrap release-image`, writes it when it has pulled the release)",
                p.display()
            )
        })?;
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", p.display()))
    }
}

/// One `[[registry]]` of registries.conf with its mirrors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MirrorRule {
    /// The source it applies to (`location`, or `prefix` when set).
    pub source: String,
    /// Where the source itself is pulled from (`location`; the same as
    /// `source` unless `prefix` rewrites it).
    pub location: String,
    /// Mirrors, in the order they are tried.
    pub mirrors: Vec<String>,
    /// Whether mirrors serve only pulls by digest (`mirror-by-digest-only`).
    pub by_digest_only: bool,
    /// Whether the source itself may not be used (`blocked`).
    pub blocked: bool,
}

#[derive(Deserialize)]
struct ConfFile {
    #[serde(default)]
    registry: Vec<ConfRegistry>,
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
struct ConfRegistry {
    #[serde(default)]
    prefix: String,
    #[serde(default)]
    location: String,
    #[serde(default)]
    mirror_by_digest_only: bool,
    #[serde(default)]
    blocked: bool,
    #[serde(default)]
    mirror: Vec<ConfMirror>,
}

#[derive(Deserialize)]
struct ConfMirror {
    location: String,
}

/// Parses registries.conf v2 (containers-registries.conf(5)): the
/// `[[registry]]` tables with `prefix`, `location`, `mirror-by-digest-only`,
/// `blocked` and `[[registry.mirror]]` `location`. Other keys are ignored,
/// as the containers libraries ignore keys they do not use. An empty file
/// has no rules.
///
/// # Errors
/// A message naming `path` and the TOML error, or the `[[registry]]` with
/// neither prefix nor location.
pub fn parse_registries_conf(text: &str, path: &Path) -> Result<Vec<MirrorRule>, String> {
    let file: ConfFile = toml::from_str(text)
        .map_err(|e| format!("{}: not registries.conf v2: {e}", path.display()))?;
    file.registry
        .into_iter()
        .enumerate()
        .map(|(i, r)| {
            let source = if r.prefix.is_empty() {
                r.location.clone()
            } else {
                r.prefix.clone()
            };
            if source.is_empty() {
                return Err(format!(
                    "{}: registry[{i}]: needs a prefix or a location",
                    path.display()
                ));
            }
            Ok(MirrorRule {
                location: if r.location.is_empty() {
                    source.clone()
                } else {
                    r.location.clone()
                },
                source,
                mirrors: r.mirror.into_iter().map(|m| m.location).collect(),
                by_digest_only: r.mirror_by_digest_only,
                blocked: r.blocked,
            })
        })
        .collect()
}

/// Where to read `image` from, in order: for the rule with the longest
/// source that is a prefix of the image's repository at a path boundary,
/// each mirror (only for a pull by digest when the rule says
/// `mirror-by-digest-only`) with the source prefix replaced, then the
/// source itself unless the rule blocks it.
pub fn candidates(rules: &[MirrorRule], image: &Reference) -> Vec<String> {
    let repo = image.repo.to_string();
    let suffix = match (&image.digest, &image.tag) {
        (Some(d), _) => format!("@{d}"),
        (None, Some(t)) => format!(":{t}"),
        (None, None) => ":latest".into(),
    };
    let rule = rules
        .iter()
        .filter(|r| {
            repo == r.source
                || repo
                    .strip_prefix(r.source.as_str())
                    .is_some_and(|rest| rest.starts_with('/'))
        })
        .max_by_key(|r| r.source.len());
    let mut out = Vec::new();
    if let Some(r) = rule {
        if image.digest.is_some() || !r.by_digest_only {
            for m in &r.mirrors {
                out.push(format!("{m}{}{suffix}", &repo[r.source.len()..]));
            }
        }
        if !r.blocked {
            out.push(format!("{}{}{suffix}", r.location, &repo[r.source.len()..]));
        }
    } else {
        out.push(format!("{repo}{suffix}"));
    }
    out
}

/// The OCI architecture name of this machine (`uname -m`): x86_64 is
/// amd64 and aarch64 arm64, as release-image-download.sh maps them.
pub fn host_architecture() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "powerpc64" => "ppc64le",
        other => other,
    }
}

/// What the pull reads.
#[derive(Debug, Clone)]
pub struct PullOptions {
    /// The install's release image (`quay.io/openshift/okd@sha256:…` or a tag).
    pub release_image: String,
    /// registries.conf (`/etc/containers/registries.conf`).
    pub registries_conf: PathBuf,
    /// The pull secret (`/root/.docker/config.json`).
    pub auth_file: PathBuf,
    /// The additional trust bundle
    /// (`/etc/pki/ca-trust/source/anchors/ca.crt`); used when it exists.
    pub ca_file: PathBuf,
    /// The host's architecture ([`host_architecture`]).
    pub architecture: String,
    /// Registries (`host[:port]`) reached over plain HTTP (tests only; a
    /// node never has one).
    pub plain_http: Vec<String>,
}

impl PullOptions {
    /// The bootstrap node's files for `release_image`.
    pub fn node(release_image: &str) -> PullOptions {
        PullOptions {
            release_image: release_image.into(),
            registries_conf: PathBuf::from("/etc/containers/registries.conf"),
            auth_file: PathBuf::from("/root/.docker/config.json"),
            ca_file: PathBuf::from("/etc/pki/ca-trust/source/anchors/ca.crt"),
            architecture: host_architecture().into(),
            plain_http: Vec::new(),
        }
    }
}

/// A pull that failed, by stage.
#[derive(Debug, thiserror::Error)]
pub enum PullError {
    /// The release could not be read from any candidate (stage
    /// `pull-release-image`); retried.
    #[error("{0}")]
    Pull(String),
    /// The release is for another architecture (stage
    /// `image-metadata-arches-match`); not retried.
    #[error("{0}")]
    Architecture(String),
    /// A local file (registries.conf, the pull secret) is unusable; not
    /// retried until the file changes.
    #[error("{0}")]
    Config(String),
}

fn registries(opts: &PullOptions) -> Result<Registries, PullError> {
    let mut credentials = Credentials::default();
    if opts.auth_file.exists() {
        credentials.add_file(&opts.auth_file).map_err(|e| {
            PullError::Config(format!("the pull secret {}: {e}", opts.auth_file.display()))
        })?;
    }
    let ca_files = if opts.ca_file.exists()
        && std::fs::metadata(&opts.ca_file)
            .map(|m| m.len() > 0)
            .unwrap_or(false)
    {
        vec![opts.ca_file.clone()]
    } else {
        Vec::new()
    };
    Registries::new(ClientOptions {
        credentials,
        ca_files,
        plain_http: opts.plain_http.clone(),
        ..ClientOptions::default()
    })
    .map_err(|e| PullError::Config(e.to_string()))
}

/// Reads the release: each candidate of [`candidates`] in turn, the first
/// that answers wins; checks the architecture; reads image-references.
///
/// # Errors
/// [`PullError::Pull`] naming every candidate and why it failed (the
/// x509 reason when the mirror's CA is missing),
/// [`PullError::Architecture`], [`PullError::Config`].
pub async fn pull(opts: &PullOptions) -> Result<PulledRelease, PullError> {
    let wanted = Reference::parse(&opts.release_image).map_err(|e| {
        PullError::Config(format!(
            "the release image {:?}: {}",
            opts.release_image, e.0
        ))
    })?;
    let rules = match std::fs::read_to_string(&opts.registries_conf) {
        Ok(text) => {
            parse_registries_conf(&text, &opts.registries_conf).map_err(PullError::Config)?
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => {
            return Err(PullError::Config(format!(
                "cannot read {}: {e}",
                opts.registries_conf.display()
            )));
        }
    };
    let endpoint = Endpoint::Registry(Arc::new(registries(opts)?));
    let mut failures = Vec::new();
    for cand in candidates(&rules, &wanted) {
        let r = Reference::parse(&cand).map_err(|e| PullError::Config(e.0))?;
        info!("reading the release image from {cand}");
        match read(&endpoint, &r, &opts.architecture).await {
            Ok((release, arch, top_digest)) => {
                if arch != opts.architecture {
                    return Err(PullError::Architecture(format!(
                        "the release image {cand} is for architecture {arch}, this host is {} (image-metadata-arches-match)",
                        opts.architecture
                    )));
                }
                let mut images = BTreeMap::new();
                for c in &release.components {
                    images.insert(c.name.clone(), format!("{}@{}", c.source, c.digest));
                }
                let kind = if images.contains_key(OPENSHIFT_MARKER) {
                    PayloadKind::Openshift
                } else {
                    for need in UPSTREAM_COMPONENTS {
                        if !images.contains_key(need) {
                            return Err(PullError::Pull(format!(
                                "the release {cand} has neither the OpenShift operators ({OPENSHIFT_MARKER}) nor the upstream component `{need}` in release-manifests/image-references"
                            )));
                        }
                    }
                    PayloadKind::Upstream
                };
                return Ok(PulledRelease {
                    release_image: opts.release_image.clone(),
                    digest_pullspec: format!("{}@{top_digest}", wanted.repo),
                    pulled_from: cand,
                    version: release.version,
                    architecture: arch,
                    kind,
                    images,
                });
            }
            Err(mut e) => {
                if e.contains("UnknownIssuer") || e.contains("certificate") {
                    e.push_str(&format!(
                        " (the mirror's CA belongs in install-config's additionalTrustBundle, which bootstrap.ign writes to {})",
                        opts.ca_file.display()
                    ));
                }
                warn!("cannot read the release image from {cand}: {e}");
                failures.push(format!("{cand}: {e}"));
            }
        }
    }
    Err(PullError::Pull(format!(
        "unable to pull the release image {}: {}",
        opts.release_image,
        failures.join("; ")
    )))
}

/// The release at `r`: its image-references, the architecture of the
/// image picked for `arch`, and the digest of what the reference names.
async fn read(
    endpoint: &Endpoint,
    r: &Reference,
    arch: &str,
) -> Result<(okd_registry::release::Release, String, String), String> {
    let (release, config) = okd_registry::release::read_release_image(endpoint, r, arch)
        .await
        .map_err(|e| e.to_string())?;
    let image_arch = config_architecture(endpoint, r, &config.digest).await?;
    let top = release.digest.clone();
    Ok((release, image_arch, top))
}

async fn config_architecture(
    endpoint: &Endpoint,
    r: &Reference,
    digest: &okd_registry::oci::Digest,
) -> Result<String, String> {
    use futures_util::StreamExt as _;
    let mut stream = endpoint
        .blob(&r.repo, digest)
        .await
        .map_err(|e| e.to_string())?;
    let mut data = Vec::new();
    while let Some(chunk) = stream.next().await {
        data.extend_from_slice(&chunk.map_err(|e| e.to_string())?);
        if data.len() > 4 << 20 {
            return Err("the image config is larger than 4 MiB".into());
        }
    }
    if okd_registry::oci::Digest::of(&data) != *digest {
        return Err(format!(
            "the image config does not match its digest {digest}"
        ));
    }
    let v: serde_json::Value =
        serde_json::from_slice(&data).map_err(|e| format!("the image config: {e}"))?;
    v.get("architecture")
        .and_then(|a| a.as_str())
        .map(str::to_string)
        .ok_or_else(|| "the image config names no architecture".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONF: &str = r#"
[[registry]]
  prefix = ""
  location = "quay.io/openshift/okd"
  mirror-by-digest-only = true

  [[registry.mirror]]
    location = "mirror.example:5000/okd/release"

[[registry]]
  prefix = ""
  location = "quay.io/openshift"
  mirror-by-digest-only = true

  [[registry.mirror]]
    location = "mirror.example:5000/openshift"
"#;

    fn rules() -> Vec<MirrorRule> {
        parse_registries_conf(CONF, Path::new("registries.conf")).unwrap()
    }

    const D: &str = "sha256:0000000000000000000000000000000000000000000000000000000000000001";

    #[test]
    fn the_longest_matching_source_picks_the_mirrors() {
        let r = Reference::parse(&format!("quay.io/openshift/okd@{D}")).unwrap();
        assert_eq!(
            candidates(&rules(), &r),
            vec![
                format!("mirror.example:5000/okd/release@{D}"),
                format!("quay.io/openshift/okd@{D}")
            ]
        );
        let r = Reference::parse(&format!("quay.io/openshift/okd-content@{D}")).unwrap();
        assert_eq!(
            candidates(&rules(), &r)[0],
            format!("mirror.example:5000/openshift/okd-content@{D}")
        );
    }

    #[test]
    fn a_tag_skips_digest_only_mirrors_and_a_path_boundary_is_needed() {
        let r = Reference::parse("quay.io/openshift/okd:4.15").unwrap();
        assert_eq!(candidates(&rules(), &r), vec!["quay.io/openshift/okd:4.15"]);
        let r = Reference::parse(&format!("quay.io/openshiftx/okd@{D}")).unwrap();
        assert_eq!(
            candidates(&rules(), &r),
            vec![format!("quay.io/openshiftx/okd@{D}")]
        );
    }

    #[test]
    fn a_blocked_source_is_never_tried_and_bad_toml_names_the_file() {
        let conf = "[[registry]]\nlocation = \"quay.io/a\"\nblocked = true\n[[registry.mirror]]\nlocation = \"m.example/a\"\n";
        let rules = parse_registries_conf(conf, Path::new("r.conf")).unwrap();
        let r = Reference::parse(&format!("quay.io/a/b@{D}")).unwrap();
        assert_eq!(candidates(&rules, &r), vec![format!("m.example/a/b@{D}")]);
        let e = parse_registries_conf(
            "[[registry]\n",
            Path::new("/etc/containers/registries.conf"),
        )
        .unwrap_err();
        assert!(
            e.starts_with("/etc/containers/registries.conf: not registries.conf v2"),
            "{e}"
        );
        let e = parse_registries_conf("[[registry]]\nblocked = true\n", Path::new("r.conf"))
            .unwrap_err();
        assert_eq!(e, "r.conf: registry[0]: needs a prefix or a location");
        assert!(
            parse_registries_conf("", Path::new("r.conf"))
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn a_prefix_is_rewritten_to_its_location() {
        let conf = "[[registry]]\nprefix = \"example.com/foo\"\nlocation = \"internal.example:5000/bar\"\n";
        let rules = parse_registries_conf(conf, Path::new("r.conf")).unwrap();
        let r = Reference::parse(&format!("example.com/foo/baz@{D}")).unwrap();
        assert_eq!(
            candidates(&rules, &r),
            vec![format!("internal.example:5000/bar/baz@{D}")]
        );
    }

    #[test]
    fn the_host_architecture_uses_oci_names() {
        if cfg!(target_arch = "x86_64") {
            assert_eq!(host_architecture(), "amd64");
        }
    }
}
