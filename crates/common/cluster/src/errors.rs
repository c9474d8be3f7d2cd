//! Errors of the cluster client, each naming the kubeconfig or the endpoint
//! and the cause in words.

use std::fmt;
use std::path::PathBuf;

/// Why the client could not be built or a request failed.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// The kubeconfig file could not be read or parsed.
    #[error("reading kubeconfig {}", path.display())]
    ReadKubeconfig {
        /// The kubeconfig.
        path: PathBuf,
        /// The reader's error.
        #[source]
        source: kube::config::KubeconfigError,
    },
    /// The kubeconfig parsed but cannot be used (no context, no server, a
    /// certificate that does not parse).
    #[error("kubeconfig {}: {detail}", path.display())]
    BadKubeconfig {
        /// The kubeconfig.
        path: PathBuf,
        /// What is wrong, naming the field.
        detail: String,
    },
    /// The embedded client certificate is outside its validity: the
    /// 24-hour bootstrap certificates of openshift/installer#1792.
    #[error(
        "kubeconfig {}: the client certificate of user {user:?} is valid from {not_before} to {not_after}, not now: \
         the install's certificates expire 24 hours after `create ignition-configs` (or the clock is wrong); \
         create the Ignition configs again from a fresh install-config"
    , path.display())]
    ClientCertExpired {
        /// The kubeconfig.
        path: PathBuf,
        /// The kubeconfig user.
        user: String,
        /// RFC 3339.
        not_before: String,
        /// RFC 3339.
        not_after: String,
    },
    /// The kubeconfig's server is not this install's API.
    #[error(
        "kubeconfig {} is for {server}, not for this install's cluster {domain} (expected https://api.{domain}:6443)"
    , path.display())]
    OtherCluster {
        /// The kubeconfig.
        path: PathBuf,
        /// Its server URL.
        server: String,
        /// `<metadata.name>.<baseDomain>` of the install-config.
        domain: String,
    },
    /// A request failed.
    #[error("{endpoint}: {cause}")]
    Api {
        /// Server URL plus request path.
        endpoint: String,
        /// The cause in words.
        cause: ApiCause,
        /// The client's error.
        #[source]
        source: kube::Error,
    },
}

impl ClusterError {
    /// The cause of an [`ClusterError::Api`] error, if it is one.
    pub fn cause(&self) -> Option<&ApiCause> {
        match self {
            ClusterError::Api { cause, .. } => Some(cause),
            _ => None,
        }
    }

    /// Whether waiting and retrying may help (the API is down or restarting),
    /// as opposed to a configuration error that will not change by itself.
    pub fn is_transient(&self) -> bool {
        matches!(
            self.cause(),
            Some(ApiCause::Unreachable(_) | ApiCause::Unavailable(_))
        )
    }
}

/// The cause of a failed request, classified from the client's error chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApiCause {
    /// No TCP connection: refused, timed out, name not resolved (the text).
    Unreachable(String),
    /// The server's certificate is not signed by the kubeconfig's CA.
    UnknownAuthority,
    /// The server's certificate has expired or is not yet valid.
    ServerCertExpired,
    /// The server's certificate does not name the host connected to.
    NameMismatch,
    /// The server refused the client certificate during the handshake.
    ClientCertRejected(String),
    /// 401: the credentials are not accepted.
    Unauthorized,
    /// 401 explained by the clocks ([`crate::Cluster::explain_unauthorized`]):
    /// the API server's `Date` is before the client certificate's
    /// notBefore, or far from this machine's clock; the text says which.
    ClockSkew(String),
    /// 403 with the server's message.
    Forbidden(String),
    /// 5xx or 429: the server is up but cannot answer now.
    Unavailable(String),
    /// Any other HTTP status with the server's message.
    Status(u16, String),
    /// Anything else, as the client put it.
    Other(String),
}

impl fmt::Display for ApiCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ApiCause::Unreachable(s) => write!(f, "the API server is unreachable: {s}"),
            ApiCause::UnknownAuthority => f.write_str(
                "the server's certificate is not signed by the CA in the kubeconfig \
                 (wrong CA, or a kubeconfig for another cluster)",
            ),
            ApiCause::ServerCertExpired => f.write_str(
                "the server's certificate has expired or is not yet valid \
                 (the install's serving certificates last 24 hours; or the clock is wrong)",
            ),
            ApiCause::NameMismatch => {
                f.write_str("the server's certificate is not valid for this host name")
            }
            ApiCause::ClientCertRejected(s) => write!(
                f,
                "the API server refused the client certificate ({s}): expired, or not from this cluster"
            ),
            ApiCause::Unauthorized => f.write_str(
                "401 Unauthorized: the API server does not accept these credentials \
                 (a kubeconfig for another cluster?)",
            ),
            ApiCause::ClockSkew(m) => write!(f, "401 Unauthorized: {m}"),
            ApiCause::Forbidden(m) => write!(f, "403 Forbidden: {m}"),
            ApiCause::Unavailable(m) => write!(f, "the API server cannot answer now: {m}"),
            ApiCause::Status(c, m) => write!(f, "HTTP {c}: {m}"),
            ApiCause::Other(s) => f.write_str(s),
        }
    }
}

impl ApiCause {
    /// The cause of a failed watch (List+Watch of kube's `watcher`): the
    /// classified cause of the list or watch request that failed; an error
    /// the API server sent on the watch as its status ([`ApiCause::Status`]
    /// and friends); anything else as the watcher put it.
    pub fn of_watch(err: &kube::runtime::watcher::Error) -> ApiCause {
        use kube::runtime::watcher::Error as W;
        match err {
            W::InitialListFailed(e) | W::WatchStartFailed(e) | W::WatchFailed(e) => ApiCause::of(e),
            W::WatchError(status) => ApiCause::of(&kube::Error::Api(status.clone())),
            other => ApiCause::Other(other.to_string()),
        }
    }

    /// Classifies a client error by walking its source chain (rustls and
    /// I/O errors) or reading the API's status.
    pub fn of(err: &kube::Error) -> ApiCause {
        if let kube::Error::Api(status) = err {
            let msg = status.message.clone();
            return match status.code {
                401 => ApiCause::Unauthorized,
                403 => ApiCause::Forbidden(msg),
                429 | 500..=599 => ApiCause::Unavailable(format!("HTTP {}: {msg}", status.code)),
                c => ApiCause::Status(c, msg),
            };
        }
        let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(err);
        let mut last = err.to_string();
        while let Some(e) = cur {
            if let Some(t) = e.downcast_ref::<rustls::Error>() {
                return tls_cause(t);
            }
            if let Some(io) = e.downcast_ref::<std::io::Error>() {
                if let Some(t) = io.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) {
                    return tls_cause(t);
                }
                use std::io::ErrorKind as K;
                if matches!(
                    io.kind(),
                    K::ConnectionRefused
                        | K::TimedOut
                        | K::HostUnreachable
                        | K::NetworkUnreachable
                        | K::ConnectionReset
                        | K::ConnectionAborted
                        | K::UnexpectedEof
                        | K::NotFound
                ) {
                    return ApiCause::Unreachable(io.to_string());
                }
            }
            last = e.to_string();
            cur = e.source();
        }
        // Some TLS stacks wrap rustls' error in a type of their own; their
        // text still says which check failed.
        if let Some(rest) = last.split("invalid peer certificate: ").nth(1) {
            let r = rest.to_lowercase().replace([' ', '_'], "");
            let has = |words: &[&str]| words.iter().any(|w| r.starts_with(w));
            return if has(&["unknownissuer", "badsignature"]) {
                ApiCause::UnknownAuthority
            } else if has(&[
                "expired",
                "certificateexpired",
                "notvalidyet",
                "certificatenotvalidyet",
            ]) {
                ApiCause::ServerCertExpired
            } else if has(&["notvalidforname", "certificatenotvalidforname"]) {
                ApiCause::NameMismatch
            } else {
                ApiCause::Other(last)
            };
        }
        let lower = last.to_lowercase();
        if lower.contains("dns")
            || lower.contains("lookup")
            || lower.contains("name or service not known")
            || lower.contains("timed out")
            || lower.contains("connection")
        {
            return ApiCause::Unreachable(last);
        }
        ApiCause::Other(last)
    }
}

fn tls_cause(e: &rustls::Error) -> ApiCause {
    use rustls::CertificateError as C;
    match e {
        rustls::Error::InvalidCertificate(c) => match c {
            C::UnknownIssuer | C::BadSignature | C::InvalidPurpose => ApiCause::UnknownAuthority,
            C::Expired
            | C::ExpiredContext { .. }
            | C::NotValidYet
            | C::NotValidYetContext { .. } => ApiCause::ServerCertExpired,
            C::NotValidForName | C::NotValidForNameContext { .. } => ApiCause::NameMismatch,
            other => ApiCause::Other(format!("TLS: invalid server certificate: {other:?}")),
        },
        rustls::Error::AlertReceived(a) => ApiCause::ClientCertRejected(format!("TLS alert {a:?}")),
        other => ApiCause::Other(format!("TLS: {other}")),
    }
}
