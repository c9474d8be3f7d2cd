#!/usr/bin/env bash
# okd-install: the API objects of the bootstrap log bundle (installer.md §7).
#
# Source it and call `cluster_bootstrap_gather [DIR]`, or run it as
# `bootstrap-cluster-gather.sh [DIR]`: writes DIR/resources/ (default DIR:
# /tmp/artifacts-api-server-temp) with the objects openshift-install's bundle
# carries (nodes.list, masters.list, containers, api-pods, <kind>.json,
# secrets-names.txt, openapi.json.gz, ...), or DIR/resources/not-gathered.txt
# saying why not: no `oc` or `kubectl`, no kubeconfig, or the API did not
# answer within 5 s.
#
# The client is `oc`, else `kubectl`; every request has --request-timeout=5s.
# The kubeconfig is $GATHER_KUBECONFIG, else
# /etc/kubernetes/bootstrap-secrets/kubeconfig (the loopback kubeconfig
# cluster-bootstrap copies there), else /opt/openshift/auth/kubeconfig (api-int).

# _gather_object FILE ARGS...: one client call into resources/FILE; its
# errors go to resources/FILE.err, kept only when not empty.
_gather_object() {
    local file="${_GATHER_DIR}/${1}"
    shift
    "${_GATHER_CLIENT[@]}" "$@" >"${file}" 2>"${file}.err"
    [[ -s "${file}.err" ]] || rm -f "${file}.err"
}

cluster_bootstrap_gather() {
    local dest="${1:-/tmp/artifacts-api-server-temp}"
    _GATHER_DIR="${dest}/resources"
    mkdir -p "${_GATHER_DIR}"

    local kubeconfig="${GATHER_KUBECONFIG:-}"
    if [[ -z "${kubeconfig}" ]]; then
        kubeconfig=/opt/openshift/auth/kubeconfig
        [[ -f /etc/kubernetes/bootstrap-secrets/kubeconfig ]] &&
            kubeconfig=/etc/kubernetes/bootstrap-secrets/kubeconfig
    fi
    local client
    if command -v oc >/dev/null 2>&1; then
        client=oc
    elif command -v kubectl >/dev/null 2>&1; then
        client=kubectl
    else
        printf 'Cluster resources not gathered: neither oc nor kubectl is installed on this host.\n' \
            >"${_GATHER_DIR}/not-gathered.txt"
        cat "${_GATHER_DIR}/not-gathered.txt"
        return 0
    fi
    if [[ ! -r "${kubeconfig}" ]]; then
        printf 'Cluster resources not gathered: no kubeconfig at %s.\n' "${kubeconfig}" \
            >"${_GATHER_DIR}/not-gathered.txt"
        cat "${_GATHER_DIR}/not-gathered.txt"
        return 0
    fi
    # A private discovery cache, so nothing is left in root's home.
    local cache
    cache="$(mktemp -d)"
    _GATHER_CLIENT=("${client}" "--kubeconfig=${kubeconfig}" --request-timeout=5s "--cache-dir=${cache}")
    local server err
    server="$("${client}" "--kubeconfig=${kubeconfig}" config view --minify \
        -o 'jsonpath={.clusters[0].cluster.server}' 2>/dev/null)"
    echo "Using ${client} with ${kubeconfig} (API ${server:-unknown})"
    if ! err="$("${_GATHER_CLIENT[@]}" get --raw /version 2>&1 >/dev/null)"; then
        printf 'Cluster resources not gathered: the API at %s did not answer within 5 s (%s with %s): %s\n' \
            "${server:-unknown}" "${client}" "${kubeconfig}" "$(printf '%s' "${err}" | tail -n 3 | tr '\n' ' ')" \
            >"${_GATHER_DIR}/not-gathered.txt"
        cat "${_GATHER_DIR}/not-gathered.txt"
        rm -rf "${cache}"
        return 0
    fi

    local names='{range .items[*]}{.metadata.name}{"\n"}{end}'
    # shellcheck disable=SC2016 # Go templates, not shell expansions
    local containers='{{range .items}}{{$n := .metadata.name}}{{$ns := .metadata.namespace}}{{range .spec.containers}}-n {{$ns}} {{$n}} -c {{.name}}{{"\n"}}{{end}}{{range .spec.initContainers}}-n {{$ns}} {{$n}} -c {{.name}}{{"\n"}}{{end}}{{end}}'
    _gather_object nodes.list get nodes -o "jsonpath=${names}" &
    _gather_object masters.list get nodes -l node-role.kubernetes.io/master -o "jsonpath=${names}" &
    _gather_object containers get pods --all-namespaces -o "go-template=${containers}" &
    _gather_object api-pods get pods --all-namespaces -l apiserver=true \
        -o 'go-template={{range .items}}-n {{.metadata.namespace}} {{.metadata.name}}{{"\n"}}{{end}}' &
    local kind
    for kind in apiservices clusteroperators clusterversion csr kubeapiserver \
        kubecontrollermanager machineconfigpools machineconfigs namespaces nodes \
        openshiftapiserver; do
        _gather_object "${kind}.json" get "${kind}" -o json &
    done
    for kind in configmaps endpoints events machines pods rolebindings roles services; do
        _gather_object "${kind}.json" get "${kind}" --all-namespaces -o json &
    done
    wait
    # Secrets by name only; the annotations without service-account tokens
    # and pull secrets (their annotations can carry credentials).
    _gather_object secrets-names.txt get secrets --all-namespaces
    "${_GATHER_CLIENT[@]}" get secrets --all-namespaces \
        -o custom-columns=NAMESPACE:.metadata.namespace,NAME:.metadata.name,TYPE:.type,ANNOTATIONS:.metadata.annotations \
        2>/dev/null | grep -v -e '-token-' -e '-dockercfg-' >"${_GATHER_DIR}/secrets-names-with-annotations.txt"
    "${_GATHER_CLIENT[@]}" get --raw /openapi/v2 2>/dev/null | gzip >"${_GATHER_DIR}/openapi.json.gz"
    rm -rf "${cache}"
    return 0
}

if [[ "${BASH_SOURCE[0]}" == "${0}" ]]; then
    cluster_bootstrap_gather "$@"
fi
