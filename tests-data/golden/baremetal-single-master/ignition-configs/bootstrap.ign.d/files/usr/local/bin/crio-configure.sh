#!/usr/bin/env bash
# okd-install: points CRI-O at the release payload's pause image
# (installer.md §8, crio-configure.service).
set -euo pipefail

SERVICE_NAME=crio-configure
# shellcheck source=/dev/null
. "${BOOTSTRAP_BIN_DIR:-/usr/local/bin}/bootstrap-service-record.sh"
# shellcheck source=/dev/null
. "${BOOTSTRAP_BIN_DIR:-/usr/local/bin}/release-image.sh"

CONF_DIR=/etc/crio/crio.conf.d
CONF_FILE="${CONF_DIR}/50-bootstrap-override.conf"

record_service_stage_start "crio-configure"
PAUSE_IMAGE="$(image_for pod)"
mkdir -p "${CONF_DIR}"
cat >"${CONF_FILE}.tmp" <<CONF
# Written by okd-install's crio-configure.sh for the bootstrap node.
[crio.image]
pause_image = "${PAUSE_IMAGE}"
pause_command = "/usr/bin/pod"
CONF
mv -f "${CONF_FILE}.tmp" "${CONF_FILE}"
echo "CRI-O pause image set to ${PAUSE_IMAGE}"
record_service_stage_success
