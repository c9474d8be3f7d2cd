//! `okd-install preflight --dir D`: the environment of a user-provisioned
//! install checked before a node boots, for the failures that stop most
//! installs (openshift/installer issues behind the reference's list of UPI
//! pain points: a load balancer that checks `GET /` or points 22623 at the
//! API, `api-int` not resolvable from the nodes, the 24-hour certificates,
//! clock skew, the install disk, the OS images).
//!
//! Every check gives an id, a result, the cause and the fix in one line
//! ([`okd_serve_api::preflight::Check`]); `serve` runs the same checks at
//! start and shows them on its dashboard.
//!
//! | family | id | what |
//! | --- | --- | --- |
//! | inputs | `inventory` | agent-config.yaml and bastion-config.yaml load (every rule, the install disk's among them) |
//! | disks | `disk.<host>` | the install disk is a whole disk's path given by `deviceName`, not the `/dev/sda` default |
//! | OS images | `images.<file>` | the PXE scripts' kernel, initramfs, rootfs and the metal image exist, are not empty, and match `<file>.sha256` when given |
//! | certificates | `certificates` | bootstrap.ign's 24-hour certificates: valid now, and still valid when the last node boots (`--boot-within`) |
//! | clock | `clock.bastion` | the bastion's clock is synchronized (systemd-timedated or chrony) |
//! | DNS | `dns.<ns>.<name>` | each node's nameserver answers api, api-int, a random `*.apps` name and every host's A and PTR record as the inventory says; a nameserver that is not serve's is named |
//! | load balancer | `lb.config.<frontend>.<aspect>` | the user's haproxy.cfg against the generated one: frontends, servers and ports, health paths |
//! | load balancer | `lb.machine-config.ca` | 22623 presents a certificate of master.ign's root CA for api-int |
//! | load balancer | `lb.api.readyz` | through the API address `/readyz` answers as the bootstrap's own, once that is up |
//! | mirror | `mirror.release.*`, `mirror.<registry>.login`, `mirror.<registry>.tls` | the release image by digest and covered by a mirror source; a pull-secret login for each mirror registry; TLS to it verified with the system roots plus `additionalTrustBundle` |

mod clock;
mod dns;
mod files;
mod haproxy;
mod mirror;
mod probe;

use std::path::PathBuf;
use std::time::Duration;

pub use okd_serve_api::preflight::{Check, Outcome, Report};

/// What to check and how.
#[derive(Debug, Clone)]
pub struct Options {
    /// The asset directory (`--dir`).
    pub dir: PathBuf,
    /// The user's own HAProxy configuration, compared with the generated
    /// one (`--haproxy-cfg`); `None`: no comparison.
    pub haproxy_cfg: Option<PathBuf>,
    /// How long from now the last node may boot (`--boot-within`, default
    /// 2 h): the certificates must stay valid that long.
    pub boot_within: Duration,
    /// Run the checks that talk to the network (DNS, the load balancer);
    /// `false` (`--offline`) keeps to the files.
    pub network: bool,
    /// The limit of one network probe (a DNS query, a TLS handshake, an
    /// HTTP request), default 2 s.
    pub timeout: Duration,
}

impl Options {
    /// The defaults for `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> Options {
        Options {
            dir: dir.into(),
            haproxy_cfg: None,
            boot_within: Duration::from_secs(2 * 3600),
            network: true,
            timeout: Duration::from_secs(2),
        }
    }
}

/// Runs every check for `opts.dir` and returns them in order. Never fails:
/// an input that cannot be read is a failed check (`inventory`), and the
/// checks that need it are skipped.
pub async fn run(opts: &Options) -> Report {
    let mut checks = Vec::new();
    let loaded = files::load(&opts.dir, &mut checks);
    if let Some(inputs) = &loaded {
        checks.extend(files::disks(&opts.dir, inputs));
        let dir = opts.dir.clone();
        let images = inputs.inv.os_images.clone();
        checks.extend(
            tokio::task::spawn_blocking(move || files::images(&dir, &images))
                .await
                .unwrap_or_else(|e| {
                    vec![Check::skip(
                        "images",
                        format!("the image check stopped: {e}"),
                    )]
                }),
        );
    }
    checks.push(files::certificates(
        &opts.dir,
        opts.boot_within,
        time::OffsetDateTime::now_utc(),
    ));
    checks.push(clock::bastion().await);
    if let Some(inputs) = &loaded {
        if let Some(cfg) = &opts.haproxy_cfg {
            checks.extend(haproxy::compare(cfg, &inputs.inv));
        }
        checks.extend(
            mirror::check(
                &inputs.config,
                inputs.release.as_deref(),
                &inputs.inv,
                opts.network,
                opts.timeout,
            )
            .await,
        );
        if opts.network {
            checks.extend(dns::check(&inputs.inv, opts.timeout).await);
            checks.push(probe::machine_config_ca(&opts.dir, &inputs.inv, opts.timeout).await);
            checks.push(probe::api_readyz(&inputs.inv, opts.timeout).await);
        }
    }
    Report {
        time: time::OffsetDateTime::now_utc()
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default(),
        checks,
    }
}

/// The report as text: one line per check ([`Check::line`]), then the
/// summary ([`Report::summary`]).
pub fn text(r: &Report) -> String {
    let mut out = String::new();
    for c in &r.checks {
        out.push_str(&c.line());
        out.push('\n');
    }
    out.push_str(&r.summary());
    out.push('\n');
    out
}
