#!/usr/bin/env bash
# okd-install: bootkube.service of the bootstrap node (installer.md §8).
#
# bootkube's stages (the renders, etcd and the temporary control plane as
# static pods, the bootstrap machine-config server, wait-for-etcd,
# cluster-bootstrap, the api/api-int checks) are okd-install's own program,
# `okd-install bootstrap bootkube`, which bootstrap.ign carries as
# /usr/local/bin/okd-install. Its progress: /var/log/openshift/bootkube.json,
# `journalctl -u bootkube`, and the console (/etc/issue.d).

BOOTSTRAP_INPLACE='false'
BOOTSTRAP_NODE_IP=''

NODE_PROGRAM="${OKD_INSTALL_NODE_PROGRAM:-/usr/local/bin/okd-install}"
if [[ ! -x "${NODE_PROGRAM}" ]]; then
    MESSAGE="okd-install: this bootstrap.ign carries no okd-install program (${NODE_PROGRAM}); it was made by a debug build of okd-install without OKD_INSTALL_NODE_BINARY: make it again with a release build"
    echo "${MESSAGE}" >&2
    if [[ -d /etc/issue.d && -w /etc/issue.d ]]; then
        printf '%s\n' "${MESSAGE}" >/etc/issue.d/60_okd-install-bootkube.issue 2>/dev/null || true
    fi
    exit 1
fi

args=(bootstrap bootkube)
if [[ "${BOOTSTRAP_INPLACE}" == "true" ]]; then
    args+=(--single-node)
fi
if [[ -n "${BOOTSTRAP_NODE_IP}" ]]; then
    args+=(--node-ip "${BOOTSTRAP_NODE_IP}")
fi
exec "${NODE_PROGRAM}" "${args[@]}"
