#!/bin/sh
# Benchmark of serve's DNS beside dnsmasq with the configuration of
# `create bastion-configs`, both loaded with dnsperf from hosts in network
# namespaces, in alternating turns (release build; not a test; about 5
# minutes). Needs root
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
exec cargo test --release -p okd-install --test dns_bench -- \
    bench_dns_against_dnsmasq --ignored --exact --nocapture --test-threads=1
