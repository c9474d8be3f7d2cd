#!/usr/bin/env bash
# okd-install: the part of the bootstrap log bundle that comes from one
# control-plane host (installer.md §7). installer-gather.sh on the bootstrap
# node feeds this script to `sudo bash -s` over SSH (the forwarded agent logs
# it in) and copies /tmp/artifacts-<ID> back into control-plane/<host>/.
#
# Usage: installer-masters-gather.sh [--id ID]
# Writes /tmp/artifacts-<ID>: failed-units.txt, unit-status/, journals/,
# network/, containers/ (crictl and podman logs and inspect output),
# static-pods/, rpm-ostree/. Best effort: a missing tool leaves a note.

GATHER_ID="${GATHER_ID:-$(date +%Y%m%d%H%M%S)}"
while [[ $# -gt 0 ]]; do
    case "${1}" in
        --id) GATHER_ID="${2:?--id needs a value}"; shift 2 ;;
        *) echo "installer-masters-gather.sh: unknown argument ${1}" >&2; exit 2 ;;
    esac
done

ARTIFACTS="/tmp/artifacts-${GATHER_ID}"
rm -rf "${ARTIFACTS}"
mkdir -p "${ARTIFACTS}"/{unit-status,journals,network,containers}
chmod 0700 "${ARTIFACTS}"

have() { command -v "$1" >/dev/null 2>&1; }

echo "Gathering failed units of $(hostname) ..."
LANG=POSIX systemctl list-units --state=failed --no-pager >"${ARTIFACTS}/failed-units.txt" 2>&1
LANG=POSIX systemctl list-units --state=failed --no-pager --plain --no-legend 2>/dev/null |
    awk '$1 ~ /\./ { print $1 }' | while read -r unit; do
    systemctl status --full --no-pager "${unit}" >"${ARTIFACTS}/unit-status/${unit}.txt" 2>&1
    journalctl --boot --no-pager --unit="${unit}" >"${ARTIFACTS}/unit-status/${unit}.log" 2>&1
done

echo "Gathering journals ..."
for unit in crio kubelet machine-config-daemon-firstboot machine-config-daemon-host \
    machine-config-daemon-pull NetworkManager ovs-configuration ovs-vswitchd ovsdb-server \
    pivot sshd; do
    journalctl --boot --no-pager --output=short --unit="${unit}" >"${ARTIFACTS}/journals/${unit}.log" 2>&1
done
journalctl --boot --no-pager --output=short 2>&1 | gzip >"${ARTIFACTS}/journals/journal.log.gz"

echo "Gathering networking ..."
ip addr >"${ARTIFACTS}/network/ip-addr.txt" 2>&1
ip route >"${ARTIFACTS}/network/ip-route.txt" 2>&1
ip -6 route >"${ARTIFACTS}/network/ip-6-route.txt" 2>&1
hostname >"${ARTIFACTS}/network/hostname.txt" 2>&1
cp /etc/resolv.conf "${ARTIFACTS}/network/resolv.conf" 2>/dev/null

echo "Gathering containers ..."
if have crictl; then
    crictl ps --all >"${ARTIFACTS}/containers/crictl-ps.txt" 2>&1
    crictl pods >"${ARTIFACTS}/containers/crictl-pods.txt" 2>&1
    crictl ps --all --quiet 2>/dev/null | while read -r id; do
        name="$(crictl inspect --output go-template --template '{{.status.metadata.name}}' "${id}" 2>/dev/null)"
        crictl logs "${id}" >"${ARTIFACTS}/containers/${name:-container}-${id}.log" 2>&1
        crictl inspect "${id}" >"${ARTIFACTS}/containers/${name:-container}-${id}.inspect" 2>&1
    done
else
    echo "crictl is not installed on this host" >"${ARTIFACTS}/containers/README.txt"
fi
if have podman; then
    podman ps --all --format '{{.ID}} {{.Names}}' 2>/dev/null | while read -r id name; do
        podman logs "${id}" >"${ARTIFACTS}/containers/${name:-pod}-${id}.log" 2>&1
        podman inspect "${id}" >"${ARTIFACTS}/containers/${name:-pod}-${id}.inspect" 2>&1
    done
fi

echo "Gathering static pods and OS state ..."
[[ -d /etc/kubernetes/manifests ]] && cp -r /etc/kubernetes/manifests "${ARTIFACTS}/static-pods"
if have rpm-ostree; then
    mkdir -p "${ARTIFACTS}/rpm-ostree"
    rpm-ostree status >"${ARTIFACTS}/rpm-ostree/status.txt" 2>&1
fi

exit 0
