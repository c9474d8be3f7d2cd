//! `create install-config` without an `install-config.yaml`: the questions of
//! openshift-install's wizard (installer.md §2.5: SSH Public Key, Platform,
//! Base Domain, Cluster Name, Pull Secret) asked on a terminal, or answered by
//! flags for scripts. Unlike openshift-install's wizard, platform `none` (the
//! usual UPI choice) is offered. Answers go through the same defaults and
//! validation as a file.

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;

use okd_assets::AssetError;
use serde_json::json;

/// Answers for `create install-config`; any left out are asked on a terminal.
#[derive(clap::Args, Debug, Clone, Default)]
pub(crate) struct InstallConfigOpts {
    /// Public SSH key file for the core user (e.g. ~/.ssh/id_ed25519.pub); "none" for no key.
    #[arg(long = "ssh-key-file")]
    ssh_key_file: Option<String>,
    /// Platform: none, baremetal or aws.
    #[arg(long)]
    platform: Option<String>,
    /// Base domain; cluster records live under <cluster-name>.<base-domain>.
    #[arg(long = "base-domain")]
    base_domain: Option<String>,
    /// Cluster name.
    #[arg(long = "cluster-name")]
    cluster_name: Option<String>,
    /// File holding the pull secret JSON ({"auths":{...}}).
    #[arg(long = "pull-secret-file")]
    pull_secret_file: Option<PathBuf>,
    /// API VIP (baremetal).
    #[arg(long = "api-vip")]
    api_vip: Option<String>,
    /// Ingress VIP (baremetal).
    #[arg(long = "ingress-vip")]
    ingress_vip: Option<String>,
    /// AWS region (aws).
    #[arg(long)]
    region: Option<String>,
    /// Compute replicas (default 3; UPI bare metal usually 0 or 2).
    #[arg(long = "compute-replicas")]
    compute_replicas: Option<i64>,
    /// Control-plane replicas (default 3).
    #[arg(long = "control-plane-replicas")]
    control_plane_replicas: Option<i64>,
    /// PEM file for additionalTrustBundle (e.g. mirror-registry/ca.crt of `mirror registry init`).
    #[arg(long = "additional-trust-bundle-file")]
    additional_trust_bundle_file: Option<PathBuf>,
    /// YAML file with an imageContentSources or imageDigestSources block
    /// (what `mirror release` prints, or its --output-dir/install-config-mirror.yaml).
    #[arg(long = "image-sources-file")]
    image_sources_file: Option<PathBuf>,
}

/// Reads the block `mirror release` prints: a mapping with
/// `imageContentSources` or `imageDigestSources` (a list of `{source, mirrors}`).
fn read_image_sources(f: &PathBuf) -> Result<(String, serde_json::Value), AssetError> {
    let text = std::fs::read_to_string(f).map_err(|source| AssetError::Io {
        action: "reading image sources",
        path: f.clone(),
        source,
    })?;
    let v: serde_json::Value =
        serde_yaml_ng::from_str(&text).map_err(|e| AssetError::decode(f.clone(), "not YAML", e))?;
    for key in ["imageDigestSources", "imageContentSources"] {
        if let Some(list) = v.get(key) {
            if !list.is_array() {
                return Err(AssetError::Invalid(format!(
                    "{}: {key} must be a list of {{source, mirrors}}",
                    f.display()
                )));
            }
            return Ok((key.to_string(), list.clone()));
        }
    }
    Err(AssetError::Invalid(format!(
        "{}: needs an imageContentSources or imageDigestSources list (the block `okd-install mirror release` prints)",
        f.display()
    )))
}

fn ask(question: &str, help: &str) -> Result<String, AssetError> {
    let mut out = std::io::stderr();
    let _ = write!(out, "? {question} [{help}]: ");
    let _ = out.flush();
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .map_err(|source| AssetError::Io {
            action: "reading the answer from",
            path: "stdin".into(),
            source,
        })?;
    Ok(line.trim().to_string())
}

fn pick_ssh_key() -> Result<String, AssetError> {
    let home = std::env::var("HOME").unwrap_or_default();
    let mut keys: Vec<PathBuf> = std::fs::read_dir(PathBuf::from(&home).join(".ssh"))
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "pub"))
                .collect()
        })
        .unwrap_or_default();
    keys.sort();
    let mut menu: Vec<String> = keys.iter().map(|k| k.display().to_string()).collect();
    menu.push("<none>".to_string());
    for (i, m) in menu.iter().enumerate() {
        eprintln!("  {}) {m}", i + 1);
    }
    let a = ask("SSH Public Key", "number, or a path")?;
    let chosen = match a.parse::<usize>() {
        Ok(n) if (1..=menu.len()).contains(&n) => menu[n - 1].clone(),
        _ => a,
    };
    read_key(&chosen)
}

fn read_key(choice: &str) -> Result<String, AssetError> {
    if choice.is_empty() || choice == "<none>" || choice == "none" {
        return Ok(String::new());
    }
    std::fs::read_to_string(choice)
        .map(|s| s.trim().to_string())
        .map_err(|source| AssetError::Io {
            action: "reading SSH public key",
            path: choice.into(),
            source,
        })
}

fn resolve(o: &InstallConfigOpts) -> Result<serde_json::Value, AssetError> {
    let tty = std::io::stdin().is_terminal();
    let need = |v: &Option<String>, flag: &str| -> Result<Option<String>, AssetError> {
        if v.is_some() || tty {
            Ok(v.clone())
        } else {
            Err(AssetError::Invalid(format!(
                "no install-config.yaml in the directory and stdin is not a terminal: pass {flag}"
            )))
        }
    };
    let ssh = match &o.ssh_key_file {
        Some(f) => read_key(f)?,
        None if tty => pick_ssh_key()?,
        None => String::new(),
    };
    let platform = match need(&o.platform, "--platform")? {
        Some(p) => p,
        None => ask("Platform", "none, baremetal, aws")?,
    };
    let base_domain = match need(&o.base_domain, "--base-domain")? {
        Some(p) => p,
        None => ask("Base Domain", "e.g. example.com")?,
    };
    let name = match need(&o.cluster_name, "--cluster-name")? {
        Some(p) => p,
        None => ask("Cluster Name", "lowercase, e.g. okd")?,
    };
    let pull_secret = match &o.pull_secret_file {
        Some(f) => std::fs::read_to_string(f)
            .map_err(|source| AssetError::Io { action: "reading pull secret", path: f.clone(), source })?
            .trim()
            .to_string(),
        None if tty => {
            let answer = ask("Pull Secret", "JSON {\"auths\":...} or a file holding it")?;
            let as_path = PathBuf::from(&answer);
            if !answer.starts_with('{') && as_path.is_file() {
                std::fs::read_to_string(&as_path)
                    .map_err(|source| AssetError::Io { action: "reading pull secret", path: as_path.clone(), source })?
                    .trim()
                    .to_string()
            } else {
                answer
            }
        }
        None => return Err(AssetError::Invalid("no install-config.yaml in the directory and stdin is not a terminal: pass --pull-secret-file".into())),
    };
    let platform_obj = match platform.as_str() {
        "baremetal" => {
            let api = match &o.api_vip {
                Some(v) => v.clone(),
                None if tty => ask("API VIP", "an address in the machine network")?,
                None => String::new(),
            };
            let ingress = match &o.ingress_vip {
                Some(v) => v.clone(),
                None if tty => ask("Ingress VIP", "an address in the machine network")?,
                None => String::new(),
            };
            json!({"baremetal": {"apiVIPs": [api], "ingressVIPs": [ingress]}})
        }
        "aws" => {
            let region = match &o.region {
                Some(v) => v.clone(),
                None if tty => ask("Region", "e.g. us-east-1")?,
                None => String::new(),
            };
            json!({"aws": {"region": region}})
        }
        other => json!({ other: {} }),
    };
    let mut v = json!({
        "apiVersion": "v1",
        "baseDomain": base_domain,
        "metadata": {"name": name},
        "platform": platform_obj,
        "pullSecret": pull_secret,
        "controlPlane": {"name": "master", "replicas": o.control_plane_replicas.unwrap_or(3)},
        "compute": [{"name": "worker", "replicas": o.compute_replicas.unwrap_or(3)}],
    });
    if !ssh.is_empty() {
        v["sshKey"] = json!(ssh);
    }
    if let Some(f) = &o.additional_trust_bundle_file {
        let pem = std::fs::read_to_string(f).map_err(|source| AssetError::Io {
            action: "reading additional trust bundle",
            path: f.clone(),
            source,
        })?;
        v["additionalTrustBundle"] = json!(pem);
    }
    if let Some(f) = &o.image_sources_file {
        let (key, list) = read_image_sources(f)?;
        v[key] = list;
    }
    Ok(v)
}

/// The question/flag source for a missing install-config.yaml.
pub(crate) fn source(opts: InstallConfigOpts) -> okd_assets::installconfig::InstallConfigSource {
    Box::new(move || {
        let v = resolve(&opts)?;
        serde_json::from_value(v)
            .map_err(|e| AssetError::decode("install-config.yaml", "invalid install config", e))
    })
}
