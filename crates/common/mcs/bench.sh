#!/bin/sh
# Requests/s of okd-mcs vs nginx serving the same config over TLS (not a test).
# Usage: crates/common/mcs/bench.sh [seconds, default 10] [connections, default 32] [threads, default: cores]
# Needs nginx and wrk: apt-get install -y --no-install-recommends nginx wrk
set -eu
cd "$(dirname "$0")/../../.."
: "${CARGO_TARGET_DIR:=/var/tmp/okd-install-ci-target}"
export CARGO_TARGET_DIR
for p in /usr/sbin/nginx /usr/bin/wrk; do
  [ -x "$p" ] || { echo "missing $p: apt-get install -y --no-install-recommends nginx wrk" >&2; exit 1; }
done
cargo build --release -p okd-mcs --example mcs_bench
exec "$CARGO_TARGET_DIR/release/examples/mcs_bench" "$@"
