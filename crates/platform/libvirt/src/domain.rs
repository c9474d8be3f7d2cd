//! The domain XML of a cluster VM (libvirt formatdomain,
//! <https://libvirt.org/formatdomain.html>) and the metadata that marks it
//! as ours.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::path::PathBuf;

use roxmltree::Document;

use crate::xml::child;

/// The XML namespace of our `<metadata>` element: `<okd:vm xmlns:okd=…>`
/// with `<okd:cluster>` and `<okd:role>` (libvirt keeps foreign-namespace
/// metadata as given, formatdomain "General metadata").
pub const METADATA_NS: &str = "https://github.com/okd-install/okd-install/libvirt/1";

/// The virtio serial of [`DomainSpec::side_disk`].
pub const SIDE_DISK_SERIAL: &str = "okd-files";

/// The fw_cfg name under which CoreOS's Ignition looks for its config on
/// QEMU (Ignition docs, "Supported Platforms", `qemu`).
pub const IGNITION_FW_CFG_NAME: &str = "opt/com.coreos/config";

/// What a VM is made of.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DomainSpec {
    /// The domain name, e.g. `c1-master-0` (kcli: `<cluster>-<role>-<n>`).
    pub name: String,
    /// `<domain type>`: `kvm` (what users want) or `qemu` (TCG emulation,
    /// for hosts without `/dev/kvm` and for the test driver).
    pub domain_type: String,
    /// Memory in MiB.
    pub memory_mib: u32,
    /// Virtual CPUs.
    pub cpus: u32,
    /// Disks in order; the first is the boot disk. Targets `vda`, `vdb`, ….
    pub disks: Vec<DiskSpec>,
    /// Network interfaces in order (the guest's `ens3`, `ens4`, …).
    pub nics: Vec<NicSpec>,
    /// The Ignition config handed to the guest through fw_cfg (an absolute
    /// path on the hypervisor host that QEMU can read), if any.
    pub ignition: Option<PathBuf>,
    /// The cluster name, recorded in `<metadata>` ([`METADATA_NS`]).
    pub cluster: String,
    /// `bootstrap`, `master` or `worker`, recorded in `<metadata>`.
    pub role: String,
    /// The cluster's keepalived `virtual_router_id` (its API VIP; the
    /// ingress VIP uses the next), recorded in `<metadata>` as
    /// `<okd:vrid>` so that another cluster on the same network can keep
    /// clear of it ([`domain_vrid`]).
    pub virtual_router_id: Option<u8>,
    /// A read-only raw disk image (a file on the hypervisor) after the
    /// volumes, with virtio serial [`SIDE_DISK_SERIAL`], so the guest sees
    /// it as `/dev/disk/by-id/virtio-okd-files`: files too large for
    /// fw_cfg travel there.
    pub side_disk: Option<PathBuf>,
}

/// A disk: a volume of a storage pool.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiskSpec {
    /// The storage pool, e.g. `default`.
    pub pool: String,
    /// The volume in it, e.g. `c1-master-0.img`.
    pub volume: String,
    /// The image format (`<driver type>`): `qcow2` or `raw`.
    pub format: String,
}

/// A network interface on a libvirt network.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NicSpec {
    /// The libvirt network, e.g. `default`.
    pub network: String,
    /// The MAC address, `52:54:00:xx:xx:xx`.
    pub mac: String,
}

/// The domain XML of `spec` for `virsh define`.
///
/// Shape: an x86_64 `q35` machine with ACPI/APIC; the host CPU
/// (`host-passthrough`) under `kvm`, QEMU's `maximum` model under `qemu`
/// (CoreOS needs x86-64-v2, which the TCG default lacks); memory in MiB;
/// virtio disks (`type='volume'`, source pool/volume, targets `vda`, `vdb`,
/// …, the first booted: `<boot dev='hd'/>`); virtio NICs on libvirt
/// networks with fixed MACs; a serial console on a pty; a virtio RNG.
///
/// The Ignition file goes through fw_cfg as
/// `<sysinfo type='fwcfg'><entry name='opt/com.coreos/config' file='…'/></sysinfo>`
/// (libvirt ≥ 6.5, formatdomain "SMBIOS System Information"). kcli adds
/// `<qemu:commandline>` `-fw_cfg name=opt/com.coreos/config,file=…`
/// instead, which libvirt marks as tainted and the test driver drops.
///
/// `<metadata>` carries `<okd:vm xmlns:okd="{METADATA_NS}">` with the cluster
/// and role ([`domain_owner`]). Every value is XML-escaped.
pub fn domain_xml(spec: &DomainSpec) -> String {
    let mut x = String::with_capacity(2048);
    // Writing to a String cannot fail.
    let _ = write_domain(&mut x, spec);
    x
}

fn write_domain(x: &mut String, spec: &DomainSpec) -> std::fmt::Result {
    writeln!(x, "<domain type='{}'>", escape(&spec.domain_type))?;
    writeln!(x, "  <name>{}</name>", escape(&spec.name))?;
    writeln!(x, "  <metadata>")?;
    writeln!(x, "    <okd:vm xmlns:okd=\"{METADATA_NS}\">")?;
    writeln!(
        x,
        "      <okd:cluster>{}</okd:cluster>",
        escape(&spec.cluster)
    )?;
    writeln!(x, "      <okd:role>{}</okd:role>", escape(&spec.role))?;
    if let Some(id) = spec.virtual_router_id {
        writeln!(x, "      <okd:vrid>{id}</okd:vrid>")?;
    }
    writeln!(x, "    </okd:vm>")?;
    writeln!(x, "  </metadata>")?;
    writeln!(x, "  <memory unit='MiB'>{}</memory>", spec.memory_mib)?;
    writeln!(x, "  <vcpu>{}</vcpu>", spec.cpus)?;
    if let Some(ignition) = &spec.ignition {
        writeln!(x, "  <sysinfo type='fwcfg'>")?;
        writeln!(
            x,
            "    <entry name='{IGNITION_FW_CFG_NAME}' file='{}'/>",
            escape(&ignition.to_string_lossy())
        )?;
        writeln!(x, "  </sysinfo>")?;
    }
    writeln!(x, "  <os>")?;
    writeln!(x, "    <type arch='x86_64' machine='q35'>hvm</type>")?;
    writeln!(x, "    <boot dev='hd'/>")?;
    writeln!(x, "  </os>")?;
    writeln!(x, "  <features>")?;
    writeln!(x, "    <acpi/>")?;
    writeln!(x, "    <apic/>")?;
    writeln!(x, "  </features>")?;
    if spec.domain_type == "kvm" {
        writeln!(x, "  <cpu mode='host-passthrough'/>")?;
    } else {
        writeln!(x, "  <cpu mode='maximum' check='none'/>")?;
    }
    writeln!(x, "  <on_reboot>restart</on_reboot>")?;
    writeln!(x, "  <devices>")?;
    for (i, disk) in spec.disks.iter().enumerate() {
        writeln!(x, "    <disk type='volume' device='disk'>")?;
        writeln!(
            x,
            "      <driver name='qemu' type='{}'/>",
            escape(&disk.format)
        )?;
        writeln!(
            x,
            "      <source pool='{}' volume='{}'/>",
            escape(&disk.pool),
            escape(&disk.volume)
        )?;
        writeln!(x, "      <target dev='{}' bus='virtio'/>", disk_target(i))?;
        writeln!(x, "    </disk>")?;
    }
    if let Some(side) = &spec.side_disk {
        writeln!(x, "    <disk type='file' device='disk'>")?;
        writeln!(x, "      <driver name='qemu' type='raw'/>")?;
        writeln!(
            x,
            "      <source file='{}'/>",
            escape(&side.to_string_lossy())
        )?;
        writeln!(
            x,
            "      <target dev='{}' bus='virtio'/>",
            disk_target(spec.disks.len())
        )?;
        writeln!(x, "      <serial>{SIDE_DISK_SERIAL}</serial>")?;
        writeln!(x, "      <readonly/>")?;
        writeln!(x, "    </disk>")?;
    }
    for nic in &spec.nics {
        writeln!(x, "    <interface type='network'>")?;
        writeln!(x, "      <mac address='{}'/>", escape(&nic.mac))?;
        writeln!(x, "      <source network='{}'/>", escape(&nic.network))?;
        writeln!(x, "      <model type='virtio'/>")?;
        writeln!(x, "    </interface>")?;
    }
    writeln!(x, "    <serial type='pty'>")?;
    writeln!(x, "      <target port='0'/>")?;
    writeln!(x, "    </serial>")?;
    writeln!(x, "    <console type='pty'>")?;
    writeln!(x, "      <target type='serial' port='0'/>")?;
    writeln!(x, "    </console>")?;
    writeln!(x, "    <rng model='virtio'>")?;
    writeln!(x, "      <backend model='random'>/dev/urandom</backend>")?;
    writeln!(x, "    </rng>")?;
    writeln!(x, "  </devices>")?;
    writeln!(x, "</domain>")
}

/// The cluster and role recorded by [`domain_xml`] in a domain's XML
/// (`virsh dumpxml`): `Some((cluster, role))`, or None when the XML does not
/// parse or has no `<okd:vm>` in [`METADATA_NS`] (not our VM).
pub fn domain_owner(xml: &str) -> Option<(String, String)> {
    let doc = Document::parse(xml).ok()?;
    let root = doc.root_element();
    if !root.has_tag_name("domain") {
        return None;
    }
    let vm = child(root, "metadata")?
        .children()
        .find(|n| n.has_tag_name((METADATA_NS, "vm")))?;
    let text = |name: &str| {
        vm.children()
            .find(|n| n.has_tag_name((METADATA_NS, name)))
            .map(|n| n.text().unwrap_or_default().trim().to_owned())
    };
    Some((text("cluster")?, text("role")?))
}

/// `vda`, `vdb`, … `vdz`, `vdaa`, … for the disk at `index` (libvirt's
/// naming, `virDiskNameToIndex`).
fn disk_target(index: usize) -> String {
    let mut letters = Vec::new();
    let mut i = index + 1;
    while i > 0 {
        i -= 1;
        letters.push(b'a' + (i % 26) as u8);
        i /= 26;
    }
    letters.reverse();
    format!("vd{}", String::from_utf8(letters).expect("ASCII letters"))
}

/// Escapes `&`, `<`, `>`, `'` and `"` for XML text and attribute values
/// (XML 1.0 §2.4, §3.3.3).
pub(crate) fn escape(text: &str) -> Cow<'_, str> {
    if !text.contains(['&', '<', '>', '\'', '"']) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\'' => out.push_str("&apos;"),
            '"' => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// The `<okd:vrid>` a domain's metadata records ([`DomainSpec::virtual_router_id`]);
/// None for other domains and for ours without one.
pub fn domain_vrid(xml: &str) -> Option<u8> {
    let doc = Document::parse(xml).ok()?;
    let vm = doc
        .descendants()
        .find(|n| n.has_tag_name((METADATA_NS, "vm")))?;
    vm.children()
        .find(|n| n.has_tag_name((METADATA_NS, "vrid")))?
        .text()?
        .trim()
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> DomainSpec {
        DomainSpec {
            name: "c1-master-0".into(),
            domain_type: "kvm".into(),
            memory_mib: 16384,
            cpus: 4,
            disks: vec![
                DiskSpec {
                    pool: "default".into(),
                    volume: "c1-master-0.img".into(),
                    format: "qcow2".into(),
                },
                DiskSpec {
                    pool: "default".into(),
                    volume: "c1-master-0-1.img".into(),
                    format: "raw".into(),
                },
            ],
            nics: vec![NicSpec {
                network: "default".into(),
                mac: "52:54:00:00:00:01".into(),
            }],
            ignition: Some("/var/lib/libvirt/images/c1-master.ign".into()),
            cluster: "c1".into(),
            role: "master".into(),
            virtual_router_id: Some(7),
            side_disk: None,
        }
    }

    #[test]
    fn domain_xml_parses_and_carries_the_spec() {
        let xml = domain_xml(&spec());
        let doc = Document::parse(&xml).unwrap();
        let root = doc.root_element();
        assert_eq!(root.attribute("type"), Some("kvm"));
        let targets: Vec<_> = root
            .descendants()
            .filter(|n| n.has_tag_name("target") && n.attribute("bus") == Some("virtio"))
            .map(|n| n.attribute("dev").unwrap())
            .collect();
        assert_eq!(targets, ["vda", "vdb"]);
        let entry = root
            .descendants()
            .find(|n| n.has_tag_name("entry"))
            .unwrap();
        assert_eq!(entry.attribute("name"), Some(IGNITION_FW_CFG_NAME));
        assert_eq!(
            entry.attribute("file"),
            Some("/var/lib/libvirt/images/c1-master.ign")
        );
        assert!(xml.contains("<cpu mode='host-passthrough'/>"));
        assert_eq!(domain_owner(&xml), Some(("c1".into(), "master".into())));
    }

    #[test]
    fn domain_xml_escapes_every_value() {
        let mut s = spec();
        s.name = "a<b>&'\"".into();
        s.cluster = "c&d".into();
        s.domain_type = "qemu".into();
        s.ignition = Some("/tmp/it's.ign".into());
        let xml = domain_xml(&s);
        let doc = Document::parse(&xml).unwrap();
        let name = doc
            .root_element()
            .children()
            .find(|n| n.has_tag_name("name"))
            .unwrap();
        assert_eq!(name.text(), Some("a<b>&'\""));
        assert!(xml.contains("file='/tmp/it&apos;s.ign'"));
        assert!(xml.contains("<cpu mode='maximum'"));
        assert_eq!(domain_owner(&xml), Some(("c&d".into(), "master".into())));
    }

    #[test]
    fn domain_owner_ignores_foreign_domains() {
        assert_eq!(
            domain_owner("<domain type='kvm'><name>x</name></domain>"),
            None
        );
        assert_eq!(
            domain_owner(
                "<domain><metadata><k:vm xmlns:k='urn:other'><k:cluster>c</k:cluster><k:role>r</k:role></k:vm></metadata></domain>"
            ),
            None
        );
        assert_eq!(domain_owner("not xml"), None);
    }

    #[test]
    fn disk_targets_follow_libvirt_naming() {
        assert_eq!(disk_target(0), "vda");
        assert_eq!(disk_target(25), "vdz");
        assert_eq!(disk_target(26), "vdaa");
        assert_eq!(disk_target(27), "vdab");
        assert_eq!(disk_target(26 + 26 * 26), "vdaaa");
    }
}
