//! HAProxy for the routers (karmab/kcli `kvirt/cluster/openshift/haproxy.cfg`;
//! HAProxy 2.x configuration manual).

use std::fmt::Write as _;

use crate::Layer;

/// The port of HAProxy's own health URI (`/healthz`) on the masters,
/// loopback only; the ingress VIP's track script asks it.
pub const HAPROXY_HEALTH_PORT: u16 = 50936;

/// The most workers HAProxy balances over (its `server-template` slots).
pub const WORKER_SLOTS: u16 = 64;

/// haproxy.cfg for the masters when there are workers (`None` without
/// workers: the routers then run on the masters, which hold the ingress
/// VIP themselves): TCP frontends on the ingress VIP's ports 80 and 443
/// (bound on every master, held or not, with `ip_nonlocal_bind`), each to
/// the workers' same port with `balance source` and `check inter 1s`;
/// `/healthz` on 127.0.0.1:[`HAPROXY_HEALTH_PORT`]; `maxconn 4000`, so
/// the two descriptors per connection fit a 10,000 open-files limit
/// (HAProxy refuses to start when it cannot raise its limit to what
/// `maxconn` needs).
///
/// The workers are not listed: a `server-template` of [`WORKER_SLOTS`]
/// slots follows the A records of [`Layer::workers_name`]
/// (`workers.<cluster>.<domain>`), asked from the node's own CoreDNS every
/// 10 s, which forwards the name to the network's resolver, where
/// `create cluster` and `scale` keep one record per worker. So workers
/// added later are balanced to without touching the masters. kcli lists
/// the workers by name (resolved through mDNS), binds 8000/1443 and
/// redirects with iptables; its older version bound the VIP directly, as
/// here. Check with `haproxy -c -f <file>`.
pub fn haproxy_cfg(layer: &Layer) -> Option<String> {
    layer.workers().next()?;
    let vip = match layer.ingress_vip {
        std::net::IpAddr::V4(v4) => v4.to_string(),
        std::net::IpAddr::V6(v6) => format!("[{v6}]"),
    };
    let prefer = if layer.ingress_vip.is_ipv4() {
        "ipv4"
    } else {
        "ipv6"
    };
    let mut s = format!(
        "# HAProxy for the routers of {cd}, okd-install (okd-vip-layer).\n\
         global\n\
         \x20 maxconn 4000\n\
         \x20 log stdout format raw local0\n\
         \n\
         resolvers node\n\
         \x20 nameserver coredns 127.0.0.1:53\n\
         \x20 accepted_payload_size 8192\n\
         \x20 resolve_retries 3\n\
         \x20 timeout resolve 1s\n\
         \x20 timeout retry 1s\n\
         \x20 hold valid 10s\n\
         \x20 hold obsolete 30s\n\
         \n\
         defaults\n\
         \x20 mode tcp\n\
         \x20 log global\n\
         \x20 option tcplog\n\
         \x20 timeout connect 5s\n\
         \x20 timeout client 1m\n\
         \x20 timeout server 1m\n\
         \n\
         frontend health\n\
         \x20 mode http\n\
         \x20 bind 127.0.0.1:{HAPROXY_HEALTH_PORT}\n\
         \x20 monitor-uri /healthz\n",
        cd = layer.cluster_domain(),
    );
    for (name, port) in [("http", 80), ("https", 443)] {
        let _ = write!(
            s,
            "\nfrontend ingress-{name}\n\
             \x20 bind {vip}:{port}\n\
             \x20 default_backend ingress-{name}\n\
             \n\
             backend ingress-{name}\n\
             \x20 balance source\n\
             \x20 server-template worker 1-{WORKER_SLOTS} {workers}:{port} check inter 1s resolvers node resolve-prefer {prefer} init-addr none\n",
            workers = layer.workers_name(),
        );
    }
    Some(s)
}
