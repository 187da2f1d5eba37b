#!/usr/bin/env bash
# The whole test suite: installs what is missing (build dependencies and the outside
# tools the tests check against), builds every target, checks that the DocC
# catalog builds without warnings, and runs the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh --test
swift build --build-tests
# The independent peers (Go, Rust, Java programs) are built before the tests run (see the script).
bash scripts/peers.sh
bash scripts/docs.sh
# The transport's I/O threads (one event loop per core by default) are shared by every
# connection of the process; a parallel test run puts hundreds of connections and dozens
# of in-process servers on 2 cores, and the tests' sub-second timing bounds need the
# connections spread over more loops than that. Users keep the default.
export APNS_IO_THREADS="${APNS_IO_THREADS:-8}"
# Foundation's Process.run() on Linux lists /proc/self/fd and copies each entry's whole
# 256-byte d_name, reading past the end of a short last entry
# (swiftlang/swift-corelibs-foundation#5472, fixed upstream after Swift 6.3). With about
# 1,350 descriptors open (a parallel run: hundreds of connections and test servers) the
# last entry ends at the end of glibc's 32 KiB directory buffer, and when that buffer is
# the last chunk of a thread's malloc heap the read hits an unmapped page: the test
# process crashed (SIGSEGV) in about one full run in five while the harness started curl,
# openssl or the apns CLI. One malloc arena with 64 MiB of padding at its top keeps
# mapped memory after any such buffer. Only the test process is affected; nothing in the
# SDK starts processes.
export MALLOC_ARENA_MAX="${MALLOC_ARENA_MAX:-1}"
export MALLOC_TOP_PAD_="${MALLOC_TOP_PAD_:-67108864}"
# A hung or crashed test run fails with a diagnosis instead of running forever.
bash scripts/watchdog.sh "${SWIFT_APNS_TEST_TIMEOUT:-900}" swift test --skip-build "$@"
# The example server (its own package, built in its own scratch folder) against the mock server.
bash scripts/example-server-test.sh
