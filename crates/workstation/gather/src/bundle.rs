//! The log bundle as openshift-install writes it: `<dir>/log-bundle-<id>.tar.gz`,
//! every entry under `log-bundle-<id>/` (openshift/installer
//! `pkg/gather/gather.go` `CombineArchives`, which re-packs the bundle that
//! `installer-gather.sh` made on the bootstrap host; there are no serial
//! console or Cluster API archives on platform none).
//!
//! The re-pack takes only directories and regular files with relative,
//! `..`-free paths, and drops from `rendered-assets/` whatever the bootstrap
//! host should have dropped already (names with `secret` or `kubeconfig`,
//! `*.key`, `.kube`), so a bundle passed on for support carries no
//! credentials even from an older bootstrap script.

use std::io::{Read, Write};
use std::path::{Component, Path, PathBuf};

use crate::error::GatherError;

/// Mode of the bundles written (they hold logs).
pub const BUNDLE_MODE: u32 = 0o600;

/// Whether a bundle path (relative to the bundle's top directory) is a
/// credential that must not be in a bundle: under `rendered-assets/` or
/// `bootstrap/static-pods/`, a component whose name contains `secret` or
/// `kubeconfig` (any case), ends in `.key`, or is `.kube`.
pub fn is_secret_path(rel: &Path) -> bool {
    let mut comps = rel.components().filter_map(|c| match c {
        Component::Normal(s) => s.to_str(),
        _ => None,
    });
    let first = comps.next();
    let scoped = match first {
        Some("rendered-assets") => true,
        Some("bootstrap") => comps.clone().next() == Some("static-pods"),
        _ => false,
    };
    scoped
        && rel.components().any(|c| {
            let Component::Normal(s) = c else {
                return false;
            };
            let s = s.to_string_lossy().to_ascii_lowercase();
            s.contains("secret") || s.contains("kubeconfig") || s.ends_with(".key") || s == ".kube"
        })
}

/// `p` without its first component, when every component is a normal name.
fn below_top(p: &Path) -> Option<PathBuf> {
    let mut comps = p.components();
    match comps.next()? {
        Component::Normal(_) => {}
        Component::CurDir => {}
        _ => return None,
    }
    let mut out = PathBuf::new();
    for c in comps {
        match c {
            Component::Normal(s) => out.push(s),
            Component::CurDir => {}
            _ => return None,
        }
    }
    Some(out)
}

/// What [`repack`] did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Repacked {
    /// Regular files written.
    pub files: usize,
    /// Entries left out: links, devices, unsafe paths, credentials.
    pub skipped: Vec<String>,
}

/// Re-packs the gzip tarball `from` into `to` (atomically, mode
/// [`BUNDLE_MODE`]) with every entry under `<top>/`, the rules of the module
/// applied.
///
/// # Errors
/// [`GatherError::Bundle`] when `from` is not a readable gzip tarball or
/// `to` cannot be written.
pub fn repack(from: &Path, to: &Path, top: &str) -> Result<Repacked, GatherError> {
    let bundle_err = |action: &'static str, path: &Path| {
        let path = path.to_path_buf();
        move |source: std::io::Error| GatherError::Bundle {
            action,
            path,
            source,
        }
    };
    let input = std::fs::File::open(from).map_err(bundle_err("opening", from))?;
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(input));
    let mut done = Repacked::default();
    okd_fs::write_atomic_with(to, BUNDLE_MODE, |file| {
        let gz = flate2::write::GzEncoder::new(file, flate2::Compression::default());
        let mut out = tar::Builder::new(gz);
        let mut dir_header = tar::Header::new_gnu();
        dir_header.set_entry_type(tar::EntryType::Directory);
        dir_header.set_mode(0o700);
        dir_header.set_size(0);
        dir_header.set_mtime(now_secs());
        out.append_data(&mut dir_header, format!("{top}/"), std::io::empty())
            .map_err(bundle_err("writing", to))?;
        for entry in archive.entries().map_err(bundle_err("reading", from))? {
            let mut entry = entry.map_err(bundle_err("reading", from))?;
            let path = entry
                .path()
                .map_err(bundle_err("reading", from))?
                .into_owned();
            let kind = entry.header().entry_type();
            let Some(rel) = below_top(&path) else {
                done.skipped.push(path.display().to_string());
                continue;
            };
            if rel.as_os_str().is_empty() {
                continue;
            }
            if is_secret_path(&rel) {
                done.skipped.push(path.display().to_string());
                continue;
            }
            let mut h = tar::Header::new_gnu();
            h.set_mtime(entry.header().mtime().unwrap_or_else(|_| now_secs()));
            let mode = entry.header().mode().unwrap_or(0o644) & 0o777;
            let name = Path::new(top).join(&rel);
            if kind.is_dir() {
                h.set_entry_type(tar::EntryType::Directory);
                h.set_mode(mode | 0o700);
                h.set_size(0);
                out.append_data(&mut h, &name, std::io::empty())
                    .map_err(bundle_err("writing", to))?;
            } else if kind.is_file() {
                h.set_entry_type(tar::EntryType::Regular);
                h.set_mode(mode | 0o600);
                h.set_size(entry.size());
                out.append_data(&mut h, &name, &mut entry)
                    .map_err(bundle_err("writing", to))?;
                done.files += 1;
            } else {
                done.skipped.push(path.display().to_string());
            }
        }
        let gz = out.into_inner().map_err(bundle_err("writing", to))?;
        let file = gz.finish().map_err(bundle_err("writing", to))?;
        file.flush().map_err(bundle_err("writing", to))?;
        Ok::<(), GatherError>(())
    })?;
    Ok(done)
}

fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Largest service-record file read for the analysis.
pub const MAX_RECORD_FILE: u64 = 16 * 1024 * 1024;

/// The service-record files of a bundle: (service name, contents) for every
/// regular file `…/bootstrap/services/<name>.json` (`<name>` without a dot;
/// openshift/installer `pkg/gather/service/analyze.go`), in bundle order,
/// each read up to [`MAX_RECORD_FILE`] bytes.
///
/// # Errors
/// [`GatherError::Bundle`] when the bundle is not a readable gzip tarball.
pub fn service_records(bundle: &Path) -> Result<Vec<(String, Vec<u8>)>, GatherError> {
    Ok(analysis_files(bundle)?.0)
}

/// Units whose journal the analysis reads (`…/bootstrap/journals/<unit>.log`,
/// and for the kubelet also `…/control-plane/<host>/journals/kubelet.log`
/// of installer-masters-gather.sh): the release pull's, for the TLS reason
/// a failed pull gives there; the kubelet's, for a name its host cannot
/// resolve.
pub const ANALYSED_JOURNALS: [&str; 2] = ["release-image", "kubelet"];

/// The service records ([`service_records`]) and the journals of
/// [`ANALYSED_JOURNALS`] (key, the last [`MAX_RECORD_FILE`] bytes as
/// text) of a bundle, in one pass. The key is `<unit>` for the bootstrap
/// host's journal and `<host>/kubelet` for a control-plane host's.
///
/// # Errors
/// [`GatherError::Bundle`] when the bundle is not a readable gzip tarball.
#[allow(clippy::type_complexity)]
pub fn analysis_files(
    bundle: &Path,
) -> Result<(Vec<(String, Vec<u8>)>, Vec<(String, String)>), GatherError> {
    let err = |action: &'static str| {
        let path = bundle.to_path_buf();
        move |source: std::io::Error| GatherError::Bundle {
            action,
            path,
            source,
        }
    };
    let f = std::fs::File::open(bundle).map_err(err("opening"))?;
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(f));
    let mut out = Vec::new();
    let mut journals = Vec::new();
    for entry in archive.entries().map_err(err("reading"))? {
        let entry = entry.map_err(err("reading"))?;
        if !entry.header().entry_type().is_file() {
            continue;
        }
        let path = entry.path().map_err(err("reading"))?.into_owned();
        if let Some(unit) = journal_unit(&path) {
            let mut data = Vec::new();
            // The end of the journal holds the failure: keep the last part.
            let mut tail: std::collections::VecDeque<u8> = std::collections::VecDeque::new();
            let mut buf = [0u8; 64 * 1024];
            let mut entry = entry;
            loop {
                let n = entry.read(&mut buf).map_err(err("reading"))?;
                if n == 0 {
                    break;
                }
                tail.extend(&buf[..n]);
                while tail.len() as u64 > MAX_RECORD_FILE {
                    tail.pop_front();
                }
            }
            data.extend(tail);
            journals.push((unit, String::from_utf8_lossy(&data).into_owned()));
            continue;
        }
        let Some(name) = service_name(&path) else {
            continue;
        };
        let mut data = Vec::new();
        entry
            .take(MAX_RECORD_FILE)
            .read_to_end(&mut data)
            .map_err(err("reading"))?;
        out.push((name, data));
    }
    Ok((out, journals))
}

/// The key of a path ending in `bootstrap/journals/<unit>.log` (`<unit>`)
/// when the unit is one of [`ANALYSED_JOURNALS`], or in
/// `control-plane/<host>/journals/kubelet.log` (`<host>/kubelet`).
fn journal_unit(p: &Path) -> Option<String> {
    let unit = p.file_name()?.to_str()?.strip_suffix(".log")?;
    let parent = p.parent()?;
    if !ANALYSED_JOURNALS.contains(&unit) || parent.file_name()? != "journals" {
        return None;
    }
    let above = parent.parent()?;
    if above.file_name()? == "bootstrap" {
        return Some(unit.to_string());
    }
    let host = above.file_name()?.to_str()?;
    (unit == "kubelet" && above.parent()?.file_name()? == "control-plane" && !host.contains('/'))
        .then(|| format!("{host}/{unit}"))
}

/// `<name>` of a path ending in `bootstrap/services/<name>.json`.
fn service_name(p: &Path) -> Option<String> {
    let file = p.file_name()?.to_str()?;
    let name = file.strip_suffix(".json")?;
    if name.is_empty() || name.contains('.') {
        return None;
    }
    let parent = p.parent()?;
    if parent.file_name()? != "services" || parent.parent()?.file_name()? != "bootstrap" {
        return None;
    }
    Some(name.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_paths_are_only_judged_in_the_asset_trees() {
        for p in [
            "rendered-assets/openshift/tls/admin.key",
            "rendered-assets/openshift/auth/kubeconfig-loopback",
            "rendered-assets/openshift/manifests/openshift-config-secret-pull-secret.yaml",
            "rendered-assets/openshift/.kube/cache/x",
            "bootstrap/static-pods/Secret.yaml",
        ] {
            assert!(is_secret_path(Path::new(p)), "{p}");
        }
        for p in [
            "rendered-assets/openshift/tls/admin.crt",
            "resources/secrets-names.txt",
            "bootstrap/journals/kubelet.log",
            "bootstrap/static-pods/etcd-pod.yaml",
        ] {
            assert!(!is_secret_path(Path::new(p)), "{p}");
        }
    }

    #[test]
    fn analysed_journals_are_keyed_by_host() {
        let k = |p: &str| journal_unit(Path::new(p));
        assert_eq!(
            k("log-bundle-1/bootstrap/journals/release-image.log").as_deref(),
            Some("release-image")
        );
        assert_eq!(
            k("log-bundle-1/bootstrap/journals/kubelet.log").as_deref(),
            Some("kubelet")
        );
        assert_eq!(
            k("log-bundle-1/control-plane/192.168.120.103/journals/kubelet.log").as_deref(),
            Some("192.168.120.103/kubelet")
        );
        assert_eq!(
            k("log-bundle-1/control-plane/192.168.120.103/journals/crio.log"),
            None
        );
        assert_eq!(k("log-bundle-1/bootstrap/journals/bootkube.log"), None);
        assert_eq!(k("log-bundle-1/elsewhere/h/journals/kubelet.log"), None);
    }

    #[test]
    fn service_names_follow_the_upstream_pattern() {
        let n = |p: &str| service_name(Path::new(p));
        assert_eq!(
            n("log-bundle-1/bootstrap/services/bootkube.json").as_deref(),
            Some("bootkube")
        );
        assert_eq!(
            n("log-bundle-1/log-bundle-bootstrap/bootstrap/services/release-image.json").as_deref(),
            Some("release-image")
        );
        assert_eq!(n("log-bundle-1/bootstrap/services/a.b.json"), None);
        assert_eq!(n("log-bundle-1/services/bootkube.json"), None);
    }

    fn tarball(entries: &[(&str, &[u8], tar::EntryType)]) -> tempfile::NamedTempFile {
        let f = tempfile::NamedTempFile::new().unwrap();
        let gz = flate2::write::GzEncoder::new(f.reopen().unwrap(), flate2::Compression::fast());
        let mut b = tar::Builder::new(gz);
        for (name, data, kind) in entries {
            let mut h = tar::Header::new_gnu();
            h.set_entry_type(*kind);
            h.set_size(data.len() as u64);
            h.set_mode(0o644);
            if *kind == tar::EntryType::Symlink {
                h.set_link_name("/etc/shadow").unwrap();
                h.set_size(0);
            }
            // Raw names: `append_data` would refuse the `..` we test with.
            let raw = &mut h.as_old_mut().name;
            raw[..name.len()].copy_from_slice(name.as_bytes());
            h.set_cksum();
            b.append(&h, *data).unwrap();
        }
        b.into_inner().unwrap().finish().unwrap();
        f
    }

    #[test]
    fn repack_moves_everything_under_the_top_and_drops_what_is_unsafe() {
        let src = tarball(&[
            ("log-bundle-7/", b"", tar::EntryType::Directory),
            ("log-bundle-7/gather.log", b"hello", tar::EntryType::Regular),
            (
                "log-bundle-7/rendered-assets/openshift/tls/admin.key",
                b"KEY",
                tar::EntryType::Regular,
            ),
            (
                "log-bundle-7/rendered-assets/openshift/tls/admin.crt",
                b"CRT",
                tar::EntryType::Regular,
            ),
            ("log-bundle-7/../../escape", b"x", tar::EntryType::Regular),
            ("log-bundle-7/link", b"", tar::EntryType::Symlink),
        ]);
        let d = tempfile::tempdir().unwrap();
        let to = d.path().join("log-bundle-7.tar.gz");
        let r = repack(src.path(), &to, "log-bundle-7").unwrap();
        assert_eq!(r.files, 2, "{r:?}");
        assert_eq!(r.skipped.len(), 3, "{r:?}");
        use std::os::unix::fs::PermissionsExt as _;
        assert_eq!(
            std::fs::metadata(&to).unwrap().permissions().mode() & 0o777,
            0o600
        );
        let mut names = Vec::new();
        let mut a = tar::Archive::new(flate2::read::GzDecoder::new(
            std::fs::File::open(&to).unwrap(),
        ));
        for e in a.entries().unwrap() {
            names.push(e.unwrap().path().unwrap().display().to_string());
        }
        assert_eq!(
            names,
            [
                "log-bundle-7/",
                "log-bundle-7/gather.log",
                "log-bundle-7/rendered-assets/openshift/tls/admin.crt"
            ]
        );
    }

    #[test]
    fn a_broken_bundle_leaves_no_output() {
        let d = tempfile::tempdir().unwrap();
        let from = d.path().join("cluster.tar.gz");
        std::fs::write(&from, b"not gzip").unwrap();
        let to = d.path().join("log-bundle-1.tar.gz");
        let e = repack(&from, &to, "log-bundle-1").unwrap_err();
        assert!(e.to_string().contains("cluster.tar.gz"), "{e}");
        assert!(!to.exists());
    }
}
