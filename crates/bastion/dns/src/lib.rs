//! The bastion's DNS server: authoritative for the cluster domain and its
//! reverse zones, a forwarder for everything else (issue #3).
//!
//! [`DnsServer::start`] serves, over UDP and TCP (RFC 1035 §4.2, RFC 7766)
//! on one address and port, the zones [`zone_records`] builds from an
//! [`okd_hosts::Inventory`] — the same records as the BIND zone files and
//! `dnsmasq.conf` that `okd_bastion::configs` writes:
//!
//! * `api`, `api-int` → the API address; `apps` and `*.apps` (RFC 4592
//!   wildcard) → the ingress address; every node's host name → its address;
//!   the extra records; `ns1` → the listen address; SOA and NS at the apex;
//! * with `etcd_records` (releases ≤ 4.5), `etcd-<n>` for each master and
//!   one `_etcd-server-ssl._tcp` SRV record `0 10 2380 etcd-<n>.<domain>.`
//!   per master (RFC 2782);
//! * PTR records for every node (and the API address when no node has it)
//!   in `in-addr.arpa` /24 and `ip6.arpa` /64 reverse zones.
//!
//! Answers from our zones carry AA; a name that does not exist there is
//! NXDOMAIN, a name without the asked type NOERROR with no answers (NODATA),
//! both with the zone's SOA in the authority section (RFC 2308). Other
//! questions from clients inside the inventory's `allow_recursion`
//! networks are relayed to the inventory's upstream resolvers over the
//! client's transport, with a fresh random ID (RFC 5452), trying them in
//! turn for 1.5 s (UDP) or 3 s (TCP) each and answering SERVFAIL when none
//! replies; with no upstreams, or from other clients, they are REFUSED
//! (without RA). A relayed UDP reply larger than the client takes (its EDNS
//! size, at most 1232, or 512) goes back as the question alone with TC set,
//! so the client retries over TCP. UDP clients outside the allowed
//! networks (`allow_recursion`, the nodes' networks, loopback) get
//! response rate limiting per /24 or /56 prefix as BIND's `rate-limit`
//! ([`RateLimit`]: over the rate, every second response truncated, the
//! others dropped); the nodes themselves are never limited. TCP clients are
//! held to [`DnsOptions::tcp`] (connection caps, idle timeout). Queries with an EDNS OPT
//! record (RFC 6891) get one back (payload 1232, DO copied); a UDP answer
//! larger than the client takes is truncated (TC) so it retries over TCP.
//!
//! Answers from our zones are encoded once at start; answering one is reading
//! the question in place, a hash lookup and a copy, done inline by the UDP
//! receive threads (one per runtime worker, at most 4, each blocking on a
//! socket of its own bound with `SO_REUSEPORT`, so the kernel spreads the
//! clients over them by address and port), while forwarded
//! queries run as tokio tasks so a slow upstream never delays them.
//! Answered queries are logged at debug level and reported to an optional
//! [`DnsObserver`] through a queue to a thread of its own; with an
//! observer, a client's repeated question within a second is logged and
//! reported once (without one, every query is logged).

use std::borrow::Cow;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{JoinHandle, JoinSet};

mod forward;
mod hash;
mod limit;
mod report;
mod table;
mod udp;
mod wire;
pub mod zone;

pub use limit::{DEFAULT_RESPONSES_PER_SECOND, DEFAULT_SLIP, DEFAULT_WINDOW_SECS, RateLimit};
pub use zone::{RecordData, TTL_SECS, Zone, ZoneRecord, reverse_zone, zone_records};

use forward::Forwarder;
use limit::{Limiter, Verdict};
use report::Reporter;
use table::{Lookup, Table};
use udp::{UdpThreads, start_udp_threads};
use wire::{Flags, Query, Reject, Sections, rcode};

/// Told about answered queries.
///
/// Called on a thread of the server's own, shortly after the answer went
/// out, never on the serving path: reports wait in a queue of 4096 (when
/// it is full, new ones are dropped), and a client asking the same name
/// and type again within a second is reported once.
pub trait DnsObserver: Send + Sync {
    /// `client` asked `name` (FQDN with trailing dot, lower case, e.g.
    /// "api-int.okd.example.") of `qtype` ("A", "SRV", ...); `answers` are
    /// the answer records' data in presentation form ("192.168.120.101",
    /// "0 10 2380 etcd-0.okd.example."), empty for NXDOMAIN/NODATA/REFUSED.
    fn answered(&self, client: SocketAddr, name: &str, qtype: &str, answers: &[String]);
}

/// Errors starting the server.
#[derive(Debug, thiserror::Error)]
pub enum DnsError {
    /// A socket could not be bound, e.g. `cannot listen on 127.0.0.1:53
    /// (udp): address already in use`.
    #[error("cannot listen on {addr} ({protocol}): {}", describe(.error))]
    Bind {
        /// The address and port asked for.
        addr: SocketAddr,
        /// `udp` or `tcp`.
        protocol: &'static str,
        /// The operating system's error.
        error: std::io::Error,
    },
    /// A name of the inventory is not a valid domain name (RFC 1035 §2.3.4:
    /// labels of 1 to 63 octets, at most 255 octets in all).
    #[error("invalid DNS name {name:?}: {reason}")]
    InvalidName {
        /// The name, fully qualified.
        name: String,
        /// The rule it breaks.
        reason: String,
    },
}

/// The bind error in words an operator acts on.
fn describe(e: &std::io::Error) -> Cow<'static, str> {
    use std::io::ErrorKind;
    match e.kind() {
        ErrorKind::AddrInUse => "address already in use".into(),
        ErrorKind::PermissionDenied => {
            "permission denied (ports below 1024 need root or CAP_NET_BIND_SERVICE)".into()
        }
        ErrorKind::AddrNotAvailable => "address not available (not configured on this host)".into(),
        _ => e.to_string().into(),
    }
}

/// Idle time after which a TCP client is closed (RFC 7766 §6.2.3), and
/// the time one message may take to arrive.
const TCP_IDLE: Duration = Duration::from_secs(10);

/// Tuning of [`DnsServer::start_with`]; [`Default`] gives the documented
/// defaults, which [`DnsServer::start`] uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DnsOptions {
    /// Response rate limit for UDP clients outside the allowed networks.
    pub rate: RateLimit,
    /// Limits of the TCP listener. Default: 128 connections, 16 per client
    /// address, 10 s idle (RFC 7766 §6.2.3); `header_read` is unused.
    pub tcp: okd_listen::Limits,
}

impl Default for DnsOptions {
    fn default() -> Self {
        DnsOptions {
            rate: RateLimit::default(),
            tcp: okd_listen::Limits {
                max_connections: 128,
                max_per_client: 16,
                header_read: TCP_IDLE,
                idle: TCP_IDLE,
            },
        }
    }
}
/// Largest query read over UDP.
const UDP_BUF: usize = 4096;
/// Receive buffer asked for the UDP socket, in octets.
const UDP_RCVBUF: usize = 4 << 20;

/// Everything the serving tasks share.
struct Shared {
    table: Table,
    forwarder: Option<Forwarder>,
    reporter: Option<Reporter>,
    /// Client networks whose other questions are forwarded.
    allow_recursion: hash::Nets,
    limiter: Limiter,
}

/// What to do with a received message.
enum Handled {
    /// Send the response now in the output buffer.
    Reply,
    /// Relay it upstream.
    Forward,
    /// Ignore it.
    Drop,
}

/// Which transport a message came over.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Transport {
    Udp,
    Tcp,
}

impl Transport {
    fn as_str(self) -> &'static str {
        match self {
            Transport::Udp => "udp",
            Transport::Tcp => "tcp",
        }
    }
}

impl Shared {
    /// Whether `q` from `client` is worth describing (a debug log line,
    /// a report): with an observer, when this client has not asked this
    /// question within a second (the debug log follows the same rule: it
    /// is `okd-install serve`'s log file, and formatting and writing a
    /// line per query took most of the serving threads' time under a
    /// resolver storm); without one, whenever debug logging is on.
    fn reporting(&self, client: SocketAddr, q: &Query<'_>) -> bool {
        let Some(r) = &self.reporter else {
            return tracing::enabled!(tracing::Level::DEBUG);
        };
        let mut lower = [0u8; 255];
        let name = &mut lower[..q.qname.len().min(255)];
        for (l, c) in name.iter_mut().zip(q.qname) {
            *l = c.to_ascii_lowercase();
        }
        r.fresh(client.ip().to_canonical(), name, q.qtype)
    }

    /// Logs and reports one answered query (after [`Shared::reporting`]).
    fn report(
        &self,
        client: SocketAddr,
        transport: Transport,
        q: &Query<'_>,
        rcode: u16,
        answers: &[String],
    ) {
        let name = wire::name_to_string(q.qname);
        let qtype = wire::type_name(q.qtype);
        tracing::debug!(
            %client,
            transport = transport.as_str(),
            name,
            qtype = &*qtype,
            rcode = rcode_name(rcode),
            ?answers,
            "dns query"
        );
        if let Some(r) = &self.reporter {
            r.send(client, name, qtype, answers.to_vec());
        }
    }

    /// Answers `msg` from our zones into `out`, or says to forward or drop
    /// it. `scratch` holds the lower-cased QNAME.
    fn handle(
        &self,
        msg: &[u8],
        client: SocketAddr,
        transport: Transport,
        scratch: &mut Vec<u8>,
        out: &mut Vec<u8>,
    ) -> Handled {
        let ra = self.forwarder.is_some() && self.may_recurse(client);
        let parsed = wire::parse_query(msg);
        if let Err(Reject::Drop) = parsed {
            return Handled::Drop;
        }
        // Every response over UDP to a client outside the allowed networks
        // is accounted (BIND 9 ARM, "Response Rate Limiting").
        let verdict = match transport {
            Transport::Udp => self.limiter.verdict(client.ip().to_canonical()),
            Transport::Tcp => Verdict::Send,
        };
        if verdict == Verdict::Drop {
            return Handled::Drop;
        }
        let q = match parsed {
            Ok(q) => q,
            Err(Reject::Drop) => return Handled::Drop,
            Err(Reject::Error {
                id,
                rd,
                opcode,
                rcode,
            }) => {
                tracing::debug!(%client, opcode, rcode = rcode_name(rcode), "dns message refused");
                wire::write_error(out, id, rd, opcode, rcode, ra);
                if verdict == Verdict::Slip {
                    wire::set_tc(out);
                }
                return Handled::Reply;
            }
        };
        let limit = match transport {
            Transport::Udp => wire::udp_limit(&q),
            Transport::Tcp => usize::from(u16::MAX),
        };
        if verdict == Verdict::Slip {
            // TC and nothing but the question (and OPT): never longer than
            // the query, so a forged source gets no amplification.
            let f = Flags {
                aa: false,
                ra,
                rcode: rcode::NOERROR,
            };
            wire::write_response(out, &q, f, &Sections::default(), 0);
            return if out.len() <= msg.len() {
                Handled::Reply
            } else {
                Handled::Drop
            };
        }
        let reply = |out: &mut Vec<u8>, aa: bool, rcode: u16, s: &Sections<'_>| {
            wire::write_response(out, &q, Flags { aa, ra, rcode }, s, limit);
        };
        if q.edns.is_some_and(|e| e.version > 0) {
            reply(out, false, rcode::BADVERS, &Sections::default());
            if self.reporting(client, &q) {
                self.report(client, transport, &q, rcode::BADVERS, &[]);
            }
            return Handled::Reply;
        }
        let lookup = if wire::class_in_or_any(q.qclass) {
            wire::lower_name_into(q.qname, scratch);
            self.table.lookup(scratch, q.qtype)
        } else {
            Lookup::NotOurs
        };
        let (rc, answers): (u16, &[String]) = match lookup {
            Lookup::Answer(set) => {
                let s = Sections {
                    answer: &set.answer,
                    ancount: set.ancount,
                    additional: &set.additional,
                    arcount: set.arcount,
                    ..Sections::default()
                };
                reply(out, true, rcode::NOERROR, &s);
                (rcode::NOERROR, set.text.as_slice())
            }
            Lookup::NoData(z) | Lookup::NxDomain(z) => {
                let rc = if matches!(lookup, Lookup::NxDomain(_)) {
                    rcode::NXDOMAIN
                } else {
                    rcode::NOERROR
                };
                let s = Sections {
                    authority: &z.soa,
                    nscount: 1,
                    ..Sections::default()
                };
                reply(out, true, rc, &s);
                (rc, &[])
            }
            Lookup::NotOurs if ra => return Handled::Forward,
            Lookup::NotOurs => {
                reply(out, false, rcode::REFUSED, &Sections::default());
                (rcode::REFUSED, &[])
            }
        };
        if self.reporting(client, &q) {
            self.report(client, transport, &q, rc, answers);
        }
        Handled::Reply
    }

    /// Whether `client` is inside the recursion networks.
    fn may_recurse(&self, client: SocketAddr) -> bool {
        let ip = client.ip().to_canonical();
        self.allow_recursion.contains(ip)
    }

    /// Relays `msg` upstream (over the client's transport) and returns the
    /// reply, or SERVFAIL when no upstream answered; reports it. A UDP
    /// reply larger than the client takes becomes the question alone with
    /// TC set (RFC 1035 §4.2.1, RFC 6891 §7).
    async fn forward(
        &self,
        msg: &[u8],
        client: SocketAddr,
        transport: Transport,
    ) -> Option<Vec<u8>> {
        let fwd = self.forwarder.as_ref()?;
        let q = wire::parse_query(msg).ok()?;
        let reply = match transport {
            Transport::Udp => fwd.udp(msg).await,
            Transport::Tcp => fwd.tcp(msg).await,
        };
        let reply = reply.unwrap_or_else(|| {
            let mut out = Vec::new();
            let f = Flags {
                aa: false,
                ra: true,
                rcode: rcode::SERVFAIL,
            };
            wire::write_response(&mut out, &q, f, &Sections::default(), usize::MAX);
            out
        });
        let limit = wire::udp_limit(&q);
        let reply = if transport == Transport::Udp && reply.len() > limit {
            let mut out = Vec::new();
            let f = Flags {
                aa: false,
                ra: true,
                rcode: u16::from(reply[3] & 0xf),
            };
            // Nothing fits but the header, question and OPT: TC is set.
            wire::write_response(&mut out, &q, f, &Sections::default(), 0);
            out
        } else {
            reply
        };
        if self.reporting(client, &q) {
            let (rc, answers) = match hickory_proto::op::Message::from_vec(&reply) {
                Ok(m) => (
                    u16::from(m.metadata.response_code),
                    m.answers.iter().map(|r| r.data.to_string()).collect(),
                ),
                Err(_) => (reply[3].into(), Vec::new()),
            };
            self.report(client, transport, &q, rc & 0xf, &answers);
        }
        Some(reply)
    }
}

fn rcode_name(rc: u16) -> &'static str {
    match rc {
        rcode::NOERROR => "NOERROR",
        rcode::FORMERR => "FORMERR",
        rcode::SERVFAIL => "SERVFAIL",
        rcode::NXDOMAIN => "NXDOMAIN",
        rcode::NOTIMP => "NOTIMP",
        rcode::REFUSED => "REFUSED",
        rcode::BADVERS => "BADVERS",
        _ => "other",
    }
}

/// A running DNS server (see the crate documentation).
///
/// Dropping it without [`DnsServer::shutdown`] also stops the serving
/// threads and tasks, but without waiting for the sockets to close.
pub struct DnsServer {
    local: SocketAddr,
    tasks: Vec<JoinHandle<()>>,
    udp: UdpThreads,
}

impl std::fmt::Debug for DnsServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DnsServer")
            .field("local", &self.local)
            .finish_non_exhaustive()
    }
}

impl DnsServer {
    /// Binds UDP and TCP on `bind`, builds the zones from `inv`, starts serving (must be called inside a tokio runtime).
    ///
    /// `bind` is usually `SocketAddr::new(inv.listen, inv.ports.dns)`; with
    /// port 0 the kernel picks a port free for both UDP and TCP.
    /// `etcd_records` adds the etcd A and SRV records
    /// (`okd_types::release::ReleaseTarget::wants_etcd_srv_records()`).
    /// Names outside the zones are forwarded to `inv.upstreams` (an
    /// upstream that is this server — the bind address or the listen
    /// address on the bind port — is skipped, as it would loop) for
    /// clients inside `inv.allow_recursion`, or refused when there are no
    /// upstreams or the client is outside. Uses [`DnsOptions::default`]
    /// ([`DnsServer::start_with`] takes others). UDP is served by threads
    /// of its own, one per worker of the current tokio runtime (at most 4),
    /// each with a socket of its own (`SO_REUSEPORT`; a socket already on
    /// the address is still "address already in use");
    /// the TCP accept loop and forwarded queries run on the runtime.
    ///
    /// # Errors
    /// [`DnsError::Bind`] naming the address, port and protocol when a
    /// socket cannot be bound; [`DnsError::InvalidName`] for a host name
    /// that is not a valid DNS name.
    pub async fn start(
        inv: &okd_hosts::Inventory,
        bind: SocketAddr,
        etcd_records: bool,
        observer: Option<Arc<dyn DnsObserver>>,
    ) -> Result<DnsServer, DnsError> {
        Self::start_with(inv, bind, etcd_records, observer, DnsOptions::default()).await
    }

    /// [`DnsServer::start`] with other rate and TCP limits.
    ///
    /// # Errors
    /// As [`DnsServer::start`].
    pub async fn start_with(
        inv: &okd_hosts::Inventory,
        bind: SocketAddr,
        etcd_records: bool,
        observer: Option<Arc<dyn DnsObserver>>,
        options: DnsOptions,
    ) -> Result<DnsServer, DnsError> {
        let zones = zone_records(inv, etcd_records)?;
        let upstreams: Vec<SocketAddr> = inv
            .upstreams
            .iter()
            .copied()
            .filter(|u| {
                let own = u.port() == bind.port()
                    && (u.ip() == bind.ip()
                        || u.ip() == inv.listen
                        || (bind.ip().is_unspecified() && u.ip().is_loopback()));
                if own {
                    tracing::warn!(upstream = %u, "ignoring an upstream resolver that is this server");
                }
                !own
            })
            .collect();
        let (udp, tcp) = bind_both(bind).await?;
        let local = udp.local_addr().map_err(|error| DnsError::Bind {
            addr: bind,
            protocol: "udp",
            error,
        })?;
        let reporter = match observer {
            Some(o) => Some(Reporter::start(o).map_err(|error| DnsError::Bind {
                addr: local,
                protocol: "udp",
                error,
            })?),
            None => None,
        };
        let shared = Arc::new(Shared {
            table: Table::new(&zones)?,
            forwarder: (!upstreams.is_empty()).then(|| Forwarder::new(upstreams.clone())),
            reporter,
            allow_recursion: hash::Nets::new(&inv.allow_recursion),
            limiter: Limiter::new(&options.rate, &allowed_networks(inv)),
        });
        tracing::info!(
            address = %local,
            zones = ?shared.table.zones().iter().map(|z| z.origin.as_str()).collect::<Vec<_>>(),
            upstreams = ?upstreams,
            allow_recursion = ?inv.allow_recursion,
            etcd_records,
            "DNS server listening (udp, tcp)"
        );
        let rt = tokio::runtime::Handle::current();
        let workers = rt.metrics().num_workers().clamp(1, 4);
        let udp =
            start_udp_threads(udp, workers, &shared, &rt).map_err(|error| DnsError::Bind {
                addr: local,
                protocol: "udp",
                error,
            })?;
        let tcp = okd_listen::Listener::new(tcp, options.tcp);
        let tasks = vec![tokio::spawn(tcp_loop(tcp, shared))];
        Ok(DnsServer { local, tasks, udp })
    }

    /// The bound UDP address (the real port when 0 was asked).
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// Stops serving and releases both sockets.
    ///
    /// Open TCP connections are closed; forwarded queries still waiting for
    /// an upstream finish on their own (at most a few seconds) but can no
    /// longer answer.
    pub async fn shutdown(mut self) {
        let tasks = std::mem::take(&mut self.tasks);
        for t in &tasks {
            t.abort();
        }
        self.udp.stop();
        let threads = std::mem::take(&mut self.udp.threads);
        let _ = tokio::task::spawn_blocking(move || {
            for t in threads {
                let _ = t.join();
            }
        })
        .await;
        for t in tasks {
            let _ = t.await;
        }
        tracing::info!(address = %self.local, "DNS server stopped");
    }
}

impl Drop for DnsServer {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
        self.udp.stop();
    }
}

/// The networks whose clients are never rate limited: the inventory's
/// `allow_recursion` and every node's network (address and prefix).
fn allowed_networks(inv: &okd_hosts::Inventory) -> Vec<ipnet::IpNet> {
    let mut nets = inv.allow_recursion.clone();
    for n in &inv.nodes {
        if let Ok(net) = ipnet::IpNet::new(n.address, n.prefix) {
            let net = net.trunc();
            if !nets.contains(&net) {
                nets.push(net);
            }
        }
    }
    nets
}

/// Binds UDP on `bind` (with `SO_REUSEPORT`, so the UDP threads can each
/// have a socket of their own), then TCP on the same address and port; with
/// port 0, retries a few times when the UDP port is taken for TCP.
///
/// The address is first bound by a plain socket, released at once: a
/// socket already bound there, even one with `SO_REUSEPORT` (e.g. another
/// serve), makes that fail with "address already in use" instead of
/// silently sharing the clients.
async fn bind_both(bind: SocketAddr) -> Result<(std::net::UdpSocket, TcpListener), DnsError> {
    let err = |addr, protocol, error| DnsError::Bind {
        addr,
        protocol,
        error,
    };
    let mut attempt = 0;
    loop {
        attempt += 1;
        let at = {
            let probe = std::net::UdpSocket::bind(bind).map_err(|e| err(bind, "udp", e))?;
            probe.local_addr().map_err(|e| err(bind, "udp", e))?
        };
        let udp = match udp::bind_reuseport(at) {
            Ok(u) => u,
            // The port picked for 0 was taken in between: pick again.
            Err(e)
                if bind.port() == 0
                    && e.kind() == std::io::ErrorKind::AddrInUse
                    && attempt < 16 =>
            {
                continue;
            }
            Err(e) => return Err(err(bind, "udp", e)),
        };
        match TcpListener::bind(at).await {
            Ok(tcp) => return Ok((udp, tcp)),
            Err(e)
                if bind.port() == 0
                    && e.kind() == std::io::ErrorKind::AddrInUse
                    && attempt < 16 => {}
            Err(e) => return Err(err(at, "tcp", e)),
        }
    }
}

/// Accepts TCP clients (the listener's caps close the ones over them);
/// each is served in a task owned by this one, so stopping this task
/// closes them all.
async fn tcp_loop(listener: okd_listen::Listener, shared: Arc<Shared>) {
    let mut clients = JoinSet::new();
    loop {
        tokio::select! {
            (stream, client) = listener.accept() => {
                clients.spawn(tcp_client(stream, client, shared.clone()));
            }
            Some(_) = clients.join_next(), if !clients.is_empty() => {}
        }
    }
}

/// Serves one TCP client: length-prefixed messages (RFC 1035 §4.2.2) in
/// order until it closes, sends garbage, or takes longer than
/// [`TCP_IDLE`] for a message (the stream itself closes after the
/// listener's idle time without traffic).
async fn tcp_client(
    mut stream: okd_listen::Conn<TcpStream>,
    client: SocketAddr,
    shared: Arc<Shared>,
) {
    let mut msg = Vec::new();
    let mut out = Vec::new();
    let mut scratch = Vec::with_capacity(256);
    loop {
        let read = async {
            let len = usize::from(stream.read_u16().await?);
            msg.resize(len, 0);
            stream.read_exact(&mut msg).await?;
            std::io::Result::Ok(())
        };
        match tokio::time::timeout(TCP_IDLE, read).await {
            Ok(Ok(())) => {}
            Ok(Err(_)) | Err(_) => return,
        }
        let reply = match shared.handle(&msg, client, Transport::Tcp, &mut scratch, &mut out) {
            Handled::Reply => std::mem::take(&mut out),
            Handled::Forward => match shared.forward(&msg, client, Transport::Tcp).await {
                Some(r) => r,
                None => return,
            },
            Handled::Drop => return,
        };
        let Ok(len) = u16::try_from(reply.len()) else {
            return;
        };
        let mut framed = Vec::with_capacity(reply.len() + 2);
        framed.extend_from_slice(&len.to_be_bytes());
        framed.extend_from_slice(&reply);
        out = reply;
        if stream.write_all(&framed).await.is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests;
