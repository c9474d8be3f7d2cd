//! `okd-install mirror ...`: the options, and one call per command into
//! `okd-mirror` (release, to-disk, from-disk) and `okd-mirror-registry`
//! (registry init, start, stop).

use std::io::IsTerminal as _;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use okd_mirror::commands::{self, Connect, Output, TargetSpec};
use okd_mirror::release::SourcesField;
use okd_types::release::ReleaseTarget;

use crate::Failure;
use crate::release::release_context_lenient;

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
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .ok_or_else(|| format!("{s:?} is not a size (e.g. 64Mi, 1M, 4096)"))
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
    /// Replace the login of an earlier init (with --password-file's or a generated
    /// password) in htpasswd, pull-secret.json and install-config.yaml's pullSecret;
    /// without it a re-run keeps the existing login.
    #[arg(long = "rotate-password")]
    rotate_password: bool,
    /// Then start the registry in the background (as `mirror registry start`).
    #[arg(long)]
    start: bool,
    /// The registry program for --start.
    #[arg(long = "registry-program", default_value = "docker-registry")]
    program: PathBuf,
}

impl ConnectArgs {
    fn connect(&self) -> Connect {
        Connect {
            registry_configs: self.registry_config.clone(),
            ca_files: self.ca_files.clone(),
            plain_http: self.plain_http.clone(),
            allow_token_realms: self.allow_token_realms.clone(),
            read_timeout: self.read_timeout,
            concurrency: self.concurrency,
            chunk_size: self.chunk_size,
            arch: self.arch.clone(),
            progress: std::io::stderr().is_terminal(),
        }
    }
}

impl TargetArgs {
    fn spec(&self) -> TargetSpec {
        TargetSpec {
            to: self.to.clone(),
            to_release_image: self.to_release_image.clone(),
        }
    }
}

impl OutputArgs {
    fn output(&self) -> Output {
        Output {
            sources_field: self.sources_field.as_deref().map(|f| match f {
                "imageDigestSources" => SourcesField::ImageDigestSources,
                _ => SourcesField::ImageContentSources,
            }),
            output_dir: self.output_dir.clone(),
        }
    }
}

/// `okd-install mirror ...` for `dir` under the rules of the directory's
/// release, with exit code 3 for install-config errors (as for `create`).
pub fn command(dir: &Path, cmd: &MirrorCmd) -> Result<(), Failure> {
    let ctx = release_context_lenient(dir);
    run(dir, cmd, ctx.target).map_err(|e| {
        let class = e
            .downcast_ref::<okd_mirror_registry::MirrorError>()
            .map_or(okd_types::exit::Exit::Failed, |m| {
                okd_types::exit::ExitClass::exit_class(m)
            });
        (e, class.code())
    })
}

/// Runs a `mirror` subcommand for the asset directory `dir`.
fn run(dir: &Path, cmd: &MirrorCmd, target: ReleaseTarget) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    match cmd {
        MirrorCmd::Registry(RegistryCmd::Init(a)) => okd_mirror_registry::commands::init(
            &okd_mirror_registry::commands::Init {
                setup: okd_mirror_registry::registry::InitOptions {
                    dir: dir.to_path_buf(),
                    output_dir: a.output_dir.clone(),
                    hostnames: a.hostnames.clone(),
                    addresses: a.addresses.clone(),
                    port: a.port,
                    username: a.username.clone(),
                    password: None,
                    rotate_password: a.rotate_password,
                    load_options: okd_installconfig::LoadOptions {
                        target,
                        host_fips: false,
                    },
                },
                password_file: a.password_file.clone(),
                start: a.start.then(|| a.program.clone()),
            },
            &mut stdout,
        )?,
        MirrorCmd::Registry(RegistryCmd::Start(a)) => {
            okd_mirror_registry::commands::start(dir, a.output_dir.as_deref(), &a.program)?
        }
        MirrorCmd::Registry(RegistryCmd::Stop(a)) => {
            okd_mirror_registry::commands::stop(dir, a.output_dir.as_deref(), &a.program)?
        }
        MirrorCmd::Release(a) => crate::runtime()?.block_on(commands::release(
            dir,
            &a.from,
            &a.target.spec(),
            &a.connect.connect(),
            &a.output.output(),
            a.dry_run,
            &mut stdout,
        ))?,
        MirrorCmd::ToDisk(a) => crate::runtime()?.block_on(commands::to_disk(
            dir,
            &a.from,
            &a.archive,
            &a.connect.connect(),
        ))?,
        MirrorCmd::FromDisk(a) => crate::runtime()?.block_on(commands::from_disk(
            dir,
            &a.archive,
            &a.target.spec(),
            &a.connect.connect(),
            &a.output.output(),
            &mut stdout,
        ))?,
    }
    Ok(())
}
