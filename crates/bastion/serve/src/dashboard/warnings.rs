//! Warnings in plain words with the next step, from the annotated status
//! document.

use okd_hosts::Role;
use okd_serve_api::status::{CsrKind, HostStatus, Stage, StatusDocument};
use time::OffsetDateTime;

use super::*;

/// After this long without Ignition, a host that resolved names gets a warning.
const NO_IGNITION_AFTER_SECS: i64 = 5 * 60;

/// After this long with its pointer config fetched and no machine-config
/// request, a host gets a warning: writing the image and rebooting take a
/// few minutes.
const NO_CONFIG_AFTER_POINTER_SECS: i64 = 15 * 60;

/// Below this, the certificate expiry is a warning.
const CERT_WARN_SECS: i64 = 2 * 3600;

/// After this long with bootstrap.ign fetched but its API not UP, a warning.
const NO_BOOTSTRAP_API_AFTER_SECS: i64 = 10 * 60;

/// The bootstrap host's warnings: its API not up long after it fetched
/// bootstrap.ign, or bootstrap complete while it is still a backend.
fn bootstrap_warnings(
    h: &HostStatus,
    doc: &StatusDocument,
    now: OffsetDateTime,
    w: &mut Vec<String>,
) {
    if h.role != Role::Bootstrap || frontends(doc).is_none() {
        return;
    }
    let name = &h.hostname;
    let done = |n: &str| h.stage(n).filter(|s| s.done);
    let removed = done("Removed from load balancer").is_some();
    let complete = done("Bootstrap complete");
    if let Some(ign) = done("Ignition fetched")
        && let Some(t) = parse_time(ign.time.as_deref())
        && (now - t).whole_seconds() >= NO_BOOTSTRAP_API_AFTER_SECS
        && done("API up on bootstrap").is_none()
        && complete.is_none()
        && !removed
    {
        let check = h
            .stage("API up on bootstrap")
            .map_or("", |s| s.detail.as_str());
        w.push(format!(
            "{name} fetched bootstrap.ign {} but its API is not up (last check: {check}): log in to {name} and follow `journalctl -b -f -u release-image.service -u bootkube.service`",
            ago(t, now)
        ));
    }
    if let Some(c) = complete
        && !removed
    {
        let when = parse_time(c.time.as_deref())
            .map(|t| format!(" {}", ago(t, now)))
            .unwrap_or_default();
        w.push(format!(
            "bootstrap complete{when} but {name} is still a load balancer backend: remove it with `okd-install destroy bootstrap` (or `okd-install serve remove-bootstrap`)"
        ));
    }
}

/// Whether `e` is a refused request for bootstrap.ign.
fn refused_bootstrap_ign(e: &HttpEvent) -> bool {
    e.status == 403 && e.path.ends_with("bootstrap.ign")
}

/// Warnings in plain words with the next step.
pub(super) fn warnings(doc: &StatusDocument, now: OffsetDateTime) -> Vec<String> {
    let mut w = Vec::new();
    for h in &doc.hosts {
        let name = &h.hostname;
        let st: &[Stage] = &h.stages;
        let dns_done = st.first().is_some_and(|s| s.done);
        let ign_done = st.get(1).is_some_and(|s| s.done);
        // The pointer config over HTTP (coreos-installer's
        // coreos.inst.ignition_url), and never the machine-config server
        // after: the install to disk stopped before the reboot.
        let pointer = (h.role != Role::Bootstrap)
            .then(|| {
                h.http
                    .iter()
                    .rfind(|e| e.status == 200 && e.complete && e.path.ends_with(".ign"))
            })
            .flatten();
        if !ign_done
            && h.ignition.is_empty()
            && let Some(e) = pointer
            && let Some(t) = parse_time(Some(&e.time))
            && (now - t).whole_seconds() >= NO_CONFIG_AFTER_POINTER_SECS
        {
            let file = e.path.rsplit('/').next().unwrap_or(&e.path);
            w.push(format!(
                "{name} fetched {file} {} but never asked the machine-config server: coreos-installer stopped before the reboot, most often on the install disk (coreos.inst.install_dev: a disk that does not exist, or the wrong one), or the image download; look at {name}'s console",
                ago(t, now)
            ));
        }
        // A host that asked the machine-config server has booted: its
        // kernel arguments and boot order are not the question.
        if dns_done
            && !ign_done
            && h.ignition.is_empty()
            && pointer.is_none()
            && let Some(t) = parse_time(st[0].time.as_deref())
            && (now - t).whole_seconds() >= NO_IGNITION_AFTER_SECS
        {
            w.push(format!(
                "{name} resolved {} {} but never fetched Ignition: check the kernel arguments / boot order, and that port {} reaches a machine-config server (`okd-install preflight` checks it)",
                st[0].detail.split(' ').next().unwrap_or(""),
                ago(t, now),
                okd_hosts::Service::MachineConfig.backend_port(),
            ));
        }
        if !ign_done && let Some(e) = h.ignition.iter().rev().find(|e| e.held) {
            let via = e.via.as_deref().unwrap_or("the bootstrap");
            let since = parse_time(Some(&e.time))
                .map(|t| format!(" since {}", ago(t, now)))
                .unwrap_or_default();
            w.push(format!(
                "{name} asks for the {} config, but the only machine-config server up is {via}'s, which refuses that pool (\"refusing to serve bootstrap configuration to pool {}\"): the load balancer holds it back{since} until a master's machine-config server is up; it retries by itself, nothing to do unless no master comes up",
                e.pool, e.pool
            ));
        }
        if let Some(e) = h.ignition.iter().find(|e| e.status >= 400) {
            w.push(format!(
                "{name} asked the machine-config server for pool {} and got HTTP {}",
                e.pool, e.status
            ));
        }
        bootstrap_warnings(h, doc, now, &mut w);
        if h.role != Role::Bootstrap && h.http.iter().any(refused_bootstrap_ign) {
            w.push(format!(
                "bootstrap.ign was requested by {name} ({}), refused",
                h.address
            ));
        }
    }
    if let Some(c) = &doc.certificates
        && let Some(t) = parse_time(Some(&c.not_after))
        && (t - now).whole_seconds() < CERT_WARN_SECS
    {
        let file = &c.file;
        w.push(if t <= now {
            format!("the install's 24-hour certificates expired {} (tls/{file}): nodes cannot join with this bootstrap.ign; create the Ignition configs again", ago(t, now))
        } else {
            format!("the install's 24-hour certificates expire {} (tls/{file}): boot the remaining nodes before then, or create the Ignition configs again", until(t, now))
        });
    }
    // The preflight checks serve ran at start that did not pass.
    for c in doc.preflight.iter().flat_map(|r| &r.checks) {
        if c.result >= okd_serve_api::preflight::Outcome::Warn {
            w.push(format!("preflight {}", c.line()));
        }
    }
    let csrs = doc.cluster_data.view.iter().flat_map(|v| &v.csrs);
    for c in csrs {
        if c.approved || c.denied || c.kind == CsrKind::Other {
            continue;
        }
        let name = c.name.as_deref().unwrap_or("");
        let node = c.node.as_deref().unwrap_or("?");
        let host = doc
            .hosts
            .iter()
            .find(|h| names_of(h).contains(&node.to_lowercase()));
        match host {
            Some(h) => w.push(format!(
                "{} has a pending {} CSR {name}: approve it with `okd-install approve-csr`",
                h.hostname,
                c.kind.as_str()
            )),
            None => w.push(format!(
                "CSR {name} asks for node {node}, which is not in the inventory: check where it comes from before approving it"
            )),
        }
    }
    for c in &doc.unknown_clients {
        if c.http.iter().any(refused_bootstrap_ign) {
            w.push(format!(
                "bootstrap.ign was requested by {}, refused (not the inventory's bootstrap host)",
                c.address
            ));
        }
    }
    for fe in frontends(doc).into_iter().flatten() {
        let any_up = fe.backends.iter().any(|b| b.up);
        for b in &fe.backends {
            // A backend that never passed a check is a host not serving
            // yet: the table shows it, the warnings keep to changes.
            if !b.up && b.last_ok_unix_ms.is_some() {
                let since = from_unix_ms(b.since_unix_ms)
                    .map(|t| ago(t, now))
                    .unwrap_or_default();
                let fe_name = &fe.name;
                w.push(format!(
                    "load balancer backend {} ({}) of {fe_name} went DOWN {since}: {}; {}",
                    b.name,
                    b.addr,
                    b.last_check
                        .as_ref()
                        .map_or("no check yet", |c| c.detail.as_str()),
                    if any_up {
                        "its traffic goes to the backends still UP".to_string()
                    } else {
                        format!("no backend of {fe_name} is UP, so its clients get no answer")
                    }
                ));
            }
        }
    }
    w
}
