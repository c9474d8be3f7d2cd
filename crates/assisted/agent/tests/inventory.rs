//! The inventory of a made-up machine (files under a temporary root) and
//! of this machine, checked against what the kernel says directly.

use okd_assisted_agent::{Root, host_id, inventory};
use okd_assisted_api::{Interface, Route};

fn fake(files: &[(&str, &str)]) -> (tempfile::TempDir, Root) {
    let d = tempfile::tempdir().unwrap();
    for (p, text) in files {
        let path = d.path().join(p.trim_start_matches('/'));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let root = Root(d.path().to_path_buf());
    (d, root)
}

#[test]
fn a_made_up_machine() {
    let cpuinfo = "processor\t: 0\nmodel name\t: Intel Xeon\ncpu MHz\t\t: 2100.000\nflags\t\t: fpu vmx hypervisor\n\nprocessor\t: 1\nmodel name\t: Intel Xeon\ncpu MHz\t\t: 2400.500\nflags\t\t: fpu vmx hypervisor\n";
    let (_d, r) = fake(&[
        ("/proc/cpuinfo", cpuinfo),
        (
            "/proc/meminfo",
            "MemTotal:       16303412 kB\nMemFree: 1 kB\n",
        ),
        ("/sys/devices/system/memory/block_size_bytes", "8000000\n"),
        ("/sys/devices/system/memory/memory0/online", "1\n"),
        ("/sys/devices/system/memory/memory1/online", "1\n"),
        ("/sys/devices/system/memory/memory2/online", "0\n"),
        (
            "/proc/cmdline",
            "BOOT_IMAGE=/vmlinuz ip=dhcp BOOTIF=01-52-54-00-AA-00-02\n",
        ),
        ("/sys/firmware/efi/fw_platform_size", "64\n"),
        ("/sys/class/dmi/id/sys_vendor", "Red Hat\n"),
        ("/sys/class/dmi/id/product_name", "KVM\n"),
        ("/sys/class/tpm/tpm0/tpm_version_major", "2\n"),
        ("/proc/sys/kernel/hostname", "localhost\n"),
        ("/sys/class/net/ensfake3/address", "52:54:00:aa:00:02\n"),
    ]);
    let inv = inventory::gather(&r);
    assert_eq!(inv.cpu.count, 2);
    assert_eq!(inv.cpu.model_name, "Intel Xeon");
    assert_eq!(inv.cpu.frequency, 2400.5);
    assert_eq!(inv.cpu.flags, ["fpu", "vmx", "hypervisor"]);
    assert_eq!(inv.memory.usable_bytes, 16_303_412 * 1024);
    // Two online blocks of 128 MiB are less than MemTotal: not believable,
    // so the estimate from meminfo.
    assert_eq!(inv.memory.physical_bytes_method, "meminfo");
    assert_eq!(inv.boot.current_boot_mode, "uefi");
    assert_eq!(inv.boot.pxe_interface, "52:54:00:aa:00:02");
    assert_eq!(inv.system_vendor.manufacturer, "Red Hat");
    assert!(inv.system_vendor.r#virtual);
    assert_eq!(inv.tpm_version, "2.0");
    assert_eq!(inv.hostname, "52-54-00-aa-00-02", "localhost is replaced");

    // Enough memory blocks: physical from sysfs.
    let mut files = vec![
        ("/proc/meminfo", "MemTotal:       262144 kB\n".to_string()),
        (
            "/sys/devices/system/memory/block_size_bytes",
            "8000000\n".to_string(),
        ),
    ];
    let names: Vec<String> = (0..3)
        .map(|i| format!("/sys/devices/system/memory/memory{i}/online"))
        .collect();
    for n in &names {
        files.push((n.as_str(), "1\n".to_string()));
    }
    let refs: Vec<(&str, &str)> = files.iter().map(|(a, b)| (*a, b.as_str())).collect();
    let (_d, r) = fake(&refs);
    let m = inventory::memory(&r);
    assert_eq!(
        (m.physical_bytes, m.physical_bytes_method.as_str()),
        (3 * 0x8000000, "ghw")
    );
    assert_eq!(inventory::tpm(&r), "none");
    assert_eq!(inventory::boot(&r).current_boot_mode, "bios");
}

#[test]
fn this_machine_as_the_kernel_says() {
    let root = Root::default();
    let inv = inventory::gather(&root);
    let nproc = std::thread::available_parallelism().unwrap().get() as u32;
    assert!(inv.cpu.count >= nproc, "{} < {nproc}", inv.cpu.count);
    assert_eq!(inv.cpu.architecture, std::env::consts::ARCH);
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap();
    let total: u64 = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap();
    assert_eq!(inv.memory.usable_bytes, total * 1024);
    assert!(inv.memory.physical_bytes >= inv.memory.usable_bytes);
    assert_eq!(
        inv.boot.current_boot_mode == "uefi",
        std::path::Path::new("/sys/firmware/efi").exists()
    );
    let id = host_id(&root);
    assert_eq!(id.len(), 36, "{id}");
    assert_eq!(id, host_id(&root), "the same id every time");
}

#[test]
fn disks_of_a_made_up_machine() {
    let (d, r) = fake(&[
        ("/sys/block/vda/size", "41943040\n"),
        ("/sys/block/vda/queue/rotational", "1\n"),
        ("/sys/block/vda/serial", "okd-root\n"),
        ("/sys/block/vda/removable", "0\n"),
        ("/sys/block/vda/ro", "0\n"),
        ("/sys/block/vda/vda1/partition", "1\n"),
        ("/sys/block/sdb/size", "2097152\n"),
        ("/sys/block/sdb/queue/rotational", "0\n"),
        ("/sys/block/sdb/device/model", "QEMU HARDDISK\n"),
        ("/sys/block/sdb/device/scsi_device/0:0:1:0/x", ""),
        ("/sys/block/sdb/holders/dm-0", ""),
        ("/sys/block/sr0/size", "2048\n"),
        ("/sys/block/sr0/ro", "1\n"),
        ("/sys/block/loop0/size", "8\n"),
        (
            "/proc/mounts",
            "/dev/vda1 / ext4 rw 0 0\nproc /proc proc rw 0 0\n",
        ),
    ]);
    // sdb: a boot sector, and by-id links (the WWN one wins).
    let mut sector = vec![0u8; 512];
    sector[510] = 0x55;
    sector[511] = 0xAA;
    std::fs::create_dir_all(d.path().join("dev/disk/by-id")).unwrap();
    std::fs::write(d.path().join("dev/sdb"), &sector).unwrap();
    std::os::unix::fs::symlink(
        "../../sdb",
        d.path().join("dev/disk/by-id/scsi-0QEMU_HARDDISK"),
    )
    .unwrap();
    std::os::unix::fs::symlink(
        "../../sdb",
        d.path().join("dev/disk/by-id/wwn-0x5000c500a1b2c3d4"),
    )
    .unwrap();
    let disks = inventory::disks(&r);
    let names: Vec<&str> = disks.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names, ["sdb", "sr0", "vda"], "loop0 is not reported");
    let sdb = &disks[0];
    assert_eq!(sdb.id, "/dev/disk/by-id/wwn-0x5000c500a1b2c3d4");
    assert_eq!(sdb.drive_type, "SSD");
    assert_eq!(sdb.size_bytes, 1024 * 1024 * 1024);
    assert_eq!(sdb.hctl, "0:0:1:0");
    assert_eq!(sdb.holders, "dm-0");
    assert!(sdb.bootable && sdb.installation_eligibility.eligible);
    assert_eq!(sdb.model, "QEMU HARDDISK");
    let sr0 = &disks[1];
    assert_eq!(sr0.drive_type, "ODD");
    assert_eq!(
        sr0.installation_eligibility.not_eligible_reasons,
        ["Disk is read-only"]
    );
    let vda = &disks[2];
    assert_eq!(
        (
            vda.id.as_str(),
            vda.drive_type.as_str(),
            vda.serial.as_str()
        ),
        ("/dev/vda", "HDD", "okd-root")
    );
    assert_eq!(vda.size_bytes, 20 * 1024 * 1024 * 1024);
    assert!(!vda.bootable);
    assert_eq!(
        vda.installation_eligibility.not_eligible_reasons,
        ["Disk is mounted: vda1 at /"]
    );
}

#[test]
fn this_machines_disks_as_sysfs_says() {
    let disks = inventory::disks(&Root::default());
    let mut want: Vec<String> = std::fs::read_dir("/sys/block")
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| {
            !["loop", "ram", "zram", "dm-", "nbd"]
                .iter()
                .any(|p| n.starts_with(p))
        })
        .collect();
    want.sort();
    let names: Vec<String> = disks.iter().map(|d| d.name.clone()).collect();
    assert_eq!(names, want);
    for d in &disks {
        let sectors: u64 = std::fs::read_to_string(format!("/sys/block/{}/size", d.name))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert_eq!(d.size_bytes, sectors * 512, "{}", d.name);
    }
    // The disk holding / is not eligible (it is mounted, or a partition of it is).
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap();
    if let Some(dev) = mounts
        .lines()
        .find(|l| l.split_whitespace().nth(1) == Some("/"))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|d| d.strip_prefix("/dev/"))
        && let Some(disk) = disks.iter().find(|d| dev.starts_with(&d.name))
    {
        assert!(!disk.installation_eligibility.eligible, "{disk:?}");
    }
}

/// An IPv4 address as `/proc/net/route` prints it: its network-order bytes
/// read as a native `u32`, in hex.
fn route_hex(a: [u8; 4]) -> String {
    format!("{:08X}", u32::from_ne_bytes(a))
}

#[test]
fn interfaces_and_routes_of_a_made_up_machine() {
    let route = format!(
        "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n\
         ensfake3\t{}\t{}\t0003\t0\t0\t100\t{}\t0\t0\t0\n\
         ensfake3\t{}\t{}\t0001\t0\t0\t100\t{}\t0\t0\t0\n\
         ensfake4\t{}\t{}\t0000\t0\t0\t0\t{}\t0\t0\t0\n",
        route_hex([0, 0, 0, 0]),
        route_hex([192, 168, 126, 1]),
        route_hex([0, 0, 0, 0]),
        route_hex([192, 168, 126, 0]),
        route_hex([0, 0, 0, 0]),
        route_hex([255, 255, 255, 0]),
        // Not up: left out.
        route_hex([10, 0, 0, 0]),
        route_hex([0, 0, 0, 0]),
        route_hex([255, 0, 0, 0]),
    );
    let z = "00000000000000000000000000000000";
    let ipv6_route = [
        // The default route via 2001:db8::1, metric 1024.
        format!("{z} 00 {z} 00 20010db8000000000000000000000001 00000400 00000001 00000000 00000003     ensfake3"),
        // The link-local network.
        format!("fe800000000000000000000000000000 40 {z} 00 {z} 00000100 00000001 00000000 00000001     ensfake3"),
        // Local-table entries (local, anycast), multicast, lo and the null
        // route: left out.
        format!("20010db8000000000000000000000000 80 {z} 00 {z} 00000000 00000002 00000000 80300001     ensfake3"),
        format!("20010db8000000000000000000000010 80 {z} 00 {z} 00000000 00000002 00000000 80200001     ensfake3"),
        format!("ff000000000000000000000000000000 08 {z} 00 {z} 00000100 00000002 00000000 00000001     ensfake3"),
        format!("00000000000000000000000000000001 80 {z} 00 {z} 00000000 00000002 00000000 80200001       lo"),
        format!("{z} 00 {z} 00 {z} ffffffff 00000001 00000000 00200200       lo"),
    ]
    .join("\n");
    let (d, r) = fake(&[
        // ensfake3: a virtio NIC, up, with carrier.
        ("/sys/class/net/ensfake3/device/vendor", "0x1af4\n"),
        ("/sys/class/net/ensfake3/device/device", "0x1000\n"),
        ("/sys/class/net/ensfake3/address", "52:54:00:AA:00:02\n"),
        ("/sys/class/net/ensfake3/mtu", "1500\n"),
        ("/sys/class/net/ensfake3/carrier", "1\n"),
        ("/sys/class/net/ensfake3/speed", "1000\n"),
        ("/sys/class/net/ensfake3/flags", "0x1003\n"),
        ("/sys/class/net/ensfake3/operstate", "up\n"),
        (
            "/sys/class/net/ensfake3/uevent",
            "INTERFACE=ensfake3\nIFINDEX=2\n",
        ),
        // ensfake4: down (carrier and speed unreadable, as EINVAL says).
        ("/sys/class/net/ensfake4/device/vendor", "0x8086\n"),
        ("/sys/class/net/ensfake4/device/device", "0x100e\n"),
        ("/sys/class/net/ensfake4/address", "52:54:00:aa:00:03\n"),
        ("/sys/class/net/ensfake4/mtu", "9000\n"),
        ("/sys/class/net/ensfake4/flags", "0x1002\n"),
        ("/sys/class/net/ensfake4/operstate", "down\n"),
        // Kinds: a bond, a VLAN, a veth are reported; a bridge, a dummy,
        // a tun and lo are not.
        ("/sys/class/net/bond0/bonding/mode", "active-backup 1\n"),
        ("/sys/class/net/bond0/address", "52:54:00:aa:00:04\n"),
        ("/sys/class/net/bond0/flags", "0x1402\n"),
        (
            "/sys/class/net/ensfake3.100/uevent",
            "DEVTYPE=vlan\nINTERFACE=ensfake3.100\n",
        ),
        ("/sys/class/net/ensfake3.100/address", "52:54:00:aa:00:02\n"),
        ("/sys/class/net/veth0/iflink", "9\n"),
        ("/sys/class/net/veth0/ifindex", "8\n"),
        ("/sys/class/net/veth0/address", "02:00:00:00:00:08\n"),
        ("/sys/class/net/br0/bridge/stp_state", "0\n"),
        ("/sys/class/net/br0/address", "52:54:00:aa:00:05\n"),
        ("/sys/class/net/dummy0/iflink", "11\n"),
        ("/sys/class/net/dummy0/ifindex", "11\n"),
        ("/sys/class/net/tun0/tun_flags", "0x1001\n"),
        ("/sys/class/net/tun0/iflink", "12\n"),
        ("/sys/class/net/tun0/ifindex", "12\n"),
        ("/sys/class/net/lo/address", "00:00:00:00:00:00\n"),
        ("/sys/class/net/lo/flags", "0x9\n"),
        (
            "/proc/net/if_inet6",
            "20010db8000000000000000000000010 02 40 00 80     ensfake3\n\
             fe80000000000000505400fffeaa0002 02 40 20 80     ensfake3\n\
             00000000000000000000000000000001 01 80 10 80       lo\n",
        ),
        ("/proc/net/route", &route),
        ("/proc/net/ipv6_route", &ipv6_route),
    ]);
    // A macvlan: stacked on ensfake3 (a lower_ link), so not a veth.
    std::fs::create_dir_all(d.path().join("sys/class/net/macvlan0")).unwrap();
    std::fs::write(d.path().join("sys/class/net/macvlan0/iflink"), "2\n").unwrap();
    std::fs::write(d.path().join("sys/class/net/macvlan0/ifindex"), "13\n").unwrap();
    std::os::unix::fs::symlink(
        "../ensfake3",
        d.path().join("sys/class/net/macvlan0/lower_ens3"),
    )
    .unwrap();
    let kinds: Vec<(String, String)> = [
        "ensfake3",
        "ensfake4",
        "bond0",
        "ensfake3.100",
        "veth0",
        "br0",
        "dummy0",
        "tun0",
        "macvlan0",
    ]
    .iter()
    .map(|n| (n.to_string(), inventory::link_kind(&r, n)))
    .collect();
    assert_eq!(
        kinds,
        [
            ("ensfake3", "physical"),
            ("ensfake4", "physical"),
            ("bond0", "bond"),
            ("ensfake3.100", "vlan"),
            ("veth0", "veth"),
            ("br0", "bridge"),
            ("dummy0", "virtual"),
            ("tun0", "tun"),
            ("macvlan0", "virtual"),
        ]
        .map(|(a, b)| (a.to_string(), b.to_string()))
    );

    let inv = inventory::gather(&r);
    let names: Vec<&str> = inv.interfaces.iter().map(|i| i.name.as_str()).collect();
    assert_eq!(
        names,
        ["bond0", "ensfake3", "ensfake3.100", "ensfake4", "veth0"]
    );
    let ensfake3 = &inv.interfaces[1];
    assert_eq!(
        ensfake3,
        &Interface {
            name: "ensfake3".into(),
            mac_address: "52:54:00:aa:00:02".into(),
            // No such interface in the test's namespace: no IPv4 from getifaddrs.
            ipv4_addresses: vec![],
            ipv6_addresses: vec!["2001:db8::10/64".into()],
            mtu: 1500,
            speed_mbps: 1000,
            has_carrier: true,
            kind: "physical".into(),
            vendor: "0x1af4".into(),
            product: "0x1000".into(),
            flags: ["up", "broadcast", "multicast", "running"]
                .map(String::from)
                .to_vec(),
            biosdevname: String::new(),
        }
    );
    let ensfake4 = &inv.interfaces[3];
    assert_eq!(
        ensfake4,
        &Interface {
            name: "ensfake4".into(),
            mac_address: "52:54:00:aa:00:03".into(),
            ipv4_addresses: vec![],
            ipv6_addresses: vec![],
            mtu: 9000,
            speed_mbps: -1,
            has_carrier: false,
            kind: "physical".into(),
            vendor: "0x8086".into(),
            product: "0x100e".into(),
            flags: ["broadcast", "multicast"].map(String::from).to_vec(),
            biosdevname: String::new(),
        }
    );
    let bond0 = &inv.interfaces[0];
    assert_eq!(
        (bond0.kind.as_str(), bond0.vendor.as_str(), bond0.speed_mbps),
        ("bond", "", -1)
    );
    assert_eq!(bond0.flags, ["broadcast", "multicast"]);
    assert_eq!(inv.interfaces[2].kind, "vlan");
    assert_eq!(inv.interfaces[4].kind, "veth");

    let route = |interface: &str, gateway: &str, destination: &str, family, metric| Route {
        interface: interface.into(),
        gateway: gateway.into(),
        destination: destination.into(),
        family,
        metric,
    };
    assert_eq!(
        inv.routes,
        [
            route("ensfake3", "192.168.126.1", "0.0.0.0", 4, 100),
            route("ensfake3", "", "192.168.126.0", 4, 100),
            route("ensfake3", "2001:db8::1", "::", 6, 1024),
            route("ensfake3", "", "fe80::", 6, 256),
        ]
    );
}

#[test]
fn this_machines_interfaces_as_sysfs_says() {
    let root = Root::default();
    let nics = inventory::interfaces(&root);
    // Every NIC on a bus is reported, with sysfs's MAC and MTU.
    for e in std::fs::read_dir("/sys/class/net").unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        let dir = format!("/sys/class/net/{name}");
        if name == "lo" || !std::path::Path::new(&format!("{dir}/device")).exists() {
            continue;
        }
        let nic = nics.iter().find(|n| n.name == name).expect(&name);
        assert_eq!(nic.kind, "physical");
        let mac = std::fs::read_to_string(format!("{dir}/address")).unwrap();
        assert_eq!(nic.mac_address, mac.trim().to_lowercase());
        let mtu = std::fs::read_to_string(format!("{dir}/mtu")).unwrap();
        assert_eq!(nic.mtu.to_string(), mtu.trim());
    }
    assert!(nics.iter().all(|n| n.name != "lo"));
    // The IPv4 default routes are the ones /proc/net/route lists.
    let defaults = std::fs::read_to_string("/proc/net/route")
        .unwrap()
        .lines()
        .skip(1)
        .filter(|l| l.split_whitespace().nth(1) == Some("00000000"))
        .filter(|l| l.split_whitespace().nth(7) == Some("00000000"))
        .count();
    let routes = inventory::routes(&root);
    assert_eq!(
        routes
            .iter()
            .filter(|r| r.family == 4 && r.destination == "0.0.0.0")
            .count(),
        defaults
    );
}

/// The name of the test that prints the inventory when run as the child.
const CHILD: &str = "inventory_as_the_namespaces_child";

/// When `OKD_AGENT_INV_CHILD=1` (run by
/// [`a_network_namespace_with_a_veth`] inside its namespace): print the
/// inventory of `/` as one JSON line after a marker; else nothing.
#[test]
fn inventory_as_the_namespaces_child() {
    if std::env::var("OKD_AGENT_INV_CHILD").as_deref() == Ok("1") {
        let inv = inventory::gather(&Root::default());
        println!("OKD_AGENT_INV={}", serde_json::to_string(&inv).unwrap());
    }
}

/// Deletes the namespace and the host's end of the veth pair (which takes
/// the other end with it), also when the test fails.
struct Netns {
    ns: String,
    host_end: String,
}

impl Drop for Netns {
    fn drop(&mut self) {
        let quiet = |args: &[&str]| {
            let _ = std::process::Command::new("ip")
                .args(args)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status();
        };
        quiet(&["netns", "del", &self.ns]);
        quiet(&["link", "del", &self.host_end]);
    }
}

fn ip(args: &[&str]) {
    let out = std::process::Command::new("ip")
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "ip {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Why the namespace test cannot run here, if it cannot.
fn no_namespaces() -> Option<String> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let euid = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|v| v.split_whitespace().nth(1).map(str::to_string));
    if euid.as_deref() != Some("0") {
        return Some("not root".into());
    }
    match std::process::Command::new("ip").arg("-V").output() {
        Ok(o) if o.status.success() => None,
        _ => Some("no `ip` (iproute2)".into()),
    }
}

#[test]
fn a_network_namespace_with_a_veth() {
    if let Some(why) = no_namespaces() {
        assert!(
            std::env::var("OKD_REQUIRE_TOOLS").as_deref() != Ok("1"),
            "OKD_REQUIRE_TOOLS=1 but {why}"
        );
        println!("skipped: {why}");
        return;
    }
    let pid = std::process::id();
    let guard = Netns {
        ns: format!("okd-agent-inv-{pid}"),
        host_end: format!("oai{pid}h"),
    };
    let (ns, host_end) = (guard.ns.as_str(), guard.host_end.as_str());
    let nic = format!("oai{pid}n");
    ip(&["netns", "add", ns]);
    ip(&[
        "link", "add", host_end, "type", "veth", "peer", "name", &nic,
    ]);
    ip(&["link", "set", &nic, "netns", ns]);
    let mac = "02:00:00:0a:00:10";
    ip(&["-n", ns, "link", "set", &nic, "address", mac, "mtu", "1450"]);
    ip(&["-n", ns, "addr", "add", "192.0.2.10/24", "dev", &nic]);
    ip(&[
        "-n",
        ns,
        "addr",
        "add",
        "2001:db8::10/64",
        "dev",
        &nic,
        "nodad",
    ]);
    ip(&["-n", ns, "link", "set", "lo", "up"]);
    ip(&["-n", ns, "link", "set", &nic, "up"]);
    ip(&["link", "set", host_end, "up"]);
    ip(&["-n", ns, "route", "add", "default", "via", "192.0.2.1"]);

    let me = std::env::current_exe().unwrap();
    let out = std::process::Command::new("ip")
        .args(["netns", "exec", ns])
        .arg(&me)
        .args(["--exact", CHILD, "--nocapture", "--test-threads=1"])
        .env("OKD_AGENT_INV_CHILD", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json = stdout
        .lines()
        .find_map(|l| l.split_once("OKD_AGENT_INV=").map(|(_, json)| json))
        .unwrap_or_else(|| panic!("no inventory in the child's output: {stdout}"));
    let inv: okd_assisted_api::Inventory = serde_json::from_str(json).unwrap();

    let names: Vec<&str> = inv.interfaces.iter().map(|i| i.name.as_str()).collect();
    assert_eq!(names, [nic.as_str()], "only the veth (lo is not reported)");
    let veth = &inv.interfaces[0];
    assert_eq!(veth.kind, "veth");
    assert_eq!(veth.mac_address, mac);
    assert_eq!(veth.mtu, 1450);
    assert_eq!(veth.ipv4_addresses, ["192.0.2.10/24"]);
    assert_eq!(veth.ipv6_addresses, ["2001:db8::10/64"]);
    assert!(veth.has_carrier, "both ends are up");
    assert!(veth.flags.iter().any(|f| f == "up"), "{:?}", veth.flags);
    assert!(veth.vendor.is_empty() && veth.product.is_empty());

    let default = inv
        .routes
        .iter()
        .find(|r| r.family == 4 && r.destination == "0.0.0.0")
        .unwrap_or_else(|| panic!("no IPv4 default route: {:?}", inv.routes));
    assert_eq!(
        (default.interface.as_str(), default.gateway.as_str()),
        (nic.as_str(), "192.0.2.1")
    );
    let link = Route {
        interface: nic.clone(),
        gateway: String::new(),
        destination: "192.0.2.0".into(),
        family: 4,
        metric: 0,
    };
    assert!(inv.routes.contains(&link), "{:?}", inv.routes);
    assert!(
        inv.routes
            .iter()
            .any(|r| r.family == 6 && r.destination == "2001:db8::" && r.interface == nic),
        "{:?}",
        inv.routes
    );
    assert!(inv.routes.iter().all(|r| r.interface != "lo"));
    drop(guard);
    let left = std::process::Command::new("ip")
        .args(["netns", "list"])
        .output()
        .unwrap();
    assert!(
        !String::from_utf8_lossy(&left.stdout).contains(&format!("okd-agent-inv-{pid}")),
        "the namespace is deleted"
    );
}
