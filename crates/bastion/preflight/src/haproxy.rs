//! The `lb.config.<frontend>.<aspect>` checks: the user's own haproxy.cfg
//! against what the install needs, the rule the generated haproxy.cfg and
//! serve's balancer follow (`okd_hosts::Service`): for each of the API
//! (6443), machine-config (22623) and ingress (80, 443) frontends, a
//! frontend on that port, servers on the hosts' own ports, and the health
//! checks `GET /readyz` (API) and `GET /healthz` (machine-config) over TLS
//! (openshift/installer#4643 and PR #4012: a check of `GET /` makes every
//! API server DOWN, and the clients see only an EOF).

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::path::Path;

use okd_hosts::{Inventory, Probe, Service};

use crate::Check;

/// One `frontend`, `backend` or `listen` section, as far as the checks need it.
#[derive(Debug, Default, Clone)]
struct Section {
    kind: String,
    /// The ports its `bind` lines listen on.
    ports: Vec<u16>,
    default_backend: Option<String>,
    /// (name, address, line number) of each `server`.
    servers: Vec<(String, SocketAddr, usize)>,
    /// The path of `option httpchk [METHOD] <path>` or `http-check send …
    /// uri <path>`, with its line.
    check_path: Option<(String, usize)>,
    /// Whether any server line has `check-ssl` (or `ssl`).
    check_ssl: bool,
    /// Whether any server line has `check`.
    checked: bool,
    line: usize,
}

/// The sections of `text` by name (frontends and listens by their name
/// too; a backend and a frontend may share one, so the key has the kind).
fn parse(text: &str) -> BTreeMap<(String, String), Section> {
    let mut out: BTreeMap<(String, String), Section> = BTreeMap::new();
    let mut cur: Option<(String, String)> = None;
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let line = raw.split('#').next().unwrap_or("").trim();
        let mut w = line.split_whitespace();
        let Some(first) = w.next() else {
            continue;
        };
        if !raw.starts_with([' ', '\t']) {
            cur = match first {
                "frontend" | "backend" | "listen" => {
                    let name = w.next().unwrap_or("").to_string();
                    let key = (first.to_string(), name);
                    out.insert(
                        key.clone(),
                        Section {
                            kind: first.to_string(),
                            line: n,
                            ..Section::default()
                        },
                    );
                    // `listen name addr:port` binds on its header line.
                    if let Some(addr) = w.next()
                        && let Some(p) = port_of(addr)
                    {
                        out.get_mut(&key).expect("inserted").ports.push(p);
                    }
                    Some(key)
                }
                _ => None,
            };
            continue;
        }
        let Some(key) = &cur else {
            continue;
        };
        let s = out.get_mut(key).expect("the current section");
        let rest: Vec<&str> = w.collect();
        match first {
            "bind" => {
                for a in rest.iter().take_while(|a| !is_bind_option(a)) {
                    for part in a.split(',') {
                        if let Some(p) = port_of(part) {
                            s.ports.push(p);
                        }
                    }
                }
            }
            "default_backend" => s.default_backend = rest.first().map(|b| (*b).to_string()),
            "server" => {
                if let (Some(name), Some(addr)) = (rest.first(), rest.get(1))
                    && let Some(a) = socket(addr)
                {
                    s.servers.push(((*name).to_string(), a, n));
                    s.checked |= rest.contains(&"check");
                    s.check_ssl |= rest.contains(&"check-ssl") || rest.contains(&"ssl");
                }
            }
            "option" if rest.first() == Some(&"httpchk") => {
                // `option httpchk`, `option httpchk <uri>`, `option httpchk <method> <uri> [<version>]`
                let path = match rest.len() {
                    1 => "/".to_string(),
                    2 => rest[1].to_string(),
                    _ => rest[2].to_string(),
                };
                s.check_path = Some((path, n));
            }
            "http-check" if rest.first() == Some(&"send") => {
                if let Some(i) = rest.iter().position(|w| *w == "uri")
                    && let Some(p) = rest.get(i + 1)
                {
                    s.check_path = Some(((*p).to_string(), n));
                }
            }
            _ => {}
        }
    }
    out
}

fn is_bind_option(w: &str) -> bool {
    !w.contains(':') && !w.chars().all(|c| c.is_ascii_digit())
}

/// The port of `addr:port`, `*:port`, `:::port`, `ipv6@…:port`.
fn port_of(a: &str) -> Option<u16> {
    a.rsplit_once(':').and_then(|(_, p)| p.parse().ok())
}

/// `1.2.3.4:22623`, `ipv6@fd00::1:22623`.
fn socket(a: &str) -> Option<SocketAddr> {
    let a = a
        .strip_prefix("ipv4@")
        .or_else(|| a.strip_prefix("ipv6@"))
        .unwrap_or(a);
    if let Ok(s) = a.parse::<SocketAddr>() {
        return Some(s);
    }
    let (host, port) = a.rsplit_once(':')?;
    Some(SocketAddr::new(
        host.parse::<IpAddr>().ok()?,
        port.parse().ok()?,
    ))
}

/// The checks of `path` for `inv`.
pub(crate) fn compare(path: &Path, inv: &Inventory) -> Vec<Check> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            return vec![Check::fail(
                "lb.config",
                format!("cannot read {}: {e}", path.display()),
                "give --haproxy-cfg the path of your HAProxy's configuration",
            )];
        }
    };
    let file = path.display().to_string();
    let sections = parse(&text);
    let mut out = Vec::new();
    for svc in Service::ALL {
        let name = svc.name();
        let port = svc.frontend_port(&inv.ports);
        let id = |aspect: &str| format!("lb.config.{name}.{aspect}");
        let front = sections
            .values()
            .find(|s| (s.kind == "frontend" || s.kind == "listen") && s.ports.contains(&port));
        let Some(front) = front else {
            out.push(Check::fail(
                id("frontend"),
                format!("{file} has no frontend or listen section bound to port {port} ({name})"),
                format!("add the `frontend {name}` of `okd-install create bastion-configs` (bastion/haproxy/haproxy.cfg)"),
            ));
            continue;
        };
        let backend = if front.kind == "listen" {
            Some(front.clone())
        } else {
            front
                .default_backend
                .as_ref()
                .and_then(|b| sections.get(&("backend".to_string(), b.clone())).cloned())
        };
        let Some(be) = backend else {
            out.push(Check::fail(
                id("frontend"),
                format!(
                    "the frontend on port {port} (line {}) has no default_backend that exists",
                    front.line
                ),
                format!("set `default_backend` to the backend of the {name} servers"),
            ));
            continue;
        };
        out.push(Check::pass(
            id("frontend"),
            format!("port {port} → backend at line {}", be.line),
        ));
        // Servers and their ports: each host on its own port for the service.
        let want_port = svc.backend_port();
        let members = svc.members(inv);
        let mut problems = Vec::new();
        // serve's own machine-config server is a backend of 22623 too.
        let local_mcs = SocketAddr::new(inv.listen, inv.ports.machine_config_server);
        for (sname, addr, line) in &be.servers {
            if svc.includes_local_mcs() && *addr == local_mcs {
                continue;
            }
            if addr.port() != want_port {
                let what = match addr.port() {
                    6443 => " (the API)".to_string(),
                    22623 => " (the machine-config server)".to_string(),
                    80 | 443 => " (ingress)".to_string(),
                    _ => String::new(),
                };
                problems.push(format!(
                    "server {sname} {addr} (line {line}) uses port {}{what}; the hosts serve {name} on {want_port}",
                    addr.port()
                ));
            }
        }
        let missing: Vec<&str> = members
            .iter()
            .filter(|m| !be.servers.iter().any(|(_, a, _)| a.ip() == m.address))
            .map(|m| m.hostname.as_str())
            .collect();
        if !missing.is_empty() {
            problems.push(format!("no server for {}", missing.join(", ")));
        }
        if problems.is_empty() {
            out.push(Check::pass(
                id("servers"),
                format!(
                    "{} on port {want_port}",
                    members
                        .iter()
                        .map(|m| m.hostname.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        } else {
            out.push(Check::fail(
                id("servers"),
                problems.join("; "),
                format!(
                    "list {} as `server <host> <address>:{want_port} check …` (as bastion/haproxy/haproxy.cfg of `create bastion-configs` does)",
                    members.iter().map(|m| m.hostname.as_str()).collect::<Vec<_>>().join(", ")
                ),
            ));
        }
        // Health checks.
        if let Probe::HttpsGet(want) = svc.probe() {
            let fix = format!(
                "`option httpchk GET {want}`, `http-check expect status 200` and `check check-ssl verify none` on each server"
            );
            match &be.check_path {
                Some((p, line)) if p != want => out.push(Check::fail(
                    id("health"),
                    format!(
                        "the backend checks GET {p} (line {line}): {}, so every server stays DOWN and clients see only an EOF",
                        if svc == Service::Api {
                            "the API answers that with 403 to the anonymous check (openshift/installer#4643)"
                        } else {
                            "the machine-config server answers only /healthz and /config/<pool>"
                        }
                    ),
                    fix,
                )),
                Some((_, line)) if !be.check_ssl => out.push(Check::fail(
                    id("health"),
                    format!(
                        "the backend checks GET {want} (line {line}) in plain HTTP, but the port speaks TLS: every server stays DOWN"
                    ),
                    fix,
                )),
                Some(_) => out.push(Check::pass(
                    id("health"),
                    format!("GET {want} over TLS"),
                )),
                None if be.checked => out.push(Check::warn(
                    id("health"),
                    format!("only a TCP check: a host whose {name} is not ready yet still gets clients"),
                    fix,
                )),
                None => out.push(Check::warn(
                    id("health"),
                    "no health check: a host that is down still gets clients",
                    fix,
                )),
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_binds_servers_and_checks() {
        let cfg = "\
global\n  log /dev/log local0\n\
frontend api\n  bind *:6443\n  default_backend api\n\
backend api\n  option httpchk GET /readyz\n  server m0 192.168.1.10:6443 check check-ssl verify none\n\
listen mc :::22623 v4v6\n  option httpchk\n  http-check send meth GET uri /healthz\n  server m0 ipv6@fd00::10:22623 check\n";
        let s = parse(cfg);
        let api = &s[&("backend".to_string(), "api".to_string())];
        assert_eq!(api.check_path.as_ref().unwrap().0, "/readyz");
        assert!(api.check_ssl && api.checked);
        assert_eq!(api.servers[0].1, "192.168.1.10:6443".parse().unwrap());
        let fe = &s[&("frontend".to_string(), "api".to_string())];
        assert_eq!(fe.ports, vec![6443]);
        assert_eq!(fe.default_backend.as_deref(), Some("api"));
        let mc = &s[&("listen".to_string(), "mc".to_string())];
        assert_eq!(mc.ports, vec![22623]);
        assert_eq!(mc.check_path.as_ref().unwrap().0, "/healthz");
        assert!(!mc.check_ssl);
        assert_eq!(mc.servers[0].1, "[fd00::10]:22623".parse().unwrap());
    }
}
