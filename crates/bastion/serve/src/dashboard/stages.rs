//! The stage line of each host: nodes from DNS answered to Node Ready,
//! the bootstrap host from Ignition fetched to its removal from the load
//! balancer.

use okd_hosts::{Role, Service};
use okd_serve_api::lb::{BackendStats, FrontendStats};
use okd_serve_api::status::{ClusterData, CsrKind, HostStatus, Stage, StatusDocument};

use super::*;

/// The cluster-side stages of a host: its client and serving CSRs and its Node.
fn cluster_stages(h: &HostStatus, cluster: &ClusterData) -> Vec<Stage> {
    let names = names_of(h);
    let mine = |n: &Option<String>| {
        n.as_deref()
            .is_some_and(|n| names.contains(&n.to_lowercase()))
    };
    let view = cluster.view.as_ref();
    let csrs: Vec<_> = view
        .into_iter()
        .flat_map(|v| &v.csrs)
        .filter(|c| mine(&c.node))
        .collect();
    let mut out = Vec::new();
    for (stage, kind) in [
        ("CSR client approved", CsrKind::Client),
        ("CSR serving approved", CsrKind::Serving),
    ] {
        let of_kind: Vec<_> = csrs.iter().filter(|c| c.kind == kind).collect();
        let approved = of_kind.iter().find(|c| c.approved);
        let pending = of_kind.iter().find(|c| !c.approved && !c.denied);
        let name = |c: &&&okd_serve_api::status::CsrView| c.name.clone().unwrap_or_default();
        out.push(Stage::new(
            stage,
            approved.is_some(),
            approved.and_then(|c| c.time.clone()),
            match (approved, pending) {
                (Some(c), _) => name(c),
                (None, Some(c)) => format!("{} pending", name(c)),
                (None, None) => String::new(),
            },
        ));
    }
    let node = view
        .into_iter()
        .flat_map(|v| &v.nodes)
        .find(|n| mine(&n.name));
    let ready = node.is_some_and(|n| n.ready);
    out.push(Stage::new(
        "Node Ready",
        ready,
        node.filter(|_| ready).and_then(|n| n.since.clone()),
        match node {
            Some(_) if !ready => "registered, not Ready",
            _ => "",
        },
    ));
    out
}

/// What the stages of a bootstrap host say while the load balancer is not ours.
const LB_NOT_RUN: &str = "load balancer not run by this serve";

/// Whether load-balancer backend `b` is host `h`: serve names backends by
/// host name (okd_lb::frontends_for); a backend at the host's address counts too.
fn is_backend_of(b: &BackendStats, h: &HostStatus) -> bool {
    b.name == h.hostname || b.addr.ip() == h.address
}

/// Whether frontend `fe` serves `svc`: serve's name for it (`api`,
/// `machine-config`), or the port it has in the install guides (6443, 22623).
fn frontend_is(fe: &FrontendStats, svc: Service) -> bool {
    fe.name == svc.name() || fe.bind.port() == svc.backend_port()
}

/// Host `h`'s backend in the `svc` frontend of `frontends`.
fn backend_in<'a>(
    frontends: &'a [FrontendStats],
    h: &HostStatus,
    svc: Service,
) -> Option<&'a BackendStats> {
    frontends
        .iter()
        .filter(|fe| frontend_is(fe, svc))
        .flat_map(|fe| &fe.backends)
        .find(|b| is_backend_of(b, h))
}

/// "API up on bootstrap" / "Machine-config server up on bootstrap": the
/// bootstrap's backend in the frontend of `svc` is UP or has passed a check
/// (time: since when UP, else the last passed check); after
/// `remove-bootstrap`, as it was just before.
fn lb_stage(stage: &str, h: &HostStatus, doc: &StatusDocument, svc: Service) -> Stage {
    let Some(fes) = frontends(doc) else {
        return Stage::new(stage, false, None, LB_NOT_RUN);
    };
    let (b, removed) = match backend_in(fes, h, svc) {
        Some(b) => (Some(b), false),
        None => (
            doc.bootstrap_removed
                .as_ref()
                .and_then(|r| backend_in(&r.frontends, h, svc)),
            true,
        ),
    };
    let Some(b) = b else {
        return Stage::new(
            stage,
            false,
            None,
            format!("not a backend of the {} frontend", svc.name()),
        );
    };
    // A stage once reached stays done: a backend that passed a check and
    // is DOWN now came up and went down again (the warnings say so).
    // Before its first check nothing is claimed.
    let up = b.checked && b.up;
    let came_up = came_up(b);
    let check = b
        .last_check
        .as_ref()
        .map_or("no check yet", |c| c.detail.as_str());
    let mut detail = if !b.checked {
        okd_serve_api::lb::NOT_CHECKED.to_string()
    } else if came_up && !up {
        format!("DOWN now: {check}")
    } else if let (false, Some(step)) = (came_up, next_step(h)) {
        format!("{check}; {step}")
    } else {
        check.to_string()
    };
    if removed {
        detail += " (before its removal from the load balancer)";
    }
    let time = match (up, came_up) {
        (true, _) => rfc3339(from_unix_ms(b.since_unix_ms)),
        (false, true) => rfc3339(b.last_ok_unix_ms.and_then(from_unix_ms)),
        _ => None,
    };
    Stage::new(stage, came_up, time, detail)
}

/// What to do about a bootstrap host whose API or machine-config server
/// never passed a check and which has not fetched bootstrap.ign: boot it.
/// `None` once it fetched it (the warnings say what to follow then).
fn next_step(h: &HostStatus) -> Option<String> {
    let fetched = h
        .http
        .iter()
        .any(|e| e.status == 200 && e.path.ends_with("bootstrap.ign"));
    (!fetched).then(|| format!("boot {}: it has not fetched bootstrap.ign yet", h.hostname))
}

/// The bootstrap node's own stages, from the progress it publishes into its
/// API (ConfigMap `kube-system/okd-install-bootstrap-progress`, okd-bootstrap
/// `progress`): how many of bootkube's stages are done and which one runs,
/// or where it failed and why.
fn bootkube_stage(doc: &StatusDocument) -> Stage {
    const NAME: &str = "bootkube stages";
    let cd = &doc.cluster_data;
    let words = |s: &str| okd_service_record::stage_words(s).unwrap_or(s).to_string();
    let Some(p) = cd
        .view
        .as_ref()
        .and_then(|v| v.bootstrap_progress.get("bootkube"))
    else {
        let detail = if cd.available {
            "no progress from the bootstrap yet (published once its API runs)"
        } else {
            "cluster data unavailable"
        };
        return Stage::new(NAME, false, None, detail);
    };
    if p.complete {
        return Stage::new(
            NAME,
            true,
            Some(p.last_time.clone()),
            format!("bootkube.service complete ({} stages)", p.done.len()),
        );
    }
    let detail = match (&p.failure, &p.running) {
        (Some((stage, msg)), _) if !stage.is_empty() => {
            format!("failed {} ({stage}): {msg}; retrying", words(stage))
        }
        (Some((_, msg)), _) => format!("failed: {msg}; retrying"),
        (None, Some(stage)) => format!("{} stages done; now {}", p.done.len(), words(stage)),
        (None, None) => format!("{} stages done", p.done.len()),
    };
    Stage::new(NAME, false, None, detail)
}

/// What the "Ignition fetched" stage says of a fetch: pool and spec from
/// serve's own machine-config server; pool, the backend and the size for a
/// config another machine-config server sent through serve's balancer.
fn ignition_detail(e: &okd_serve_api::status::IgnitionEvent) -> String {
    match (&e.via, e.bytes) {
        (Some(via), Some(n)) => format!(
            "pool {} from {via}'s machine-config server ({} KiB through the load balancer)",
            e.pool,
            n / 1024
        ),
        _ => format!("pool {}, spec {}", e.pool, e.spec),
    }
}

/// The stages only the bootstrap host has, after "Ignition fetched": its
/// API and machine-config server UP behind the load balancer, the
/// `kube-system/bootstrap` ConfigMap its report-progress.sh creates
/// (openshift/installer data/data/bootstrap/files/usr/local/bin/report-progress.sh),
/// and its removal from the load balancer by `remove-bootstrap`.
fn bootstrap_stages(h: &HostStatus, doc: &StatusDocument) -> Vec<Stage> {
    let mut out = vec![
        lb_stage("API up on bootstrap", h, doc, Service::Api),
        lb_stage(
            "Machine-config server up on bootstrap",
            h,
            doc,
            Service::MachineConfig,
        ),
    ];
    let cd = &doc.cluster_data;
    out.push(bootkube_stage(doc));
    let cm = cd.view.as_ref().and_then(|v| v.bootstrap.as_ref());
    let status = cm.and_then(|c| c.status.as_deref());
    let complete = status == Some("complete");
    out.push(Stage::new(
        "Bootstrap complete",
        complete,
        cm.filter(|_| complete).and_then(|c| c.time.clone()),
        match status {
            Some(_) if complete => "ConfigMap kube-system/bootstrap".to_string(),
            Some(s) => format!("ConfigMap kube-system/bootstrap says {s:?}"),
            None if cm.is_some() => "ConfigMap kube-system/bootstrap has no status".to_string(),
            None if cd.available => "no ConfigMap kube-system/bootstrap yet".to_string(),
            None => "cluster data unavailable".to_string(),
        },
    ));
    const REMOVED: &str = "Removed from load balancer";
    out.push(match frontends(doc) {
        None => Stage::new(REMOVED, false, None, LB_NOT_RUN),
        Some(fes) => {
            let still: Vec<&str> = fes
                .iter()
                .filter(|fe| fe.backends.iter().any(|b| is_backend_of(b, h)))
                .map(|fe| fe.name.as_str())
                .collect();
            let time = doc.bootstrap_removed.as_ref().map(|r| r.time.clone());
            if !still.is_empty() {
                Stage::new(
                    REMOVED,
                    false,
                    None,
                    format!("still a backend of {}", still.join(", ")),
                )
            } else if time.is_some() {
                Stage::new(REMOVED, true, time, "by `serve remove-bootstrap`")
            } else {
                Stage::new(REMOVED, true, None, "not a backend of any frontend")
            }
        }
    });
    out
}

/// The name of the bootstrap's stage that says what became of bootstrap.ign's
/// one-time token ([`token_stage`]).
pub(crate) const TOKEN_STAGE: &str = "bootstrap.ign token spent";

/// A wall-clock time as RFC 3339, as every time of the document.
fn wall(t: std::time::SystemTime) -> Option<String> {
    let d = t.duration_since(std::time::UNIX_EPOCH).ok()?;
    rfc3339(OffsetDateTime::from_unix_timestamp_nanos(d.as_nanos() as i128).ok())
}

/// "HH:MM UTC" of a wall-clock time.
fn clock(t: std::time::SystemTime) -> String {
    let d = t
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    format!("{:02}:{:02} UTC", d / 3600 % 24, d / 60 % 60)
}

/// Adds the stage [`TOKEN_STAGE`] after "Ignition fetched" to each bootstrap
/// host of an annotated document (serve runs with `--bootstrap-token`): not
/// done while the token is valid for retries, with until when; done once
/// spent, with the time and which of the two spent it (the bootstrap seen
/// running, or the time limit after the first fetch).
pub(crate) fn token_stage(doc: &mut StatusDocument, t: &okd_bootserver::TokenStatus) {
    let limit = okd_bootserver::limit_words(t.limit);
    let stage = match (&t.spent, t.first_fetch) {
        (Some((at, okd_bootserver::SpentBy::SeenRunning(what))), _) => Stage::new(
            TOKEN_STAGE,
            true,
            wall(*at),
            format!(
                "the bootstrap's {what} passed the load balancer's check at {}",
                clock(*at)
            ),
        ),
        (Some((at, okd_bootserver::SpentBy::TimeLimit)), _) => Stage::new(
            TOKEN_STAGE,
            true,
            wall(*at),
            format!(
                "{limit} after the first fetch, at {}; the bootstrap was not seen running",
                clock(*at)
            ),
        ),
        (None, Some(first)) => Stage::new(
            TOKEN_STAGE,
            false,
            None,
            format!(
                "valid for retries from the bootstrap's address until its API or machine-config server passes the load balancer's check, at most until {} ({limit} after the first fetch)",
                clock(first + t.limit)
            ),
        ),
        (None, None) => Stage::new(
            TOKEN_STAGE,
            false,
            None,
            format!(
                "not used yet; valid from the bootstrap's address until its API or machine-config server passes the load balancer's check, or {limit} after the first fetch"
            ),
        ),
    };
    for h in doc.hosts.iter_mut().filter(|h| h.role == Role::Bootstrap) {
        let at = h
            .stages
            .iter()
            .position(|s| s.stage == "Ignition fetched")
            .map_or(h.stages.len(), |i| i + 1);
        h.stages.insert(at, stage.clone());
    }
}

/// The stage line of one host from its events and the document's
/// `clusterData`, `loadBalancer` and `bootstrapRemoved`.
pub(super) fn stages(h: &HostStatus, doc: &StatusDocument) -> Vec<Stage> {
    let first_dns = h.dns.first();
    let bootstrap = h.role == Role::Bootstrap;
    // A bootstrap.ign fetch counts once its whole body went out.
    let fetches: Vec<&HttpEvent> = if bootstrap {
        h.http
            .iter()
            .filter(|e| is_bootstrap_ign(e) && (e.status == 200 || e.status == 206))
            .collect()
    } else {
        Vec::new()
    };
    // (time, detail) of the fetch that counts.
    let ign: Option<(String, String)> = if bootstrap {
        fetches
            .iter()
            .find(|e| e.status == 200 && e.complete)
            .map(|e| (e.time.clone(), "bootstrap.ign over HTTP".to_string()))
    } else {
        h.ignition
            .iter()
            .find(|e| e.status == 200)
            .map(|e| (e.time.clone(), ignition_detail(e)))
    };
    let mut out = vec![Stage::new(
        "DNS answered",
        first_dns.is_some(),
        first_dns.map(|e| e.time.clone()),
        first_dns
            .map(|e| format!("{} {}", e.name, e.qtype))
            .unwrap_or_default(),
    )];
    let (done, time, detail) = match ign {
        Some((t, d)) => (true, Some(t), d),
        None => (
            false,
            None,
            match fetches.last() {
                Some(e) => format!(
                    "{} fetch(es) of bootstrap.ign, none complete; the last sent {} of {} bytes",
                    fetches.len(),
                    e.bytes,
                    e.size.map_or("?".to_string(), |n| n.to_string()),
                ),
                None => String::new(),
            },
        ),
    };
    out.push(Stage::new("Ignition fetched", done, time, detail));
    if bootstrap {
        out.extend(bootstrap_stages(h, doc));
    } else {
        out.extend(cluster_stages(h, &doc.cluster_data));
    }
    out
}
