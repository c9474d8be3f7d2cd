#!/usr/bin/env bash
# okd-install: bootstrap-in-place, writes the single node's master.ign to the
# installation disk and reboots (installer.md §9, install-to-disk.service).
set -euo pipefail

# @@VARIABLES@@

SERVICE_NAME=install-to-disk
# shellcheck source=/dev/null
. "${BOOTSTRAP_BIN_DIR:-/usr/local/bin}/bootstrap-service-record.sh"

record_service_stage_start "wait-for-bootkube"
echo "Waiting for /opt/openshift/.bootkube.done"
until [[ -e /opt/openshift/.bootkube.done ]]; do
    sleep 5
done
record_service_stage_success

if [[ ! -e /opt/openshift/.coreos-installer.done ]]; then
    record_service_stage_start "coreos-installer"
    echo "Writing /opt/openshift/master.ign to ${INSTALLATION_DISK}"
    coreos-installer install -n -i /opt/openshift/master.ign "${INSTALLATION_DISK}"
    touch /opt/openshift/.coreos-installer.done
    record_service_stage_success
fi

record_service_stage_start "reboot"
echo "Going to reboot"
shutdown -r +1 "Bootstrap completed, server is going to reboot."
touch /opt/openshift/.install-to-disk.done
echo "Done"
record_service_stage_success
