#!/usr/bin/env bash
# okd-install: collects logs on a control-plane host for `gather bootstrap`
# (installer.md §7). Usage: installer-masters-gather.sh [--id ID]
# Writes /tmp/artifacts-<ID> and prints nothing else on success.

GATHER_ID="${GATHER_ID:-$(date +%Y%m%d%H%M%S)}"
while [[ $# -gt 0 ]]; do
    case "${1}" in
        --id) GATHER_ID="${2:?--id needs a value}"; shift 2 ;;
        *) echo "unknown argument ${1}" >&2; exit 2 ;;
    esac
done

ARTIFACTS="/tmp/artifacts-${GATHER_ID}"
mkdir -p "${ARTIFACTS}"/{journals,containers,network,kubernetes,rpm-ostree}

echo "Gathering master journals..."
for unit in kubelet crio machine-config-daemon-firstboot machine-config-daemon-pull \
    NetworkManager ignition ovs-vswitchd ovsdb-server sshd; do
    journalctl --boot --no-pager --output=short --unit="${unit}" >"${ARTIFACTS}/journals/${unit}.log" 2>&1 || true
done
journalctl --boot --no-pager --output=short >"${ARTIFACTS}/journals/journal.log" 2>&1 || true

echo "Gathering master networking..."
ip addr >"${ARTIFACTS}/network/ip-addr.txt" 2>&1 || true
ip route >"${ARTIFACTS}/network/ip-route.txt" 2>&1 || true
cp -a /etc/resolv.conf "${ARTIFACTS}/network/" 2>/dev/null || true

echo "Gathering master containers..."
crictl ps --all >"${ARTIFACTS}/containers/crictl-ps.txt" 2>&1 || true
crictl pods >"${ARTIFACTS}/containers/crictl-pods.txt" 2>&1 || true
for container in $(crictl ps --all --quiet 2>/dev/null); do
    name="$(crictl inspect --output go-template --template '{{.status.metadata.name}}' "${container}" 2>/dev/null || echo unknown)"
    crictl logs "${container}" >"${ARTIFACTS}/containers/${name}-${container}.log" 2>&1 || true
done

echo "Gathering master files..."
cp -a /etc/kubernetes/manifests "${ARTIFACTS}/kubernetes/" 2>/dev/null || true
rpm-ostree status >"${ARTIFACTS}/rpm-ostree/status.txt" 2>&1 || true

exit 0
