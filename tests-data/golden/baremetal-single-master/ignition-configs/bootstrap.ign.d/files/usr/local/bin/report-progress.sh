#!/usr/bin/env bash
# okd-install: reports bootstrap completion to the installer
# (installer.md §8, progress.service).
#
# Usage: report-progress.sh KUBECONFIG   (the api-int admin kubeconfig)
# Waits for /opt/openshift/.bootkube.done, waits for a highly available API
# when the topology asks for it, then creates ConfigMap kube-system/bootstrap
# with status=complete, which `wait-for bootstrap-complete` watches.

KUBECONFIG="${1:?usage: report-progress.sh KUBECONFIG}"
export KUBECONFIG
SERVICE_NAME=progress
# shellcheck source=/dev/null
. "${BOOTSTRAP_BIN_DIR:-/usr/local/bin}/bootstrap-service-record.sh"

wait_for_ha_api() {
    local topology nodes
    topology="$(oc get infrastructures.config.openshift.io cluster -o jsonpath='{.status.controlPlaneTopology}' 2>/dev/null)"
    if [[ "${topology}" != "HighlyAvailable" ]]; then
        return 0
    fi
    echo "Waiting for at least 2 nodes with a rolled out kube-apiserver revision"
    while true; do
        nodes="$(oc get kubeapiservers.operator.openshift.io cluster \
            -o jsonpath='{range .status.nodeStatuses[?(@.currentRevision>0)]}{.nodeName}{"\n"}{end}' 2>/dev/null | grep -c .)"
        if [[ "${nodes:-0}" -ge 2 ]]; then
            echo "Got at least 2 nodes with successful revision rolled out"
            return 0
        fi
        sleep 5
    done
}

record_service_stage_start "wait-for-bootstrap-complete"
echo "Waiting for bootstrap to complete..."
until [[ -f "${BOOTKUBE_DONE_FILE:-/opt/openshift/.bootkube.done}" ]]; do
    sleep "${PROGRESS_INTERVAL:-5}"
done
wait_for_ha_api
record_service_stage_success

record_service_stage_start "report-bootstrap-complete"
echo "Reporting install progress..."
until oc create configmap bootstrap --namespace=kube-system --from-literal=status=complete 2>/dev/null ||
    oc get configmap bootstrap --namespace=kube-system >/dev/null 2>&1; do
    sleep "${PROGRESS_INTERVAL:-5}"
done
echo "Bootstrap complete reported"
record_service_stage_success
