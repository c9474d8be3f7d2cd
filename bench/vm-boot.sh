#!/bin/sh
# Benchmark of a real boot of a VM's Ignition config (issue #22): the
# bootstrap VM's Ignition file from `okd-install create cluster` (libvirt's
# test driver) applied by Debian's Ignition inside a qemu guest (fw_cfg,
# -platform=qemu, stages fetch and files), boot to Ignition done, median of
# 3 under TCG and under KVM where a stock kernel boots with it, beside the
# same two stages on the host with -platform=file (release build; not a
# test; about a minute). Needs root, qemu-system-x86, e2fsprogs,
# libvirt-clients, ignition and passwd, as .ci/run installs, and
# tests/guest/build.sh's guest (built here when missing).
# Usage: bench/vm-boot.sh
set -eu
cd "$(dirname "$0")/.."
: "${CARGO_TARGET_DIR:=/var/tmp/okd-bench-target}"
export CARGO_TARGET_DIR
OKD_GUEST_KIT="$(bash tests/guest/build.sh)"
export OKD_GUEST_KIT
exec cargo bench -p okd-install --bench vm_boot
