//! Disconnected installs (issue #4): the local mirror registry an install
//! pulls from.
//!
//! [`registry::init`] sets up a distribution registry (Debian package
//! `docker-registry`, `docker-registry serve config.yml`) in one step: its own
//! CA and serving certificate, an htpasswd user, the registry's `config.yml`,
//! and the login and CA added to the install-config (`pullSecret`,
//! `additionalTrustBundle`) so that nodes trust and can log in to the mirror.
//! [`daemon`] starts it in the background and stops it again by its PID
//! file, checking the PID is that registry. [`commands`] are the three
//! `okd-install mirror registry` commands with their messages.
//!
//! The OCI distribution client and the release copier are the `okd-mirror`
//! crate.

pub mod commands;
pub mod daemon;
pub mod registry;

use std::path::PathBuf;

/// Why setting up, starting or stopping the mirror registry failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MirrorError {
    /// An option is missing or malformed (the message names it).
    #[error("{0}")]
    Options(String),
    /// Key generation, signing or certificate parsing failed.
    #[error(transparent)]
    Pki(#[from] okd_pki::PkiError),
    /// bcrypt hashing of the htpasswd password failed.
    #[error("hashing the password: {0}")]
    Hash(String),
    /// Reading or writing a file failed (the cause is the source).
    #[error("{action} {}", path.display())]
    Io {
        /// What was being done (`writing`, `reading`, ...).
        action: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// Writing a file atomically failed (okd-fs names the step and path).
    #[error(transparent)]
    Fs(#[from] okd_fs::FsError),
    /// The pull secret is not a JSON object with an `auths` object.
    #[error("invalid pull secret: {0}")]
    PullSecret(String),
    /// The install-config could not be parsed or edited as YAML.
    #[error("cannot edit install-config.yaml: {0}")]
    InstallConfig(String),
    /// The edited install-config fails okd-install's validation; nothing was written.
    #[error("refusing to write install-config.yaml, it would not validate: {0}")]
    InstallConfigInvalid(String),
}

/// Exit codes (okd-types `exit`): install-config.yaml or its pull secret
/// wrong 3; everything else 1.
impl okd_types::exit::ExitClass for MirrorError {
    fn exit_class(&self) -> okd_types::exit::Exit {
        use okd_types::exit::Exit;
        match self {
            MirrorError::InstallConfig(_)
            | MirrorError::InstallConfigInvalid(_)
            | MirrorError::PullSecret(_) => Exit::InstallConfig,
            MirrorError::Options(_)
            | MirrorError::Pki(_)
            | MirrorError::Hash(_)
            | MirrorError::Io { .. }
            | MirrorError::Fs(_) => Exit::Failed,
        }
    }
}

impl MirrorError {
    pub(crate) fn io(action: &'static str, path: &std::path::Path, source: std::io::Error) -> Self {
        MirrorError::Io {
            action,
            path: path.to_path_buf(),
            source,
        }
    }
}

/// Control characters (except space) as escapes (`\u{1b}`, `\r`), for
/// strings read from other processes before they go into a message.
pub(crate) fn escape_controls(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}
