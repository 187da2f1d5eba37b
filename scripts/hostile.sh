#!/usr/bin/env bash
# The hostile-server suite at full size (the GitHub issue's numbers): 100 requests in
# flight per case, 16,000 HPACK references per response (64 MB decoded each), 15 MiB
# bodies, a 100 MiB bound on peak RSS growth. Builds the tests (debug), runs only
# HostileServerTests with SWIFT_APNS_HOSTILE_FULL=1, and prints a Markdown table of the
# cases (misbehaviour -> outcome, time, peak RSS). Exits with the tests' status.
#   scripts/hostile.sh
#   SWIFT_APNS_HOSTILE_TIMEOUT=900 SWIFT_APNS_SCRATCH=.build-hostile scripts/hostile.sh
set -euo pipefail
cd "$(dirname "$0")/.."
scratch=${SWIFT_APNS_SCRATCH:-.build}
limit=${SWIFT_APNS_HOSTILE_TIMEOUT:-600}
log=$(mktemp "${TMPDIR:-/tmp}/hostile.XXXXXX")
trap 'rm -f "$log"' EXIT

timeout "$limit" swift build --build-tests --scratch-path "$scratch"
status=0
SWIFT_APNS_HOSTILE_FULL=1 timeout "$limit" \
    swift test --skip-build --scratch-path "$scratch" --filter HostileServerTests 2>&1 | tee "$log" || status=$?

echo
echo "| misbehaviour | outcome | time | peak RSS |"
echo "|---|---|---:|---:|"
# hostile: <case> -> <outcome> in <ms> ms, peak RSS +<MiB> MiB
sed -n 's/^hostile: \(.*\) -> \(.*\) in \([0-9]*\) ms, peak RSS +\([0-9.]*\) MiB$/| \1 | \2 | \3 ms | +\4 MiB |/p' "$log"
if ((status != 0)); then
    echo
    echo "hostile: the suite failed (status $status); see the output above" >&2
fi
exit "$status"
