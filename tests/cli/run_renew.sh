#!/bin/sh
# run renews the lease while the command runs, and stops the command with
# exit status 75 when the lock is lost.
set -eu
. "$(dirname "$0")/lib.inc"

# A 1 s lease outlived threefold: nobody else gets in meanwhile. The
# command notes its end: a second run may succeed only after that. It
# also runs until one second run has been refused, however slowly a
# loaded machine starts them, so that the check is never empty.
done=$TEST_TMPDIR/renew.done
tried=$TEST_TMPDIR/renew.tried
bg renew "$RL" run -t 1s renew-key -- sh -c \
    'sleep 3; while [ ! -e "$2" ]; do sleep 0.05; done; : >"$1"' \
    sh "$done" "$tried"
wait_until 10 key_exists renew-key || fail "run did not take the lock"
tries=0
during=0
while [ ! -f "$TEST_TMPDIR/renew.status" ]; do
    run_rl "$RL" run -n renew-key -- true
    if [ ! -e "$done" ]; then
        [ "$rc" = 1 ] || fail "a second run got exit $rc during the lease"
        during=$((during + 1))
        : >"$tried"
    fi
    tries=$((tries + 1))
    [ "$tries" -lt 200 ] || fail "the first run did not end"
    sleep 0.1
done
# About 0.1 s apart, fewer on a loaded machine; the command waits for one.
[ "$during" -ge 1 ] || fail "no second run came while the first ran"
bg_wait renew 10
[ "$rc" = 0 ] || fail "the renewing run exited $rc"
key_gone renew-key || fail "the lock was not released"

# The TTL is reset to the full lease, not left to run down.
bg ttl "$RL" run -t 2s renew-key -- sleep 2
sleep 1.5
ttl=$(rcli pttl renew-key)
[ "$ttl" -gt 1000 ] || fail "pttl is $ttl ms 1.5 s into a renewed 2 s lease"
bg_wait ttl 10
[ "$rc" = 0 ] || fail "the run with -t 2s exited $rc"

# Lost lock: another value replaces the token. The command gets SIGTERM
# and run exits 75 long before the command would have ended. (SIGTERM
# goes to the command's whole group, so its sh would report its sleep's
# death on stderr: that goes to /dev/null here and below. The lease is
# long enough for the trap to run before the validity's end.)
marker=$TEST_TMPDIR/lost.term
bg lost "$RL" run -t 3s renew-key -- sh -c \
    'exec 2>/dev/null; trap "echo term >\"\$1\"; exit 0" TERM; '"$SPIN" \
    sh "$marker"
wait_until 10 key_exists renew-key || fail "run did not take the lock"
t0=$(now_ms)
rcli set renew-key other >/dev/null
bg_wait lost 15
t1=$(now_ms)
[ "$rc" = 75 ] || fail "run exited $rc after losing the lock, want 75"
[ "$((t1 - t0))" -lt 5000 ] || fail "run took $((t1 - t0)) ms to give up"
[ -s "$marker" ] || fail "the command did not get SIGTERM"
one_error_line_in "$TEST_TMPDIR/lost.err"
[ "$(rcli get renew-key)" = other ] || fail "the new owner's value changed"
rcli del renew-key >/dev/null

# Lost lock by expiry (the key disappears): 75 as well. The command's
# group gets SIGTERM, and a command that ignores it SIGKILL by the end of
# the lease's known validity, long before the 5 s grace period: within
# the 2 s TTL of the key's loss, as the last renewal came before it.
marker=$TEST_TMPDIR/gone.term
fifo=$TEST_TMPDIR/gone.fifo
ready=$TEST_TMPDIR/gone.ready
mkfifo "$fifo"
end_ms "$fifo" "$ready" "$REDIS_CLI" -s "$REDIS_SOCK" del renew-key \
    >"$TEST_TMPDIR/end_ms" &
watcher=$!
bg gone "$RL" run -t 2s renew-key -- sh -c \
    'exec 3>"$2" 2>/dev/null; : >"$3"
     trap "echo term >\"\$1\"" TERM; '"$SPIN" sh "$marker" "$fifo" "$ready"
wait "$watcher" || fail "the command outlived the lease"
took=$(cat "$TEST_TMPDIR/end_ms")
between 0 2250 "$took" "ms from the key's loss to the command's end"
bg_wait gone 10
[ "$rc" = 75 ] || fail "run exited $rc after the key vanished, want 75"
[ -s "$marker" ] || fail "the command did not get SIGTERM first"
one_error_line_in "$TEST_TMPDIR/gone.err"

# Renewals that keep failing: CLIENT PAUSE WRITE holds them past their
# timeout. The command must get SIGTERM while the lease still has time
# left: its trap notes it at once, then the key's PTTL, which it may not
# get to before the SIGKILL at the lease's validity end (a loaded machine
# is slow to start redis-cli); if it does, the PTTL must be positive.
marker=$TEST_TMPDIR/stalled.term
bg stalled "$RL" run -t 3s renew-key -- sh -c \
    'exec 2>/dev/null
     cli=$1 sock=$2 m=$3
     stop() {
         echo term >"$m"
         "$cli" -s "$sock" pttl renew-key >"$m.pttl"
         exit 0
     }
     trap stop TERM
     '"$SPIN" sh "$REDIS_CLI" "$REDIS_SOCK" "$marker"
wait_until 10 key_exists renew-key || fail "run did not take the lock"
rcli client pause 8000 write >/dev/null
bg_wait stalled 15
rcli client unpause >/dev/null
[ "$rc" = 75 ] || fail "run exited $rc when renewals stalled, want 75"
[ -s "$marker" ] || fail "the command did not get SIGTERM"
[ ! -s "$marker.pttl" ] ||
    between 1 3000 "$(cat "$marker.pttl")" "pttl when the command was stopped"
one_error_line_in "$TEST_TMPDIR/stalled.err"
exit 0
