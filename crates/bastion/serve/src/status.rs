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
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use lru::LruCache;
use okd_hosts::Inventory;
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
/// Longest string of an event kept (a request path, a DNS name, a pool), in
/// bytes; longer ones are cut on a character boundary and marked (see [`clip`]).
pub(crate) const MAX_FIELD: usize = 256;
/// Most DNS answers kept per event.
const MAX_ANSWERS: usize = 16;
/// The whole store's size, in bytes as [`event_size`] estimates it: when an
/// event would pass it, unknown clients go first (least recently heard
/// from first), then the oldest events of the inventory host holding most.
pub(crate) const MAX_BYTES: usize = 4 << 20;
/// How long a built `/status` document or dashboard is reused: readers in
/// that window share one build (and the observers' lock is taken once).
pub(crate) const DOC_TTL: Duration = Duration::from_millis(250);

fn now() -> String {
    OffsetDateTime::now_utc()
        .format(&Rfc3339)
        .unwrap_or_default()
}

/// `s` cut to at most [`MAX_FIELD`] bytes on a character boundary, with
/// `… (N bytes, truncated)` appended when it was longer.
pub(crate) fn clip(s: &str) -> String {
    if s.len() <= MAX_FIELD {
        return s.to_string();
    }
    let mut cut = MAX_FIELD;
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}… ({} bytes, truncated)", &s[..cut], s.len())
}

/// What one event costs the store, estimated in bytes: its strings plus a
/// fixed overhead per value (the map, its keys, the queue slot).
fn event_size(v: &Value) -> usize {
    match v {
        Value::String(s) => s.len() + 32,
        Value::Array(a) => 32 + a.iter().map(event_size).sum::<usize>(),
        Value::Object(o) => {
            64 + o
                .iter()
                .map(|(k, v)| k.len() + 32 + event_size(v))
                .sum::<usize>()
        }
        _ => 16,
    }
}

#[derive(Debug, Default, Clone)]
struct HostEvents {
    dns: VecDeque<Arc<Value>>,
    ignition: VecDeque<Arc<Value>>,
    http: VecDeque<Arc<Value>>,
    /// The events' size ([`event_size`]).
    bytes: usize,
}

/// Which queue of a host an event goes to.
#[derive(Clone, Copy)]
enum Kind {
    Dns,
    Ignition,
    Http,
}

impl HostEvents {
    /// Appends `v`, dropping the oldest of its kind beyond `keep`; returns
    /// (bytes added, bytes dropped).
    fn push(&mut self, kind: Kind, v: Value, keep: usize) -> (usize, usize) {
        let q = match kind {
            Kind::Dns => &mut self.dns,
            Kind::Ignition => &mut self.ignition,
            Kind::Http => &mut self.http,
        };
        let mut dropped = 0;
        while q.len() >= keep {
            dropped += q.pop_front().map_or(0, |e| event_size(&e));
        }
        let added = event_size(&v);
        q.push_back(Arc::new(v));
        self.bytes = self.bytes + added - dropped;
        (added, dropped)
    }

    /// Drops the oldest event of the longest queue; returns its size (0 when empty).
    fn drop_oldest(&mut self) -> usize {
        let q = [&mut self.dns, &mut self.ignition, &mut self.http]
            .into_iter()
            .max_by_key(|q| q.len());
        let n = q
            .and_then(VecDeque::pop_front)
            .map_or(0, |e| event_size(&e));
        self.bytes -= n;
        n
    }

    /// The events as JSON arrays (built outside the store's lock).
    fn arrays(&self) -> (Value, Value, Value) {
        let arr =
            |q: &VecDeque<Arc<Value>>| Value::Array(q.iter().map(|e| (**e).clone()).collect());
        (arr(&self.dns), arr(&self.ignition), arr(&self.http))
    }
}

/// Events by client: one slot per inventory address, and a bounded LRU of
/// the others; `bytes` is their total size.
struct Events {
    known: HashMap<IpAddr, HostEvents>,
    unknown: LruCache<IpAddr, HostEvents>,
    bytes: usize,
}

impl Events {
    /// Evicts until the store fits in `max` bytes: unknown clients first
    /// (least recently heard from first), then the oldest events of the
    /// inventory host holding most.
    fn shrink_to(&mut self, max: usize) {
        while self.bytes > max {
            if let Some((_, h)) = self.unknown.pop_lru() {
                self.bytes -= h.bytes;
                continue;
            }
            let Some(h) = self.known.values_mut().max_by_key(|h| h.bytes) else {
                return;
            };
            match h.drop_oldest() {
                0 => return,
                n => self.bytes -= n,
            }
        }
    }
}

/// A built document, shared by the readers of [`DOC_TTL`].
struct Built {
    at: Instant,
    json: Option<Arc<str>>,
    html: Option<Arc<str>>,
}

/// Which rendering of the document [`Status::rendered`] returns.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rendering {
    /// `/status`: pretty JSON.
    Json,
    /// `/`: the dashboard's HTML.
    Html,
}

/// The shared event store of one `serve` process. Its memory is bounded:
/// [`KEEP`] events per kind for each inventory host, [`KEEP_UNKNOWN`] for
/// each of at most [`UNKNOWN_CLIENTS`] other clients, strings of at most
/// [`MAX_FIELD`] bytes, and [`MAX_BYTES`] in all.
///
/// Every DNS, HTTP and machine-config answer takes the events' lock, so the
/// document is built outside it: a snapshot (shared pointers to the events)
/// is taken under the lock, and the JSON built and serialised from it
/// after the lock is released; HTTP readers get it through
/// [`Status::rendered`], on the blocking pool and shared for [`DOC_TTL`].
pub(crate) struct Status {
    inv: Inventory,
    started: String,
    events: Mutex<Events>,
    /// The store's size limit ([`MAX_BYTES`]; smaller in tests).
    max_bytes: usize,
    /// The last document built for HTTP readers; held while one is built,
    /// so concurrent readers wait for that one instead of building their own.
    built: tokio::sync::Mutex<Option<Built>>,
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
                bytes: 0,
            }),
            max_bytes: MAX_BYTES,
            built: tokio::sync::Mutex::new(None),
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
        let (added, dropped) = if let Some(h) = m.known.get_mut(&ip) {
            h.push(kind, v, KEEP)
        } else {
            let mut evicted = 0;
            if !m.unknown.contains(&ip) && m.unknown.len() == m.unknown.cap().get() {
                evicted = m.unknown.pop_lru().map_or(0, |(_, h)| h.bytes);
            }
            let r =
                m.unknown
                    .get_or_insert_mut(ip, HostEvents::default)
                    .push(kind, v, KEEP_UNKNOWN);
            (r.0, r.1 + evicted)
        };
        m.bytes = m.bytes + added - dropped;
        let max = self.max_bytes;
        m.shrink_to(max);
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
        let mut kept: Vec<String> = answers.iter().take(MAX_ANSWERS).map(|a| clip(a)).collect();
        if answers.len() > MAX_ANSWERS {
            kept.push(format!("… ({} answers, truncated)", answers.len()));
        }
        let v = json!({"time": now(), "name": clip(name), "type": clip(qtype), "answers": kept});
        self.record(client.ip(), Kind::Dns, v);
    }

    /// A machine-config server response.
    pub(crate) fn ignition(&self, peer: SocketAddr, pool: &str, spec: &str, status: u16) {
        let client = self.client_of(peer);
        let v = json!({"time": now(), "pool": clip(pool), "spec": clip(spec), "status": status});
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
        let v = json!({"time": now(), "path": clip(path), "status": status, "bytes": bytes, "size": size, "complete": complete});
        self.record(peer.ip(), Kind::Http, v);
    }

    /// How many clients outside the inventory are remembered (at most [`UNKNOWN_CLIENTS`]).
    pub(crate) fn unknown_clients(&self) -> usize {
        self.events.lock().map(|m| m.unknown.len()).unwrap_or(0)
    }

    /// The store's size as [`event_size`] estimates it, in bytes (at most [`MAX_BYTES`]).
    pub(crate) fn stored_bytes(&self) -> usize {
        self.events.lock().map(|m| m.bytes).unwrap_or(0)
    }

    /// The status document: every inventory host (also those not heard from),
    /// unknown clients (most recent first), and the load balancer's snapshot.
    /// It names no MAC address and no token: `/status` and the page are
    /// unauthenticated, and the PXE routes answer by MAC.
    /// The events' lock is held only to copy shared pointers to the events;
    /// the document is built after it is released. Blocking (CPU) work:
    /// call it off the async runtime's threads ([`Status::rendered`] does).
    pub(crate) fn json(&self, lb: Value) -> Value {
        let (known, unknown): (Vec<Option<HostEvents>>, Vec<(IpAddr, HostEvents)>) =
            match self.events.lock() {
                Ok(m) => (
                    self.inv
                        .nodes
                        .iter()
                        .map(|n| m.known.get(&n.address).cloned())
                        .collect(),
                    m.unknown.iter().map(|(ip, e)| (*ip, e.clone())).collect(),
                ),
                Err(_) => (Vec::new(), Vec::new()),
            };
        let hosts: Vec<Value> = self
            .inv
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let (dns, ignition, http) = known
                    .get(i)
                    .and_then(Option::as_ref)
                    .map(HostEvents::arrays)
                    .unwrap_or_else(|| (json!([]), json!([]), json!([])));
                json!({
                    "hostname": n.hostname, "fqdn": n.fqdn, "role": n.role, "address": n.address,
                    "dns": dns, "ignition": ignition, "http": http,
                })
            })
            .collect();
        drop(known);
        let unknown: Vec<Value> = unknown
            .into_iter()
            .map(|(ip, e)| {
                let (dns, ignition, http) = e.arrays();
                json!({"address": ip, "dns": dns, "ignition": ignition, "http": http})
            })
            .collect();
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

    /// `/status` (pretty JSON) or the dashboard, for HTTP readers: built on
    /// the blocking pool (never on the runtime's threads, which answer DNS)
    /// from `lb()` (the load balancer's snapshot), and reused by every
    /// reader for [`DOC_TTL`]; while one is built, other readers wait for it.
    pub(crate) async fn rendered(
        self: &Arc<Self>,
        what: Rendering,
        lb: impl FnOnce() -> Value + Send + 'static,
    ) -> Arc<str> {
        let mut built = self.built.lock().await;
        let fresh = built.as_ref().is_some_and(|b| b.at.elapsed() < DOC_TTL);
        if let Some(b) = built.as_ref().filter(|_| fresh) {
            let hit = match what {
                Rendering::Json => b.json.clone(),
                Rendering::Html => b.html.clone(),
            };
            if let Some(text) = hit {
                return text;
            }
        }
        let me = self.clone();
        let text: Arc<str> = tokio::task::spawn_blocking(move || {
            let doc = me.json(lb());
            match what {
                Rendering::Json => serde_json::to_string_pretty(&doc).unwrap_or_default(),
                Rendering::Html => crate::dashboard::page(&doc, OffsetDateTime::now_utc()),
            }
        })
        .await
        .unwrap_or_default()
        .into();
        if !fresh {
            *built = Some(Built {
                at: Instant::now(),
                json: None,
                html: None,
            });
        }
        if let Some(b) = built.as_mut() {
            match what {
                Rendering::Json => b.json = Some(text.clone()),
                Rendering::Html => b.html = Some(text.clone()),
            }
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clip_cuts_on_a_char_boundary_and_says_so() {
        assert_eq!(clip("/ignition/master.ign"), "/ignition/master.ign");
        let exact = "a".repeat(MAX_FIELD);
        assert_eq!(clip(&exact), exact);
        // 255 ASCII bytes, then a 3-byte character straddling the limit.
        let long = format!("{}€{}", "a".repeat(MAX_FIELD - 1), "b".repeat(1000));
        let c = clip(&long);
        assert_eq!(
            c,
            format!(
                "{}… ({} bytes, truncated)",
                "a".repeat(MAX_FIELD - 1),
                long.len()
            )
        );
    }

    /// Issue #18 finding 5: stored strings are cut, and the store stays
    /// within its byte limit by evicting unknown clients first.
    #[test]
    fn store_is_bounded_in_bytes() {
        let mut st = Status::new(crate::app::tests::inventory());
        st.max_bytes = 64 * 1024;
        let master: SocketAddr = "127.0.0.3:40000".parse().unwrap();
        st.http(master, "/ignition/master.ign", 200, 1234, Some(1234), true);
        let long = format!("/pxe/{}", "a".repeat(65_000));
        for i in 0..200u32 {
            let peer = SocketAddr::from(([10, 0, (i / 250) as u8, (i % 250) as u8 + 1], 1000));
            for _ in 0..8 {
                st.http(peer, &long, 404, 0, Some(0), true);
            }
            assert!(
                st.stored_bytes() <= st.max_bytes,
                "{} bytes",
                st.stored_bytes()
            );
        }
        let doc = st.json(Value::Null);
        let unknown = doc["unknownClients"].as_array().unwrap();
        assert!(
            !unknown.is_empty() && unknown.len() < 200,
            "{} unknown clients",
            unknown.len()
        );
        // The most recent client is kept, the first ones went.
        assert_eq!(unknown[0]["address"], "10.0.0.200");
        for e in unknown.iter().flat_map(|c| c["http"].as_array().unwrap()) {
            let p = e["path"].as_str().unwrap();
            assert!(
                p.len() < MAX_FIELD + 40 && p.ends_with("(65005 bytes, truncated)"),
                "{p:.80}"
            );
        }
        // The inventory host's event outlived the unknown clients.
        assert_eq!(doc["hosts"][1]["http"][0]["path"], "/ignition/master.ign");
        let text = serde_json::to_string(&doc).unwrap();
        assert!(
            text.len() < 4 * st.max_bytes,
            "document of {} bytes",
            text.len()
        );
    }

    /// With only inventory hosts, their oldest events go first.
    #[test]
    fn known_hosts_shrink_oldest_first() {
        let mut st = Status::new(crate::app::tests::inventory());
        st.max_bytes = 8 * 1024;
        let boot: SocketAddr = "127.0.0.2:40000".parse().unwrap();
        for i in 0..KEEP {
            st.http(
                boot,
                &format!("/images/{i}-{}", "x".repeat(200)),
                200,
                1,
                Some(1),
                true,
            );
        }
        assert!(st.stored_bytes() <= st.max_bytes);
        let doc = st.json(Value::Null);
        let http = doc["hosts"][0]["http"].as_array().unwrap();
        assert!(!http.is_empty() && http.len() < KEEP, "{}", http.len());
        let last = format!("/images/{}-", KEEP - 1);
        assert!(
            http.last().unwrap()["path"]
                .as_str()
                .unwrap()
                .starts_with(&last)
        );
    }
}
