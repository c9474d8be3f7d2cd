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
//! second download. The cost is size: bootstrap.ign grows by the
//! compressed program (about a third of the binary).

use std::io::Write as _;
use std::path::PathBuf;

use okd_types::ignition::File;
use tracing::info;

use crate::AssetError;

/// The environment variable naming the okd-install binary to carry
/// (a Linux ELF program for the nodes' architecture), e.g. a release
/// build when `create` runs from a debug build or on another system.
pub const NODE_BINARY_ENV: &str = "OKD_INSTALL_NODE_BINARY";

/// Where the program lands on the bootstrap node.
pub const NODE_PATH: &str = "/usr/local/bin/okd-install";

/// The program's bytes: the file [`NODE_BINARY_ENV`] names, else this
/// executable when it is a release build. A debug build carries nothing
/// unless told (its binary is hundreds of MiB of debug information); the
/// node's bootkube.sh then says so on the console.
///
/// # Errors
/// [`AssetError::BadFile`] naming the variable and the file when it
/// cannot be read or is not an ELF program.
pub fn read() -> Result<Option<Vec<u8>>, AssetError> {
    let path = match std::env::var_os(NODE_BINARY_ENV) {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ if cfg!(debug_assertions) => {
            info!(
                "bootstrap.ign carries no okd-install program for the node: this is a debug build; set {NODE_BINARY_ENV} to a release build of okd-install"
            );
            return Ok(None);
        }
        _ => std::env::current_exe().map_err(|e| AssetError::BadFile {
            path: PathBuf::from("/proc/self/exe"),
            message: format!("cannot find this okd-install program to put into bootstrap.ign: {e}"),
        })?,
    };
    let data = std::fs::read(&path).map_err(|e| AssetError::BadFile {
        path: path.clone(),
        message: format!(
            "{NODE_BINARY_ENV}: cannot read the okd-install program for the node: {e}"
        ),
    })?;
    if !data.starts_with(b"\x7fELF") {
        return Err(AssetError::BadFile {
            path,
            message: format!(
                "{NODE_BINARY_ENV}: not a Linux program (no ELF header); the node needs a Linux build of okd-install"
            ),
        });
    }
    Ok(Some(data))
}

/// The Ignition file entry for `program`: [`NODE_PATH`], mode 0755,
/// gzip-compressed, `verification.hash` = `sha512-<hex>` of the program.
pub fn file(program: &[u8]) -> File {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(6));
    gz.write_all(program).expect("writing to memory");
    let compressed = gz.finish().expect("writing to memory");
    let digest = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA512, program);
    let hex: String = digest.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    let mut f = File::data(NODE_PATH, 0o755, &compressed);
    f.contents.compression = Some("gzip".into());
    f.contents.verification.hash = Some(format!("sha512-{hex}"));
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_is_gzip_with_the_programs_sha512() {
        let prog = b"\x7fELF and the rest";
        let f = file(prog);
        assert_eq!(f.path, NODE_PATH);
        assert_eq!(f.mode, Some(0o755));
        assert_eq!(f.contents.compression.as_deref(), Some("gzip"));
        let src = f.contents.source.unwrap();
        let gz = okd_types::dataurl::decode(&src).unwrap();
        let mut out = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(gz.as_slice()), &mut out)
            .unwrap();
        assert_eq!(out, prog);
        let hash = f.contents.verification.hash.unwrap();
        assert!(
            hash.starts_with("sha512-") && hash.len() == 7 + 128,
            "{hash}"
        );
    }
}
