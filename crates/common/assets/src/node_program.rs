//! The okd-install program that bootstrap.ign carries to the bootstrap
//! node (`/usr/local/bin/okd-install`), which its units run in place of
//! openshift-install's shell scripts (`okd-install bootstrap
//! release-image | bootkube`).
//!
//! It travels inside bootstrap.ign itself, gzip-compressed in a data URL
//! with a `sha512` verification hash (Ignition config spec v3
//! `storage.files[].contents.compression` / `verification.hash`), so a
//! node gets it from wherever it gets bootstrap.ign: serve's HTTP, the
//! user's own web server, or an S3 bucket on AWS, with no bastion and no
//! second download (docs/differences.md, "The bootstrap node's program").
//!
//! Compressing a release build (about 60 MB) takes seconds, so it is done
//! once per program: [`prepare`] keys the result by the executable's
//! device, inode, size and modification time, compresses it as a stream
//! (bounded memory) into the cache of [`crate::blobs`] the first time, and
//! afterwards only looks it up. The asset graph holds the program as the
//! input [`NodeProgramAsset`] (its SHA-512 and the cached data URL's
//! digest), so a changed program makes bootstrap.ign again and nothing
//! else; bootstrap.ign holds a placeholder that [`crate::blobs::write`]
//! replaces by the data URL when the file is written.

use std::fs::File;
use std::io::{BufReader, Read};
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use aws_lc_rs::digest;
use serde::{Deserialize, Serialize};
use tracing::info;

use okd_types::ignition::{File as IgnFile, Resource};

use crate::blobs;
use crate::error::AssetError;

/// The environment variable naming the okd-install binary to carry
/// (a Linux ELF program for the nodes' architecture), e.g. a release
/// build when `create` runs from a debug build or on another system.
pub const NODE_BINARY_ENV: &str = "OKD_INSTALL_NODE_BINARY";

/// Where the program lands on the bootstrap node.
pub const NODE_PATH: &str = "/usr/local/bin/okd-install";

/// gzip level of the carried program: 1, the fastest (on a 65 MB release
/// build about three times faster than level 6, for a data URL 10% larger),
/// so that even the first run of a build stays near its key generation.
const LEVEL: u32 = 1;

/// The program bootstrap.ign carries, by digest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeProgram {
    /// SHA-512 of the program, lower-case hex: Ignition's
    /// `verification.hash` `sha512-<hex>`.
    #[serde(rename = "SHA512")]
    pub sha512: String,
    /// The program's size in bytes.
    #[serde(rename = "Size")]
    pub size: u64,
    /// SHA-256 (hex) of the data URL text that carries it gzip-compressed:
    /// the name of that text in the cache ([`crate::blobs`]).
    #[serde(rename = "DataURLSHA256")]
    pub data_url_sha256: String,
    /// Length in bytes of that data URL text.
    #[serde(rename = "DataURLSize")]
    pub data_url_size: u64,
}

impl NodeProgram {
    /// The Ignition file entry: [`NODE_PATH`], mode 0755, gzip, the
    /// program's `sha512`, and as source the data URL from `cache`, or,
    /// when it is over [`blobs::ELIDE_LIMIT`], the placeholder that
    /// [`crate::blobs::write`] replaces by it (so a config read back from
    /// the directory holds the same).
    ///
    /// # Errors
    /// [`AssetError::BadFile`] naming the cached data URL when it cannot be read.
    pub fn file(&self, cache: &Path) -> Result<IgnFile, AssetError> {
        let source = if self.data_url_size > blobs::ELIDE_LIMIT as u64 {
            blobs::placeholder(&self.data_url_sha256)
        } else {
            let path = blobs::blob_path(cache, &self.data_url_sha256);
            std::fs::read_to_string(&path).map_err(|e| AssetError::BadFile {
                path,
                message: format!("cannot read the node program's data URL from the cache: {e}"),
            })?
        };
        Ok(IgnFile {
            path: NODE_PATH.to_string(),
            mode: Some(0o755),
            contents: Resource {
                compression: Some("gzip".into()),
                source: Some(source),
                verification: okd_types::ignition::Verification {
                    hash: Some(format!("sha512-{}", self.sha512)),
                },
                ..Default::default()
            },
            ..Default::default()
        })
    }

    pub(crate) fn short(&self) -> String {
        format!("sha512 {}…, {} bytes", &self.sha512[..12], self.size)
    }
}

/// The node program as an input of the asset graph
/// (`*okdinstall.NodeProgram` in the state file; its `Asset` impl is in
/// [`crate::ignition`]): `None` when bootstrap.ign carries none (a debug
/// build not told which program to carry).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeProgramAsset {
    /// The program, if any.
    #[serde(rename = "Program")]
    pub program: Option<NodeProgram>,
}

/// The program to carry: the file [`NODE_BINARY_ENV`] names, else this
/// executable when it is a release build. A debug build carries nothing
/// unless told (its binary is hundreds of MiB); the node's bootkube.sh
/// then says so on the console. Prepared in the cache `cache` (see
/// [`crate::blobs::cache_dir`]) by [`prepare_file`].
///
/// # Errors
/// [`AssetError::BadFile`] naming the variable and the file when it
/// cannot be read or is not an ELF program, or naming the cache.
pub fn prepare(cache: Option<&Path>) -> Result<NodeProgramAsset, AssetError> {
    let path = match std::env::var_os(NODE_BINARY_ENV) {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ if cfg!(debug_assertions) => {
            info!(
                "bootstrap.ign carries no okd-install program for the node: this is a debug build; set {NODE_BINARY_ENV} to a release build of okd-install"
            );
            return Ok(NodeProgramAsset::default());
        }
        _ => std::env::current_exe().map_err(|e| AssetError::BadFile {
            path: PathBuf::from("/proc/self/exe"),
            message: format!("cannot find this okd-install program to put into bootstrap.ign: {e}"),
        })?,
    };
    Ok(NodeProgramAsset {
        program: Some(prepare_file(&path, &blobs::cache_dir(cache)?)?),
    })
}

/// The [`NodeProgram`] of the file `path`, its compressed data URL in
/// `cache`: looked up by the file's device, inode, size and modification
/// time (`<cache>/node-program/<key>.json`), else compressed now, once.
///
/// # Errors
/// [`AssetError::BadFile`] naming the variable and the file when it
/// cannot be read or is not an ELF program, or naming the cache.
pub fn prepare_file(path: &Path, cache: &Path) -> Result<NodeProgram, AssetError> {
    let bad = |message: String| AssetError::BadFile {
        path: path.to_path_buf(),
        message,
    };
    let meta = std::fs::metadata(path).map_err(|e| {
        bad(format!(
            "{NODE_BINARY_ENV}: cannot read the okd-install program for the node: {e}"
        ))
    })?;
    let key = format!(
        "{:x}-{}-{}-{}.{:09}",
        meta.dev(),
        meta.ino(),
        meta.len(),
        meta.mtime(),
        meta.mtime_nsec()
    );
    let index = cache.join("node-program").join(format!("{key}.json"));
    if let Some(p) = std::fs::read(&index)
        .ok()
        .and_then(|b| serde_json::from_slice::<NodeProgram>(&b).ok())
        && blobs::has_blob(cache, &p.data_url_sha256, p.data_url_size)
    {
        return Ok(p);
    }
    let p = compress(path, cache, meta.len())?;
    let json = serde_json::to_vec(&p).expect("serializable");
    okd_fs::create_dir_all(&cache.join("node-program"), 0o700)?;
    okd_fs::write_atomic(&index, &json, 0o600)?;
    Ok(p)
}

/// A reader that hashes what it reads with SHA-512 and shows progress.
struct Sha512Reader<R> {
    inner: R,
    ctx: digest::Context,
    bar: indicatif::ProgressBar,
}

impl<R: Read> Read for Sha512Reader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.ctx.update(&buf[..n]);
        self.bar.inc(n as u64);
        Ok(n)
    }
}

/// Compresses the program at `path` (`size` bytes) into a data URL blob of
/// `cache`, as a stream: read, SHA-512, gzip, base64, SHA-256, file.
fn compress(path: &Path, cache: &Path, size: u64) -> Result<NodeProgram, AssetError> {
    let bad = |message: String| AssetError::BadFile {
        path: path.to_path_buf(),
        message,
    };
    let mut f = File::open(path).map_err(|e| {
        bad(format!(
            "{NODE_BINARY_ENV}: cannot read the okd-install program for the node: {e}"
        ))
    })?;
    let mut magic = [0u8; 4];
    if f.read_exact(&mut magic).is_err() || &magic != b"\x7fELF" {
        return Err(bad(format!(
            "{NODE_BINARY_ENV}: not a Linux program (no ELF header); the node needs a Linux build of okd-install"
        )));
    }
    info!(
        "Compressing the okd-install program for the bootstrap node ({} MB, {}) into {}: once per program",
        size / 1_000_000,
        path.display(),
        cache.display()
    );
    let bar = indicatif::ProgressBar::with_draw_target(
        Some(size),
        indicatif::ProgressDrawTarget::stderr(),
    )
    .with_message("compressing the node program");
    bar.set_style(
        indicatif::ProgressStyle::with_template("{msg} {bar:30} {bytes}/{total_bytes} {eta}")
            .expect("a valid template"),
    );
    let mut reader = Sha512Reader {
        inner: BufReader::with_capacity(1 << 20, magic.as_slice().chain(f)),
        ctx: digest::Context::new(&digest::SHA512),
        bar,
    };
    // What Ignition config data URLs look like (okd_types::dataurl::encode):
    // the media type sniffed from gzip's magic bytes.
    let media = okd_types::dataurl::detect_content_type(&[0x1f, 0x8b, 0x08]).replace("; ", ";");
    let read_err = |e: std::io::Error| {
        bad(format!(
            "cannot read the okd-install program for the node: {e}"
        ))
    };
    let (sha256, len) = blobs::store_blob(cache, |w| {
        write!(w, "data:{media};base64,").map_err(read_err)?;
        let b64 = base64::write::EncoderWriter::new(w, &base64::engine::general_purpose::STANDARD);
        let mut gz = flate2::write::GzEncoder::new(b64, flate2::Compression::new(LEVEL));
        std::io::copy(&mut reader, &mut gz).map_err(read_err)?;
        gz.finish()
            .and_then(|mut b| b.finish().map(|_| ()))
            .map_err(read_err)?;
        Ok(())
    })?;
    reader.bar.finish_and_clear();
    let sha512 = blobs::hex(reader.ctx.finish().as_ref());
    Ok(NodeProgram {
        sha512,
        size,
        data_url_sha256: sha256,
        data_url_size: len,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_program_is_compressed_once_into_a_data_url_with_its_sha512() {
        let d = tempfile::tempdir().unwrap();
        let cache = blobs::cache_dir(Some(&d.path().join("cache"))).unwrap();
        let prog_path = d.path().join("prog");
        let prog: Vec<u8> = b"\x7fELF and the rest"
            .iter()
            .copied()
            .chain((0..200_000u32).flat_map(|i| (i % 251).to_le_bytes()))
            .collect();
        std::fs::write(&prog_path, &prog).unwrap();
        let p = prepare_file(&prog_path, &cache).unwrap();
        let text = std::fs::read_to_string(blobs::blob_path(&cache, &p.data_url_sha256)).unwrap();
        assert_eq!(text.len() as u64, p.data_url_size);
        let gz = okd_types::dataurl::decode(&text).unwrap();
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(gz.as_slice())
            .read_to_end(&mut out)
            .unwrap();
        assert_eq!(out, prog);
        // The same data URL as okd_types' encoder makes for these bytes.
        assert_eq!(text, okd_types::dataurl::encode(&gz));
        let want = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA512, &prog);
        assert_eq!(p.sha512, blobs::hex(want.as_ref()));
        let f = p.file(&cache).unwrap();
        assert_eq!(f.path, NODE_PATH);
        assert_eq!(f.mode, Some(0o755));
        assert_eq!(f.contents.compression.as_deref(), Some("gzip"));
        assert_eq!(
            f.contents.verification.hash,
            Some(format!("sha512-{}", p.sha512))
        );
        // Small: the data URL itself; over the limit: the placeholder.
        assert_eq!(f.contents.source, Some(text.clone()));
        let big = NodeProgram {
            data_url_size: blobs::ELIDE_LIMIT as u64 + 1,
            ..p.clone()
        };
        assert_eq!(
            big.file(&cache).unwrap().contents.source,
            Some(blobs::placeholder(&p.data_url_sha256))
        );

        // Again: looked up, not compressed (the blob's mtime says it was used).
        let again = prepare_file(&prog_path, &cache).unwrap();
        assert_eq!(again, p);
        // The blob gone: compressed again, the same bytes.
        std::fs::remove_file(blobs::blob_path(&cache, &p.data_url_sha256)).unwrap();
        assert_eq!(prepare_file(&prog_path, &cache).unwrap(), p);
        // A changed program: another entry.
        std::fs::write(&prog_path, b"\x7fELF changed").unwrap();
        let changed = prepare_file(&prog_path, &cache).unwrap();
        assert_ne!(changed.sha512, p.sha512);
    }

    #[test]
    fn a_file_that_is_not_a_program_is_refused_with_its_name() {
        let d = tempfile::tempdir().unwrap();
        let cache = blobs::cache_dir(Some(&d.path().join("cache"))).unwrap();
        let path = d.path().join("notes.txt");
        std::fs::write(&path, b"#!/bin/sh\n").unwrap();
        let e = prepare_file(&path, &cache).unwrap_err().to_string();
        assert!(e.contains("notes.txt") && e.contains("ELF"), "{e}");
        let e = prepare_file(&d.path().join("missing"), &cache)
            .unwrap_err()
            .to_string();
        assert!(e.contains("missing"), "{e}");
    }
}
