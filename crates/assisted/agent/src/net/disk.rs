//! The disk's `fdatasync` latency ([`disk_sync_speed`]), measured as the
//! installation disk speed check's fio run does.

use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::{Duration, Instant};

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

/// Measures how fast `path` makes small sequential writes durable, the way
/// assisted-installer-agent's installation disk speed check runs fio
/// (`fio --filename=<path> --name=test --rw=write --ioengine=sync
/// --size=22m --bs=2300 --fdatasync=1`, then reads the 99th percentile of
/// `sync` latency), which is etcd's recommended disk check.
///
/// Opens `path` for writing, without creating or truncating it (a block
/// device, or a regular file, which grows if it is shorter than 22 MiB),
/// writes [`DISK_SPEED_BLOCK`] (2300) byte blocks one after the other from
/// offset 0 up to [`DISK_SPEED_SIZE`] (22 MiB; the last block is shortened
/// to end there, ⌈22 MiB / 2300⌉ = 10030 writes), calls `fdatasync` after
/// each write and times it. Returns the 99th percentile (nearest rank) of
/// those times in milliseconds.
///
/// **This overwrites the first 22 MiB of `path`**: on the installation
/// disk, which the agent runs it on only after the user started the
/// install (the disk is about to be written anyway), it destroys the
/// partition table and whatever the start of the disk held.
///
/// Blocks (on slow disks for tens of seconds).
///
/// # Errors
///
/// Opening (e.g. `NotFound`), writing or syncing `path`, with the path
/// named.
pub fn disk_sync_speed(path: &Path) -> io::Result<DiskSpeed> {
    let ctx = |what: &str, e: io::Error| {
        io::Error::new(
            e.kind(),
            format!("disk speed check of {}: {what}: {e}", path.display()),
        )
    };
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(|e| ctx("opening for writing", e))?;
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
    fn disk_sync_speed_of_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("disk");
        let file = std::fs::File::create(&path).unwrap();
        file.set_len(DISK_SPEED_SIZE).unwrap();
        drop(file);
        let speed = disk_sync_speed(&path).unwrap();
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
