#!/usr/bin/env bash
# okd-install: builds the bootstrap log bundle for `okd-install gather
# bootstrap` (and `openshift-install gather bootstrap`), installer.md §7.
#
# Usage: installer-gather.sh [--id ID] [MASTER...]
#
# Runs as root; started by a user with sudo rights it re-runs itself with
# `sudo -n`, keeping SSH_AUTH_SOCK so the forwarded agent reaches the masters.
# Writes $TAR_FILE (default: the invoking user's home directory,
# log-bundle-<ID>.tar.gz, owned by that user, mode 0600). Inside, under
# log-bundle-<ID>/, the layout of openshift-install's bundle
# (openshift/installer docs/user/troubleshootingbootstrap.md):
#
#   gather.log                 this script's output
#   failed-units.txt           `systemctl list-units --state=failed`
#   unit-status/<unit>.{txt,log}  status and journal of each failed unit
#   bootstrap/services/<unit>.json  service records (JSON arrays)
#   bootstrap/journals/<unit>.log   journals of the bootstrap units,
#                                   journal.log.gz the whole boot
#   bootstrap/network/         addresses, routes, hostname, sockets, resolv.conf
#   bootstrap/containers/      crictl logs and inspect output, bootstrap-control-plane logs
#   bootstrap/pods/            podman logs and inspect output
#   bootstrap/static-pods/     /etc/kubernetes/manifests
#   bootstrap/etcd/            member list, endpoint health and status (or a note)
#   bootstrap/rpm-ostree/      deployments and history
#   rendered-assets/openshift/ /opt/openshift without secrets, kubeconfigs, keys
#   resources/                 API objects (bootstrap-cluster-gather.sh) or a note
#   control-plane/<MASTER>/    installer-masters-gather.sh output per master
#
# Every step is best effort: a missing tool or file leaves a note and the
# bundle is still written. MASTERs default to resources/masters.list.

GATHER_ID="${GATHER_ID:-$(date +%Y%m%d%H%M%S)}"
ARGS=("$@")
if [[ "${1:-}" == "--id" ]]; then
    GATHER_ID="${2:?--id needs a value}"
    shift 2
fi
MASTERS=("$@")

if [[ "${EUID}" -ne 0 ]]; then
    exec sudo -n --preserve-env=SSH_AUTH_SOCK "${BASH_SOURCE[0]}" "${ARGS[@]}"
fi

# The account that asked for the bundle: it owns the tarball, and logs in to
# the masters the same way it logged in here.
OWNER="${SUDO_USER:-${USER:-root}}"
OWNER_HOME="$(getent passwd "${OWNER}" | cut -d: -f6)"
OWNER_HOME="${OWNER_HOME:-${HOME:-/root}}"
TAR_FILE="${TAR_FILE:-${OWNER_HOME}/log-bundle-${GATHER_ID}.tar.gz}"
BIN_DIR="${BOOTSTRAP_BIN_DIR:-/usr/local/bin}"

ARTIFACTS="/tmp/artifacts-${GATHER_ID}"
rm -rf "${ARTIFACTS}"
mkdir -p "${ARTIFACTS}"
chmod 0700 "${ARTIFACTS}"
exec &> >(tee "${ARTIFACTS}/gather.log")

have() { command -v "$1" >/dev/null 2>&1; }

# note FILE TEXT: leaves TEXT in FILE (relative to the bundle) and says it.
note() {
    mkdir -p "$(dirname "${ARTIFACTS}/$1")"
    printf '%s\n' "$2" >"${ARTIFACTS}/$1"
    echo "$2"
}

echo "Gathering bootstrap failed units ..."
mkdir -p "${ARTIFACTS}/unit-status"
LANG=POSIX systemctl list-units --state=failed --no-pager >"${ARTIFACTS}/failed-units.txt" 2>&1
LANG=POSIX systemctl list-units --state=failed --no-pager --plain --no-legend 2>/dev/null |
    awk '$1 ~ /\./ { print $1 }' | while read -r unit; do
    systemctl status --full --no-pager "${unit}" >"${ARTIFACTS}/unit-status/${unit}.txt" 2>&1
    journalctl --boot --no-pager --unit="${unit}" >"${ARTIFACTS}/unit-status/${unit}.log" 2>&1
done

echo "Gathering bootstrap service records ..."
mkdir -p "${ARTIFACTS}/bootstrap/services"
for record in /var/log/openshift/*.json; do
    [[ -f "${record}" ]] || continue
    out="${ARTIFACTS}/bootstrap/services/$(basename "${record}")"
    # bootstrap-service-record.sh appends one JSON object per line; the
    # bundle holds a JSON array per service, as openshift-install's analysis reads.
    if [[ "$(head -c 1 "${record}")" == "[" ]]; then
        cp "${record}" "${out}"
    elif have jq; then
        jq -s . "${record}" >"${out}" 2>/dev/null || cp "${record}" "${out}"
    else
        { echo "["; sed -e '/^[[:space:]]*$/d' -e '$!s/$/,/' "${record}"; echo "]"; } >"${out}"
    fi
done
[[ -n "$(ls -A "${ARTIFACTS}/bootstrap/services")" ]] ||
    note bootstrap/services/README.txt "No service records in /var/log/openshift on this host"

echo "Gathering bootstrap journals ..."
mkdir -p "${ARTIFACTS}/bootstrap/journals"
for unit in approve-csr bootkube crio crio-configure image-customization install-to-disk \
    ironic ironic-dnsmasq ironic-httpd ironic-ramdisk-logs kubelet master-bmh-update \
    metal3-baremetal-operator progress release-image release-image-download \
    release-image-pivot sssd; do
    journalctl --boot --no-pager --output=short --unit="${unit}" \
        >"${ARTIFACTS}/bootstrap/journals/${unit}.log" 2>&1
done
journalctl --boot --no-pager --output=short 2>&1 | gzip >"${ARTIFACTS}/bootstrap/journals/journal.log.gz"

echo "Gathering bootstrap networking ..."
mkdir -p "${ARTIFACTS}/bootstrap/network"
ip addr >"${ARTIFACTS}/bootstrap/network/ip-addr.txt" 2>&1
ip route >"${ARTIFACTS}/bootstrap/network/ip-route.txt" 2>&1
ip -6 route >"${ARTIFACTS}/bootstrap/network/ip-6-route.txt" 2>&1
hostname >"${ARTIFACTS}/bootstrap/network/hostname.txt" 2>&1
if have ss; then
    ss -tulpan >"${ARTIFACTS}/bootstrap/network/sockets.txt" 2>&1
elif have netstat; then
    netstat -anp >"${ARTIFACTS}/bootstrap/network/sockets.txt" 2>&1
fi
cp /etc/resolv.conf "${ARTIFACTS}/bootstrap/network/resolv.conf" 2>/dev/null

echo "Gathering bootstrap containers ..."
mkdir -p "${ARTIFACTS}/bootstrap/containers" "${ARTIFACTS}/bootstrap/pods"
if have crictl; then
    crictl ps --all >"${ARTIFACTS}/bootstrap/containers/crictl-ps.txt" 2>&1
    crictl ps --all --quiet 2>/dev/null | while read -r id; do
        name="$(crictl inspect --output go-template --template '{{.status.metadata.name}}' "${id}" 2>/dev/null)"
        crictl logs "${id}" >"${ARTIFACTS}/bootstrap/containers/${name:-container}-${id}.log" 2>&1
        crictl inspect "${id}" >"${ARTIFACTS}/bootstrap/containers/${name:-container}-${id}.inspect" 2>&1
    done
else
    note bootstrap/containers/README.txt "crictl is not installed on this host"
fi
[[ -d /var/log/bootstrap-control-plane ]] &&
    cp -r /var/log/bootstrap-control-plane "${ARTIFACTS}/bootstrap/containers/"
if have podman; then
    podman ps --all --format '{{.ID}} {{.Names}}' 2>/dev/null | while read -r id name; do
        podman logs "${id}" >"${ARTIFACTS}/bootstrap/pods/${name:-pod}-${id}.log" 2>&1
        podman inspect "${id}" >"${ARTIFACTS}/bootstrap/pods/${name:-pod}-${id}.inspect" 2>&1
    done
else
    note bootstrap/pods/README.txt "podman is not installed on this host"
fi

echo "Gathering bootstrap static pods ..."
if [[ -d /etc/kubernetes/manifests ]]; then
    cp -r /etc/kubernetes/manifests "${ARTIFACTS}/bootstrap/static-pods"
else
    note bootstrap/static-pods/README.txt "No /etc/kubernetes/manifests on this host"
fi

echo "Gathering etcd members and health ..."
ETCD_TLS="${ETCD_TLS_DIR:-/opt/openshift/tls}"
if ! have etcdctl; then
    note bootstrap/etcd/README.txt "etcdctl is not installed on this host; etcd members and health not gathered"
elif [[ ! -r "${ETCD_TLS}/etcd-client.crt" || ! -r "${ETCD_TLS}/etcd-client.key" || ! -r "${ETCD_TLS}/etcd-ca-bundle.crt" ]]; then
    note bootstrap/etcd/README.txt "No etcd client certificate in ${ETCD_TLS} (etcd-ca-bundle.crt, etcd-client.crt, etcd-client.key: written by bootkube's etcd-bootstrap stage); etcd members and health not gathered"
else
    mkdir -p "${ARTIFACTS}/bootstrap/etcd"
    etcd=(etcdctl --endpoints=https://localhost:2379 --cacert="${ETCD_TLS}/etcd-ca-bundle.crt"
        --cert="${ETCD_TLS}/etcd-client.crt" --key="${ETCD_TLS}/etcd-client.key"
        --dial-timeout=5s --command-timeout=10s)
    ETCDCTL_API=3 "${etcd[@]}" member list --write-out=table >"${ARTIFACTS}/bootstrap/etcd/member-list.txt" 2>&1
    ETCDCTL_API=3 "${etcd[@]}" endpoint health --cluster >"${ARTIFACTS}/bootstrap/etcd/endpoint-health.txt" 2>&1
    ETCDCTL_API=3 "${etcd[@]}" endpoint status --cluster --write-out=table >"${ARTIFACTS}/bootstrap/etcd/endpoint-status.txt" 2>&1
fi

echo "Gathering rpm-ostree state ..."
if have rpm-ostree; then
    mkdir -p "${ARTIFACTS}/bootstrap/rpm-ostree"
    rpm-ostree status >"${ARTIFACTS}/bootstrap/rpm-ostree/status.txt" 2>&1
    rpm-ostree ex history >"${ARTIFACTS}/bootstrap/rpm-ostree/history.txt" 2>&1
fi

echo "Gathering rendered assets ..."
mkdir -p "${ARTIFACTS}/rendered-assets"
ASSETS="${ASSETS_DIR:-/opt/openshift}"
if [[ -d "${ASSETS}" ]]; then
    cp -r "${ASSETS}" "${ARTIFACTS}/rendered-assets/openshift"
else
    note rendered-assets/README.txt "No ${ASSETS} on this host"
fi
# Nothing secret leaves the host: pull secrets and other Secret manifests,
# kubeconfigs, private keys, a kubectl cache.
for tree in "${ARTIFACTS}/rendered-assets" "${ARTIFACTS}/bootstrap/static-pods"; do
    [[ -d "${tree}" ]] || continue
    find "${tree}" -depth \( -iname '*secret*' -o -iname '*kubeconfig*' -o -name '*.key' \
        -o -name '.kube' \) -exec rm -rf {} +
done

echo "Gathering cluster resources ..."
if [[ -r "${BIN_DIR}/bootstrap-cluster-gather.sh" ]]; then
    # shellcheck source=/dev/null
    . "${BIN_DIR}/bootstrap-cluster-gather.sh"
    cluster_bootstrap_gather "${ARTIFACTS}"
else
    note resources/README.txt "${BIN_DIR}/bootstrap-cluster-gather.sh is missing; cluster resources not gathered"
fi

# A single node after its pivot (bootstrap-in-place): the bundle its
# bootstrap phase left comes along, and this host is the control plane.
PRE_PIVOT=/var/log/log-bundle-bootstrap.tar.gz
if [[ -f "${PRE_PIVOT}" ]]; then
    echo "Including the bootstrap phase's bundle ${PRE_PIVOT} ..."
    tar -xzf "${PRE_PIVOT}" -C "${ARTIFACTS}"
    mkdir -p "${ARTIFACTS}/control-plane/master"
    bash "${BIN_DIR}/installer-masters-gather.sh" --id "master-${GATHER_ID}" </dev/null
    cp -r "/tmp/artifacts-master-${GATHER_ID}/." "${ARTIFACTS}/control-plane/master/"
    rm -rf "/tmp/artifacts-master-${GATHER_ID}"
    MASTERS=()
elif [[ ${#MASTERS[@]} -eq 0 && -s "${ARTIFACTS}/resources/masters.list" ]]; then
    mapfile -t MASTERS <"${ARTIFACTS}/resources/masters.list"
fi
[[ ${#MASTERS[@]} -gt 0 ]] || echo "No masters given and none known to the API: no control-plane logs"

SSH_OPTS=(-o BatchMode=yes -o ConnectTimeout=10 -o StrictHostKeyChecking=no
    -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -o PreferredAuthentications=publickey
    -o ServerAliveInterval=15 -o ServerAliveCountMax=4)
mkdir -p "${ARTIFACTS}/control-plane"
for master in "${MASTERS[@]}"; do
    [[ -n "${master}" ]] || continue
    echo "Gathering logs from control-plane host ${master} as ${OWNER} ..."
    dir="${ARTIFACTS}/control-plane/${master}"
    mkdir -p "${dir}"
    if ! ssh "${SSH_OPTS[@]}" "${OWNER}@${master}" "sudo -n bash -s -- --id '${GATHER_ID}'" \
        <"${BIN_DIR}/installer-masters-gather.sh" >"${dir}/gather-remote.log" 2>&1; then
        note "control-plane/${master}/gather-failed.txt" "Could not run installer-masters-gather.sh on ${master} as ${OWNER} (agent: ${SSH_AUTH_SOCK:+forwarded}${SSH_AUTH_SOCK:-none}); see gather-remote.log"
        continue
    fi
    if ! ssh "${SSH_OPTS[@]}" "${OWNER}@${master}" "sudo -n tar -C '/tmp/artifacts-${GATHER_ID}' -czf - . && sudo -n rm -rf '/tmp/artifacts-${GATHER_ID}'" \
        </dev/null 2>>"${dir}/gather-remote.log" | tar -xzf - -C "${dir}"; then
        note "control-plane/${master}/gather-failed.txt" "Could not copy the logs of ${master}; see gather-remote.log"
    fi
done

echo "Writing ${TAR_FILE} ..."
umask 077
tar -czf "${TAR_FILE}.part" -C "${ARTIFACTS}" --transform "s,^\\.,log-bundle-${GATHER_ID}," . &&
    chown "${OWNER}:" "${TAR_FILE}.part" 2>/dev/null
chmod 0600 "${TAR_FILE}.part"
mv -f "${TAR_FILE}.part" "${TAR_FILE}"
rm -rf "${ARTIFACTS}"
echo "Log bundle written to ${TAR_FILE}"
