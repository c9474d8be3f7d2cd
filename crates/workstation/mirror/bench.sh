#!/usr/bin/env bash
# Wall time and peak RSS of `okd-install mirror release` vs skopeo copy (one by one)
# vs skopeo sync, mirroring the same synthetic release payload from a plain-HTTP
# registry into an empty TLS+htpasswd registry (not a test).
# Usage: crates/workstation/mirror/bench.sh [components, default 110] [approx total MiB, default 1100]
# Needs docker-registry, skopeo, curl, python3, /usr/bin/time:
#   apt-get install -y --no-install-recommends docker-registry skopeo curl time
# Env: CARGO_TARGET_DIR (default /var/tmp/okd-install-ci-target),
#      OKD_INSTALL_BIN=path (use this binary, skip cargo build),
#      BENCH_SKIP=okd,copy,sync (leave out runs), BENCH_KEEP=1 (keep the scratch dir).
# Ports 127.0.0.1:15100 (source, plain HTTP) and 127.0.0.1:15101 (target, TLS) must be free.
set -euo pipefail
cd "$(dirname "$0")/../../.."
: "${CARGO_TARGET_DIR:=/var/tmp/okd-install-ci-target}"
export CARGO_TARGET_DIR
COMPONENTS=${1:-110}
TOTAL_MIB=${2:-1100}
SKIP=${BENCH_SKIP:-}
A=127.0.0.1:15100
B=127.0.0.1:15101
VERSION=4.15.0-0.okd-bench
MULTIARCH=2
SHARED_LAYERS=3
UNIQUE_LAYERS=2

for p in docker-registry skopeo curl python3; do
  command -v "$p" >/dev/null || { echo "missing $p: apt-get install -y --no-install-recommends docker-registry skopeo curl" >&2; exit 1; }
done
[ -x /usr/bin/time ] || { echo "missing /usr/bin/time: apt-get install -y --no-install-recommends time" >&2; exit 1; }
for port in 15100 15101; do
  if curl -ks -o /dev/null --max-time 2 "http://127.0.0.1:$port/"; then
    echo "127.0.0.1:$port is in use" >&2; exit 1
  fi
done

if [ -n "${OKD_INSTALL_BIN:-}" ]; then
  BIN=$OKD_INSTALL_BIN
else
  cargo build --release -p okd-install
  BIN=$CARGO_TARGET_DIR/release/okd-install
fi

S=$(mktemp -d /var/tmp/okd-mirror-bench.XXXXXX)
PID_A=
PID_B=
stop_b() {
  if [ -n "$PID_B" ]; then kill "$PID_B" 2>/dev/null || true; wait "$PID_B" 2>/dev/null || true; PID_B=; fi
}
cleanup() {
  stop_b
  if [ -n "$PID_A" ]; then kill "$PID_A" 2>/dev/null || true; wait "$PID_A" 2>/dev/null || true; PID_A=; fi
  if [ -n "${BENCH_KEEP:-}" ]; then echo "kept $S" >&2; else rm -rf "$S"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
log() { echo "bench: $*" >&2; }

# wait_http URL CODE [curl args...]: until URL answers CODE (10 s)
wait_http() {
  local url=$1 want=$2 code i; shift 2
  for i in $(seq 100); do
    code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$@" "$url" || true)
    [ "$code" = "$want" ] && return 0
    sleep 0.1
  done
  echo "$url did not answer $want (last: $code)" >&2; return 1
}

# --- 1+2. Registry A (plain HTTP) with the payload ----------------------------------
mkdir -p "$S/a-data"
cat > "$S/a.yml" <<EOF
version: 0.1
log: {level: warn, accesslog: {disabled: true}}
storage:
  filesystem: {rootdirectory: $S/a-data}
  delete: {enabled: true}
http:
  addr: $A
EOF
docker-registry serve "$S/a.yml" > "$S/a.log" 2>&1 &
PID_A=$!
wait_http "http://$A/v2/" 200

# Sizes: about 12% of the bytes in shared layers (3 amd64 base layers, 1 "middle" layer
# shared by half the components, 3 arm64 base layers), the rest in 2 unique layers per image.
TOTAL_KIB=$((TOTAL_MIB * 1024))
SHARED_KIB=$((TOTAL_KIB * 12 / 100 / (2 * SHARED_LAYERS + 1)))
UNIQUE_KIB=$(((TOTAL_KIB - SHARED_KIB * (2 * SHARED_LAYERS + 1)) / (COMPONENTS + MULTIARCH) / UNIQUE_LAYERS))
log "payload: $COMPONENTS components ($MULTIARCH multi-arch), shared layers ${SHARED_KIB} KiB, unique ${UNIQUE_LAYERS}x${UNIQUE_KIB} KiB"
T0=$(date +%s.%N)
python3 crates/workstation/mirror/tests/mkpayload.py "$S/layout" --registry "$A" \
  --release-repo okd/okd --content-repo okd/okd-content --version "$VERSION" \
  --components "$COMPONENTS" --multiarch "$MULTIARCH" \
  --shared-layers "$SHARED_LAYERS" --shared-kib "$SHARED_KIB" \
  --unique-layers "$UNIQUE_LAYERS" --unique-kib "$UNIQUE_KIB" --push > "$S/payload.json"
rm -rf "$S/layout"
T1=$(date +%s.%N)
read -r REL_DIGEST FIRST_DIGEST IMAGES BLOB_BYTES BLOB_COUNT <<<"$(python3 -c '
import json, sys
o = json.load(open(sys.argv[1]))
print(o["release"]["digest"], o["components"][0]["digest"], o["images"], o["blobs"]["bytes"], o["blobs"]["count"])' "$S/payload.json")"
log "setup: $IMAGES images, $BLOB_COUNT blobs, $((BLOB_BYTES / 1048576)) MiB in $A ($(awk -v a="$T0" -v b="$T1" 'BEGIN { printf "%.1f", b - a }') s)"

# --- 3. Registry B (TLS + htpasswd) from okd-install mirror registry init ------------
python3 -c 'import secrets; print(secrets.token_urlsafe(18))' > "$S/pw"
PW=$(cat "$S/pw")
"$BIN" mirror registry init --dir "$S/b-assets" --hostname localhost --address 127.0.0.1 \
  --port 15101 --username okd --password-file "$S/pw" > "$S/init.log" 2>&1 \
  || { cat "$S/init.log" >&2; exit 1; }
MR=$S/b-assets/mirror-registry
B_ROOT=$(sed -n 's/^[[:space:]]*rootdirectory:[[:space:]]*//p' "$MR/config.yml" | tr -d "\"'")
B_ADDR=$(sed -n 's/^[[:space:]]*addr:[[:space:]]*//p' "$MR/config.yml" | tr -d "\"'")
[ -n "$B_ROOT" ] && [ "$B_ADDR" = "$B" ] || { echo "unexpected $MR/config.yml (root '$B_ROOT', addr '$B_ADDR')" >&2; exit 1; }
mkdir -p "$S/certs-b"
cp "$MR/ca.crt" "$S/certs-b/ca.crt"

fresh_b() { # $1: name of the run (log file $S/b.$1.log)
  stop_b
  rm -rf "$B_ROOT"
  mkdir -p "$B_ROOT"
  docker-registry serve "$MR/config.yml" > "$S/b.$1.log" 2>&1 &
  PID_B=$!
  wait_http "https://$B/v2/" 401 --cacert "$MR/ca.crt"
  rm -f "$HOME/.local/share/containers/cache/blob-info-cache-v1.boltdb" \
    /var/lib/containers/cache/blob-info-cache-v1.boltdb
  sync
}

# verify RELEASE_REPO COMPONENT_REPO: the release manifest and the first component (an
# image index) are in B by digest (sha256 of the raw bytes)
verify() {
  local x got res=ok
  for x in "$1@$REL_DIGEST" "$2@$FIRST_DIGEST"; do
    got=sha256:$(skopeo inspect --raw --cert-dir "$S/certs-b" --creds "okd:$PW" \
      "docker://$B/$x" 2>/dev/null | sha256sum | cut -d' ' -f1)
    [ "$got" = "${x#*@}" ] || res="FAIL($x)"
  done
  echo "$res"
}

# CPU seconds (user+system) registry B has used so far
b_cpu() {
  awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); printf "%.2f", ($12 + $13) / hz }' "/proc/$PID_B/stat"
}

RESULTS=$S/results
: > "$RESULTS"
# run NAME RELEASE_REPO COMPONENT_REPO CMD...: time CMD against an empty B, record a results line
run() {
  local name=$1 repo=$2 crepo=$3 rc=0 secs rss mib ok cpu0 cpu1 reqs; shift 3
  fresh_b "$name"
  cpu0=$(b_cpu)
  log "run $name ..."
  /usr/bin/time -f '%e %M' -o "$S/time.$name" "$@" > "$S/$name.log" 2>&1 || rc=$?
  read -r secs rss < <(tail -n 1 "$S/time.$name")
  cpu1=$(b_cpu)
  # requests B logged (needs log level info in config.yml): answered + refused (401)
  reqs=$(grep -cE 'msg="(response completed|error authorizing context)' "$S/b.$name.log" || true)
  mib=$(du -sb "$B_ROOT" 2>/dev/null | awk '{printf "%.0f", $1 / 1048576}')
  if [ "$rc" -eq 0 ]; then ok=$(verify "$repo" "$crepo"); else ok="exit $rc (see $S/$name.log)"; tail -n 5 "$S/$name.log" >&2; fi
  cpu1=$(awk -v a="$cpu0" -v b="$cpu1" 'BEGIN { printf "%.1f", b - a }')
  log "run $name: $secs s, $rss KiB, $mib MiB, registry B: $cpu1 CPU s, $reqs requests; release $ok"
  echo "$name $secs $rss $mib $cpu1 $reqs $ok" >> "$RESULTS"
}

skip() { case ",$SKIP," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }

# --- 4a. okd-install mirror release ---------------------------------------------------
if skip okd; then
  log "skipping okd-install (BENCH_SKIP)"
elif ! "$BIN" mirror release --help > /dev/null 2>&1; then
  log "skipping okd-install: '$BIN mirror release' does not exist yet"
else
  run okd-install mirror/okd mirror/okd "$BIN" mirror release --dir "$S/b-assets" \
    --from "$A/okd/okd:$VERSION" --to "localhost:15101/mirror/okd" --plain-http "$A" \
    --registry-config "$MR/pull-secret.json" --ca-file "$MR/ca.crt"
fi

# --- 4b. skopeo copy, one image at a time ------------------------------------------------
# Sources by digest, destination tags <version>-<name> (like oc adm release mirror).
python3 -c '
import json, sys
o = json.load(open(sys.argv[1]))
print("okd/okd", o["release"]["digest"], o["release"]["tag"])
for c in o["components"]:
    print("okd/okd-content", c["digest"], o["release"]["tag"] + "-" + c["name"])' "$S/payload.json" > "$S/copy.list"
cat > "$S/copy.sh" <<EOF
#!/bin/sh
set -e
while read -r repo digest tag; do
  skopeo copy --all --preserve-digests --src-tls-verify=false \\
    --dest-cert-dir "$S/certs-b" --dest-creds "okd:$PW" \\
    "docker://$A/\$repo@\$digest" "docker://$B/mirror/okd:\$tag"
done < "$S/copy.list"
EOF
chmod +x "$S/copy.sh"
if skip copy; then log "skipping skopeo copy (BENCH_SKIP)"; else run skopeo-copy mirror/okd mirror/okd "$S/copy.sh"; fi

# --- 4c. skopeo sync -----------------------------------------------------------------------
# skopeo 1.9.3's yaml source accepts digests in `images:` lists; those are pushed by digest
# (no tag) to $B/sync/okd@<digest> and $B/sync/okd-content@<digest> (no --scoped: the last
# path element of the source repository names the destination repository).
python3 -c '
import json, sys
o = json.load(open(sys.argv[1]))
print(sys.argv[2] + ":")
print("  tls-verify: false")
print("  images:")
print("    okd/okd: [" + json.dumps(o["release"]["digest"]) + "]")
print("    okd/okd-content: [" + ", ".join(json.dumps(c["digest"]) for c in o["components"]) + "]")' \
  "$S/payload.json" "$A" > "$S/sync.yaml"
if skip sync; then
  log "skipping skopeo sync (BENCH_SKIP)"
else
  run skopeo-sync sync/okd sync/okd-content skopeo sync --all --preserve-digests --src yaml --dest docker \
    --dest-cert-dir "$S/certs-b" --dest-creds "okd:$PW" "$S/sync.yaml" "$B/sync"
fi

# --- 5. Table ---------------------------------------------------------------------------------
echo
echo "payload: $IMAGES images ($COMPONENTS components, $MULTIARCH multi-arch, + release), $BLOB_COUNT blobs, $((BLOB_BYTES / 1048576)) MiB distinct"
awk -v images="$IMAGES" '
  { name[NR] = $1; secs[NR] = $2; rss[NR] = $3; mib[NR] = $4; cpu[NR] = $5; reqs[NR] = $6; ok[NR] = $7; for (i = 8; i <= NF; i++) ok[NR] = ok[NR] " " $i }
  END {
    printf "%-12s %9s %13s %7s %11s %10s %11s  %s\n", "tool", "seconds", "peak RSS MiB", "images", "MiB copied", "B CPU s", "B requests", "verified by digest"
    for (i = 1; i <= NR; i++) {
      printf "%-12s %9.2f %13.1f %7d %11d %10.1f %11d  %s\n", name[i], secs[i], rss[i] / 1024, images, mib[i], cpu[i], reqs[i], ok[i]
      if (name[i] == "okd-install") o = i
      else if (ok[i] == "ok" && (best == "" || secs[i] < secs[best])) best = i
    }
    if (o != "" && best != "" && secs[o] > 0)
      printf "\nfaster of skopeo (%s) / okd-install: time %.2fx, peak RSS %.2fx\n", name[best], secs[best] / secs[o], rss[best] / rss[o]
  }' "$RESULTS"
