#!/usr/bin/env bash
# okd-install: approve-csr.service of the bootstrap node (installer.md §8).
#
# Approves the CSRs of the nodes bootstrap.ign names
# (/opt/openshift/okd-node-identities.json, from agent-config.yaml /
# bastion-config.yaml), after okd-install's identity checks, until
# /opt/openshift/.bootkube.done exists; never every pending CSR.
# Usage: approve-csr.sh KUBECONFIG (the unit passes kubeconfig-loopback).

KUBECONFIG="${1:?usage: approve-csr.sh KUBECONFIG}"
NODE_PROGRAM="${OKD_INSTALL_NODE_PROGRAM:-/usr/local/bin/okd-install}"
if [[ ! -x "${NODE_PROGRAM}" ]]; then
    echo "okd-install: this bootstrap.ign carries no okd-install program (${NODE_PROGRAM}); no CSR is approved here: use \`okd-install approve-csr --watch\` from the workstation" >&2
    exit 1
fi
exec "${NODE_PROGRAM}" bootstrap approve-csr --kubeconfig "${KUBECONFIG}"
