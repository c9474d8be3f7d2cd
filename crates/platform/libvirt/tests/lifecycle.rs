//! A cluster's VMs from creation to removal in one session on the test
//! driver: volumes, domains from `domain_xml`, DHCP leases, and a teardown
//! that leaves the hypervisor as it was.

mod common;

use std::net::IpAddr;
use std::path::PathBuf;

use okd_libvirt::{
    DhcpHost, DiskSpec, DomainSpec, IGNITION_FW_CFG_NAME, NicSpec, domain_owner, domain_xml,
};
use roxmltree::Document;

const POOL: &str = "default-pool";
const NET: &str = "default";

struct Vm {
    spec: DomainSpec,
    hosts: Vec<DhcpHost>,
}

fn cluster_vms(ignition_dir: &std::path::Path) -> Vec<Vm> {
    ["bootstrap", "master", "worker"]
        .iter()
        .enumerate()
        .map(|(i, role)| {
            let name = format!("c1-{role}-0");
            let macs = [
                format!("52:54:00:c1:00:{:02x}", 2 * i),
                format!("52:54:00:c1:00:{:02x}", 2 * i + 1),
            ];
            let spec = DomainSpec {
                name: name.clone(),
                domain_type: "kvm".into(),
                memory_mib: 8192 * (i as u32 + 1),
                cpus: 2 + 2 * i as u32,
                disks: vec![
                    DiskSpec {
                        pool: POOL.into(),
                        volume: format!("{name}.qcow2"),
                        format: "qcow2".into(),
                    },
                    DiskSpec {
                        pool: POOL.into(),
                        volume: format!("{name}-1.img"),
                        format: "raw".into(),
                    },
                ],
                nics: macs
                    .iter()
                    .map(|mac| NicSpec {
                        network: NET.into(),
                        mac: mac.clone(),
                    })
                    .collect(),
                ignition: Some(ignition_dir.join(format!("{role}.ign"))),
                cluster: "c1".into(),
                role: (*role).into(),
                virtual_router_id: Some(42),
                side_disk: None,
            };
            let hosts = macs
                .iter()
                .enumerate()
                .map(|(j, mac)| DhcpHost {
                    mac: mac.clone(),
                    name: if j == 0 { name.clone() } else { String::new() },
                    ip: format!("192.168.122.{}", 10 + 2 * i + j).parse().unwrap(),
                })
                .collect();
            Vm { spec, hosts }
        })
        .collect()
}

/// What the live domain XML says: memory in MiB, vCPUs, MACs, fw_cfg file.
fn read_back(xml: &str) -> (u64, u32, Vec<String>, Option<PathBuf>) {
    let doc = Document::parse(xml).unwrap();
    let root = doc.root_element();
    let memory = root.children().find(|n| n.has_tag_name("memory")).unwrap();
    let kib: u64 = memory.text().unwrap().parse().unwrap();
    assert_eq!(memory.attribute("unit"), Some("KiB"));
    let vcpu = root.children().find(|n| n.has_tag_name("vcpu")).unwrap();
    let macs = root
        .descendants()
        .filter(|n| n.has_tag_name("mac"))
        .map(|n| n.attribute("address").unwrap().to_owned())
        .collect();
    let fw_cfg = root
        .descendants()
        .find(|n| n.has_tag_name("entry") && n.attribute("name") == Some(IGNITION_FW_CFG_NAME))
        .and_then(|n| n.attribute("file"))
        .map(PathBuf::from);
    (
        kib / 1024,
        vcpu.text().unwrap().parse().unwrap(),
        macs,
        fw_cfg,
    )
}

#[test]
fn cluster_lifecycle_leaves_the_hypervisor_as_it_was() {
    let Some(mut virsh) = common::connect("test:///default") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let domains_before = virsh.domains().unwrap();
    let volumes_before = virsh.volumes(POOL).unwrap();
    let vms = cluster_vms(dir.path());

    // The CoreOS image, then per VM a copy-on-write boot disk and a data disk
    // (the test driver's pool has 100 GiB and allocates the full capacity).
    let image = virsh
        .create_volume(POOL, "c1-coreos.qcow2", 8, "qcow2", None)
        .unwrap();
    assert_eq!(image, "/default-pool/c1-coreos.qcow2");
    for vm in &vms {
        let boot = &vm.spec.disks[0];
        let path = virsh
            .create_volume(POOL, &boot.volume, 16, "qcow2", Some("c1-coreos.qcow2"))
            .unwrap();
        assert_eq!(path, format!("/default-pool/{}", boot.volume));
        let data = &vm.spec.disks[1];
        virsh
            .create_volume(POOL, &data.volume, 4, "raw", None)
            .unwrap();
        assert!(virsh.volume_exists(POOL, &data.volume).unwrap());
    }
    let err = virsh
        .create_volume(POOL, "c1-coreos.qcow2", 8, "qcow2", None)
        .unwrap_err();
    assert!(err.to_string().contains("vol-create-as"), "{err}");

    for vm in &vms {
        let name = &vm.spec.name;
        virsh.define(&domain_xml(&vm.spec)).unwrap();
        assert_eq!(
            virsh.domain_state(name).unwrap().as_deref(),
            Some("shut off")
        );
        virsh.set_autostart(name, true).unwrap();
        virsh.start(name).unwrap();
        assert_eq!(
            virsh.domain_state(name).unwrap().as_deref(),
            Some("running")
        );
        for host in &vm.hosts {
            virsh.add_dhcp_host(NET, host).unwrap();
        }
    }

    let mut want_domains = domains_before.clone();
    want_domains.extend(vms.iter().map(|vm| vm.spec.name.clone()));
    let mut domains = virsh.domains().unwrap();
    domains.sort();
    want_domains.sort();
    assert_eq!(domains, want_domains);

    for vm in &vms {
        let xml = virsh.domain_xml(&vm.spec.name).unwrap();
        let (memory_mib, cpus, macs, fw_cfg) = read_back(&xml);
        assert_eq!(memory_mib, u64::from(vm.spec.memory_mib));
        assert_eq!(cpus, vm.spec.cpus);
        let want_macs: Vec<_> = vm.spec.nics.iter().map(|n| n.mac.clone()).collect();
        assert_eq!(macs, want_macs);
        assert_eq!(fw_cfg, vm.spec.ignition);
        assert_eq!(
            domain_owner(&xml),
            Some(("c1".to_owned(), vm.spec.role.clone())),
            "{xml}"
        );
        // The test driver keeps the cluster's VRRP id for the next cluster to read.
        assert_eq!(okd_libvirt::domain_vrid(&xml), Some(42), "{xml}");
        assert!(
            xml.contains("<source pool='default-pool' volume='c1-"),
            "{xml}"
        );
    }
    // The test driver's own domain is not ours.
    assert_eq!(domain_owner(&virsh.domain_xml("test").unwrap()), None);

    // Leases: all six seen, adding again changes nothing.
    let all_hosts: Vec<&DhcpHost> = vms.iter().flat_map(|vm| &vm.hosts).collect();
    let leases = virsh.network(NET).unwrap().dhcp_hosts;
    assert_eq!(leases.len(), all_hosts.len(), "{leases:?}");
    for host in &all_hosts {
        assert!(
            leases.iter().any(|l| l.same_as(host)),
            "{host:?} in {leases:?}"
        );
    }
    virsh.add_dhcp_host(NET, all_hosts[0]).unwrap();
    assert_eq!(
        virsh.network(NET).unwrap().dhcp_hosts.len(),
        all_hosts.len()
    );
    // Another lease for a MAC already leased: libvirt's refusal comes back.
    let clash = DhcpHost {
        mac: all_hosts[0].mac.clone(),
        name: "other".into(),
        ip: "192.168.122.99".parse::<IpAddr>().unwrap(),
    };
    let err = virsh.add_dhcp_host(NET, &clash).unwrap_err();
    assert!(err.to_string().contains("net-update"), "{err}");

    // Teardown, twice: the second time finds nothing.
    for round in 0..2 {
        let first = round == 0;
        for host in &all_hosts {
            assert_eq!(virsh.remove_dhcp_host(NET, host).unwrap(), first);
        }
        for vm in &vms {
            assert_eq!(virsh.remove_domain(&vm.spec.name).unwrap(), first);
            assert_eq!(virsh.domain_state(&vm.spec.name).unwrap(), None);
            for disk in &vm.spec.disks {
                assert_eq!(virsh.delete_volume(POOL, &disk.volume).unwrap(), first);
            }
        }
        assert_eq!(virsh.delete_volume(POOL, "c1-coreos.qcow2").unwrap(), first);
    }
    assert_eq!(virsh.domains().unwrap(), domains_before);
    assert_eq!(virsh.volumes(POOL).unwrap(), volumes_before);
    assert!(virsh.network(NET).unwrap().dhcp_hosts.is_empty());
}

#[test]
fn remove_domain_falls_back_when_nvram_flag_is_refused() {
    let Some(mut virsh) = common::connect("test:///default") else {
        return;
    };
    // A UEFI VM: the test driver refuses `undefine --nvram` ("unsupported
    // flags"), a real libvirt needs it.
    let spec = DomainSpec {
        name: "uefi-vm".into(),
        domain_type: "qemu".into(),
        memory_mib: 512,
        cpus: 1,
        disks: vec![],
        nics: vec![],
        ignition: None,
        cluster: "c1".into(),
        role: "worker".into(),
        virtual_router_id: None,
        side_disk: None,
    };
    let xml = domain_xml(&spec).replace(
        "    <boot dev='hd'/>\n",
        "    <loader readonly='yes' type='pflash'>/usr/share/OVMF/OVMF_CODE.fd</loader>\n    \
         <nvram>/var/tmp/uefi-vm_VARS.fd</nvram>\n    <boot dev='hd'/>\n",
    );
    virsh.define(&xml).unwrap();
    virsh.start("uefi-vm").unwrap();
    assert!(virsh.domain_xml("uefi-vm").unwrap().contains("<nvram"));
    assert!(virsh.remove_domain("uefi-vm").unwrap());
    assert!(!virsh.domain_exists("uefi-vm").unwrap());
}
