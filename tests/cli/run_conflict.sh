#!/bin/sh
# run (and acquire) on a held lock: -n, -E, -w and the default wait,
# flock(1)-style.
set -eu
. "$(dirname "$0")/lib.inc"

expect 0 "$RL" acquire -t 60s busy
holder=$(cat "$TEST_TMPDIR/out")

expect 1 "$RL" run -n busy -- true
err_empty
expect 9 "$RL" run -n -E 9 busy -- true
expect 9 "$RL" run --nonblock --conflict-exit-code=9 busy -- true
expect 1 "$RL" run -w 0 busy -- true

# The command must not have run.
expect 1 "$RL" run -n busy -- touch "$TEST_TMPDIR/ran"
[ ! -e "$TEST_TMPDIR/ran" ] || fail "the command ran without the lock"

# -E 0 (as flock -E 0): a conflict exits 0, silently, but the command
# does not run, and acquire prints no token.
expect 0 "$RL" run -n -E 0 busy -- touch "$TEST_TMPDIR/ran0"
[ ! -e "$TEST_TMPDIR/ran0" ] || fail "-E 0: the command ran without the lock"
out_is ""
err_empty
expect 0 "$RL" acquire -n -E 0 busy
out_is ""
err_empty
expect 0 "$RL" acquire -w 200ms -E 0 busy
out_is ""
holds busy "$holder" || fail "-E 0: the holder lost the lock"

# -w 0.5 gives up after about half a second.
t0=$(now_ms)
expect 1 "$RL" run -w 0.5 busy -- true
t1=$(now_ms)
err_empty
elapsed=$((t1 - t0))
[ "$elapsed" -ge 450 ] || fail "-w 0.5 gave up after $elapsed ms"
[ "$elapsed" -lt 3000 ] || fail "-w 0.5 took $elapsed ms"
# Durations work for -w too.
expect 1 "$RL" run -w 300ms busy -- true

# Without -w or -n, run waits, and proceeds once the holder releases.
bg waiter "$RL" run busy -- sh -c 'echo "$REDISLOCK_TOKEN" >"$1"' sh \
    "$TEST_TMPDIR/waiter.token"
sleep 1
[ ! -f "$TEST_TMPDIR/waiter.status" ] || fail "run did not wait"
[ ! -e "$TEST_TMPDIR/waiter.token" ] || fail "the command ran too early"
expect 0 "$RL" release busy "$holder"
bg_wait waiter 10
[ "$rc" = 0 ] || fail "the waiting run exited $rc"
[ -s "$TEST_TMPDIR/waiter.token" ] || fail "the waiting command did not run"
[ "$(cat "$TEST_TMPDIR/waiter.token")" != "$holder" ] ||
    fail "the waiter reused the holder's token"
key_gone busy || fail "the waiter did not release"

# -w: the lock freed within the wait is taken.
expect 0 "$RL" acquire -t 700ms busy
expect 0 "$RL" run -w 5 busy -- true
exit 0
