//! The openshift-install asset graph in Rust: install-config → manifests →
//! Ignition configs, PKI, auth and metadata, with openshift-install's commands,
//! directory semantics and file formats (openshift/installer `pkg/asset/`,
//! `cmd/openshift-install/` and `data/data/`).
//!
//! * [`store`]: typed assets, the load/fetch/save/purge walk, the state file.
//! * [`targets`]: what each `create` command produces.
//! * [`recorded`]: typed reads of the state file for commands outside the
//!   graph, and [`InstallFacts`], the one reader of an asset directory's
//!   install-config, release and state for them.
//! * one module per family: [`installconfig`], [`tls`], [`manifests`] (with
//!   [`filelist`], what the manifest assets share), [`machines`], [`cvo`],
//!   [`kubeconfig`], [`password`], [`pointer`] (master/worker.ign),
//!   [`ignition`] (bootstrap.ign), [`metadata`]. Modules depend one way:
//!   `filelist` ← `manifests`, `pointer` ← `machines` ← `cvo` ← `ignition`;
//!   [`ctx`], [`error`] and [`dir`] import no asset module (`tests/layering.rs`
//!   checks that no modules import each other in a circle).
//!
//! Generation is synchronous (a one-shot tool); the only concurrency is the RSA
//! key pool in [`ctx::GenCtx`], which generates keys on background threads
//! while the graph is walked.

pub mod blobs;
pub mod ctx;
pub mod cvo;
pub mod dir;
pub mod error;
pub mod filelist;
pub mod ignition;
pub mod installconfig;
pub mod kubeconfig;
pub mod machines;
pub mod manifests;
pub mod metadata;
mod network_crd;
pub mod node_identities;
pub mod node_program;
pub mod password;
pub mod pointer;
pub mod recorded;
pub mod store;
pub mod targets;
pub mod tls;

pub use ctx::GenCtx;
pub use dir::AssetDir;
pub use error::{AssetError, chain};
pub use recorded::InstallFacts;
pub use targets::{Target, create};
