//! The one gate before a step touches a disk the service named: the
//! `installation-disk-speed-check` step's `path`, which
//! [`crate::net::disk_sync_speed`] overwrites (22 MiB from offset 0), and
//! the install step's `boot_device`.
//!
//! assisted-installer-agent's disk speed check (`src/disk_speed_check`)
//! hands the service's path to `fio --filename=<path>` as it comes, and
//! fio writes a regular file as readily as a disk. The path comes from
//! whatever inventory was posted for the host id, so this agent trusts
//! none of it: [`check`] lets a step use a disk only when
//!
//! 1. its text follows [`okd_assisted_api::DISK_PATH_RULE`] (under
//!    `/dev/`, no `.`/`..`/empty component, no control character);
//! 2. resolved under the agent's [`Root`] (every symlink followed,
//!    `canonicalize`), it is still inside the root's `/dev` (itself
//!    resolved the same way, so a root whose `dev` is a link elsewhere
//!    works);
//! 3. it is a block device there;
//! 4. its device number is that of a disk the host's own inventory
//!    ([`inventory::disks`], gathered afresh for each check) reports as
//!    eligible for installation (`/dev/<name>`, whatever by-id or by-path
//!    link the service used to name it).
//!
//! [`CheckedDisk::open`] then opens it with `O_NOFOLLOW` and checks the
//! open descriptor again (`fstat`: a block device with the same device
//! number), so that replacing the file between the check and the open
//! cannot slip something else in.
//!
//! A refusal ([`DiskRefusal`]) names the step's field, the path and the
//! rule it broke; steps reply with it as their error, exit code -1.

use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use okd_assisted_api::{DISK_PATH_RULE, Disk, disk_path_problem};

use crate::net::{BlockDevice, file_kind};
use crate::{Root, inventory};

/// A disk path a step may use: it passed every rule of [`check`].
#[derive(Debug, Clone)]
pub struct CheckedDisk {
    what: String,
    path: String,
    resolved: PathBuf,
    rdev: u64,
    disk: Disk,
}

/// A step's disk path refused, with the step's field (`what`), the path
/// as the service sent it, and the rule it broke ([`Refusal`], its
/// source). Its [`DiskRefusal::step_error`] is the whole chain, the text
/// a step replies with.
#[derive(Debug, thiserror::Error)]
#[error("{what} {path:?}: refused")]
pub struct DiskRefusal {
    /// The step and field that named the disk, e.g.
    /// `installation-disk-speed-check path`.
    pub what: String,
    /// The path as the service sent it.
    pub path: String,
    /// Why.
    #[source]
    pub reason: Refusal,
}

/// Why [`check`] or [`CheckedDisk::open`] refused a disk path.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Refusal {
    /// The text breaks [`DISK_PATH_RULE`] (`problem` says how).
    #[error("not under /dev: it {problem} (the rule: {DISK_PATH_RULE})")]
    NotUnderDev {
        /// What [`disk_path_problem`] found.
        problem: &'static str,
    },
    /// The root's own `/dev` cannot be resolved.
    #[error("this machine's /dev ({}) cannot be resolved", dev.display())]
    NoDev {
        /// `<root>/dev`.
        dev: PathBuf,
        /// The `canonicalize` error.
        #[source]
        source: io::Error,
    },
    /// `<root>/<path>` cannot be resolved (missing, a dangling link, a
    /// loop of links).
    #[error("{} cannot be resolved", joined.display())]
    Unresolvable {
        /// `<root>/<path>`.
        joined: PathBuf,
        /// The `canonicalize` (or `stat`) error.
        #[source]
        source: io::Error,
    },
    /// Resolved, it is outside the root's `/dev`.
    #[error(
        "a symlink leading out of /dev: it resolves to {}, outside {}",
        resolved.display(),
        dev.display()
    )]
    LeavesDev {
        /// Where it resolves to.
        resolved: PathBuf,
        /// The root's `/dev`, resolved.
        dev: PathBuf,
    },
    /// It is a regular file, a directory, a character device, ….
    #[error("not a block device: {} is {kind}", resolved.display())]
    NotBlockDevice {
        /// Where it resolves to.
        resolved: PathBuf,
        /// What it is instead ([`file_kind`]).
        kind: &'static str,
    },
    /// A block device that is none of the inventory's disks (a partition,
    /// a loop device, another machine's device node, …).
    #[error(
        "not an eligible disk of this host's inventory: block device {major}:{minor} ({}) is none of its disks; {eligible}",
        resolved.display()
    )]
    NotInInventory {
        /// Where it resolves to.
        resolved: PathBuf,
        /// Its device number.
        major: u64,
        /// See `major`.
        minor: u64,
        /// The inventory's eligible disks, in words.
        eligible: String,
    },
    /// One of the inventory's disks, but not eligible for installation.
    #[error("not an eligible disk of this host's inventory: {disk} is not eligible ({reasons})")]
    NotEligible {
        /// The disk's `/dev/<name>`.
        disk: String,
        /// The inventory's reasons, `; `-joined.
        reasons: String,
    },
    /// Opening it for writing failed, or the open descriptor is not a
    /// block device ([`BlockDevice::open`]).
    #[error("on opening")]
    Open {
        /// [`BlockDevice::open`]'s error.
        #[source]
        source: io::Error,
    },
    /// The open descriptor is another device than the one checked.
    #[error(
        "{} changed between its check and its opening (device {checked} checked, {opened} opened)",
        resolved.display()
    )]
    Changed {
        /// Where it resolved to.
        resolved: PathBuf,
        /// `major:minor` checked.
        checked: String,
        /// `major:minor` opened.
        opened: String,
    },
}

impl DiskRefusal {
    /// The refusal and its causes, `: `-joined: the error text of the
    /// step's reply.
    pub fn step_error(&self) -> String {
        let mut text = self.to_string();
        let mut cause: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(self);
        while let Some(c) = cause {
            text.push_str(": ");
            text.push_str(&c.to_string());
            cause = c.source();
        }
        text
    }
}

/// `major:minor` of a device number.
fn dev_text(rdev: u64) -> String {
    format!(
        "{}:{}",
        nix::sys::stat::major(rdev),
        nix::sys::stat::minor(rdev)
    )
}

/// The device number of inventory disk `d` (`<root>/<d.path>`, links
/// followed), when it is a block device.
fn device_of(root: &Root, d: &Disk) -> Option<u64> {
    std::fs::metadata(root.join(&d.path))
        .ok()
        .filter(|m| m.file_type().is_block_device())
        .map(|m| m.rdev())
}

/// Checks `path`, which the step's field `what` (e.g.
/// `installation-disk-speed-check path`) names, against the rules of the
/// module docs, on the machine at `root`. Blocks: it reads `/dev`, `/sys`
/// and the first sector of each disk (the inventory's); run it on a
/// blocking thread.
///
/// # Errors
///
/// [`DiskRefusal`], its [`Refusal`] saying which rule: not under `/dev`,
/// not resolvable, a symlink leading out of `/dev`, not a block device,
/// not an eligible disk of this host's inventory.
pub fn check(root: &Root, what: &str, path: &str) -> Result<CheckedDisk, DiskRefusal> {
    let refuse = |reason: Refusal| DiskRefusal {
        what: what.to_string(),
        path: path.to_string(),
        reason,
    };
    if let Some(problem) = disk_path_problem(path) {
        return Err(refuse(Refusal::NotUnderDev { problem }));
    }
    let dev_link = root.join("/dev");
    let dev = dev_link.canonicalize().map_err(|source| {
        refuse(Refusal::NoDev {
            dev: dev_link.clone(),
            source,
        })
    })?;
    let joined = root.join(path);
    let resolved = joined.canonicalize().map_err(|source| {
        refuse(Refusal::Unresolvable {
            joined: joined.clone(),
            source,
        })
    })?;
    if !resolved.starts_with(&dev) || resolved == dev {
        return Err(refuse(Refusal::LeavesDev { resolved, dev }));
    }
    let meta = std::fs::symlink_metadata(&resolved).map_err(|source| {
        refuse(Refusal::Unresolvable {
            joined: joined.clone(),
            source,
        })
    })?;
    if !meta.file_type().is_block_device() {
        return Err(refuse(Refusal::NotBlockDevice {
            resolved,
            kind: file_kind(meta.file_type()),
        }));
    }
    let rdev = meta.rdev();
    let disks = inventory::disks(root);
    let Some(disk) = disks.iter().find(|d| device_of(root, d) == Some(rdev)) else {
        let eligible: Vec<String> = disks
            .iter()
            .filter(|d| d.installation_eligibility.eligible)
            .map(|d| {
                let mut also: Vec<&str> = Vec::new();
                for (_, p) in d.paths() {
                    if p != d.path && !also.contains(&p) {
                        also.push(p);
                    }
                }
                if also.is_empty() {
                    d.path.clone()
                } else {
                    format!("{} (also {})", d.path, also.join(", "))
                }
            })
            .collect();
        return Err(refuse(Refusal::NotInInventory {
            resolved,
            major: nix::sys::stat::major(rdev),
            minor: nix::sys::stat::minor(rdev),
            eligible: if eligible.is_empty() {
                "it reports no eligible disk".to_string()
            } else {
                format!("its eligible disks: {}", eligible.join(", "))
            },
        }));
    };
    if !disk.installation_eligibility.eligible {
        return Err(refuse(Refusal::NotEligible {
            disk: disk.path.clone(),
            reasons: disk
                .installation_eligibility
                .not_eligible_reasons
                .join("; "),
        }));
    }
    Ok(CheckedDisk {
        what: what.to_string(),
        path: path.to_string(),
        resolved,
        rdev,
        disk: disk.clone(),
    })
}

impl CheckedDisk {
    /// The path as the service sent it.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Where it resolved to (no link left in it).
    pub fn resolved(&self) -> &Path {
        &self.resolved
    }

    /// The inventory's disk it is.
    pub fn disk(&self) -> &Disk {
        &self.disk
    }

    /// Opens the checked device for writing ([`BlockDevice::open`] of the
    /// resolved path: `O_NOFOLLOW`, `fstat` on the descriptor) and checks
    /// that the descriptor is the device [`check`] saw.
    ///
    /// # Errors
    ///
    /// [`Refusal::Open`] (it is gone, or no longer a block device, or the
    /// open failed), [`Refusal::Changed`] (another device).
    pub fn open(&self) -> Result<BlockDevice, DiskRefusal> {
        let refuse = |reason: Refusal| DiskRefusal {
            what: self.what.clone(),
            path: self.path.clone(),
            reason,
        };
        let dev =
            BlockDevice::open(&self.resolved).map_err(|source| refuse(Refusal::Open { source }))?;
        if dev.rdev() != self.rdev {
            return Err(refuse(Refusal::Changed {
                resolved: self.resolved.clone(),
                checked: dev_text(self.rdev),
                opened: dev_text(dev.rdev()),
            }));
        }
        Ok(dev)
    }
}
