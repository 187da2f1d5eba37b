#!/usr/bin/env bash
# The soak of issue #8: builds Benchmarks/Soak in release and sends 1,000,000
# notifications through APNsClient and HTTP2Transport to APNsMockServer while a seeded
# fault injector scripts GOAWAYs, dropped and refused connections, 429/500/503 bursts,
# response delays, stalls and stream-limit drops. Exits non-zero if a notification is
# lost, answered twice, reaches the server twice without a 429/5xx answer in between,
# if the run stalls, or if memory grows past the bound.
#   scripts/soak.sh                       a random seed (printed first)
#   scripts/soak.sh --seed 42             repeat a run's fault sequence
#   scripts/soak.sh --notifications 200000 --connections 2 --concurrency 500
#   scripts/soak.sh --streamed            one streamed batch (the device tokens from an AsyncSequence)
#   scripts/soak.sh --round-trip 50       the same faults behind a link emulation: every answer,
#                                         SETTINGS and PING ACK arrives 50 ms late (a WAN's round trip)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
swift build -c release --product Soak
# The watchdog inside the program ends a stalled run; this one ends a hung process.
exec bash scripts/watchdog.sh "${SWIFT_APNS_SOAK_TIMEOUT:-3600}" \
    .build/release/Soak --notifications 1000000 "$@"
