//! `okd-install mirror ...`: argument parsing and logging around `okd-mirror`.

use std::io::IsTerminal as _;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context as _;
use clap::{Args, Subcommand};
use okd_mirror::auth::Credentials;
use okd_mirror::client::{ClientOptions, Registries};
use okd_mirror::copy::{CopyOptions, CopyReport, Endpoint};
use okd_mirror::layout::Layout;
use okd_mirror::oci::{Reference, Repo};
use okd_mirror::release::{self, Release, SourcesField, Target};
use okd_types::release::ReleaseTarget;
use tracing::{error, info, warn};

/// `okd-install mirror`.
#[derive(Subcommand, Debug)]
pub enum MirrorCmd {
    /// The mirror registry (distribution, `docker-registry`).
    #[command(subcommand)]
    Registry(RegistryCmd),
    /// Copies a release image and every component image it lists, by
    /// digest, to a repository of the mirror registry (as `oc adm release
    /// mirror`), and prints the imageContentSources block for install-config.yaml.
    Release(Box<ReleaseArgs>),
    /// Copies a release payload into a local OCI image layout (archive), for
    /// sites with no network path to the mirror.
    ToDisk(ToDiskArgs),
    /// Pushes an archive of `mirror to-disk` to the mirror registry and
    /// prints the imageContentSources block.
    FromDisk(Box<FromDiskArgs>),
}

/// How to reach registries (shared by release, to-disk, from-disk).
#[derive(Args, Debug, Clone)]
pub struct ConnectArgs {
    /// Pull secret or docker config.json with registry logins (repeatable; first match wins).
    /// Always read as well: <dir>/mirror-registry/pull-secret.json, install-config.yaml's
    /// pullSecret, $REGISTRY_AUTH_FILE, ~/.docker/config.json.
    #[arg(long = "registry-config", short = 'a')]
    registry_config: Vec<PathBuf>,
    /// PEM file of a CA to trust besides the system's (repeatable); <dir>/mirror-registry/ca.crt is added when present.
    #[arg(long = "ca-file")]
    ca_files: Vec<PathBuf>,
    /// Registry (host:port) to talk to over plain HTTP (repeatable). Only such a
    /// registry may name a plain-http token realm.
    #[arg(long = "plain-http")]
    plain_http: Vec<String>,
    /// Token realm host (HOST for any port, or HOST:PORT) the login may be sent to
    /// although it is not the registry's own host and port (repeatable). Without it
    /// a Bearer challenge naming another host is refused and no login is sent.
    #[arg(long = "allow-token-realm", value_name = "HOST[:PORT]")]
    allow_token_realms: Vec<String>,
    /// Seconds to wait for a registry's answer, for the next bytes of a body, or for
    /// it to take more of an upload, before giving up [default: $OKD_MIRROR_READ_TIMEOUT, else 60].
    #[arg(long = "read-timeout", value_name = "SECONDS")]
    read_timeout: Option<u64>,
    /// Blob transfers in flight at once.
    #[arg(long, default_value_t = 6)]
    concurrency: usize,
    /// Upload blobs larger than this in PATCH chunks of this size (bytes, or with K/M/G/Ki/Mi/Gi); 0 = one PUT each.
    #[arg(long = "chunk-size", default_value = "64Mi", value_parser = parse_size)]
    chunk_size: u64,
    /// Architecture of a multi-arch release whose image-references is read.
    #[arg(long, default_value = "amd64")]
    arch: String,
}

/// Options of `mirror release`.
#[derive(Args, Debug)]
pub struct ReleaseArgs {
    /// The release image, e.g. quay.io/openshift/okd:4.5.0-0.okd-2020-08-12-020541.
    #[arg(long)]
    from: String,
    #[command(flatten)]
    target: TargetArgs,
    #[command(flatten)]
    connect: ConnectArgs,
    #[command(flatten)]
    output: OutputArgs,
    /// Read the release and print what would be copied, copy nothing.
    #[arg(long = "dry-run")]
    dry_run: bool,
}

/// Options of `mirror to-disk`.
#[derive(Args, Debug)]
pub struct ToDiskArgs {
    /// The release image.
    #[arg(long)]
    from: String,
    /// The archive: an OCI image layout directory (created; a re-run resumes).
    #[arg(long)]
    archive: PathBuf,
    #[command(flatten)]
    connect: ConnectArgs,
}

/// Options of `mirror from-disk`.
#[derive(Args, Debug)]
pub struct FromDiskArgs {
    /// The archive written by `mirror to-disk`.
    #[arg(long)]
    archive: PathBuf,
    #[command(flatten)]
    target: TargetArgs,
    #[command(flatten)]
    connect: ConnectArgs,
    #[command(flatten)]
    output: OutputArgs,
}

/// Where a release goes in the mirror (`mirror release`, `from-disk`).
#[derive(Args, Debug)]
pub struct TargetArgs {
    /// The mirror repository for the components, e.g. registry.okd.example:5000/openshift/okd.
    #[arg(long)]
    to: String,
    /// Where the release image goes (default: --to, tagged with the release version).
    #[arg(long = "to-release-image")]
    to_release_image: Option<String>,
}

/// What to print and write after mirroring.
#[derive(Args, Debug)]
pub struct OutputArgs {
    /// install-config field of the printed block (default: imageDigestSources from 4.14 on, else imageContentSources).
    #[arg(long = "sources-field", value_parser = ["imageContentSources", "imageDigestSources"])]
    sources_field: Option<String>,
    /// Also write the block, an ImageDigestMirrorSet, an ImageContentSourcePolicy and mapping.txt here.
    #[arg(long = "output-dir")]
    output_dir: Option<PathBuf>,
}

/// Parses `64Mi`, `1M`, `4096`.
fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (num, mult) = [
        ("Gi", 1u64 << 30),
        ("Mi", 1 << 20),
        ("Ki", 1 << 10),
        ("G", 1_000_000_000),
        ("M", 1_000_000),
        ("K", 1000),
    ]
    .iter()
    .find_map(|(suf, m)| t.strip_suffix(suf).map(|n| (n, *m)))
    .unwrap_or((t, 1));
    num.trim()
        .parse::<u64>()
        .map(|n| n * mult)
        .map_err(|_| format!("{s:?} is not a size (e.g. 64Mi, 1M, 4096)"))
}

/// `okd-install mirror registry`.
#[derive(Subcommand, Debug)]
pub enum RegistryCmd {
    /// Creates the registry's CA, serving certificate, htpasswd user and
    /// config.yml, and adds its login to the pull secret and its CA to
    /// install-config.yaml's additionalTrustBundle.
    Init(InitArgs),
    /// Starts the registry set up by `init` in the background
    /// (docker-registry serve config.yml; PID in registry.pid, output in registry.log).
    Start(DaemonArgs),
    /// Stops the registry started by `start`.
    Stop(DaemonArgs),
}

/// Options of `mirror registry start|stop`.
#[derive(Args, Debug)]
pub struct DaemonArgs {
    /// The registry files of `init` (default: <dir>/mirror-registry).
    #[arg(long = "output-dir")]
    output_dir: Option<PathBuf>,
    /// The registry program (default: docker-registry on PATH).
    #[arg(long = "registry-program", default_value = "docker-registry")]
    program: PathBuf,
}

fn daemon(dir: &Path, a: &DaemonArgs, start: bool) -> anyhow::Result<()> {
    let reg = a
        .output_dir
        .clone()
        .unwrap_or_else(|| dir.join(okd_mirror::registry::DEFAULT_OUTPUT_DIR));
    if start {
        let s = okd_mirror::daemon::start(&reg, &a.program)?;
        if s.new {
            info!(
                "Mirror registry running on {} (PID {}), log {}",
                s.addr,
                s.pid,
                s.log.display()
            );
        } else {
            info!(
                "Mirror registry already running on {} (PID {})",
                s.addr, s.pid
            );
        }
        info!(
            "Stop it with: okd-install mirror registry stop --dir {}",
            dir.display()
        );
    } else {
        match okd_mirror::daemon::stop(&reg, &a.program)? {
            Some(pid) => info!("Stopped the mirror registry (PID {pid})"),
            None => info!("No mirror registry running from {}", reg.display()),
        }
    }
    Ok(())
}

/// Options of `mirror registry init`.
#[derive(Args, Debug)]
pub struct InitArgs {
    /// DNS name of the registry (repeatable); the first one names it in the pull secret.
    #[arg(long = "hostname")]
    hostnames: Vec<String>,
    /// IP address of the registry (repeatable); the first one is its listen address.
    #[arg(long = "address")]
    addresses: Vec<IpAddr>,
    /// Port the registry listens on.
    #[arg(long, default_value_t = 5000)]
    port: u16,
    /// The registry user.
    #[arg(long, default_value = "okd")]
    username: String,
    /// File holding the password (first line); default: a generated one, printed once.
    #[arg(long = "password-file")]
    password_file: Option<PathBuf>,
    /// Where to write the registry files (default: <dir>/mirror-registry).
    #[arg(long = "output-dir")]
    output_dir: Option<PathBuf>,
    /// Then start the registry in the background (as `mirror registry start`).
    #[arg(long)]
    start: bool,
    /// The registry program for --start.
    #[arg(long = "registry-program", default_value = "docker-registry")]
    program: PathBuf,
}

fn read_password(path: &Path) -> anyhow::Result<String> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading the password file {}", path.display()))?;
    Ok(text.lines().next().unwrap_or_default().to_string())
}

/// Runs a `mirror` subcommand for the asset directory `dir`.
pub fn run(dir: &Path, cmd: &MirrorCmd, target: ReleaseTarget) -> anyhow::Result<()> {
    let a = match cmd {
        MirrorCmd::Registry(RegistryCmd::Init(a)) => a,
        MirrorCmd::Registry(RegistryCmd::Start(a)) => return daemon(dir, a, true),
        MirrorCmd::Registry(RegistryCmd::Stop(a)) => return daemon(dir, a, false),
        MirrorCmd::Release(a) => return release(dir, a),
        MirrorCmd::ToDisk(a) => return to_disk(dir, a),
        MirrorCmd::FromDisk(a) => return from_disk(dir, a),
    };
    let password = a.password_file.as_deref().map(read_password).transpose()?;
    let opts = okd_mirror::registry::InitOptions {
        dir: dir.to_path_buf(),
        output_dir: a.output_dir.clone(),
        hostnames: a.hostnames.clone(),
        addresses: a.addresses.clone(),
        port: a.port,
        username: a.username.clone(),
        password,
        load_options: okd_installconfig::LoadOptions {
            target,
            host_fips: std::fs::read_to_string("/proc/sys/crypto/fips_enabled")
                .is_ok_and(|s| s.trim() == "1"),
        },
    };
    let out = okd_mirror::registry::init(&opts)?;
    for w in &out.warnings {
        warn!("{w}");
    }
    info!(
        "Mirror registry {} written to {} ({} CA)",
        out.registry,
        out.output_dir.display(),
        if out.ca_reused { "existing" } else { "new" }
    );
    info!(
        "Start it with: okd-install mirror registry start --dir {} (or docker-registry serve {})",
        dir.display(),
        out.config.display()
    );
    info!(
        "Clients trust it with its CA {} (e.g. curl --cacert)",
        out.ca_cert.display()
    );
    match &out.install_config {
        Some(p) => info!(
            "Added {} to pullSecret and the CA to additionalTrustBundle in {}",
            out.registry,
            p.display()
        ),
        None => info!(
            "No install-config.yaml in {}: pull secret with the login is {}, CA is {}",
            dir.display(),
            out.pull_secret.display(),
            out.ca_cert.display()
        ),
    }
    if out.password_generated {
        println!(
            "Generated password for user {} (shown once, also in {}): {}",
            out.username,
            out.pull_secret.display(),
            out.password
        );
    }
    if a.start {
        daemon(
            dir,
            &DaemonArgs {
                output_dir: Some(out.output_dir.clone()),
                program: a.program.clone(),
            },
            true,
        )?;
    }
    Ok(())
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")
}

/// Builds the registry client: credentials and CAs from the options and the
/// asset directory.
fn registries(dir: &Path, c: &ConnectArgs) -> anyhow::Result<Arc<Registries>> {
    let mut creds = Credentials::default();
    for f in &c.registry_config {
        creds.add_file(f).map_err(anyhow::Error::msg)?;
    }
    let reg_files = dir.join("mirror-registry");
    let ps = reg_files.join("pull-secret.json");
    if ps.is_file() {
        creds.add_file(&ps).map_err(anyhow::Error::msg)?;
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
    let mut ca_files = c.ca_files.clone();
    let ca = reg_files.join("ca.crt");
    if ca.is_file() && !ca_files.contains(&ca) {
        ca_files.push(ca);
    }
    if c.concurrency == 0 {
        anyhow::bail!("--concurrency must be at least 1");
    }
    let read_timeout = match c.read_timeout {
        Some(t) => t,
        None => match std::env::var("OKD_MIRROR_READ_TIMEOUT") {
            Ok(v) => v.trim().parse().with_context(|| {
                format!("OKD_MIRROR_READ_TIMEOUT={v:?}: a number of seconds is expected")
            })?,
            Err(_) => okd_mirror::client::DEFAULT_READ_TIMEOUT.as_secs(),
        },
    };
    if read_timeout == 0 {
        anyhow::bail!("--read-timeout must be at least 1 second");
    }
    Ok(Arc::new(Registries::new(ClientOptions {
        credentials: creds,
        ca_files,
        plain_http: c.plain_http.clone(),
        allow_token_realms: c.allow_token_realms.clone(),
        chunk_size: c.chunk_size,
        read_timeout: std::time::Duration::from_secs(read_timeout),
        proxy: okd_mirror::proxy::ProxyEnv::from_env(),
    })?))
}

fn copy_options(dir: &Path, c: &ConnectArgs) -> CopyOptions {
    CopyOptions {
        concurrency: c.concurrency,
        progress: std::io::stderr().is_terminal(),
        blob_locations: Some(dir.join(okd_mirror::locations::FILE)),
    }
}

impl TargetArgs {
    /// Parses `--to` and `--to-release-image` (a tag, not a digest).
    fn parse(&self) -> anyhow::Result<Target> {
        let to = Repo::parse(&self.to).map_err(|e| anyhow::anyhow!("--to: {e}"))?;
        let release = self
            .to_release_image
            .as_deref()
            .map(|r| {
                let r =
                    Reference::parse(r).map_err(|e| anyhow::anyhow!("--to-release-image: {e}"))?;
                if r.digest.is_some() {
                    anyhow::bail!("--to-release-image: give a tag, not a digest");
                }
                Ok(r)
            })
            .transpose()?;
        Ok(Target { to, release })
    }
}

fn summarize(report: &CopyReport, what: &str) -> anyhow::Result<()> {
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
    if !failed.is_empty() {
        for f in &failed {
            error!(
                "image {} ({}@{}) not mirrored: {}",
                f.job.name,
                f.job.src,
                f.job.reference,
                f.error.as_deref().unwrap_or("")
            );
        }
        anyhow::bail!(
            "{} of {} images were not mirrored (see above); run the command again after fixing the cause, copied blobs are kept",
            failed.len(),
            report.images.len()
        );
    }
    Ok(())
}

/// Prints the install-config block and the mirror set, oc-style, and writes them on request.
fn print_sources(
    rel: &Release,
    tgt: &Target,
    jobs: &[okd_mirror::copy::Job],
    out: &OutputArgs,
) -> anyhow::Result<()> {
    let field = match out.sources_field.as_deref() {
        Some("imageDigestSources") => SourcesField::ImageDigestSources,
        Some(_) => SourcesField::ImageContentSources,
        None => SourcesField::for_version(&rel.version),
    };
    let map = release::mirror_map(rel, tgt);
    let block = release::install_config_block(&map, field);
    let idms = release::image_digest_mirror_set(&map, "okd-mirror");
    let icsp = release::image_content_source_policy(&map, "okd-mirror");
    let rel_ref = match &tgt.release {
        Some(r) => format!(
            "{}:{}",
            r.repo,
            r.tag.clone().unwrap_or_else(|| rel.version.clone())
        ),
        None => format!("{}:{}", tgt.to, rel.version),
    };
    println!("Success");
    println!("Update image:  {rel_ref}");
    println!("Mirror prefix: {}", tgt.to);
    println!();
    println!(
        "To use the new mirrored repository to install, add the following section to the install-config.yaml:"
    );
    println!();
    print!("{block}");
    println!();
    println!(
        "To use the new mirrored repository for upgrades, use the following to create an ImageDigestMirrorSet:"
    );
    println!();
    print!("{idms}");
    if let Some(d) = &out.output_dir {
        std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
        let files = [
            ("install-config-mirror.yaml", block),
            ("image-digest-mirror-set.yaml", idms),
            ("image-content-source-policy.yaml", icsp),
            ("mapping.txt", release::mapping(rel, jobs)),
        ];
        for (name, text) in files {
            okd_mirror::layout::write_file(&d.join(name), text.as_bytes())?;
        }
        info!(
            "Wrote the {} block, ImageDigestMirrorSet, ImageContentSourcePolicy and mapping.txt to {}",
            field.name(),
            d.display()
        );
    }
    Ok(())
}

fn release(dir: &Path, a: &ReleaseArgs) -> anyhow::Result<()> {
    let from = Reference::parse(&a.from).map_err(|e| anyhow::anyhow!("--from: {e}"))?;
    let tgt = a.target.parse()?;
    let regs = registries(dir, &a.connect)?;
    let src = Endpoint::Registry(regs.clone());
    runtime()?.block_on(async {
        info!("Reading release {from}");
        let rel = release::read_release(&src, &from, &a.connect.arch).await?;
        info!(
            "Release {} ({}) lists {} component images",
            rel.version,
            rel.digest,
            rel.components.len()
        );
        let jobs = release::jobs(&rel, &tgt)?;
        if a.dry_run {
            print!("{}", release::mapping(&rel, &jobs));
            return Ok(());
        }
        let report =
            okd_mirror::copy::copy(&src, &src, jobs.clone(), &copy_options(dir, &a.connect))
                .await?;
        summarize(&report, "Mirrored")?;
        print_sources(&rel, &tgt, &jobs, &a.output)
    })
}

fn to_disk(dir: &Path, a: &ToDiskArgs) -> anyhow::Result<()> {
    let from = Reference::parse(&a.from).map_err(|e| anyhow::anyhow!("--from: {e}"))?;
    let regs = registries(dir, &a.connect)?;
    let src = Endpoint::Registry(regs);
    let layout = Arc::new(Layout::open(&a.archive, true)?);
    runtime()?.block_on(async {
        info!("Reading release {from}");
        let rel = release::read_release(&src, &from, &a.connect.arch).await?;
        info!("Release {} ({}) lists {} component images", rel.version, rel.digest, rel.components.len());
        // In the archive, tags are the ref names; repositories do not matter.
        let tgt = Target { to: Repo::parse("archive.local/release").expect("static"), release: None };
        let jobs = release::jobs(&rel, &tgt)?;
        let report = okd_mirror::copy::copy(&src, &Endpoint::Layout(layout.clone()), jobs, &copy_options(dir, &a.connect)).await?;
        summarize(&report, "Archived")?;
        release::write_archive_metadata(&a.archive, &rel)?;
        info!("Archive {} holds release {}; take it to the mirror site and run: okd-install mirror from-disk --archive <dir> --to <registry>/<repository>", a.archive.display(), rel.version);
        Ok(())
    })
}

fn from_disk(dir: &Path, a: &FromDiskArgs) -> anyhow::Result<()> {
    let rel = release::read_archive_metadata(&a.archive)?;
    let layout = Arc::new(Layout::open(&a.archive, false)?);
    let tgt = a.target.parse()?;
    let regs = registries(dir, &a.connect)?;
    runtime()?.block_on(async {
        let jobs = release::jobs(&rel, &tgt)?;
        info!(
            "Pushing release {} ({} images) from {}",
            rel.version,
            jobs.len(),
            a.archive.display()
        );
        let report = okd_mirror::copy::copy(
            &Endpoint::Layout(layout),
            &Endpoint::Registry(regs),
            jobs.clone(),
            &copy_options(dir, &a.connect),
        )
        .await?;
        summarize(&report, "Mirrored")?;
        print_sources(&rel, &tgt, &jobs, &a.output)
    })
}
