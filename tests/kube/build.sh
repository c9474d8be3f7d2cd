#!/usr/bin/env bash
# Builds the real control-plane programs okd-install's tests drive:
# kube-apiserver, kube-controller-manager, kube-scheduler and kubelet from
# k8s.io/kubernetes, and etcd from go.etcd.io/etcd/server/v3, at the versions
# pinned in go.mod (Kubernetes 1.32 as OKD 4.19 ships it; etcd 3.5).
#
# Usage: tests/kube/build.sh           builds if needed; prints the bin directory
#        tests/kube/build.sh --path    only prints where the bin directory is
# The binaries go to $OKD_KUBE_KIT_DIR/<go.sum hash>/bin (default
# /var/tmp/okd-kube-kit), outside the clone, and are reused while go.mod and
# go.sum are unchanged. Go's caches go to /var/tmp as well. A first build on
# 2 cores takes about 6 minutes (plus downloading ~850 MB of modules).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
kit_root="${OKD_KUBE_KIT_DIR:-/var/tmp/okd-kube-kit}"
export GOCACHE="${GOCACHE:-/var/tmp/go-cache}"
export GOMODCACHE="${GOMODCACHE:-/var/tmp/go-mod}"
# go.sum pins every module; the checksum database is not reachable here.
export GOSUMDB=off GOFLAGS=-mod=mod GOTOOLCHAIN=local CGO_ENABLED=0

key="$(cat "$here/go.mod" "$here/go.sum" "$here/build.sh" | sha256sum | cut -c1-16)"
bin="$kit_root/$key/bin"
progs=(etcd kube-apiserver kube-controller-manager kube-scheduler kubelet)

if [[ "${1:-}" == --path ]]; then
    echo "$bin"
    exit 0
fi

have_all() {
    local p
    for p in "${progs[@]}"; do [[ -x "$bin/$p" ]] || return 1; done
}

if have_all; then
    echo "$bin"
    exit 0
fi

kube_version="$(awk '$1 == "k8s.io/kubernetes" { print $2; exit }' "$here/go.mod")"
etcd_version="$(awk '$1 == "go.etcd.io/etcd/server/v3" { print $2; exit }' "$here/go.mod")"
minor="${kube_version#v1.}"; minor="${minor%%.*}"
kv=k8s.io/component-base/version
ldflags="-s -w -X $kv.gitVersion=$kube_version -X $kv.gitMajor=1 -X $kv.gitMinor=$minor -X $kv.gitTreeState=clean"

mkdir -p "$bin.partial"
cd "$here"
start=$SECONDS
echo "building etcd $etcd_version into $bin" >&2
go build -trimpath -ldflags "-s -w" -o "$bin.partial/etcd" go.etcd.io/etcd/server/v3
for p in kube-apiserver kube-controller-manager kube-scheduler kubelet; do
    echo "building $p $kube_version ($((SECONDS - start)) s so far)" >&2
    go build -trimpath -ldflags "$ldflags" -o "$bin.partial/$p" "k8s.io/kubernetes/cmd/$p"
done
rm -rf "$bin"
mv "$bin.partial" "$bin"
# Kits of earlier pins are not used again.
for old in "$kit_root"/*/; do
    [[ "$old" == "$kit_root/$key/" ]] || rm -rf "$old"
done
echo "built the kit in $((SECONDS - start)) s" >&2
echo "$bin"
