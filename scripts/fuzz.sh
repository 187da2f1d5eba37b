#!/usr/bin/env bash
# Fuzzes swift-apns's parsers and encoders with libFuzzer, a bounded time per target.
#   scripts/fuzz.sh [SECONDS-PER-TARGET] [TARGET...]     (default 60 s, every target)
# Targets (Fuzz/Sources/FuzzTargets): json-writer payload-writer json-parse hpack response
# device-token channel-list pem. The fuzz package (Fuzz/Package.swift) depends on the main package by
# path, so a normal `swift build` / `swift test` never builds it.
#
# Builds Fuzz's apns-fuzz with -sanitize=fuzzer,address into Fuzz/.build-fuzzer, first
# replays every committed seed corpus (Fuzz/Corpus/TARGET) and every past crash
# (Fuzz/Findings/TARGET) through a plain build, then runs libFuzzer per target with a
# working corpus in Fuzz/.build-fuzzer/corpus/TARGET (seeded from Fuzz/Corpus/TARGET, kept
# between runs). A crash input is written to Fuzz/.build-fuzzer/crashes/TARGET/; copy it to
# Fuzz/Findings/TARGET/ and add a regression test in Tests/ when it is a product bug.
# Prints per target: executions, executions per second, coverage, features, findings.
set -uo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"

seconds="${1:-60}"
shift || true
targets=("$@")
if ((${#targets[@]} == 0)); then
    targets=(json-writer payload-writer json-parse hpack response device-token channel-list pem)
fi

bash scripts/bootstrap.sh || exit 1
cd Fuzz
scratch=.build-fuzzer

echo "== fuzz: building the replay runner and apns-fuzz (libFuzzer + AddressSanitizer)"
swift build --product apns-fuzz-replay || exit 1
# libFuzzer supplies the entry point through apns_fuzz_main (see Sources/apns-fuzz);
# -parse-as-library because the fuzz executable has no top-level code.
swift build -c debug --scratch-path "$scratch" --product apns-fuzz \
    -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library || exit 1
fuzzer="$(swift build -c debug --scratch-path "$scratch" --show-bin-path)/apns-fuzz"
replay="$(swift build --show-bin-path)/apns-fuzz-replay"

echo "== fuzz: replaying seed corpora and past findings"
for target in "${targets[@]}"; do
    "$replay" "$target" "Corpus/$target" "Findings/$target" || { echo "replay of $target failed"; exit 1; }
done

summary=()
status=0
for target in "${targets[@]}"; do
    corpus="$scratch/corpus/$target"
    crashes="$scratch/crashes/$target"
    mkdir -p "$corpus" "$crashes"
    log="$scratch/fuzz-$target.log"
    echo "== fuzz: $target for ${seconds} s"
    # SWIFT_BACKTRACE=enable=no: the Swift backtracer, run after a finding traps, reads
    # memory in a way AddressSanitizer reports, hiding the finding behind a second report.
    SWIFT_BACKTRACE=enable=no APNS_FUZZ_TARGET="$target" ASAN_OPTIONS="detect_leaks=0:${ASAN_OPTIONS:-}" "$fuzzer" \
        -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 -max_len=4096 \
        -print_final_stats=1 -artifact_prefix="$crashes/" \
        "$corpus" "Corpus/$target" >"$log" 2>&1
    code=$?
    runs=$(grep -E "^stat::number_of_executed_units" "$log" | awk '{print $2}')
    speed=$(grep -E "^stat::average_exec_per_sec" "$log" | awk '{print $2}')
    last=$(grep -E "#[0-9]+.*(cov|ft):" "$log" | tail -1)
    cov=$(echo "$last" | grep -oE "cov: [0-9]+" | awk '{print $2}')
    ft=$(echo "$last" | grep -oE "ft: [0-9]+" | awk '{print $2}')
    found=$(find "$crashes" -type f | wc -l)
    if ((code != 0)); then
        status=1
        echo "   FINDING in $target (exit $code):"
        grep -E "FINDING|ERROR: AddressSanitizer|Fatal error|deadly signal|SUMMARY" "$log" | head -5 | cut -c1-400 | sed 's/^/     /'
    fi
    summary+=("$(printf '%-15s %10s execs  %7s exec/s  cov %5s  ft %6s  crash files %s  exit %s' "$target" "${runs:-?}" "${speed:-?}" "${cov:-?}" "${ft:-?}" "$found" "$code")")
done

echo
echo "== fuzz summary (${seconds} s per target; logs in Fuzz/$scratch/fuzz-TARGET.log)"
for line in "${summary[@]}"; do echo "  $line"; done
exit "$status"
