#!/bin/sh
# Benchmark of serve's install dashboard against HAProxy's stats page, both
# open in the same headless Chromium, for the same backend going DOWN and UP
# (release build; not a test). Needs root (network namespaces), the kit of
# tests/kube, haproxy, openssl, chromium and chromium-driver, as .ci/run
# installs. Usage: bench/dashboard.sh   (OKD_BENCH_CYCLES=10, OKD_BENCH_IDLE_SECS=60)
set -eu
cd "$(dirname "$0")/.."
: "${CARGO_TARGET_DIR:=/var/tmp/okd-bench-target}"
export CARGO_TARGET_DIR
OKD_KUBE_BIN="$(bash tests/kube/build.sh)"
export OKD_KUBE_BIN
exec cargo test --release -p okd-install --test dashboard_bench -- \
    bench_dashboard_against_haproxy_stats --ignored --exact --nocapture --test-threads=1
