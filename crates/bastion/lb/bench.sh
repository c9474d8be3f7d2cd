#!/bin/sh
# Throughput of okd-lb vs HAProxy on loopback (not a test).
# Usage: crates/bastion/lb/bench.sh [GiB per direction, default 2] [connections, default 4]
set -eu
cd "$(dirname "$0")/../../.."
: "${CARGO_TARGET_DIR:=/var/tmp/tgt-lb}"
export CARGO_TARGET_DIR
cargo build --release -p okd-lb --examples
exec "$CARGO_TARGET_DIR/release/examples/lb_bench" "${1:-2}" "${2:-4}"
