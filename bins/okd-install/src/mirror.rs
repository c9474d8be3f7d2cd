//! `okd-install mirror ...`: argument parsing and logging around `okd-mirror`.

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use clap::{Args, Subcommand};
use okd_types::release::ReleaseTarget;
use tracing::{info, warn};

/// `okd-install mirror`.
#[derive(Subcommand, Debug)]
pub enum MirrorCmd {
    /// The mirror registry (distribution, `docker-registry`).
    #[command(subcommand)]
    Registry(RegistryCmd),
}

/// `okd-install mirror registry`.
#[derive(Subcommand, Debug)]
pub enum RegistryCmd {
    /// Creates the registry's CA, serving certificate, htpasswd user and
    /// config.yml, and adds its login to the pull secret and its CA to
    /// install-config.yaml's additionalTrustBundle.
    Init(InitArgs),
}

/// Options of `mirror registry init`.
#[derive(Args, Debug)]
pub struct InitArgs {
    /// DNS name of the registry (repeatable); the first one names it in the pull secret.
    #[arg(long = "hostname")]
    hostnames: Vec<String>,
    /// IP address of the registry (repeatable); the first one is its listen address.
    #[arg(long = "address")]
    addresses: Vec<IpAddr>,
    /// Port the registry listens on.
    #[arg(long, default_value_t = 5000)]
    port: u16,
    /// The registry user.
    #[arg(long, default_value = "okd")]
    username: String,
    /// File holding the password (first line); default: a generated one, printed once.
    #[arg(long = "password-file")]
    password_file: Option<PathBuf>,
    /// Where to write the registry files (default: <dir>/mirror-registry).
    #[arg(long = "output-dir")]
    output_dir: Option<PathBuf>,
}

fn read_password(path: &Path) -> anyhow::Result<String> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading the password file {}", path.display()))?;
    Ok(text.lines().next().unwrap_or_default().to_string())
}

/// Runs a `mirror` subcommand for the asset directory `dir`.
pub fn run(dir: &Path, cmd: &MirrorCmd, target: ReleaseTarget) -> anyhow::Result<()> {
    let MirrorCmd::Registry(RegistryCmd::Init(a)) = cmd;
    let password = a.password_file.as_deref().map(read_password).transpose()?;
    let opts = okd_mirror::registry::InitOptions {
        dir: dir.to_path_buf(),
        output_dir: a.output_dir.clone(),
        hostnames: a.hostnames.clone(),
        addresses: a.addresses.clone(),
        port: a.port,
        username: a.username.clone(),
        password,
        load_options: okd_installconfig::LoadOptions {
            target,
            host_fips: std::fs::read_to_string("/proc/sys/crypto/fips_enabled")
                .is_ok_and(|s| s.trim() == "1"),
        },
    };
    let out = okd_mirror::registry::init(&opts)?;
    for w in &out.warnings {
        warn!("{w}");
    }
    info!(
        "Mirror registry {} written to {} ({} CA)",
        out.registry,
        out.output_dir.display(),
        if out.ca_reused { "existing" } else { "new" }
    );
    info!(
        "Start it with: docker-registry serve {}",
        out.config.display()
    );
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
            dir.display(),
            out.pull_secret.display(),
            out.ca_cert.display()
        ),
    }
    if out.password_generated {
        println!(
            "Generated password for user {} (shown once, also in {}): {}",
            out.username,
            out.pull_secret.display(),
            out.password
        );
    }
    Ok(())
}
