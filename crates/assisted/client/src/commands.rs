//! The commands `okd-install assisted …` runs, each returning the text to
//! print (or writing it to a `Write`), so that they are testable without a
//! terminal. The steps are those of assisted-service's
//! `docs/user-guide/rest-api-getting-started.md`: register a cluster,
//! register an infra-env bound to it, boot the hosts, check the
//! validations, install, download the credentials.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use okd_assisted_api::rest::{
    Cluster, Host, HostUpdateParams, InfraEnv, InfraEnvCreateParams, ValidationResult,
};

use crate::client::{Client, DownloadKind};
use crate::config::read_install_config;
use crate::hosts;
use crate::{DEFAULT_OPENSHIFT_VERSION, Error};

/// Between two looks at a cluster while waiting for its installation to
/// start.
pub const INSTALL_POLL: Duration = Duration::from_secs(2);

/// Mode of the credential files written (openshift-install's `auth/`).
pub const CREDENTIAL_MODE: u32 = 0o600;

/// Mode of `<dir>` and `<dir>/auth` when created.
pub const AUTH_DIR_MODE: u32 = 0o750;

/// The credentials [`download_credentials`] writes: (file name on the
/// service, path under the directory).
pub const CREDENTIALS: &[(&str, &str)] = &[
    ("kubeconfig", "auth/kubeconfig"),
    ("kubeadmin-password", "auth/kubeadmin-password"),
];

/// `okd-install assisted create-cluster --config FILE`: reads the
/// install-config-like file ([`crate::config::parse_install_config`]),
/// registers the cluster for `openshift_version` (default
/// [`DEFAULT_OPENSHIFT_VERSION`]) and an infra-env `<name>-infra-env`
/// bound to it with the same pull secret and SSH key; returns both.
///
/// # Errors
/// [`Error::Version`]; [`Error::Config`] naming the file and the field
/// (nothing is sent then); [`Error::Exists`] when a cluster has the name
/// already; [`Error::Status`] with the service's reason; [`Error::InfraEnv`]
/// when the infra-env is refused (the cluster is deleted again).
pub async fn create_cluster_from_file(
    client: &Client,
    path: &Path,
    openshift_version: Option<&str>,
) -> Result<(Cluster, InfraEnv), Error> {
    let version = openshift_version.unwrap_or(DEFAULT_OPENSHIFT_VERSION);
    let parts: Vec<&str> = version.split('.').collect();
    if !(2..=3).contains(&parts.len())
        || parts
            .iter()
            .any(|p| p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()))
    {
        return Err(Error::Version(version.to_string()));
    }
    let cfg = read_install_config(path, version)?;
    let p = cfg.params;
    if let Some(c) = client.clusters().await?.iter().find(|c| c.name == p.name) {
        return Err(Error::Exists {
            name: p.name.clone(),
            id: c.id.clone(),
        });
    }
    let cluster = client.create_cluster(&p).await?;
    let ie = InfraEnvCreateParams {
        name: format!("{}-infra-env", p.name),
        pull_secret: p.pull_secret.clone(),
        cluster_id: Some(cluster.id.clone()),
        openshift_version: Some(p.openshift_version.clone()),
        ssh_authorized_key: p.ssh_public_key.clone(),
        ..InfraEnvCreateParams::default()
    };
    match client.create_infra_env(&ie).await {
        Ok(env) => Ok((cluster, env)),
        Err(e) => {
            let removed = client.delete_cluster(&cluster.id).await.is_ok();
            Err(Error::InfraEnv {
                name: cluster.name,
                id: cluster.id,
                source: Box::new(e),
                removed,
            })
        }
    }
}

/// What `create-cluster` prints: the cluster and the infra-env, their ids
/// and the next step.
pub fn describe_created(c: &Cluster, ie: &InfraEnv) -> String {
    format!(
        "cluster {} created: id {}, OpenShift {}, {} control-plane nodes, status {} ({})\n\
         infra-env {} created: id {}; hosts whose discovery agent registers with it join the cluster\n",
        c.name,
        c.id,
        c.openshift_version,
        c.control_plane_count,
        c.status,
        one_line(&c.status_info),
        ie.name,
        ie.id,
    )
}

/// `okd-install assisted clusters`: a table of the clusters sorted by
/// name: NAME, ID, STATUS, HOSTS (bound to it), VERSION.
///
/// # Errors
/// Those of [`Client::clusters`].
pub async fn list_clusters(client: &Client) -> Result<String, Error> {
    let mut all = client.clusters().await?;
    all.sort_by(|a, b| a.name.cmp(&b.name).then(a.created_at.cmp(&b.created_at)));
    let rows: Vec<Vec<String>> = all
        .iter()
        .map(|c| {
            vec![
                c.name.clone(),
                c.id.clone(),
                c.status.clone(),
                c.total_host_count.to_string(),
                c.openshift_version.clone(),
            ]
        })
        .collect();
    Ok(table(&["NAME", "ID", "STATUS", "HOSTS", "VERSION"], &rows))
}

/// `okd-install assisted hosts --cluster NAME`: a table of the cluster's
/// hosts sorted by name, then id: NAME (the requested host name, else the
/// inventory's, else the id), ID (the shortest prefix of at least eight
/// characters no other host of the cluster shares, [`hosts::id_prefix`]),
/// ROLE (the role; for `auto-assign`, the service's suggestion as
/// `master (suggested)`), STATUS, MAC and ADDRESS (the primary interface's,
/// [`hosts::facts`]), DISK (the installation disk's path), CPUS (logical),
/// MEMORY (physical, GiB), INFO (the status in words, on one line, last
/// since it is the longest). `-` where the inventory has not come yet.
/// Hosts that share a name (freshly booted machines often do) differ by
/// id, MAC and address.
///
/// # Errors
/// Those of [`Client::find_cluster`].
pub async fn list_hosts(client: &Client, cluster: &str) -> Result<String, Error> {
    let c = client.find_cluster(cluster).await?;
    if c.hosts.is_empty() {
        return Ok(format!(
            "cluster {}: no hosts have registered yet (boot them with the discovery agent of its infra-env)\n",
            c.name
        ));
    }
    let ids: Vec<&str> = c.hosts.iter().map(|h| h.id.as_str()).collect();
    let mut rows: Vec<(hosts::Facts, &Host)> =
        c.hosts.iter().map(|h| (hosts::facts(h), h)).collect();
    rows.sort_by(|(a, x), (b, y)| a.name.cmp(&b.name).then(x.id.cmp(&y.id)));
    let rows: Vec<Vec<String>> = rows
        .into_iter()
        .map(|(f, h)| {
            let inv: Option<serde_json::Value> = serde_json::from_str(&h.inventory).ok();
            let cpus = inv
                .as_ref()
                .and_then(|v| v["cpu"]["count"].as_u64())
                .map_or("-".to_string(), |n| n.to_string());
            let mem = inv
                .as_ref()
                .and_then(|v| v["memory"]["physical_bytes"].as_u64())
                .map_or("-".to_string(), |b| {
                    format!("{:.1}", b as f64 / f64::from(1u32 << 30))
                });
            let role = if h.role == "auto-assign" && !h.suggested_role.is_empty() {
                format!("{} (suggested)", h.suggested_role)
            } else {
                h.role.clone()
            };
            vec![
                f.name,
                hosts::id_prefix(&h.id, &ids),
                role,
                h.status.clone(),
                f.mac,
                f.address,
                f.disk,
                cpus,
                mem,
                one_line(&h.status_info),
            ]
        })
        .collect();
    Ok(table(
        &[
            "NAME",
            "ID",
            "ROLE",
            "STATUS",
            "MAC",
            "ADDRESS",
            "DISK",
            "CPUS",
            "MEMORY(GiB)",
            "INFO",
        ],
        &rows,
    ))
}

/// `okd-install assisted host set HOST [--cluster NAME] [--name N]
/// [--role R]`: the host that `wanted` names ([`hosts::matching`]: its id,
/// an id prefix, a MAC or address of its interfaces, or its host name),
/// among the cluster's hosts or, without `cluster`, every infra-env's, is
/// given the name and/or role through `PATCH
/// /v2/infra-envs/{infra_env_id}/hosts/{host_id}`; returns what changed,
/// in words.
///
/// # Errors
/// [`Error::NothingToSet`]; [`Error::NoHost`] listing the hosts there
/// are; [`Error::AmbiguousHost`] listing the ones that match; the
/// service's refusal ([`Error::Status`] 400 for a name or role it does not
/// take, 409 once the host is installing).
pub async fn set_host(
    client: &Client,
    cluster: Option<&str>,
    wanted: &str,
    name: Option<&str>,
    role: Option<&str>,
) -> Result<String, Error> {
    if name.is_none() && role.is_none() {
        return Err(Error::NothingToSet);
    }
    let (all, scope) = match cluster {
        Some(c) => {
            let c = client.find_cluster(c).await?;
            (c.hosts, format!("cluster {}", c.name))
        }
        None => {
            let mut all = Vec::new();
            for ie in client.infra_envs().await? {
                all.extend(client.hosts(&ie.id).await?);
            }
            (all, String::new())
        }
    };
    let found = hosts::matching(&all, wanted);
    let h = match found.as_slice() {
        [(h, _)] => (*h).clone(),
        [] => {
            return Err(Error::NoHost {
                wanted: wanted.to_string(),
                scope,
                known: all.iter().map(hosts::describe).collect(),
            });
        }
        many => {
            return Err(Error::AmbiguousHost {
                wanted: wanted.to_string(),
                matches: many
                    .iter()
                    .map(|(h, how)| format!("{} (by {how})", hosts::describe(h)))
                    .collect(),
            });
        }
    };
    let before = hosts::name(&h);
    let p = HostUpdateParams {
        host_name: name.map(str::to_string),
        host_role: role.map(str::to_string),
        ..HostUpdateParams::default()
    };
    let after = client.update_host(&h.infra_env_id, &h.id, &p).await?;
    let f = hosts::facts(&after);
    let mut changes = Vec::new();
    if name.is_some() {
        changes.push(format!("name {before} → {}", f.name));
    }
    if role.is_some() {
        changes.push(format!("role {} → {}", h.role, after.role));
    }
    Ok(format!(
        "host {} (MAC {}, address {}): {}\n",
        after.id,
        f.mac,
        f.address,
        changes.join(", ")
    ))
}

/// `okd-install assisted validations --cluster NAME [--failing]`: the
/// cluster's validations, then each host's (hosts with failures first,
/// then by name), each named by its name, status, id prefix, MAC and
/// address (hosts often share a name); in each, the failing ones first (`failure`, `error`,
/// then `pending`, `disabled`, `success`), one per line as
/// `status id: message`. With `failing_only`, only `failure` and `error`,
/// and sections without any are left out.
///
/// # Errors
/// Those of [`Client::find_cluster`].
pub async fn validations(
    client: &Client,
    cluster: &str,
    failing_only: bool,
) -> Result<String, Error> {
    let c = client.find_cluster(cluster).await?;
    let mut sections: Vec<(String, Vec<ValidationResult>)> = vec![(
        format!("cluster {} ({})", c.name, c.status),
        sorted(&c.validations_info),
    )];
    let ids: Vec<&str> = c.hosts.iter().map(|h| h.id.as_str()).collect();
    let mut by_host: Vec<(String, Vec<ValidationResult>)> = c
        .hosts
        .iter()
        .map(|h| {
            let f = hosts::facts(h);
            (
                format!(
                    "host {} ({}), id {}, MAC {}, address {}",
                    f.name,
                    h.status,
                    hosts::id_prefix(&h.id, &ids),
                    f.mac,
                    f.address
                ),
                sorted(&h.validations_info),
            )
        })
        .collect();
    by_host.sort_by_cached_key(|(title, v)| (!v.first().is_some_and(failing), title.clone()));
    sections.extend(by_host);
    let mut out = String::new();
    for (title, list) in sections {
        let shown: Vec<&ValidationResult> = list
            .iter()
            .filter(|v| !failing_only || failing(v))
            .collect();
        if failing_only && shown.is_empty() {
            continue;
        }
        out.push_str(&title);
        out.push_str(":\n");
        if shown.is_empty() {
            out.push_str("  (no validations yet)\n");
        }
        for v in shown {
            out.push_str(&format!(
                "  {:<8} {}: {}\n",
                v.status,
                v.id,
                one_line(&v.message)
            ));
        }
    }
    if out.is_empty() {
        out = format!("cluster {}: no failing validations\n", c.name);
    }
    Ok(out)
}

/// `okd-install assisted install --cluster NAME [--wait DURATION]`: asks
/// the service to install; prints the status it answers. With `wait`,
/// looks again every [`INSTALL_POLL`] and prints each change of status
/// until the installation has started (`installing` or beyond), returning
/// the cluster then.
///
/// # Errors
/// [`Error::Status`] 409 with the service's reason when the cluster is not
/// ready; [`Error::InstallFailed`] when the preparation ends in another
/// status (back to `ready` with the reason, `error`);
/// [`Error::WaitTimeout`] when `wait` passes first; [`Error::Output`].
pub async fn install(
    client: &Client,
    cluster: &str,
    wait: Option<Duration>,
    out: &mut impl Write,
) -> Result<Cluster, Error> {
    let c = client.find_cluster(cluster).await?;
    let started = Instant::now();
    let mut c = client.install(&c.id).await?;
    writeln!(
        out,
        "cluster {}: installation accepted: {} ({})",
        c.name,
        c.status,
        one_line(&c.status_info)
    )?;
    let Some(wait) = wait else {
        return Ok(c);
    };
    let deadline = started + wait;
    loop {
        match c.status.as_str() {
            "installing"
            | "installing-pending-user-action"
            | "finalizing"
            | "installed"
            | "adding-hosts" => return Ok(c),
            "preparing-for-installation" => {}
            _ => {
                return Err(Error::InstallFailed {
                    cluster: c.name,
                    status: c.status,
                    info: one_line(&c.status_info),
                });
            }
        }
        let now = Instant::now();
        if now >= deadline {
            return Err(Error::WaitTimeout {
                cluster: c.name,
                waited: wait,
                status: c.status,
                info: one_line(&c.status_info),
            });
        }
        tokio::time::sleep(INSTALL_POLL.min(deadline - now)).await;
        let next = client.cluster(&c.id).await?;
        if (&next.status, &next.status_info) != (&c.status, &c.status_info) {
            writeln!(
                out,
                "cluster {}: {} ({})",
                next.name,
                next.status,
                one_line(&next.status_info)
            )?;
        }
        c = next;
    }
}

/// `okd-install assisted credentials --cluster NAME`: downloads
/// `kubeconfig` and `kubeadmin-password` and writes them to
/// `<dir>/auth/kubeconfig` and `<dir>/auth/kubeadmin-password`
/// ([`CREDENTIALS`]), each atomically with mode [`CREDENTIAL_MODE`];
/// missing directories are made with [`AUTH_DIR_MODE`]. Both are
/// downloaded before either is written. Their contents are never printed;
/// returns the paths written.
///
/// # Errors
/// [`Error::NoCredentialsYet`] before the installation generated them
/// (the service's 409), saying what to do; [`Error::Fs`] naming the path.
pub async fn download_credentials(
    client: &Client,
    cluster: &str,
    dir: &Path,
) -> Result<Vec<PathBuf>, Error> {
    let c = client.find_cluster(cluster).await?;
    let mut files = Vec::new();
    for (name, rel) in CREDENTIALS {
        let data = match client
            .download(&c.id, DownloadKind::Credentials, name)
            .await
        {
            Ok(d) => d,
            Err(Error::Status {
                method,
                url,
                status: 409,
                ..
            }) => {
                return Err(Error::NoCredentialsYet {
                    cluster: c.name,
                    cluster_status: c.status,
                    method,
                    url,
                    status: 409,
                });
            }
            Err(e) => return Err(e),
        };
        files.push((dir.join(rel), data));
    }
    okd_fs::create_dir_all(dir, AUTH_DIR_MODE)?;
    okd_fs::create_dir_all(&dir.join("auth"), AUTH_DIR_MODE)?;
    let mut written = Vec::new();
    for (path, data) in files {
        okd_fs::write_atomic(&path, &data, CREDENTIAL_MODE)?;
        written.push(path);
    }
    Ok(written)
}

/// `okd-install assisted logs --cluster NAME --dir D`: the hosts' uploaded
/// logs (a tar of each host's `<host id>.tar.gz`) written to
/// `<dir>/<cluster name>_host_logs.tar`, mode 0600 (journals may hold
/// what only the cluster's owner should read); returns the path.
///
/// # Errors
/// [`Error::Status`] 404 when no host has uploaded logs (hosts upload
/// them when they enter error or cancelled); [`Error::Fs`] naming the
/// path.
pub async fn download_logs(client: &Client, cluster: &str, dir: &Path) -> Result<PathBuf, Error> {
    let c = client.find_cluster(cluster).await?;
    let data = client.host_logs(&c.id).await?;
    okd_fs::create_dir_all(dir, AUTH_DIR_MODE)?;
    let path = dir.join(format!("{}_host_logs.tar", c.name));
    okd_fs::write_atomic(&path, &data, CREDENTIAL_MODE)?;
    Ok(path)
}

/// `okd-install assisted events --cluster NAME`: one line per event,
/// oldest first: `time severity message`.
///
/// # Errors
/// Those of [`Client::find_cluster`] and [`Client::events`].
pub async fn list_events(client: &Client, cluster: &str) -> Result<String, Error> {
    let c = client.find_cluster(cluster).await?;
    let mut out = String::new();
    for e in client.events(&c.id).await? {
        out.push_str(&format!(
            "{} {:<8} {}\n",
            e.event_time,
            e.severity,
            one_line(&e.message)
        ));
    }
    Ok(out)
}

/// `okd-install assisted free-addresses`: the addresses of `network` no
/// host of `cluster` (a name or id) heard an answer for, one per line
/// (where the API and ingress VIPs can go).
///
/// # Errors
/// The service's answer (404 naming the network when no host scanned it).
pub async fn free_addresses(
    client: &Client,
    cluster: &str,
    network: &str,
    limit: Option<usize>,
) -> Result<String, Error> {
    let c = client.find_cluster(cluster).await?;
    let list = client.free_addresses(&c.id, network, limit).await?;
    Ok(list.into_iter().map(|a| a + "\n").collect())
}

fn failing(v: &ValidationResult) -> bool {
    matches!(v.status.as_str(), "failure" | "error")
}

fn rank(status: &str) -> u8 {
    match status {
        "failure" => 0,
        "error" => 1,
        "pending" => 2,
        "disabled" => 3,
        "success" => 4,
        _ => 2,
    }
}

/// `validations_info` (`{"<category>":[{id,status,message}]}`) flattened,
/// failing first (stable otherwise).
fn sorted(info: &str) -> Vec<ValidationResult> {
    let by_cat: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(info).unwrap_or_default();
    let mut all: Vec<ValidationResult> = by_cat
        .into_iter()
        .flat_map(|(_, v)| serde_json::from_value::<Vec<ValidationResult>>(v).unwrap_or_default())
        .collect();
    all.sort_by_key(|v| rank(&v.status));
    all
}

/// Text on one line: runs of white space (newlines included) as one space.
fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Columns padded to their widest cell, the last one not padded.
fn table(head: &[&str], rows: &[Vec<String>]) -> String {
    let mut width: Vec<usize> = head.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (w, cell) in width.iter_mut().zip(r) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut s = String::new();
        let last = cells.len().saturating_sub(1);
        for (i, cell) in cells.into_iter().enumerate() {
            if i == last {
                s.push_str(cell);
            } else {
                s.push_str(&format!("{cell:<w$}  ", w = width[i]));
            }
        }
        s.trim_end().to_string() + "\n"
    };
    let mut out = line(head.to_vec());
    for r in rows {
        out.push_str(&line(r.iter().map(String::as_str).collect()));
    }
    out
}
