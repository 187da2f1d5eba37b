#!/usr/bin/env bash
# Builds the DocC catalog in Documentation/SwiftAPNs.docc against the modules' symbol
# graphs and fails on any warning (an unresolved link, an undocumented parameter...).
#   scripts/docs.sh            check only
#   scripts/docs.sh OUT_DIR    also keep the rendered archive in OUT_DIR
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
graphs=.build-docs/symbol-graphs
rm -rf "$graphs" && mkdir -p "$graphs"
# APNsCore re-exports APNsPayload, so its symbol graph documents both modules. The
# graph is written only when the module compiles, so make it compile.
rm -rf .build-docs/debug/APNsCore.build
swift build --scratch-path .build-docs --target APNsCore \
    -Xswiftc -emit-symbol-graph -Xswiftc -emit-symbol-graph-dir -Xswiftc "$PWD/$graphs" | tail -n 3
find "$graphs" -name '*.symbols.json' ! -name 'APNsCore*.symbols.json' -delete
out="${1:-.build-docs/SwiftAPNs.doccarchive}"
docc convert Documentation/SwiftAPNs.docc \
    --additional-symbol-graph-dir "$graphs" \
    --output-path "$out" \
    --warnings-as-errors --analyze
echo "docs: Documentation/SwiftAPNs.docc built without warnings ($out)"
