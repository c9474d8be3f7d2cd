#!/usr/bin/env bash
# okd-install: collects cluster resources from the bootstrap control plane.
# Source it and call cluster_bootstrap_gather, or run it directly
# (ARTIFACTS defaults to /tmp/artifacts-cluster).

cluster_bootstrap_gather() {
    local artifacts="${ARTIFACTS:-/tmp/artifacts-cluster}"
    local kubeconfig="${GATHER_KUBECONFIG:-/opt/openshift/auth/kubeconfig-loopback}"
    local dir="${artifacts}/resources"
    local kind
    mkdir -p "${dir}"
    if [[ ! -r "${kubeconfig}" ]]; then
        echo "No kubeconfig at ${kubeconfig}; skipping cluster resources" >&2
        return 0
    fi
    if ! oc --kubeconfig="${kubeconfig}" --request-timeout=5s get --raw /readyz >/dev/null 2>&1; then
        echo "The bootstrap API server is not answering; skipping cluster resources" >&2
        return 0
    fi
    echo "Gathering cluster resources..."
    for kind in nodes namespaces clusterversion clusteroperators csr pods events \
        configmaps services endpoints machineconfigs machineconfigpools \
        infrastructures.config.openshift.io networks.config.openshift.io \
        kubeapiservers.operator.openshift.io etcds.operator.openshift.io; do
        oc --kubeconfig="${kubeconfig}" --request-timeout=10s get "${kind}" --all-namespaces -o json \
            >"${dir}/${kind}.json" 2>"${dir}/${kind}.err" || true
        [[ -s "${dir}/${kind}.err" ]] || rm -f "${dir}/${kind}.err"
    done
    oc --kubeconfig="${kubeconfig}" --request-timeout=10s version >"${dir}/version.txt" 2>&1 || true
}

if [[ "${BASH_SOURCE[0]}" == "${0}" ]]; then
    cluster_bootstrap_gather
fi
