//! Why deploy or destroy stopped ([`DeployError`]), and what exists by
//! then ([`Stopped`]).

use std::path::PathBuf;

use crate::UpiError;
use crate::aws::{AwsError, ConnectError};

/// Why deploy or destroy stopped.
#[derive(Debug, thiserror::Error)]
pub enum DeployError {
    /// No credentials.
    #[error(transparent)]
    Connect(#[from] ConnectError),
    /// A failed AWS call.
    #[error(transparent)]
    Aws(#[from] AwsError),
    /// A check before anything is created.
    #[error("{what}: {rule}")]
    Check {
        /// What was checked (`zone us-east-1d`, `AMI ami-…`, a parameter).
        what: String,
        /// The rule broken.
        rule: String,
    },
    /// A stack ended in a failed state.
    #[error("stack {stack} ended {status}: {}", reasons.join("; "))]
    StackFailed {
        /// The stack.
        stack: String,
        /// Its status.
        status: String,
        /// `Resource (Type): reason` for each failed resource, else the
        /// stack's reason.
        reasons: Vec<String>,
    },
    /// A stack took longer than allowed.
    #[error("stack {stack} still {status} after {secs} s (--stack-timeout)")]
    Timeout {
        /// The stack.
        stack: String,
        /// Its status then.
        status: String,
        /// The limit.
        secs: u64,
    },
    /// A file of `create aws-stacks` or `create ignition-configs`.
    #[error("{}: {rule}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        rule: String,
    },
    /// The install's files.
    #[error(transparent)]
    Generate(#[from] crate::generate::GenerateError),
    /// The plan.
    #[error(transparent)]
    Plan(#[from] UpiError),
    /// Writing the state.
    #[error(transparent)]
    Fs(#[from] okd_fs::FsError),
}

/// A deploy that stopped: why, and what exists by then.
#[derive(Debug, thiserror::Error)]
#[error("{error}")]
pub struct Stopped {
    /// Why.
    pub error: DeployError,
    /// What exists ([`State::summary`](super::State::summary)); empty when
    /// nothing was made.
    pub made: Vec<String>,
}
