#!/bin/sh
# Benchmark (not a test): serve's peak memory (VmHWM; target under 50 MiB)
# while a host of the install network holds about 3,000 slow connections on
# its TCP services and the bootstrap host downloads bootstrap.ign, which a
# release build makes with the node program in it (tens of MB; okd-assets
# `node_program`). Release build; needs root (network namespaces), curl,
# python3 and prlimit. Usage: bench/serve-flood.sh
set -eu
cd "$(dirname "$0")/.."
: "${CARGO_TARGET_DIR:=/var/tmp/okd-bench-target}"
export CARGO_TARGET_DIR
exec cargo test --release -p okd-install --test serve_flood -- \
    serve_flood_memory_bench --ignored --exact --nocapture --test-threads=1
