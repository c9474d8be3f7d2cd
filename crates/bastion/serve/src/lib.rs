//! `okd-install serve`: the bastion layer of a user-provisioned install in
//! one process, and `create bastion-configs`, the same layer as files for
//! real daemons. The binary parses the command line and calls [`serve`],
//! [`control_request`] or [`create_bastion_configs`].
//!
//! From the asset directory (after `create ignition-configs`) plus
//! `agent-config.yaml` and `bastion-config.yaml` it runs, on the bastion's
//! listen address:
//!
//! | port (default) | service |
//! | --- | --- |
//! | 53 udp+tcp | DNS, authoritative for `<cluster>.<baseDomain>` and the reverse zones, the rest forwarded |
//! | 6443, 22623, 80, 443 | the load balancer (bootstrap + masters; workers, or masters, for ingress) |
//! | 22625 | our machine-config server over TLS, a backend of 22623 |
//! | 8080 | Ignition files, OS images, PXE scripts |
//! | 9000 | status page (`/`), `/status` JSON, `/metrics` (Prometheus), `/healthz` |
//!
//! and a control socket `<dir>/.okd-serve.sock` for `serve status` and
//! `serve remove-bootstrap`. Every port is bound before anything is served,
//! so a port in use stops the start with an error naming it. A removal of
//! the bootstrap is recorded in `<dir>/`[`BOOTSTRAP_REMOVED_FILE`] and kept
//! by every later serve until [`restore_bootstrap`].

mod app;
mod cluster;
mod control;
mod dashboard;
mod error;
mod inputs;
mod run;
mod status;

use std::path::Path;

use crate::error::Context as _;
use okd_hosts::Inventory;
use okd_types::release::ReleaseTarget;
use tracing::{info, warn};

/// What a served directory needs besides its hosts: the cluster's name and
/// base domain and the target release, read through
/// [`okd_assets::InstallFacts`] (the state file that `create` wrote, or
/// `install-config.yaml` when no step consumed it yet).
#[derive(Debug, Clone)]
pub(crate) struct ClusterInfo {
    /// `metadata.name`.
    pub(crate) name: String,
    /// `baseDomain`.
    pub(crate) base_domain: String,
    /// The release the assets were made for.
    pub(crate) target: Option<ReleaseTarget>,
}

impl ClusterInfo {
    /// Reads the install of `dir` ([`okd_assets::InstallFacts`]).
    ///
    /// # Errors
    /// When neither the state file nor `install-config.yaml` names the
    /// cluster, or either cannot be read (the error names the file).
    pub(crate) fn load(dir: &Path) -> Result<ClusterInfo, crate::ServeError> {
        let facts = okd_assets::InstallFacts::read(dir)?;
        let config = facts.require_install_config()?;
        Ok(ClusterInfo {
            name: config.metadata.name,
            base_domain: config.base_domain,
            target: facts.target()?,
        })
    }

    /// Whether DNS carries the etcd A and SRV records (releases ≤ 4.5).
    pub(crate) fn etcd_records(&self) -> bool {
        self.target
            .as_ref()
            .is_some_and(ReleaseTarget::wants_etcd_srv_records)
    }
}

/// Loads the cluster info and the hosts of `dir`.
pub(crate) fn load(dir: &Path) -> Result<(ClusterInfo, Inventory), crate::ServeError> {
    let info = ClusterInfo::load(dir)?;
    let inv = Inventory::load(dir, &info.name, &info.base_domain)
        .with_context(|| format!("reading the hosts of {}", dir.display()))?;
    Ok((info, inv))
}

/// `okd-install create bastion-configs`: writes the files of
/// [`okd_bastion::bastion_configs`] under `<dir>/bastion/` (atomically, file
/// by file) and logs where.
pub fn create_bastion_configs(dir: &Path) -> Result<(), crate::ServeError> {
    create_bastion_configs_with(dir, okd_bastion::bastion_configs)
}

/// [`create_bastion_configs`] with the zones' SOA serial given, as
/// [`okd_bastion::bastion_configs_with_serial`] (tests pin the clock this way).
pub fn create_bastion_configs_with_serial(
    dir: &Path,
    serial: u32,
) -> Result<(), crate::ServeError> {
    create_bastion_configs_with(dir, |inv, etcd| {
        okd_bastion::bastion_configs_with_serial(inv, etcd, serial)
    })
}

/// Writes the files `make` gives for the inventory of `dir` under
/// `<dir>/bastion/` and removes the stale ones.
fn create_bastion_configs_with(
    dir: &Path,
    make: impl FnOnce(&Inventory, bool) -> Vec<okd_bastion::GeneratedFile>,
) -> Result<(), crate::ServeError> {
    let (info, inv) = load(dir)?;
    let files = make(&inv, info.etcd_records());
    let root = dir.join("bastion");
    okd_bastion::configs::write_generated(&root, &files)
        .with_context(|| format!("writing {}", root.display()))?;
    let removed = okd_bastion::configs::remove_stale(&root, &files)
        .with_context(|| format!("removing stale files from {}", root.display()))?;
    for path in &removed {
        warn!(
            "Removed {}: its host, MAC or zone is no longer in the inventory",
            root.join(path).display()
        );
    }
    info!(
        "Bastion configs created in: {} ({} files: haproxy, keepalived, dnsmasq, BIND, CoreDNS, PXE)",
        root.display(),
        files.len()
    );
    Ok(())
}

/// `okd-install serve status|remove-bootstrap`: one request to the running
/// server of `dir`, printed on stdout.
///
/// # Errors
/// [`ControlError`] as [`control_reply`] returns it.
pub fn control_request(dir: &Path, what: &str) -> Result<(), crate::ServeError> {
    let reply = control_reply(dir, what)?;
    print!("{reply}");
    Ok(())
}

pub use error::{BoxError, ServeError};
/// The control socket's protocol and clients, and the record of the
/// bootstrap's removal, from okd-serve-api.
pub use okd_serve_api::{
    BOOTSTRAP_REMOVED_FILE, ControlError, control_reply, control_reply_async, remove_bootstrap,
};

/// `okd-install serve restore-bootstrap`: undoes a recorded removal of the
/// bootstrap (deletes `<dir>/`[`BOOTSTRAP_REMOVED_FILE`]) so the next serve
/// serves bootstrap.ign and balances to the bootstrap again; returns the
/// text to print.
///
/// # Errors
/// A serve is running for `dir` (stop it first), or the file cannot be deleted.
pub fn restore_bootstrap(dir: &Path) -> Result<String, crate::ServeError> {
    okd_serve_api::restore(dir).map_err(|e| ServeError::Other(Box::new(e)))
}

/// The hosts `serve` would serve for `dir`: `agent-config.yaml` and
/// `bastion-config.yaml` resolved with the cluster name and base domain of
/// the state file (or install-config.yaml).
///
/// # Errors
/// When the cluster cannot be named or the inventory does not load (the
/// error names the file and field).
pub fn inventory(dir: &Path) -> Result<Inventory, crate::ServeError> {
    load(dir).map(|(_, inv)| inv)
}

/// The services `serve` can run; `--services` picks a subset (default all).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Service {
    /// DNS on `ports.dns`.
    Dns,
    /// The load balancer (api, machine-config, ingress frontends).
    Lb,
    /// The machine-config server on `ports.machineConfigServer`.
    Mcs,
    /// Ignition files, OS images and PXE scripts on `ports.http`.
    Http,
    /// The status page, `/status` and `/metrics` on `ports.status`.
    Status,
}

impl Service {
    /// Every service.
    pub const ALL: [Service; 5] = [
        Service::Dns,
        Service::Lb,
        Service::Mcs,
        Service::Http,
        Service::Status,
    ];
}

/// What `okd-install serve` runs and how.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// The services to run (`--services`, default [`Service::ALL`]).
    pub services: Vec<Service>,
    /// Guard `bootstrap.ign` with a one-time token in its URL
    /// (`--bootstrap-token`): written to `auth/bootstrap-ignition-url` (0600)
    /// and put into the bootstrap host's PXE scripts; valid for retries
    /// from the bootstrap's address until the load balancer's check passes
    /// on the bootstrap's machine-config server or API, or
    /// [`okd_bootserver::BOOTSTRAP_TOKEN_LIMIT`] after its first fetch.
    pub bootstrap_token: bool,
    /// How often the preflight checks run again after the one at start
    /// (`--preflight-every`, default 60 s; zero: only at start). A check
    /// that waits for something (the bootstrap's API for `lb.api.readyz`)
    /// gets its answer, and a fixed cause leaves the dashboard.
    pub preflight_every: std::time::Duration,
}

/// The default of [`ServeOptions::preflight_every`].
pub const PREFLIGHT_EVERY: std::time::Duration = std::time::Duration::from_secs(60);

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            services: Service::ALL.to_vec(),
            bootstrap_token: false,
            preflight_every: PREFLIGHT_EVERY,
        }
    }
}

/// The file, under the asset directory, that holds the one-time
/// `bootstrap.ign` URL of `serve --bootstrap-token` (mode 0600).
pub const BOOTSTRAP_URL_FILE: &str = "auth/bootstrap-ignition-url";

/// Runs `okd-install serve --dir dir` until SIGINT or SIGTERM, on the
/// caller's tokio runtime (multi-threaded, with I/O and time enabled: the
/// binary builds it). The status page runs on a thread and runtime of its
/// own at a lower CPU priority (see `run.rs`), a deliberate isolation from
/// the runtime that answers DNS, the load balancer and Ignition.
///
/// # Errors
/// The asset directory or inventory cannot be read, a port cannot be bound
/// (the error names it), or a service stops.
pub async fn serve(dir: &Path, opts: &ServeOptions) -> Result<(), crate::ServeError> {
    run::serve_async(dir.to_path_buf(), opts.clone()).await
}
