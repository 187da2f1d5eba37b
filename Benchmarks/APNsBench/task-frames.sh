#!/usr/bin/env bash
# The task allocator's allocations per notification (async frames, by size), for the
# APNsBench modes, against fastmock in another process.
#
#   bash Benchmarks/APNsBench/task-frames.sh [APNsBench binary]
#
# An async function's frame comes from its task's allocator: the first kilobyte or so
# inline in the task, the rest from malloc. A large frame on the path of a send that
# runs in a task of its own is malloc'd and freed per send, and glibc then grows and
# trims its heap over and over (page faults were a third of the CPU of such a send when
# APNsClient's attempt loop had a 16.7 KB frame). This puts a uprobe on
# swift_task_alloc (perf probe: root, and perf installed), runs APNsBench with N
# notifications, and prints each allocation size with its count per notification, the
# largest first, then the bytes per notification.
#
# Needs fastmock and certificates from ../shared/perf/run-bench.sh in $PERF_WORK.
# Environment: MODES (default "tasks"), N (2000), CONC (100), PERF_WORK.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bench=${1:-$here/../../.build-release/release/APNsBench}
PERF_WORK=${PERF_WORK:-${TMPDIR:-/tmp}/apns-perf}
N=${N:-2000} CONC=${CONC:-100}
read -r -a modes <<<"${MODES:-tasks}"
command -v perf >/dev/null || { echo "needs perf (linux-perf)" >&2; exit 2; }

source "$here/fastmock-common.sh"
trap 'kill "$mock_pid" 2>/dev/null || true; perf probe -q -d "probe_libswift_Concurrency:apns_task_alloc" 2>/dev/null || true; rm -rf "$work"' EXIT
wait_for_fastmock
library=$(ldd "$bench" | awk '/libswift_Concurrency/ {print $3}')
[ -n "$library" ] || { echo "APNsBench does not link libswift_Concurrency.so" >&2; exit 2; }
perf probe -q -x "$library" --add "apns_task_alloc=swift_task_alloc size=%di:u64"

for mode in "${modes[@]}"; do
  timeout 900 env APNS_BENCH_MODE="$mode" APNS_BENCH_CA="$certs/ca.pem" \
    perf record -q -e probe_libswift_Concurrency:apns_task_alloc -o "$work/$mode.data" \
    "$bench" localhost "$port" "$certs/AuthKey.p8" ABC123DEFG DEF123GHIJ com.example.app "$N" "$CONC" >"$work/bench.$mode.log" 2>&1
  grep -q "failed=0 " "$work/bench.$mode.log" || { echo "APNsBench $mode N=$N did not send everything:" >&2; cat "$work/bench.$mode.log" >&2; exit 1; }
  echo "== $mode: swift_task_alloc per notification (size: count)"
  perf script -i "$work/$mode.data" -F trace 2>/dev/null | sed 's/.*size=\([0-9]*\).*/\1/' | sort -n | uniq -c |
    awk -v n="$N" '{ count[$2] = $1; bytes += $1 * $2 } END {
      for (size in count) if (count[size] / n >= 0.5) printf "  %6d bytes: %.2f\n", size, count[size] / n
      printf "  total: %.0f bytes per notification\n", bytes / n }' | sort -k1,1nr
done
