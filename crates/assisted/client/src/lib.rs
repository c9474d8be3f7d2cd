//! Client commands of the assisted service (issue #24): what people who
//! script need so that nothing takes curl.
//!
//! * [`Client`]: the REST API v2 operations (assisted-service
//!   `swagger.yaml`, under `/api/assisted-install/v2`), as its
//!   `docs/user-guide/rest-api-getting-started.md` calls them.
//! * [`config`]: an install-config-like file mapped to
//!   `cluster-create-params`, every field not taken refused by name.
//! * [`commands`]: what `okd-install assisted …` runs: a cluster and its
//!   infra-env from a file, hosts and validations as text, install (and
//!   wait for it to start), the credentials into `<dir>/auth`.
//!
//! Errors name what failed: the file and the field for a configuration,
//! the request and the service's `reason` with the HTTP status for a
//! refusal, the URL (and `okd-install assisted serve`) when nothing
//! answers.

pub mod client;
pub mod commands;
pub mod config;

use std::time::Duration;

pub use client::{Client, DownloadKind};
pub use commands::{
    create_cluster_from_file, describe_created, download_credentials, install, list_clusters,
    list_events, list_hosts, validations,
};
pub use config::{ClusterConfig, ConfigError, DEFAULT_OPENSHIFT_VERSION};

/// A failed command.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The service URL is unusable.
    #[error("service URL {url:?}: {reason}")]
    Url {
        /// As given.
        url: String,
        /// Why.
        reason: String,
    },
    /// The token cannot be an HTTP header value.
    #[error("token: not a valid Authorization header value (control characters?)")]
    Token,
    /// The HTTP client cannot be built.
    #[error("HTTP client: {0}")]
    Client(String),
    /// The CA certificates given are unusable.
    #[error("the service's CA certificate: {0}")]
    Ca(String),
    /// The service's admin-token or CA file exists but cannot be read.
    #[error("{}: {cause} (the assisted service's file; or pass --token / OKD_ASSISTED_TOKEN and --cacert)", path.display())]
    TokenFile {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        cause: String,
    },
    /// An id that cannot be one path segment.
    #[error("id {id:?}: not an id (letters, digits and '-' only)")]
    Id {
        /// As given.
        id: String,
    },
    /// Nothing answers at the service's address.
    #[error(
        "cannot reach the assisted service at {url} ({cause}); is it running? Start it with `okd-install assisted serve`, or give its address with --url"
    )]
    Unreachable {
        /// The service's root URL.
        url: String,
        /// The transport's reason.
        cause: String,
    },
    /// The service answered with a certificate the client does not trust.
    #[error(
        "the assisted service at {url} presented a certificate this client does not trust ({cause}): run the command with the service's --dir (it trusts <dir>/assisted-service/ca.crt), or pass --cacert with that file"
    )]
    Untrusted {
        /// The service's root URL.
        url: String,
        /// The TLS library's reason.
        cause: String,
    },
    /// A request failed on the way (timeout, connection reset).
    #[error("{method} {url}: {cause}")]
    Transport {
        /// The HTTP method.
        method: String,
        /// The request's URL.
        url: String,
        /// The transport's reason.
        cause: String,
    },
    /// The service answered with a non-2xx status.
    #[error("{method} {url}: HTTP {status}: {reason}")]
    Status {
        /// The HTTP method.
        method: String,
        /// The request's URL.
        url: String,
        /// The HTTP status.
        status: u16,
        /// The service's `reason` (swagger `error`), `message` (swagger
        /// `infra_error`), or the body's start.
        reason: String,
    },
    /// A 2xx answer that is not the document expected.
    #[error("{method} {url}: the answer is not the expected document: {reason}")]
    Decode {
        /// The HTTP method.
        method: String,
        /// The request's URL.
        url: String,
        /// serde_json's reason.
        reason: String,
    },
    /// The install-config-like file.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// `--openshift-version` is no release version.
    #[error("OpenShift version {0:?}: must be major.minor, e.g. {DEFAULT_OPENSHIFT_VERSION}")]
    Version(String),
    /// No cluster has the name or id.
    #[error(
        "no cluster is named {wanted:?} or has that id; {}",
        if known.is_empty() { "the service has no clusters".to_string() } else { format!("clusters: {}", known.join(", ")) }
    )]
    NoCluster {
        /// As given.
        wanted: String,
        /// `name (id)` of each cluster there is.
        known: Vec<String>,
    },
    /// Several clusters have the name.
    #[error("{} clusters are named {name:?} ({}); give the id instead", ids.len(), ids.join(", "))]
    Ambiguous {
        /// As given.
        name: String,
        /// Their ids.
        ids: Vec<String>,
    },
    /// Creating a cluster whose name is taken.
    #[error(
        "a cluster named {name:?} exists already ({id}); delete it or choose another metadata.name"
    )]
    Exists {
        /// The name.
        name: String,
        /// The existing cluster's id.
        id: String,
    },
    /// The cluster was created, its infra-env was not.
    #[error(
        "cluster {name} ({id}) was created but its infra-env was not: {source}; {}",
        if *removed { "the cluster was deleted again" } else { "delete the cluster (DELETE /v2/clusters/<id>) before trying again" }
    )]
    InfraEnv {
        /// The cluster's name.
        name: String,
        /// The cluster's id.
        id: String,
        /// Why the infra-env was refused.
        source: Box<Error>,
        /// Whether the cluster was deleted again.
        removed: bool,
    },
    /// The installation did not start (back to `ready`, or `error`).
    #[error("cluster {cluster}: the installation did not start: it is {status} ({info})")]
    InstallFailed {
        /// The cluster's name.
        cluster: String,
        /// Its status.
        status: String,
        /// Its status in words.
        info: String,
    },
    /// `--wait` passed before the installation started.
    #[error("cluster {cluster}: still {status} ({info}) after waiting {}s", waited.as_secs())]
    WaitTimeout {
        /// The cluster's name.
        cluster: String,
        /// How long was waited.
        waited: Duration,
        /// Its status.
        status: String,
        /// Its status in words.
        info: String,
    },
    /// Writing a file (the path and the system's reason).
    #[error(transparent)]
    Fs(#[from] okd_fs::FsError),
    /// Writing the output.
    #[error("writing the output: {0}")]
    Output(#[from] std::io::Error),
}
