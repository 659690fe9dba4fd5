#!/bin/sh
# A SIGKILLed redislock cannot release: the lock expires by its TTL, and
# until then nobody else gets it.
set -eu
. "$(dirname "$0")/lib.inc"

childpid=$TEST_TMPDIR/child.pid
bg victim "$RL" run -t 2s kill-key -- sh -c 'echo $$ >"$1"; exec sleep 30' \
    sh "$childpid"
wait_until 10 test -s "$childpid" || fail "the command did not start"
# The orphaned command must not outlive the test.
on_exit_kill "$(cat "$childpid")"
kill -9 "$bg_pid"
bg_wait victim 10
[ "$rc" = 137 ] || fail "the killed run reported $rc"

key_exists kill-key || fail "the lock vanished with the process"
expect 1 "$RL" run -n kill-key -- true
ttl=$(rcli pttl kill-key)
between 1 2000 "$ttl" "pttl of the orphaned lock"
wait_until 5 key_gone kill-key || fail "the lock did not expire by its TTL"
expect 0 "$RL" run -n kill-key -- true
exit 0
