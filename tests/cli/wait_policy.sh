#!/bin/sh
# Wait policies: --fail-fast gives up at once when the holder's lease
# outlasts the wait; --retry, --retry-delay and --max-attempts shape and
# cap the attempts.
set -eu
. "$(dirname "$0")/lib.inc"

# elapsed_rl WANT CMD...: like expect, and sets $elapsed in ms.
elapsed_rl() {
    t0=$(now_ms)
    expect "$@"
    t1=$(now_ms)
    elapsed=$((t1 - t0))
}

expect 0 "$RL" acquire -t 30s wp-key

# Behind a 30 s holder, waiting 20 s is hopeless: --fail-fast says so at
# once, for acquire and for run. (The bounds below leave a loaded machine
# seconds to start a process, and stay far below the waits they tell
# apart.)
elapsed_rl 1 "$RL" acquire -w 20 --fail-fast wp-key
err_empty
[ "$elapsed" -lt 3000 ] || fail "acquire --fail-fast took $elapsed ms"
elapsed_rl 1 "$RL" run -w 20 --fail-fast wp-key -- touch "$TEST_TMPDIR/ran"
[ "$elapsed" -lt 3000 ] || fail "run --fail-fast took $elapsed ms"
[ ! -e "$TEST_TMPDIR/ran" ] || fail "the command ran without the lock"
elapsed_rl 7 "$RL" acquire -w 5 --fail-fast -E 7 wp-key

# Without it, the wait is served in full.
elapsed_rl 1 "$RL" acquire -w 1 wp-key
[ "$elapsed" -ge 950 ] || fail "-w 1 gave up after $elapsed ms"
[ "$elapsed" -lt 4000 ] || fail "-w 1 took $elapsed ms"
rcli del wp-key >/dev/null

# A lease that ends within the wait is worth waiting for, fail-fast or
# not.
expect 0 "$RL" acquire -t 700ms wp-key
elapsed_rl 0 "$RL" acquire -t 5s -w 20 --fail-fast wp-key
[ "$elapsed" -lt 4000 ] || fail "the wait for a 700 ms lease took $elapsed ms"
rcli del wp-key >/dev/null

# A key without expiry outlasts any wait, even an unbounded one.
rcli set wp-key forever >/dev/null
elapsed_rl 1 "$RL" acquire --fail-fast wp-key
[ "$elapsed" -lt 3000 ] || fail "--fail-fast on a key without expiry took" \
    "$elapsed ms"
rcli del wp-key >/dev/null

# --max-attempts ends a long wait after that many attempts: three
# attempts with pauses of 100..200 ms take well under a second, not 30 s.
expect 0 "$RL" acquire -t 60s wp-key
elapsed_rl 1 "$RL" acquire -w 30 --max-attempts 3 --retry-delay 200ms \
    wp-key
between 100 6000 "$elapsed" "ms for --max-attempts 3"
# One attempt: no pause at all.
elapsed_rl 1 "$RL" run -w 30 --max-attempts 1 wp-key -- true
[ "$elapsed" -lt 3000 ] || fail "--max-attempts 1 took $elapsed ms"
# Exponential pauses grow: with a 100 ms start, 5 attempts pause at least
# 50+100+200+400 = 750 ms (each pause is drawn from [d/2, d]).
elapsed_rl 1 "$RL" acquire -w 30 --retry exponential --retry-delay 100ms \
    --max-attempts 5 wp-key
between 700 10000 "$elapsed" "ms for 5 exponential attempts"
# The cap (--retry-max-delay) bounds them: 8 attempts capped at 100 ms
# pause at most 700 ms; uncapped (the default cap is 2 s) they would
# pause at least 50+100+200+400+800+1000+1000 = 3550 ms.
elapsed_rl 1 "$RL" acquire -w 30 --retry=exponential --retry-delay 100ms \
    --retry-max-delay 100ms --max-attempts 8 wp-key
between 300 2800 "$elapsed" "ms for 8 capped exponential attempts"
elapsed_rl 1 "$RL" acquire -w 30 --retry linear --retry-delay 50ms \
    --max-attempts 3 wp-key
between 50 6000 "$elapsed" "ms for 3 linear attempts"
# The wait's deadline ends the attempts, however slow the machine.
elapsed_rl 1 "$RL" acquire -w 0.3 --retry constant wp-key
between 250 3000 "$elapsed" "ms for -w 0.3 --retry constant"

# Bad values are usage errors.
for bad in "--retry sometimes" "--retry-delay 0" "--retry-delay -1s" \
    "--retry-max-delay x" "--max-attempts 0" "--max-attempts -3" \
    "--max-attempts 1.5" "--max-attempts 99999999999"; do
    # shellcheck disable=SC2086 # split on purpose
    expect 64 "$RL" acquire $bad wp-key
    one_error_line
done
expect 64 "$RL" release --fail-fast wp-key tok
exit 0
