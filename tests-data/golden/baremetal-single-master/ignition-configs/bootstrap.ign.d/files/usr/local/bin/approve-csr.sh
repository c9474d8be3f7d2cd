#!/usr/bin/env bash
# okd-install: approves every pending CSR while the cluster bootstraps
# (installer.md §8, approve-csr.service).
#
# Usage: approve-csr.sh KUBECONFIG
# Stops once /opt/openshift/.bootkube.done exists. After that nobody approves
# node CSRs automatically: use `oc adm certificate approve` for new workers.

KUBECONFIG="${1:?usage: approve-csr.sh KUBECONFIG}"
export KUBECONFIG
DONE_FILE="${APPROVE_CSR_DONE_FILE:-/opt/openshift/.bootkube.done}"
INTERVAL="${APPROVE_CSR_INTERVAL:-20}"

echo "Approving all pending CSRs until ${DONE_FILE} exists"
while [[ ! -e "${DONE_FILE}" ]]; do
    pending="$(oc get csr --no-headers 2>/dev/null | awk '/Pending/ {print $1}')"
    if [[ -n "${pending}" ]]; then
        # shellcheck disable=SC2086
        oc adm certificate approve ${pending} || echo "approving ${pending//$'\n'/ } failed; retrying" >&2
    fi
    sleep "${INTERVAL}"
done
echo "Bootstrap is done; no longer approving CSRs"
