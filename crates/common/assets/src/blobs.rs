//! The large files an Ignition config embeds (data URLs over 1 MiB, the
//! okd-install program of bootstrap.ign), kept out of the asset graph.
//!
//! The asset graph holds every asset in memory and records it in the state
//! file, as openshift-install does (`pkg/asset/store/store.go`): a config
//! that embeds a 30 MB program would be held several times over (the JSON
//! value, the file's bytes, the state file's base64 of them). Instead the
//! graph holds such a data URL as a **placeholder**, itself a valid data URL,
//! `data:,okd-install-blob-sha256-<hex>`, where `<hex>` is the SHA-256 of
//! the data URL's text; the text lives once in a **cache** directory outside
//! the asset directory (`<cache>/blobs/<hex>`), and:
//! * writing a config to the asset directory ([`write`]) streams each
//!   placeholder's text from the cache into the file, checking its digest;
//! * reading a config from the asset directory ([`read_config`]) passes it
//!   through [`okd_types::large_strings::ElideLarge`], which replaces each
//!   data URL over [`ELIDE_LIMIT`] by its placeholder while hashing it, and
//!   copies the text into the cache when it is not there yet.
//!
//! So a config read back from the directory equals the one written, byte for
//! byte, and memory stays bounded whatever the size of the embedded files.
//!
//! The cache: `$OKD_INSTALL_CACHE_DIR`, else `$XDG_CACHE_HOME/okd-install`,
//! else `$HOME/.cache/okd-install` (XDG Base Directory Specification), mode
//! 0700. It keeps the [`KEEP`] most recently used blobs.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek as _, SeekFrom, Write};
use std::path::{Path, PathBuf};

use aws_lc_rs::digest;
use okd_types::large_strings::{ElideLarge, LargeStrings};

use crate::error::AssetError;

/// The environment variable naming the cache directory.
pub const CACHE_ENV: &str = "OKD_INSTALL_CACHE_DIR";

/// Data URLs longer than this many bytes are held in the cache, not in memory.
pub const ELIDE_LIMIT: usize = 1 << 20;

/// How many blobs the cache keeps (the most recently used).
pub const KEEP: usize = 4;

/// The lock a run holds on `<cache>` while it stores a blob
/// ([`okd_fs::DirLock`]).
const LOCK: &str = "blobs.lock";

/// Every placeholder starts with this; 64 hex digits follow.
const PLACEHOLDER_PREFIX: &str = "data:,okd-install-blob-sha256-";

/// The placeholder standing for the data URL whose text has SHA-256 `sha256_hex`.
pub fn placeholder(sha256_hex: &str) -> String {
    format!("{PLACEHOLDER_PREFIX}{sha256_hex}")
}

/// Lower-case hex of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

fn bad(path: &Path, message: impl Into<String>) -> AssetError {
    AssetError::BadFile {
        path: path.to_path_buf(),
        message: message.into(),
    }
}

/// The cache directory: `given` (a test's, through
/// [`crate::GenCtx::cache_dir`]), else as the module documentation says;
/// created 0700.
///
/// # Errors
/// [`AssetError::BadFile`] naming the directory when it cannot be created,
/// or the variables when none of them gives one.
pub fn cache_dir(given: Option<&Path>) -> Result<PathBuf, AssetError> {
    let env = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let dir = given
        .map(Path::to_path_buf)
        .or_else(|| env(CACHE_ENV))
        .or_else(|| env("XDG_CACHE_HOME").filter(|p| p.is_absolute()).map(|p| p.join("okd-install")))
        .or_else(|| env("HOME").map(|h| h.join(".cache/okd-install")))
        .ok_or_else(|| {
            bad(
                Path::new("~/.cache/okd-install"),
                format!("no cache directory for the files bootstrap.ign embeds: set {CACHE_ENV}, XDG_CACHE_HOME or HOME"),
            )
        })?;
    okd_fs::create_dir_all(&dir.join("blobs"), 0o700).map_err(|e| {
        bad(
            &dir,
            format!("cannot create the cache directory ({CACHE_ENV}): {e}"),
        )
    })?;
    Ok(dir)
}

/// The file of the blob `sha256_hex` in `cache`.
pub(crate) fn blob_path(cache: &Path, sha256_hex: &str) -> PathBuf {
    cache.join("blobs").join(sha256_hex)
}

/// Whether `cache` holds blob `sha256_hex` of `len` bytes; marks it used.
pub(crate) fn has_blob(cache: &Path, sha256_hex: &str, len: u64) -> bool {
    let path = blob_path(cache, sha256_hex);
    match File::options().append(true).open(&path) {
        Ok(f) if f.metadata().is_ok_and(|m| m.len() == len) => {
            let _ = f.set_modified(std::time::SystemTime::now());
            true
        }
        _ => false,
    }
}

/// Removes all but the [`KEEP`] most recently used blobs of `cache`.
pub(crate) fn evict(cache: &Path) {
    let Ok(entries) = std::fs::read_dir(cache.join("blobs")) else {
        return;
    };
    let mut blobs: Vec<(std::time::SystemTime, PathBuf)> = entries
        .flatten()
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .collect();
    blobs.sort_by_key(|b| std::cmp::Reverse(b.0));
    for (_, p) in blobs.into_iter().skip(KEEP) {
        let _ = std::fs::remove_file(p);
    }
}

/// A writer that hashes what goes through it with SHA-256.
pub(crate) struct Sha256Writer<W> {
    pub(crate) inner: W,
    pub(crate) ctx: digest::Context,
    pub(crate) len: u64,
}

impl<W: Write> Sha256Writer<W> {
    pub(crate) fn new(inner: W) -> Self {
        Sha256Writer {
            inner,
            ctx: digest::Context::new(&digest::SHA256),
            len: 0,
        }
    }
}

impl<W: Write> Write for Sha256Writer<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.ctx.update(&buf[..n]);
        self.len += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Stores what `fill` writes as a blob of `cache`: written to a temporary
/// file in `<cache>/blobs`, then renamed to its SHA-256. Returns the hex
/// digest and the length. Holding the cache's lock, it first removes the
/// temporary files of runs stopped part way (Ctrl-C while compressing);
/// when another run holds the lock, it leaves them and goes on without.
///
/// # Errors
/// `fill`'s error, or [`AssetError::BadFile`] naming the cache.
pub(crate) fn store_blob<F>(cache: &Path, fill: F) -> Result<(String, u64), AssetError>
where
    F: FnOnce(&mut dyn Write) -> Result<(), AssetError>,
{
    let dir = cache.join("blobs");
    okd_fs::create_dir_all(&dir, 0o700)?;
    let _lock = okd_fs::DirLock::acquire_file(cache, LOCK)
        .ok()
        .inspect(|_| {
            let _ = okd_fs::sweep_temp_files(&dir, &[okd_fs::TEMP_PREFIX], 0);
        });
    let tmp = tempfile::Builder::new()
        .prefix(okd_fs::TEMP_PREFIX)
        .tempfile_in(&dir)
        .map_err(|e| bad(&dir, format!("cannot create a file in the cache: {e}")))?;
    let mut w = Sha256Writer::new(BufWriter::with_capacity(1 << 20, tmp));
    fill(&mut w)?;
    let Sha256Writer { inner, ctx, len } = w;
    let tmp = inner
        .into_inner()
        .map_err(|e| bad(&dir, format!("cannot write to the cache: {}", e.error())))?;
    let sha = hex(ctx.finish().as_ref());
    let path = blob_path(cache, &sha);
    tmp.persist(&path)
        .map_err(|e| bad(&path, format!("cannot store in the cache: {}", e.error)))?;
    evict(cache);
    Ok((sha, len))
}

/// One data URL [`read_config`] replaced by its placeholder.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Found {
    offset: u64,
    len: u64,
    sha256: String,
}

/// The [`LargeStrings`] sink of [`read_config`]: hashes each large data URL.
struct Hashing {
    current: Option<(u64, digest::Context)>,
    found: Vec<Found>,
}

impl LargeStrings for Hashing {
    fn begin(&mut self, offset: u64, head: &[u8]) -> bool {
        if !head.starts_with(b"data:") {
            return false;
        }
        let mut ctx = digest::Context::new(&digest::SHA256);
        ctx.update(head);
        self.current = Some((offset, ctx));
        true
    }
    fn piece(&mut self, bytes: &[u8]) {
        if let Some((_, ctx)) = &mut self.current {
            ctx.update(bytes);
        }
    }
    fn end(&mut self, len: u64) -> String {
        let (offset, ctx) = self.current.take().expect("begin came first");
        let sha256 = hex(ctx.finish().as_ref());
        let p = placeholder(&sha256);
        self.found.push(Found {
            offset,
            len,
            sha256,
        });
        p
    }
}

/// Reads the Ignition config at `path` with each data URL over
/// [`ELIDE_LIMIT`] replaced by its placeholder, copying the data URL's
/// text into the cache when the cache lacks it. `Ok(None)` when there is
/// no such file. `given_cache` as in [`cache_dir`].
///
/// # Errors
/// [`AssetError::BadFile`] naming the file or the cache.
pub(crate) fn read_config(
    path: &Path,
    given_cache: Option<&Path>,
) -> Result<Option<Vec<u8>>, AssetError> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(bad(path, format!("cannot read: {e}"))),
    };
    let mut r = ElideLarge::new(
        BufReader::with_capacity(1 << 20, file),
        ELIDE_LIMIT,
        Hashing {
            current: None,
            found: Vec::new(),
        },
    );
    let mut text = Vec::new();
    r.read_to_end(&mut text)
        .map_err(|e| bad(path, format!("cannot read: {e}")))?;
    let found = r.into_sink().found;
    if found.is_empty() {
        return Ok(Some(text));
    }
    let cache = cache_dir(given_cache)?;
    for f in found {
        if has_blob(&cache, &f.sha256, f.len) {
            continue;
        }
        let mut src = File::open(path).map_err(|e| bad(path, format!("cannot read: {e}")))?;
        src.seek(SeekFrom::Start(f.offset))
            .map_err(|e| bad(path, format!("cannot read: {e}")))?;
        let (sha, len) = store_blob(&cache, |w| {
            std::io::copy(&mut BufReader::new(src).take(f.len), w).map_err(|e| {
                bad(
                    path,
                    format!("cannot copy an embedded file into the cache: {e}"),
                )
            })?;
            Ok(())
        })?;
        if sha != f.sha256 || len != f.len {
            return Err(bad(
                path,
                "changed while it was being read; run the command again",
            ));
        }
    }
    Ok(Some(text))
}

/// Writes `data` to `path` atomically with exactly `mode` (through
/// [`okd_fs::write_atomic_with`]), each placeholder replaced by its data
/// URL from the cache, whose digest is checked as it is copied.
/// `given_cache` as in [`cache_dir`].
///
/// # Errors
/// [`AssetError::BadFile`] naming the blob when the cache lacks it or it
/// does not match its name; the file is then left as it was.
pub fn write(
    path: &Path,
    data: &[u8],
    mode: u32,
    given_cache: Option<&Path>,
) -> Result<(), AssetError> {
    let needle = PLACEHOLDER_PREFIX.as_bytes();
    let mut pieces: Vec<(&[u8], Option<String>)> = Vec::new();
    let mut rest = data;
    while let Some(i) = rest.windows(needle.len()).position(|w| w == needle) {
        let hex_start = i + needle.len();
        let Some(hexd) = rest
            .get(hex_start..hex_start + 64)
            .filter(|h| h.iter().all(u8::is_ascii_hexdigit))
        else {
            pieces.push((&rest[..hex_start], None));
            rest = &rest[hex_start..];
            continue;
        };
        pieces.push((&rest[..i], Some(String::from_utf8_lossy(hexd).into_owned())));
        rest = &rest[hex_start + 64..];
    }
    if pieces.iter().all(|(_, b)| b.is_none()) {
        return Ok(okd_fs::write_atomic(path, data, mode)?);
    }
    pieces.push((rest, None));
    let cache = cache_dir(given_cache)?;
    okd_fs::write_atomic_with(path, mode, |f| {
        let mut w = BufWriter::with_capacity(1 << 20, f);
        for (text, blob) in &pieces {
            w.write_all(text)
                .map_err(|e| bad(path, format!("cannot write: {e}")))?;
            let Some(sha) = blob else { continue };
            let bpath = blob_path(&cache, sha);
            let src = File::open(&bpath).map_err(|e| {
                bad(
                    &bpath,
                    format!(
                        "{} embeds this file, which is no longer in the cache ({e}); run the command that made {} again where it was made, or put the file back into the directory",
                        path.display(),
                        path.display()
                    ),
                )
            })?;
            let _ = src.set_modified(std::time::SystemTime::now());
            let mut hw = Sha256Writer::new(&mut w);
            std::io::copy(&mut BufReader::with_capacity(1 << 20, src), &mut hw)
                .map_err(|e| bad(path, format!("cannot write: {e}")))?;
            if hex(hw.ctx.finish().as_ref()) != *sha {
                return Err(bad(
                    &bpath,
                    "does not match its SHA-256 (the cache was changed): delete it and run the command again",
                ));
            }
        }
        w.flush()
            .map_err(|e| bad(path, format!("cannot write: {e}")))?;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cache in a temporary directory for one test (no process-wide
    /// variable: the functions taking a cache path are used directly).
    fn big_config(cache: &Path) -> (String, Vec<u8>) {
        let url = format!("data:;base64,{}", "QUJD".repeat(ELIDE_LIMIT / 2));
        let (sha, len) = store_blob(cache, |w| {
            w.write_all(url.as_bytes()).unwrap();
            Ok(())
        })
        .unwrap();
        assert_eq!(len as usize, url.len());
        let full = format!(
            r#"{{"storage":{{"files":[{{"path":"/x","contents":{{"source":"{url}"}}}}]}}}}"#
        );
        (sha, full.into_bytes())
    }

    #[test]
    fn a_placeholder_is_written_as_its_blob_and_read_back_as_itself() {
        let d = tempfile::tempdir().unwrap();
        let cache = cache_dir(Some(&d.path().join("cache"))).unwrap();
        let (sha, full) = big_config(&cache);
        let url = format!("data:;base64,{}", "QUJD".repeat(ELIDE_LIMIT / 2));
        let small = String::from_utf8(full.clone())
            .unwrap()
            .replace(&url, &placeholder(&sha));
        let file = d.path().join("bootstrap.ign");
        write(&file, small.as_bytes(), 0o640, Some(&cache)).unwrap();
        assert_eq!(std::fs::read(&file).unwrap(), full);
        // Read back: the placeholder again, the blob still there.
        let back = read_config(&file, Some(&cache)).unwrap().unwrap();
        assert_eq!(String::from_utf8(back).unwrap(), small);
        // Another cache lacking the blob gets it from the file.
        let other = cache_dir(Some(&d.path().join("other"))).unwrap();
        read_config(&file, Some(&other)).unwrap().unwrap();
        assert_eq!(
            std::fs::read(blob_path(&other, &sha)).unwrap(),
            url.as_bytes()
        );
        // A blob whose bytes changed is refused, and the file stays as it was.
        std::fs::write(blob_path(&cache, &sha), vec![b'x'; url.len()]).unwrap();
        let e = write(&file, small.as_bytes(), 0o640, Some(&cache)).unwrap_err();
        assert!(e.to_string().contains(&sha), "{e}");
        assert_eq!(std::fs::read(&file).unwrap(), full);
        // A missing blob is named with what to do.
        std::fs::remove_file(blob_path(&cache, &sha)).unwrap();
        let e = write(
            &d.path().join("b2.ign"),
            small.as_bytes(),
            0o640,
            Some(&cache),
        )
        .unwrap_err();
        assert!(format!("{e:?}").contains("no longer in the cache"), "{e:?}");
        // Text without placeholders is written as it is.
        write(&file, b"{}", 0o640, Some(&cache)).unwrap();
        assert_eq!(std::fs::read(&file).unwrap(), b"{}");
    }

    #[test]
    fn the_cache_keeps_the_most_recently_used_blobs() {
        let d = tempfile::tempdir().unwrap();
        okd_fs::create_dir_all(&d.path().join("blobs"), 0o700).unwrap();
        let mut shas = Vec::new();
        for i in 0..KEEP + 2 {
            let (sha, _) = store_blob(d.path(), |w| {
                write!(w, "blob {i}").unwrap();
                Ok(())
            })
            .unwrap();
            let t =
                std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1000 + i as u64);
            File::options()
                .append(true)
                .open(blob_path(d.path(), &sha))
                .unwrap()
                .set_modified(t)
                .unwrap();
            shas.push(sha);
        }
        // A stopped run's temporary file goes with the next blob stored.
        let stopped = d
            .path()
            .join("blobs")
            .join(format!("{}stopped", okd_fs::TEMP_PREFIX));
        std::fs::write(&stopped, b"part").unwrap();
        store_blob(d.path(), |w| {
            w.write_all(b"one more").unwrap();
            Ok(())
        })
        .unwrap();
        assert!(!stopped.exists());
        evict(d.path());
        let kept: Vec<bool> = shas
            .iter()
            .map(|s| blob_path(d.path(), s).exists())
            .collect();
        // "one more", stored last, is the newest of the four kept.
        assert_eq!(kept, [false, false, false, true, true, true]);
    }
}
