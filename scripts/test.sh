#!/usr/bin/env bash
# The whole test suite: installs what is missing (build dependencies and the outside
# tools the tests check against), builds every target, checks that the DocC
# catalog builds without warnings, and runs the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh --test
swift build --build-tests
bash scripts/docs.sh
# The transport's I/O threads (one event loop per core by default) are shared by every
# connection of the process; a parallel test run puts hundreds of connections and dozens
# of in-process servers on 2 cores, and the tests' sub-second timing bounds need the
# connections spread over more loops than that. Users keep the default.
export APNS_IO_THREADS="${APNS_IO_THREADS:-8}"
# A hung or crashed test run fails with a diagnosis instead of running forever.
bash scripts/watchdog.sh "${SWIFT_APNS_TEST_TIMEOUT:-900}" swift test --skip-build "$@"
# The example server (its own package, built in its own scratch folder) against the mock server.
bash scripts/example-server-test.sh
