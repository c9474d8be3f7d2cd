//! The checks of files: the inventory, the install disks, the OS images
//! and bootstrap.ign's 24-hour certificates.

use std::io::Read as _;
use std::path::Path;
use std::time::Duration;

use okd_hosts::{AGENT_CONFIG_FILE, BASTION_CONFIG_FILE, Inventory, OsImages, Role};
use sha2::Digest as _;
use time::OffsetDateTime;

use crate::Check;

/// What the other checks read: the resolved hosts and the cluster's name.
pub(crate) struct Inputs {
    /// `agent-config.yaml` + `bastion-config.yaml`, resolved.
    pub(crate) inv: Inventory,
    /// install-config (the recorded copy, or the file up-converted).
    pub(crate) config: okd_installconfig::InstallConfig,
    /// The release image the assets were made for, once recorded.
    pub(crate) release: Option<String>,
}

/// `e` and its sources joined by `": "`.
pub(crate) fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut src = e.source();
    while let Some(s) = src {
        let t = s.to_string();
        if !out.contains(&t) {
            out.push_str(": ");
            out.push_str(&t);
        }
        src = s.source();
    }
    out
}

/// `1 master`, `3 masters`.
fn count(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// The `inventory` failure when the cluster cannot be named: a directory
/// that does not exist, or one without install-config.yaml or the state
/// file (`why`, whose own advice becomes the fix).
fn no_install(dir: &Path, why: &str) -> Check {
    if !dir.exists() {
        return Check::fail(
            "inventory",
            format!("the asset directory {} does not exist", dir.display()),
            "give --dir the directory that holds install-config.yaml (or the one `okd-install create` wrote)",
        );
    }
    let (cause, advice) = match why.split_once(": run `") {
        Some((cause, rest)) => (cause.to_string(), format!("run `{rest}")),
        None => (why.to_string(), String::new()),
    };
    let fix = if advice.is_empty() {
        format!(
            "put install-config.yaml, agent-config.yaml and bastion-config.yaml in {}, or give --dir the directory that has them",
            dir.display()
        )
    } else {
        format!("{advice}, or give --dir the directory that has install-config.yaml")
    };
    Check::fail(
        "inventory",
        format!("cannot name the cluster: {cause}"),
        fix,
    )
}

/// The `inventory` check: the cluster's name from the state file or
/// install-config.yaml, then the hosts with every rule of okd-hosts.
pub(crate) fn load(dir: &Path, checks: &mut Vec<Check>) -> Option<Inputs> {
    let facts = okd_assets::InstallFacts::read(dir);
    let release = facts
        .as_ref()
        .ok()
        .and_then(|f| f.release().ok().flatten())
        .map(|r| r.pull_spec);
    let config = match facts.and_then(|f| f.require_install_config()) {
        Ok(c) => c,
        Err(e) => {
            checks.push(no_install(dir, &chain(&e)));
            return None;
        }
    };
    match Inventory::load(dir, &config.metadata.name, &config.base_domain) {
        Ok(inv) => {
            checks.push(Check::pass(
                "inventory",
                format!(
                    "{} and {} load: {} hosts of {} ({}, {}{})",
                    AGENT_CONFIG_FILE,
                    BASTION_CONFIG_FILE,
                    inv.nodes.len(),
                    inv.cluster_domain,
                    count(inv.role(Role::Master).count(), "master"),
                    count(inv.role(Role::Worker).count(), "worker"),
                    if inv.role(Role::Bootstrap).count() > 0 {
                        ", a bootstrap"
                    } else {
                        ", no bootstrap"
                    }
                ),
            ));
            Some(Inputs {
                inv,
                config,
                release,
            })
        }
        Err(e) => {
            checks.push(Check::fail(
                "inventory",
                chain(&e),
                "correct the file and field named; every command that reads the hosts refuses them as they are",
            ));
            None
        }
    }
}

/// The `disk.<host>` checks. The rules (a whole disk's `/dev/` path, no
/// hint the PXE/ISO flow cannot honour) are okd-hosts' and refuse the
/// inventory when broken; here each host's disk is named, and a host
/// without `deviceName` is warned about: it installs to `/dev/sda`, which
/// NVMe and virtio machines do not have.
pub(crate) fn disks(dir: &Path, inputs: &Inputs) -> Vec<Check> {
    let agent = std::fs::read(dir.join(AGENT_CONFIG_FILE))
        .ok()
        .and_then(|b| okd_hosts::parse_agent_config(&b).ok());
    let bastion = std::fs::read(dir.join(BASTION_CONFIG_FILE))
        .ok()
        .and_then(|b| okd_hosts::parse_bastion_config(&b).ok());
    // Agent hosts are the inventory's nodes after the bootstrap, in file order.
    let mut next_host = 0;
    let mut out = Vec::new();
    for n in &inputs.inv.nodes {
        let id = format!("disk.{}", n.hostname);
        let (given, field) = if n.role == Role::Bootstrap {
            (
                bastion
                    .as_ref()
                    .and_then(|b| b.bootstrap.as_ref())
                    .is_some_and(|b| b.installation_disk.is_some()),
                format!("{BASTION_CONFIG_FILE} bootstrap.installationDisk"),
            )
        } else {
            let i = next_host;
            next_host += 1;
            (
                agent
                    .as_ref()
                    .and_then(|a| a.hosts.get(i))
                    .and_then(|h| h.root_device_hints.as_ref())
                    .is_some_and(|r| r.device_name.is_some()),
                format!("{AGENT_CONFIG_FILE} hosts[{i}].rootDeviceHints.deviceName"),
            )
        };
        out.push(if given {
            Check::pass(
                id,
                format!("installs to {} ({field})", n.install_disk),
            )
        } else {
            Check::warn(
                id,
                format!(
                    "no {field}: coreos-installer writes {}, the default; NVMe and virtio machines have /dev/nvme0n1 or /dev/vda instead, and the install then stops on the node's console",
                    n.install_disk
                ),
                format!("set {field} to the disk's path (a stable /dev/disk/by-id/… name is safest)"),
            )
        });
    }
    out
}

/// The `images.<file>` checks: each OS image the PXE scripts and kernel
/// arguments name, present under `<dir>/<osImages.directory>/`, not empty,
/// and equal to the SHA-256 in `<file>.sha256` (`sha256sum` output or the
/// bare digest) when that file exists.
pub(crate) fn images(dir: &Path, images: &OsImages) -> Vec<Check> {
    let root = dir.join(&images.directory);
    let mut out = Vec::new();
    for (field, name, what) in [
        ("osImages.kernel", &images.kernel, "the PXE scripts' kernel"),
        (
            "osImages.initramfs",
            &images.initramfs,
            "the PXE scripts' initrd",
        ),
        ("osImages.rootfs", &images.rootfs, "coreos.live.rootfs_url"),
        ("osImages.metal", &images.metal, "coreos.inst.image_url"),
    ] {
        let id = format!("images.{name}");
        let path = root.join(name);
        let shown = format!("{}/{name}", images.directory);
        let fix = format!(
            "put the CoreOS {} of the release there (e.g. `coreos-installer download -f {}`), renamed to {name}, or set {BASTION_CONFIG_FILE} {field}",
            what_kind(field),
            if field == "osImages.metal" {
                "raw.xz"
            } else {
                "pxe"
            }
        );
        let meta = match std::fs::metadata(&path) {
            Ok(m) if m.is_file() => m,
            Ok(_) => {
                out.push(Check::fail(
                    id,
                    format!("{shown} ({what}) is not a file"),
                    fix,
                ));
                continue;
            }
            Err(_) => {
                out.push(Check::fail(
                    id,
                    format!("{shown} ({what}) is missing: nodes that boot get HTTP 404"),
                    fix,
                ));
                continue;
            }
        };
        if meta.len() == 0 {
            out.push(Check::fail(id, format!("{shown} ({what}) is empty"), fix));
            continue;
        }
        let size = human(meta.len());
        let sum_file = root.join(format!("{name}.sha256"));
        let Ok(text) = std::fs::read_to_string(&sum_file) else {
            out.push(Check::pass(
                id,
                format!("{shown} ({what}), {size}; no {name}.sha256 to verify it against"),
            ));
            continue;
        };
        let want = text
            .split_whitespace()
            .next()
            .unwrap_or("")
            .to_ascii_lowercase();
        match sha256_file(&path) {
            Ok(got) if got == want => out.push(Check::pass(
                id,
                format!("{shown} ({what}), {size}, SHA-256 {} as in {name}.sha256", &got[..16]),
            )),
            Ok(got) => out.push(Check::fail(
                id,
                format!(
                    "{shown} has SHA-256 {got}, {name}.sha256 says {want}: a partial download or another release"
                ),
                format!("download {name} again and compare with the release's checksum"),
            )),
            Err(e) => out.push(Check::fail(
                id,
                format!("cannot read {shown}: {e}"),
                "make the file readable by the user running okd-install",
            )),
        }
    }
    out
}

fn what_kind(field: &str) -> &'static str {
    match field {
        "osImages.kernel" => "live kernel",
        "osImages.initramfs" => "live initramfs",
        "osImages.rootfs" => "live rootfs",
        _ => "metal image",
    }
}

/// `1.2 GiB`, `87.0 MiB`, `12 KiB`, `512 B`.
fn human(n: u64) -> String {
    const K: f64 = 1024.0;
    let f = n as f64;
    if f >= K * K * K {
        format!("{:.1} GiB", f / (K * K * K))
    } else if f >= K * K {
        format!("{:.1} MiB", f / (K * K))
    } else if n >= 1024 {
        format!("{} KiB", n / 1024)
    } else {
        format!("{n} B")
    }
}

/// The SHA-256 of `path` (lowercase hex), remembered per path, size and
/// modification time: serve runs the checks again every minute, and the
/// OS images are gigabytes.
fn sha256_file(path: &Path) -> std::io::Result<String> {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    type Key = (std::path::PathBuf, u64, std::time::SystemTime);
    static SUMS: OnceLock<Mutex<HashMap<Key, String>>> = OnceLock::new();
    let meta = std::fs::metadata(path)?;
    let key: Key = (path.to_path_buf(), meta.len(), meta.modified()?);
    let sums = SUMS.get_or_init(Mutex::default);
    if let Some(sum) = sums.lock().ok().and_then(|m| m.get(&key).cloned()) {
        return Ok(sum);
    }
    let sum = sha256_uncached(path)?;
    if let Ok(mut m) = sums.lock() {
        m.insert(key, sum.clone());
    }
    Ok(sum)
}

/// The SHA-256 of `path`, read in 1 MiB pieces.
fn sha256_uncached(path: &Path) -> std::io::Result<String> {
    let mut f = std::fs::File::open(path)?;
    let mut h = sha2::Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

/// The `certificates` check: the first of bootstrap.ign's short-lived
/// (24-hour) certificates to expire must be valid `now` (a notBefore in
/// the future is the bastion's clock, or the configs were made on a
/// machine whose clock is ahead) and still be valid `boot_within` from now.
pub(crate) fn certificates(dir: &Path, boot_within: Duration, now: OffsetDateTime) -> Check {
    let id = "certificates";
    let path = dir.join("bootstrap.ign");
    // As a stream, the node program it carries dropped unread.
    let cfg = match okd_assets::ignition::read_small_parts(&path) {
        Ok(cfg) => cfg,
        Err(okd_types::large_strings::ReadJsonError::Open(_)) => {
            return Check::skip(
                id,
                "no bootstrap.ign yet: `okd-install create ignition-configs` makes it and its 24-hour certificates",
            );
        }
        Err(okd_types::large_strings::ReadJsonError::Json(_)) => {
            return Check::fail(
                id,
                "bootstrap.ign is not JSON",
                "create the Ignition configs again: okd-install create ignition-configs",
            );
        }
    };
    let certs: Vec<_> = okd_assets::ignition::bootstrap_cert_validity(&cfg)
        .into_iter()
        .filter(|(_, nb, na)| (*na - *nb).whole_hours() <= 25)
        .collect();
    let Some((file, _, not_after)) = certs.iter().min_by_key(|(_, _, na)| *na).cloned() else {
        return Check::skip(id, "bootstrap.ign carries no 24-hour certificate");
    };
    let again = "create the Ignition configs again (`okd-install create ignition-configs` from install-config.yaml) and boot every node within 24 hours of it";
    if let Some((f, nb, _)) = certs
        .iter()
        .filter(|(_, nb, _)| *nb > now)
        .max_by_key(|(_, nb, _)| *nb)
    {
        return Check::fail(
            id,
            format!(
                "tls/{f} is not valid before {} but this machine's clock says {}: nodes with the same clock refuse it (x509: certificate has expired or is not yet valid)",
                rfc3339(*nb),
                rfc3339(now)
            ),
            "set the clocks right (NTP on the bastion and the nodes), then create the Ignition configs again",
        );
    }
    let left = not_after - now;
    let within = time::Duration::try_from(boot_within).unwrap_or(time::Duration::ZERO);
    if left <= time::Duration::ZERO {
        return Check::fail(
            id,
            format!(
                "tls/{file} expired at {} (24-hour certificates)",
                rfc3339(not_after)
            ),
            again,
        );
    }
    let left_text = format!("{} h {} min", left.whole_hours(), left.whole_minutes() % 60);
    if left < within {
        return Check::warn(
            id,
            format!(
                "tls/{file} expires at {} ({left_text} from now), before the last node is expected to boot ({} h from now, --boot-within)",
                rfc3339(not_after),
                within.whole_minutes() as f64 / 60.0
            ),
            again,
        );
    }
    Check::pass(
        id,
        format!(
            "the 24-hour certificates are valid until {} ({left_text} from now; tls/{file} first)",
            rfc3339(not_after)
        ),
    )
}

fn rfc3339(t: OffsetDateTime) -> String {
    t.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_are_found_sized_and_verified() {
        let d = tempfile::tempdir().unwrap();
        let imgs = OsImages::default();
        let root = d.path().join(&imgs.directory);
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(root.join("kernel"), b"kernel bytes").unwrap();
        std::fs::write(root.join("initramfs.img"), b"").unwrap();
        std::fs::write(root.join("rootfs.img"), b"rootfs").unwrap();
        // sha256("rootfs")
        let sum = sha256_file(&root.join("rootfs.img")).unwrap();
        std::fs::write(
            root.join("rootfs.img.sha256"),
            format!("{sum}  rootfs.img\n"),
        )
        .unwrap();
        std::fs::write(root.join("kernel.sha256"), "00".repeat(32)).unwrap();
        let c = images(d.path(), &imgs);
        let by = |id: &str| c.iter().find(|c| c.id == id).unwrap().clone();
        assert_eq!(by("images.kernel").result, crate::Outcome::Fail);
        assert!(by("images.kernel").cause.contains("a partial download"));
        assert_eq!(by("images.initramfs.img").result, crate::Outcome::Fail);
        assert!(by("images.initramfs.img").cause.contains("is empty"));
        assert_eq!(by("images.rootfs.img").result, crate::Outcome::Pass);
        assert!(
            by("images.rootfs.img")
                .cause
                .contains("as in rootfs.img.sha256")
        );
        let metal = by("images.coreos.raw.xz");
        assert_eq!(metal.result, crate::Outcome::Fail);
        assert!(
            metal
                .cause
                .contains("is missing: nodes that boot get HTTP 404"),
            "{metal:?}"
        );
        assert!(
            metal
                .fix
                .unwrap()
                .contains("coreos-installer download -f raw.xz")
        );
    }

    #[test]
    fn human_sizes() {
        assert_eq!(human(512), "512 B");
        assert_eq!(human(12 * 1024), "12 KiB");
        assert_eq!(human(87 * 1024 * 1024), "87.0 MiB");
    }

    #[test]
    fn a_directory_that_is_missing_or_empty_is_named_once() {
        let gone = Path::new("/nonexistent/okd-preflight-test");
        let c = no_install(gone, "whatever the loader said");
        assert_eq!(
            c.cause,
            "the asset directory /nonexistent/okd-preflight-test does not exist"
        );
        let empty = tempfile::tempdir().unwrap();
        let mut checks = Vec::new();
        assert!(load(empty.path(), &mut checks).is_none());
        let c = &checks[0];
        assert_eq!(c.id, "inventory");
        assert!(c.cause.starts_with("cannot name the cluster: "), "{c:?}");
        assert!(!c.cause.contains("run `okd-install"), "{c:?}");
        let fix = c.fix.as_deref().unwrap();
        assert!(fix.starts_with("run `okd-install create"), "{fix}");
        assert!(
            fix.ends_with("or give --dir the directory that has install-config.yaml"),
            "{fix}"
        );
    }
}
