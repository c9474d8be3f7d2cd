//! A simulated discovery agent's answers, for the assisted service's and
//! client's tests and the agents benchmark: what a healthy host on a
//! healthy network replies to each step (assisted-service `swagger.yaml`
//! response models).

use serde_json::{Value, json};

/// The `output` a healthy host sends for a step of `step_type` with
/// `args`, its inventory being `inventory_json`: every peer answers ARP
/// and ping, no cluster name resolves (managed networking needs none),
/// the VIPs are free, the installation disk syncs in 2 ms, NTP is synced,
/// a network's addresses from `.100` up are free.
/// `None` for step types a test answers itself (`install`, …).
///
/// Panics on malformed `args` (the service under test built them).
pub fn healthy_output(step_type: &str, args: &[String], inventory_json: &str) -> Option<String> {
    let arg = || -> Value { serde_json::from_str(&args[0]).expect("step args[0] is JSON") };
    let out = match step_type {
        "inventory" => return Some(inventory_json.to_string()),
        "ntp-synchronizer" => {
            json!({"ntp_sources":[{"source_name":"192.0.2.1","source_state":"synced"}]})
        }
        "connectivity-check" => {
            let remote: Vec<Value> = arg()
                .as_array()
                .expect("a list of hosts")
                .iter()
                .map(|p| {
                    let (mut l2, mut l3, mut mtu) = (Vec::new(), Vec::new(), Vec::new());
                    for nic in p["nics"].as_array().into_iter().flatten() {
                        for a in nic["ip_addresses"].as_array().into_iter().flatten() {
                            let ip = a.as_str().unwrap_or("").split('/').next().unwrap_or("");
                            l2.push(json!({"outgoing_nic": "eth0", "outgoing_ip_address": "", "remote_ip_address": ip, "remote_mac": nic["mac"], "successful": true}));
                            l3.push(json!({"outgoing_nic": "eth0", "remote_ip_address": ip, "successful": true, "average_rtt_ms": 0.2, "packet_loss_percentage": 0.0}));
                            mtu.push(json!({"outgoing_nic": "eth0", "remote_ip": ip, "mtu_successful": true}));
                        }
                    }
                    json!({"host_id": p["host_id"], "l2_connectivity": l2, "l3_connectivity": l3, "mtu_report": mtu})
                })
                .collect();
            json!({ "remote_hosts": remote })
        }
        "domain-resolution" => {
            let names: Vec<Value> = arg()["domains"]
                .as_array()
                .expect("a list of names")
                .iter()
                .map(|d| json!({"domain_name": d["domain_name"]}))
                .collect();
            json!({ "resolutions": names })
        }
        "verify-vips" => {
            let vips: Vec<Value> = arg()
                .as_array()
                .expect("a list of VIPs")
                .iter()
                .map(|v| json!({"vip": v["vip"], "vip_type": v["vip_type"], "verification": "succeeded"}))
                .collect();
            json!({ "vips": vips })
        }
        "installation-disk-speed-check" => json!({"path": arg()["path"], "io_sync_duration": 2}),
        // Each IPv4 network's addresses from .100 of its last octet up
        // answered nobody (a /24's .100-.254).
        "free-network-addresses" => {
            let nets: Vec<Value> = arg()
                .as_array()
                .expect("a list of networks")
                .iter()
                .filter_map(|n| n.as_str())
                .map(|n| {
                    let base = n.split('/').next().unwrap_or("");
                    let head = base.rsplit_once('.').map(|(h, _)| h).unwrap_or("");
                    let free: Vec<String> = (100..255).map(|o| format!("{head}.{o}")).collect();
                    json!({"network": n, "free_addresses": free})
                })
                .collect();
            Value::Array(nets)
        }
        _ => return None,
    };
    Some(out.to_string())
}
