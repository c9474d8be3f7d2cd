//! `okd-install destroy bootstrap` for user-provisioned installs on platform
//! `none` and `baremetal`.
//!
//! openshift-install cannot do this step there: it loads `metadata.json`,
//! finds no platform and fails with `no platform configured in metadata`
//! (openshift/installer `pkg/destroy/bootstrap/bootstrap.go`),
//! and the user removes the bootstrap machine and its load-balancer entries
//! by hand. okd-install knows the hosts (`agent-config.yaml` +
//! `bastion-config.yaml`, crate okd-hosts) and runs the load balancer
//! (`okd-install serve`), so this command:
//!
//! 1. checks `metadata.json` names platform none or baremetal (any other
//!    platform: [`DestroyError::Unsupported`]);
//! 2. asks the running `okd-install serve` of the directory, through its
//!    control socket, to take the bootstrap out of every pool and stop
//!    serving bootstrap.ign (`remove-bootstrap`), which records the removal
//!    in the directory (`okd_serve_api::BOOTSTRAP_REMOVED_FILE`) so later serves
//!    keep it; when no serve runs, records it itself;
//! 3. prints what the user must still do: the bootstrap host to power off
//!    (name, MAC, address, disk), and, when they run their own daemons from
//!    `okd-install create bastion-configs`, every line of those files that
//!    names the bootstrap (HAProxy backends, DNS records, PXE files) plus
//!    HAProxy's runtime commands.
//!
//! When serve is not running, nothing can be taken out of its pools; the
//! removal is recorded for the next serve, the report says so and the
//! command still succeeds (exit code 0): a
//! directory whose hosts are served by the user's own HAProxy and DNS has no
//! serve to ask, and the list is the answer there.

use std::path::{Path, PathBuf};

use okd_hosts::{Inventory, Node, Role};
use tracing::{info, warn};

/// Keys of `metadata.json` that name a platform okd-install does not
/// destroy anything on (openshift/installer `pkg/types/clustermetadata.go`).
const OTHER_PLATFORMS: [&str; 10] = [
    "aws",
    "azure",
    "gcp",
    "ibmcloud",
    "libvirt",
    "nutanix",
    "openstack",
    "ovirt",
    "powervs",
    "vsphere",
];

/// Why `destroy bootstrap` failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DestroyError {
    /// No readable `metadata.json`.
    #[error(
        "cannot read {}: run `okd-install create ignition-configs --dir {}` first",
        path.display(),
        okd_fs::shell_path(path.parent().unwrap_or(std::path::Path::new(".")))
    )]
    NoMetadata {
        /// The file.
        path: PathBuf,
        /// The reason.
        #[source]
        source: std::io::Error,
    },
    /// `metadata.json` is not a JSON object.
    #[error("{} is not a metadata.json (a JSON object)", path.display())]
    Metadata {
        /// The file.
        path: PathBuf,
        /// The parse error.
        #[source]
        source: serde_json::Error,
    },
    /// A platform other than none or baremetal.
    #[error(
        "metadata.json names platform {platform}: okd-install destroy bootstrap handles platform none and baremetal only; delete the bootstrap machine and its load-balancer entries with your platform's tools"
    )]
    Unsupported {
        /// The platform key of metadata.json.
        platform: String,
    },
    /// The hosts files do not load.
    #[error("reading the hosts of {} (agent-config.yaml, bastion-config.yaml)", dir.display())]
    Inventory {
        /// The asset directory.
        dir: PathBuf,
        /// What is wrong (names the file and field).
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The inventory has no bootstrap host.
    #[error(
        "{} has no bootstrap host (field `bootstrap`): nothing to remove",
        dir.join("bastion-config.yaml").display()
    )]
    NoBootstrapHost {
        /// The asset directory.
        dir: PathBuf,
    },
    /// serve answered with an error or the exchange broke off.
    #[error("taking the bootstrap out of okd-install serve's pools")]
    Serve(#[source] okd_serve_api::ControlError),
    /// The bootstrap's etcd member may still be needed (or the cluster
    /// cannot say): removing the bootstrap could lose etcd quorum.
    #[error(
        "the bootstrap's etcd member may still be needed: {reason}. Removing the bootstrap now could lose etcd quorum and every object created so far; wait for `okd-install wait-for bootstrap-complete` to finish, or give --force if the bootstrap is gone already"
    )]
    EtcdNeeded {
        /// What the cluster says, or why it cannot be asked.
        reason: String,
    },
    /// A file of `<dir>/bastion/` could not be read.
    #[error("reading {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The reason.
        #[source]
        source: std::io::Error,
    },
}

/// What `destroy bootstrap` did and what is left to the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DestroyReport {
    /// The platform: `none` or `baremetal`.
    pub platform: String,
    /// The bootstrap host, when the directory has an inventory.
    pub bootstrap: Option<Node>,
    /// serve's reply to `remove-bootstrap`; `None` when no serve runs.
    pub serve_reply: Option<String>,
    /// Lines of `<dir>/bastion/` files that name the bootstrap:
    /// (path relative to `<dir>/bastion/`, 1-based line number or 0 for a
    /// whole file, text).
    pub config_lines: Vec<(String, usize, String)>,
    /// HAProxy runtime commands that take the bootstrap out without a reload.
    pub haproxy_commands: Vec<String>,
    /// The text for the user (stdout).
    pub text: String,
}

/// Checks `metadata.json` before anything else is asked: it exists, and
/// names platform none or baremetal. Returns the platform.
///
/// # Errors
/// As [`destroy_bootstrap`] for metadata.json.
pub fn check_metadata(dir: &Path) -> Result<String, DestroyError> {
    platform(dir)
}

/// The platform key of `metadata.json`: `none` when it names none.
fn platform(dir: &Path) -> Result<String, DestroyError> {
    let path = dir.join("metadata.json");
    let data = std::fs::read(&path).map_err(|source| DestroyError::NoMetadata {
        path: path.clone(),
        source,
    })?;
    let v: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(&data).map_err(|source| DestroyError::Metadata {
            path: path.clone(),
            source,
        })?;
    if let Some(p) = OTHER_PLATFORMS.iter().find(|p| v.contains_key(**p)) {
        return Err(DestroyError::Unsupported {
            platform: (*p).to_string(),
        });
    }
    Ok(if v.contains_key("baremetal") {
        "baremetal".into()
    } else {
        "none".into()
    })
}

/// Whether `text` contains `addr` as a whole address (not as the prefix of
/// a longer one, e.g. `10.0.0.1` in `10.0.0.12`).
fn has_address(text: &str, addr: &str) -> bool {
    // An IPv4 address may be followed by `:port`; IPv6 ones are written
    // `[addr]:port` or `ipv6@addr:port` and continue with hex digits and `:`.
    let v6 = addr.contains(':');
    let addr_char =
        |c: char| c.is_ascii_digit() || c == '.' || (v6 && (c.is_ascii_hexdigit() || c == ':'));
    text.match_indices(addr).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + addr.len()..].chars().next();
        !before.is_some_and(addr_char) && !after.is_some_and(addr_char)
    })
}

/// The lines of the generated bastion files under `root` that name `node`:
/// its FQDN, its address as a whole token, an HAProxy `server <hostname> `
/// line; files whose name carries its MAC (PXE) as a whole (line 0).
fn config_lines(root: &Path, node: &Node) -> Result<Vec<(String, usize, String)>, DestroyError> {
    let mut files = Vec::new();
    walk(root, &mut files)?;
    files.sort();
    let addr = node.address.to_string();
    let server = format!("server {} ", node.hostname);
    let macs: Vec<String> = node
        .mac
        .iter()
        .flat_map(|m| [m.clone(), m.replace(':', "-")])
        .collect();
    let mut out = Vec::new();
    for path in files {
        let rel = path
            .strip_prefix(root)
            .unwrap_or(&path)
            .display()
            .to_string();
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().to_ascii_lowercase())
            .unwrap_or_default();
        if macs.iter().any(|m| name.contains(m.as_str())) {
            out.push((rel, 0, format!("the PXE boot file of MAC {}", macs[0])));
            continue;
        }
        let data = std::fs::read(&path).map_err(|source| DestroyError::Read {
            path: path.clone(),
            source,
        })?;
        let text = String::from_utf8_lossy(&data);
        for (i, line) in text.lines().enumerate() {
            let t = line.trim();
            if t.starts_with('#') || t.starts_with(';') || t.starts_with("//") {
                continue;
            }
            if t.contains(&node.fqdn) || has_address(t, &addr) || t.starts_with(&server) {
                out.push((rel.clone(), i + 1, t.to_string()));
            }
        }
    }
    Ok(out)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), DestroyError> {
    let rd = std::fs::read_dir(dir).map_err(|source| DestroyError::Read {
        path: dir.to_path_buf(),
        source,
    })?;
    for e in rd {
        let e = e.map_err(|source| DestroyError::Read {
            path: dir.to_path_buf(),
            source,
        })?;
        let ft = e.file_type().map_err(|source| DestroyError::Read {
            path: e.path(),
            source,
        })?;
        if ft.is_dir() {
            walk(&e.path(), out)?;
        } else if ft.is_file() {
            out.push(e.path());
        }
    }
    Ok(())
}

/// The address with its prefix (`192.0.2.2/24`).
fn cidr(node: &Node) -> String {
    format!("{}/{}", node.address, node.prefix)
}

/// The hosts `serve` serves for `dir`: agent-config.yaml and
/// bastion-config.yaml resolved with the cluster name and base domain of
/// the state file (or install-config.yaml), as [`okd_cluster::install`]
/// reads them.
fn inventory(dir: &Path) -> Result<Inventory, DestroyError> {
    let err = |source: Box<dyn std::error::Error + Send + Sync>| DestroyError::Inventory {
        dir: dir.to_path_buf(),
        source,
    };
    let install = okd_cluster::install::Install::load(dir).map_err(|e| err(e.into()))?;
    install
        .inventory()
        .map_err(|e| err(e.into()))?
        .ok_or_else(|| {
            err(format!(
                "neither {} nor {} exists",
                okd_hosts::AGENT_CONFIG_FILE,
                okd_hosts::BASTION_CONFIG_FILE
            )
            .into())
        })
}

/// How long [`etcd_gate`] waits for the API.
pub const GATE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(15);

/// Refuses while the bootstrap's etcd member is still a member (or the
/// cluster cannot be asked), as `destroy bootstrap` and `serve
/// remove-bootstrap` do before they act: asks `etcds/cluster` for
/// `EtcdBootstrapMemberRemoved` through `<dir>/auth/kubeconfig`
/// (openshift-install's `wait-for bootstrap-complete` waits for the same
/// condition before it says the bootstrap may go).
///
/// # Errors
/// [`DestroyError::EtcdNeeded`] with the condition, or with why the
/// cluster could not be asked (no kubeconfig, unreachable API, refused
/// credentials).
pub async fn etcd_gate(dir: &Path) -> Result<(), DestroyError> {
    let needed = |reason: String| DestroyError::EtcdNeeded { reason };
    let kc = dir.join("auth/kubeconfig");
    let ask = async {
        let c = okd_cluster::Cluster::from_kubeconfig(&kc)
            .await
            .map_err(|e| e.to_string())?;
        okd_cluster::openshift::bootstrap_member_kept(c.client())
            .await
            .map_err(|e| {
                c.api_error("/apis/operator.openshift.io/v1/etcds/cluster", e)
                    .to_string()
            })
    };
    match tokio::time::timeout(GATE_TIMEOUT, ask).await {
        Err(_) => Err(needed(format!(
            "the cluster's API did not answer in {} s",
            GATE_TIMEOUT.as_secs()
        ))),
        Ok(Err(e)) => Err(needed(format!("cannot ask the cluster: {e}"))),
        Ok(Ok(Some(why))) => Err(needed(why)),
        Ok(Ok(None)) => {
            info!(
                "the bootstrap's etcd member is removed (etcds/cluster EtcdBootstrapMemberRemoved=True)"
            );
            Ok(())
        }
    }
}

/// `okd-install destroy bootstrap --dir dir`.
///
/// # Errors
/// [`DestroyError`]: no or bad metadata.json, another platform, hosts files
/// that do not load, an inventory without a bootstrap host, serve refusing
/// the request, an unreadable file under `<dir>/bastion/`. A serve that is
/// not running is no error (see the crate documentation).
pub fn destroy_bootstrap(dir: &Path) -> Result<DestroyReport, DestroyError> {
    let platform = platform(dir)?;
    let has_hosts = ["agent-config.yaml", "bastion-config.yaml"]
        .iter()
        .any(|f| dir.join(f).exists());
    let mut report = DestroyReport {
        platform: platform.clone(),
        bootstrap: None,
        serve_reply: None,
        config_lines: Vec::new(),
        haproxy_commands: Vec::new(),
        text: String::new(),
    };
    if !has_hosts {
        warn!(
            "No agent-config.yaml or bastion-config.yaml in {}: okd-install does not know the bootstrap host",
            dir.display()
        );
        report.text = format!(
            "okd-install does not know your hosts (no agent-config.yaml or bastion-config.yaml in {}).\n\
             Power off and delete the bootstrap machine, and remove it from your load balancer's\n\
             api (6443) and machine-config (22623) backends and from your DNS.\n",
            dir.display()
        );
        return Ok(report);
    }
    let inv: Inventory = inventory(dir)?;
    let node =
        inv.role(Role::Bootstrap)
            .next()
            .cloned()
            .ok_or_else(|| DestroyError::NoBootstrapHost {
                dir: dir.to_path_buf(),
            })?;

    match okd_serve_api::remove_bootstrap(dir) {
        Ok(Some(reply)) => {
            info!(
                "okd-install serve took the bootstrap host {} out of its pools",
                node.hostname
            );
            report.serve_reply = Some(reply);
        }
        Ok(None) => {
            warn!(
                "okd-install serve is not running for {}: nothing was taken out of its pools (the removal is recorded for the next serve)",
                dir.display()
            );
        }
        Err(e) => return Err(DestroyError::Serve(e)),
    }

    let bastion = dir.join("bastion");
    if bastion.is_dir() {
        report.config_lines = config_lines(&bastion, &node)?;
    }
    for svc in okd_hosts::Service::ALL {
        if svc
            .members(&inv)
            .iter()
            .any(|n| n.hostname == node.hostname)
        {
            report.haproxy_commands.push(format!(
                "echo 'disable server {}/{}' | socat stdio /run/haproxy/admin.sock",
                svc.name(),
                node.hostname
            ));
        }
    }
    report.bootstrap = Some(node);
    report.text = text(dir, &inv, &report);
    Ok(report)
}

fn text(dir: &Path, inv: &Inventory, r: &DestroyReport) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let Some(node) = &r.bootstrap else {
        return s;
    };
    let _ = writeln!(
        s,
        "Power off and delete the bootstrap host (platform {}), or reinstall it (e.g. as a worker):",
        r.platform
    );
    let _ = writeln!(s, "  host      {} ({})", node.hostname, node.fqdn);
    match (&node.mac, &node.interface) {
        (Some(m), Some(i)) => {
            let _ = writeln!(s, "  MAC       {m} ({i})");
        }
        (Some(m), None) => {
            let _ = writeln!(s, "  MAC       {m}");
        }
        _ => {}
    }
    let _ = writeln!(s, "  address   {}", cidr(node));
    if !node.install_disk.is_empty() {
        let _ = writeln!(s, "  disk      {}", node.install_disk);
    }
    s.push('\n');
    match &r.serve_reply {
        Some(reply) => {
            let _ = writeln!(s, "okd-install serve for {}:", dir.display());
            for l in reply.lines().filter(|l| !l.trim().is_empty()) {
                let _ = writeln!(s, "  {l}");
            }
        }
        None => {
            let _ = writeln!(
                s,
                "okd-install serve is not running for {}: nothing was taken out of its pools.\n\
                 The removal is recorded in {}: a serve started later neither serves bootstrap.ign\n\
                 nor balances to the bootstrap (`okd-install serve restore-bootstrap --dir {}` undoes it).",
                dir.display(),
                dir.join(okd_serve_api::BOOTSTRAP_REMOVED_FILE).display(),
                okd_fs::shell_path(dir)
            );
        }
    }
    s.push('\n');
    if r.config_lines.is_empty() {
        let api = inv.ports.api;
        let mc = inv.ports.machine_config;
        let _ = writeln!(
            s,
            "If you run your own load balancer or DNS, remove {} ({}) from the api ({api}) and\n\
             machine-config ({mc}) backends and its DNS records.",
            node.hostname, node.address
        );
    } else {
        let _ = writeln!(
            s,
            "If you run your own daemons from `okd-install create bastion-configs` ({}),\n\
             remove these lines and files:",
            dir.join("bastion").display()
        );
        for (path, line, t) in &r.config_lines {
            if *line == 0 {
                let _ = writeln!(s, "  {path}: {t}");
            } else {
                let _ = writeln!(s, "  {path}:{line}: {t}");
            }
        }
        if r.config_lines
            .iter()
            .any(|(p, _, _)| p.starts_with("haproxy/"))
        {
            let _ = writeln!(s, "HAProxy takes it out without a reload with:");
            for c in &r.haproxy_commands {
                let _ = writeln!(s, "  {c}");
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_addresses_only() {
        assert!(has_address("server b 10.0.0.1:6443 check", "10.0.0.1"));
        assert!(has_address("host-record=b.x,10.0.0.1", "10.0.0.1"));
        assert!(!has_address("server m 10.0.0.12:6443", "10.0.0.1"));
        assert!(!has_address("110.0.0.1", "10.0.0.1"));
        assert!(!has_address("server b ipv6@fd00::2:6443", "fd00::2"));
        assert!(has_address("b IN AAAA fd00::2", "fd00::2"));
    }

    #[test]
    fn platforms_from_metadata() {
        let d = tempfile::tempdir().unwrap();
        let e = platform(d.path()).unwrap_err();
        assert!(e.to_string().contains("metadata.json"), "{e}");
        std::fs::write(d.path().join("metadata.json"), r#"{"clusterName":"okd"}"#).unwrap();
        assert_eq!(platform(d.path()).unwrap(), "none");
        std::fs::write(
            d.path().join("metadata.json"),
            r#"{"clusterName":"okd","baremetal":{}}"#,
        )
        .unwrap();
        assert_eq!(platform(d.path()).unwrap(), "baremetal");
        std::fs::write(
            d.path().join("metadata.json"),
            r#"{"clusterName":"okd","aws":{"region":"x"}}"#,
        )
        .unwrap();
        let e = platform(d.path()).unwrap_err();
        assert!(matches!(e, DestroyError::Unsupported { .. }), "{e}");
        assert!(e.to_string().contains("platform aws"), "{e}");
        std::fs::write(d.path().join("metadata.json"), "[1]").unwrap();
        assert!(matches!(
            platform(d.path()).unwrap_err(),
            DestroyError::Metadata { .. }
        ));
    }
}
