//! The record of `serve remove-bootstrap` in the asset directory, so a
//! restarted serve keeps the bootstrap removed: it does not serve
//! bootstrap.ign, leaves the bootstrap's backends out of the load balancer
//! and shows it removed, until `okd-install serve restore-bootstrap`.
//!
//! The record is the file [`REMOVED_FILE`] (mode 0640, written atomically
//! with [`okd_fs::write_atomic`]) holding one line: the RFC 3339 time of the
//! removal.

use std::path::{Path, PathBuf};

use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// The record's file name in the asset directory.
pub const REMOVED_FILE: &str = ".okd-serve-bootstrap-removed";

/// The record's path for `dir`.
pub fn path(dir: &Path) -> PathBuf {
    dir.join(REMOVED_FILE)
}

/// Why the record could not be read, written or deleted; each message names
/// the file (or the running serve's socket).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RemovalError {
    /// The record could not be written.
    #[error("recording the removal of the bootstrap in {}: {source}", path.display())]
    Write {
        /// The record.
        path: PathBuf,
        /// The reason.
        #[source]
        source: okd_fs::FsError,
    },
    /// The record exists but cannot be read.
    #[error("reading {}: {source}", path.display())]
    Read {
        /// The record.
        path: PathBuf,
        /// The reason.
        #[source]
        source: std::io::Error,
    },
    /// The record's line is no RFC 3339 time.
    #[error(
        "{}: {text:?} is not an RFC 3339 time (the time of `serve remove-bootstrap`); \
         delete the file with `okd-install serve restore-bootstrap` to serve the bootstrap again",
        path.display()
    )]
    NotATime {
        /// The record.
        path: PathBuf,
        /// Its (trimmed) content.
        text: String,
    },
    /// `restore-bootstrap` while a serve runs for the directory.
    #[error(
        "`okd-install serve` is running for {} ({}): stop it first, then run `okd-install serve restore-bootstrap --dir {}` and start serve again",
        dir.display(),
        socket.display(),
        okd_fs::shell_path(dir)
    )]
    Running {
        /// The asset directory.
        dir: PathBuf,
        /// The running serve's control socket.
        socket: PathBuf,
    },
    /// The record could not be deleted.
    #[error("deleting {}: {source}", path.display())]
    Delete {
        /// The record.
        path: PathBuf,
        /// The reason.
        #[source]
        source: std::io::Error,
    },
}

/// Records that the bootstrap was removed now, unless it already is
/// recorded (the first time is kept). Returns the recorded time (RFC 3339).
///
/// # Errors
/// [`RemovalError::Write`], or an unreadable existing record.
pub fn record(dir: &Path) -> Result<String, RemovalError> {
    if let Some(t) = recorded(dir)? {
        return Ok(t);
    }
    let t = OffsetDateTime::now_utc()
        .format(&Rfc3339)
        .unwrap_or_default();
    let p = path(dir);
    okd_fs::write_atomic(&p, format!("{t}\n").as_bytes(), 0o640)
        .map_err(|source| RemovalError::Write { path: p, source })?;
    Ok(t)
}

/// The time of the recorded removal, `None` when the bootstrap is not
/// recorded removed.
///
/// # Errors
/// [`RemovalError::Read`] when the file exists but cannot be read,
/// [`RemovalError::NotATime`] when its line is no RFC 3339 time.
pub fn recorded(dir: &Path) -> Result<Option<String>, RemovalError> {
    let p = path(dir);
    let text = match std::fs::read_to_string(&p) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(RemovalError::Read { path: p, source }),
    };
    let t = text.trim();
    if OffsetDateTime::parse(t, &Rfc3339).is_err() {
        return Err(RemovalError::NotATime {
            path: p,
            text: t.to_string(),
        });
    }
    Ok(Some(t.to_string()))
}

/// `okd-install serve restore-bootstrap`: deletes the record so the next
/// serve serves bootstrap.ign and balances to the bootstrap again. Refused
/// while a serve runs for `dir` (it keeps the bootstrap removed until it
/// stops). Returns the text to print.
///
/// # Errors
/// [`RemovalError::Running`] while a serve answers on the control socket,
/// [`RemovalError::Delete`] when the record cannot be deleted.
pub fn restore(dir: &Path) -> Result<String, RemovalError> {
    let sock = crate::control::socket_path(dir);
    if std::os::unix::net::UnixStream::connect(&sock).is_ok() {
        return Err(RemovalError::Running {
            dir: dir.to_path_buf(),
            socket: sock,
        });
    }
    let p = path(dir);
    match std::fs::remove_file(&p) {
        Ok(()) => Ok(format!(
            "the removal of the bootstrap is undone ({} deleted): the next `okd-install serve` serves bootstrap.ign to the bootstrap host and balances to it again\n",
            p.display()
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Ok("the bootstrap was not recorded removed: nothing to undo\n".to_string())
        }
        Err(source) => Err(RemovalError::Delete { path: p, source }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_keeps_the_first_time_and_restore_deletes_it() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(recorded(d.path()).unwrap(), None);
        let t = record(d.path()).unwrap();
        assert_eq!(recorded(d.path()).unwrap().as_deref(), Some(t.as_str()));
        assert_eq!(record(d.path()).unwrap(), t);
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(path(d.path()))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o640);
        assert!(restore(d.path()).unwrap().contains("undone"));
        assert_eq!(recorded(d.path()).unwrap(), None);
        assert!(restore(d.path()).unwrap().contains("nothing to undo"));
        std::fs::write(path(d.path()), "yesterday\n").unwrap();
        let e = recorded(d.path()).unwrap_err().to_string();
        assert!(e.contains(REMOVED_FILE) && e.contains("RFC 3339"), "{e}");
    }
}
