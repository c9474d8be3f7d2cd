//! The disk's `fdatasync` latency ([`disk_sync_speed`]), measured as the
//! installation disk speed check's fio run does, on a block device only
//! ([`BlockDevice`]: checked on the open file descriptor).

use std::fs::{File, FileType};
use std::io;
use std::os::unix::fs::{FileExt, FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::fcntl::{FcntlArg, OFlag, fcntl};

/// How much [`disk_sync_speed`] writes: 22 MiB (fio's `--size=22m`).
pub const DISK_SPEED_SIZE: u64 = 22 * 1024 * 1024;
/// The size of each of [`disk_sync_speed`]'s writes: 2300 bytes (fio's
/// `--bs=2300`).
pub const DISK_SPEED_BLOCK: usize = 2300;

/// What [`disk_sync_speed`] measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DiskSpeed {
    /// The 99th percentile (nearest rank) of the `fdatasync` latencies, in
    /// milliseconds: what assisted's installation disk speed check compares
    /// with its threshold (etcd's 10 ms by default).
    pub p99_ms: f64,
    /// How many writes (each followed by one timed `fdatasync`) were done.
    pub writes: u32,
}

/// What a file type is, in words (`a regular file`, `a directory`, …),
/// for the errors that refuse it.
pub fn file_kind(t: FileType) -> &'static str {
    if t.is_block_device() {
        "a block device"
    } else if t.is_file() {
        "a regular file"
    } else if t.is_dir() {
        "a directory"
    } else if t.is_symlink() {
        "a symbolic link"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a regular file, directory, link or device"
    }
}

/// A block device opened for writing, known to be one from its open file
/// descriptor (so no swap of the path after a check can slip a regular
/// file in).
#[derive(Debug)]
pub struct BlockDevice {
    file: File,
    path: PathBuf,
    rdev: u64,
}

impl BlockDevice {
    /// Opens `path` for writing without creating or truncating it
    /// (`O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC`:
    /// a symbolic link as its last component is refused, a FIFO without a
    /// reader fails at once instead of blocking, a terminal is not made
    /// the controlling one), checks with `fstat` on the open descriptor
    /// that it is a block device, then clears `O_NONBLOCK`.
    ///
    /// # Errors
    ///
    /// Opening (`NotFound`; a symbolic link: `ELOOP`; a directory:
    /// `EISDIR`; a FIFO without a reader: `ENXIO`), `fstat` or `fcntl`
    /// failing, with the path named; anything that is not a block device:
    /// `InvalidInput`, `<path> is not a block device (it is a regular
    /// file)`.
    pub fn open(path: &Path) -> io::Result<BlockDevice> {
        let ctx = |what: &str, e: io::Error| {
            io::Error::new(e.kind(), format!("{}: {what}: {e}", path.display()))
        };
        let file = std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(
                (OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_NOCTTY | OFlag::O_CLOEXEC).bits(),
            )
            .open(path)
            .map_err(|e| ctx("opening for writing", e))?;
        let meta = file.metadata().map_err(|e| ctx("fstat", e))?;
        if !meta.file_type().is_block_device() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{} is not a block device (it is {})",
                    path.display(),
                    file_kind(meta.file_type())
                ),
            ));
        }
        let flags = fcntl(&file, FcntlArg::F_GETFL).map_err(|e| ctx("fcntl F_GETFL", e.into()))?;
        let flags = OFlag::from_bits_truncate(flags) & !OFlag::O_NONBLOCK;
        fcntl(&file, FcntlArg::F_SETFL(flags)).map_err(|e| ctx("fcntl F_SETFL", e.into()))?;
        Ok(BlockDevice {
            file,
            path: path.to_path_buf(),
            rdev: meta.rdev(),
        })
    }

    /// The path it was opened by.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Its device number (`st_rdev` of the open descriptor).
    pub fn rdev(&self) -> u64 {
        self.rdev
    }

    /// [`disk_sync_speed`] of this device.
    ///
    /// # Errors
    ///
    /// Writing or syncing, with the path and offset named.
    pub fn sync_speed(&self) -> io::Result<DiskSpeed> {
        measure(&self.file, &self.path)
    }
}

/// Measures how fast the block device at `path` makes small sequential
/// writes durable, the way assisted-installer-agent's installation disk
/// speed check (`src/disk_speed_check/disk_speed_check.go`) runs fio
/// (`fio --filename=<path> --name=test --rw=write --ioengine=sync
/// --size=22m --bs=2300 --fdatasync=1`, then reads the 99th percentile of
/// `sync` latency), which is etcd's recommended disk check.
///
/// Opens `path` as a [`BlockDevice`] (refusing anything else: fio would
/// write a regular file too; this agent does not), writes
/// [`DISK_SPEED_BLOCK`] (2300) byte blocks one after the other from
/// offset 0 up to [`DISK_SPEED_SIZE`] (22 MiB; the last block is shortened
/// to end there, ⌈22 MiB / 2300⌉ = 10030 writes), calls `fdatasync` after
/// each write and times it. Returns the 99th percentile (nearest rank) of
/// those times in milliseconds.
///
/// **This overwrites the first 22 MiB of the device**: on the
/// installation disk, which the agent runs it on only after the user
/// started the install (the disk is about to be written anyway), it
/// destroys the partition table and whatever the start of the disk held.
/// Which device may be measured is [`crate::disk_guard`]'s to decide.
///
/// Blocks (on slow disks for tens of seconds).
///
/// # Errors
///
/// [`BlockDevice::open`]'s (not found, not a block device:
/// `InvalidInput`), writing or syncing, with the path named.
pub fn disk_sync_speed(path: &Path) -> io::Result<DiskSpeed> {
    BlockDevice::open(path)?.sync_speed()
}

/// The measurement of [`disk_sync_speed`] on an open `file`.
fn measure(file: &File, path: &Path) -> io::Result<DiskSpeed> {
    let ctx = |what: &str, e: io::Error| {
        io::Error::new(
            e.kind(),
            format!("disk speed check of {}: {what}: {e}", path.display()),
        )
    };
    let block: Vec<u8> = (0..DISK_SPEED_BLOCK)
        .map(|i| (i as u8).wrapping_mul(31) ^ 0x5a)
        .collect();
    let mut latencies =
        Vec::with_capacity(DISK_SPEED_SIZE.div_ceil(DISK_SPEED_BLOCK as u64) as usize);
    let mut offset = 0u64;
    while offset < DISK_SPEED_SIZE {
        let len = (DISK_SPEED_SIZE - offset).min(DISK_SPEED_BLOCK as u64) as usize;
        file.write_all_at(&block[..len], offset)
            .map_err(|e| ctx(&format!("writing at offset {offset}"), e))?;
        let start = Instant::now();
        file.sync_data()
            .map_err(|e| ctx(&format!("fdatasync after writing at offset {offset}"), e))?;
        latencies.push(start.elapsed());
        offset += len as u64;
    }
    Ok(DiskSpeed {
        p99_ms: percentile(&mut latencies, 99).as_secs_f64() * 1000.0,
        writes: latencies.len() as u32,
    })
}

/// The test-only escape: [`disk_sync_speed`]'s measurement of a regular
/// file (opened without following a symbolic link, never created), which
/// the agent itself never does.
#[cfg(test)]
fn file_sync_speed(path: &Path) -> io::Result<DiskSpeed> {
    let file = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags((OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC).bits())
        .open(path)
        .map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("{}: opening for writing: {e}", path.display()),
            )
        })?;
    assert!(
        file.metadata()?.is_file(),
        "file_sync_speed: regular files only"
    );
    measure(&file, path)
}

/// The `p`th percentile (nearest rank: the ⌈p/100 × n⌉th smallest) of
/// `values`, zero when there are none.
fn percentile(values: &mut [Duration], p: usize) -> Duration {
    if values.is_empty() {
        return Duration::ZERO;
    }
    values.sort_unstable();
    let rank = (p * values.len()).div_ceil(100).max(1);
    values[rank - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_nearest_rank() {
        let mut v: Vec<Duration> = (1..=200).rev().map(Duration::from_millis).collect();
        assert_eq!(percentile(&mut v, 99), Duration::from_millis(198));
        let mut one = vec![Duration::from_millis(5)];
        assert_eq!(percentile(&mut one, 99), Duration::from_millis(5));
        assert_eq!(percentile(&mut [], 99), Duration::ZERO);
    }

    #[test]
    fn the_measurement_of_a_regular_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("disk");
        let file = std::fs::File::create(&path).unwrap();
        file.set_len(DISK_SPEED_SIZE).unwrap();
        drop(file);
        let speed = file_sync_speed(&path).unwrap();
        assert_eq!(
            u64::from(speed.writes),
            DISK_SPEED_SIZE.div_ceil(DISK_SPEED_BLOCK as u64)
        );
        assert_eq!(speed.writes, 10030);
        assert!(speed.p99_ms > 0.0, "{speed:?}");
        assert_eq!(std::fs::metadata(&path).unwrap().len(), DISK_SPEED_SIZE);
        // The last (short) block ends exactly at 22 MiB with the pattern.
        let data = std::fs::read(&path).unwrap();
        assert_eq!(data[0], 0x5a);
    }

    #[test]
    fn disk_sync_speed_refuses_what_is_not_a_block_device() {
        let dir = tempfile::tempdir().unwrap();
        // A regular file: refused, its bytes unchanged.
        let path = dir.path().join("disk");
        std::fs::write(&path, b"not a disk").unwrap();
        let err = disk_sync_speed(&path).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{err}");
        assert_eq!(
            err.to_string(),
            format!(
                "{} is not a block device (it is a regular file)",
                path.display()
            )
        );
        assert_eq!(std::fs::read(&path).unwrap(), b"not a disk");
        // A symbolic link (to that file): not followed.
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&path, &link).unwrap();
        let err = disk_sync_speed(&link).unwrap_err();
        let eloop = io::Error::from_raw_os_error(nix::libc::ELOOP).to_string();
        assert!(err.to_string().ends_with(&eloop), "{err}");
        assert_eq!(std::fs::read(&path).unwrap(), b"not a disk");
        // A FIFO without a reader: refused at once, not waited on.
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let err = disk_sync_speed(&fifo).unwrap_err();
        let enxio = io::Error::from_raw_os_error(nix::libc::ENXIO).to_string();
        assert!(err.to_string().ends_with(&enxio), "{err}");
        // A character device: refused on its descriptor.
        let err = disk_sync_speed(Path::new("/dev/null")).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{err}");
        assert!(err.to_string().contains("a character device"), "{err}");
        // Missing: NotFound, named, never created.
        let missing = dir.path().join("no-such-disk");
        let err = disk_sync_speed(&missing).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
        assert!(
            err.to_string().contains(&missing.display().to_string()),
            "{err}"
        );
        assert!(!missing.exists(), "the check must not create the path");
    }
}
