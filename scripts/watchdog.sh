#!/usr/bin/env bash
# Runs a test command with a deadline, so that a hung test turns into a red run that says
# where it hung instead of a run that never ends.
#   scripts/watchdog.sh SECONDS COMMAND [ARGUMENTS...]
# The command runs in a process group of its own. On time-out the script prints the Swift
# Testing tests that started but never finished and the stacks of every thread of the
# test process (with gdb, when installed), then exits 124; otherwise it exits with the
# command's status. Either way nothing the command started outlives it: a test process
# that dies (a crash) leaves the servers and tools its tests started behind, and they
# would run forever; they are listed and killed.
set -uo pipefail

limit="$1"
shift
log="$(mktemp "${TMPDIR:-/tmp}/swift-apns-tests.XXXXXX")"
trap 'rm -f "$log"' EXIT

# The command's output goes to the terminal and to $log, line by line. `setsid` makes it
# the leader of a new process group (it does not fork: a background job is no leader).
setsid "$@" > >(tee "$log") 2>&1 &
pid=$!

# Kills whatever is left of the command's process group, saying what it was.
reap() {
    local left
    left="$(ps -o pid=,args= -g "$pid" 2>/dev/null | grep -v '<defunct>' || true)"
    if [[ -n "$left" ]]; then
        echo "watchdog: processes left behind by '$*' (killed):"
        echo "$left" | cut -c1-200 | sed 's/^/  /'
    fi
    kill -KILL -- "-$pid" 2>/dev/null || true
}
deadline=$((SECONDS + limit))
reported_at=
while kill -0 "$pid" 2>/dev/null; do
    # Swift Testing reported the run's result, but the process did not exit: a thread a
    # test left running (a test server whose peer was never closed, say) keeps it alive
    # once `main` has returned. The result stands; the threads are shown, and the process
    # is ended so that the run is not held until the deadline.
    if [[ -z "$reported_at" ]] && grep -Eq '^(✔|✘) Test run with' "$log"; then reported_at=$SECONDS; fi
    if [[ -n "$reported_at" ]] && ((SECONDS - reported_at >= 60)); then
        echo "watchdog: the test process reported its result but had not exited 60 s later; threads left:"
        for test_pid in $(pgrep -g "$pid" -f 'PackageTests\.xctest' || true); do
            if command -v gdb >/dev/null 2>&1; then
                gdb -batch -nx -p "$test_pid" -ex 'thread apply all bt 12' 2>/dev/null |
                    grep -E '^(Thread|#)' | grep -v -E 'futex|sem_wait|epoll_wait|__poll|ppoll|select' | cut -c1-200
            fi
            kill -KILL "$test_pid" 2>/dev/null || true
        done
        reap "$@"
        wait "$pid" 2>/dev/null
        if grep -Eq '^✔ Test run with' "$log"; then exit 0; fi
        exit 1
    fi
    if ((SECONDS >= deadline)); then
        sleep 1
        echo
        echo "watchdog: '$*' did not finish within ${limit} s"
        echo "watchdog: tests that started and never finished:"
        awk '
            /^◇ Test .* started\.$/ && !/^◇ Test case passing/ && !/^◇ Test run started/ {
                name = $0; sub(/^◇ Test /, "", name); sub(/ started\.$/, "", name); open[name]++
            }
            /^(✔|✘) Test .* (passed|failed) after/ {
                name = $0; sub(/^(✔|✘) Test /, "", name); sub(/ (passed|failed) after.*$/, "", name); open[name]--
            }
            /^➜ Test .* skipped/ {
                name = $0; sub(/^➜ Test /, "", name); sub(/ skipped.*$/, "", name); open[name]--
            }
            END { for (name in open) if (open[name] > 0) print "  " name }
        ' "$log"
        for test_pid in $(pgrep -g "$pid" -f 'PackageTests\.xctest' || true); do
            if command -v gdb >/dev/null 2>&1; then
                echo "watchdog: threads of process $test_pid:"
                gdb -batch -nx -p "$test_pid" -ex 'thread apply all bt 25' 2>/dev/null |
                    grep -E '^(Thread|#)' | cut -c1-220
            fi
            kill -KILL "$test_pid" 2>/dev/null || true
        done
        reap "$@"
        wait "$pid" 2>/dev/null
        exit 124
    fi
    sleep 2
done
wait "$pid"
status=$?
if ((status != 0)) && ! grep -Eq '^(✔|✘) Test run with' "$log"; then
    echo "watchdog: '$*' exited with status $status before Swift Testing reported the run's result (a crash?)"
fi
reap "$@"
exit "$status"
