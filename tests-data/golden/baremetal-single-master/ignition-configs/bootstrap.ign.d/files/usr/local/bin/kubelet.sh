#!/usr/bin/env bash
# okd-install: runs a standalone kubelet (no API server) on the bootstrap node
# for the static pods of the bootstrap control plane (installer.md §8).
set -euo pipefail

BOOTSTRAP_NODE_IP=''
USE_IPV6_FOR_NODE_IP='false'
USE_DUAL_FOR_NODE_IP='false'

if [[ -r /etc/kubernetes/kubelet-pause-image-override ]]; then
    # shellcheck source=/dev/null
    . /etc/kubernetes/kubelet-pause-image-override
fi

args=(
    --anonymous-auth=false
    --container-runtime-endpoint=/var/run/crio/crio.sock
    --runtime-request-timeout="${KUBELET_RUNTIME_REQUEST_TIMEOUT:-10m}"
    --pod-manifest-path=/etc/kubernetes/manifests
    --minimum-container-ttl-duration=6m0s
    --cluster-domain=cluster.local
    --cgroup-driver=systemd
    --serialize-image-pulls=false
    --v=2
    --volume-plugin-dir=/etc/kubernetes/kubelet-plugins/volume/exec
)
if [[ -n "${MACHINE_CONFIG_INFRA_IMAGE:-}" ]]; then
    args+=(--pod-infra-container-image="${MACHINE_CONFIG_INFRA_IMAGE}")
fi
if [[ -n "${BOOTSTRAP_NODE_IP}" ]]; then
    args+=(--node-ip="${BOOTSTRAP_NODE_IP}" --address="${BOOTSTRAP_NODE_IP}")
elif [[ "${USE_IPV6_FOR_NODE_IP}" == "true" && "${USE_DUAL_FOR_NODE_IP}" != "true" ]]; then
    args+=(--node-ip=::)
fi

exec /usr/bin/kubelet "${args[@]}"
