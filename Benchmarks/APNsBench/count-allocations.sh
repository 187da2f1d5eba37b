#!/usr/bin/env bash
# Heap allocations per notification in steady state, for the APNsBench modes, against
# fastmock in another process.
#
#   bash Benchmarks/APNsBench/count-allocations.sh [APNsBench binary]
#
# It runs APNsBench with Benchmarks/AllocationCounter/alloc_counter.so preloaded twice per
# mode, with N=$SMALL and N=$LARGE notifications, and divides the difference in
# allocations by the difference in N, so start-up, key loading, the TLS handshake and the
# warm-up cancel out. The counter attributes each allocation to the shared object that
# called the allocator: libnghttp2 (nghttp2's own), libssl/libcrypto (OpenSSL's), or
# anything else (the SDK: its Swift code, the Swift runtime and standard library it
# calls). It first checks itself on a C program that allocates a known number of times.
# (valgrind 3.19's DHAT and memcheck crash on this multi-threaded Swift program here.)
#
# Needs cc, and fastmock with certificates from ../shared/perf/run-bench.sh (run it once:
# it builds $PERF_WORK/fastmock and $PERF_WORK/certs). Environment: MODES (default
# "batch stream tasks"), SMALL (5000), LARGE (25000), CONC (100), PERF_WORK, KEEP (set:
# keep the work folder with the logs).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bench=${1:-$here/../../.build-release/release/APNsBench}
PERF_WORK=${PERF_WORK:-${TMPDIR:-/tmp}/apns-perf}
SMALL=${SMALL:-5000} LARGE=${LARGE:-25000} CONC=${CONC:-100}
read -r -a modes <<<"${MODES:-batch stream tasks}"

source "$here/fastmock-common.sh"
trap 'kill "$mock_pid" 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
wait_for_fastmock

# The counter, and a check that it counts what a program asks for.
cc -O2 -shared -fPIC -o "$work/alloc_counter.so" "$here/../AllocationCounter/alloc_counter.c" -ldl
printf '%s\n' '#include <stdlib.h>' 'int main(int c, char **v) { int n = atoi(v[1]); for (int i = 0; i < n; i++) free(malloc(16 + i % 64)); return 0; }' >"$work/known.c"
cc -O0 -o "$work/known" "$work/known.c"
known() { ALLOC_COUNTER_OUT="$work/known.$1" LD_PRELOAD="$work/alloc_counter.so" "$work/known" "$1"; sed 's/.*program=\([0-9]*\).*/\1/' "$work/known.$1"; }
[ $(($(known 1000) - $(known 0))) -eq 1000 ] || { echo "the allocation counter miscounts" >&2; exit 1; }

run() { # MODE N -> the counter's line
  # `env` execs the bench in place, so only the bench is counted (not `timeout`).
  timeout 900 env ALLOC_COUNTER_OUT="$work/count.$1.$2" LD_PRELOAD="$work/alloc_counter.so" APNS_BENCH_MODE="$1" APNS_BENCH_CA="$certs/ca.pem" \
    "$bench" localhost "$port" "$certs/AuthKey.p8" ABC123DEFG DEF123GHIJ com.example.app "$2" "$CONC" >"$work/bench.$1.$2.log" 2>&1
  grep -q "failed=0 " "$work/bench.$1.$2.log" || { echo "APNsBench $1 N=$2 did not send everything:" >&2; cat "$work/bench.$1.$2.log" >&2; exit 1; }
  [ "$(wc -l <"$work/count.$1.$2")" -eq 1 ] || { echo "more than one process counted" >&2; exit 1; }
  cat "$work/count.$1.$2"
}
field() { sed "s/.* $1=\([0-9]*\).*/\1/" <<<"$2"; }

printf '%-7s %11s %9s %9s %9s\n' mode "allocs/ntf" SDK nghttp2 OpenSSL
for mode in "${modes[@]}"; do
  small=$(run "$mode" "$SMALL")
  large=$(run "$mode" "$LARGE")
  line="$mode"
  for what in total program nghttp2 openssl; do
    line+=$(awk -v a="$(field $what "$small")" -v b="$(field $what "$large")" -v n="$((LARGE - SMALL))" 'BEGIN { printf " %9.2f", (b - a) / n }')
  done
  echo "$line"
done
