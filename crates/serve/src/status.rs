//! What each host fetched and when: the answer to "which node got its config?".
//!
//! Every service reports events here (DNS answers, Ignition served with its
//! spec version, HTTP files and PXE scripts, load-balancer connections);
//! events are attributed to hosts by source address through the inventory.
//! Connections that reach the machine-config server through our load balancer
//! arrive from the balancer's own address, so the balancer reports each
//! proxied connection's upstream local address and the original client,
//! and [`Status::client_of`] maps one to the other.

use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, SocketAddr};
use std::num::NonZeroUsize;
use std::sync::Mutex;

use lru::LruCache;
use okd_hosts::Inventory;
use serde::Serialize;
use serde_json::{Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// Most recent events kept per inventory host and kind.
const KEEP: usize = 50;
/// Most recent events kept per unknown client and kind.
const KEEP_UNKNOWN: usize = 8;
/// Unknown clients remembered (least recently heard from dropped first), so
/// a flood from spoofed source addresses cannot grow the store.
const UNKNOWN_CLIENTS: usize = 1024;
/// Proxied connections remembered (balancer-side address → client).
const PROXIED: usize = 4096;

fn now() -> String {
    OffsetDateTime::now_utc()
        .format(&Rfc3339)
        .unwrap_or_default()
}

#[derive(Debug, Default, Clone, Serialize)]
struct HostEvents {
    dns: VecDeque<Value>,
    ignition: VecDeque<Value>,
    http: VecDeque<Value>,
}

/// Which queue of a host an event goes to.
#[derive(Clone, Copy)]
enum Kind {
    Dns,
    Ignition,
    Http,
}

impl HostEvents {
    fn push(&mut self, kind: Kind, v: Value, keep: usize) {
        let q = match kind {
            Kind::Dns => &mut self.dns,
            Kind::Ignition => &mut self.ignition,
            Kind::Http => &mut self.http,
        };
        while q.len() >= keep {
            q.pop_front();
        }
        q.push_back(v);
    }
}

/// Events by client: one slot per inventory address, and a bounded LRU of
/// the others.
struct Events {
    known: HashMap<IpAddr, HostEvents>,
    unknown: LruCache<IpAddr, HostEvents>,
}

/// The shared event store of one `serve` process. Its memory is bounded:
/// [`KEEP`] events per kind for each inventory host, [`KEEP_UNKNOWN`] for
/// each of at most [`UNKNOWN_CLIENTS`] other clients.
pub(crate) struct Status {
    inv: Inventory,
    started: String,
    events: Mutex<Events>,
    /// Upstream local address of a proxied connection → original client.
    proxied: Mutex<LruCache<SocketAddr, SocketAddr>>,
    /// What the cluster says (see [`crate::cluster`]).
    cluster: Mutex<Value>,
    /// The first of bootstrap.ign's 24-hour certificates to expire.
    certs: Value,
    /// When `remove-bootstrap` took the bootstrap out of the load balancer,
    /// and its backends just before (see [`Status::bootstrap_removed`]).
    bootstrap_removed: Mutex<Value>,
}

fn cap(n: usize) -> NonZeroUsize {
    NonZeroUsize::new(n).unwrap_or(NonZeroUsize::MIN)
}

impl Status {
    pub(crate) fn new(inv: Inventory) -> Status {
        let known = inv
            .nodes
            .iter()
            .map(|n| (n.address, HostEvents::default()))
            .collect();
        Status {
            inv,
            started: now(),
            events: Mutex::new(Events {
                known,
                unknown: LruCache::new(cap(UNKNOWN_CLIENTS)),
            }),
            proxied: Mutex::new(LruCache::new(cap(PROXIED))),
            cluster: Mutex::new(
                json!({"available": false, "error": "not read yet (serve connects with auth/kubeconfig)"}),
            ),
            certs: Value::Null,
            bootstrap_removed: Mutex::new(Value::Null),
        }
    }

    /// Sets the certificate expiry shown (see [`crate::dashboard::short_lived`]).
    pub(crate) fn with_certs(mut self, certs: Value) -> Status {
        self.certs = certs;
        self
    }

    /// Replaces the cluster view (CSRs, nodes, operators, or why not).
    pub(crate) fn set_cluster(&self, v: Value) {
        if let Ok(mut c) = self.cluster.lock() {
            *c = v;
        }
    }

    /// Records that `remove-bootstrap` took the bootstrap host out of the
    /// load balancer: `frontends` are the load balancer's frontends just
    /// before, each with only the bootstrap's backends (the shape of
    /// `loadBalancer.frontends`). Only the first removal is kept (a second
    /// `remove-bootstrap` finds nothing to remove).
    pub(crate) fn bootstrap_removed(&self, frontends: Value) {
        if let Ok(mut r) = self.bootstrap_removed.lock()
            && r.is_null()
        {
            *r = json!({"time": now(), "frontends": frontends});
        }
    }

    /// Records a removal of the bootstrap that an earlier serve recorded in
    /// the asset directory at `time` (RFC 3339); its backends were never
    /// balanced by this serve.
    pub(crate) fn bootstrap_removed_before(&self, time: &str) {
        if let Ok(mut r) = self.bootstrap_removed.lock()
            && r.is_null()
        {
            *r = json!({"time": time, "frontends": [], "earlier": true});
        }
    }

    fn record(&self, ip: IpAddr, kind: Kind, v: Value) {
        let ip = ip.to_canonical();
        let Ok(mut m) = self.events.lock() else {
            return;
        };
        if let Some(h) = m.known.get_mut(&ip) {
            h.push(kind, v, KEEP);
        } else {
            m.unknown
                .get_or_insert_mut(ip, HostEvents::default)
                .push(kind, v, KEEP_UNKNOWN);
        }
    }

    /// Records that the balancer proxied `client` through local address `upstream_local`.
    pub(crate) fn proxied(&self, client: SocketAddr, upstream_local: SocketAddr) {
        if let Ok(mut m) = self.proxied.lock() {
            m.put(upstream_local, client);
        }
    }

    /// The original client of a connection that may have come through the balancer.
    pub(crate) fn client_of(&self, peer: SocketAddr) -> SocketAddr {
        self.proxied
            .lock()
            .ok()
            .and_then(|mut m| m.get(&peer).copied())
            .unwrap_or(peer)
    }

    /// A DNS query and its answers.
    pub(crate) fn dns(&self, client: SocketAddr, name: &str, qtype: &str, answers: &[String]) {
        let v = json!({"time": now(), "name": name, "type": qtype, "answers": answers});
        self.record(client.ip(), Kind::Dns, v);
    }

    /// A machine-config server response.
    pub(crate) fn ignition(&self, peer: SocketAddr, pool: &str, spec: &str, status: u16) {
        let client = self.client_of(peer);
        let v = json!({"time": now(), "pool": pool, "spec": spec, "status": status});
        self.record(client.ip(), Kind::Ignition, v);
    }

    /// An HTTP response of the file/PXE server, when its body ended:
    /// `bytes` octets went out of `size` announced, `complete` when all did.
    pub(crate) fn http(
        &self,
        peer: SocketAddr,
        path: &str,
        status: u16,
        bytes: u64,
        size: Option<u64>,
        complete: bool,
    ) {
        let v = json!({"time": now(), "path": path, "status": status, "bytes": bytes, "size": size, "complete": complete});
        self.record(peer.ip(), Kind::Http, v);
    }

    /// How many clients outside the inventory are remembered (at most [`UNKNOWN_CLIENTS`]).
    pub(crate) fn unknown_clients(&self) -> usize {
        self.events.lock().map(|m| m.unknown.len()).unwrap_or(0)
    }

    /// The status document: every inventory host (also those not heard from),
    /// unknown clients (most recent first), and the load balancer's snapshot.
    /// It names no MAC address and no token: `/status` and the page are
    /// unauthenticated, and the PXE routes answer by MAC.
    /// Built under the lock, without copying the store first.
    pub(crate) fn json(&self, lb: Value) -> Value {
        let empty = HostEvents::default();
        let (hosts, unknown) = match self.events.lock() {
            Ok(m) => {
                let hosts: Vec<Value> = self
                    .inv
                    .nodes
                    .iter()
                    .map(|n| {
                        let e = m.known.get(&n.address).unwrap_or(&empty);
                        json!({
                            "hostname": n.hostname, "fqdn": n.fqdn, "role": n.role, "address": n.address,
                            "dns": e.dns, "ignition": e.ignition, "http": e.http,
                        })
                    })
                    .collect();
                let unknown: Vec<Value> = m
                    .unknown
                    .iter()
                    .map(|(ip, e)| json!({"address": ip, "dns": e.dns, "ignition": e.ignition, "http": e.http}))
                    .collect();
                (hosts, unknown)
            }
            Err(_) => (Vec::new(), Vec::new()),
        };
        let cluster = self
            .cluster
            .lock()
            .map(|c| c.clone())
            .unwrap_or(Value::Null);
        let removed = self
            .bootstrap_removed
            .lock()
            .map(|r| r.clone())
            .unwrap_or(Value::Null);
        let mut doc = json!({
            "cluster": self.inv.cluster_domain, "started": self.started, "hosts": hosts,
            "unknownClients": unknown, "loadBalancer": lb, "clusterData": cluster,
            "certificates": self.certs, "bootstrapRemoved": removed,
        });
        crate::dashboard::annotate(&mut doc, OffsetDateTime::now_utc());
        doc
    }

    /// The install dashboard of [`Status::json`] (see [`crate::dashboard`]).
    pub(crate) fn html(&self, lb: Value) -> String {
        crate::dashboard::page(&self.json(lb), OffsetDateTime::now_utc())
    }
}
