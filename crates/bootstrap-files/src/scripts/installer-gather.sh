#!/usr/bin/env bash
# okd-install: builds the bootstrap log bundle for `gather bootstrap`
# (installer.md §7). Usage: installer-gather.sh [--id ID] [MASTER_IP...]
# Collects journals, containers, rendered assets and (when the API answers)
# cluster resources from this bootstrap node, runs installer-masters-gather.sh
# on every MASTER_IP over SSH, and writes log-bundle-<ID>.tar.gz to the
# current directory.

GATHER_ID="${GATHER_ID:-bootstrap}"
MASTERS=()
while [[ $# -gt 0 ]]; do
    case "${1}" in
        --id) GATHER_ID="${2:?--id needs a value}"; shift 2 ;;
        *) MASTERS+=("${1}"); shift ;;
    esac
done

ARTIFACTS="/tmp/artifacts-${GATHER_ID}"
export ARTIFACTS
rm -rf "${ARTIFACTS}"
mkdir -p "${ARTIFACTS}"/{bootstrap/journals,bootstrap/containers,bootstrap/network,rendered-assets,control-plane}

echo "Gathering bootstrap service records..."
cp -a /var/log/openshift "${ARTIFACTS}/bootstrap/services" 2>/dev/null || true

echo "Gathering bootstrap journals..."
for unit in release-image release-image-pivot crio-configure bootkube kubelet crio \
    approve-csr progress install-to-disk; do
    journalctl --boot --no-pager --output=short --unit="${unit}" >"${ARTIFACTS}/bootstrap/journals/${unit}.log" 2>&1 || true
done
journalctl --boot --no-pager --output=short >"${ARTIFACTS}/bootstrap/journals/journal.log" 2>&1 || true

echo "Gathering bootstrap networking..."
ip addr >"${ARTIFACTS}/bootstrap/network/ip-addr.txt" 2>&1 || true
ip route >"${ARTIFACTS}/bootstrap/network/ip-route.txt" 2>&1 || true
cp -a /etc/resolv.conf "${ARTIFACTS}/bootstrap/network/" 2>/dev/null || true

echo "Gathering bootstrap containers..."
podman ps --all >"${ARTIFACTS}/bootstrap/containers/podman-ps.txt" 2>&1 || true
crictl ps --all >"${ARTIFACTS}/bootstrap/containers/crictl-ps.txt" 2>&1 || true
for container in $(podman ps --all --quiet 2>/dev/null); do
    podman logs "${container}" >"${ARTIFACTS}/bootstrap/containers/podman-${container}.log" 2>&1 || true
done
for container in $(crictl ps --all --quiet 2>/dev/null); do
    crictl logs "${container}" >"${ARTIFACTS}/bootstrap/containers/crictl-${container}.log" 2>&1 || true
done

echo "Gathering rendered assets..."
cp -a /etc/kubernetes/manifests "${ARTIFACTS}/rendered-assets/static-pods" 2>/dev/null || true
if [[ -d /opt/openshift ]]; then
    # Everything but private keys and kubeconfigs.
    (cd /opt/openshift && find . -type f ! -name '*.key' ! -path './auth/*' -print0 |
        xargs -0 --no-run-if-empty cp --parents -t "${ARTIFACTS}/rendered-assets/") 2>/dev/null || true
fi

if [[ -r /usr/local/bin/bootstrap-cluster-gather.sh ]]; then
    # shellcheck source=/dev/null
    . "${BOOTSTRAP_BIN_DIR:-/usr/local/bin}/bootstrap-cluster-gather.sh"
    cluster_bootstrap_gather
fi

for master in "${MASTERS[@]}"; do
    echo "Gathering logs from master ${master}..."
    dir="${ARTIFACTS}/control-plane/${master}"
    mkdir -p "${dir}"
    ssh_opts=(-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o ConnectTimeout=10 -o BatchMode=yes)
    if scp "${ssh_opts[@]}" /usr/local/bin/installer-masters-gather.sh "core@[${master}]:" >/dev/null 2>&1 &&
        ssh "${ssh_opts[@]}" "core@${master}" "sudo ./installer-masters-gather.sh --id '${GATHER_ID}'" >"${dir}/gather.log" 2>&1 &&
        ssh "${ssh_opts[@]}" "core@${master}" "sudo tar -C /tmp -czf - 'artifacts-${GATHER_ID}'" | tar -xzf - -C "${dir}"; then
        :
    else
        echo "Could not gather logs from master ${master}" >&2
    fi
done

TARBALL="log-bundle-${GATHER_ID}.tar.gz"
tar -C /tmp -czf "${TARBALL}" "artifacts-${GATHER_ID}"
echo "Log bundle written to ${PWD}/${TARBALL}"
