//! Waiting for the required pods to be Running and Ready, after
//! openshift/cluster-bootstrap `pkg/start/status.go`
//! (`waitUntilPodsRunning`): every pod of the cluster is watched (a
//! List+Watch kept in a local store, as its informer), and each required
//! pod is the first pod whose `namespace/name` starts with one of its
//! prefixes. A state is logged as `Pod Status:<name> <state>` whenever
//! any changed. The clause syntax is that of `--required-pods`
//! (`cmd/cluster-bootstrap/start.go`, `parsePodPrefixes`).

use std::fmt;
use std::time::Duration;

use futures_util::StreamExt as _;
use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use kube::runtime::{WatchStreamExt as _, reflector, watcher};
use tracing::{debug, info};

use crate::Error;

/// How often the store is checked.
pub const POLL: Duration = Duration::from_secs(1);

/// The pods bootkube requires (openshift/installer
/// `data/data/bootstrap/files/usr/local/bin/bootkube.sh.template`,
/// `REQUIRED_PODS`; empty for single node in place).
pub const BOOTKUBE_REQUIRED_PODS: &[&str] = &[
    "openshift-kube-apiserver/kube-apiserver",
    "openshift-kube-scheduler/openshift-kube-scheduler",
    "openshift-kube-controller-manager/kube-controller-manager",
    "openshift-cluster-version/cluster-version-operator",
];

/// One required pod: a name for the log and the `namespace/name-prefix`
/// patterns any of which satisfies it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequiredPod {
    /// The name in `Pod Status:` lines: the clause itself, or the
    /// description of a `<desc>:<ns>/<prefix>|…` clause.
    pub desc: String,
    /// `namespace/name-prefix` patterns.
    pub prefixes: Vec<String>,
}

impl RequiredPod {
    /// Parses `--required-pods` clauses: `<ns>/<prefix>` or
    /// `<desc>:<ns>/<prefix>|<ns>/<prefix>|…`; clauses with the same
    /// description are merged. Empty clauses are skipped.
    ///
    /// # Errors
    /// [`Error::RequiredPods`] for a `|` list without a description or a
    /// pattern that is not `<namespace>/<prefix>`.
    pub fn parse(clauses: &[&str]) -> Result<Vec<RequiredPod>, Error> {
        let mut out: Vec<RequiredPod> = Vec::new();
        for c in clauses.iter().map(|c| c.trim()).filter(|c| !c.is_empty()) {
            let (desc, list) = match c.split_once(':') {
                Some((d, l)) => (d.to_string(), l),
                None if c.contains('|') => {
                    return Err(Error::RequiredPods(format!(
                        "{c:?}: a list of pods needs a description: \
                         <desc>:<namespace>/<pod-name>|<namespace>/<pod-name>|…"
                    )));
                }
                None => (c.to_string(), c),
            };
            let prefixes: Vec<String> = list.split('|').map(str::to_string).collect();
            for p in &prefixes {
                if !matches!(p.split_once('/'), Some((ns, n)) if !ns.is_empty() && !n.is_empty() && !n.contains('/'))
                {
                    return Err(Error::RequiredPods(format!(
                        "{p:?}: expected <namespace>/<pod-name-prefix>"
                    )));
                }
            }
            match out.iter_mut().find(|r| r.desc == desc) {
                Some(r) => r.prefixes.extend(prefixes),
                None => out.push(RequiredPod { desc, prefixes }),
            }
        }
        Ok(out)
    }
}

/// A required pod's state, as cluster-bootstrap words it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PodState {
    /// No pod matches.
    DoesNotExist,
    /// Running, and its Ready condition is True.
    Ready,
    /// Running, not Ready.
    RunningNotReady,
    /// Any other phase (`Pending`, `Failed`, …; empty when unset).
    Phase(String),
}

impl fmt::Display for PodState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PodState::DoesNotExist => f.write_str("DoesNotExist"),
            PodState::Ready => f.write_str("Ready"),
            PodState::RunningNotReady => f.write_str("RunningNotReady"),
            PodState::Phase(p) if p.is_empty() => f.write_str("Unknown"),
            PodState::Phase(p) => f.write_str(p),
        }
    }
}

fn state_of(pod: &Pod) -> PodState {
    let status = pod.status.as_ref();
    let phase = status.and_then(|s| s.phase.clone()).unwrap_or_default();
    let ready = status
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"));
    match (phase.as_str(), ready) {
        ("Running", true) => PodState::Ready,
        ("Running", false) => PodState::RunningNotReady,
        _ => PodState::Phase(phase),
    }
}

/// The state of each required pod among `pods`, in `required` order.
pub fn states(required: &[RequiredPod], pods: &[std::sync::Arc<Pod>]) -> Vec<(String, PodState)> {
    let mut keys: Vec<(String, &Pod)> = pods
        .iter()
        .map(|p| {
            let ns = p.metadata.namespace.as_deref().unwrap_or_default();
            let name = p.metadata.name.as_deref().unwrap_or_default();
            (format!("{ns}/{name}"), p.as_ref())
        })
        .collect();
    keys.sort_by(|a, b| a.0.cmp(&b.0));
    required
        .iter()
        .map(|r| {
            let found = keys
                .iter()
                .find(|(k, _)| r.prefixes.iter().any(|p| k.starts_with(p.as_str())));
            let state = found.map_or(PodState::DoesNotExist, |(_, p)| state_of(p));
            (r.desc.clone(), state)
        })
        .collect()
}

/// Waits until every pod of `required` is Running and Ready, up to
/// `timeout`.
///
/// # Errors
/// [`Error::PodsTimeout`] with each required pod's last state.
pub async fn wait_running(
    client: kube::Client,
    required: &[RequiredPod],
    timeout: Duration,
) -> Result<Vec<(String, PodState)>, Error> {
    if required.is_empty() {
        info!("No required pods to wait for");
        return Ok(Vec::new());
    }
    let api: Api<Pod> = Api::all(client);
    let (reader, writer) = reflector::store();
    let stream = reflector(
        writer,
        watcher(api, watcher::Config::default()).default_backoff(),
    );
    let feed = tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        while let Some(ev) = stream.next().await {
            if let Err(e) = ev {
                debug!("watching pods (retrying): {e}");
            }
        }
    });
    let deadline = tokio::time::Instant::now() + timeout;
    info!(
        "Waiting up to {} for the required pods: {}",
        human(timeout),
        required
            .iter()
            .map(|r| r.desc.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
    // The first states from the first full list, not from an empty store.
    if tokio::time::timeout_at(deadline, reader.wait_until_ready())
        .await
        .is_err()
    {
        debug!("no list of pods before the deadline");
    }
    let mut last: Option<Vec<(String, PodState)>> = None;
    let result = loop {
        let now = states(required, &reader.state());
        if last.as_ref() != Some(&now) {
            for (desc, state) in &now {
                info!("\tPod Status:{desc:>24}\t{state}");
            }
        }
        let done = now.iter().all(|(_, s)| *s == PodState::Ready);
        last = Some(now);
        if done {
            info!("All self-hosted control plane components successfully started");
            break Ok(last.unwrap_or_default());
        }
        if tokio::time::Instant::now() >= deadline {
            break Err(Error::PodsTimeout {
                after: timeout,
                pods: last.unwrap_or_default(),
            });
        }
        tokio::time::sleep(POLL.min(deadline - tokio::time::Instant::now())).await;
    };
    feed.abort();
    result
}

/// `20m`, `1m30s`, `3s`, `1.5s`, `250ms`.
pub(crate) fn human(d: Duration) -> String {
    let s = d.as_secs();
    if s == 0 {
        return format!("{}ms", d.as_millis());
    }
    if s < 60 && d.subsec_millis() != 0 {
        return format!("{:.1}s", d.as_secs_f64());
    }
    let (m, s) = (s / 60, s % 60);
    match (m, s) {
        (0, s) => format!("{s}s"),
        (m, 0) => format!("{m}m"),
        (m, s) => format!("{m}m{s}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{PodCondition, PodStatus};
    use std::sync::Arc;

    fn pod(ns: &str, name: &str, phase: &str, ready: bool) -> Arc<Pod> {
        let mut p = Pod::default();
        p.metadata.namespace = Some(ns.into());
        p.metadata.name = Some(name.into());
        p.status = Some(PodStatus {
            phase: Some(phase.into()),
            conditions: Some(vec![PodCondition {
                type_: "Ready".into(),
                status: if ready { "True" } else { "False" }.into(),
                ..Default::default()
            }]),
            ..Default::default()
        });
        Arc::new(p)
    }

    #[test]
    fn clauses() {
        let r = RequiredPod::parse(&[
            "kube-system/kube-apiserver",
            "sched:kube-system/a|kube-system/b",
            "sched:kube-system/c",
            "",
        ])
        .unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].prefixes, ["kube-system/kube-apiserver"]);
        assert_eq!(r[1].desc, "sched");
        assert_eq!(
            r[1].prefixes,
            ["kube-system/a", "kube-system/b", "kube-system/c"]
        );
        assert!(RequiredPod::parse(&["kube-system/a|kube-system/b"]).is_err());
        assert!(RequiredPod::parse(&["no-namespace"]).is_err());
        assert!(RequiredPod::parse(&["ns/"]).is_err());
    }

    #[test]
    fn prefix_matching_and_states() {
        let r = RequiredPod::parse(&[
            "kube-system/kube-apiserver",
            "kube-system/kube-scheduler",
            "x:ns/ctrl|ns/other",
            "kube-system/missing",
        ])
        .unwrap();
        let pods = vec![
            pod("kube-system", "kube-apiserver-master0", "Running", true),
            pod("kube-system", "kube-scheduler-master0", "Running", false),
            pod("ns", "other-1", "Pending", false),
        ];
        let s = states(&r, &pods);
        assert_eq!(
            s,
            [
                ("kube-system/kube-apiserver".into(), PodState::Ready),
                (
                    "kube-system/kube-scheduler".into(),
                    PodState::RunningNotReady
                ),
                ("x".into(), PodState::Phase("Pending".into())),
                ("kube-system/missing".into(), PodState::DoesNotExist),
            ]
        );
    }

    #[test]
    fn durations() {
        assert_eq!(human(Duration::from_secs(1200)), "20m");
        assert_eq!(human(Duration::from_secs(90)), "1m30s");
        assert_eq!(human(Duration::from_millis(250)), "250ms");
        assert_eq!(human(Duration::from_millis(1500)), "1.5s");
        assert_eq!(human(Duration::from_secs(3)), "3s");
    }
}
