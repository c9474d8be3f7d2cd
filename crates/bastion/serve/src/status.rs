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
use okd_serve_api::lb::{FrontendStats, Stats};
use okd_serve_api::status::{
    BootstrapRemoved, Certificates, ClientStatus, ClusterData, DnsEvent, HostStatus, HttpEvent,
    IgnitionEvent, PROXIED_CONFIG_BYTES, StatusDocument,
};
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

/// What a string costs the store, estimated in bytes: its octets plus a
/// fixed overhead (the allocation, its slot).
fn str_size(s: &str) -> usize {
    s.len() + 32
}

/// What a field costs the store: its key's share of the overhead plus its value.
fn field(key: &str, value: usize) -> usize {
    key.len() + 32 + value
}

/// What one event costs the store, estimated in bytes: its strings plus a
/// fixed overhead per value (the record, its field names, the queue slot),
/// as the JSON object it serialises to would cost.
trait EventSize {
    fn size(&self) -> usize;
}

/// A number, a boolean or null.
const SCALAR: usize = 16;
/// An object's own overhead.
const OBJECT: usize = 64;

impl EventSize for DnsEvent {
    fn size(&self) -> usize {
        OBJECT
            + field("time", str_size(&self.time))
            + field("name", str_size(&self.name))
            + field("type", str_size(&self.qtype))
            + field(
                "answers",
                32 + self.answers.iter().map(|a| str_size(a)).sum::<usize>(),
            )
    }
}

impl EventSize for IgnitionEvent {
    fn size(&self) -> usize {
        OBJECT
            + field("time", str_size(&self.time))
            + field("pool", str_size(&self.pool))
            + field("spec", str_size(&self.spec))
            + field("status", SCALAR)
            + self.via.as_ref().map_or(0, |v| field("via", str_size(v)))
            + self.bytes.map_or(0, |_| field("bytes", SCALAR))
            + if self.held { field("held", SCALAR) } else { 0 }
    }
}

impl EventSize for HttpEvent {
    fn size(&self) -> usize {
        OBJECT
            + field("time", str_size(&self.time))
            + field("path", str_size(&self.path))
            + field("status", SCALAR)
            + field("bytes", SCALAR)
            + field("size", SCALAR)
            + field("complete", SCALAR)
    }
}

#[derive(Debug, Default, Clone)]
struct HostEvents {
    dns: VecDeque<Arc<DnsEvent>>,
    ignition: VecDeque<Arc<IgnitionEvent>>,
    http: VecDeque<Arc<HttpEvent>>,
    /// The events' size ([`EventSize`]).
    bytes: usize,
}

/// Appends `v` to `q`, dropping the oldest beyond `keep`; returns (bytes
/// added, bytes dropped).
fn push<E: EventSize>(q: &mut VecDeque<Arc<E>>, v: E, keep: usize) -> (usize, usize) {
    let mut dropped = 0;
    while q.len() >= keep {
        dropped += q.pop_front().map_or(0, |e| e.size());
    }
    let added = v.size();
    q.push_back(Arc::new(v));
    (added, dropped)
}

/// One event, for the queue of its kind.
enum Event {
    Dns(DnsEvent),
    Ignition(IgnitionEvent),
    Http(HttpEvent),
}

impl HostEvents {
    /// Appends `v`, dropping the oldest of its kind beyond `keep`; returns
    /// (bytes added, bytes dropped).
    fn push(&mut self, v: Event, keep: usize) -> (usize, usize) {
        let (added, dropped) = match v {
            Event::Dns(e) => push(&mut self.dns, e, keep),
            Event::Ignition(e) => push(&mut self.ignition, e, keep),
            Event::Http(e) => push(&mut self.http, e, keep),
        };
        self.bytes = self.bytes + added - dropped;
        (added, dropped)
    }

    /// Drops the oldest event of the longest queue; returns its size (0 when empty).
    fn drop_oldest(&mut self) -> usize {
        // On a tie the later queue goes first (http, then ignition).
        let (d, i, h) = (self.dns.len(), self.ignition.len(), self.http.len());
        let n = if h >= i && h >= d {
            self.http.pop_front().map_or(0, |e| e.size())
        } else if i >= d {
            self.ignition.pop_front().map_or(0, |e| e.size())
        } else {
            self.dns.pop_front().map_or(0, |e| e.size())
        };
        self.bytes -= n;
        n
    }

    /// The events as lists (built outside the store's lock).
    fn lists(&self) -> (Vec<DnsEvent>, Vec<IgnitionEvent>, Vec<HttpEvent>) {
        (
            self.dns.iter().map(|e| (**e).clone()).collect(),
            self.ignition.iter().map(|e| (**e).clone()).collect(),
            self.http.iter().map(|e| (**e).clone()).collect(),
        )
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
    cluster: Mutex<ClusterData>,
    /// The first of bootstrap.ign's 24-hour certificates to expire.
    certs: Option<Certificates>,
    /// When `remove-bootstrap` took the bootstrap out of the load balancer,
    /// and its backends just before (see [`Status::bootstrap_removed`]).
    bootstrap_removed: Mutex<Option<BootstrapRemoved>>,
    /// The preflight checks run at start, once they ended.
    preflight: Mutex<Option<okd_serve_api::preflight::Report>>,
    /// The HTTP server's state, for what became of bootstrap.ign's one-time
    /// token (never the token itself); unset when this serve runs no HTTP.
    http: std::sync::OnceLock<Arc<okd_bootserver::HttpState>>,
    /// (client, cause) of the TLS handshake failures logged, so each is
    /// logged once (bounded: at most [`UNKNOWN_CLIENTS`] entries).
    tls_logged: Mutex<std::collections::HashSet<(IpAddr, String)>>,
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
            cluster: Mutex::new(ClusterData::unavailable(
                "not read yet (serve connects with auth/kubeconfig)",
            )),
            certs: None,
            bootstrap_removed: Mutex::new(None),
            preflight: Mutex::new(None),
            http: std::sync::OnceLock::new(),
            tls_logged: Mutex::new(std::collections::HashSet::new()),
        }
    }

    /// A TLS handshake with the machine-config server failed: logged once
    /// per client and cause, naming the host and what the cause means.
    pub(crate) fn tls_failed(&self, peer: SocketAddr, cause: &str) {
        let client = self.client_of(peer).ip().to_canonical();
        let Ok(mut seen) = self.tls_logged.lock() else {
            return;
        };
        if seen.len() >= UNKNOWN_CLIENTS || !seen.insert((client, cause.to_string())) {
            return;
        }
        drop(seen);
        let who = self
            .inv
            .nodes
            .iter()
            .find(|n| n.address == client)
            .map_or_else(
                || client.to_string(),
                |n| format!("{} ({client})", n.hostname),
            );
        let hint = if [
            "UnknownCA",
            "BadCertificate",
            "CertificateUnknown",
            "unknown ca",
            "bad certificate",
        ]
        .iter()
        .any(|m| cause.contains(m))
        {
            ": the node does not trust this machine-config server's certificate; its pointer Ignition config carries the root CA of another `create ignition-configs` run: boot it with the current one"
        } else if cause.starts_with("no TLS handshake") {
            ": something connected to the machine-config server without speaking TLS (plain HTTP to 22623?)"
        } else {
            ""
        };
        tracing::warn!(
            "TLS handshake of {who} with the machine-config server failed: {cause}{hint} (logged once per host and cause)"
        );
    }

    /// The HTTP server's state: the dashboard says what became of
    /// bootstrap.ign's one-time token. Only the first call counts.
    pub(crate) fn set_http(&self, http: Arc<okd_bootserver::HttpState>) {
        let _ = self.http.set(http);
    }

    /// Records the preflight checks' report (shown on the dashboard).
    pub(crate) fn set_preflight(&self, r: okd_serve_api::preflight::Report) {
        if let Ok(mut p) = self.preflight.lock() {
            *p = Some(r);
        }
    }

    /// Sets the certificate expiry shown (see [`crate::dashboard::short_lived`]).
    pub(crate) fn with_certs(mut self, certs: Option<Certificates>) -> Status {
        self.certs = certs;
        self
    }

    /// Replaces the cluster view (CSRs, nodes, operators, or why not).
    pub(crate) fn set_cluster(&self, v: ClusterData) {
        if let Ok(mut c) = self.cluster.lock() {
            *c = v;
        }
    }

    /// Records that `remove-bootstrap` took the bootstrap host out of the
    /// load balancer: `frontends` are the load balancer's frontends just
    /// before, each with only the bootstrap's backends (the shape of
    /// `loadBalancer.frontends`). Only the first removal is kept (a second
    /// `remove-bootstrap` finds nothing to remove).
    pub(crate) fn bootstrap_removed(&self, frontends: Vec<FrontendStats>) {
        if let Ok(mut r) = self.bootstrap_removed.lock()
            && r.is_none()
        {
            *r = Some(BootstrapRemoved {
                time: now(),
                frontends,
                earlier: false,
            });
        }
    }

    /// Records a removal of the bootstrap that an earlier serve recorded in
    /// the asset directory at `time` (RFC 3339); its backends were never
    /// balanced by this serve.
    pub(crate) fn bootstrap_removed_before(&self, time: &str) {
        if let Ok(mut r) = self.bootstrap_removed.lock()
            && r.is_none()
        {
            *r = Some(BootstrapRemoved {
                time: time.to_string(),
                frontends: Vec::new(),
                earlier: true,
            });
        }
    }

    fn record(&self, ip: IpAddr, v: Event) {
        let ip = ip.to_canonical();
        let Ok(mut m) = self.events.lock() else {
            return;
        };
        let (added, dropped) = if let Some(h) = m.known.get_mut(&ip) {
            h.push(v, KEEP)
        } else {
            let mut evicted = 0;
            if !m.unknown.contains(&ip) && m.unknown.len() == m.unknown.cap().get() {
                evicted = m.unknown.pop_lru().map_or(0, |(_, h)| h.bytes);
            }
            let r = m
                .unknown
                .get_or_insert_mut(ip, HostEvents::default)
                .push(v, KEEP_UNKNOWN);
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
        let v = DnsEvent {
            time: now(),
            name: clip(name),
            qtype: clip(qtype),
            answers: kept,
        };
        self.record(client.ip(), Event::Dns(v));
    }

    /// A machine-config server response.
    pub(crate) fn ignition(&self, peer: SocketAddr, pool: &str, spec: &str, status: u16) {
        let client = self.client_of(peer);
        let v = IgnitionEvent {
            time: now(),
            pool: clip(pool),
            spec: clip(spec),
            status,
            via: None,
            bytes: None,
            held: false,
        };
        self.record(client.ip(), Event::Ignition(v));
    }

    /// The pool an inventory host at `ip` asks for (`master`, `worker`;
    /// the bootstrap's own config is bootstrap.ign), `None` for others.
    fn pool_of(&self, ip: IpAddr) -> Option<&'static str> {
        let ip = ip.to_canonical();
        self.inv
            .nodes
            .iter()
            .find(|n| n.address == ip)
            .and_then(|n| match n.role {
                okd_hosts::Role::Master => Some("master"),
                okd_hosts::Role::Worker => Some("worker"),
                okd_hosts::Role::Bootstrap => None,
            })
    }

    /// A connection of `client` through the balancer's machine-config
    /// frontend to `backend` (a host's machine-config server, not serve's
    /// own) ended after `to_client` octets: a fetched config when at least
    /// [`PROXIED_CONFIG_BYTES`] went out (masters configured by the
    /// bootstrap's machine-config server count as "Ignition fetched").
    /// Smaller answers (a refusal, a health probe) are not recorded.
    pub(crate) fn proxied_config(&self, client: SocketAddr, backend: &str, to_client: u64) {
        if to_client < PROXIED_CONFIG_BYTES {
            return;
        }
        let Some(pool) = self.pool_of(client.ip()) else {
            return;
        };
        let v = IgnitionEvent {
            time: now(),
            pool: pool.to_string(),
            spec: String::new(),
            status: 200,
            via: Some(clip(backend)),
            bytes: Some(to_client),
            held: false,
        };
        self.record(client.ip(), Event::Ignition(v));
    }

    /// The balancer held `client` back from the machine-config frontend:
    /// every UP backend refuses its pool (`kept`: their names).
    pub(crate) fn held(&self, client: SocketAddr, kept: &[String]) {
        let ip = client.ip().to_canonical();
        let already = self.events.lock().is_ok_and(|mut m| {
            let last = match m.known.get(&ip) {
                Some(h) => h.ignition.back().map(|e| e.held),
                None => m
                    .unknown
                    .get(&ip)
                    .and_then(|h| h.ignition.back().map(|e| e.held)),
            };
            last == Some(true)
        });
        if already {
            // One event per hold: the worker retries every few seconds.
            return;
        }
        let pool = self.pool_of(client.ip()).unwrap_or("worker");
        let v = IgnitionEvent {
            time: now(),
            pool: pool.to_string(),
            spec: String::new(),
            status: 0,
            via: Some(clip(&kept.join(", "))),
            bytes: None,
            held: true,
        };
        self.record(client.ip(), Event::Ignition(v));
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
        let v = HttpEvent {
            time: now(),
            path: clip(path),
            status,
            bytes,
            size,
            complete,
        };
        self.record(peer.ip(), Event::Http(v));
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
    pub(crate) fn document(&self, lb: Option<Stats>) -> StatusDocument {
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
        let hosts: Vec<HostStatus> = self
            .inv
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let mut h = HostStatus::new(&n.hostname, &n.fqdn, n.role, n.address);
                if let Some(e) = known.get(i).and_then(Option::as_ref) {
                    (h.dns, h.ignition, h.http) = e.lists();
                }
                h
            })
            .collect();
        drop(known);
        let unknown_clients: Vec<ClientStatus> = unknown
            .into_iter()
            .map(|(address, e)| {
                let (dns, ignition, http) = e.lists();
                ClientStatus {
                    address,
                    dns,
                    ignition,
                    http,
                }
            })
            .collect();
        let cluster_data = self
            .cluster
            .lock()
            .map(|c| c.clone())
            .unwrap_or_else(|_| ClusterData::unavailable("the cluster view is unavailable"));
        let bootstrap_removed = self
            .bootstrap_removed
            .lock()
            .map(|r| r.clone())
            .unwrap_or(None);
        let mut doc = StatusDocument {
            cluster: self.inv.cluster_domain.clone(),
            started: self.started.clone(),
            hosts,
            unknown_clients,
            load_balancer: lb,
            cluster_data,
            certificates: self.certs.clone(),
            bootstrap_removed,
            warnings: Vec::new(),
            preflight: self.preflight.lock().ok().and_then(|r| r.clone()),
        };
        crate::dashboard::annotate(&mut doc, OffsetDateTime::now_utc());
        if let Some(t) = self.http.get().and_then(|h| h.bootstrap_token()) {
            crate::dashboard::token_stage(&mut doc, &t);
        }
        doc
    }

    /// `/status` (pretty JSON) or the dashboard, for HTTP readers: built on
    /// the blocking pool (never on the runtime's threads, which answer DNS)
    /// from `lb()` (the load balancer's snapshot), and reused by every
    /// reader for [`DOC_TTL`]; while one is built, other readers wait for it.
    pub(crate) async fn rendered(
        self: &Arc<Self>,
        what: Rendering,
        lb: impl FnOnce() -> Option<Stats> + Send + 'static,
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
            let doc = me.document(lb());
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
        let doc = st.document(None);
        let unknown = &doc.unknown_clients;
        assert!(
            !unknown.is_empty() && unknown.len() < 200,
            "{} unknown clients",
            unknown.len()
        );
        // The most recent client is kept, the first ones went.
        assert_eq!(unknown[0].address.to_string(), "10.0.0.200");
        for e in unknown.iter().flat_map(|c| &c.http) {
            let p = &e.path;
            assert!(
                p.len() < MAX_FIELD + 40 && p.ends_with("(65005 bytes, truncated)"),
                "{p:.80}"
            );
        }
        // The inventory host's event outlived the unknown clients.
        assert_eq!(doc.hosts[1].http[0].path, "/ignition/master.ign");
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
        let doc = st.document(None);
        let http = &doc.hosts[0].http;
        assert!(!http.is_empty() && http.len() < KEEP, "{}", http.len());
        let last = format!("/images/{}-", KEEP - 1);
        assert!(http.last().unwrap().path.starts_with(&last));
    }
}
