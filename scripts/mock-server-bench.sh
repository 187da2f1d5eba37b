#!/usr/bin/env bash
# CPU per request of the mock APNs server (`apns mock-server`, release build) under h2load,
# beside ../shared/perf/fastmock (a C server) in the same run when that folder exists.
#
#   scripts/mock-server-bench.sh                      3 rounds, 200,000 requests per run
#   ROUNDS=1 N=50000 scripts/mock-server-bench.sh
#   RECORD=1000 scripts/mock-server-bench.sh          with the request record on
#   APNS_BASELINE=/tmp/apns-old scripts/mock-server-bench.sh   also an older build's mock server
#
# Each server runs pinned to CPU $SERVER_CPU (0), h2load pinned to CPU $CLIENT_CPU (1).
# Shapes: 1 connection × 100 streams and 4 connections × 1,000 streams. The server's CPU
# is utime+stime from /proc/PID/stat before and after each h2load run, divided by the
# requests h2load saw answered 2xx. Requests are those of ../shared/perf/run-bench.sh: a
# bearer JWT (ES256, signed by pyjwt with a key made here), /3/device/<64 hex>, the
# 128-byte example payload. The mock server verifies the JWT's signature (once per token).
# Like APNs, the mock server allows one stream on a new token-auth connection until a token
# is accepted; h2load does not wait for the server's SETTINGS, so a run may see up to
# CONC − 1 of its first requests refused (REFUSED_STREAM, "failed" in the table). The CPU
# is divided by the requests answered 2xx.
#
# Needs: h2load (nghttp2-client), openssl, python3 with pyjwt and cryptography, taskset,
# and for fastmock gcc, make, libnghttp2-dev, libssl-dev.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-200000} ROUNDS=${ROUNDS:-3} SERVER_CPU=${SERVER_CPU:-0} CLIENT_CPU=${CLIENT_CPU:-1}
RECORD=${RECORD:-0} H2LOAD_TIMEOUT=${H2LOAD_TIMEOUT:-300}
SHAPES=${SHAPES:-"1x100 4x1000"}
perf_dir=../shared/perf
for tool in h2load openssl python3 taskset; do
  command -v "$tool" >/dev/null || { echo "mock-server-bench: $tool is not installed" >&2; exit 1; }
done
python3 -c 'import jwt, cryptography' 2>/dev/null || {
  echo "mock-server-bench: needs python3 with pyjwt and cryptography (pip install pyjwt cryptography)" >&2; exit 1; }

timeout 1800 swift build -c release --product apns >&2
apns=$(swift build -c release --show-bin-path)/apns

work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

# A P-256 provider key, its public half for the mock server, a self-signed certificate for fastmock.
openssl ecparam -name prime256v1 -genkey -noout -out "$work/key.sec1.pem" 2>/dev/null
openssl pkcs8 -topk8 -nocrypt -in "$work/key.sec1.pem" -out "$work/AuthKey.p8"
openssl ec -in "$work/AuthKey.p8" -pubout -out "$work/AuthKey.pub.pem" 2>/dev/null
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=localhost \
  -keyout "$work/server.key" -out "$work/server.pem" 2>/dev/null
key_id=ABC123DEFG team_id=DEF123GHIJ topic=com.example.app
jwt=$(python3 -c 'import sys,time,jwt; print(jwt.encode({"iss": sys.argv[2], "iat": int(time.time())}, open(sys.argv[1]).read(), algorithm="ES256", headers={"kid": sys.argv[3]}))' \
  "$work/AuthKey.p8" "$team_id" "$key_id")
printf '%s' '{"aps":{"alert":{"title":"Game Request","body":"Bob wants to play poker"},"badge":5,"sound":"default"},"acme1":"bar","acme2":42}' >"$work/body.json"
device=$(printf 'ab%.0s' {1..32})

# wait_for_port FILE PID: the port a server wrote (fastmock: "PORT n" on stdout; apns: a port file).
wait_for_port() {
  local port=
  for _ in $(seq 600); do
    port=$(sed -n 's/^PORT //p; s/^\([0-9][0-9]*\)$/\1/p' "$1" 2>/dev/null | head -n 1)
    [ -n "$port" ] && { echo "$port"; return; }
    kill -0 "$2" 2>/dev/null || break
    sleep 0.05
  done
  echo "mock-server-bench: a server did not start (see $1)" >&2
  exit 1
}

servers=(swift)
# As production: its answers carry what fastmock's do (:status and apns-id), not the
# sandbox's apns-unique-id as well.
taskset -c "$SERVER_CPU" "$apns" mock-server --port-file "$work/swift.port" --ca-file "$work/ca.pem" \
  --token-key "$work/AuthKey.pub.pem" --key-id "$key_id" --team-id "$team_id" --bundle-id "$topic" \
  --record-limit "$RECORD" --environment production >"$work/swift.out" 2>&1 &
pids+=($!)
declare -A pid_of port_of
pid_of[swift]=$!
port_of[swift]=$(wait_for_port "$work/swift.port" "${pid_of[swift]}")

# APNS_BASELINE=/path/to/an/older/apns: also measure that build's mock server, to compare.
if [ -n "${APNS_BASELINE:-}" ]; then
  taskset -c "$SERVER_CPU" "$APNS_BASELINE" mock-server --port-file "$work/baseline.port" --ca-file "$work/ca-baseline.pem" \
    --token-key "$work/AuthKey.pub.pem" --key-id "$key_id" --team-id "$team_id" --bundle-id "$topic" \
    --record-limit "$RECORD" >"$work/baseline.out" 2>&1 &
  pids+=($!)
  pid_of[baseline]=$!
  port_of[baseline]=$(wait_for_port "$work/baseline.port" "${pid_of[baseline]}")
  servers+=(baseline)
fi

if [ -d "$perf_dir" ] && [ -f "$perf_dir/fastmock.c" ]; then
  make -s -C "$work" -f "$(cd "$perf_dir" && pwd)/Makefile" VPATH="$(cd "$perf_dir" && pwd)" fastmock >&2
  taskset -c "$SERVER_CPU" "$work/fastmock" --cert "$work/server.pem" --key "$work/server.key" --port 0 \
    --max-seconds 3600 --streams 1000 >"$work/fastmock.out" 2>"$work/fastmock.err" &
  pids+=($!)
  pid_of[fastmock]=$!
  port_of[fastmock]=$(wait_for_port "$work/fastmock.out" "${pid_of[fastmock]}")
  servers+=(fastmock)
else
  echo "(no $perf_dir: measuring the mock server alone)" >&2
fi

# cpu_ticks PID: utime + stime of the process, in clock ticks (fields 14 and 15 of /proc/PID/stat).
cpu_ticks() { awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)

printf '%-5s %-8s %-9s %9s %9s %9s %11s\n' round shape server answered failed req/s cpu_us/req
results="$work/results.tsv"
for ((round = 1; round <= ROUNDS; round++)); do
  for shape in $SHAPES; do
    clients=${shape%x*} streams=${shape#*x}
    for server in "${servers[@]}"; do
      pid=${pid_of[$server]} port=${port_of[$server]}
      before=$(cpu_ticks "$pid")
      timeout -k 5 "$H2LOAD_TIMEOUT" taskset -c "$CLIENT_CPU" h2load -n "$N" -c "$clients" -m "$streams" \
        -d "$work/body.json" -H "authorization: bearer $jwt" -H "apns-topic: $topic" \
        -H 'apns-push-type: alert' -H 'apns-priority: 10' -H 'apns-expiration: 0' \
        "https://localhost:$port/3/device/$device" >"$work/h2load.out" 2>&1 || true
      after=$(cpu_ticks "$pid")
      ok=$(sed -n 's/^status codes: \([0-9]*\) 2xx.*/\1/p' "$work/h2load.out")
      failed=$(sed -n 's/^requests: .* \([0-9]*\) failed.*/\1/p' "$work/h2load.out")
      rate=$(sed -n 's/^finished in [^,]*, \([0-9.]*\) req\/s.*/\1/p' "$work/h2load.out")
      if [ -z "$ok" ] || [ "$ok" = 0 ]; then
        echo "h2load against $server failed:" >&2; tail -n 20 "$work/h2load.out" >&2; exit 1
      fi
      us=$(awk -v t=$((after - before)) -v hz="$hz" -v n="$ok" 'BEGIN { printf "%.2f", t * 1e6 / hz / n }')
      printf '%-5s %-8s %-9s %9s %9s %9.0f %11s\n' "$round" "$shape" "$server" "$ok" "${failed:-?}" "${rate:-0}" "$us"
      printf '%s\t%s\t%s\t%s\n' "$round" "$shape" "$server" "$us" >>"$results"
    done
  done
done

# Per shape: each server's median, and the mock server's CPU over fastmock's per round.
python3 - "$results" <<'EOF'
import statistics, sys
rows = [line.rstrip("\n").split("\t") for line in open(sys.argv[1])]
print("\nsummary: server CPU per answered request, median over rounds (range)")
for shape in dict.fromkeys(r[1] for r in rows):
    cells = []
    for server in dict.fromkeys(r[2] for r in rows):
        values = [float(r[3]) for r in rows if r[1] == shape and r[2] == server]
        cells.append(f"{server} {statistics.median(values):.2f} µs ({min(values):.2f}–{max(values):.2f})")
    ratios = []
    for rnd in dict.fromkeys(r[0] for r in rows):
        by = {r[2]: float(r[3]) for r in rows if r[0] == rnd and r[1] == shape}
        if "swift" in by and by.get("fastmock"):
            ratios.append(by["swift"] / by["fastmock"])
    ratio = f"; swift/fastmock per round: {', '.join(f'{x:.2f}×' for x in ratios)}" if ratios else ""
    print(f"{shape:<7} " + "; ".join(cells) + ratio)
EOF
