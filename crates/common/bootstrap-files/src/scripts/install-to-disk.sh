#!/usr/bin/env bash
# okd-install: bootstrap-in-place, writes the single node's master.ign to the
# installation disk and reboots (installer.md §9, install-to-disk.service).
set -euo pipefail

# @@VARIABLES@@

# Hooks, for installs off a live ISO and for tests (set them in a drop-in,
# /etc/systemd/system/install-to-disk.service.d/*.conf, Environment=...):
#   OKD_INSTALL_COREOS_INSTALLER       the coreos-installer program (default: on PATH)
#   OKD_INSTALL_COREOS_INSTALLER_ARGS  more arguments, split on spaces
#                                      (e.g. --image-file F --insecure)
#   OKD_INSTALL_REBOOT                 the reboot command (default:
#                                      shutdown -r +1 "Bootstrap completed, ...")
COREOS_INSTALLER="${OKD_INSTALL_COREOS_INSTALLER:-coreos-installer}"
read -r -a EXTRA_ARGS <<<"${OKD_INSTALL_COREOS_INSTALLER_ARGS:-}"

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
    "${COREOS_INSTALLER}" install -n -i /opt/openshift/master.ign "${EXTRA_ARGS[@]}" "${INSTALLATION_DISK}"
    touch /opt/openshift/.coreos-installer.done
    record_service_stage_success
fi

record_service_stage_start "reboot"
echo "Going to reboot"
if [[ -n "${OKD_INSTALL_REBOOT:-}" ]]; then
    ${OKD_INSTALL_REBOOT}
else
    shutdown -r +1 "Bootstrap completed, server is going to reboot."
fi
touch /opt/openshift/.install-to-disk.done
echo "Done"
record_service_stage_success
