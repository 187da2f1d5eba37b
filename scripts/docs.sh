#!/usr/bin/env bash
# Builds the DocC catalog in Documentation/SwiftAPNs.docc against the modules' symbol
# graphs and fails on any warning (an unresolved link, an undocumented parameter...).
#   scripts/docs.sh            check only
#   scripts/docs.sh OUT_DIR    also keep the rendered archive in OUT_DIR
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
# dump-symbol-graph also emits the test targets' graphs, which needs them built: on a
# fresh clone it failed ("Failed to emit symbol graph for 'swift_apnsPackageTests'").
swift build --build-tests >/dev/null
swift package dump-symbol-graph >/dev/null
graphs=.build/docs-symbol-graphs
rm -rf "$graphs" && mkdir -p "$graphs"
# One catalog over the library modules; articles link symbols as ``Module/Symbol``.
for module in APNsPayload APNsCore APNsTransport APNsConfiguration APNsTesting APNsMockServer; do
    cp "$(swift build --show-bin-path)/../symbolgraph/$module"*.symbols.json "$graphs/"
done
out="${1:-.build/SwiftAPNs.doccarchive}"
docc convert Documentation/SwiftAPNs.docc \
    --additional-symbol-graph-dir "$graphs" \
    --output-path "$out" \
    --warnings-as-errors --analyze >/dev/null
echo "docs: Documentation/SwiftAPNs.docc built without warnings ($out)"
