//! Machine-config server for user-provisioned installs.
//!
//! Renders the MachineConfigs of an openshift-install asset directory per
//! pool by the machine-config-operator's rules ([`render_pool`]), appends
//! the bootstrap-mode files ([`served_config`]) and serves
//! `/config/<pool>` in the Ignition spec the request's Accept header names
//! ([`negotiate`], [`convert`]) through [`serve`] over HTTPS
//! ([`Transport::Tls`], port 22623) and plain HTTP ([`Transport::Plain`],
//! port 22624), with the connection limits of [`okd_listen`] (caps per
//! listener and client address, TLS-handshake, request-head and idle
//! timeouts). Spec: openshift/machine-config-operator `pkg/server/` and
//! `cmd/machine-config-server/`; coreos/ignition `docs/` (spec versions,
//! `docs/migrating-configs.md`, `docs/operator-notes.md`).
//!
//! Differences from the real bootstrap-mode server: every pool found
//! (always `master` and `worker`) is served, not only `master`/`arbiter`;
//! the rendered name hashes the spec with SHA-256 (first 32 hex digits)
//! instead of MD5; MachineConfigs must carry Ignition 3.0–3.5 configs (the
//! MCO also converts 2.2 ones); there is no ControllerConfig, so
//! `osImageURL` has no default; spec 2.2 bodies do not translate
//! `storage.disks`/`raid`/`filesystems` (HTTP 500 instead).

mod accept;
mod convert;
mod render;
mod server;
mod state;

use std::net::SocketAddr;
use std::path::PathBuf;

pub use accept::{MAX_SPEC3_MINOR, MIN_SPEC3_MINOR, SpecVersion, UnsupportedVersion, negotiate};
pub use convert::{ConvertError, convert};
pub use render::{
    MC_API_VERSION, ROLE_LABEL, internal_version, is_machine_config, merge_config, pool_of,
    render_pool,
};
pub use server::{
    FetchObserver, NODE_PROGRAM_ROUTE, Transport, bind, router, serve, serve_tls, tls_config,
};
pub use state::{
    BOOTSTRAP_MANIFEST_DIRS, BootstrapInputs, KUBE_APISERVER_CA_PATH, KUBECONFIG_KUBELET_PATH,
    MCS_CERT_PATH, MCS_KEY_PATH, McsState, RenderedPool, escape_data_url, served_config,
};

/// Errors of loading, rendering and serving.
#[derive(Debug, thiserror::Error)]
pub enum McsError {
    /// A file or directory could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The path.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A file is not valid JSON/YAML or holds a bad data URL.
    #[error("cannot parse {path}: {reason}")]
    Parse {
        /// The path (for files inside bootstrap.ign: `<ign>/<path>`).
        path: PathBuf,
        /// The parser's message.
        reason: String,
    },
    /// `bootstrap.ign` lacks a file the server needs.
    #[error("{ignition} has no file {path}")]
    MissingFile {
        /// The Ignition config read.
        ignition: PathBuf,
        /// The missing `storage.files` path.
        path: String,
    },
    /// A MachineConfig cannot be rendered.
    #[error("MachineConfig {name:?}: {reason}")]
    MachineConfig {
        /// `metadata.name`.
        name: String,
        /// Why.
        reason: String,
    },
    /// The listening address cannot be bound.
    #[error("cannot listen on {addr}: {}", bind_reason(source))]
    Bind {
        /// The address and port.
        addr: SocketAddr,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The TLS certificate or key is unusable.
    #[error("TLS setup failed: {reason}")]
    Tls {
        /// Why.
        reason: String,
    },
    /// The listener cannot be used by the server (e.g. registering it
    /// with the tokio runtime failed).
    #[error("machine-config server cannot use its listener")]
    Serve {
        /// The I/O error.
        source: std::io::Error,
    },
}

fn bind_reason(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::AddrInUse => "address already in use".into(),
        std::io::ErrorKind::PermissionDenied => "permission denied".into(),
        std::io::ErrorKind::AddrNotAvailable => "address not available".into(),
        _ => e.to_string(),
    }
}
