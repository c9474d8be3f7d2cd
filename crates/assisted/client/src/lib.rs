//! Client commands of the assisted service (issue #24): what people who
//! script need so that nothing takes curl.
//!
//! * [`Client`]: the REST API v2 operations (assisted-service
//!   `swagger.yaml`, under `/api/assisted-install/v2`), as its
//!   `docs/user-guide/rest-api-getting-started.md` calls them.
//! * [`config`]: an install-config-like file mapped to
//!   `cluster-create-params`, every field not taken refused by name.
//! * [`commands`]: what `okd-install assisted …` runs: a cluster and its
//!   infra-env from a file, hosts (told apart by id, MAC and address,
//!   [`hosts`]) and validations as text, a host's name and role set,
//!   install (and wait for it to start), the credentials into `<dir>/auth`.
//!
//! Errors say first, in words, what failed and what to do: the file and
//! the field for a configuration, what the command was doing and the
//! service's `reason` for a refusal (the request's method, URL and HTTP
//! status after, in parentheses), the URL (and `okd-install assisted
//! serve`) when nothing answers.

pub mod client;
pub mod commands;
pub mod config;
pub mod hosts;

use std::time::Duration;

pub use client::{Client, DownloadKind};
pub use commands::{
    create_cluster_from_file, describe_created, download_credentials, install, list_clusters,
    list_events, list_hosts, set_host, validations,
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
    #[error(
        "{doing} failed: the service's answer did not arrive ({cause}); try again, and check the service's log if it persists ({method} {url})"
    )]
    Transport {
        /// What the command was doing, in words (`listing the clusters`).
        doing: String,
        /// The HTTP method.
        method: String,
        /// The request's URL.
        url: String,
        /// The transport's reason.
        cause: String,
    },
    /// The service answered with a non-2xx status: what the command was
    /// doing and the service's reason first, the request and its status
    /// after.
    #[error("{doing} failed: {reason}{} ({method} {url}: HTTP {status})", advice(*status, reason))]
    Status {
        /// What the command was doing, in words (`listing the clusters`).
        doing: String,
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
    #[error(
        "{doing} failed: the answer is not the document an assisted service sends ({reason}); is --url the address of `okd-install assisted serve`? ({method} {url})"
    )]
    Decode {
        /// What the command was doing, in words.
        doing: String,
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
    /// The cluster's credentials asked for before the installation
    /// generated them (the service's 409).
    #[error(
        "the credentials of cluster {cluster} exist only once its installation has started (cluster status: {cluster_status}); {} ({method} {url}: HTTP {status})",
        credentials_advice(cluster, cluster_status)
    )]
    NoCredentialsYet {
        /// The cluster's name.
        cluster: String,
        /// Its status.
        cluster_status: String,
        /// The HTTP method.
        method: String,
        /// The request's URL.
        url: String,
        /// The HTTP status (409).
        status: u16,
    },
    /// No host matches what `host set` was given.
    #[error(
        "no host{} matches {wanted:?} (an id, an id prefix, a MAC, an address or a host name); {}",
        if scope.is_empty() { String::new() } else { format!(" of {scope}") },
        if known.is_empty() { "there are no hosts".to_string() } else { format!("hosts:\n{}", candidates(known)) }
    )]
    NoHost {
        /// As given.
        wanted: String,
        /// `cluster demo`, or empty for every infra-env.
        scope: String,
        /// One line per host there is (id, name, MAC, address).
        known: Vec<String>,
    },
    /// Several hosts match what `host set` was given.
    #[error(
        "{} hosts match {wanted:?}; give the host's id (or a longer prefix of it), its MAC or its address:\n{}",
        matches.len(),
        candidates(matches)
    )]
    AmbiguousHost {
        /// As given.
        wanted: String,
        /// One line per matching host (id, name, MAC, address, what matched).
        matches: Vec<String>,
    },
    /// `host set` without anything to set.
    #[error("nothing to change: give --name and/or --role")]
    NothingToSet,
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

/// What to do after a refusal of this status, when the reason does not
/// say it already (`; …` or empty).
fn advice(status: u16, reason: &str) -> String {
    let r = reason.to_ascii_lowercase();
    match status {
        401 if !r.contains("token") => "; the service wants its admin token: run the command with the service's --dir (it reads <dir>/assisted-service/admin-token), or pass --token / OKD_ASSISTED_TOKEN".into(),
        403 => "; the token given may not do this: use the service's admin token (<dir>/assisted-service/admin-token)".into(),
        502..=504 => "; the service (or a proxy in front of it) is not answering: is `okd-install assisted serve` running?".into(),
        _ => String::new(),
    }
}

/// What to do for credentials asked for too early, by the cluster's status.
fn credentials_advice(cluster: &str, status: &str) -> String {
    match status {
        "insufficient" | "ready" | "pending-for-input" | "pending-user-action" => format!(
            "start it with `okd-install assisted install --cluster {}`{}",
            cluster,
            if status == "ready" {
                String::new()
            } else {
                format!(
                    " once `okd-install assisted validations --cluster {cluster} --failing` shows nothing"
                )
            }
        ),
        "preparing-for-installation" => {
            "they are being generated now: try again in a minute".to_string()
        }
        _ => {
            "they were not generated: see `okd-install assisted events --cluster ".to_string()
                + cluster
                + "`"
        }
    }
}

/// One candidate per line, indented; at most [`CANDIDATES_SHOWN`], then
/// how many more.
fn candidates(lines: &[String]) -> String {
    let mut out: Vec<String> = lines
        .iter()
        .take(CANDIDATES_SHOWN)
        .map(|l| format!("  {l}"))
        .collect();
    if lines.len() > CANDIDATES_SHOWN {
        out.push(format!(
            "  … and {} more (`okd-install assisted hosts --cluster <name>` lists them)",
            lines.len() - CANDIDATES_SHOWN
        ));
    }
    out.join("\n")
}

/// Hosts an error lists at most.
pub const CANDIDATES_SHOWN: usize = 20;
