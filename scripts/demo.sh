#!/usr/bin/env bash
# The main job: installs what is missing, builds, and runs `apns demo`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
swift build -c release --product apns
exec .build/release/apns demo "$@"
