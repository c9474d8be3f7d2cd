#!/usr/bin/env bash
# Builds the qemu guests in which okd-install's tests run real node-side
# programs against a virtio disk:
# * the real coreos-installer (crates.io coreos-installer 0.27.0): single-node
#   installs end with
#     coreos-installer install -n -i /opt/openshift/master.ign <disk>
#   (openshift/installer data/data/bootstrap/bootstrap-in-place/files/usr/local/
#   bin/install-to-disk.sh), and coreos-installer needs a real block device
#   whose partitions the kernel sees, which this host's loop devices do not give;
# * the real Ignition (Debian's `ignition` package, whose binary ships in its
#   dracut module 30ignition): `okd-install create cluster` hands each libvirt
#   VM its Ignition config through qemu's fw_cfg (opt/com.coreos/config), and
#   this guest reads it from there as a CoreOS initramfs does.
#
# Usage: tests/guest/build.sh           builds if needed; prints the guest directory
#        tests/guest/build.sh --path    only prints where the guest directory is
# The directory, $OKD_GUEST_DIR/<key> (default /var/tmp/okd-guest/<key>), holds
#   vmlinuz            Debian bookworm's kernel (the package linux-image-amd64
#                      depends on, fetched with `apt-get download`)
#   installer.cpio.gz  an initramfs: busybox-static, coreos-installer, lsblk and
#                      blkid (util-linux) with the shared libraries ldd lists,
#                      the kernel modules for virtio disks, ext4 and fw_cfg, and
#                      the /init below
#   ignition.cpio.gz   an initramfs: busybox-static, Debian's ignition binary
#                      (/usr/lib/dracut/modules.d/30ignition/ignition) and
#                      useradd (passwd) with the shared libraries ldd lists,
#                      the same kernel modules, and the second /init below
#   kernel-version     the kernel release (e.g. 6.1.0-56-amd64)
# The key hashes this script and the versions of everything that goes in, so a
# new kernel, coreos-installer, busybox, util-linux, ignition or passwd gives a
# new directory.
#
# installer.cpio.gz's /init (written below) takes its work from qemu's fw_cfg:
#   opt/okd/args           coreos-installer install arguments, one per line
#   opt/okd/ignition-size  the length of the Ignition config on the third virtio
#                          disk (/dev/vdc), copied to /opt/openshift/master.ign
#   opt/com.coreos/config  or: the Ignition config itself (slow under TCG)
# runs `coreos-installer install <args...> /dev/vda` and prints
#   OKD-GUEST: coreos-installer exit <status>
# on the serial console, then powers off. Boot it with
#   qemu-system-x86_64 -accel tcg -m 512 -nodefaults -no-reboot -display none \
#     -serial stdio -kernel vmlinuz -initrd installer.cpio.gz \
#     -append 'console=ttyS0 quiet panic=-1' -nic none \
#     -drive file=disk.raw,format=raw,if=virtio \
#     -drive file=image.raw,format=raw,if=virtio,readonly=on \
#     -drive file=x.ign.padded,format=raw,if=virtio,readonly=on \
#     -fw_cfg name=opt/okd/args,file=args -fw_cfg name=opt/okd/ignition-size,string=<bytes>
#
# ignition.cpio.gz's /init runs Ignition as a CoreOS initramfs runs it
# (coreos/ignition dracut/30ignition/ignition-fetch.service and
# ignition-files.service), with the config from fw_cfg opt/com.coreos/config
# and /dev/vda (ext4, no partition table) mounted as the target root /sysroot:
#   ignition -platform=qemu -stage=fetch -log-to-stdout
#   ignition -platform=qemu -stage=files -root=/sysroot -log-to-stdout
# printing after each stage, on the serial console,
#   OKD-GUEST: ignition fetch exit <status> at <uptime> s
#   OKD-GUEST: ignition files exit <status> at <uptime> s
# then unmounts /sysroot and powers off. The root must already hold what the
# files stage needs: /etc/passwd, group, shadow, gshadow (Ignition runs
# `useradd --root /sysroot`) and /etc/selinux/config with SELINUX= and
# SELINUXTYPE= (Debian's Ignition relabels through `setfiles`, a stub here).
# With `okd.probe` on the kernel command line /init only prints
#   OKD-GUEST: probe booted
# and powers off: the tests' check whether a stock kernel boots under KVM.
# Boot it with
#   qemu-system-x86_64 -accel tcg -m 512 -nodefaults -no-reboot -display none \
#     -serial stdio -kernel vmlinuz -initrd ignition.cpio.gz \
#     -append 'console=ttyS0 quiet panic=-1' -nic none \
#     -drive file=root.ext4,format=raw,if=virtio \
#     -fw_cfg name=opt/com.coreos/config,file=<vm>.ign
#
# Inputs come from the host's installed Debian packages (busybox-static,
# util-linux, libc, ignition, passwd) and apt's mirror (the kernel .deb,
# cached under the guest root). coreos-installer is built with cargo into /var/tmp/okd-coreos-installer
# when missing (about 6 minutes on 2 cores; needs libzstd-dev and pkg-config).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="${OKD_GUEST_DIR:-/var/tmp/okd-guest}"
ci_root=/var/tmp/okd-coreos-installer
ci_version=0.27.0
ci_bin="$ci_root/bin/coreos-installer"
start=$SECONDS

log() { echo "guest/build.sh: $*" >&2; }

# The kernel: the real package linux-image-amd64 (the metapackage) depends on.
apt_field() { # package field: the candidate version's field
    apt-cache show --no-all-versions "$1" 2>/dev/null | awk -v f="$2:" '$1 == f { sub(/^[^:]*: */, ""); print; exit }'
}
kpkg="$(apt_field linux-image-amd64 Depends | grep -o 'linux-image-[0-9][^ ,]*' | head -1 || true)"
if [[ -z "$kpkg" ]]; then
    log "apt knows no linux-image-amd64; running apt-get update"
    apt-get update -qq >&2
    kpkg="$(apt_field linux-image-amd64 Depends | grep -o 'linux-image-[0-9][^ ,]*' | head -1)"
fi
kver="$(apt_field "$kpkg" Version)"
krel="${kpkg#linux-image-}"
pkg_version() { dpkg-query -W -f '${Version}' "$1" 2>/dev/null || echo none; }
# Debian's ignition package installs the binary only inside its dracut module.
ign_bin=/usr/lib/dracut/modules.d/30ignition/ignition

key="$( { cat "$here/build.sh"; echo "$kpkg $kver coreos-installer $ci_version";
          echo "busybox-static $(pkg_version busybox-static) util-linux $(pkg_version util-linux)";
          echo "libc6 $(pkg_version libc6)";
          echo "ignition $(pkg_version ignition) passwd $(pkg_version passwd)"; } | sha256sum | cut -c1-16)"
out="$root/$key"

if [[ "${1:-}" == --path ]]; then
    echo "$out"
    exit 0
fi
if [[ -f "$out/vmlinuz" && -f "$out/installer.cpio.gz" && -f "$out/ignition.cpio.gz" ]]; then
    echo "$out"
    exit 0
fi

# One build at a time (tests run in parallel); the winner's result is reused.
mkdir -p "$root"
exec 9>"$root/.lock"
flock 9
if [[ -f "$out/vmlinuz" && -f "$out/installer.cpio.gz" && -f "$out/ignition.cpio.gz" ]]; then
    echo "$out"
    exit 0
fi

# coreos-installer itself, from crates.io, when it is not built yet.
if [[ ! -x "$ci_bin" ]] || [[ "$("$ci_bin" --version 2>/dev/null)" != "coreos-installer $ci_version" ]]; then
    missing=()
    dpkg -s libzstd-dev >/dev/null 2>&1 || missing+=(libzstd-dev)
    command -v pkg-config >/dev/null || missing+=(pkg-config)
    if [[ ${#missing[@]} -gt 0 ]]; then
        log "installing ${missing[*]}"
        apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
    fi
    log "building coreos-installer $ci_version into $ci_root (several minutes)"
    cargo install coreos-installer --version "$ci_version" --root "$ci_root" --locked \
        --target-dir /var/tmp/okd-coreos-installer-target >&2
fi
for p in busybox lsblk blkid; do
    command -v "$p" >/dev/null || { log "missing $p (install busybox-static and util-linux)"; exit 1; }
done
[[ -x "$ign_bin" ]] || { log "missing $ign_bin (install ignition)"; exit 1; }
[[ -x /usr/sbin/useradd ]] || { log "missing /usr/sbin/useradd (install passwd)"; exit 1; }
busybox_bin="$(command -v busybox)"
if ldd "$busybox_bin" 2>&1 | grep -q '=>'; then
    log "$busybox_bin is not static (install busybox-static)"
    exit 1
fi

mkdir -p "$root/debs"
work="$(mktemp -d "$root/build.XXXXXX")"
trap 'rm -rf "$work"' EXIT

# The kernel package, through apt (cached under $root/debs).
deb="$(ls "$root/debs/${kpkg}_${kver//:/%3a}"_*.deb 2>/dev/null | head -1 || true)"
if [[ -z "$deb" ]]; then
    log "downloading $kpkg $kver"
    (cd "$root/debs" && apt-get download "$kpkg=$kver" 2>&1 | grep -v '^W: Download is performed unsandboxed' >&2 || true)
    deb="$(ls "$root/debs/${kpkg}_"*.deb 2>/dev/null | head -1 || true)"
    [[ -n "$deb" ]] || { log "apt-get download $kpkg=$kver failed (stale apt lists? run apt-get update)"; exit 1; }
fi
for old in "$root/debs"/*.deb; do
    [[ "$old" == "$deb" ]] || rm -f "$old"
done
log "unpacking $(basename "$deb")"
dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$work" --wildcards \
    "./boot/vmlinuz-$krel" "./lib/modules/$krel/modules.order" "./lib/modules/$krel/kernel/*"
mods="$work/lib/modules/$krel"

rd="$work/initrd"
mkdir -p "$rd"/{bin,sbin,usr/bin,usr/sbin,lib/x86_64-linux-gnu,lib64,lib/modules,proc,sys,dev,run,tmp,mnt,etc,opt/openshift}
cp "$busybox_bin" "$rd/bin/busybox"
cp "$ci_bin" "$rd/usr/bin/coreos-installer"
cp "$(command -v lsblk)" "$rd/usr/bin/lsblk"
cp "$(command -v blkid)" "$rd/usr/sbin/blkid"
if command -v strip >/dev/null; then
    strip "$rd/usr/bin/coreos-installer"
fi
# coreos-installer runs lsblk, blkid and `udevadm settle` (coreos/coreos-installer
# src/blockdev.rs; gpg only for signatures, which --insecure skips, and
# kpartx/dmsetup only for device-mapper targets; it mounts with mount(2), so no
# mount program). The guest has no udev: the kernel's devtmpfs makes the device
# nodes, and this `udevadm` is a stand-in whose `settle` does what udev's blkid
# builtin would have done by then: it rewrites udev's database
# (/run/udev/data/b<major>:<minor>, E:KEY=value lines) from `blkid -p -o udev`
# for every block device, and does nothing else. lsblk needs that database: with
# libudev it takes LABEL/FSTYPE/PARTLABEL from udev only and never probes, so
# without it coreos-installer fails with "couldn't find boot device". Any other
# udevadm command is a no-op. coreos-installer also refuses to run without
# /run/udev/control (have_udev()), so /init creates that file.
cat >"$rd/usr/bin/udevadm" <<'UDEVADM'
#!/bin/busybox sh
# udevadm stand-in (no udev in this guest; see tests/guest/build.sh)
[ "$1" = settle ] || exit 0
rm -rf /run/udev/data
mkdir -p /run/udev/data
for d in /sys/class/block/*; do
    n="${d##*/}"
    [ -b "/dev/$n" ] && [ -r "$d/dev" ] || continue
    read -r mm <"$d/dev"
    blkid -p -o udev "/dev/$n" 2>/dev/null | sed 's/^/E:/' >"/run/udev/data/b$mm"
done
exit 0
UDEVADM
chmod 755 "$rd/usr/bin/udevadm"
# Shared libraries, as ldd resolves them on this host.
copy_libs() { # initrd binary...: copies what the binaries link into initrd
    local into="$1"
    shift
    for b in "$@"; do
        ldd "$b" | awk '/=> \// { print $3 } /^\t\/[^ ]+ \(/ { print $1 }'
    done | sort -u | while read -r lib; do
        real="$(readlink -f "$lib")"
        name="$(basename "$lib")"
        case "$lib" in
            /lib64/*) cp "$real" "$into/lib64/$name" ;;
            *) cp "$real" "$into/lib/x86_64-linux-gnu/$name" ;;
        esac
    done
}
copy_libs "$rd" "$rd/usr/bin/coreos-installer" "$rd/usr/bin/lsblk" "$rd/usr/sbin/blkid"

# Kernel modules and what each depends on (the .ko's modinfo `depends=`;
# Debian's package has no modules.dep, which depmod makes at install time),
# listed so that dependencies come first. crc32c_generic is what ext4 asks the
# crypto API for (metadata_csum) without a module dependency.
declare -A mod_path
while read -r p; do
    n="$(basename "$p" .ko)"; mod_path["${n//-/_}"]="$p"
done <"$mods/modules.order"
order=()
declare -A seen
add_mod() {
    local n="${1//-/_}" dep deps
    [[ -n "${seen[$n]:-}" ]] && return 0
    seen[$n]=1
    [[ -n "${mod_path[$n]:-}" ]] || { log "module $n not in $kpkg"; exit 1; }
    deps="$(tr '\0' '\n' <"$mods/${mod_path[$n]}" | sed -n 's/^depends=//p' | head -1)"
    for dep in ${deps//,/ }; do add_mod "$dep"; done
    order+=("$n")
}
for m in virtio_pci virtio_blk crc32c_generic ext4 qemu_fw_cfg; do add_mod "$m"; done
for n in "${order[@]}"; do
    cp "$mods/${mod_path[$n]}" "$rd/lib/modules/$n.ko"
    echo "$n" >>"$rd/lib/modules/load-order"
done

cat >"$rd/init" <<'EOF'
#!/bin/busybox sh
# okd-install test guest (tests/guest/build.sh): runs coreos-installer install
# on /dev/vda with the arguments in fw_cfg opt/okd/args, then powers off.
/bin/busybox --install -s /bin
export PATH=/usr/bin:/usr/sbin:/bin:/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs dev /dev 2>/dev/null
mount -t tmpfs run /run
mount -t tmpfs tmp /tmp
echo "OKD-GUEST: init at $(cut -d' ' -f1 /proc/uptime) s"
for m in $(cat /lib/modules/load-order); do
    insmod "/lib/modules/$m.ko" || echo "OKD-GUEST: insmod $m failed"
done
# see the udevadm stub: coreos-installer checks for udev's control socket
mkdir -p /run/udev /etc/NetworkManager/system-connections
: >/run/udev/control
fw=/sys/firmware/qemu_fw_cfg/by_name
set --
if [ -r $fw/opt/okd/args/raw ]; then
    while IFS= read -r a || [ -n "$a" ]; do set -- "$@" "$a"; done <$fw/opt/okd/args/raw
fi
i=0
while [ ! -b /dev/vda ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
# The Ignition config: a third virtio disk holding its bytes (zero-padded to
# whole sectors), its length in fw_cfg opt/okd/ignition-size. fw_cfg's sysfs
# file reads a few hundred KiB/s under TCG, too slow for a config that
# carries a program; small configs may come through opt/com.coreos/config.
if [ -r $fw/opt/okd/ignition-size/raw ]; then
    head -c "$(cat $fw/opt/okd/ignition-size/raw)" /dev/vdc >/opt/openshift/master.ign
elif [ -r $fw/opt/com.coreos/config/raw ]; then
    cat $fw/opt/com.coreos/config/raw >/opt/openshift/master.ign
fi
udevadm settle
echo "OKD-GUEST: coreos-installer install $* /dev/vda"
coreos-installer install "$@" /dev/vda
rc=$?
sync
echo "OKD-GUEST: coreos-installer exit $rc"
poweroff -f
EOF
chmod 755 "$rd/init"

(cd "$rd" && find . | LC_ALL=C sort | "$busybox_bin" cpio -o -H newc 2>/dev/null | gzip -1) >"$work/installer.cpio.gz"

# The Ignition guest: the same busybox and kernel modules, Debian's Ignition
# and what its files stage runs. Ignition 2.14 (coreos/ignition
# internal/exec/util/passwd.go) runs `useradd --root <root>` for a new user
# (the host's useradd, chrooting into the target root), `modprobe
# qemu_fw_cfg` (internal/providers/qemu/qemu_fwcfg.go; busybox modprobe fails
# without modules.dep, so /init insmods the module and this `modprobe` is a
# no-op) and `setfiles` to relabel what it wrote (Debian builds it with
# SELinux relabelling; internal/exec/util/selinux.go), a no-op here because
# the guest's root has SELinux disabled.
ig="$work/ignition-initrd"
mkdir -p "$ig"/{bin,sbin,usr/bin,usr/sbin,usr/local/sbin,lib/x86_64-linux-gnu,lib64,proc,sys,dev,run,tmp,sysroot}
cp "$busybox_bin" "$ig/bin/busybox"
cp -r "$rd/lib/modules" "$ig/lib/modules"
cp "$ign_bin" "$ig/usr/bin/ignition"
cp /usr/sbin/useradd "$ig/usr/sbin/useradd"
copy_libs "$ig" "$ig/usr/bin/ignition" "$ig/usr/sbin/useradd"
printf '#!/bin/busybox sh\n# stand-in (tests/guest/build.sh): /init has loaded the modules\nexit 0\n' \
    >"$ig/usr/local/sbin/modprobe"
printf '#!/bin/busybox sh\n# stand-in (tests/guest/build.sh): SELinux is disabled in the target root\ncat >/dev/null\nexit 0\n' \
    >"$ig/usr/local/sbin/setfiles"
chmod 755 "$ig/usr/local/sbin/modprobe" "$ig/usr/local/sbin/setfiles"
cat >"$ig/init" <<'EOF'
#!/bin/busybox sh
# okd-install Ignition guest (tests/guest/build.sh): runs Debian's Ignition,
# stages fetch and files, on the config in fw_cfg opt/com.coreos/config with
# /dev/vda as the target root, then powers off.
/bin/busybox --install -s /bin
export PATH=/usr/local/sbin:/usr/bin:/usr/sbin:/bin:/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs dev /dev 2>/dev/null
mount -t tmpfs run /run
mount -t tmpfs tmp /tmp
up() { cut -d' ' -f1 /proc/uptime; }
echo "OKD-GUEST: init at $(up) s"
if grep -qw okd.probe /proc/cmdline; then
    echo "OKD-GUEST: probe booted"
    poweroff -f
fi
for m in $(cat /lib/modules/load-order); do
    insmod "/lib/modules/$m.ko" || echo "OKD-GUEST: insmod $m failed"
done
i=0
while [ ! -b /dev/vda ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
if ! mount -t ext4 /dev/vda /sysroot; then
    echo "OKD-GUEST: mounting /dev/vda on /sysroot failed"
    poweroff -f
fi
mkdir -p /run/ignition
# Each stage as ignition-fetch.service and ignition-files.service run it; its
# log goes to the console without the lines about the missing journal socket.
stage() { # stage [flags...]: runs one stage, prints its marker; 0 if it passed
    s=$1
    shift
    { ignition -platform=qemu -stage="$s" -log-to-stdout \
        -config-cache=/run/ignition.json -state-file=/run/ignition/state "$@" 2>&1
      echo $? >/run/ignition/rc; } | grep -v 'failed to log systemd journal entry'
    rc=$(cat /run/ignition/rc)
    echo "OKD-GUEST: ignition $s exit $rc at $(up) s"
    [ "$rc" = 0 ]
}
stage fetch -neednet=/run/ignition/neednet && stage files -root=/sysroot
umount /sysroot
sync
echo "OKD-GUEST: powering off at $(up) s"
poweroff -f
EOF
chmod 755 "$ig/init"
(cd "$ig" && find . | LC_ALL=C sort | "$busybox_bin" cpio -o -H newc 2>/dev/null | gzip -1) >"$work/ignition.cpio.gz"

rm -rf "$out.partial"
mkdir -p "$out.partial"
mv "$work/installer.cpio.gz" "$out.partial/installer.cpio.gz"
mv "$work/ignition.cpio.gz" "$out.partial/ignition.cpio.gz"
mv "$work/boot/vmlinuz-$krel" "$out.partial/vmlinuz"
echo "$krel" >"$out.partial/kernel-version"
rm -rf "$out"
mv "$out.partial" "$out"
# Guests of earlier inputs are not used again.
for old in "$root"/????????????????/; do
    [[ "$old" == "$out/" ]] || rm -rf "$old"
done
log "built the guests in $((SECONDS - start)) s (initramfs: $(du -h "$out/installer.cpio.gz" | cut -f1) installer, $(du -h "$out/ignition.cpio.gz" | cut -f1) ignition)"
echo "$out"
