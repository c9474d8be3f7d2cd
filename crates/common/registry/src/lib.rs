//! Talking to container registries and reading release payloads.
//!
//! [`client`] speaks the OCI distribution API (opencontainers/distribution-spec
//! `spec.md`) with the registries' token auth ([`auth`], the Docker
//! `config.json` / `auth.json` formats) and the proxy environment
//! ([`proxy`]); [`layout`] reads and writes OCI image layouts
//! (opencontainers/image-spec `image-layout.md`); [`oci`] holds digests,
//! references and manifests. [`release`] reads a release payload's
//! `release-manifests/image-references` (`oc adm release info`'s source)
//! and [`copy`] copies images by digest between registries and layouts.
//!
//! The workstation's mirror (`okd-mirror`) and the bootstrap node's release
//! pull (`okd-bootstrap`) both use it, which is why it lives in
//! `crates/common`.

pub mod auth;
pub mod client;
pub mod copy;
pub mod layout;
pub mod locations;
pub mod oci;
pub mod proxy;
pub mod release;
