#!/usr/bin/env bash
# The whole test suite: installs what is missing (build dependencies and the outside
# tools the tests check against), builds every target, runs the tests, and checks that
# the DocC catalog builds without warnings.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh --test
swift build --build-tests
swift test --skip-build "$@"
bash scripts/docs.sh
