#!/usr/bin/env bash
# okd-install: release-image.service of the bootstrap node (installer.md §8).
#
# `okd-install bootstrap release-image` pulls the release by digest through
# the mirrors of /etc/containers/registries.conf (with the pull secret of
# /root/.docker/config.json and the trust bundle of
# /etc/pki/ca-trust/source/anchors/ca.crt), checks its architecture
# (stages pull-release-image and image-metadata-arches-match, recorded in
# /var/log/openshift/release-image.json) and retries until it works, with
# the reason on the console (/etc/issue.d/50_release-image.issue).
set -euo pipefail

# shellcheck source=/dev/null
. "${BOOTSTRAP_BIN_DIR:-/usr/local/bin}/release-image.sh"

NODE_PROGRAM="${OKD_INSTALL_NODE_PROGRAM:-/usr/local/bin/okd-install}"
if [[ ! -x "${NODE_PROGRAM}" ]]; then
    echo "okd-install: this bootstrap.ign carries no okd-install program (${NODE_PROGRAM}); make it again with a release build of okd-install" >&2
    exit 1
fi
exec "${NODE_PROGRAM}" bootstrap release-image --release-image "${RELEASE_IMAGE}"
