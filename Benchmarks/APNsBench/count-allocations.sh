#!/usr/bin/env bash
# Heap allocations per notification in steady state, counted by valgrind's DHAT (an
# independent tool), for the APNsBench modes, against fastmock in another process.
#
#   bash Benchmarks/APNsBench/count-allocations.sh [APNsBench binary]
#
# It runs APNsBench under `valgrind --tool=dhat` twice per mode, with N=$SMALL and N=$LARGE
# notifications, and divides the difference in allocations by the difference in N, so
# start-up, the TLS handshake and the warm-up cancel out. Each allocation is attributed
# to the innermost frame outside the allocator (malloc, swift_allocObject, ...): inside
# libnghttp2 it is nghttp2's own, inside libssl/libcrypto OpenSSL's, anything else is the
# SDK's (its Swift code, the Swift runtime and standard library it calls).
#
# Needs valgrind, python3, and fastmock with certificates from ../shared/perf/run-bench.sh
# (run it once: it builds $PERF_WORK/fastmock and $PERF_WORK/certs). Environment: MODES
# (default "batch stream tasks"), SMALL (2000), LARGE (6000), CONC (100), PERF_WORK.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bench=${1:-$here/../../.build-release/release/APNsBench}
PERF_WORK=${PERF_WORK:-${TMPDIR:-/tmp}/apns-perf}
SMALL=${SMALL:-2000} LARGE=${LARGE:-6000} CONC=${CONC:-100}
read -r -a modes <<<"${MODES:-batch stream tasks}"
certs=$PERF_WORK/certs
[ -x "$PERF_WORK/fastmock" ] && [ -f "$certs/AuthKey.p8" ] || { echo "run ../shared/perf/run-bench.sh once first (fastmock, certificates in $PERF_WORK)" >&2; exit 2; }
[ -x "$bench" ] || { echo "no APNsBench at $bench: swift build -c release --product APNsBench --scratch-path .build-release" >&2; exit 2; }

work=$(mktemp -d)
timeout 3600 "$PERF_WORK/fastmock" --cert "$certs/server.pem" --key "$certs/server.key" --port 0 --max-seconds 3000 >"$work/mock.out" 2>"$work/mock.err" &
mock_pid=$!
trap 'kill "$mock_pid" 2>/dev/null || true; rm -rf "$work"' EXIT
port=
for _ in $(seq 200); do
  port=$(awk '/^PORT /{print $2; exit}' "$work/mock.out")
  [ -n "$port" ] && break
  sleep 0.05
done
[ -n "$port" ] || { echo "fastmock did not start" >&2; exit 1; }

run() { # MODE N -> dhat file
  local out="$work/dhat.$1.$2.json"
  APNS_BENCH_MODE=$1 APNS_BENCH_CA=$certs/ca.pem timeout 900 valgrind --tool=dhat --dhat-out-file="$out" \
    "$bench" localhost "$port" "$certs/AuthKey.p8" ABC123DEFG DEF123GHIJ com.example.app "$2" "$CONC" >"$work/bench.$1.$2.log" 2>"$work/valgrind.$1.$2.log"
  grep -q "failed=0 " "$work/bench.$1.$2.log" || { echo "APNsBench $1 N=$2 did not send everything:" >&2; cat "$work/bench.$1.$2.log" >&2; exit 1; }
  echo "$out"
}

printf '%-7s %12s %10s %10s %10s\n' mode "allocs/ntf" "SDK" nghttp2 OpenSSL
for mode in "${modes[@]}"; do
  small=$(run "$mode" "$SMALL")
  large=$(run "$mode" "$LARGE")
  python3 "$here/dhat-by-library.py" "$small" "$large" "$((LARGE - SMALL))" "$mode"
done
