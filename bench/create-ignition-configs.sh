#!/usr/bin/env bash
# Benchmark (not a test): `okd-install create ignition-configs` from an
# install-config in a fresh directory, median of N runs (default 7), beside the
# time to generate the same number of RSA-2048 keys alone with the same key
# generator and thread count (the "key-generation floor"), plus peak memory.
# Usage: bench/create-ignition-configs.sh [runs] [example]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-7}
example=${2:-examples/baremetal-single-master}
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/var/tmp/okd-install-ci-target}"
command -v /usr/bin/time >/dev/null || { apt-get update -qq && apt-get install -y -qq time >/dev/null; }
cargo build --release -q -p okd-install --bin okd-install
cargo build --release -q -p okd-pki --example keygen_floor
bin="$CARGO_TARGET_DIR/release/okd-install"
scratch=$(mktemp -d); trap 'rm -rf "$scratch"' EXIT
walls=(); rss=()
for i in $(seq "$runs"); do
  d="$scratch/run$i"; mkdir -p "$d"; cp "$example/install-config.yaml" "$d/"
  /usr/bin/time -f '%e %M' -o "$scratch/t" "$bin" create ignition-configs --dir "$d" 2>/dev/null
  read -r w m < "$scratch/t"; walls+=("$w"); rss+=("$m")
done
keys=$(python3 -c "import json;s=json.load(open('$scratch/run1/.openshift_install_state.json'));print(sum(1 for k,v in s.items() if isinstance(v,dict) and ('KeyRaw' in v or 'Pvt' in v or 'Priv' in v)))")
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END{print (NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2}'; }
floor_out=$("$CARGO_TARGET_DIR/release/examples/keygen_floor" "$keys")
floor=$(printf '%s\n' "$floor_out" | awk '/median/ {for(i=1;i<=NF;i++) if ($i ~ /^[0-9.]+s$/) {sub("s","",$i); print $i; exit}}')
wall=$(median "${walls[@]}")
maxrss=$(printf '%s\n' "${rss[@]}" | sort -g | tail -1)
echo "create ignition-configs ($example), $runs runs: median wall ${wall}s (runs: ${walls[*]})"
echo "key-generation floor for $keys RSA-2048 keys on $(nproc) threads: ${floor}s  [$floor_out]"
awk -v w="$wall" -v f="$floor" 'BEGIN{printf "ratio to floor: %.2fx (target <= 1.30x); wall target <= 1.30 s\n", w/f}'
awk -v m="$maxrss" 'BEGIN{printf "peak RSS (max over runs): %.1f MiB (target < 60 MiB)\n", m/1024}'
