//! The errors of `gather bootstrap`: one variant per way it can fail, each
//! naming the host, file or program concerned.

use std::path::PathBuf;

/// Why `gather bootstrap` failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GatherError {
    /// No `--bootstrap` (openshift-install's text: on platform none there is
    /// no provider to ask for the address).
    #[error(
        "must provide bootstrap host address: give --bootstrap, or put bastion-config.yaml and agent-config.yaml with the bootstrap host beside the assets"
    )]
    NoBootstrap,
    /// The inventory beside the assets (`agent-config.yaml`,
    /// `bastion-config.yaml`), read for the bootstrap's address, does not load.
    #[error("reading the hosts for the bootstrap's address")]
    Hosts(#[source] okd_hosts::HostsError),
    /// A `--bootstrap`/`--master`/`--ssh-user` value that is not a host
    /// name, an IP address or a user name (it goes on an SSH command line).
    #[error("{flag} {value:?}: {rule}")]
    BadArgument {
        /// The flag, e.g. `--master`.
        flag: &'static str,
        /// The value given.
        value: String,
        /// What a value must look like.
        rule: &'static str,
    },
    /// A `--key` file that cannot be read.
    #[error("cannot read the SSH key {}", path.display())]
    KeyUnreadable {
        /// The file.
        path: PathBuf,
        /// The operating system's reason.
        #[source]
        source: std::io::Error,
    },
    /// `ssh-add` refused a key (bad format, or a passphrase, which needs your
    /// own ssh-agent: add the key there and leave out `--key`).
    #[error("ssh-add cannot load the SSH key {key}: {detail}")]
    KeyRejected {
        /// The key as the user knows it (a path, or the installer's bootstrap key).
        key: String,
        /// ssh-add's message.
        detail: String,
    },
    /// The state file exists but its bootstrap SSH key entry cannot be read.
    #[error("reading the installer's bootstrap SSH key from the state file")]
    State(#[source] okd_assets::AssetError),
    /// The bootstrap key could not be written to its temporary file.
    #[error("writing the installer's bootstrap SSH key to a temporary file")]
    TempKey(#[source] std::io::Error),
    /// A program (ssh, ssh-agent, ssh-add) could not be started.
    #[error("cannot run {program} (Debian package openssh-client)")]
    Program {
        /// The program.
        program: &'static str,
        /// The operating system's reason.
        #[source]
        source: std::io::Error,
    },
    /// The private ssh-agent did not come up.
    #[error("the ssh-agent for this run did not start: {0}")]
    Agent(String),
    /// The bootstrap host could not be reached (refused, no route, timeout, name).
    #[error("failed to connect to the bootstrap machine {target}: {detail}")]
    Connect {
        /// `user@host:22`.
        target: String,
        /// ssh's message.
        detail: String,
    },
    /// The bootstrap host refused every key.
    #[error("failed to use the provided keys for authentication to {target} (keys tried: {keys})")]
    Auth {
        /// `user@host:22`.
        target: String,
        /// The keys offered, as the user knows them.
        keys: String,
    },
    /// installer-gather.sh failed on the bootstrap host.
    #[error("failed to run {command} on {target} (exit status {status}): {detail}")]
    Remote {
        /// `user@host:22`.
        target: String,
        /// The remote command.
        command: String,
        /// Its exit status.
        status: i32,
        /// The last lines it printed.
        detail: String,
    },
    /// The bundle could not be copied from the bootstrap host.
    #[error("failed to pull {remote} from {target}: {detail}")]
    Download {
        /// `user@host:22`.
        target: String,
        /// The remote file.
        remote: String,
        /// ssh's message.
        detail: String,
    },
    /// A bundle could not be read or written.
    #[error("{action} the log bundle {}", path.display())]
    Bundle {
        /// What was being done.
        action: &'static str,
        /// The bundle.
        path: PathBuf,
        /// The reason.
        #[source]
        source: std::io::Error,
    },
    /// Writing a file (atomically) failed.
    #[error(transparent)]
    Fs(#[from] okd_fs::FsError),
}
