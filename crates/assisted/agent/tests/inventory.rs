//! The inventory of a made-up machine (files under a temporary root) and
//! of this machine, checked against what the kernel says directly.

use okd_assisted_agent::{Root, host_id, inventory};

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
        ("/sys/class/net/ens3/address", "52:54:00:aa:00:02\n"),
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
