#!/usr/bin/env bash
# The whole test suite: installs what is missing (build dependencies and the outside
# tools the tests check against), builds every target, checks that the DocC
# catalog builds without warnings, and runs the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh --test
swift build --build-tests
bash scripts/docs.sh
# A hung or crashed test run fails with a diagnosis instead of running forever.
bash scripts/watchdog.sh "${SWIFT_APNS_TEST_TIMEOUT:-900}" swift test --skip-build "$@"
# The example server (its own package, built in its own scratch folder) against the mock server.
bash scripts/example-server-test.sh
