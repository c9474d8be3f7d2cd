//! keepalived for the API and ingress VIPs (karmab/kcli
//! `kvirt/cluster/openshift/keepalived.conf`, keepalived.conf(5)).

use std::fmt::Write as _;
use std::net::IpAddr;

use crate::{HAPROXY_HEALTH_PORT, Layer, Role};

/// The bootstrap's base priority for the API VIP: with its `/readyz` up it
/// beats a master whose API is not up yet, and loses to one whose is.
pub const BOOTSTRAP_PRIORITY: u8 = 90;
/// A master's base priority.
pub const MASTER_PRIORITY: u8 = 100;
/// What a passing track script adds (kcli's `weight 20`).
pub const TRACK_WEIGHT: u8 = 20;

/// The word the interface script replaces with the node's NIC.
pub(crate) const INTERFACE_PLACEHOLDER: &str = "__OKD_INTERFACE__";

/// keepalived.conf for a node of `role` (bootstrap or master), with
/// `interface` the NIC on the cluster network (the static pod writes it
/// from the template with [`interface_script`]):
///
/// - `<cluster>_<domain>_API`: the API VIP, `virtual_router_id`, tracked
///   by `curl https://localhost:6443/readyz` (0.9 s, every 2 s, rise 3,
///   fall 2, weight [`TRACK_WEIGHT`]);
/// - on masters with a separate ingress VIP, `<cluster>_<domain>_INGRESS`
///   with `virtual_router_id + 1`, tracked by HAProxy's health URI when
///   there are workers, else by the router's `:1936/healthz/ready`.
///
/// Every instance starts `BACKUP` and lets priority decide; `auth_type
/// PASS` with the layer's password keeps two clusters on one L2 apart
/// even if their ids collide. Check with `keepalived -t -f <file>`.
pub fn keepalived_conf(layer: &Layer, role: Role, interface: &str) -> String {
    let name = format!("{}_{}", layer.cluster, layer.domain.replace('.', "_"));
    let mut s = format!(
        "# keepalived for the VIPs of {cd}, okd-install (okd-vip-layer).\n\
         global_defs {{\n\
         \x20 router_id {name}\n\
         \x20 enable_script_security\n\
         \x20 script_user root\n\
         }}\n\
         \n\
         vrrp_script chk_api {{\n\
         \x20 script \"/usr/bin/curl -ksf -o /dev/null --max-time 0.9 https://localhost:6443/readyz\"\n\
         \x20 interval 2\n\
         \x20 timeout 1\n\
         \x20 rise 3\n\
         \x20 fall 2\n\
         \x20 weight {TRACK_WEIGHT}\n\
         }}\n",
        cd = layer.cluster_domain(),
    );
    let priority = if role == Role::Bootstrap {
        BOOTSTRAP_PRIORITY
    } else {
        MASTER_PRIORITY
    };
    instance(
        &mut s,
        &format!("{name}_API"),
        interface,
        layer.virtual_router_id,
        priority,
        &layer.auth_pass,
        layer.api_vip,
        layer.prefix,
        "chk_api",
    );
    if role == Role::Master && layer.separate_ingress() {
        let check = if layer.workers().next().is_some() {
            format!("http://127.0.0.1:{HAPROXY_HEALTH_PORT}/healthz")
        } else {
            "http://localhost:1936/healthz/ready".to_string()
        };
        let _ = write!(
            s,
            "\nvrrp_script chk_ingress {{\n\
             \x20 script \"/usr/bin/curl -sf -o /dev/null --max-time 0.9 {check}\"\n\
             \x20 interval 2\n\
             \x20 timeout 1\n\
             \x20 rise 3\n\
             \x20 fall 2\n\
             \x20 weight {TRACK_WEIGHT}\n\
             }}\n"
        );
        instance(
            &mut s,
            &format!("{name}_INGRESS"),
            interface,
            layer.virtual_router_id + 1,
            MASTER_PRIORITY,
            &layer.auth_pass,
            layer.ingress_vip,
            layer.prefix,
            "chk_ingress",
        );
    }
    s
}

#[allow(clippy::too_many_arguments)]
fn instance(
    s: &mut String,
    name: &str,
    interface: &str,
    id: u8,
    priority: u8,
    pass: &str,
    vip: IpAddr,
    prefix: u8,
    script: &str,
) {
    let _ = write!(
        s,
        "\nvrrp_instance {name} {{\n\
         \x20 state BACKUP\n\
         \x20 interface {interface}\n\
         \x20 virtual_router_id {id}\n\
         \x20 priority {priority}\n\
         \x20 advert_int 1\n\
         \x20 authentication {{\n\
         \x20   auth_type PASS\n\
         \x20   auth_pass {pass}\n\
         \x20 }}\n\
         \x20 virtual_ipaddress {{\n\
         \x20   {vip}/{prefix}\n\
         \x20 }}\n\
         \x20 track_script {{\n\
         \x20   {script}\n\
         \x20 }}\n\
         }}\n"
    );
}

/// The keepalived pod's init step (POSIX sh with `ip` and `sed`): finds the
/// NIC that reaches `api_vip` (`ip -o route get`; when the VIP is already
/// held here the route is `local`, and the NIC is the one carrying the
/// address, `ip -o addr show to`), and writes
/// `/etc/keepalived/keepalived.conf` from `$1` (the template; default
/// `/etc/okd-vip-layer/keepalived.conf.tmpl`) into `$2` (default
/// `/etc/keepalived/keepalived.conf`). Exits 1 naming the VIP when no NIC
/// is found. kcli's init container takes the default route's NIC instead.
pub fn interface_script(api_vip: IpAddr) -> String {
    format!(
        "#!/bin/sh\n\
         # Writes keepalived.conf with the NIC that reaches the API VIP (okd-vip-layer).\n\
         set -eu\n\
         tmpl=${{1:-/etc/okd-vip-layer/keepalived.conf.tmpl}}\n\
         out=${{2:-/etc/keepalived/keepalived.conf}}\n\
         route=$(ip -o route get {api_vip} 2>&1) || true\n\
         case \"$route\" in\n\
         \x20 local*) nic=$(ip -o addr show to {api_vip} | sed -n '1s/^[0-9]*: *\\([^ :]*\\).*/\\1/p') ;;\n\
         \x20 *) nic=$(printf '%s\\n' \"$route\" | sed -n '1s/.* dev \\([^ ]*\\).*/\\1/p') ;;\n\
         esac\n\
         if [ -z \"$nic\" ]; then\n\
         \x20 echo \"no interface reaches the API VIP {api_vip}: $route\" >&2\n\
         \x20 exit 1\n\
         fi\n\
         sed \"s/{INTERFACE_PLACEHOLDER}/$nic/\" \"$tmpl\" > \"$out.tmp\"\n\
         mv \"$out.tmp\" \"$out\"\n\
         echo \"keepalived: interface $nic for {api_vip}\"\n"
    )
}
