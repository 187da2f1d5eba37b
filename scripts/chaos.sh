#!/usr/bin/env bash
# The client against an independent HTTP/2 server (Python's h2) that gives every request
# a random fate, for longer than the default suite: IndependentServerFaultTests with more
# notifications per way (each with a provider token and with a client certificate) and
# several seeds. Each line `chaos: seed S, way, authentication, ...` names the
# seed that replays the server's side of that run (SWIFT_APNS_CHAOS_SEED=S).
#   scripts/chaos.sh                        5 random seeds, 20,000 notifications per way
#   scripts/chaos.sh --seeds 20 --count 5000
#   scripts/chaos.sh --seed 123456          one seed
# Needs python3 with the h2 module (scripts/bootstrap.sh --test installs python3-h2).
set -euo pipefail
cd "$(dirname "$0")/.."
seeds=5 count=20000 fixed=
while (($#)); do
    case "$1" in
        --seeds) seeds=$2; shift 2 ;;
        --count) count=$2; shift 2 ;;
        --seed) fixed=$2; seeds=1; shift 2 ;;
        *) echo "usage: scripts/chaos.sh [--seeds N] [--count N] [--seed S]" >&2; exit 2 ;;
    esac
done
timeout 1800 swift build --build-tests
log=$(mktemp "${TMPDIR:-/tmp}/chaos.XXXXXX")
trap 'rm -f "$log"' EXIT
status=0
for ((run = 1; run <= seeds; run++)); do
    seed=${fixed:-$(( (RANDOM << 15 | RANDOM) % 1000000 + 1 ))}
    run_status=0
    SWIFT_APNS_CHAOS_SEED=$seed SWIFT_APNS_CHAOS_COUNT=$count timeout 1800 \
        swift test --skip-build --filter IndependentServerFaultTests >"$log" 2>&1 || run_status=$?
    grep -E '^chaos: |seed [0-9]+, |✘|Test run with' "$log" || true
    if ((run_status != 0)); then
        status=1
        kept="${TMPDIR:-/tmp}/chaos-seed-$seed.log"
        cp "$log" "$kept"
        echo "chaos: seed $seed failed (status $run_status), full output in $kept;" \
            "replay the server's side with scripts/chaos.sh --seed $seed --count $count" >&2
    fi
done
exit "$status"
