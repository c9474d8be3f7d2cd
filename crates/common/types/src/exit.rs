//! okd-install's exit codes: one table for every command.
//!
//! The codes are openshift-install's where it has the class
//! (openshift/installer `cmd/openshift-install/create.go`: 3 install-config
//! error, 4 infrastructure failed, 5 bootstrap failed, 6 install failed,
//! 7 operators not stable, 8 interrupted, 1 anything else) plus clap's 2 for
//! a command line it cannot parse. Every command's error type says which
//! class each of its errors is in ([`ExitClass`]), so the same cause ends
//! with the same code whichever command meets it. The README's "Exit codes"
//! table is this enum; a test keeps the two equal.

/// A class of failure and its exit code (`Exit::InstallConfig as u8 == 3`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Exit {
    /// Anything not in another class: a file an earlier step makes is
    /// missing (the message names the step), I/O, a network peer that did
    /// not answer or refused.
    Failed = 1,
    /// The command line cannot be parsed: an unknown flag or subcommand, a
    /// value of the wrong form (clap's own exit code).
    Usage = 2,
    /// An install input breaks a rule, found before anything is made:
    /// install-config.yaml, or what stands in for it or is read beside it
    /// (the flags and prompts of `create install-config`, a kcli parameter
    /// file, agent-config.yaml, a stack parameter file, a flag of
    /// `create aws-stacks`).
    InstallConfig = 3,
    /// The infrastructure refused or lacks what the inputs name: an AMI,
    /// zone, subnet or hosted zone the AWS account does not have, a stack
    /// of that name not this install's, a stack that rolled back or timed
    /// out (`aws deploy`, `aws destroy`).
    Infrastructure = 4,
    /// The bootstrap did not complete (`wait-for bootstrap-complete`, the
    /// bootstrap node's program).
    Bootstrap = 5,
    /// The install did not complete (`wait-for install-complete`).
    Install = 6,
    /// The cluster operators did not settle (`wait-for install-complete`).
    Operators = 7,
    /// The user stopped the command (Ctrl-C at a prompt) before it finished;
    /// nothing half-written is left.
    Interrupted = 8,
}

impl Exit {
    /// Every class, in code order (the README's table lists the same rows).
    pub const ALL: [Exit; 8] = [
        Exit::Failed,
        Exit::Usage,
        Exit::InstallConfig,
        Exit::Infrastructure,
        Exit::Bootstrap,
        Exit::Install,
        Exit::Operators,
        Exit::Interrupted,
    ];

    /// The process exit code, 1–8.
    pub fn code(self) -> u8 {
        self as u8
    }

    /// The class's name as the README's table gives it, e.g.
    /// `install-config error`.
    pub fn name(self) -> &'static str {
        match self {
            Exit::Failed => "failed",
            Exit::Usage => "usage",
            Exit::InstallConfig => "install-config error",
            Exit::Infrastructure => "infrastructure failed",
            Exit::Bootstrap => "bootstrap failed",
            Exit::Install => "install failed",
            Exit::Operators => "operators not stable",
            Exit::Interrupted => "interrupted",
        }
    }
}

/// An error type that knows the [`Exit`] class of each of its values.
/// Implementations match every variant explicitly (no `_` arm), so a new
/// variant cannot be added without choosing its class.
pub trait ExitClass {
    /// The class this error ends its command with.
    fn exit_class(&self) -> Exit;
}

#[cfg(test)]
mod tests {
    use super::Exit;

    #[test]
    fn codes_are_one_to_eight_in_order_and_names_are_distinct() {
        for (i, e) in Exit::ALL.iter().enumerate() {
            assert_eq!(usize::from(e.code()), i + 1, "{e:?}");
        }
        let mut names: Vec<_> = Exit::ALL.iter().map(|e| e.name()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), Exit::ALL.len());
    }
}
