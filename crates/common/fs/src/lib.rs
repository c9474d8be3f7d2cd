//! The workspace's one file writer, and the rules for the directories it writes to.
//!
//! * [`write_atomic`]: a temporary file in the target's directory (name prefix
//!   [`TEMP_PREFIX`]), written, given its exact mode, fsynced, renamed over the
//!   target, and the directory fsynced (rename(2) is atomic within a file
//!   system; see POSIX `rename` and Linux `fsync(2)` on directory entries). A
//!   reader sees the old file or the new one, never a part.
//! * [`create_dir_all`] / [`open_append`]: directories and append-only files
//!   whose mode is exact from their creation, whatever the umask: they are
//!   created with the wanted mode (the kernel can only narrow it through the
//!   umask), then set to the exact mode before anything is written, so there
//!   is no moment in which they are wider than asked.
//! * [`DirLock`]: an exclusive `flock(2)` on [`LOCK_FILE`] in a directory, so
//!   two runs cannot interleave their writes; the holder's PID is in the file
//!   and the second run is told which process holds it.
//! * [`sweep_temp_files`]: removes the temporary files an interrupted run left
//!   behind (this crate's [`TEMP_PREFIX`], the OCI layout's [`PARTIAL_PREFIX`]).
//!   Call it only while holding the directory's [`DirLock`].

use std::fs::{self, File, OpenOptions};
use std::io::{Read as _, Seek as _, Write as _};
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Name prefix of the temporary files [`write_atomic`] creates next to its target.
pub const TEMP_PREFIX: &str = ".okd-install-";

/// Name prefix of the blob files the mirror's OCI layout writes while
/// downloading (`crates/workstation/mirror/src/layout.rs`), renamed once their digest matches.
pub const PARTIAL_PREFIX: &str = ".partial-";

/// The lock file [`DirLock::acquire`] creates in a directory.
pub const LOCK_FILE: &str = ".openshift_install.lock";

/// Mode of directories created for written files (openshift-install's 0750).
pub const DIR_MODE: u32 = 0o750;

/// Errors of this crate. The messages name the path; the `source` carries the
/// operating system's reason (print the chain to see both).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FsError {
    /// A file system call failed.
    #[error("{action} {}", path.display())]
    Io {
        /// What was being done, e.g. `renaming into place`.
        action: &'static str,
        /// The file or directory concerned.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// Another process holds the directory's lock.
    #[error(
        "the directory {} is in use by another run ({}); wait for it to finish, or stop it",
        dir.display(),
        match pid { Some(p) => format!("process {p} holds {LOCK_FILE}"), None => format!("{LOCK_FILE} is locked") }
    )]
    Locked {
        /// The directory.
        dir: PathBuf,
        /// The holder's PID as it wrote it into the lock file, if readable.
        pid: Option<u32>,
    },
}

fn io<'a>(action: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> FsError + 'a {
    move |source| FsError::Io {
        action,
        path: path.to_path_buf(),
        source,
    }
}

/// The directory a path's file lives in (`.` for a bare file name).
fn parent_of(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// Gives an open file exactly `mode` (permission bits and setuid/setgid/sticky).
fn set_mode(file: &File, mode: u32, path: &Path) -> Result<(), FsError> {
    let have = file
        .metadata()
        .map_err(io("reading the mode of", path))?
        .permissions()
        .mode()
        & 0o7777;
    if have != mode {
        file.set_permissions(fs::Permissions::from_mode(mode))
            .map_err(io("setting the mode of", path))?;
    }
    Ok(())
}

/// Creates `dir` and its missing parents, each new one with exactly `mode`
/// whatever the umask. Existing directories are left as they are.
///
/// # Errors
/// [`FsError::Io`] naming the directory that could not be created.
pub fn create_dir_all(dir: &Path, mode: u32) -> Result<(), FsError> {
    if dir.as_os_str().is_empty() || dir.is_dir() {
        return Ok(());
    }
    if let Some(parent) = dir.parent() {
        create_dir_all(parent, mode)?;
    }
    match fs::DirBuilder::new().mode(mode).create(dir) {
        Ok(()) => {
            // mkdir(2) applied the umask, which can only have narrowed `mode`.
            let f = File::open(dir).map_err(io("opening", dir))?;
            set_mode(&f, mode, dir)
        }
        // Made by someone else meanwhile: theirs to keep.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && dir.is_dir() => Ok(()),
        Err(e) => Err(io("creating directory", dir)(e)),
    }
}

/// Writes `data` to `path` atomically with exactly `mode`: a temporary file
/// named [`TEMP_PREFIX`]`*` in the same directory (created 0600), written,
/// set to `mode`, fsynced, renamed over `path`; then the directory is fsynced.
/// Missing parent directories are created with [`DIR_MODE`].
///
/// # Errors
/// [`FsError::Io`] naming the step and the path; the temporary file is removed.
pub fn write_atomic(path: &Path, data: &[u8], mode: u32) -> Result<(), FsError> {
    let dir = parent_of(path);
    create_dir_all(dir, DIR_MODE)?;
    let mut tmp = tempfile::Builder::new()
        .prefix(TEMP_PREFIX)
        .tempfile_in(dir)
        .map_err(io("creating a temporary file in", dir))?;
    tmp.write_all(data).map_err(io("writing", path))?;
    set_mode(tmp.as_file(), mode, path)?;
    tmp.as_file().sync_all().map_err(io("syncing", path))?;
    tmp.persist(path)
        .map_err(|e| io("renaming into place", path)(e.error))?;
    // The rename is durable once the directory entry is on disk.
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io("syncing directory", dir))
}

/// [`write_atomic`] for data that does not fit in memory or arrives as a
/// stream: `fill` writes the content into the temporary file (created 0600 in
/// `path`'s directory, named [`TEMP_PREFIX`]`*`); when it returns `Ok`, the
/// file gets exactly `mode`, is fsynced and renamed over `path`, and the
/// directory is fsynced. When `fill` fails, the temporary file is removed,
/// `path` is left as it was, and `fill`'s error is returned.
///
/// # Errors
/// `fill`'s error, or an [`FsError::Io`] (converted into `E`) naming the
/// step and the path.
pub fn write_atomic_with<E, F>(path: &Path, mode: u32, fill: F) -> Result<(), E>
where
    E: From<FsError>,
    F: FnOnce(&mut File) -> Result<(), E>,
{
    let dir = parent_of(path);
    create_dir_all(dir, DIR_MODE)?;
    let mut tmp = tempfile::Builder::new()
        .prefix(TEMP_PREFIX)
        .tempfile_in(dir)
        .map_err(io("creating a temporary file in", dir))?;
    fill(tmp.as_file_mut())?;
    tmp.as_file_mut().flush().map_err(io("writing", path))?;
    set_mode(tmp.as_file(), mode, path)?;
    tmp.as_file().sync_all().map_err(io("syncing", path))?;
    tmp.persist(path)
        .map_err(|e| io("renaming into place", path)(e.error))?;
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io("syncing directory", dir))?;
    Ok(())
}

/// Opens `path` for appending, creating it with exactly `mode` whatever the
/// umask; an existing file whose mode differs is set to `mode` before the
/// first write (so a log an older version created 0644 becomes 0640).
///
/// # Errors
/// [`FsError::Io`] naming the file.
pub fn open_append(path: &Path, mode: u32) -> Result<File, FsError> {
    let f = OpenOptions::new()
        .create(true)
        .append(true)
        .mode(mode)
        .open(path)
        .map_err(io("opening", path))?;
    set_mode(&f, mode, path)?;
    Ok(f)
}

/// `path` as one word of a POSIX shell command line, for the commands the
/// tools suggest (`okd-install serve status --dir <path>`): unchanged when
/// it has only characters no shell treats specially (letters, digits,
/// `/._-+,:=@%`), else in single quotes with each `'` written `'\''`
/// (POSIX XCU 2.2.2 Single-Quotes). Non-UTF-8 bytes are shown lossily.
pub fn shell_path(path: &Path) -> String {
    let s = path.to_string_lossy();
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+,:=@%".contains(c));
    if plain {
        s.into_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// An exclusive lock on a directory, held until dropped (or the process ends:
/// the kernel releases `flock(2)` locks when the last descriptor closes, so a
/// killed run never leaves a stale lock).
#[derive(Debug)]
pub struct DirLock {
    file: File,
    path: PathBuf,
}

impl DirLock {
    /// Locks `dir` (created with [`DIR_MODE`] if missing) through `dir/`[`LOCK_FILE`]
    /// (mode 0640) without waiting, and writes this process's PID into the file.
    ///
    /// # Errors
    /// [`FsError::Locked`] with the holder's PID when another process holds it;
    /// [`FsError::Io`] when the file cannot be created or locked.
    pub fn acquire(dir: &Path) -> Result<DirLock, FsError> {
        DirLock::acquire_file(dir, LOCK_FILE)
    }

    /// [`DirLock::acquire`] through `dir/name` instead of [`LOCK_FILE`]: a
    /// lock of its own for one kind of process (e.g. `.okd-serve.lock`, one
    /// `serve` per directory while other commands still run in it). The
    /// [`FsError::Locked`] error names the holder's PID; its text names
    /// [`LOCK_FILE`], so callers with their own file say what holds it.
    ///
    /// # Errors
    /// As [`DirLock::acquire`].
    pub fn acquire_file(dir: &Path, name: &str) -> Result<DirLock, FsError> {
        create_dir_all(dir, DIR_MODE)?;
        let path = dir.join(name);
        let mut file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .mode(0o640)
            .open(&path)
            .map_err(io("opening", &path))?;
        match rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => {}
            Err(e) if e == rustix::io::Errno::WOULDBLOCK => {
                return Err(FsError::Locked {
                    dir: dir.to_path_buf(),
                    pid: holder_pid(&mut file),
                });
            }
            Err(e) => return Err(io("locking", &path)(e.into())),
        }
        file.set_len(0).map_err(io("writing", &path))?;
        file.rewind().map_err(io("writing", &path))?;
        writeln!(file, "{}", std::process::id()).map_err(io("writing", &path))?;
        Ok(DirLock { file, path })
    }

    /// The lock file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for DirLock {
    fn drop(&mut self) {
        // Clear the PID so nobody is named after we are gone; the lock itself
        // goes with the descriptor. The file stays: unlinking a flock(2)ed file
        // lets a third process lock a new inode while a second holds the old one.
        let _ = self.file.set_len(0);
    }
}

/// The PID the holder wrote; the holder writes it right after locking, so a
/// few short retries cover the moment between its flock and its write.
fn holder_pid(file: &mut File) -> Option<u32> {
    for _ in 0..20 {
        let mut s = String::new();
        if file.rewind().is_ok()
            && file.read_to_string(&mut s).is_ok()
            && let Ok(pid) = s.trim().parse::<u32>()
        {
            return Some(pid);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    None
}

/// Removes the regular files under `root` whose names start with one of
/// `prefixes`, looking `max_depth` directory levels down (0: `root` only).
/// Symbolic links are neither followed nor removed. A missing `root` is empty.
/// Returns the removed paths, sorted.
///
/// Run it only while holding `root`'s [`DirLock`]: another run's temporary
/// files are not leftovers while it writes them.
///
/// # Errors
/// [`FsError::Io`] naming the directory that could not be listed or the file
/// that could not be removed.
pub fn sweep_temp_files(
    root: &Path,
    prefixes: &[&str],
    max_depth: usize,
) -> Result<Vec<PathBuf>, FsError> {
    let mut removed = Vec::new();
    sweep(root, prefixes, max_depth, &mut removed)?;
    removed.sort();
    Ok(removed)
}

fn sweep(
    dir: &Path,
    prefixes: &[&str],
    depth: usize,
    removed: &mut Vec<PathBuf>,
) -> Result<(), FsError> {
    let rd = match fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io("listing", dir)(e)),
    };
    for ent in rd {
        let ent = ent.map_err(io("listing", dir))?;
        let ft = ent.file_type().map_err(io("listing", dir))?;
        let path = ent.path();
        if ft.is_dir() {
            if depth > 0 {
                sweep(&path, prefixes, depth - 1, removed)?;
            }
        } else if ft.is_file()
            && ent
                .file_name()
                .to_str()
                .is_some_and(|n| prefixes.iter().any(|p| n.starts_with(p)))
        {
            match fs::remove_file(&path) {
                Ok(()) => removed.push(path),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(io("removing", &path)(e)),
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue #26 finding 8: suggested commands survive paths with spaces and quotes.
    #[test]
    fn shell_path_quotes_only_what_needs_it() {
        assert_eq!(shell_path(Path::new("/srv/okd/dir-1")), "/srv/okd/dir-1");
        assert_eq!(
            shell_path(Path::new("/srv/my install")),
            "'/srv/my install'"
        );
        assert_eq!(shell_path(Path::new("/srv/it's")), r"'/srv/it'\''s'");
        assert_eq!(shell_path(Path::new("/a/$(rm x)")), "'/a/$(rm x)'");
        assert_eq!(shell_path(Path::new("")), "''");
        // What a POSIX shell makes of it is the path again.
        for p in ["/srv/my install", "/srv/it's", "/a/$(x) `y` \\z"] {
            let out = std::process::Command::new("sh")
                .arg("-c")
                .arg(format!("printf %s {}", shell_path(Path::new(p))))
                .output()
                .expect("sh");
            assert_eq!(String::from_utf8_lossy(&out.stdout), p);
        }
    }
}
