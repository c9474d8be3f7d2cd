#!/bin/sh
# Benchmark of the bootstrap node's program (issue #20): the end-to-end
# test `bootstrap_node` in a release build, printing the time from the
# bootstrap host's start to the end of cluster-bootstrap's manifest
# creation, each stage's end, and the peak memory (VmHWM) of
# `okd-install bootstrap bootkube` (not a test; a few minutes after the
# build). Needs root and the node-host programs that .ci/run installs
# (containerd, runc, the CNI plugins, ignition, docker-registry, gcc).
# Usage: bench/bootstrap.sh
set -eu
cd "$(dirname "$0")/.."
: "${CARGO_TARGET_DIR:=/var/tmp/okd-bench-target}"
export CARGO_TARGET_DIR
bash tests/kube/build.sh >/dev/null
cargo test --release -p okd-install --test bootstrap_node -- \
    --nocapture --test-threads=1 2>&1 |
    sed -n '/bootstrap host start to/,/peak memory/p'
