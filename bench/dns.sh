#!/bin/sh
# Benchmark of serve's DNS beside dnsmasq with the configuration of
# `create bastion-configs`, both loaded with dnsperf from hosts in network
# namespaces, in alternating turns (release build; not a test; about 5
# minutes; then instructions per query of each under callgrind when
# valgrind is installed). Needs root
# (network namespaces), dnsmasq and dnsperf (installed here when missing).
# Usage: bench/dns.sh      (OKD_BENCH_SECS=8 seconds per case,
#                           OKD_BENCH_ROUNDS=3 turns of each server)
set -eu
cd "$(dirname "$0")/.."
: "${CARGO_TARGET_DIR:=/var/tmp/okd-bench-target}"
export CARGO_TARGET_DIR
if ! command -v dnsperf >/dev/null 2>&1; then
    apt-get install -y dnsperf >/dev/null
fi
cargo test --release -p okd-install --test dns_bench -- \
    bench_dns_against_dnsmasq --ignored --exact --nocapture --test-threads=1
# Instructions per query under callgrind (load-independent), when valgrind
# is installed.
if command -v valgrind >/dev/null 2>&1; then
    cargo test --release -p okd-install --test dns_bench -- \
        instructions_per_query_against_dnsmasq --ignored --exact --nocapture \
        --test-threads=1
fi
