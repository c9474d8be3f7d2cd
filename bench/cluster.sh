#!/bin/sh
# Benchmarks of approve-csr and wait-for against the real control plane of
# tests/kube (release build; not a test). Needs root (network namespaces),
# kubectl, openssl, curl and the Debian ignition package, as .ci/run installs.
# Usage: bench/cluster.sh      (OKD_BENCH_CSRS=500, OKD_BENCH_IDLE_SECS=60)
set -eu
cd "$(dirname "$0")/.."
: "${CARGO_TARGET_DIR:=/var/tmp/okd-bench-target}"
export CARGO_TARGET_DIR
OKD_KUBE_BIN="$(bash tests/kube/build.sh)"
export OKD_KUBE_BIN
exec cargo test --release -p okd-install --test cluster_bench -- \
    bench_cluster_commands --ignored --exact --nocapture --test-threads=1
