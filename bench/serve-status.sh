#!/bin/sh
# Benchmark of serve's status store under issue #18's flood (100 source
# addresses x 8 requests with 65 KB paths), then DNS answer times from the
# master while 8 clients read /status for 20 s: prints serve's peak memory
# (VmHWM; goal under 50 MiB), the size of /status and DNS p50/p99/max
# (release build; not a test). Needs root (network namespaces), curl and
# python3. Usage: bench/serve-status.sh
set -eu
cd "$(dirname "$0")/.."
: "${CARGO_TARGET_DIR:=/var/tmp/okd-bench-target}"
export CARGO_TARGET_DIR
exec cargo test --release -p okd-install --test serve_status -- \
    status_flood_bench --ignored --exact --nocapture --test-threads=1
