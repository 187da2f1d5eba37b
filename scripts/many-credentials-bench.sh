#!/usr/bin/env bash
# Issue #18's idle cost of many credentials (Benchmarks/README.md, "Many credentials"):
# builds ManyCredentialsBenchmark and `apns` in release (scratch path .build-release) and
# runs the benchmark, which starts `apns mock-server` as its child, opens one connection per
# credential on one shared HTTP2Transport, holds them idle, measures threads and memory of
# both processes, then sends a burst to every credential at once.
#   scripts/many-credentials-bench.sh                         1,000 credentials, 1 connection each, burst of 1
#   scripts/many-credentials-bench.sh --credentials 50        a small run
#   scripts/many-credentials-bench.sh --burst 10 --hold 10    10 notifications per credential, 10 s idle
# Arguments go to the benchmark (--credentials N, --connections-per-credential C, --burst K,
# --hold SECONDS, --open-concurrency M, --server-binary PATH). The run is bounded by
# SWIFT_APNS_MANY_TIMEOUT seconds (600); the build by SWIFT_APNS_BUILD_TIMEOUT (1800).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
scratch=.build-release
build_timeout="${SWIFT_APNS_BUILD_TIMEOUT:-1800}"
for product in apns ManyCredentialsBenchmark; do
    timeout "$build_timeout" swift build -c release --scratch-path "$scratch" --product "$product"
done
bin="$(swift build -c release --scratch-path "$scratch" --show-bin-path)"
# On time-out, `timeout` signals its whole process group, the mock server child included
# (the benchmark also kills its child on SIGTERM); SIGKILL 20 s later if that hangs.
exec timeout --kill-after=20 "${SWIFT_APNS_MANY_TIMEOUT:-600}" \
    "$bin/ManyCredentialsBenchmark" --server-binary "$bin/apns" "$@"
