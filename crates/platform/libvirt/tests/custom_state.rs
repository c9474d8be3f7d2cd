//! The test driver started from our own node XML
//! (`test:///<absolute path>`, <https://libvirt.org/drvtest.html>): a
//! hypervisor that already has VMs, a network with another CIDR, an
//! inactive isolated network, and a directory pool.

mod common;

use std::net::IpAddr;

use okd_libvirt::{DhcpHost, DiskSpec, DomainSpec, NicSpec, domain_owner, domain_xml};

const NODE_XML: &str = r#"<node>
  <cpu>
    <nodes>1</nodes><sockets>1</sockets><cores>8</cores><threads>1</threads>
    <active>8</active><mhz>3000</mhz><model>x86_64</model>
  </cpu>
  <memory>67108864</memory>
  <domain type='test'>
    <name>someone-elses-vm</name>
    <memory>1048576</memory>
    <vcpu>1</vcpu>
    <os><type>hvm</type></os>
  </domain>
  <domain type='test'>
    <name>old-master-0</name>
    <metadata>
      <okd:vm xmlns:okd="https://github.com/okd-install/okd-install/libvirt/1">
        <okd:cluster>old</okd:cluster>
        <okd:role>master</okd:role>
      </okd:vm>
    </metadata>
    <memory>2097152</memory>
    <vcpu>2</vcpu>
    <os><type>hvm</type></os>
  </domain>
  <network>
    <name>okdnet</name>
    <bridge name='okdbr0'/>
    <forward mode='route'/>
    <ip address='10.10.0.1' prefix='24'>
      <dhcp>
        <range start='10.10.0.100' end='10.10.0.200'/>
        <host mac='52:54:00:0a:00:05' name='old-master-0' ip='10.10.0.5'/>
      </dhcp>
    </ip>
  </network>
  <network>
    <name>isolated</name>
    <ip address='172.30.0.1' netmask='255.255.0.0'/>
  </network>
  <pool type='dir'>
    <name>vms</name>
    <target><path>/var/lib/vms</path></target>
  </pool>
</node>
"#;

fn ip(text: &str) -> IpAddr {
    text.parse().unwrap()
}

#[test]
fn a_custom_node_is_seen_and_used() {
    let dir = tempfile::tempdir().unwrap();
    let node = dir.path().join("node.xml");
    std::fs::write(&node, NODE_XML).unwrap();
    let uri = format!("test://{}", node.display());
    assert!(uri.starts_with("test:///"));
    let Some(mut virsh) = common::connect(&uri) else {
        return;
    };

    let mut domains = virsh.domains().unwrap();
    domains.sort();
    assert_eq!(domains, ["old-master-0", "someone-elses-vm"]);
    assert_eq!(
        virsh.domain_state("old-master-0").unwrap().as_deref(),
        Some("running")
    );
    assert_eq!(
        domain_owner(&virsh.domain_xml("old-master-0").unwrap()),
        Some(("old".into(), "master".into()))
    );
    assert_eq!(
        domain_owner(&virsh.domain_xml("someone-elses-vm").unwrap()),
        None
    );

    let net = virsh.network("okdnet").unwrap();
    assert!(net.active);
    assert_eq!(net.bridge.as_deref(), Some("okdbr0"));
    assert_eq!(net.forward.as_deref(), Some("route"));
    let v4 = net.ipv4.as_ref().unwrap();
    assert_eq!((v4.address, v4.prefix), (ip("10.10.0.1"), 24));
    assert_eq!(v4.dhcp_range, Some((ip("10.10.0.100"), ip("10.10.0.200"))));
    assert_eq!(
        net.dhcp_hosts,
        [DhcpHost {
            mac: "52:54:00:0a:00:05".into(),
            name: "old-master-0".into(),
            ip: ip("10.10.0.5"),
        }]
    );

    let isolated = virsh.network("isolated").unwrap();
    assert_eq!(isolated.forward, None);
    assert_eq!(isolated.ipv4.as_ref().unwrap().prefix, 16);
    assert_eq!(isolated.ipv4.as_ref().unwrap().dhcp_range, None);

    let pool = virsh.pool("vms").unwrap();
    assert_eq!(pool.path.as_deref(), Some("/var/lib/vms".as_ref()));
    assert!(pool.active);
    let mut networks = virsh.networks().unwrap();
    networks.sort();
    assert_eq!(networks, ["isolated", "okdnet"]);
    assert_eq!(virsh.pools().unwrap(), ["vms"]);
    assert_eq!(virsh.volumes("vms").unwrap(), Vec::<String>::new());
    // The driver's default objects are not there.
    assert!(virsh.network("default").is_err());

    // A VM of a new cluster on this node's network and pool.
    let path = virsh
        .create_volume("vms", "new-worker-0.qcow2", 20, "qcow2", None)
        .unwrap();
    assert_eq!(path, "/var/lib/vms/new-worker-0.qcow2");
    let spec = DomainSpec {
        name: "new-worker-0".into(),
        domain_type: "qemu".into(),
        memory_mib: 4096,
        cpus: 2,
        disks: vec![DiskSpec {
            pool: "vms".into(),
            volume: "new-worker-0.qcow2".into(),
            format: "qcow2".into(),
        }],
        nics: vec![NicSpec {
            network: "okdnet".into(),
            mac: "52:54:00:0a:00:20".into(),
        }],
        ignition: Some(dir.path().join("worker.ign")),
        cluster: "new".into(),
        role: "worker".into(),
        virtual_router_id: None,
        side_disk: None,
    };
    virsh.define(&domain_xml(&spec)).unwrap();
    virsh.start("new-worker-0").unwrap();
    let lease = DhcpHost {
        mac: "52:54:00:0a:00:20".into(),
        name: "new-worker-0".into(),
        ip: ip("10.10.0.20"),
    };
    virsh.add_dhcp_host("okdnet", &lease).unwrap();
    assert_eq!(virsh.network("okdnet").unwrap().dhcp_hosts.len(), 2);

    // A lease on a stopped network goes to its config only (`--live` is
    // refused there).
    virsh.run(&["net-destroy", "--network=isolated"]).unwrap();
    assert!(!virsh.network_active("isolated").unwrap());
    let lease = DhcpHost {
        mac: "52:54:00:0a:00:21".into(),
        name: String::new(),
        ip: ip("172.30.0.21"),
    };
    virsh.add_dhcp_host("isolated", &lease).unwrap();
    assert_eq!(
        virsh.network("isolated").unwrap().dhcp_hosts,
        std::slice::from_ref(&lease)
    );
    assert!(virsh.remove_dhcp_host("isolated", &lease).unwrap());
    assert!(!virsh.remove_dhcp_host("isolated", &lease).unwrap());

    // Tearing down the old cluster leaves the other VMs.
    assert!(virsh.remove_domain("old-master-0").unwrap());
    let mut domains = virsh.domains().unwrap();
    domains.sort();
    assert_eq!(domains, ["new-worker-0", "someone-elses-vm"]);
}
