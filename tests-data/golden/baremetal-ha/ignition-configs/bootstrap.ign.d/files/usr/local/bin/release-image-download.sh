#!/usr/bin/env bash
# okd-install: pulls the release image on the bootstrap node (installer.md §8,
# release-image.service).
set -euo pipefail

SERVICE_NAME=release-image
# shellcheck source=/dev/null
. "${BOOTSTRAP_BIN_DIR:-/usr/local/bin}/bootstrap-service-record.sh"
# shellcheck source=/dev/null
. "${BOOTSTRAP_BIN_DIR:-/usr/local/bin}/release-image.sh"

ISSUE_FILE=/etc/issue.d/50_release-image.issue

record_service_stage_start "pull-release-image"
echo "Pulling ${RELEASE_IMAGE}..."
until podman pull --quiet "${RELEASE_IMAGE}"; do
    echo "Pull failed. Retrying ${RELEASE_IMAGE}..." >&2
    if [[ ! -e "${ISSUE_FILE}" ]]; then
        mkdir -p /etc/issue.d
        printf '\\e{lightred}Unable to pull OpenShift release image %s\\e{reset}\n' "${RELEASE_IMAGE}" >"${ISSUE_FILE}"
        agetty --reload 2>/dev/null || true
    fi
    sleep 5
done
if [[ -e "${ISSUE_FILE}" ]]; then
    rm -f "${ISSUE_FILE}"
    agetty --reload 2>/dev/null || true
fi
record_service_stage_success

record_service_stage_start "image-metadata-arches-match"
HOST_ARCH="$(uname -m)"
case "${HOST_ARCH}" in
    x86_64) HOST_ARCH=amd64 ;;
    aarch64) HOST_ARCH=arm64 ;;
esac
IMAGE_ARCH="$(podman inspect --format '{{.Architecture}}' "${RELEASE_IMAGE}")"
if [[ "${IMAGE_ARCH}" != "${HOST_ARCH}" ]]; then
    echo "The release image architecture (${IMAGE_ARCH}) does not match the host architecture (${HOST_ARCH})" >&2
    record_service_stage_failure
    exit 1
fi
record_service_stage_success
