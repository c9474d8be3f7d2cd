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

# The signal that stopped the script, if one did (set by the traps below).
SERVICE_RECORD_SIGNAL=""

# On exit: close an open stage as failed and record the end of the service.
service_record_on_exit() {
    local status=$?
    if [[ -n "${SERVICE_RECORD_SIGNAL}" ]]; then
        # A signal (systemctl stop, a reboot, the unit's timeout) is a
        # failure: bash runs the EXIT trap with $? = 0 after an untrapped
        # SIGTERM, which used to be recorded as success.
        local why journal
        why="killed by SIG${SERVICE_RECORD_SIGNAL}"
        journal="$(last_journal_lines)"
        if [[ -n "${journal}" ]]; then
            why+=$'\n'"${journal}"
        fi
        if [[ -n "${CURRENT_STAGE_NAME}" ]]; then
            record_service_event "stage end" "failure" "${CURRENT_STAGE_NAME}" "" "${why}"
            CURRENT_STAGE_NAME=""
        fi
        record_service_event "service end" "failure" "" "" "${why}"
        return "${status}"
    fi
    if [[ -n "${CURRENT_STAGE_NAME}" && "${status}" -ne 0 ]]; then
        record_service_stage_failure "${BASH_LINENO[0]:-}"
    fi
    record_service_end "${status}"
    return "${status}"
}

# service_record_on_signal NAME NUMBER: remember the signal and exit as the
# shell would have (128 + NUMBER), through the EXIT trap.
service_record_on_signal() {
    SERVICE_RECORD_SIGNAL="${1}"
    trap - "${1}"
    exit $((128 + ${2}))
}

record_service_start
trap service_record_on_exit EXIT
trap 'service_record_on_signal TERM 15' TERM
trap 'service_record_on_signal INT 2' INT
trap 'service_record_on_signal HUP 1' HUP
