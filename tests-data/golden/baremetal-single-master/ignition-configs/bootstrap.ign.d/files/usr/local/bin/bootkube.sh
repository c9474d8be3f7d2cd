#!/usr/bin/env bash
# okd-install: bootkube.sh of the bootstrap node (installer.md §8).
#
# openshift-install's bootkube.sh renders the bootstrap control plane
# (etcd, kube-apiserver, controller manager, scheduler, machine-config server)
# from the release payload and runs cluster-bootstrap. okd-install does not
# implement that part yet, so this script fails loudly instead of pretending
# to make progress.

RELEASE_IMAGE='quay.io/okd/scos-release:4.19.0-okd-scos.1'
BOOTSTRAP_INPLACE='false'
CLUSTER_PROFILE=''
ETCD_ENDPOINTS='https://etcd-0.okd.example:2379'

SERVICE_NAME=bootkube
# shellcheck source=/dev/null
. "${BOOTSTRAP_BIN_DIR:-/usr/local/bin}/bootstrap-service-record.sh" 2>/dev/null || true

MESSAGE="okd-install: bootkube is not implemented yet (the bootstrap control plane comes in a later okd-install release); this bootstrap node cannot progress"

{
    echo "${MESSAGE}"
    echo "okd-install: release image: ${RELEASE_IMAGE}; bootstrap-in-place: ${BOOTSTRAP_INPLACE}; cluster profile: ${CLUSTER_PROFILE:-<default>}; etcd endpoints: ${ETCD_ENDPOINTS:-<none>}"
} >&2

if [[ -d /etc/issue.d && -w /etc/issue.d ]]; then
    printf '%s\n' "${MESSAGE}" >/etc/issue.d/60_okd-install-bootkube.issue 2>/dev/null || true
fi

exit 1
