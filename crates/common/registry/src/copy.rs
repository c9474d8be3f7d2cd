//! Copying images by digest between registries and OCI layouts.
//!
//! Order of work (what makes a killed run resumable and a bad blob harmless):
//! 1. every manifest of every image is fetched (indexes with all their
//!    children) and checked against its digest;
//! 2. the distinct blobs are copied, largest first, `concurrency` at a time:
//!    `HEAD` skips what the target has, a cross-repository mount is tried
//!    when the blob is known in another repository of the same registry,
//!    else the bytes stream from source to target through a SHA-256 check;
//! 3. only for images whose every blob arrived, manifests are pushed
//!    children first, then the tag. An image with a failed blob gets no
//!    manifest and no tag.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use bytes::Bytes;
use futures_util::StreamExt as _;
use futures_util::stream::BoxStream;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use tracing::{debug, info, warn};

use crate::client::{BlobOutcome, OciError, Registries};
use crate::layout::Layout;
use crate::locations::BlobLocations;
use crate::oci::{Descriptor, Digest, Manifest, Parsed, Repo};

/// Where images come from or go to.
#[derive(Clone)]
pub enum Endpoint {
    /// Registries over HTTP(S); the repository of each job says which.
    Registry(Arc<Registries>),
    /// One OCI image layout directory (job repositories are ignored).
    Layout(Arc<Layout>),
}

impl Endpoint {
    /// A manifest by digest or tag (checked against a digest reference).
    pub async fn manifest(&self, repo: &Repo, reference: &str) -> Result<Manifest, OciError> {
        match self {
            Endpoint::Registry(r) => r.get_manifest(repo, reference).await,
            Endpoint::Layout(l) => l.get_manifest(reference).await,
        }
    }

    /// A blob's bytes, unverified (consumers hash as they go).
    pub async fn blob(
        &self,
        repo: &Repo,
        digest: &Digest,
    ) -> Result<BoxStream<'static, Result<Bytes, OciError>>, OciError> {
        Ok(match self {
            Endpoint::Registry(r) => r.get_blob(repo, digest).await?.boxed(),
            Endpoint::Layout(l) => l.get_blob(digest).await?.boxed(),
        })
    }

    /// Whether `repo` (a registry) or the layout holds the blob.
    async fn has_blob(&self, repo: &Repo, digest: &Digest) -> Result<bool, OciError> {
        match self {
            Endpoint::Registry(r) => r.has_blob(repo, digest).await,
            Endpoint::Layout(l) => Ok(l.has(digest)),
        }
    }
}

/// One image to copy.
#[derive(Debug, Clone)]
pub struct Job {
    /// Name for messages (`release`, `cli`, ...).
    pub name: String,
    /// Source repository.
    pub src: Repo,
    /// Digest (or tag) in the source.
    pub reference: String,
    /// Target repository.
    pub dst: Repo,
    /// Tag to set in the target, if any (the manifest is always pushed by digest).
    pub tag: Option<String>,
    /// Extra `index.json` annotations when the target is a layout.
    pub annotations: Vec<(String, String)>,
}

/// Copy settings.
#[derive(Debug, Clone)]
pub struct CopyOptions {
    /// Blob transfers in flight at once (≥ 1).
    pub concurrency: usize,
    /// Show progress bars (on a terminal).
    pub progress: bool,
    /// The blob location cache ([`BlobLocations`]) to read and update, so
    /// blobs a registry holds in another repository are mounted.
    pub blob_locations: Option<std::path::PathBuf>,
}

/// The outcome of one image.
#[derive(Debug)]
pub struct JobResult {
    /// The job.
    pub job: Job,
    /// The manifest digest copied (top level).
    pub digest: Option<Digest>,
    /// Why it failed, if it did.
    pub error: Option<String>,
}

/// Counts for a whole copy.
#[derive(Debug, Default)]
pub struct CopyReport {
    /// Per image, in job order.
    pub images: Vec<JobResult>,
    /// Distinct blobs referred to.
    pub blobs: usize,
    /// Blobs uploaded (or written) and their bytes.
    pub uploaded: (usize, u64),
    /// Blobs the target already had.
    pub present: usize,
    /// Blobs mounted from another repository.
    pub mounted: usize,
    /// Manifests pushed.
    pub manifests: usize,
    /// Wall time, seconds.
    pub seconds: f64,
}

impl CopyReport {
    /// The failed images.
    pub fn failures(&self) -> impl Iterator<Item = &JobResult> {
        self.images.iter().filter(|r| r.error.is_some())
    }
}

/// A distinct blob: its size, the source repository to read it from, and
/// the target repositories that need it with the jobs that need it there.
struct BlobUse {
    size: u64,
    src: Repo,
    targets: Vec<(Repo, Vec<usize>)>,
}

struct Planned {
    /// Manifests in push order: children first, the top one last.
    manifests: Vec<Manifest>,
    blobs: Vec<Descriptor>,
}

/// Fetches a manifest and, for an index, its children (one level: OCI
/// indexes of indexes are followed too, depth-first).
async fn plan_job(src: &Endpoint, job: &Job) -> Result<Planned, OciError> {
    let top = src.manifest(&job.src, &job.reference).await?;
    let mut blobs = Vec::new();
    let mut stack = vec![(top, 0usize)];
    let mut ordered: Vec<Manifest> = Vec::new();
    while let Some((m, depth)) = stack.pop() {
        let what = format!("{} ({}@{})", job.name, job.src, m.digest);
        match m.parse().map_err(|e| OciError::Format {
            what: what.clone(),
            detail: e.0,
        })? {
            Parsed::Index(children) => {
                if depth > 4 {
                    return Err(OciError::Format {
                        what,
                        detail: "indexes nested too deep".into(),
                    });
                }
                for c in children {
                    let child = src.manifest(&job.src, c.digest.as_str()).await?;
                    if child.bytes.len() as u64 != c.size {
                        return Err(OciError::Size {
                            what: format!("manifest {}@{}", job.src, c.digest),
                            expected: c.size,
                            actual: child.bytes.len() as u64,
                        });
                    }
                    stack.push((child, depth + 1));
                }
            }
            Parsed::Image { config, layers } => {
                blobs.push(config);
                blobs.extend(layers);
            }
        }
        ordered.push(m);
    }
    // `ordered` has parents before children; push children first.
    ordered.reverse();
    Ok(Planned {
        manifests: ordered,
        blobs,
    })
}

fn bars(
    opts: &CopyOptions,
    total_bytes: u64,
    images: usize,
) -> (MultiProgress, ProgressBar, ProgressBar) {
    let mp = MultiProgress::with_draw_target(if opts.progress {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    });
    let bytes = mp.add(ProgressBar::new(total_bytes));
    bytes.set_style(
        ProgressStyle::with_template(
            "blobs  [{bar:40}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta} {msg}",
        )
        .expect("template")
        .progress_chars("=> "),
    );
    let imgs = mp.add(ProgressBar::new(images as u64));
    imgs.set_style(
        ProgressStyle::with_template("images [{bar:40}] {pos}/{len} {msg}")
            .expect("template")
            .progress_chars("=> "),
    );
    (mp, bytes, imgs)
}

/// Copies `jobs` from `src` to `dst`. Per-image failures are in the report
/// (the rest still completes); errors that stop everything (target
/// unreachable, login rejected) are returned as `Err`.
pub async fn copy(
    src: &Endpoint,
    dst: &Endpoint,
    jobs: Vec<Job>,
    opts: &CopyOptions,
) -> Result<CopyReport, OciError> {
    let start = Instant::now();
    let concurrency = opts.concurrency.max(1);
    let locations = match &opts.blob_locations {
        Some(p) => BlobLocations::load(p)?,
        None => BlobLocations::default(),
    };
    check_endpoints(src, dst, &jobs).await?;

    let (mut results, plans, blobs) = plan_all(src, &jobs, &locations, concurrency).await?;
    let mut order: Vec<(Digest, BlobUse)> = blobs.into_iter().collect();
    order.sort_by(|a, b| b.1.size.cmp(&a.1.size).then_with(|| a.0.cmp(&b.0)));
    let total: u64 = order.iter().fold(0u64, |t, (_, u)| {
        t.saturating_add(u.size.saturating_mul(u.targets.len() as u64))
    });
    let (mp, bytes_bar, images_bar) = bars(opts, total, jobs.len());
    info!(
        "Copying {} distinct blobs ({:.1} MiB) of {} images, {} at a time",
        order.len(),
        total as f64 / 1048576.0,
        jobs.len(),
        concurrency
    );
    let blob_phase = BlobPhase {
        src,
        dst,
        locations: &locations,
        bytes_bar: &bytes_bar,
        report: Mutex::new(CopyReport {
            blobs: order.len(),
            ..Default::default()
        }),
        failed: Mutex::new(HashMap::new()),
        fatal: Mutex::new(None),
    };
    futures_util::stream::iter(order.iter())
        .for_each_concurrent(concurrency, |(digest, usage)| {
            blob_phase.copy_blob(digest, usage)
        })
        .await;
    bytes_bar.finish_and_clear();
    if let Err(e) = locations.save() {
        warn!("blob locations not saved (the next run mounts less): {e}");
    }
    let BlobPhase {
        report,
        failed,
        fatal,
        ..
    } = blob_phase;
    if let Some(e) = fatal.into_inner().expect("lock") {
        images_bar.finish_and_clear();
        return Err(e);
    }
    let failed = failed.into_inner().expect("lock");
    let mut report = report.into_inner().expect("lock");
    report.manifests = push_all(
        dst,
        &mut results,
        plans,
        &failed,
        &mp,
        &images_bar,
        concurrency,
    )
    .await;
    images_bar.finish_and_clear();
    report.images = results;
    report.seconds = start.elapsed().as_secs_f64();
    Ok(report)
}

/// Every job's manifests (fetched `2 × concurrency` at a time) and the
/// distinct blobs they need, by digest. An image whose manifests cannot be
/// read is a failed result with no plan; an error that stops everything
/// is returned.
async fn plan_all(
    src: &Endpoint,
    jobs: &[Job],
    locations: &BlobLocations,
    concurrency: usize,
) -> Result<
    (
        Vec<JobResult>,
        Vec<Option<Planned>>,
        HashMap<Digest, BlobUse>,
    ),
    OciError,
> {
    info!("Reading the manifests of {} images", jobs.len());
    let planned: Vec<Result<Planned, OciError>> =
        futures_util::stream::iter(jobs.iter().map(|j| plan_job(src, j)))
            .buffered(concurrency * 2)
            .collect()
            .await;
    let mut results: Vec<JobResult> = Vec::new();
    let mut blobs: HashMap<Digest, BlobUse> = HashMap::new();
    let mut plans = Vec::new();
    for (i, (job, p)) in jobs.iter().zip(planned).enumerate() {
        match p {
            Ok(p) => {
                for b in &p.blobs {
                    add_use(&mut blobs, b, job, i);
                    if matches!(src, Endpoint::Registry(_)) {
                        locations.record(&job.src, &b.digest);
                    }
                }
                results.push(JobResult {
                    job: job.clone(),
                    digest: p.manifests.last().map(|m| m.digest.clone()),
                    error: None,
                });
                plans.push(Some(p));
            }
            Err(e) if e.stops_everything() => return Err(e),
            Err(e) => {
                warn!("image {} not mirrored: {e}", job.name);
                results.push(JobResult {
                    job: job.clone(),
                    digest: None,
                    error: Some(e.to_string()),
                });
                plans.push(None);
            }
        }
    }
    Ok((results, plans, blobs))
}

/// Fails early, in one line, when a registry is unreachable or refuses the login.
async fn check_endpoints(src: &Endpoint, dst: &Endpoint, jobs: &[Job]) -> Result<(), OciError> {
    if let Endpoint::Registry(r) = src {
        let repos: BTreeSet<&Repo> = jobs.iter().map(|j| &j.src).collect();
        for repo in repos {
            r.check(repo, false).await?;
        }
    }
    if let Endpoint::Registry(r) = dst {
        let repos: BTreeSet<&Repo> = jobs.iter().map(|j| &j.dst).collect();
        for repo in repos {
            r.check(repo, true).await?;
        }
    }
    Ok(())
}

/// Notes that job `i` needs blob `b` in its target repository.
fn add_use(blobs: &mut HashMap<Digest, BlobUse>, b: &Descriptor, job: &Job, i: usize) {
    let e = blobs.entry(b.digest.clone()).or_insert_with(|| BlobUse {
        size: b.size,
        src: job.src.clone(),
        targets: Vec::new(),
    });
    match e.targets.iter_mut().find(|(r, _)| *r == job.dst) {
        Some((_, users)) => users.push(i),
        None => e.targets.push((job.dst.clone(), vec![i])),
    }
}

/// The shared state of the blob phase: what each blob copy reports into.
struct BlobPhase<'a> {
    src: &'a Endpoint,
    dst: &'a Endpoint,
    locations: &'a BlobLocations,
    bytes_bar: &'a ProgressBar,
    report: Mutex<CopyReport>,
    /// Job index → why one of its blobs failed.
    failed: Mutex<HashMap<usize, String>>,
    /// The first error that stops everything.
    fatal: Mutex<Option<OciError>>,
}

impl BlobPhase<'_> {
    /// One distinct blob into every target repository that needs it: one
    /// HEAD per target; the first without the blob gets a mount (from a
    /// repository known to hold it) or the bytes, the others mount from it.
    async fn copy_blob(&self, digest: &Digest, usage: &BlobUse) {
        let mut outcomes = Vec::with_capacity(usage.targets.len());
        for (dst_repo, _) in &usage.targets {
            outcomes.push(
                self.dst
                    .has_blob(dst_repo, digest)
                    .await
                    .map(|p| p.then_some(BlobOutcome::Present)),
            );
        }
        let mut have: Option<Repo> = usage
            .targets
            .iter()
            .zip(&outcomes)
            .find(|(_, o)| matches!(o, Ok(Some(_))))
            .map(|((r, _), _)| r.clone());
        for ((dst_repo, users), known) in usage.targets.iter().zip(outcomes) {
            if self.fatal.lock().expect("lock").is_some() {
                return;
            }
            let progress = |n: u64| self.bytes_bar.inc(n);
            let r = match known {
                Ok(Some(present)) => Ok(present),
                Ok(None) => {
                    let mount = have
                        .clone()
                        .or_else(|| self.locations.find(&dst_repo.registry, digest, dst_repo));
                    upload_blob(
                        self.src,
                        self.dst,
                        &usage.src,
                        dst_repo,
                        digest,
                        usage.size,
                        mount.as_ref(),
                        &progress,
                    )
                    .await
                }
                Err(e) => Err(e),
            };
            match r {
                Ok(outcome) => {
                    self.count(outcome, usage.size);
                    if matches!(self.dst, Endpoint::Registry(_)) {
                        self.locations.record(dst_repo, digest);
                    }
                    have.get_or_insert_with(|| dst_repo.clone());
                    debug!(
                        "blob {digest} ({} bytes) to {dst_repo}: {outcome:?}",
                        usage.size
                    );
                }
                Err(e) if e.stops_everything() => {
                    self.fatal.lock().expect("lock").get_or_insert(e);
                }
                Err(e) => {
                    let msg = e.to_string();
                    let mut f = self.failed.lock().expect("lock");
                    for u in users {
                        f.entry(*u).or_insert_with(|| msg.clone());
                    }
                }
            }
        }
    }

    fn count(&self, outcome: BlobOutcome, size: u64) {
        let mut rep = self.report.lock().expect("lock");
        match outcome {
            BlobOutcome::Present => {
                rep.present += 1;
                self.bytes_bar.inc(size);
            }
            BlobOutcome::Mounted => {
                rep.mounted += 1;
                self.bytes_bar.inc(size);
            }
            BlobOutcome::Uploaded(n) => {
                rep.uploaded.0 += 1;
                rep.uploaded.1 = rep.uploaded.1.saturating_add(n);
            }
        }
    }
}

/// Manifests, children first, then the tag; only for images whose every
/// blob arrived. Returns the number of manifests pushed.
async fn push_all(
    dst: &Endpoint,
    results: &mut [JobResult],
    plans: Vec<Option<Planned>>,
    failed: &HashMap<usize, String>,
    mp: &MultiProgress,
    images_bar: &ProgressBar,
    concurrency: usize,
) -> usize {
    let pushes = results
        .iter_mut()
        .zip(plans)
        .enumerate()
        .map(|(i, (res, plan))| async move {
            let mut pushed = 0usize;
            if let Some(plan) = plan {
                if let Some(msg) = failed.get(&i) {
                    // Log lines and bars share stderr: hide the bars while logging.
                    mp.suspend(|| {
                        warn!("image {} not mirrored, nothing tagged: {msg}", res.job.name)
                    });
                    res.error = Some(msg.clone());
                } else if let Err(e) =
                    push_manifests(dst, &res.job, &plan.manifests, &mut pushed).await
                {
                    mp.suspend(|| warn!("image {} not mirrored: {e}", res.job.name));
                    res.error = Some(e.to_string());
                }
            }
            images_bar.inc(1);
            pushed
        });
    let counts: Vec<usize> = futures_util::stream::iter(pushes)
        .buffer_unordered(concurrency)
        .collect()
        .await;
    counts.iter().sum()
}

/// Puts a blob the target lacks: a mount from `have` (a repository of the
/// target registry holding it) or from the source when it is the same
/// registry, else the bytes streamed from the source.
#[allow(clippy::too_many_arguments)]
async fn upload_blob(
    src: &Endpoint,
    dst: &Endpoint,
    src_repo: &Repo,
    dst_repo: &Repo,
    digest: &Digest,
    size: u64,
    have: Option<&Repo>,
    progress: &(dyn Fn(u64) + Send + Sync),
) -> Result<BlobOutcome, OciError> {
    match dst {
        Endpoint::Registry(to) => {
            let mount = have.or(matches!(src, Endpoint::Registry(_)).then_some(src_repo));
            to.upload_blob(
                dst_repo,
                digest,
                size,
                mount,
                || src.blob(src_repo, digest),
                progress,
            )
            .await
        }
        Endpoint::Layout(l) => {
            let n = l
                .put_blob(digest, size, src.blob(src_repo, digest).await?, progress)
                .await?;
            Ok(BlobOutcome::Uploaded(n))
        }
    }
}

async fn push_manifests(
    dst: &Endpoint,
    job: &Job,
    manifests: &[Manifest],
    pushed: &mut usize,
) -> Result<(), OciError> {
    let top = manifests.last().expect("at least the top manifest");
    for m in manifests {
        match dst {
            // A PUT is idempotent and costs the registry about what a HEAD
            // does, so no HEAD first; the top manifest goes up once, under
            // its tag (which stores it by digest too).
            Endpoint::Registry(r) => {
                if std::ptr::eq(m, top) && job.tag.is_some() {
                    continue;
                }
                r.put_manifest(&job.dst, m.digest.as_str(), m).await?;
                *pushed += 1;
            }
            Endpoint::Layout(l) => {
                l.put_manifest(None, m, &[]).await?;
                *pushed += 1;
            }
        }
    }
    if let Some(tag) = &job.tag {
        match dst {
            Endpoint::Registry(r) => {
                r.put_manifest(&job.dst, tag, top).await?;
                *pushed += 1;
            }
            Endpoint::Layout(l) => {
                let ann: Vec<(&str, &str)> = job
                    .annotations
                    .iter()
                    .map(|(k, v)| (k.as_str(), v.as_str()))
                    .collect();
                l.put_manifest(Some(tag), top, &ann).await?
            }
        }
    }
    Ok(())
}
