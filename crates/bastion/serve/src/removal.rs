//! The record of `serve remove-bootstrap` in the asset directory, so a
//! restarted serve keeps the bootstrap removed: it does not serve
//! bootstrap.ign, leaves the bootstrap's backends out of the load balancer
//! and shows it removed, until `okd-install serve restore-bootstrap`.
//!
//! The record is the file [`REMOVED_FILE`] (mode 0640, written atomically
//! with [`okd_fs::write_atomic`]) holding one line: the RFC 3339 time of the
//! removal.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// The record's file name in the asset directory.
pub const REMOVED_FILE: &str = ".okd-serve-bootstrap-removed";

/// The record's path for `dir`.
pub(crate) fn path(dir: &Path) -> PathBuf {
    dir.join(REMOVED_FILE)
}

/// Records that the bootstrap was removed now, unless it already is
/// recorded (the first time is kept). Returns the recorded time (RFC 3339).
///
/// # Errors
/// The file cannot be written (the error names it).
pub fn record(dir: &Path) -> anyhow::Result<String> {
    if let Some(t) = recorded(dir)? {
        return Ok(t);
    }
    let t = OffsetDateTime::now_utc()
        .format(&Rfc3339)
        .unwrap_or_default();
    let p = path(dir);
    okd_fs::write_atomic(&p, format!("{t}\n").as_bytes(), 0o640)
        .with_context(|| format!("recording the removal of the bootstrap in {}", p.display()))?;
    Ok(t)
}

/// The time of the recorded removal, `None` when the bootstrap is not
/// recorded removed.
///
/// # Errors
/// The file exists but cannot be read, or its line is no RFC 3339 time
/// (the error names the file).
pub fn recorded(dir: &Path) -> anyhow::Result<Option<String>> {
    let p = path(dir);
    let text = match std::fs::read_to_string(&p) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("reading {}", p.display())),
    };
    let t = text.trim();
    OffsetDateTime::parse(t, &Rfc3339).with_context(|| {
        format!(
            "{}: {t:?} is not an RFC 3339 time (the time of `serve remove-bootstrap`); \
             delete the file with `okd-install serve restore-bootstrap` to serve the bootstrap again",
            p.display()
        )
    })?;
    Ok(Some(t.to_string()))
}

/// `okd-install serve restore-bootstrap`: deletes the record so the next
/// serve serves bootstrap.ign and balances to the bootstrap again. Refused
/// while a serve runs for `dir` (it keeps the bootstrap removed until it
/// stops). Returns the text to print.
///
/// # Errors
/// A serve runs for `dir`, or the record cannot be deleted.
pub fn restore(dir: &Path) -> anyhow::Result<String> {
    let sock = crate::control::socket_path(dir);
    if std::os::unix::net::UnixStream::connect(&sock).is_ok() {
        anyhow::bail!(
            "`okd-install serve` is running for {} ({}): stop it first, then run `okd-install serve restore-bootstrap` and start serve again",
            dir.display(),
            sock.display()
        );
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
        Err(e) => Err(e).with_context(|| format!("deleting {}", p.display())),
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
        let e = format!("{:#}", recorded(d.path()).unwrap_err());
        assert!(e.contains(REMOVED_FILE) && e.contains("RFC 3339"), "{e}");
    }
}
