//! `install-config.yaml`: model, load pipeline, defaults and validation.
//!
//! Follows openshift-install's install-config asset: strict parse with an
//! unknown-field fallback (openshift/installer
//! `pkg/asset/installconfig/installconfigbase.go`), up-conversion of deprecated
//! fields (`pkg/types/conversion/installconfig.go`), defaults
//! (`pkg/types/defaults/installconfig.go`), and `ValidateInstallConfig`
//! (`pkg/types/validation/installconfig.go`) with every error
//! collected in evaluation order and reported in one aggregate message. Also
//! the infraID derivation (`pkg/asset/installconfig/clusterid.go`).

mod convert;
mod field;
mod types;
mod validate;

use std::net::IpAddr;

use ipnet::IpNet;
use okd_types::release::ReleaseTarget;
use serde_json::Value;

pub use field::{ErrorKind, FieldError, FieldValue};
/// The pull secret's type, re-exported so callers need no other import.
pub use okd_secret::{ExposeSecret, Secret};
pub use types::*;

/// Options of one load: the target release (version-dependent rules such as
/// OpenShiftSDN refusal) and whether the host runs in FIPS mode
/// (`sshKey`/`fips` rules of `pkg/types/validation/installconfig.go`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadOptions {
    /// The release the install is generated for.
    pub target: ReleaseTarget,
    /// True when `/proc/sys/crypto/fips_enabled` is 1 on the installer host.
    pub host_fips: bool,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            target: ReleaseTarget::default_target(),
            host_fips: false,
        }
    }
}

/// A loaded, up-converted, defaulted and validated config plus its log lines.
#[derive(Debug, Clone, PartialEq)]
pub struct Loaded {
    /// The normalized config (defaults explicit, apiVersion `v1`).
    pub config: InstallConfig,
    /// Lines openshift-install logs at warning level (unknown field, Docker bridge
    /// overlap, deprecated imageContentSources, expired trust-bundle certificate, ...).
    pub warnings: Vec<String>,
    /// Lines logged at info level (the non-strict reparse notice).
    pub infos: Vec<String>,
}

/// Why an install-config could not be loaded (openshift/installer
/// `pkg/asset/installconfig/installconfigbase.go`). The texts follow
/// openshift-install's wrapping; the caller adds `failed to create install config`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// YAML syntax or type error; the message carries line/column when known.
    #[error("failed to unmarshal {file}: {message}")]
    Parse {
        /// The file name, e.g. `install-config.yaml`.
        file: String,
        /// The parser's message.
        message: String,
    },
    /// Up-conversion failed (empty or unknown apiVersion, conflicting deprecated fields).
    #[error("failed to upconvert {file}: {error}")]
    Convert {
        /// The file name (or `install config` for in-memory configs).
        file: String,
        /// The field that could not be converted.
        error: FieldError,
    },
    /// Validation failed; every error in evaluation order, aggregated the way
    /// apimachinery's `utilerrors.NewAggregate` prints them (one error alone,
    /// several as `[a, b]`).
    #[error("{}", invalid_text(file.as_deref(), errors))]
    Invalid {
        /// `Some(file)` for a config read from disk, `None` for a generated one.
        file: Option<String>,
        /// The field errors, in evaluation order (never empty).
        errors: Vec<FieldError>,
    },
}

fn invalid_text(file: Option<&str>, errors: &[FieldError]) -> String {
    let agg = if let [one] = errors {
        one.to_string()
    } else {
        let all: Vec<String> = errors.iter().map(FieldError::to_string).collect();
        format!("[{}]", all.join(", "))
    };
    match file {
        Some(f) => format!("invalid {f:?} file: {agg}"),
        None => format!("invalid install config: {agg}"),
    }
}

/// Loads `bytes` (the content of `file_name`) through the whole pipeline of
/// openshift/installer `pkg/asset/installconfig/installconfigbase.go`: YAML parse
/// (syntax errors name the line), unknown-field fallback (warning + info, then
/// non-strict parse), up-conversion, defaults (`pkg/types/defaults`), validation
/// (`pkg/types/validation/installconfig.go`). Errors: [`LoadError::Parse`], [`LoadError::Convert`],
/// [`LoadError::Invalid`] (with `file = Some(file_name)`).
pub fn load(file_name: &str, bytes: &[u8], opts: &LoadOptions) -> Result<Loaded, LoadError> {
    let mut warnings = Vec::new();
    let mut infos = Vec::new();
    let cfg = convert::parse(file_name, bytes, &mut warnings, &mut infos)?;
    let cfg = convert::upconvert(cfg).map_err(|error| LoadError::Convert {
        file: file_name.to_string(),
        error,
    })?;
    run(cfg, Some(file_name), opts, warnings, infos)
}

/// Reads `bytes` (the content of `file_name`) the way [`load`] does, up to
/// and including the defaults, without validating: YAML parse with the
/// unknown-field fallback, up-conversion (`pkg/types/conversion/installconfig.go`),
/// defaults (`pkg/types/defaults/installconfig.go`). For commands that only
/// read an install-config that no `create` consumed yet (`serve`,
/// `wait-for`, `gather`): they see the values `create` would record, while
/// the rules stay with `create`, which knows the target release.
/// The returned [`Loaded`] carries the parse warnings and infos.
///
/// # Errors
/// [`LoadError::Parse`] (line and column when known) or
/// [`LoadError::Convert`] naming the field that could not be up-converted.
pub fn normalize(file_name: &str, bytes: &[u8]) -> Result<Loaded, LoadError> {
    let mut warnings = Vec::new();
    let mut infos = Vec::new();
    let cfg = convert::parse(file_name, bytes, &mut warnings, &mut infos)?;
    let mut cfg = convert::upconvert(cfg).map_err(|error| LoadError::Convert {
        file: file_name.to_string(),
        error,
    })?;
    convert::apply_defaults(&mut cfg);
    Ok(Loaded {
        config: cfg,
        warnings,
        infos,
    })
}

/// Defaults and validates an in-memory config (the interactive/generated path of
/// openshift/installer `pkg/asset/installconfig/`): up-conversion, defaults
/// (`pkg/types/defaults`), validation (`pkg/types/validation/installconfig.go`).
/// Validation failures read `invalid install config: …`.
pub fn finish(cfg: InstallConfig, opts: &LoadOptions) -> Result<Loaded, LoadError> {
    let cfg = convert::upconvert(cfg).map_err(|error| LoadError::Convert {
        file: "install config".to_string(),
        error,
    })?;
    run(cfg, None, opts, Vec::new(), Vec::new())
}

fn run(
    mut cfg: InstallConfig,
    file: Option<&str>,
    opts: &LoadOptions,
    mut warnings: Vec<String>,
    infos: Vec<String>,
) -> Result<Loaded, LoadError> {
    convert::apply_defaults(&mut cfg);
    let errors = validate::validate(&cfg, opts, &mut warnings);
    if !errors.is_empty() {
        return Err(LoadError::Invalid {
            file: file.map(String::from),
            errors,
        });
    }
    Ok(Loaded {
        config: cfg,
        warnings,
        infos,
    })
}

/// The 27 characters random infraID suffixes are drawn from
/// (`pkg/asset/installconfig/clusterid.go`): no vowels, no 0, 1 or 3.
pub const INFRA_ID_ALPHABET: &str = "bcdfghjklmnpqrstvwxz2456789";

/// Maximum length of the sanitized cluster-name part of an infraID (27 − 6).
const INFRA_NAME_MAX: usize = 21;

/// Derives the infraID from the cluster name and a 5-character random suffix
/// (`pkg/asset/installconfig/clusterid.go`): non `[A-Za-z0-9-]` → `-`, dash runs
/// collapsed, truncated to 21 characters (with the returned warning text),
/// trailing dashes trimmed, then `-<suffix>`. Returns `(infra_id, warning)`.
pub fn infra_id(name: &str, suffix: &str) -> (String, Option<String>) {
    let mut s = String::new();
    for c in name.chars() {
        let c = if c.is_ascii_alphanumeric() || c == '-' {
            c
        } else {
            '-'
        };
        if c == '-' && s.ends_with('-') {
            continue;
        }
        s.push(c);
    }
    let mut warning = None;
    if s.len() > INFRA_NAME_MAX {
        let short: String = s.chars().take(INFRA_NAME_MAX).collect();
        warning = Some(format!(
            "Length of cluster name {s:?} is {} which is greater than the max {INFRA_NAME_MAX} allowed. The name will be truncated to {short:?}",
            s.len()
        ));
        s = short;
    }
    let base = s.trim_end_matches('-');
    (format!("{base}-{suffix}"), warning)
}

fn parse_nets<'a>(it: impl Iterator<Item = &'a str>) -> Vec<IpNet> {
    it.filter_map(|c| c.trim().parse::<IpNet>().ok()).collect()
}

impl InstallConfig {
    /// The normalized document as JSON: Go field order, empty/None fields omitted,
    /// `metadata.creationTimestamp: null` (what openshift-install re-serializes
    /// with sigs.k8s.io/yaml).
    pub fn to_json_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// A copy for `cluster-config.yaml` (openshift/installer `pkg/asset/manifests`):
    /// `pullSecret: ""`, vSphere `username`/`password` removed from every object of the
    /// vSphere stanza.
    pub fn redacted(&self) -> InstallConfig {
        let mut c = self.clone();
        c.pull_secret = Secret::default();
        if let Some(v) = c.platform.vsphere.as_mut() {
            strip_creds(v);
        }
        c
    }

    /// `<metadata.name>.<baseDomain>` (a trailing dot of the base domain dropped).
    pub fn cluster_domain(&self) -> String {
        format!(
            "{}.{}",
            self.metadata.name,
            self.base_domain.trim_end_matches('.')
        )
    }

    /// The name of the (first) platform set: `none`, `baremetal`, `aws`, ... or `""`.
    pub fn platform_name(&self) -> &'static str {
        self.platform_kind().map_or("", PlatformName::as_str)
    }

    /// The (first) platform set, `None` when there is none.
    pub fn platform_kind(&self) -> Option<PlatformName> {
        self.platform.kinds().first().copied()
    }

    /// Sum of the replicas of every compute pool (missing counts as 0;
    /// saturating, so hostile counts cannot overflow).
    pub fn compute_replicas(&self) -> i64 {
        self.compute
            .iter()
            .fold(0i64, |n, p| n.saturating_add(p.replicas.unwrap_or(0)))
    }

    /// Control-plane replicas (3 when the pool or its count is absent, as defaulted).
    pub fn control_plane_replicas(&self) -> i64 {
        self.control_plane
            .as_ref()
            .map_or(3, |p| p.replicas.unwrap_or(3))
    }

    /// Parsed `networking.machineNetwork[].cidr` (unparsable entries skipped).
    pub fn machine_networks(&self) -> Vec<IpNet> {
        self.networking
            .as_ref()
            .map(|n| parse_nets(n.machine_network.iter().map(|m| m.cidr.as_str())))
            .unwrap_or_default()
    }

    /// Parsed `networking.serviceNetwork[]`.
    pub fn service_networks(&self) -> Vec<IpNet> {
        self.networking
            .as_ref()
            .map(|n| parse_nets(n.service_network.iter().map(String::as_str)))
            .unwrap_or_default()
    }

    /// Parsed `networking.clusterNetwork[]` as `(cidr, hostPrefix)`; a prefix outside 0..=128 reads 0.
    pub fn cluster_networks(&self) -> Vec<(IpNet, u8)> {
        let Some(n) = &self.networking else {
            return Vec::new();
        };
        n.cluster_network
            .iter()
            .filter_map(|c| {
                c.cidr.trim().parse::<IpNet>().ok().map(|net| {
                    (
                        net,
                        u8::try_from(c.host_prefix)
                            .ok()
                            .filter(|p| *p <= 128)
                            .unwrap_or(0),
                    )
                })
            })
            .collect()
    }

    /// The mirror list: `imageDigestSources` if set, else `imageContentSources`.
    pub fn image_sources(&self) -> Vec<ImageSource> {
        if self.image_digest_sources.is_empty() {
            self.image_content_sources.clone()
        } else {
            self.image_digest_sources.clone()
        }
    }

    /// For a config with mirrors (`imageContentSources`/`imageDigestSources`),
    /// whether one of their sources covers the repository of `image` (a pull
    /// spec `host/repo[:tag][@digest]`): the repository equals a source or
    /// lies below it (`source/…`), as CRI-O matches registries.conf prefixes
    /// (containers/image `docs/containers-registries.conf.5.md`). `None` when
    /// the config has no mirrors.
    pub fn mirrors_cover(&self, image: &str) -> Option<bool> {
        let sources = self.image_sources();
        if sources.is_empty() {
            return None;
        }
        let repo = image_repository(image);
        Some(sources.iter().any(|s| {
            let src = s.source.trim_end_matches('/');
            repo == src || repo.strip_prefix(src).is_some_and(|r| r.starts_with('/'))
        }))
    }

    /// The API VIPs on baremetal (empty elsewhere), as IP addresses where they parse.
    pub fn api_vip_addrs(&self) -> Vec<IpAddr> {
        self.platform
            .baremetal
            .as_ref()
            .map(|b| b.api_vips.iter().filter_map(|v| v.parse().ok()).collect())
            .unwrap_or_default()
    }
}

/// The repository of a pull spec: `quay.io/openshift/okd:4.5` and
/// `quay.io/openshift/okd@sha256:…` give `quay.io/openshift/okd` (a `:` in the
/// first component is a registry port, not a tag).
pub fn image_repository(image: &str) -> &str {
    let no_digest = image.split('@').next().unwrap_or(image);
    match no_digest.rfind(':') {
        Some(i) if !no_digest[i..].contains('/') => &no_digest[..i],
        _ => no_digest,
    }
}

/// The platforms install-config knows (the keys of `platform`), in the
/// alphabetical order openshift-install lists them (`pkg/types/platform.go`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PlatformName {
    /// `aws`.
    Aws,
    /// `azure`.
    Azure,
    /// `baremetal`.
    Baremetal,
    /// `external`.
    External,
    /// `gcp`.
    Gcp,
    /// `ibmcloud`.
    IbmCloud,
    /// `none`.
    None,
    /// `nutanix`.
    Nutanix,
    /// `openstack`.
    OpenStack,
    /// `powervs`.
    PowerVs,
    /// `vsphere`.
    VSphere,
}

impl PlatformName {
    /// The key of the platform in install-config.yaml, e.g. `baremetal`.
    pub fn as_str(self) -> &'static str {
        match self {
            PlatformName::Aws => "aws",
            PlatformName::Azure => "azure",
            PlatformName::Baremetal => "baremetal",
            PlatformName::External => "external",
            PlatformName::Gcp => "gcp",
            PlatformName::IbmCloud => "ibmcloud",
            PlatformName::None => "none",
            PlatformName::Nutanix => "nutanix",
            PlatformName::OpenStack => "openstack",
            PlatformName::PowerVs => "powervs",
            PlatformName::VSphere => "vsphere",
        }
    }
}

impl PlatformName {
    /// The platforms okd-install generates for, alphabetical: every other key
    /// of `platform` is refused with openshift-install's `Unsupported value`
    /// wording (as its agent installer refuses platforms it does not support,
    /// `pkg/asset/agent/installconfig.go`).
    pub const SUPPORTED: [PlatformName; 3] = [
        PlatformName::Aws,
        PlatformName::Baremetal,
        PlatformName::None,
    ];

    /// The platform whose install-config key is `key`, `None` for any other text.
    pub fn from_key(key: &str) -> Option<Self> {
        [
            PlatformName::Aws,
            PlatformName::Azure,
            PlatformName::Baremetal,
            PlatformName::External,
            PlatformName::Gcp,
            PlatformName::IbmCloud,
            PlatformName::None,
            PlatformName::Nutanix,
            PlatformName::OpenStack,
            PlatformName::PowerVs,
            PlatformName::VSphere,
        ]
        .into_iter()
        .find(|p| p.as_str() == key)
    }
}

impl std::fmt::Display for PlatformName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Platform {
    /// The platforms whose keys are set, in alphabetical order.
    pub fn kinds(&self) -> Vec<PlatformName> {
        let set = [
            (PlatformName::Aws, self.aws.is_some()),
            (PlatformName::Azure, self.azure.is_some()),
            (PlatformName::Baremetal, self.baremetal.is_some()),
            (PlatformName::External, self.external.is_some()),
            (PlatformName::Gcp, self.gcp.is_some()),
            (PlatformName::IbmCloud, self.ibmcloud.is_some()),
            (PlatformName::None, self.none.is_some()),
            (PlatformName::Nutanix, self.nutanix.is_some()),
            (PlatformName::OpenStack, self.openstack.is_some()),
            (PlatformName::PowerVs, self.powervs.is_some()),
            (PlatformName::VSphere, self.vsphere.is_some()),
        ];
        set.into_iter()
            .filter(|(_, on)| *on)
            .map(|(k, _)| k)
            .collect()
    }

    /// The names of the platform keys that are set, in alphabetical order.
    pub fn names(&self) -> Vec<&'static str> {
        self.kinds().into_iter().map(PlatformName::as_str).collect()
    }
}

fn strip_creds(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.remove("username");
            m.remove("password");
            for x in m.values_mut() {
                strip_creds(x);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(strip_creds),
        _ => {}
    }
}

/// Checks one interactive answer the way openshift-install's prompts do
/// (`pkg/asset/installconfig/`; same rules as `pkg/types/validation/installconfig.go`):
/// the cluster name for the chosen platform. Returns the detail text on error.
pub fn check_cluster_name(name: &str, platform: &str) -> Result<(), String> {
    validate::cluster_name_error(name, PlatformName::from_key(platform)).map_or(Ok(()), Err)
}

/// Checks a platform answer or `--platform`: one of
/// [`PlatformName::SUPPORTED`]. The error is apimachinery's
/// `platform: Unsupported value: "vsphere": supported values: "aws", "baremetal", "none"`.
pub fn check_platform(platform: &str) -> Result<(), String> {
    validate::unsupported_platform(platform).map_or(Ok(()), |e| Err(e.to_string()))
}

/// Checks a base domain answer (prompt and
/// `pkg/types/validation/installconfig.go`: DNS-1123 subdomain, one trailing dot allowed).
pub fn check_base_domain(base_domain: &str) -> Result<(), String> {
    validate::base_domain_error(base_domain).map_or(Ok(()), Err)
}

/// Checks a pull secret answer (prompt and `pkg/types/validation/installconfig.go`): JSON
/// with a non-empty `auths` map whose entries carry `auth` or `credsStore`.
pub fn check_pull_secret(pull_secret: &str) -> Result<(), String> {
    validate::pull_secret_error(pull_secret).map_or(Ok(()), Err)
}

/// Checks an SSH public key answer (`pkg/asset/installconfig/ssh.go`): an authorized_keys
/// line, e.g. `ssh: no key found`.
pub fn check_ssh_key(key: &str) -> Result<(), String> {
    validate::ssh_key_error(key).map_or(Ok(()), Err)
}
