//! `okd-install mirror release | to-disk | from-disk`: the steps and the
//! messages of each command (the binary only parses the options). Logins
//! and CAs are gathered here from the options and the asset directory.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tracing::{error, info, warn};

use crate::auth::Credentials;
use crate::client::{ClientOptions, DEFAULT_READ_TIMEOUT, OciError, Registries};
use crate::copy::{CopyOptions, CopyReport, Endpoint, Job};
use crate::layout::Layout;
use crate::locations;
use crate::oci::{Reference, Repo};
use crate::proxy::ProxyEnv;
use crate::release::{self, Release, SourcesField, Target};

/// Why a mirror command failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CommandError {
    /// An option or environment variable is malformed (the message names it).
    #[error("{0}")]
    Options(String),
    /// A credential file cannot be read or parsed (the message names it).
    #[error("{0}")]
    Credentials(String),
    /// A registry or archive operation failed.
    #[error(transparent)]
    Oci(#[from] OciError),
    /// Some images were not mirrored (each was logged with its cause).
    #[error(
        "{failed} of {total} images were not mirrored (see above); run the command again after fixing the cause, copied blobs are kept"
    )]
    NotMirrored {
        /// Images that failed.
        failed: usize,
        /// Images in the release.
        total: usize,
    },
    /// Writing the output files or to stdout.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The error.
        source: std::io::Error,
    },
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> CommandError {
    let what = what.into();
    move |source| CommandError::Io { what, source }
}

/// How to reach registries (`mirror release`, `to-disk`, `from-disk`).
#[derive(Debug, Clone)]
pub struct Connect {
    /// Pull secrets / docker config files given (first match wins), read
    /// before `<dir>/mirror-registry/pull-secret.json`, install-config's
    /// pullSecret and the default files ([`Credentials::default_files`]).
    pub registry_configs: Vec<PathBuf>,
    /// Extra CA files (`<dir>/mirror-registry/ca.crt` is added when present).
    pub ca_files: Vec<PathBuf>,
    /// Registries spoken to over plain HTTP.
    pub plain_http: Vec<String>,
    /// Token realm hosts allowed besides the registry's own.
    pub allow_token_realms: Vec<String>,
    /// Read timeout in seconds (`None`: `$OKD_MIRROR_READ_TIMEOUT`, else
    /// [`DEFAULT_READ_TIMEOUT`]).
    pub read_timeout: Option<u64>,
    /// Blob transfers in flight.
    pub concurrency: usize,
    /// Chunk size of uploads (bytes, 0: monolithic).
    pub chunk_size: u64,
    /// Architecture whose image-references is read in a multi-arch release.
    pub arch: String,
    /// Show progress bars.
    pub progress: bool,
}

/// Where a release goes (`--to`, `--to-release-image`).
#[derive(Debug, Clone)]
pub struct TargetSpec {
    /// The components' repository.
    pub to: String,
    /// The release image's repository and tag, if not `to`.
    pub to_release_image: Option<String>,
}

/// What to print and write after mirroring.
#[derive(Debug, Clone, Default)]
pub struct Output {
    /// The install-config field of the printed block (default by version).
    pub sources_field: Option<SourcesField>,
    /// Also write the block, the mirror sets and `mapping.txt` here.
    pub output_dir: Option<PathBuf>,
}

fn credentials(dir: &Path, c: &Connect) -> Result<Credentials, CommandError> {
    let mut creds = Credentials::default();
    for f in &c.registry_configs {
        creds.add_file(f).map_err(CommandError::Credentials)?;
    }
    let ps = dir.join("mirror-registry/pull-secret.json");
    if ps.is_file() {
        creds.add_file(&ps).map_err(CommandError::Credentials)?;
    }
    let ic = dir.join("install-config.yaml");
    if let Ok(text) = std::fs::read_to_string(&ic)
        && let Ok(v) = serde_yaml_ng::from_str::<serde_yaml_ng::Value>(&text)
        && let Some(p) = v.get("pullSecret").and_then(|p| p.as_str())
        && let Err(e) = creds.add_json(p, &format!("{} pullSecret", ic.display()))
    {
        warn!("ignoring the pull secret of {}: {e}", ic.display());
    }
    for f in Credentials::default_files() {
        if let Err(e) = creds.add_file(&f) {
            warn!("ignoring {e}");
        }
    }
    Ok(creds)
}

fn read_timeout(c: &Connect) -> Result<Duration, CommandError> {
    let secs = match c.read_timeout {
        Some(t) => t,
        None => match std::env::var("OKD_MIRROR_READ_TIMEOUT") {
            Ok(v) => v.trim().parse().map_err(|_| {
                CommandError::Options(format!(
                    "OKD_MIRROR_READ_TIMEOUT={v:?}: a number of seconds is expected"
                ))
            })?,
            Err(_) => DEFAULT_READ_TIMEOUT.as_secs(),
        },
    };
    if secs == 0 {
        return Err(CommandError::Options(
            "--read-timeout must be at least 1 second".into(),
        ));
    }
    Ok(Duration::from_secs(secs))
}

/// Builds the registry client: credentials and CAs from the options and the
/// asset directory, proxies from the environment.
fn registries(dir: &Path, c: &Connect) -> Result<Arc<Registries>, CommandError> {
    let credentials = credentials(dir, c)?;
    let mut ca_files = c.ca_files.clone();
    let ca = dir.join("mirror-registry/ca.crt");
    if ca.is_file() && !ca_files.contains(&ca) {
        ca_files.push(ca);
    }
    if c.concurrency == 0 {
        return Err(CommandError::Options(
            "--concurrency must be at least 1".into(),
        ));
    }
    Ok(Arc::new(Registries::new(ClientOptions {
        credentials,
        ca_files,
        plain_http: c.plain_http.clone(),
        allow_token_realms: c.allow_token_realms.clone(),
        chunk_size: c.chunk_size,
        read_timeout: read_timeout(c)?,
        proxy: ProxyEnv::from_env(),
    })?))
}

fn copy_options(dir: &Path, c: &Connect) -> CopyOptions {
    CopyOptions {
        concurrency: c.concurrency,
        progress: c.progress,
        blob_locations: Some(dir.join(locations::FILE)),
    }
}

fn parse_from(from: &str) -> Result<Reference, CommandError> {
    Reference::parse(from).map_err(|e| CommandError::Options(format!("--from: {e}")))
}

impl TargetSpec {
    /// Parses `--to` and `--to-release-image` (a tag, not a digest).
    fn parse(&self) -> Result<Target, CommandError> {
        let to = Repo::parse(&self.to).map_err(|e| CommandError::Options(format!("--to: {e}")))?;
        let release = self
            .to_release_image
            .as_deref()
            .map(|r| {
                let r = Reference::parse(r)
                    .map_err(|e| CommandError::Options(format!("--to-release-image: {e}")))?;
                if r.digest.is_some() {
                    return Err(CommandError::Options(
                        "--to-release-image: give a tag, not a digest".into(),
                    ));
                }
                Ok(r)
            })
            .transpose()?;
        Ok(Target { to, release })
    }
}

fn summarize(report: &CopyReport, what: &str) -> Result<(), CommandError> {
    info!(
        "{what}: {} images, {} blobs: {} copied ({:.1} MiB), {} already there, {} mounted; {} manifests pushed in {:.1}s",
        report.images.len(),
        report.blobs,
        report.uploaded.0,
        report.uploaded.1 as f64 / 1048576.0,
        report.present,
        report.mounted,
        report.manifests,
        report.seconds
    );
    let failed: Vec<_> = report.failures().collect();
    if failed.is_empty() {
        return Ok(());
    }
    for f in &failed {
        error!(
            "image {} ({}@{}) not mirrored: {}",
            f.job.name,
            f.job.src,
            f.job.reference,
            f.error.as_deref().unwrap_or("")
        );
    }
    Err(CommandError::NotMirrored {
        failed: failed.len(),
        total: report.images.len(),
    })
}

/// Prints the install-config block and the mirror set, oc-style, for the
/// releases `rels` (one block for all: their mirror maps merged; the field
/// by the last release's version), and writes them on request.
fn print_sources(
    rels: &[Release],
    tgt: &Target,
    jobs: &[Job],
    out: &Output,
    stdout: &mut dyn Write,
) -> Result<(), CommandError> {
    let Some(last) = rels.last() else {
        return Ok(());
    };
    let field = out
        .sources_field
        .unwrap_or_else(|| SourcesField::for_version(&last.version));
    let mut map = std::collections::BTreeMap::<String, Vec<String>>::new();
    for rel in rels {
        for (source, mirrors) in release::mirror_map(rel, tgt) {
            let e = map.entry(source).or_default();
            for m in mirrors {
                if !e.contains(&m) {
                    e.push(m);
                }
            }
        }
    }
    let block = release::install_config_block(&map, field);
    let idms = release::image_digest_mirror_set(&map, "okd-mirror");
    let icsp = release::image_content_source_policy(&map, "okd-mirror");
    let mut updates = String::new();
    for rel in rels {
        let rel_ref = match &tgt.release {
            Some(r) => format!(
                "{}:{}",
                r.repo,
                r.tag.clone().unwrap_or_else(|| rel.version.clone())
            ),
            None => format!("{}:{}", tgt.to, rel.version),
        };
        updates.push_str(&format!("Update image:  {rel_ref}\n"));
    }
    write!(
        stdout,
        "Success\n{updates}Mirror prefix: {}\n\n\
         To use the new mirrored repository to install, add the following section to the install-config.yaml:\n\n\
         {block}\n\
         To use the new mirrored repository for upgrades, use the following to create an ImageDigestMirrorSet:\n\n\
         {idms}",
        tgt.to
    )
    .map_err(io("writing to stdout"))?;
    if let Some(d) = &out.output_dir {
        crate::layout::mkdir(d).map_err(io(format!("creating {}", d.display())))?;
        let files = [
            ("install-config-mirror.yaml", block),
            ("image-digest-mirror-set.yaml", idms),
            ("image-content-source-policy.yaml", icsp),
            ("mapping.txt", release::mapping(last, jobs)),
        ];
        for (name, text) in files {
            crate::layout::write_file(&d.join(name), text.as_bytes())?;
        }
        info!(
            "Wrote the {} block, ImageDigestMirrorSet, ImageContentSourcePolicy and mapping.txt to {}",
            field.name(),
            d.display()
        );
    }
    Ok(())
}

/// [`release::read_release`] with the progress lines every command that
/// reads a release from a registry logs.
async fn read_release_logged(
    src: &Endpoint,
    from: &Reference,
    arch: &str,
) -> Result<Release, OciError> {
    info!("Reading release {from}");
    let rel = release::read_release(src, from, arch).await?;
    info!(
        "Release {} ({}) lists {} component images",
        rel.version,
        rel.digest,
        rel.components.len()
    );
    Ok(rel)
}

/// `mirror release`: reads the release at `from`, copies it and its
/// components to `target`, prints the sources block on `stdout` (with
/// `dry_run`: prints the mapping, copies nothing).
///
/// # Errors
/// [`CommandError`]; `NotMirrored` after a copy with failed images.
pub async fn release(
    dir: &Path,
    from: &str,
    target: &TargetSpec,
    connect: &Connect,
    output: &Output,
    dry_run: bool,
    stdout: &mut dyn Write,
) -> Result<(), CommandError> {
    let from = parse_from(from)?;
    let tgt = target.parse()?;
    let regs = registries(dir, connect)?;
    let src = Endpoint::Registry(regs);
    {
        let rel = read_release_logged(&src, &from, &connect.arch).await?;
        let jobs = release::jobs(&rel, &tgt)?;
        if dry_run {
            return write!(stdout, "{}", release::mapping(&rel, &jobs))
                .map_err(io("writing to stdout"));
        }
        let report =
            crate::copy::copy(&src, &src, jobs.clone(), &copy_options(dir, connect)).await?;
        summarize(&report, "Mirrored")?;
        print_sources(std::slice::from_ref(&rel), &tgt, &jobs, output, stdout)
    }
}

/// `mirror to-disk`: the release at `from` into the OCI layout `archive`
/// with its metadata file. An archive holding other releases keeps them:
/// the metadata lists every release (a release of the same version is
/// replaced), and `from-disk` pushes them all.
///
/// # Errors
/// [`CommandError`]; an existing metadata file that cannot be read or
/// does not validate (nothing is copied then).
pub async fn to_disk(
    dir: &Path,
    from: &str,
    archive: &Path,
    connect: &Connect,
) -> Result<(), CommandError> {
    let from = parse_from(from)?;
    let src = Endpoint::Registry(registries(dir, connect)?);
    let layout = Arc::new(Layout::open(archive, true)?);
    let mut releases = if archive.join(release::ARCHIVE_METADATA).is_file() {
        release::read_archive_metadata(archive)?
    } else {
        Vec::new()
    };
    {
        let rel = read_release_logged(&src, &from, &connect.arch).await?;
        // In the archive, tags are the ref names; repositories do not matter.
        let tgt = Target {
            to: Repo::parse("archive.local/release").expect("static"),
            release: None,
        };
        let jobs = release::jobs(&rel, &tgt)?;
        let report = crate::copy::copy(
            &src,
            &Endpoint::Layout(layout),
            jobs,
            &copy_options(dir, connect),
        )
        .await?;
        summarize(&report, "Archived")?;
        releases.retain(|r| r.version != rel.version);
        releases.push(rel);
        release::write_archive_metadata(archive, &releases)?;
        let versions: Vec<&str> = releases.iter().map(|r| r.version.as_str()).collect();
        info!(
            "Archive {} holds release{} {}; take it to the mirror site and run: okd-install mirror from-disk --archive <dir> --to <registry>/<repository>",
            archive.display(),
            if versions.len() == 1 { "" } else { "s" },
            versions.join(", ")
        );
        Ok(())
    }
}

/// `mirror from-disk`: every release of the archive of `to-disk` into
/// `target`, then the sources block on `stdout`.
///
/// # Errors
/// [`CommandError`]; `--to-release-image` with a tag for an archive of
/// more than one release (one tag cannot name them all).
pub async fn from_disk(
    dir: &Path,
    archive: &Path,
    target: &TargetSpec,
    connect: &Connect,
    output: &Output,
    stdout: &mut dyn Write,
) -> Result<(), CommandError> {
    let rels = release::read_archive_metadata(archive)?;
    let layout = Arc::new(Layout::open(archive, false)?);
    let tgt = target.parse()?;
    if rels.len() > 1 && tgt.release.as_ref().is_some_and(|r| r.tag.is_some()) {
        return Err(CommandError::Options(format!(
            "--to-release-image: {} holds {} releases, one tag cannot name them all; give the repository without a tag (each release is tagged with its version)",
            archive.display(),
            rels.len()
        )));
    }
    let regs = registries(dir, connect)?;
    {
        let mut jobs = Vec::new();
        for rel in &rels {
            let own = release::jobs(rel, &tgt)?;
            info!(
                "Pushing release {} ({} images) from {}",
                rel.version,
                own.len(),
                archive.display()
            );
            jobs.extend(own);
        }
        let report = crate::copy::copy(
            &Endpoint::Layout(layout),
            &Endpoint::Registry(regs),
            jobs.clone(),
            &copy_options(dir, connect),
        )
        .await?;
        summarize(&report, "Mirrored")?;
        print_sources(&rels, &tgt, &jobs, output, stdout)
    }
}
