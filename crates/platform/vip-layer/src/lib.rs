//! The self-contained VIP, DNS and load-balancer layer of a VM cluster, so
//! that no bastion is needed: keepalived for the API and ingress VIPs,
//! CoreDNS answering the cluster's names, HAProxy for the routers and nginx
//! on the bootstrap, each a static pod that the node's Ignition config
//! drops into `/etc/kubernetes/manifests`.
//!
//! The design follows kcli's virt providers (karmab/kcli
//! `kvirt/cluster/openshift/staticpods/{keepalived,coredns,haproxy}.yml`
//! with `keepalived.conf`, `Corefile` and `haproxy.cfg`; karmab/kcli-openshift4
//! `staticpods/nginx.yml` for nginx), rewritten; the differences are listed
//! in docs/differences.md ("VMs from a kcli-style parameter file"):
//!
//! | component | bootstrap | masters | workers |
//! |---|---|---|---|
//! | keepalived: API VIP (`<vrid>`) | yes | yes | no |
//! | keepalived: ingress VIP (`<vrid>+1`) | no | yes | no |
//! | CoreDNS + DNS settings | yes | yes | yes |
//! | HAProxy for the routers (when there are workers) | no | yes | no |
//! | nginx serving the pointer configs | yes | no | no |
//!
//! The API VIP starts on the bootstrap (priority [`BOOTSTRAP_PRIORITY`] +
//! the `/readyz` track weight beats a master without an API) and moves to a
//! master once the masters' API servers answer (priority
//! [`MASTER_PRIORITY`] + weight) or the bootstrap is gone.
//!
//! Everything here is pure text: the files and their Ignition entries.
//! The caller decides addresses, names and images.

mod coredns;
mod haproxy;
mod keepalived;
mod pods;

use std::net::IpAddr;

use okd_types::ignition::{Config, File};

pub use coredns::corefile;
pub use haproxy::{HAPROXY_HEALTH_PORT, WORKER_SLOTS, haproxy_cfg};
pub use keepalived::{
    BOOTSTRAP_PRIORITY, MASTER_PRIORITY, TRACK_WEIGHT, interface_script, keepalived_conf,
};

/// Where the static pods' configs live on a node.
pub const CONFIG_DIR: &str = "/etc/okd-vip-layer";
/// The kubelet's static pod directory.
pub const MANIFESTS_DIR: &str = "/etc/kubernetes/manifests";
/// CoreDNS's health port (kcli's `health :18080`).
pub const COREDNS_HEALTH_PORT: u16 = 18080;
/// The port nginx serves the pointer configs on, on the bootstrap (kcli-openshift4's 8080).
pub const NGINX_PORT: u16 = 8080;
/// The namespace of the static pods (kcli's `kcli-infra`).
pub const NAMESPACE: &str = "okd-vip-layer";

/// A node's role.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The temporary bootstrap node.
    Bootstrap,
    /// A control-plane node.
    Master,
    /// A worker.
    Worker,
}

/// One node of the cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// Its host name without the domain (`testk-master-0`).
    pub name: String,
    /// Its role.
    pub role: Role,
    /// Its address on the cluster network (a DHCP reservation).
    pub ip: IpAddr,
}

/// The images of the static pods. Defaults: kcli's multi-arch images
/// (`quay.io/karmab/…:multi`) and nginx's Alpine image, the ones
/// karmab/kcli and karmab/kcli-openshift4 run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Images {
    /// keepalived, with `sh`, `ip`, `sed` and `curl`.
    pub keepalived: String,
    /// CoreDNS.
    pub coredns: String,
    /// HAProxy.
    pub haproxy: String,
    /// nginx.
    pub nginx: String,
}

impl Default for Images {
    fn default() -> Images {
        Images {
            keepalived: "quay.io/karmab/origin-keepalived-ipfailover:multi".into(),
            coredns: "quay.io/karmab/origin-coredns:multi".into(),
            haproxy: "quay.io/karmab/haproxy:multi".into(),
            nginx: "docker.io/library/nginx:alpine".into(),
        }
    }
}

/// The layer of one cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layer {
    /// The cluster name (`metadata.name` of the install-config).
    pub cluster: String,
    /// The base domain.
    pub domain: String,
    /// The API VIP: `api` and `api-int` resolve to it.
    pub api_vip: IpAddr,
    /// The ingress VIP: `*.apps` resolves to it (the API VIP when the
    /// parameter file gives none: then one keepalived instance holds both).
    pub ingress_vip: IpAddr,
    /// The cluster network's prefix length, for the VIPs' address.
    pub prefix: u8,
    /// The API instance's VRRP id (1-253); the ingress instance uses the next.
    pub virtual_router_id: u8,
    /// The VRRP password (`auth_type PASS`, 1-8 letters or digits).
    pub auth_pass: String,
    /// Where CoreDNS forwards every other name (the network's resolver).
    pub upstream_dns: Vec<IpAddr>,
    /// Every node, bootstrap included.
    pub nodes: Vec<Node>,
    /// The static pods' images.
    pub images: Images,
}

/// A layer that cannot work, found before anything is written.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{field}: {rule}")]
pub struct LayerError {
    /// The parameter (`api_ip`, `virtual_router_id`, ...).
    pub field: &'static str,
    /// The rule and the value.
    pub rule: String,
}

impl Layer {
    /// `<cluster>.<domain>`.
    pub fn cluster_domain(&self) -> String {
        format!("{}.{}", self.cluster, self.domain)
    }

    /// The name whose A (or AAAA) records are the workers,
    /// `workers.<cluster>.<domain>`: kept by the caller in the network's
    /// resolver (CoreDNS forwards it there), followed by HAProxy.
    pub fn workers_name(&self) -> String {
        format!("workers.{}", self.cluster_domain())
    }

    /// Whether an ingress VIP apart from the API VIP is held.
    pub fn separate_ingress(&self) -> bool {
        self.ingress_vip != self.api_vip
    }

    /// The workers.
    pub fn workers(&self) -> impl Iterator<Item = &Node> {
        self.nodes.iter().filter(|n| n.role == Role::Worker)
    }

    /// The rules: a VRRP id 1-253 (the ingress instance takes the next),
    /// a password of 1-8 letters or digits (VRRPv2 carries 8 bytes), at
    /// least one master, unique node names and addresses, no node on a
    /// VIP, VIPs and nodes of one IP family, at least one upstream resolver.
    ///
    /// # Errors
    /// [`LayerError`] for the first rule broken.
    pub fn check(&self) -> Result<(), LayerError> {
        let bad = |field: &'static str, rule: String| Err(LayerError { field, rule });
        if !(1..=253).contains(&self.virtual_router_id) {
            return bad(
                "virtual_router_id",
                format!(
                    "{} is not 1-253 (the ingress VIP uses the next id)",
                    self.virtual_router_id
                ),
            );
        }
        if self.auth_pass.is_empty()
            || self.auth_pass.len() > 8
            || !self.auth_pass.chars().all(|c| c.is_ascii_alphanumeric())
        {
            return bad(
                "auth_pass",
                "must be 1-8 letters or digits (VRRPv2 PASS)".into(),
            );
        }
        if !self.nodes.iter().any(|n| n.role == Role::Master) {
            return bad("masters", "at least one master is needed".into());
        }
        let family = self.api_vip.is_ipv4();
        if self.ingress_vip.is_ipv4() != family {
            return bad(
                "ingress_ip",
                format!(
                    "{} is not of the API VIP {}'s family",
                    self.ingress_vip, self.api_vip
                ),
            );
        }
        let max = if family { 32 } else { 128 };
        if self.prefix == 0 || self.prefix > max {
            return bad(
                "prefix",
                format!("/{} is not a network prefix", self.prefix),
            );
        }
        for (i, n) in self.nodes.iter().enumerate() {
            if n.ip.is_ipv4() != family {
                return bad(
                    "nodes",
                    format!("{} has {}, not of the API VIP's family", n.name, n.ip),
                );
            }
            if n.ip == self.api_vip || n.ip == self.ingress_vip {
                return bad("nodes", format!("{} has {}, which is a VIP", n.name, n.ip));
            }
            if let Some(o) = self.nodes[..i]
                .iter()
                .find(|o| o.name == n.name || o.ip == n.ip)
            {
                return bad(
                    "nodes",
                    format!("{} and {} share a name or an address", o.name, n.name),
                );
            }
        }
        if self.upstream_dns.is_empty() {
            return bad(
                "upstream_dns",
                "CoreDNS needs a resolver to forward to".into(),
            );
        }
        Ok(())
    }

    /// The files the layer puts on `node` (path, mode, contents), in the
    /// order they are written: configs under [`CONFIG_DIR`], the
    /// NetworkManager DNS settings, the sysctl for HAProxy's non-local
    /// bind, then the static pods in [`MANIFESTS_DIR`]. `served` are the
    /// files nginx serves on the bootstrap (name, contents), e.g. the
    /// pointer configs `master.ign` and `worker.ign`.
    pub fn node_files(&self, node: &Node, served: &[(String, Vec<u8>)]) -> Vec<NodeFile> {
        let mut files = Vec::new();
        let cfg = |name: &str| format!("{CONFIG_DIR}/{name}");
        let keepalived = matches!(node.role, Role::Bootstrap | Role::Master);
        let haproxy = node.role == Role::Master && self.workers().next().is_some();
        if keepalived {
            files.push(NodeFile::new(
                &cfg("keepalived.conf.tmpl"),
                0o600,
                keepalived_conf(self, node.role, keepalived::INTERFACE_PLACEHOLDER),
            ));
            files.push(NodeFile::new(
                &cfg("keepalived-interface.sh"),
                0o755,
                interface_script(self.api_vip),
            ));
        }
        files.push(NodeFile::new(&cfg("Corefile"), 0o644, corefile(self)));
        files.push(NodeFile::new(
            "/etc/NetworkManager/conf.d/99-okd-vip-layer-dns.conf",
            0o644,
            self.dns_settings(node),
        ));
        if haproxy && let Some(text) = haproxy_cfg(self) {
            files.push(NodeFile::new(&cfg("haproxy.cfg"), 0o644, text));
            files.push(NodeFile::new(
                "/etc/sysctl.d/99-okd-vip-layer-nonlocal-bind.conf",
                0o644,
                "# HAProxy binds the ingress VIP on every master, held or not.\n\
                 net.ipv4.ip_nonlocal_bind = 1\n\
                 net.ipv6.ip_nonlocal_bind = 1\n"
                    .into(),
            ));
        }
        if node.role == Role::Bootstrap {
            files.push(NodeFile::new(&cfg("nginx.conf"), 0o644, nginx_conf()));
            for (name, data) in served {
                files.push(NodeFile {
                    path: format!("{CONFIG_DIR}/www/{name}"),
                    mode: 0o644,
                    contents: data.clone(),
                });
            }
        }
        if keepalived {
            files.push(NodeFile::new(
                &format!("{MANIFESTS_DIR}/okd-keepalived.yaml"),
                0o644,
                pods::keepalived(self),
            ));
        }
        files.push(NodeFile::new(
            &format!("{MANIFESTS_DIR}/okd-coredns.yaml"),
            0o644,
            pods::coredns(self),
        ));
        if haproxy {
            files.push(NodeFile::new(
                &format!("{MANIFESTS_DIR}/okd-haproxy.yaml"),
                0o644,
                pods::haproxy(self),
            ));
        }
        if node.role == Role::Bootstrap {
            files.push(NodeFile::new(
                &format!("{MANIFESTS_DIR}/okd-nginx.yaml"),
                0o644,
                pods::nginx(self),
            ));
        }
        files
    }

    /// NetworkManager's global DNS for `node` (NetworkManager.conf(5),
    /// "GLOBAL DNS SECTION"): the node's own CoreDNS first, then the API
    /// VIP's, then the upstream resolvers (so names resolve before the
    /// static pods run), searching the cluster domain. Global DNS wins over
    /// what DHCP hands out, with and without systemd-resolved.
    pub fn dns_settings(&self, node: &Node) -> String {
        let mut servers = vec![node.ip, self.api_vip];
        servers.extend(self.upstream_dns.iter().copied());
        servers.dedup();
        let servers: Vec<String> = servers.iter().map(ToString::to_string).collect();
        format!(
            "# okd-install: resolve through the cluster's CoreDNS (okd-vip-layer).\n\
             [global-dns]\n\
             searches={cd}\n\
             \n\
             [global-dns-domain-*]\n\
             servers={servers}\n",
            cd = self.cluster_domain(),
            servers = servers.join(","),
        )
    }

    /// Adds the layer's files for `node` to `config` by kcli's merge rule
    /// (karmab/kcli `kvirt/common/__init__.py` `mergeignition`): a file
    /// whose path the config already has is left as the config has it.
    /// Returns the paths that were skipped that way.
    pub fn merge_into(
        &self,
        config: &mut Config,
        node: &Node,
        served: &[(String, Vec<u8>)],
    ) -> Vec<String> {
        let mut skipped = Vec::new();
        for f in self.node_files(node, served) {
            if config.storage.files.iter().any(|e| e.path == f.path) {
                skipped.push(f.path);
                continue;
            }
            config
                .storage
                .files
                .push(File::data(&f.path, f.mode, &f.contents));
        }
        skipped
    }
}

/// One file the layer writes on a node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeFile {
    /// Absolute path on the node.
    pub path: String,
    /// Permission bits (`0o644`).
    pub mode: u32,
    /// Contents.
    pub contents: Vec<u8>,
}

impl NodeFile {
    fn new(path: &str, mode: u32, text: String) -> NodeFile {
        NodeFile {
            path: path.into(),
            mode,
            contents: text.into_bytes(),
        }
    }
}

/// nginx's configuration on the bootstrap: the files of
/// `<CONFIG_DIR>/www` over plain HTTP on [`NGINX_PORT`], read only,
/// no directory listing (karmab/kcli-openshift4 `staticpods/nginx.yml`
/// served the masters' configs the same way). Check with
/// `nginx -t -c <file>`.
pub fn nginx_conf() -> String {
    format!(
        "# nginx on the bootstrap: the pointer configs for hosts that join without fw_cfg.\n\
         worker_processes 1;\n\
         pid /tmp/nginx.pid;\n\
         error_log stderr;\n\
         events {{\n\
         \x20 worker_connections 256;\n\
         }}\n\
         http {{\n\
         \x20 access_log /dev/stdout;\n\
         \x20 default_type application/octet-stream;\n\
         \x20 types {{\n\
         \x20   application/vnd.coreos.ignition+json ign;\n\
         \x20 }}\n\
         \x20 autoindex off;\n\
         \x20 server_tokens off;\n\
         \x20 client_body_temp_path /tmp/nginx-body;\n\
         \x20 proxy_temp_path /tmp/nginx-proxy;\n\
         \x20 fastcgi_temp_path /tmp/nginx-fastcgi;\n\
         \x20 uwsgi_temp_path /tmp/nginx-uwsgi;\n\
         \x20 scgi_temp_path /tmp/nginx-scgi;\n\
         \x20 server {{\n\
         \x20   listen {NGINX_PORT};\n\
         \x20   root {CONFIG_DIR}/www;\n\
         \x20   location / {{\n\
         \x20     limit_except GET {{\n\
         \x20       deny all;\n\
         \x20     }}\n\
         \x20   }}\n\
         \x20 }}\n\
         }}\n"
    )
}
