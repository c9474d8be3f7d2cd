#!/usr/bin/env bash
# okd-install: the release image of this cluster (installer.md §8).
#
# Run it to print the release image pull spec. Source it to get
# RELEASE_IMAGE and the image_for function:
#   image_for NAME   prints the pull spec of the payload component NAME
#                    (e.g. pod, machine-config-operator), read from the
#                    release image's image references.

RELEASE_IMAGE='quay.io/okd/scos-release:4.19.0-okd-scos.1'
export RELEASE_IMAGE

image_for() {
    podman run --quiet --rm --net=none "${RELEASE_IMAGE_DIGEST:-${RELEASE_IMAGE}}" image "${1}"
}

if [[ "${BASH_SOURCE[0]}" == "${0}" ]]; then
    echo "${RELEASE_IMAGE}"
fi
