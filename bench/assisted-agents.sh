#!/bin/sh
# Benchmark of the assisted service (issue #24): 5,000 simulated agents
# polling their next steps every 10 s against one service on this machine,
# on SQLite and on PostgreSQL, with TLS and authentication on as a user
# gets them (issue #41): poll and reply latency (p50, p99, max),
# the service's CPU and memory, the load generator's CPU (release build;
# not a test; about 5 minutes on 2 cores, plus about 5 for a cold build).
#
# The peer, run side by side in the same run: there is no assisted-service
# (Go) here, so the peer is the "HTTP floor": a bare axum server on the
# same HTTP stack, over the same TLS, answering the same two routes with a fixed steps
# document and 204, no database, no logic. Each row's p99 is also printed
# as a multiple of the floor's p99. Goals (issue): p99 under 50 ms, service
# memory under 100 MiB.
#
# PostgreSQL: Debian's postgresql (its row is skipped, with the reason,
# when missing). Traffic only to 127.0.0.1.
# Environment: OKD_BENCH_AGENTS (5000), OKD_BENCH_AGENTS_SECS (steady
# window, 60), OKD_BENCH_AGENTS_WARMUP (20), OKD_BENCH_AGENTS_CONNS (192,
# 48 from each of 127.0.0.10, .11, ...), OKD_BENCH_AGENTS_SERVICE_WORKERS (the service's tokio workers, 2).
# Usage: bench/assisted-agents.sh
set -eu
cd "$(dirname "$0")/.."
: "${CARGO_TARGET_DIR:=/var/tmp/okd-bench-target}"
export CARGO_TARGET_DIR
exec cargo bench -p okd-assisted-service --bench agents
