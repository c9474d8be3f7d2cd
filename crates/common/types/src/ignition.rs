//! Ignition config types, spec 3.0.0 – 3.4.0, serialized like the installer.
//!
//! Field names and their order follow the Go structs of
//! `github.com/coreos/ignition/v2/config/v3_x/types` (Config: ignition, passwd,
//! storage, systemd; File: group, overwrite, path, user, append, contents,
//! mode; Unit: contents, dropins, enabled, mask, name; Resource: compression,
//! httpHeaders, source, verification). As with `clarketm/json`, optional
//! fields that are unset and structs that are empty are omitted
//! (Ignition spec v3.2.0, `coreos/ignition` `config/v3_2/types/schema.go`, as
//! serialized by openshift/installer `pkg/asset/ignition`). Only the parts the installer writes are
//! modelled; [`Config::check_spec`] rejects fields the chosen spec version lacks.

use serde::{Deserialize, Serialize};

use crate::release::IgnitionSpec;

/// A remote or inline resource (`Resource`, spec 3.x §"Resource").
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Resource {
    /// `"gzip"` when `source` is compressed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compression: Option<String>,
    /// Extra HTTP headers for http(s) sources (spec ≥ 3.1).
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub http_headers: Vec<HttpHeader>,
    /// URL: `data:`, `http(s):`, `tftp:`, `s3:`, `gs:`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Expected hash of the fetched (decompressed) data.
    #[serde(skip_serializing_if = "Verification::is_empty", default)]
    pub verification: Verification,
}

/// One HTTP header of a [`Resource`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HttpHeader {
    /// Header name.
    pub name: String,
    /// Header value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
}

/// `verification.hash`: `"sha512-<hex>"` (3.0) or `"sha256-<hex>"` (≥ 3.1).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verification {
    /// `<function>-<hex digest>`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hash: Option<String>,
}

impl Verification {
    fn is_empty(&self) -> bool {
        self.hash.is_none()
    }
}

/// `ignition.config`: configs to merge into or replace this one.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IgnitionConfig {
    /// Configs merged in order (the pointer configs' machine-config-server URL).
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub merge: Vec<Resource>,
    /// A config that replaces this one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replace: Option<Resource>,
}

impl IgnitionConfig {
    fn is_empty(&self) -> bool {
        self.merge.is_empty() && self.replace.is_none()
    }
}

/// `ignition.proxy` (spec ≥ 3.1).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Proxy {
    /// Proxy for http URLs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_proxy: Option<String>,
    /// Proxy for https URLs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub https_proxy: Option<String>,
    /// Hosts not proxied.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub no_proxy: Vec<String>,
}

impl Proxy {
    fn is_empty(&self) -> bool {
        self.http_proxy.is_none() && self.https_proxy.is_none() && self.no_proxy.is_empty()
    }
}

/// `ignition.security.tls`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tls {
    /// Extra CAs trusted for https fetches (the pointer configs' root CA).
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub certificate_authorities: Vec<Resource>,
}

/// `ignition.security`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Security {
    /// TLS options.
    #[serde(skip_serializing_if = "Tls::is_empty", default)]
    pub tls: Tls,
}

impl Tls {
    fn is_empty(&self) -> bool {
        self.certificate_authorities.is_empty()
    }
}

impl Security {
    fn is_empty(&self) -> bool {
        self.tls.is_empty()
    }
}

/// `ignition.timeouts`, in seconds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Timeouts {
    /// Seconds to wait for response headers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_response_headers: Option<i64>,
    /// Seconds for a whole fetch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_total: Option<i64>,
}

impl Timeouts {
    fn is_empty(&self) -> bool {
        self.http_response_headers.is_none() && self.http_total.is_none()
    }
}

/// The `ignition` section.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ignition {
    /// Merge/replace.
    #[serde(skip_serializing_if = "IgnitionConfig::is_empty", default)]
    pub config: IgnitionConfig,
    /// Fetch proxy (≥ 3.1).
    #[serde(skip_serializing_if = "Proxy::is_empty", default)]
    pub proxy: Proxy,
    /// TLS trust.
    #[serde(skip_serializing_if = "Security::is_empty", default)]
    pub security: Security,
    /// Fetch timeouts.
    #[serde(skip_serializing_if = "Timeouts::is_empty", default)]
    pub timeouts: Timeouts,
    /// Spec version, e.g. `"3.2.0"`.
    pub version: String,
}

/// A user (`passwd.users[]`), in Go field order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PasswdUser {
    /// GECOS field.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gecos: Option<String>,
    /// Supplementary groups.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub groups: Vec<String>,
    /// Home directory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub home_dir: Option<String>,
    /// User name (required).
    pub name: String,
    /// Hashed password.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub password_hash: Option<String>,
    /// Primary group.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub primary_group: Option<String>,
    /// SSH public keys in `authorized_keys` format, verbatim.
    #[serde(
        rename = "sshAuthorizedKeys",
        skip_serializing_if = "Vec::is_empty",
        default
    )]
    pub ssh_authorized_keys: Vec<String>,
    /// Login shell.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shell: Option<String>,
    /// Numeric UID.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uid: Option<i64>,
}

/// The `passwd` section.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Passwd {
    /// Users to create or modify.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub users: Vec<PasswdUser>,
}

/// Owner of a node: `{"name":"root"}` or `{"id":0}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeOwner {
    /// Numeric id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<i64>,
    /// Name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl NodeOwner {
    fn is_empty(&self) -> bool {
        self.id.is_none() && self.name.is_none()
    }
}

/// A file (`storage.files[]`): Node fields then FileEmbedded1 fields.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct File {
    /// Owning group.
    #[serde(skip_serializing_if = "NodeOwner::is_empty", default)]
    pub group: NodeOwner,
    /// Replace an existing file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub overwrite: Option<bool>,
    /// Absolute path.
    pub path: String,
    /// Owning user.
    #[serde(skip_serializing_if = "NodeOwner::is_empty", default)]
    pub user: NodeOwner,
    /// Fragments appended to the file.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub append: Vec<Resource>,
    /// Whole-file contents.
    #[serde(skip_serializing_if = "resource_is_empty", default)]
    pub contents: Resource,
    /// Permission bits as a decimal integer (420 = 0644).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<u32>,
}

fn resource_is_empty(r: &Resource) -> bool {
    r == &Resource::default()
}

impl File {
    /// A root-owned file with inline contents (data URL), `overwrite: true`
    /// and `mode` (permission bits, e.g. `0o644`) — the installer's
    /// `ignition.FileFromBytes` shape.
    pub fn data(path: &str, mode: u32, contents: &[u8]) -> File {
        File {
            overwrite: Some(true),
            path: path.to_string(),
            user: NodeOwner {
                id: None,
                name: Some("root".into()),
            },
            contents: Resource {
                source: Some(crate::dataurl::encode(contents)),
                ..Default::default()
            },
            mode: Some(mode),
            ..Default::default()
        }
    }

    /// A root-owned file whose contents are appended (`append: [..]`,
    /// `overwrite: false`), as the installer writes `/etc/motd`.
    pub fn append_data(path: &str, mode: u32, contents: &[u8]) -> File {
        File {
            overwrite: Some(false),
            path: path.to_string(),
            user: NodeOwner {
                id: None,
                name: Some("root".into()),
            },
            append: vec![Resource {
                source: Some(crate::dataurl::encode(contents)),
                ..Default::default()
            }],
            mode: Some(mode),
            ..Default::default()
        }
    }
}

/// A directory (`storage.directories[]`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Directory {
    /// Owning group.
    #[serde(skip_serializing_if = "NodeOwner::is_empty", default)]
    pub group: NodeOwner,
    /// Replace an existing node.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub overwrite: Option<bool>,
    /// Absolute path.
    pub path: String,
    /// Owning user.
    #[serde(skip_serializing_if = "NodeOwner::is_empty", default)]
    pub user: NodeOwner,
    /// Permission bits, decimal.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<u32>,
}

/// A symbolic or hard link (`storage.links[]`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Link {
    /// Owning group.
    #[serde(skip_serializing_if = "NodeOwner::is_empty", default)]
    pub group: NodeOwner,
    /// Replace an existing node.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub overwrite: Option<bool>,
    /// Absolute path.
    pub path: String,
    /// Owning user.
    #[serde(skip_serializing_if = "NodeOwner::is_empty", default)]
    pub user: NodeOwner,
    /// Hard link instead of symlink.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hard: Option<bool>,
    /// Link target.
    pub target: String,
}

/// The `storage` section (only the parts the installer writes).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Storage {
    /// Directories.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub directories: Vec<Directory>,
    /// Files.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub files: Vec<File>,
    /// Links.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub links: Vec<Link>,
}

impl Storage {
    fn is_empty(&self) -> bool {
        self.directories.is_empty() && self.files.is_empty() && self.links.is_empty()
    }
}

/// A systemd drop-in (`systemd.units[].dropins[]`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dropin {
    /// Drop-in text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contents: Option<String>,
    /// File name, e.g. `certs.conf`.
    pub name: String,
}

/// A systemd unit (`systemd.units[]`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unit {
    /// Unit file text; `Some("")` is written as `"contents":""`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contents: Option<String>,
    /// Drop-ins.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub dropins: Vec<Dropin>,
    /// Enable (`true`) or disable (`false`); unset leaves presets alone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Mask the unit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mask: Option<bool>,
    /// Unit name with suffix, e.g. `kubelet.service`.
    pub name: String,
}

impl Unit {
    /// A unit with optional contents and enabled flag, no drop-ins.
    pub fn new(name: &str, contents: Option<String>, enabled: Option<bool>) -> Unit {
        Unit {
            contents,
            dropins: Vec::new(),
            enabled,
            mask: None,
            name: name.to_string(),
        }
    }
}

/// The `systemd` section.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Systemd {
    /// Units.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub units: Vec<Unit>,
}

/// Kernel arguments (spec ≥ 3.3).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KernelArguments {
    /// Arguments that must be present.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub should_exist: Vec<String>,
    /// Arguments that must be absent.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub should_not_exist: Vec<String>,
}

impl KernelArguments {
    fn is_empty(&self) -> bool {
        self.should_exist.is_empty() && self.should_not_exist.is_empty()
    }
}

/// A whole Ignition config (spec 3.x `Config`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Config {
    /// The `ignition` section (version, merge, TLS).
    pub ignition: Ignition,
    /// Kernel arguments (spec ≥ 3.3).
    #[serde(skip_serializing_if = "KernelArguments::is_empty", default)]
    pub kernel_arguments: KernelArguments,
    /// Users.
    #[serde(skip_serializing_if = "Passwd::is_empty", default)]
    pub passwd: Passwd,
    /// Files, directories, links.
    #[serde(skip_serializing_if = "Storage::is_empty", default)]
    pub storage: Storage,
    /// Units.
    #[serde(skip_serializing_if = "Systemd::is_empty", default)]
    pub systemd: Systemd,
}

impl Passwd {
    fn is_empty(&self) -> bool {
        self.users.is_empty()
    }
}

impl Systemd {
    fn is_empty(&self) -> bool {
        self.units.is_empty()
    }
}

/// A config that uses a field its declared spec version does not have.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("Ignition spec {version} has no {field} (needs spec {needs} or later)")]
pub struct SpecError {
    /// The declared version, e.g. `3.0.0`.
    pub version: String,
    /// The offending field path.
    pub field: String,
    /// First spec version that has it.
    pub needs: &'static str,
}

impl Config {
    /// An empty config declaring `spec` (`ignition.version`).
    pub fn new(spec: IgnitionSpec) -> Config {
        Config {
            ignition: Ignition {
                version: spec.as_str().to_string(),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    /// Compact JSON in Go field order with HTML-safe escaping (Go `encoding/json`,
    /// as openshift/installer `pkg/asset/ignition` writes it).
    pub fn to_json(&self) -> String {
        crate::gojson::to_string(self)
    }

    /// Parses a config (unknown fields are ignored, as the installer's loader does).
    ///
    /// # Errors
    /// The serde_json error when the text is not a config.
    pub fn from_json(text: &str) -> Result<Config, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// Checks that every field used exists in the declared spec version:
    /// `httpHeaders` and `proxy` need 3.1; `kernelArguments` 3.3.
    ///
    /// # Errors
    /// [`SpecError`] naming the first offending field.
    pub fn check_spec(&self) -> Result<(), SpecError> {
        let v = self.ignition.version.clone();
        let minor: u32 = v
            .split('.')
            .nth(1)
            .and_then(|m| m.parse().ok())
            .unwrap_or(0);
        let err = |field: &str, needs: &'static str| SpecError {
            version: v.clone(),
            field: field.to_string(),
            needs,
        };
        let mut resources: Vec<(&str, &Resource)> = Vec::new();
        resources.extend(
            self.ignition
                .config
                .merge
                .iter()
                .map(|r| ("ignition.config.merge", r)),
        );
        resources.extend(
            self.ignition
                .config
                .replace
                .iter()
                .map(|r| ("ignition.config.replace", r)),
        );
        resources.extend(
            self.ignition
                .security
                .tls
                .certificate_authorities
                .iter()
                .map(|r| ("ignition.security.tls.certificateAuthorities", r)),
        );
        for f in &self.storage.files {
            resources.push(("storage.files.contents", &f.contents));
            resources.extend(f.append.iter().map(|r| ("storage.files.append", r)));
        }
        if minor < 1 {
            if !self.ignition.proxy.is_empty() {
                return Err(err("ignition.proxy", "3.1.0"));
            }
            for (path, r) in &resources {
                if !r.http_headers.is_empty() {
                    return Err(err(&format!("{path}.httpHeaders"), "3.1.0"));
                }
            }
        }
        if minor < 3 && !self.kernel_arguments.is_empty() {
            return Err(err("kernelArguments", "3.3.0"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointer_config_shape() {
        let mut c = Config::new(IgnitionSpec::V3_2);
        c.ignition.config.merge.push(Resource {
            source: Some("https://api-int.a.b:22623/config/master".into()),
            ..Default::default()
        });
        c.ignition
            .security
            .tls
            .certificate_authorities
            .push(Resource {
                source: Some("data:,x".into()),
                ..Default::default()
            });
        assert_eq!(
            c.to_json(),
            r#"{"ignition":{"config":{"merge":[{"source":"https://api-int.a.b:22623/config/master"}]},"security":{"tls":{"certificateAuthorities":[{"source":"data:,x"}]}},"version":"3.2.0"}}"#
        );
    }

    #[test]
    fn file_and_unit_shapes() {
        let mut c = Config::new(IgnitionSpec::V3_2);
        c.storage.files.push(File::data("/etc/a", 0o600, b"x<y"));
        c.storage
            .files
            .push(File::append_data("/etc/motd", 0o644, b""));
        c.systemd
            .units
            .push(Unit::new("a.socket", Some(String::new()), Some(true)));
        let j = c.to_json();
        assert!(j.contains(r#"{"overwrite":true,"path":"/etc/a","user":{"name":"root"},"contents":{"source":"data:text/plain;charset=utf-8;base64,eDx5"},"mode":384}"#), "{j}");
        assert!(j.contains(r#"{"overwrite":false,"path":"/etc/motd","user":{"name":"root"},"append":[{"source":"data:text/plain;charset=utf-8;base64,"}],"mode":420}"#), "{j}");
        assert!(
            j.contains(r#"{"contents":"","enabled":true,"name":"a.socket"}"#),
            "{j}"
        );
        let back = Config::from_json(&j).unwrap();
        assert_eq!(back, c);
    }

    #[test]
    fn spec_check() {
        let mut c = Config::new(IgnitionSpec::V3_0);
        assert!(c.check_spec().is_ok());
        c.ignition.proxy.http_proxy = Some("http://p".into());
        assert!(
            c.check_spec()
                .unwrap_err()
                .to_string()
                .contains("ignition.proxy")
        );
    }
}
