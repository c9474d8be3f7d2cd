#!/usr/bin/env bash
# okd-install: progress.service of the bootstrap node (installer.md §8).
#
# Waits for /opt/openshift/.bootkube.done and, on a highly available control
# plane, for at least 2 masters with a rolled-out kube-apiserver, then
# creates ConfigMap kube-system/bootstrap (status: complete), which
# `wait-for bootstrap-complete` watches: okd-install's own program,
# `okd-install bootstrap report-progress`. Its stages are in
# /var/log/openshift/progress.json.
# Usage: report-progress.sh KUBECONFIG (the api-int admin kubeconfig)

KUBECONFIG="${1:?usage: report-progress.sh KUBECONFIG}"
NODE_PROGRAM="${OKD_INSTALL_NODE_PROGRAM:-/usr/local/bin/okd-install}"
if [[ ! -x "${NODE_PROGRAM}" ]]; then
    echo "okd-install: this bootstrap.ign carries no okd-install program (${NODE_PROGRAM}); the bootstrap cannot report its completion" >&2
    exit 1
fi
exec "${NODE_PROGRAM}" bootstrap report-progress --kubeconfig "${KUBECONFIG}"
