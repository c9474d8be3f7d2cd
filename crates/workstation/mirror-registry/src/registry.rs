//! `okd-install mirror registry init`: everything a TLS + htpasswd
//! distribution registry needs, and the install-config changes that make the
//! cluster trust it.
//!
//! Generation ([`generate`], [`merge_pull_secret`], [`append_trust_bundle`],
//! [`edit_install_config`]) is pure; [`init`] adds the file I/O: every file is
//! written atomically (temporary file in the same directory, fsync, rename),
//! private keys, htpasswd and the pull secret with mode 0600.
//!
//! The registry configuration follows distribution 2.8's `configuration.md`
//! (`version: 0.1`, `storage.filesystem.rootdirectory`, `http.addr`,
//! `http.tls.certificate`/`key`, `auth.htpasswd.realm`/`path`); the htpasswd
//! file holds `user:$2y$…` bcrypt hashes, the only format distribution accepts.
//! The pull secret is a Docker config JSON (`{"auths": {"host:port": {"auth":
//! base64("user:password")}}}`).

use std::net::IpAddr;
use std::os::unix::fs::{DirBuilderExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use okd_pki::{CertConfig, CertKey, Certificate, ExtKeyUsage, KeyUsage, NameAttr, RsaKey};
use okd_secret::{ExposeSecret as _, Secret};
use rand::Rng as _;
use serde_json::{Value, json};
use serde_yaml_ng::Value as Yaml;
use time::OffsetDateTime;

use crate::MirrorError;

/// Default output directory, relative to the asset directory.
pub const DEFAULT_OUTPUT_DIR: &str = "mirror-registry";
/// The htpasswd realm written into `config.yml` (shown in `WWW-Authenticate`).
pub const REALM: &str = "okd-mirror";
/// bcrypt cost of the htpasswd hash: 5, what Apache's `htpasswd -B` (the
/// tool of the distribution docs and of the guide) writes. The registry
/// checks the hash on every request, with no cache: at cost 10 that is about
/// 60 ms of CPU per request, which made a mirror of a few hundred blobs
/// spend most of its time in bcrypt; at cost 5 it is about 2 ms. The file
/// is 0600 on the registry host.
pub const HTPASSWD_COST: u32 = 5;
/// Validity of the mirror CA: 10 years.
pub const CA_VALIDITY: Duration = Duration::from_secs(10 * 365 * 24 * 3600);
/// Validity of the serving certificate: 2 years (renew by running init again;
/// the CA, and so the cluster's trust, is kept).
pub const SERVER_VALIDITY: Duration = Duration::from_secs(2 * 365 * 24 * 3600);
/// Length of a generated password (alphanumeric, about 143 bits).
pub const GENERATED_PASSWORD_LEN: usize = 24;

/// File names inside the output directory.
pub mod files {
    /// The CA certificate (PEM), the file to give clients (`--cacert`, `--cert-dir`).
    pub const CA_CERT: &str = "ca.crt";
    /// The CA private key (PKCS#1 PEM, 0600); kept so a re-run reuses the CA.
    pub const CA_KEY: &str = "ca.key";
    /// Serving certificate chain: leaf PEM then CA PEM.
    pub const SERVER_CERT: &str = "server.crt";
    /// Serving private key (0600).
    pub const SERVER_KEY: &str = "server.key";
    /// htpasswd file with one bcrypt user (0600).
    pub const HTPASSWD: &str = "htpasswd";
    /// Registry configuration for `docker-registry serve`.
    pub const CONFIG: &str = "config.yml";
    /// Registry storage root (created 0700).
    pub const DATA_DIR: &str = "data";
    /// The pull secret with the mirror's login merged in (0600).
    pub const PULL_SECRET: &str = "pull-secret.json";
}

/// What to set up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InitOptions {
    /// Asset directory; its `install-config.yaml`, when present, is updated.
    pub dir: PathBuf,
    /// Where the registry files go (default `<dir>/mirror-registry`).
    pub output_dir: Option<PathBuf>,
    /// DNS names of the registry (DNS SANs); the first one names the registry
    /// in the pull secret.
    pub hostnames: Vec<String>,
    /// IP addresses of the registry (IP SANs); the first one is the listen
    /// address (all interfaces when empty).
    pub addresses: Vec<IpAddr>,
    /// TCP port the registry listens on.
    pub port: u16,
    /// The htpasswd user.
    pub username: String,
    /// The user's password; `None` keeps the existing login (see
    /// `rotate_password`), else generates one ([`GENERATED_PASSWORD_LEN`] characters).
    pub password: Option<Secret>,
    /// Replace an existing login with `password` (or a generated one). Without
    /// it a re-run keeps the login the registry already has, so clients and
    /// install-configs holding it keep working.
    pub rotate_password: bool,
    /// Release and host options the edited install-config is validated with.
    pub load_options: okd_installconfig::LoadOptions,
}

/// What [`init`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InitOutput {
    /// The output directory (absolute when `dir` was).
    pub output_dir: PathBuf,
    /// `host:port` as it appears in image references and the pull secret.
    pub registry: String,
    /// The htpasswd user.
    pub username: String,
    /// The password (generated or given); `Debug` shows `[REDACTED]`.
    pub password: Secret,
    /// True when the password was generated here (print it once).
    pub password_generated: bool,
    /// True when the existing login (htpasswd and password) was kept.
    pub login_kept: bool,
    /// True when an existing `ca.crt`/`ca.key` in the output dir was reused.
    pub ca_reused: bool,
    /// Path of `config.yml` (run `docker-registry serve <it>`).
    pub config: PathBuf,
    /// Path of the CA certificate.
    pub ca_cert: PathBuf,
    /// Path of `pull-secret.json`.
    pub pull_secret: PathBuf,
    /// The install-config that was updated, if there was one.
    pub install_config: Option<PathBuf>,
    /// Warnings from loading the edited install-config (e.g. an expired
    /// certificate already in the trust bundle).
    pub warnings: Vec<String>,
}

/// The registry's files, generated in memory.
#[derive(Debug, Clone)]
pub struct Generated {
    /// The CA (certificate and key).
    pub ca: CertKey,
    /// The serving certificate (SANs = hostnames + addresses, EKU serverAuth).
    pub server: CertKey,
    /// htpasswd content: `user:$2y$05$…\n`; `Debug` shows `[REDACTED]`.
    pub htpasswd: Secret,
    /// `config.yml` content.
    pub config_yml: String,
}

/// Paths written into `config.yml` (absolute paths are best: the registry
/// resolves relative ones against its working directory).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigPaths {
    /// Storage root directory.
    pub data_dir: PathBuf,
    /// Serving certificate chain.
    pub cert: PathBuf,
    /// Serving key.
    pub key: PathBuf,
    /// htpasswd file.
    pub htpasswd: PathBuf,
}

impl ConfigPaths {
    /// The standard layout inside `out` (see [`files`]).
    pub fn in_dir(out: &Path) -> ConfigPaths {
        ConfigPaths {
            data_dir: out.join(files::DATA_DIR),
            cert: out.join(files::SERVER_CERT),
            key: out.join(files::SERVER_KEY),
            htpasswd: out.join(files::HTPASSWD),
        }
    }
}

/// `host:port` naming the registry: the first hostname, else the first
/// address (IPv6 in brackets).
///
/// # Errors
/// [`MirrorError::Options`] when there is neither.
pub fn registry_name(
    hostnames: &[String],
    addresses: &[IpAddr],
    port: u16,
) -> Result<String, MirrorError> {
    if let Some(h) = hostnames.first() {
        return Ok(format!("{h}:{port}"));
    }
    match addresses.first() {
        Some(IpAddr::V6(a)) => Ok(format!("[{a}]:{port}")),
        Some(IpAddr::V4(a)) => Ok(format!("{a}:{port}")),
        None => Err(MirrorError::Options(
            "give the registry at least one --hostname or --address".into(),
        )),
    }
}

fn check_options(o: &InitOptions) -> Result<(), MirrorError> {
    let bad = |m: String| Err(MirrorError::Options(m));
    if o.hostnames.is_empty() && o.addresses.is_empty() {
        return bad("give the registry at least one --hostname or --address".into());
    }
    for h in &o.hostnames {
        let ok = !h.is_empty()
            && h.len() <= 253
            && h.split('.').all(|l| {
                !l.is_empty()
                    && l.len() <= 63
                    && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                    && !l.starts_with('-')
                    && !l.ends_with('-')
            });
        if !ok {
            return bad(format!("hostname {h:?} is not a valid DNS name"));
        }
    }
    if o.port == 0 {
        return bad("port must be 1-65535".into());
    }
    if o.username.is_empty() || o.username.contains([':', '\n', '\r']) {
        return bad(format!(
            "username {:?} must be non-empty and contain no ':' or newline",
            o.username
        ));
    }
    if let Some(p) = &o.password
        && (p.is_empty() || p.expose_secret().contains(['\n', '\r']))
    {
        return bad("password must be non-empty and contain no newline".into());
    }
    Ok(())
}

/// A random alphanumeric password of [`GENERATED_PASSWORD_LEN`] characters.
pub fn generate_password() -> String {
    rand::rng()
        .sample_iter(rand::distr::Alphanumeric)
        .take(GENERATED_PASSWORD_LEN)
        .map(char::from)
        .collect()
}

/// The CA profile: subject `OU=okd-mirror, CN=<first name> mirror CA`, key
/// usage digitalSignature + keyEncipherment + keyCertSign, CA:TRUE.
fn ca_config(name: &str) -> CertConfig {
    CertConfig::signer(REALM, &format!("{name} mirror CA"), CA_VALIDITY)
}

/// The serving profile: CN = the registry name, SANs, digitalSignature +
/// keyEncipherment, EKU serverAuth.
fn server_config(name: &str, hostnames: &[String], addresses: &[IpAddr]) -> CertConfig {
    CertConfig {
        subject: vec![(NameAttr::CommonName, name.to_string())],
        dns_names: hostnames.to_vec(),
        ip_addresses: addresses.to_vec(),
        key_usage: KeyUsage {
            digital_signature: true,
            key_encipherment: true,
            cert_sign: false,
        },
        ext_key_usage: vec![ExtKeyUsage::ServerAuth],
        validity: SERVER_VALIDITY,
        is_ca: false,
    }
}

/// One htpasswd line for `user` with a `$2y$` bcrypt hash of `password`.
///
/// # Errors
/// [`MirrorError::Hash`] when bcrypt fails.
pub fn htpasswd_line(user: &str, password: &str) -> Result<String, MirrorError> {
    let hash = bcrypt::hash_with_result(password, HTPASSWD_COST)
        .map_err(|e| MirrorError::Hash(e.to_string()))?
        .format_for_version(bcrypt::Version::TwoY);
    Ok(format!("{user}:{hash}\n"))
}

/// The registry's `config.yml`: filesystem storage with deletes enabled,
/// `http.addr` = `listen:port` (`:port`, all interfaces, when `listen` is
/// `None`), TLS with the serving chain, htpasswd auth with realm [`REALM`].
pub fn config_yml(listen: Option<IpAddr>, port: u16, paths: &ConfigPaths) -> String {
    let addr = match listen {
        Some(IpAddr::V6(a)) => format!("[{a}]:{port}"),
        Some(IpAddr::V4(a)) => format!("{a}:{port}"),
        None => format!(":{port}"),
    };
    let s = |p: &Path| p.to_string_lossy().into_owned();
    let doc = json!({
        "version": "0.1",
        "log": {"level": "info"},
        "storage": {
            "filesystem": {"rootdirectory": s(&paths.data_dir)},
            "delete": {"enabled": true},
        },
        "auth": {"htpasswd": {"realm": REALM, "path": s(&paths.htpasswd)}},
        "http": {
            "addr": addr,
            "tls": {"certificate": s(&paths.cert), "key": s(&paths.key)},
        },
    });
    let body = serde_yaml_ng::to_string(&doc).unwrap_or_default();
    format!(
        "# distribution registry: docker-registry serve config.yml (written by okd-install mirror registry init)\n{body}"
    )
}

/// Generates the CA (or reuses `ca`), the serving certificate signed by it,
/// the htpasswd file and `config.yml` for `opts` with `password`, at `now`.
///
/// # Errors
/// [`MirrorError::Options`], [`MirrorError::Pki`], [`MirrorError::Hash`].
pub fn generate(
    opts: &InitOptions,
    password: &str,
    ca: Option<CertKey>,
    paths: &ConfigPaths,
    now: OffsetDateTime,
) -> Result<Generated, MirrorError> {
    check_options(opts)?;
    let name = registry_name(&opts.hostnames, &opts.addresses, opts.port)?;
    let ca = match ca {
        Some(ca) => ca,
        None => {
            let host = opts
                .hostnames
                .first()
                .cloned()
                .unwrap_or_else(|| name.clone());
            okd_pki::self_signed(&ca_config(&host), RsaKey::generate()?, now)?
        }
    };
    let server = okd_pki::signed(
        &server_config(&name, &opts.hostnames, &opts.addresses),
        RsaKey::generate()?,
        &ca,
        now,
    )?;
    Ok(Generated {
        ca,
        server,
        htpasswd: Secret::new(htpasswd_line(&opts.username, password)?),
        config_yml: config_yml(opts.addresses.first().copied(), opts.port, paths),
    })
}

/// Merges `{"auth": base64("user:password")}` for `registry` into a Docker
/// config JSON pull secret (an empty `{"auths": {}}` when `existing` is
/// `None`), replacing an older entry for the same registry. Returns compact JSON.
///
/// # Errors
/// [`MirrorError::PullSecret`] when `existing` is not a JSON object whose
/// `auths`, if present, is an object.
pub fn merge_pull_secret(
    existing: Option<&str>,
    registry: &str,
    user: &str,
    password: &str,
) -> Result<String, MirrorError> {
    let mut doc: Value = match existing.map(str::trim).filter(|s| !s.is_empty()) {
        Some(s) => serde_json::from_str(s).map_err(|e| MirrorError::PullSecret(e.to_string()))?,
        None => json!({}),
    };
    let obj = doc
        .as_object_mut()
        .ok_or_else(|| MirrorError::PullSecret("not a JSON object".into()))?;
    let auths = obj.entry("auths").or_insert_with(|| json!({}));
    let auths = auths
        .as_object_mut()
        .ok_or_else(|| MirrorError::PullSecret("\"auths\" is not an object".into()))?;
    auths.insert(
        registry.to_string(),
        json!({"auth": STANDARD.encode(format!("{user}:{password}"))}),
    );
    serde_json::to_string(&doc).map_err(|e| MirrorError::PullSecret(e.to_string()))
}

/// Appends `ca_pem` to a PEM trust bundle unless the bundle already holds the
/// same certificate (compared by DER); the result ends with a newline.
pub fn append_trust_bundle(existing: Option<&str>, ca_pem: &str) -> String {
    let existing = existing.unwrap_or("");
    let ca_der: Vec<Vec<u8>> = okd_pki::pem_blocks(ca_pem)
        .into_iter()
        .filter(|(l, _)| l == "CERTIFICATE")
        .map(|(_, d)| d)
        .collect();
    let present = okd_pki::pem_blocks(existing)
        .into_iter()
        .any(|(l, d)| l == "CERTIFICATE" && ca_der.contains(&d));
    let mut out = existing.trim_end().to_string();
    if !present {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(ca_pem.trim_end());
    }
    out.push('\n');
    out
}

/// Sets top-level string keys of an install-config YAML text. Each `key:`
/// block is replaced in the text (new keys are appended), so comments and
/// the layout of everything else are kept; if the spliced text does not parse
/// to exactly the intended document, the whole document is re-serialized
/// instead (comments are then lost).
///
/// # Errors
/// [`MirrorError::InstallConfig`] when the text is not a YAML mapping.
pub fn edit_install_config(text: &str, updates: &[(&str, String)]) -> Result<String, MirrorError> {
    let mut want: Yaml =
        serde_yaml_ng::from_str(text).map_err(|e| MirrorError::InstallConfig(e.to_string()))?;
    let map = want
        .as_mapping_mut()
        .ok_or_else(|| MirrorError::InstallConfig("the document is not a mapping".into()))?;
    for (k, v) in updates {
        map.insert(Yaml::String((*k).to_string()), Yaml::String(v.clone()));
    }
    let mut spliced = text.to_string();
    for (k, v) in updates {
        match splice_key(&spliced, k, v) {
            Some(s) => spliced = s,
            None => {
                spliced.clear();
                break;
            }
        }
    }
    if !spliced.is_empty() && serde_yaml_ng::from_str::<Yaml>(&spliced).is_ok_and(|got| got == want)
    {
        return Ok(spliced);
    }
    serde_yaml_ng::to_string(&want).map_err(|e| MirrorError::InstallConfig(e.to_string()))
}

/// Replaces the block of top-level `key:` (its line and the indented lines
/// after it) with a fresh serialization, or appends one. `None` when the key
/// occurs more than once at column 0.
fn splice_key(text: &str, key: &str, value: &str) -> Option<String> {
    let mut one = serde_yaml_ng::Mapping::new();
    one.insert(
        Yaml::String(key.to_string()),
        Yaml::String(value.to_string()),
    );
    let block = serde_yaml_ng::to_string(&one).ok()?;
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let prefix = format!("{key}:");
    let starts: Vec<usize> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l.starts_with(&prefix))
        .map(|(i, _)| i)
        .collect();
    match starts.as_slice() {
        [] => {
            let mut out = text.to_string();
            if !out.is_empty() && !out.ends_with('\n') {
                out.push('\n');
            }
            out.push_str(&block);
            Some(out)
        }
        [i] => {
            let mut end = i + 1;
            while end < lines.len() {
                let l = lines[end];
                if l.trim().is_empty() || l.starts_with([' ', '\t']) {
                    end += 1;
                } else {
                    break;
                }
            }
            // Trailing blank lines belong to the layout, not the value.
            while end > i + 1 && lines[end - 1].trim().is_empty() {
                end -= 1;
            }
            let mut out: String = lines[..*i].concat();
            out.push_str(&block);
            out.push_str(&lines[end..].concat());
            Some(out)
        }
        _ => None,
    }
}

/// The login an earlier `init` left in `out`.
struct KeptLogin {
    password: Secret,
    /// The htpasswd file as it is.
    htpasswd: Secret,
}

/// The login of an existing registry in `out`, to keep: `None` when `out`
/// has no htpasswd file (a first run). The password is the one given in
/// `opts`, else the one of `out`'s pull-secret.json (any entry of user
/// `opts.username`); either must match the htpasswd hash of that user.
///
/// # Errors
/// [`MirrorError::Options`] when the login cannot be kept: a given
/// password that is not the registry's, a user without an htpasswd line, or
/// no password in the pull secret that matches; the message names
/// `--rotate-password`.
fn existing_login(out: &Path, opts: &InitOptions) -> Result<Option<KeptLogin>, MirrorError> {
    let hp = out.join(files::HTPASSWD);
    let htpasswd = match std::fs::read_to_string(&hp) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(MirrorError::io("reading", &hp, e)),
    };
    let refuse = |why: String| {
        Err(MirrorError::Options(format!(
            "{} already holds the registry's login: {why}; pass --rotate-password to replace it (the new password goes into htpasswd, pull-secret.json and install-config.yaml's pullSecret)",
            hp.display()
        )))
    };
    let user = opts.username.as_str();
    let Some(hash) = htpasswd
        .lines()
        .find_map(|l| l.strip_prefix(user).and_then(|r| r.strip_prefix(':')))
    else {
        return refuse(format!("it has no user {user:?}"));
    };
    let matches = |pw: &str| bcrypt::verify(pw, hash.trim()).unwrap_or(false);
    let kept = |password: Secret| {
        Ok(Some(KeptLogin {
            password,
            htpasswd: Secret::new(htpasswd.clone()),
        }))
    };
    if let Some(p) = &opts.password {
        if matches(p.expose_secret()) {
            return kept(p.clone());
        }
        return refuse(format!(
            "the given password is not the one it holds for user {user:?}"
        ));
    }
    let ps = out.join(files::PULL_SECRET);
    let text = std::fs::read_to_string(&ps).unwrap_or_default();
    let doc: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    let found = doc
        .get("auths")
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(|a| a.values())
        .filter_map(|e| e.get("auth").and_then(Value::as_str))
        .filter_map(|a| STANDARD.decode(a).ok())
        .filter_map(|b| String::from_utf8(b).ok())
        .filter_map(|pair| {
            pair.split_once(':')
                .filter(|(u, _)| *u == user)
                .map(|(_, p)| p.to_string())
        })
        .find(|p| matches(p));
    match found {
        Some(p) => kept(Secret::new(p)),
        None => refuse(format!(
            "{} has no password of user {user:?} that matches it (give the current one with --password-file)",
            ps.display()
        )),
    }
}

/// Reads `ca.crt` + `ca.key` from `out` when both exist.
fn existing_ca(out: &Path) -> Result<Option<CertKey>, MirrorError> {
    let (cp, kp) = (out.join(files::CA_CERT), out.join(files::CA_KEY));
    if !cp.exists() || !kp.exists() {
        return Ok(None);
    }
    let cert_pem = std::fs::read_to_string(&cp).map_err(|e| MirrorError::io("reading", &cp, e))?;
    let key_pem = std::fs::read_to_string(&kp).map_err(|e| MirrorError::io("reading", &kp, e))?;
    let der = okd_pki::pem_blocks(&cert_pem)
        .into_iter()
        .find(|(l, _)| l == "CERTIFICATE")
        .map(|(_, d)| d)
        .ok_or(okd_pki::PkiError::NoPem("CERTIFICATE"))?;
    let info = okd_pki::parse_certs(&cert_pem)?.remove(0);
    Ok(Some(CertKey {
        cert: Certificate {
            der,
            pem: cert_pem,
            not_before: info.not_before,
            not_after: info.not_after,
        },
        key: RsaKey::from_pem(&key_pem)?,
    }))
}

/// Writes `data` to `path` atomically with exactly `mode` ([`okd_fs::write_atomic`]).
///
/// # Errors
/// [`MirrorError::Fs`] naming the step and the file.
pub fn write_atomic(path: &Path, data: &[u8], mode: u32) -> Result<(), MirrorError> {
    Ok(okd_fs::write_atomic(path, data, mode)?)
}

fn mkdir(path: &Path, mode: u32) -> Result<(), MirrorError> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(mode)
        .create(path)
        .map_err(|e| MirrorError::io("creating directory", path, e))
}

/// Writes the registry's files into `out` (created 0750, `data/` 0700):
/// keys, htpasswd and the pull secret 0600, the rest 0644.
fn write_registry_files(
    out: &Path,
    paths: &ConfigPaths,
    generated: &Generated,
    pull_secret: &str,
) -> Result<(), MirrorError> {
    mkdir(out, 0o750)?;
    mkdir(&paths.data_dir, 0o700)?;
    let w =
        |name: &str, data: &str, mode: u32| write_atomic(&out.join(name), data.as_bytes(), mode);
    w(files::CA_CERT, &generated.ca.cert.pem, 0o644)?;
    w(files::CA_KEY, &generated.ca.key.private_pem(), 0o600)?;
    w(
        files::SERVER_CERT,
        &format!("{}{}", generated.server.cert.pem, generated.ca.cert.pem),
        0o644,
    )?;
    w(
        files::SERVER_KEY,
        &generated.server.key.private_pem(),
        0o600,
    )?;
    w(files::HTPASSWD, generated.htpasswd.expose_secret(), 0o600)?;
    w(files::CONFIG, &generated.config_yml, 0o644)?;
    w(files::PULL_SECRET, &format!("{pull_secret}\n"), 0o600)
}

/// Sets up the mirror registry for `opts`: generates (or reuses) the CA,
/// writes `ca.crt`, `ca.key`, `server.crt`, `server.key`, `htpasswd`,
/// `config.yml`, `pull-secret.json` and `data/` into the output directory,
/// and, when `<dir>/install-config.yaml` exists, merges the login into its
/// `pullSecret` and the CA into its `additionalTrustBundle`
/// (`additionalTrustBundlePolicy` is left alone: openshift-install writes
/// the `user-ca-bundle` ConfigMap and the bootstrap's CA anchor for any
/// policy, and `Always` only adds the bundle to the cluster proxy).
/// The edited install-config is validated first; when it would not validate
/// nothing is written at all.
///
/// # Errors
/// [`MirrorError::Options`], [`MirrorError::Pki`], [`MirrorError::Hash`],
/// [`MirrorError::Io`], [`MirrorError::PullSecret`],
/// [`MirrorError::InstallConfig`], [`MirrorError::InstallConfigInvalid`].
pub fn init(opts: &InitOptions) -> Result<InitOutput, MirrorError> {
    check_options(opts)?;
    let out = opts
        .output_dir
        .clone()
        .unwrap_or_else(|| opts.dir.join(DEFAULT_OUTPUT_DIR));
    let out = if out.is_absolute() {
        out
    } else {
        std::env::current_dir()
            .map_err(|e| MirrorError::io("reading", Path::new("."), e))?
            .join(out)
    };
    let registry = registry_name(&opts.hostnames, &opts.addresses, opts.port)?;
    let kept = if opts.rotate_password {
        None
    } else {
        existing_login(&out, opts)?
    };
    let (password, password_generated) = match (&kept, &opts.password) {
        (Some(k), _) => (k.password.clone(), false),
        (None, Some(p)) => (p.clone(), false),
        (None, None) => (Secret::new(generate_password()), true),
    };

    // Everything that can fail on bad input happens before anything is written.
    let ic_path = opts.dir.join("install-config.yaml");
    let ic_text = match std::fs::read_to_string(&ic_path) {
        Ok(t) => Some(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(MirrorError::io("reading", &ic_path, e)),
    };
    // (pull secret, trust bundle) of the install-config, read as plain YAML:
    // the loader below reports anything else that is wrong with it.
    let old: Option<(Option<String>, Option<String>)> = match &ic_text {
        Some(t) => {
            let v: Yaml = serde_yaml_ng::from_str(t)
                .map_err(|e| MirrorError::InstallConfig(e.to_string()))?;
            let field = |k: &str| v.get(k).and_then(Yaml::as_str).map(String::from);
            Some((field("pullSecret"), field("additionalTrustBundle")))
        }
        None => None,
    };
    let ca = existing_ca(&out)?;
    let ca_reused = ca.is_some();
    let paths = ConfigPaths::in_dir(&out);
    let now = OffsetDateTime::now_utc();
    let mut generated = generate(opts, password.expose_secret(), ca, &paths, now)?;
    if let Some(k) = &kept {
        // The same login: the htpasswd file stays byte for byte.
        generated.htpasswd = k.htpasswd.clone();
    }
    let pull_secret = merge_pull_secret(
        old.as_ref().and_then(|(p, _)| p.as_deref()),
        &registry,
        &opts.username,
        password.expose_secret(),
    )?;
    let mut warnings = Vec::new();
    let new_ic = match (&ic_text, &old) {
        (Some(text), Some(old)) => {
            let bundle = append_trust_bundle(old.1.as_deref(), &generated.ca.cert.pem);
            let edited = edit_install_config(
                text,
                &[
                    ("pullSecret", pull_secret.clone()),
                    ("additionalTrustBundle", bundle),
                ],
            )?;
            let loaded = okd_installconfig::load(
                "install-config.yaml",
                edited.as_bytes(),
                &opts.load_options,
            )
            .map_err(|e| MirrorError::InstallConfigInvalid(e.to_string()))?;
            warnings = loaded.warnings;
            Some(edited)
        }
        _ => None,
    };

    write_registry_files(&out, &paths, &generated, &pull_secret)?;
    let install_config = match new_ic {
        Some(text) => {
            // Keep the user's mode (install-configs hold a pull secret).
            let mode = std::fs::metadata(&ic_path)
                .map(|m| m.permissions().mode() & 0o7777)
                .unwrap_or(0o600);
            write_atomic(&ic_path, text.as_bytes(), mode)?;
            Some(ic_path)
        }
        None => None,
    };
    Ok(InitOutput {
        config: out.join(files::CONFIG),
        ca_cert: out.join(files::CA_CERT),
        pull_secret: out.join(files::PULL_SECRET),
        output_dir: out,
        registry,
        username: opts.username.clone(),
        password,
        password_generated,
        login_kept: kept.is_some(),
        ca_reused,
        install_config,
        warnings,
    })
}

#[cfg(test)]
mod tests;
