//! The API of `okd-install serve`, for the server and its clients alike:
//!
//! * [`control`]: the control socket's protocol ([`Request`], replies,
//!   [`ControlError`]) and its clients ([`control_reply`],
//!   [`control_reply_async`], [`status_async`], [`remove_bootstrap`]);
//! * [`status`]: the `/status` document as typed serde structs
//!   ([`StatusDocument`]);
//! * [`lb`]: the load balancer's snapshot inside it (okd-lb fills these);
//! * [`removal`]: the record of the bootstrap's removal in the asset
//!   directory ([`BOOTSTRAP_REMOVED_FILE`]).
//!
//! Workstation commands (`wait-for`, `destroy`) depend on this crate, not on
//! the servers: it opens no port and runs no service.

pub mod control;
pub mod lb;
pub mod preflight;
pub mod removal;
pub mod status;

pub use control::{
    ControlError, REPLY_TIMEOUT, Request, SOCKET, control_reply, control_reply_async,
    remove_bootstrap, socket_path, status_async,
};
pub use removal::{REMOVED_FILE as BOOTSTRAP_REMOVED_FILE, RemovalError, restore};
pub use status::StatusDocument;
