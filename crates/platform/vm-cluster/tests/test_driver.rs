//! create, scale and destroy against libvirt's real test driver (one virsh
//! session per test: the driver's state lives in the client process), with
//! the checks before anything is made and the clean-up after a failure.

use std::path::PathBuf;

use okd_libvirt::Virsh;
use okd_vm_cluster::state::ClusterState;
use okd_vm_cluster::{ClusterError, Options};

/// The test driver's initial state: network `default` (192.168.122.0/24,
/// DHCP .2-.254, one reservation of someone else's), pool `default` with the
/// CoreOS image, and one VM of someone else's.
const NODE: &str = r#"<node>
  <network>
    <name>default</name>
    <bridge name='virbr0'/>
    <forward mode='nat'/>
    <ip address='192.168.122.1' netmask='255.255.255.0'>
      <dhcp>
        <range start='192.168.122.2' end='192.168.122.254'/>
        <host mac='52:54:00:99:99:99' name='other-vm' ip='192.168.122.2'/>
      </dhcp>
    </ip>
  </network>
  <pool type='dir'>
    <name>default</name>
    <target><path>/var/lib/libvirt/images</path></target>
    <volume type='file'>
      <name>rhcos-qemu.qcow2</name>
      <capacity unit='GiB'>16</capacity>
      <target><format type='qcow2'/></target>
    </volume>
  </pool>
  <domain type='test'>
    <name>other-vm</name>
    <memory>1048576</memory>
    <os><type>hvm</type></os>
  </domain>
</node>
"#;

const PARAMS: &str = "cluster: testk\ndomain: karmalabs.com\nimage: rhcos-qemu.qcow2\nmasters: 3\nworkers: 2\ndisk_size: 5\nextra_disks: [2]\napi_ip: 192.168.122.253\ningress_ip: 192.168.122.252\nversion: upstream\n";

struct Lab {
    dir: tempfile::TempDir,
    virsh: Virsh,
}

fn virsh_or_skip() -> bool {
    okd_test_utils::tool("virsh", &[], Some("libvirt-clients")).is_some()
}

impl Lab {
    fn new(node: &str) -> Lab {
        let dir = tempfile::tempdir().unwrap();
        let node_file = dir.path().join("node.xml");
        std::fs::write(&node_file, node).unwrap();
        let virsh = Virsh::connect(&format!("test://{}", node_file.display())).unwrap();
        for (name, body) in [
            (
                "bootstrap.ign",
                r#"{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"/opt/openshift/marker","contents":{"source":"data:,bootstrap"},"mode":384}]}}"#,
            ),
            (
                "master.ign",
                r#"{"ignition":{"version":"3.2.0","config":{"merge":[{"source":"https://api-int.testk.karmalabs.com:22623/config/master"}]}}}"#,
            ),
            (
                "worker.ign",
                r#"{"ignition":{"version":"3.2.0","config":{"merge":[{"source":"https://api-int.testk.karmalabs.com:22623/config/worker"}]}}}"#,
            ),
        ] {
            std::fs::write(dir.path().join("c").join(name), body)
                .or_else(|_| {
                    std::fs::create_dir_all(dir.path().join("c"))?;
                    std::fs::write(dir.path().join("c").join(name), body)
                })
                .unwrap();
        }
        Lab { dir, virsh }
    }

    fn cluster_dir(&self) -> PathBuf {
        self.dir.path().join("c")
    }

    fn params(&self, text: &str) -> (okd_paramfile::Parameters, PathBuf) {
        let path = self.dir.path().join("parameters.yml");
        std::fs::write(&path, text).unwrap();
        (okd_paramfile::load(&path).unwrap(), path)
    }

    fn plan(&mut self, text: &str) -> Result<okd_vm_cluster::Plan, ClusterError> {
        let (p, path) = self.params(text);
        okd_vm_cluster::plan(
            &mut self.virsh,
            p,
            &path,
            Options {
                pool: "default".into(),
                domain_type: "qemu".into(),
                ..Options::default()
            },
        )
    }

    /// Domains, volumes and reservations: what must come back after destroy.
    fn snapshot(&mut self) -> (Vec<String>, Vec<String>, Vec<String>) {
        let mut d = self.virsh.domains().unwrap();
        d.sort();
        let mut v = self.virsh.volumes("default").unwrap();
        v.sort();
        let net = self.virsh.network("default").unwrap();
        let mut h: Vec<String> = net
            .dhcp_hosts
            .iter()
            .map(|h| format!("{} {} {}", h.mac, h.name, h.ip))
            .chain(
                net.dns_hosts
                    .iter()
                    .map(|d| format!("{} {:?}", d.ip, d.hostnames)),
            )
            .collect();
        h.sort();
        (d, v, h)
    }
}

fn invalid_key(e: ClusterError) -> String {
    match e {
        ClusterError::Invalid { key, .. } => key,
        ClusterError::Param(okd_paramfile::ParamError::Invalid { key, .. }) => key.to_string(),
        other => panic!("expected a refused key, got {other}"),
    }
}

#[test]
fn create_scale_destroy_leaves_libvirt_as_it_was() {
    if !virsh_or_skip() {
        return;
    }
    let mut lab = Lab::new(NODE);
    let before = lab.snapshot();
    let plan = lab.plan(PARAMS).unwrap();
    // The other VM's reservation (.2) is skipped.
    assert_eq!(plan.vms[0].ip.to_string(), "192.168.122.3");
    let dir = lab.cluster_dir();
    let state = okd_vm_cluster::create_vms(&dir, &mut lab.virsh, &plan).unwrap();
    assert_eq!(state.vms.len(), 6);
    for vm in &state.vms {
        assert_eq!(
            lab.virsh.domain_state(&vm.name).unwrap().as_deref(),
            Some("running"),
            "{}",
            vm.name
        );
        let xml = lab.virsh.domain_xml(&vm.name).unwrap();
        let ign = dir.join("vms").join(format!("{}.ign", vm.name));
        assert!(xml.contains(&format!("file='{}'", ign.display())), "{xml}");
        assert!(xml.contains("opt/com.coreos/config"), "{xml}");
        assert!(xml.contains(&vm.mac), "{xml}");
        assert_eq!(
            okd_libvirt::domain_owner(&xml),
            Some(("testk".into(), vm.role.clone()))
        );
        let expected_disks = if vm.role == "bootstrap" { 1 } else { 2 };
        assert_eq!(vm.volumes.len(), expected_disks, "{}", vm.name);
        use std::os::unix::fs::PermissionsExt as _;
        assert_eq!(
            std::fs::metadata(&ign).unwrap().permissions().mode() & 0o777,
            0o600
        );
        let text = std::fs::read_to_string(&ign).unwrap();
        assert!(
            text.contains("/etc/hostname") && text.contains("/etc/okd-vip-layer/Corefile"),
            "{text}"
        );
        if vm.role == "bootstrap" {
            assert!(text.contains("/opt/openshift/marker") && text.contains("okd-nginx.yaml"));
        }
    }
    let xml = lab.virsh.domain_xml("testk-master-0").unwrap();
    assert!(
        xml.contains("8388608") || xml.contains("<memory unit='KiB'>8388608"),
        "{xml}"
    );
    let net = lab.virsh.network("default").unwrap();
    assert_eq!(net.dhcp_hosts.len(), 7, "{:?}", net.dhcp_hosts);
    // api and api-int resolve at the API VIP through the network's own DNS
    // (a node's Ignition asks it in the initramfs).
    assert_eq!(net.dns_hosts.len(), 7, "{:?}", net.dns_hosts);
    assert_eq!(net.dns_hosts[0].ip.to_string(), "192.168.122.253");
    assert_eq!(
        net.dns_hosts[0].hostnames,
        vec!["api.testk.karmalabs.com", "api-int.testk.karmalabs.com"]
    );
    // Every VM by name; the workers also as workers.<cluster>.<domain>, the
    // name the masters' HAProxy follows.
    let workers = |net: &okd_libvirt::Network| -> Vec<String> {
        net.dns_hosts
            .iter()
            .filter(|h| {
                h.hostnames
                    .iter()
                    .any(|n| n == "workers.testk.karmalabs.com")
            })
            .map(|h| h.ip.to_string())
            .collect()
    };
    assert_eq!(workers(&net), ["192.168.122.7", "192.168.122.8"]);
    assert!(
        net.dns_hosts
            .iter()
            .any(|h| h.hostnames == ["testk-master-1.testk.karmalabs.com"])
    );
    // The record says where everything is, 0600 (the VRRP password).
    let rec = ClusterState::read(&dir).unwrap().unwrap();
    assert_eq!(rec, state);
    // A second create from the same directory is refused, nothing made.
    let again = okd_vm_cluster::create_vms(&dir, &mut lab.virsh, &plan).unwrap_err();
    assert!(again.to_string().contains("destroy cluster"), "{again}");

    // An address the network's DNS names but no reservation holds (another
    // host's entry) is not free for scale either.
    let other = okd_libvirt::DnsHost {
        ip: "192.168.122.9".parse().unwrap(),
        hostnames: vec!["printer.karmalabs.com".into()],
    };
    lab.virsh.add_dns_host("default", &other).unwrap();
    let up = okd_vm_cluster::scale(&dir, &mut lab.virsh, 3).unwrap();
    assert_eq!(up.added, vec!["testk-worker-2".to_string()]);
    let rec = ClusterState::read(&dir).unwrap().unwrap();
    let new_ip = rec
        .vms
        .iter()
        .find(|v| v.name == "testk-worker-2")
        .unwrap()
        .ip;
    assert_eq!(
        new_ip.to_string(),
        "192.168.122.10",
        "skips the DNS-only .9"
    );
    lab.virsh.remove_dns_host("default", &other).unwrap();
    let net = lab.virsh.network("default").unwrap();
    assert_eq!(
        workers(&net).len(),
        3,
        "scale adds the new worker to workers.<cluster>.<domain>"
    );
    assert_eq!(
        lab.virsh.domain_state("testk-worker-2").unwrap().as_deref(),
        Some("running")
    );
    let down = okd_vm_cluster::scale(&dir, &mut lab.virsh, 1).unwrap();
    assert_eq!(
        down.removed,
        vec!["testk-worker-2".to_string(), "testk-worker-1".to_string()]
    );
    assert!(!lab.virsh.domain_exists("testk-worker-1").unwrap());
    assert_eq!(
        workers(&lab.virsh.network("default").unwrap()),
        ["192.168.122.7"]
    );
    let same = okd_vm_cluster::scale(&dir, &mut lab.virsh, 1).unwrap();
    assert!(same.added.is_empty() && same.removed.is_empty());

    let removed = okd_vm_cluster::destroy(&dir, &mut lab.virsh).unwrap();
    assert_eq!(removed.len(), 5, "{removed:?}");
    assert_eq!(lab.snapshot(), before);
    assert!(!ClusterState::path(&dir).exists());
    assert!(!dir.join("vms").exists());
    // The installer's files are the user's: destroy leaves them.
    assert!(dir.join("bootstrap.ign").exists());
}

#[test]
fn bad_input_is_refused_by_key_before_anything_is_made() {
    if !virsh_or_skip() {
        return;
    }
    let mut lab = Lab::new(NODE);
    let before = lab.snapshot();
    for (text, key) in [
        (
            PARAMS.replace("api_ip: 192.168.122.253", "api_ip: 10.9.9.9"),
            "api_ip",
        ),
        (
            PARAMS.replace("ingress_ip: 192.168.122.252", "ingress_ip: 192.168.122.1"),
            "ingress_ip",
        ),
        (PARAMS.to_string() + "network: nosuchnet\n", "network"),
        (
            PARAMS.to_string() + "extra_networks: [nosuchnet]\n",
            "extra_networks",
        ),
        (
            PARAMS.replace("image: rhcos-qemu.qcow2", "image: missing.qcow2"),
            "image",
        ),
        (
            PARAMS.replace("cluster: testk", "cluster: other")
                + "bootstrap_mac: '52:54:00:99:99:99'\n",
            "bootstrap_mac",
        ),
    ] {
        let e = lab.plan(&text).unwrap_err();
        let msg = e.to_string();
        assert_eq!(invalid_key(e), key, "{text}");
        assert!(msg.contains("parameters.yml"), "{msg}");
    }
    // bootstrap_ip: used when free, refused when not.
    let plan = lab
        .plan(&(PARAMS.to_string() + "bootstrap_ip: 192.168.122.100\n"))
        .unwrap();
    assert_eq!(plan.vms[0].ip.to_string(), "192.168.122.100");
    assert!(
        plan.vms[1..]
            .iter()
            .all(|v| v.ip.to_string() != "192.168.122.100")
    );
    for taken in ["192.168.122.2", "192.168.122.253", "10.0.0.5"] {
        let e = lab
            .plan(&(PARAMS.to_string() + &format!("bootstrap_ip: {taken}\n")))
            .unwrap_err();
        assert_eq!(invalid_key(e), "bootstrap_ip", "{taken}");
    }
    // A pool that does not exist names the flag.
    let (p, path) = lab.params(PARAMS);
    let e = okd_vm_cluster::plan(
        &mut lab.virsh,
        p,
        &path,
        Options {
            pool: "nosuchpool".into(),
            ..Options::default()
        },
    )
    .unwrap_err();
    assert!(
        e.to_string().contains("--pool") && e.to_string().contains("nosuchpool"),
        "{e}"
    );
    // A VM name in use.
    let e = lab
        .plan(&PARAMS.replace("cluster: testk", "cluster: other"))
        .map(|_| ());
    assert!(e.is_ok(), "other-vm is not other-bootstrap");
    let node = NODE.replace(
        "<name>other-vm</name>\n    <memory>",
        "<name>testk-master-1</name>\n    <memory>",
    );
    let mut lab2 = Lab::new(&node);
    let e = lab2.plan(PARAMS).unwrap_err();
    let msg = e.to_string();
    assert_eq!(invalid_key(e), "cluster");
    assert!(msg.contains("testk-master-1 exists already"), "{msg}");
    assert_eq!(lab.snapshot(), before, "checks make nothing");
}

#[test]
fn a_failure_half_way_removes_what_was_made() {
    if !virsh_or_skip() {
        return;
    }
    let mut lab = Lab::new(NODE);
    let before = lab.snapshot();
    // The test driver's pools hold 100 GiB: the third 40 GB VM does not fit.
    let plan = lab
        .plan(
            &PARAMS
                .replace("disk_size: 5", "disk_size: 40")
                .replace("extra_disks: [2]\n", ""),
        )
        .unwrap();
    let dir = lab.cluster_dir();
    let e = okd_vm_cluster::create_vms(&dir, &mut lab.virsh, &plan).unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, ClusterError::Partial { .. }), "{msg}");
    assert!(
        msg.contains("Not enough free space") && msg.contains("removed again"),
        "{msg}"
    );
    assert_eq!(lab.snapshot(), before);
    assert!(!ClusterState::path(&dir).exists());
    assert!(!dir.join("vms").exists());
}

#[test]
fn destroy_never_touches_a_vm_of_another_cluster() {
    if !virsh_or_skip() {
        return;
    }
    let mut lab = Lab::new(NODE);
    let plan = lab
        .plan(
            &PARAMS
                .replace("masters: 3", "masters: 1")
                .replace("workers: 2", "workers: 0"),
        )
        .unwrap();
    let dir = lab.cluster_dir();
    let mut state = okd_vm_cluster::create_vms(&dir, &mut lab.virsh, &plan).unwrap();
    // A record that also names someone else's VM (edited, or a name reused).
    let mut foreign = state.vms[0].clone();
    foreign.name = "other-vm".into();
    foreign.volumes.clear();
    foreign.reserved = false;
    foreign.ignition = None;
    state.vms.insert(0, foreign);
    state.write(&dir).unwrap();
    let e = okd_vm_cluster::destroy(&dir, &mut lab.virsh).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("other-vm") && msg.contains("not touched"),
        "{msg}"
    );
    assert_eq!(
        lab.virsh.domain_state("other-vm").unwrap().as_deref(),
        Some("running")
    );
    assert!(!lab.virsh.domain_exists("testk-master-0").unwrap());
    let left = ClusterState::read(&dir).unwrap().unwrap();
    assert_eq!(left.vms.len(), 1);
    assert_eq!(left.vms[0].name, "other-vm");
}

#[test]
fn two_clusters_on_one_network_get_apart_router_ids() {
    if !virsh_or_skip() {
        return;
    }
    let mut lab = Lab::new(NODE);
    let small = PARAMS
        .replace("masters: 3", "masters: 1")
        .replace("workers: 2", "workers: 0");
    let a = lab.plan(&small).unwrap();
    let dir = lab.cluster_dir();
    let state = okd_vm_cluster::create_vms(&dir, &mut lab.virsh, &a).unwrap();
    let ida = state.virtual_router_id;
    assert_eq!(
        ida,
        okd_paramfile::virtual_router_id("testk", "karmalabs.com")
    );
    // A second cluster whose name hashes onto the first's pair of ids.
    let other = (0..100_000)
        .map(|i| format!("c{i}"))
        .find(|n| {
            let id = okd_paramfile::virtual_router_id(n, "karmalabs.com");
            id + 1 >= ida && id <= ida + 1
        })
        .expect("some name collides");
    let b = lab
        .plan(
            &small
                .replace("cluster: testk", &format!("cluster: {other}"))
                .replace("api_ip: 192.168.122.253", "api_ip: 192.168.122.250")
                .replace("ingress_ip: 192.168.122.252", "ingress_ip: 192.168.122.249"),
        )
        .unwrap();
    let idb = b.virtual_router_id;
    assert!(
        idb + 1 < ida || idb > ida + 1,
        "{other}: {idb} (and {}) overlaps {ida} (and {})",
        idb + 1,
        ida + 1
    );
    assert!((1..=253).contains(&idb));
}

/// A file too large for fw_cfg (the okd-install program in a release
/// build's bootstrap.ign) rides on the VM's read-only side disk; the script
/// the config carries instead puts it back, checked, with real `sh`, `dd`
/// and `sha512sum`.
#[test]
fn large_files_ride_on_the_side_disk() {
    use std::io::Write as _;
    if !virsh_or_skip() {
        return;
    }
    let mut lab = Lab::new(NODE);
    // 1.5 MiB that gzip cannot shrink much (xorshift), like a program.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let program: Vec<u8> = (0..1_572_864)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&program).unwrap();
    let source = okd_types::dataurl::encode(&gz.finish().unwrap());
    let boot = serde_json::json!({
        "ignition": {"version": "3.2.0"},
        "storage": {"files": [
            {"path": "/usr/local/bin/okd-install", "mode": 493,
             "contents": {"source": source, "compression": "gzip"}},
            {"path": "/opt/openshift/small", "mode": 420, "contents": {"source": "data:,small"}}
        ]}
    });
    let dir = lab.cluster_dir();
    std::fs::write(dir.join("bootstrap.ign"), boot.to_string()).unwrap();
    let plan = lab
        .plan(
            &PARAMS
                .replace("masters: 3", "masters: 1")
                .replace("workers: 2", "workers: 0"),
        )
        .unwrap();
    let state = okd_vm_cluster::create_vms(&dir, &mut lab.virsh, &plan).unwrap();
    let boot_vm = &state.vms[0];
    let side = boot_vm
        .side_disk
        .clone()
        .expect("the bootstrap has a side disk");
    assert!(
        state.vms[1].side_disk.is_none(),
        "the master's config is small"
    );
    // The config is small now, and carries the script and the unit instead.
    let ign = std::fs::read_to_string(boot_vm.ignition.as_ref().unwrap()).unwrap();
    assert!(ign.len() < 200_000, "{} bytes through fw_cfg", ign.len());
    let config = okd_types::ignition::Config::from_json(&ign).unwrap();
    assert!(
        !config
            .storage
            .files
            .iter()
            .any(|f| f.path == "/usr/local/bin/okd-install")
    );
    assert!(
        config
            .storage
            .files
            .iter()
            .any(|f| f.path == "/opt/openshift/small")
    );
    let script = config
        .storage
        .files
        .iter()
        .find(|f| f.path == okd_vm_cluster::side::SIDE_SCRIPT)
        .expect("the script");
    let unit = config
        .systemd
        .units
        .iter()
        .find(|u| u.name == okd_vm_cluster::side::SIDE_UNIT)
        .expect("the unit");
    assert_eq!(unit.enabled, Some(true));
    assert!(
        unit.contents
            .as_deref()
            .unwrap()
            .contains("Before=sysinit.target")
    );
    // The domain has the disk, read-only, with the serial the script names.
    let xml = lab.virsh.domain_xml(&boot_vm.name).unwrap();
    assert!(
        xml.contains(&format!("<source file='{}'/>", side.display())),
        "{xml}"
    );
    assert!(
        xml.contains("<serial>okd-files</serial>") && xml.contains("<readonly/>"),
        "{xml}"
    );
    // The script, run by the real sh against the image, puts the program back.
    let script_text = String::from_utf8(
        okd_types::dataurl::decode(script.contents.source.as_deref().unwrap()).unwrap(),
    )
    .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let script_path = tmp.path().join("okd-side-files.sh");
    std::fs::write(&script_path, &script_text).unwrap();
    let root = tmp.path().join("root");
    let out = std::process::Command::new("sh")
        .arg(&script_path)
        .arg(&side)
        .arg(&root)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let landed = root.join("usr/local/bin/okd-install");
    assert!(
        std::fs::read(&landed).unwrap() == program,
        "the program comes back byte for byte"
    );
    use std::os::unix::fs::PermissionsExt as _;
    assert_eq!(
        std::fs::metadata(&landed).unwrap().permissions().mode() & 0o777,
        0o755
    );
    // A damaged disk: refused naming the file, nothing left in its place.
    let bad = tmp.path().join("bad.img");
    let mut bytes = std::fs::read(&side).unwrap();
    bytes[1000] ^= 0xff;
    std::fs::write(&bad, bytes).unwrap();
    let root2 = tmp.path().join("root2");
    let out = std::process::Command::new("sh")
        .arg(&script_path)
        .arg(&bad)
        .arg(&root2)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("/usr/local/bin/okd-install") && err.contains("SHA-512"),
        "{err}"
    );
    assert!(!root2.join("usr/local/bin/okd-install").exists());
    assert!(!root2.join("usr/local/bin/okd-install.okd-side").exists());
    // destroy removes the image too.
    okd_vm_cluster::destroy(&dir, &mut lab.virsh).unwrap();
    assert!(!side.exists());
}
