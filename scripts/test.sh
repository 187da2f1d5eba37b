#!/usr/bin/env bash
# The whole test suite: installs what is missing (build dependencies and the outside
# tools the tests check against), checks that the DocC catalog builds without warnings,
# builds every target and runs the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh --test
bash scripts/docs.sh
swift build --build-tests
swift test --skip-build "$@"
