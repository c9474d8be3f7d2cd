//! The low-level probes behind the agent's steps, done in-process where
//! openshift/assisted-installer-agent runs tools:
//!
//! - [`arp_probe`]: who answers ARP for an IPv4 address on an interface
//!   (its `arping -c … -w … -I <if> <ip>`, RFC 826), for the free-addresses
//!   and connectivity checks;
//! - [`ping`]: ICMP echo round trips (its `ping -c … -i … -W …`, RFC 792 /
//!   RFC 4443), for the connectivity check;
//! - [`disk_sync_speed`]: the 99th percentile of `fdatasync` latency of
//!   small sequential writes (its `fio --rw=write --ioengine=sync
//!   --size=22m --bs=2300 --fdatasync=1`), for the installation disk speed
//!   check, on a block device only ([`BlockDevice`]).
//!
//! All three block; callers on the runtime use
//! `tokio::task::spawn_blocking`. The network probes use raw sockets and so
//! need root (`CAP_NET_RAW`), which the agent has. They act in the network
//! namespace of the calling thread, which is how the tests run them between
//! two namespaces of their own.
//!
//! No `unsafe`: the workspace forbids it. The packet socket is opened with
//! `socket2` and bound to the link-layer address `getifaddrs` reports for
//! the interface (a `sockaddr_ll` carrying its index), through `nix`.
//!
//! Its parts: `arp` (the ARP probe and scan, with their frames), `echo`
//! (ICMP echo round trips) over the packets of `icmp`, and `disk` (the
//! disk's `fdatasync` latency).

use std::io;

mod arp;
mod disk;
mod echo;
mod icmp;
#[cfg(test)]
mod netns;

pub use arp::{ARP_RESEND_INTERVAL, arp_probe, arp_scan};
pub use disk::{
    BlockDevice, DISK_SPEED_BLOCK, DISK_SPEED_SIZE, DiskSpeed, disk_sync_speed, file_kind,
};
pub use echo::{PingStats, ping, ping_full_size};

/// Whether a socket read ended because its receive timeout passed.
fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}
