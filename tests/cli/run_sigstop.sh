#!/bin/sh
# A stopped run renews nothing: its guardian kills the command, and what
# the command started, by the end of the lease's known validity; a second
# run of the key does not start its command while any of it is alive.
# Continued, the first run reports the loss with status 75.
set -eu
. "$(dirname "$0")/lib.inc"

# The command's processes, and only they, have RL_STOP=<this script's
# pid> (another copy of the suite may run beside it) in their
# environment. left: those alive (a zombie's environment reads empty).
left() {
    grep -lzxF "RL_STOP=$$" /proc/[0-9]*/environ 2>/dev/null || true
}

fifo=$TEST_TMPDIR/job.fifo
ready=$TEST_TMPDIR/ready
mkfifo "$fifo"
end_ms "$fifo" "$ready" signal STOP "$TEST_TMPDIR/first.pid" \
    >"$TEST_TMPDIR/end_ms" &
watcher=$!
# The second run waits for the lock; its command notes what is left of
# the first's as it starts.
overlap=$TEST_TMPDIR/overlap
bg first "$RL" run -t 2s stop-key -- env RL_STOP=$$ \
    sh -c 'exec 3>"$2"; : >"$1"; sleep 30 & sleep 30; wait' sh "$ready" \
    "$fifo"
wait_until 10 test -e "$ready" || fail "the command did not start"
cli=$bg_pid
bg second "$RL" run -w 10s stop-key -- sh -c \
    'grep -lzxF "RL_STOP=$2" /proc/[0-9]*/environ >"$1" 2>/dev/null || true' \
    sh "$overlap" "$$"
# Renewals come every 667 ms, so the last one before the stop leaves up
# to 2 s of validity (about 1.3 s at least, less if a loaded machine
# delayed renewals); the guardian acts up to 100 ms before its end.
wait "$watcher" || fail "the command outlived its stopped run's lease"
took=$(cat "$TEST_TMPDIR/end_ms")
[ -z "$(left)" ] || fail "processes outlived the command's fifo"
between 200 2250 "$took" "ms from the stop to the command's end"

bg_wait second 10
[ "$rc" = 0 ] || fail "the second run exited $rc"
[ -f "$overlap" ] || fail "the second run's command did not run"
[ ! -s "$overlap" ] ||
    fail "the second command started beside: $(tr '\n' ' ' <"$overlap")"
key_gone stop-key || fail "the second run did not release"

kill -CONT "$cli"
bg_wait first 10
[ "$rc" = 75 ] || fail "the continued run exited $rc, want 75"
one_error_line_in "$TEST_TMPDIR/first.err"
echo "the command ended $took ms after its run was stopped"
exit 0
