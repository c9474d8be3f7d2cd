//! `okd-install mirror registry init | start | stop`: the steps and the
//! messages of each command (the binary only parses the options).

use std::io::Write;
use std::path::{Path, PathBuf};

use tracing::{info, warn};

use crate::{MirrorError, daemon, registry};

/// Options of `mirror registry init`: what to set up, plus where the
/// password comes from and whether to start the registry.
#[derive(Debug, Clone)]
pub struct Init {
    /// What to set up (`password` and `load_options.host_fips` are filled in
    /// by [`init`] from `password_file` and the host).
    pub setup: registry::InitOptions,
    /// File whose first line is the password (default: generated).
    pub password_file: Option<PathBuf>,
    /// Start the registry afterwards with this program.
    pub start: Option<PathBuf>,
}

fn read_password(path: &Path) -> Result<String, MirrorError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| MirrorError::io("reading the password file", path, e))?;
    Ok(text.lines().next().unwrap_or_default().to_string())
}

/// Runs `mirror registry init`: [`registry::init`], its messages, the
/// generated password (once) on `stdout`, and [`start`] when asked.
///
/// # Errors
/// Those of [`registry::init`] and [`start`]; writing to `stdout`.
pub fn init(c: &Init, stdout: &mut dyn Write) -> Result<(), MirrorError> {
    let mut opts = c.setup.clone();
    if let Some(p) = c.password_file.as_deref() {
        opts.password = Some(read_password(p)?.into());
    }
    opts.load_options.host_fips =
        std::fs::read_to_string("/proc/sys/crypto/fips_enabled").is_ok_and(|s| s.trim() == "1");
    let out = registry::init(&opts)?;
    for w in &out.warnings {
        warn!("{w}");
    }
    info!(
        "Mirror registry {} written to {} ({} CA)",
        out.registry,
        out.output_dir.display(),
        if out.ca_reused { "existing" } else { "new" }
    );
    if out.login_kept {
        info!(
            "Kept the existing login of user {} (pass --rotate-password to replace it)",
            out.username
        );
    } else if c.setup.rotate_password {
        info!(
            "New password for user {} in htpasswd and {}; the registry reads htpasswd again on its next request",
            out.username,
            out.pull_secret.display()
        );
    }
    if c.start.is_none() {
        info!(
            "Start it with: okd-install mirror registry start --dir {} (or docker-registry serve {})",
            okd_fs::shell_path(&c.setup.dir),
            okd_fs::shell_path(&out.config)
        );
    }
    info!(
        "Clients trust it with its CA {} (e.g. curl --cacert)",
        out.ca_cert.display()
    );
    match &out.install_config {
        Some(p) => info!(
            "Added {} to pullSecret and the CA to additionalTrustBundle in {}",
            out.registry,
            p.display()
        ),
        None => info!(
            "No install-config.yaml in {}: pull secret with the login is {}, CA is {}",
            c.setup.dir.display(),
            out.pull_secret.display(),
            out.ca_cert.display()
        ),
    }
    if out.password_generated {
        // Never the password itself: terminals, CI logs and recordings
        // keep what is printed (issue #42 item 2).
        writeln!(
            stdout,
            "Generated a password for user {}: it is in {} (0600; auths.\"{}\".auth, base64 of user:password), never printed",
            out.username,
            out.pull_secret.display(),
            out.registry,
        )
        .map_err(|e| MirrorError::io("writing", Path::new("<stdout>"), e))?;
    }
    if let Some(program) = &c.start {
        start(&c.setup.dir, Some(&out.output_dir), program)?;
    }
    Ok(())
}

fn registry_dir(dir: &Path, output_dir: Option<&Path>) -> PathBuf {
    output_dir.map_or_else(|| dir.join(registry::DEFAULT_OUTPUT_DIR), Path::to_path_buf)
}

/// Runs `mirror registry start` ([`daemon::start`]) with its messages.
///
/// # Errors
/// Those of [`daemon::start`].
pub fn start(dir: &Path, output_dir: Option<&Path>, program: &Path) -> Result<(), MirrorError> {
    let s = daemon::start(&registry_dir(dir, output_dir), program)?;
    if s.new {
        info!(
            "Mirror registry running on {} (PID {}), log {}",
            s.addr,
            s.pid,
            s.log.display()
        );
    } else {
        info!(
            "Mirror registry already running on {} (PID {})",
            s.addr, s.pid
        );
    }
    info!(
        "Stop it with: okd-install mirror registry stop --dir {}",
        okd_fs::shell_path(dir)
    );
    Ok(())
}

/// Runs `mirror registry stop` ([`daemon::stop`]) with its messages.
///
/// # Errors
/// Those of [`daemon::stop`].
pub fn stop(dir: &Path, output_dir: Option<&Path>, program: &Path) -> Result<(), MirrorError> {
    let reg = registry_dir(dir, output_dir);
    match daemon::stop(&reg, program)? {
        Some(pid) => info!("Stopped the mirror registry (PID {pid})"),
        None => info!("No mirror registry running from {}", reg.display()),
    }
    Ok(())
}
