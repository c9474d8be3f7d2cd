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
    let (bootstrap, masters) = hosts(dir, opts)?;
    check_arguments(&bootstrap, &masters, &opts.ssh_user)?;
    let (keys, bootstrap_key) = keys(dir, opts)?;
    let auth = Auth::new(opts, &keys)?;
    let target = ssh::Target {
        user: opts.ssh_user.clone(),
        host: bootstrap,
        port: opts.port,
        connect_timeout: opts.connect_timeout,
        agent: auth.socket.clone(),
        identity_files: auth.identity_files.clone(),
    };
    let id = gather_id();
    info!("Pulling debug logs from the bootstrap machine");
    let cluster_bundle = pull(dir, &target, &id, &masters, &auth.tried)?;
    // The temporary key file and the agent are no longer needed.
    drop(bootstrap_key);
    drop(auth);
    let bundle_path = repack(dir, &cluster_bundle, &id)?;
    let shown = std::path::absolute(&bundle_path).unwrap_or_else(|_| bundle_path.clone());
    if !opts.skip_analysis {
        log_analysis(&bundle_path)?;
    }
    info!(
        "Bootstrap gather logs captured here {:?}",
        shown.display().to_string()
    );
    Ok(shown)
}

/// The bootstrap host and the masters to gather from: `--bootstrap` and
/// `--master`, else (no `--bootstrap`) the inventory's bootstrap host and,
/// unless `--master` names some, its masters.
///
/// # Errors
/// [`GatherError::NoBootstrap`] when neither names a bootstrap host; an
/// unreadable state file or inventory.
fn hosts(dir: &Path, opts: &GatherOptions) -> Result<(String, Vec<String>), GatherError> {
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
    let masters = match from_inventory {
        Some(h) if opts.masters.is_empty() => h.masters,
        _ => opts.masters.clone(),
    };
    Ok((bootstrap, masters))
}

/// Refuses a bootstrap host, master or user that is not a plain name (they
/// go on an ssh command line and a remote shell command line).
///
/// # Errors
/// [`GatherError::BadArgument`] naming the flag, the value and the rule.
fn check_arguments(bootstrap: &str, masters: &[String], user: &str) -> Result<(), GatherError> {
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
    if !is_user(user) {
        return Err(GatherError::BadArgument {
            flag: "--ssh-user",
            value: user.to_string(),
            rule: "not a user name (letters, digits, '.', '_', '-')",
        });
    }
    Ok(())
}

/// The keys to log in with: each `--key` (a readable regular file), then
/// the installer's bootstrap key, whose temporary file is returned too and
/// must outlive the login.
///
/// # Errors
/// [`GatherError::KeyUnreadable`] for a `--key`; an unreadable state file;
/// the temporary key file not written.
fn keys(
    dir: &Path,
    opts: &GatherOptions,
) -> Result<(Vec<ssh::Key>, Option<tempfile::NamedTempFile>), GatherError> {
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
    Ok((keys, bootstrap_key))
}

/// How ssh authenticates: the agent it is forwarded, identity files beside
/// it, and what was offered (for the error when every key is refused).
struct Auth {
    /// The agent's socket (ours, or the user's own).
    socket: Option<PathBuf>,
    /// Keys given as identity files (beside the user's own agent).
    identity_files: Vec<PathBuf>,
    /// What was offered, in words.
    tried: Vec<String>,
    /// Our private agent, stopped on drop.
    _own_agent: Option<ssh::Agent>,
}

impl Auth {
    /// Our agent with exactly `keys`; the user's own (`SSH_AUTH_SOCK`) only
    /// when no `--key` was given (their keys log in to the masters), with
    /// `keys` beside it as identity files. With no `--key` our agent also
    /// gets the user's default keys (as openshift-install loads `~/.ssh`);
    /// one `ssh-add` refuses (a passphrase) is skipped.
    ///
    /// # Errors
    /// The agent not starting, or refusing one of `keys`.
    fn new(opts: &GatherOptions, keys: &[ssh::Key]) -> Result<Auth, GatherError> {
        let user_agent = std::env::var_os("SSH_AUTH_SOCK")
            .filter(|s| !s.is_empty())
            .map(PathBuf::from);
        let mut auth = Auth {
            socket: None,
            identity_files: Vec::new(),
            tried: Vec::new(),
            _own_agent: None,
        };
        match user_agent {
            Some(sock) if opts.keys.is_empty() => {
                auth.tried
                    .push("the keys of your ssh-agent (SSH_AUTH_SOCK)".into());
                for k in keys {
                    auth.identity_files.push(k.path.clone());
                    auth.tried.push(k.label.clone());
                }
                auth.socket = Some(sock);
            }
            _ => {
                let agent = ssh::Agent::start()?;
                for k in keys {
                    agent.add_key(k)?;
                    auth.tried.push(k.label.clone());
                }
                if opts.keys.is_empty() {
                    for k in default_keys() {
                        match agent.add_key(&k) {
                            Ok(()) => auth.tried.push(k.label.clone()),
                            Err(e) => debug!("Skipping {}: {e}", k.label),
                        }
                    }
                }
                auth.socket = Some(agent.socket().to_path_buf());
                auth._own_agent = Some(agent);
            }
        }
        if auth.tried.is_empty() {
            auth.tried.push(
                "none (no --key, no bootstrap key in the state file, no ~/.ssh/id_* key)".into(),
            );
        }
        Ok(auth)
    }
}

/// Re-packs the bootstrap host's bundle as `<dir>/log-bundle-<id>.tar.gz`
/// ([`bundle::repack`]), warning about each file left out; returns its path.
///
/// # Errors
/// The bundle not readable or not written.
fn repack(dir: &Path, cluster_bundle: &Path, id: &str) -> Result<PathBuf, GatherError> {
    let top = format!("log-bundle-{id}");
    let bundle_path = dir.join(format!("{top}.tar.gz"));
    let repacked = bundle::repack(cluster_bundle, &bundle_path, &top)?;
    debug!(
        "Re-packed {} files into {}",
        repacked.files,
        bundle_path.display()
    );
    for s in &repacked.skipped {
        warn!("Left out of the bundle: {s} (a link, a device, an unsafe path or a credential)");
    }
    Ok(bundle_path)
}

/// Logs what the bundle's service records say failed ([`analyze`]).
///
/// # Errors
/// The bundle's service records not readable.
fn log_analysis(bundle_path: &Path) -> Result<(), GatherError> {
    let (records, journals) = bundle::analysis_files(bundle_path)?;
    for (level, line) in analyze::findings_with_journals(&records, &journals) {
        match level {
            analyze::Level::Error => error!("{line}"),
            analyze::Level::Info => info!("{line}"),
        }
    }
    Ok(())
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

/// The installer's bootstrap SSH private key from `<dir>/.openshift_install_state.json`
/// (`*tls.BootstrapSSHKeyPair`), in a 0600 temporary file removed on drop;
/// `None` when there is no state file or it has no such key.
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
    let command = gather_command(target, id, masters);
    debug!("Running {command:?} on {}", target.display());
    let run = run_logged(target, &command)?;
    if !run.status.success() {
        return Err(script_failure(target, &run, tried));
    }
    download(dir, target, id)
}

/// The remote command line: [`GATHER_SCRIPT`] `--id <id> <masters…>`,
/// through `sudo -n` (keeping the forwarded agent) unless the user is root.
fn gather_command(target: &ssh::Target, id: &str, masters: &[String]) -> String {
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
    command
}

/// How a remote command ended: its status, the last lines of its output
/// and ssh's own messages.
struct Finished {
    status: std::process::ExitStatus,
    /// The last 16-64 KiB of stdout.
    out_tail: String,
    /// Everything on stderr.
    err_text: String,
}

/// Runs `command` on `target`; its output goes to the debug log line by
/// line, as openshift-install does, and ssh's own messages are kept for the
/// error.
///
/// # Errors
/// [`GatherError::Program`] when ssh does not start or cannot be waited for.
fn run_logged(target: &ssh::Target, command: &str) -> Result<Finished, GatherError> {
    let mut child = target
        .command(command)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|source| GatherError::Program {
            program: "ssh",
            source,
        })?;
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
    Ok(Finished {
        status,
        out_tail,
        err_text,
    })
}

/// The error for a failed gather command: ssh's own failure (exit 255:
/// every key refused, naming what was `tried`, or the host unreachable),
/// else the script's, with the last lines it wrote.
fn script_failure(target: &ssh::Target, run: &Finished, tried: &[String]) -> GatherError {
    let code = run.status.code().unwrap_or(-1);
    if code == 255 {
        let detail = ssh::last_lines(&run.err_text, 2);
        return match ssh::classify(&run.err_text) {
            ssh::SshFailure::Auth => GatherError::Auth {
                target: target.display(),
                keys: tried.join(", "),
            },
            ssh::SshFailure::Connect | ssh::SshFailure::Other => GatherError::Connect {
                target: target.display(),
                detail,
            },
        };
    }
    GatherError::Remote {
        target: target.display(),
        command: GATHER_SCRIPT.to_string(),
        status: code,
        detail: ssh::last_lines(&format!("{}{}", run.out_tail, run.err_text), 3),
    }
}

/// Copies `~/log-bundle-<id>.tar.gz` from `target` into
/// `<dir>/cluster-log-bundle-<id>.tar.gz` (0600, atomically) and returns its
/// path.
///
/// # Errors
/// [`GatherError::Download`] when the copy fails or ssh reports an error;
/// the file not written.
fn download(dir: &Path, target: &ssh::Target, id: &str) -> Result<PathBuf, GatherError> {
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
