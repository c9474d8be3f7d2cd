#!/usr/bin/env bash
# okd-install: DNS and reachability checks of the API host names
# (installer.md §8, bootkube stages resolve-api-url, resolve-api-int-url,
# check-api-url, check-api-int-url). Source it; the checks only record
# results and never fail the caller.

API_SERVER_URL='api.okd.example'
API_INT_SERVER_URL='api-int.okd.example'

# resolve_url STAGE HOST: records whether HOST resolves.
resolve_url() {
    local stage="${1}" host="${2}" addresses
    record_service_stage_start "${stage}" 2>/dev/null || true
    addresses="$(dig +short "${host}" 2>/dev/null)"
    if [[ -n "${addresses}" ]]; then
        echo "${host} resolves to ${addresses//$'\n'/ }"
        record_service_stage_success 2>/dev/null || true
    else
        echo "Unable to resolve ${host}" >&2
        record_service_stage_failure 2>/dev/null || true
    fi
    return 0
}

# check_url STAGE HOST: records whether https://HOST:6443/readyz answers 200.
check_url() {
    local stage="${1}" host="${2}" code
    record_service_stage_start "${stage}" 2>/dev/null || true
    code="$(curl -k --silent --max-time 10 --output /dev/null --write-out '%{http_code}' "https://${host}:6443/readyz")"
    if [[ "${code}" == "200" ]]; then
        echo "https://${host}:6443/readyz is ready"
        record_service_stage_success 2>/dev/null || true
    else
        echo "https://${host}:6443/readyz answered ${code:-nothing}" >&2
        record_service_stage_failure 2>/dev/null || true
    fi
    return 0
}

resolve_api_urls() {
    resolve_url "resolve-api-url" "${API_SERVER_URL}"
    resolve_url "resolve-api-int-url" "${API_INT_SERVER_URL}"
}

check_api_urls() {
    check_url "check-api-url" "${API_SERVER_URL}"
    check_url "check-api-int-url" "${API_INT_SERVER_URL}"
}
