#!/usr/bin/env bash
# okd-install: records the payload's pause image for the kubelet
# (installer.md §8, kubelet.service ExecStartPre).
set -euo pipefail

# shellcheck source=/dev/null
. "${BOOTSTRAP_BIN_DIR:-/usr/local/bin}/release-image.sh"

OVERRIDE=/etc/kubernetes/kubelet-pause-image-override
if [[ -s "${OVERRIDE}" ]]; then
    exit 0
fi
PAUSE_IMAGE="$(image_for pod)"
mkdir -p "$(dirname "${OVERRIDE}")"
printf 'MACHINE_CONFIG_INFRA_IMAGE=%s\n' "${PAUSE_IMAGE}" >"${OVERRIDE}.tmp"
mv -f "${OVERRIDE}.tmp" "${OVERRIDE}"
