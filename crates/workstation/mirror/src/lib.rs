//! Disconnected installs (issue #4): copying a release to the mirror.
//!
//! [`commands`] are `mirror release`, `mirror to-disk` and `mirror
//! from-disk` with their messages: they read `release-manifests/image-references`
//! from the release image and copy the release and every component by
//! digest, over the OCI distribution API or into/out of an OCI image
//! layout. The registry client, the layouts and the release reading are
//! `okd-registry` (re-exported here under their old paths); the local
//! mirror registry (`mirror registry init|start|stop`) is the
//! `okd-mirror-registry` crate.

pub mod commands;

pub use okd_registry::{auth, client, copy, layout, locations, oci, proxy, release};
