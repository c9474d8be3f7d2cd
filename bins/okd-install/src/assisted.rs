//! `okd-install assisted …`: the assisted flow's commands (issue #24).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};

use crate::{Failure, fail, runtime};

/// `okd-install assisted <command>`.
#[derive(Subcommand, Debug)]
pub enum AssistedCmd {
    /// Run the assisted service: the REST API v2 under
    /// /api/assisted-install/v2 (clusters, infra-envs, hosts, next steps,
    /// events) with its monitor; state in <dir>/assisted.db (SQLite) or the
    /// PostgreSQL database of --db-url.
    Serve(ServeArgs),
    /// Create a cluster and its infra-env from an install-config.yaml
    /// (baseDomain, metadata.name, replicas, networking,
    /// platform.baremetal apiVIPs/ingressVIPs or platform none for one
    /// node, pullSecret, sshKey).
    CreateCluster {
        #[command(flatten)]
        service: ServiceArgs,
        /// The install-config.yaml; any field the assisted flow does not
        /// take is refused, naming it.
        #[arg(long)]
        config: PathBuf,
        /// The release major.minor [default: 4.19].
        #[arg(long = "openshift-version")]
        openshift_version: Option<String>,
    },
    /// List the clusters.
    Clusters {
        #[command(flatten)]
        service: ServiceArgs,
    },
    /// List a cluster's hosts: name, id (an unambiguous prefix), role,
    /// status, MAC and address, installation disk, CPUs, memory.
    Hosts {
        #[command(flatten)]
        service: ServiceArgs,
        /// The cluster's name or id.
        #[arg(long)]
        cluster: String,
    },
    /// One host: `host set` changes its name or role.
    Host {
        #[command(subcommand)]
        action: HostCmd,
    },
    /// The cluster's and its hosts' validations, failing first.
    Validations {
        #[command(flatten)]
        service: ServiceArgs,
        /// The cluster's name or id.
        #[arg(long)]
        cluster: String,
        /// Only failing validations.
        #[arg(long)]
        failing: bool,
    },
    /// Start the installation (refused with the reason unless ready).
    Install {
        #[command(flatten)]
        service: ServiceArgs,
        /// The cluster's name or id.
        #[arg(long)]
        cluster: String,
        /// Wait until the installation has started, printing status
        /// changes; fail if it has not within this long (e.g. 5m).
        #[arg(long, value_parser = crate::node::parse_duration)]
        wait: Option<std::time::Duration>,
    },
    /// Write <dir>/auth/kubeconfig and <dir>/auth/kubeadmin-password (0600).
    Credentials {
        #[command(flatten)]
        service: ServiceArgs,
        /// The cluster's name or id.
        #[arg(long)]
        cluster: String,
    },
    /// The addresses of a network that no host of the cluster heard an
    /// answer for in its ARP scan (where the API and ingress VIPs can go),
    /// one per line.
    FreeAddresses {
        #[command(flatten)]
        service: ServiceArgs,
        /// The cluster's name or id.
        #[arg(long)]
        cluster: String,
        /// An IPv4 network of the hosts in CIDR form (/22 or smaller),
        /// e.g. 192.168.126.0/24.
        #[arg(long)]
        network: String,
        /// At most this many addresses (1 to 8000).
        #[arg(long)]
        limit: Option<usize>,
    },
    /// Download the logs the cluster's hosts uploaded (each host's agent
    /// uploads its journal, inventory and install request when the host
    /// enters error or cancelled) into <dir>/<cluster>_host_logs.tar.
    Logs {
        #[command(flatten)]
        service: ServiceArgs,
        /// The cluster's name or id.
        #[arg(long)]
        cluster: String,
    },
    /// The cluster's events.
    Events {
        #[command(flatten)]
        service: ServiceArgs,
        /// The cluster's name or id.
        #[arg(long)]
        cluster: String,
    },
}

/// `okd-install assisted host <command>`.
#[derive(Subcommand, Debug)]
pub enum HostCmd {
    /// Set a host's name and/or role (before its installation starts).
    /// HOST is its id, an unambiguous prefix of it (as `assisted hosts`
    /// shows), a MAC or address of one of its interfaces, or its host name
    /// when no other host has it; several matches are refused, listing
    /// them.
    #[command(group(clap::ArgGroup::new("change").required(true).multiple(true).args(["name", "role"])))]
    Set {
        #[command(flatten)]
        service: ServiceArgs,
        /// The host: id, id prefix, MAC, address or unique host name.
        host: String,
        /// Look among this cluster's hosts (name or id) only [default:
        /// every infra-env's hosts].
        #[arg(long)]
        cluster: Option<String>,
        /// The host name to install it with (instead of the one it
        /// reported).
        #[arg(long)]
        name: Option<String>,
        /// Its role.
        #[arg(long, value_parser = ["master", "worker", "auto-assign"])]
        role: Option<String>,
    },
}

/// Where the client commands find the service.
#[derive(Args, Debug)]
pub struct ServiceArgs {
    /// The assisted service's address (what `okd-install assisted serve`
    /// listens on).
    #[arg(long, default_value = okd_assisted_client::client::DEFAULT_URL)]
    url: String,
    /// The service's admin token, sent as Authorization: Bearer <token>
    /// [default: <dir>/assisted-service/admin-token, which the service
    /// generates on first start].
    #[arg(long, env = "OKD_ASSISTED_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// A PEM file of CA certificates the service's certificate is checked
    /// with, besides the system's [default:
    /// <dir>/assisted-service/ca.crt, the service's own CA].
    #[arg(long)]
    cacert: Option<PathBuf>,
}

impl ServiceArgs {
    fn client(&self, dir: &Path) -> Result<okd_assisted_client::Client, Failure> {
        let token = match &self.token {
            Some(t) => Some(t.clone()),
            None => okd_assisted_client::client::stored_token(dir).map_err(fail)?,
        };
        let ca = match &self.cacert {
            Some(p) => Some(
                std::fs::read(p)
                    .map_err(|e| fail(anyhow::anyhow!("--cacert {}: {e}", p.display())))?,
            ),
            None => okd_assisted_client::client::stored_ca(dir).map_err(fail)?,
        };
        okd_assisted_client::Client::with_ca(&self.url, token, ca.as_deref()).map_err(fail)
    }
}

/// `okd-install assisted serve`.
#[derive(Args, Debug)]
pub struct ServeArgs {
    /// A PostgreSQL database (`postgres://user:password@host:5432/db`)
    /// instead of the SQLite file <dir>/assisted.db.
    #[arg(long = "db-url")]
    db_url: Option<String>,
    /// The admin token users send (Authorization: Bearer), at least 128
    /// bits (e.g. openssl rand -hex 16); read from the environment
    /// variable OKD_ASSISTED_AUTH_TOKEN when not given, so it stays out of
    /// process lists. Default: one generated on first start into
    /// <dir>/assisted-service/admin-token (0600). Agent tokens are signed
    /// with a separate key (<dir>/assisted-service/agent-signing-key.pem).
    #[arg(
        long = "auth-token",
        env = "OKD_ASSISTED_AUTH_TOKEN",
        hide_env_values = true,
        conflicts_with = "insecure_no_auth"
    )]
    auth_token: Option<String>,
    /// Serve without any authentication: every call passes. Only on a
    /// loopback address (for a try-out on one machine).
    #[arg(long = "insecure-no-auth")]
    insecure_no_auth: bool,
    /// Serve plain HTTP instead of TLS. Only on a loopback address.
    #[arg(long = "insecure-http", conflicts_with_all = ["tls_cert", "tls_key"])]
    insecure_http: bool,
    /// Serve this certificate chain (PEM, leaf first) instead of one of
    /// the service's own CA.
    #[arg(long = "tls-cert", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM, not readable by others).
    #[arg(long = "tls-key", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// The CA certificate(s) of --tls-cert that agents and clients are
    /// told to trust (the discovery Ignition carries them); without it,
    /// they check --tls-cert against their system's roots.
    #[arg(long = "tls-ca", requires = "tls_cert")]
    tls_ca: Option<PathBuf>,
    /// A DNS name hosts and users reach this service by (repeatable).
    /// Requests naming another host name are refused (IP addresses and
    /// localhost always pass), against DNS rebinding.
    #[arg(long = "service-name", value_parser = parse_service_name)]
    service_names: Vec<String>,
    /// The address to listen on (assisted-service's port is 8090).
    #[arg(long, default_value = "0.0.0.0:8090")]
    listen: SocketAddr,
    /// Seconds agents wait between polls (assisted-service: 60).
    #[arg(long = "next-instruction-seconds", default_value_t = 60)]
    next_instruction_seconds: u64,
    /// Seconds between a host's periodic checks (inventory, NTP, domain
    /// resolution, VIPs), however often it polls (assisted-service runs
    /// them at every poll).
    #[arg(long = "check-interval-seconds", default_value_t = 60)]
    check_interval_seconds: u64,
    /// The release image installs are generated for (default: okd-install's
    /// default release; assisted-service maps openshift_version to an image
    /// from its release list).
    #[arg(long = "release-image")]
    release_image: Option<String>,
    /// Between monitor passes (e.g. 8s, 1m).
    #[arg(long = "monitor-interval", default_value = "8s", value_parser = crate::node::parse_duration)]
    monitor_interval: std::time::Duration,
    /// Hosts one infra-env holds at most; the next host's registration is
    /// refused (409).
    #[arg(long = "max-hosts-per-infra-env", default_value_t = okd_assisted_service::limits::DEFAULT_MAX_HOSTS_PER_INFRA_ENV, value_parser = clap::value_parser!(u64).range(1..))]
    max_hosts_per_infra_env: u64,
    /// Bytes of logs stored per host at most, 64 MiB by default; also
    /// bounds a logs upload. Over it an upload is refused (413).
    #[arg(long = "max-host-logs-bytes", default_value_t = okd_assisted_service::limits::DEFAULT_MAX_HOST_LOGS_BYTES, value_parser = clap::value_parser!(u64).range(1..))]
    max_host_logs_bytes: u64,
    /// Bytes of logs stored for all hosts at most, 2 GiB by default; over
    /// it an upload is refused (413).
    #[arg(long = "max-logs-bytes", default_value_t = okd_assisted_service::limits::DEFAULT_MAX_LOGS_BYTES, value_parser = clap::value_parser!(u64).range(1..))]
    max_logs_bytes: u64,
    /// Bytes of a JSON request body at most, 1 MiB by default (step replies
    /// and logs uploads have their own limits).
    #[arg(long = "max-body-bytes", default_value_t = okd_assisted_service::limits::DEFAULT_MAX_BODY_BYTES, value_parser = clap::value_parser!(u64).range(1..))]
    max_body_bytes: u64,
    /// Bytes of a step reply (a host's inventory) at most, 4 MiB by default.
    #[arg(long = "max-step-reply-bytes", default_value_t = okd_assisted_service::limits::DEFAULT_MAX_STEP_REPLY_BYTES, value_parser = clap::value_parser!(u64).range(1..))]
    max_step_reply_bytes: u64,
}

/// A `--service-name`: a DNS name (letters, digits, '-', dots).
fn parse_service_name(s: &str) -> Result<String, String> {
    let ok = !s.is_empty()
        && s.len() <= 253
        && s.split('.').all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && !l.starts_with('-')
                && !l.ends_with('-')
                && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        });
    if ok {
        Ok(s.to_ascii_lowercase())
    } else {
        Err(format!(
            "{s:?} is not a DNS name (labels of letters, digits and '-', separated by dots)"
        ))
    }
}

/// Runs an `assisted` command; a command its error suggests carries the
/// `--dir` it was run with ([`with_dir`]).
pub fn run(dir: &Path, cmd: &AssistedCmd) -> Result<(), Failure> {
    run_in(dir, cmd).map_err(|(e, code)| (with_dir(e, dir), code))
}

/// The client's messages suggest commands as `okd-install assisted …`
/// (it does not know the directory); run with a `--dir` other than the
/// current one, the suggestion needs it too, to find the service's token
/// and CA there: `okd-install --dir '<dir>' assisted …` (the directory
/// quoted for the shell, okd-fs `shell_path`).
fn with_dir(e: anyhow::Error, dir: &Path) -> anyhow::Error {
    const CMD: &str = "`okd-install assisted ";
    let text = okd_assets::chain(e.as_ref());
    if dir == Path::new(".") || !text.contains(CMD) {
        return e;
    }
    anyhow::anyhow!(text.replace(
        CMD,
        &format!("`okd-install --dir {} assisted ", okd_fs::shell_path(dir))
    ))
}

fn run_in(dir: &Path, cmd: &AssistedCmd) -> Result<(), Failure> {
    use okd_assisted_client::commands as cmds;
    let rt = || runtime().map_err(fail);
    let print = |r: Result<String, okd_assisted_client::Error>| -> Result<(), Failure> {
        print!("{}", r.map_err(fail)?);
        Ok(())
    };
    match cmd {
        AssistedCmd::Serve(a) => serve(dir, a),
        AssistedCmd::CreateCluster {
            service,
            config,
            openshift_version,
        } => {
            let c = service.client(dir)?;
            let (cl, ie) = rt()?
                .block_on(cmds::create_cluster_from_file(
                    &c,
                    config,
                    openshift_version.as_deref(),
                ))
                .map_err(fail)?;
            print!("{}", cmds::describe_created(&cl, &ie));
            Ok(())
        }
        AssistedCmd::Clusters { service } => {
            let c = service.client(dir)?;
            print(rt()?.block_on(cmds::list_clusters(&c)))
        }
        AssistedCmd::Hosts { service, cluster } => {
            let c = service.client(dir)?;
            print(rt()?.block_on(cmds::list_hosts(&c, cluster)))
        }
        AssistedCmd::Host {
            action:
                HostCmd::Set {
                    service,
                    host,
                    cluster,
                    name,
                    role,
                },
        } => {
            let c = service.client(dir)?;
            print(rt()?.block_on(cmds::set_host(
                &c,
                cluster.as_deref(),
                host,
                name.as_deref(),
                role.as_deref(),
            )))
        }
        AssistedCmd::Validations {
            service,
            cluster,
            failing,
        } => {
            let c = service.client(dir)?;
            print(rt()?.block_on(cmds::validations(&c, cluster, *failing)))
        }
        AssistedCmd::Install {
            service,
            cluster,
            wait,
        } => {
            let c = service.client(dir)?;
            rt()?
                .block_on(cmds::install(&c, cluster, *wait, &mut std::io::stdout()))
                .map_err(fail)?;
            Ok(())
        }
        AssistedCmd::Credentials { service, cluster } => {
            let c = service.client(dir)?;
            let paths = rt()?
                .block_on(cmds::download_credentials(&c, cluster, dir))
                .map_err(fail)?;
            for p in paths {
                println!("{}", p.display());
            }
            Ok(())
        }
        AssistedCmd::FreeAddresses {
            service,
            cluster,
            network,
            limit,
        } => {
            let c = service.client(dir)?;
            print(rt()?.block_on(cmds::free_addresses(&c, cluster, network, *limit)))
        }
        AssistedCmd::Logs { service, cluster } => {
            let c = service.client(dir)?;
            let path = rt()?
                .block_on(cmds::download_logs(&c, cluster, dir))
                .map_err(fail)?;
            println!("{}", path.display());
            Ok(())
        }
        AssistedCmd::Events { service, cluster } => {
            let c = service.client(dir)?;
            print(rt()?.block_on(cmds::list_events(&c, cluster)))
        }
    }
}

fn serve(dir: &Path, a: &ServeArgs) -> Result<(), Failure> {
    let url = match &a.db_url {
        Some(u) => u.clone(),
        None => {
            okd_fs::create_dir_all(dir, 0o750).map_err(fail)?;
            okd_assisted_service::sqlite_url(dir)
        }
    };
    let mut opts = okd_assisted_service::Options::new(url, a.listen);
    opts.next_instruction_seconds = a.next_instruction_seconds.max(1);
    opts.check_interval_seconds = a.check_interval_seconds.max(1);
    opts.monitor_interval = a.monitor_interval;
    opts.service_names = a.service_names.clone();
    if !a.insecure_http {
        let tls = match (&a.tls_cert, &a.tls_key) {
            (Some(cert), Some(key)) => {
                okd_assisted_service::tls::Tls::from_files(cert, key, a.tls_ca.as_deref())
                    .map_err(|e| anyhow::anyhow!("--tls-cert/--tls-key/--tls-ca: {e}"))
            }
            _ => okd_assisted_service::tls::Tls::load_or_create(
                dir,
                &a.service_names,
                &okd_assisted_service::tls::listen_addresses(a.listen),
            )
            .map_err(anyhow::Error::from),
        }
        .map_err(fail)?;
        opts.tls = Some(std::sync::Arc::new(tls));
    }
    if !a.insecure_no_auth {
        let token = a.auth_token.as_deref().filter(|t| !t.is_empty());
        let keys = okd_assisted_service::auth::Keys::load_or_create(dir, token).map_err(fail)?;
        opts.auth = Some(std::sync::Arc::new(keys));
    }
    if let Some(image) = &a.release_image {
        opts.release_image = image.clone();
    }
    opts.limits = okd_assisted_service::limits::Limits {
        max_hosts_per_infra_env: a.max_hosts_per_infra_env,
        max_host_logs_bytes: a.max_host_logs_bytes,
        max_logs_bytes: a.max_logs_bytes,
        max_body_bytes: a.max_body_bytes,
        max_step_reply_bytes: a.max_step_reply_bytes,
    };
    runtime()
        .map_err(fail)?
        .block_on(okd_assisted_service::run(opts))
        .map_err(fail)
}

/// `okd-install agent`: the discovery agent (assisted-installer-agent's
/// `agent`), run by the discovery Ignition's agent.service.
#[derive(Args, Debug)]
pub struct AgentArgs {
    /// The assisted service, e.g. http://192.168.126.1:8090.
    #[arg(long)]
    url: String,
    /// The infra-env this host registers with.
    #[arg(long = "infra-env-id")]
    infra_env_id: String,
    /// The host id (default: from the board serial, the system UUID or the
    /// lowest MAC, as assisted-installer-agent computes it). Give one when
    /// machines share serials (cloned VMs).
    #[arg(long = "host-id")]
    host_id: Option<String>,
    /// Where the machine's /proc and /sys are (the real agent's /host).
    #[arg(long, default_value = "/")]
    root: PathBuf,
    /// Seconds between registration attempts while the service is away.
    #[arg(long, default_value = "60s", value_parser = crate::node::parse_duration)]
    interval: std::time::Duration,
    /// A PEM file of CA certificates for an https service.
    #[arg(long)]
    cacert: Option<PathBuf>,
    /// Accept an http:// service URL (tokens and steps in clear).
    #[arg(long = "insecure-http")]
    insecure_http: bool,
    /// Where the install step keeps this host's Ignition.
    #[arg(long = "state-dir", default_value = "/var/lib/okd-assisted-agent")]
    state_dir: PathBuf,
}

/// Runs the agent until SIGINT or SIGTERM. The infra-env's agent token is
/// read from `PULL_SECRET_TOKEN` (as the real agent's unit passes it), never
/// from the command line, where `ps` would show it.
pub fn agent(a: &AgentArgs) -> Result<(), Failure> {
    let mut cfg = okd_assisted_agent::runner::AgentConfig::new(&a.url, &a.infra_env_id);
    cfg.host_id = a.host_id.clone();
    cfg.root = okd_assisted_agent::Root(a.root.clone());
    cfg.interval = a.interval;
    cfg.ca_cert = a.cacert.clone();
    cfg.allow_http = a.insecure_http;
    cfg.state_dir = a.state_dir.clone();
    cfg.token = std::env::var("PULL_SECRET_TOKEN")
        .ok()
        .filter(|t| !t.is_empty());
    runtime()
        .map_err(fail)?
        .block_on(okd_assisted_agent::runner::run(cfg, async {
            okd_listen::shutdown_signal().await;
        }))
        .map_err(fail)
}
