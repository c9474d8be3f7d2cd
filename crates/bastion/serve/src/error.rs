//! [`ServeError`]: why `okd-install serve`, `create bastion-configs` or one
//! of `serve`'s requests failed, and [`Context`], which names what was
//! being done (the file, address or service) in front of the cause.

/// A cause of any kind (an I/O error, a crate's error type).
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Why `serve` (or a command beside it) failed. The message names the
/// file, address or service; [`std::error::Error::source`] gives the cause,
/// so a chain printer (`okd_assets::chain`) shows `what: cause: …`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// Something being done failed: `context` says what (e.g. `cannot
    /// listen on 192.0.2.1:9000 (status page)`), `source` why.
    #[error("{context}")]
    Failed {
        /// What was being done, naming the file, address or service.
        context: String,
        /// The cause.
        #[source]
        source: BoxError,
    },
    /// A condition that stops serve, in words (another serve runs for the
    /// directory, a service stopped or panicked).
    #[error("{0}")]
    Stopped(String),
    /// A crate's error, shown as it is (its message already names the
    /// file, field, frontend or port).
    #[error(transparent)]
    Other(BoxError),
}

/// Errors shown as they are ([`ServeError::Other`]) when `?` meets them.
macro_rules! transparent {
    ($($t:ty),* $(,)?) => {
        $(impl From<$t> for ServeError {
            fn from(e: $t) -> Self {
                ServeError::Other(Box::new(e))
            }
        })*
    };
}

transparent!(
    std::io::Error,
    okd_assets::AssetError,
    okd_fs::FsError,
    okd_lb::LbError,
    okd_bootserver::HttpError,
    okd_dns::DnsError,
    okd_mcs::McsError,
    okd_serve_api::ControlError,
    okd_serve_api::RemovalError,
);

/// Names what was being done in front of an error: `.context("…")`,
/// `.with_context(|| format!(…))` (as anyhow's, for [`ServeError`]).
pub(crate) trait Context<T> {
    /// The error becomes [`ServeError::Failed`] with `context`.
    fn context(self, context: impl Into<String>) -> Result<T, ServeError>;
    /// [`Context::context`] with a context built only on error.
    fn with_context(self, f: impl FnOnce() -> String) -> Result<T, ServeError>;
}

impl<T, E: Into<BoxError>> Context<T> for Result<T, E> {
    fn context(self, context: impl Into<String>) -> Result<T, ServeError> {
        self.map_err(|e| ServeError::Failed {
            context: context.into(),
            source: e.into(),
        })
    }

    fn with_context(self, f: impl FnOnce() -> String) -> Result<T, ServeError> {
        self.map_err(|e| ServeError::Failed {
            context: f(),
            source: e.into(),
        })
    }
}
