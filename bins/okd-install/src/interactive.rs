//! `create install-config` without an `install-config.yaml`: the questions of
//! openshift-install's wizard (openshift/installer `pkg/asset/installconfig/`,
//! e.g. `ssh.go`: SSH Public Key, Platform,
//! Base Domain, Cluster Name, Pull Secret) asked on a terminal, or answered by
//! flags for scripts. Unlike openshift-install's wizard, platform `none` (the
//! usual UPI choice) is offered. Answers go through the same defaults and
//! validation as a file.

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;

use okd_assets::AssetError;
use okd_installconfig::ExposeSecret as _;
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

/// Where the answers come from: the terminal (`tty`), or flags only.
struct Prompter {
    tty: bool,
}

/// End of input or Ctrl-C at a prompt: nothing is written (exit code 8).
fn aborted(what: &str) -> AssetError {
    AssetError::Interrupted(format!("{what} at the prompt: nothing was written"))
}

impl Prompter {
    /// Asks `question` until `check` accepts the answer (the install-config's
    /// own rule for the field, openshift-install `pkg/asset/installconfig`
    /// clustername.go, basedomain.go, pullsecret.go), printing the rule's
    /// message before asking again. `hidden` reads without echo (the pull
    /// secret). Returns `check`'s value for the accepted answer.
    fn ask<T>(
        &self,
        question: &str,
        help: &str,
        hidden: bool,
        check: impl Fn(&str) -> Result<T, String>,
    ) -> Result<T, AssetError> {
        loop {
            let mut out = std::io::stderr();
            let _ = write!(out, "? {question} [{help}]: ");
            let _ = out.flush();
            let line = if hidden { read_hidden()? } else { read_line()? };
            match check(line.trim()) {
                Ok(v) => return Ok(v),
                Err(msg) => eprintln!("X Sorry, your reply was invalid: {msg}"),
            }
        }
    }

    /// A flag's value checked by `check`, else the answer to a prompt on a
    /// terminal, else the error asking for `flag`.
    fn value<T>(
        &self,
        flag_value: Option<&str>,
        flag: &str,
        question: &str,
        help: &str,
        check: impl Fn(&str) -> Result<T, String>,
    ) -> Result<T, AssetError> {
        match flag_value {
            Some(v) => check(v).map_err(|m| AssetError::Invalid(format!("{flag}: {m}"))),
            None if self.tty => self.ask(question, help, false, check),
            None => Err(AssetError::Invalid(format!(
                "no install-config.yaml in the directory and stdin is not a terminal: pass {flag}"
            ))),
        }
    }
}

fn read_line() -> Result<String, AssetError> {
    let mut line = String::new();
    let n = std::io::stdin()
        .lock()
        .read_line(&mut line)
        .map_err(|source| AssetError::Io {
            action: "reading the answer from",
            path: "stdin".into(),
            source,
        })?;
    if n == 0 {
        return Err(aborted("end of input"));
    }
    Ok(line)
}

/// Reads one line from the terminal without echo, byte by byte with the
/// terminal in non-canonical mode (no line-length limit for a pasted pull
/// secret; Ctrl-C and Ctrl-D are seen as bytes), and restores the terminal's
/// settings on every way out.
fn read_hidden() -> Result<String, AssetError> {
    use rustix::termios::{self, LocalModes, OptionalActions};
    use std::io::Read;
    let stdin = std::io::stdin();
    let io_err = |source: std::io::Error| AssetError::Io {
        action: "reading the answer from",
        path: "stdin".into(),
        source,
    };
    let saved = termios::tcgetattr(&stdin).map_err(|e| io_err(e.into()))?;
    struct Restore<'a>(&'a std::io::Stdin, termios::Termios);
    impl Drop for Restore<'_> {
        fn drop(&mut self) {
            let _ = termios::tcsetattr(self.0, OptionalActions::Now, &self.1);
            eprintln!();
        }
    }
    let mut raw = saved.clone();
    raw.local_modes
        .remove(LocalModes::ECHO | LocalModes::ICANON | LocalModes::ISIG);
    termios::tcsetattr(&stdin, OptionalActions::Now, &raw).map_err(|e| io_err(e.into()))?;
    let _restore = Restore(&stdin, saved);
    let mut line = Vec::new();
    let mut lock = stdin.lock();
    let mut b = [0u8; 1];
    loop {
        if lock.read(&mut b).map_err(io_err)? == 0 {
            return Err(aborted("end of input"));
        }
        match b[0] {
            b'\r' | b'\n' => break,
            0x03 => return Err(aborted("Ctrl-C")),
            0x04 if line.is_empty() => return Err(aborted("end of input")),
            0x7f | 0x08 => {
                line.pop();
            }
            c => line.push(c),
        }
    }
    Ok(String::from_utf8_lossy(&line).into_owned())
}

fn pick_ssh_key(p: &Prompter) -> Result<String, AssetError> {
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
    p.ask("SSH Public Key", "number, or a path", false, |a| {
        let chosen = match a.parse::<usize>() {
            Ok(n) if (1..=menu.len()).contains(&n) => menu[n - 1].as_str(),
            _ => a,
        };
        read_key(chosen)
    })
}

/// The key in file `choice` (empty for `none`), checked as an authorized_keys line.
fn read_key(choice: &str) -> Result<String, String> {
    if choice.is_empty() || choice == "<none>" || choice == "none" {
        return Ok(String::new());
    }
    let key = std::fs::read_to_string(choice)
        .map(|s| s.trim().to_string())
        .map_err(|e| format!("reading SSH public key {choice}: {e}"))?;
    okd_installconfig::check_ssh_key(&key).map_err(|m| format!("{choice}: {m}"))?;
    Ok(key)
}

/// A pull secret given as JSON or as a file holding it, checked as an image
/// pull secret. The error never repeats the secret.
fn pull_secret(answer: &str) -> Result<String, String> {
    let text = if answer.starts_with('{') {
        answer.to_string()
    } else {
        std::fs::read_to_string(answer)
            .map_err(|e| format!("not JSON, and not a readable file ({e})"))?
            .trim()
            .to_string()
    };
    okd_installconfig::check_pull_secret(&text)?;
    Ok(text)
}

fn ip_address(a: &str) -> Result<String, String> {
    a.parse::<std::net::IpAddr>()
        .map(|_| a.to_string())
        .map_err(|_| format!("{a:?} is not an IP address"))
}

fn resolve(o: &InstallConfigOpts) -> Result<serde_json::Value, AssetError> {
    let p = Prompter {
        tty: std::io::stdin().is_terminal(),
    };
    let ssh = match &o.ssh_key_file {
        Some(f) => read_key(f).map_err(|m| AssetError::Invalid(format!("--ssh-key-file: {m}")))?,
        None if p.tty => pick_ssh_key(&p)?,
        None => String::new(),
    };
    let platform = p.value(
        o.platform.as_deref(),
        "--platform",
        "Platform",
        "none, baremetal, aws",
        |a| okd_installconfig::check_platform(a).map(|()| a.to_string()),
    )?;
    let platform_obj = match platform.as_str() {
        "baremetal" => {
            let vip = |v: &Option<String>, flag: &str, q: &str| {
                if v.is_none() && !p.tty {
                    return Ok(String::new());
                }
                let help = "an address in the machine network";
                p.value(v.as_deref(), flag, q, help, ip_address)
            };
            let api = vip(&o.api_vip, "--api-vip", "API VIP")?;
            let ingress = vip(&o.ingress_vip, "--ingress-vip", "Ingress VIP")?;
            json!({"baremetal": {"apiVIPs": [api], "ingressVIPs": [ingress]}})
        }
        "aws" => {
            let region = if o.region.is_none() && !p.tty {
                String::new()
            } else {
                p.value(
                    o.region.as_deref(),
                    "--region",
                    "Region",
                    "e.g. us-east-1",
                    |a| {
                        if a.is_empty() {
                            Err("region must be specified".to_string())
                        } else {
                            Ok(a.to_string())
                        }
                    },
                )?
            };
            json!({"aws": {"region": region}})
        }
        other => json!({ other: {} }),
    };
    let base_domain = p.value(
        o.base_domain.as_deref(),
        "--base-domain",
        "Base Domain",
        "e.g. example.com",
        |a| okd_installconfig::check_base_domain(a).map(|()| a.to_string()),
    )?;
    let name = p.value(
        o.cluster_name.as_deref(),
        "--cluster-name",
        "Cluster Name",
        "lowercase, e.g. okd",
        |a| okd_installconfig::check_cluster_name(a, &platform).map(|()| a.to_string()),
    )?;
    let pull_secret = match &o.pull_secret_file {
        Some(f) => {
            let text = std::fs::read_to_string(f)
                .map_err(|source| AssetError::Io { action: "reading pull secret", path: f.clone(), source })?;
            okd_installconfig::check_pull_secret(text.trim())
                .map_err(|m| AssetError::Invalid(format!("--pull-secret-file {}: {m}", f.display())))?;
            text.trim().to_string()
        }
        None if p.tty => p.ask(
            "Pull Secret",
            "JSON {\"auths\":...} or a file holding it; not shown",
            true,
            pull_secret,
        )?,
        None => return Err(AssetError::Invalid("no install-config.yaml in the directory and stdin is not a terminal: pass --pull-secret-file".into())),
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

/// The flags of `opts` that contradict `existing` (the directory's
/// install-config.yaml, or the one an earlier run recorded), one line each:
/// `--base-domain other.com (the file has example.com)`. Secrets are never
/// shown: a differing pull secret reads `--pull-secret-file (another pull
/// secret)`. Flags that agree with the file are not listed.
pub(crate) fn contradictions(
    opts: &InstallConfigOpts,
    existing: &okd_installconfig::InstallConfig,
) -> Vec<String> {
    let mut out = Vec::new();
    let mut differs = |flag: &str, given: Option<String>, has: String| {
        if let Some(g) = given
            && g.trim() != has.trim()
        {
            out.push(format!("{flag} {g} (the file has {has:?})"));
        }
    };
    differs(
        "--platform",
        opts.platform.clone(),
        existing.platform_name().to_string(),
    );
    differs(
        "--base-domain",
        opts.base_domain.clone(),
        existing.base_domain.clone(),
    );
    differs(
        "--cluster-name",
        opts.cluster_name.clone(),
        existing.metadata.name.clone(),
    );
    if let Some(aws) = &existing.platform.aws {
        differs("--region", opts.region.clone(), aws.region.clone());
    }
    if let Some(bm) = &existing.platform.baremetal {
        differs("--api-vip", opts.api_vip.clone(), bm.api_vips.join(","));
        differs(
            "--ingress-vip",
            opts.ingress_vip.clone(),
            bm.ingress_vips.join(","),
        );
    }
    let replicas = |p: Option<&okd_installconfig::MachinePool>| {
        p.and_then(|p| p.replicas)
            .map_or("unset".to_string(), |n| n.to_string())
    };
    differs(
        "--control-plane-replicas",
        opts.control_plane_replicas.map(|n| n.to_string()),
        replicas(existing.control_plane.as_ref()),
    );
    differs(
        "--compute-replicas",
        opts.compute_replicas.map(|n| n.to_string()),
        replicas(existing.compute.first()),
    );
    let file_differs = |f: &Option<PathBuf>, has: &str| {
        f.as_ref()
            .is_some_and(|f| std::fs::read_to_string(f).map_or(true, |t| t.trim() != has.trim()))
    };
    if file_differs(&opts.pull_secret_file, existing.pull_secret.expose_secret()) {
        out.push("--pull-secret-file (another pull secret)".to_string());
    }
    if let Some(f) = &opts.ssh_key_file
        && read_key(f).map_or(true, |k| {
            k.trim() != existing.ssh_key.as_deref().unwrap_or("").trim()
        })
    {
        out.push(format!("--ssh-key-file {f} (another key)"));
    }
    if file_differs(
        &opts.additional_trust_bundle_file,
        existing.additional_trust_bundle.as_deref().unwrap_or(""),
    ) {
        out.push("--additional-trust-bundle-file (another bundle)".to_string());
    }
    if let Some(f) = &opts.image_sources_file {
        let same = read_image_sources(f)
            .is_ok_and(|(key, list)| existing.to_json_value().get(&key) == Some(&list));
        if !same {
            out.push(format!("--image-sources-file {}", f.display()));
        }
    }
    out
}

/// Refuses `create install-config` flags that contradict the install-config
/// the directory already has (its `install-config.yaml`, else the one the
/// state file recorded): openshift-install would silently keep the file.
///
/// # Errors
/// The list of contradicting flags and what to do, naming the file.
pub(crate) fn refuse_contradictions(
    dir: &std::path::Path,
    opts: &InstallConfigOpts,
) -> anyhow::Result<()> {
    let file = dir.join(okd_assets::installconfig::INSTALL_CONFIG_FILE);
    let existing = match std::fs::read(&file) {
        // Unparseable files are reported by the load that follows.
        Ok(bytes) => serde_yaml_ng::from_slice(&bytes).ok(),
        Err(_) => okd_assets::InstallFacts::read(dir)?
            .recorded::<okd_assets::installconfig::InstallConfigAsset>()?
            .map(|a| a.config),
    };
    let Some(existing) = existing else {
        return Ok(());
    };
    let c = contradictions(opts, &existing);
    if c.is_empty() {
        return Ok(());
    }
    let (what, fix) = if file.exists() {
        (
            file.display().to_string(),
            "edit the file, or remove it to create a new one",
        )
    } else {
        (
            format!(
                "{} (consumed into {})",
                file.display(),
                okd_assets::store::STATE_FILE
            ),
            "start from a new --dir",
        )
    };
    anyhow::bail!(
        "{what} already exists and these flags contradict it: {}; {fix}",
        c.join("; ")
    )
}
