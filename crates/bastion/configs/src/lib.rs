//! The bastion layer of a user-provisioned OKD/OpenShift 4 install
//! as generated text, with no servers: what the bare-metal guide's bastion
//! ran by hand.
//!
//! * [`kargs`]: the kernel arguments each node boots with (coreos/coreos-installer
//!   `docs/getting-started.md`, and dracut `ip=` from dracutdevs/dracut
//!   `man/dracut.cmdline.7.asc`).
//! * [`pxe`]: per-MAC iPXE, GRUB and pxelinux boot scripts as text (served
//!   by `okd-bootserver`, the HTTP server of `okd-install serve`).
//! * [`configs`]: `okd-install create bastion-configs`, the same layer as
//!   configuration files for real daemons (haproxy, keepalived, dnsmasq,
//!   BIND, CoreDNS) and the PXE tree.

pub mod configs;
pub mod kargs;
pub mod pxe;

pub use configs::{GeneratedFile, bastion_configs, bastion_configs_with_serial};
pub use kargs::{kernel_args, pxe_kernel_args};
