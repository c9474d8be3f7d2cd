#!/usr/bin/env bash
# okd-install (OKD): pivots the bootstrap host to the machine OS image of the
# release payload, then reboots (release-image-pivot.service).
set -euo pipefail

SERVICE_NAME=release-image-pivot
# shellcheck source=/dev/null
. "${BOOTSTRAP_BIN_DIR:-/usr/local/bin}/bootstrap-service-record.sh"
# shellcheck source=/dev/null
. "${BOOTSTRAP_BIN_DIR:-/usr/local/bin}/release-image.sh"

DONE_FILE=/opt/openshift/.pivot-done
if [[ -e "${DONE_FILE}" ]]; then
    exit 0
fi

record_service_stage_start "pivot"
MACHINE_OS_IMAGE="$(image_for fedora-coreos 2>/dev/null || image_for centos-stream-coreos-9 2>/dev/null || image_for rhel-coreos 2>/dev/null || true)"
if [[ -z "${MACHINE_OS_IMAGE}" ]]; then
    echo "The release image has no machine OS image; not pivoting" >&2
    touch "${DONE_FILE}"
    record_service_stage_success
    exit 0
fi
echo "Pivoting to ${MACHINE_OS_IMAGE}"
rpm-ostree rebase --experimental "ostree-unverified-registry:${MACHINE_OS_IMAGE}"
touch "${DONE_FILE}"
record_service_stage_success
systemctl reboot
