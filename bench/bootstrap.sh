#!/bin/sh
# Benchmark of the bootstrap node's program (issues #20, #21): the
# end-to-end tests `bootstrap_node` (bootstrap + 1 master) and
# `bootstrap_ha` (bootstrap + 3 masters, with its two faults) and
# `bootstrap_single_node` (bootstrap-in-place: live ISO, coreos-installer in a
# TCG guest, the reboot, post-reboot) in a release build, printing the time from the bootstrap host's start to the end of
# cluster-bootstrap's manifest creation, each stage's end from the
# service records, the handover to the masters (to `.bootkube.done`, to
# the bootstrap etcd member's removal), and the peak memory (VmHWM) of
# `okd-install bootstrap bootkube` (not a test; a few minutes after the
# build). Needs root and the node-host programs that .ci/run installs
# (containerd, runc, the CNI plugins, ignition, docker-registry, gcc,
# qemu-system-x86 and tests/guest/build.sh's guest).
# Usage: bench/bootstrap.sh
set -eu
cd "$(dirname "$0")/.."
: "${CARGO_TARGET_DIR:=/var/tmp/okd-bench-target}"
export CARGO_TARGET_DIR
bash tests/kube/build.sh >/dev/null
for t in bootstrap_node bootstrap_ha bootstrap_single_node; do
    echo "== $t"
    cargo test --release -p okd-install --test "$t" -- \
        --nocapture --test-threads=1 >"$CARGO_TARGET_DIR/bench-$t.log" 2>&1 ||
        { tail -40 "$CARGO_TARGET_DIR/bench-$t.log"; exit 1; }
    # The figures: everything the test printed after its name.
    sed -e 's/^test [^ ]* \.\.\. //' "$CARGO_TARGET_DIR/bench-$t.log" |
        sed -n '/master joined\|^1 master\|^3 masters\|^handover:\|bootstrap host start\|^bootkube start\|^single node\|^post-reboot stage\|^  \|peak memory/p'
done
