//! The hosts of a user-provisioned install and the bastion that serves them.
//!
//! Two files in the asset directory describe them:
//!
//! * `agent-config.yaml` — openshift-install's agent-flow format
//!   (`apiVersion: v1beta1`, `kind: AgentConfig`; openshift/installer
//!   `pkg/types/agent/agent_config_type.go`),
//!   unchanged so the same file works with `openshift-install agent`: `hosts[]`
//!   with `hostname`, `role` (`master`/`worker`), `rootDeviceHints.deviceName`,
//!   `interfaces[{name, macAddress}]` and an nmstate `networkConfig` whose first
//!   static IPv4 address, default route and DNS servers give the node's
//!   addresses.
//! * `bastion-config.yaml` — okd-install's own small file (`apiVersion:
//!   v1alpha1`, `kind: BastionConfig`) for what agent-config has no place for:
//!   the bastion's listen address, the API and ingress addresses (or VIPs), the
//!   upstream resolvers, the bootstrap host (a UPI-only role agent-config does
//!   not allow), ports, and where the CoreOS images are.
//!
//! [`Inventory::resolve`] joins them with the cluster name and base domain into
//! the resolved view every service uses (DNS names, backends, kernel arguments).
//! [`Service::members`] is the rule for which of its hosts sit behind which
//! load-balancer frontend.

mod agent;
mod bastion;
mod bootargs;
mod inventory;
mod membership;
mod nmstate;
mod records;

use serde::{Deserialize, Serialize};

pub use agent::*;
pub use bastion::{BastionConfig, BootstrapHost, OsImages, Ports, parse_bastion_config};
pub use bootargs::whole_disk;
pub use inventory::*;
pub use membership::{Probe, Service};

/// File name of the agent-flow host list.
pub const AGENT_CONFIG_FILE: &str = "agent-config.yaml";
/// File name of the bastion settings.
pub const BASTION_CONFIG_FILE: &str = "bastion-config.yaml";

/// Errors reading or resolving the host files; each names the file and field.
/// A variant's text never repeats its `source`: print the whole chain (e.g.
/// anyhow's `{:#}`) to see the cause.
#[derive(Debug, thiserror::Error)]
pub enum HostsError {
    /// A file could not be read.
    #[error("reading {file}")]
    Io {
        /// The file.
        file: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A file is not valid YAML for its schema.
    #[error("failed to unmarshal {file}")]
    Parse {
        /// The file.
        file: String,
        /// serde's error (its text has the line and column).
        #[source]
        source: serde_yaml_ng::Error,
    },
    /// A field breaks a rule.
    #[error("invalid {file}: {field}: {message}")]
    Invalid {
        /// The file.
        file: String,
        /// Field path, e.g. `hosts[1].interfaces[0].macAddress`.
        field: String,
        /// The rule that failed.
        message: String,
    },
}

fn invalid(file: &str, field: impl Into<String>, message: impl Into<String>) -> HostsError {
    HostsError::Invalid {
        file: file.to_string(),
        field: field.into(),
        message: message.into(),
    }
}

/// `metadata` of both files.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Metadata {
    /// Cluster name (informational; must match install-config when set).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn example() -> Inventory {
        let root =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../examples/baremetal-single-master");
        Inventory::load(&root, "okd", "example").unwrap()
    }

    #[test]
    fn allow_recursion_defaults_to_the_node_networks() {
        let inv = example();
        let nets: Vec<String> = inv.allow_recursion.iter().map(|n| n.to_string()).collect();
        assert_eq!(nets, ["192.168.120.0/24", "127.0.0.0/8", "::1/128"]);
    }

    #[test]
    fn single_master_example_resolves() {
        let inv = example();
        assert_eq!(inv.cluster_domain, "okd.example");
        assert_eq!(inv.api.to_string(), "192.168.120.101");
        let names: Vec<(&str, Role, String)> = inv
            .nodes
            .iter()
            .map(|n| (n.hostname.as_str(), n.role, n.address.to_string()))
            .collect();
        assert_eq!(
            names,
            vec![
                ("bootstrap", Role::Bootstrap, "192.168.120.102".into()),
                ("master", Role::Master, "192.168.120.103".into()),
                ("worker1", Role::Worker, "192.168.120.104".into()),
            ]
        );
        let m = &inv.nodes[1];
        assert_eq!(m.etcd_name.as_deref(), Some("etcd-0"));
        assert_eq!(m.netmask(), "255.255.255.0");
        assert_eq!(m.gateway.unwrap().to_string(), "192.168.120.101");
        assert_eq!(m.interface.as_deref(), Some("ens787f0"));
        assert_eq!(inv.nodes[2].interface.as_deref(), Some("ens786f1"));
        assert_eq!(m.install_disk, "/dev/sda");
        assert!(
            inv.by_mac(&m.mac.clone().unwrap().to_uppercase().replace(':', "-"))
                .is_some()
        );
    }

    #[test]
    fn rules_name_file_and_field() {
        let root =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../examples/baremetal-single-master");
        let agent_text = std::fs::read_to_string(root.join(AGENT_CONFIG_FILE)).unwrap();
        let bastion =
            parse_bastion_config(&std::fs::read(root.join(BASTION_CONFIG_FILE)).unwrap()).unwrap();
        let mut agent = parse_agent_config(agent_text.as_bytes()).unwrap();
        agent.hosts[1].interfaces[0].mac_address = "zz".into();
        let e = Inventory::resolve(&agent, &bastion, "okd", "example")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("agent-config.yaml") && e.contains("hosts[1].interfaces[0].macAddress"),
            "{e}"
        );
        let mut agent = parse_agent_config(agent_text.as_bytes()).unwrap();
        agent.hosts[1].network_config = agent.hosts[0].network_config.clone();
        let e = Inventory::resolve(&agent, &bastion, "okd", "example")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("192.168.120.103 is used by master and worker1")
                || e.contains("is not in interfaces[]"),
            "{e}"
        );
        let e = Inventory::resolve(
            &parse_agent_config(agent_text.as_bytes()).unwrap(),
            &bastion,
            "other",
            "example",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("metadata.name"), "{e}");
        // Issue #27: a partition, a relative path or an unsupported hint is
        // refused by name instead of installing to /dev/sda.
        for (disk, why) in [
            ("sda", "is not an absolute device path"),
            ("/dev/sda1", "is a partition"),
            ("/dev/nvme0n1p2", "is a partition"),
            (
                "/dev/disk/by-id/wwn-0x5000c500a0b1c2d3-part1",
                "is a partition",
            ),
            ("/tmp/sda", "is not under /dev/"),
            ("/dev/../sda", "is not a device path"),
        ] {
            let mut agent = parse_agent_config(agent_text.as_bytes()).unwrap();
            agent.hosts[1].root_device_hints = Some(crate::RootDeviceHints {
                device_name: Some(disk.into()),
                ..Default::default()
            });
            let e = Inventory::resolve(&agent, &bastion, "okd", "example")
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("hosts[1].rootDeviceHints.deviceName") && e.contains(why),
                "{disk}: {e}"
            );
        }
        for ok in [
            "/dev/sda",
            "/dev/nvme0n1",
            "/dev/vda",
            "/dev/mmcblk0",
            "/dev/disk/by-id/wwn-0x5000c500a0b1c2d3",
            "/dev/disk/by-path/pci-0000:00:1f.2-ata-1",
        ] {
            assert_eq!(crate::whole_disk(ok), Ok(()), "{ok}");
        }
        let mut agent = parse_agent_config(agent_text.as_bytes()).unwrap();
        agent.hosts[0].root_device_hints = Some(crate::RootDeviceHints {
            device_name: None,
            other: [(
                "serialNumber".to_string(),
                serde_json::Value::from("S3Z8NX0K"),
            )]
            .into(),
        });
        let e = Inventory::resolve(&agent, &bastion, "okd", "example")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("hosts[0].rootDeviceHints.serialNumber")
                && e.contains("is not supported here")
                && e.contains("without it /dev/sda would be used"),
            "{e}"
        );
        // Issue #27: the generated HAProxy's stats page and serve's status
        // page used to share 9000; two equal ports are refused by name.
        let mut clash = bastion.clone();
        clash.ports.haproxy_stats = clash.ports.status;
        let e = Inventory::resolve(
            &parse_agent_config(agent_text.as_bytes()).unwrap(),
            &clash,
            "okd",
            "example",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("bastion-config.yaml")
                && e.contains("ports.haproxyStats")
                && e.contains("port 9000 is also ports.status"),
            "{e}"
        );
        let e = chain(
            &parse_bastion_config(
                b"apiVersion: v1alpha1\nkind: BastionConfig\nlistenAddress: 1.2.3.4\nbogus: 1\n",
            )
            .unwrap_err(),
        );
        assert!(
            e.starts_with("failed to unmarshal bastion-config.yaml: ") && e.contains("bogus"),
            "{e}"
        );
    }

    /// The error and its sources joined by `": "`.
    fn chain(e: &(dyn std::error::Error + 'static)) -> String {
        let mut out = e.to_string();
        let mut src = e.source();
        while let Some(s) = src {
            out.push_str(": ");
            out.push_str(&s.to_string());
            src = s.source();
        }
        out
    }

    #[test]
    fn messages_do_not_repeat_their_source() {
        let dir = std::env::temp_dir().join(format!("okd-hosts-nofile-{}", std::process::id()));
        let e = Inventory::load(&dir, "okd", "example").unwrap_err();
        let cause = std::error::Error::source(&e).expect("the I/O error is the source");
        assert_eq!(e.to_string(), "reading agent-config.yaml");
        assert!(!e.to_string().contains(&cause.to_string()), "{e}");
        assert_eq!(chain(&e), format!("reading agent-config.yaml: {cause}"));
        let e = parse_agent_config(b"kind: [").unwrap_err();
        let cause = std::error::Error::source(&e).expect("serde's error is the source");
        assert_eq!(e.to_string(), "failed to unmarshal agent-config.yaml");
        assert!(cause.to_string().contains("line"), "{cause}");
    }

    #[test]
    fn images_dir_stays_away_from_secrets() {
        let root =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../examples/baremetal-single-master");
        let agent =
            parse_agent_config(&std::fs::read(root.join(AGENT_CONFIG_FILE)).unwrap()).unwrap();
        let bastion =
            parse_bastion_config(&std::fs::read(root.join(BASTION_CONFIG_FILE)).unwrap()).unwrap();
        for bad in [
            "",
            ".",
            "./images",
            "..",
            "images/../..",
            "/srv/images",
            "auth",
            "x/auth",
            "a//b",
        ] {
            let mut b = bastion.clone();
            b.os_images.directory = bad.into();
            let e = Inventory::resolve(&agent, &b, "okd", "example")
                .expect_err(bad)
                .to_string();
            assert!(
                e.contains("bastion-config.yaml") && e.contains("osImages.directory"),
                "{bad:?}: {e}"
            );
        }
        for good in ["images", "srv/images", "rhcos-4.13"] {
            let mut b = bastion.clone();
            b.os_images.directory = good.into();
            Inventory::resolve(&agent, &b, "okd", "example").expect(good);
        }
    }

    #[test]
    fn prefix_length_is_range_checked_at_load() {
        let root =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../examples/baremetal-single-master");
        let agent_text = std::fs::read_to_string(root.join(AGENT_CONFIG_FILE)).unwrap();
        let bastion =
            parse_bastion_config(&std::fs::read(root.join(BASTION_CONFIG_FILE)).unwrap()).unwrap();
        let field = "hosts[1].networkConfig.interfaces[0].ipv4.address[0].prefix-length";
        for (bad, shown) in [
            ("33", "33"),
            ("40", "40"),
            ("300", "300"),
            ("-1", "-1"),
            ("18446744073709551615", "18446744073709551615"),
            ("\"24\"", "\"24\""),
        ] {
            let text = agent_text.replacen(
                "ip: 192.168.120.104\n                prefix-length: 24",
                &format!("ip: 192.168.120.104\n                prefix-length: {bad}"),
                1,
            );
            assert_ne!(text, agent_text, "fixture changed");
            let agent = parse_agent_config(text.as_bytes()).unwrap();
            let e = Inventory::resolve(&agent, &bastion, "okd", "example")
                .unwrap_err()
                .to_string();
            assert_eq!(
                e,
                format!(
                    "invalid agent-config.yaml: {field}: host \"worker1\": {shown} is not a prefix length for ipv4 (0-32)"
                )
            );
        }
        // IPv6 allows up to 128, not more.
        let mut agent = parse_agent_config(agent_text.as_bytes()).unwrap();
        let set = |agent: &mut AgentConfig, p: u64| {
            agent.hosts[1].network_config = Some(serde_json::json!({"interfaces": [
                {"name": "ens786f1", "ipv6": {"address": [{"ip": "fd00::104", "prefix-length": p}]}}]}));
        };
        set(&mut agent, 128);
        let inv = Inventory::resolve(&agent, &bastion, "okd", "example").unwrap();
        assert_eq!(inv.nodes[2].prefix, 128);
        set(&mut agent, 129);
        let e = Inventory::resolve(&agent, &bastion, "okd", "example")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("hosts[1].networkConfig.interfaces[0].ipv6.address[0].prefix-length")
                && e.contains("129 is not a prefix length for ipv6 (0-128)"),
            "{e}"
        );
    }

    #[test]
    fn netmask_never_panics() {
        let mut n = example().nodes[1].clone();
        for (p, want) in [
            (0, "0.0.0.0"),
            (8, "255.0.0.0"),
            (32, "255.255.255.255"),
            (40, "255.255.255.255"),
            (255, "255.255.255.255"),
        ] {
            n.prefix = p;
            assert_eq!(n.netmask(), want, "/{p}");
        }
    }
}
