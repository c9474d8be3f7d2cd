//! etcd and the control plane move to the masters when the release payload
//! has no operators to move them (a payload of upstream components; issue
//! #21 item 2). The bootstrap plays the parts of cluster-etcd-operator and
//! the control-plane operators' installer pods:
//!
//! 1. a master whose Node is Ready is added to etcd as a **learner**
//!    (`member add --learner`, its peer URL from the inventory; one learner
//!    at a time, as etcd allows), then handed its etcd member: serving and
//!    peer certificates signed by the bootstrap's etcd signer and the
//!    static pod with `--initial-cluster-state=existing` and the member
//!    list of the add (revision 1 of its [`Bundle`]);
//! 2. the learner is **promoted** once etcd says it is in sync (etcd
//!    refuses before: "can only promote a learner member which is in sync
//!    with leader"; retried on the next pass);
//! 3. a voting, healthy master gets its **control plane** (revision 2):
//!    kube-apiserver on the masters' etcd members, kube-controller-manager
//!    and kube-scheduler, with the install's certificates, as static pods
//!    whose mirror pods are what cluster-bootstrap's required-pods wait and
//!    HA checks look for.
//!
//! Bundles travel as one Secret per master, `kube-system/okd-control-plane-<node>`
//! ([`okd_types::control_plane`]), readable by that node's identity only
//! (a Role with the Secret's name and a RoleBinding to
//! `system:node:<node>`); `okd-install node control-plane` on the master
//! writes the files.
//!
//! Every pass starts from what etcd and the API say (the member list, the
//! Secrets), so a restarted program repeats no membership change: a member
//! with the master's peer URL is never added again, a voter never promoted
//! again, a delivered revision never rewritten. Removing the bootstrap
//! member is [`crate::bootstrap_member::remove_bootstrap_member`], after the
//! bootstrap is complete.

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{Node, Secret};
use k8s_openapi::api::rbac::v1::{PolicyRule, Role, RoleBinding, RoleRef, Subject};
use kube::api::{Api, ObjectMeta, Patch, PatchParams};
use okd_bootstrap_render::control_plane::{self, MASTER_SECRETS, Placement};
use okd_bootstrap_render::{Networks, etcd};
use okd_types::control_plane::{BUNDLE_KEY, Bundle, BundleFile, NAMESPACE, secret_name};
use okd_types::node_identities::{NODE_IDENTITIES_FILE, NodeIdentities};
use tracing::{info, warn};

use crate::bootstrap_member::{MEMBERS_CONDITION, set_etcd_condition};
use crate::members::{EtcdMember, Members};

/// One master of the install.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Master {
    /// Its node name (the inventory's host name, lower case).
    pub name: String,
    /// Its address: etcd's peer and client URLs, the API's advertise
    /// address.
    pub ip: IpAddr,
}

impl Master {
    /// `https://<ip>:2380`.
    pub fn peer_url(&self) -> String {
        etcd::url(self.ip, etcd::PEER_PORT)
    }

    /// `https://<ip>:2379`.
    pub fn client_url(&self) -> String {
        etcd::url(self.ip, etcd::CLIENT_PORT)
    }
}

/// The masters bootstrap.ign names (`okd-node-identities.json`, the
/// entries marked `master`), in the inventory's order.
///
/// # Errors
/// The file is missing or unreadable, names no master, or a master has no
/// name or address; the message says where the masters come from.
pub fn expected_masters(work: &Path) -> Result<Vec<Master>, String> {
    let path = work.join(NODE_IDENTITIES_FILE);
    let text = std::fs::read_to_string(&path).map_err(|e| {
        format!(
            "{}: {e}: the bootstrap hands etcd and the control plane to the masters the inventory names (agent-config.yaml or bastion-config.yaml before `create ignition-configs`)",
            path.display()
        )
    })?;
    let ids: NodeIdentities = serde_json::from_str(&text)
        .map_err(|e| format!("{}: not a node identities file: {e}", path.display()))?;
    let mut out = Vec::new();
    for n in ids.nodes.iter().filter(|n| n.master) {
        let (Some(name), Some(ip)) = (n.names.first(), n.addresses.first()) else {
            return Err(format!(
                "{}: a master without a name or an address: {n:?}",
                path.display()
            ));
        };
        out.push(Master {
            name: name.clone(),
            ip: *ip,
        });
    }
    if out.is_empty() {
        return Err(format!(
            "{}: names no master: the inventory's control-plane hosts are needed to move etcd off the bootstrap",
            path.display()
        ));
    }
    Ok(out)
}

/// Where one master stands, as one pass found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MasterState {
    /// Its Node is not Ready yet (or not registered).
    WaitingForNode,
    /// Another master is a learner; etcd takes one at a time.
    WaitingForTurn,
    /// Added as a learner, its etcd handed over; not in sync yet.
    Learner,
    /// A voting member, not answering yet.
    VoterUnhealthy,
    /// A healthy voter with its control plane handed over.
    Done,
}

impl std::fmt::Display for MasterState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            MasterState::WaitingForNode => "waiting for its Node to be Ready",
            MasterState::WaitingForTurn => "waiting for the learner before it to be promoted",
            MasterState::Learner => "etcd learner, catching up",
            MasterState::VoterUnhealthy => "voting etcd member, not answering yet",
            MasterState::Done => "voting etcd member, control plane handed over",
        })
    }
}

/// What the bootstrap hands the masters, and through what.
pub struct Handover {
    work: PathBuf,
    masters: Vec<Master>,
    client: kube::Client,
    etcd: Members,
    etcd_image: String,
    hyperkube_image: String,
    networks: Networks,
}

/// A Secret's data as plain bytes by key.
pub fn secret_data(s: &Secret) -> Option<std::collections::BTreeMap<String, Vec<u8>>> {
    s.data
        .as_ref()
        .map(|d| d.iter().map(|(k, v)| (k.clone(), v.0.clone())).collect())
}

/// The etcd endpoints to ask: the bootstrap member, then the masters.
fn endpoints(masters: &[Master]) -> Vec<String> {
    let mut e = vec![format!("https://localhost:{}", etcd::CLIENT_PORT)];
    e.extend(masters.iter().map(Master::client_url));
    e
}

/// The etcd client of the bootstrap's asset directory (`tls/etcd-ca-bundle.crt`,
/// `tls/etcd-client.*`) for `endpoints`.
///
/// # Errors
/// The certificates cannot be read.
pub fn etcd_client(work: &Path, endpoints: Vec<String>) -> Result<Members, String> {
    let tls = work.join("tls");
    let http = crate::checks::client(
        &tls.join("etcd-ca-bundle.crt"),
        Some((&tls.join("etcd-client.crt"), &tls.join("etcd-client.key"))),
    )?;
    Ok(Members::new(http, endpoints))
}

impl Handover {
    /// The handover of `work` (`/opt/openshift`) for `masters`, through
    /// `client` (the API) and the release's `etcd` and `hyperkube` images.
    ///
    /// # Errors
    /// The etcd client certificates or the Network manifest cannot be read.
    pub fn new(
        work: &Path,
        masters: Vec<Master>,
        client: kube::Client,
        etcd_image: &str,
        hyperkube_image: &str,
    ) -> Result<Handover, String> {
        Ok(Handover {
            work: work.to_path_buf(),
            etcd: etcd_client(work, endpoints(&masters))?,
            masters,
            client,
            etcd_image: etcd_image.to_string(),
            hyperkube_image: hyperkube_image.to_string(),
            networks: Networks::read(work).map_err(|e| e.to_string())?,
        })
    }

    /// The masters.
    pub fn masters(&self) -> &[Master] {
        &self.masters
    }

    async fn node_ready(&self, name: &str) -> Result<bool, String> {
        let nodes: Api<Node> = Api::all(self.client.clone());
        match nodes.get_opt(name).await {
            Ok(Some(n)) => Ok(n
                .status
                .and_then(|s| s.conditions)
                .unwrap_or_default()
                .iter()
                .any(|c| c.type_ == "Ready" && c.status == "True")),
            Ok(None) => Ok(false),
            Err(e) => Err(format!("reading Node {name}: {e}")),
        }
    }

    async fn bundle(&self, node: &str) -> Result<Option<Bundle>, String> {
        let secrets: Api<Secret> = Api::namespaced(self.client.clone(), NAMESPACE);
        let name = secret_name(node);
        let Some(s) = secrets
            .get_opt(&name)
            .await
            .map_err(|e| format!("reading Secret {NAMESPACE}/{name}: {e}"))?
        else {
            return Ok(None);
        };
        Bundle::from_secret_data(&name, secret_data(&s).as_ref()).map(Some)
    }

    /// Writes `bundle` into the master's Secret (created, or replaced by a
    /// server-side apply) and lets the master's node identity read it.
    async fn deliver(&self, bundle: &Bundle) -> Result<(), String> {
        let name = secret_name(&bundle.node);
        let user = format!("system:node:{}", bundle.node);
        let meta = |n: &str| ObjectMeta {
            name: Some(n.to_string()),
            namespace: Some(NAMESPACE.into()),
            labels: Some([("okd-install/control-plane".to_string(), bundle.node.clone())].into()),
            ..Default::default()
        };
        let json = serde_json::to_vec(bundle).map_err(|e| e.to_string())?;
        let secret = Secret {
            metadata: meta(&name),
            type_: Some("Opaque".into()),
            data: Some([(BUNDLE_KEY.to_string(), ByteString(json))].into()),
            ..Default::default()
        };
        let role = Role {
            metadata: meta(&name),
            rules: Some(vec![PolicyRule {
                api_groups: Some(vec![String::new()]),
                resources: Some(vec!["secrets".into()]),
                resource_names: Some(vec![name.clone()]),
                verbs: vec!["get".into(), "watch".into(), "list".into()],
                ..Default::default()
            }]),
        };
        let binding = RoleBinding {
            metadata: meta(&name),
            role_ref: RoleRef {
                api_group: "rbac.authorization.k8s.io".into(),
                kind: "Role".into(),
                name: name.clone(),
            },
            subjects: Some(vec![Subject {
                api_group: Some("rbac.authorization.k8s.io".into()),
                kind: "User".into(),
                name: user,
                ..Default::default()
            }]),
        };
        let pp = PatchParams::apply("okd-install-bootstrap").force();
        let c = &self.client;
        Api::<Role>::namespaced(c.clone(), NAMESPACE)
            .patch(&name, &pp, &Patch::Apply(&role))
            .await
            .map_err(|e| format!("Role {NAMESPACE}/{name}: {e}"))?;
        Api::<RoleBinding>::namespaced(c.clone(), NAMESPACE)
            .patch(&name, &pp, &Patch::Apply(&binding))
            .await
            .map_err(|e| format!("RoleBinding {NAMESPACE}/{name}: {e}"))?;
        Api::<Secret>::namespaced(c.clone(), NAMESPACE)
            .patch(&name, &pp, &Patch::Apply(&secret))
            .await
            .map_err(|e| format!("Secret {NAMESPACE}/{name}: {e}"))?;
        info!(
            "handed master {} revision {} of its control plane ({} files, Secret {NAMESPACE}/{name})",
            bundle.node,
            bundle.revision,
            bundle.files.len()
        );
        Ok(())
    }

    /// Revision 1 for `m`: its etcd certificates and member pod for the
    /// cluster `members` (the list right after its add).
    fn etcd_bundle(&self, m: &Master, members: &[EtcdMember]) -> Result<Bundle, String> {
        let tls = self.work.join("tls");
        let read = |n: &str| {
            std::fs::read_to_string(tls.join(n))
                .map_err(|e| format!("{}: {e}", tls.join(n).display()))
        };
        let signer =
            okd_pki::CertKey::from_pem(&read("etcd-signer.crt")?, &read("etcd-signer.key")?)
                .map_err(|e| format!("the etcd signer ({}): {e}", tls.display()))?;
        let (serving, peer) =
            etcd::member_certs(&signer, &m.name, m.ip).map_err(|e| e.to_string())?;
        let initial: Vec<String> = members
            .iter()
            .filter_map(|mem| {
                let url = mem.peer_urls.first()?;
                let name = if !mem.name.is_empty() {
                    mem.name.clone()
                } else {
                    self.masters
                        .iter()
                        .find(|x| &x.peer_url() == url)
                        .map(|x| x.name.clone())
                        .unwrap_or_else(|| format!("member-{:x}", mem.id))
                };
                Some(format!("{name}={url}"))
            })
            .collect();
        let pod = etcd::member_pod(
            &self.etcd_image,
            &m.name,
            m.ip,
            &initial.join(","),
            "existing",
        );
        let res = format!("/etc/kubernetes/{}", etcd::RESOURCES);
        let yaml = serde_yaml_ng::to_string(&pod).map_err(|e| e.to_string())?;
        Ok(Bundle {
            revision: 1,
            node: m.name.clone(),
            files: vec![
                BundleFile::new(format!("{res}/ca.crt"), 0o644, signer.cert.pem.as_bytes()),
                BundleFile::new(
                    format!("{res}/etcd-serving.crt"),
                    0o644,
                    serving.cert.pem.as_bytes(),
                ),
                BundleFile::new(
                    format!("{res}/etcd-serving.key"),
                    0o600,
                    serving.key.private_pem().as_bytes(),
                ),
                BundleFile::new(
                    format!("{res}/etcd-peer.crt"),
                    0o644,
                    peer.cert.pem.as_bytes(),
                ),
                BundleFile::new(
                    format!("{res}/etcd-peer.key"),
                    0o600,
                    peer.key.private_pem().as_bytes(),
                ),
                BundleFile::new(
                    format!("/etc/kubernetes/{}", etcd::POD_FILE),
                    0o644,
                    yaml.as_bytes(),
                ),
            ],
        })
    }

    /// Revision 2: `rev1`'s files, then the control plane's secrets and
    /// its three static pods on the masters' etcd members.
    fn control_plane_bundle(&self, m: &Master, rev1: &Bundle) -> Result<Bundle, String> {
        let placement = Placement {
            secrets_dir: MASTER_SECRETS.to_string(),
            etcd_servers: self.masters.iter().map(Master::client_url).collect(),
            advertise: m.ip,
        };
        let (pods, files) =
            control_plane::master_pods(&self.hyperkube_image, &placement, &self.networks);
        let mut out = rev1.files.clone();
        for f in files {
            // The loopback kubeconfig is `auth/kubeconfig-loopback`, as
            // cluster-bootstrap copies it to `bootstrap-secrets/kubeconfig`.
            let src = if f == "kubeconfig" {
                self.work.join("auth/kubeconfig-loopback")
            } else {
                self.work.join("tls").join(&f)
            };
            let data = std::fs::read(&src).map_err(|e| format!("{}: {e}", src.display()))?;
            let secret = f.ends_with(".key") || f == "kubeconfig";
            out.push(BundleFile::new(
                format!("{MASTER_SECRETS}/{f}"),
                if secret { 0o600 } else { 0o644 },
                &data,
            ));
        }
        for (file, pod) in pods {
            let yaml = serde_yaml_ng::to_string(&pod).map_err(|e| e.to_string())?;
            out.push(BundleFile::new(
                format!("/etc/kubernetes/manifests/{file}"),
                0o644,
                yaml.as_bytes(),
            ));
        }
        Ok(Bundle {
            revision: 2,
            node: m.name.clone(),
            files: out,
        })
    }

    /// One pass over the masters, in order: each one's next step (add,
    /// hand over, promote, hand over the control plane), at most one
    /// membership change per pass. Returns each master's state.
    ///
    /// # Errors
    /// etcd or the API cannot be read, or a change fails (the next pass
    /// tries again from what they show).
    pub async fn step(&self) -> Result<Vec<(String, MasterState)>, String> {
        let mut states = Vec::new();
        let mut changed = false;
        let mut list = self.etcd.list().await.map_err(|e| e.to_string())?;
        // A learner is promoted first, through etcd alone: until it is, the
        // masters' API servers (whose etcd servers include its client URL)
        // answer some reads with "rpc not supported for learner", and a
        // pass that read the API first could fail on every try and never
        // reach the promotion (seen after a learner's node was switched
        // off and on again while the bootstrap's control plane was gone).
        if let Some(mem) = list.iter().find(|x| {
            x.is_learner
                && self
                    .masters
                    .iter()
                    .any(|m| x.peer_urls.iter().any(|u| *u == m.peer_url()))
        }) {
            match self.etcd.promote(mem.id).await {
                Ok(()) => {
                    let name = self
                        .masters
                        .iter()
                        .find(|m| mem.peer_urls.iter().any(|u| *u == m.peer_url()))
                        .map_or("?", |m| m.name.as_str());
                    info!("promoted master {name} to a voting etcd member");
                    changed = true;
                    list = self.etcd.list().await.map_err(|e| e.to_string())?;
                }
                Err(e) => tracing::debug!("learner {:x} not promoted yet ({e})", mem.id),
            }
        }
        let learner_pending = |list: &[EtcdMember]| list.iter().any(|x| x.is_learner);
        for m in &self.masters {
            let member = list
                .iter()
                .find(|x| x.peer_urls.iter().any(|u| *u == m.peer_url()))
                .cloned();
            let state = match member {
                None if changed => MasterState::WaitingForTurn,
                None => {
                    if !self.node_ready(&m.name).await? {
                        MasterState::WaitingForNode
                    } else if learner_pending(&list) {
                        MasterState::WaitingForTurn
                    } else {
                        let (id, after) =
                            self.etcd.add_learner(&m.peer_url()).await.map_err(|e| {
                                format!("adding {} as an etcd learner: {e}", m.name)
                            })?;
                        info!(
                            "added master {} to etcd as learner {id:x} ({})",
                            m.name,
                            m.peer_url()
                        );
                        changed = true;
                        let b = self.etcd_bundle(m, &after)?;
                        self.deliver(&b).await?;
                        MasterState::Learner
                    }
                }
                Some(mem) => {
                    let bundle = self.bundle(&m.name).await?;
                    let rev1 = match bundle {
                        Some(b) => b,
                        None => {
                            // Added, but the program stopped before the
                            // hand-over: the member list now is the one of
                            // the add (one learner at a time).
                            info!(
                                "master {} is in etcd as member {:x} (added by an earlier run that stopped before handing it over): handing it its member now",
                                m.name, mem.id
                            );
                            let b = self.etcd_bundle(m, &list)?;
                            self.deliver(&b).await?;
                            b
                        }
                    };
                    if mem.is_learner {
                        // Promotion was tried at the top of the pass.
                        MasterState::Learner
                    } else if !self.etcd.healthy(&mem).await {
                        MasterState::VoterUnhealthy
                    } else {
                        if rev1.revision < 2 {
                            let b = self.control_plane_bundle(m, &rev1)?;
                            self.deliver(&b).await?;
                        }
                        MasterState::Done
                    }
                }
            };
            states.push((m.name.clone(), state));
        }
        Ok(states)
    }

    /// Runs [`Handover::step`] every `every` until every master is
    /// [`MasterState::Done`], logging each master's state when it changes
    /// and a failed pass's reason when it changes.
    pub async fn run(&self, every: std::time::Duration) {
        let mut last: Vec<(String, MasterState)> = Vec::new();
        let mut last_err = String::new();
        loop {
            match self.step().await {
                Ok(states) => {
                    for s in &states {
                        if !last.contains(s) {
                            info!("master {}: {}", s.0, s.1);
                        }
                    }
                    let done = states.iter().all(|(_, s)| *s == MasterState::Done);
                    if states != last {
                        // Where wait-for's progress line looks (the etcd
                        // operator's EtcdMembersAvailable condition).
                        let message = states
                            .iter()
                            .map(|(n, st)| format!("{n}: {st}"))
                            .collect::<Vec<_>>()
                            .join("; ");
                        let (status, reason) = if done {
                            (true, "AsExpected")
                        } else {
                            (false, "HandoverInProgress")
                        };
                        if let Err(e) = set_etcd_condition(
                            &self.client,
                            MEMBERS_CONDITION,
                            status,
                            reason,
                            &message,
                        )
                        .await
                        {
                            tracing::debug!("publishing the handover's progress: {e}");
                        }
                    }
                    last = states;
                    last_err.clear();
                    if done {
                        info!("etcd and the control plane run on every master");
                        return;
                    }
                }
                Err(e) => {
                    if e != last_err {
                        info!("handing over to the masters: {e}; trying again");
                        last_err = e;
                    }
                }
            }
            tokio::time::sleep(every).await;
        }
    }
}

/// The unit a master's machine config carries for an upstream payload:
/// runs `okd-install node control-plane` once the kubelet runs, again
/// after a failure, until the control plane is in place.
pub const CONTROL_PLANE_UNIT: &str = "okd-control-plane.service";

/// The MachineConfig the bootstrap's machine-config server adds to the
/// `master` pool for an upstream payload (rendered in memory only, never
/// created in the cluster): `/usr/local/bin/okd-install` fetched from
/// `program_url` (the bootstrap's own program at
/// [`okd_mcs::NODE_PROGRAM_ROUTE`] on 22623, which the pointer config's
/// root CA already trusts) and checked by Ignition against `sha512_hex`,
/// and [`CONTROL_PLANE_UNIT`].
pub fn node_program_machine_config(program_url: &str, sha512_hex: &str) -> serde_json::Value {
    let unit = format!(
        "[Unit]\nDescription=okd-install: this master's etcd member and control plane, from the bootstrap\nWants=kubelet.service\nAfter=kubelet.service\n\n[Service]\nExecStart={} node control-plane\nRestart=on-failure\nRestartSec=10\n\n[Install]\nWantedBy=multi-user.target\n",
        okd_types::control_plane::NODE_PROGRAM_PATH
    );
    serde_json::json!({
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineConfig",
        "metadata": {
            "name": "99-master-okd-control-plane",
            "labels": {"machineconfiguration.openshift.io/role": "master"},
        },
        "spec": {"config": {
            "ignition": {"version": "3.2.0"},
            "storage": {"files": [{
                "path": okd_types::control_plane::NODE_PROGRAM_PATH,
                "mode": 0o755,
                "overwrite": true,
                "contents": {
                    "source": program_url,
                    "verification": {"hash": format!("sha512-{sha512_hex}")},
                },
            }]},
            "systemd": {"units": [{
                "name": CONTROL_PLANE_UNIT,
                "enabled": true,
                "contents": unit,
            }]},
        }},
    })
}

/// Where [`program_sha512`] keeps the program's hash between bootkube
/// runs, under the asset directory.
pub const PROGRAM_SHA512_CACHE: &str = ".okd-install-program.sha512";

/// The sha512 (hex) of `program`, the okd-install the masters get: read
/// from `cache` when it was written for a file of the same length and
/// modification time, else computed and written there (a debug build's
/// program takes seconds to hash; bootkube may start many times).
///
/// # Errors
/// The program cannot be read (the message names it).
pub fn program_sha512(program: &Path, cache: &Path) -> Result<String, String> {
    use sha2::Digest as _;
    let meta = std::fs::metadata(program).map_err(|e| format!("{}: {e}", program.display()))?;
    let stamp = format!(
        "{} {}",
        meta.len(),
        meta.modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos())
    );
    if let Ok(text) = std::fs::read_to_string(cache)
        && let Some((s, hex)) = text.trim().rsplit_once(' ')
        && s == stamp
        && hex.len() == 128
    {
        return Ok(hex.to_string());
    }
    let mut f = std::fs::File::open(program).map_err(|e| format!("{}: {e}", program.display()))?;
    let mut h = sha2::Sha512::new();
    std::io::copy(&mut f, &mut h).map_err(|e| format!("{}: {e}", program.display()))?;
    let hex: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
    if let Err(e) = okd_fs::write_atomic(cache, format!("{stamp} {hex}\n").as_bytes(), 0o644) {
        warn!("cannot keep the program's hash in {}: {e}", cache.display());
    }
    Ok(hex)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_program_hash_is_kept_for_the_same_file_and_made_again_for_another() {
        use sha2::Digest as _;
        let d = tempfile::tempdir().unwrap();
        let prog = d.path().join("okd-install");
        let cache = d.path().join(PROGRAM_SHA512_CACHE);
        std::fs::write(&prog, b"first program").unwrap();
        let hex = |b: &[u8]| -> String {
            sha2::Sha512::digest(b)
                .iter()
                .map(|x| format!("{x:02x}"))
                .collect()
        };
        assert_eq!(
            program_sha512(&prog, &cache).unwrap(),
            hex(b"first program")
        );
        assert!(
            std::fs::read_to_string(&cache)
                .unwrap()
                .contains(&hex(b"first program"))
        );
        // Kept: a cache naming this file's length and time is believed.
        let stamp = std::fs::read_to_string(&cache).unwrap();
        let (s, _) = stamp.trim().rsplit_once(' ').unwrap();
        let fake = "ab".repeat(64);
        std::fs::write(&cache, format!("{s} {fake}\n")).unwrap();
        assert_eq!(program_sha512(&prog, &cache).unwrap(), fake);
        // Another program (another length): hashed again.
        std::fs::write(&prog, b"the second, longer program").unwrap();
        assert_eq!(
            program_sha512(&prog, &cache).unwrap(),
            hex(b"the second, longer program")
        );
        let e = program_sha512(&d.path().join("missing"), &cache).unwrap_err();
        assert!(e.contains("missing"), "{e}");
    }

    #[test]
    fn the_masters_come_from_the_node_identities_marked_master() {
        let d = tempfile::tempdir().unwrap();
        let e = expected_masters(d.path()).unwrap_err();
        assert!(
            e.contains(NODE_IDENTITIES_FILE) && e.contains("agent-config.yaml"),
            "{e}"
        );
        std::fs::write(
            d.path().join(NODE_IDENTITIES_FILE),
            r#"{"nodes":[
                {"names":["m0","m0.okd.example"],"addresses":["10.0.0.3"],"master":true},
                {"names":["w0"],"addresses":["10.0.0.5"]},
                {"names":["m1"],"addresses":["fd00::4"],"master":true}]}"#,
        )
        .unwrap();
        let ms = expected_masters(d.path()).unwrap();
        assert_eq!(
            ms,
            [
                Master {
                    name: "m0".into(),
                    ip: "10.0.0.3".parse().unwrap()
                },
                Master {
                    name: "m1".into(),
                    ip: "fd00::4".parse().unwrap()
                },
            ]
        );
        assert_eq!(ms[0].peer_url(), "https://10.0.0.3:2380");
        assert_eq!(ms[1].client_url(), "https://[fd00::4]:2379");
        assert_eq!(
            endpoints(&ms),
            [
                "https://localhost:2379",
                "https://10.0.0.3:2379",
                "https://[fd00::4]:2379"
            ]
        );
        // An inventory of an older build (no master marks) names none.
        std::fs::write(
            d.path().join(NODE_IDENTITIES_FILE),
            r#"{"nodes":[{"names":["m0"],"addresses":["10.0.0.3"]}]}"#,
        )
        .unwrap();
        assert!(
            expected_masters(d.path())
                .unwrap_err()
                .contains("names no master")
        );
    }

    #[test]
    fn the_master_config_fetches_the_program_by_hash_and_enables_its_unit() {
        let mc =
            node_program_machine_config("https://api-int.x:22623/okd-install/node-program", "ab12");
        assert_eq!(
            mc["metadata"]["labels"]["machineconfiguration.openshift.io/role"],
            "master"
        );
        let f = &mc["spec"]["config"]["storage"]["files"][0];
        assert_eq!(f["path"], "/usr/local/bin/okd-install");
        assert_eq!(f["mode"], 0o755);
        assert_eq!(f["contents"]["verification"]["hash"], "sha512-ab12");
        assert_eq!(
            f["contents"]["source"],
            "https://api-int.x:22623/okd-install/node-program"
        );
        let u = &mc["spec"]["config"]["systemd"]["units"][0];
        assert_eq!(u["name"], CONTROL_PLANE_UNIT);
        assert_eq!(u["enabled"], true);
        assert!(
            u["contents"]
                .as_str()
                .unwrap()
                .contains("ExecStart=/usr/local/bin/okd-install node control-plane")
        );
    }
}
