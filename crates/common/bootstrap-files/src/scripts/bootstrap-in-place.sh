#!/usr/bin/env bash
# okd-install: bootstrap-in-place steps sourced by bootkube.sh on a single
# node (installer.md §9): stop the bootstrap etcd, fetch the master Ignition
# config from the bootstrap machine-config server and build master.ign.
# Expects bootkube.sh's service record functions, PWD=/opt/openshift and
# CLUSTER_BOOTSTRAP_IMAGE.

stop_bootstrap_etcd() {
    record_service_stage_start "stop-etcd"
    echo "Stopping the bootstrap etcd"
    mkdir -p /etc/kubernetes/manifests-stopped
    mv /etc/kubernetes/manifests/etcd-member-pod.yaml /etc/kubernetes/manifests-stopped/ 2>/dev/null || true
    until ! crictl ps --quiet --name '^etcd$' 2>/dev/null | grep -q .; do
        echo "Waiting for etcd to stop"
        sleep 10
    done
    record_service_stage_success
}

fetch_master_ignition() {
    record_service_stage_start "master-ignition"
    echo "Fetching the master Ignition config"
    until curl --fail --silent --show-error -H 'Accept: application/vnd.coreos.ignition+json;version=3.2.0' \
        -o /opt/openshift/original-master.ign http://localhost:22624/config/master; do
        echo "Waiting for the machine-config server"
        sleep 5
    done
    echo "Gathering a bootstrap log bundle"
    TAR_FILE="${PWD}/log-bundle-bootstrap.tar.gz" /usr/local/bin/installer-gather.sh --id bootstrap || true
    echo "Building master.ign"
    podman run --quiet --rm --privileged --net=host \
        --volume "${PWD}:/assets:z" --volume /etc/kubernetes:/etc/kubernetes:z --volume /var/lib/etcd:/var/lib/etcd:z \
        "${CLUSTER_BOOTSTRAP_IMAGE:?CLUSTER_BOOTSTRAP_IMAGE is not set}" \
        bootstrap-in-place --asset-dir /assets --input /assets/bootstrap-in-place/master-update.fcc --output /assets/master.ign
    record_service_stage_success
}

stop_bootstrap_etcd
fetch_master_ignition
