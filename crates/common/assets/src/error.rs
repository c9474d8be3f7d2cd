//! The error type of asset loading and generation.
//!
//! Messages follow openshift-install's wrapping so a user of either tool reads
//! the same chain, e.g. `failed to fetch Master Machines: failed to load asset
//! "Install Config": failed to create install config: invalid
//! "install-config.yaml" file: pullSecret: …` (openshift/installer
//! `pkg/asset/store/store.go`, `pkg/asset/installconfig/installconfigbase.go`).
//! Each variant's text never repeats its source; print with [`chain`].

use std::path::PathBuf;

/// Errors from the asset store and from generating or loading assets.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AssetError {
    /// install-config.yaml could not be parsed or failed validation (exit code 3).
    #[error("failed to create install config")]
    InstallConfig(#[source] okd_installconfig::LoadError),
    /// An answer or flag that stands in for install-config.yaml (`create
    /// install-config`'s prompts and flags) breaks the field's rule, or the
    /// file it names cannot be read (exit code 3, openshift-install's
    /// wrapping of its survey's errors).
    #[error("failed to create install config")]
    InstallConfigInput(#[source] Box<AssetError>),
    /// The user stopped a prompt (Ctrl-C, end of input) before every answer
    /// was given; nothing was written (exit code 8).
    #[error("{0}")]
    Interrupted(String),
    /// A file in the asset directory could not be read or written.
    #[error("{action} {}", path.display())]
    Io {
        /// What was being done, e.g. "reading".
        action: &'static str,
        /// The file or directory concerned.
        path: PathBuf,
        /// The underlying I/O error.
        #[source]
        source: std::io::Error,
    },
    /// Writing, creating directories, locking or sweeping failed (okd-fs).
    #[error(transparent)]
    Fs(#[from] okd_fs::FsError),
    /// The asset graph has a cycle: each asset on the path depends on the
    /// next, and the last is the first again (a defect of the graph, never
    /// of the user's input).
    #[error("the asset graph has a cycle: {}", path.join(" -> "))]
    Cycle {
        /// The display names along the cycle, e.g. `["A", "B", "A"]`.
        path: Vec<&'static str>,
    },
    /// A file in the asset directory has content that cannot be used; names the file and the rule.
    #[error("{}: {message}", path.display())]
    BadFile {
        /// The offending file, relative to the asset directory.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// Content that must be in a format is not: `<path>: <what>`, the parser's
    /// error as the source (e.g. `auth/kubeconfig: not a kubeconfig`).
    #[error("{}: {what}", path.display())]
    Decode {
        /// The file (relative to the asset directory) or input concerned.
        path: PathBuf,
        /// What it failed to be, e.g. `not a kubeconfig`.
        what: &'static str,
        /// The parser's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync + 'static>,
    },
    /// The kubeadmin password could not be hashed.
    #[error("hashing the kubeadmin password")]
    Hash(#[source] bcrypt::BcryptError),
    /// An input is valid on its own but not for this asset (e.g. bootstrap-in-place checks,
    /// `pkg/asset/ignition/bootstrap/bootstrap_in_place.go`).
    #[error("{0}")]
    Invalid(String),
    /// Certificate or key generation failed.
    #[error("generating {what}")]
    Pki {
        /// The certificate or key being made.
        what: String,
        /// The PKI error.
        #[source]
        source: okd_pki::PkiError,
    },
    /// The state file `.openshift_install_state.json` holds an entry we cannot decode.
    #[error("state file entry {key} cannot be read")]
    State {
        /// The state key, e.g. `*tls.RootCA`.
        key: String,
        /// Decode error.
        #[source]
        source: serde_json::Error,
    },
    /// Wraps an error with the store step and asset name: `failed to generate asset "Root CA"`.
    #[error("failed to {step} asset \"{name}\"")]
    Step {
        /// `load`, `generate` or `fetch dependency of`.
        step: &'static str,
        /// The asset's display name.
        name: &'static str,
        /// What went wrong inside.
        #[source]
        source: Box<AssetError>,
    },
    /// Top-level wrap of a target: `failed to fetch Master Machines`.
    #[error("failed to fetch {name}")]
    Fetch {
        /// The target asset's display name.
        name: &'static str,
        /// What went wrong inside.
        #[source]
        source: Box<AssetError>,
    },
    /// Writing a target's files failed: `failed to write asset (Bootstrap Ignition Config) to disk`.
    #[error("failed to write asset ({name}) to disk")]
    Persist {
        /// The asset's display name.
        name: &'static str,
        /// What went wrong.
        #[source]
        source: Box<AssetError>,
    },
}

impl AssetError {
    /// True if an install-config load/validation error is anywhere in the chain:
    /// openshift-install exits with code 3 for those (openshift/installer
    /// `cmd/openshift-install/create.go`).
    pub fn is_install_config_error(&self) -> bool {
        let mut e: Option<&(dyn std::error::Error + 'static)> = Some(self);
        while let Some(err) = e {
            // The wrapping variants hold their source in a Box, which is what
            // `source()` hands out.
            let this = err
                .downcast_ref::<AssetError>()
                .or_else(|| err.downcast_ref::<Box<AssetError>>().map(|b| &**b));
            if let Some(AssetError::InstallConfig(_) | AssetError::InstallConfigInput(_)) = this {
                return true;
            }
            e = err.source();
        }
        false
    }

    /// A [`AssetError::Decode`] of `path` with the parser's error.
    pub fn decode(
        path: impl Into<PathBuf>,
        what: &'static str,
        source: impl Into<Box<dyn std::error::Error + Send + Sync + 'static>>,
    ) -> Self {
        AssetError::Decode {
            path: path.into(),
            what,
            source: source.into(),
        }
    }

    pub(crate) fn io(
        action: &'static str,
        path: impl Into<PathBuf>,
        source: std::io::Error,
    ) -> Self {
        AssetError::Io {
            action,
            path: path.into(),
            source,
        }
    }
}

/// The exit-code class of each error (okd-types `exit`): install-config
/// errors are 3 as in openshift-install, a stopped prompt 8, the wrappers
/// take their cause's class, everything else (files, keys, state) 1.
impl okd_types::exit::ExitClass for AssetError {
    fn exit_class(&self) -> okd_types::exit::Exit {
        use okd_types::exit::Exit;
        match self {
            AssetError::InstallConfig(_) | AssetError::InstallConfigInput(_) => Exit::InstallConfig,
            AssetError::Interrupted(_) => Exit::Interrupted,
            AssetError::Step { source, .. }
            | AssetError::Fetch { source, .. }
            | AssetError::Persist { source, .. } => source.exit_class(),
            AssetError::Io { .. }
            | AssetError::Fs(_)
            | AssetError::Cycle { .. }
            | AssetError::BadFile { .. }
            | AssetError::Decode { .. }
            | AssetError::Hash(_)
            | AssetError::Invalid(_)
            | AssetError::Pki { .. }
            | AssetError::State { .. } => Exit::Failed,
        }
    }
}

/// Renders an error and all its sources joined by `": "`, the way
/// openshift-install prints its wrapped errors. A cause whose text the line
/// already holds (an error that prints its source and also returns it, as
/// `std::io::Error` wrappers and hyper's errors do) is printed once.
pub fn chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut out = err.to_string();
    let mut src = err.source();
    while let Some(s) = src {
        let text = s.to_string();
        if !text.is_empty() && !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        src = s.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An error that prints its source and returns it too.
    #[derive(Debug, thiserror::Error)]
    #[error("reading x: {0}")]
    struct Echoing(#[source] std::io::Error);

    #[test]
    fn each_cause_once() {
        let io = std::io::Error::from(std::io::ErrorKind::NotFound);
        let e = AssetError::Decode {
            path: "auth/kubeconfig".into(),
            what: "not a kubeconfig",
            source: Box::new(Echoing(io)),
        };
        let text = chain(&e);
        assert_eq!(text.matches("entity not found").count(), 1, "{text}");
        assert!(
            text.starts_with("auth/kubeconfig: not a kubeconfig: reading x: "),
            "{text}"
        );
    }
}
