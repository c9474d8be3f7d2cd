#!/usr/bin/env bash
# Benchmark (not a test): `okd-install create ignition-configs` on the
# release build, which carries itself in bootstrap.ign as the bootstrap
# node's program (okd-assets `node_program`), beside the time to generate
# the same number of RSA-2048 keys alone with the same key generator and
# thread count (the "key-generation floor"), measured in the same run.
#
# Prints, each the median of N runs (default 7):
# * the one-time compression of the program into the cache (a cold cache,
#   once per okd-install executable);
# * the first run in a fresh directory with the cache warm (target <= 2x the floor);
# * a repeated run in the same directory (target <= 1.1x the floor);
# * peak memory over every run (target < 50 MiB);
# * bootstrap.ign's size beside openshift-install 4.13's for the same
#   install-config (measured: examples baremetal-single-master 283,597
#   bytes, baremetal-ha 275,593 bytes).
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
export OKD_INSTALL_CACHE_DIR="$scratch/cache"
unset OKD_INSTALL_NODE_BINARY
case "$example" in
  *baremetal-single-master*) reference=283597 ;;
  *baremetal-ha*) reference=275593 ;;
  *) reference="" ;;
esac
timed() { # dir: runs create ignition-configs, prints the wall time, records peak RSS in $scratch/rss
  /usr/bin/time -f '%e %M' -o "$scratch/t" "$bin" create ignition-configs --dir "$1" 2>"$scratch/log" \
    || { cat "$scratch/log"; exit 1; }
  read -r w m < "$scratch/t"; echo "$m" >> "$scratch/rss"; echo "$w"
}
# The cold cache: the one-time compression (then nothing more to do for this executable).
mkdir -p "$scratch/cold"; cp "$example/install-config.yaml" "$scratch/cold/"
cold=$(timed "$scratch/cold")
firsts=(); repeats=()
for i in $(seq "$runs"); do
  d="$scratch/run$i"; mkdir -p "$d"; cp "$example/install-config.yaml" "$d/"
  firsts+=("$(timed "$d")")
  repeats+=("$(timed "$d")")
done
keys=$(python3 -c "import json;s=json.load(open('$scratch/run1/.openshift_install_state.json'));print(sum(1 for k,v in s.items() if isinstance(v,dict) and ('KeyRaw' in v or 'Pvt' in v or 'Priv' in v)))")
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END{print (NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2}'; }
floor_out=$("$CARGO_TARGET_DIR/release/examples/keygen_floor" "$keys")
floor=$(printf '%s\n' "$floor_out" | awk '/median/ {for(i=1;i<=NF;i++) if ($i ~ /^[0-9.]+s$/) {sub("s","",$i); print $i; exit}}')
first=$(median "${firsts[@]}"); repeat=$(median "${repeats[@]}")
maxrss=$(sort -g "$scratch/rss" | tail -1)
ign=$(stat -c %s "$scratch/run1/bootstrap.ign")
state=$(stat -c %s "$scratch/run1/.openshift_install_state.json")
program=$(stat -c %s "$bin")
echo "create ignition-configs ($example), release build, $runs runs each"
echo "key-generation floor for $keys RSA-2048 keys on $(nproc) threads: ${floor}s  [$floor_out]"
awk -v c="$cold" -v f="$floor" 'BEGIN{printf "cold cache (compresses the program, once per executable): %ss = %.2fx the floor\n", c, c/f}'
awk -v w="$first" -v f="$floor" -v r="${firsts[*]}" 'BEGIN{printf "first run in a fresh directory: median %ss = %.2fx the floor (target <= 2x)  [runs: %s]\n", w, w/f, r}'
awk -v w="$repeat" -v f="$floor" -v r="${repeats[*]}" 'BEGIN{printf "repeated run in the same directory: median %ss = %.2fx the floor (target <= 1.1x)  [runs: %s]\n", w, w/f, r}'
awk -v m="$maxrss" 'BEGIN{printf "peak RSS (max over every run): %.1f MiB (target < 50 MiB)\n", m/1024}'
awk -v i="$ign" -v r="$reference" -v p="$program" -v s="$state" 'BEGIN{
  printf "bootstrap.ign: %.1f MB, carrying the %.1f MB program", i/1e6, p/1e6
  if (r != "") printf "; openshift-install 4.13: %.3f MB (%.0fx)", r/1e6, i/r
  printf "; state file %.2f MB\n", s/1e6 }'
