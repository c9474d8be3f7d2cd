//! The bastion layer of a user-provisioned OKD/OpenShift 4 install
//! (issue #3): what the bare-metal guide's bastion ran by hand.
//!
//! * [`kargs`]: the kernel arguments each node boots with (coreos-installer
//!   and dracut `ip=`, `infra-tools.md` E).
//! * [`http`]: the HTTP server of `okd-install serve` (port 8080): Ignition
//!   files, CoreOS images with `Range` and `.sha256`, per-MAC iPXE, GRUB and
//!   pxelinux scripts.
//! * [`pxe`]: those boot scripts as text.
//! * [`configs`]: `okd-install create bastion-configs`, the same layer as
//!   configuration files for real daemons (haproxy, keepalived, dnsmasq,
//!   BIND, CoreDNS) and the PXE tree.

pub mod configs;
pub mod http;
pub mod kargs;
pub mod pxe;

pub use configs::{GeneratedFile, bastion_configs};
pub use http::{HttpError, HttpObserver, HttpState, bind, router, serve};
pub use kargs::{kernel_args, pxe_kernel_args};
