//! The asset directory as serve read it at start, and the guard that stops
//! serve from handing out a mix of old and new configs (issue #26 item 2).
//!
//! serve holds the machine-config server's pools in memory (rendered from
//! the state file at start) while HTTP reads `*.ign` from disk per request,
//! and DNS, the load balancer and the PXE scripts come from the inventory
//! read at start. A `create ignition-configs` re-run (a new MachineConfig in
//! `openshift/`, say) or an edited `agent-config.yaml` under a running serve
//! would otherwise give nodes new Ignition next to old pools and old kernel
//! arguments. So serve fingerprints its inputs at start, looks at them again
//! every [`CHECK_EVERY`], and once one changed in content it answers every
//! Ignition, machine-config and PXE request with 503 and a message to restart
//! (Ignition retries a 5xx answer, so a node booting meanwhile gets its
//! config from the restarted serve); the change is logged once, naming the
//! files. OS images do not depend on the inputs and stay served.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use axum::extract::Request;
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};

/// How often the inputs are looked at again.
pub(crate) const CHECK_EVERY: Duration = Duration::from_secs(2);

/// The files of an asset directory that serve's answers are made from,
/// relative to it: the state file (the machine-config server's pools and
/// certificates), the three Ignition configs, and the inventory.
pub(crate) const WATCHED: [&str; 6] = [
    okd_assets::store::STATE_FILE,
    "bootstrap.ign",
    "master.ign",
    "worker.ign",
    okd_hosts::AGENT_CONFIG_FILE,
    okd_hosts::BASTION_CONFIG_FILE,
];

/// One file as last seen: cheap metadata, and the SHA-256 of its content
/// (`None`: the file did not exist).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Seen {
    meta: Option<(u64, i64, i64, u64)>,
    sha256: Option<[u8; 32]>,
}

fn look(path: &Path, before: Option<&Seen>) -> Seen {
    use std::os::unix::fs::MetadataExt as _;
    let meta = std::fs::metadata(path)
        .ok()
        .map(|m| (m.len(), m.mtime(), m.mtime_nsec(), m.ino()));
    if let Some(b) = before
        && b.meta == meta
    {
        return b.clone();
    }
    // As a stream: bootstrap.ign carries the node program (tens of MB).
    let sha256 = std::fs::File::open(path).ok().and_then(|mut f| {
        let mut h = Sha256::new();
        std::io::copy(&mut f, &mut h).ok()?;
        Some(h.finalize().into())
    });
    Seen { meta, sha256 }
}

/// The fingerprints of [`WATCHED`] in one directory.
#[derive(Debug, Clone)]
pub(crate) struct Inputs {
    dir: PathBuf,
    seen: BTreeMap<&'static str, Seen>,
}

impl Inputs {
    /// Reads every watched file of `dir` (a missing file counts as a state).
    pub(crate) fn read(dir: &Path) -> Inputs {
        let seen = WATCHED
            .iter()
            .map(|f| (*f, look(&dir.join(f), None)))
            .collect();
        Inputs {
            dir: dir.to_path_buf(),
            seen,
        }
    }

    /// Looks again (re-hashing only files whose size, time or inode moved)
    /// and returns the files whose content differs from `self`'s, in
    /// [`WATCHED`] order, each with what happened to it.
    pub(crate) fn changed(&self, now: &mut Inputs) -> Vec<String> {
        for f in WATCHED {
            let fresh = look(&self.dir.join(f), now.seen.get(f));
            now.seen.insert(f, fresh);
        }
        WATCHED
            .iter()
            .filter_map(|f| {
                let (a, b) = (self.seen.get(f)?, now.seen.get(f)?);
                match (a.sha256, b.sha256) {
                    (x, y) if x == y => None,
                    (Some(_), None) => Some(format!("{f} (removed)")),
                    (None, Some(_)) => Some(format!("{f} (created)")),
                    _ => Some(format!("{f} (rewritten with other content)")),
                }
            })
            .collect()
    }
}

/// Set once the inputs changed: what changed, for the 503 answers and the
/// log. Shared by the HTTP and machine-config routers' [`refuse_when_stale`].
#[derive(Debug, Default)]
pub(crate) struct Stale(OnceLock<String>);

impl Stale {
    /// The changed files, once the inputs changed.
    pub(crate) fn get(&self) -> Option<&str> {
        self.0.get().map(String::as_str)
    }
}

/// Whether a request path depends on serve's inputs: Ignition configs,
/// machine-config pools and PXE scripts (not OS images, health or status).
fn depends_on_inputs(path: &str) -> bool {
    ["/ignition/", "/config/", "/pxe/"]
        .iter()
        .any(|p| path.starts_with(p))
}

/// Router middleware: while [`Stale`] is set, requests that depend on the
/// inputs get `503 Service Unavailable` with `Retry-After: 10` and a text
/// body naming the changed files and the command to run; the rest pass.
pub(crate) async fn refuse_when_stale(
    axum::extract::State(stale): axum::extract::State<Arc<Stale>>,
    req: Request,
    next: Next,
) -> Response {
    if let Some(what) = stale.get()
        && depends_on_inputs(req.uri().path())
    {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            [("retry-after", "10")],
            format!(
                "the asset directory changed since okd-install serve started ({what}): restart okd-install serve to serve the new configs\n"
            ),
        )
            .into_response();
    }
    next.run(req).await
}

/// Looks at the inputs of `start`'s directory every [`CHECK_EVERY`] (on a
/// blocking thread: hashing reads files) until `stop` completes; the first
/// time any changed, sets `stale` and logs an error naming the files and
/// the restart. Nothing is logged while they stay as they were.
pub(crate) async fn watch(
    start: Inputs,
    stale: Arc<Stale>,
    stop: impl std::future::Future<Output = ()>,
) {
    let start = Arc::new(start);
    let work = async {
        let mut now = (*start).clone();
        let mut tick = tokio::time::interval(CHECK_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let s = start.clone();
            let Ok((changed, next)) = tokio::task::spawn_blocking(move || {
                let changed = s.changed(&mut now);
                (changed, now)
            })
            .await
            else {
                return;
            };
            now = next;
            if changed.is_empty() {
                continue;
            }
            let what = changed.join(", ");
            tracing::error!(
                "The asset directory {} changed under serve: {what}. Ignition configs, machine-config pools and PXE scripts are refused (503) until you restart `okd-install serve`, so no node gets a mix of old and new configs",
                start.dir.display()
            );
            let _ = stale.0.set(what);
            return;
        }
    };
    tokio::select! {
        () = work => {}
        () = stop => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_content_rewritten_is_no_change_other_content_is() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("master.ign"), b"{\"a\":1}").unwrap();
        std::fs::write(d.path().join("worker.ign"), b"{\"w\":1}").unwrap();
        let start = Inputs::read(d.path());
        let mut now = start.clone();
        assert!(start.changed(&mut now).is_empty());

        // Rewritten with the same bytes (a new inode and time): unchanged.
        std::fs::remove_file(d.path().join("master.ign")).unwrap();
        std::fs::write(d.path().join("master.ign"), b"{\"a\":1}").unwrap();
        assert!(start.changed(&mut now).is_empty());

        std::fs::write(d.path().join("master.ign"), b"{\"a\":2}").unwrap();
        std::fs::remove_file(d.path().join("worker.ign")).unwrap();
        std::fs::write(d.path().join("bootstrap.ign"), b"{}").unwrap();
        assert_eq!(
            start.changed(&mut now),
            [
                "bootstrap.ign (created)",
                "master.ign (rewritten with other content)",
                "worker.ign (removed)"
            ]
        );
    }

    #[test]
    fn only_input_dependent_paths_are_refused() {
        for p in ["/ignition/worker.ign", "/config/worker", "/pxe/ipxe"] {
            assert!(depends_on_inputs(p), "{p}");
        }
        for p in ["/images/kernel", "/install/coreos.raw.xz", "/healthz", "/"] {
            assert!(!depends_on_inputs(p), "{p}");
        }
    }
}
