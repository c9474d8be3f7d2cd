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
    /// A check of the account before anything is created: it lacks or
    /// does not allow what the inputs name (exit code 4, infrastructure).
    #[error("{what}: {rule}")]
    Check {
        /// What was checked (`zone us-east-1d`, `AMI ami-…`, `stack …`,
        /// `hosted zone …`, an install-config field against the account).
        what: String,
        /// The rule broken.
        rule: String,
    },
    /// An input alone breaks a rule (a stack parameter file, a value it
    /// needs and lacks): exit code 3, as install-config errors.
    #[error("{what}: {rule}")]
    Input {
        /// The file and field, e.g. `aws/c-abcde-vpc.parameters.json: X`.
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
    /// A file of `create aws-stacks` or `create ignition-configs` (or
    /// deploy's own record) that is missing or cannot be read: run the step
    /// that makes it (exit code 1).
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

/// Exit codes (okd-types `exit`): the inputs alone wrong 3; the account or
/// its stacks 4; a missing earlier step, credentials, a failed AWS call 1.
impl okd_types::exit::ExitClass for DeployError {
    fn exit_class(&self) -> okd_types::exit::Exit {
        use okd_types::exit::Exit;
        match self {
            DeployError::Input { .. } | DeployError::Plan(_) => Exit::InstallConfig,
            DeployError::Check { .. }
            | DeployError::StackFailed { .. }
            | DeployError::Timeout { .. } => Exit::Infrastructure,
            DeployError::Generate(e) => e.exit_class(),
            DeployError::Connect(_)
            | DeployError::Aws(_)
            | DeployError::File { .. }
            | DeployError::Fs(_) => Exit::Failed,
        }
    }
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
