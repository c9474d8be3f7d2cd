//! The repository's kcli example (`examples/kcli-libvirt/parameters.yml`,
//! a parameter file in the style of karmab/kcli-openshift4) loads with the
//! values it gives and the defaults for the rest.

use std::net::IpAddr;
use std::path::Path;

use okd_paramfile::{Version, load};

#[test]
fn the_kcli_example_loads() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../examples/kcli-libvirt/parameters.yml");
    let p = load(&path).unwrap();
    assert_eq!(p.version, Version::Stable);
    assert_eq!(
        (p.cluster.as_str(), p.domain.as_str()),
        ("testk", "karmalabs.com")
    );
    assert_eq!((p.masters, p.workers), (3, 2));
    assert_eq!(
        (p.master_memory, p.worker_memory, p.bootstrap_memory),
        (8192, 8192, 4096)
    );
    assert_eq!((p.numcpus, p.disk_size), (4, 30));
    assert_eq!(p.api_ip, Some("192.168.122.253".parse::<IpAddr>().unwrap()));
    assert_eq!(p.image.as_deref(), Some("rhcos-qemu.qcow2"));
    assert!(p.master_macs.is_empty() && p.worker_macs.is_empty());
    // Not in the file: the documented defaults.
    assert_eq!(p.network_type, None, "not given: the release's default");
    assert_eq!(p.ingress_ip, None);
    assert!(!p.autostart);
    // The VMs: a bootstrap, three masters, two workers, MACs generated.
    let vms = p.vms(&path).unwrap();
    let names: Vec<&str> = vms.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "testk-bootstrap",
            "testk-master-0",
            "testk-master-1",
            "testk-master-2",
            "testk-worker-0",
            "testk-worker-1"
        ]
    );
    assert_eq!(vms[0].memory_mib, 4096);
    assert!(vms.iter().all(|v| v.networks == ["default"]));
}
