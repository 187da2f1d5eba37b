#!/usr/bin/env bash
# End-to-end test of the example server (Examples/HummingbirdServer) against the SDK's
# mock APNs server, as CI runs it:
#   1. builds the example package (its own scratch folder, so the main .build is not
#      locked) and runs its unit tests; builds the `apns` tool;
#   2. makes a P-256 signing key with OpenSSL and starts `apns mock-server` on a port the
#      system picks, requiring provider tokens signed with that key, answering
#      410 Unregistered for one device token, printing each request it receives;
#   3. starts the example server pointed at it (APNS_ENVIRONMENT=127.0.0.1:<port>,
#      trusting the mock server's CA) on a port the system picks;
#   4. drives it over HTTP with curl: registers 3 tokens, sends to the user (2 accepted,
#      1 unregistered), checks the unregistered token is forgotten on a second send and
#      that /metrics shows the counters;
#   5. sends SIGTERM while a send is in flight (the mock server delays each answer) and
#      checks that the send is answered in full and the server exits 0; then stops the
#      mock server and checks what it received.
# Loopback only; every step is bounded by a timeout; every process is killed on exit.
#
# Environment: EXAMPLE_SCRATCH_PATH (default .build-example-server at the repository's root,
# outside Examples/, whose Swift files the SDK's tests read),
# EXAMPLE_BUILD_TIMEOUT (seconds, default 2400: a first build compiles Hummingbird and SwiftNIO).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
example="$root/Examples/HummingbirdServer"
scratch="${EXAMPLE_SCRATCH_PATH:-$root/.build-example-server}"
build_timeout="${EXAMPLE_BUILD_TIMEOUT:-2400}"

for tool in curl openssl python3; do
    command -v "$tool" >/dev/null || { echo "example-server-test: $tool is needed (bash scripts/bootstrap.sh --test installs it)" >&2; exit 1; }
done

work=$(mktemp -d)
pids=()
cleanup() {
    local status=$?
    for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    if [ "$status" -ne 0 ]; then
        for log in "$work"/*.log; do [ -f "$log" ] && { echo "---- $(basename "$log") (last 40 lines)"; tail -n 40 "$log"; }; done
    fi
    rm -rf "$work"
}
trap cleanup EXIT

step() { echo "== $*"; }
fail() { echo "example-server-test: FAIL: $*" >&2; exit 1; }

# Waits (at most $3 tenths of a second) until file $1 is non-empty, while process $2 lives.
wait_for_file() {
    local i
    for ((i = 0; i < $3; i++)); do
        [ -s "$1" ] && return 0
        kill -0 "$2" 2>/dev/null || fail "process $2 exited before writing $1"
        sleep 0.1
    done
    fail "no $1 after $(($3 / 10)) s"
}

# Waits (at most $2 tenths of a second) for process $1 to exit; sets exit_status.
wait_for_exit() {
    local i
    for ((i = 0; i < $2; i++)); do
        kill -0 "$1" 2>/dev/null || break
        sleep 0.1
    done
    kill -0 "$1" 2>/dev/null && fail "process $1 still running $(($2 / 10)) s after SIGTERM"
    exit_status=0
    wait "$1" || exit_status=$?
}

# request METHOD PATH [JSON]: prints the HTTP status; the body goes to $work/body.
request() {
    local args=(--silent --show-error --max-time 30 -o "$work/body" -w '%{http_code}' -X "$1")
    [ $# -ge 3 ] && args+=(-H 'content-type: application/json' --data "$3")
    curl "${args[@]}" "http://127.0.0.1:$http_port$2"
}

# json EXPRESSION: evaluates a Python expression over the last body, parsed as `r`.
json() { python3 -c "import json,sys; r = json.load(open(sys.argv[1])); print($1)" "$work/body"; }

# expect WHAT ACTUAL EXPECTED
expect() { [ "$2" = "$3" ] || fail "$1: expected $3, got $2 (body: $(head -c 2000 "$work/body" 2>/dev/null))"; }

step "build the example and its tests (scratch path ${scratch#"$root"/})"
timeout "$build_timeout" swift build --package-path "$example" --scratch-path "$scratch" --build-tests
timeout 600 swift test --package-path "$example" --scratch-path "$scratch" --skip-build
server_bin="$(timeout 300 swift build --package-path "$example" --scratch-path "$scratch" --show-bin-path)/HummingbirdServer"
step "a missing or malformed setting stops the server with a message naming it"
# run_bad EXPECTED_TEXT VAR=VALUE...: runs the server with only these variables; it must exit 1 saying EXPECTED_TEXT.
run_bad() {
    local text=$1 status=0
    shift
    timeout 30 env -i PATH="$PATH" "$@" "$server_bin" >"$work/bad.out" 2>&1 || status=$?
    expect "exit status with $*" "$status" 1
    grep -qF "$text" "$work/bad.out" || fail "with $*, expected \"$text\", got: $(cat "$work/bad.out")"
}
run_bad "APNS_ENVIRONMENT is not set"
run_bad 'HTTP_PORT is "http"' HTTP_PORT=http APNS_ENVIRONMENT=sandbox
run_bad "APNS_KEY_ID is not set" APNS_ENVIRONMENT=sandbox APNS_KEY="$(openssl ecparam -name prime256v1 -genkey -noout 2>/dev/null | openssl pkcs8 -topk8 -nocrypt)"

step "build the apns tool"
timeout "$build_timeout" swift build --product apns
apns_bin="$(timeout 300 swift build --show-bin-path)/apns"

step "start the mock APNs server"
openssl ecparam -name prime256v1 -genkey -noout 2>/dev/null | openssl pkcs8 -topk8 -nocrypt -out "$work/AuthKey.p8"
openssl pkey -in "$work/AuthKey.p8" -pubout -out "$work/AuthKey.pub.pem"
key_id=ABC123DEFG
team_id=DEF123GHIJ
token_a=00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0
token_b=22fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f2
token_dead=11fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f1
"$apns_bin" mock-server --verbose \
    --port-file "$work/mock.port" --ca-file "$work/mock-ca.pem" \
    --token-key "$work/AuthKey.pub.pem" --key-id "$key_id" --team-id "$team_id" \
    --bundle-id com.example.app --unregistered "$token_dead" --delay 1000 \
    >"$work/mock.log" 2>&1 &
mock_pid=$!
pids+=("$mock_pid")
wait_for_file "$work/mock.port" "$mock_pid" 300
mock_port=$(tr -d '[:space:]' <"$work/mock.port")

step "start the example server against it (APNS_ENVIRONMENT=127.0.0.1:$mock_port)"
env APNS_ENVIRONMENT="127.0.0.1:$mock_port" APNS_CA_FILE="$work/mock-ca.pem" \
    APNS_KEY_FILE="$work/AuthKey.p8" APNS_KEY_ID="$key_id" APNS_TEAM_ID="$team_id" \
    APNS_TOPIC=com.example.app HTTP_HOST=127.0.0.1 HTTP_PORT=0 HTTP_PORT_FILE="$work/http.port" \
    "$server_bin" >"$work/example.log" 2>&1 &
server_pid=$!
pids+=("$server_pid")
wait_for_file "$work/http.port" "$server_pid" 600
http_port=$(tr -d '[:space:]' <"$work/http.port")

step "register three device tokens for user ann"
for token in "$token_a" "$token_b" "$token_dead"; do
    expect "register ${token:0:8}" "$(request POST /users/ann/devices "{\"token\":\"$token\"}")" 201
done
expect "register again" "$(request POST /users/ann/devices "{\"token\":\"$token_a\"}")" 200
expect "register a malformed token" "$(request POST /users/ann/devices '{"token":"not-hex"}')" 400
expect "tokens of ann" "$(request GET /users/ann/devices)" 200
expect "ann's device count" "$(json 'len(r["devices"])')" 3

step "send to ann: 2 accepted, 1 unregistered and forgotten"
expect "first send" "$(request POST /users/ann/notifications '{"title":"Order","body":"Your order shipped"}')" 200
expect "devices" "$(json 'r["devices"]')" 3
expect "accepted" "$(json 'r["accepted"]')" 2
expect "unregistered" "$(json 'r["unregistered"]')" 1
expect "forgotten" "$(json 'r["forgotten"]')" 1
expect "rejected, failed, invalid" "$(json '(r["rejected"], r["failed"], r["invalid"])')" "(0, 0, 0)"
expect "the unregistered device's reason" "$(json '[d["reason"] for d in r["results"] if d["result"] == "unregistered"]')" "['Unregistered']"
grep -q "$token_dead" "$work/body" && fail "the report holds a whole device token"
expect "tokens of ann" "$(request GET /users/ann/devices)" 200
expect "ann's device count after the send" "$(json 'len(r["devices"])')" 2

step "send again: the forgotten token is not sent to"
expect "second send" "$(request POST /users/ann/notifications '{"body":"Again"}')" 200
expect "devices" "$(json 'r["devices"]')" 2
expect "accepted" "$(json 'r["accepted"]')" 2
expect "unregistered" "$(json 'r["unregistered"]')" 0

step "metrics"
expect "GET /metrics" "$(request GET /metrics)" 200
# metric NAME [LABEL=VALUE]: the sum of the samples of NAME (with that label, if given).
metric() {
    python3 - "$work/body" "$@" <<'EOF'
import re, sys
text, name = open(sys.argv[1]).read(), sys.argv[2]
want = sys.argv[3] if len(sys.argv) > 3 else None
total = 0.0
for line in text.splitlines():
    m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)', line)
    if m and m.group(1) == name and (want is None or (m.group(2) or "").find(want.replace("=", '="') + '"') >= 0):
        total += float(m.group(3))
print(int(total) if total == int(total) else total)
EOF
}
expect "apns_notifications_sent_total" "$(metric apns_notifications_sent_total)" 5
expect "apns_notifications_accepted_total" "$(metric apns_notifications_accepted_total)" 4
expect "apns_notifications_rejected_total{reason=Unregistered}" "$(metric apns_notifications_rejected_total reason=Unregistered)" 1
expect "example_device_tokens_forgotten_total{reason=Unregistered}" "$(metric example_device_tokens_forgotten_total reason=Unregistered)" 1
expect "example_device_tokens_registered" "$(metric example_device_tokens_registered)" 2

step "SIGTERM with a send in flight: the send is answered, then the server exits cleanly"
# A send takes the mock server's 1 s delay. SIGTERM goes out once /metrics shows the
# request in flight; if the send was answered before that was seen (a loaded machine),
# it counts as a plain send and another one is tried.
sends=2   # so far
in_flight=""
for ((attempt = 0; attempt < 5; attempt++)); do
    curl --silent --show-error --max-time 60 -o "$work/drain.body" -w '%{http_code}' -X POST \
        -H 'content-type: application/json' --data '{"body":"Last one"}' \
        "http://127.0.0.1:$http_port/users/ann/notifications" >"$work/drain.status" 2>"$work/drain.log" &
    curl_pid=$!
    pids+=("$curl_pid")
    sends=$((sends + 1))
    while kill -0 "$curl_pid" 2>/dev/null; do
        if curl --silent --max-time 5 "http://127.0.0.1:$http_port/metrics" | grep -Eq '^apns_requests_in_flight(\{[^}]*\})? +[1-9]'; then
            in_flight=yes
            break
        fi
    done
    [ -n "$in_flight" ] && kill -TERM "$server_pid"
    wait_for_exit "$curl_pid" 600
    expect "curl's exit status for the send" "$exit_status" 0
    cp "$work/drain.body" "$work/body"
    expect "the send" "$(cat "$work/drain.status")" 200
    expect "accepted" "$(json '(r["devices"], r["accepted"])')" "(2, 2)"
    [ -n "$in_flight" ] && break
done
[ -n "$in_flight" ] || fail "no send was seen in flight in /metrics (apns_requests_in_flight) in $attempt attempts"
wait_for_exit "$server_pid" 300
expect "the example server's exit status" "$exit_status" 0
grep -q "stopped" "$work/example.log" || fail "the example server did not log its stop"
if grep -Eq " (error|critical) " "$work/example.log"; then fail "the example server logged an error"; fi

step "what the mock server received"
kill -TERM "$mock_pid"
wait_for_exit "$mock_pid" 300
expect "the mock server's exit status" "$exit_status" 0
# One line per request: "#n conn c stream s <push type> <topic> <token prefix>… <bytes> B → <status> [reason]".
received=$(grep -E '^#[0-9]+ ' "$work/mock.log" || true)
expect "requests received" "$(grep -c . <<<"$received")" $((1 + 2 * sends))
expect "alert requests for com.example.app" "$(grep -c ' alert com.example.app ' <<<"$received")" $((1 + 2 * sends))
expect "answered 200" "$(grep -c '→ 200$' <<<"$received")" $((2 * sends))
expect "answered 410 Unregistered (to ${token_dead:0:8}…)" "$(grep -c "${token_dead:0:8}… .* → 410 Unregistered$" <<<"$received")" 1
expect "requests to ${token_dead:0:8}…" "$(grep -c "${token_dead:0:8}…" <<<"$received")" 1
grep -q "stopped after $((1 + 2 * sends)) requests ($((2 * sends)) accepted, 1 rejected)" "$work/mock.log" || fail "the mock server's totals: $(tail -n 1 "$work/mock.log")"
step "example server test passed"
