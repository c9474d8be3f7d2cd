#!/bin/sh
# Queries/s of okd-dns vs dnsmasq on loopback (not a test).
# Usage: crates/bastion/dns/bench.sh [seconds per round, default 5] [queries in flight, default 64] [rounds, default 2] [--no-observer]
set -eu
cd "$(dirname "$0")/../../.."
: "${CARGO_TARGET_DIR:=/var/tmp/tgt-dns}"
export CARGO_TARGET_DIR
cargo build --release -p okd-dns --examples
exec "$CARGO_TARGET_DIR/release/examples/dns_bench" "$@"
