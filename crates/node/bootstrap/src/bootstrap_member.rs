//! The bootstrap etcd member's removal and what
//! `etcds.operator.openshift.io/cluster` says about etcd, for a payload
//! without cluster-etcd-operator (its bootstrap teardown controller,
//! `pkg/operator/bootstrapteardown`): [`remove_bootstrap_member`] once the
//! masters keep quorum without it, and the conditions `wait-for` and
//! `destroy bootstrap` read ([`set_etcd_condition`]).

use std::path::Path;

use kube::api::{Patch, PatchParams};
use tracing::info;

use crate::handover::{BOOTSTRAP_MEMBER, Keep, Member, can_remove_bootstrap};
use crate::masters::{Master, etcd_client};

/// The bootstrap member's removal (cluster-etcd-operator's bootstrap
/// teardown controller, done by the bootstrap itself for an upstream
/// payload): once [`can_remove_bootstrap`] allows it for `masters`,
/// `member remove etcd-bootstrap` (retried while etcd's strict
/// reconfiguration check refuses), then the condition
/// `EtcdBootstrapMemberRemoved=True` on `etcds.operator.openshift.io/cluster`
/// through `client`, where `wait-for bootstrap-complete` and `destroy
/// bootstrap` look. Logs why the member stays whenever that changes, and
/// returns only when the member is gone and the condition published.
pub async fn remove_bootstrap_member(
    work: &Path,
    masters: &[Master],
    client: kube::Client,
    every: std::time::Duration,
) {
    let mut last = String::new();
    let mut say = |s: String| {
        if s != last {
            info!("{s}");
            last = s;
        }
    };
    let etcd = match etcd_client(work, masters.iter().map(Master::client_url).collect()) {
        Ok(e) => e,
        Err(e) => {
            say(format!("cannot ask etcd: {e}"));
            return;
        }
    };
    loop {
        let outcome: Result<bool, String> = async {
            let judged = etcd.judged().await.map_err(|e| e.to_string())?;
            let members: Vec<Member> = judged.iter().map(|(_, j)| j.clone()).collect();
            match can_remove_bootstrap(&members, masters.len()) {
                Ok(()) => {
                    let id = judged
                        .iter()
                        .find(|(_, j)| j.name == BOOTSTRAP_MEMBER)
                        .map(|(m, _)| m.id)
                        .expect("can_remove_bootstrap saw it");
                    etcd.remove(id).await.map_err(|e| e.to_string())?;
                    info!("removed the bootstrap etcd member ({id:x}); the masters keep quorum");
                    Ok(true)
                }
                Err(Keep::AlreadyRemoved) => Ok(true),
                Err(k) => Err(k.to_string()),
            }
        }
        .await;
        match outcome {
            Ok(true) => match publish_removed(&client).await {
                Ok(()) => {
                    info!("etcds/cluster: EtcdBootstrapMemberRemoved=True");
                    return;
                }
                Err(e) => say(format!("publishing the removal: {e}; trying again")),
            },
            Ok(false) => {}
            Err(e) => say(format!("the bootstrap etcd member stays: {e}")),
        }
        tokio::time::sleep(every).await;
    }
}

/// The reason the condition carries (cluster-etcd-operator's
/// `BootstrapTeardownController` sets `EtcdBootstrapMemberRemoved` with
/// reason `BootstrapMemberRemoved`).
pub const REMOVED_REASON: &str = "BootstrapMemberRemoved";

async fn publish_removed(client: &kube::Client) -> Result<(), String> {
    set_etcd_condition(
        client,
        REMOVED_CONDITION,
        true,
        REMOVED_REASON,
        "the bootstrap etcd member was removed by the bootstrap node (upstream payload)",
    )
    .await
}

/// The condition `wait-for bootstrap-complete` and `destroy bootstrap`
/// wait for.
pub const REMOVED_CONDITION: &str = okd_cluster::openshift::BOOTSTRAP_MEMBER_REMOVED;

/// The condition whose message `wait-for`'s progress line shows for etcd
/// (cluster-etcd-operator sets it from its member health); here each
/// master's place in the handover.
pub const MEMBERS_CONDITION: &str = "EtcdMembersAvailable";

/// Sets condition `type_` on `etcds.operator.openshift.io/cluster`'s
/// status, keeping the other conditions (read, changed, written back as
/// a merge patch of the whole list); `lastTransitionTime` moves only when
/// the status changes.
///
/// # Errors
/// The object cannot be read or written (the message names it).
pub async fn set_etcd_condition(
    client: &kube::Client,
    type_: &str,
    status: bool,
    reason: &str,
    message: &str,
) -> Result<(), String> {
    let api = okd_cluster::openshift::etcds(client.clone());
    let what = "etcds.operator.openshift.io/cluster";
    let obj = api
        .get_opt("cluster")
        .await
        .map_err(|e| format!("{what}: {e}"))?
        .ok_or_else(|| format!("{what} does not exist yet"))?;
    let mut conditions: Vec<serde_json::Value> = obj
        .data
        .pointer("/status/conditions")
        .and_then(|c| c.as_array())
        .cloned()
        .unwrap_or_default();
    let status = if status { "True" } else { "False" };
    let now = k8s_openapi::jiff::Timestamp::now().to_string();
    let old = conditions.iter().position(|c| c["type"] == type_);
    let since = match old {
        Some(i) if conditions[i]["status"] == status => conditions[i]["lastTransitionTime"].clone(),
        _ => serde_json::Value::String(now),
    };
    let c = serde_json::json!({
        "type": type_,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": since,
    });
    match old {
        Some(i) => conditions[i] = c,
        None => conditions.push(c),
    }
    let patch = serde_json::json!({"status": {"conditions": conditions}});
    api.patch_status("cluster", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map(|_| ())
        .map_err(|e| format!("{what}: {e}"))
}
