# Sourced by count-allocations.sh and task-frames.sh: checks for fastmock, its
# certificates and the APNsBench binary, then starts fastmock on an OS-chosen port.
# Expects `bench` and `PERF_WORK`; sets `certs`, `work` (a new folder), `mock_pid` and
# `port`. The caller's EXIT trap stops fastmock and removes `work`.
certs=$PERF_WORK/certs
[ -x "$PERF_WORK/fastmock" ] && [ -f "$certs/AuthKey.p8" ] || { echo "run ../shared/perf/run-bench.sh once first (fastmock, certificates in $PERF_WORK)" >&2; exit 2; }
[ -x "$bench" ] || { echo "no APNsBench at $bench: swift build -c release --product APNsBench --scratch-path .build-release" >&2; exit 2; }

work=$(mktemp -d)
timeout 3600 "$PERF_WORK/fastmock" --cert "$certs/server.pem" --key "$certs/server.key" --port 0 --max-seconds 3000 >"$work/mock.out" 2>"$work/mock.err" &
mock_pid=$!

# The port fastmock chose, from its first line.
wait_for_fastmock() {
  port=
  for _ in $(seq 200); do
    port=$(awk '/^PORT /{print $2; exit}' "$work/mock.out")
    [ -n "$port" ] && return 0
    sleep 0.05
  done
  echo "fastmock did not start" >&2
  exit 1
}
