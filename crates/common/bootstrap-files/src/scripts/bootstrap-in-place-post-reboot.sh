#!/usr/bin/env bash
# okd-install: runs once on the single node after bootstrap-in-place rebooted
# it from disk (installer.md §9, step 4).
set -uo pipefail

export KUBECONFIG=/etc/kubernetes/bootstrap-secrets/kubeconfig

wait_for_api() {
    until oc get csr >/dev/null 2>&1; do
        echo "Waiting for the API server"
        sleep 5
    done
}

signal_bootstrap_complete() {
    until oc get configmap bootstrap --namespace kube-system >/dev/null 2>&1 ||
        oc create configmap bootstrap --namespace kube-system --from-literal status=complete; do
        sleep 5
    done
}

release_cvo_lease() {
    oc delete lease version --namespace openshift-cluster-version --ignore-not-found
    oc delete configmap version --namespace openshift-cluster-version --ignore-not-found
}

release_cpc_lease() {
    oc delete lease cluster-policy-controller-lock --namespace kube-system --ignore-not-found
    oc delete configmap cluster-policy-controller-lock --namespace kube-system --ignore-not-found
}

restore_cvo_overrides() {
    until oc patch clusterversion.config.openshift.io version --type=merge \
        --patch-file=/opt/openshift/original_cvo_overrides.patch; do
        echo "Trying again to restore CVO overrides"
        sleep 10
    done
}

approve_csrs_until_node_ready() {
    local pending
    until oc wait --for=condition=Ready node --all --timeout=10s >/dev/null 2>&1; do
        pending="$(oc get csr --no-headers 2>/dev/null | awk '/Pending/ {print $1}')"
        if [[ -n "${pending}" ]]; then
            # shellcheck disable=SC2086
            oc adm certificate approve ${pending} || true
        fi
        sleep 10
    done
}

wait_for_kube_apiserver() {
    until oc wait --for=condition=Ready pod -l apiserver=true --namespace openshift-kube-apiserver --timeout=30s >/dev/null 2>&1; do
        echo "Waiting for the kube-apiserver"
        sleep 10
    done
    systemctl daemon-reload
    systemctl restart kubelet
    while grep -q bootstrap /etc/kubernetes/manifests/kube-apiserver-pod.yaml 2>/dev/null; do
        echo "Waiting for the bootstrap kube-apiserver to be replaced"
        sleep 10
    done
    systemctl restart kubelet
}

wait_for_cluster_version() {
    until oc wait --for=condition=Available=True clusterversion version --timeout=60s >/dev/null 2>&1; do
        echo "Waiting for the cluster version to be available"
        sleep 10
    done
}

clean() {
    rm -rf /etc/kubernetes/bootstrap-configs /etc/kubernetes/bootstrap-secrets /etc/kubernetes/bootstrap-manifests
    rm -f /usr/local/bin/installer-gather.sh /usr/local/bin/installer-masters-gather.sh /usr/local/bin/bootstrap-cluster-gather.sh
    rm -f /var/log/log-bundle-bootstrap.tar.gz
    rm -rf /opt/openshift
    systemctl disable bootkube.service
}

wait_for_api
signal_bootstrap_complete
release_cvo_lease
release_cpc_lease
restore_cvo_overrides
approve_csrs_until_node_ready
wait_for_kube_apiserver
wait_for_cluster_version
clean
