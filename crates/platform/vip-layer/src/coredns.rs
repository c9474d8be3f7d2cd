//! CoreDNS for the cluster's names (karmab/kcli
//! `kvirt/cluster/openshift/Corefile`; CoreDNS plugins `hosts`, `template`,
//! `forward`, https://coredns.io/plugins/).

use std::fmt::Write as _;
use std::net::IpAddr;

use crate::{COREDNS_HEALTH_PORT, Layer};

/// The Corefile every node runs:
///
/// - a server block for `<cluster>.<domain>` and each node's reverse name:
///   `hosts` with `api` and `api-int` at the API VIP and every node as
///   `<name>.<cluster>.<domain>` (with its PTR record), TTL 60;
///   `template` answering any `*.apps.<cluster>.<domain>` A (AAAA for
///   IPv6) with the ingress VIP; what neither knows is forwarded;
/// - the root block: `health` on [`COREDNS_HEALTH_PORT`], everything else
///   forwarded to the upstream resolvers, cached 30 s.
///
/// kcli resolves node names by mDNS instead; here every node has a DHCP
/// reservation, so the names are written down.
pub fn corefile(layer: &Layer) -> String {
    let cd = layer.cluster_domain();
    let upstream: Vec<String> = layer.upstream_dns.iter().map(ToString::to_string).collect();
    let upstream = upstream.join(" ");
    let mut zones = vec![format!("{cd}:53")];
    for n in &layer.nodes {
        zones.push(format!("{}:53", reverse_name(n.ip)));
    }
    let mut s = format!(
        "# CoreDNS for {cd}, okd-install (okd-vip-layer).\n{} {{\n\
         \x20   errors\n\
         \x20   hosts {{\n\
         \x20       {api} api.{cd} api-int.{cd}\n",
        zones.join(" "),
        api = layer.api_vip,
    );
    for n in &layer.nodes {
        let _ = writeln!(s, "        {} {}.{cd}", n.ip, n.name);
    }
    let rtype = if layer.ingress_vip.is_ipv4() {
        "A"
    } else {
        "AAAA"
    };
    let dotted = cd.replace('.', "\\.");
    let _ = write!(
        s,
        "        ttl 60\n\
         \x20       fallthrough\n\
         \x20   }}\n\
         \x20   template IN {rtype} apps.{cd} {{\n\
         \x20       match ^([^.]+\\.)+apps\\.{dotted}\\.$\n\
         \x20       answer \"{{{{ .Name }}}} 60 IN {rtype} {ingress}\"\n\
         \x20       fallthrough\n\
         \x20   }}\n\
         \x20   forward . {upstream}\n\
         }}\n\
         \n\
         .:53 {{\n\
         \x20   errors\n\
         \x20   health :{COREDNS_HEALTH_PORT}\n\
         \x20   forward . {upstream}\n\
         \x20   cache 30\n\
         }}\n",
        ingress = layer.ingress_vip,
    );
    s
}

/// The reverse-lookup name of `ip` without the trailing dot
/// (`10.122.168.192.in-addr.arpa`, nibbles under `ip6.arpa`).
pub(crate) fn reverse_name(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            format!("{}.{}.{}.{}.in-addr.arpa", o[3], o[2], o[1], o[0])
        }
        IpAddr::V6(v6) => {
            let mut s = String::new();
            for b in v6.octets().iter().rev() {
                let _ = write!(s, "{:x}.{:x}.", b & 0xf, b >> 4);
            }
            s + "ip6.arpa"
        }
    }
}
