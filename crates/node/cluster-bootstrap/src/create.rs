//! Creating every manifest until each exists, after openshift/library-go
//! `pkg/assets/create/creater.go` (`EnsureManifestsCreated`, which
//! openshift/cluster-bootstrap `pkg/start/start.go` runs in the
//! background): passes over the objects not yet created, 200 ms apart;
//! for each, `GET` and, when absent, `POST`; an object that exists counts
//! as created (a restarted run resumes); an object whose manifest carries
//! `status` and whose stored object has none gets it written through the
//! `status` subresource (a 404 there, no such subresource, is accepted).
//!
//! Beyond library-go: CustomResourceDefinitions go first in every pass,
//! and an object of a kind that a CRD of the manifests defines is not
//! tried until that CRD is `Established`; discovery is fetched again when
//! an object's kind is not served (at most every
//! [`DISCOVERY_REFRESH`]); an object the API refuses as invalid (400, 422)
//! is retried with a backoff growing to [`MAX_BACKOFF_INVALID`], any other
//! failure to [`MAX_BACKOFF`], so a broken manifest does not load the API.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DynamicObject, PostParams};
use kube::discovery::{Discovery, Scope};
use tokio::time::Instant;
use tracing::{debug, info, warn};

use crate::manifests::Manifest;

/// The pause between passes (library-go's `interval`).
pub const PASS_INTERVAL: Duration = Duration::from_millis(200);
/// The shortest time between two discovery fetches.
pub const DISCOVERY_REFRESH: Duration = Duration::from_secs(1);
/// The longest wait before retrying an object the API refused as invalid.
pub const MAX_BACKOFF_INVALID: Duration = Duration::from_secs(30);
/// The longest wait before retrying after any other failure.
pub const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// Why a manifest is not created yet: its latest failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestFailure {
    /// The file relative to the manifests directory, with the document
    /// when the file holds several.
    pub file: String,
    /// `Kind namespace/name`.
    pub object: String,
    /// What failed: `discovery` (the kind is not served), `crd` (its
    /// CustomResourceDefinition is not Established yet), `get`, `create`,
    /// `status`, `namespace` (a namespaced kind without one), or `read`
    /// (the changed file no longer parses).
    pub step: &'static str,
    /// The API server's message, or what is missing. Never the object.
    pub message: String,
    /// Whether the API refused it as invalid (HTTP 400 or 422): retrying
    /// will not help until the manifest changes.
    pub invalid: bool,
}

impl std::fmt::Display for ManifestFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: {}: {} failed: {}",
            self.file, self.object, self.step, self.message
        )
    }
}

/// What the creator has done so far, shared with [`crate::start`].
#[derive(Debug, Default, Clone)]
pub struct Progress {
    /// Labels of the manifests created by this run, in order.
    pub created: Vec<String>,
    /// Labels of the manifests that already existed.
    pub existed: Vec<String>,
    /// Labels of the manifests whose `status` was written.
    pub status_written: Vec<String>,
    /// The latest failure of each manifest not created yet, by label.
    pub failures: BTreeMap<String, ManifestFailure>,
    /// How many manifests are not created yet.
    pub remaining: usize,
    /// Passes made.
    pub passes: u64,
}

struct Pending {
    m: Manifest,
    label: String,
    failures: u32,
    next_try: Instant,
    /// Created by this run (a later step of it, the status, failed).
    created_here: bool,
    /// The file's modification time when the API first refused the
    /// object as invalid: a later change reloads the file.
    refused_at_mtime: Option<std::time::SystemTime>,
}

struct Gate {
    crd: String,
    created: bool,
    established: bool,
}

enum Outcome {
    Done { existed: bool, status: bool },
    NotServed,
    Failed(ManifestFailure),
}

/// Creates every manifest of `manifests` through `client`, until all exist;
/// records what it did in `progress`. Runs until done (the caller bounds
/// it with its timeout). A manifest the API refuses as invalid is read
/// again from `dir` (the manifests directory) once its file changes, so a
/// fixed file is created without a restart.
pub(crate) async fn create_all(
    client: kube::Client,
    dir: std::path::PathBuf,
    manifests: Vec<Manifest>,
    progress: Arc<Mutex<Progress>>,
) {
    let now = Instant::now();
    let mut gates: BTreeMap<(String, String), Gate> = BTreeMap::new();
    for m in &manifests {
        if let Some(key) = m.crd_defines() {
            gates.insert(
                key,
                Gate {
                    crd: m.name().to_string(),
                    created: false,
                    established: false,
                },
            );
        }
    }
    // CRDs first, each group in the files' order (a stable sort).
    let mut pending: Vec<Pending> = manifests
        .into_iter()
        .map(|m| Pending {
            label: m.label(),
            m,
            failures: 0,
            next_try: now,
            created_here: false,
            refused_at_mtime: None,
        })
        .collect();
    pending.sort_by_key(|p| !p.m.is_crd());
    lock(&progress).remaining = pending.len();
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut discovery: Option<Discovery> = None;
    let mut refresh_due = true;
    let mut last_refresh: Option<Instant> = None;
    while !pending.is_empty() {
        lock(&progress).passes += 1;
        if refresh_due && last_refresh.is_none_or(|t| t.elapsed() >= DISCOVERY_REFRESH) {
            last_refresh = Some(Instant::now());
            match discover(&client).await {
                Ok(d) => {
                    discovery = Some(d);
                    refresh_due = false;
                }
                Err(e) => {
                    let msg = format!(
                        "discovery of the API's resources failed: {}",
                        okd_cluster::ApiCause::of(&e)
                    );
                    warn!("{msg} (retrying)");
                    // Without any discovery nothing is tried: each object
                    // is reported with this cause should time run out.
                    if discovery.is_none() {
                        let mut pr = lock(&progress);
                        for p in &pending {
                            let f = failure(p, "discovery", msg.clone(), false);
                            pr.failures.insert(p.label.clone(), f);
                        }
                    }
                }
            }
        }
        let Some(disc) = discovery.as_ref() else {
            tokio::time::sleep(PASS_INTERVAL).await;
            continue;
        };
        for gate in gates.values_mut() {
            if gate.created && !gate.established && established(&crds, &gate.crd).await {
                info!("CustomResourceDefinition {} is Established", gate.crd);
                gate.established = true;
                refresh_due = true;
            }
        }
        let mut i = 0;
        while i < pending.len() {
            let p = &mut pending[i];
            if let Some(seen) = p.refused_at_mtime {
                let now_mtime = mtime(&dir, &p.m.file);
                if now_mtime.is_some() && now_mtime != Some(seen) {
                    match crate::manifests::reload(&dir, &p.m.file, p.m.doc) {
                        Ok(m) => {
                            info!("{} changed: trying it again", p.label);
                            p.m = m;
                            p.failures = 0;
                            p.next_try = Instant::now();
                            p.refused_at_mtime = None;
                        }
                        Err(e) => {
                            p.refused_at_mtime = now_mtime;
                            let f = failure(p, "read", e.to_string(), true);
                            note(&progress, p, f);
                        }
                    }
                }
            }
            if p.next_try > Instant::now() {
                i += 1;
                continue;
            }
            let gate = gates
                .get(&(p.m.gvk.group.clone(), p.m.gvk.kind.clone()))
                .filter(|g| !g.established);
            let outcome = match gate {
                Some(g) => Outcome::Failed(failure(
                    p,
                    "crd",
                    format!(
                        "waiting for CustomResourceDefinition {} to be Established",
                        g.crd
                    ),
                    false,
                )),
                None => create_one(&client, disc, p).await,
            };
            match outcome {
                Outcome::Done { existed, status } => {
                    if let Some(key) = p.m.crd_defines()
                        && let Some(g) = gates.get_mut(&key)
                    {
                        g.created = true;
                    }
                    let mut pr = lock(&progress);
                    if existed && !p.created_here {
                        pr.existed.push(p.label.clone());
                    } else {
                        pr.created.push(p.label.clone());
                    }
                    if status {
                        pr.status_written.push(p.label.clone());
                    }
                    pr.failures.remove(&p.label);
                    pr.remaining -= 1;
                    drop(pr);
                    pending.remove(i);
                }
                Outcome::NotServed => {
                    refresh_due = true;
                    let f = failure(
                        p,
                        "discovery",
                        format!(
                            "the API server does not serve {} (yet)",
                            api_version_kind(&p.m)
                        ),
                        false,
                    );
                    note(&progress, p, f);
                    i += 1;
                }
                Outcome::Failed(f) => {
                    if f.invalid && p.refused_at_mtime.is_none() {
                        p.refused_at_mtime = mtime(&dir, &p.m.file);
                    }
                    note(&progress, p, f);
                    i += 1;
                }
            }
        }
        if !pending.is_empty() {
            tokio::time::sleep(PASS_INTERVAL).await;
        }
    }
    info!("all manifests are created");
}

fn mtime(dir: &std::path::Path, file: &str) -> Option<std::time::SystemTime> {
    std::fs::metadata(dir.join(file))
        .and_then(|m| m.modified())
        .ok()
}

fn lock(p: &Mutex<Progress>) -> std::sync::MutexGuard<'_, Progress> {
    p.lock().unwrap_or_else(|e| e.into_inner())
}

fn api_version_kind(m: &Manifest) -> String {
    if m.gvk.group.is_empty() {
        format!("{}, Kind={}", m.gvk.version, m.gvk.kind)
    } else {
        format!("{}/{}, Kind={}", m.gvk.group, m.gvk.version, m.gvk.kind)
    }
}

fn failure(p: &Pending, step: &'static str, message: String, invalid: bool) -> ManifestFailure {
    ManifestFailure {
        file: p.label.clone(),
        object: p.m.kind_name(),
        step,
        message,
        invalid,
    }
}

/// Records a failure, logs it when it differs from the last one, and sets
/// the manifest's next try.
fn note(progress: &Mutex<Progress>, p: &mut Pending, f: ManifestFailure) {
    let max = if f.invalid {
        MAX_BACKOFF_INVALID
    } else {
        MAX_BACKOFF
    };
    // The CRD gate and discovery are checked every pass, cheaply.
    let waiting = matches!(f.step, "crd" | "discovery");
    if !waiting {
        p.failures = p.failures.saturating_add(1);
        let backoff = PASS_INTERVAL
            .saturating_mul(1 << p.failures.min(8))
            .min(max);
        p.next_try = Instant::now() + backoff;
    }
    let mut pr = lock(progress);
    let changed = pr.failures.get(&p.label) != Some(&f);
    if changed {
        if f.invalid {
            warn!("{f} (the API refuses it as invalid; retrying with backoff)");
        } else {
            info!("{f} (retrying)");
        }
    } else {
        debug!("{f} (retrying)");
    }
    pr.failures.insert(p.label.clone(), f);
}

async fn discover(client: &kube::Client) -> Result<Discovery, kube::Error> {
    match Discovery::new(client.clone()).run_aggregated().await {
        Ok(d) => Ok(d),
        Err(e) => {
            debug!("aggregated discovery failed ({e}); trying per-group discovery");
            Discovery::new(client.clone()).run().await
        }
    }
}

async fn established(crds: &Api<CustomResourceDefinition>, name: &str) -> bool {
    match crds.get_opt(name).await {
        Ok(Some(crd)) => crd
            .status
            .and_then(|s| s.conditions)
            .unwrap_or_default()
            .iter()
            .any(|c| c.type_ == "Established" && c.status == "True"),
        Ok(None) => false,
        Err(e) => {
            debug!("reading CustomResourceDefinition {name}: {e}");
            false
        }
    }
}

/// The API's message for a failed request, and whether it refused the
/// object as invalid.
fn api_message(e: &kube::Error) -> (String, bool) {
    match e {
        kube::Error::Api(s) => {
            let invalid = matches!(s.code, 400 | 422);
            (
                format!("HTTP {} {}: {}", s.code, s.reason, s.message),
                invalid,
            )
        }
        other => (okd_cluster::ApiCause::of(other).to_string(), false),
    }
}

fn is_status(e: &kube::Error, code: u16) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == code)
}

async fn create_one(client: &kube::Client, disc: &Discovery, p: &mut Pending) -> Outcome {
    let Some((ar, caps)) = disc.resolve_gvk(&p.m.gvk) else {
        return Outcome::NotServed;
    };
    let api: Api<DynamicObject> = match caps.scope {
        Scope::Cluster => Api::all_with(client.clone(), &ar),
        Scope::Namespaced => match p.m.namespace() {
            Some(ns) => Api::namespaced_with(client.clone(), ns, &ar),
            None => {
                return Outcome::Failed(failure(
                    p,
                    "namespace",
                    format!(
                        "{} is namespaced but metadata.namespace is not set",
                        ar.kind
                    ),
                    true,
                ));
            }
        },
    };
    let name = p.m.name();
    let what = p.m.kind_name();
    let (stored, existed) = match api.get_opt(name).await {
        Ok(Some(o)) => {
            info!("Skipped {:?} {what} as it already exists", p.label);
            (o, true)
        }
        Ok(None) => match api.create(&PostParams::default(), &p.m.object).await {
            Ok(o) => {
                info!("Created {:?} {what}", p.label);
                p.created_here = true;
                (o, false)
            }
            Err(e) if is_status(&e, 409) => match api.get_opt(name).await {
                Ok(Some(o)) => {
                    info!("Skipped creating {:?} {what} as it already exists", p.label);
                    (o, true)
                }
                Ok(None) => {
                    return Outcome::Failed(failure(
                        p,
                        "get",
                        "created by someone else and deleted again".into(),
                        false,
                    ));
                }
                Err(e) => {
                    let (m, inv) = api_message(&e);
                    return Outcome::Failed(failure(p, "get", m, inv));
                }
            },
            Err(e) => {
                let (m, inv) = api_message(&e);
                return Outcome::Failed(failure(p, "create", m, inv));
            }
        },
        Err(e) => {
            let (m, inv) = api_message(&e);
            return Outcome::Failed(failure(p, "get", m, inv));
        }
    };
    let mut status = false;
    if let Some(want) = p.m.object.data.get("status")
        && stored.data.get("status").is_none()
    {
        let mut o = stored;
        o.data["status"] = want.clone();
        match api.replace_status(name, &PostParams::default(), &o).await {
            Ok(_) => {
                info!("Updated status for {:?} {what}", p.label);
                status = true;
            }
            // No status subresource: nothing to write (as library-go).
            Err(e) if is_status(&e, 404) => {
                debug!("{what} has no status subresource; its status is not written");
            }
            Err(e) => {
                let (m, inv) = api_message(&e);
                return Outcome::Failed(failure(p, "status", m, inv));
            }
        }
    }
    Outcome::Done { existed, status }
}
