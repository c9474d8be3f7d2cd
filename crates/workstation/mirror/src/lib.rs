//! Disconnected installs (issue #4): copying a release to the mirror.
//!
//! [`release`] mirrors a release payload (`oc adm release mirror`): it reads
//! `release-manifests/image-references` from the release image and copies
//! the release and every component by digest with [`copy::copy`], over the
//! OCI distribution API ([`client`]) or into/out of an OCI image layout
//! ([`layout`], `mirror to-disk` / `from-disk`). [`commands`] are those
//! three commands with their messages.
//!
//! The local mirror registry (`mirror registry init|start|stop`) is the
//! `okd-mirror-registry` crate.

pub mod auth;
pub mod client;
pub mod commands;
pub mod copy;
pub mod layout;
pub mod locations;
pub mod oci;
pub mod proxy;
pub mod release;
