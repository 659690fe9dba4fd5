#!/bin/sh
# Silence on conflict and --verbose, as in flock(1): a lock not obtained
# says nothing on stderr (the exit status tells), unless --verbose, which
# names the key, the holder and its lease, why the wait ended, the
# renewals and the command's end.
set -eu
. "$(dirname "$0")/lib.inc"

expect 0 "$RL" acquire -t 60s --owner ops-1 --metadata 'nightly backup' vb-key

# Silent misses: -n, a wait that runs out, --fail-fast, -E; acquire too.
expect 1 "$RL" run -n vb-key -- true
err_empty
expect 1 "$RL" run -w 300ms vb-key -- true
err_empty
expect 1 "$RL" acquire -w 20 --fail-fast vb-key
err_empty
out_is ""
expect 3 "$RL" acquire -n -E 3 vb-key
err_empty
# Other errors still say what went wrong, in one line.
expect 69 "$RL" -u unix:///nonexistent/redis.sock acquire -n vb-key
one_error_line

# --verbose on a -n miss: the key, the holder (owner, metadata, lease)
# and why it stopped.
expect 1 "$RL" run --verbose -n vb-key -- true
err_has "^redislock: run: taking lock 'vb-key' for 30000 ms, trying once"
err_has "held by owner 'ops-1' \\(its lease ends in [0-9]+ ms, \
metadata 'nightly backup'\\)"
err_has "^redislock: run: lock 'vb-key' not obtained after [0-9]+ ms: \
it is held and -n does not wait; .*exit status 1$"
ttl=$(sed -n "s/.*not obtained.*its lease ends in \\([0-9]*\\) ms.*/\\1/p" \
    "$TEST_TMPDIR/err")
between 30000 60000 "$ttl" "the holder's lease in --verbose"
[ "$(wc -l <"$TEST_TMPDIR/err")" -eq 2 ] ||
    fail "want 2 lines: $(cat "$TEST_TMPDIR/err")"

# A wait that runs out, and --fail-fast, each say so.
expect 1 "$RL" acquire --verbose -w 300ms vb-key
err_has "waiting up to 300 ms"
err_has "not obtained after [0-9]+ ms: the wait ran out"
out_is ""
expect 1 "$RL" acquire --verbose -w 20 --fail-fast vb-key
err_has "the holder's lease outlasts the wait \\(--fail-fast\\)"
expect 4 "$RL" acquire --verbose -n -E 4 vb-key
err_has "exit status 4$"

# A plain (foreign-looking) holder: its lease, no owner.
rcli set vb-plain 0123456789abcdef px 45000 >/dev/null
expect 1 "$RL" run --verbose -n vb-plain -- true
err_has "held by another owner \\(its lease ends in [0-9]+ ms\\)"

# A run that gets the lock: the wait, the command, the renewals and the
# end, with the command's own output left alone.
expect 5 "$RL" run --verbose -t 600ms vb-run -c 'echo out; sleep 0.7; exit 5'
out_is out
err_has "^redislock: run: taking lock 'vb-run' for 600 ms, \
waiting as long as it takes: it is free now$"
err_has "^redislock: run: got lock 'vb-run' after [0-9]+ ms \
\\(valid for [0-9]+ ms, fence [0-9]+\\)$"
err_has "^redislock: run: running /bin/sh -c 'echo out; sleep 0.7; exit 5'; \
renewing the lease every 200 ms$"
err_has "^redislock: run: renewed lock 'vb-run' \\(valid for [0-9]+ ms\\)$"
err_has "^redislock: run: the command exited with status 5 after [0-9]+ ms; \
released lock 'vb-run'$"
key_gone vb-run || fail "run --verbose left its lock"

# A waiter that gets the lock once the holder lets go.
expect 0 "$RL" acquire -t 800ms vb-wait
expect 0 "$RL" acquire --verbose -w 10 vb-wait
err_has "waiting up to 10000 ms: held by another owner \
\\(its lease ends in [0-9]+ ms\\)"
# Each pause of the wait (the library's retry event).
err_has "^redislock: acquire: attempt 1: lock 'vb-wait' is held \\(its lease \
ends in [0-9]+ ms\\); trying again within [0-9]+ ms, sooner if it is released$"
err_has "got lock 'vb-wait' after [0-9]+ ms"
[ -n "$(cat "$TEST_TMPDIR/out")" ] || fail "acquire --verbose printed no token"

# A signal ends the wait: said with --verbose.
bg sig "$RL" run --verbose vb-key -- true
wait_until 10 grep -q 'waiting as long as it takes' "$TEST_TMPDIR/sig.err" ||
    fail "the waiter did not start: $(cat "$TEST_TMPDIR/sig.err")"
kill -TERM "$bg_pid"
bg_wait sig 10
[ "$rc" = 143 ] || fail "the stopped waiter exited $rc"
grep -q "stopped waiting for lock 'vb-key' after [0-9]* ms: got signal 15" \
    "$TEST_TMPDIR/sig.err" || fail "stderr: $(cat "$TEST_TMPDIR/sig.err")"
exit 0
