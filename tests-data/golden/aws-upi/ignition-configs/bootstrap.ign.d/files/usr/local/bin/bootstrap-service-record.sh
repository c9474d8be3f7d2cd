#!/usr/bin/env bash
# okd-install: service records of the bootstrap node (installer.md §8).
#
# Source this file from a bootstrap script. It appends one JSON object per
# event to /var/log/openshift/<service>.json:
#   {"timestamp": "...", "preCommand": "...", "postCommand": "...",
#    "stage": "...", "phase": "...", "result": "...",
#    "errorLine": "...", "errorMessage": "..."}
# Empty fields are left out. The service name defaults to the unit that runs
# the script (or the script's base name) and can be overridden with SERVICE_NAME.

SERVICE_RECORDS_DIR="${SERVICE_RECORDS_DIR:-/var/log/openshift}"
if [[ -z "${SERVICE_NAME:-}" ]]; then
    SERVICE_NAME="$(basename "${0}" .sh)"
fi
SERVICE_RECORD_FILE="${SERVICE_RECORDS_DIR}/${SERVICE_NAME}.json"
CURRENT_STAGE_NAME=""

# json_escape STRING: prints STRING as the inside of a JSON string.
json_escape() {
    local s="${1}"
    s="${s//\\/\\\\}"
    s="${s//\"/\\\"}"
    s="${s//$'\n'/\\n}"
    s="${s//$'\r'/\\r}"
    s="${s//$'\t'/\\t}"
    printf '%s' "${s}"
}

# record_service_event PHASE [RESULT] [STAGE] [ERROR_LINE] [ERROR_MESSAGE] [PRE] [POST]
record_service_event() {
    local phase="${1}" result="${2:-}" stage="${3:-}" error_line="${4:-}" error_message="${5:-}"
    local pre_command="${6:-}" post_command="${7:-}"
    local entry key value
    entry="{\"timestamp\":\"$(date -u +%Y-%m-%dT%H:%M:%SZ)\""
    for key in preCommand postCommand stage phase result errorLine errorMessage; do
        case "${key}" in
            preCommand) value="${pre_command}" ;;
            postCommand) value="${post_command}" ;;
            stage) value="${stage}" ;;
            phase) value="${phase}" ;;
            result) value="${result}" ;;
            errorLine) value="${error_line}" ;;
            errorMessage) value="${error_message}" ;;
        esac
        if [[ -n "${value}" ]]; then
            entry+=",\"${key}\":\"$(json_escape "${value}")\""
        fi
    done
    entry+="}"
    mkdir -p "${SERVICE_RECORDS_DIR}" 2>/dev/null || return 0
    printf '%s\n' "${entry}" >>"${SERVICE_RECORD_FILE}" 2>/dev/null || true
}

# last_journal_lines: the last 3 journal lines of this service (the error message).
last_journal_lines() {
    journalctl --no-pager --output=cat -n 3 -u "${SERVICE_NAME}.service" 2>/dev/null || true
}

record_service_start() {
    record_service_event "service start"
}

record_service_end() {
    local status="${1:-0}"
    if [[ "${status}" -eq 0 ]]; then
        record_service_event "service end" "success"
    else
        record_service_event "service end" "failure" "" "${2:-}" "$(last_journal_lines)"
    fi
}

record_service_stage_start() {
    CURRENT_STAGE_NAME="${1}"
    record_service_event "stage start" "" "${CURRENT_STAGE_NAME}"
}

record_service_stage_success() {
    record_service_event "stage end" "success" "${CURRENT_STAGE_NAME}"
    CURRENT_STAGE_NAME=""
}

record_service_stage_failure() {
    record_service_event "stage end" "failure" "${CURRENT_STAGE_NAME}" "${1:-}" "$(last_journal_lines)"
    CURRENT_STAGE_NAME=""
}

record_pre_command_start() {
    record_service_event "pre-command start" "" "" "" "" "${1:-}"
}

record_pre_command_end() {
    record_service_event "pre-command end" "success" "" "" "" "${1:-}"
}

record_post_command_start() {
    record_service_event "post-command start" "" "" "" "" "" "${1:-}"
}

record_post_command_end() {
    record_service_event "post-command end" "success" "" "" "" "" "${1:-}"
}

# On exit: close an open stage as failed and record the end of the service.
service_record_on_exit() {
    local status=$?
    if [[ -n "${CURRENT_STAGE_NAME}" && "${status}" -ne 0 ]]; then
        record_service_stage_failure "${BASH_LINENO[0]:-}"
    fi
    record_service_end "${status}"
    return "${status}"
}

record_service_start
trap service_record_on_exit EXIT
