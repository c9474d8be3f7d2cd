//! [`OciError`]: why a registry or archive operation failed.

use crate::oci::Digest;

/// Why a registry or archive operation failed. Every message names the
/// registry (or file) and the object. Strings that come from a registry
/// (bodies, header values) are passed through [`super::body::sanitize`]
/// first: control characters escaped, credentials and tokens redacted.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OciError {
    /// Writing a file atomically, or locking an archive directory, failed
    /// (okd-fs names the step and path).
    #[error(transparent)]
    Fs(#[from] okd_fs::FsError),
    /// No TCP/TLS connection to the registry (one line, no retries).
    #[error("cannot reach registry {registry} ({url}): {detail}")]
    Unreachable {
        /// `host[:port]`.
        registry: String,
        /// The URL tried.
        url: String,
        /// The root cause (connection refused, certificate not trusted, ...).
        detail: String,
    },
    /// The registry or its token service did not answer (or stopped sending
    /// a body) for the read timeout (`--read-timeout`).
    #[error(
        "registry {registry}: {what}: no data for {seconds} s (read timeout; --read-timeout or OKD_MIRROR_READ_TIMEOUT)"
    )]
    Timeout {
        /// `host[:port]`.
        registry: String,
        /// The request and what it was waiting for.
        what: String,
        /// The timeout, seconds.
        seconds: u64,
    },
    /// The registry names a token realm the client refuses to send the login to.
    #[error("registry {registry}: refusing token realm {realm:?}, no login sent to it: {rule}")]
    TokenRealm {
        /// `host[:port]`.
        registry: String,
        /// The realm URL of the challenge.
        realm: String,
        /// The rule it breaks and how to allow it.
        rule: String,
    },
    /// The registry or its token service rejected the login.
    #[error(
        "registry {registry} (auth realm {realm:?}) rejected the login of user {user:?} from {origin}: {detail}"
    )]
    Unauthorized {
        /// `host[:port]`.
        registry: String,
        /// The realm of the challenge.
        realm: String,
        /// The user that was tried.
        user: String,
        /// Where the login came from.
        origin: String,
        /// Status and body.
        detail: String,
    },
    /// The registry wants a login and none is configured for it.
    #[error(
        "registry {registry} requires a login (auth realm {realm:?}) and none of [{sources}] has one for it; pass --registry-config"
    )]
    NoCredentials {
        /// `host[:port]`.
        registry: String,
        /// The realm of the challenge.
        realm: String,
        /// The credential files consulted.
        sources: String,
    },
    /// An unexpected HTTP status.
    #[error("{what}: HTTP {status} {body}")]
    Status {
        /// The request (`GET manifest ... from ...`).
        what: String,
        /// The status code.
        status: u16,
        /// The start of the response body (registry error codes), sanitized.
        body: String,
    },
    /// A body (manifest, token answer, layer content) is larger than its limit.
    #[error("{what}: more than the limit of {limit} bytes")]
    TooLarge {
        /// The object.
        what: String,
        /// The limit, bytes.
        limit: u64,
    },
    /// Content does not match its digest.
    #[error("{what}: content has digest {actual} ({size} bytes), expected {expected}")]
    Digest {
        /// The object.
        what: String,
        /// The digest asked for.
        expected: Digest,
        /// The digest of the bytes received.
        actual: Digest,
        /// Bytes received.
        size: u64,
    },
    /// Content size differs from the descriptor.
    #[error("{what}: {actual} bytes, the manifest says {expected}")]
    Size {
        /// The object.
        what: String,
        /// Size from the descriptor.
        expected: u64,
        /// Bytes received.
        actual: u64,
    },
    /// A manifest, release image or archive is malformed.
    #[error("{what}: {detail}")]
    Format {
        /// The object.
        what: String,
        /// The rule it breaks.
        detail: String,
    },
    /// A transfer broke off.
    #[error("{what}: {detail}")]
    Transfer {
        /// The object.
        what: String,
        /// The root cause.
        detail: String,
    },
    /// Local file I/O (archives, CA files, the blob location cache).
    #[error("{what}: {source}")]
    Io {
        /// The file and action.
        what: String,
        /// The error.
        source: std::io::Error,
    },
}

impl OciError {
    /// Whether the error is about the registry rather than one image
    /// (unreachable, not answering, login refused or missing, token realm
    /// refused): the copy stops at once instead of failing image after image.
    pub fn stops_everything(&self) -> bool {
        matches!(
            self,
            OciError::Unreachable { .. }
                | OciError::Timeout { .. }
                | OciError::TokenRealm { .. }
                | OciError::Unauthorized { .. }
                | OciError::NoCredentials { .. }
        )
    }
}

/// The innermost cause of an error, lower-cased first letter kept.
pub(crate) fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cur: &(dyn std::error::Error + 'static) = e;
    let mut last = cur.to_string();
    while let Some(s) = cur.source() {
        last = s.to_string();
        cur = s;
    }
    last
}
