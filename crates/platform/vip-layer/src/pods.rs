//! The layer's static pods (hostNetwork, `system-node-critical`, every
//! taint tolerated, as kcli's `staticpods/*.yml`), as Pod YAML.

use serde_json::{Value, json};

use crate::{CONFIG_DIR, COREDNS_HEALTH_PORT, Layer, NAMESPACE, NGINX_PORT};

fn pod(name: &str, init: Option<Value>, container: Value) -> String {
    let mut spec = json!({
        "hostNetwork": true,
        "priorityClassName": "system-node-critical",
        "tolerations": [{"operator": "Exists"}],
        "containers": [container],
        "volumes": [
            {"name": "layer", "hostPath": {"path": CONFIG_DIR, "type": "Directory"}},
            {"name": "run", "emptyDir": {}},
        ],
    });
    if let Some(init) = init {
        spec["initContainers"] = json!([init]);
    }
    let pod = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "labels": {"app": name, "okd-install/layer": "vip"},
        },
        "spec": spec,
    });
    serde_yaml_ng::to_string(&pod).expect("a JSON value is YAML")
}

fn layer_mount() -> Value {
    json!({"name": "layer", "mountPath": CONFIG_DIR, "readOnly": true})
}

/// keepalived: the init container writes keepalived.conf with the node's
/// NIC ([`crate::interface_script`]), then keepalived runs in the
/// foreground, privileged (it adds addresses and sends raw VRRP).
pub(crate) fn keepalived(layer: &Layer) -> String {
    let run = json!({"name": "run", "mountPath": "/etc/keepalived"});
    pod(
        "okd-keepalived",
        Some(json!({
            "name": "interface",
            "image": layer.images.keepalived,
            "command": ["/bin/sh", format!("{CONFIG_DIR}/keepalived-interface.sh"),
                        format!("{CONFIG_DIR}/keepalived.conf.tmpl"),
                        "/etc/keepalived/keepalived.conf"],
            "volumeMounts": [layer_mount(), run.clone()],
        })),
        json!({
            "name": "keepalived",
            "image": layer.images.keepalived,
            "command": ["/usr/sbin/keepalived", "--dont-fork", "--vrrp", "--log-console",
                        "--log-detail", "-f", "/etc/keepalived/keepalived.conf"],
            "securityContext": {"privileged": true},
            "volumeMounts": [layer_mount(), run],
        }),
    )
}

/// CoreDNS with the layer's Corefile, live while `/health` answers.
pub(crate) fn coredns(layer: &Layer) -> String {
    pod(
        "okd-coredns",
        None,
        json!({
            "name": "coredns",
            "image": layer.images.coredns,
            "args": ["-conf", format!("{CONFIG_DIR}/Corefile")],
            "livenessProbe": {
                "httpGet": {"path": "/health", "port": COREDNS_HEALTH_PORT},
                "initialDelaySeconds": 10,
                "periodSeconds": 10,
            },
            "volumeMounts": [layer_mount()],
        }),
    )
}

/// HAProxy in the foreground with the layer's haproxy.cfg.
pub(crate) fn haproxy(layer: &Layer) -> String {
    pod(
        "okd-haproxy",
        None,
        json!({
            "name": "haproxy",
            "image": layer.images.haproxy,
            "command": ["haproxy", "-db", "-f", format!("{CONFIG_DIR}/haproxy.cfg")],
            "volumeMounts": [layer_mount()],
        }),
    )
}

/// nginx in the foreground with the layer's nginx.conf, on [`NGINX_PORT`].
pub(crate) fn nginx(layer: &Layer) -> String {
    pod(
        "okd-nginx",
        None,
        json!({
            "name": "nginx",
            "image": layer.images.nginx,
            "command": ["nginx", "-c", format!("{CONFIG_DIR}/nginx.conf"), "-g", "daemon off;"],
            "ports": [{"containerPort": NGINX_PORT, "protocol": "TCP"}],
            "volumeMounts": [layer_mount()],
        }),
    )
}
