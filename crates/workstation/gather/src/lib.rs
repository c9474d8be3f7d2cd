//! `okd-install gather bootstrap`: the bootstrap log bundle of a failing
//! install, as openshift-install makes it (openshift/installer
//! `cmd/openshift-install/gather.go`, `pkg/gather/ssh`, `pkg/gather/service`).
//!
//! 1. Log in to `<user>@<bootstrap>:22` (user `core`) over SSH with the
//!    `--key` files plus the installer's bootstrap SSH key from
//!    `.openshift_install_state.json` (written to a 0600 temporary file and
//!    removed when the run ends), held in a private ssh-agent of the system
//!    OpenSSH client that is forwarded, so the bootstrap host can log in to
//!    the masters.
//! 2. Run `/usr/local/bin/installer-gather.sh --id <YYYYmmddHHMMSS>
//!    <masters…>` there (through `sudo -n` unless the user is root); the
//!    script is the one bootstrap.ign installs (crate okd-bootstrap-files).
//! 3. Pull `~/log-bundle-<id>.tar.gz` into `<dir>/cluster-log-bundle-<id>.tar.gz`
//!    and re-pack it as `<dir>/log-bundle-<id>.tar.gz` ([`bundle`]); both 0600,
//!    written atomically.
//! 4. Unless `--skipAnalysis`, log what the service records say failed
//!    ([`analyze`]), then `Bootstrap gather logs captured here "<path>"`.

pub mod analyze;
pub mod bundle;
mod error;
mod ssh;

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use error::GatherError;
use tracing::{debug, error, info, warn};

/// The script bootstrap.ign installs and `gather bootstrap` runs.
pub const GATHER_SCRIPT: &str = "/usr/local/bin/installer-gather.sh";

/// Options of `gather bootstrap`.
#[derive(Debug, Clone)]
pub struct GatherOptions {
    /// `--bootstrap`: host name or address of the bootstrap host.
    pub bootstrap: Option<String>,
    /// `--master` (repeatable): the control-plane hosts, passed to
    /// installer-gather.sh (which asks the API when there are none).
    pub masters: Vec<String>,
    /// `--key` (repeatable): private key files for the agent.
    pub keys: Vec<PathBuf>,
    /// `--skipAnalysis`.
    pub skip_analysis: bool,
    /// `--ssh-user`: who logs in (default `core`, the user of every
    /// bootstrap.ign and master.ign).
    pub ssh_user: String,
    /// SSH port (22).
    pub port: u16,
    /// How long one TCP connect may take (`ssh -o ConnectTimeout`).
    pub connect_timeout: Duration,
}

impl Default for GatherOptions {
    fn default() -> Self {
        GatherOptions {
            bootstrap: None,
            masters: Vec::new(),
            keys: Vec::new(),
            skip_analysis: false,
            ssh_user: "core".to_string(),
            port: 22,
            connect_timeout: Duration::from_secs(10),
        }
    }
}

/// A host name or IP address: letters, digits, `.`, `-`, `:` (IPv6), `_`;
/// not starting with `-` (it goes on an ssh command line and a remote shell
/// command line).
fn is_host(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && !s.starts_with('-')
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b".-:_".contains(&b))
}

/// A POSIX user name: letters, digits, `.`, `_`, `-`, not starting with `-`.
fn is_user(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 32
        && !s.starts_with('-')
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
}

const HOST_RULE: &str = "not a host name or IP address (letters, digits, '.', '-', ':', '_')";

/// The gather ID: local time as `YYYYmmddHHMMSS` (Go's `20060102150405`),
/// UTC when the local offset cannot be known.
fn gather_id() -> String {
    let now = time::OffsetDateTime::now_local().unwrap_or_else(|_| time::OffsetDateTime::now_utc());
    let f = time::macros::format_description!("[year][month][day][hour][minute][second]");
    now.format(&f).unwrap_or_else(|_| "00000000000000".into())
}

/// `okd-install gather bootstrap --dir dir`: returns the path of
/// `<dir>/log-bundle-<id>.tar.gz` after logging the analysis (unless
/// skipped) and where the bundle is.
///
/// # Errors
/// [`GatherError`]: no `--bootstrap` (`must provide bootstrap host
/// address`), a bad host or key, the bootstrap host unreachable or refusing
/// every key (naming the host and the keys), the script failing there, the
/// bundle not arriving or not readable.
pub fn gather_bootstrap(dir: &Path, opts: &GatherOptions) -> Result<PathBuf, GatherError> {
    let from_inventory = if opts.bootstrap.as_deref().is_none_or(str::is_empty) {
        inventory_hosts(dir)?
    } else {
        None
    };
    let bootstrap = match (&from_inventory, opts.bootstrap.as_deref()) {
        (_, Some(b)) if !b.is_empty() => b.to_string(),
        (Some(h), _) => {
            info!(
                "Bootstrap host {} ({}) from {}",
                h.bootstrap,
                h.bootstrap_name,
                okd_hosts::BASTION_CONFIG_FILE
            );
            h.bootstrap.clone()
        }
        _ => return Err(GatherError::NoBootstrap),
    };
    let bootstrap = bootstrap.as_str();
    let masters = match &from_inventory {
        Some(h) if opts.masters.is_empty() => h.masters.clone(),
        _ => opts.masters.clone(),
    };
    if !is_host(bootstrap) {
        return Err(GatherError::BadArgument {
            flag: "--bootstrap",
            value: bootstrap.to_string(),
            rule: HOST_RULE,
        });
    }
    if let Some(m) = masters.iter().find(|m| !is_host(m)) {
        return Err(GatherError::BadArgument {
            flag: "--master",
            value: m.clone(),
            rule: HOST_RULE,
        });
    }
    if !is_user(&opts.ssh_user) {
        return Err(GatherError::BadArgument {
            flag: "--ssh-user",
            value: opts.ssh_user.clone(),
            rule: "not a user name (letters, digits, '.', '_', '-')",
        });
    }

    // The keys: each --key, then the installer's bootstrap key.
    let mut keys = Vec::new();
    for k in &opts.keys {
        std::fs::metadata(k)
            .and_then(|m| {
                if m.is_file() {
                    Ok(())
                } else {
                    Err(std::io::Error::other("not a regular file"))
                }
            })
            .and_then(|()| std::fs::File::open(k).map(drop))
            .map_err(|source| GatherError::KeyUnreadable {
                path: k.clone(),
                source,
            })?;
        keys.push(ssh::Key {
            path: k.clone(),
            label: k.display().to_string(),
        });
    }
    let bootstrap_key = bootstrap_key_file(dir)?;
    if let Some(f) = &bootstrap_key {
        keys.push(ssh::Key {
            path: f.path().to_path_buf(),
            label: format!(
                "the installer's bootstrap SSH key (from {})",
                okd_assets::store::STATE_FILE
            ),
        });
    }

    // The agent: ours with exactly these keys; the user's own only when no
    // --key was given (their keys log in to the masters), with the
    // bootstrap key beside it as an identity file.
    let user_agent = std::env::var_os("SSH_AUTH_SOCK")
        .filter(|s| !s.is_empty())
        .map(PathBuf::from);
    let mut tried: Vec<String> = Vec::new();
    let mut identity_files = Vec::new();
    let mut own_agent = None;
    let agent_socket = match user_agent {
        Some(sock) if opts.keys.is_empty() => {
            tried.push("the keys of your ssh-agent (SSH_AUTH_SOCK)".into());
            for k in &keys {
                identity_files.push(k.path.clone());
                tried.push(k.label.clone());
            }
            Some(sock)
        }
        _ => {
            let agent = ssh::Agent::start()?;
            for k in &keys {
                agent.add_key(k)?;
                tried.push(k.label.clone());
            }
            if opts.keys.is_empty() {
                // No --key: the user's default keys too, as openshift-install
                // loads ~/.ssh; one ssh-add refuses (a passphrase) is skipped.
                for k in default_keys() {
                    match agent.add_key(&k) {
                        Ok(()) => tried.push(k.label.clone()),
                        Err(e) => debug!("Skipping {}: {e}", k.label),
                    }
                }
            }
            let sock = agent.socket().to_path_buf();
            own_agent = Some(agent);
            Some(sock)
        }
    };
    if tried.is_empty() {
        tried
            .push("none (no --key, no bootstrap key in the state file, no ~/.ssh/id_* key)".into());
    }

    let target = ssh::Target {
        user: opts.ssh_user.clone(),
        host: bootstrap.to_string(),
        port: opts.port,
        connect_timeout: opts.connect_timeout,
        agent: agent_socket,
        identity_files,
    };
    let id = gather_id();
    info!("Pulling debug logs from the bootstrap machine");
    let cluster_bundle = pull(dir, &target, &id, &masters, &tried)?;
    // The temporary key file and the agent are no longer needed.
    drop(bootstrap_key);
    drop(own_agent);

    let top = format!("log-bundle-{id}");
    let bundle_path = dir.join(format!("{top}.tar.gz"));
    let repacked = bundle::repack(&cluster_bundle, &bundle_path, &top)?;
    debug!(
        "Re-packed {} files into {}",
        repacked.files,
        bundle_path.display()
    );
    for s in &repacked.skipped {
        warn!("Left out of the bundle: {s} (a link, a device, an unsafe path or a credential)");
    }
    let shown = std::path::absolute(&bundle_path).unwrap_or_else(|_| bundle_path.clone());
    if !opts.skip_analysis {
        let records = bundle::service_records(&bundle_path)?;
        for (level, line) in analyze::findings(&records) {
            match level {
                analyze::Level::Error => error!("{line}"),
                analyze::Level::Info => info!("{line}"),
            }
        }
    }
    info!(
        "Bootstrap gather logs captured here {:?}",
        shown.display().to_string()
    );
    Ok(shown)
}

/// The default private keys of `$HOME/.ssh` that exist (openshift-install
/// loads the user's keys when none are given).
fn default_keys() -> Vec<ssh::Key> {
    let Some(home) = std::env::var_os("HOME").filter(|h| !h.is_empty()) else {
        return Vec::new();
    };
    ["id_ed25519", "id_ecdsa", "id_rsa"]
        .iter()
        .map(|n| Path::new(&home).join(".ssh").join(n))
        .filter(|p| p.is_file())
        .map(|p| ssh::Key {
            label: p.display().to_string(),
            path: p,
        })
        .collect()
}

/// The installer's bootstrap SSH private key from `<dir>/.openshift_install_state.json`
/// (`*tls.BootstrapSSHKeyPair`), in a 0600 temporary file removed on drop;
/// `None` when there is no state file or it has no such key.
/// The hosts `gather bootstrap` reaches when no `--bootstrap` is given:
/// the bootstrap host's address and the control-plane addresses from the
/// inventory (`agent-config.yaml` + `bastion-config.yaml` beside the assets).
struct InventoryHosts {
    bootstrap: String,
    bootstrap_name: String,
    masters: Vec<String>,
}

/// Reads the inventory of `dir` for [`InventoryHosts`]: `None` when the
/// directory has no `bastion-config.yaml` or no install-config (the
/// cluster's name and domain: recorded, else `install-config.yaml`, read
/// through [`okd_assets::InstallFacts`]), or the inventory names no
/// bootstrap host.
///
/// # Errors
/// [`GatherError::State`] for an unreadable state file,
/// [`GatherError::Hosts`] for inventory files that do not load.
fn inventory_hosts(dir: &Path) -> Result<Option<InventoryHosts>, GatherError> {
    if !dir.join(okd_hosts::BASTION_CONFIG_FILE).exists() {
        return Ok(None);
    }
    let Some(ic) = okd_assets::InstallFacts::read(dir)
        .and_then(|f| f.install_config())
        .map_err(GatherError::State)?
    else {
        return Ok(None);
    };
    let inv = okd_hosts::Inventory::load(dir, &ic.metadata.name, &ic.base_domain)
        .map_err(GatherError::Hosts)?;
    let Some(b) = inv.role(okd_hosts::Role::Bootstrap).next() else {
        return Ok(None);
    };
    Ok(Some(InventoryHosts {
        bootstrap: b.address.to_string(),
        bootstrap_name: b.fqdn.clone(),
        masters: inv
            .role(okd_hosts::Role::Master)
            .map(|n| n.address.to_string())
            .collect(),
    }))
}

fn bootstrap_key_file(dir: &Path) -> Result<Option<tempfile::NamedTempFile>, GatherError> {
    use std::io::Write as _;
    let facts = okd_assets::InstallFacts::read(dir).map_err(GatherError::State)?;
    if !facts.has_state() {
        debug!("No state file in {}: no bootstrap SSH key", dir.display());
        return Ok(None);
    }
    let Some(pair) = facts
        .recorded::<okd_assets::tls::BootstrapSshKeyPair>()
        .map_err(GatherError::State)?
    else {
        return Ok(None);
    };
    let to_err = GatherError::TempKey;
    // tempfile creates it 0600 in the system's temporary directory.
    let mut f = tempfile::Builder::new()
        .prefix("okd-bootstrap-ssh-")
        .tempfile()
        .map_err(to_err)?;
    f.write_all(&pair.private).map_err(to_err)?;
    f.flush().map_err(to_err)?;
    Ok(Some(f))
}

/// Runs the gather script on the bootstrap host and pulls its bundle into
/// `<dir>/cluster-log-bundle-<id>.tar.gz`.
fn pull(
    dir: &Path,
    target: &ssh::Target,
    id: &str,
    masters: &[String],
    tried: &[String],
) -> Result<PathBuf, GatherError> {
    let mut command = String::new();
    if target.user != "root" {
        command += "sudo -n --preserve-env=SSH_AUTH_SOCK ";
    }
    command += GATHER_SCRIPT;
    command += &format!(" --id {id}");
    for m in masters {
        command += " ";
        command += m;
    }
    debug!("Running {command:?} on {}", target.display());
    let mut child = target
        .command(&command)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|source| GatherError::Program {
            program: "ssh",
            source,
        })?;
    // The script's output goes to the debug log line by line, as
    // openshift-install does; ssh's own messages are kept for the error.
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let out_thread = std::thread::spawn(move || {
        let mut tail = String::new();
        if let Some(s) = stdout {
            use std::io::BufRead as _;
            for line in std::io::BufReader::new(s).lines().map_while(Result::ok) {
                debug!("{line}");
                tail.push_str(&line);
                tail.push('\n');
                if tail.len() > 64 * 1024 {
                    tail.drain(..tail.len() - 16 * 1024);
                }
            }
        }
        tail
    });
    let mut err_text = String::new();
    if let Some(mut s) = stderr {
        let _ = s.read_to_string(&mut err_text);
    }
    let out_tail = out_thread.join().unwrap_or_default();
    let status = child.wait().map_err(|source| GatherError::Program {
        program: "ssh",
        source,
    })?;
    for line in err_text.lines() {
        debug!("{line}");
    }
    if !status.success() {
        let code = status.code().unwrap_or(-1);
        if code == 255 {
            let detail = ssh::last_lines(&err_text, 2);
            return Err(match ssh::classify(&err_text) {
                ssh::SshFailure::Auth => GatherError::Auth {
                    target: target.display(),
                    keys: tried.join(", "),
                },
                ssh::SshFailure::Connect | ssh::SshFailure::Other => GatherError::Connect {
                    target: target.display(),
                    detail,
                },
            });
        }
        return Err(GatherError::Remote {
            target: target.display(),
            command: GATHER_SCRIPT.to_string(),
            status: code,
            detail: ssh::last_lines(&format!("{out_tail}{err_text}"), 3),
        });
    }

    let remote = format!("log-bundle-{id}.tar.gz");
    let local = dir.join(format!("cluster-log-bundle-{id}.tar.gz"));
    okd_fs::write_atomic_with(&local, bundle::BUNDLE_MODE, |file| {
        let mut child = target
            .command(&format!("cat -- {remote}"))
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .map_err(|source| GatherError::Program {
                program: "ssh",
                source,
            })?;
        let copied = child.stdout.take().map(|mut s| std::io::copy(&mut s, file));
        let mut err_text = String::new();
        if let Some(mut s) = child.stderr.take() {
            let _ = s.read_to_string(&mut err_text);
        }
        let status = child.wait().map_err(|source| GatherError::Program {
            program: "ssh",
            source,
        })?;
        let failed = |detail: String| GatherError::Download {
            target: target.display(),
            remote: format!("~{}/{remote}", target.user),
            detail,
        };
        match copied {
            Some(Ok(_)) => {}
            Some(Err(e)) => return Err(failed(e.to_string())),
            None => return Err(failed("no output".into())),
        }
        if !status.success() {
            return Err(failed(ssh::last_lines(&err_text, 2)));
        }
        Ok(())
    })?;
    Ok(local)
}
