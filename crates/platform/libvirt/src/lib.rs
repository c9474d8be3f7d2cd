//! libvirt for `okd-install create cluster`: the networks, storage pools,
//! volumes and VMs of a cluster described by a kcli-style parameter file
//! (`okd-paramfile`), driven through one long-lived `virsh` process.
//!
//! # Why `virsh` and not the libvirt binding
//!
//! The `okd-install` binary is one program: the same executable that runs on
//! the workstation also runs on CoreOS nodes (bootstrap, control plane),
//! which have no libvirt. Linking `libvirt.so` (the `virt` crate) would make
//! the binary fail to start there. `virsh` (Debian package
//! `libvirt-clients`) is what kcli users already have on the hypervisor
//! host, speaks every libvirt URI (`qemu:///system`, `qemu+ssh://…`,
//! `test:///…`) and prints libvirt's own error messages, which we pass on.
//!
//! # One session, not one process per command
//!
//! A [`Virsh`] keeps a single `virsh -q -c <uri>` child and writes commands
//! to its interactive shell on stdin; stdout and stderr share one pipe. That
//! matters for two reasons:
//!
//! - libvirt's test driver (`test:///default`, or `test:///<abs path>` to a
//!   node XML file, <https://libvirt.org/drvtest.html>) lives inside the
//!   client process, so every new `virsh` starts from the initial state: a
//!   domain defined by one process is gone for the next. With one session
//!   the test driver behaves like a hypervisor, and the tests of this crate
//!   run against it, not against mocks.
//! - A `virsh` process costs some 15–20 ms to start and connect; a command
//!   in a running session about 0.5 ms with the test driver, `define` and
//!   its temporary file included (`benches/define_start.rs`: 50 VMs created
//!   30 times faster than with one process per command).
//!
//! ## The protocol
//!
//! Each command is written as two lines, `echo '<tag>''B<n>' ; <command>`
//! and `echo '<tag>''E<n>'`, and its answer is what virsh prints between
//! `<tag>B<n>` and `<tag>E<n>`: its output and `error:` lines. The split
//! quoting keeps the markers out of readline's echo of the input (virsh
//! echoes `virsh # <line>` when stdin is not a terminal, and garbles lines
//! wider than the terminal, so that echo is only cut off, never parsed; the
//! child gets a wide `COLUMNS`). The end marker has its own line because
//! virsh drops a whole line it cannot parse (unknown command or option):
//! then only the end marker comes, after the `error:` lines. virsh flushes
//! stdout before it writes an error to stderr, so the shared pipe keeps
//! the order. Arguments are single-quoted for virsh's own parser (`'` as
//! `'\''`); control characters (newline, tab, escape) are refused, as
//! readline would act on them. Option values go as `--name=value`, so a
//! name starting with `--` is never read as an option. XML goes through
//! temporary files (`define --file=…`), except the one-line `<host/>` of
//! `net-update`.
//!
//! The child runs with `LC_ALL=C` so that `net-info`/`pool-info` labels and
//! virsh's messages are the English ones matched here. It is killed when
//! the [`Virsh`] is dropped. A command without an answer within
//! [`Virsh::timeout`] closes the session ([`LibvirtError::Timeout`]).
//!
//! # VMs
//!
//! [`domain_xml`] writes the domain XML of a [`DomainSpec`] (libvirt
//! formatdomain, <https://libvirt.org/formatdomain.html>); the Ignition
//! config reaches the guest through QEMU's fw_cfg (`opt/com.coreos/config`)
//! and the cluster name and role are recorded in `<metadata>` under
//! [`METADATA_NS`], read back by [`domain_owner`] so that `destroy` removes
//! only our VMs.

mod domain;
mod session;
mod virsh;
mod xml;

pub use domain::{
    DiskSpec, DomainSpec, IGNITION_FW_CFG_NAME, METADATA_NS, NicSpec, SIDE_DISK_SERIAL,
    domain_owner, domain_vrid, domain_xml,
};
pub use session::{DEFAULT_TIMEOUT, Virsh};
pub use xml::{DhcpHost, DnsHost, Network, NetworkIp, Pool};

use std::time::Duration;

/// The Debian package that ships `virsh`.
pub const VIRSH_PACKAGE: &str = "libvirt-clients";

/// What went wrong talking to libvirt. The text never repeats a `#[source]`;
/// print the chain to see it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LibvirtError {
    /// The `virsh` program is not installed (or not on `PATH`).
    #[error(
        "`{program}` not found: install the Debian package {package} (apt-get install -y {package})"
    )]
    Missing {
        /// The program looked for, `virsh`.
        program: String,
        /// The Debian package that ships it, [`VIRSH_PACKAGE`].
        package: &'static str,
    },
    /// virsh could not connect to the URI (it printed `message` and exited).
    #[error("cannot connect to libvirt at {uri}: {message}")]
    Connect {
        /// The libvirt URI, e.g. `qemu:///system`.
        uri: String,
        /// virsh's `error:` lines, joined by `: `.
        message: String,
    },
    /// A libvirt object looked up by name does not exist.
    #[error("libvirt {kind} '{name}' not found")]
    NotFound {
        /// `network`, `pool`, `domain` or `volume`.
        kind: &'static str,
        /// The name looked up.
        name: String,
    },
    /// A virsh command printed `error:` lines.
    #[error("virsh {command}: {message}")]
    Command {
        /// The command line as sent (quoted for virsh), e.g. `start --domain=c1-master-0`.
        command: String,
        /// virsh's `error:` lines without the prefix, joined by `: `.
        message: String,
    },
    /// virsh exited while a command was running.
    #[error("virsh exited during `{command}`{}", if output.is_empty() { String::new() } else { format!(": {output}") })]
    Exited {
        /// The command line that was running.
        command: String,
        /// virsh's last `error:` lines, joined by `: ` (may be empty).
        output: String,
    },
    /// A command gave no answer in time; the session was killed.
    #[error("virsh {command}: no answer within {timeout:?}, session closed")]
    Timeout {
        /// The command line that was running.
        command: String,
        /// The limit, [`Virsh::timeout`].
        timeout: Duration,
    },
    /// The session was closed by an earlier timeout or exit; connect again.
    #[error("the virsh session to {uri} is closed (an earlier command timed out or virsh exited)")]
    Closed {
        /// The session's URI.
        uri: String,
    },
    /// An argument cannot be passed through virsh's interactive shell.
    #[error("virsh {command}: argument {arg:?} {rule}")]
    Argument {
        /// The virsh command (first argument).
        command: String,
        /// The offending argument.
        arg: String,
        /// The rule broken.
        rule: &'static str,
    },
    /// An I/O error talking to virsh or writing a temporary file.
    #[error("{action}")]
    Io {
        /// What was being done, e.g. `starting virsh`.
        action: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// virsh printed something this crate cannot read.
    #[error("reading the output of virsh {what}: {message}")]
    Parse {
        /// The command whose output it was, e.g. `net-dumpxml --network=default`.
        what: String,
        /// What is wrong with it.
        message: String,
    },
}
