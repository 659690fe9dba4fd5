#!/bin/sh
# A signal ends a wait for the lock at once, even in the middle of a long
# pause between attempts, and nothing is taken.
set -eu
. "$(dirname "$0")/lib.inc"

expect 0 "$RL" acquire -t 60s ws-key
holder=$(cat "$TEST_TMPDIR/out")

# Pauses of 10..20 s: without cancellation the signal would wait for the
# next attempt.
for sig in TERM INT; do
    bg "acq$sig" "$RL" acquire --retry-delay 20s ws-key
    sleep 0.5
    [ ! -f "$TEST_TMPDIR/acq$sig.status" ] || fail "$sig: acquire did not wait"
    t0=$(now_ms)
    kill -s "$sig" "$bg_pid"
    bg_wait "acq$sig" 10
    t1=$(now_ms)
    case $sig in TERM) want=143 ;; INT) want=130 ;; esac
    [ "$rc" = "$want" ] || fail "$sig: acquire exited $rc, want $want"
    [ "$((t1 - t0))" -lt 1500 ] || fail "$sig: took $((t1 - t0)) ms to stop"
    [ ! -s "$TEST_TMPDIR/acq$sig.out" ] || fail "$sig: a token was printed"
done

# The same for run, which must not start its command.
bg runwait "$RL" run -w 30 --retry exponential --retry-delay 5s ws-key -- \
    touch "$TEST_TMPDIR/ran"
sleep 0.5
kill -s HUP "$bg_pid"
bg_wait runwait 5
[ "$rc" = 129 ] || fail "run exited $rc after SIGHUP, want 129"
[ ! -e "$TEST_TMPDIR/ran" ] || fail "the command ran"
holds ws-key "$holder" || fail "the holder lost the lock"

# Once the holder releases, a waiter in a long pause gets in: the library
# never pauses past the holder's lease, and a release is seen at the next
# attempt.
bg late "$RL" acquire -t 5s --retry-delay 1s ws-key
sleep 0.3
expect 0 "$RL" release ws-key "$holder"
bg_wait late 5
[ "$rc" = 0 ] || fail "the waiter exited $rc after the release"
[ "$(rcli get ws-key)" = "$(cat "$TEST_TMPDIR/late.out")" ] ||
    fail "the waiter's token is not the key's value"
exit 0
