//! The monitor's rules once a cluster installs (the reference's §2.5 and
//! §3.2; assisted-service `internal/host/monitor.go`,
//! `internal/host/statemachine.go` `installing*` transitions,
//! `internal/cluster/statemachine.go`, `internal/common/common.go`
//! `HasEnoughMastersAndWorkers`): per-host installation timeouts and lost
//! connections, and the cluster's move to `finalizing`,
//! `installing-pending-user-action` or `error`.
//!
//! The rules are pure functions of the stored rows and the time
//! ([`host_next`], [`cluster_next`]); [`pass`] applies them with
//! conditional updates, as the pre-install monitor does.

use crate::api::installation::stages;
use crate::db::{ClusterRow, Db, DbError, HostRow};
use crate::events::{self, Scope};
use crate::model;

/// A host `installing` with no progress report for this long fails, ms
/// (`InstallationTimeout`, 20 min).
pub const START_TIMEOUT_MS: i64 = 20 * 60 * 1000;
/// A host stays `installing-pending-user-action` this long before it
/// fails, ms (`HOST_INSTALLING_PENDING_USER_ACTION_TIMEOUT`, 60 min), when
/// the cluster can do without it.
pub const PENDING_USER_ACTION_TIMEOUT_MS: i64 = 60 * 60 * 1000;
/// A host that has not polled for this long before its reboot has lost
/// its connection, ms (`HOST_MAX_DISCONNECTION_TIME`, 3 min).
pub const DISCONNECTED_MS: i64 = 3 * 60 * 1000;
/// The bootstrap host's extra allowance, ms (2 min: its resolv.conf is
/// rewritten mid-install).
pub const BOOTSTRAP_EXTRA_MS: i64 = 2 * 60 * 1000;
/// A cluster installing longer than this fails, ms
/// (`INSTALLATION_TIMEOUT`, 24 h).
pub const CLUSTER_TIMEOUT_MS: i64 = 24 * 60 * 60 * 1000;
/// A cluster finalizing longer than this fails, ms (`FINALIZING_TIMEOUT`,
/// 5 h).
pub const FINALIZING_TIMEOUT_MS: i64 = 5 * 60 * 60 * 1000;

const MIN: i64 = 60 * 1000;

/// How long a host may stay in installation stage `stage`, ms
/// (`HOST_STAGE_<NAME>_TIMEOUT` defaults; single node clusters get 80
/// min to reboot).
pub fn stage_timeout_ms(stage: &str, single: bool) -> i64 {
    match stage {
        "Starting installation" | "Writing image to disk" => 30 * MIN,
        "Copying registry data to disk" => 90 * MIN,
        "Rebooting" if single => 80 * MIN,
        "Rebooting" => 40 * MIN,
        "Waiting for ignition" => 24 * 60 * MIN,
        _ => 60 * MIN,
    }
}

/// Stages whose timeout is not counted while the cluster is
/// `installing-pending-user-action`: the host waits for another host.
const WAITING_STAGES: &[&str] = &[
    "Waiting for control plane",
    "Waiting for controller",
    "Waiting for bootkube",
    "Rebooting",
];

/// What [`host_next`] reads of a host.
#[derive(Debug, Clone, Copy)]
pub struct HostView<'a> {
    /// Its status.
    pub status: &'a str,
    /// `master` or `worker`.
    pub role: &'a str,
    /// Whether it is the bootstrap host.
    pub bootstrap: bool,
    /// The installation stage reached (`''`: none yet).
    pub stage: &'a str,
    /// Unix ms when that stage began (0: unknown).
    pub stage_started_at: i64,
    /// Unix ms of its last status change.
    pub status_updated_at: i64,
    /// Unix ms of its last poll.
    pub checked_in_at: i64,
}

/// The status a host of an installing cluster moves to, with its words,
/// or `None` to stay. `single`: a single node cluster; `cluster_status`:
/// the cluster's; `spare`: whether the cluster has enough hosts without
/// this one (a worker pending user action fails only then).
pub fn host_next(
    h: &HostView<'_>,
    cluster_status: &str,
    single: bool,
    spare: bool,
    now: i64,
) -> Option<(&'static str, String)> {
    let installing = matches!(
        h.status,
        "installing" | "installing-in-progress" | "installing-pending-user-action"
    );
    if !installing {
        return None;
    }
    if cluster_status == "error" {
        return Some((
            "error",
            "Host is part of a cluster that failed to install".into(),
        ));
    }
    match h.status {
        "installing" if now - h.status_updated_at > START_TIMEOUT_MS => Some((
            "error",
            "Host failed to install due to timeout while starting installation".into(),
        )),
        "installing-in-progress" => {
            let list = stages(h.role, h.bootstrap, single);
            let at = list.iter().position(|s| *s == h.stage);
            let rebooted = list.iter().position(|s| *s == "Rebooting");
            // Only before its reboot is a host expected to poll.
            let before_reboot = matches!((at, rebooted), (Some(a), Some(r)) if a < r);
            let allowance = DISCONNECTED_MS + if h.bootstrap { BOOTSTRAP_EXTRA_MS } else { 0 };
            if before_reboot && h.checked_in_at > 0 && now - h.checked_in_at > allowance {
                return Some((
                    "error",
                    "Host failed to install due to timeout while connecting to host".into(),
                ));
            }
            let started = h.stage_started_at.max(h.status_updated_at);
            let limit = stage_timeout_ms(h.stage, single);
            let paused = cluster_status == "installing-pending-user-action"
                && WAITING_STAGES.contains(&h.stage);
            if paused || now - started <= limit {
                return None;
            }
            let took = format!("{} minutes", limit / MIN);
            Some(match h.stage {
                "Rebooting" => (
                    "installing-pending-user-action",
                    "Host timed out when pulling the configuration files. Verify in the host console that the host boots from the OpenShift installation disk and has network access to the cluster API. The installation will resume once the host successfully boots and can access the cluster API".into(),
                ),
                "Writing image to disk" => (
                    "error",
                    format!("Host failed to install because writing the image to the installation disk took longer than expected ({took}): check the disk's speed and health"),
                ),
                stage => (
                    "error",
                    format!("Host failed to install because its installation stage {stage} took longer than expected ({took})"),
                ),
            })
        }
        "installing-pending-user-action"
            if h.role == "worker"
                && spare
                && now - h.status_updated_at > PENDING_USER_ACTION_TIMEOUT_MS =>
        {
            Some((
                "error",
                "Host did not boot from the installation disk within 60 minutes of the request to fix it; the cluster goes on without it".into(),
            ))
        }
        _ => None,
    }
}

/// Statuses in which a host still counts towards a working cluster.
pub const INSTALLING_ISH: &[&str] = &[
    "installing",
    "installing-in-progress",
    "installed",
    "installing-pending-user-action",
    "preparing-successful",
];

/// Whether the hosts (status, role) whose status is in `set` are enough
/// for the cluster: every master, and at least two workers when the
/// cluster has two or more (single node: its one master).
pub fn enough(hosts: &[(&str, &str)], set: &[&str]) -> bool {
    Tally::of(hosts, set).enough()
}

/// Masters and workers, and how many of each have a status in a set:
/// what [`enough`] decides on, counted once so that "enough without this
/// host" is a subtraction, not a recount per host.
#[derive(Debug, Clone, Copy, Default)]
struct Tally {
    masters: usize,
    workers: usize,
    masters_in: usize,
    workers_in: usize,
}

impl Tally {
    fn of(hosts: &[(&str, &str)], set: &[&str]) -> Tally {
        let mut t = Tally::default();
        for (s, r) in hosts {
            let inside = usize::from(set.contains(s));
            match *r {
                "master" => (t.masters, t.masters_in) = (t.masters + 1, t.masters_in + inside),
                "worker" => (t.workers, t.workers_in) = (t.workers + 1, t.workers_in + inside),
                _ => {}
            }
        }
        t
    }

    /// The tally without one host of it, (status, role).
    fn without(mut self, (s, r): (&str, &str), set: &[&str]) -> Tally {
        let inside = usize::from(set.contains(&s));
        match r {
            "master" => {
                (self.masters, self.masters_in) = (self.masters - 1, self.masters_in - inside)
            }
            "worker" => {
                (self.workers, self.workers_in) = (self.workers - 1, self.workers_in - inside)
            }
            _ => {}
        }
        self
    }

    fn enough(self) -> bool {
        self.masters > 0
            && self.masters_in == self.masters
            && (self.workers < 2 || self.workers_in >= 2)
    }
}

/// The status an installing cluster moves to, with its words, or `None`
/// to stay. `hosts`: each host's (status, role) after this pass;
/// `started_at`: when the install began, Unix ms.
pub fn cluster_next(
    status: &str,
    status_updated_at: i64,
    started_at: i64,
    hosts: &[(&str, &str)],
    now: i64,
) -> Option<(&'static str, String)> {
    match status {
        "installing" | "installing-pending-user-action" => {
            if started_at > 0 && now - started_at > CLUSTER_TIMEOUT_MS {
                return Some((
                    "error",
                    "Timeout while waiting for the cluster to install: 24 hours passed".into(),
                ));
            }
            if enough(hosts, &["installed"]) {
                return Some(("finalizing", "Finalizing cluster installation".into()));
            }
            if !enough(hosts, INSTALLING_ISH) {
                let failed = hosts.iter().filter(|(s, _)| *s == "error").count();
                return Some((
                    "error",
                    format!("Cluster has {failed} hosts in error: too few are left to install it"),
                ));
            }
            let pending = hosts
                .iter()
                .any(|(s, _)| *s == "installing-pending-user-action");
            match (status, pending) {
                ("installing", true) => Some((
                    "installing-pending-user-action",
                    "Cluster has hosts pending user action".into(),
                )),
                ("installing-pending-user-action", false) => {
                    Some(("installing", "Installation in progress".into()))
                }
                _ => None,
            }
        }
        "finalizing" if now - status_updated_at > FINALIZING_TIMEOUT_MS => Some((
            "error",
            "Timeout while waiting for the cluster to finalize: 5 hours passed".into(),
        )),
        _ => None,
    }
}

/// The columns [`pass`] reads of each host.
const COLS: &str = "id, infra_env_id, cluster_id, status, status_info, status_updated_at, role, \
     bootstrap, progress_stage, progress_info, progress_stage_started_at, checked_in_at";

/// One pass over an installing, pending or finalizing cluster: each
/// host's rule, then the cluster's, each change a conditional update with
/// an event.
///
/// Errors: the database's.
pub async fn pass(db: &Db, c: &ClusterRow, now: i64) -> Result<(), DbError> {
    let single = model::cluster_params(c).control_plane_count == 1;
    let mut hosts: Vec<HostRow> = Vec::new();
    db.each_host_of_cluster(&c.id, COLS, |h| hosts.push(h))
        .await?;
    let roles: Vec<(&str, &str)> = hosts
        .iter()
        .map(|h| (h.status.as_str(), h.role.as_str()))
        .collect();
    let tally = Tally::of(&roles, INSTALLING_ISH);
    let mut after: Vec<(String, String)> = Vec::with_capacity(hosts.len());
    for (i, h) in hosts.iter().enumerate() {
        let view = HostView {
            status: &h.status,
            role: &h.role,
            bootstrap: h.bootstrap,
            stage: &h.progress_stage,
            stage_started_at: h.progress_stage_started_at,
            status_updated_at: h.status_updated_at,
            checked_in_at: h.checked_in_at,
        };
        let spare = tally.without(roles[i], INSTALLING_ISH).enough();
        let mut status = h.status.clone();
        if let Some((to, info)) = host_next(&view, &c.status, single, spare, now)
            && db
                .set_host_progress(h, &h.status, to, &info, &h.progress_stage, &h.progress_info)
                .await?
        {
            events::emit(
                db,
                Scope {
                    cluster_id: &c.id,
                    infra_env_id: &h.infra_env_id,
                    host_id: &h.id,
                },
                if to == "error" { "error" } else { "warning" },
                "host_status_updated",
                format!(
                    "Host {}: updated status from {} to {to} ({info})",
                    h.id, h.status
                ),
            )
            .await;
            status = to.to_string();
        }
        after.push((status, h.role.clone()));
    }
    let now_hosts: Vec<(&str, &str)> = after
        .iter()
        .map(|(s, r)| (s.as_str(), r.as_str()))
        .collect();
    if let Some((to, info)) = cluster_next(
        &c.status,
        c.status_updated_at,
        c.install_started_at,
        &now_hosts,
        now,
    ) {
        events::cluster_status(db, &c.id, &c.status, to, &info, &c.validations_info).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: i64 = 1_800_000_000_000;

    fn host<'a>(status: &'a str, stage: &'a str) -> HostView<'a> {
        HostView {
            status,
            role: "master",
            bootstrap: false,
            stage,
            stage_started_at: T0,
            status_updated_at: T0,
            checked_in_at: T0,
        }
    }

    #[test]
    fn installing_without_progress_times_out_after_20_minutes() {
        let h = host("installing", "");
        assert_eq!(
            host_next(&h, "installing", false, true, T0 + 20 * MIN),
            None
        );
        let (to, info) = host_next(&h, "installing", false, true, T0 + 20 * MIN + 1).unwrap();
        assert_eq!(to, "error");
        assert!(info.contains("starting installation"), "{info}");
    }

    #[test]
    fn stage_timeouts() {
        // Writing the image: 30 min, with its own words.
        let mut h = host("installing-in-progress", "Writing image to disk");
        h.checked_in_at = T0 + 29 * MIN;
        assert_eq!(
            host_next(&h, "installing", false, true, T0 + 30 * MIN),
            None
        );
        let (to, info) = host_next(&h, "installing", false, true, T0 + 31 * MIN).unwrap();
        assert_eq!(to, "error");
        assert!(
            info.contains("writing the image") && info.contains("30 minutes"),
            "{info}"
        );
        // Rebooting: 40 min, then pending user action (no polls expected).
        let mut h = host("installing-in-progress", "Rebooting");
        h.checked_in_at = T0 - 30 * MIN;
        assert_eq!(
            host_next(&h, "installing", false, true, T0 + 39 * MIN),
            None
        );
        let (to, info) = host_next(&h, "installing", false, true, T0 + 41 * MIN).unwrap();
        assert_eq!(to, "installing-pending-user-action");
        assert!(
            info.contains("boots from the OpenShift installation disk"),
            "{info}"
        );
        // Single node: 80 min to reboot.
        assert_eq!(host_next(&h, "installing", true, true, T0 + 79 * MIN), None);
        // Paused while the cluster waits for another host.
        assert_eq!(
            host_next(
                &h,
                "installing-pending-user-action",
                false,
                true,
                T0 + 41 * MIN
            ),
            None
        );
        // Any other stage: 60 min.
        let mut h = host("installing-in-progress", "Configuring");
        h.checked_in_at = 0;
        let (to, info) = host_next(&h, "installing", false, true, T0 + 61 * MIN).unwrap();
        assert_eq!(to, "error");
        assert!(
            info.contains("stage Configuring") && info.contains("60 minutes"),
            "{info}"
        );
    }

    #[test]
    fn lost_connection_counts_only_before_the_reboot() {
        let h = host("installing-in-progress", "Installing");
        let (to, info) = host_next(&h, "installing", false, true, T0 + 3 * MIN + 1).unwrap();
        assert_eq!(to, "error");
        assert!(info.contains("connecting to host"), "{info}");
        // The bootstrap host gets two more minutes.
        let mut b = h;
        b.bootstrap = true;
        assert_eq!(host_next(&b, "installing", false, true, T0 + 4 * MIN), None);
        // After the reboot a host is silent.
        let h = host("installing-in-progress", "Configuring");
        assert_eq!(
            host_next(&h, "installing", false, true, T0 + 10 * MIN),
            None
        );
    }

    #[test]
    fn cluster_error_fails_its_installing_hosts() {
        let h = host("installing-in-progress", "Configuring");
        assert_eq!(host_next(&h, "error", false, true, T0).unwrap().0, "error");
        let done = host("installed", "Done");
        assert_eq!(host_next(&done, "error", false, true, T0), None);
    }

    #[test]
    fn pending_worker_fails_only_when_spare() {
        let mut h = host("installing-pending-user-action", "Rebooting");
        h.role = "worker";
        let late = T0 + 61 * MIN;
        assert_eq!(host_next(&h, "installing", false, false, late), None);
        assert_eq!(
            host_next(&h, "installing", false, true, late).unwrap().0,
            "error"
        );
        h.role = "master";
        assert_eq!(host_next(&h, "installing", false, true, late), None);
    }

    #[test]
    fn cluster_moves() {
        let m = |s| (s, "master");
        let w = |s| (s, "worker");
        let going = [
            m("installing-in-progress"),
            m("installed"),
            m("installed"),
            w("installing-in-progress"),
            w("installing-in-progress"),
        ];
        assert_eq!(cluster_next("installing", T0, T0, &going, T0), None);
        // Every master and two workers installed: finalizing.
        let done = [
            m("installed"),
            m("installed"),
            m("installed"),
            w("installed"),
            w("installed"),
            w("error"),
        ];
        assert_eq!(
            cluster_next("installing", T0, T0, &done, T0).unwrap().0,
            "finalizing"
        );
        // A master failed: error.
        let failed = [m("error"), m("installed"), m("installed")];
        let (to, info) = cluster_next("installing", T0, T0, &failed, T0).unwrap();
        assert_eq!(to, "error");
        assert!(info.contains("1 hosts in error"), "{info}");
        // A host waits for the user, and back.
        let pending = [
            m("installing-pending-user-action"),
            m("installed"),
            m("installed"),
        ];
        assert_eq!(
            cluster_next("installing", T0, T0, &pending, T0).unwrap().0,
            "installing-pending-user-action"
        );
        assert_eq!(
            cluster_next("installing-pending-user-action", T0, T0, &going, T0)
                .unwrap()
                .0,
            "installing"
        );
        // 24 hours, and 5 hours of finalizing.
        let late = T0 + CLUSTER_TIMEOUT_MS + 1;
        assert_eq!(
            cluster_next("installing", T0, T0, &going, late).unwrap().0,
            "error"
        );
        assert_eq!(
            cluster_next("finalizing", T0, T0, &done, T0 + 4 * 60 * MIN),
            None
        );
        let late = T0 + FINALIZING_TIMEOUT_MS + 1;
        assert_eq!(
            cluster_next("finalizing", T0, T0, &done, late).unwrap().0,
            "error"
        );
    }
}
